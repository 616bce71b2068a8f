/* probe_cli.c -- `c4plan probe`: maps each source port of a host pair to the spine its 5-tuple
 * takes, naming hosts and spines from the fabric's topology file (docs/topology.md). */
#include <arpa/inet.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_cli.h"
#include "c4_err.h"
#include "probe.h"
#include "topo.h"

#define DEFAULT_TCP_PORT 40000

static void usage(FILE *f) {
  fprintf(f,
          "usage: c4plan probe --dst HOST|ADDR [--src HOST] [--src-addr ADDR] [--topo FILE]\n"
          "                    [--proto tcp|udp] [--dst-port N] [--sports LO-HI] [--ttl N]\n"
          "                    [--timeout-ms N] [--tries N] [--json]\n"
          "  Run inside the source host's namespace (needs CAP_NET_RAW). --topo defaults to\n"
          "  $C4_TOPO, then " C4_PLAN_DEFAULT_TOPO
          ". TCP probes are SYNs (default dst port %d), UDP\n"
          "  probes go to %d (RoCEv2). Default source ports 49152-49215, TTL 2.\n"
          "  -h, --help   -V, --version\n"
          "exit: 0 ok, 1 failure, 2 bad usage\n",
          DEFAULT_TCP_PORT, C4_PLAN_ROCE_PORT);
}

/* The host and port index owning addr (dotted quad), or -1. */
static int host_of_addr(const struct c4_plan_topo *t, const char *addr, int *port) {
  for (int h = 0; h < t->nhosts; h++)
    for (int p = 0; p < t->hosts[h].nports; p++)
      if (!strcmp(t->ports[t->hosts[h].port0 + p].addr, addr)) {
        if (port) *port = p;
        return h;
      }
  return C4_NONE;
}

/* The topology host one of this namespace's IPv4 addresses belongs to, or -1. */
static int local_host(const struct c4_plan_topo *t, char *addr, size_t addrlen) {
  struct ifaddrs *ifs, *i;
  int h = -1;
  if (getifaddrs(&ifs) < 0) return C4_NONE;
  for (i = ifs; i && h < 0; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, addr, (socklen_t)addrlen);
    h = host_of_addr(t, addr, NULL);
  }
  freeifaddrs(ifs);
  return h;
}

/* The node (a link's "a" or "b") that owns a link-end address, from links[].a_addr/b_addr; NULL
 * when no link end has it. Points into root. */
static const char *node_of_addr(json_t *root, const char *addr) {
  size_t i;
  json_t *l;
  json_array_foreach(json_object_get(root, "links"), i, l) {
    const char *a = json_string_value(json_object_get(l, "a_addr"));
    const char *b = json_string_value(json_object_get(l, "b_addr"));
    if (a && !strcmp(a, addr)) return json_string_value(json_object_get(l, "a"));
    if (b && !strcmp(b, addr)) return json_string_value(json_object_get(l, "b"));
  }
  return NULL;
}

static int is_spine(const struct c4_plan_topo *t, const char *name) {
  for (int s = 0; name && s < t->nspines; s++)
    if (!strcmp(t->spine_names[s], name)) return 1;
  return 0;
}

struct opts {
  const char *topo, *src, *src_addr, *dst;
  struct c4_plan_probe_req req;
  int json;
};

static const char *const prog = "c4plan probe";
static const struct option longs[] = {
    {"topo", 1, 0, 'T'},    {"src", 1, 0, 's'},   {"src-addr", 1, 0, 'a'},
    {"dst", 1, 0, 'd'},     {"proto", 1, 0, 'P'}, {"dst-port", 1, 0, 'p'},
    {"sports", 1, 0, 'r'},  {"ttl", 1, 0, 't'},   {"timeout-ms", 1, 0, 'w'},
    {"tries", 1, 0, 'n'},   {"json", 0, 0, 'j'},  {"help", 0, 0, 'h'},
    {"version", 0, 0, 'V'}, {0, 0, 0, 0}};

/* Option c (one of longs' but help and version) with its value v into o; the ports into
 * *dst_port and *lo..*hi, which parse_opts settles once every option is in. Returns 0, or
 * C4_EINVAL when v is bad (said in one line). */
static int take_option(int c, const char *v, struct opts *o, long *dst_port, unsigned *lo,
                       unsigned *hi) {
  long n;
  switch (c) {
  case 'T': o->topo = v; return 0;
  case 's': o->src = v; return 0;
  case 'a': o->src_addr = v; return 0;
  case 'd': o->dst = v; return 0;
  case 'j': o->json = 1; return 0;
  case 'p': return c4_cli_long(prog, "--dst-port", v, 1, 65535, dst_port) != 0 ? C4_EINVAL : 0;
  case 't':
    if (c4_cli_long(prog, "--ttl", v, 1, 255, &n) != 0) return C4_EINVAL;
    o->req.ttl = (int)n;
    return 0;
  case 'w':
    if (c4_cli_long(prog, "--timeout-ms", v, 1, 600000, &n) != 0) return C4_EINVAL;
    o->req.timeout_ms = (int)n;
    return 0;
  case 'n':
    if (c4_cli_long(prog, "--tries", v, 1, 1000, &n) != 0) return C4_EINVAL;
    o->req.tries = (int)n;
    return 0;
  case 'P':
    if (!strcmp(v, "tcp") || !strcmp(v, "udp")) {
      o->req.proto = v[0] == 't' ? C4_PLAN_TCP : C4_PLAN_UDP;
      return 0;
    }
    c4_cli_usage(prog, "--proto wants tcp or udp, not '%s'", v);
    return C4_EINVAL;
  case 'r':
    if (sscanf(v, "%u-%u", lo, hi) == 2 && *lo >= 1 && *lo <= *hi && *hi <= 65535) return 0;
    c4_cli_usage(prog, "--sports wants LO-HI within 1-65535, not '%s'", v);
    return C4_EINVAL;
  }
  return 0;
}

