/* test_trace_read.c -- trace lines read back: every record kind survives writing and reading,
 * bad lines are refused with the field and line number, and reading goes on after them. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check_run.h"
#include "c4_err.h"
#include "c4_trace_bin.h"
#include "c4_trace_json.h"
#include "c4_trace_read.h"

static void round_trip(const struct c4_record *in) {
  json_t *j = c4_record_json(in);
  ck_assert_ptr_nonnull(j);
  char *line = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  struct c4_record out;
  char err[200];
  ck_assert_int_eq(c4_trace_parse_line(line, strlen(line), &out, err, sizeof err), 1);
  ck_assert_int_eq(memcmp(in, &out, sizeof out), 0);
  free(line);
}

START_TEST(every_record_kind_reads_back_as_written) {
  struct c4_record x = {.kind = C4_REC_XFER};
  x.xfer = (struct c4_xfer_record){.version = C4_RECORD_VERSION,
                                   .dir = C4_DIR_RECV,
                                   .status = C4_XFER_PENDING,
                                   .tag = -2,
                                   .conn_id = ~0ull,
                                   .nccl_comm = 0,
                                   .seq = 5,
                                   .bytes = 99,
                                   .t_posted = 7};
  strcpy(x.xfer.self.host, "a");
  strcpy(x.xfer.peer.host, "b");
  x.xfer.self.rank = 1;
  x.xfer.peer.rank = -1;
  x.xfer.peer.pid = 4000000000u;
  round_trip(&x);
  struct c4_record c = {.kind = C4_REC_COLL};
  c.coll = (struct c4_coll_record){.comm = 0x1234,
                                   .seq = 9,
                                   .rank = 2,
                                   .nranks = 8,
                                   .is_p2p = 1,
                                   .nchannels = 255,
                                   .nops = 65535,
                                   .root = 3,
                                   .count = 1,
                                   .bytes = 4,
                                   .t_arrive = 1,
                                   .t_enqueued = 2};
  strcpy(c.coll.func, "Send");
  strcpy(c.coll.dtype, "ncclFloat32");
  round_trip(&c);
  struct c4_record m = {.kind = C4_REC_COMM};
  m.comm =
      (struct c4_comm_record){.comm = 1, .rank = 0, .nranks = 1, .nnodes = -1, .pid = 3, .t = 4};
  strcpy(m.comm.name, "world");
  strcpy(m.comm.host, "h");
  round_trip(&m);
  struct c4_record l = {.kind = C4_REC_LINK};
  l.link = (struct c4_link_record){
      .comm = 5, .conn_id = 6, .rank = 7, .peer = 8, .dir = C4_DIR_RECV, .t = 9};
  round_trip(&l);
  struct c4_record k = {.kind = C4_REC_RANK};
  k.rank = (struct c4_rank_record){
      .rank = 3, .pid = 42, .event = C4_RANK_HB, .t = 5, .entered = 7, .done = 6, .dropped = 1};
  strcpy(k.rank.host, "n3");
  round_trip(&k);
  k.rank = (struct c4_rank_record){.rank = 3, .pid = 42, .event = C4_RANK_LOST, .t = 9};
  strcpy(k.rank.host, "n3");
  round_trip(&k);
  k.rank.event = C4_RANK_BYE;
  round_trip(&k);
  struct c4_record a = {.kind = C4_REC_PATH};
  a.path = (struct c4_path_record){.conn_id = 11,
                                   .nccl_comm = 12,
                                   .sock = 3,
                                   .nsocks = 4,
                                   .src_port = 49153,
                                   .bytes = 99,
                                   .busy_ns = 20000000,
                                   .t = 13};
  a.path.self = (struct c4_identity){.host = "h3", .pid = 7, .rank = 2, .dev = 0};
  a.path.peer = (struct c4_identity){.host = "h2", .pid = 8, .rank = 3, .dev = 1};
  round_trip(&a);
}
END_TEST

static void expect_bad(const char *line, const char *why) {
  struct c4_record r;
  char err[200] = "";
  ck_assert_int_eq(c4_trace_parse_line(line, strlen(line), &r, err, sizeof err), C4_EPROTO);
  ck_assert_msg(strstr(err, why) != NULL, "\"%s\": error \"%s\" does not say \"%s\"", line, err,
                why);
}

START_TEST(bad_lines_are_refused_naming_what_is_wrong) {
  expect_bad("{\"v\":1,\"type\":\"coll\"", "not a JSON object");
  expect_bad("[1,2]", "not a JSON object");
  expect_bad("{\"v\":2,\"type\":\"coll\"}", "\"v\"");
  expect_bad("{\"type\":\"coll\"}", "\"v\" is missing");
  expect_bad("{\"v\":1}", "\"type\"");
  expect_bad("{\"v\":1,\"type\":\"comm\",\"comm\":\"12\",\"name\":\"\",\"nranks\":1,\"rank\":0,"
             "\"nnodes\":1,\"host\":\"h\",\"pid\":1,\"t\":1}",
             "\"comm\" is not 16 hex digits");
  expect_bad("{\"v\":1,\"type\":\"comm\",\"comm\":null,\"name\":\"\",\"nranks\":\"8\",\"rank\":0,"
             "\"nnodes\":1,\"host\":\"h\",\"pid\":1,\"t\":1}",
             "\"nranks\" is not an integer");
  expect_bad("{\"v\":1,\"type\":\"comm\",\"comm\":null,\"name\":\"\",\"nranks\":1,\"rank\":0,"
             "\"nnodes\":1,\"host\":\"h\",\"pid\":-1,\"t\":1}",
             "\"pid\" is out of range");
  expect_bad("{\"v\":1,\"type\":\"coll\",\"v\":1}", "not a JSON object"); /* duplicate key */
  expect_bad("{\"v\":1,\"type\":\"hb\",\"rank\":1}", "\"host\" is missing");
  expect_bad("{\"v\":1,\"type\":\"end\",\"rank\":1,\"host\":\"h\",\"t\":1}", "\"clean\"");
  expect_bad("{\"v\":1,\"type\":\"path\",\"conn\":\"0000000000000001\",\"host\":\"a\","
             "\"peer_host\":\"b\",\"sock\":2,\"nsocks\":2,\"bytes\":1,\"busy_ns\":1,\"t\":1}",
             "\"sock\" is not below nsocks");
  expect_bad("{\"v\":1,\"type\":\"path\",\"conn\":\"0000000000000001\",\"host\":\"a\","
             "\"peer_host\":\"b\",\"sock\":0,\"nsocks\":2,\"bytes\":1,\"t\":1}",
             "\"busy_ns\" is missing");
  /* values a new user's tracer got wrong, each named (they were taken, or named vaguely) */
  const char *coll = "{\"v\":1,\"type\":\"coll\",\"comm\":\"7d3f00a2c4e1b950\",\"seq\":1,"
                     "\"func\":\"AllReduce\",\"bytes\":8,\"t_arrive\":1,\"t_done\":2,";
  char line[400];
  snprintf(line, sizeof line, "%s\"rank\":0,\"nranks\":0}", coll);
  expect_bad(line, "\"nranks\" is out of range");
  snprintf(line, sizeof line, "%s\"rank\":9,\"nranks\":4}", coll);
  expect_bad(line, "\"rank\" is not in [0, nranks)");
  const char *xfer = "{\"v\":1,\"type\":\"xfer\",\"rank\":3,\"host\":\"n3\",\"peer_host\":"
                     "\"n4\",\"bytes\":8,\"t_post\":1,\"t_done\":2,";
  snprintf(line, sizeof line, "%s\"peer\":-7,\"dir\":\"send\"}", xfer);
  expect_bad(line, "\"peer\" is out of range");
  snprintf(line, sizeof line, "%s\"peer\":4,\"dir\":\"sideways\"}", xfer);
  expect_bad(line, "\"dir\" is not send or recv");
  expect_bad("{\"v\":1,\"type\":\"xfer\",\"rank\":3,\"host\":\"n3\",\"peer_host\":\"n4\","
             "\"bytes\":8,\"t_post\":5,\"t_done\":2,\"peer\":4,\"dir\":\"recv\"}",
             "\"t_done\" is before t_post");
  /* times that contradict each other (they were taken, in silence) */
  expect_bad("{\"v\":1,\"type\":\"coll\",\"comm\":\"7d3f00a2c4e1b950\",\"seq\":1,\"rank\":0,"
             "\"nranks\":4,\"func\":\"AllReduce\",\"bytes\":8,\"t_arrive\":5,\"t_done\":2}",
             "\"t_done\" is before t_arrive");
  expect_bad("{\"v\":1,\"type\":\"xfer\",\"rank\":3,\"host\":\"n3\",\"peer_host\":\"n4\","
             "\"bytes\":8,\"t_post\":1,\"t_first\":7,\"t_done\":5,\"peer\":4,\"dir\":\"recv\"}",
             "\"t_first\" is after t_done");
  expect_bad("{\"v\":1,\"type\":\"coll\",\"comm\":\"7d3f00a2c4e1b950\",\"seq\":1,\"rank\":0,"
             "\"nranks\":4,\"func\":\"AllReduce\",\"bytes\":8,\"t_arrive\":4611686018427387905,"
             "\"t_done\":null}",
             "\"t_arrive\" is out of range"); /* 2^62 + 1: named here, not as "a time" later */
}
END_TEST

