/* mon_subscribe.c -- fans events out to TCP subscribers from a thread of its own. Each line is
 * stored once, reference-counted, and queued to every subscriber. The thread writes a queue with
 * the mutex released, marking the lines it is writing so that none is dropped mid-write; a line
 * the sink drops leaves a gap in its place, which reaches the subscriber as a dropped notice. */
#include "mon_subscribe.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "c4_clock.h"
#include "c4_err.h"
#include "c4_log.h"
#include "mon_addr.h"

#define MAX_CLIENTS 256
#define QUEUE_BYTES ((size_t)1 << 20)
#define MAX_ACTIVE 16384
#define BATCH 64                        /* lines per sendmsg */
#define BATCH_BYTES ((size_t)256 << 10) /* bytes per sendmsg */

struct line {
  int refs; /* queues and the active table holding it; changed only under sub.lock */
  size_t len;
  char text[]; /* with its newline */
};

/* A queue entry: a line, or (line NULL) a gap of dropped lines, written as a notice. */
struct entry {
  struct line *line;
  unsigned long long dropped;
};

struct client {
  int fd, broken;  /* broken: its queue could not grow; the thread closes it */
  struct entry *q; /* ring, oldest at head */
  size_t cap, head, n;
  size_t bytes;    /* of the queued lines, whole */
  size_t sent;     /* of the line at head, already written */
  size_t inflight; /* lines from head being written by the thread: never dropped */
  char note[64];   /* a gap taken off the head, being written as a notice */
  size_t note_len, note_sent;
};

struct active {
  long long id;
  struct line *replay; /* its line with "replay":true */
};

static struct {
  pthread_mutex_t lock; /* guards cl, ncl, every client's queue and note, act, nact */
  pthread_t thread;
  int running, lfd, efd, port;
  atomic_int stop;
  struct client *cl[MAX_CLIENTS]; /* added and removed by the thread only */
  int ncl;
  struct active *act; /* in the order they were raised */
  int nact, act_cap, warned_full;
  unsigned long long refused;
  uint64_t accept_paused_until;
} sub = {.lock = PTHREAD_MUTEX_INITIALIZER, .lfd = -1, .efd = -1};

static struct line *line_new(const char *text, size_t len) {
  struct line *l = malloc(sizeof *l + len + 1);
  if (!l) return NULL;
  l->refs = 0;
  l->len = len + 1;
  memcpy(l->text, text, len);
  l->text[len] = '\n';
  return l;
}

static void line_unref(struct line *l) {
  if (--l->refs == 0) free(l);
}

/* The event with "replay":true, as a line to hand to subscribers that connect later. */
static struct line *replay_line(const json_t *event) {
  json_t *copy = json_deep_copy(event);
  char *text = NULL;
  if (copy && json_object_set_new(copy, "replay", json_true()) == 0)
    text = json_dumps(copy, JSON_COMPACT);
  json_decref(copy);
  struct line *l = text ? line_new(text, strlen(text)) : NULL;
  free(text);
  return l;
}

#define AT(c, i) ((c)->q[((c)->head + (i)) % (c)->cap])

/* Entries the thread must finish before anything may be dropped: those it is writing, or the
 * head once partly written. */
static size_t protected_entries(const struct client *c) {
  return c->inflight ? c->inflight : c->sent ? 1 : 0;
}

static int grow(struct client *c) {
  size_t cap = c->cap ? 2 * c->cap : 64;
  struct entry *q = malloc(cap * sizeof *q);
  if (!q) return C4_ENOMEM;
  for (size_t i = 0; i < c->n; i++)
    q[i] = AT(c, i);
  free(c->q);
  c->q = q;
  c->cap = cap;
  c->head = 0;
  return 0;
}

/* Removes entry i, moving the i entries before it up one place (a few: the protected lines, the
 * lines left unwritten by a short write, a gap). */
static void remove_at(struct client *c, size_t i) {
  for (; i > 0; i--)
    AT(c, i) = AT(c, i - 1);
  c->head = (c->head + 1) % c->cap;
  c->n--;
}

/* Drops the oldest line that is neither protected nor the newest; 0 when there is none. The line
 * turns into a gap where it stood, merged with the gaps beside it (no two gaps are ever
 * adjacent), so that each notice stands exactly where its lines are missing and counts them
 * exactly, whatever the thread writes meanwhile. */
