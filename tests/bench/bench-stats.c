/* bench-stats.c — see bench-stats.h. */
#include "bench-stats.h"

#include <stdlib.h>

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double bench_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(double), compare_doubles);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double bench_cpu_ms(clockid_t clock) {
  struct timespec ts;
  if (clock_gettime(clock, &ts) != 0)
    return 0;
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}
