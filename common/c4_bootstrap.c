/* c4_bootstrap.c -- rendezvous through rank 0: star-shaped allgather with checked frames. */
#include "c4_bootstrap.h"

#include <arpa/inet.h>
#include <errno.h>
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

#define BS_MAGIC 0x53423443u /* "C4BS" */
#define BS_VERSION 1
#define MAX_BLOB (1u << 20)

struct frame {
  uint32_t magic;
  uint16_t version;
  uint16_t kind; /* 0 hello, 1 data */
  uint32_t rank;
  uint32_t world;
  uint32_t round;
  uint32_t len;
};

static int io_full(int fd, void *buf, size_t len, int sending, uint64_t deadline) {
  char *p = buf;
  while (len > 0) {
    int64_t left_ms = ((int64_t)deadline - (int64_t)c4_now_ns()) / 1000000;
    if (left_ms <= 0) return C4_EREMOTE;
    struct pollfd pfd = {.fd = fd, .events = sending ? POLLOUT : POLLIN};
    int pr = poll(&pfd, 1, (int)(left_ms > 1000 ? 1000 : left_ms));
    if (pr < 0 && errno != EINTR) return C4_ESYS;
    if (pr <= 0) continue;
    ssize_t k = sending ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
    if (k == 0) return C4_EREMOTE;
    if (k < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return C4_EREMOTE;
    }
    p += k;
    len -= (size_t)k;
  }
  return 0;
}

static uint64_t deadline_of(const struct c4_bootstrap *bs) {
  return c4_now_ns() + (uint64_t)bs->timeout_ms * 1000000ull;
}

static int send_frame(struct c4_bootstrap *bs, int fd, uint16_t kind, uint32_t rank,
                      const void *data, uint32_t len) {
  struct frame f = {BS_MAGIC, BS_VERSION, kind, rank, (uint32_t)bs->world, bs->round, len};
  uint64_t dl = deadline_of(bs);
  int rc = io_full(fd, &f, sizeof f, 1, dl);
  if (rc == 0 && len) rc = io_full(fd, (void *)data, len, 1, dl);
  return rc;
}

/* Reads one frame and checks it: magic, version, kind, world, round, rank, length. */
static int recv_frame(struct c4_bootstrap *bs, int fd, uint16_t kind, int want_rank, void *data,
                      uint32_t len, uint32_t *rank_out) {
  struct frame f;
  uint64_t dl = deadline_of(bs);
  int rc = io_full(fd, &f, sizeof f, 0, dl);
  if (rc) {
    C4_WARN("bootstrap: rank %d: peer went away or timed out (%d ms)", bs->rank, bs->timeout_ms);
    return rc;
  }
  if (f.magic != BS_MAGIC || f.version != BS_VERSION || f.kind != kind) {
    C4_WARN("bootstrap: rank %d got a frame that is not c4's bootstrap (magic 0x%08x version %u "
            "kind %u)",
            bs->rank, f.magic, f.version, f.kind);
    return C4_EPROTO;
  }
  if (f.world != (uint32_t)bs->world || f.round != bs->round || f.len != len ||
      f.rank >= (uint32_t)bs->world || (want_rank >= 0 && f.rank != (uint32_t)want_rank)) {
    C4_WARN("bootstrap: rank %d: peer says rank %u of %u, round %u, %u bytes; expected %d of %d, "
            "round %u, %u bytes",
            bs->rank, f.rank, f.world, f.round, f.len, want_rank, bs->world, bs->round, len);
    return C4_EPROTO;
  }
  if (rank_out) *rank_out = f.rank;
  return len ? io_full(fd, data, len, 0, dl) : 0;
}

static int resolve(const char *addr, int port, struct sockaddr_storage *out, socklen_t *len) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
  char svc[16];
  snprintf(svc, sizeof svc, "%d", port);
  int e = getaddrinfo(addr, svc, &hints, &res);
  if (e) {
    C4_WARN("bootstrap: cannot resolve %s: %s", addr, gai_strerror(e));
    return C4_EINVAL;
  }
  memcpy(out, res->ai_addr, res->ai_addrlen);
  *len = res->ai_addrlen;
  freeaddrinfo(res);
  return 0;
}

