/* net_wrap_backend.c -- wrap mode's backend table: the forwarded calls of net_wrap.c and
 * net_wrap_req.c, offered to the API layer when C4_WRAP names a plugin c4 can use. */
#include "backend.h"
#include "c4_telemetry.h"
#include "net_wrap.h"

/* Turns wrap mode on when C4_WRAP names a usable plugin, offers the optional entry points exactly
 * when the wrapped plugin has them (so NCCL sees the features it would see unwrapped), and starts
 * the watch over wrapped requests. */
static int wrap_setup(void) {
  if (!c4_wrap_setup()) return 0;
  if (c4_wrap_has(C4_WI_GET_DEVICE_MR)) c4_net_backend_wrap.get_device_mr = c4_wrap_get_device_mr;
  if (c4_wrap_has(C4_WI_IRECV_CONSUMED))
    c4_net_backend_wrap.irecv_consumed = c4_wrap_irecv_consumed;
  if (c4_wrap_has(C4_WI_MAKE_VDEVICE)) c4_net_backend_wrap.make_vdevice = c4_wrap_make_vdevice;
  if (c4_wrap_has(C4_WI_SET_NET_ATTR)) c4_net_backend_wrap.set_net_attr = c4_wrap_set_net_attr;
  c4_telemetry_add_periodic(c4_wrap_watch_scan);
  c4_telemetry_start();
  return 1;
}

struct c4_net_backend c4_net_backend_wrap = {
    .name = "wrap",
    .setup = wrap_setup,
    .init = c4_wrap_init,
    .finalize = c4_wrap_finalize,
    .devices = c4_wrap_devices,
    .properties = c4_wrap_properties,
    .listen = c4_wrap_listen,
    .connect = c4_wrap_connect,
    .accept = c4_wrap_accept,
    .reg_mr = c4_wrap_reg_mr,
    .reg_mr_dmabuf = c4_wrap_reg_mr_dmabuf,
    .dereg_mr = c4_wrap_dereg_mr,
    .isend = c4_wrap_isend,
    .irecv = c4_wrap_irecv,
    .iflush = c4_wrap_iflush,
    .test = c4_wrap_test,
    .close = c4_wrap_close,
    .close_listen = c4_wrap_close_listen,
    .link_once = c4_wrap_link_once,
};
