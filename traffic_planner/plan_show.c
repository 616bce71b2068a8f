/* plan_show.c -- `c4plan flows PLAN`: one line per flow of a plan, "SRC DST PATH SRC_PORT"
 * (SRC_PORT "-" when the plan gives none), in the plan's order. */
#include "plan_show.h"

#include "c4_cli.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *f) {
  fprintf(f, "usage: c4plan flows PLAN\n"
             "Prints each flow of a plan (docs/plan-format.md) as a line: SRC DST PATH SRC_PORT\n"
             "(SRC_PORT - when the plan has none), in the plan's order; for scripts.\n"
             "  -h, --help   -V, --version\n"
             "exit: 0 ok, 1 the plan could not be read, 2 bad usage\n");
}

int c4plan_flows_main(int argc, char **argv) {
  const char *prog = "c4plan flows";
  if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    usage(stdout);
    return C4_EXIT_OK;
  }
  if (argc == 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))) {
    c4_cli_version("c4plan");
    return C4_EXIT_OK;
  }
  if (argc != 2) return c4_cli_usage(prog, "one PLAN file is required");
  if (argv[1][0] == '-') return c4_cli_usage(prog, "unknown option '%s'", argv[1]);
  json_error_t je;
  json_t *plan = json_load_file(argv[1], JSON_REJECT_DUPLICATES, &je), *flows;
  if (!plan) {
    char why[300];
    return c4_cli_fail(prog, "%s: %s", argv[1], c4_cli_json_why(&je, why, sizeof why));
  }
  json_t *v = json_object_get(plan, "v");
  int rc = 0;
  if (!json_is_integer(v) || json_integer_value(v) != 1) {
    rc = c4_cli_fail(prog, "%s: \"v\" is missing or not 1", argv[1]);
  } else if (!json_is_array(flows = json_object_get(plan, "flows"))) {
    rc = c4_cli_fail(prog, "%s: \"flows\" is missing or not an array", argv[1]);
  }
  size_t i;
  json_t *f;
  if (!rc) json_array_foreach(flows, i, f) {
      const char *src = json_string_value(json_object_get(f, "src"));
      const char *dst = json_string_value(json_object_get(f, "dst"));
      const char *path = json_string_value(json_object_get(f, "path"));
      json_t *port = json_object_get(f, "src_port");
      if (!src || !dst || !path || (!json_is_null(port) && !json_is_integer(port))) {
        rc = c4_cli_fail(prog,
                         "%s: flows[%zu] needs strings src, dst, path and an integer or null "
                         "src_port",
                         argv[1], i);
        break;
      }
      json_t *label = json_object_get(f, "flow_label");
      json_int_t pv = json_integer_value(port), lv = json_integer_value(label);
      if ((json_is_integer(port) && (pv < 1 || pv > 65535)) ||
          (label && !json_is_null(label) && (!json_is_integer(label) || lv < 0 || lv > 0xFFFFF))) {
        rc =
            c4_cli_fail(prog, /* what the plugin would refuse the plan for */
                        "%s: flows[%zu]: src_port must be 1-65535 and flow_label 0-1048575 or null",
                        argv[1], i);
        break;
      }
      if (json_is_integer(port))
        printf("%s %s %s %lld\n", src, dst, path, (long long)json_integer_value(port));
      else
        printf("%s %s %s -\n", src, dst, path);
    }
  json_decref(plan);
  return rc;
}
