/* aggregate.c -- c4cap's aggregation: an open-addressing table of flows keyed by interface and
 * c4cap_key, plus per-interface and total counters, each with a series of bytes per interval. */
#include "aggregate.h"

#include <errno.h>
#include <math.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_hash.h"

#define MIN_SLOTS 256

int c4cap_agg_init(struct c4cap_agg *a, double interval) {
  memset(a, 0, sizeof *a);
  a->interval = interval > 0 ? interval : 1.0;
  a->slots = calloc(MIN_SLOTS, sizeof *a->slots);
  if (!a->slots) return -ENOMEM;
  a->nslots = MIN_SLOTS;
  return 0;
}

int c4cap_agg_iface(struct c4cap_agg *a, const char *name, int linktype) {
  struct c4cap_iface *t = realloc(a->ifaces, (size_t)(a->nifaces + 1) * sizeof *t);
  if (!t) return -ENOMEM;
  a->ifaces = t;
  struct c4cap_iface *f = &t[a->nifaces];
  memset(f, 0, sizeof *f);
  snprintf(f->name, sizeof f->name, "%s", name);
  f->linktype = linktype;
  f->parent = -1;
  return a->nifaces++;
}

/* A cooked capture of several interfaces (tcpdump -i any) names each packet's interface by index:
 * those packets go to a sub-interface "SOURCE:NAME" (live, named as on this host) or
 * "SOURCE:ifN" (a file, which may come from another host). */
static int sub_iface(struct c4cap_agg *a, int parent, uint32_t ifindex) {
  for (int i = 0; i < a->nifaces; i++)
    if (a->ifaces[i].parent == parent && a->ifaces[i].ifindex == ifindex) return i;
  char ifname[IF_NAMESIZE] = "", name[64 + IF_NAMESIZE + 16];
  if (!a->name_ifindex || !if_indextoname(ifindex, ifname))
    snprintf(ifname, sizeof ifname, "if%u", ifindex);
  snprintf(name, sizeof name, "%s:%s", a->ifaces[parent].name, ifname);
  int i = c4cap_agg_iface(a, name, a->ifaces[parent].linktype);
  if (i >= 0) {
    a->ifaces[i].parent = parent;
    a->ifaces[i].ifindex = ifindex;
  }
  return i;
}

/* Adds bytes to slot k of s, growing it (the slots before first are never needed again). */
static int series_add(struct c4cap_series *s, uint64_t k, uint64_t bytes) {
  if (!s->bytes) s->first = k;
  if (k < s->first) k = s->first; /* a packet a little out of order across interfaces */
  size_t i = (size_t)(k - s->first);
  if (i >= s->n) {
    size_t n = s->n ? s->n : 4;
    while (n <= i)
      n *= 2;
    uint64_t *b = realloc(s->bytes, n * sizeof *b);
    if (!b) return -ENOMEM;
    memset(b + s->n, 0, (n - s->n) * sizeof *b);
    s->bytes = b;
    s->n = n;
  }
  s->bytes[i] += bytes;
  return 0;
}

static uint64_t hash(const struct c4cap_key *k, int iface) {
  return c4_fnv1a(C4_FNV_BASIS_OLD ^ (uint64_t)iface, k, sizeof *k);
}

static struct c4cap_flow *slot(struct c4cap_flow *slots, size_t nslots, const struct c4cap_key *k,
                               int iface) {
  size_t i = hash(k, iface) & (nslots - 1);
  while (slots[i].n.packets &&
         (slots[i].iface != iface || memcmp(&slots[i].key, k, sizeof *k) != 0))
    i = (i + 1) & (nslots - 1);
  return &slots[i];
}

/* Doubles the table once it is half full, so that probes stay short. */
static int grow(struct c4cap_agg *a) {
  if (2 * (a->nflows + 1) <= a->nslots) return 0;
  size_t n = a->nslots * 2;
  struct c4cap_flow *s = calloc(n, sizeof *s);
  if (!s) return -ENOMEM;
  for (size_t i = 0; i < a->nslots; i++)
    if (a->slots[i].n.packets) *slot(s, n, &a->slots[i].key, a->slots[i].iface) = a->slots[i];
  free(a->slots);
  a->slots = s;
  a->nslots = n;
  return 0;
}

