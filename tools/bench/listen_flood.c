/* listen_flood.c -- a stranger's connection flood against the socket transport's listeners, with a
 * real connector getting through: opens PORTS listeners on loopback, floods each with RATE
 * connections a second for SECONDS (three in four silent, one in four a truncated hello that
 * does not know the nonce), leaves the listeners unpolled between real connects as NCCL does,
 * and every second connects a real peer to the next listener. The first real pair moves MIB
 * MiB, checked byte for byte. Prints the connect time without a flood, the slowest connect
 * under the flood, the MiB moved intact and the strangers the listeners closed.
 * Exit 0 when every real connect got through and the data arrived intact, 1 otherwise, 2 on
 * bad usage.
 * Usage: c4-listen-flood [SECONDS [RATE [PORTS [MIB]]]]   (defaults 30 100 4 200) */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "c4_clock.h"
#include "c4_err.h"
#include "net_transport.h"
#include "net_wire.h"

#define MAX_PORTS 16
#define MAX_HELD 60000 /* strangers' sockets the flooder keeps open at once */
#define MSG_BYTES (4u << 20)

static struct sockaddr_in ports[MAX_PORTS];
static int nports, rate;
static double flood_s;
static atomic_int stop;
static atomic_ulong flood_sent;

/* A non-blocking connect to port k; one in four sends the first 12 bytes of a hello with a
 * made-up nonce (a truncated hello), the rest send nothing. Returns the fd or -1. */
static int stranger(int k, unsigned long n) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return C4_NONE;
  if (connect(fd, (struct sockaddr *)&ports[k], sizeof ports[k]) != 0 && errno != EINPROGRESS) {
    close(fd);
    return C4_NONE;
  }
  if (n % 4 == 3) {
    struct c4_wire_hello h = {
        .version = C4_WIRE_VERSION, .nonce = n * 0x9e3779b97f4a7c15ull, .nsocks = 1};
    uint8_t b[C4_HELLO_SIZE];
    c4_wire_put_hello(b, &h);
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    if (poll(&p, 1, 100) == 1) (void)send(fd, b, 12, MSG_NOSIGNAL);
  }
  return fd;
}

/* The flooder: RATE connections a second to each port, held open until the listener closes
 * them (then closed here too, so the flooder's own descriptors stay bounded). */
static void *flood(void *arg) {
  (void)arg;
  static struct pollfd held[MAX_HELD];
  int nheld = 0;
  uint64_t t0 = c4_now_ns(), period = 1000000000ull / (uint64_t)rate;
  unsigned long n = 0;
  for (uint64_t tick = 0; !atomic_load(&stop); tick++) {
    uint64_t due = t0 + tick * period, now = c4_now_ns();
    if ((double)(now - t0) / 1e9 >= flood_s) break;
    if (due > now) {
      struct timespec ts = {0, (long)(due - now)};
      nanosleep(&ts, NULL);
    }
    for (int k = 0; k < nports; k++) {
      int fd = nheld < MAX_HELD ? stranger(k, n++) : -1;
      if (fd < 0) continue;
      held[nheld++] = (struct pollfd){.fd = fd, .events = POLLIN};
      atomic_fetch_add(&flood_sent, 1);
    }
    if (tick % 16 != 0 || poll(held, (nfds_t)nheld, 0) <= 0) continue;
    for (int i = 0; i < nheld;) {
      if (held[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        close(held[i].fd);
        held[i] = held[--nheld];
      } else {
        i++;
      }
    }
  }
  for (int i = 0; i < nheld; i++)
    close(held[i].fd);
  return NULL;
}

/* Connects to listener k and accepts there, polling every listener as NCCL's proxy would.
 * Returns the seconds it took, or C4_EREMOTE when it did not complete within 30 s. */
static double real_connect(const struct c4_transport_config *cfg, struct c4_listen_comm **ls,
                           uint8_t (*handles)[C4_HANDLE_SIZE], int k, struct c4_comm **tx,
                           struct c4_comm **rx) {
  uint8_t handle[C4_HANDLE_SIZE];
  memcpy(handle, handles[k], sizeof handle);
  *tx = *rx = NULL;
  uint64_t t0 = c4_now_ns();
  while ((!*tx || !*rx) && c4_now_ns() - t0 < 30000000000ull) {
    if (!*tx && c4_transport_connect(cfg, 0, 0xbeef, handle, tx) != 0) return C4_EREMOTE;
    for (int j = 0; j < nports; j++) {
      struct c4_comm *c = NULL;
      if (c4_transport_accept(ls[j], &c) != 0) return C4_EREMOTE;
      if (c && j == k && !*rx)
        *rx = c;
      else if (c)
        c4_transport_close(c); /* not ours: a stray completion cannot happen here */
    }
  }
  if (!*tx || !*rx) return C4_EREMOTE;
  return (double)(c4_now_ns() - t0) / 1e9;
}

static void fill(uint8_t *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    p[i] = (uint8_t)((i * 131u) ^ (seed * 7u) ^ (i >> 11));
}

/* Moves mib MiB from tx to rx in 4 MiB messages and checks every byte. Returns MiB intact. */
static int move(struct c4_comm *tx, struct c4_comm *rx, int mib) {
  uint8_t *a = malloc(MSG_BYTES), *b = malloc(MSG_BYTES);
  int intact = 0;
  for (int m = 0; a && b && m < mib / 4; m++) {
    fill(a, MSG_BYTES, (unsigned)m);
    memset(b, 0, MSG_BYTES);
    struct c4_request *sr = NULL, *rr = NULL;
    uint64_t t0 = c4_now_ns();
    while (!rr && c4_transport_irecv(rx, b, MSG_BYTES, 1, &rr) == 0 && c4_now_ns() - t0 < 10e9) {
    }
    while (!sr && c4_transport_isend(tx, a, MSG_BYTES, 1, &sr) == 0 && c4_now_ns() - t0 < 10e9) {
    }
    if (!sr || !rr) break;
    int sd = 0, rd = 0;
    size_t got = 0;
    while ((!sd || !rd) && c4_now_ns() - t0 < 30000000000ull) {
      if (!sd && c4_transport_test(sr, &sd, NULL) != 0) goto out;
      if (!rd && c4_transport_test(rr, &rd, &got) != 0) goto out;
    }
    if (!sd || !rd || got != MSG_BYTES || memcmp(a, b, MSG_BYTES) != 0) break;
    intact += 4;
  }
out:
  free(a);
  free(b);
  return intact;
}

/* Opens nports listeners on loopback (their handles in handles, their addresses in ports).
 * Returns 0, or C4_ESYS (said on stderr). */
static int open_listeners(const struct c4_transport_config *cfg, struct c4_listen_comm **ls,
                          uint8_t handles[][C4_HANDLE_SIZE]) {
  struct sockaddr_storage lo = {0};
  ((struct sockaddr_in *)&lo)->sin_family = AF_INET;
  ((struct sockaddr_in *)&lo)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int k = 0; k < nports; k++) {
    struct c4_wire_handle h;
    char err[160];
    if (c4_transport_listen(cfg, 0, 0xfeed, &lo, handles[k], &ls[k]) != 0 ||
        c4_wire_get_handle(handles[k], &h, err, sizeof err) != 0) {
      fprintf(stderr, "c4-listen-flood: could not listen on loopback\n");
      return C4_ESYS;
    }
    memcpy(&ports[k], &h.addr, sizeof ports[k]);
  }
  return 0;
}

