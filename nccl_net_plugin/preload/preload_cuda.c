/* preload_cuda.c -- cudaEventCreateWithFlags / Record / Query / Destroy through dlopen: the shim
 * only ever queries events (never synchronizes the caller's stream). */
#include "preload_cuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "c4_log.h"

#define CUDA_EVENT_DISABLE_TIMING 0x02
#define CUDA_SUCCESS 0
#define CUDA_ERROR_NOT_READY 600

static struct {
  pthread_once_t once;
  int (*create)(void **ev, unsigned flags);
  int (*record)(void *ev, void *stream);
  int (*query)(void *ev);
  int (*destroy)(void *ev);
} cuda = {.once = PTHREAD_ONCE_INIT};

static void cuda_load(void) {
  const char *names[] = {getenv("C4_CUDART"), "libcudart.so.13", "libcudart.so.12", "libcudart.so"};
  void *dl = NULL;
  for (unsigned i = 0; i < sizeof names / sizeof *names && !dl; i++) {
    if (names[i] && *names[i]) dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (i == 0 && names[0] && *names[0] && !dl) /* not the one asked for: said, not passed over */
      C4_WARN_SETTING("C4_CUDART=%s: %s; looking for the usual CUDA runtime", names[0], dlerror());
  }
  if (!dl) {
    C4_INFO("shim: no CUDA runtime found; collective completion times will be unknown");
    return;
  }
  cuda.create = (int (*)(void **, unsigned))dlsym(dl, "cudaEventCreateWithFlags");
  cuda.record = (int (*)(void *, void *))dlsym(dl, "cudaEventRecord");
  cuda.query = (int (*)(void *))dlsym(dl, "cudaEventQuery");
  cuda.destroy = (int (*)(void *))dlsym(dl, "cudaEventDestroy");
  if (!cuda.create || !cuda.record || !cuda.query || !cuda.destroy) {
    C4_WARN("shim: the CUDA runtime lacks the event functions; completion times will be unknown");
    cuda.create = NULL;
  }
}

c4_cuda_event c4_cuda_event_record(cudaStream_t stream) {
  pthread_once(&cuda.once, cuda_load);
  if (!cuda.create) return NULL;
  void *ev = NULL;
  if (cuda.create(&ev, CUDA_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return NULL;
  if (cuda.record(ev, stream) != CUDA_SUCCESS) {
    cuda.destroy(ev);
    return NULL;
  }
  return ev;
}

int c4_cuda_event_done(c4_cuda_event ev) {
  int rc = cuda.query(ev);
  return rc == CUDA_SUCCESS ? 1 : rc == CUDA_ERROR_NOT_READY ? 0 : -1;
}

void c4_cuda_event_free(c4_cuda_event ev) {
  if (ev && cuda.destroy) cuda.destroy(ev);
}