/* Lines another tool could write, with the pinned fields only (docs/trace-format.md). */
#define MIN_SEND                                                                                   \
  "{\"v\":1,\"type\":\"xfer\",\"rank\":3,\"peer\":4,\"host\":\"n3\",\"peer_host\":\"n4\","         \
  "\"dir\":\"send\",\"bytes\":524288,\"t_post\":100,\"t_done\":900}"
#define MIN_RECV                                                                                   \
  "{\"v\":1,\"type\":\"xfer\",\"rank\":4,\"peer\":3,\"host\":\"n4\",\"peer_host\":\"n3\","         \
  "\"dir\":\"recv\",\"bytes\":524288,\"t_post\":50,\"t_done\":null}"
#define MIN_COLL                                                                                   \
  "{\"v\":1,\"type\":\"coll\",\"comm\":\"7d3f00a2c4e1b950\",\"rank\":3,\"nranks\":8,\"seq\":41,"   \
  "\"func\":\"AllReduce\",\"bytes\":1048576,\"t_arrive\":2000,\"t_done\":2900}"

static struct c4_record parse_ok(const char *line) {
  struct c4_record r;
  char err[200] = "";
  ck_assert_msg(c4_trace_parse_line(line, strlen(line), &r, err, sizeof err) == 1, "%s: %s", line,
                err);
  return r;
}