/* The options into o. Returns 0, 1 when --help or --version was printed, or -1 having printed
 * the one-line usage error. */
static int parse_opts(int argc, char **argv, struct opts *o) {
  long dst_port = -1;
  int c;
  unsigned lo = 49152, hi = 49215;
  o->topo = getenv("C4_TOPO") ? getenv("C4_TOPO") : C4_PLAN_DEFAULT_TOPO;
  o->req =
      (struct c4_plan_probe_req){.proto = C4_PLAN_TCP, .ttl = 2, .timeout_ms = 300, .tries = 3};
  optind = 1;
  while ((c = getopt_long(argc, argv, ":hV", longs, NULL)) != -1) {
    if (c == 'h') {
      usage(stdout);
      return 1;
    }
    if (c == 'V') {
      c4_cli_version("c4plan");
      return 1;
    }
    if (c == '?' || c == ':') {
      c4_cli_bad_option(prog, argv, c);
      return C4_EINVAL;
    }
    if (take_option(c, optarg, o, &dst_port, &lo, &hi)) return C4_EINVAL;
  }
  if (optind < argc && !o->dst) o->dst = argv[optind++];
  if (!o->dst) return c4_cli_usage(prog, "--dst HOST|ADDR is required"), -1;
  if (optind < argc) return c4_cli_usage(prog, "unexpected argument '%s'", argv[optind]), -1;
  if (dst_port < 0) dst_port = o->req.proto == C4_PLAN_TCP ? DEFAULT_TCP_PORT : C4_PLAN_ROCE_PORT;
  o->req.dst_port = (uint16_t)dst_port;
  o->req.sport_lo = (uint16_t)lo;
  o->req.sport_hi = (uint16_t)hi;
  return 0;
}

/* Resolves --src/--src-addr/--dst against the topology into req's addresses and the host
 * indices. Returns 0, or -1 having said what is wrong. */
static int resolve(const struct c4_plan_topo *t, struct opts *o, int *src, int *dst, int *src_port,
                   int *dst_port) {
  char addr[INET_ADDRSTRLEN] = "";
  if (o->src_addr) {
    *src = host_of_addr(t, o->src_addr, src_port);
    snprintf(addr, sizeof addr, "%s", o->src_addr);
  } else if (o->src) {
    *src = c4_plan_topo_host(t, o->src);
    *src_port = 0;
    if (*src >= 0) snprintf(addr, sizeof addr, "%s", t->ports[t->hosts[*src].port0].addr);
  } else {
    *src = local_host(t, addr, sizeof addr);
    host_of_addr(t, addr, src_port);
  }
  if (*src < 0) {
    fprintf(stderr, "c4plan probe: %s: no topology host has %s%s (run inside a host's namespace)\n",
            o->topo,
            o->src_addr ? "address "
            : o->src    ? "name "
                        : "a local address",
            o->src_addr ? o->src_addr
            : o->src    ? o->src
                        : "");
    return C4_EINVAL;
  }
  inet_pton(AF_INET, addr, &o->req.src_addr);
  *dst = c4_plan_topo_host(t, o->dst);
  *dst_port = 0;
  const char *daddr = *dst >= 0 ? t->ports[t->hosts[*dst].port0].addr : o->dst;
  if (*dst < 0) *dst = host_of_addr(t, o->dst, dst_port);
  if (*dst < 0 || inet_pton(AF_INET, daddr, &o->req.dst_addr) != 1) {
    fprintf(stderr, "c4plan probe: %s: no host or host address \"%s\"\n", o->topo, o->dst);
    return C4_EINVAL;
  }
  return 0;
}

/* same_leaf: the ports were not probed (their flow stays inside that leaf). */
static void print_table(const struct opts *o, json_t *out, const char *same_leaf) {
  printf("c4plan probe: %s -> %s, %s to port %d, TTL %d\n",
         json_string_value(json_object_get(out, "src")),
         json_string_value(json_object_get(out, "dst")),
         o->req.proto == C4_PLAN_TCP ? "tcp" : "udp", o->req.dst_port, o->req.ttl);
  printf("%-9s %-6s %s\n", "src_port", "path", "hop");
  size_t i;
  json_t *m;
  json_array_foreach(json_object_get(out, "map"), i, m) {
    const char *path = json_string_value(json_object_get(m, "path"));
    const char *hop = json_string_value(json_object_get(m, "hop"));
    printf("%-9d %-6s %s\n", (int)json_integer_value(json_object_get(m, "src_port")),
           path ? path : "-",
           hop         ? hop
           : same_leaf ? "(not probed: both ends on this leaf)"
                       : "(no reply)");
  }
  const char *key;
  json_t *v;
  printf("per path:");
  json_object_foreach(json_object_get(out, "counts"), key, v) {
    printf(" %s %d", key, (int)json_integer_value(v));
  }
  printf("\n");
}

