/* test_wire.c -- unit tests for the socket transport's wire encoders and decoders. */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <string.h>

#include "../check_run.h"
#include "c4_err.h"
#include "net_wire.h"

static struct c4_identity some_identity(void) {
  struct c4_identity id = {.pid = 4242, .rank = 7, .dev = 1};
  strcpy(id.host, "node-17");
  return id;
}

START_TEST(handle_round_trips_ipv4_and_identity) {
  struct c4_wire_handle h = {.nonce = 0x1122334455667788ull, .id = some_identity()};
  struct sockaddr_in *s = (struct sockaddr_in *)&h.addr;
  s->sin_family = AF_INET;
  s->sin_port = htons(51234);
  s->sin_addr.s_addr = htonl(0xC6120001); /* 198.18.0.1 */
  uint8_t buf[C4_HANDLE_SIZE];
  c4_wire_put_handle(buf, &h);
  struct c4_wire_handle g;
  char err[160];
  ck_assert_int_eq(c4_wire_get_handle(buf, &g, err, sizeof err), 0);
  const struct sockaddr_in *t = (const struct sockaddr_in *)&g.addr;
  ck_assert_int_eq(t->sin_family, AF_INET);
  ck_assert_int_eq(ntohs(t->sin_port), 51234);
  ck_assert_uint_eq(ntohl(t->sin_addr.s_addr), 0xC6120001);
  ck_assert_uint_eq(g.nonce, h.nonce);
  ck_assert_str_eq(g.id.host, "node-17");
  ck_assert_int_eq(g.id.pid, 4242);
  ck_assert_int_eq(g.id.rank, 7);
  ck_assert_int_eq(g.id.dev, 1);
  for (int i = 112; i < C4_HANDLE_SIZE; i++)
    ck_assert_int_eq(buf[i], 0);
}
END_TEST

START_TEST(handle_with_wrong_magic_version_or_family_is_rejected_with_a_reason) {
  struct c4_wire_handle h = {.id = some_identity()};
  h.addr.ss_family = AF_INET6;
  uint8_t buf[C4_HANDLE_SIZE];
  c4_wire_put_handle(buf, &h);
  struct c4_wire_handle g;
  char err[160];
  ck_assert_int_eq(c4_wire_get_handle(buf, &g, err, sizeof err), 0);
  ck_assert_int_eq(g.addr.ss_family, AF_INET6);
  uint8_t bad[C4_HANDLE_SIZE];
  memcpy(bad, buf, sizeof bad);
  bad[0] ^= 1;
  ck_assert_int_eq(c4_wire_get_handle(bad, &g, err, sizeof err), C4_EPROTO);
  ck_assert_ptr_nonnull(strstr(err, "magic"));
  memcpy(bad, buf, sizeof bad);
  bad[4] = 9;
  ck_assert_int_eq(c4_wire_get_handle(bad, &g, err, sizeof err), C4_EPROTO);
  ck_assert_ptr_nonnull(strstr(err, "version"));
  memcpy(bad, buf, sizeof bad);
  bad[6] = 99;
  ck_assert_int_eq(c4_wire_get_handle(bad, &g, err, sizeof err), C4_EPROTO);
  ck_assert_ptr_nonnull(strstr(err, "family"));
  memcpy(bad, buf, sizeof bad);
  memset(bad + 36, 'x', C4_HOST_MAX); /* host name without its terminator */
  ck_assert_int_eq(c4_wire_get_handle(bad, &g, err, sizeof err), C4_EPROTO);
}
END_TEST

