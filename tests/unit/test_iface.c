/* test_iface.c -- interface selection (NCCL_SOCKET_IFNAME rules, NCCL's automatic order, address
 * families) and properties read from a fake /sys tree. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../check_run.h"
#include "c4_err.h"
#include "c4_log.h"
#include "net_iface.h"

/* Every test starts from the same environment, also when Check runs them in one process. */
static void clear_env(void) {
  unsetenv("C4_SOCKET_IFNAME");
  unsetenv("NCCL_SOCKET_IFNAME");
  unsetenv("NCCL_SOCKET_FAMILY");
}

/* ---- name lists ---------------------------------------------------------------------------- */

START_TEST(plain_entries_are_prefixes) {
  ck_assert(c4_iface_name_matches("eth", "eth0"));
  ck_assert(c4_iface_name_matches("eth", "eth12"));
  ck_assert(c4_iface_name_matches("eth", "eth"));
  ck_assert(!c4_iface_name_matches("eth", "et"));
  ck_assert(!c4_iface_name_matches("eth", "ib0"));
  ck_assert(!c4_iface_name_matches("eth", "veth0")); /* a prefix, not a substring */
  ck_assert(c4_iface_name_matches("eth0", "eth01"));
}
END_TEST

START_TEST(any_entry_of_a_list_can_match) {
  ck_assert(c4_iface_name_matches("ib,eth", "eth1"));
  ck_assert(c4_iface_name_matches("ib,eth", "ib0"));
  ck_assert(!c4_iface_name_matches("ib,eth", "lo"));
  ck_assert(c4_iface_name_matches("ib,,eth,", "eth1")); /* empty entries are skipped */
  ck_assert(c4_iface_name_matches("a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q,r,eth", "eth0"));
}
END_TEST

START_TEST(caret_makes_an_exclusion_list) {
  ck_assert(c4_iface_name_matches("^docker,lo", "eth0"));
  ck_assert(!c4_iface_name_matches("^docker,lo", "docker0"));
  ck_assert(!c4_iface_name_matches("^docker,lo", "lo"));
  ck_assert(!c4_iface_name_matches("^docker,lo", "lo2")); /* still prefixes */
  ck_assert(c4_iface_name_matches("^docker", "dock"));
}
END_TEST

START_TEST(equals_makes_entries_exact_names) {
  ck_assert(c4_iface_name_matches("=eth0", "eth0"));
  ck_assert(!c4_iface_name_matches("=eth0", "eth01"));
  ck_assert(!c4_iface_name_matches("=eth0", "eth"));
  ck_assert(c4_iface_name_matches("=eth0,ib1", "ib1"));
  ck_assert(!c4_iface_name_matches("=eth0,ib1", "ib10"));
  ck_assert(!c4_iface_name_matches("=eth", "eth0"));
}
END_TEST

START_TEST(caret_equals_excludes_exact_names) {
  ck_assert(!c4_iface_name_matches("^=eth0", "eth0"));
  ck_assert(c4_iface_name_matches("^=eth0", "eth01"));
  ck_assert(!c4_iface_name_matches("^=eth0,lo", "lo"));
  ck_assert(c4_iface_name_matches("^=eth0,lo", "lo0"));
  ck_assert(!c4_iface_name_matches("=^eth0", "eth0")); /* '^' only counts first: name "^eth0" */
}
END_TEST

START_TEST(port_suffixes_are_ignored_as_nccl_does_for_sockets) {
  ck_assert(c4_iface_name_matches("eth0:1234", "eth0"));
  ck_assert(c4_iface_name_matches("ib0:1,eth0:2", "eth0"));
  ck_assert(!c4_iface_name_matches("=eth0:1234", "eth0:1234"));
  ck_assert(c4_iface_name_matches("=eth0:1234", "eth0"));
  ck_assert(!c4_iface_name_matches("^eth:5", "eth3"));
  ck_assert(c4_iface_name_matches(":5,eth", "eth3")); /* a bare port is an empty entry */
}
END_TEST

