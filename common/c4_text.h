/* c4_text.h -- the bytes of a name or a quoted line that must not reach an operator's terminal
 * raw: a control character in a host name or a bad line can carry an escape sequence that clears
 * the screen and prints what it likes. */
#ifndef C4_TEXT_H
#define C4_TEXT_H

/* ASCII's control characters: below space, and DEL. */
static inline int c4_is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }

/* Replaces each control character of the string s with '?'. */
static inline void c4_unctrl(char *s) {
  for (; *s; s++)
    if (c4_is_control((unsigned char)*s)) *s = '?';
}

#endif
