/* mon_load.c -- load generator for c4mon's ingest benchmark: opens N rank connections to c4mon
 * (each answers the challenge with a valid HELLO), then streams RECORDS frames round-robin over
 * all of them for S seconds, and prints records sent and records/s. Given c4mon's PID, it also
 * prints the CPU seconds c4mon spent while the records streamed (handshakes excluded), so the
 * bench can state records per second per core of c4mon.
 * Usage: c4-mon-load ADDR:PORT TOKEN CONNECTIONS SECONDS [C4MON_PID] */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "c4_clock.h"
#include "c4_err.h"
#include "c4_frame.h"

static int recv_full(int fd, void *p, size_t n) {
  return recv(fd, p, n, MSG_WAITALL) == (ssize_t)n ? 0 : -1;
}

static int open_rank(const struct sockaddr_in *a, const char *token, int rank) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, (const struct sockaddr *)a, sizeof *a) != 0) return C4_NONE;
  uint8_t hdr[C4_FRAME_HDR], ch[C4_FRAME_CHALLENGE_SIZE], nonce[C4_FRAME_NONCE];
  int type;
  uint32_t len;
  uint64_t t;
  if (recv_full(fd, hdr, sizeof hdr) || c4_frame_get_header(hdr, &type, &len) ||
      type != C4_FRAME_CHALLENGE || len != sizeof ch || recv_full(fd, ch, sizeof ch) ||
      c4_frame_get_challenge(ch, len, nonce, &t))
    return C4_NONE;
  struct c4_hello h = {.pid = (uint32_t)getpid(), .rank = rank};
  strcpy(h.job, "load");
  strcpy(h.host, "loadgen");
  uint8_t msg[C4_FRAME_HDR + 256];
  c4_frame_put_header(msg, C4_FRAME_HELLO, (uint32_t)c4_frame_hello_size());
  c4_frame_put_hello(msg + C4_FRAME_HDR, &h, nonce, token);
  if (send(fd, msg, C4_FRAME_HDR + c4_frame_hello_size(), MSG_NOSIGNAL) < 0) return C4_NONE;
  uint8_t w[2];
  if (recv_full(fd, hdr, sizeof hdr) || c4_frame_get_header(hdr, &type, &len) ||
      type != C4_FRAME_WELCOME || len != 2 || recv_full(fd, w, 2) || w[0] || w[1])
    return C4_NONE;
  return fd;
}

/* utime + stime of pid in seconds, or -1. */
static double cpu_seconds(int pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f) return C4_NONE;
  unsigned long ut = 0, st = 0;
  int ok = fscanf(f, "%*d %*s %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2;
  fclose(f);
  return ok ? (double)(ut + st) / (double)sysconf(_SC_CLK_TCK) : -1;
}

/* One RECORDS frame of coll records, reused for every send: its bytes in frame, its length in
 * *flen. Returns how many records it holds. */
static size_t make_frame(uint8_t *frame, size_t cap, size_t *flen) {
  struct c4_record r = {.kind = C4_REC_COLL};
  strcpy(r.coll.func, "AllReduce");
  strcpy(r.coll.dtype, "ncclFloat32");
  r.coll.t_arrive = 1;
  size_t used = 2, per = 0;
  while (used + c4_frame_record_size(C4_REC_COLL) <= C4_FRAME_MAX_PAYLOAD && per < 380) {
    used += c4_frame_put_record(frame + C4_FRAME_HDR + used, cap - used, &r);
    per++;
  }
  frame[C4_FRAME_HDR] = (uint8_t)per;
  frame[C4_FRAME_HDR + 1] = (uint8_t)(per >> 8);
  c4_frame_put_header(frame, C4_FRAME_RECORDS, (uint32_t)used);
  *flen = C4_FRAME_HDR + used;
  return per;
}

/* Sends the frame round the n connections for secs seconds: the records sent in *sent, how long
 * it took in *dt. Returns 0, or C4_ESYS when a send failed (said on stderr). */
static int blast(const int *fd, int n, const uint8_t *frame, size_t flen, size_t per, double secs,
                 uint64_t *sent, double *dt) {
  uint64_t end = c4_now_ns() + (uint64_t)(secs * 1e9), t0 = c4_now_ns();
  *sent = 0;
  for (int i = 0; c4_now_ns() < end; i = (i + 1) % n) {
    size_t off = 0;
    while (off < flen) {
      ssize_t k = send(fd[i], frame + off, flen - off, MSG_NOSIGNAL);
      if (k <= 0) {
        fprintf(stderr, "c4-mon-load: send failed on connection %d\n", i);
        return C4_ESYS;
      }
      off += (size_t)k;
    }
    *sent += per;
  }
  *dt = (double)(c4_now_ns() - t0) / 1e9;
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 5 && argc != 6) {
    fprintf(stderr, "usage: c4-mon-load ADDR:PORT TOKEN CONNECTIONS SECONDS [C4MON_PID]\n");
    return 2;
  }
  int mon_pid = argc == 6 ? atoi(argv[5]) : 0;
  char host[64];
  const char *colon = strrchr(argv[1], ':');
  if (!colon || (size_t)(colon - argv[1]) >= sizeof host) return 2;
  memcpy(host, argv[1], (size_t)(colon - argv[1]));
  host[colon - argv[1]] = 0;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
  inet_pton(AF_INET, host, &a.sin_addr);
  int n = atoi(argv[3]);
  double secs = atof(argv[4]), dt = 0;
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  int *fd = calloc((size_t)n, sizeof *fd);
  for (int i = 0; i < n; i++)
    if ((fd[i] = open_rank(&a, argv[2], i)) < 0) {
      fprintf(stderr, "c4-mon-load: connection %d failed: %s\n", i, strerror(errno));
      return 1;
    }
  static uint8_t frame[C4_FRAME_HDR + C4_FRAME_MAX_PAYLOAD];
  size_t flen, per = make_frame(frame, sizeof frame, &flen);
  usleep(500000); /* let c4mon finish the handshakes before the clock starts */
  double cpu0 = mon_pid ? cpu_seconds(mon_pid) : -1;
  uint64_t sent;
  if (blast(fd, n, frame, flen, per, secs, &sent, &dt) != 0) return 1;
  printf("connections %d\nrecords_sent %llu\nsend_rate %.0f\n", n, (unsigned long long)sent,
         (double)sent / dt);
  if (mon_pid) {
    usleep(500000); /* c4mon drains what is in flight */
    double cpu = cpu_seconds(mon_pid) - cpu0;
    printf("c4mon_cpu_s %.2f\nc4mon_records_per_core_s %.0f\n", cpu,
           cpu > 0 ? (double)sent / cpu : 0);
  }
  for (int i = 0; i < n; i++)
    close(fd[i]);
  return 0;
}
