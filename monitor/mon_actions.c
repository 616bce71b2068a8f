/* mon_actions.c -- runs the --on-event command for each event through posix_spawn, never waiting
 * on it: a bounded queue, at most 4 children, reaped from the main loop. */
#include "mon_actions.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "c4_clock.h"
#include "c4_err.h"
#include "c4_log.h"

#define RUNNING 4
#define QUEUE 256
#define KIND_LEN 64

extern char **environ;

struct job {
  char *line; /* the event's line and its newline */
  size_t len;
  char kind[KIND_LEN], id[24];
};

struct child {
  pid_t pid; /* 0: free */
  char kind[KIND_LEN], id[24];
};

static struct {
  char *cmd;
  struct child run[RUNNING];
  struct job q[QUEUE];
  int head, n;
  uint64_t started, failed, dropped;
} act;

/* The child's environment: c4mon's, without any C4_EVENT_KIND/ID of its own, plus the event's.
 * The two strings it adds are *kind and *id; the caller frees them and the array. */
static char **child_env(const struct job *j, char **kind, char **id) {
  size_t n = 0;
  while (environ && environ[n])
    n++;
  char **env = calloc(n + 3, sizeof *env);
  size_t kl = sizeof "C4_EVENT_KIND=" + strlen(j->kind), il = sizeof "C4_EVENT_ID=" + strlen(j->id);
  *kind = malloc(kl);
  *id = malloc(il);
  if (!env || !*kind || !*id) {
    free(env);
    free(*kind);
    free(*id);
    *kind = *id = NULL;
    return NULL;
  }
  snprintf(*kind, kl, "C4_EVENT_KIND=%s", j->kind);
  snprintf(*id, il, "C4_EVENT_ID=%s", j->id);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "C4_EVENT_KIND=", 14) && strncmp(environ[i], "C4_EVENT_ID=", 12))
      env[k++] = environ[i];
  env[k++] = *kind;
  env[k++] = *id;
  return env;
}

/* Puts j's line into a fresh pipe, then starts /bin/sh -c CMD on its read end. The line is
 * written before the child exists, so the write can neither block (the pipe is empty and, if need
 * be, grown to hold the line; the write end is nonblocking anyway) nor raise SIGPIPE (the read end
 * is still open here): a command that never reads costs c4mon nothing. Returns 0 or C4_E*. */
static int spawn(struct child *c, const struct job *j) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) {
    C4_WARN("c4mon: --on-event: event %s (%s) not run: cannot make a pipe: %s", j->id, j->kind,
            strerror(errno));
    return C4_ESYS;
  }
  fcntl(p[1], F_SETFL, O_NONBLOCK); /* only the write end: the child's stdin stays blocking */
  int cap = fcntl(p[1], F_GETPIPE_SZ);
  if (cap > 0 && (size_t)cap < j->len) fcntl(p[1], F_SETPIPE_SZ, (int)j->len);
  ssize_t k = write(p[1], j->line, j->len);
  if (k != (ssize_t)j->len)
    C4_WARN("c4mon: --on-event: event %s (%s): only %zd of its %zu bytes fit into the command's "
            "pipe (%s); the command gets it cut",
            j->id, j->kind, k < 0 ? (ssize_t)0 : k, j->len, k < 0 ? strerror(errno) : "pipe full");
  close(p[1]);

  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  sigset_t all, none;
  sigfillset(&all);
  sigdelset(&all, SIGKILL);
  sigdelset(&all, SIGSTOP);
  sigemptyset(&none);
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[0], 0);
  if (fcntl(2, F_GETFD) >= 0) posix_spawn_file_actions_adddup2(&fa, 2, 1);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 34)
  /* nothing else of c4mon's (an events file, a socket opened without CLOEXEC) outlives it in a
   * long-running command */
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
#endif
  posix_spawnattr_init(&attr);
  /* signals c4mon ignores or blocks (SIGPIPE, say) would stay so across exec: give the command
   * the defaults a shell expects */
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  char *kind, *id, **env = child_env(j, &kind, &id);
  char *argv[] = {"sh", "-c", act.cmd, NULL};
  pid_t pid = 0;
  int rc = env ? posix_spawn(&pid, "/bin/sh", &fa, &attr, argv, env) : ENOMEM;
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  free(env);
  free(kind);
  free(id);
  close(p[0]);
  if (rc != 0) {
    C4_WARN("c4mon: --on-event: event %s (%s) not run: cannot start /bin/sh: %s", j->id, j->kind,
            strerror(rc));
    return C4_ESYS;
  }
  c->pid = pid;
  memcpy(c->kind, j->kind, sizeof c->kind);
  memcpy(c->id, j->id, sizeof c->id);
  return 0;
}

