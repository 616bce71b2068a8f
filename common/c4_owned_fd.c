/* c4_owned_fd.c -- descriptors that c4 writes to and closes only while they are its own. */
#include "c4_owned_fd.h"

#include <sys/stat.h>
#include <unistd.h>

#include "c4_err.h"

int c4_owned_take(struct c4_owned_fd *o, int fd) {
  struct stat st;
  o->fd = -1;
  if (fd < 0 || fstat(fd, &st) != 0) return C4_ESYS;
  *o = (struct c4_owned_fd){.fd = fd, .dev = st.st_dev, .ino = st.st_ino};
  return 0;
}

int c4_owned_still(const struct c4_owned_fd *o) {
  struct stat st;
  return o->fd >= 0 && fstat(o->fd, &st) == 0 && st.st_dev == o->dev && st.st_ino == o->ino;
}

void c4_owned_close(struct c4_owned_fd *o) {
  if (c4_owned_still(o)) close(o->fd);
  o->fd = -1;
}
