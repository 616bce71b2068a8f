/* c4_bootstrap.c -- rendezvous through rank 0: star-shaped allgather with checked frames. */
#include "c4_bootstrap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "c4_clock.h"
#include "c4_env.h"
#include "c4_err.h"
#include "c4_log.h"
#include "c4_ranks.h"

#define BS_MAGIC 0x53423443u /* "C4BS" in memory on little-endian hosts */
#define BS_VERSION 1
#define KIND_HELLO 0
#define KIND_DATA 1
#define MAX_BLOB (1u << 20)
#define HELLO_MS 5000         /* a rank sends its hello right after connecting */
#define BACKOFF_MIN_US 10000  /* connect retries: 10 ms, doubling ... */
#define BACKOFF_MAX_US 500000 /* ... up to 0.5 s */

/* Every frame starts with this header (host byte order: all ranks of a job share an ABI). */
struct frame {
  uint32_t magic;
  uint16_t version;
  uint16_t kind;
  uint32_t rank;  /* the sender's rank */
  uint32_t world; /* the sender's world size */
  uint32_t round; /* collective counter: both sides must be in the same collective */
  uint32_t len;   /* payload bytes after the header */
};

static void peer_name(int fd, char *out, size_t len) {
  struct sockaddr_storage sa;
  socklen_t salen = sizeof sa;
  char host[NI_MAXHOST], port[NI_MAXSERV];
  if (getpeername(fd, (struct sockaddr *)&sa, &salen) != 0 ||
      getnameinfo((struct sockaddr *)&sa, salen, host, sizeof host, port, sizeof port,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    snprintf(out, len, "an unknown peer");
    return;
  }
  snprintf(out, len, sa.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, port);
}

/* Moves exactly len bytes before the deadline. 0, C4_EREMOTE (closed, reset or timed out) or
 * C4_ESYS. */
static int io_full(int fd, void *buf, size_t len, int sending, uint64_t deadline) {
  char *p = buf;
  while (len > 0) {
    int64_t left_ms = ((int64_t)deadline - (int64_t)c4_now_ns()) / 1000000;
    if (left_ms <= 0) return C4_EREMOTE;
    struct pollfd pfd = {.fd = fd, .events = sending ? POLLOUT : POLLIN};
    int pr = poll(&pfd, 1, (int)(left_ms > 1000 ? 1000 : left_ms));
    if (pr < 0 && errno != EINTR) return C4_ESYS;
    if (pr <= 0) continue;
    ssize_t k =
        sending ? send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT) : recv(fd, p, len, MSG_DONTWAIT);
    if (k == 0) return C4_EREMOTE;
    if (k < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return C4_EREMOTE;
    }
    p += k;
    len -= (size_t)k;
  }
  return 0;
}

static uint64_t deadline_in(int ms) { return c4_now_ns() + (uint64_t)ms * 1000000ull; }

static int send_frame(struct c4_bootstrap *bs, int fd, int timeout_ms, uint16_t kind,
                      const void *data, uint32_t len) {
  struct frame f = {.magic = BS_MAGIC,
                    .version = BS_VERSION,
                    .kind = kind,
                    .rank = (uint32_t)bs->rank,
                    .world = (uint32_t)bs->world,
                    .round = bs->round,
                    .len = len};
  uint64_t dl = deadline_in(timeout_ms);
  int rc = io_full(fd, &f, sizeof f, 1, dl);
  if (rc == 0 && len) rc = io_full(fd, (void *)data, len, 1, dl);
  if (rc) {
    char who[80];
    peer_name(fd, who, sizeof who);
    C4_WARN("bootstrap: rank %d could not send %u bytes to %s (gone, or stuck for %d ms)", bs->rank,
            len, who, timeout_ms);
  }
  return rc;
}

/* Reads one frame within timeout_ms and checks every field: magic (first, so that a stranger's
 * bytes are refused at once), version, kind, world, round, rank (want_rank, or any of 1..world-1
 * when want_rank < 0) and length. On success *rank_out (if not NULL) is the sender's rank. */