START_TEST(minimal_lines_read_with_the_documented_defaults) {
  struct c4_record s = parse_ok(MIN_SEND), r = parse_ok(MIN_RECV), c = parse_ok(MIN_COLL);
  ck_assert_int_eq(s.xfer.dir, C4_DIR_SEND);
  ck_assert_int_eq(s.xfer.status, C4_XFER_OK);
  ck_assert_int_eq(r.xfer.status, C4_XFER_PENDING); /* no status, no t_done */
  ck_assert_uint_eq(s.xfer.self.pid, 3);            /* the rank stands for the process */
  ck_assert_uint_eq(s.xfer.peer.pid, 4);
  ck_assert_int_eq(s.xfer.self.dev, -1); /* and for the NIC */
  ck_assert_int_eq(s.xfer.peer.dev, -1);
  ck_assert_uint_eq(s.xfer.t_first_byte, 0); /* unknown */
  ck_assert_uint_eq(s.xfer.nccl_comm, 0);
  ck_assert_uint_eq(s.xfer.seq, 0);
  ck_assert_int_eq(s.xfer.tag, 3); /* the sender's rank, on both ends */
  ck_assert_int_eq(r.xfer.tag, 3);
  ck_assert_uint_ne(s.xfer.conn_id, 0);
  ck_assert_uint_eq(s.xfer.conn_id, r.xfer.conn_id); /* both ends share the connection */
  struct c4_record back = parse_ok(
      "{\"v\":1,\"type\":\"xfer\",\"rank\":3,\"peer\":4,\"host\":\"n4\",\"peer_host\":\"n3\","
      "\"dir\":\"send\",\"bytes\":1,\"t_post\":1,\"t_done\":2}");
  ck_assert_uint_ne(back.xfer.conn_id, s.xfer.conn_id); /* other hosts, another connection */
  struct c4_record norank = parse_ok("{\"v\":1,\"type\":\"xfer\",\"peer\":-1,\"host\":\"n4\","
                                     "\"peer_host\":\"\",\"dir\":\"recv\",\"bytes\":1,"
                                     "\"t_post\":1,\"t_done\":2}");
  ck_assert_int_eq(norank.xfer.self.rank, -1);
  ck_assert_uint_eq(norank.xfer.self.pid, 0);
  ck_assert_uint_eq(c.coll.comm, 0x7d3f00a2c4e1b950ull);
  ck_assert_int_eq(c.coll.is_p2p, 0);
  ck_assert_uint_eq(c.coll.count, 1048576);
  ck_assert_int_eq(c.coll.root, -1);
  ck_assert_str_eq(c.coll.algo, "");
  ck_assert_uint_eq(c.coll.t_enqueued, 2000);
  ck_assert_uint_eq(c.coll.t_done, 2900);
  struct c4_record p2p =
      parse_ok("{\"v\":1,\"type\":\"coll\",\"comm\":null,\"rank\":0,\"nranks\":2,\"seq\":0,"
               "\"func\":\"Send\",\"bytes\":8,\"t_arrive\":1,\"t_done\":null}");
  ck_assert_int_eq(p2p.coll.is_p2p, 1);
  struct c4_record m = parse_ok("{\"v\":1,\"type\":\"comm\",\"comm\":\"0000000000000001\","
                                "\"nranks\":4,\"rank\":2}");
  ck_assert_int_eq(m.comm.nnodes, -1);
  ck_assert_uint_eq(m.comm.pid, 2);
}
END_TEST

