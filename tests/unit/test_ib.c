/* test_ib.c -- the verbs transport's logic without RDMA hardware: speed and HCA selection, flow
 * label <-> UDP port, LID path bits, sysfs reads (fake trees), the QP info and clear-to-send
 * codecs, the weighted split over QPs, receive-side accounting, the registration cache (fake
 * registrations), the QP attributes each planned path gives, plan fields, and loading verbs. */
#include <check.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../check_run.h"
#include "c4_err.h"
#include "ib_comm.h"
#include "ib_mr.h"
#include "ib_props.h"
#include "ib_proto.h"
#include "ib_sysfs.h"
#include "ib_transport.h"
#include "ib_verbs.h"
#include "nccl_net_abi.h"
#include "net_plan.h"

/* ---- speed, HCA lists, flow labels, LIDs ---------------------------------------------------- */

START_TEST(speed_is_lanes_times_the_lane_rate) {
  ck_assert_int_eq(c4_ib_speed_mbps(2, 32), 100000);  /* 4x EDR */
  ck_assert_int_eq(c4_ib_speed_mbps(2, 64), 200000);  /* 4x HDR */
  ck_assert_int_eq(c4_ib_speed_mbps(2, 128), 400000); /* 4x NDR */
  ck_assert_int_eq(c4_ib_speed_mbps(16, 64), 100000); /* 2x HDR */
  ck_assert_int_eq(c4_ib_speed_mbps(8, 4), 120000);   /* 12x QDR */
  ck_assert_int_eq(c4_ib_speed_mbps(4, 16), 112000);  /* 8x FDR */
  ck_assert_int_eq(c4_ib_speed_mbps(1, 1), 2500);     /* 1x SDR */
  ck_assert_int_eq(c4_ib_speed_mbps(2, 8), 40000);    /* 4x FDR10 */
  ck_assert_int_eq(c4_ib_speed_mbps(2, 256), 800000); /* 4x XDR */
}
END_TEST

START_TEST(unknown_codes_never_give_zero_speed) {
  ck_assert_int_eq(c4_ib_speed_mbps(3, 32), 25000); /* unknown width: 1x */
  ck_assert_int_eq(c4_ib_speed_mbps(2, 0), 10000);  /* unknown speed: SDR */
  ck_assert_int_eq(c4_ib_speed_mbps(0, 0), 2500);
}
END_TEST

START_TEST(hca_list_takes_prefixes_ports_exclusions_and_exact_names) {
  ck_assert(c4_ib_hca_matches("mlx5_0:1,mlx5_1", "mlx5_0", 1));
  ck_assert(!c4_ib_hca_matches("mlx5_0:1,mlx5_1", "mlx5_0", 2));
  ck_assert(c4_ib_hca_matches("mlx5_0:1,mlx5_1", "mlx5_1", 2));
  ck_assert(c4_ib_hca_matches("mlx5_0:1,mlx5_1", "mlx5_12", 1)); /* a prefix */
  ck_assert(!c4_ib_hca_matches("mlx5_0:1,mlx5_1", "mlx5_2", 1));
  ck_assert(!c4_ib_hca_matches("^mlx5_2", "mlx5_2", 1));
  ck_assert(c4_ib_hca_matches("^mlx5_2", "mlx5_0", 1));
  ck_assert(!c4_ib_hca_matches("^mlx5_2:1", "mlx5_2", 1));
  ck_assert(c4_ib_hca_matches("^mlx5_2:1", "mlx5_2", 2));
  ck_assert(c4_ib_hca_matches("=mlx5_0", "mlx5_0", 1));
  ck_assert(!c4_ib_hca_matches("=mlx5_0", "mlx5_01", 1));
  ck_assert(!c4_ib_hca_matches("^=mlx5_0", "mlx5_0", 1));
  ck_assert(c4_ib_hca_matches("^=mlx5_0", "mlx5_01", 1));
  ck_assert(c4_ib_hca_matches("mlx5", "mlx5_7", 1));
  ck_assert(!c4_ib_hca_matches("mlx5_0:x", "mlx5_0", 1)); /* a port that is not a number */
}
END_TEST

START_TEST(empty_hca_lists_pass_everything_and_their_caret_form_nothing) {
  ck_assert(c4_ib_hca_matches(NULL, "mlx5_0", 1));
  ck_assert(c4_ib_hca_matches("", "mlx5_0", 1));
  ck_assert(c4_ib_hca_matches(",", "mlx5_0", 1));
  ck_assert(c4_ib_hca_matches("=", "mlx5_0", 1));
  ck_assert(!c4_ib_hca_matches("^", "mlx5_0", 1));
  ck_assert(c4_ib_hca_matches("ib,,mlx5_0,", "mlx5_0", 1));
}
END_TEST

START_TEST(flow_label_gives_rdma_cores_udp_source_port) {
  ck_assert_uint_eq(c4_ib_flow_label_to_sport(0), 0xc000);
  ck_assert_uint_eq(c4_ib_flow_label_to_sport(8), 0xc008);
  ck_assert_uint_eq(c4_ib_flow_label_to_sport(0x3fff), 0xffff);
  ck_assert_uint_eq(c4_ib_flow_label_to_sport(0x4000), 0xc001); /* high bits fold into low */
  ck_assert_uint_eq(c4_ib_flow_label_to_sport(0xfffff), 0xffc0);
  ck_assert_uint_eq(c4_ib_flow_label_to_sport(0x1fffff), 0xffc0); /* only 20 bits count */
  for (uint32_t fl = 0; fl < 0x100000; fl += 977)
    ck_assert_uint_ge(c4_ib_flow_label_to_sport(fl), 0xc000);
}
END_TEST

