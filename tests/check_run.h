/* check_run.h -- runs a Check suite and turns its result into the process exit code. */
#ifndef C4_CHECK_RUN_H
#define C4_CHECK_RUN_H

#include <check.h>

/* Runs every test of s (fork mode, normal output) and frees it; 0 when all passed, else 1. */
static inline int c4_check_run(Suite *s) {
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}

#endif
