/* mon_gate.c -- c4mon's limits before authentication and its escaped, rate-limited refusals. */
#include "mon_gate.h"

#include <stdio.h>
#include <string.h>

#include "c4_log.h"
#include "c4_text.h"

int mon_gate_first_frame_ok(int type, uint32_t len) {
  return (type == C4_FRAME_HELLO && len == c4_frame_hello_size()) ||
         (type == C4_FRAME_STATUS && len == C4_FRAME_MAC);
}

int mon_gate_status_take(uint64_t now) {
  static double tokens = MON_GATE_STATUS_PER_S;
  static uint64_t last;
  if (last) tokens += (double)(now - last) / 1e9 * MON_GATE_STATUS_PER_S;
  if (tokens > MON_GATE_STATUS_PER_S) tokens = MON_GATE_STATUS_PER_S;
  last = now;
  if (tokens < 1) return 0;
  tokens -= 1;
  return 1;
}

const char *mon_gate_escape(const char *s, char *out, size_t n) {
  size_t o = 0; /* invariant: o + 4 <= n, room for "..." and the terminator */
  for (; s && *s; s++) {
    unsigned char ch = (unsigned char)*s;
    int plain = ch < 0x80 && !c4_is_control(ch) && ch != '"' && ch != '\\';
    if (o + (plain ? 1 : 4) + 4 > n) {
      memcpy(out + o, "...", 3);
      o += 3;
      break;
    }
    if (plain)
      out[o++] = (char)ch;
    else
      o += (size_t)snprintf(out + o, n - o, "\\x%02x", ch);
  }
  out[o] = 0;
  return out;
}

static uint64_t second;
static unsigned lines;
static unsigned long left_out;

void mon_gate_flush(uint64_t now) {
  if (!left_out || now / 1000000000ull == second) return;
  C4_WARN("c4mon: %lu more refusals were not logged (at most %d lines a second)", left_out,
          MON_GATE_LOG_PER_S);
  left_out = 0;
}

void mon_gate_refused(uint64_t now, const char *what, const char *job, const char *host,
                      const char *why) {
  if (now / 1000000000ull != second) {
    mon_gate_flush(now);
    second = now / 1000000000ull;
    lines = 0;
  }
  if (lines >= MON_GATE_LOG_PER_S) {
    left_out++;
    return;
  }
  lines++;
  char j[4 * C4_FRAME_NAME + 8], h[4 * C4_FRAME_NAME + 8];
  C4_WARN("c4mon: refused %s%s%s%s%s%s: %s", what, job ? " of job \"" : "",
          job ? mon_gate_escape(job, j, sizeof j) : "", job ? "\"" : "", host ? " on host " : "",
          host ? mon_gate_escape(host, h, sizeof h) : "", why);
}
