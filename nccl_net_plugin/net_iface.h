/* net_iface.h -- which network interfaces the plugin offers as devices, and their properties,
 * chosen the way NCCL's socket transport chooses them. */
#ifndef C4_NET_IFACE_H
#define C4_NET_IFACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define C4_IFACE_DEFAULT_SPEED 10000 /* Mbps, when /sys gives none (NCCL assumes the same) */

struct c4_iface {
  char name[16];
  struct sockaddr_storage addr; /* the interface's address, port 0 */
  int speed_mbps;
  char pci_path[256]; /* empty when the interface is not a PCI device */
  uint64_t guid;
};

/* Does ifname pass the NCCL-syntax list? Comma-separated prefixes; a leading '^' makes it an
 * exclusion list, a leading '=' (after any '^') exact names; ":port" suffixes are ignored. */
bool c4_iface_name_matches(const char *list, const char *ifname);

/* Lists up to max usable interfaces (up, with an address of the allowed family) in the order
 * getifaddrs gives them, one per name, filtered by C4_SOCKET_IFNAME, else NCCL_SOCKET_IFNAME,
 * else "every interface but docker*, virbr* and lo", falling back to lo when that finds none.
 * NCCL_SOCKET_FAMILY=AF_INET|AF_INET6 restricts the family (default: IPv4 first, then IPv6 without
 * link-local). Sets *n; 0 interfaces is not an error but is logged with the list in force.
 * Returns 0 or C4_ESYS when getifaddrs fails. */
int c4_iface_discover(struct c4_iface *out, int max, int *n);

/* <sysfs_root>/class/net/<ifname>/speed, or C4_IFACE_DEFAULT_SPEED when missing or not positive. */
int c4_iface_speed_mbps(const char *sysfs_root, const char *ifname);

/* Resolves <sysfs_root>/class/net/<ifname>/device into out when it is a PCI device; else writes ""
 * and returns C4_ENOTFOUND. */
int c4_iface_pci_path(const char *sysfs_root, const char *ifname, char *out, size_t len);

/* The MAC address (<sysfs_root>/class/net/<ifname>/address) as a 48-bit number; for an all-zero
 * or unreadable MAC (loopback), an FNV-1a hash of the name, so that every device has a stable,
 * distinct guid. */
uint64_t c4_iface_guid(const char *sysfs_root, const char *ifname);

#endif
