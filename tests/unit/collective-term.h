/* collective-term.h — a collective term for the tests and benchmarks of
 * the SPMD runtimes (test-spmd-sim, test-threads, bench-collectives). */
#ifndef PARTIR_TESTS_COLLECTIVE_TERM_H
#define PARTIR_TESTS_COLLECTIVE_TERM_H

#include "eval/eval.h"

/* Collective 'op' on 'x' over the comma-separated mesh 'axes' of 'size'
 * devices, with up to two integer attributes (NULL key: absent); NULL,
 * with the reason in 'err', when its type rule refuses it. */
const Term *collective_term(Op op, const Term *x, const char *axes,
                            int64_t size, const char *k1, int64_t v1,
                            const char *k2, int64_t v2, Diag *err);

#endif
