/* test_ring.c -- the lock-free MPMC ring: order, drops when full, wrap-around, and exactly-once
 * delivery under concurrent producers. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "../check_run.h"
#include "c4_err.h"
#include "c4_ring.h"

START_TEST(pops_come_out_in_push_order) {
  struct c4_ring r;
  ck_assert_int_eq(c4_ring_init(&r, 8, sizeof(uint64_t)), 0);
  for (uint64_t i = 0; i < 5; i++)
    ck_assert(c4_ring_push(&r, &i));
  uint64_t v;
  for (uint64_t i = 0; i < 5; i++) {
    ck_assert(c4_ring_pop(&r, &v));
    ck_assert_uint_eq(v, i);
  }
  ck_assert(!c4_ring_pop(&r, &v));
  c4_ring_free(&r);
}
END_TEST

START_TEST(a_full_ring_drops_and_counts_without_waiting) {
  struct c4_ring r;
  ck_assert_int_eq(c4_ring_init(&r, 4, sizeof(uint64_t)), 0);
  uint64_t v = 7;
  for (int i = 0; i < 4; i++)
    ck_assert(c4_ring_push(&r, &v));
  for (int i = 0; i < 10; i++)
    ck_assert(!c4_ring_push(&r, &v));
  ck_assert_uint_eq(c4_ring_dropped(&r), 10);
  ck_assert(c4_ring_pop(&r, &v));
  ck_assert(c4_ring_push(&r, &v)); /* room again after a pop */
  c4_ring_free(&r);
}
END_TEST

START_TEST(bad_capacities_are_refused) {
  struct c4_ring r;
  ck_assert_int_eq(c4_ring_init(&r, 6, 8), C4_EINVAL);
  ck_assert_int_eq(c4_ring_init(&r, 1, 8), C4_EINVAL);
  ck_assert_int_eq(c4_ring_init(&r, 8, 0), C4_EINVAL);
}
END_TEST

START_TEST(positions_wrap_around_many_times) {
  struct c4_ring r;
  ck_assert_int_eq(c4_ring_init(&r, 4, sizeof(uint64_t)), 0);
  uint64_t next = 0, v;
  for (uint64_t i = 0; i < 100000; i++) {
    ck_assert(c4_ring_push(&r, &i));
    if (i % 3 == 2)
      while (c4_ring_pop(&r, &v))
        ck_assert_uint_eq(v, next++);
  }
  while (c4_ring_pop(&r, &v))
    ck_assert_uint_eq(v, next++);
  ck_assert_uint_eq(next, 100000 - c4_ring_dropped(&r));
  c4_ring_free(&r);
}
END_TEST

START_TEST(clear_empties_the_ring_even_past_a_position_claimed_but_never_filled) {
  struct c4_ring r;
  ck_assert_int_eq(c4_ring_init(&r, 4, sizeof(uint64_t)), 0);
  uint64_t v = 1;
  atomic_fetch_add(&r.tail, 1); /* a producer claimed position 0 and vanished (fork) */
  ck_assert(c4_ring_push(&r, &v));
  ck_assert(!c4_ring_pop(&r, &v)); /* consumers wait for position 0 forever */
  for (int i = 0; i < 5; i++)
    c4_ring_push(&r, &v);
  ck_assert_uint_gt(c4_ring_dropped(&r), 0);
  c4_ring_clear(&r);
  ck_assert_uint_eq(c4_ring_dropped(&r), 0);
  ck_assert(!c4_ring_pop(&r, &v));
  for (uint64_t i = 10; i < 14; i++)
    ck_assert(c4_ring_push(&r, &i));
  for (uint64_t i = 10; i < 14; i++) {
    ck_assert(c4_ring_pop(&r, &v));
    ck_assert_uint_eq(v, i);
  }
  c4_ring_free(&r);
}
END_TEST

#define PRODUCERS 4
#define PER_PRODUCER 200000

static struct c4_ring shared;
static uint64_t pushed_ok[PRODUCERS];

static void *producer(void *arg) {
  uint64_t id = (uint64_t)(uintptr_t)arg;
  for (uint64_t i = 0; i < PER_PRODUCER; i++) {
    uint64_t v = id << 32 | i;
    pushed_ok[id] += c4_ring_push(&shared, &v);
  }
  return NULL;
}

START_TEST(concurrent_producers_deliver_every_accepted_element_exactly_once) {
  ck_assert_int_eq(c4_ring_init(&shared, 1024, sizeof(uint64_t)), 0);
  static unsigned char seen[PRODUCERS][PER_PRODUCER];
  pthread_t t[PRODUCERS];
  for (uintptr_t i = 0; i < PRODUCERS; i++)
    pthread_create(&t[i], NULL, producer, (void *)i);
  uint64_t popped = 0, v;
  int joined[PRODUCERS] = {0}, running = PRODUCERS;
  for (;;) {
    if (c4_ring_pop(&shared, &v)) {
      uint64_t id = v >> 32, i = v & 0xffffffffu;
      ck_assert_uint_lt(id, PRODUCERS);
      ck_assert_int_eq(seen[id][i], 0); /* never twice */
      seen[id][i] = 1;
      popped++;
      continue;
    }
    if (!running) break; /* producers done and the ring is empty */
    for (int k = 0; k < PRODUCERS; k++)
      if (!joined[k] && pthread_tryjoin_np(t[k], NULL) == 0) {
        joined[k] = 1;
        running--;
      }
  }
  uint64_t accepted = 0;
  for (int k = 0; k < PRODUCERS; k++)
    accepted += pushed_ok[k];
  ck_assert_uint_eq(popped, accepted);
  ck_assert_uint_eq(accepted + c4_ring_dropped(&shared), (uint64_t)PRODUCERS * PER_PRODUCER);
  c4_ring_free(&shared);
}
END_TEST

int main(void) {
  Suite *s = suite_create("ring");
  TCase *tc = tcase_create("ring");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, pops_come_out_in_push_order);
  tcase_add_test(tc, a_full_ring_drops_and_counts_without_waiting);
  tcase_add_test(tc, bad_capacities_are_refused);
  tcase_add_test(tc, positions_wrap_around_many_times);
  tcase_add_test(tc, clear_empties_the_ring_even_past_a_position_claimed_but_never_filled);
  tcase_add_test(tc, concurrent_producers_deliver_every_accepted_element_exactly_once);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
