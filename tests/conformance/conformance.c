/* conformance.c -- the conformance harness: dlopens build/lib/libnccl-net-c4.so (C4_PLUGIN_PATH)
 * and drives every exported ncclNet version as NCCL's proxy does, across processes, over loopback
 * and between two network namespaces. */
#include <signal.h>
#include <stdlib.h>

#include "../check_run.h"
#include "conformance.h"

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  setenv("C4_DEBUG", getenv("C4_DEBUG") ? getenv("C4_DEBUG") : "NONE", 1);
  Suite *s = suite_create("conformance");
  conformance_add_peer_tests(s);
  conformance_add_data_tests(s);
  conformance_add_path_tests(s);
  return c4_check_run(s);
}
