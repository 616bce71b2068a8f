/* cpu_memory.c -- host memory for the CPU kernels: the "device" is the host, so moving data is a
 * memcpy and there is nothing to wait for. */
#include <stdlib.h>
#include <string.h>

/* 64 bytes: a cache line, and the widest vector load (AVX-512) the loops may use. */
#define CPU_ALIGN 64

/* Zeroed, 64-byte aligned memory that the caller frees with c4k_cpu_free; NULL when the host has
 * none to give. Zero bytes still return a distinct pointer, so NULL always means failure. */
void *c4k_cpu_alloc(size_t bytes) {
  size_t rounded = (bytes + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN;
  if (rounded < bytes) return NULL; /* bytes near SIZE_MAX */
  void *p = NULL;
  if (posix_memalign(&p, CPU_ALIGN, rounded ? rounded : CPU_ALIGN) != 0) return NULL;
  memset(p, 0, rounded);
  return p;
}

void c4k_cpu_free(void *p) { free(p); }

void c4k_cpu_upload(void *dst, const void *host_src, size_t bytes) { memcpy(dst, host_src, bytes); }

void c4k_cpu_download(void *host_dst, const void *src, size_t bytes) {
  memcpy(host_dst, src, bytes);
}

void c4k_cpu_zero(void *p, size_t bytes) { memset(p, 0, bytes); }

/* Every CPU op has finished when it returns, so there is never anything to wait for. */
void c4k_cpu_sync(void) {}