START_TEST(empty_lists_follow_nccl) {
  ck_assert(c4_iface_name_matches(NULL, "eth0"));
  ck_assert(c4_iface_name_matches("", "eth0")); /* names nothing: restricts nothing */
  ck_assert(c4_iface_name_matches(",,", "eth0"));
  ck_assert(c4_iface_name_matches("=", "eth0"));
  ck_assert(!c4_iface_name_matches("^", "eth0")); /* ...so its exclusion form excludes all */
  ck_assert(!c4_iface_name_matches("^,", "lo"));
  ck_assert(!c4_iface_name_matches("eth", ""));
  ck_assert(c4_iface_name_matches("^eth", ""));
}
END_TEST

/* ---- properties from a fake /sys ------------------------------------------------------------ */

static char root[64]; /* "/tmp/c4-sysfs-XXXXXX" */

static void mkdir_p(const char *path) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s", path);
  for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
    *s = 0;
    ck_assert_msg(mkdir(p, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", p, strerror(errno));
    *s = '/';
  }
  ck_assert_msg(mkdir(p, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", p, strerror(errno));
}

/* Creates <root>/<rel>, with its directories; as a directory when content is NULL. */
static void mk(const char *rel, const char *content) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/%s", root, rel);
  if (!content) {
    mkdir_p(p);
    return;
  }
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", p);
  *strrchr(dir, '/') = 0;
  mkdir_p(dir);
  FILE *f = fopen(p, "w");
  ck_assert_ptr_nonnull(f);
  fputs(content, f);
  fclose(f);
}

/* Makes <root>/class/net/<ifname>/device a symlink to <root>/<target_rel>, creating the target. */
static void device_link(const char *ifname, const char *target_rel) {
  mk(target_rel, NULL);
  char t[PATH_MAX], p[PATH_MAX];
  snprintf(t, sizeof t, "%s/%s", root, target_rel);
  snprintf(p, sizeof p, "%s/class/net/%s", root, ifname);
  mkdir_p(p);
  snprintf(p, sizeof p, "%s/class/net/%s/device", root, ifname);
  ck_assert_int_eq(symlink(t, p), 0);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

/* Builds the fake tree once for the "sysfs" case, in the runner process. */
static void fake_sysfs(void) {
  snprintf(root, sizeof root, "%s", "/tmp/c4-sysfs-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(root));
  /* a PCI NIC */
  mk("class/net/eth0/speed", "25000\n");
  mk("class/net/eth0/address", "0c:42:a1:00:00:07\n");
  device_link("eth0", "devices/pci0000:00/0000:00:01.0/0000:3b:00.0");
  /* a veth: speed -1, virtual device, all-zero MAC */
  mk("class/net/veth0/speed", "-1\n");
  mk("class/net/veth0/address", "00:00:00:00:00:00\n");
  device_link("veth0", "devices/virtual/net/veth0");
  /* a link that is down reports 0 */
  mk("class/net/eth1/speed", "0\n");
  /* a virtio-net device sits on a virtio PCI function */
  mk("class/net/ens3/speed", "100000\n");
  device_link("ens3", "devices/pci0000:00/0000:00:03.0/virtio2");
  /* a USB NIC is not a PCI device, though its host controller is */
  device_link("usb0", "devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0");
  /* an IPoIB interface: 20-byte hardware address ending in the port GUID */
  mk("class/net/ib0/address", "00:00:10:87:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:7b:0e:3e\n");
  mk("class/net/ib0/speed", "200000\n");
  /* no speed file, no device link, an address that is not one */
  mk("class/net/bond0/address", "garbage\n");
  /* speed that cannot be read: a directory where the file should be */
  mk("class/net/odd0/speed", NULL);
  mk("class/net/odd0/address", "0c:42:a1\n"); /* 3 bytes: still a hardware address */
}

static void remove_fake_sysfs(void) {
  ck_assert_int_eq(nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

START_TEST(speed_comes_from_sysfs_with_a_10g_default) {
  ck_assert_int_eq(C4_IFACE_DEFAULT_SPEED, 10000);
  ck_assert_int_eq(c4_iface_speed_mbps(root, "eth0"), 25000);
  ck_assert_int_eq(c4_iface_speed_mbps(root, "ib0"), 200000);
  ck_assert_int_eq(c4_iface_speed_mbps(root, "veth0"), 10000); /* -1 */
  ck_assert_int_eq(c4_iface_speed_mbps(root, "eth1"), 10000);  /* 0 */
  ck_assert_int_eq(c4_iface_speed_mbps(root, "bond0"), 10000); /* missing */
  ck_assert_int_eq(c4_iface_speed_mbps(root, "odd0"), 10000);  /* unreadable */
  ck_assert_int_eq(c4_iface_speed_mbps(root, "nosuch0"), 10000);
  /* the real loopback's speed file exists but reading it fails (EINVAL) */
  ck_assert_int_eq(c4_iface_speed_mbps("/sys", "lo"), 10000);
}
END_TEST

START_TEST(pci_path_is_the_pci_function_or_empty) {
  char pci[256], want[PATH_MAX], t[PATH_MAX];

  snprintf(t, sizeof t, "%s/devices/pci0000:00/0000:00:01.0/0000:3b:00.0", root);
  ck_assert_ptr_nonnull(realpath(t, want));
  ck_assert_int_eq(c4_iface_pci_path(root, "eth0", pci, sizeof pci), 0);
  ck_assert_str_eq(pci, want);

  snprintf(t, sizeof t, "%s/devices/pci0000:00/0000:00:03.0", root);
  ck_assert_ptr_nonnull(realpath(t, want));
  ck_assert_int_eq(c4_iface_pci_path(root, "ens3", pci, sizeof pci), 0);
  ck_assert_str_eq(pci, want);

  const char *not_pci[] = {"veth0", "usb0", "bond0", "nosuch0"};
  for (size_t i = 0; i < sizeof not_pci / sizeof not_pci[0]; i++) {
    strcpy(pci, "stale");
    ck_assert_int_eq(c4_iface_pci_path(root, not_pci[i], pci, sizeof pci), C4_ENOTFOUND);
    ck_assert_str_eq(pci, "");
  }

  strcpy(pci, "stale");
  ck_assert_int_eq(c4_iface_pci_path(root, "eth0", pci, 8), C4_EINVAL); /* does not fit */
  ck_assert_str_eq(pci, "");

  ck_assert_int_eq(c4_iface_pci_path("/sys", "lo", pci, sizeof pci), C4_ENOTFOUND);
  ck_assert_str_eq(pci, "");
}
END_TEST

static uint64_t fnv1a(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return h;
}

START_TEST(guid_is_the_hardware_address_or_a_name_hash) {
  ck_assert_uint_eq(c4_iface_guid(root, "eth0"), 0x0c42a1000007ull);
  ck_assert_uint_eq(c4_iface_guid(root, "ib0"), 0x0c42a103007b0e3eull); /* IPoIB port GUID */
  ck_assert_uint_eq(c4_iface_guid(root, "odd0"), 0x0c42a1ull);

  /* all-zero MAC, garbage, missing: FNV-1a of the name with bit 63 set */
  uint64_t veth = c4_iface_guid(root, "veth0");
  ck_assert_uint_eq(veth, fnv1a("veth0") | (1ull << 63));
  ck_assert_uint_eq(c4_iface_guid(root, "bond0"), fnv1a("bond0") | (1ull << 63));
  ck_assert_uint_eq(c4_iface_guid(root, "nosuch0"), fnv1a("nosuch0") | (1ull << 63));
  ck_assert_uint_ne(veth, c4_iface_guid(root, "bond0"));
  ck_assert_uint_eq(veth, c4_iface_guid(root, "veth0")); /* stable */

  ck_assert_uint_eq(c4_iface_guid("/sys", "lo"), fnv1a("lo") | (1ull << 63));
}
END_TEST

/* ---- discovery on this machine ------------------------------------------------------------- */

static char warned[4096];

__attribute__((format(printf, 5, 6))) static void
capture(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)flags, (void)file, (void)line;
  if (level != C4_LOG_WARN) return;
  size_t used = strlen(warned);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(warned + used, sizeof warned - used, fmt, ap);
  va_end(ap);
}

static void expect_only_loopback(const struct c4_iface *d, int n) {
  ck_assert_int_eq(n, 1);
  ck_assert_str_eq(d[0].name, "lo");
  ck_assert_int_eq(d[0].addr.ss_family, AF_INET);
  ck_assert_uint_eq(d[0].addrlen, sizeof(struct sockaddr_in));
  const struct sockaddr_in *in = (const struct sockaddr_in *)&d[0].addr;
  ck_assert_uint_eq(ntohl(in->sin_addr.s_addr), INADDR_LOOPBACK);
  ck_assert_uint_eq(in->sin_port, 0);
  ck_assert_int_eq(d[0].speed_mbps, C4_IFACE_DEFAULT_SPEED);
  ck_assert_str_eq(d[0].pci_path, "");
  ck_assert_uint_eq(d[0].guid, fnv1a("lo") | (1ull << 63));
}

START_TEST(c4_socket_ifname_lo_offers_exactly_loopback) {
  clear_env();
  setenv("C4_SOCKET_IFNAME", "lo", 1);
  struct c4_iface d[8];
  int n = -1;
  ck_assert_int_eq(c4_iface_discover(d, 8, &n), 0);
  expect_only_loopback(d, n);
}
END_TEST

START_TEST(c4_socket_ifname_overrides_nccl_socket_ifname) {
  clear_env();
  setenv("C4_SOCKET_IFNAME", "=lo", 1);
  setenv("NCCL_SOCKET_IFNAME", "^lo", 1);
  struct c4_iface d[8];
  int n = -1;
  ck_assert_int_eq(c4_iface_discover(d, 8, &n), 0);
  expect_only_loopback(d, n);
}
END_TEST

START_TEST(nccl_socket_ifname_is_used_when_c4s_is_unset_or_empty) {
  clear_env();
  setenv("NCCL_SOCKET_IFNAME", "=lo", 1);
  struct c4_iface d[8];
  int n = -1;
  ck_assert_int_eq(c4_iface_discover(d, 8, &n), 0);
  expect_only_loopback(d, n);
  setenv("C4_SOCKET_IFNAME", "", 1);
  n = -1;
  ck_assert_int_eq(c4_iface_discover(d, 8, &n), 0);
  expect_only_loopback(d, n);
  setenv("NCCL_SOCKET_IFNAME", "^lo", 1);
  ck_assert_int_eq(c4_iface_discover(d, 8, &n), 0);
  for (int i = 0; i < n; i++)
    ck_assert_str_ne(d[i].name, "lo");
}
END_TEST

START_TEST(a_one_character_list_counts_as_unset_as_in_nccl) {
  clear_env();
  setenv("C4_SOCKET_IFNAME", "e", 1);
  setenv("NCCL_SOCKET_IFNAME", "=lo", 1);
  warned[0] = 0;
  c4_log_set_logger(capture);
  struct c4_iface d[8];
  int n = -1;
  int rc = c4_iface_discover(d, 8, &n);
  c4_log_set_logger(NULL);
  ck_assert_int_eq(rc, 0);
  expect_only_loopback(d, n);
  ck_assert_msg(strstr(warned, "C4_SOCKET_IFNAME=\"e\" is ignored") != NULL, "warning was: %s",
                warned);
}
END_TEST

START_TEST(a_list_that_matches_nothing_gives_no_device_and_a_warning) {
  clear_env();
  setenv("C4_SOCKET_IFNAME", "nonexistent", 1);
  warned[0] = 0;
  c4_log_set_logger(capture);
  struct c4_iface d[8];
  int n = -1;
  int rc = c4_iface_discover(d, 8, &n);
  c4_log_set_logger(NULL);
  ck_assert_int_eq(rc, 0);
  ck_assert_int_eq(n, 0);
  ck_assert_msg(strstr(warned, "C4_SOCKET_IFNAME=\"nonexistent\"") != NULL, "warning was: %s",
                warned);
}
END_TEST

START_TEST(socket_family_restricts_the_address_family) {
  clear_env();
  setenv("C4_SOCKET_IFNAME", "=lo", 1);
  setenv("NCCL_SOCKET_FAMILY", "AF_INET", 1);
  struct c4_iface d[8];
  int n = -1;
  ck_assert_int_eq(c4_iface_discover(d, 8, &n), 0);
  expect_only_loopback(d, n);
  setenv("NCCL_SOCKET_FAMILY", "AF_INET6", 1); /* lo's ::1 does not count, as in NCCL */
  ck_assert_int_eq(c4_iface_discover(d, 8, &n), 0);
  ck_assert_int_eq(n, 0);
  setenv("C4_SOCKET_IFNAME", "^=lo", 1);
  ck_assert_int_eq(c4_iface_discover(d, 8, &n), 0);
  for (int i = 0; i < n; i++) {
    ck_assert_int_eq(d[i].addr.ss_family, AF_INET6);
    ck_assert_uint_eq(d[i].addrlen, sizeof(struct sockaddr_in6));
    ck_assert(!IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)&d[i].addr)->sin6_addr));
  }
}
END_TEST

START_TEST(discover_rejects_bad_arguments_and_respects_max) {
  clear_env();
  setenv("C4_DEBUG", "NONE", 1);
  struct c4_iface d[1];
  int n = -1;
  ck_assert_int_eq(c4_iface_discover(NULL, 1, &n), C4_EINVAL);
  ck_assert_int_eq(n, 0);
  ck_assert_int_eq(c4_iface_discover(d, 1, NULL), C4_EINVAL);
  ck_assert_int_eq(c4_iface_discover(d, -1, &n), C4_EINVAL);
  setenv("C4_SOCKET_IFNAME", ",,", 1); /* every interface that is up */
  ck_assert_int_eq(c4_iface_discover(d, 0, &n), 0);
  ck_assert_int_eq(n, 0);
  ck_assert_int_eq(c4_iface_discover(d, 1, &n), 0);
  ck_assert_int_eq(n, 1);
}
END_TEST

/* ---- NCCL's automatic order, in network namespaces this test builds ------------------------- */

static int host_ns = -1;

/* Moves this process into a new network namespace; false (and a skip notice) without the right. */
static bool enter_fresh_netns(void) {
  clear_env();
  if (geteuid() != 0 || system("ip -V >/dev/null 2>&1") != 0) {
    printf("skipped: needs CAP_NET_ADMIN and iproute2\n");
    return false;
  }
  host_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  ck_assert_int_ge(host_ns, 0);
  if (unshare(CLONE_NEWNET) != 0) {
    printf("skipped: needs CAP_NET_ADMIN (unshare: %s)\n", strerror(errno));
    close(host_ns);
    return false;
  }
  ck_assert_int_eq(system("ip link set lo up"), 0);
  return true;
}

static void leave_netns(void) {
  ck_assert_int_eq(setns(host_ns, CLONE_NEWNET), 0);
  close(host_ns);
}

static void sh(const char *cmd) { ck_assert_msg(system(cmd) == 0, "failed: %s", cmd); }

/* A veth pair a<->b, both up, with an address on each (NULL: none). */
static void veth(const char *a, const char *addr_a, const char *b, const char *addr_b) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "ip link add %s type veth peer name %s", a, b);
  sh(cmd);
  const char *names[2] = {a, b}, *addrs[2] = {addr_a, addr_b};
  for (int i = 0; i < 2; i++) {
    if (addrs[i]) {
      snprintf(cmd, sizeof cmd, "ip addr add %s dev %s%s", addrs[i], names[i],
               strchr(addrs[i], ':') ? " nodad" : "");
      sh(cmd);
    }
    snprintf(cmd, sizeof cmd, "ip link set %s up", names[i]);
    sh(cmd);
  }
}

