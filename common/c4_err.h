/* c4_err.h -- c4's error codes: every internal function returns 0 or one of these (negative). */
#ifndef C4_ERR_H
#define C4_ERR_H

enum {
  C4_OK = 0,
  C4_EINVAL = -1,  /* bad argument or bad configuration */
  C4_ENOMEM = -2,  /* allocation failed */
  C4_ESYS = -3,    /* a system call failed; errno was logged */
  C4_EPROTO = -4,  /* the peer broke the wire protocol (wrong magic, version, truncated, garbage) */
  C4_EREMOTE = -5, /* the peer reported an error or went away */
  C4_EAGAIN = -6,  /* not ready yet; call again */
  C4_ETRUNC = -7,  /* a message was larger than the posted receive buffer */
  C4_ENOTFOUND = -8, /* no such device, interface, symbol or file */
  /* The rest name what a wrapped NCCL net plugin (C4_WRAP) returned, so that its ncclResult_t
   * comes back out of c4 unchanged. */
  C4_EINTERNAL = -9,   /* ncclInternalError: an internal error */
  C4_EUSAGE = -10,     /* ncclInvalidUsage: a call the plugin does not allow here */
  C4_ECUDA = -11,      /* ncclUnhandledCudaError */
  C4_EINPROGRESS = -12 /* ncclInProgress */
};

/* Not an error: the "none" answer of a function that returns an index, a descriptor, a count or
 * a rank (no such entry, no socket, not set). Callers test it with < 0 like an error; it is
 * named apart so that a reader can tell "nothing there" from "something went wrong". */
#define C4_NONE (-1)

/* Returns a static, human-readable name for a C4_E* code. */
const char *c4_strerror(int code);

#endif