START_TEST(hello_round_trips_and_checks_every_field) {
  struct c4_wire_hello h = {.version = C4_WIRE_VERSION,
                            .kind = C4_HELLO_DATA,
                            .nonce = 9,
                            .conn_id = 0xabcdef,
                            .nsocks = 4,
                            .index = 3,
                            .id = some_identity()};
  uint8_t buf[C4_HELLO_SIZE], bad[C4_HELLO_SIZE];
  c4_wire_put_hello(buf, &h);
  struct c4_wire_hello g;
  char err[160];
  ck_assert_int_eq(c4_wire_get_hello(buf, &g, err, sizeof err), 0);
  ck_assert_uint_eq(g.conn_id, 0xabcdef);
  ck_assert_int_eq(g.nsocks, 4);
  ck_assert_int_eq(g.index, 3);
  ck_assert_str_eq(g.id.host, "node-17");

  memcpy(bad, buf, sizeof bad);
  bad[4] = 2; /* other version: told apart so the listener can say so */
  ck_assert_int_eq(c4_wire_get_hello(bad, &g, err, sizeof err), C4_EINVAL);
  memcpy(bad, buf, sizeof bad);
  bad[1] = 0;
  ck_assert_int_eq(c4_wire_get_hello(bad, &g, err, sizeof err), C4_EPROTO);
  memcpy(bad, buf, sizeof bad);
  bad[26] = 4; /* index == nsocks */
  ck_assert_int_eq(c4_wire_get_hello(bad, &g, err, sizeof err), C4_EPROTO);
  memcpy(bad, buf, sizeof bad);
  bad[24] = 0; /* nsocks 0 */
  ck_assert_int_eq(c4_wire_get_hello(bad, &g, err, sizeof err), C4_EPROTO);
  memcpy(bad, buf, sizeof bad);
  bad[24] = 65; /* nsocks above the limit */
  ck_assert_int_eq(c4_wire_get_hello(bad, &g, err, sizeof err), C4_EPROTO);
  memcpy(bad, buf, sizeof bad);
  bad[6] = 5; /* unknown kind */
  ck_assert_int_eq(c4_wire_get_hello(bad, &g, err, sizeof err), C4_EPROTO);
  h.kind = C4_HELLO_CTRL; /* a control hello must carry index 0 */
  c4_wire_put_hello(bad, &h);
  ck_assert_int_eq(c4_wire_get_hello(bad, &g, err, sizeof err), C4_EPROTO);
}
END_TEST

START_TEST(ack_and_ctrl_frames_reject_garbage) {
  uint8_t ack[C4_ACK_SIZE];
  c4_wire_put_ack(ack, C4_ACK_BAD_VERSION);
  ck_assert_int_eq(c4_wire_get_ack(ack), C4_ACK_BAD_VERSION);
  ack[2] ^= 0xff;
  ck_assert_int_eq(c4_wire_get_ack(ack), C4_EPROTO);

  struct c4_wire_ctrl f = {.type = C4_CTRL_CTS, .arg = -3, .seq = 1ull << 40, .size = 12345}, g;
  uint8_t buf[C4_CTRL_SIZE];
  c4_wire_put_ctrl(buf, &f);
  ck_assert_int_eq(c4_wire_get_ctrl(buf, &g), 0);
  ck_assert_int_eq(g.arg, -3);
  ck_assert_uint_eq(g.seq, 1ull << 40);
  ck_assert_uint_eq(g.size, 12345);
  buf[0] = 0;
  ck_assert_int_eq(c4_wire_get_ctrl(buf, &g), C4_EPROTO);
  buf[0] = C4_CTRL_DATA;
  buf[2] = 1; /* padding must be zero */
  ck_assert_int_eq(c4_wire_get_ctrl(buf, &g), C4_EPROTO);
}
END_TEST

START_TEST(chunk_header_must_fit_inside_its_message) {
  struct c4_wire_chunk c = {.seq = 5, .offset = 100, .len = 50, .total = 150}, g;
  uint8_t buf[C4_CHUNK_HDR_SIZE];
  c4_wire_put_chunk(buf, &c);
  ck_assert_int_eq(c4_wire_get_chunk(buf, &g), 0);
  ck_assert_uint_eq(g.offset, 100);
  c.len = 51;
  c4_wire_put_chunk(buf, &c);
  ck_assert_int_eq(c4_wire_get_chunk(buf, &g), C4_EPROTO);
  c.len = 1;
  c.offset = UINT64_MAX; /* offset + len would wrap */
  c.total = 10;
  c4_wire_put_chunk(buf, &c);
  ck_assert_int_eq(c4_wire_get_chunk(buf, &g), C4_EPROTO);
}
END_TEST

int main(void) {
  Suite *s = suite_create("wire");
  TCase *tc = tcase_create("codec");
  tcase_add_test(tc, handle_round_trips_ipv4_and_identity);
  tcase_add_test(tc, handle_with_wrong_magic_version_or_family_is_rejected_with_a_reason);
  tcase_add_test(tc, hello_round_trips_and_checks_every_field);
  tcase_add_test(tc, ack_and_ctrl_frames_reject_garbage);
  tcase_add_test(tc, chunk_header_must_fit_inside_its_message);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