START_TEST(every_port_from_49152_has_a_flow_label_that_maps_back) {
  for (uint32_t p = 0xc000; p <= 0xffff; p++) {
    int32_t fl = c4_ib_sport_to_flow_label((uint16_t)p);
    ck_assert_int_ge(fl, 0);
    ck_assert_int_lt(fl, 0x4000);
    ck_assert_uint_eq(c4_ib_flow_label_to_sport((uint32_t)fl), p);
  }
  ck_assert_int_eq(c4_ib_sport_to_flow_label(49151), -1);
  ck_assert_int_eq(c4_ib_sport_to_flow_label(4791), -1);
}
END_TEST

START_TEST(path_bits_pick_a_lid_under_the_lmc) {
  bool ok;
  ck_assert_uint_eq(c4_ib_dlid(0x10, 2, 3, &ok), 0x13);
  ck_assert(ok);
  ck_assert_uint_eq(c4_ib_dlid(0x10, 2, 4, &ok), 0x10); /* beyond 2^lmc */
  ck_assert(!ok);
  ck_assert_uint_eq(c4_ib_dlid(0x10, 0, 1, &ok), 0x10);
  ck_assert(!ok);
  ck_assert_uint_eq(c4_ib_dlid(0x10, 3, -1, &ok), 0x10); /* not planned */
  ck_assert(!ok);
  ck_assert_uint_eq(c4_ib_dlid(0x40, 7, 127, NULL), 0x40 + 127);
}
END_TEST

/* ---- sysfs ------------------------------------------------------------------------------------
 */

static char root[] = "/tmp/c4-test-ib-XXXXXX";

static void put_file(const char *rel, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  for (char *p = path + strlen(root) + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      mkdir(path, 0755);
      *p = '/';
    }
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
}

static void fake_sysfs(void) { ck_assert_ptr_nonnull(mkdtemp(root)); }

static int rm_one(const char *p, const struct stat *s, int flag, struct FTW *f) {
  (void)s, (void)flag, (void)f;
  return remove(p);
}

