/* relayout.c -- the stop-for-a-new-layout request: a pipe the launcher writes and its ranks poll.
 */
#include "relayout.h"

#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "c4_err.h"
#include "dp.h"
#include "train_loop.h"

static int fds[2] = {-1, -1};

int relayout_open(void) {
  if (fds[0] >= 0) return 0;
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) return 0;
  fds[0] = fds[1] = -1;
  return C4_ESYS;
}

void relayout_pass_on(void) {
  char v[16];
  snprintf(v, sizeof v, "%d", fds[0]);
  if (fds[0] >= 0) setenv("C4TRAIN_RELAYOUT_FD", v, 1);
}

void relayout_request(void) {
  char one = 1;
  if (fds[1] >= 0 && write(fds[1], &one, 1) < 0) return; /* full: a request is there already */
}

void relayout_clear(void) {
  char buf[64];
  while (fds[0] >= 0 && read(fds[0], buf, sizeof buf) > 0)
    continue;
}

int relayout_asked(void) {
  static int fd = -2;
  if (fd == -2) {
    const char *v = getenv("C4TRAIN_RELAYOUT_FD");
    fd = v ? atoi(v) : -1;
  }
  struct pollfd p = {.fd = fd, .events = POLLIN};
  return fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

int relayout_stop(struct dp *d, int world, int rc, int step, int say, FILE *jf, int *off) {
  int written = rc == 0, all[world];
  if (dp_allgather(d, &written, all, sizeof written)) return C4TRAIN_EXIT_PEER_LOST;
  for (int i = 0; i < world; i++)
    written &= all[i];
  if (!written) {
    *off = 1;
    return 0;
  }
  if (say)
    printf("c4train: stopping after step %d for a new layout (its checkpoint written)\n", step);
  json_t *line = jf ? json_pack("{s:s, s:i, s:s}", "event", "stop", "step", step, "for",
                                "a new layout (its checkpoint written)")
                    : NULL;
  if (line && json_dumpf(line, jf, JSON_COMPACT) == 0) fputc('\n', jf);
  json_decref(line);
  if (jf) fflush(jf);
  return C4TRAIN_EXIT_RELAYOUT;
}
