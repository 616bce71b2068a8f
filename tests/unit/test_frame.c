/* test_frame.c -- the stream protocol codec (docs/stream.md): headers, every record kind
 * round-trips, malformed input is refused, and the HELLO's MAC needs the right token and nonce. */
#include <check.h>
#include <string.h>

#include "../check_run.h"
#include "c4_err.h"
#include "c4_frame.h"

START_TEST(headers_round_trip_and_bad_ones_are_refused) {
  uint8_t h[C4_FRAME_HDR];
  int type;
  uint32_t len;
  c4_frame_put_header(h, C4_FRAME_RECORDS, 1234);
  ck_assert_int_eq(c4_frame_get_header(h, &type, &len), 0);
  ck_assert_int_eq(type, C4_FRAME_RECORDS);
  ck_assert_uint_eq(len, 1234);
  c4_frame_put_header(h, C4_FRAME_RECORDS, C4_FRAME_MAX_PAYLOAD + 1);
  ck_assert_int_eq(c4_frame_get_header(h, &type, &len), C4_EPROTO); /* too long */
  c4_frame_put_header(h, 99, 8);
  ck_assert_int_eq(c4_frame_get_header(h, &type, &len), C4_EPROTO); /* unknown type */
  c4_frame_put_header(h, C4_FRAME_BYE, 0);
  h[0] ^= 1;
  ck_assert_int_eq(c4_frame_get_header(h, &type, &len), C4_EPROTO); /* magic */
  c4_frame_put_header(h, C4_FRAME_BYE, 0);
  ck_assert_int_eq(h[2], 2); /* version 2: records' strings are length-prefixed */
  h[2] = 1;
  ck_assert_int_eq(c4_frame_get_header(h, &type, &len), C4_EPROTO); /* version */
}
END_TEST

/* Encodes in, checks its length (exact, or the kind's largest when every string is at its
 * longest), decodes it back, and refuses every truncation. Returns the encoded length. */
static size_t round_trip(const struct c4_record *in, int longest) {
  uint8_t buf[512];
  size_t n = c4_frame_put_record(buf, sizeof buf, in);
  ck_assert_uint_gt(n, 0);
  if (longest)
    ck_assert_uint_eq(n, c4_frame_record_size(in->kind));
  else
    ck_assert_uint_lt(n, c4_frame_record_size(in->kind));
  ck_assert_uint_eq(c4_frame_record_length(buf, n), n);
  uint8_t copy[512]; /* decoded from a buffer that ends with it */
  memcpy(copy + sizeof copy - n, buf, n);
  struct c4_record out;
  ck_assert_int_eq(c4_frame_get_record(copy + sizeof copy - n, n, &out), (int)n);
  ck_assert_int_eq(memcmp(in, &out, sizeof out), 0);
  for (size_t cut = 0; cut < n; cut++) { /* every truncation is refused, and seen as one */
    ck_assert_int_eq(c4_frame_get_record(buf, cut, &out), C4_EPROTO);
    ck_assert_uint_gt(c4_frame_record_length(buf, cut), cut);
  }
  ck_assert_uint_eq(c4_frame_put_record(buf, n - 1, in), 0); /* no room */
  return n;
}