static void remove_fake_sysfs(void) { nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

#define GID_LL "fe80:0000:0000:0000:0e42:a1ff:fe00:0001\n"
#define GID_V4 "0000:0000:0000:0000:0000:ffff:c612:0001\n" /* ::ffff:198.18.0.1 */
#define GID_V6 "2001:0db8:0000:0000:0000:0000:0000:0001\n"

static void gid(const char *dev, int i, const char *text, const char *type) {
  char rel[256];
  snprintf(rel, sizeof rel, "class/infiniband/%s/ports/1/gids/%d", dev, i);
  put_file(rel, text);
  if (!type) return;
  snprintf(rel, sizeof rel, "class/infiniband/%s/ports/1/gid_attrs/types/%d", dev, i);
  put_file(rel, type);
}

START_TEST(pci_path_is_the_resolved_device_link) {
  put_file("devices/pci0000:00/0000:3b:00.0/vendor", "0x15b3\n");
  put_file("class/infiniband/mlx5_0/node_type", "1: CA\n");
  char link[512], want[600], out[512];
  snprintf(link, sizeof link, "%s/class/infiniband/mlx5_0/device", root);
  ck_assert_int_eq(symlink("../../../devices/pci0000:00/0000:3b:00.0", link), 0);
  ck_assert_int_eq(c4_ib_pci_path(root, "mlx5_0", out, sizeof out), 0);
  snprintf(want, sizeof want, "/devices/pci0000:00/0000:3b:00.0");
  ck_assert_str_eq(out + strlen(out) - strlen(want), want);
  ck_assert_int_eq(c4_ib_pci_path(root, "mlx5_9", out, sizeof out), C4_ENOTFOUND);
  ck_assert_str_eq(out, "");
  ck_assert_int_eq(c4_ib_pci_path(root, "mlx5_0", out, 8), C4_EINVAL);
}
END_TEST

START_TEST(gid_choice_prefers_roce_v2_ipv4_mapped) {
  gid("mlx5_0", 0, GID_LL, "IB/RoCE v1\n");
  gid("mlx5_0", 1, GID_LL, "RoCE v2\n");
  gid("mlx5_0", 2, GID_V4, "IB/RoCE v1\n");
  gid("mlx5_0", 3, GID_V6, "RoCE v2\n");
  gid("mlx5_0", 4, GID_V4, "RoCE v2\n");
  gid("mlx5_0", 5, "0000:0000:0000:0000:0000:0000:0000:0000\n", NULL); /* unused: no type */
  int idx = -1;
  ck_assert_int_eq(c4_ib_gid_pick(root, "mlx5_0", 1, 8, -1, &idx), 0);
  ck_assert_int_eq(idx, 4);
  ck_assert_int_eq(c4_ib_gid_pick(root, "mlx5_0", 1, 4, -1, &idx), 0); /* 4 beyond the table */
  ck_assert_int_eq(idx, 3); /* a global IPv6 RoCE v2 GID is the fallback */
  ck_assert_int_eq(c4_ib_gid_pick(root, "mlx5_0", 1, 3, -1, &idx), C4_ENOTFOUND);
  ck_assert_int_eq(c4_ib_gid_pick(root, "mlx5_0", 1, 8, 2, &idx), 0); /* NCCL_IB_GID_INDEX */
  ck_assert_int_eq(idx, 2);
  ck_assert_int_eq(c4_ib_gid_pick(root, "mlx5_0", 1, 8, 8, &idx), C4_EINVAL);
  ck_assert_int_eq(c4_ib_gid_pick(root, "mlx5_7", 1, 8, -1, &idx), C4_ENOTFOUND);
}
END_TEST

START_TEST(gid_text_parses_strictly) {
  uint8_t g[16];
  ck_assert_int_eq(c4_ib_gid_parse("0000:0000:0000:0000:0000:ffff:c612:0001", g), 0);
  ck_assert_uint_eq(g[10], 0xff);
  ck_assert_uint_eq(g[12], 0xc6);
  ck_assert_uint_eq(g[15], 0x01);
  ck_assert_int_eq(c4_ib_gid_parse("FE80:0000:0000:0000:0E42:A1FF:FE00:0001", g), 0);
  ck_assert_uint_eq(g[0], 0xfe);
  ck_assert_int_eq(c4_ib_gid_parse("0000:0000:0000:0000:0000:ffff:c612", g), C4_EINVAL);
  ck_assert_int_eq(c4_ib_gid_parse("0000:0000:0000:0000:0000:ffff:c612:0001:", g), C4_EINVAL);
  ck_assert_int_eq(c4_ib_gid_parse("0000-0000:0000:0000:0000:ffff:c612:0001", g), C4_EINVAL);
  ck_assert_int_eq(c4_ib_gid_parse("000g:0000:0000:0000:0000:ffff:c612:0001", g), C4_EINVAL);
  ck_assert_int_eq(c4_ib_gid_parse("", g), C4_EINVAL);
}
END_TEST

START_TEST(peer_memory_modules_are_found_in_sysfs_or_proc_modules) {
  char mods[600];
  snprintf(mods, sizeof mods, "%s/proc_modules", root);
  put_file("proc_modules", "nvidia_uvm 1 0 - Live\nnvidia_peermemx 1 0 - Live\n");
  ck_assert_int_eq(c4_ib_peermem_loaded(root, mods), 0);
  ck_assert_int_eq(c4_ib_peermem_loaded(root, NULL), 0);
  put_file("proc_modules", "nvidia_uvm 1 0 - Live\nnv_peer_mem 16384 0 - Live\n");
  ck_assert_int_eq(c4_ib_peermem_loaded(root, mods), 1);
  put_file("proc_modules", "nvidia_peermem 16384 0 - Live\n");
  ck_assert_int_eq(c4_ib_peermem_loaded(root, mods), 1);
  put_file("proc_modules", "\n");
  ck_assert_int_eq(c4_ib_peermem_loaded(root, mods), 0);
  put_file("module/nvidia_peermem/version", "1.0\n");
  ck_assert_int_eq(c4_ib_peermem_loaded(root, mods), 1);
}
END_TEST

START_TEST(nv_mem_memory_peer_counts_as_peer_memory) {
  put_file("kernel/mm/memory_peers/nv_mem/version", "1.3\n");
  ck_assert_int_eq(c4_ib_peermem_loaded(root, NULL), 1);
}
END_TEST

START_TEST(gpu_pointers_only_when_gpudirect_checks_pass) {
  ck_assert_int_eq(c4_ib_ptr_support(1, 0, 0), NCCL_PTR_HOST);
  ck_assert_int_eq(c4_ib_ptr_support(1, 1, 0), NCCL_PTR_HOST | NCCL_PTR_CUDA);
  ck_assert_int_eq(c4_ib_ptr_support(1, 0, 1), NCCL_PTR_HOST | NCCL_PTR_CUDA | NCCL_PTR_DMABUF);
  ck_assert_int_eq(c4_ib_ptr_support(0, 1, 1), NCCL_PTR_HOST); /* C4_IB_GDR=0 */
}
END_TEST

/* ---- QP info and clear-to-send ------------------------------------------------------------- */

static struct c4_ib_qpinfo sample_info(int nqps) {
  struct c4_ib_qpinfo q = {.nqps = (uint16_t)nqps,
                           .lid = 0x21,
                           .lmc = 2,
                           .link_layer = C4_IB_LINK_IB,
                           .mtu = 5,
                           .fifo_addr = 0x7f0012345000ull,
                           .fifo_rkey = 0xabcd};
  for (int i = 0; i < 16; i++)
    q.gid[i] = (uint8_t)(0xa0 + i);
  for (int i = 0; i < nqps; i++)
    q.qp[i] = (struct c4_ib_qp_addr){.qpn = 0x100 + (uint32_t)i, .psn = 0xffff00 + (uint32_t)i};
  return q;
}

START_TEST(qp_info_round_trips) {
  for (int n = 1; n <= C4_IB_MAX_QPS; n++) {
    struct c4_ib_qpinfo q = sample_info(n), back;
    uint8_t buf[C4_IB_QPINFO_SIZE];
    char err[160] = "";
    c4_ib_qpinfo_put(buf, &q);
    ck_assert_int_eq(c4_ib_qpinfo_get(buf, &back, err, sizeof err), 0);
    ck_assert_mem_eq(&q, &back, sizeof q);
  }
}
END_TEST

START_TEST(qp_info_decoder_rejects_what_it_does_not_understand) {
  struct c4_ib_qpinfo q = sample_info(2), back;
  uint8_t good[C4_IB_QPINFO_SIZE], buf[C4_IB_QPINFO_SIZE];
  char err[160];
  c4_ib_qpinfo_put(good, &q);
  struct {
    int at;
    uint8_t value;
    const char *says;
  } cases[] = {
      {0, 0x00, "magic"},     {4, 2, "version"},     {6, 0, "nqps"},           {6, 17, "nqps"},
      {10, 8, "lmc"},         {11, 3, "link layer"}, {12, 0, "MTU"},           {12, 6, "MTU"},
      {13, 1, "reserved"},    {44, 1, "reserved"},   {48 + 16, 1, "reserved"}, /* QP 2 of 2 must be
                                                                                  empty */
      {48 + 3, 1, "number"},  /* QP 0's number above 24 bits */
      {48 + 8 + 7, 1, "PSN"}, /* QP 1's PSN above 24 bits */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    memcpy(buf, good, sizeof buf);
    buf[cases[i].at] = cases[i].value;
    err[0] = '\0';
    ck_assert_int_eq(c4_ib_qpinfo_get(buf, &back, err, sizeof err), C4_EPROTO);
    ck_assert_msg(strstr(err, cases[i].says), "case %zu: \"%s\" lacks \"%s\"", i, err,
                  cases[i].says);
  }
  memcpy(buf, good, sizeof buf);
  buf[48] = 1, buf[49] = 0, buf[50] = 0; /* QP number 1: a special QP, never an RC QP */
  ck_assert_int_eq(c4_ib_qpinfo_get(buf, &back, err, sizeof err), C4_EPROTO);
}
END_TEST

START_TEST(cts_entry_round_trips_for_its_own_message_only) {
  struct c4_ib_cts in = {.addr = 0x7f00deadbe00ull,
                         .rkey = 77,
                         .tag = -3,
                         .size = 1 << 20,
                         .seq = 40},
                   out;
  uint8_t e[C4_IB_CTS_SIZE];
  c4_ib_cts_put(e, &in);
  ck_assert_int_eq(c4_ib_cts_get(e, 40, &out), 0);
  ck_assert_mem_eq(&in, &out, sizeof in);
  ck_assert_int_eq(c4_ib_cts_get(e, 41, &out), C4_EAGAIN); /* an older message's entry */
  ck_assert_int_eq(c4_ib_cts_get(e, 72, &out), C4_EAGAIN); /* slot reused 32 later */
  ck_assert_int_eq(c4_ib_cts_get(e, 39, &out), C4_EPROTO); /* from the future */
  memset(e, 0, sizeof e);
  ck_assert_int_eq(c4_ib_cts_get(e, 0, &out), C4_EAGAIN); /* never written */
}
END_TEST

START_TEST(cts_match_checks_tag_then_size) {
  struct c4_ib_cts cts = {.tag = 5, .size = 4096};
  ck_assert_int_eq(c4_ib_cts_match(&cts, 5, 4096), 0);
  ck_assert_int_eq(c4_ib_cts_match(&cts, 5, 0), 0);
  ck_assert_int_eq(c4_ib_cts_match(&cts, 5, 4097), C4_ETRUNC);
  ck_assert_int_eq(c4_ib_cts_match(&cts, 6, 10), C4_EPROTO);
}
END_TEST

/* The clear-to-send protocol between a fake receiver (writes FIFO entries as irecv does) and a
 * fake sender (polls its entry as isend does): a send never starts before its receive is posted,
 * and every message gets its own receive's address, across many wraps of the 32 slots. */
START_TEST(isend_waits_for_its_receive_across_slot_wraps) {
  uint8_t fifo[C4_IB_SLOTS][C4_IB_CTS_SIZE];
  memset(fifo, 0, sizeof fifo);
  uint64_t posted = 0, sent = 0;
  unsigned rng = 12345;
  while (sent < 1000) {
    rng = rng * 1103515245u + 12345u;
    int receiver_turn = (rng >> 16) & 1;
    if (receiver_turn && posted < sent + C4_IB_SLOTS && posted < 1000) {
      struct c4_ib_cts c = {
          .addr = 0x1000 * (posted + 1), .rkey = 9, .tag = 1, .size = 64, .seq = posted};
      c4_ib_cts_put(fifo[posted % C4_IB_SLOTS], &c);
      posted++;
      continue;
    }
    struct c4_ib_cts c;
    int rc = c4_ib_cts_get(fifo[sent % C4_IB_SLOTS], sent, &c);
    if (sent < posted) {
      ck_assert_int_eq(rc, 0);
      ck_assert_uint_eq(c.addr, 0x1000 * (sent + 1));
      ck_assert_int_eq(c4_ib_cts_match(&c, 1, 64), 0);
      sent++;
    } else {
      ck_assert_int_eq(rc, C4_EAGAIN); /* isend returns no request */
    }
  }
}
END_TEST

/* ---- the split over QPs ---------------------------------------------------------------------- */

static uint64_t sum(const uint64_t *len, int n) {
  uint64_t s = 0;
  for (int i = 0; i < n; i++)
    s += len[i];
  return s;
}

START_TEST(split_honours_the_weights) {
  uint64_t len[4];
  double w[] = {1, 3};
  ck_assert_int_eq(c4_ib_sched_split(4 << 20, 2, w, 64 << 10, len), 2);
  ck_assert_uint_eq(len[0], 1 << 20);
  ck_assert_uint_eq(len[1], 3 << 20);
  double w4[] = {0.5, 1, 0.25, 0.25};
  ck_assert_int_eq(c4_ib_sched_split(8 << 20, 4, w4, 64 << 10, len), 4);
  ck_assert_uint_eq(len[0], 2 << 20);
  ck_assert_uint_eq(len[1], 4 << 20);
  ck_assert_uint_eq(len[2], 1 << 20);
  ck_assert_uint_eq(len[3], 1 << 20);
}
END_TEST

START_TEST(split_is_proportional_for_any_weights_and_always_adds_up) {
  unsigned rng = 99;
  for (int t = 0; t < 2000; t++) {
    int n = 1 + (int)((rng = rng * 1103515245u + 12345u) >> 16) % C4_IB_MAX_QPS;
    double w[C4_IB_MAX_QPS], total = 0;
    for (int i = 0; i < n; i++) {
      rng = rng * 1103515245u + 12345u;
      w[i] = 0.03125 + (double)((rng >> 16) % 1000) / 1000.0;
      total += w[i];
    }
    rng = rng * 1103515245u + 12345u;
    uint64_t size = (uint64_t)(rng >> 4) % (256u << 20);
    uint64_t len[C4_IB_MAX_QPS];
    int carrying = c4_ib_sched_split(size, n, w, 4096, len);
    ck_assert_uint_eq(sum(len, n), size);
    ck_assert_int_le(carrying, n);
    if (size < (uint64_t)n * 4096 * 64) continue; /* small messages use fewer QPs */
    int heaviest = 0;
    for (int i = 1; i < n; i++)
      if (w[i] > w[heaviest]) heaviest = i;
    for (int i = 0; i < n; i++) {
      double want = (double)size * w[i] / total;
      double slack = C4_IB_SCHED_ALIGN + (i == heaviest ? (double)n * C4_IB_SCHED_ALIGN : 0);
      ck_assert_msg(fabs((double)len[i] - want) <= slack, "QP %d of %d: %llu bytes, want %.0f", i,
                    n, (unsigned long long)len[i], want);
      if (i != heaviest) ck_assert_uint_eq(len[i] % C4_IB_SCHED_ALIGN, 0);
    }
  }
}
END_TEST

START_TEST(split_treats_bad_weights_as_zero_and_all_zero_as_equal) {
  uint64_t len[3];
  double w[] = {1, 0, 1};
  c4_ib_sched_split(2 << 20, 3, w, 4096, len);
  ck_assert_uint_eq(len[0], 1 << 20);
  ck_assert_uint_eq(len[1], 0);
  ck_assert_uint_eq(len[2], 1 << 20);
  double bad[] = {NAN, -1, INFINITY};
  c4_ib_sched_split(3 << 20, 3, bad, 4096, len);
  ck_assert_uint_eq(len[0], 1 << 20);
  ck_assert_uint_eq(len[1], 1 << 20);
  ck_assert_uint_eq(len[2], 1 << 20);
  c4_ib_sched_split(3 << 20, 3, NULL, 4096, len); /* no weights: equal */
  ck_assert_uint_eq(len[1], 1 << 20);
}
END_TEST

START_TEST(small_messages_go_on_the_heaviest_qps_only) {
  uint64_t len[4];
  double w[] = {0.5, 1, 0.25, 0.75};
  ck_assert_int_eq(c4_ib_sched_split(1000, 4, w, 65536, len), 1);
  ck_assert_uint_eq(len[1], 1000);
  ck_assert_int_eq(c4_ib_sched_split(2 * 65536, 4, w, 65536, len), 2);
  ck_assert_uint_eq(len[0] + len[2], 0);
  ck_assert_uint_eq(len[1] + len[3], 2 * 65536);
  ck_assert_uint_gt(len[1], len[3]);
  ck_assert_int_eq(c4_ib_sched_split(0, 4, w, 65536, len), 0);
  ck_assert_uint_eq(sum(len, 4), 0);
}
END_TEST

/* ---- receive accounting ---------------------------------------------------------------------- */

START_TEST(receiver_completes_a_message_once_every_qp_reported) {
  struct c4_ib_rx rx = {.nqps = 2};
  struct c4_ib_rx_msg m[2] = {{0}};
  uint64_t seq;
  /* message 0: 100 bytes on QP 0, 50 on QP 1; message 1: 0 + 10; QP 1 runs ahead */
  ck_assert_int_eq(c4_ib_rx_on_imm(&rx, 1, 50, 2, &seq), 0);
  ck_assert_uint_eq(seq, 0);
  ck_assert_int_eq(c4_ib_rx_msg_add(&m[seq], 50, 2, 200), 0);
  ck_assert_int_eq(c4_ib_rx_on_imm(&rx, 1, 10, 2, &seq), 0);
  ck_assert_uint_eq(seq, 1);
  ck_assert_int_eq(c4_ib_rx_msg_add(&m[seq], 10, 2, 200), 0);
  ck_assert_int_eq(c4_ib_rx_on_imm(&rx, 0, 100, 2, &seq), 0);
  ck_assert_uint_eq(seq, 0);
  ck_assert_int_eq(c4_ib_rx_msg_add(&m[seq], 100, 2, 200), 1);
  ck_assert_uint_eq(m[0].bytes, 150);
  ck_assert_int_eq(c4_ib_rx_on_imm(&rx, 0, 0, 2, &seq), 0);
  ck_assert_int_eq(c4_ib_rx_msg_add(&m[seq], 0, 2, 200), 1);
  ck_assert_uint_eq(m[1].bytes, 10);
}
END_TEST

START_TEST(receiver_rejects_writes_it_did_not_clear_and_refusals) {
  struct c4_ib_rx rx = {.nqps = 2};
  uint64_t seq;
  ck_assert_int_eq(c4_ib_rx_on_imm(&rx, 0, 8, 0, &seq), C4_EPROTO); /* nothing posted */
  ck_assert_int_eq(c4_ib_rx_on_imm(&rx, 2, 8, 9, &seq), C4_EPROTO); /* no such QP */
  ck_assert_int_eq(c4_ib_rx_on_imm(&rx, 1, C4_IB_IMM_ERR, 9, &seq), C4_EREMOTE);
  ck_assert_int_eq(c4_ib_rx_on_imm(&rx, 1, C4_IB_MAX_MSG + 1, 9, &seq), C4_EPROTO);
  struct c4_ib_rx_msg m = {0};
  ck_assert_int_eq(c4_ib_rx_msg_add(&m, 150, 2, 100), C4_ETRUNC);
}
END_TEST

/* ---- the registration cache on fake registrations ------------------------------------------- */

struct fake_reg {
  int regs, deregs, fail_next;
  uintptr_t last_addr;
  size_t last_len;
};

static int fake_reg(void *ctx, void *addr, size_t len, int type, int fd, uint64_t off, void **mr,
                    uint32_t *lkey, uint32_t *rkey) {
  (void)type, (void)fd, (void)off;
  struct fake_reg *f = ctx;
  if (f->fail_next) {
    f->fail_next = 0;
    return C4_ESYS;
  }
  f->regs++;
  f->last_addr = (uintptr_t)addr;
  f->last_len = len;
  *mr = malloc(1);
  *lkey = (uint32_t)f->regs;
  *rkey = (uint32_t)f->regs + 1000;
  return 0;
}

static void fake_dereg(void *ctx, void *mr) {
  ((struct fake_reg *)ctx)->deregs++;
  free(mr);
}

static void cache_new(struct c4_ib_mr_cache *c, struct fake_reg *f, int max, int keep) {
  memset(f, 0, sizeof *f);
  struct c4_ib_mr_ops ops = {.reg = fake_reg, .dereg = fake_dereg, .ctx = f};
  ck_assert_int_eq(c4_ib_mr_cache_init(c, &ops, 4096, max, keep), 0);
}

START_TEST(registrations_cover_whole_pages_and_are_shared) {
  struct c4_ib_mr_cache c;
  struct fake_reg f;
  cache_new(&c, &f, 8, 0);
  struct c4_ib_mr *a, *b, *d;
  ck_assert_int_eq(c4_ib_mr_get(&c, (void *)0x101001, 10, NCCL_PTR_HOST, -1, 0, &a), 0);
  ck_assert_uint_eq(f.last_addr, 0x101000);
  ck_assert_uint_eq(f.last_len, 4096);
  ck_assert_int_eq(c4_ib_mr_get(&c, (void *)0x101800, 100, NCCL_PTR_HOST, -1, 0, &b), 0);
  ck_assert_ptr_eq(a, b); /* inside: shared */
  ck_assert_int_eq(a->refs, 2);
  ck_assert_int_eq(f.regs, 1);
  ck_assert_int_eq(c4_ib_mr_get(&c, (void *)0x101f00, 0x200, NCCL_PTR_HOST, -1, 0, &d), 0);
  ck_assert_ptr_ne(d, a); /* crosses the page: a new range */
  ck_assert_uint_eq(d->start, 0x101000);
  ck_assert_uint_eq(d->end, 0x103000);
  ck_assert_int_eq(c4_ib_mr_get(&c, (void *)0x101001, 10, NCCL_PTR_CUDA, -1, 0, &b), 0);
  ck_assert_ptr_ne(b, a); /* another memory type is never shared */
  ck_assert_int_eq(f.regs, 3);
  c4_ib_mr_put(&c, a);
  ck_assert_int_eq(f.deregs, 0); /* still used once */
  c4_ib_mr_put(&c, a);
  ck_assert_int_eq(f.deregs, 1); /* keep 0: deregistered when unused, as NCCL does */
  c4_ib_mr_cache_destroy(&c);
  ck_assert_int_eq(f.deregs, 3);
}
END_TEST

START_TEST(unused_registrations_are_kept_up_to_the_bound_lru_first) {
  struct c4_ib_mr_cache c;
  struct fake_reg f;
  cache_new(&c, &f, 8, 2);
  struct c4_ib_mr *m[3];
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(
        c4_ib_mr_get(&c, (void *)(uintptr_t)(0x10000 * (i + 1)), 4096, 1, -1, 0, &m[i]), 0);
  uintptr_t first = m[0]->start;
  c4_ib_mr_put(&c, m[0]);
  c4_ib_mr_put(&c, m[1]);
  ck_assert_int_eq(f.deregs, 0); /* two unused: kept */
  c4_ib_mr_put(&c, m[2]);
  ck_assert_int_eq(f.deregs, 1); /* three unused: the least recently used goes */
  struct c4_ib_mr *again;
  ck_assert_int_eq(c4_ib_mr_get(&c, (void *)0x20000, 100, 1, -1, 0, &again), 0);
  ck_assert_int_eq(f.regs, 3); /* m[1] was kept: reused, no new registration */
  ck_assert_int_eq(c4_ib_mr_get(&c, (void *)first, 100, 1, -1, 0, &again), 0);
  ck_assert_int_eq(f.regs, 4); /* m[0] was evicted: registered again */
  c4_ib_mr_cache_destroy(&c);
  ck_assert_int_eq(f.deregs, f.regs);
}
END_TEST

START_TEST(cache_is_bounded_and_evicts_only_unused_registrations) {
  struct c4_ib_mr_cache c;
  struct fake_reg f;
  cache_new(&c, &f, 2, 2);
  struct c4_ib_mr *a, *b, *x;
  ck_assert_int_eq(c4_ib_mr_get(&c, (void *)0x10000, 1, 1, -1, 0, &a), 0);
  ck_assert_int_eq(c4_ib_mr_get(&c, (void *)0x20000, 1, 1, -1, 0, &b), 0);
  ck_assert_int_eq(c4_ib_mr_get(&c, (void *)0x30000, 1, 1, -1, 0, &x), C4_ENOMEM);
  c4_ib_mr_put(&c, a);
  ck_assert_int_eq(c4_ib_mr_get(&c, (void *)0x30000, 1, 1, -1, 0, &x), 0);
  ck_assert_int_eq(f.deregs, 1); /* a made room */
  ck_assert_int_eq(b->refs, 1);
  f.fail_next = 1;
  c4_ib_mr_put(&c, x);
  ck_assert_int_eq(c4_ib_mr_get(&c, (void *)0x40000, 1, 1, -1, 0, &x), C4_ESYS);
  c4_ib_mr_cache_destroy(&c);
  ck_assert_int_eq(f.deregs, f.regs);
}
END_TEST

START_TEST(dmabuf_registrations_are_never_shared) {
  struct c4_ib_mr_cache c;
  struct fake_reg f;
  cache_new(&c, &f, 8, 4);
  struct c4_ib_mr *a, *b;
  ck_assert_int_eq(c4_ib_mr_get(&c, (void *)0x10000, 4096, NCCL_PTR_CUDA, 7, 0, &a), 0);
  ck_assert_int_eq(c4_ib_mr_get(&c, (void *)0x10000, 4096, NCCL_PTR_CUDA, 7, 0, &b), 0);
  ck_assert_ptr_ne(a, b);
  ck_assert_int_eq(c4_ib_mr_get(&c, (void *)0x10000, 4096, NCCL_PTR_CUDA, -1, 0, &b), 0);
  ck_assert_int_eq(f.regs, 3);
  c4_ib_mr_put(&c, a);
  ck_assert_int_eq(f.deregs, 1); /* dropped at once, whatever keep_unused says */
  c4_ib_mr_cache_destroy(&c);
}
END_TEST

/* ---- QP attributes from the plan ------------------------------------------------------------ */

static const struct c4_ib_local roce = {.port = 1,
                                        .link_layer = C4_IB_LINK_ETH,
                                        .mtu = 5,
                                        .gid_index = 3,
                                        .sl = 2,
                                        .tc = 106,
                                        .timeout = 20,
                                        .retry_cnt = 7};
static const struct c4_ib_local infiniband = {.port = 2,
                                              .link_layer = C4_IB_LINK_IB,
                                              .mtu = 4,
                                              .gid_index = 0,
                                              .sl = 1,
                                              .timeout = 18,
                                              .retry_cnt = 6};

START_TEST(each_roce_qp_takes_its_planned_flow_label) {
  struct c4_ib_qpinfo remote = sample_info(3);
  remote.link_layer = C4_IB_LINK_ETH;
  remote.mtu = 3;
  struct c4_netplan_bind plan[2] = {{.flow_label = 8, .sl = -1, .path_bits = -1},
                                    {.flow_label = 0x1234, .sl = 5, .path_bits = -1}};
  struct ibv_qp_attr a;
  int mask;
  for (int q = 0; q < 3; q++) {
    c4_ib_rtr_attr(&roce, &remote, q, q < 2 ? &plan[q] : NULL, &a, &mask);
    ck_assert_int_eq(a.qp_state, IBV_QPS_RTR);
    ck_assert_int_eq(a.path_mtu, 3); /* the smaller MTU */
    ck_assert_uint_eq(a.dest_qp_num, remote.qp[q].qpn);
    ck_assert_uint_eq(a.rq_psn, remote.qp[q].psn);
    ck_assert_int_eq(a.ah_attr.is_global, 1);
    ck_assert_mem_eq(a.ah_attr.grh.dgid.raw, remote.gid, 16);
    ck_assert_int_eq(a.ah_attr.grh.sgid_index, 3);
    ck_assert_int_eq(a.ah_attr.grh.traffic_class, 106);
    ck_assert_int_eq(a.ah_attr.port_num, 1);
    ck_assert(mask & IBV_QP_AV);
  }
  c4_ib_rtr_attr(&roce, &remote, 0, &plan[0], &a, &mask);
  ck_assert_uint_eq(a.ah_attr.grh.flow_label, 8);
  ck_assert_uint_eq(c4_ib_flow_label_to_sport(a.ah_attr.grh.flow_label), 0xc008);
  ck_assert_int_eq(a.ah_attr.sl, 2); /* none planned: the configured SL */
  c4_ib_rtr_attr(&roce, &remote, 1, &plan[1], &a, &mask);
  ck_assert_uint_eq(a.ah_attr.grh.flow_label, 0x1234);
  ck_assert_int_eq(a.ah_attr.sl, 5);
  c4_ib_rtr_attr(&roce, &remote, 2, NULL, &a, &mask);
  ck_assert_uint_eq(a.ah_attr.grh.flow_label, 0);
}
END_TEST

START_TEST(each_infiniband_qp_takes_its_planned_lid_and_sl) {
  struct c4_ib_qpinfo remote = sample_info(2); /* lid 0x21, lmc 2 */
  struct c4_netplan_bind plan[2] = {{.flow_label = -1, .sl = 3, .path_bits = 2},
                                    {.flow_label = -1, .sl = -1, .path_bits = 9}};
  struct ibv_qp_attr a;
  int mask;
  c4_ib_rtr_attr(&infiniband, &remote, 0, &plan[0], &a, &mask);
  ck_assert_int_eq(a.ah_attr.is_global, 0);
  ck_assert_uint_eq(a.ah_attr.dlid, 0x23);
  ck_assert_int_eq(a.ah_attr.sl, 3);
  ck_assert_int_eq(a.path_mtu, 4);
  ck_assert_int_eq(a.ah_attr.port_num, 2);
  c4_ib_rtr_attr(&infiniband, &remote, 1, &plan[1], &a, &mask);
  ck_assert_uint_eq(a.ah_attr.dlid, 0x21); /* 9 is beyond the remote's LMC: base LID */
  ck_assert_int_eq(a.ah_attr.sl, 1);
  c4_ib_rts_attr(&infiniband, 0xabcdef, &a, &mask);
  ck_assert_int_eq(a.qp_state, IBV_QPS_RTS);
  ck_assert_uint_eq(a.sq_psn, 0xabcdef);
  ck_assert_int_eq(a.timeout, 18);
  ck_assert_int_eq(a.retry_cnt, 6);
  ck_assert(mask & IBV_QP_SQ_PSN);
}
END_TEST

START_TEST(plan_flows_carry_flow_label_sl_and_path_bits) {
  const char *doc = "{\"v\":1,\"flows\":[{\"src\":\"h0\",\"dst\":\"h1\",\"flow_label\":8,"
                    "\"sl\":3,\"path_bits\":1},{\"src\":\"h0\",\"dst\":\"h1\",\"flow_label\":null},"
                    "{\"src\":\"h0\",\"dst\":\"h1\",\"src_port\":49160}]}";
  struct c4_netplan *p;
  char err[200];
  ck_assert_int_eq(c4_netplan_parse(doc, strlen(doc), &p, err, sizeof err), 0);
  const struct c4_netplan_pair *pair = c4_netplan_find(p, "h0", "h1");
  ck_assert_ptr_nonnull(pair);
  ck_assert_int_eq(pair->nbinds, 3);
  ck_assert_int_eq(pair->binds[0].flow_label, 8);
  ck_assert_int_eq(pair->binds[0].sl, 3);
  ck_assert_int_eq(pair->binds[0].path_bits, 1);
  ck_assert_int_eq(pair->binds[1].flow_label, -1);
  ck_assert_int_eq(pair->binds[2].flow_label, -1);
  ck_assert_int_eq(pair->binds[2].sl, -1);
  ck_assert_int_eq(pair->binds[2].path_bits, -1);
  c4_netplan_free(p);
  const char *bad[] = {"{\"v\":1,\"flows\":[{\"src\":\"a\",\"dst\":\"b\",\"flow_label\":1048576}]}",
                       "{\"v\":1,\"flows\":[{\"src\":\"a\",\"dst\":\"b\",\"flow_label\":-1}]}",
                       "{\"v\":1,\"flows\":[{\"src\":\"a\",\"dst\":\"b\",\"sl\":16}]}",
                       "{\"v\":1,\"flows\":[{\"src\":\"a\",\"dst\":\"b\",\"path_bits\":\"1\"}]}"};
  const char *says[] = {"flow_label", "flow_label", "sl", "path_bits"};
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(c4_netplan_parse(bad[i], strlen(bad[i]), &p, err, sizeof err), C4_EINVAL);
    ck_assert_msg(strstr(err, says[i]), "\"%s\" does not name %s", err, says[i]);
  }
}
END_TEST

