/* test_net_result.c -- the one translation between C4_E* codes and ncclResult_t: c4's own codes
 * reach NCCL as the result that names them, and whatever a wrapped plugin returns comes back out
 * of c4 unchanged. */
#include <check.h>

#include "../check_run.h"
#include "c4_err.h"
#include "net_result.h"

START_TEST(every_nccl_result_a_wrapped_plugin_returns_comes_back_unchanged) {
  for (int r = ncclSuccess; r <= ncclInProgress; r++)
    ck_assert_int_eq(c4_net_to_nccl(c4_net_from_nccl((ncclResult_t)r)), r);
}
END_TEST

START_TEST(only_success_maps_to_zero_and_back) {
  ck_assert_int_eq(c4_net_from_nccl(ncclSuccess), C4_OK);
  for (int r = ncclUnhandledCudaError; r <= ncclInProgress; r++)
    ck_assert_int_lt(c4_net_from_nccl((ncclResult_t)r), 0);
  ck_assert_int_eq(c4_net_from_nccl((ncclResult_t)42), C4_EINTERNAL); /* not NCCL's */
}
END_TEST

START_TEST(c4_codes_reach_nccl_as_the_result_that_names_them) {
  ck_assert_int_eq(c4_net_to_nccl(C4_OK), ncclSuccess);
  ck_assert_int_eq(c4_net_to_nccl(C4_EINVAL), ncclInvalidArgument);
  ck_assert_int_eq(c4_net_to_nccl(C4_ENOMEM), ncclSystemError);
  ck_assert_int_eq(c4_net_to_nccl(C4_ESYS), ncclSystemError);
  ck_assert_int_eq(c4_net_to_nccl(C4_EPROTO), ncclRemoteError);
  ck_assert_int_eq(c4_net_to_nccl(C4_EREMOTE), ncclRemoteError);
  ck_assert_int_eq(c4_net_to_nccl(C4_ETRUNC), ncclInvalidUsage);
  ck_assert_int_eq(c4_net_to_nccl(C4_EAGAIN), ncclInternalError);
  ck_assert_int_eq(c4_net_to_nccl(C4_ENOTFOUND), ncclInternalError);
  ck_assert_int_eq(c4_net_to_nccl(C4_EINTERNAL), ncclInternalError);
}
END_TEST

int main(void) {
  Suite *s = suite_create("net_result");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, every_nccl_result_a_wrapped_plugin_returns_comes_back_unchanged);
  tcase_add_test(tc, only_success_maps_to_zero_and_back);
  tcase_add_test(tc, c4_codes_reach_nccl_as_the_result_that_names_them);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
