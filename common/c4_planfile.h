/* c4_planfile.h -- the one reader of the traffic plan file (docs/plan-format.md, version 1): the
 * flows the plugin binds its sockets to and the paths c4mon names, checked field by field. */
#ifndef C4_PLANFILE_H
#define C4_PLANFILE_H

#include <jansson.h>
#include <net/if.h>
#include <stddef.h>
#include <stdint.h>

#include "c4_record.h"

/* The parts of a plan a reader asks for; a part not asked for is not looked at. */
#define C4_PLANFILE_FLOWS 1u /* flows[]: optional, absent means no flow is planned */
#define C4_PLANFILE_PATHS 2u /* paths[]: required */

/* The largest plan file c4_planfile_read accepts. */
#define C4_PLANFILE_MAX_BYTES (64 << 20)

/* One planned flow: a data socket from host src to host dst binds to src_port (0: ephemeral) on
 * the IPv4 address of ifname ("": any address); a verbs QP takes flow_label (RoCEv2), sl and
 * path_bits (InfiniBand), -1 where the plan gives none. path names the path the flow crosses
 * (owned by the plan; NULL when the flow gives none). */
struct c4_planfile_flow {
  char src[C4_HOST_MAX];
  char dst[C4_HOST_MAX];
  uint16_t src_port;
  char ifname[IFNAMSIZ];
  int32_t flow_label;
  int16_t sl;
  int16_t path_bits;
  char *path;
};

/* A directed host pair whose traffic takes a path. */
struct c4_planfile_pair {
  char src[C4_HOST_MAX];
  char dst[C4_HOST_MAX];
};

/* One path through the fabric and the host pairs it carries, in the file's order. */
struct c4_planfile_path {
  char *id;
  size_t npairs;
  struct c4_planfile_pair *pairs;
};

/* A parsed plan: the parts asked for, in the file's order (the others empty). avoid: the paths
 * the flows crossing them should keep their traffic off (c4mon pushes them while a `path` verdict
 * stands), read with the flows. */
struct c4_planfile {
  size_t nflows;
  struct c4_planfile_flow *flows;
  size_t navoid;
  char **avoid;
  size_t npaths;
  struct c4_planfile_path *paths;
};

/* Parses a plan file's bytes (len bytes, no NUL needed), reading the parts in `parts`
 * (C4_PLANFILE_*). The document must be a JSON object without duplicate keys whose `v` is 1.
 * flows[] entries need string `src` and `dst` (1 to C4_HOST_MAX-1 bytes) and may give an integer
 * `src_port` 1..65535, a string `ifname` (under IFNAMSIZ bytes), integers `flow_label`
 * 0..0xfffff, `sl` 0..15 and `path_bits` 0..127 (each may be null), an integer `src_port_idx`
 * >= 0 and a string `path` (or null). paths[] entries need a string `id` and an array `pairs` of
 * [SRC_HOST, DST_HOST]. With the flows, an optional `avoid` is an array of path names (strings of
 * 1 to 255 bytes). Other fields are ignored. On success sets *out (the caller frees it with
 * c4_planfile_free) and returns 0; on error returns C4_EINVAL (C4_ENOMEM when out of memory) with
 * what is wrong in err ("flows[3].src_port is not an integer 1..65535 or null"). Pure: no I/O. */
int c4_planfile_parse(const char *buf, size_t len, unsigned parts, struct c4_planfile **out,
                      char *err, size_t errlen);

/* Reads the plan file at path and parses it as c4_planfile_parse does. Never blocks on anything
 * but the read of a regular file (a FIFO or a device is refused) and refuses files larger than
 * C4_PLANFILE_MAX_BYTES. Returns 0 or a C4_E* code with what is wrong in err ("cannot open: No
 * such file or directory"); err does not name the file (the caller does). */
int c4_planfile_read(const char *path, unsigned parts, struct c4_planfile **out, char *err,
                     size_t errlen);

/* Frees a plan from c4_planfile_parse or c4_planfile_read; NULL is fine. */
void c4_planfile_free(struct c4_planfile *p);

/* One flow as the plan file writes it (optional fields the flow does not set are left out), or
 * NULL when out of memory. The caller owns the new reference. */
json_t *c4_planfile_flow_json(const struct c4_planfile_flow *f);

#endif