START_TEST(every_record_kind_round_trips_exactly) {
  struct c4_record x = {.kind = C4_REC_XFER};
  x.xfer = (struct c4_xfer_record){.version = C4_RECORD_VERSION,
                                   .dir = C4_DIR_RECV,
                                   .status = C4_XFER_PENDING,
                                   .tag = -7,
                                   .conn_id = 1ull << 63,
                                   .nccl_comm = 42,
                                   .seq = 9,
                                   .bytes = 1ull << 40,
                                   .t_posted = 1,
                                   .t_first_byte = 2,
                                   .t_done = 0};
  strcpy(x.xfer.self.host, "a");
  x.xfer.self.rank = 3;
  strcpy(x.xfer.peer.host, "node-with-a-longer-name");
  x.xfer.peer.pid = 77;
  x.xfer.peer.dev = 1;
  round_trip(&x, 0);
  struct c4_record c = {.kind = C4_REC_COLL};
  c.coll = (struct c4_coll_record){.comm = 5,
                                   .seq = 6,
                                   .rank = 1,
                                   .nranks = 8,
                                   .is_p2p = 1,
                                   .nchannels = 4,
                                   .nops = 3,
                                   .root = -1,
                                   .count = 10,
                                   .bytes = 40,
                                   .t_arrive = 100,
                                   .t_enqueued = 101,
                                   .t_done = 150};
  strcpy(c.coll.func, "AllReduce");
  strcpy(c.coll.dtype, "ncclFloat32");
  strcpy(c.coll.algo, "Ring");
  strcpy(c.coll.proto, "LL128");
  round_trip(&c, 0);
  struct c4_record m = {.kind = C4_REC_COMM};
  m.comm =
      (struct c4_comm_record){.comm = 5, .rank = 1, .nranks = 8, .nnodes = 2, .pid = 9, .t = 3};
  strcpy(m.comm.name, "dp-group");
  strcpy(m.comm.host, "node-1");
  round_trip(&m, 0);
  struct c4_record l = {.kind = C4_REC_LINK};
  l.link = (struct c4_link_record){
      .comm = 9, .conn_id = ~0ull, .rank = 3, .peer = -1, .dir = C4_DIR_RECV, .t = 77};
  round_trip(&l, 1);
  struct c4_record k = {.kind = C4_REC_RANK};
  k.rank =
      (struct c4_rank_record){.rank = 4, .pid = 5, .event = C4_RANK_LOST, .t = 6, .dropped = 7};
  strcpy(k.rank.host, "h");
  round_trip(&k, 0);
  struct c4_record a = {.kind = C4_REC_PATH};
  a.path = (struct c4_path_record){.conn_id = 3,
                                   .nccl_comm = 4,
                                   .sock = 1,
                                   .nsocks = 2,
                                   .src_port = 49152,
                                   .bytes = 1 << 20,
                                   .busy_ns = 20000000,
                                   .t = 5};
  strcpy(a.path.self.host, "h0");
  strcpy(a.path.peer.host, "h1");
  a.path.peer.rank = 1;
  round_trip(&a, 0);
  memset(a.path.self.host, 'p', C4_HOST_MAX - 1);
  memset(a.path.peer.host, 'q', C4_HOST_MAX - 1);
  round_trip(&a, 1);
  /* every string at its longest: the kind's largest size */
  memset(x.xfer.self.host, 'a', C4_HOST_MAX - 1);
  memset(x.xfer.peer.host, 'b', C4_HOST_MAX - 1);
  round_trip(&x, 1);
  memset(c.coll.func, 'f', C4_NAME_MAX - 1);
  memset(c.coll.dtype, 'd', C4_NAME_MAX - 1);
  memset(c.coll.algo, 'a', C4_NAME_MAX - 1);
  memset(c.coll.proto, 'p', C4_NAME_MAX - 1);
  round_trip(&c, 1);
  memset(m.comm.name, 'n', sizeof m.comm.name - 1);
  memset(m.comm.host, 'h', C4_HOST_MAX - 1);
  round_trip(&m, 1);
  memset(k.rank.host, 'h', C4_HOST_MAX - 1);
  round_trip(&k, 1);
}
END_TEST

