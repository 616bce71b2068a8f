/* mon_run_cmd.c -- runs the --on-event command per event, never blocking c4mon. */
#include "mon_run_cmd.h"

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

#include "c4_err.h"
#include "c4_log.h"

#define RUNNING 4
#define QUEUE 256

extern char **environ;

struct job {
  char *line, *kind;
  long long id;
};

static struct {
  char *cmd;
  pid_t pid[RUNNING];
  struct job queue[QUEUE];
  int head, len;
  struct c4_mon_run_stats st;
} run;

int c4_mon_run_cmd_start(const char *cmd) {
  memset(&run, 0, sizeof run);
  run.cmd = strdup(cmd);
  signal(SIGPIPE, SIG_IGN); /* a command that closes its stdin early must not end c4mon */
  return run.cmd ? 0 : C4_ENOMEM;
}

void c4_mon_run_cmd_event(const json_t *event, const char *line, void *arg) {
  (void)arg;
  if (!run.cmd) return;
  if (run.len == QUEUE) {
    run.st.dropped++;
    return;
  }
  struct job *j = &run.queue[(run.head + run.len) % QUEUE];
  j->line = strdup(line);
  j->kind = strdup(json_string_value(json_object_get(event, "kind"))
                       ? json_string_value(json_object_get(event, "kind"))
                       : "");
  j->id = (long long)json_integer_value(json_object_get(event, "id"));
  if (!j->line || !j->kind) {
    free(j->line);
    free(j->kind);
    run.st.dropped++;
    return;
  }
  run.len++;
  c4_mon_run_cmd_poll();
}

/* Builds the child's environment: ours plus the event's kind and id. */
static char **child_env(const struct job *j, char *kind, char *id) {
  size_t n = 0;
  while (environ[n])
    n++;
  char **env = calloc(n + 3, sizeof *env);
  if (!env) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "C4_EVENT_", 9)) env[k++] = environ[i];
  snprintf(kind, 96, "C4_EVENT_KIND=%s", j->kind);
  snprintf(id, 48, "C4_EVENT_ID=%lld", j->id);
  env[k++] = kind;
  env[k++] = id;
  return env;
}

/* Starts j in slot; its line goes into the pipe at once (an event line is far below a pipe's
 * 64 KiB, so the write cannot block even if the command never reads). */
static void spawn_one(int slot, struct job *j) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    run.st.failed++;
    return;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
  char kind[96], id[48];
  char **env = child_env(j, kind, id);
  char *argv[] = {"/bin/sh", "-c", run.cmd, NULL};
  pid_t pid;
  int rc = env ? posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, env) : ENOMEM;
  posix_spawn_file_actions_destroy(&fa);
  free(env);
  close(fds[0]);
  if (rc != 0) {
    C4_WARN("c4mon: --on-event: cannot start /bin/sh: %s", strerror(rc));
    run.st.failed++;
    close(fds[1]);
    return;
  }
  fcntl(fds[1], F_SETFL, O_NONBLOCK);
  size_t len = strlen(j->line);
  if (write(fds[1], j->line, len) != (ssize_t)len || write(fds[1], "\n", 1) != 1)
    C4_WARN("c4mon: --on-event: the command did not take the whole event");
  close(fds[1]);
  run.pid[slot] = pid;
  run.st.started++;
}

void c4_mon_run_cmd_poll(void) {
  for (int s = 0; s < RUNNING; s++) {
    if (run.pid[s] <= 0) continue;
    int status;
    if (waitpid(run.pid[s], &status, WNOHANG) != run.pid[s]) continue;
    if (!WIFEXITED(status) || WEXITSTATUS(status)) {
      run.st.failed++;
      C4_WARN("c4mon: --on-event command %s %d",
              WIFEXITED(status) ? "exited with" : "killed by signal",
              WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    }
    run.pid[s] = 0;
  }
  for (int s = 0; s < RUNNING && run.len; s++) {
    if (run.pid[s] > 0) continue;
    struct job *j = &run.queue[run.head];
    run.head = (run.head + 1) % QUEUE;
    run.len--;
    spawn_one(s, j);
    free(j->line);
    free(j->kind);
  }
}

void c4_mon_run_cmd_stop(int wait_ms) {
  for (int waited = 0;; waited += 10) {
    c4_mon_run_cmd_poll();
    int busy = run.len;
    for (int s = 0; s < RUNNING; s++)
      busy += run.pid[s] > 0;
    if (!busy || waited >= wait_ms) break;
    nanosleep(&(struct timespec){0, 10000000}, NULL);
  }
  while (run.len) {
    struct job *j = &run.queue[run.head];
    run.head = (run.head + 1) % QUEUE;
    run.len--;
    run.st.dropped++;
    free(j->line);
    free(j->kind);
  }
  free(run.cmd);
  run.cmd = NULL;
}

struct c4_mon_run_stats c4_mon_run_cmd_stats(void) {
  return run.st;
}
