/* topo.h -- the leaf-spine fabric the traffic planner places flows on (docs/topology.md): hosts
 * with NIC ports, each port on one leaf; leaves joined to spines by uplinks. */
#ifndef C4_PLAN_TOPO_H
#define C4_PLAN_TOPO_H

#include <stddef.h>

/* Where c4plan looks for the topology when neither --topo nor $C4_TOPO names it: the file
 * tools/fabric writes for the fabric it builds. */
#define C4_PLAN_DEFAULT_TOPO "/run/c4-fabric/c4f.json"

struct c4_plan_port {
  char *ifname, *addr;
  int leaf;    /* index into leaf_names */
  double gbps; /* the port's rate, each direction */
};

struct c4_plan_host {
  char *name;
  int port0, nports; /* its ports: ports[port0 .. port0 + nports - 1], port_idx order */
};

struct c4_plan_topo {
  char *name;
  int nhosts, nports, nleaves, nspines;
  struct c4_plan_host *hosts;
  struct c4_plan_port *ports;
  char **leaf_names, **spine_names;
  double *uplink_gbps; /* [leaf * nspines + spine]: leaf<->spine capacity each direction, 0: none */
  int *by_name;        /* host indices sorted by name, for c4_plan_topo_host */
};

/* Reads a topology file. Returns a topology the caller frees with c4_plan_topo_free, or NULL with
 * "FILE: FIELD: what is wrong" in err (`hosts[2].ports[0].leaf: no leaf "l9"`). */
struct c4_plan_topo *c4_plan_topo_load(const char *path, char *err, size_t errlen);

/* Same, from a JSON text of len bytes; `what` names it in errors. */
struct c4_plan_topo *c4_plan_topo_parse(const char *text, size_t len, const char *what, char *err,
                                        size_t errlen);

/* A synthetic fabric: nhosts hosts of nports ports each at port_gbps, spread in order over nleaves
 * leaves (a host's ports on as few leaves as the counts allow), every leaf joined to every one of
 * nspines spines at uplink_gbps (0: enough for a non-blocking fabric). NULL when a count is < 1 or
 * out of memory. Free with c4_plan_topo_free. */
struct c4_plan_topo *c4_plan_topo_synth(int nhosts, int nports, int nleaves, int nspines,
                                        double port_gbps, double uplink_gbps);

/* The index of the host called name, or -1. */
int c4_plan_topo_host(const struct c4_plan_topo *t, const char *name);

void c4_plan_topo_free(struct c4_plan_topo *t);

#endif