static int drop_oldest(struct client *c) {
  size_t i = protected_entries(c);
  while (i < c->n && !AT(c, i).line)
    i++;
  if (i + 1 >= c->n) return 0;
  struct line *l = AT(c, i).line;
  c->bytes -= l->len;
  line_unref(l);
  int before = i > 0 && !AT(c, i - 1).line, after = !AT(c, i + 1).line;
  if (before && after) {
    AT(c, i - 1).dropped += 1 + AT(c, i + 1).dropped;
    remove_at(c, i + 1);
    remove_at(c, i);
  } else if (before || after) {
    AT(c, before ? i - 1 : i + 1).dropped++;
    remove_at(c, i);
  } else {
    AT(c, i) = (struct entry){.dropped = 1};
  }
  return 1;
}

/* Appends l to c's queue (lock held); past QUEUE_BYTES the oldest lines that may go, go. When the
 * queue cannot grow, its stream can no longer be told truthfully: the subscriber is closed. */
static void push(struct client *c, struct line *l) {
  if (c->broken) return;
  if (c->n == c->cap && grow(c) != 0) {
    c->broken = 1;
    return;
  }
  AT(c, c->n) = (struct entry){.line = l};
  c->n++;
  c->bytes += l->len;
  l->refs++;
  while (c->bytes > QUEUE_BYTES && drop_oldest(c)) {
  }
}

static void pop(struct client *c) {
  struct line *l = AT(c, 0).line;
  c->head = (c->head + 1) % c->cap;
  c->n--;
  c->sent = 0;
  if (!l) return;
  c->bytes -= l->len;
  line_unref(l);
}

static int pending(const struct client *c) { return c->n || c->note_len || c->broken; }

/* Writes what c has queued, as much as its socket takes without waiting. The lines go out with
 * the mutex released: only the thread removes entries from the head, and the sink drops none of
 * the inflight ones. A gap reaching the head becomes the notice written next; a batch stops at a
 * gap, so gaps never travel in flight. Returns 0, or C4_ENOMEM / C4_E* when the connection failed
 * or broke. */
static int drain(struct client *c) {
  for (;;) {
    struct iovec iov[BATCH + 1];
    int k = 0;
    size_t total = 0;
    pthread_mutex_lock(&sub.lock);
    if (c->broken) {
      pthread_mutex_unlock(&sub.lock);
      C4_WARN("c4mon: subscription port %d: out of memory for a subscriber's queue; closing it",
              sub.port);
      return C4_ENOMEM;
    }
    if (!c->note_len && c->n && !AT(c, 0).line) {
      c->note_len =
          (size_t)snprintf(c->note, sizeof c->note,
                           "{\"v\":1,\"kind\":\"dropped\",\"count\":%llu}\n", AT(c, 0).dropped);
      c->note_sent = 0;
      pop(c);
    }
    if (c->note_len) {
      iov[k++] = (struct iovec){c->note + c->note_sent, c->note_len - c->note_sent};
      total += c->note_len - c->note_sent;
    }
    for (size_t i = 0; i < c->n && k < BATCH + 1 && total < BATCH_BYTES && AT(c, i).line; i++) {
      struct line *l = AT(c, i).line;
      size_t off = i == 0 ? c->sent : 0;
      iov[k++] = (struct iovec){l->text + off, l->len - off};
      total += l->len - off;
      c->inflight = i + 1;
    }
    pthread_mutex_unlock(&sub.lock);
    if (!k) return 0;
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)k};
    ssize_t w = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    int err = errno;
    size_t left = w > 0 ? (size_t)w : 0;
    pthread_mutex_lock(&sub.lock);
    c->inflight = 0;
    if (c->note_len) {
      size_t t = left < c->note_len - c->note_sent ? left : c->note_len - c->note_sent;
      c->note_sent += t;
      left -= t;
      if (c->note_sent == c->note_len) c->note_len = c->note_sent = 0;
    }
    while (left) { /* only lines were in flight after the notice */
      size_t rest = AT(c, 0).line->len - c->sent;
      if (left < rest) {
        c->sent += left;
        break;
      }
      left -= rest;
      pop(c);
    }
    pthread_mutex_unlock(&sub.lock);
    if (w < 0) return err == EAGAIN || err == EWOULDBLOCK || err == EINTR ? 0 : -1;
    if ((size_t)w < total) return 0; /* the socket is full */
  }
}

/* Reads and throws away what a subscriber sent. Returns C4_EREMOTE at its end of stream or on an
 * error. */
static int discard_input(struct client *c) {
  char junk[4096];
  for (int i = 0; i < 16; i++) {
    ssize_t k = recv(c->fd, junk, sizeof junk, MSG_DONTWAIT);
    if (k > 0) continue;
    if (k == 0) return C4_EREMOTE;
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
  }
  return 0;
}

static void free_client(struct client *c) {
  pthread_mutex_lock(&sub.lock);
  while (c->n)
    pop(c);
  pthread_mutex_unlock(&sub.lock);
  close(c->fd);
  free(c->q);
  free(c);
}

