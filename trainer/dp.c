/* dp.c -- the host-ring group: bootstrap + the plugin's host ring (CPUs, and GPUs under --pp
 * through a host bucket); NCCL groups go to dp_nccl.c. */
#include "dp.h"

#include <dlfcn.h>
#include <limits.h>

#include "c4_env.h"
#include "c4_err.h"
#include "c4k.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dp_init(struct dp *d, const struct c4_ranks *r, const char *plugin_path, int use_nccl,
            size_t bucket_bytes, char *err, size_t errlen) {
  memset(d, 0, sizeof *d);
  d->rank = r->rank;
  d->world = r->world;
  d->bucket_floats = bucket_bytes / sizeof(float) ? bucket_bytes / sizeof(float) : 1;
  int rc = c4_bootstrap_init(&d->bs, r->rank, r->world, r->master, r->port);
  if (rc) {
    snprintf(err, errlen, "rendezvous of %d ranks at %s:%d failed (%s; see the log above)",
             r->world, r->master, r->port,
             rc == C4_EINVAL    ? "an address that does not resolve, or a bad rank or port"
             : rc == C4_EREMOTE ? "no peer answered"
                                : c4_strerror(rc));
    c4_bootstrap_close(&d->bs);
    return rc == C4_EINVAL ? C4_EINVAL : C4_EREMOTE; /* a typo is no lost peer */
  }
  d->step_timeout_ms = (int)c4_env_long("C4_COLL_TIMEOUT_MS", 60000, 100, 3600000);
  if (use_nccl) {
    if (dp_nccl_open(d, r, err, errlen)) {
      c4_bootstrap_close(&d->bs);
      return C4_EREMOTE;
    }
    return 0;
  }
  char buf[PATH_MAX];
  if (!plugin_path) /* the one built beside this program, else the name NCCL_NET_PLUGIN=c4 finds */
    plugin_path =
        c4_beside_program(buf, sizeof buf, "../lib/libnccl-net-c4.so", "libnccl-net-c4.so");
  if (c4_netapi_open(&d->api, plugin_path, 0)) {
    snprintf(err, errlen, "net plugin %s: %s", plugin_path, d->api.err);
    c4_bootstrap_close(&d->bs);
    return C4_ENOTFOUND;
  }
  if (c4_hostcoll_ring_init(&d->ring, &d->api, 0, &d->bs)) {
    snprintf(err, errlen, "the ring of %d ranks over %s did not connect (see the log above)",
             r->world, plugin_path);
    c4_netapi_close(&d->api);
    c4_bootstrap_close(&d->bs);
    return C4_EREMOTE;
  }
  d->ring_up = 1;
  d->ext_step = d->api.dl ? (void (*)(uint64_t))dlsym(d->api.dl, "c4ExtStep") : NULL;
  return 0;
}

void dp_step(struct dp *d, int step) {
  if (d->ext_step) d->ext_step((uint64_t)step);
}

int dp_stage_through_host(struct dp *d, const struct c4k_ops *mem) {
  if (!d->ring_up) return C4_EINVAL;
  if (!d->host_bucket && !(d->host_bucket = malloc(d->bucket_floats * sizeof(float))))
    return C4_ENOMEM;
  d->mem = mem;
  return 0;
}

/* Sums buf on ring in buckets; a bucket of mem's memory (non-NULL) goes through the host one. */
static int ring_sum(struct dp *d, struct c4_hostcoll *ring, float *buf, size_t n,
                    const struct c4k_ops *mem) {
  for (size_t at = 0; at < n; at += d->bucket_floats) {
    size_t len = n - at < d->bucket_floats ? n - at : d->bucket_floats;
    float *sum = mem ? d->host_bucket : buf + at;
    if (mem) mem->download(sum, buf + at, len * sizeof(float));
    if (c4_hostcoll_allreduce_f32(ring, sum, len)) return C4_EREMOTE;
    if (mem) mem->upload(buf + at, sum, len * sizeof(float));
  }
  return 0;
}

int dp_ring_allreduce(struct dp *d, struct c4_hostcoll *ring, float *buf, size_t n) {
  return ring_sum(d, ring, buf, n, d->mem);
}

int dp_allreduce(struct dp *d, float *grads, size_t n) {
  if (d->nccl) return dp_nccl_allreduce(d, grads, n);
  return ring_sum(d, &d->ring, grads, n, d->mem);
}

int dp_allreduce_host(struct dp *d, float *buf, size_t n) {
  return d->ring_up ? ring_sum(d, &d->ring, buf, n, NULL) : C4_EINVAL;
}

int dp_allgather(struct dp *d, const void *mine, void *all, size_t len) {
  return c4_bootstrap_allgather(&d->bs, mine, all, len) ? -1 : 0;
}

int dp_gather_step(struct dp *d, const void *mine, void *all, size_t len) {
  return c4_bootstrap_allgather_within(&d->bs, mine, all, len, d->step_timeout_ms) ? -1 : 0;
}

void dp_close(struct dp *d) {
  if (d->nccl) dp_nccl_close(d);
  if (d->ring_up) c4_hostcoll_ring_close(&d->ring);
  if (d->ring_up) c4_netapi_close(&d->api);
  d->ring_up = 0;
  free(d->host_bucket);
  d->host_bucket = NULL;
  d->mem = NULL;
  c4_bootstrap_close(&d->bs);
}
