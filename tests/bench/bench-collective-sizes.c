/* bench-collective-sizes — all_reduce, all_gather and reduce_scatter
 * bandwidth against message size, on the threaded runtime or the MPI
 * runtime, each against memcpy of the same bytes in the same run.
 *
 *   bench-collective-sizes [--runtime threads|mpi] [--devices N]
 *                          [--runs N] [--max-mb N]
 *
 * threads: N device threads (default 2) of this process, mesh a=N
 * (codegen/threads.c).  mpi: run under 'mpirun -np N', a rank a device
 * (codegen/mpi.c); N is the number of ranks.  For each collective over
 * 'a' and each f32 operand of 4 KiB, 16 KiB, ... up to --max-mb MiB
 * (default 64), every device runs it 'reps' times in a row (enough to
 * move about 64 MiB, at most 2000 and at least 1), after a one-float
 * all_reduce that lines the devices up; the time of device 0, over
 * reps, is one run, and the figure is the median of --runs runs
 * (default 5).  GB/s is the operand's bytes (B of docs/cost.md: the
 * operand of all_reduce and reduce_scatter, the result of all_gather)
 * over that time; 'x memcpy' compares it with one thread's memcpy of
 * the same bytes, timed the same way in the same process.  The last
 * lines give the figures of a hardware file (hw/) that the runs imply for the
 * cost model's ring all_reduce over 2 devices (2 steps of latency and B bytes):
 * link_latency from the 4 KiB all_reduce, link_bw from the largest.  Timings
 * are reported, never asserted.
 */
#include "bench-stats.h"
#include "codegen/codegen.h"
#include "codegen/threads.h"
#include "tests/unit/collective-term.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOVE_BYTES ((gsize)64 << 20) /* a run's traffic, about */
#define MAX_REPS 2000

static const Term *coll(Op op, const Term *x, int64_t n, const char *k,
                        int64_t v) {
  g_autoptr(Diag) err = diag_new(NULL);
  const Term *t = collective_term(op, x, "a", n, k, v, NULL, 0, err);
  if (!t)
    g_error("building %s: %s", op_name(op), diag_text(err));
  return t;
}

/* One device's part of a measurement. */
typedef struct Job {
  Collectives *comm;
  const Term *t, *sync;
  int runs, reps;
  double *seconds; /* per run: filled by device 0 */
  int device;
} Job;

static gpointer device_main(gpointer p) {
  Job *j = p;
  gsize in_bytes = tensor_type_bytes(j->t->args[0]->type),
        out_bytes = tensor_type_bytes(j->t->type);
  float *in = g_malloc(in_bytes), *out = g_malloc(out_bytes);
  for (gsize k = 0; k < in_bytes / sizeof *in; k++)
    in[k] = (float)(k % 1000) * 0.5f + (float)j->device;
  memset(out, 0, out_bytes);
  float one = 1, sum;
  for (int r = 0; r < j->runs; r++) {
    j->comm->collective_into(j->comm, j->sync, &one, &sum);
    gint64 start = g_get_monotonic_time();
    for (int k = 0; k < j->reps; k++)
      j->comm->collective_into(j->comm, j->t, in, out);
    if (j->device == 0)
      j->seconds[r] = (double)(g_get_monotonic_time() - start) * 1e-6 / j->reps;
  }
  g_free(in);
  g_free(out);
  return NULL;
}

/* The median seconds of one collective 't' ('sync' lines devices up):
 * on 'n' threads, or on this rank ('mpi'). */
static double time_collective(const Term *t, const Term *sync, int n,
                              gboolean mpi, int device, int runs, int reps) {
  Mesh m;
  g_autoptr(Diag) err = diag_new(NULL);
  g_autofree char *spec = g_strdup_printf("a=%d", n);
  g_assert(mesh_parse(spec, &m, err));
  g_autofree double *seconds = g_new0(double, (gsize)runs);
  if (mpi) {
#ifdef HAVE_MPI
    const Term *roots[] = {t, sync};
    Collectives *c = codegen_mpi_connect(&m, roots, 2);
    Job j = {c, t, sync, runs, reps, seconds, device};
    device_main(&j);
    codegen_mpi_disconnect(c);
#endif
    return device == 0 ? bench_median(seconds, runs) : 0;
  }
  Collectives **devices = threads_connect(NULL, &m, n);
  g_autofree Job *jobs = g_new0(Job, (gsize)n);
  g_autofree GThread **threads = g_new0(GThread *, (gsize)n);
  for (int d = 0; d < n; d++) {
    jobs[d] = (Job){devices[d], t, sync, runs, reps, seconds, d};
    threads[d] = g_thread_new("device", device_main, &jobs[d]);
  }
  for (int d = 0; d < n; d++)
    g_thread_join(threads[d]);
  threads_disconnect(NULL, devices);
  return bench_median(seconds, runs);
}