static int recv_frame(struct c4_bootstrap *bs, int fd, int timeout_ms, uint16_t kind, int want_rank,
                      void *data, uint32_t len, uint32_t *rank_out) {
  struct frame f;
  char who[80];
  uint64_t dl = deadline_in(timeout_ms);
  int rc = io_full(fd, &f.magic, sizeof f.magic, 0, dl);
  if (rc == 0 && f.magic != BS_MAGIC) {
    peer_name(fd, who, sizeof who);
    C4_WARN("bootstrap: rank %d: %s sent bytes that are not c4 bootstrap (magic 0x%08x, want "
            "0x%08x); is another program using this port?",
            bs->rank, who, f.magic, BS_MAGIC);
    return C4_EPROTO;
  }
  if (rc == 0) rc = io_full(fd, (char *)&f + sizeof f.magic, sizeof f - sizeof f.magic, 0, dl);
  if (rc) {
    peer_name(fd, who, sizeof who);
    C4_WARN("bootstrap: rank %d: %s went away or sent no complete frame within %d ms", bs->rank,
            who, timeout_ms);
    return rc;
  }
  int rank_ok =
      want_rank >= 0 ? f.rank == (uint32_t)want_rank : f.rank >= 1 && f.rank < (uint32_t)bs->world;
  if (f.version != BS_VERSION || f.kind != kind || f.world != (uint32_t)bs->world ||
      f.round != bs->round || f.len != len || !rank_ok) {
    peer_name(fd, who, sizeof who);
    C4_WARN("bootstrap: rank %d: %s sent version %u kind %u from rank %u of %u, round %u, %u "
            "bytes; expected version %u kind %u from rank %d of %d, round %u, %u bytes",
            bs->rank, who, f.version, f.kind, f.rank, f.world, f.round, f.len, BS_VERSION, kind,
            want_rank, bs->world, bs->round, len);
    return C4_EPROTO;
  }
  if (rank_out) *rank_out = f.rank;
  rc = len ? io_full(fd, data, len, 0, dl) : 0;
  if (rc) {
    peer_name(fd, who, sizeof who);
    C4_WARN("bootstrap: rank %d: %s (rank %u) cut its %u-byte payload short", bs->rank, who, f.rank,
            len);
  }
  return rc;
}

static int resolve(const char *addr, int port, struct sockaddr_storage *out, socklen_t *len) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
  char svc[16];
  snprintf(svc, sizeof svc, "%d", port);
  int e = getaddrinfo(addr, svc, &hints, &res);
  if (e) {
    C4_WARN("bootstrap: cannot resolve %s: %s", addr, gai_strerror(e));
    return e == EAI_AGAIN ? C4_EREMOTE : C4_EINVAL; /* a DNS server down may come back */
  }
  memcpy(out, res->ai_addr, res->ai_addrlen);
  *len = res->ai_addrlen;
  freeaddrinfo(res);
  return 0;
}

/* Rank 0: accepts connections until every rank 1..world-1 has said hello. Anything else that
 * connects (a stranger, a rank of another job, a duplicate) is logged and dropped, and the
 * rendezvous goes on. */
static int root_accept_all(struct c4_bootstrap *bs, int lfd) {
  int joined = 1;
  uint64_t dl = deadline_in(bs->timeout_ms);
  while (joined < bs->world) {
    int64_t left_ms = ((int64_t)dl - (int64_t)c4_now_ns()) / 1000000;
    if (left_ms <= 0) {
      C4_WARN("bootstrap: only %d of %d ranks joined within %d ms (C4_BOOTSTRAP_TIMEOUT_MS)",
              joined, bs->world, bs->timeout_ms);
      return C4_EREMOTE;
    }
    struct pollfd pfd = {.fd = lfd, .events = POLLIN};
    if (poll(&pfd, 1, (int)(left_ms > 1000 ? 1000 : left_ms)) <= 0) continue;
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) continue;
    uint32_t r = 0;
    int hello_ms = left_ms < HELLO_MS ? (int)left_ms : HELLO_MS;
    if (recv_frame(bs, fd, hello_ms, KIND_HELLO, -1, NULL, 0, &r) != 0) {
      close(fd); /* recv_frame said why */
      continue;
    }
    if (bs->peer_fd[r] >= 0) {
      char who[80];
      peer_name(fd, who, sizeof who);
      C4_WARN("bootstrap: %s claims rank %u, which already joined; dropped", who, r);
      close(fd);
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    bs->peer_fd[r] = fd;
    joined++;
  }
  return 0;
}

/* Non-root: one connect attempt bounded by ms. Returns the socket or -1. */
static int connect_once(const struct sockaddr_storage *sa, socklen_t salen, int ms) {
  int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return C4_NONE;
  if (connect(fd, (const struct sockaddr *)sa, salen) != 0) {
    if (errno != EINPROGRESS) goto fail;
    struct pollfd pfd = {.fd = fd, .events = POLLOUT};
    if (poll(&pfd, 1, ms) != 1) goto fail;
    int err = 0;
    socklen_t elen = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0 || err != 0) goto fail;
  }
  return fd;
fail:
  close(fd);
  return C4_NONE;
}

