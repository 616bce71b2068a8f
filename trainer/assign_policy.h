/* assign_policy.h -- the names of c4train's --assign policies (how a documents step's sequences
 * are split across ranks), shared by the option parser, the documents loop and its report. */
#ifndef C4_ASSIGN_POLICY_H
#define C4_ASSIGN_POLICY_H

/* The --assign policy named s (cost, tokens, tokens-sorted, rotate), or C4_NONE. */
int train_assign_policy(const char *s);

/* The name of policy (one of train_loop.h's TRAIN_ASSIGN_*). */
const char *train_assign_policy_name(int policy);

#endif
