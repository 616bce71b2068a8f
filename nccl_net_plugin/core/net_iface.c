/* net_iface.c -- interface discovery by NCCL_SOCKET_IFNAME rules, and properties from /sys. */
#include "net_iface.h"

#include <ctype.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_err.h"
#include "c4_hash.h"
#include "c4_log.h"

#define SYSFS_ROOT "/sys"
#define MAX_HWADDR 32 /* bytes; IPoIB uses 20 */

/* ---- name lists ---------------------------------------------------------------------------- */

static bool entry_matches(const char *entry, size_t len, const char *ifname, bool exact) {
  if (exact) return strlen(ifname) == len && strncmp(ifname, entry, len) == 0;
  return strncmp(ifname, entry, len) == 0;
}

bool c4_iface_name_matches(const char *list, const char *ifname) {
  if (!list) return true;
  bool exclude = *list == '^';
  if (exclude) list++;
  bool exact = *list == '=';
  if (exact) list++;
  bool named = false, hit = false;
  for (const char *p = list; *p && !hit;) {
    size_t entry_len = strcspn(p, ",");
    size_t name_len = strcspn(p, ":,"); /* a ":port" suffix is dropped */
    if (name_len > 0) {
      named = true;
      hit = entry_matches(p, name_len, ifname, exact);
    }
    p += entry_len;
    if (*p == ',') p++;
  }
  /* NCCL's rule: a list that names nothing restricts nothing, so its exclusion form excludes all.
   */
  bool in_list = hit || !named;
  return in_list != exclude;
}

/* ---- /sys ---------------------------------------------------------------------------------- */

/* Reads the first line of <root>/class/net/<ifname>/<leaf> into buf without its newline. */
static int read_sysfs_line(const char *root, const char *ifname, const char *leaf, char *buf,
                           size_t len) {
  char path[PATH_MAX];
  int w = snprintf(path, sizeof path, "%s/class/net/%s/%s", root, ifname, leaf);
  if (w < 0 || (size_t)w >= sizeof path) return C4_EINVAL;
  FILE *f = fopen(path, "r");
  if (!f) return C4_ENOTFOUND;
  char *ok = fgets(buf, (int)len, f); /* fails with EINVAL for the speed of a virtual device */
  fclose(f);
  if (!ok) return C4_ENOTFOUND;
  buf[strcspn(buf, "\n")] = 0;
  return 0;
}

int c4_iface_speed_mbps(const char *sysfs_root, const char *ifname) {
  char buf[64];
  if (!sysfs_root || !ifname) return C4_IFACE_DEFAULT_SPEED;
  if (read_sysfs_line(sysfs_root, ifname, "speed", buf, sizeof buf) != 0)
    return C4_IFACE_DEFAULT_SPEED;
  char *end;
  long v = strtol(buf, &end, 10);
  if (end == buf || v <= 0 || v > INT_MAX) return C4_IFACE_DEFAULT_SPEED;
  return (int)v;
}

/* Is the path component [s, s+len) a PCI address, domain:bus:device.function (0000:3b:00.0)? */
static bool is_pci_function(const char *s, size_t len) {
  size_t i = 0;
  while (i < len && isxdigit((unsigned char)s[i]))
    i++;
  if (i < 4 || len != i + 8) return false;
  const char *t = s + i; /* ":bb:dd.f" */
  return t[0] == ':' && isxdigit((unsigned char)t[1]) && isxdigit((unsigned char)t[2]) &&
         t[3] == ':' && isxdigit((unsigned char)t[4]) && isxdigit((unsigned char)t[5]) &&
         t[6] == '.' && t[7] >= '0' && t[7] <= '7';
}