/* ---- loading verbs -------------------------------------------------------------------------- */

START_TEST(a_missing_verbs_library_is_reported_not_fatal) {
  struct c4_ibv t;
  char err[256] = "";
  ck_assert_int_eq(c4_ibv_load("libc4-no-such-ibverbs.so.1", &t, err, sizeof err), C4_ENOTFOUND);
  ck_assert_ptr_nonnull(strstr(err, "libc4-no-such-ibverbs.so.1"));
  ck_assert_ptr_null(t.lib);
  ck_assert_ptr_null(t.get_device_list);
}
END_TEST

START_TEST(real_libibverbs_resolves_every_function_the_transport_calls) {
  struct c4_ibv t;
  char err[256] = "";
  if (c4_ibv_load("libibverbs.so.1", &t, err, sizeof err) != 0) {
    printf("skipped: %s\n", err);
    return;
  }
  ck_assert_ptr_nonnull(t.get_device_list);
  ck_assert_ptr_nonnull(t.query_port);
  ck_assert_ptr_nonnull(t.reg_mr);
  ck_assert_ptr_nonnull(t.modify_qp);
  ck_assert_ptr_nonnull(t.wc_status_str);
  ck_assert_str_eq(t.wc_status_str(IBV_WC_SUCCESS), "success");
  c4_ibv_unload(&t);
  ck_assert_ptr_null(t.lib);
}
END_TEST