/* line with "field":null added before its closing brace. */
static void with_null(const char *line, const char *field, char *out, size_t cap) {
  snprintf(out, cap, "%.*s,\"%s\":null}", (int)strlen(line) - 1, line, field);
}

/* docs/trace-format.md: an optional field absent or null takes its default. A tracer that writes
 * every field, null where it has no value, lost every collective line to "p2p" (refused as not
 * true or false), and with them stragglers and hangs. */
START_TEST(every_optional_field_null_reads_as_absent) {
  const char *xf[] = {"comm", "pid",     "peer_pid", "dev",  "peer_dev",
                      "seq",  "t_first", "tag",      "conn", "status"};
  const char *cf[] = {"p2p",   "count",     "root", "datatype",  "algo",
                      "proto", "nchannels", "nops", "t_enqueued"};
  const char *lines[] = {MIN_SEND, MIN_RECV};
  char line[400];
  for (size_t l = 0; l < 2; l++)
    for (size_t i = 0; i < sizeof xf / sizeof *xf; i++) {
      with_null(lines[l], xf[i], line, sizeof line);
      struct c4_record a = parse_ok(lines[l]), b = parse_ok(line);
      ck_assert_msg(!memcmp(&a, &b, sizeof a), "%s", line);
    }
  for (size_t i = 0; i < sizeof cf / sizeof *cf; i++) {
    with_null(MIN_COLL, cf[i], line, sizeof line);
    struct c4_record a = parse_ok(MIN_COLL), b = parse_ok(line);
    ck_assert_msg(!memcmp(&a, &b, sizeof a), "%s", line);
  }
  const char *hb = "{\"v\":1,\"type\":\"hb\",\"rank\":2,\"host\":\"n2\",\"t\":5,"
                   "\"entered\":3,\"done\":3}";
  const char *hf[] = {"pid", "dropped"};
  for (size_t i = 0; i < sizeof hf / sizeof *hf; i++) {
    with_null(hb, hf[i], line, sizeof line);
    struct c4_record a = parse_ok(hb), b = parse_ok(line);
    ck_assert_msg(!memcmp(&a, &b, sizeof a), "%s", line);
  }
}
END_TEST

/* Removes "field":value from a line written by hand (value up to the next ',' or '}'). */
static void without(const char *line, const char *field, char *out, size_t cap) {
  char key[40];
  snprintf(key, sizeof key, "\"%s\":", field);
  const char *at = strstr(line, key);
  ck_assert_ptr_nonnull(at);
  const char *end = at + strcspn(at, ",}");
  if (*end == ',') end++;
  snprintf(out, cap, "%.*s%s", (int)(at - line), line, end);
  size_t n = strlen(out);
  if (n > 1 && out[n - 2] == ',') memmove(out + n - 2, out + n - 1, 2); /* a trailing ',}' */
}