static int root_accept_all(struct c4_bootstrap *bs, int lfd) {
  int joined = 1;
  uint64_t dl = deadline_of(bs);
  while (joined < bs->world) {
    int64_t left_ms = ((int64_t)dl - (int64_t)c4_now_ns()) / 1000000;
    if (left_ms <= 0) {
      C4_WARN("bootstrap: only %d of %d ranks joined within %d ms", joined, bs->world,
              bs->timeout_ms);
      return C4_EREMOTE;
    }
    struct pollfd pfd = {.fd = lfd, .events = POLLIN};
    if (poll(&pfd, 1, (int)(left_ms > 1000 ? 1000 : left_ms)) <= 0) continue;
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0) continue;
    uint32_t r;
    if (recv_frame(bs, fd, 0, -1, NULL, 0, &r) != 0 || r == 0 || bs->peer_fd[r] >= 0) {
      C4_WARN("bootstrap: rejected a connection that is not a new rank of this job");
      close(fd);
      continue;
    }
    bs->peer_fd[r] = fd;
    joined++;
  }
  return 0;
}

int c4_bootstrap_init(struct c4_bootstrap *bs, int rank, int world, const char *addr, int port) {
  memset(bs, 0, sizeof *bs);
  bs->rank = rank;
  bs->world = world;
  bs->root_fd = -1;
  bs->timeout_ms = (int)c4_env_long("C4_BOOTSTRAP_TIMEOUT_MS", 60000, 100, 3600000);
  if (world < 1 || rank < 0 || rank >= world || port <= 0 || port > 65535) {
    C4_WARN("bootstrap: rank %d of %d at port %d makes no sense", rank, world, port);
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
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, salen) != 0 || listen(lfd, 512) != 0) {
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
  uint64_t dl = deadline_of(bs);
  for (;;) {
    int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return C4_ESYS;
    if (connect(fd, (struct sockaddr *)&sa, salen) == 0) {
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      bs->root_fd = fd;
      break;
    }
    close(fd);
    if (c4_now_ns() > dl) {
      C4_WARN("bootstrap: rank %d cannot reach rank 0 at %s:%d within %d ms", rank, addr, port,
              bs->timeout_ms);
      return C4_EREMOTE;
    }
    usleep(20000);
  }
  rc = send_frame(bs, bs->root_fd, 0, (uint32_t)rank, NULL, 0);
  if (rc) c4_bootstrap_close(bs);
  return rc;
}

int c4_bootstrap_from_env(struct c4_bootstrap *bs) {
  int rank = (int)c4_env_long("RANK", 0, 0, 1 << 20);
  int world = (int)c4_env_long("WORLD_SIZE", 1, 1, 1 << 20);
  const char *addr = getenv("MASTER_ADDR");
  int port = (int)c4_env_long("MASTER_PORT", 29500, 1, 65535);
  return c4_bootstrap_init(bs, rank, world, addr ? addr : "127.0.0.1", port);
}

int c4_bootstrap_allgather(struct c4_bootstrap *bs, const void *mine, void *all, size_t len) {
  if (len > MAX_BLOB) return C4_EINVAL;
  char *out = all;
  memcpy(out + (size_t)bs->rank * len, mine, len);
  int rc = 0;
  if (bs->world > 1 && bs->rank == 0) {
    for (int r = 1; r < bs->world && !rc; r++)
      rc = recv_frame(bs, bs->peer_fd[r], 1, r, out + (size_t)r * len, (uint32_t)len, NULL);
    for (int r = 1; r < bs->world && !rc; r++)
      rc = send_frame(bs, bs->peer_fd[r], 1, 0, out, (uint32_t)(len * (size_t)bs->world));
  } else if (bs->world > 1) {
    rc = send_frame(bs, bs->root_fd, 1, (uint32_t)bs->rank, mine, (uint32_t)len);
    if (!rc) rc = recv_frame(bs, bs->root_fd, 1, 0, out, (uint32_t)(len * (size_t)bs->world), NULL);
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
