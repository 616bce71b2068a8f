/* launch.c -- the local supervisor. A rank that dies (a signal, an error) or hangs is dropped:
 * its peers notice (their collectives fail and they exit with C4TRAIN_EXIT_PEER_LOST) or c4mon
 * says so; a rank still running when the others have given up on it is hung and is killed. Then
 * the survivors start again, renumbered, and resume from the newest checkpoint. */
#include "launch.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "c4_bootstrap.h"
#include "c4_clock.h"
#include "c4_env.h"
#include "c4_err.h"
#include "mon_sub.h"
#include "relayout.h"
#include "train_loop.h"

enum rank_state { RUNNING, FINISHED, PEER_LOST, RELAYOUT, FAILED };

struct attempt {
  int world;
  pid_t pid[1024];
  int orig[1024];
  enum rank_state state[1024];
  uint64_t started_ns;
  pthread_mutex_t lock;
  int condemned[1024]; /* set by c4mon's verdicts, acted on by the supervisor's loop */
  int multiple;        /* the job goes on in whole pipelines of this many ranks */
  int relayout_on;     /* a straggler asks for a new layout (launch_opts.relayout) */
  int relaid[1024];    /* by first rank: a straggler the job was laid out again for, once */
  int named[1024];     /* by first rank: a straggler to lay the job out again for */
  int asked[1024];     /* by first rank: a new layout asked of this attempt's ranks for it */
};

static void say(const struct launch_opts *lo, const char *fmt, int x, int y) {
  if (lo->quiet) return;
  fprintf(stderr, "c4train: ");
  fprintf(stderr, fmt, x, y);
  fprintf(stderr, "\n");
}

/* c4mon's verdicts, on the subscription thread: lost or hung ranks of the current attempt, and a
 * straggler the job has not been laid out again for. */
static void on_verdict(void *arg, const char *kind, const int *ranks, int n, long long t_ns) {
  struct attempt *a = arg;
  int lost = strcmp(kind, "rank_lost") == 0 || strcmp(kind, "noncomm_hang") == 0;
  int slow = a->relayout_on && strcmp(kind, "straggler") == 0;
  pthread_mutex_lock(&a->lock);
  if ((uint64_t)t_ns >= a->started_ns) /* not about an earlier attempt's ranks */
    for (int i = 0; i < n; i++) {
      if (ranks[i] < 0 || ranks[i] >= a->world) continue;
      if (lost) a->condemned[ranks[i]] = 1;
      int first = a->orig[ranks[i]];
      if (slow && !a->relaid[first] && !a->asked[first]) a->named[first] = 1;
    }
  pthread_mutex_unlock(&a->lock);
}

/* A straggler c4mon named that the job was not laid out again for: the ranks are asked to stop
 * for a new layout (under a->lock). It counts as laid out again for once the job resumes in the
 * new layout (next_attempt). */
static void relayout_due(const struct launch_opts *lo, struct attempt *a) {
  for (int i = 0; i < a->world; i++) {
    int first = a->orig[i];
    if (!a->named[first]) continue;
    say(lo, "c4mon names rank %d a straggler: the ranks stop after a step for a new layout", first,
        0);
    a->asked[first] = 1;
    a->named[first] = 0;
    relayout_request();
  }
}

/* A new attempt's slate: no verdict on an earlier attempt's ranks acted on, no request left in
 * the pipe; the stragglers a new layout was asked for count as laid out again for when it was
 * (relaid_now), else they may ask again. */
static void next_attempt(struct attempt *a, int relaid_now) {
  relayout_clear();
  pthread_mutex_lock(&a->lock);
  for (int i = 0; i < 1024; i++) {
    a->relaid[i] |= relaid_now && a->asked[i];
    a->asked[i] = a->named[i] = a->condemned[i] = 0;
  }
  a->started_ns = c4_now_ns();
  pthread_mutex_unlock(&a->lock);
}

static int fork_ranks(struct attempt *a) {
  pid_t launcher = getpid();
  char port[16];
  snprintf(port, sizeof port, "%d", c4_bootstrap_free_port());
  for (int r = 0; r < a->world; r++) {
    pid_t pid = fork();
    if (pid < 0) {
      perror("c4train: fork");
      return -2;
    }
    if (pid == 0) {
      /* the ranks die with their launcher: one killed alone (kill -9, or a SIGINT or SIGTERM
       * sent to it and not to its process group) left them training to the end, writing into
       * the checkpoint directory a restarted job would use too */
      if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != launcher) _exit(1);
      char v[16];
      snprintf(v, sizeof v, "%d", r);
      setenv("RANK", v, 1);
      /* LOCAL_RANK picks the GPU: a survivor keeps its own (renumbered by it, the survivor after
       * a lost rank would take the lost one's GPU, perhaps the fault), so after a loss it may
       * reach LOCAL_WORLD_SIZE */
      snprintf(v, sizeof v, "%d", a->orig[r]);
      setenv("LOCAL_RANK", v, 1);
      setenv("C4TRAIN_ORIG_RANK", v, 1);
      snprintf(v, sizeof v, "%d", a->world);
      setenv("WORLD_SIZE", v, 1);
      setenv("LOCAL_WORLD_SIZE", v, 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", port, 1);
      if (a->relayout_on) relayout_pass_on();
      return r;
    }
    a->pid[r] = pid;
    a->state[r] = RUNNING;
  }
  return C4_NONE;
}

/* Supervises one attempt until every rank has exited; returns how many failed (died, hung, or
 * were named by c4mon). */