START_TEST(a_line_missing_a_required_field_is_refused_naming_it) {
  const char *xf[] = {"peer", "host", "peer_host", "dir", "bytes", "t_post", "t_done"};
  const char *cf[] = {"comm", "rank", "nranks", "seq", "func", "bytes", "t_arrive", "t_done"};
  char line[400], why[60];
  for (size_t i = 0; i < sizeof xf / sizeof *xf; i++) {
    without(MIN_SEND, xf[i], line, sizeof line);
    snprintf(why, sizeof why, "\"%s\" is missing", xf[i]);
    expect_bad(line, why);
  }
  for (size_t i = 0; i < sizeof cf / sizeof *cf; i++) {
    without(MIN_COLL, cf[i], line, sizeof line);
    snprintf(why, sizeof why, "\"%s\" is missing", cf[i]);
    expect_bad(line, why);
  }
  /* an integer past 2^63 is refused by the JSON parser before any field is read: still named */
  expect_bad("{\"v\":1,\"type\":\"xfer\",\"rank\":3,\"peer\":4,\"host\":\"n3\",\"peer_host\":"
             "\"n4\",\"dir\":\"send\",\"bytes\":1,\"t_post\":9223372036854775808,\"t_done\":2}",
             "field \"t_post\" is an integer past 2^63");
  /* an optional field that is there is checked all the same */
  expect_bad("{\"v\":1,\"type\":\"xfer\",\"rank\":3,\"peer\":4,\"host\":\"n3\",\"peer_host\":"
             "\"n4\",\"dir\":\"send\",\"bytes\":1,\"t_post\":1,\"t_done\":2,\"dev\":\"0\"}",
             "\"dev\" is not an integer");
  expect_bad("{\"v\":1,\"type\":\"xfer\",\"rank\":3,\"peer\":4,\"host\":\"n3\",\"peer_host\":"
             "\"n4\",\"dir\":\"send\",\"bytes\":1,\"t_post\":1,\"t_done\":2,\"conn\":\"12\"}",
             "\"conn\" is not 16 hex digits");
  expect_bad("{\"v\":1,\"type\":\"xfer\",\"rank\":3,\"peer\":4,\"host\":\"n3\",\"peer_host\":"
             "\"n4\",\"dir\":\"send\",\"bytes\":1,\"t_post\":1,\"t_done\":2,\"status\":\"odd\"}",
             "\"status\" is not ok");
}
END_TEST

/* Parses a coll line with tail appended (its job field, or none) and returns what parsing said,
 * the job read into job. */
static int parse_with_job(const char *tail, char *job, size_t joblen, char *err, size_t errlen) {
  struct c4_record r;
  char line[512];
  snprintf(line, sizeof line,
           "{\"v\":1,\"type\":\"coll\",\"comm\":\"00000000000000c4\",\"rank\":1,\"nranks\":2,"
           "\"seq\":3,\"func\":\"AllReduce\",\"bytes\":8,\"t_arrive\":10,\"t_done\":20%s}",
           tail);
  return c4_trace_parse_line_job(line, strlen(line), &r, job, joblen, err, errlen);
}

/* A line's optional "job" is read for replay (the writer's C4_JOB); null is absent, and any other
 * type refuses the line naming the field. */
START_TEST(a_lines_job_is_read_and_a_wrong_one_refused) {
  char job[16], err[200];
  ck_assert_int_eq(parse_with_job(",\"job\":\"llama-run-17\"", job, sizeof job, err, sizeof err),
                   1);
  ck_assert_str_eq(job, "llama-run-17");
  ck_assert_int_eq(parse_with_job(",\"job\":null", job, sizeof job, err, sizeof err), 1);
  ck_assert_str_eq(job, "");
  ck_assert_int_eq(parse_with_job("", job, sizeof job, err, sizeof err), 1);
  ck_assert_str_eq(job, "");
  ck_assert_int_eq(parse_with_job(",\"job\":7", job, sizeof job, err, sizeof err), C4_EPROTO);
  ck_assert_str_eq(err, "field \"job\" is not a string");
}
END_TEST

START_TEST(lines_without_records_are_skipped_not_refused) {
  struct c4_record r;
  char err[200];
  const char *lines[] = {"{\"v\":1,\"type\":\"header\",\"host\":\"h\"}",
                         "{\"v\":1,\"type\":\"summary\"}", "{\"v\":1,\"type\":\"future\"}"};
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(c4_trace_parse_line(lines[i], strlen(lines[i]), &r, err, sizeof err), 0);
}
END_TEST

/* A header with a host, a pid and a launcher rank says who its process is: a HELLO rank record,
 * at its mono_ns, written back as a header line. Without all three it carries no record. */
