/* conformance.h -- the conformance suite's parts, assembled by conformance.c. */
#ifndef C4_CONFORMANCE_H
#define C4_CONFORMANCE_H

#include <check.h>

void conformance_add_data_tests(Suite *s);
void conformance_add_peer_tests(Suite *s);
void conformance_add_path_tests(Suite *s);

#endif
