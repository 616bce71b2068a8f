/* assign_policy.c -- the --assign policies' names, both ways. */
#include "assign_policy.h"

#include <string.h>

#include "c4_err.h"
#include "train_loop.h"

static const char *const policy_names[TRAIN_ASSIGN_POLICIES + 1] = {"cost", "tokens",
                                                                    "tokens-sorted", "rotate"};

int train_assign_policy(const char *s) {
  for (int i = 0; i <= TRAIN_ASSIGN_ROTATE; i++)
    if (strcmp(s, policy_names[i]) == 0) return i;
  return C4_NONE;
}

const char *train_assign_policy_name(int policy) { return policy_names[policy]; }
