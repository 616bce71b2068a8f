/* cuda_memory.cu -- device memory for the CUDA kernels (cudaMalloc, cudaMemcpy on the default
 * stream), the error exit every file uses, c4k_cuda_device_count for tools that must tell
 * "no GPU here" from a failure, and c4k_cuda_select_device for the trainer's ranks. */
#include <stdio.h>
#include <stdlib.h>

#include "cuda_common.cuh"

void c4k_cuda_die(const char *file, int line, const char *what, const char *why) {
  fprintf(stderr, "c4k-cuda: %s:%d: %s failed: %s\n", file, line, what, why);
  abort();
}

/* Number of CUDA devices this process can use; 0 when there is none or the driver cannot be
 * used, with *why (if why is not NULL) set to the runtime's reason, a static string. Never
 * aborts, so a caller can probe before touching any other op. */
extern "C" __attribute__((visibility("default"))) int c4k_cuda_device_count(const char **why) {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError(); /* clear it, so later calls do not report it again */
    if (why) *why = cudaGetErrorString(err);
    return 0;
  }
  if (why) *why = n > 0 ? NULL : "no CUDA-capable device is detected";
  return n;
}

/* Makes local_rank's GPU, modulo the GPUs there are, the current device of the runtime these
 * kernels run on (the one linked into this library: a caller's own dlopen of libcudart could find
 * another). Returns the device, or -1 with *why (if not NULL) set to the runtime's reason. */
extern "C" __attribute__((visibility("default"))) int c4k_cuda_select_device(int local_rank,
                                                                            const char **why) {
  int n = c4k_cuda_device_count(why);
  if (n < 1) return -1;
  int dev = (local_rank < 0 ? 0 : local_rank) % n;
  cudaError_t err = cudaSetDevice(dev);
  if (err != cudaSuccess) {
    cudaGetLastError();
    if (why) *why = cudaGetErrorString(err);
    return -1;
  }
  return dev;
}

/* Zeroed device memory, or NULL (with the reason on stderr) when the device has none to give. */
void *c4k_cuda_alloc(size_t bytes) {
  void *p = NULL;
  cudaError_t err = cudaMalloc(&p, bytes ? bytes : 1);
  if (err == cudaSuccess) err = cudaMemset(p, 0, bytes);
  if (err != cudaSuccess) {
    cudaFree(p);
    cudaGetLastError(); /* a failed allocation is not a device fault: clear it */
    fprintf(stderr, "c4k-cuda: cannot allocate %zu bytes of device memory: %s\n", bytes,
            cudaGetErrorString(err));
    return NULL;
  }
  return p;
}

void c4k_cuda_free(void *p) { C4K_CUDA_CHECK(cudaFree(p)); }

/* cudaMemcpy on the legacy default stream waits for earlier work and returns once the copy is
 * done, which is the ordering c4k.h promises for upload and download. */
void c4k_cuda_upload(void *dst, const void *host_src, size_t bytes) {
  C4K_CUDA_CHECK(cudaMemcpy(dst, host_src, bytes, cudaMemcpyHostToDevice));
}

void c4k_cuda_download(void *host_dst, const void *src, size_t bytes) {
  C4K_CUDA_CHECK(cudaMemcpy(host_dst, src, bytes, cudaMemcpyDeviceToHost));
}

void c4k_cuda_zero(void *p, size_t bytes) { C4K_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, 0)); }

void c4k_cuda_sync(void) { C4K_CUDA_CHECK(cudaDeviceSynchronize()); }
