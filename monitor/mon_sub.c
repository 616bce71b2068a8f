/* mon_sub.c -- fans verdicts out to TCP subscribers from a thread of its own. */
#include "mon_sub.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "c4_err.h"
#include "c4_log.h"
#include "mon_addr.h"

#define MAX_SUBS 256
#define QUEUE_BYTES (1 << 20)
#define MAX_ACTIVE 4096

struct line {
  struct line *next;
  size_t len;
  char text[]; /* with its newline */
};

struct sub {
  int fd;
  struct line *head, *tail;
  size_t bytes, sent; /* queued; of the head, already written */
  unsigned long dropped;
};

static struct {
  pthread_t thread;
  pthread_mutex_t lock;
  int running, stop, lfd, efd, port;
  struct sub subs[MAX_SUBS];
  int nsubs;
  json_t *active[MAX_ACTIVE]; /* verdicts not yet recovered, for new subscribers */
  int nactive;
} sub = {.lock = PTHREAD_MUTEX_INITIALIZER, .lfd = -1, .efd = -1};

static struct line *line_new(const char *text, size_t len) {
  struct line *l = malloc(sizeof *l + len + 1);
  if (!l) return NULL;
  memcpy(l->text, text, len);
  l->text[len] = '\n';
  l->len = len + 1;
  l->next = NULL;
  return l;
}

/* Appends to s's queue, dropping its oldest unsent lines past QUEUE_BYTES (lock held). */
static void enqueue(struct sub *s, const char *text, size_t len) {
  struct line *l = line_new(text, len);
  if (!l) {
    s->dropped++;
    return;
  }
  if (s->tail)
    s->tail->next = l;
  else
    s->head = l;
  s->tail = l;
  s->bytes += l->len;
  while (s->bytes > QUEUE_BYTES) { /* the oldest goes; a partly written head must finish */
    struct line **victim = s->sent ? &s->head->next : &s->head;
    struct line *old = *victim;
    if (!old || old == s->tail) break;
    *victim = old->next;
    s->bytes -= old->len;
    free(old);
    s->dropped++;
  }
}

static void sub_close(int i) {
  struct sub *s = &sub.subs[i];
  close(s->fd);
  while (s->head) {
    struct line *l = s->head;
    s->head = l->next;
    free(l);
  }
  sub.subs[i] = sub.subs[--sub.nsubs];
}

static void wake(void) {
  uint64_t one = 1;
  if (write(sub.efd, &one, sizeof one) < 0) { /* the thread wakes on its timeout anyway */
  }
}

void c4_mon_sub_event(const json_t *event, const char *line, void *arg) {
  (void)arg;
  if (!sub.running) return;
  const char *kind = json_string_value(json_object_get(event, "kind"));
  pthread_mutex_lock(&sub.lock);
  if (kind && !strcmp(kind, "recovered")) {
    json_int_t clears = json_integer_value(json_object_get(event, "clears"));
    for (int i = 0; i < sub.nactive; i++)
      if (json_integer_value(json_object_get(sub.active[i], "id")) == clears) {
        json_decref(sub.active[i]);
        sub.active[i] = sub.active[--sub.nactive];
        break;
      }
  } else if (sub.nactive < MAX_ACTIVE) {
    sub.active[sub.nactive++] = json_deep_copy(event);
  }
  size_t len = strlen(line);
  for (int i = 0; i < sub.nsubs; i++)
    enqueue(&sub.subs[i], line, len);
  pthread_mutex_unlock(&sub.lock);
  wake();
}