/* One thread's memcpy of 'bytes', median of 'runs' runs of 'reps'. */
static double time_memcpy(gsize bytes, int runs, int reps) {
  char *src = g_malloc(bytes), *dst = g_malloc(bytes);
  memset(src, 1, bytes);
  memset(dst, 0, bytes);
  g_autofree double *seconds = g_new0(double, (gsize)runs);
  for (int r = 0; r < runs; r++) {
    gint64 start = g_get_monotonic_time();
    for (int k = 0; k < reps; k++) {
      memcpy(dst, src, bytes);
      __asm__ __volatile__("" : : "r"(dst) : "memory"); /* keep each copy */
    }
    seconds[r] = (double)(g_get_monotonic_time() - start) * 1e-6 / reps;
  }
  g_free(src);
  g_free(dst);
  return bench_median(seconds, runs);
}

static void size_name(char *buf, gsize len, gsize bytes) {
  if (bytes >= (1 << 20))
    g_snprintf(buf, len, "%zu MiB", bytes >> 20);
  else
    g_snprintf(buf, len, "%zu KiB", bytes >> 10);
}

int main(int argc, char **argv) {
  int n = 2, runs = 5, max_mb = 64;
  const char *runtime = "threads";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--runtime") == 0)
      runtime = argv[i + 1];
    else if (strcmp(argv[i], "--devices") == 0)
      n = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--runs") == 0)
      runs = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--max-mb") == 0)
      max_mb = atoi(argv[i + 1]);
    else
      g_error("unknown option '%s'", argv[i]);
  }
  gboolean mpi = strcmp(runtime, "mpi") == 0;
  if ((!mpi && strcmp(runtime, "threads") != 0) || n < 1 || n > 64 ||
      runs < 1 || max_mb < 1) {
    fprintf(stderr, "bench-collective-sizes: --runtime threads|mpi, "
                    "--devices 1..64, --runs >= 1, --max-mb >= 1\n");
    return 2;
  }
  int rank = 0;
#ifdef HAVE_MPI
  if (mpi) {
    GError *error = NULL;
    if (!codegen_mpi_start(&rank, &n, &error))
      g_error("%s", error->message);
  }
#else
  if (mpi) {
    fprintf(stderr, "bench-collective-sizes: the MPI runtime is not built\n");
    return 2;
  }
#endif
  if (rank == 0)
    printf("collectives on the %s runtime, %d devices, f32, median of %d "
           "runs\n%-15s %8s %11s %10s %9s\n",
           runtime, n, runs, "collective", "operand", "time", "GB/s",
           "x memcpy");
  static const struct {
    Op op;
    const char *name, *key;
  } kinds[] = {{OP_ALL_REDUCE, "all_reduce", NULL},
               {OP_ALL_GATHER, "all_gather", "dim"},
               {OP_REDUCE_SCATTER, "reduce_scatter", "dim"}};
  const Term *sync = coll(
      OP_ALL_REDUCE, term_arg(0, type_tensor(DT_F32, 0, NULL)), n, NULL, 0);
  double small_ar = 0, large_ar = 0;
  gsize large_bytes = 0;
  for (gsize k = 0; k < G_N_ELEMENTS(kinds); k++)
    for (gsize bytes = 4096; bytes <= ((gsize)max_mb << 20); bytes *= 4) {
      /* B bytes of f32: the operand, or for all_gather the result */
      int64_t elems = (int64_t)(bytes / 4);
      if (kinds[k].op == OP_ALL_GATHER)
        elems /= n;
      elems = MAX(elems / n * n, n);
      const Type *x = type_tensor(DT_F32, 1, (int64_t[]){elems});
      const Term *t = coll(kinds[k].op, term_arg(0, x), n, kinds[k].key, 0);
      int reps = (int)CLAMP(MOVE_BYTES / bytes, 1, MAX_REPS);
      double s = time_collective(t, sync, n, mpi, rank, runs, reps);
      double copy = rank == 0 ? time_memcpy(bytes, runs, reps) : 0;
      if (rank != 0)
        continue;
      char size[32];
      size_name(size, sizeof size, bytes);
      printf("%-15s %8s %8.1f us %10.2f %9.2f\n", kinds[k].name, size, s * 1e6,
             (double)bytes / s * 1e-9, copy / s);
      if (kinds[k].op == OP_ALL_REDUCE && bytes == 4096)
        small_ar = s;
      if (kinds[k].op == OP_ALL_REDUCE) {
        large_ar = s;
        large_bytes = bytes;
      }
    }
  if (rank == 0 && n == 2) {
    /* the model's all_reduce over 2: 2 latency + B / bw */
    double latency = small_ar / 2;
    double bw = (double)large_bytes / MAX(large_ar - 2 * latency, 1e-9);
    printf("cost model (ring all_reduce over 2 devices): link_latency=%.3g "
           "link_bw=%.3g\n",
           latency, bw);
  }
#ifdef HAVE_MPI
  if (mpi)
    codegen_mpi_stop(0);
#endif
  return 0;
}
