/* paths.h -- c4cap's path balance: flows grouped into paths (by interface, one path per flow, or a
 * map from source port to path), each path's bytes and the max/mean imbalance. */
#ifndef C4CAP_PATHS_H
#define C4CAP_PATHS_H

#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"

enum c4cap_paths_by { C4CAP_PATHS_NONE, C4CAP_PATHS_IFACE, C4CAP_PATHS_FLOW, C4CAP_PATHS_MAP };

struct c4cap_path_entry {
  uint16_t port; /* a source port ... */
  char name[48]; /* ... and the path it takes */
};

struct c4cap_paths {
  enum c4cap_paths_by by;
  char spec[256]; /* as given: "iface", "flow" or the map file's name */
  struct c4cap_path_entry *map;
  size_t nmap;
};

struct c4cap_path_load {
  char name[128];
  uint64_t bytes, flows;
};

/* Reads a --paths argument: "iface", "flow", or a file of "SPORT PATH" lines (# comments), as
 * c4plan probe's map from source port to path. 0, or -EINVAL / -ENOENT / -ENOMEM with a message
 * in err. The caller frees with c4cap_paths_free. */
int c4cap_paths_parse(struct c4cap_paths *p, const char *spec, char *err, size_t errlen);

/* Sums the IP bytes of a's flows per path. With a map, every path it names is listed (even those
 * with no bytes: an idle path is the imbalance) and flows whose source port it does not name go
 * to *unmapped. Returns the paths in an array the caller frees (*n of them), with *imbalance the
 * largest path's bytes over the mean (0 when no path has bytes); NULL with *n = 0 when there are
 * none or on allocation failure. */
struct c4cap_path_load *c4cap_paths_sum(const struct c4cap_paths *p, const struct c4cap_agg *a,
                                        size_t *n, uint64_t *unmapped, double *imbalance);

void c4cap_paths_free(struct c4cap_paths *p);

#endif