/* A new subscriber: it first hears the verdicts still active. */
static void accept_all(void) {
  for (;;) {
    int fd = accept4(sub.lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    pthread_mutex_lock(&sub.lock);
    if (sub.nsubs == MAX_SUBS) {
      pthread_mutex_unlock(&sub.lock);
      close(fd);
      continue;
    }
    struct sub *s = &sub.subs[sub.nsubs++];
    memset(s, 0, sizeof *s);
    s->fd = fd;
    for (int i = 0; i < sub.nactive; i++) {
      json_t *copy = json_copy(sub.active[i]);
      json_object_set_new(copy, "replay", json_true());
      char *text = json_dumps(copy, JSON_COMPACT);
      if (text) enqueue(s, text, strlen(text));
      free(text);
      json_decref(copy);
    }
    pthread_mutex_unlock(&sub.lock);
  }
}

/* Writes what s has queued; 0 to keep it, -1 when it went away. Announces drops once the queue
 * has drained. Lock held. */
static int flush(struct sub *s) {
  while (s->head) {
    ssize_t k = send(s->fd, s->head->text + s->sent, s->head->len - s->sent, MSG_NOSIGNAL);
    if (k < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    s->sent += (size_t)k;
    if (s->sent < s->head->len) return 0;
    struct line *l = s->head;
    s->head = l->next;
    if (!s->head) s->tail = NULL;
    s->bytes -= l->len;
    s->sent = 0;
    free(l);
    if (!s->head && s->dropped) {
      char note[80];
      int n =
          snprintf(note, sizeof note, "{\"v\":1,\"kind\":\"dropped\",\"count\":%lu}", s->dropped);
      s->dropped = 0;
      enqueue(s, note, (size_t)n);
    }
  }
  return 0;
}

static void *loop(void *arg) {
  (void)arg;
  struct pollfd pf[MAX_SUBS + 2];
  while (!sub.stop) {
    pthread_mutex_lock(&sub.lock);
    int n = sub.nsubs;
    for (int i = 0; i < n; i++)
      pf[i] = (struct pollfd){.fd = sub.subs[i].fd,
                              .events = POLLIN | (sub.subs[i].head ? POLLOUT : 0)};
    pthread_mutex_unlock(&sub.lock);
    pf[n] = (struct pollfd){.fd = sub.lfd, .events = POLLIN};
    pf[n + 1] = (struct pollfd){.fd = sub.efd, .events = POLLIN};
    if (poll(pf, (nfds_t)n + 2, 200) < 0 && errno != EINTR) break;
    if (pf[n + 1].revents) {
      uint64_t v;
      if (read(sub.efd, &v, sizeof v) < 0) { /* nothing to do: it only wakes us */
      }
    }
    if (pf[n].revents) accept_all();
    pthread_mutex_lock(&sub.lock);
    for (int i = n - 1; i >= 0; i--) { /* subscribers added meanwhile come after n */
      int gone = 0;
      if (pf[i].revents & (POLLIN | POLLHUP | POLLERR)) { /* what they send is ignored */
        char junk[512];
        ssize_t k = recv(sub.subs[i].fd, junk, sizeof junk, MSG_DONTWAIT);
        gone = k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
      }
      if (!gone) gone = flush(&sub.subs[i]) != 0;
      if (gone) sub_close(i);
    }
    pthread_mutex_unlock(&sub.lock);
  }
  return NULL;
}

int c4_mon_sub_start(const char *addr_port) {
  sub.lfd = c4_mon_listen(addr_port, &sub.port);
  if (sub.lfd < 0) return sub.lfd;
  sub.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  sub.stop = 0;
  if (sub.efd < 0 || pthread_create(&sub.thread, NULL, loop, NULL) != 0) {
    close(sub.lfd);
    if (sub.efd >= 0) close(sub.efd);
    sub.lfd = sub.efd = -1;
    return C4_ESYS;
  }
  sub.running = 1;
  return 0;
}

int c4_mon_sub_port(void) { return sub.port; }

void c4_mon_sub_stop(void) {
  if (!sub.running) return;
  sub.stop = 1;
  wake();
  pthread_join(sub.thread, NULL);
  sub.running = 0;
  pthread_mutex_lock(&sub.lock);
  while (sub.nsubs) {
    flush(&sub.subs[0]); /* what fits in the socket goes out */
    sub_close(0);
  }
  for (int i = 0; i < sub.nactive; i++)
    json_decref(sub.active[i]);
  sub.nactive = 0;
  pthread_mutex_unlock(&sub.lock);
  close(sub.lfd);
  close(sub.efd);
  sub.lfd = sub.efd = -1;
}