START_TEST(a_header_line_reads_as_who_its_process_is) {
  struct c4_record r;
  char err[200];
  const char *line = "{\"v\":1,\"type\":\"header\",\"host\":\"node-3\",\"pid\":4242,\"rank\":3,"
                     "\"wall_ns\":1795338000000000000,\"mono_ns\":81234000000,\"c4\":\"0.1.0\"}";
  ck_assert_int_eq(c4_trace_parse_line(line, strlen(line), &r, err, sizeof err), 1);
  ck_assert_int_eq(r.kind, C4_REC_RANK);
  ck_assert_int_eq(r.rank.event, C4_RANK_HELLO);
  ck_assert_str_eq(r.rank.host, "node-3");
  ck_assert_uint_eq(r.rank.pid, 4242);
  ck_assert_int_eq(r.rank.rank, 3);
  ck_assert_uint_eq(r.rank.t, 81234000000ull);
  json_t *j = c4_record_json(&r);
  char *text = json_dumps(j, JSON_COMPACT);
  struct c4_record back;
  ck_assert_int_eq(c4_trace_parse_line(text, strlen(text), &back, err, sizeof err), 1);
  ck_assert_str_eq(json_string_value(json_object_get(j, "type")), "header");
  ck_assert_int_eq(memcmp(&back, &r, sizeof r), 0);
  free(text);
  json_decref(j);
  const char *without[] = {
      "{\"v\":1,\"type\":\"header\",\"host\":\"h\",\"pid\":7}",             /* no rank */
      "{\"v\":1,\"type\":\"header\",\"host\":\"h\",\"pid\":7,\"rank\":-1}", /* none set */
      "{\"v\":1,\"type\":\"header\",\"host\":7,\"pid\":7,\"rank\":1}"};     /* no host */
  for (int i = 0; i < 3; i++)
    ck_assert_msg(c4_trace_parse_line(without[i], strlen(without[i]), &r, err, sizeof err) == 0,
                  "%s", without[i]);
}
END_TEST

START_TEST(a_file_reads_on_past_bad_lines_reporting_their_numbers) {
  char path[] = "/tmp/c4-trace-read-XXXXXX";
  int fd = mkstemp(path);
  const char *text =
      "\xef\xbb\xbf{\"v\":1,\"type\":\"header\"}\n" /* a UTF-8 byte order mark first */
      "\n"
      "\x1b[2Jgarbage\n" /* an escape sequence, said as ? */
      "  \t \r\n"
      "{\"v\":1,\"type\":\"comm\",\"comm\":null,\"name\":\"w\",\"nranks\":2,\"rank\":1,"
      "\"nnodes\":1,\"host\":\"h\",\"pid\":7,\"t\":9}\r\n"
      "{\"v\":1,\"type\":\"comm\"}\n";
  ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  struct c4_trace_reader rd;
  ck_assert_int_eq(c4_trace_open(&rd, path), 0);
  struct c4_record r;
  char err[256];
  ck_assert_int_eq(c4_trace_next(&rd, &r, err, sizeof err), C4_EPROTO);
  ck_assert_msg(strncmp(err, "line 3:", 7) == 0, "%s", err);
  for (const char *c = err; *c; c++)
    ck_assert_msg((unsigned char)*c >= 0x20, "a control byte in: %s", err);
  ck_assert_int_eq(c4_trace_next(&rd, &r, err, sizeof err), 1); /* a blank line 4 is skipped */
  ck_assert_int_eq(r.kind, C4_REC_COMM);
  ck_assert_str_eq(r.comm.name, "w");
  ck_assert_int_eq(c4_trace_next(&rd, &r, err, sizeof err), C4_EPROTO);
  ck_assert_msg(strncmp(err, "line 6:", 7) == 0, "%s", err);
  ck_assert_int_eq(c4_trace_next(&rd, &r, err, sizeof err), 0);
  ck_assert_uint_eq(rd.bad, 2);
  c4_trace_close(&rd);
  unlink(path);
  ck_assert_int_eq(c4_trace_open(&rd, "/nonexistent/trace"), C4_ENOTFOUND);
}
END_TEST

