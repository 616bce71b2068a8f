/* test_abi.c -- c4's NCCL ABI headers lay structs out exactly as NCCL v2.28.9-1 does. The numbers
 * are offsetof/sizeof read off NCCL's own headers (x86_64) with a one-off C++ program. */
#include <check.h>
#include <stddef.h>

#include "../check_run.h"
#include "nccl_net_abi.h"
#include "nccl_profiler_abi.h"

#define OFF(T, f, n) ck_assert_uint_eq(offsetof(T, f), n)
#define SIZE(T, n) ck_assert_uint_eq(sizeof(T), n)

START_TEST(net_plugin_structs_match_nccl) {
  SIZE(ncclNetProperties_v11_t, 112);
  OFF(ncclNetProperties_v11_t, vProps, 64);
  OFF(ncclNetProperties_v11_t, maxP2pBytes, 88);
  OFF(ncclNetProperties_v11_t, maxMultiRequestSize, 104);
  SIZE(ncclNetProperties_v9_t, 104);
  OFF(ncclNetProperties_v9_t, maxCollBytes, 96);
  SIZE(ncclNetProperties_v8_t, 64);
  OFF(ncclNetProperties_v8_t, netDeviceVersion, 56);
  SIZE(ncclNet_v11_t, 176);
  OFF(ncclNet_v11_t, setNetAttr, 168);
  SIZE(ncclNet_v10_t, 160);
  SIZE(ncclNet_v9_t, 160);
  SIZE(ncclNet_v8_t, 152);
  OFF(ncclNet_v8_t, irecvConsumed, 144);
  SIZE(ncclNetDeviceHandle_t, 32);
}
END_TEST

START_TEST(profiler_plugin_structs_match_nccl) {
  SIZE(ncclProfilerEventDescr_v5_t, 112);
  OFF(ncclProfilerEventDescr_v5_t, coll.seqNumber, 24);
  OFF(ncclProfilerEventDescr_v5_t, coll.proto, 96);
  OFF(ncclProfilerEventDescr_v5_t, coll.parentGroup, 104);
  OFF(ncclProfilerEventDescr_v5_t, p2p.peer, 56);
  OFF(ncclProfilerEventDescr_v5_t, proxyOp.pid, 24);
  OFF(ncclProfilerEventDescr_v5_t, proxyOp.isSend, 44);
  SIZE(ncclProfilerEventDescr_v4_t, 104);
  OFF(ncclProfilerEventDescr_v4_t, parentObj, 8);
  OFF(ncclProfilerEventDescr_v4_t, coll.proto, 96);
  OFF(ncclProfilerEventDescr_v4_t, p2p.nChannels, 60);
  OFF(ncclProfilerEventDescr_v4_t, proxyOp.isSend, 44);
  SIZE(ncclProfiler_v5_t, 48);
  SIZE(ncclProfiler_v4_t, 48);
}
END_TEST

int main(void) {
  Suite *s = suite_create("abi");
  TCase *tc = tcase_create("layout");
  tcase_add_test(tc, net_plugin_structs_match_nccl);
  tcase_add_test(tc, profiler_plugin_structs_match_nccl);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
