/* bench-gemm.c — the generated gemm (codegen/gemm.c) against OpenBLAS.
 *
 *   bench-gemm [--runs N] [SIZE...]      (default sizes 256 512 1024 2048)
 *
 * For each size: C = A . B of f32 matrices (row-major), one thread; a
 * size is n (n x n times n x n) or MxNxK (M x K times K x N: the MLP's
 * layers of 2048 at batch 256 are 256x2048x2048).
 * The generated kernel is built in a module of its own, optimized for
 * this host and called through the JIT's function pointer;
 * cblas_sgemm runs in the same process with openblas_set_num_threads(1).
 * Each run times both, one after the other, as a batch of calls lasting
 * at least ~50 ms; a figure is the median of N runs (default 5).  Times
 * are the thread's CPU time (a shared machine takes the core away now and
 * then; that time is not the kernel's), with the wall-clock ratio
 * beside.  The results of the two are compared (largest difference
 * relative to sum |a b|) so a fast wrong kernel shows.  Target (issue
 * 13): the generated kernel at >= 0.8 of OpenBLAS for n = 256..2048.
 * The OpenBLAS core in use is printed: OpenBLAS picks its kernels from
 * the CPU's identity at load time, and takes a CPU it does not know (a
 * VM's "Intel Xeon Processor" to OpenBLAS 0.3.21) for an SSE3 Prescott;
 * OPENBLAS_CORETYPE (SkylakeX, Cooperlake, Haswell) names the right one,
 * and run.sh runs the benchmark again with it.  Without OpenBLAS
 * (configure --with-blas=no) only the generated column is printed.  Timings are
 * reported, never asserted.
 */
#include "bench-stats.h"
#include "codegen/gemm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef HAVE_OPENBLAS
#include <cblas.h>
#endif

#define TARGET_RATIO 0.8

typedef void (*GemmFn)(int64_t m, int64_t n, int64_t k, const void *a,
                       int64_t rsa, int64_t csa, const void *b, int64_t rsb,
                       int64_t csb, void *c, int64_t rsc, void *work);

/* The f32 gemm, loaded into the JIT ('*code' to unload); NULL + why. */
static GemmFn load_gemm(JitCode **code, Diag *why) {
  LLVMTargetMachineRef tm = jit_host_machine(why);
  if (!tm)
    return NULL;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("gemm", ctx);
  LLVMTypeRef fty;
  LLVMValueRef fn = gemm_function(mod, DT_F32, &fty);
  LLVMSetLinkage(fn, LLVMExternalLinkage);
  char *name = g_strdup(LLVMGetValueName(fn));
  *code = jit_optimize(mod, tm, why) ? jit_load(mod, tm, name, why) : NULL;
  g_free(name);
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  LLVMDisposeTargetMachine(tm);
  if (!*code)
    return NULL;
  EntryFn entry = jit_entry(*code);
  GemmFn f;
  memcpy(&f, &entry, sizeof f);
  return f;
}

/* The operands of one size. */
typedef struct Problem {
  int m, n, k;
  float *a, *b, *c_gen, *c_blas;
  void *work;
  GemmFn gemm;
} Problem;

static void run_generated(Problem *p) {
  p->gemm(p->m, p->n, p->k, p->a, p->k, 1, p->b, p->n, 1, p->c_gen, p->n,
          p->work);
}

#ifdef HAVE_OPENBLAS
static void run_blas(Problem *p) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, p->m, p->n, p->k, 1.0f,
              p->a, p->k, p->b, p->n, 0.0f, p->c_blas, p->n);
}

/* Largest |gen - blas| / (sum_k |a_ik b_kj|) over a sample of elements. */
static double sample_error(const Problem *p) {
  int n = p->n, kk = p->k;
  double worst = 0;
  for (int s = 0; s < 64; s++) {
    int i = (s * 37) % p->m, j = (s * 101 + 7) % n;
    double mag = 0;
    for (int k = 0; k < kk; k++)
      mag += fabs((double)p->a[(gsize)i * kk + k] * p->b[(gsize)k * n + j]);
    double d =
        fabs((double)p->c_gen[(gsize)i * n + j] - p->c_blas[(gsize)i * n + j]);
    worst = fmax(worst, mag > 0 ? d / mag : d);
  }
  return worst;
}
#endif

/* Seconds per call of 'fn' over 'reps' calls: thread CPU time and wall. */
static void time_calls(void (*fn)(Problem *), Problem *p, int reps, double *cpu,
                       double *wall) {
  double c0 = bench_cpu_ms(CLOCK_THREAD_CPUTIME_ID);
  double w0 = bench_cpu_ms(CLOCK_MONOTONIC);
  for (int r = 0; r < reps; r++)
    fn(p);
  *cpu = (bench_cpu_ms(CLOCK_THREAD_CPUTIME_ID) - c0) / 1e3 / reps;
  *wall = (bench_cpu_ms(CLOCK_MONOTONIC) - w0) / 1e3 / reps;
}

/* One size: M, N, K. */
typedef struct Size {
  int m, n, k;
} Size;

static float *random_matrix(GRand *rand, gsize count) {
  float *x = g_new(float, count);
  for (gsize i = 0; i < count; i++)
    x[i] = (float)g_rand_double_range(rand, -1, 1);
  return x;
}

