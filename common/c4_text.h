/* c4_text.h -- the bytes of a name or a quoted line that must not reach an operator's terminal
 * raw, nor a JSON writer that refuses them: a control character in a host name or a bad line can
 * carry an escape sequence that clears the screen and prints what it likes, and a name that is
 * not UTF-8 makes jansson refuse the whole event it is in (a verdict lost). */
#ifndef C4_TEXT_H
#define C4_TEXT_H

/* ASCII's control characters: below space, and DEL. */
static inline int c4_is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }

/* Whether s is UTF-8 without a control character: ASCII's, or Unicode's C1 (U+0080 to U+009F,
 * which some terminals take as escape sequences, 0x9b as ESC '['). */
int c4_text_ok(const char *s);

/* Replaces, in place, each control character of s with '?', and each byte of s that begins no
 * valid UTF-8 sequence or belongs to a C1 control's: what is left is c4_text_ok, and as long. */
void c4_text_clean(char *s);

#endif
