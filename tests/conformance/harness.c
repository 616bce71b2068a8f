/* harness.c -- forked listener/connector pairs, handle exchange, deadlines, patterns. */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "c4_clock.h"

#define MAX_COMMS 64

const char *h_plugin_path(void) {
  const char *p = getenv("C4_PLUGIN_PATH");
  return p && *p ? p : "build/lib/libnccl-net-c4.so";
}

int h_can_netns(void) { return geteuid() == 0 && access("/usr/sbin/ip", X_OK) == 0; }

void h_fill(unsigned char *p, size_t n, unsigned seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    p[i] = (unsigned char)x;
  }
}

int h_check(const unsigned char *p, size_t n, unsigned seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    if (p[i] != (unsigned char)x) {
      fprintf(stderr, "conformance: byte %zu of %zu differs\n", i, n);
      return 1;
    }
  }
  return 0;
}

int h_wait(struct c4_netapi *api, void *req, int *size) {
  uint64_t deadline = c4_now_ns() + H_DEADLINE_NS;
  int done = 0, sz = 0;
  while (!done) {
    if (c4_netapi_test(api, req, &done, &sz) != ncclSuccess) return 1;
    if (c4_now_ns() > deadline) return 2;
    if (!done) sched_yield();
  }
  if (size) *size = sz;
  return 0;
}

static void *post(struct c4_netapi *api, void *comm, void *buf, size_t n, int tag, int is_send) {
  uint64_t deadline = c4_now_ns() + H_DEADLINE_NS;
  void *req = NULL;
  while (!req && c4_now_ns() < deadline) {
    ncclResult_t rc = is_send ? c4_netapi_isend(api, comm, buf, n, tag, NULL, &req)
                              : c4_netapi_irecv(api, comm, buf, n, tag, NULL, &req);
    if (rc != ncclSuccess) return NULL;
    if (!req) sched_yield();
  }
  return req;
}

void *h_isend(struct c4_netapi *api, void *comm, void *buf, size_t n, int tag) {
  return post(api, comm, buf, n, tag, 1);
}

void *h_irecv(struct c4_netapi *api, void *comm, void *buf, size_t n, int tag) {
  return post(api, comm, buf, n, tag, 0);
}

static void enter_ns(const char *ns) {
  if (!ns) return;
  char path[128];
  snprintf(path, sizeof path, "/run/netns/%s", ns);
  int fd = open(path, O_RDONLY);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
    fprintf(stderr, "conformance: cannot enter netns %s: %s\n", ns, strerror(errno));
    _exit(3);
  }
  close(fd);
}

static int full_io(int fd, void *p, size_t n, int writing) {
  char *c = p;
  while (n) {
    ssize_t k = writing ? write(fd, c, n) : read(fd, c, n);
    if (k <= 0) return -1;
    c += k;
    n -= (size_t)k;
  }
  return 0;
}

static void child_setup(const struct pair_opts *o, const char *ns, struct c4_netapi *api) {
  alarm(60); /* a hung plugin kills the child, which fails the test instead of hanging it */
  enter_ns(ns);
  setenv("C4_SOCKET_IFNAME", o->ifname ? o->ifname : "lo", 1);
  if (c4_netapi_open(api, h_plugin_path(), o->version) != 0) _exit(4);
}

static int receiver(const struct pair_opts *o, int wfd, side_fn fn, void *arg) {
  struct c4_netapi api;
  child_setup(o, o->recv_ns, &api);
  int n = o->ncomms > 0 ? o->ncomms : 1;
  char handles[MAX_COMMS][NCCL_NET_HANDLE_MAXSIZE];
  void *lcomm[MAX_COMMS], *comm[MAX_COMMS] = {0};
  for (int i = 0; i < n; i++)
    if (c4_netapi_listen(&api, 0, handles[i], &lcomm[i]) != ncclSuccess) return 5;
  if (full_io(wfd, handles, sizeof handles[0] * (size_t)n, 1)) return 6;
  close(wfd);
  uint64_t deadline = c4_now_ns() + H_DEADLINE_NS;
  for (int got = 0; got < n;) {
    for (int i = 0; i < n; i++) {
      if (comm[i]) continue;
      if (c4_netapi_accept(&api, lcomm[i], &comm[i]) != ncclSuccess) return 7;
      if (comm[i]) got++;
    }
    if (c4_now_ns() > deadline) return 8;
    sched_yield();
  }
  for (int i = 0; i < n; i++)
    c4_netapi_close_listen(&api, lcomm[i]);
  return fn(&api, n > 1 ? (void *)comm : comm[0], arg);
}

static int sender(const struct pair_opts *o, int rfd, side_fn fn, void *arg) {
  struct c4_netapi api;
  child_setup(o, o->send_ns, &api);
  int n = o->ncomms > 0 ? o->ncomms : 1;
  char handles[MAX_COMMS][NCCL_NET_HANDLE_MAXSIZE];
  void *comm[MAX_COMMS] = {0};
  int started[MAX_COMMS] = {0};
  if (full_io(rfd, handles, sizeof handles[0] * (size_t)n, 0)) return 9;
  uint64_t deadline = c4_now_ns() + H_DEADLINE_NS;
  for (int got = 0; got < n;) {
    for (int i = 0; i < n; i++) {
      if (comm[i]) continue;
      if (o->before_connect && i > got) break; /* one after another */
      if (o->before_connect && i == got && !started[i]) {
        o->before_connect(i);
        started[i] = 1;
      }
      uint64_t t0 = c4_now_ns();
      if (c4_netapi_connect(&api, 0, handles[i], &comm[i]) != ncclSuccess) return 10;
      if (c4_now_ns() - t0 > 100000000ull) {
        fprintf(stderr, "conformance: connect blocked for %llu ms\n",
                (unsigned long long)((c4_now_ns() - t0) / 1000000));
        return 11;
      }
      if (comm[i]) got++;
    }
    if (c4_now_ns() > deadline) return 12;
    sched_yield();
  }
  return fn(&api, n > 1 ? (void *)comm : comm[0], arg);
}

static int reap(pid_t pid, uint64_t deadline) {
  int st;
  for (;;) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) break;
    if (c4_now_ns() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      fprintf(stderr, "conformance: a side did not finish in time\n");
      return 1;
    }
    usleep(2000);
  }
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return 0;
  fprintf(stderr, "conformance: a side %s %d\n", WIFEXITED(st) ? "exited with" : "died of signal",
          WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
  return 1;
}

int h_run_pair(const struct pair_opts *o, side_fn recv_fn, side_fn send_fn, void *arg) {
  int p[2];
  if (pipe(p)) return 1;
  fflush(NULL);
  pid_t r = fork();
  if (r == 0) {
    close(p[0]);
    _exit(receiver(o, p[1], recv_fn, arg));
  }
  pid_t s = fork();
  if (s == 0) {
    close(p[1]);
    _exit(sender(o, p[0], send_fn, arg));
  }
  close(p[0]);
  close(p[1]);
  uint64_t deadline = c4_now_ns() + 2 * H_DEADLINE_NS;
  int bad = reap(s, deadline);
  bad |= reap(r, deadline);
  return bad;
}
