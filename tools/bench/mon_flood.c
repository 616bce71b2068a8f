/* mon_flood.c -- unauthenticated connections against c4mon while a real rank streams: opens
 * STRANGERS connections that each claim a 64 KiB HELLO (half send the header and 64 KiB, half the
 * header and a few bytes, then wait), keeps them open 2 s, closes them, waits 7 s (c4mon's 5 s
 * HELLO deadline and its memory trim), and meanwhile streams RECORDS frames from one
 * authenticated rank. Prints c4mon's resident memory before, at its peak and after (from
 * /proc/PID/status), and the records the rank sent against those c4mon counted (its status).
 * Exit 0 when the rank stayed connected and every record it sent was counted, 1 otherwise, 2 on
 * bad usage.
 * Usage: c4-mon-flood ADDR:PORT TOKEN STRANGERS C4MON_PID */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "c4_clock.h"
#include "c4_err.h"
#include "c4_frame.h"
#include "mon_server.h"

#define CLAIM 65536

static int recv_full(int fd, void *p, size_t n) {
  return recv(fd, p, n, MSG_WAITALL) == (ssize_t)n ? 0 : -1;
}

static int open_rank(const struct sockaddr_in *a, const char *token) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, (const struct sockaddr *)a, sizeof *a) != 0) return C4_NONE;
  uint8_t hdr[C4_FRAME_HDR], ch[C4_FRAME_CHALLENGE_SIZE], nonce[C4_FRAME_NONCE], w[2];
  int type;
  uint32_t len;
  uint64_t t;
  if (recv_full(fd, hdr, sizeof hdr) || c4_frame_get_header(hdr, &type, &len) ||
      type != C4_FRAME_CHALLENGE || len != sizeof ch || recv_full(fd, ch, sizeof ch) ||
      c4_frame_get_challenge(ch, len, nonce, &t))
    return C4_NONE;
  struct c4_hello h = {.pid = (uint32_t)getpid(), .rank = 0};
  strcpy(h.job, "flood");
  strcpy(h.host, "real-rank");
  uint8_t msg[C4_FRAME_HDR + 256];
  c4_frame_put_header(msg, C4_FRAME_HELLO, (uint32_t)c4_frame_hello_size());
  c4_frame_put_hello(msg + C4_FRAME_HDR, &h, nonce, token);
  if (send(fd, msg, C4_FRAME_HDR + c4_frame_hello_size(), MSG_NOSIGNAL) < 0 ||
      recv_full(fd, hdr, sizeof hdr) || c4_frame_get_header(hdr, &type, &len) ||
      type != C4_FRAME_WELCOME || len != 2 || recv_full(fd, w, 2) || w[0])
    return C4_NONE;
  return fd;
}

/* A stranger: connects and claims a HELLO of CLAIM bytes; whole says whether it sends them. */
static int stranger(const struct sockaddr_in *a, int whole) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (const struct sockaddr *)a, sizeof *a) != 0) {
    if (fd >= 0) close(fd);
    return C4_NONE;
  }
  static uint8_t b[C4_FRAME_HDR + CLAIM];
  c4_frame_put_header(b, C4_FRAME_HELLO, CLAIM);
  (void)send(fd, b, whole ? sizeof b : C4_FRAME_HDR + 100, MSG_NOSIGNAL | MSG_DONTWAIT);
  return fd;
}

static long rss_kib(int pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", pid);
  FILE *f = fopen(path, "r");
  long v = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld", &v) == 1) break;
  if (f) fclose(f);
  return v;
}

/* Sends one RECORDS frame of 100 link records; returns 0 or C4_ESYS. */
static int stream(int fd, uint64_t *sent) {
  static uint8_t frame[C4_FRAME_HDR + 8192];
  struct c4_record r = {.kind = C4_REC_LINK};
  size_t used = 2;
  for (int i = 0; i < 100; i++) {
    r.link.t = c4_now_ns();
    r.link.conn_id = (uint64_t)i;
    used +=
        c4_frame_put_record(frame + C4_FRAME_HDR + used, sizeof frame - C4_FRAME_HDR - used, &r);
  }
  frame[C4_FRAME_HDR] = 100;
  frame[C4_FRAME_HDR + 1] = 0;
  c4_frame_put_header(frame, C4_FRAME_RECORDS, (uint32_t)used);
  if (send(fd, frame, C4_FRAME_HDR + used, MSG_NOSIGNAL) != (ssize_t)(C4_FRAME_HDR + used))
    return C4_ESYS;
  *sent += 100;
  return 0;
}

