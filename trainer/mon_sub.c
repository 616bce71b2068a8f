/* mon_sub.c -- the subscription reader: poll with short timeouts so stop is prompt, JSON lines
 * parsed with jansson, a straggler verdict remembered by id until its `recovered` clears it. */
#include "mon_sub.h"
#include "c4_env.h"
#include "c4_err.h"
#include "c4_frame.h"

#include <errno.h>
#include <jansson.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define LINE_MAX_BYTES 65536

struct mon_sub {
  char host[256], port[16];
  char job[C4_FRAME_NAME]; /* the job whose events count: C4_JOB, cut as the plugin cuts it */
  int my_rank;
  mon_sub_event_fn on_event;
  void *arg;
  pthread_t thread;
  pthread_mutex_t lock;
  int stop;
  double factor;     /* under lock */
  long straggler_id; /* the verdict that set factor */
  long recoveries;   /* verdicts on my_rank that a `recovered` cleared, under lock */
  long events;       /* under lock */
  char buf[LINE_MAX_BYTES];
  size_t used;
};

static int stopping(struct mon_sub *s) {
  pthread_mutex_lock(&s->lock);
  int v = s->stop;
  pthread_mutex_unlock(&s->lock);
  return v;
}

/* Connects without blocking longer than 1 s; the socket, or a C4_E* code when c4mon is not there
 * (yet). */
static int dial(struct mon_sub *s) {
  struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai = NULL;
  if (getaddrinfo(s->host, s->port, &hints, &ai) != 0 || !ai) return C4_ENOTFOUND;
  int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
    close(fd);
    fd = -1;
  }
  freeaddrinfo(ai);
  if (fd < 0) return C4_ESYS;
  struct pollfd p = {.fd = fd, .events = POLLOUT};
  int soerr = 0;
  socklen_t len = sizeof soerr;
  if (poll(&p, 1, 1000) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) || soerr) {
    close(fd);
    return C4_EREMOTE;
  }
  return fd;
}

static int has_rank(json_t *ranks, int rank) {
  size_t i;
  json_t *v;
  json_array_foreach(ranks, i, v) if (json_integer_value(v) == rank) return 1;
  return 0;
}

static void handle_line(struct mon_sub *s, const char *line) {
  json_t *ev = json_loads(line, 0, NULL);
  const char *kind = json_string_value(json_object_get(ev, "kind"));
  if (!kind) {
    json_decref(ev);
    return;
  }
  /* c4mon serves every job: another job's rank 2 is not this job's (a job's layout probes
   * report as a job of their own) */
  const char *job = json_string_value(json_object_get(ev, "job"));
  if (job && strcmp(job, s->job) != 0) {
    json_decref(ev);
    return;
  }
  json_t *ranks = json_object_get(ev, "ranks");
  pthread_mutex_lock(&s->lock);
  s->events++;
  if (strcmp(kind, "straggler") == 0 && has_rank(ranks, s->my_rank)) {
    s->factor = json_number_value(json_object_get(ev, "factor"));
    s->straggler_id = (long)json_integer_value(json_object_get(ev, "id"));
  } else if (strcmp(kind, "recovered") == 0 && s->straggler_id &&
             json_integer_value(json_object_get(ev, "clears")) == s->straggler_id) {
    s->factor = 0;
    s->straggler_id = 0;
    s->recoveries++;
  }
  pthread_mutex_unlock(&s->lock);
  if (s->on_event && (strcmp(kind, "straggler") == 0 || strcmp(kind, "noncomm_hang") == 0 ||
                      strcmp(kind, "rank_lost") == 0)) {
    int list[64], n = 0;
    size_t i;
    json_t *v;
    json_array_foreach(ranks, i, v) if (n < 64) list[n++] = (int)json_integer_value(v);
    s->on_event(s->arg, kind, list, n, (long long)json_integer_value(json_object_get(ev, "t")));
  }
  json_decref(ev);
}

/* Reads what is there and handles each complete line; -1 when the connection ended. A
 * line longer than the buffer is skipped, not split. */