int c4_iface_pci_path(const char *sysfs_root, const char *ifname, char *out, size_t len) {
  if (!out || len == 0) return C4_EINVAL;
  out[0] = 0;
  if (!sysfs_root || !ifname) return C4_EINVAL;
  char link[PATH_MAX], real[PATH_MAX];
  int w = snprintf(link, sizeof link, "%s/class/net/%s/device", sysfs_root, ifname);
  if (w < 0 || (size_t)w >= sizeof link) return C4_ENOTFOUND;
  if (!realpath(link, real) || !strstr(real, "/pci")) return C4_ENOTFOUND;
  /* The device itself, or its parent (virtio-net sits on a virtio PCI function), must be a PCI
   * function; anything deeper (USB NICs behind a host controller) is not a PCI device. */
  char *last = strrchr(real, '/');
  if (!last || last == real) return C4_ENOTFOUND;
  if (!is_pci_function(last + 1, strlen(last + 1))) {
    *last = 0;
    char *parent = strrchr(real, '/');
    if (!parent || !is_pci_function(parent + 1, strlen(parent + 1))) return C4_ENOTFOUND;
  }
  size_t n = strlen(real);
  if (n >= len) {
    C4_WARN("PCI path of %s (%zu bytes) does not fit in %zu bytes", ifname, n, len);
    return C4_EINVAL;
  }
  memcpy(out, real, n + 1);
  return 0;
}

/* Parses "aa:bb:..." into bytes; returns how many, 0 when the text is not a hardware address. */
static size_t parse_hwaddr(const char *s, unsigned char *b, size_t max) {
  size_t n = 0;
  while (n < max) {
    if (!isxdigit((unsigned char)s[0]) || !isxdigit((unsigned char)s[1])) return 0;
    char hex[3] = {s[0], s[1], 0};
    b[n++] = (unsigned char)strtoul(hex, NULL, 16);
    s += 2;
    if (*s == 0) return n;
    if (*s++ != ':') return 0;
  }
  return 0;
}

uint64_t c4_iface_guid(const char *sysfs_root, const char *ifname) {
  char buf[3 * MAX_HWADDR + 8];
  unsigned char b[MAX_HWADDR];
  size_t n = 0;
  if (sysfs_root && ifname && read_sysfs_line(sysfs_root, ifname, "address", buf, sizeof buf) == 0)
    n = parse_hwaddr(buf, b, MAX_HWADDR);
  size_t first = n > 8 ? n - 8 : 0;
  uint64_t id = 0;
  for (size_t i = first; i < n; i++)
    id = (id << 8) | b[i];
  if (id) return id;
  return c4_fnv1a_str(C4_FNV_OFFSET, ifname ? ifname : "") | (1ull << 63);
}

/* ---- discovery ----------------------------------------------------------------------------- */

static bool usable(const struct ifaddrs *a, int family) {
  if (!a->ifa_addr || a->ifa_addr->sa_family != family) return false;
  if ((a->ifa_flags & (IFF_UP | IFF_RUNNING)) != (IFF_UP | IFF_RUNNING)) return false;
  if (strlen(a->ifa_name) >= sizeof(((struct c4_iface *)0)->name)) return false;
  if (family == AF_INET6) {
    const struct in6_addr *in6 = &((const struct sockaddr_in6 *)a->ifa_addr)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(in6) || IN6_IS_ADDR_LINKLOCAL(in6)) return false;
  }
  return true;
}

static bool have_name(const struct c4_iface *out, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(out[i].name, name) == 0) return true;
  return false;
}

/* Adds to out[*n..] the interfaces of one family that pass list, skipping names already there. */
static void add_family(struct ifaddrs *all, const char *list, int family, struct c4_iface *out,
                       int max, int *n) {
  for (struct ifaddrs *a = all; a && *n < max; a = a->ifa_next) {
    if (!usable(a, family) || !c4_iface_name_matches(list, a->ifa_name)) continue;
    if (have_name(out, *n, a->ifa_name)) continue;
    struct c4_iface *d = &out[(*n)++];
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", a->ifa_name);
    d->addrlen = family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
    memcpy(&d->addr, a->ifa_addr, d->addrlen);
    if (family == AF_INET)
      ((struct sockaddr_in *)&d->addr)->sin_port = 0;
    else
      ((struct sockaddr_in6 *)&d->addr)->sin6_port = 0;
    d->speed_mbps = c4_iface_speed_mbps(SYSFS_ROOT, d->name);
    c4_iface_pci_path(SYSFS_ROOT, d->name, d->pci_path, sizeof d->pci_path);
    d->guid = c4_iface_guid(SYSFS_ROOT, d->name);
  }
}

