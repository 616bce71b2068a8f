/* scen_sink.h -- a byte stream to a file, written by a thread of its own so that making the
 * bytes and the kernel taking them overlap (a 16,384-rank trace is gigabytes). */
#ifndef C4_SCEN_SINK_H
#define C4_SCEN_SINK_H

#include <stddef.h>
#include <stdint.h>

struct c4_scen_sink;

/* Opens path for writing ("-": standard output) and starts the writer thread. Returns 0 with
 * *out set, C4_ESYS (errno kept) or C4_ENOMEM. */
int c4_scen_sink_open(struct c4_scen_sink **out, const char *path);

/* Room for n more bytes (n <= 1 MiB), valid until c4_scen_sink_wrote; NULL once a write has
 * failed. */
uint8_t *c4_scen_sink_space(struct c4_scen_sink *s, size_t n);

/* Commits the n bytes just put into the room c4_scen_sink_space gave. */
void c4_scen_sink_wrote(struct c4_scen_sink *s, size_t n);

/* Appends n bytes; 0 or C4_ESYS. */
int c4_scen_sink_put(struct c4_scen_sink *s, const void *p, size_t n);

/* Writes the rest, stops the thread, closes the file (not standard output) and frees s.
 * Returns 0 or C4_ESYS with errno set to the first failure's. */
int c4_scen_sink_close(struct c4_scen_sink *s);

#endif
