/* bench-collectives — the threaded runtime's collectives (codegen/
 * threads.c) against memcpy of the same bytes, in the same run.
 *
 *   bench-collectives [--mb N] [--devices N] [--runs N]
 *
 * N device threads (default 2) on mesh a=N each hold an f32 operand of
 * --mb MiB (default 64) and run all_reduce (the split path: each thread
 * sums its 1/N and writes it to everyone), reduce_scatter, all_gather
 * and all_to_all over 'a', --runs times (default 5); each figure is the
 * median.  GB/s is the operand's bytes over the collective's time on
 * device 0 (from the moment all devices are ready), beside memcpy of
 * the same bytes by one thread, and by N threads at once (each its own
 * buffers: what the machine's memory allows N threads).  Then the
 * latency of a small all_reduce (4 KiB, the unsplit path: mostly the
 * two barriers), in microseconds.  Timings are reported, never asserted.
 */
#include "bench-stats.h"
#include "codegen/threads.h"
#include "tests/unit/collective-term.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SMALL_REPS 2000 /* small all_reduces per run */

/* A collective over axis 'a' of 'n' devices with up to two integer
 * attributes (NULL key: absent). */
static const Term *coll(Op op, const Term *x, int64_t n, const char *k1,
                        int64_t v1, const char *k2, int64_t v2) {
  g_autoptr(Diag) err = diag_new(NULL);
  const Term *t = collective_term(op, x, "a", n, k1, v1, k2, v2, err);
  if (!t)
    g_error("building %s: %s", op_name(op), diag_text(err));
  return t;
}

/* What every device thread runs: 'runs' timed collectives 't', each
 * after a small all_reduce 'sync' that lines the devices up. */
typedef struct Job {
  Collectives *comm;
  const Term *t, *sync;
  int runs, reps;  /* 'reps' collectives per timed run */
  double *seconds; /* per run, filled by device 0 */
  int device;
} Job;

static gpointer device_main(gpointer p) {
  Job *j = p;
  const Term *t = j->t;
  gsize in_bytes = tensor_type_bytes(t->args[0]->type),
        out_bytes = tensor_type_bytes(t->type);
  float *in = g_malloc(in_bytes), *out = g_malloc(out_bytes);
  for (gsize k = 0; k < in_bytes / sizeof *in; k++)
    in[k] = (float)(k % 1000) * 0.5f + (float)j->device;
  memset(out, 0, out_bytes); /* touched before timing */
  float one = 1, sum;
  for (int r = 0; r < j->runs; r++) {
    j->comm->collective_into(j->comm, j->sync, &one, &sum);
    gint64 start = g_get_monotonic_time();
    for (int k = 0; k < j->reps; k++)
      j->comm->collective_into(j->comm, t, in, out);
    if (j->device == 0)
      j->seconds[r] = (double)(g_get_monotonic_time() - start) * 1e-6;
  }
  g_free(in);
  g_free(out);
  return NULL;
}

/* The median seconds of one run of 'reps' collectives 't' on 'n'
 * devices. */
static double time_collective(const Term *t, int n, int runs, int reps) {
  Mesh m;
  g_autoptr(Diag) err = diag_new(NULL);
  g_autofree char *spec = g_strdup_printf("a=%d", n);
  g_assert(mesh_parse(spec, &m, err));
  const Term *sync =
      coll(OP_ALL_REDUCE, term_arg(0, type_tensor(DT_F32, 0, NULL)), n, NULL, 0,
           NULL, 0);
  Collectives **devices = threads_connect(NULL, &m, n);
  g_autofree double *seconds = g_new0(double, (gsize)runs);
  g_autofree Job *jobs = g_new0(Job, (gsize)n);
  g_autofree GThread **threads = g_new0(GThread *, (gsize)n);
  for (int d = 0; d < n; d++) {
    jobs[d] = (Job){.comm = devices[d],
                    .t = t,
                    .sync = sync,
                    .runs = runs,
                    .reps = reps,
                    .seconds = seconds,
                    .device = d};
    threads[d] = g_thread_new("device", device_main, &jobs[d]);
  }
  for (int d = 0; d < n; d++)
    g_thread_join(threads[d]);
  threads_disconnect(NULL, devices);
  return bench_median(seconds, runs);
}

/* memcpy of 'bytes' by 'n' threads at once, each its own buffers. */
typedef struct Copier {
  gsize bytes;
  int runs;
  double *seconds; /* per run */
  pthread_barrier_t *start;
} Copier;

