/* test_text.c -- names made safe for a terminal and a JSON writer: c4_text_ok accepts UTF-8
 * without control characters and refuses every other byte string, and c4_text_clean turns each
 * refused byte into '?' and leaves the rest, so that what it gives is always accepted. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check_run.h"
#include "c4_text.h"

static const char *const good[] = {
    "", "node-7", "jöb", "€uro", "𝄞clef", "a\"b\\c", "\xed\x9f\xbf", "\xf4\x8f\xbf\xbf", "\xc2\xa0",
};

static const struct {
  const char *in, *clean;
} bad[] = {
    {"a\x1b[2Jb", "a?[2Jb"},      /* ESC: ASCII's control */
    {"del\x7f", "del?"},          /* DEL */
    {"j\xff-b", "j?-b"},          /* a byte no sequence begins with */
    {"\x80x", "?x"},              /* a stray continuation byte */
    {"\xc3", "?"},                /* cut at the end */
    {"\xc3x", "?x"},              /* cut before an ASCII byte */
    {"\xc0\xaf", "??"},           /* overlong '/' */
    {"\xe0\x80\xaf", "???"},      /* overlong, three bytes */
    {"\xed\xa0\x80", "???"},      /* a surrogate */
    {"\xf4\x90\x80\x80", "????"}, /* past U+10FFFF */
    {"c1\xc2\x9b[2J", "c1??[2J"}, /* C1's CSI, a terminal's ESC [ */
    {"\xe2\x82", "??"},           /* a three-byte sequence cut after two */
};

START_TEST(utf8_without_controls_is_accepted_and_left_as_it_is) {
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    char s[64];
    snprintf(s, sizeof s, "%s", good[i]);
    ck_assert_msg(c4_text_ok(s), "refused: case %zu", i);
    c4_text_clean(s);
    ck_assert_str_eq(s, good[i]);
  }
}
END_TEST

START_TEST(every_other_byte_string_is_refused_and_cleaned_byte_for_byte) {
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char s[64];
    snprintf(s, sizeof s, "%s", bad[i].in);
    ck_assert_msg(!c4_text_ok(s), "accepted: case %zu", i);
    c4_text_clean(s);
    ck_assert_msg(!strcmp(s, bad[i].clean), "case %zu cleaned to \"%s\", not \"%s\"", i, s,
                  bad[i].clean);
    ck_assert_msg(c4_text_ok(s), "case %zu: its cleaned form refused", i);
  }
}
END_TEST

/* Random bytes: whatever they are, the cleaned string keeps its length, is accepted, and differs
 * from its input only where '?' now stands. */
START_TEST(random_bytes_clean_to_accepted_text_of_the_same_length) {
  srand(7); /* the same bytes on every run: a failure repeats */
  for (int round = 0; round < 20000; round++) {
    unsigned char in[24], s[24];
    size_t n = 1 + (size_t)rand() % (sizeof in - 1);
    for (size_t i = 0; i < n; i++)
      in[i] = (unsigned char)(1 + (size_t)rand() % 255);
    in[n] = 0;
    memcpy(s, in, n + 1);
    c4_text_clean((char *)s);
    ck_assert_uint_eq(strlen((char *)s), n);
    ck_assert_msg(c4_text_ok((char *)s), "round %d: cleaned text refused", round);
    for (size_t i = 0; i < n; i++)
      ck_assert(s[i] == in[i] || s[i] == '?');
    ck_assert_int_eq(c4_text_ok((char *)in), !memcmp(s, in, n));
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("text");
  TCase *tc = tcase_create("text");
  tcase_add_test(tc, utf8_without_controls_is_accepted_and_left_as_it_is);
  tcase_add_test(tc, every_other_byte_string_is_refused_and_cleaned_byte_for_byte);
  tcase_add_test(tc, random_bytes_clean_to_accepted_text_of_the_same_length);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
