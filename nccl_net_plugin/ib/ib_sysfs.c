/* ib_sysfs.c -- an RDMA device's PCI path, RoCEv2 GID choice and GPUDirect checks, from sysfs. */
#include "ib_sysfs.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c4_err.h"
#include "nccl_net_abi.h"

int c4_ib_pci_path(const char *sysfs_root, const char *dev, char *out, size_t len) {
  if (!out || len < 2) return C4_EINVAL;
  out[0] = '\0';
  char link[PATH_MAX], real[PATH_MAX];
  if (snprintf(link, sizeof link, "%s/class/infiniband/%s/device", sysfs_root, dev) >=
      (int)sizeof link)
    return C4_ENOTFOUND;
  if (!realpath(link, real)) return C4_ENOTFOUND;
  if (strlen(real) >= len) return C4_EINVAL;
  memcpy(out, real, strlen(real) + 1);
  return 0;
}

/* The first line of a small file into buf without its newline. Returns 0 or C4_ENOTFOUND. */
static int read_line(const char *path, char *buf, size_t len) {
  FILE *f = fopen(path, "re");
  if (!f) return C4_ENOTFOUND;
  char *got = fgets(buf, (int)len, f);
  fclose(f);
  if (!got) return C4_ENOTFOUND;
  buf[strcspn(buf, "\n")] = '\0';
  return 0;
}

static int hexval(int ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  ch = tolower(ch);
  return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

int c4_ib_gid_parse(const char *text, uint8_t gid[16]) {
  const char *p = text;
  for (int g = 0; g < 8; g++) {
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
      int h = hexval((unsigned char)p[k]);
      if (h < 0) return C4_EINVAL;
      v = v << 4 | (unsigned)h;
    }
    gid[2 * g] = (uint8_t)(v >> 8);
    gid[2 * g + 1] = (uint8_t)v;
    p += 4;
    if (g < 7 && *p++ != ':') return C4_EINVAL;
  }
  return *p == '\0' ? 0 : C4_EINVAL;
}

static int is_v4_mapped(const uint8_t g[16]) {
  static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return memcmp(g, prefix, sizeof prefix) == 0;
}

static int is_zero_or_link_local(const uint8_t g[16]) {
  static const uint8_t zero[16];
  return memcmp(g, zero, 16) == 0 || (g[0] == 0xfe && (g[1] & 0xc0) == 0x80);
}

int c4_ib_gid_pick(const char *sysfs_root, const char *dev, int port, int gid_tbl_len, int given,
                   int *out) {
  if (given >= 0) {
    if (given >= gid_tbl_len) return C4_EINVAL;
    *out = given;
    return 0;
  }
  int any_v2 = -1;
  for (int i = 0; i < gid_tbl_len; i++) {
    char path[PATH_MAX], type[64], text[64];
    snprintf(path, sizeof path, "%s/class/infiniband/%s/ports/%d/gid_attrs/types/%d", sysfs_root,
             dev, port, i);
    /* unused entries have no type: reading them fails */
    if (read_line(path, type, sizeof type) != 0 || strcmp(type, "RoCE v2") != 0) continue;
    snprintf(path, sizeof path, "%s/class/infiniband/%s/ports/%d/gids/%d", sysfs_root, dev, port,
             i);
    uint8_t gid[16];
    if (read_line(path, text, sizeof text) != 0 || c4_ib_gid_parse(text, gid) != 0) continue;
    if (is_v4_mapped(gid)) {
      *out = i;
      return 0;
    }
    if (any_v2 < 0 && !is_zero_or_link_local(gid)) any_v2 = i;
  }
  if (any_v2 < 0) return C4_ENOTFOUND;
  *out = any_v2;
  return 0;
}

static int exists(const char *root, const char *rel) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  return access(path, F_OK) == 0;
}

int c4_ib_peermem_loaded(const char *sysfs_root, const char *proc_modules) {
  if (exists(sysfs_root, "kernel/mm/memory_peers/nv_mem/version") ||
      exists(sysfs_root, "kernel/mm/memory_peers/nv_mem_nc/version") ||
      exists(sysfs_root, "module/nvidia_peermem"))
    return 1;
  FILE *f = proc_modules ? fopen(proc_modules, "re") : NULL;
  if (!f) return 0;
  char line[512];
  int found = 0;
  while (!found && fgets(line, sizeof line, f)) {
    size_t n = strcspn(line, " ");
    found = (n == strlen("nvidia_peermem") && strncmp(line, "nvidia_peermem", n) == 0) ||
            (n == strlen("nv_peer_mem") && strncmp(line, "nv_peer_mem", n) == 0);
  }
  fclose(f);
  return found;
}

int c4_ib_ptr_support(int gdr_allowed, int peermem, int dmabuf_ok) {
  int bits = NCCL_PTR_HOST;
  if (!gdr_allowed) return bits;
  if (peermem || dmabuf_ok) bits |= NCCL_PTR_CUDA;
  if (dmabuf_ok) bits |= NCCL_PTR_DMABUF;
  return bits;
}