START_TEST(the_binary_form_reads_back_the_same_records_and_stops_at_a_bad_one) {
  char path[] = "/tmp/c4-trace-bin-XXXXXX";
  int fd = mkstemp(path);
  FILE *f = fdopen(fd, "w");
  ck_assert_int_eq(c4_trace_bin_start(f), 0);
  struct c4_record in[3000];
  for (int i = 0; i < 3000; i++) { /* more than one read buffer's worth */
    memset(&in[i], 0, sizeof in[i]);
    in[i].kind = i % 3 ? C4_REC_COLL : C4_REC_RANK;
    if (in[i].kind == C4_REC_COLL) {
      in[i].coll.seq = (uint64_t)i;
      in[i].coll.nranks = 8;
      strcpy(in[i].coll.func, "AllReduce");
    } else {
      in[i].rank.rank = i;
      in[i].rank.t = (uint64_t)i * 10;
      strcpy(in[i].rank.host, "h");
    }
    ck_assert_int_eq(c4_trace_bin_write(f, &in[i]), 0);
  }
  fputc(99, f); /* a record kind nobody knows */
  fputs("trailing", f);
  fclose(f);
  struct c4_trace_reader rd;
  ck_assert_int_eq(c4_trace_open(&rd, path), 0);
  struct c4_record r;
  char err[256];
  for (int i = 0; i < 3000; i++) {
    ck_assert_int_eq(c4_trace_next(&rd, &r, err, sizeof err), 1);
    ck_assert_int_eq(memcmp(&r, &in[i], sizeof r), 0);
  }
  ck_assert_int_eq(c4_trace_next(&rd, &r, err, sizeof err), C4_EPROTO);
  ck_assert_msg(strstr(err, "byte ") && strstr(err, "not a record kind"), "%s", err);
  ck_assert_int_eq(c4_trace_next(&rd, &r, err, sizeof err), 0);
  c4_trace_close(&rd);
  f = fopen(path, "r+"); /* cut inside the last record: truncated */
  ck_assert_int_eq(ftruncate(fileno(f), 8 + 5), 0);
  fclose(f);
  ck_assert_int_eq(c4_trace_open(&rd, path), 0);
  ck_assert_int_eq(c4_trace_next(&rd, &r, err, sizeof err), C4_EPROTO);
  ck_assert_msg(strstr(err, "byte 8: truncated"), "%s", err);
  c4_trace_close(&rd);
  f = fopen(path, "w"); /* a trace of the format's version 1 (strings padded): said so, once */
  fputs("C4TRACE\001", f);
  for (int i = 0; i < 300; i++)
    fputc(i % 3 ? 0 : 2, f);
  fclose(f);
  ck_assert_int_eq(c4_trace_open(&rd, path), 0);
  ck_assert_int_eq(c4_trace_next(&rd, &r, err, sizeof err), C4_EPROTO);
  ck_assert_msg(strstr(err, "version 1; this build reads version 2"), "%s", err);
  ck_assert_int_eq(c4_trace_next(&rd, &r, err, sizeof err), 0);
  ck_assert_uint_eq(rd.bad, 1);
  c4_trace_close(&rd);
  unlink(path);
}
END_TEST

/* c4mon replay decodes a mapped binary trace many records at a time: the same records, lines
 * counted alike, and it stops before a bad record, which c4_trace_next then reports. */