static int drain(struct mon_sub *s, int fd) {
  ssize_t n = read(fd, s->buf + s->used, sizeof s->buf - 1 - s->used);
  if (n <= 0) return n < 0 && (errno == EAGAIN || errno == EINTR) ? 0 : -1;
  s->used += (size_t)n;
  s->buf[s->used] = 0;
  char *line = s->buf, *nl;
  while ((nl = memchr(line, '\n', s->used - (size_t)(line - s->buf)))) {
    *nl = 0;
    handle_line(s, line);
    line = nl + 1;
  }
  s->used -= (size_t)(line - s->buf);
  memmove(s->buf, line, s->used);
  if (s->used == sizeof s->buf - 1) s->used = 0;
  return 0;
}

static void *reader(void *arg) {
  struct mon_sub *s = arg;
  int backoff_ms = 200, failed = 0;
  while (!stopping(s)) {
    int fd = dial(s);
    /* said once, by the launcher or rank 0, when c4mon is still not there after about 3 s (its
     * first tries): a job told to follow c4mon that cannot reach it says so, and goes on */
    if (fd < 0 && ++failed == 4 && s->my_rank <= 0)
      fprintf(stderr,
              "c4train: warning: --monitor %s:%s does not answer; c4mon's verdicts are not "
              "followed until it does (trying again every few seconds)\n",
              s->host, s->port);
    if (fd < 0) {
      for (int waited = 0; waited < backoff_ms && !stopping(s); waited += 100)
        usleep(100000);
      if (backoff_ms < 5000) backoff_ms *= 2;
      continue;
    }
    backoff_ms = 200;
    s->used = 0;
    while (!stopping(s)) {
      struct pollfd p = {.fd = fd, .events = POLLIN};
      int r = poll(&p, 1, 200);
      if (r > 0 && drain(s, fd) < 0) break;
    }
    close(fd);
  }
  return NULL;
}

int mon_sub_addr_ok(const char *addr_port) {
  const char *colon = strrchr(addr_port, ':');
  if (!colon || colon == addr_port || (size_t)(colon - addr_port) >= 256 || !colon[1] ||
      strlen(colon + 1) >= 16)
    return 0;
  char *end;
  long port = strtol(colon + 1, &end, 10);
  return !*end && port > 0 && port < 65536;
}

struct mon_sub *mon_sub_start(const char *addr_port, int my_rank, mon_sub_event_fn on_event,
                              void *arg) {
  const char *colon = strrchr(addr_port, ':');
  if (!mon_sub_addr_ok(addr_port)) {
    fprintf(stderr, "c4train: --monitor %s: expected ADDR:PORT of c4mon's --subscribe port\n",
            addr_port);
    return NULL;
  }
  struct mon_sub *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  memcpy(s->host, addr_port, (size_t)(colon - addr_port));
  strcpy(s->port, colon + 1);
  snprintf(s->job, sizeof s->job, "%s", c4_env_job());
  s->my_rank = my_rank;
  s->on_event = on_event;
  s->arg = arg;
  pthread_mutex_init(&s->lock, NULL);
  if (pthread_create(&s->thread, NULL, reader, s) != 0) {
    free(s);
    return NULL;
  }
  return s;
}

double mon_sub_factor(struct mon_sub *s) {
  pthread_mutex_lock(&s->lock);
  double f = s->factor;
  pthread_mutex_unlock(&s->lock);
  return f;
}

long mon_sub_recoveries(struct mon_sub *s) {
  pthread_mutex_lock(&s->lock);
  long n = s->recoveries;
  pthread_mutex_unlock(&s->lock);
  return n;
}

long mon_sub_events(struct mon_sub *s) {
  pthread_mutex_lock(&s->lock);
  long n = s->events;
  pthread_mutex_unlock(&s->lock);
  return n;
}

void mon_sub_stop(struct mon_sub *s) {
  pthread_mutex_lock(&s->lock);
  s->stop = 1;
  pthread_mutex_unlock(&s->lock);
  pthread_join(s->thread, NULL);
  pthread_mutex_destroy(&s->lock);
  free(s);
}
