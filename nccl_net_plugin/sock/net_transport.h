/* net_transport.h -- the socket transport's core: listen, connect, accept, isend, irecv, test,
 * close. Version-independent; its backend table (net_sock_backend.c) serves the API layer. */
#ifndef C4_NET_TRANSPORT_H
#define C4_NET_TRANSPORT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "c4_record.h"
#include "net_config.h"
#include "net_stats.h"
#include "net_wire.h"

struct c4_listen_comm;
struct c4_comm;
struct c4_request;

/* Opens a listener on addr for plugin device dev and writes the 128-byte handle. *out is owned by
 * the caller until c4_transport_close_listen. */
int c4_transport_listen(const struct c4_transport_config *cfg, int dev, uint64_t nccl_comm,
                        const struct sockaddr_storage *addr, void *handle,
                        struct c4_listen_comm **out);

/* Polled: makes progress on connecting to handle. Sets *out to a send comm when the connection
 * is ready, else leaves it NULL (call again). Keeps its progress in the handle's scratch bytes, so
 * the caller must pass the same handle buffer on every call. Returns 0 or a negative C4_E* code
 * (the connection then failed for good and the handle's progress is released). */
int c4_transport_connect(const struct c4_transport_config *cfg, int dev, uint64_t nccl_comm,
                         void *handle, struct c4_comm **out);

/* Polled: accepts and checks incoming connections without blocking; sets *out to a receive
 * comm once one c4 connector has fully connected. Bad peers are closed, counted and logged. */
int c4_transport_accept(struct c4_listen_comm *l, struct c4_comm **out);

int c4_transport_close_listen(struct c4_listen_comm *l);

/* Posts a send. *req stays NULL when the receiver has not posted yet (call again). */
int c4_transport_isend(struct c4_comm *c, void *data, size_t size, int tag,
                       struct c4_request **req);

/* Posts one receive (maxRecvs is 1). *req stays NULL when all 32 slots are busy. */
int c4_transport_irecv(struct c4_comm *c, void *data, size_t size, int tag,
                       struct c4_request **req);

/* Sets *done, and *size (may be NULL) to the bytes moved, once req completes; req is then freed.
 * Returns a negative C4_E* code when req or its comm failed (req is freed then, too). */
int c4_transport_test(struct c4_request *req, int *done, size_t *size);

/* Stops the helper threads, closes the sockets and frees c; requests still in flight are
 * abandoned (the peer sees the connection close). */
int c4_transport_close(struct c4_comm *c);

/* The connection's link info (for NCCL's profiler callback) the first time it is asked for,
 * NULL afterwards: the profiler needs it once per connection. Caller thread only. */
struct c4_link_info *c4_transport_link_once(struct c4_comm *c);

#endif