/* The interfaces that pass list: IPv4 ones first, then IPv6 ones, unless family restricts. */
static int find(struct ifaddrs *all, const char *list, int family, struct c4_iface *out, int max) {
  int n = 0;
  if (family != AF_INET6) add_family(all, list, AF_INET, out, max, &n);
  if (family != AF_INET) add_family(all, list, AF_INET6, out, max, &n);
  return n;
}

/* NCCL_SOCKET_FAMILY as AF_INET, AF_INET6 or AF_UNSPEC (either). */
static int family_from_env(void) {
  const char *v = getenv("NCCL_SOCKET_FAMILY");
  if (!v) return AF_UNSPEC;
  if (strcmp(v, "AF_INET") == 0) return AF_INET;
  if (strcmp(v, "AF_INET6") == 0) return AF_INET6;
  C4_WARN_SETTING("NCCL_SOCKET_FAMILY=\"%s\" is neither AF_INET nor AF_INET6; using either family",
                  v);
  return AF_UNSPEC;
}

/* The user's list: C4_SOCKET_IFNAME, else NCCL_SOCKET_IFNAME; NULL when neither is usable. */
static const char *list_from_env(const char **var) {
  static const char *const vars[] = {"C4_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    if (!v || !*v) continue;
    if (strlen(v) == 1) { /* NCCL ignores such a value; so does c4, but says so */
      C4_WARN_SETTING("%s=\"%s\" is ignored: a list must be at least 2 characters long", vars[i],
                      v);
      continue;
    }
    *var = vars[i];
    return v;
  }
  return NULL;
}

static const char *family_name(int family) {
  return family == AF_INET ? "IPv4" : family == AF_INET6 ? "IPv6" : "IPv4 or IPv6";
}

int c4_iface_discover(struct c4_iface *out, int max, int *n) {
  if (n) *n = 0;
  if (!out || !n || max < 0) {
    C4_WARN("c4_iface_discover: out and n must not be NULL and max (%d) not negative", max);
    return C4_EINVAL;
  }
  if (max == 0) return 0;
  struct ifaddrs *all = NULL;
  if (getifaddrs(&all) != 0) {
    C4_WARN("getifaddrs failed (%s); c4 offers no network device", strerror(errno));
    return C4_ESYS;
  }
  int family = family_from_env();
  const char *var = NULL;
  const char *list = list_from_env(&var);
  if (list) {
    *n = find(all, list, family, out, max);
    if (*n == 0)
      C4_WARN_SETTING(
          "%s=\"%s\" matches no interface that is up and has an %s address; c4 offers no "
          "device",
          var, list, family_name(family));
    else
      C4_INFO("%s=\"%s\" selects %d interface(s)", var, list, *n);
  } else {
    /* NCCL's automatic order (src/misc/socket.cc ncclFindInterfaces), without NCCL_COMM_ID. */
    static const char *const order[] = {"ib", "^docker,lo,virbr", "docker", "lo", "virbr"};
    for (size_t i = 0; i < sizeof order / sizeof order[0] && *n == 0; i++) {
      *n = find(all, order[i], family, out, max);
      if (*n)
        C4_INFO("no C4_SOCKET_IFNAME or NCCL_SOCKET_IFNAME: using \"%s\" interfaces", order[i]);
    }
    if (*n == 0)
      C4_WARN("no network interface is up with an %s address; c4 offers no device",
              family_name(family));
  }
  freeifaddrs(all);
  return 0;
}
