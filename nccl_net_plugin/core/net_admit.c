/* net_admit.c -- the unproven connections' slots and their rate-limited log (net_admit.h). */
#include "net_admit.h"

#include <stdatomic.h>
#include <string.h>

#include "c4_clock.h"
#include "c4_log.h"
#include "net_stats.h"
#include "net_wire.h"

static atomic_int held;
static atomic_ulong closed_since_log;
static _Atomic uint64_t last_log_ns;

int c4_admit_judge(const uint8_t *buf, size_t got, uint64_t nonce) {
  struct c4_wire_hello ref = {.version = C4_WIRE_VERSION, .nonce = nonce};
  uint8_t want[C4_HELLO_SIZE];
  c4_wire_put_hello(want, &ref);
  size_t n = got < C4_ADMIT_PROOF_BYTES ? got : C4_ADMIT_PROOF_BYTES;
  if (memcmp(buf, want, n < 4 ? n : 4) != 0) return C4_ADMIT_BAD;        /* magic */
  if (n >= 6 && memcmp(buf + 4, want + 4, 2) != 0) return C4_ADMIT_WAIT; /* other version */
  if ((n >= 7 && buf[6] > C4_HELLO_DATA) || (n >= 8 && buf[7] != 0)) return C4_ADMIT_BAD;
  if (n > 8 && memcmp(buf + 8, want + 8, n - 8) != 0) return C4_ADMIT_BAD; /* nonce */
  return n == C4_ADMIT_PROOF_BYTES ? C4_ADMIT_PROVEN : C4_ADMIT_WAIT;
}

int c4_admit_take(void) {
  if (atomic_fetch_add(&held, 1) < C4_ADMIT_UNPROVEN_TOTAL) return 1;
  atomic_fetch_sub(&held, 1);
  return 0;
}

void c4_admit_release(void) { atomic_fetch_sub(&held, 1); }

void c4_admit_closed(const char *what, int dev, const char *from, const char *why) {
  atomic_fetch_add(&c4_transport_stats.rejected_peers, 1);
  atomic_fetch_add(&c4_transport_stats.unproven_closed, 1);
  atomic_fetch_add(&closed_since_log, 1);
  uint64_t now = c4_now_ns(), last = atomic_load(&last_log_ns);
  if (last && now - last < C4_ADMIT_LOG_INTERVAL_S * 1000000000ull) return;
  if (!atomic_compare_exchange_strong(&last_log_ns, &last, now)) return;
  unsigned long n = atomic_exchange(&closed_since_log, 0);
  C4_WARN("listeners closed %lu connection%s that never proved they hold a listener's handle "
          "(silent, truncated or not c4) in the last %d s; latest: %s %d from %s: %s. The job's "
          "own connections keep their slots; next summary in %d s at the earliest",
          n, n == 1 ? "" : "s", C4_ADMIT_LOG_INTERVAL_S, what, dev, from, why,
          C4_ADMIT_LOG_INTERVAL_S);
}
