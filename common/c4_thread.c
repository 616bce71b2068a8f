/* c4_thread.c -- threads that take none of the program's signals (c4_thread.h). */
#include "c4_thread.h"

#include <signal.h>

int c4_thread_start(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
  sigset_t all, was;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &was); /* a new thread inherits the mask it was started with */
  int rc = pthread_create(t, attr, fn, arg);
  pthread_sigmask(SIG_SETMASK, &was, NULL);
  return rc;
}
