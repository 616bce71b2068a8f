/* ib_sysfs.h -- what the verbs transport reads from sysfs and procfs about an RDMA device: its PCI
 * path, the GID index a RoCEv2 QP should use, and whether GPU memory can be registered (GPUDirect
 * RDMA). Every function takes the tree's root, so tests hand it a fake tree in a temp dir. */
#ifndef C4_IB_SYSFS_H
#define C4_IB_SYSFS_H

#include <stddef.h>
#include <stdint.h>

/* Writes into out (len bytes) the real path of <sysfs_root>/class/infiniband/<dev>/device (the
 * PCI function, e.g. "/sys/devices/pci0000:00/0000:00:02.0/0000:3b:00.0"), which NCCL compares
 * with the GPUs' paths to find the closest NIC. Returns 0; C4_ENOTFOUND (out "") when the link
 * is missing or does not resolve; C4_EINVAL when out is NULL or too small. */
int c4_ib_pci_path(const char *sysfs_root, const char *dev, char *out, size_t len);

/* Parses a GID as sysfs writes it ("0000:0000:0000:0000:0000:ffff:c612:0001") into 16 bytes.
 * Returns 0, or C4_EINVAL for anything else. */
int c4_ib_gid_parse(const char *text, uint8_t gid[16]);

/* The GID index for a RoCE port: `given` when >= 0 (NCCL_IB_GID_INDEX), after checking it is below
 * gid_tbl_len; otherwise the first index whose type (<root>/class/infiniband/<dev>/ports/<port>/
 * gid_attrs/types/<i>) is "RoCE v2" and whose GID (.../gids/<i>) is IPv4-mapped (::ffff:a.b.c.d),
 * else the first RoCE v2 GID that is not zero and not link-local (fe80::/10). Sets *out and
 * returns 0, or returns C4_ENOTFOUND (no such GID: the port has no IP address on its netdev) or
 * C4_EINVAL (given out of range). */
int c4_ib_gid_pick(const char *sysfs_root, const char *dev, int port, int gid_tbl_len, int given,
                   int *out);

/* Is a GPUDirect RDMA peer-memory module loaded? True when one of <sysfs_root>/kernel/mm/
 * memory_peers/{nv_mem,nv_mem_nc}/version or <sysfs_root>/module/nvidia_peermem exists, or
 * proc_modules (normally /proc/modules) lists nvidia_peermem or nv_peer_mem. */
int c4_ib_peermem_loaded(const char *sysfs_root, const char *proc_modules);

/* NCCL_PTR_* bits for a device: HOST always; CUDA when peer memory is loaded or dma-buf
 * registration works (dmabuf_ok), DMABUF with the latter. gdr_allowed 0 (C4_IB_GDR=0) gives
 * HOST only. */
int c4_ib_ptr_support(int gdr_allowed, int peermem, int dmabuf_ok);

#endif
