/* preload_cuda.h -- CUDA events for the shim, from libcudart loaded at run time (the shim itself
 * needs no CUDA to build or load). C4_CUDART names the library; else libcudart.so.13, .so.12, .so.
 */
#ifndef C4_PRELOAD_CUDA_H
#define C4_PRELOAD_CUDA_H

#include "preload_abi.h"

typedef void *c4_cuda_event;

/* Records an event on stream; NULL when CUDA is not available or recording failed. */
c4_cuda_event c4_cuda_event_record(cudaStream_t stream);
/* 1 done, 0 not yet, -1 failed. Never waits. */
int c4_cuda_event_done(c4_cuda_event ev);
void c4_cuda_event_free(c4_cuda_event ev);

#endif
