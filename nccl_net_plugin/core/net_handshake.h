/* net_handshake.h -- what the socket transport (net_accept.c, net_connect.c) and the verbs
 * transport (ib_conn.c) share of c4's TCP handshake (docs/wire.md): the listener opens and writes
 * its handle, accepts without blocking and checks hellos; the connector keeps its progress in the
 * handle and explains a refusing ack. */
#ifndef C4_NET_HANDSHAKE_H
#define C4_NET_HANDSHAKE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "net_config.h"
#include "net_wire.h"

/* Opens a non-blocking listener on addr (cfg's C4_LISTEN_PORTS) for plugin device dev and writes
 * the 128-byte handle naming it: a fresh nonce (*nonce) and this process's identity (*self).
 * Returns the listening fd, or a negative C4_E* code (nothing is left open). */
int c4_handshake_listen(const struct c4_transport_config *cfg, int dev,
                        const struct sockaddr_storage *addr, void *handle, uint64_t *nonce,
                        struct c4_identity *self);

/* Accepts one waiting connection on listening socket fd without blocking and writes the peer's
 * "host:port" to from. Returns the new non-blocking fd, or C4_EAGAIN when none is waiting; a
 * failure other than "none waiting" is logged as "accept on <what> <dev> failed" and also gives
 * C4_EAGAIN (the listener stays, the next poll tries again). */
int c4_handshake_accept(int fd, const char *what, int dev, char *from, size_t fromlen);

/* Decodes the hello in `in` into h and checks that it is meant for the listener with nonce. A
 * hello of another wire version is answered on fd with C4_ACK_BAD_VERSION (best effort). Returns
 * 0, or C4_EINVAL (other version) or C4_EPROTO with the reason in err. */
int c4_handshake_check_hello(int fd, const uint8_t in[C4_HELLO_SIZE], uint64_t nonce,
                             struct c4_wire_hello *h, char *err, size_t errlen);

/* The connector's progress lives in the handle's scratch bytes (0 on the wire), so NCCL's polled
 * connect finds it again: get returns the pointer stored there (NULL before the first call), set
 * stores s (NULL once the connect is over). The caller owns what the pointer points to. */
void *c4_handshake_scratch_get(const void *handle);
void c4_handshake_scratch_set(void *handle, void *s);

/* Why a listener's ack with status (c4_wire_get_ack's result, not C4_ACK_OK) refused us: a
 * sentence for the connector's log. */
const char *c4_handshake_ack_why(int status);

#endif