/* Waits (up to 3 s) until ifname has carrier, so that getifaddrs shows it IFF_RUNNING. */
static void wait_running(const char *ifname) {
  for (int i = 0; i < 300; i++) {
    struct ifaddrs *all;
    ck_assert_int_eq(getifaddrs(&all), 0);
    bool up = false;
    for (struct ifaddrs *a = all; a; a = a->ifa_next)
      up |= strcmp(a->ifa_name, ifname) == 0 && (a->ifa_flags & IFF_RUNNING);
    freeifaddrs(all);
    if (up) return;
    nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
  }
  ck_abort_msg("%s never got carrier", ifname);
}

static int discover_names(char names[][16], struct c4_iface *d, int max) {
  int n = -1;
  ck_assert_int_eq(c4_iface_discover(d, max, &n), 0);
  for (int i = 0; i < n; i++)
    memcpy(names[i], d[i].name, 16);
  return n;
}

START_TEST(a_loopback_only_machine_offers_lo) {
  if (!enter_fresh_netns()) return;
  struct c4_iface d[8];
  int n = -1;
  ck_assert_int_eq(c4_iface_discover(d, 8, &n), 0);
  expect_only_loopback(d, n);
  leave_netns();
}
END_TEST

START_TEST(automatic_choice_skips_docker_lo_virbr_and_interfaces_without_carrier) {
  if (!enter_fresh_netns()) return;
  veth("c4t0", "198.18.0.1/30", "docker0", "198.18.0.2/30");
  veth("virbr0", "198.18.0.5/30", "c4t1", NULL); /* c4t1: no address but link-local */
  sh("ip link add c4t2 type veth peer name c4t3");
  sh("ip addr add 198.18.0.9/30 dev c4t2");
  sh("ip link set c4t2 up"); /* its peer stays down: no carrier */
  wait_running("c4t0");
  wait_running("docker0");
  wait_running("virbr0");
  char names[8][16];
  struct c4_iface d[8];
  int n = discover_names(names, d, 8);
  ck_assert_int_eq(n, 1);
  ck_assert_str_eq(names[0], "c4t0");
  ck_assert_uint_eq(ntohl(((struct sockaddr_in *)&d[0].addr)->sin_addr.s_addr), 0xc6120001);
  leave_netns();
}
END_TEST

