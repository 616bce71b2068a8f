/* net_inner.h -- whether this c4 runs inside another c4 (wrap mode's inner plugin, docs/wrap.md):
 * then it forwards without timing, telemetry, C4_WRAP or profiler link reports. */
#ifndef C4_NET_INNER_H
#define C4_NET_INNER_H

/* The exported function of a c4 plugin that switches it into inner mode; the outer c4 calls it
 * after dlopen, before init. */
#define C4_WRAP_INNER_SYMBOL "c4_net_wrap_set_inner"

/* 1 once an outer c4 switched this one into inner mode. */
int c4_net_is_inner(void);

#endif
