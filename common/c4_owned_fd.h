/* c4_owned_fd.h -- a descriptor c4 opened inside someone else's process, and whether it still is
 * c4's. A program may close every descriptor it did not open, or dup2 its own over one, while
 * c4's thread runs: the number then names the program's file or socket. Written to, c4's frames
 * landed in the program's socket and its trace lines in the program's output; closed, the
 * program's file was shut under it. So the file's identity (device and inode) is kept, and every
 * write and the close ask first. */
#ifndef C4_OWNED_FD_H
#define C4_OWNED_FD_H

#include <sys/types.h>

struct c4_owned_fd {
  int fd; /* -1: none */
  dev_t dev;
  ino_t ino;
};

/* Takes fd as c4's, noting what it is. Returns 0, or C4_ESYS (fd is then not taken). */
int c4_owned_take(struct c4_owned_fd *o, int fd);

/* Whether o still names the file c4 opened under its number. */
int c4_owned_still(const struct c4_owned_fd *o);

/* Closes o's descriptor if it is still c4's, and forgets it either way. */
void c4_owned_close(struct c4_owned_fd *o);

#endif
