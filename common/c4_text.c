/* c4_text.c -- names and quoted lines made safe for a terminal and a JSON writer (c4_text.h). */
#include "c4_text.h"

/* The length (1 to 4) of the valid UTF-8 sequence that begins at s, or 0 where none does: a
 * stray continuation byte, a cut sequence, an overlong form, a surrogate, or past U+10FFFF. */
static int utf8_len(const unsigned char *s) {
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (!n) return 0;
  /* the second byte's range is narrower after E0 (overlong), ED (surrogates), F0 and F4 */
  unsigned char lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
  unsigned char hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
  if (s[1] < lo || s[1] > hi) return 0;
  for (int i = 2; i < n; i++) /* a NUL ends the string here: not a continuation byte */
    if ((s[i] & 0xc0) != 0x80) return 0;
  return n;
}

/* Whether the valid sequence of n bytes at s is a control character (ASCII's or C1). */
static int control_at(const unsigned char *s, int n) {
  return n == 1 ? c4_is_control(s[0]) : n == 2 && s[0] == 0xc2 && s[1] < 0xa0;
}

int c4_text_ok(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    int n = utf8_len(p);
    if (!n || control_at(p, n)) return 0;
    p += n;
  }
  return 1;
}

void c4_text_clean(char *s) {
  unsigned char *p = (unsigned char *)s;
  while (*p) {
    int n = utf8_len(p);
    if (n && !control_at(p, n)) {
      p += n;
      continue;
    }
    for (int i = 0; i < (n ? n : 1); i++)
      p[i] = '?';
    p += n ? n : 1;
  }
}
