/* test_planfile.c -- the one plan reader: it reads the flows and the paths c4plan writes in the
 * file's order, looks only at the parts a caller asks for, rejects a bad entry saying where, reads
 * a file without blocking on what is not a regular file, and writes a flow back in a form it reads
 * to the same flow. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../check_run.h"
#include "c4_err.h"
#include "c4_planfile.h"

static int parse(const char *text, unsigned parts, struct c4_planfile **p, char *err,
                 size_t errlen) {
  return c4_planfile_parse(text, strlen(text), parts, p, err, errlen);
}

/* What `c4plan assign` writes for two hosts over two spines (docs/plan-format.md). */
static const char *const written =
    "{\"v\":1,\"paths\":[{\"id\":\"s1\",\"pairs\":[[\"h0\",\"h3\"],[\"h3\",\"h0\"]]},"
    "{\"id\":\"s2\",\"pairs\":[]}],\"future\":{\"x\":1},"
    "\"flows\":[{\"src\":\"h0\",\"dst\":\"h3\",\"bytes\":10,\"src_port_idx\":1,"
    "\"dst_port_idx\":0,\"ifname\":\"eth1\",\"path\":\"s1\",\"src_port\":49160,\"flow_label\":8},"
    "{\"src\":\"h3\",\"dst\":\"h0\",\"src_port_idx\":0,\"ifname\":null,\"path\":\"s1\","
    "\"src_port\":null,\"sl\":3,\"path_bits\":127}]}";

START_TEST(the_reader_gives_flows_and_paths_in_file_order) {
  struct c4_planfile *p;
  char err[256] = "";
  ck_assert_int_eq(parse(written, C4_PLANFILE_FLOWS | C4_PLANFILE_PATHS, &p, err, sizeof err), 0);
  ck_assert_uint_eq(p->nflows, 2);
  ck_assert_str_eq(p->flows[0].src, "h0");
  ck_assert_str_eq(p->flows[0].dst, "h3");
  ck_assert_int_eq(p->flows[0].src_port, 49160);
  ck_assert_str_eq(p->flows[0].ifname, "eth1");
  ck_assert_int_eq(p->flows[0].flow_label, 8);
  ck_assert_int_eq(p->flows[0].sl, -1);
  ck_assert_int_eq(p->flows[0].path_bits, -1);
  ck_assert_str_eq(p->flows[0].path, "s1");
  ck_assert_int_eq(p->flows[1].src_port, 0); /* null: ephemeral */
  ck_assert_str_eq(p->flows[1].ifname, "");
  ck_assert_int_eq(p->flows[1].flow_label, -1);
  ck_assert_int_eq(p->flows[1].sl, 3);
  ck_assert_int_eq(p->flows[1].path_bits, 127);
  ck_assert_uint_eq(p->npaths, 2);
  ck_assert_str_eq(p->paths[0].id, "s1");
  ck_assert_uint_eq(p->paths[0].npairs, 2);
  ck_assert_str_eq(p->paths[0].pairs[1].src, "h3");
  ck_assert_str_eq(p->paths[0].pairs[1].dst, "h0");
  ck_assert_str_eq(p->paths[1].id, "s2");
  ck_assert_uint_eq(p->paths[1].npairs, 0);
  c4_planfile_free(p);
}
END_TEST

/* The plugin asks for flows and c4mon's detection for paths: a part not asked for is neither
 * returned nor checked, and flows may be absent while paths may not. */
START_TEST(a_part_not_asked_for_is_neither_read_nor_checked) {
  struct c4_planfile *p;
  char err[256] = "";
  ck_assert_int_eq(parse(written, C4_PLANFILE_FLOWS, &p, err, sizeof err), 0);
  ck_assert_uint_eq(p->nflows, 2);
  ck_assert_uint_eq(p->npaths, 0);
  c4_planfile_free(p);
  ck_assert_int_eq(parse(written, C4_PLANFILE_PATHS, &p, err, sizeof err), 0);
  ck_assert_uint_eq(p->nflows, 0);
  ck_assert_uint_eq(p->npaths, 2);
  c4_planfile_free(p);
  const char *bad_paths = "{\"v\":1,\"paths\":7,\"flows\":[{\"src\":\"a\",\"dst\":\"b\"}]}";
  ck_assert_int_eq(parse(bad_paths, C4_PLANFILE_FLOWS, &p, err, sizeof err), 0);
  c4_planfile_free(p);
  const char *bad_flows = "{\"v\":1,\"paths\":[],\"flows\":[{\"src\":7}]}";
  ck_assert_int_eq(parse(bad_flows, C4_PLANFILE_PATHS, &p, err, sizeof err), 0);
  c4_planfile_free(p);
  ck_assert_int_eq(parse("{\"v\":1}", C4_PLANFILE_FLOWS, &p, err, sizeof err), 0);
  ck_assert_uint_eq(p->nflows, 0);
  c4_planfile_free(p);
  p = (struct c4_planfile *)1;
  ck_assert_int_eq(parse("{\"v\":1}", C4_PLANFILE_PATHS, &p, err, sizeof err), C4_EINVAL);
  ck_assert_ptr_null(p);
  ck_assert_str_eq(err, "\"paths\" is missing or not an array");
}
END_TEST