static int supervise(const struct launch_opts *lo, struct attempt *a) {
  /* how long ranks that gave up on a peer wait for the rest before those are called hung */
  uint64_t grace_ns = (uint64_t)c4_env_long("C4TRAIN_HANG_GRACE_MS", 5000, 100, 3600000) * 1000000;
  uint64_t first_peer_lost = 0;
  int running = a->world, failed = 0, hung_stopped = 0;
  while (running > 0) {
    int st;
    pid_t pid = waitpid(-1, &st, WNOHANG);
    if (pid > 0) {
      for (int r = 0; r < a->world; r++) {
        if (a->pid[r] != pid || a->state[r] != RUNNING) continue;
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        a->state[r] = code == 0                        ? FINISHED
                      : code == C4TRAIN_EXIT_PEER_LOST ? PEER_LOST
                      : code == C4TRAIN_EXIT_RELAYOUT  ? RELAYOUT
                                                       : FAILED;
        running--;
        if (a->state[r] == FAILED) {
          failed++;
          if (WIFSIGNALED(st))
            say(lo, "rank %d died (signal %d)", a->orig[r], WTERMSIG(st));
          else
            say(lo, "rank %d failed (exit %d)", a->orig[r], code);
        }
        if (a->state[r] == PEER_LOST && !first_peer_lost) first_peer_lost = c4_now_ns();
      }
      continue;
    }
    pthread_mutex_lock(&a->lock);
    for (int r = 0; r < a->world; r++)
      if (a->condemned[r] && a->state[r] == RUNNING) {
        say(lo, "c4mon reports rank %d lost or hung: stopping it", a->orig[r], 0);
        kill(a->pid[r], SIGKILL);
        a->condemned[r] = 0;
      }
    if (a->relayout_on) relayout_due(lo, a);
    pthread_mutex_unlock(&a->lock);
    /* once: a killed rank counts as running until it is reaped, and was named again */
    if (!hung_stopped && first_peer_lost && c4_now_ns() - first_peer_lost > grace_ns) {
      hung_stopped = 1;
      for (int r = 0; r < a->world; r++)
        if (a->state[r] == RUNNING) {
          say(lo, "rank %d is hung (its peers gave up on it %d ms ago): stopping it", a->orig[r],
              (int)(grace_ns / 1000000));
          kill(a->pid[r], SIGKILL);
        }
    }
    usleep(50000);
  }
  return failed;
}

int launch_local(const struct launch_opts *lo, int *status) {
  static struct attempt a;
  if (lo->ranks < 1 || lo->ranks > 1024) {
    fprintf(stderr, "c4train: --local-ranks %d: expected 1 to 1024\n", lo->ranks);
    *status = 2;
    return C4_NONE;
  }
  pthread_mutex_init(&a.lock, NULL);
  a.world = lo->ranks;
  for (int r = 0; r < a.world; r++)
    a.orig[r] = r;
  a.started_ns = c4_now_ns();
  a.multiple = lo->multiple > 1 ? lo->multiple : 1;
  a.relayout_on = lo->relayout && lo->monitor_sub && relayout_open() == 0;
  for (;;) {
    int r = fork_ranks(&a);
    if (r >= 0) return r;
    /* c4mon's verdicts are followed only while the ranks run, by a thread started after the fork:
     * a child forked while it ran would hold its memory with no thread to own it (LeakSanitizer
     * reports that memory as leaked in every rank) */
    struct mon_sub *sub =
        lo->monitor_sub ? mon_sub_start(lo->monitor_sub, -1, on_verdict, &a) : NULL;
    int failed = supervise(lo, &a);
    if (sub) mon_sub_stop(sub);
    int peer_lost = 0, finished = 0, relaid = 0;
    for (int i = 0; i < a.world; i++) {
      peer_lost += a.state[i] == PEER_LOST;
      finished += a.state[i] == FINISHED;
      relaid += a.state[i] == RELAYOUT;
    }
    if (finished == a.world) {
      *status = 0;
      break;
    }
    if (relaid == a.world) { /* all stopped after the same step, at its checkpoint */
      a.multiple = lo->relayout(lo->relayout_arg, a.world, a.orig);
      next_attempt(&a, 1);
      say(lo, "going on with %d ranks from the checkpoint, --pp %d", a.world, a.multiple);
      continue;
    }
    int survivors = a.world - failed, per = a.multiple;
    int going = survivors - survivors % per; /* whole pipelines */
    if (!lo->restart || failed == 0 || going < 1 || r == -2) {
      if (failed == 0 && peer_lost)
        fprintf(stderr, "c4train: every rank gave up on a peer, and none died or hung\n");
      else if (!lo->restart && failed < a.world) /* all failed: each said why */
        fprintf(stderr, "c4train: a rank was lost; give --ckpt-dir to go on with the others\n");
      else if (going < 1 && survivors > 0)
        fprintf(stderr, "c4train: %d ranks left, fewer than a pipeline of %d stages\n", survivors,
                per);
      *status = 1;
      break;
    }
    pthread_mutex_lock(&a.lock);
    int w = 0;
    for (int i = 0; i < a.world && w < going; i++)
      if (a.state[i] != FAILED) a.orig[w++] = a.orig[i];
    a.world = w;
    pthread_mutex_unlock(&a.lock);
    next_attempt(&a, 0);
    say(lo, "going on with %d ranks from the last checkpoint (%d lost)", w, failed);
    if (survivors > w)
      say(lo, "%d of the survivors sit out: the job goes on in whole pipelines of %d stages",
          survivors - w, per);
  }
  return C4_NONE;
}