static gpointer copier_main(gpointer p) {
  Copier *c = p;
  char *src = g_malloc(c->bytes), *dst = g_malloc(c->bytes);
  memset(src, 1, c->bytes);
  memset(dst, 0, c->bytes);
  for (int r = 0; r < c->runs; r++) {
    (void)pthread_barrier_wait(c->start);
    gint64 start = g_get_monotonic_time();
    memcpy(dst, src, c->bytes);
    c->seconds[r] = (double)(g_get_monotonic_time() - start) * 1e-6;
  }
  g_free(src);
  g_free(dst);
  return NULL;
}

/* The median over runs of the slowest of 'n' concurrent memcpys. */
static double time_memcpy(gsize bytes, int n, int runs) {
  pthread_barrier_t start_barrier, *start = &start_barrier;
  pthread_barrier_init(start, NULL, (unsigned)n);
  g_autofree Copier *copiers = g_new0(Copier, (gsize)n);
  g_autofree GThread **threads = g_new0(GThread *, (gsize)n);
  for (int d = 0; d < n; d++) {
    copiers[d] = (Copier){bytes, runs, g_new0(double, (gsize)runs), start};
    threads[d] = g_thread_new("memcpy", copier_main, &copiers[d]);
  }
  for (int d = 0; d < n; d++)
    g_thread_join(threads[d]);
  g_autofree double *slowest = g_new0(double, (gsize)runs);
  for (int d = 0; d < n; d++) {
    for (int r = 0; r < runs; r++)
      slowest[r] = MAX(slowest[r], copiers[d].seconds[r]);
    g_free(copiers[d].seconds);
  }
  pthread_barrier_destroy(start);
  return bench_median(slowest, runs);
}

static void row(const char *what, gsize bytes, double seconds,
                double memcpy_seconds) {
  double gbs = (double)bytes / seconds * 1e-9;
  printf("%-28s %9.2f ms %8.2f GB/s %7.2f x memcpy\n", what, seconds * 1e3, gbs,
         memcpy_seconds / seconds);
}

int main(int argc, char **argv) {
  int mb = 64, n = 2, runs = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--mb") == 0)
      mb = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--devices") == 0)
      n = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--runs") == 0)
      runs = atoi(argv[i + 1]);
    else
      g_error("unknown option '%s'", argv[i]);
  }
  if (mb < 1 || n < 1 || n > 64 || runs < 1) {
    fprintf(stderr, "bench-collectives: --mb >= 1, --devices 1..64, "
                    "--runs >= 1\n");
    return 2;
  }
  /* rows of 1024 f32, the row count a multiple of n */
  int64_t rows = (int64_t)mb * 256 / n * n;
  const Type *x = type_tensor(DT_F32, 2, (int64_t[]){rows, 1024});
  gsize bytes = tensor_type_bytes(x);
  const Term *arg = term_arg(0, x);

  printf("collectives: %d threads, f32 operand %.1f MiB, median of %d\n", n,
         (double)bytes / (1 << 20), runs);
  double copy1 = time_memcpy(bytes, 1, runs);
  double copyn = time_memcpy(bytes, n, runs);
  row("memcpy, 1 thread", bytes, copy1, copy1);
  g_autofree char *copies = g_strdup_printf("memcpy, %d threads each", n);
  row(copies, bytes, copyn, copy1);
  row("all_reduce (split)", bytes,
      time_collective(coll(OP_ALL_REDUCE, arg, n, NULL, 0, NULL, 0), n, runs,
                      1),
      copy1);
  row("reduce_scatter", bytes,
      time_collective(coll(OP_REDUCE_SCATTER, arg, n, "dim", 0, NULL, 0), n,
                      runs, 1),
      copy1);
  row("all_gather (out n x)", bytes,
      time_collective(coll(OP_ALL_GATHER, arg, n, "dim", 0, NULL, 0), n, runs,
                      1),
      copy1);
  row("all_to_all", bytes,
      time_collective(
          coll(OP_ALL_TO_ALL, arg, n, "split_dim", 0, "concat_dim", 1), n, runs,
          1),
      copy1);

  const Type *small = type_tensor(DT_F32, 1, (int64_t[]){1024});
  double s = time_collective(
      coll(OP_ALL_REDUCE, term_arg(0, small), n, NULL, 0, NULL, 0), n, runs,
      SMALL_REPS);
  printf("%-28s %9.2f us per all_reduce\n", "all_reduce 4 KiB (unsplit)",
         s / SMALL_REPS * 1e6);
  return 0;
}