START_TEST(the_reader_rejects_a_bad_plan_saying_where) {
  static const struct {
    const char *text, *says;
  } bad[] = {
      {"{\"v\":1,\"v\":1,\"paths\":[]}", "duplicate object key"},
      {"{\"v\":\"1\",\"paths\":[]}", "\"v\" is not 1"},
      {"{\"v\":1,\"paths\":{}}", "\"paths\" is missing or not an array"},
      {"{\"v\":1,\"paths\":[7]}", "paths[0] needs a string \"id\" and an array \"pairs\""},
      {"{\"v\":1,\"paths\":[{\"id\":\"s\"}]}", "paths[0] needs a string \"id\""},
      {"{\"v\":1,\"paths\":[{\"id\":3,\"pairs\":[]}]}", "paths[0] needs a string \"id\""},
      {"{\"v\":1,\"paths\":[{\"id\":\"s\",\"pairs\":[]},{\"id\":\"t\",\"pairs\":[[\"a\",\"b\"],"
       "[\"a\"]]}]}",
       "paths[1].pairs[1] is not [SRC_HOST, DST_HOST]"},
      {"{\"v\":1,\"paths\":[{\"id\":\"s\",\"pairs\":[[\"a\",\"b\",\"c\"]]}]}", "paths[0].pairs[0]"},
      {"{\"v\":1,\"paths\":[{\"id\":\"s\",\"pairs\":[[\"a\",2]]}]}", "paths[0].pairs[0]"},
      {"{\"v\":1,\"paths\":[{\"id\":\"s\",\"pairs\":[[\"\",\"b\"]]}]}", "paths[0].pairs[0]"},
      {"{\"v\":1,\"paths\":[{\"id\":\"s\",\"pairs\":[[\"a\\u0000b\",\"b\"]]}]}", "not JSON"},
      {"{\"v\":1,\"paths\":[{\"id\":\"s\",\"pairs\":[[\"a\",\"0123456789012345678901234567890123"
       "456789012345678901234567890123\"]]}]}",
       "paths[0].pairs[0]"}, /* 64 bytes: one more than a host name holds */
      {"{\"v\":1,\"paths\":[],\"flows\":[{\"src\":\"a\",\"dst\":\"b\",\"sl\":-1}]}",
       "flows[0].sl is not an integer 0..15 or null"},
      {"{\"v\":1,\"paths\":[],\"avoid\":\"s1\"}", "\"avoid\" is not an array"},
      {"{\"v\":1,\"paths\":[],\"avoid\":[\"s1\",7]}", "avoid[1] is not a path name"},
      {"{\"v\":1,\"paths\":[],\"avoid\":[\"\"]}", "avoid[0] is not a path name"},
  };
  for (unsigned i = 0; i < sizeof bad / sizeof *bad; i++) {
    struct c4_planfile *p = (struct c4_planfile *)1;
    char err[256] = "";
    ck_assert_int_eq(parse(bad[i].text, C4_PLANFILE_FLOWS | C4_PLANFILE_PATHS, &p, err, sizeof err),
                     C4_EINVAL);
    ck_assert_ptr_null(p);
    ck_assert_msg(strstr(err, bad[i].says), "%s: got \"%s\", want \"%s\"", bad[i].text, err,
                  bad[i].says);
  }
}
END_TEST