START_TEST(automatic_choice_prefers_ib_and_takes_docker_before_lo) {
  if (!enter_fresh_netns()) return;
  veth("ib0", "198.18.0.1/30", "eth7", "198.18.0.2/30");
  wait_running("ib0");
  wait_running("eth7");
  char names[8][16];
  struct c4_iface d[8];
  int n = discover_names(names, d, 8);
  ck_assert_int_eq(n, 1);
  ck_assert_str_eq(names[0], "ib0");
  sh("ip link del ib0");
  veth("docker0", "198.18.0.5/30", "virbr0", "198.18.0.6/30");
  wait_running("docker0");
  n = discover_names(names, d, 8);
  ck_assert_int_eq(n, 1);
  ck_assert_str_eq(names[0], "docker0");
  leave_netns();
}
END_TEST

START_TEST(ipv4_comes_first_then_ipv6_only_interfaces_once_each) {
  if (!enter_fresh_netns()) return;
  veth("c4v6", "2001:2::1/64", "c4v4", "198.18.0.1/30");
  sh("ip addr add 2001:2:0:1::1/64 dev c4v4 nodad"); /* c4v4 has both: listed once, as IPv4 */
  wait_running("c4v6");
  wait_running("c4v4");
  char names[8][16];
  struct c4_iface d[8];
  int n = discover_names(names, d, 8);
  ck_assert_int_eq(n, 2);
  ck_assert_str_eq(names[0], "c4v4");
  ck_assert_int_eq(d[0].addr.ss_family, AF_INET);
  ck_assert_str_eq(names[1], "c4v6");
  ck_assert_int_eq(d[1].addr.ss_family, AF_INET6);
  ck_assert_uint_eq(d[1].addrlen, sizeof(struct sockaddr_in6));
  struct in6_addr want;
  ck_assert_int_eq(inet_pton(AF_INET6, "2001:2::1", &want), 1); /* not its fe80:: address */
  ck_assert_mem_eq(&((struct sockaddr_in6 *)&d[1].addr)->sin6_addr, &want, sizeof want);

  setenv("NCCL_SOCKET_FAMILY", "AF_INET6", 1);
  n = discover_names(names, d, 8);
  ck_assert_int_eq(n, 2); /* in getifaddrs order, which the kernel picks */
  int v4 = strcmp(names[0], "c4v4") == 0 ? 0 : 1;
  ck_assert_str_eq(names[v4], "c4v4");
  ck_assert_str_eq(names[1 - v4], "c4v6");
  ck_assert_int_eq(d[v4].addr.ss_family, AF_INET6);
  ck_assert_int_eq(inet_pton(AF_INET6, "2001:2:0:1::1", &want), 1);
  ck_assert_mem_eq(&((struct sockaddr_in6 *)&d[v4].addr)->sin6_addr, &want, sizeof want);

  setenv("NCCL_SOCKET_FAMILY", "AF_INET", 1);
  n = discover_names(names, d, 8);
  ck_assert_int_eq(n, 1);
  ck_assert_str_eq(names[0], "c4v4");
  leave_netns();
}
END_TEST

