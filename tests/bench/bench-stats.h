/* bench-stats.h — what the benchmarks share: the median of repeated runs
 * and CPU time.  Timings are reported, never asserted (tests/bench/README). */
#ifndef PARTIR_BENCH_STATS_H
#define PARTIR_BENCH_STATS_H
#include <time.h>

/* The median of v[0..n), n > 0 (sorts v). */
double bench_median(double *v, int n);
/* CPU time of 'clock' (CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID)
 * in milliseconds; 0 when it cannot be read. */
double bench_cpu_ms(clockid_t clock);
#endif