static void count(struct c4cap_counts *c, uint32_t wire_len, uint32_t ip_len, int ip) {
  c->packets++;
  c->wire_bytes += wire_len;
  c->ip_packets += ip != 0;
  c->ip_bytes += ip ? ip_len : 0;
}

int c4cap_agg_add(struct c4cap_agg *a, int iface, double ts, uint32_t wire_len, const uint8_t *data,
                  size_t caplen) {
  struct c4cap_pkt p;
  int rc = c4cap_parse(data, caplen, a->ifaces[iface].linktype, &p);
  /* an IP length beyond the frame the wire carried is a wrong header, not a packet cut short by
   * the snap length (whose IP length is trusted): 60000 was counted for a 54-byte frame */
  if (rc == 0 && (uint64_t)p.ip_len + p.ip_off > wire_len) rc = -EBADMSG;
  if (p.ifindex) iface = sub_iface(a, iface, p.ifindex);
  if (iface < 0) return iface;
  if (!a->started) {
    a->t0 = ts;
    a->started = 1;
  }
  double t = ts - a->t0 > 0 ? ts - a->t0 : 0;
  if (t > a->t_end) a->t_end = t;
  uint64_t k = (uint64_t)floor(t / a->interval);
  struct c4cap_flow *f = NULL;
  if (rc == 0) {
    if (grow(a)) return -ENOMEM;
    f = slot(a->slots, a->nslots, &p.key, iface);
    if (series_add(&f->series, k, p.ip_len)) return -ENOMEM;
    if (series_add(&a->ifaces[iface].series, k, p.ip_len)) return -ENOMEM;
    if (!f->n.packets) {
      f->key = p.key;
      f->iface = iface;
      f->first_ts = t;
      a->nflows++;
    }
    f->last_ts = t;
    count(&f->n, wire_len, p.ip_len, 1);
  }
  count(&a->total, wire_len, p.ip_len, rc == 0);
  count(&a->ifaces[iface].n, wire_len, p.ip_len, rc == 0);
  a->not_ip += rc == -EPROTONOSUPPORT;
  a->malformed += rc == -EBADMSG;
  a->fragments += rc == 0 && p.fragment;
  return 0;
}

static int by_bytes(const void *x, const void *y) {
  const struct c4cap_flow *a = *(const struct c4cap_flow *const *)x;
  const struct c4cap_flow *b = *(const struct c4cap_flow *const *)y;
  if (a->n.ip_bytes != b->n.ip_bytes) return a->n.ip_bytes < b->n.ip_bytes ? 1 : -1;
  return a->first_ts < b->first_ts ? -1 : a->first_ts > b->first_ts; /* stable across runs */
}

const struct c4cap_flow **c4cap_agg_sorted(const struct c4cap_agg *a, size_t *n) {
  *n = 0;
  if (!a->nflows) return NULL;
  const struct c4cap_flow **v = malloc(a->nflows * sizeof *v);
  if (!v) return NULL;
  for (size_t i = 0; i < a->nslots; i++)
    if (a->slots[i].n.packets) v[(*n)++] = &a->slots[i];
  qsort(v, *n, sizeof *v, by_bytes);
  return v;
}

uint64_t c4cap_agg_intervals(const struct c4cap_agg *a) {
  return a->started ? (uint64_t)floor(a->t_end / a->interval) + 1 : 0;
}

void c4cap_agg_free(struct c4cap_agg *a) {
  for (size_t i = 0; i < a->nslots; i++)
    free(a->slots[i].series.bytes);
  for (int i = 0; i < a->nifaces; i++)
    free(a->ifaces[i].series.bytes);
  free(a->slots);
  free(a->ifaces);
  memset(a, 0, sizeof *a);
}
