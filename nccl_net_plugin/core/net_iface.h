/* net_iface.h -- which network interfaces the plugin offers as devices, and their properties,
 * chosen the way NCCL's socket transport chooses them (NCCL 2.28, src/misc/socket.cc). */
#ifndef C4_NET_IFACE_H
#define C4_NET_IFACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Mbps reported when /sys gives no speed: the speed file is missing or unreadable (loopback,
 * most virtual devices: reading it fails with EINVAL), or holds -1 or 0 (a link that is down or
 * a driver that does not know). NCCL's socket transport and its topology code assume the same
 * 10 Gbps in those cases. */
#define C4_IFACE_DEFAULT_SPEED 10000

struct c4_iface {
  char name[16];                /* e.g. "eth0"; Linux names are at most 15 characters */
  struct sockaddr_storage addr; /* the interface's IPv4 or IPv6 address, port 0 */
  socklen_t addrlen;            /* sizeof(struct sockaddr_in) or sizeof(struct sockaddr_in6) */
  int speed_mbps;               /* c4_iface_speed_mbps */
  char pci_path[256];           /* c4_iface_pci_path; "" when not on PCI (pass NULL to NCCL) */
  uint64_t guid;                /* c4_iface_guid */
};

/* Does ifname pass list, written in NCCL_SOCKET_IFNAME syntax? The list is comma-separated
 * names; an entry matches every interface whose name starts with it. A leading '^' turns the list
 * into an exclusion list (ifname passes when no entry matches); a leading '=' (after any '^')
 * makes entries exact names ("=eth0" passes eth0, not eth01). A ":port" after a name is ignored,
 * as NCCL ignores it when choosing socket interfaces. Empty entries (",,") are skipped. As in
 * NCCL, a list that names no interface at all ("", ",", "=") passes every name, and its '^' form
 * ("^", "^,") passes none. A NULL list passes every name. Unlike NCCL, entries past the 16th are
 * not ignored. Pure function: no allocation, no failure. */
bool c4_iface_name_matches(const char *list, const char *ifname);

/* Fills out[0..*n-1] with up to max usable interfaces: running (IFF_UP and IFF_RUNNING) and
 * holding an address, one entry per interface name. The address is the interface's first IPv4
 * address, else its first IPv6 address that is neither loopback (::1) nor link-local (fe80::/10);
 * interfaces with an IPv4 address come first, in getifaddrs order, then IPv6-only ones.
 * NCCL_SOCKET_FAMILY=AF_INET or AF_INET6 allows only that family (another value is warned about
 * and ignored).
 * Which interfaces: the list in C4_SOCKET_IFNAME, else the one in NCCL_SOCKET_IFNAME (syntax of
 * c4_iface_name_matches); a value of 0 or 1 characters counts as unset, as in NCCL. With no list,
 * NCCL's automatic order: ib* (IPoIB), else everything but docker*, lo and virbr*, else docker*,
 * else lo (so a loopback-only machine works), else virbr*. NCCL also tries NCCL_COMM_ID's subnet
 * before the second step; c4 does not.
 * speed_mbps, pci_path and guid come from /sys through the functions below.
 * Finding no interface is not an error: it returns 0 with *n = 0 and logs a warning naming the
 * variable and value in force (the caller decides; the plugin then declines to initialise).
 * max 0 returns 0 with *n = 0 at once. Returns C4_EINVAL for a NULL out or n or a negative max,
 * C4_ESYS when getifaddrs fails (both logged, *n = 0). The caller owns out; nothing is allocated
 * that outlives the call. */
int c4_iface_discover(struct c4_iface *out, int max, int *n);

/* The link speed in Mbps from <sysfs_root>/class/net/<ifname>/speed (sysfs_root is "/sys" outside
 * tests), or C4_IFACE_DEFAULT_SPEED (10000) when the file is missing or unreadable or its value is
 * not a positive number. Never fails. */
int c4_iface_speed_mbps(const char *sysfs_root, const char *ifname);

/* Writes into out (len bytes) the real path of the PCI function the interface is: the resolved
 * <sysfs_root>/class/net/<ifname>/device when that is a PCI function under a /pci root
 * (".../pci0000:00/0000:3b:00.0"), or that function when the device sits directly on one (a
 * virtio-net device ".../0000:00:03.0/virtio2" gives ".../0000:00:03.0"). Returns 0; or writes ""
 * and returns C4_ENOTFOUND when there is no device link or it is not on PCI (loopback, veth,
 * bridges, USB NICs), C4_EINVAL when out is NULL or too small. */
int c4_iface_pci_path(const char *sysfs_root, const char *ifname, char *out, size_t len);

/* A 64-bit identity of the NIC from its hardware address, <sysfs_root>/class/net/<ifname>/address:
 * an Ethernet MAC ("0c:42:a1:00:00:07") as its 6 bytes in the low 48 bits (0x0c42a1000007); a
 * longer address (IPoIB's 20 bytes) as its last 8 bytes, the port GUID. Interfaces that share a
 * hardware address (VLANs on one NIC, a bond and its ports) share the guid, which tells NCCL they
 * are one NIC. When the address is all zeros (loopback), missing or unparsable: the 64-bit FNV-1a
 * hash of ifname with bit 63 set, stable across runs and hosts and never equal to a MAC-derived
 * guid. Never fails. */
uint64_t c4_iface_guid(const char *sysfs_root, const char *ifname);

#endif