/* Starts queued events while a slot is free. */
static void launch(void) {
  for (int s = 0; s < RUNNING && act.n; s++) {
    if (act.run[s].pid) continue;
    struct job *j = &act.q[act.head];
    act.head = (act.head + 1) % QUEUE;
    act.n--;
    if (spawn(&act.run[s], j) == 0)
      act.started++;
    else
      act.failed++;
    free(j->line);
    j->line = NULL;
  }
}

/* Collects the children that have ended, without waiting for those that have not. */
static void reap(void) {
  for (int s = 0; s < RUNNING; s++) {
    struct child *c = &act.run[s];
    if (!c->pid) continue;
    int st;
    pid_t r = waitpid(c->pid, &st, WNOHANG);
    if (r == 0 || (r < 0 && errno == EINTR)) continue;
    if (r < 0) { /* ECHILD: reaped elsewhere (SIGCHLD ignored, a waitpid(-1) in the process) */
      C4_WARN("c4mon: --on-event: lost track of the command for event %s (%s), pid %d: %s", c->id,
              c->kind, (int)c->pid, strerror(errno));
    } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
      act.failed++;
      C4_WARN("c4mon: --on-event: the command for event %s (%s) exited with status %d: %s", c->id,
              c->kind, WEXITSTATUS(st), act.cmd);
    } else if (WIFSIGNALED(st)) {
      act.failed++;
      C4_WARN("c4mon: --on-event: the command for event %s (%s) was killed by signal %d (%s): %s",
              c->id, c->kind, WTERMSIG(st), strsignal(WTERMSIG(st)), act.cmd);
    }
    c->pid = 0;
  }
}

int c4_mon_actions_start(const char *cmd) {
  if (act.cmd) {
    C4_WARN("c4mon: --on-event: already started with \"%s\"", act.cmd);
    return C4_EINVAL;
  }
  if (!cmd || !*cmd) {
    C4_WARN("c4mon: --on-event needs a command");
    return C4_EINVAL;
  }
  memset(&act, 0, sizeof act);
  act.cmd = strdup(cmd);
  if (!act.cmd) {
    C4_WARN("c4mon: --on-event: out of memory");
    return C4_ENOMEM;
  }
  return 0;
}

void c4_mon_actions_event(const json_t *event, const char *line, void *arg) {
  (void)arg;
  if (!act.cmd || !line) return;
  const char *kind = json_string_value(json_object_get(event, "kind"));
  const json_t *id = json_object_get(event, "id");
  struct job j = {.len = strlen(line) + 1};
  snprintf(j.kind, sizeof j.kind, "%s", kind ? kind : "");
  if (json_is_integer(id)) snprintf(j.id, sizeof j.id, "%lld", (long long)json_integer_value(id));
  if (act.n == QUEUE) {
    if (act.dropped++ % 100 == 0) /* the first drop, then every 100th */
      C4_WARN("c4mon: --on-event: %d events already wait for a command; event %s (%s) dropped "
              "(%llu so far)",
              QUEUE, j.id, j.kind, (unsigned long long)act.dropped);
    return;
  }
  j.line = malloc(j.len);
  if (!j.line) {
    act.dropped++;
    C4_WARN("c4mon: --on-event: out of memory; event %s (%s) dropped", j.id, j.kind);
    return;
  }
  memcpy(j.line, line, j.len - 1);
  j.line[j.len - 1] = '\n';
  act.q[(act.head + act.n) % QUEUE] = j;
  act.n++;
  launch();
}

void c4_mon_actions_poll(void) {
  if (!act.cmd) return;
  reap();
  launch();
}

static int running(void) {
  int n = 0;
  for (int s = 0; s < RUNNING; s++)
    n += act.run[s].pid != 0;
  return n;
}

void c4_mon_actions_stop(int wait_ms) {
  if (!act.cmd) return;
  uint64_t deadline = c4_now_ns() + (uint64_t)(wait_ms > 0 ? wait_ms : 0) * 1000000ull;
  for (;;) {
    c4_mon_actions_poll();
    if ((!act.n && !running()) || c4_now_ns() >= deadline) break;
    nanosleep(&(struct timespec){.tv_nsec = 5000000}, NULL);
  }
  if (act.n) {
    C4_WARN("c4mon: --on-event: %d events still queued after %d ms were not run", act.n, wait_ms);
    act.dropped += (uint64_t)act.n;
    for (; act.n; act.n--, act.head = (act.head + 1) % QUEUE)
      free(act.q[act.head].line);
  }
  if (running())
    C4_WARN("c4mon: --on-event: %d commands still running after %d ms; c4mon stops waiting for "
            "them",
            running(), wait_ms);
  memset(act.run, 0, sizeof act.run);
  free(act.cmd);
  act.cmd = NULL;
}

uint64_t c4_mon_actions_dropped(void) { return act.dropped; }
uint64_t c4_mon_actions_started(void) { return act.started; }
uint64_t c4_mon_actions_failed(void) { return act.failed; }
