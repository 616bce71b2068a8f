/* ib_verbs.c -- dlopen of libibverbs and the table of functions the verbs transport calls. */
#include "ib_verbs.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "c4_err.h"

/* Resolves one symbol into *slot; a missing required one fails the load. */
static int resolve(void *lib, const char *name, void *slot, int required, char *err,
                   size_t errlen) {
  void *f = dlsym(lib, name);
  memcpy(slot, &f, sizeof f); /* object pointer to function pointer, as POSIX allows */
  if (!f && required) {
    snprintf(err, errlen, "libibverbs has no %s (rdma-core too old?)", name);
    return C4_ENOTFOUND;
  }
  return 0;
}

int c4_ibv_load(const char *lib, struct c4_ibv *t, char *err, size_t errlen) {
  memset(t, 0, sizeof *t);
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(err, errlen, "cannot load %s: %s", lib, dlerror());
    return C4_ENOTFOUND;
  }
  struct {
    const char *name;
    void *slot;
    int required;
  } syms[] = {
      {"ibv_get_device_list", &t->get_device_list, 1},
      {"ibv_free_device_list", &t->free_device_list, 1},
      {"ibv_get_device_name", &t->get_device_name, 1},
      {"ibv_open_device", &t->open_device, 1},
      {"ibv_close_device", &t->close_device, 1},
      {"ibv_query_device", &t->query_device, 1},
      {"ibv_query_port", &t->query_port, 1},
      {"ibv_query_gid", &t->query_gid, 1},
      {"ibv_alloc_pd", &t->alloc_pd, 1},
      {"ibv_dealloc_pd", &t->dealloc_pd, 1},
      {"ibv_reg_mr", &t->reg_mr, 1},
      {"ibv_reg_dmabuf_mr", &t->reg_dmabuf_mr, 0},
      {"ibv_dereg_mr", &t->dereg_mr, 1},
      {"ibv_create_cq", &t->create_cq, 1},
      {"ibv_destroy_cq", &t->destroy_cq, 1},
      {"ibv_create_qp", &t->create_qp, 1},
      {"ibv_modify_qp", &t->modify_qp, 1},
      {"ibv_destroy_qp", &t->destroy_qp, 1},
      {"ibv_wc_status_str", &t->wc_status_str, 1},
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
    if (resolve(h, syms[i].name, syms[i].slot, syms[i].required, err, errlen) != 0) {
      dlclose(h);
      memset(t, 0, sizeof *t);
      return C4_ENOTFOUND;
    }
  t->lib = h;
  return 0;
}

void c4_ibv_unload(struct c4_ibv *t) {
  if (t->lib) dlclose(t->lib);
  memset(t, 0, sizeof *t);
}