static void remove_client(struct client *c) {
  pthread_mutex_lock(&sub.lock);
  for (int i = 0; i < sub.ncl; i++)
    if (sub.cl[i] == c) {
      sub.cl[i] = sub.cl[--sub.ncl];
      break;
    }
  pthread_mutex_unlock(&sub.lock);
  free_client(c);
}

/* Takes every pending connection; each new subscriber's queue starts with the active verdicts,
 * under the same mutex as the sink, so it misses no event and hears none twice. When the process
 * is out of descriptors the listener is left alone for 100 ms rather than polled in a busy loop. */
static void accept_all(void) {
  for (;;) {
    int fd = accept4(sub.lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        C4_WARN("c4mon: subscription port %d: cannot accept: %s; retrying in 100 ms", sub.port,
                strerror(errno));
        sub.accept_paused_until = c4_now_ns() + 100000000ull;
      }
      return;
    }
    struct client *c = sub.ncl < MAX_CLIENTS ? calloc(1, sizeof *c) : NULL;
    if (!c) {
      close(fd);
      if (sub.refused++ % 100 == 0)
        C4_WARN("c4mon: subscription port %d: subscriber refused (%s; %llu so far)", sub.port,
                sub.ncl < MAX_CLIENTS ? "out of memory" : "256 already connected", sub.refused);
      continue;
    }
    c->fd = fd;
    pthread_mutex_lock(&sub.lock);
    for (int i = 0; i < sub.nact; i++)
      push(c, sub.act[i].replay);
    sub.cl[sub.ncl++] = c;
    pthread_mutex_unlock(&sub.lock);
  }
}

static void *loop(void *arg) {
  (void)arg;
  static struct pollfd pf[MAX_CLIENTS + 2];
  static struct client *who[MAX_CLIENTS];
  while (!atomic_load(&sub.stop)) {
    int n = 0;
    pthread_mutex_lock(&sub.lock);
    for (int i = 0; i < sub.ncl; i++) {
      who[n] = sub.cl[i];
      pf[n++] = (struct pollfd){.fd = sub.cl[i]->fd,
                                .events = (short)(POLLIN | (pending(sub.cl[i]) ? POLLOUT : 0))};
    }
    pthread_mutex_unlock(&sub.lock);
    int paused = c4_now_ns() < sub.accept_paused_until;
    pf[n] = (struct pollfd){.fd = paused ? -1 : sub.lfd, .events = POLLIN};
    pf[n + 1] = (struct pollfd){.fd = sub.efd, .events = POLLIN};
    if (poll(pf, (nfds_t)n + 2, paused ? 100 : 1000) < 0) {
      if (errno != EINTR) {
        C4_WARN("c4mon: subscription port %d: poll failed: %s", sub.port, strerror(errno));
        nanosleep(&(struct timespec){.tv_nsec = 100000000}, NULL);
      }
      continue;
    }
    if (pf[n + 1].revents & POLLIN) {
      uint64_t v;
      if (read(sub.efd, &v, sizeof v) < 0) { /* EAGAIN: someone else's wake-up, already taken */
      }
    }
    for (int i = 0; i < n; i++) {
      short re = pf[i].revents;
      int gone = (re & (POLLERR | POLLNVAL)) != 0;
      if (!gone && (re & (POLLIN | POLLHUP))) gone = discard_input(who[i]) != 0;
      if (!gone && (re & POLLOUT)) gone = drain(who[i]) != 0;
      if (gone) remove_client(who[i]);
    }
    if (pf[n].revents & POLLIN) accept_all();
  }
  return NULL;
}

static void wake(void) {
  uint64_t one = 1;
  if (write(sub.efd, &one, sizeof one) < 0) { /* EAGAIN: a wake-up is already pending */
  }
}

/* The verdict table (lock held): a recovered event removes what it clears; any other event with
 * an id (not a dropped notice) is raised, or replaces the one of its id. */
static void track(const json_t *event, const char *kind, struct line *replay) {
  if (kind && !strcmp(kind, "recovered")) {
    json_int_t clears = json_integer_value(json_object_get(event, "clears"));
    for (int i = 0; i < sub.nact; i++)
      if (sub.act[i].id == clears) {
        line_unref(sub.act[i].replay);
        memmove(&sub.act[i], &sub.act[i + 1], (size_t)(sub.nact - i - 1) * sizeof *sub.act);
        sub.nact--;
        return;
      }
    return;
  }
  if (!replay) return;
  long long id = (long long)json_integer_value(json_object_get(event, "id"));
  for (int i = 0; i < sub.nact; i++)
    if (sub.act[i].id == id) {
      line_unref(sub.act[i].replay);
      sub.act[i].replay = replay;
      replay->refs++;
      return;
    }
  if (sub.nact == sub.act_cap) {
    int cap = sub.act_cap ? 2 * sub.act_cap : 64;
    struct active *a = cap <= MAX_ACTIVE ? realloc(sub.act, (size_t)cap * sizeof *a) : NULL;
    if (!a) {
      if (!sub.warned_full++)
        C4_WARN("c4mon: subscription port: %d verdicts active; later subscribers will not be "
                "replayed verdict %lld and those after it",
                sub.nact, id);
      return;
    }
    sub.act = a;
    sub.act_cap = cap;
  }
  sub.act[sub.nact].id = id;
  sub.act[sub.nact++].replay = replay;
  replay->refs++;
}