/* What the flood measured. */
struct flood {
  uint64_t sent;     /* records the real rank streamed */
  long before, peak; /* c4mon's resident KiB before the strangers, and at most during */
  int opened, ok;    /* strangers that got a connection; the real rank streamed throughout */
};

/* Opens n strangers against c4mon (pid) while the real rank streams, keeps them 2 s, closes them.
 * Fills f. */
static void flood(const struct sockaddr_in *a, int n, int rank, int pid, struct flood *f) {
  f->ok = stream(rank, &f->sent) == 0;
  usleep(200000);
  f->before = f->peak = rss_kib(pid);
  int *s = calloc((size_t)n, sizeof *s);
  for (int i = 0; i < n && f->ok; i++) {
    s[i] = stranger(a, i % 2);
    if (i % 100 == 99) {
      f->ok = stream(rank, &f->sent) == 0;
      long v = rss_kib(pid);
      if (v > f->peak) f->peak = v;
    }
  }
  for (uint64_t end = c4_now_ns() + 2000000000ull; f->ok && c4_now_ns() < end; usleep(50000)) {
    f->ok = stream(rank, &f->sent) == 0;
    long v = rss_kib(pid);
    if (v > f->peak) f->peak = v;
  }
  for (int i = 0; i < n; i++)
    if (s[i] >= 0) f->opened++, close(s[i]);
  free(s);
}

/* c4mon's own count of records and of connected ranks (-1 each when its status is not there). */
static void c4mon_counts(const char *addr, const char *token, long long *seen,
                         long long *connected) {
  char *doc = NULL;
  json_t *st = NULL;
  if (c4_mon_query_status(addr, token, &doc) == 0) st = json_loads(doc, 0, NULL);
  free(doc);
  *seen = st ? (long long)json_integer_value(json_object_get(st, "records")) : -1;
  *connected = st ? (long long)json_integer_value(json_object_get(st, "ranks_connected")) : -1;
  json_decref(st);
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: c4-mon-flood ADDR:PORT TOKEN STRANGERS C4MON_PID\n");
    return 2;
  }
  char host[64];
  const char *colon = strrchr(argv[1], ':');
  if (!colon || (size_t)(colon - argv[1]) >= sizeof host) return 2;
  memcpy(host, argv[1], (size_t)(colon - argv[1]));
  host[colon - argv[1]] = 0;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
  if (inet_pton(AF_INET, host, &a.sin_addr) != 1) return 2;
  int n = atoi(argv[3]), pid = atoi(argv[4]);
  if (n < 1 || pid < 1) return 2;
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  c4_frame_crypto_init();
  int rank = open_rank(&a, argv[2]);
  if (rank < 0) {
    fprintf(stderr, "c4-mon-flood: the real rank could not connect: %s\n", strerror(errno));
    return 1;
  }
  struct flood f = {0};
  flood(&a, n, rank, pid, &f);
  for (uint64_t end = c4_now_ns() + 7000000000ull; f.ok && c4_now_ns() < end; usleep(100000))
    f.ok = stream(rank, &f.sent) == 0;
  usleep(300000);
  long after = rss_kib(pid);
  long long seen, connected;
  c4mon_counts(argv[1], argv[2], &seen, &connected);
  close(rank);
  printf("strangers %d of %d opened, each claiming a %d-byte HELLO\n", f.opened, n, CLAIM);
  printf("c4mon rss_kib before %ld peak %ld after %ld\n", f.before, f.peak, after);
  printf("growth_mb %.1f\nkept_after_mb %.1f\n", (double)(f.peak - f.before) / 1024,
         (double)(after - f.before) / 1024);
  printf("real rank: %s, records sent %llu, counted by c4mon %lld, ranks connected %lld\n",
         f.ok ? "streamed throughout" : "lost its connection", (unsigned long long)f.sent, seen,
         connected);
  return f.ok && seen == (long long)f.sent && connected == 1 ? 0 : 1;
}