static void bench_size(GemmFn gemm, void *work, Size sz, int runs) {
  Problem p = {.m = sz.m, .n = sz.n, .k = sz.k, .gemm = gemm, .work = work};
  GRand *rand = g_rand_new_with_seed((guint32)sz.n);
  p.a = random_matrix(rand, (gsize)sz.m * sz.k);
  p.b = random_matrix(rand, (gsize)sz.k * sz.n);
  p.c_gen = g_new0(float, (gsize)sz.m *sz.n);
  p.c_blas = g_new0(float, (gsize)sz.m *sz.n);
  g_rand_free(rand);
  double flops = 2.0 * sz.m * sz.n * sz.k;
  /* calls per run: about 50 ms at 100 GFLOP/s */
  int reps = (int)MAX(1, 5e9 / flops);
  double *gen_cpu = g_new(double, runs), *gen_wall = g_new(double, runs);
  double *blas_cpu = g_new(double, runs), *blas_wall = g_new(double, runs);
  run_generated(&p); /* warm: caches, page faults */
#ifdef HAVE_OPENBLAS
  run_blas(&p);
#endif
  for (int r = 0; r < runs; r++) {
    time_calls(run_generated, &p, reps, &gen_cpu[r], &gen_wall[r]);
#ifdef HAVE_OPENBLAS
    time_calls(run_blas, &p, reps, &blas_cpu[r], &blas_wall[r]);
#endif
  }
  double gc = bench_median(gen_cpu, runs), gw = bench_median(gen_wall, runs);
  g_autofree char *label = sz.m == sz.n && sz.n == sz.k
                               ? g_strdup_printf("%d", sz.n)
                               : g_strdup_printf("%dx%dx%d", sz.m, sz.n, sz.k);
  printf("%14s %10.1f", label, flops / gc / 1e9);
#ifdef HAVE_OPENBLAS
  double bc = bench_median(blas_cpu, runs), bw = bench_median(blas_wall, runs);
  printf(" %10.1f %8.2f %8.2f %10.1e %s\n", flops / bc / 1e9, bc / gc, bw / gw,
         sample_error(&p), bc / gc >= TARGET_RATIO ? "ok" : "below target");
#else
  printf(" %10.1f\n", flops / gw / 1e9);
#endif
  g_free(gen_cpu);
  g_free(gen_wall);
  g_free(blas_cpu);
  g_free(blas_wall);
  g_free(p.a);
  g_free(p.b);
  g_free(p.c_gen);
  g_free(p.c_blas);
}

int main(int argc, char **argv) {
  int runs = 5;
  GArray *sizes = g_array_new(FALSE, FALSE, sizeof(Size));
  for (int i = 1; i < argc; i++) {
    Size sz;
    char tail;
    if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
      runs = atoi(argv[++i]);
    else if (sscanf(argv[i], "%dx%dx%d%c", &sz.m, &sz.n, &sz.k, &tail) == 3 &&
             sz.m > 0 && sz.n > 0 && sz.k > 0)
      g_array_append_val(sizes, sz);
    else if (sscanf(argv[i], "%d%c", &sz.n, &tail) == 1 && sz.n > 0) {
      sz.m = sz.k = sz.n;
      g_array_append_val(sizes, sz);
    } else {
      fprintf(stderr, "usage: bench-gemm [--runs N] [N | MxNxK]...\n");
      return 2;
    }
  }
  if (runs < 1)
    runs = 1;
  if (sizes->len == 0)
    for (int n = 256; n <= 2048; n *= 2)
      g_array_append_val(sizes, ((Size){n, n, n}));
  g_autoptr(Diag) why = diag_new(NULL);
  JitCode *code = NULL;
  GemmFn gemm = load_gemm(&code, why);
  if (!gemm) {
    fprintf(stderr, "bench-gemm: %s\n", why->text ? why->text->str : "?");
    g_array_free(sizes, TRUE);
    return 1;
  }
  void *work = g_aligned_alloc((gsize)gemm_workspace_bytes(DT_F32), 1, 64);
  printf("sgemm, row-major, one thread; GFLOP/s from thread CPU time, "
         "median of %d runs\n",
         runs);
#ifdef HAVE_OPENBLAS
  openblas_set_num_threads(1);
  printf("OpenBLAS: %s (its kernels for core %s%s)\n", openblas_get_config(),
         openblas_get_corename(),
         g_getenv("OPENBLAS_CORETYPE") ? ", from OPENBLAS_CORETYPE" : "");
  printf("%14s %10s %10s %8s %8s %10s  target: ratio >= %.1f\n", "size",
         "generated", "openblas", "ratio", "wall", "max err", TARGET_RATIO);
#else
  printf("(built without OpenBLAS: configure --with-blas=openblas for the "
         "baseline)\n%14s %10s %10s\n",
         "size", "generated", "wall");
#endif
  for (guint i = 0; i < sizes->len; i++)
    bench_size(gemm, work, g_array_index(sizes, Size, i), runs);
  g_aligned_free(work);
  jit_unload(code);
  g_array_free(sizes, TRUE);
  return 0;
}
