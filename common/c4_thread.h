/* c4_thread.h -- the threads c4 starts inside someone else's process. */
#ifndef C4_THREAD_H
#define C4_THREAD_H

#include <pthread.h>

/* Starts fn(arg) on a new thread with every signal blocked in it. A thread of c4's inside a
 * training job must never be the one a signal meant for the program lands on: a program that
 * blocks SIGUSR1 in its threads to collect it with sigwait was killed by it, delivered to c4's
 * thread, where it was not blocked. The caller's mask is left as it was. Returns 0, or the error
 * number pthread_create gave. */
int c4_thread_start(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

#endif