START_TEST(without_rdma_devices_setup_offers_none) {
  if (access("/sys/class/infiniband", F_OK) == 0) {
    printf("skipped: this machine has /sys/class/infiniband\n");
    return;
  }
  unsetenv("C4_IB");
  ck_assert_int_eq(c4_ib_setup(), 0);
  setenv("C4_IB", "0", 1);
  ck_assert_int_eq(c4_ib_setup(), 0);
  unsetenv("C4_IB");
}
END_TEST

int main(void) {
  Suite *s = suite_create("ib");
  TCase *props = tcase_create("props");
  tcase_add_test(props, speed_is_lanes_times_the_lane_rate);
  tcase_add_test(props, unknown_codes_never_give_zero_speed);
  tcase_add_test(props, hca_list_takes_prefixes_ports_exclusions_and_exact_names);
  tcase_add_test(props, empty_hca_lists_pass_everything_and_their_caret_form_nothing);
  tcase_add_test(props, flow_label_gives_rdma_cores_udp_source_port);
  tcase_add_test(props, every_port_from_49152_has_a_flow_label_that_maps_back);
  tcase_add_test(props, path_bits_pick_a_lid_under_the_lmc);
  suite_add_tcase(s, props);
  TCase *sysfs = tcase_create("sysfs");
  tcase_add_checked_fixture(sysfs, fake_sysfs, remove_fake_sysfs);
  tcase_add_test(sysfs, pci_path_is_the_resolved_device_link);
  tcase_add_test(sysfs, gid_choice_prefers_roce_v2_ipv4_mapped);
  tcase_add_test(sysfs, gid_text_parses_strictly);
  tcase_add_test(sysfs, peer_memory_modules_are_found_in_sysfs_or_proc_modules);
  tcase_add_test(sysfs, nv_mem_memory_peer_counts_as_peer_memory);
  tcase_add_test(sysfs, gpu_pointers_only_when_gpudirect_checks_pass);
  suite_add_tcase(s, sysfs);
  TCase *proto = tcase_create("proto");
  tcase_add_test(proto, qp_info_round_trips);
  tcase_add_test(proto, qp_info_decoder_rejects_what_it_does_not_understand);
  tcase_add_test(proto, cts_entry_round_trips_for_its_own_message_only);
  tcase_add_test(proto, cts_match_checks_tag_then_size);
  tcase_add_test(proto, isend_waits_for_its_receive_across_slot_wraps);
  tcase_add_test(proto, split_honours_the_weights);
  tcase_add_test(proto, split_is_proportional_for_any_weights_and_always_adds_up);
  tcase_add_test(proto, split_treats_bad_weights_as_zero_and_all_zero_as_equal);
  tcase_add_test(proto, small_messages_go_on_the_heaviest_qps_only);
  tcase_add_test(proto, receiver_completes_a_message_once_every_qp_reported);
  tcase_add_test(proto, receiver_rejects_writes_it_did_not_clear_and_refusals);
  suite_add_tcase(s, proto);
  TCase *mr = tcase_create("mr");
  tcase_add_test(mr, registrations_cover_whole_pages_and_are_shared);
  tcase_add_test(mr, unused_registrations_are_kept_up_to_the_bound_lru_first);
  tcase_add_test(mr, cache_is_bounded_and_evicts_only_unused_registrations);
  tcase_add_test(mr, dmabuf_registrations_are_never_shared);
  suite_add_tcase(s, mr);
  TCase *qp = tcase_create("qp");
  tcase_add_test(qp, each_roce_qp_takes_its_planned_flow_label);
  tcase_add_test(qp, each_infiniband_qp_takes_its_planned_lid_and_sl);
  tcase_add_test(qp, plan_flows_carry_flow_label_sl_and_path_bits);
  suite_add_tcase(s, qp);
  TCase *load = tcase_create("load");
  tcase_add_test(load, a_missing_verbs_library_is_reported_not_fatal);
  tcase_add_test(load, real_libibverbs_resolves_every_function_the_transport_calls);
  tcase_add_test(load, without_rdma_devices_setup_offers_none);
  suite_add_tcase(s, load);
  return c4_check_run(s);
}
