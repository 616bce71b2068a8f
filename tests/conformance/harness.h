/* harness.h -- the conformance harness's process plumbing: run a listener and a connector in
 * separate processes (optionally in network namespaces), hand the listen handle across, and
 * drive the plugin through c4_netapi exactly as NCCL's proxy does. */
#ifndef C4_HARNESS_H
#define C4_HARNESS_H

#include <stddef.h>

#include "c4_netapi.h"

#define H_DEADLINE_NS 20000000000ull

/* One side of a pair: gets the loaded plugin and its connected comm (send or recv), returns 0 for
 * success. Runs in its own process. */
typedef int (*side_fn)(struct c4_netapi *api, void *comm, void *arg);

struct pair_opts {
  int version;         /* ncclNet version to load */
  const char *recv_ns; /* network namespace for the receiver, or NULL */
  const char *send_ns;
  const char *ifname; /* C4_SOCKET_IFNAME for both, default "lo" */
  int ncomms;         /* comms to open between the two processes (default 1) */
  /* With it, the sender connects its comms one after another and calls this in its process
   * before connecting comm i (to change what the plugin reads at connect time, as a plan). */
  void (*before_connect)(int i);
};

/* Forks a receiver (listen, accept) and a sender (connect), runs the two functions with each
 * comm in turn (ncomms > 1: fn gets an array of comms), and returns 0 when both exit 0 in time. */
int h_run_pair(const struct pair_opts *o, side_fn recv_fn, side_fn send_fn, void *arg);

/* Polls a request to completion: 0 done (size in *size), 1 the plugin returned an error,
 * 2 the deadline passed. */
int h_wait(struct c4_netapi *api, void *req, int *size);

/* Posts until the plugin takes it; NULL on error or deadline. */
void *h_isend(struct c4_netapi *api, void *comm, void *buf, size_t n, int tag);
void *h_irecv(struct c4_netapi *api, void *comm, void *buf, size_t n, int tag);

/* Fills and checks a seeded byte pattern. */
void h_fill(unsigned char *p, size_t n, unsigned seed);
int h_check(const unsigned char *p, size_t n, unsigned seed);

/* The plugin path (C4_PLUGIN_PATH, else build/lib/libnccl-net-c4.so). */
const char *h_plugin_path(void);

/* Is the process root with CAP_NET_ADMIN (able to create namespaces)? */
int h_can_netns(void);

#endif