START_TEST(many_at_a_time_reads_what_one_at_a_time_reads_and_stops_before_a_bad_record) {
  char path[] = "/tmp/c4-trace-many-XXXXXX";
  int fd = mkstemp(path);
  FILE *f = fdopen(fd, "w");
  ck_assert_int_eq(c4_trace_bin_start(f), 0);
  static struct c4_record in[1000], out[1000];
  for (int i = 0; i < 1000; i++) {
    memset(&in[i], 0, sizeof in[i]);
    in[i].kind = i % 4 ? C4_REC_XFER : C4_REC_COLL;
    if (in[i].kind == C4_REC_XFER) {
      in[i].xfer.version = C4_RECORD_VERSION;
      in[i].xfer.conn_id = (uint64_t)i * 7919;
      in[i].xfer.bytes = 1u << 20;
      in[i].xfer.t_done = (uint64_t)i + 5;
      snprintf(in[i].xfer.self.host, C4_HOST_MAX, "host-%d", i);
      snprintf(in[i].xfer.peer.host, C4_HOST_MAX, "peer-%d", i % 7);
    } else {
      in[i].coll.seq = (uint64_t)i;
      in[i].coll.nranks = 8;
      strcpy(in[i].coll.func, "AllReduce");
    }
    ck_assert_int_eq(c4_trace_bin_write(f, &in[i]), 0);
  }
  fputc(99, f); /* a record kind nobody knows */
  fclose(f);
  struct c4_trace_reader rd;
  ck_assert_int_eq(c4_trace_open(&rd, path), 0);
  ck_assert_ptr_nonnull(rd.map);
  int n = 0, got;
  while ((got = c4_trace_next_many(&rd, out + n, n + 33 <= 1000 ? 33 : 1000 - n)) > 0) {
    n += got;
    ck_assert_uint_eq(rd.lineno, (unsigned long)n);
  }
  ck_assert_int_eq(n, 1000);
  for (int i = 0; i < 1000; i++)
    ck_assert_msg(!memcmp(&out[i], &in[i], sizeof out[i]), "record %d differs", i);
  ck_assert_int_eq(c4_trace_next_many(&rd, out, 10), 0); /* the bad one: not taken */
  char err[256];
  ck_assert_int_eq(c4_trace_next(&rd, out, err, sizeof err), C4_EPROTO);
  ck_assert_msg(strstr(err, "not a record kind"), "%s", err);
  ck_assert_int_eq(c4_trace_next(&rd, out, err, sizeof err), 0);
  ck_assert_int_eq(c4_trace_next_many(&rd, out, 10), 0);
  c4_trace_close(&rd);
  static char bytes[1 << 20]; /* a memory stream (a pipe, too) is not mapped: one at a time */
  f = fopen(path, "r");
  size_t len = fread(bytes, 1, sizeof bytes, f);
  fclose(f);
  ck_assert_int_eq(c4_trace_open_stream(&rd, fmemopen(bytes, len, "r")), 0);
  ck_assert_int_eq(c4_trace_next_many(&rd, out, 10), 0);
  ck_assert_int_eq(c4_trace_next(&rd, out, err, sizeof err), 1);
  c4_trace_close(&rd);
  unlink(path);
}
END_TEST

START_TEST(a_long_line_and_a_last_line_without_newline_are_read) {
  char path[] = "/tmp/c4-trace-long-XXXXXX";
  int fd = mkstemp(path);
  FILE *f = fdopen(fd, "w");
  fprintf(f, "{\"v\":1,\"type\":\"header\",\"pad\":\"");
  for (int i = 0; i < 3000000; i++) /* longer than the 1 MiB buffer */
    fputc('x', f);
  fprintf(f, "\"}\n{\"v\":1,\"type\":\"comm\",\"comm\":null,\"name\":\"w\",\"nranks\":2,"
             "\"rank\":1,\"nnodes\":1,\"host\":\"h\",\"pid\":7,\"t\":9}");
  fclose(f);
  struct c4_trace_reader rd;
  ck_assert_int_eq(c4_trace_open(&rd, path), 0);
  struct c4_record r;
  char err[256];
  ck_assert_int_eq(c4_trace_next(&rd, &r, err, sizeof err), 1);
  ck_assert_int_eq(r.kind, C4_REC_COMM);
  ck_assert_uint_eq(rd.lineno, 2);
  ck_assert_int_eq(c4_trace_next(&rd, &r, err, sizeof err), 0);
  c4_trace_close(&rd);
  unlink(path);
}
END_TEST

int main(void) {
  Suite *s = suite_create("trace_read");
  TCase *tc = tcase_create("reader");
  tcase_add_test(tc, every_record_kind_reads_back_as_written);
  tcase_add_test(tc, bad_lines_are_refused_naming_what_is_wrong);
  tcase_add_test(tc, minimal_lines_read_with_the_documented_defaults);
  tcase_add_test(tc, every_optional_field_null_reads_as_absent);
  tcase_add_test(tc, a_line_missing_a_required_field_is_refused_naming_it);
  tcase_add_test(tc, a_lines_job_is_read_and_a_wrong_one_refused);
  tcase_add_test(tc, lines_without_records_are_skipped_not_refused);
  tcase_add_test(tc, a_header_line_reads_as_who_its_process_is);
  tcase_add_test(tc, a_file_reads_on_past_bad_lines_reporting_their_numbers);
  tcase_add_test(tc, the_binary_form_reads_back_the_same_records_and_stops_at_a_bad_one);
  tcase_add_test(tc, many_at_a_time_reads_what_one_at_a_time_reads_and_stops_before_a_bad_record);
  tcase_add_test(tc, a_long_line_and_a_last_line_without_newline_are_read);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
