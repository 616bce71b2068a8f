/* scen_sink.c -- two buffers in turn: the caller fills one while the writer thread writes the
 * other. */
#include "scen_sink.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c4_err.h"

#define BUF_BYTES (32u << 20)
#define MAX_PIECE (1u << 20)

struct c4_scen_sink {
  int fd, own;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint8_t *buf[2];
  int cur;       /* the buffer the caller fills */
  size_t used;   /* bytes in it */
  uint8_t *full; /* handed to the writer; NULL once written */
  size_t full_len;
  int closing;
  int err; /* errno of the first failed write, 0 */
};

/* Writes all of p, going on after short writes and interrupts; 0 or errno. */
static int write_all(int fd, const uint8_t *p, size_t n) {
  while (n) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return k < 0 ? errno : EIO;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

static void *writer(void *arg) {
  struct c4_scen_sink *s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (!s->full && !s->closing)
      pthread_cond_wait(&s->cv, &s->mu);
    if (!s->full) break;
    uint8_t *p = s->full;
    size_t n = s->full_len;
    pthread_mutex_unlock(&s->mu);
    int e = __atomic_load_n(&s->err, __ATOMIC_RELAXED) ? 0 : write_all(s->fd, p, n);
    pthread_mutex_lock(&s->mu);
    if (e) __atomic_store_n(&s->err, e, __ATOMIC_RELAXED);
    s->full = NULL;
    pthread_cond_broadcast(&s->cv);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

int c4_scen_sink_open(struct c4_scen_sink **out, const char *path) {
  struct c4_scen_sink *s = calloc(1, sizeof *s);
  if (!s) return C4_ENOMEM;
  s->own = strcmp(path, "-") != 0;
  s->fd = s->own ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : STDOUT_FILENO;
  if (s->fd < 0) {
    int e = errno;
    free(s);
    errno = e;
    return C4_ESYS;
  }
  s->buf[0] = malloc(BUF_BYTES);
  s->buf[1] = malloc(BUF_BYTES);
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  if (!s->buf[0] || !s->buf[1] || pthread_create(&s->thread, NULL, writer, s)) {
    if (s->own) close(s->fd);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s->buf[0]);
    free(s->buf[1]);
    free(s);
    return C4_ENOMEM;
  }
  *out = s;
  return 0;
}

/* Hands the current buffer to the writer (after it finished the other) and takes the other. */
static void hand_off(struct c4_scen_sink *s) {
  pthread_mutex_lock(&s->mu);
  while (s->full)
    pthread_cond_wait(&s->cv, &s->mu);
  if (s->used) {
    s->full = s->buf[s->cur];
    s->full_len = s->used;
    s->cur ^= 1;
    s->used = 0;
    pthread_cond_broadcast(&s->cv);
  }
  pthread_mutex_unlock(&s->mu);
}

uint8_t *c4_scen_sink_space(struct c4_scen_sink *s, size_t n) {
  if (n > MAX_PIECE) return NULL;
  if (s->used + n > BUF_BYTES) hand_off(s);
  if (__atomic_load_n(&s->err, __ATOMIC_RELAXED)) return NULL;
  return s->buf[s->cur] + s->used;
}

void c4_scen_sink_wrote(struct c4_scen_sink *s, size_t n) { s->used += n; }

int c4_scen_sink_put(struct c4_scen_sink *s, const void *p, size_t n) {
  uint8_t *room = c4_scen_sink_space(s, n);
  if (!room) return C4_ESYS;
  memcpy(room, p, n);
  c4_scen_sink_wrote(s, n);
  return 0;
}

int c4_scen_sink_close(struct c4_scen_sink *s) {
  hand_off(s);
  pthread_mutex_lock(&s->mu);
  s->closing = 1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->thread, NULL);
  int e = __atomic_load_n(&s->err, __ATOMIC_RELAXED);
  if (s->own && close(s->fd) && !e) e = errno;
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s->buf[0]);
  free(s->buf[1]);
  free(s);
  errno = e;
  return e ? C4_ESYS : 0;
}