void c4_mon_subscribe_event(const json_t *event, const char *line, void *arg) {
  (void)arg;
  if (!sub.running || !line) return;
  const char *kind = json_string_value(json_object_get(event, "kind"));
  int raises = json_is_integer(json_object_get(event, "id")) &&
               !(kind && (!strcmp(kind, "recovered") || !strcmp(kind, "dropped")));
  struct line *l = line_new(line, strlen(line)), *replay = raises ? replay_line(event) : NULL;
  if (!l || (raises && !replay))
    C4_WARN("c4mon: subscription port: out of memory; event %lld (%s) %s",
            (long long)json_integer_value(json_object_get(event, "id")), kind ? kind : "?",
            !l ? "not sent to subscribers" : "not replayed to later subscribers");
  pthread_mutex_lock(&sub.lock);
  track(event, kind, replay);
  for (int i = 0; l && i < sub.ncl; i++)
    push(sub.cl[i], l);
  if (l && !l->refs) free(l);
  if (replay && !replay->refs) free(replay);
  pthread_mutex_unlock(&sub.lock);
  wake();
}

int c4_mon_subscribe_start(const char *addr_port) {
  if (sub.running) {
    C4_WARN("c4mon: --subscribe %s: the subscription port is already open (port %d)",
            addr_port ? addr_port : "(null)", sub.port);
    return C4_EINVAL;
  }
  if (!addr_port) {
    C4_WARN("c4mon: --subscribe needs ADDR:PORT");
    return C4_EINVAL;
  }
  int port = 0,
      fd = c4_mon_listen("--subscribe", addr_port, 64, &port); /* logs the address and the reason */
  if (fd < 0) {
    C4_WARN("c4mon: --subscribe %s: the subscription port is not open (%s)", addr_port,
            c4_strerror(fd));
    return fd;
  }
  int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (efd < 0) {
    C4_WARN("c4mon: --subscribe %s: eventfd: %s", addr_port, strerror(errno));
    close(fd);
    return C4_ESYS;
  }
  sub.lfd = fd;
  sub.efd = efd;
  sub.port = port;
  sub.ncl = sub.nact = sub.warned_full = 0;
  sub.refused = 0;
  sub.accept_paused_until = 0;
  atomic_store(&sub.stop, 0);
  sigset_t all, old; /* signals are for c4mon's main thread, not for this one */
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&sub.thread, NULL, loop, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    C4_WARN("c4mon: --subscribe %s: cannot start its thread: %s", addr_port, strerror(rc));
    close(fd);
    close(efd);
    sub.lfd = sub.efd = -1;
    sub.port = 0;
    return C4_ESYS;
  }
  sub.running = 1;
  C4_NOTE("c4mon: verdicts to subscribers on %.*s:%d", (int)(strrchr(addr_port, ':') - addr_port),
          addr_port, port);
  return 0;
}

int c4_mon_subscribe_port(void) { return sub.running ? sub.port : 0; }

int c4_mon_subscribe_clients(void) {
  pthread_mutex_lock(&sub.lock);
  int n = sub.ncl;
  pthread_mutex_unlock(&sub.lock);
  return n;
}

void c4_mon_subscribe_stop(void) {
  if (!sub.running) return;
  atomic_store(&sub.stop, 1);
  wake();
  pthread_join(sub.thread, NULL);
  sub.running = 0;
  while (sub.ncl) { /* the thread is gone: only this thread touches the clients now */
    struct client *c = sub.cl[--sub.ncl];
    drain(c); /* what the socket takes now; a subscriber that reads may get the last events */
    free_client(c);
  }
  pthread_mutex_lock(&sub.lock);
  for (int i = 0; i < sub.nact; i++)
    line_unref(sub.act[i].replay);
  free(sub.act);
  sub.act = NULL;
  sub.nact = sub.act_cap = 0;
  pthread_mutex_unlock(&sub.lock);
  close(sub.lfd);
  close(sub.efd);
  sub.lfd = sub.efd = -1;
  sub.port = 0;
}
