/* test_iface.c -- interface selection (NCCL_SOCKET_IFNAME syntax) and properties read from a
 * fake /sys tree. */
#include <arpa/inet.h>
#include <check.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../check_run.h"
#include "c4_err.h"
#include "net_iface.h"

START_TEST(name_lists_follow_nccl_syntax) {
  ck_assert(c4_iface_name_matches("eth", "eth0"));
  ck_assert(c4_iface_name_matches("eth", "eth12"));
  ck_assert(!c4_iface_name_matches("eth", "ib0"));
  ck_assert(c4_iface_name_matches("ib,eth", "eth1"));
  ck_assert(c4_iface_name_matches("^docker,lo", "eth0"));
  ck_assert(!c4_iface_name_matches("^docker,lo", "docker0"));
  ck_assert(!c4_iface_name_matches("^docker,lo", "lo"));
  ck_assert(c4_iface_name_matches("=eth0", "eth0"));
  ck_assert(!c4_iface_name_matches("=eth0", "eth01"));
  ck_assert(!c4_iface_name_matches("^=eth0", "eth0"));
  ck_assert(c4_iface_name_matches("^=eth0", "eth01"));
  ck_assert(c4_iface_name_matches("eth0:1234", "eth0")); /* a port suffix is ignored */
  ck_assert(!c4_iface_name_matches("", "eth0"));
  ck_assert(c4_iface_name_matches(NULL, "eth0"));
  ck_assert(!c4_iface_name_matches(",,", "eth0"));
}
END_TEST

static char root[PATH_MAX];

static void mk(const char *rel, const char *content) {
  char p[PATH_MAX + 64];
  snprintf(p, sizeof p, "%s/%s", root, rel);
  char cmd[PATH_MAX + 128];
  snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", p);
  ck_assert_int_eq(system(cmd), 0);
  if (content) {
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fputs(content, f);
    fclose(f);
  }
}

static void fake_sysfs(void) {
  strcpy(root, "/tmp/c4-sysfs-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(root));
  mk("class/net/eth0/speed", "25000\n");
  mk("class/net/eth0/address", "0c:42:a1:00:00:07\n");
  mk("devices/pci0000:00/0000:3b:00.0/x", NULL);
  char p[PATH_MAX + 64], t[PATH_MAX + 64];
  snprintf(t, sizeof t, "%s/devices/pci0000:00/0000:3b:00.0", root);
  snprintf(p, sizeof p, "%s/class/net/eth0/device", root);
  ck_assert_int_eq(symlink(t, p), 0);
  mk("class/net/veth0/speed", "-1\n");
  mk("class/net/veth0/address", "00:00:00:00:00:00\n");
  mk("devices/virtual/net/veth0/x", NULL);
  snprintf(t, sizeof t, "%s/devices/virtual/net/veth0", root);
  snprintf(p, sizeof p, "%s/class/net/veth0/device", root);
  ck_assert_int_eq(symlink(t, p), 0);
  mk("class/net/bond0/address", "garbage\n"); /* no speed file at all */
}

START_TEST(properties_come_from_sysfs_and_say_so_when_it_has_none) {
  fake_sysfs();
  ck_assert_int_eq(c4_iface_speed_mbps(root, "eth0"), 25000);
  ck_assert_int_eq(c4_iface_speed_mbps(root, "veth0"), C4_IFACE_DEFAULT_SPEED);
  ck_assert_int_eq(c4_iface_speed_mbps(root, "bond0"), C4_IFACE_DEFAULT_SPEED);
  char pci[PATH_MAX];
  ck_assert_int_eq(c4_iface_pci_path(root, "eth0", pci, sizeof pci), 0);
  ck_assert_ptr_nonnull(strstr(pci, "/pci0000:00/0000:3b:00.0"));
  ck_assert_int_eq(c4_iface_pci_path(root, "veth0", pci, sizeof pci), C4_ENOTFOUND);
  ck_assert_str_eq(pci, "");
  ck_assert_uint_eq(c4_iface_guid(root, "eth0"), 0x0c42a1000007ull);
  uint64_t a = c4_iface_guid(root, "veth0"), b = c4_iface_guid(root, "bond0");
  ck_assert_uint_ne(a, 0);
  ck_assert_uint_ne(a, b); /* stable name hashes, distinct per interface */
  ck_assert_uint_eq(a, c4_iface_guid(root, "veth0"));
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(c4_socket_ifname_lo_offers_exactly_loopback) {
  setenv("C4_SOCKET_IFNAME", "lo", 1);
  setenv("NCCL_SOCKET_IFNAME", "eth", 1); /* C4_ wins */
  struct c4_iface d[8];
  int n = -1;
  ck_assert_int_eq(c4_iface_discover(d, 8, &n), 0);
  ck_assert_int_eq(n, 1);
  ck_assert_str_eq(d[0].name, "lo");
  ck_assert_int_eq(d[0].addr.ss_family, AF_INET);
  ck_assert_uint_eq(ntohl(((struct sockaddr_in *)&d[0].addr)->sin_addr.s_addr), INADDR_LOOPBACK);
  ck_assert_int_gt(d[0].speed_mbps, 0);
}
END_TEST

START_TEST(a_list_that_matches_nothing_gives_no_device_and_no_error) {
  setenv("C4_SOCKET_IFNAME", "=nosuchif0", 1);
  setenv("C4_DEBUG", "NONE", 1);
  struct c4_iface d[8];
  int n = -1;
  ck_assert_int_eq(c4_iface_discover(d, 8, &n), 0);
  ck_assert_int_eq(n, 0);
}
END_TEST

START_TEST(nccl_socket_ifname_is_used_when_c4s_is_unset) {
  unsetenv("C4_SOCKET_IFNAME");
  setenv("NCCL_SOCKET_IFNAME", "=lo", 1);
  struct c4_iface d[8];
  int n = -1;
  ck_assert_int_eq(c4_iface_discover(d, 8, &n), 0);
  ck_assert_int_eq(n, 1);
  ck_assert_str_eq(d[0].name, "lo");
  setenv("NCCL_SOCKET_IFNAME", "^lo", 1);
  ck_assert_int_eq(c4_iface_discover(d, 8, &n), 0);
  for (int i = 0; i < n; i++)
    ck_assert_str_ne(d[i].name, "lo");
}
END_TEST

int main(void) {
  Suite *s = suite_create("iface");
  TCase *tc = tcase_create("iface");
  tcase_add_test(tc, name_lists_follow_nccl_syntax);
  tcase_add_test(tc, properties_come_from_sysfs_and_say_so_when_it_has_none);
  tcase_add_test(tc, c4_socket_ifname_lo_offers_exactly_loopback);
  tcase_add_test(tc, a_list_that_matches_nothing_gives_no_device_and_no_error);
  tcase_add_test(tc, nccl_socket_ifname_is_used_when_c4s_is_unset);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
