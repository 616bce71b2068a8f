/* aggregate.h -- c4cap's aggregation: packets into flows, interfaces and totals, each with its
 * bytes per interval. */
#ifndef C4CAP_AGGREGATE_H
#define C4CAP_AGGREGATE_H

#include <stddef.h>
#include <stdint.h>

#include "packet.h"

/* IP bytes per interval, from interval `first` (counted from the capture's first packet) on:
 * kept from a flow's first packet only, so that short flows in a long capture stay small. */
struct c4cap_series {
  uint64_t first;
  size_t n;
  uint64_t *bytes;
};

struct c4cap_counts {
  uint64_t packets, wire_bytes; /* every packet; wire bytes are the pcap header's original length */
  uint64_t ip_packets, ip_bytes; /* parsed IP packets; bytes from the IP header's length field */
};

struct c4cap_flow {
  struct c4cap_key key;
  int iface;
  struct c4cap_counts n;
  double first_ts, last_ts; /* seconds since the capture's first packet */
  struct c4cap_series series;
};

struct c4cap_iface {
  char name[64];
  int linktype;
  int parent;       /* a sub-interface of a cooked (-i any) capture: the capture's index; else -1 */
  uint32_t ifindex; /* and its SLL2 ifindex; else 0 */
  struct c4cap_counts n;
  struct c4cap_series series;
};

struct c4cap_agg {
  double interval; /* seconds per series slot */
  double t0;       /* the first packet's time stamp (epoch seconds) */
  double t_end;    /* the last packet's, relative to t0 */
  int started;
  int name_ifindex; /* name SLL2 sub-interfaces after this host's interfaces (live capture) */
  struct c4cap_counts total;
  uint64_t not_ip, malformed, fragments;
  struct c4cap_iface *ifaces;
  int nifaces;
  struct c4cap_flow *slots; /* open addressing on the key; a slot with no packets is free */
  size_t nslots, nflows;
};

/* Makes an empty aggregation with the given interval (> 0). 0, or -ENOMEM. */
int c4cap_agg_init(struct c4cap_agg *a, double interval);

/* Adds an interface (a capture source) whose frames are of the given DLT link type; returns its
 * index for c4cap_agg_add, or -ENOMEM. */
int c4cap_agg_iface(struct c4cap_agg *a, const char *name, int linktype);

/* Counts one captured frame of interface iface: ts in epoch seconds, wire_len the original length,
 * data[0..caplen) the captured bytes. A frame that is not IP or is malformed counts in the totals
 * and its interface only. 0, or -ENOMEM (the counts may then be partial). */
int c4cap_agg_add(struct c4cap_agg *a, int iface, double ts, uint32_t wire_len, const uint8_t *data,
                  size_t caplen);

/* The flows, most IP bytes first, in an array the caller frees (the flows stay owned by a).
 * NULL with *n = 0 when there are none or on allocation failure. */
const struct c4cap_flow **c4cap_agg_sorted(const struct c4cap_agg *a, size_t *n);

/* The number of intervals the capture spans (at least 1 once a packet was counted). */
uint64_t c4cap_agg_intervals(const struct c4cap_agg *a);

/* Frees what a holds (not a itself). */
void c4cap_agg_free(struct c4cap_agg *a);

#endif