int main(void) {
  Suite *s = suite_create("iface");
  TCase *names = tcase_create("names");
  tcase_add_test(names, plain_entries_are_prefixes);
  tcase_add_test(names, any_entry_of_a_list_can_match);
  tcase_add_test(names, caret_makes_an_exclusion_list);
  tcase_add_test(names, equals_makes_entries_exact_names);
  tcase_add_test(names, caret_equals_excludes_exact_names);
  tcase_add_test(names, port_suffixes_are_ignored_as_nccl_does_for_sockets);
  tcase_add_test(names, empty_lists_follow_nccl);
  suite_add_tcase(s, names);
  TCase *sysfs = tcase_create("sysfs");
  tcase_add_unchecked_fixture(sysfs, fake_sysfs, remove_fake_sysfs); /* removed even on failure */
  tcase_add_test(sysfs, speed_comes_from_sysfs_with_a_10g_default);
  tcase_add_test(sysfs, pci_path_is_the_pci_function_or_empty);
  tcase_add_test(sysfs, guid_is_the_hardware_address_or_a_name_hash);
  suite_add_tcase(s, sysfs);
  TCase *disc = tcase_create("discover");
  tcase_add_test(disc, c4_socket_ifname_lo_offers_exactly_loopback);
  tcase_add_test(disc, c4_socket_ifname_overrides_nccl_socket_ifname);
  tcase_add_test(disc, nccl_socket_ifname_is_used_when_c4s_is_unset_or_empty);
  tcase_add_test(disc, a_one_character_list_counts_as_unset_as_in_nccl);
  tcase_add_test(disc, a_list_that_matches_nothing_gives_no_device_and_a_warning);
  tcase_add_test(disc, socket_family_restricts_the_address_family);
  tcase_add_test(disc, discover_rejects_bad_arguments_and_respects_max);
  suite_add_tcase(s, disc);
  TCase *netns = tcase_create("netns");
  tcase_set_timeout(netns, 30);
  tcase_add_test(netns, a_loopback_only_machine_offers_lo);
  tcase_add_test(netns, automatic_choice_skips_docker_lo_virbr_and_interfaces_without_carrier);
  tcase_add_test(netns, automatic_choice_prefers_ib_and_takes_docker_before_lo);
  tcase_add_test(netns, ipv4_comes_first_then_ipv6_only_interfaces_once_each);
  suite_add_tcase(s, netns);
  return c4_check_run(s);
}
