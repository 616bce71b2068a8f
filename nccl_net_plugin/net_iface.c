/* net_iface.c -- interface discovery and properties from getifaddrs and /sys. */
#include "net_iface.h"

#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_err.h"
#include "c4_log.h"

#define DEFAULT_EXCLUDE "^docker,virbr,lo"

bool c4_iface_name_matches(const char *list, const char *ifname) {
  if (!list) return true;
  bool exclude = false, exact = false;
  if (*list == '^') {
    exclude = true;
    list++;
  }
  if (*list == '=') {
    exact = true;
    list++;
  }
  bool hit = false;
  while (*list && !hit) {
    size_t len = strcspn(list, ",");
    size_t name_len = strcspn(list, ":,");
    if (name_len > 0) {
      if (exact)
        hit = strlen(ifname) == name_len && strncmp(ifname, list, name_len) == 0;
      else
        hit = strncmp(ifname, list, name_len) == 0;
    }
    list += len;
    if (*list == ',') list++;
  }
  return exclude ? !hit : hit;
}

static int read_line(const char *path, char *buf, size_t len) {
  FILE *f = fopen(path, "r");
  if (!f) return C4_ENOTFOUND;
  char *ok = fgets(buf, (int)len, f);
  fclose(f);
  if (!ok) return C4_ENOTFOUND;
  buf[strcspn(buf, "\n")] = 0;
  return 0;
}

int c4_iface_speed_mbps(const char *sysfs_root, const char *ifname) {
  char path[PATH_MAX], buf[64];
  snprintf(path, sizeof path, "%s/class/net/%s/speed", sysfs_root, ifname);
  if (read_line(path, buf, sizeof buf) != 0) return C4_IFACE_DEFAULT_SPEED;
  long v = strtol(buf, NULL, 10);
  return v > 0 && v < INT_MAX ? (int)v : C4_IFACE_DEFAULT_SPEED;
}

int c4_iface_pci_path(const char *sysfs_root, const char *ifname, char *out, size_t len) {
  char path[PATH_MAX], real[PATH_MAX];
  out[0] = 0;
  snprintf(path, sizeof path, "%s/class/net/%s/device", sysfs_root, ifname);
  if (!realpath(path, real) || !strstr(real, "/pci") || strlen(real) >= len) return C4_ENOTFOUND;
  strcpy(out, real);
  return 0;
}

uint64_t c4_iface_guid(const char *sysfs_root, const char *ifname) {
  char path[PATH_MAX], buf[64];
  snprintf(path, sizeof path, "%s/class/net/%s/address", sysfs_root, ifname);
  unsigned b[6];
  if (read_line(path, buf, sizeof buf) == 0 &&
      sscanf(buf, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) == 6) {
    uint64_t mac = 0;
    for (int i = 0; i < 6; i++)
      mac = (mac << 8) | (b[i] & 0xff);
    if (mac) return mac;
  }
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char *p = ifname; *p; p++)
    h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
  return h;
}

static bool usable_addr(const struct ifaddrs *a, int family) {
  if (!a->ifa_addr || !(a->ifa_flags & IFF_UP) || a->ifa_addr->sa_family != family) return false;
  if (family == AF_INET6) {
    const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)a->ifa_addr;
    if (IN6_IS_ADDR_LINKLOCAL(&s->sin6_addr)) return false;
  }
  return true;
}

static int collect(struct ifaddrs *all, const char *list, int family, struct c4_iface *out,
                   int max) {
  int n = 0;
  for (struct ifaddrs *a = all; a && n < max; a = a->ifa_next) {
    if (!usable_addr(a, family) || !c4_iface_name_matches(list, a->ifa_name)) continue;
    if (strlen(a->ifa_name) >= sizeof out->name) continue;
    bool dup = false;
    for (int i = 0; i < n; i++)
      dup |= strcmp(out[i].name, a->ifa_name) == 0;
    if (dup) continue;
    struct c4_iface *d = &out[n++];
    memset(d, 0, sizeof *d);
    strcpy(d->name, a->ifa_name);
    memcpy(&d->addr, a->ifa_addr,
           family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
    d->speed_mbps = c4_iface_speed_mbps("/sys", d->name);
    c4_iface_pci_path("/sys", d->name, d->pci_path, sizeof d->pci_path);
    d->guid = c4_iface_guid("/sys", d->name);
  }
  return n;
}

/* Tries the allowed families in order until one yields interfaces. */
static int collect_families(struct ifaddrs *all, const char *list, struct c4_iface *out, int max) {
  const char *fam = getenv("NCCL_SOCKET_FAMILY");
  if (fam && strcmp(fam, "AF_INET") == 0) return collect(all, list, AF_INET, out, max);
  if (fam && strcmp(fam, "AF_INET6") == 0) return collect(all, list, AF_INET6, out, max);
  int n = collect(all, list, AF_INET, out, max);
  return n ? n : collect(all, list, AF_INET6, out, max);
}

int c4_iface_discover(struct c4_iface *out, int max, int *n) {
  *n = 0;
  struct ifaddrs *all = NULL;
  if (getifaddrs(&all) != 0) {
    C4_WARN("getifaddrs failed; c4 offers no device");
    return C4_ESYS;
  }
  const char *var = "C4_SOCKET_IFNAME";
  const char *list = getenv(var);
  if (!list || !*list) {
    var = "NCCL_SOCKET_IFNAME";
    list = getenv(var);
  }
  if (list && *list) {
    *n = collect_families(all, list, out, max);
    if (*n == 0) C4_WARN("%s=%s matches no interface that is up with an address", var, list);
  } else {
    *n = collect_families(all, DEFAULT_EXCLUDE, out, max);
    if (*n == 0) *n = collect_families(all, "lo", out, max);
    if (*n == 0) C4_WARN("no network interface is up with an address");
  }
  freeifaddrs(all);
  return 0;
}
