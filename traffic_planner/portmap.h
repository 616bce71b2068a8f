/* portmap.h -- the source-port-to-path maps `c4plan probe` writes, read back so that the plan can
 * give each flow a source port that ECMP hashes onto its planned spine. */
#ifndef C4_PLAN_PORTMAP_H
#define C4_PLAN_PORTMAP_H

#include <stddef.h>

#include "topo.h"

struct c4_plan_portmap_entry {
  int src, dst; /* host indices */
  int tcp;      /* 1: "proto":"tcp"; 0: "udp" (RoCEv2) */
  int nports;
  int *src_port, *spine; /* [nports]: this source port's packets take this spine */
};

struct c4_plan_portmap {
  int n;
  struct c4_plan_portmap_entry *e;
};

/* Adds one probe file ({"v":1,"src":H,"dst":H,"proto":"tcp"|"udp","dst_port":N,"map":[{"src_port":
 * N,"path":SPINE}]}) to m (zero it first). Returns 0, or -1 with "FILE: FIELD: reason" in err. */
int c4_plan_portmap_load(struct c4_plan_portmap *m, const char *path, const struct c4_plan_topo *t,
                         char *err, size_t errlen);

/* Same, from a JSON text of len bytes; `what` names it in errors. */
int c4_plan_portmap_parse(struct c4_plan_portmap *m, const char *text, size_t len, const char *what,
                          const struct c4_plan_topo *t, char *err, size_t errlen);

/* The k-th (mod their count) source port from src to dst that takes spine, and in *tcp whether it
 * was probed with TCP; -1 when no probe of that pair found one. */
int c4_plan_portmap_pick(const struct c4_plan_portmap *m, int src, int dst, int spine, int k,
                         int *tcp);

void c4_plan_portmap_free(struct c4_plan_portmap *m);

#endif