int c4_bootstrap_init(struct c4_bootstrap *bs, int rank, int world, const char *addr, int port) {
  memset(bs, 0, sizeof *bs);
  bs->rank = rank;
  bs->world = world;
  bs->root_fd = -1;
  bs->timeout_ms = (int)c4_env_long("C4_BOOTSTRAP_TIMEOUT_MS", 60000, 100, 3600000);
  if (world < 1 || rank < 0 || rank >= world || port <= 0 || port > 65535 || !addr) {
    C4_WARN("bootstrap: rank %d of %d at %s port %d makes no sense", rank, world,
            addr ? addr : "(no address)", port);
    return C4_EINVAL;
  }
  if (world == 1) return 0;
  struct sockaddr_storage sa;
  socklen_t salen;
  int rc = resolve(addr, port, &sa, &salen);
  if (rc) return rc;
  int one = 1;
  if (rank == 0) {
    bs->peer_fd = malloc(sizeof(int) * (size_t)world);
    if (!bs->peer_fd) return C4_ENOMEM;
    for (int i = 0; i < world; i++)
      bs->peer_fd[i] = -1;
    int lfd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(lfd, (struct sockaddr *)&sa, salen) != 0 || listen(lfd, 4096) != 0) {
      C4_WARN("bootstrap: rank 0 cannot listen on %s:%d: %s", addr, port, strerror(errno));
      if (lfd >= 0) close(lfd);
      c4_bootstrap_close(bs);
      return C4_ESYS;
    }
    rc = root_accept_all(bs, lfd);
    close(lfd);
    if (rc) c4_bootstrap_close(bs);
    return rc;
  }
  uint64_t dl = deadline_in(bs->timeout_ms);
  useconds_t backoff = BACKOFF_MIN_US;
  for (;;) {
    int64_t left_ms = ((int64_t)dl - (int64_t)c4_now_ns()) / 1000000;
    int fd = left_ms > 0 ? connect_once(&sa, salen, left_ms > 2000 ? 2000 : (int)left_ms) : -1;
    if (fd >= 0) {
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      bs->root_fd = fd;
      break;
    }
    if (c4_now_ns() + (uint64_t)backoff * 1000u > dl) {
      C4_WARN("bootstrap: rank %d cannot reach rank 0 at %s:%d within %d ms "
              "(C4_BOOTSTRAP_TIMEOUT_MS)",
              rank, addr, port, bs->timeout_ms);
      return C4_EREMOTE;
    }
    usleep(backoff);
    backoff = backoff * 2 > BACKOFF_MAX_US ? BACKOFF_MAX_US : backoff * 2;
  }
  rc = send_frame(bs, bs->root_fd, bs->timeout_ms, KIND_HELLO, NULL, 0);
  if (rc) c4_bootstrap_close(bs);
  return rc;
}

int c4_bootstrap_from_env(struct c4_bootstrap *bs) {
  struct c4_ranks r;
  char err[512];
  if (c4_ranks_from_env(&r, err, sizeof err) != 0) {
    memset(bs, 0, sizeof *bs);
    bs->root_fd = -1; /* closing it is harmless, as after any failure */
    C4_WARN("bootstrap: %s", err);
    return C4_EINVAL;
  }
  return c4_bootstrap_init(bs, r.rank, r.world, r.master, r.port);
}

int c4_bootstrap_allgather(struct c4_bootstrap *bs, const void *mine, void *all, size_t len) {
  return c4_bootstrap_allgather_within(bs, mine, all, len, bs->timeout_ms);
}

int c4_bootstrap_allgather_within(struct c4_bootstrap *bs, const void *mine, void *all, size_t len,
                                  int timeout_ms) {
  if (len > MAX_BLOB || len * (size_t)bs->world > UINT32_MAX) {
    C4_WARN("bootstrap: allgather of %zu bytes per rank from %d ranks is too large (at most %u "
            "per rank, 4 GiB in all)",
            len, bs->world, MAX_BLOB);
    return C4_EINVAL;
  }
  char *out = all;
  memmove(out + (size_t)bs->rank * len, mine, len);
  int rc = 0;
  if (bs->world > 1 && bs->rank == 0) {
    for (int r = 1; r < bs->world && !rc; r++)
      rc = recv_frame(bs, bs->peer_fd[r], timeout_ms, KIND_DATA, r, out + (size_t)r * len,
                      (uint32_t)len, NULL);
    for (int r = 1; r < bs->world && !rc; r++)
      rc = send_frame(bs, bs->peer_fd[r], timeout_ms, KIND_DATA, out,
                      (uint32_t)(len * (size_t)bs->world));
  } else if (bs->world > 1) {
    rc = send_frame(bs, bs->root_fd, timeout_ms, KIND_DATA, mine, (uint32_t)len);
    if (!rc)
      rc = recv_frame(bs, bs->root_fd, timeout_ms, KIND_DATA, 0, out,
                      (uint32_t)(len * (size_t)bs->world), NULL);
  }
  bs->round++;
  return rc;
}

int c4_bootstrap_barrier(struct c4_bootstrap *bs) {
  char one = 1;
  char *all = calloc((size_t)bs->world, 1);
  if (!all) return C4_ENOMEM;
  int rc = c4_bootstrap_allgather(bs, &one, all, 1);
  free(all);
  return rc;
}

void c4_bootstrap_close(struct c4_bootstrap *bs) {
  if (bs->root_fd >= 0) close(bs->root_fd);
  bs->root_fd = -1;
  if (bs->peer_fd) {
    for (int i = 0; i < bs->world; i++)
      if (bs->peer_fd[i] >= 0) close(bs->peer_fd[i]);
    free(bs->peer_fd);
    bs->peer_fd = NULL;
  }
}

int c4_bootstrap_free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) ||
      getsockname(fd, (struct sockaddr *)&a, &len)) {
    if (fd >= 0) close(fd);
    return 29500;
  }
  close(fd);
  return ntohs(a.sin_port);
}