/* Builds the output tree: the fixed fields, then one map entry per source port. A port whose
 * flow stays inside one leaf takes that leaf as its path and is not probed. */
static json_t *build_output(const struct c4_plan_topo *t, json_t *root, const struct opts *o,
                            int src, int dst, const uint32_t *hops, const char *same_leaf) {
  json_t *out = json_object(), *map = json_array(), *counts = json_object();
  json_object_set_new(out, "v", json_integer(1));
  json_object_set_new(out, "src", json_string(t->hosts[src].name));
  json_object_set_new(out, "dst", json_string(t->hosts[dst].name));
  json_object_set_new(out, "proto", json_string(o->req.proto == C4_PLAN_TCP ? "tcp" : "udp"));
  json_object_set_new(out, "dst_port", json_integer(o->req.dst_port));
  char a[INET_ADDRSTRLEN];
  json_object_set_new(out, "src_addr",
                      json_string(inet_ntop(AF_INET, &o->req.src_addr, a, sizeof a)));
  json_object_set_new(out, "dst_addr",
                      json_string(inet_ntop(AF_INET, &o->req.dst_addr, a, sizeof a)));
  for (int p = o->req.sport_lo; p <= o->req.sport_hi; p++) {
    json_t *e = json_object();
    const char *path = same_leaf, *hop = NULL;
    if (!same_leaf && hops[p - o->req.sport_lo]) {
      hop = inet_ntop(AF_INET, &hops[p - o->req.sport_lo], a, sizeof a);
      const char *node = node_of_addr(root, hop);
      path = is_spine(t, node) ? node : NULL;
    }
    json_object_set_new(e, "src_port", json_integer(p));
    json_object_set_new(e, "path", path ? json_string(path) : json_null());
    if (hop) json_object_set_new(e, "hop", json_string(hop));
    json_array_append_new(map, e);
    const char *k = path ? path : "unmapped";
    json_object_set_new(counts, k,
                        json_integer(json_integer_value(json_object_get(counts, k)) + 1));
  }
  json_object_set_new(out, "map", map);
  json_object_set_new(out, "counts", counts);
  return out;
}

int c4plan_probe_main(int argc, char **argv) {
  struct opts o = {0};
  char err[256];
  int src, dst, src_port, dst_port, status = 1;
  int parsed = parse_opts(argc, argv, &o);
  if (parsed != 0) return parsed > 0 ? C4_EXIT_OK : C4_EXIT_USAGE;
  struct c4_plan_topo *t = c4_plan_topo_load(o.topo, err, sizeof err);
  if (!t) return fprintf(stderr, "c4plan probe: %s\n", err), 1;
  json_error_t jerr;
  json_t *root = json_load_file(o.topo, 0, &jerr); /* for the link-end addresses topo.h omits */
  uint32_t *hops = calloc((size_t)(o.req.sport_hi - o.req.sport_lo + 1), sizeof *hops);
  if (!root || !hops) {
    fprintf(stderr, "c4plan probe: %s: %s\n", o.topo, root ? "out of memory" : jerr.text);
    goto out;
  }
  if (resolve(t, &o, &src, &dst, &src_port, &dst_port) < 0) goto out;
  if (src == dst) { /* its traffic to itself never enters the fabric: no path to find */
    fprintf(stderr, "c4plan probe: --dst %s is the source host %s itself\n", o.dst,
            t->hosts[src].name);
    goto out;
  }
  const struct c4_plan_port *sp = &t->ports[t->hosts[src].port0 + src_port];
  const struct c4_plan_port *dp = &t->ports[t->hosts[dst].port0 + dst_port];
  const char *same_leaf = sp->leaf == dp->leaf ? t->leaf_names[sp->leaf] : NULL;
  int nports = o.req.sport_hi - o.req.sport_lo + 1, answered = nports;
  if (!same_leaf) {
    answered = c4_plan_probe_run(&o.req, hops, err, sizeof err);
    if (answered < 0) {
      fprintf(stderr, "c4plan probe: %s\n", err);
      status = strstr(err, "CAP_NET_RAW") ? 2 : 1;
      goto out;
    }
  }
  json_t *out = build_output(t, root, &o, src, dst, hops, same_leaf);
  if (o.json) {
    json_dumpf(out, stdout, JSON_COMPACT);
    printf("\n");
  } else {
    print_table(&o, out, same_leaf);
  }
  json_t *unmapped = json_object_get(json_object_get(out, "counts"), "unmapped");
  status = answered == nports && !unmapped ? 0 : 1;
  json_decref(out);
out:
  free(hops);
  json_decref(root);
  c4_plan_topo_free(t);
  return status;
}