/* The paths c4mon asks to avoid (docs/plan-format.md) come with the flows, in order. */
START_TEST(the_paths_to_avoid_are_read_with_the_flows) {
  struct c4_planfile *p;
  char err[256];
  const char *text = "{\"v\":1,\"flows\":[],\"avoid\":[\"s1\",\"spine-7\"]}";
  ck_assert_int_eq(parse(text, C4_PLANFILE_FLOWS, &p, err, sizeof err), 0);
  ck_assert_uint_eq(p->navoid, 2);
  ck_assert_str_eq(p->avoid[0], "s1");
  ck_assert_str_eq(p->avoid[1], "spine-7");
  c4_planfile_free(p);
  ck_assert_int_eq(parse(written, C4_PLANFILE_FLOWS, &p, err, sizeof err), 0);
  ck_assert_uint_eq(p->navoid, 0); /* none: none avoided */
  c4_planfile_free(p);
}
END_TEST

START_TEST(a_file_is_read_and_what_is_not_a_regular_file_is_refused_without_blocking) {
  char dir[] = "/tmp/c4-planfile-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char path[300];
  snprintf(path, sizeof path, "%s/plan.json", dir);
  struct c4_planfile *p = (struct c4_planfile *)1;
  char err[256] = "";
  ck_assert_int_eq(c4_planfile_read(path, C4_PLANFILE_PATHS, &p, err, sizeof err), C4_ENOTFOUND);
  ck_assert_ptr_null(p);
  ck_assert_str_eq(err, "cannot open: No such file or directory");
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(written, f);
  fclose(f);
  ck_assert_int_eq(c4_planfile_read(path, C4_PLANFILE_PATHS, &p, err, sizeof err), 0);
  ck_assert_uint_eq(p->npaths, 2);
  c4_planfile_free(p);
  ck_assert_int_eq(c4_planfile_read(dir, C4_PLANFILE_PATHS, &p, err, sizeof err), C4_EINVAL);
  ck_assert_str_eq(err, "not a regular file");
  unlink(path);
  ck_assert_int_eq(mkfifo(path, 0600), 0); /* no writer: a blocking open would never return */
  ck_assert_int_eq(c4_planfile_read(path, C4_PLANFILE_PATHS, &p, err, sizeof err), C4_EINVAL);
  ck_assert_str_eq(err, "not a regular file");
  unlink(path);
  rmdir(dir);
}
END_TEST

/* What c4mon pushes a rank is each flow written back by c4_planfile_flow_json: read again, it is
 * the same flow. */
START_TEST(a_flow_written_back_reads_as_the_same_flow) {
  struct c4_planfile *p, *again;
  char err[256] = "";
  ck_assert_int_eq(parse(written, C4_PLANFILE_FLOWS, &p, err, sizeof err), 0);
  json_t *flows = json_array();
  for (size_t i = 0; i < p->nflows; i++)
    ck_assert_int_eq(json_array_append_new(flows, c4_planfile_flow_json(&p->flows[i])), 0);
  json_t *doc = json_pack("{s:i, s:o}", "v", 1, "flows", flows);
  char *text = json_dumps(doc, JSON_COMPACT);
  ck_assert_ptr_null(strstr(text, "null")); /* what a flow does not set is left out */
  ck_assert_int_eq(parse(text, C4_PLANFILE_FLOWS, &again, err, sizeof err), 0);
  ck_assert_uint_eq(again->nflows, p->nflows);
  for (size_t i = 0; i < p->nflows; i++) {
    struct c4_planfile_flow a = again->flows[i], b = p->flows[i];
    ck_assert_str_eq(a.path, b.path);
    a.path = b.path = NULL;
    ck_assert_mem_eq(&a, &b, sizeof a);
  }
  free(text);
  json_decref(doc);
  c4_planfile_free(again);
  c4_planfile_free(p);
}
END_TEST

int main(void) {
  Suite *s = suite_create("planfile");
  TCase *tc = tcase_create("reader");
  tcase_add_test(tc, the_reader_gives_flows_and_paths_in_file_order);
  tcase_add_test(tc, a_part_not_asked_for_is_neither_read_nor_checked);
  tcase_add_test(tc, the_reader_rejects_a_bad_plan_saying_where);
  tcase_add_test(tc, the_paths_to_avoid_are_read_with_the_flows);
  tcase_add_test(tc, a_file_is_read_and_what_is_not_a_regular_file_is_refused_without_blocking);
  tcase_add_test(tc, a_flow_written_back_reads_as_the_same_flow);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