/* What the real connects met under the flood. */
struct under_flood {
  int connects, failed, moved; /* moved: MiB intact over the first connect (-1: none made) */
  double worst;                /* the slowest connect, seconds */
};

/* While the flood runs: a real connect a second, round the listeners, the first one moving mib
 * MiB. */
static void connect_under_flood(const struct c4_transport_config *cfg, struct c4_listen_comm **ls,
                                uint8_t handles[][C4_HANDLE_SIZE], int mib, struct under_flood *u) {
  uint64_t t0 = c4_now_ns();
  struct c4_comm *tx, *rx;
  *u = (struct under_flood){.moved = -1};
  while ((double)(c4_now_ns() - t0) / 1e9 < flood_s - 1) {
    sleep(1); /* the listeners are not polled meanwhile: the strangers queue up */
    double s = real_connect(cfg, ls, handles, u->connects % nports, &tx, &rx);
    u->connects++;
    if (s < 0) {
      u->failed++;
      continue;
    }
    if (s > u->worst) u->worst = s;
    if (u->moved < 0) u->moved = move(tx, rx, mib);
    c4_transport_close(tx);
    c4_transport_close(rx);
  }
}

int main(int argc, char **argv) {
  flood_s = argc > 1 ? atof(argv[1]) : 30;
  rate = argc > 2 ? atoi(argv[2]) : 100;
  nports = argc > 3 ? atoi(argv[3]) : 4;
  int mib = argc > 4 ? atoi(argv[4]) : 200;
  if (argc > 5 || flood_s < 2 || rate < 1 || rate > 10000 || nports < 1 || nports > MAX_PORTS ||
      mib < 0) {
    fprintf(stderr, "usage: c4-listen-flood [SECONDS>=2 [RATE [PORTS<=16 [MIB]]]]\n");
    return 2;
  }
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  struct c4_transport_config cfg;
  c4_transport_config_load(&cfg);
  struct c4_listen_comm *ls[MAX_PORTS];
  uint8_t handles[MAX_PORTS][C4_HANDLE_SIZE];
  if (open_listeners(&cfg, ls, handles) != 0) return 1;
  struct c4_comm *tx, *rx;
  double quiet = real_connect(&cfg, ls, handles, 0, &tx, &rx);
  if (quiet < 0) {
    fprintf(stderr, "c4-listen-flood: no connect even without a flood\n");
    return 1;
  }
  c4_transport_close(tx);
  c4_transport_close(rx);
  pthread_t th;
  pthread_create(&th, NULL, flood, NULL);
  struct under_flood u;
  connect_under_flood(&cfg, ls, handles, mib, &u);
  atomic_store(&stop, 1);
  pthread_join(th, NULL);
  for (int k = 0; k < nports; k++)
    c4_transport_close_listen(ls[k]);
  printf("flood: %lu strangers (%d/s to each of %d listeners for %.0f s); %lu closed unproven\n",
         atomic_load(&flood_sent), rate, nports, flood_s,
         atomic_load(&c4_transport_stats.rejected_peers));
  printf(
      "connect without flood: %.3f s; real connects under flood: %d, failed %d, slowest %.3f s\n",
      quiet, u.connects, u.failed, u.worst);
  printf("moved under flood: %d of %d MiB intact\n", u.moved < 0 ? 0 : u.moved, mib);
  printf("delay_s %.3f\n", u.failed ? -1.0 : u.worst - quiet);
  return u.failed == 0 && u.connects > 0 && u.moved == mib / 4 * 4 ? 0 : 1;
}