START_TEST(records_with_bad_fields_are_refused) {
  struct c4_record x = {.kind = C4_REC_XFER}, out;
  uint8_t buf[512] = {0};
  struct c4_record a = {.kind = C4_REC_PATH}; /* a data socket past the connection's count */
  a.path = (struct c4_path_record){.sock = 1, .nsocks = 2, .t = 1};
  size_t na = c4_frame_put_record(buf, sizeof buf, &a);
  ck_assert_int_eq(c4_frame_get_record(buf, na, &out), (int)na);
  buf[17] = 2; /* sock: its index, not below nsocks */
  ck_assert_int_eq(c4_frame_get_record(buf, na, &out), C4_EPROTO);
  size_t n = c4_frame_put_record(buf, sizeof buf, &x);
  buf[25] = 2; /* dir */
  ck_assert_int_eq(c4_frame_get_record(buf, n, &out), C4_EPROTO);
  strcpy(x.xfer.self.host, "node-7");
  strcpy(x.xfer.peer.host, "node-8");
  n = c4_frame_put_record(buf, sizeof buf, &x);
  ck_assert_int_eq(c4_frame_get_record(buf, n, &out), (int)n);
  ck_assert_int_eq(buf[n - 7], 6); /* the peer host's length byte: the record's last string */
  buf[n - 3] = 0;                  /* a NUL inside it */
  ck_assert_int_eq(c4_frame_get_record(buf, n, &out), C4_EPROTO);
  n = c4_frame_put_record(buf, sizeof buf, &x);
  buf[76] = 0; /* a NUL inside the self host, the first byte after its length */
  ck_assert_int_eq(c4_frame_get_record(buf, n, &out), C4_EPROTO);
  uint8_t longer[512] = {0}; /* a host as long as its field: no room for its NUL */
  n = c4_frame_put_record(longer, sizeof longer, &x);
  memmove(longer + n - 6 + (C4_HOST_MAX - 6), longer + n - 6, 6);
  memset(longer + n - 6, 'x', C4_HOST_MAX - 6);
  longer[n - 7] = C4_HOST_MAX;
  n += C4_HOST_MAX - 6;
  ck_assert_uint_eq(c4_frame_record_length(longer, n), n);
  ck_assert_int_eq(c4_frame_get_record(longer, n, &out), C4_EPROTO);
  n = c4_frame_put_record(buf, sizeof buf, &x);
  buf[0] = 9; /* unknown kind */
  ck_assert_int_eq(c4_frame_get_record(buf, n, &out), C4_EPROTO);
  ck_assert_uint_eq(c4_frame_record_size(9), 0);
  struct c4_record c = {.kind = C4_REC_COLL};
  strcpy(c.coll.proto, "Simple");
  n = c4_frame_put_record(buf, sizeof buf, &c);
  ck_assert_int_eq(c4_frame_get_record(buf, n, &out), (int)n);
  buf[25] = 2; /* is_p2p */
  ck_assert_int_eq(c4_frame_get_record(buf, n, &out), C4_EPROTO);
  n = c4_frame_put_record(buf, sizeof buf, &c);
  ck_assert_int_eq(buf[52], 6); /* proto's length byte, after three empty names */
  buf[52] = C4_NAME_MAX;        /* a name as long as its field */
  ck_assert_int_eq(c4_frame_get_record(buf, n + C4_NAME_MAX - 6, &out), C4_EPROTO);
  n = c4_frame_put_record(buf, sizeof buf, &c);
  ck_assert_int_eq(c4_frame_get_record(buf, n - 1, &out), C4_EPROTO); /* cut short */
}
END_TEST

START_TEST(a_hello_is_accepted_only_with_the_token_and_the_nonce_it_answers) {
  struct c4_hello h = {.pid = 4242, .rank = 3};
  strcpy(h.job, "llama-70b-run-17");
  strcpy(h.host, "node-3");
  uint8_t nonce[C4_FRAME_NONCE] = {1, 2, 3}, other[C4_FRAME_NONCE] = {1, 2, 4};
  uint8_t buf[256];
  ck_assert_uint_le(c4_frame_hello_size(), sizeof buf);
  c4_frame_put_hello(buf, &h, nonce, "s3cret");
  struct c4_hello got;
  ck_assert_int_eq(c4_frame_get_hello(buf, c4_frame_hello_size(), &got), 0);
  ck_assert_str_eq(got.job, "llama-70b-run-17");
  ck_assert_int_eq(got.rank, 3);
  ck_assert(c4_frame_hello_verify(&got, nonce, "s3cret"));
  ck_assert(!c4_frame_hello_verify(&got, nonce, "s3cres")); /* wrong token */
  ck_assert(!c4_frame_hello_verify(&got, other, "s3cret")); /* replayed to another nonce */
  got.rank = 4;
  ck_assert(!c4_frame_hello_verify(&got, nonce, "s3cret")); /* a field changed */
  ck_assert_int_eq(c4_frame_get_hello(buf, c4_frame_hello_size() - 1, &got), C4_EPROTO);
}
END_TEST

int main(void) {
  Suite *s = suite_create("frame");
  TCase *tc = tcase_create("codec");
  tcase_add_test(tc, headers_round_trip_and_bad_ones_are_refused);
  tcase_add_test(tc, every_record_kind_round_trips_exactly);
  tcase_add_test(tc, records_with_bad_fields_are_refused);
  tcase_add_test(tc, a_hello_is_accepted_only_with_the_token_and_the_nonce_it_answers);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
