/* test-gemm — the generated matrix-multiply kernel (codegen/gemm.c).
 *
 * Each dtype's function is built in a module of its own, made external,
 * optimized for this host and loaded with the JIT, then run on many
 * shapes (edges of the register and cache blocks, primes, K = 0) and
 * layouts (A and B row-major or transposed, C rows wider than N).  Every
 * element is checked against a sum in long double of the same inputs,
 * within the bound of a floating-point dot product in any order:
 *   |c - ref| <= gamma_K * sum_k |a_ik b_kj|,  gamma_K = K u / (1 - K u),
 * u = 2^-24 (f32, bf16) or 2^-53 (f64); bf16 adds its rounding of the
 * f32 sum: half an ulp of 8 significant bits, 2^-8 relative (2^-9 would
 * be half an ulp at the top of a binade only).  Elements of C beyond N must be
 * left alone.
 */
#include "codegen/gemm.h"

#include <math.h>

typedef void (*GemmFn)(int64_t m, int64_t n, int64_t k, const void *a,
                       int64_t rsa, int64_t csa, const void *b, int64_t rsb,
                       int64_t csb, void *c, int64_t rsc, void *work);

/* A dtype's gemm, loaded. */
typedef struct Kernel {
  JitCode *code;
  GemmFn fn;
  void *work;
} Kernel;

static Kernel kernels[DT_COUNT_];

static Kernel *kernel(DType dt) {
  Kernel *k = &kernels[dt];
  if (k->fn)
    return k;
  g_autoptr(Diag) why = diag_new(NULL);
  LLVMTargetMachineRef tm = jit_host_machine(why);
  g_assert_nonnull(tm);
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("gemm", ctx);
  LLVMTypeRef fty;
  LLVMValueRef fn = gemm_function(mod, dt, &fty);
  g_assert_true(gemm_function(mod, dt, &fty) == fn); /* once per module */
  LLVMSetLinkage(fn, LLVMExternalLinkage);
  g_autofree char *name = g_strdup(LLVMGetValueName(fn));
  g_assert_true(jit_optimize(mod, tm, why));
  k->code = jit_load(mod, tm, name, why);
  g_assert_nonnull(k->code);
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  LLVMDisposeTargetMachine(tm);
  EntryFn entry = jit_entry(k->code);
  memcpy(&k->fn, &entry, sizeof k->fn);
  k->work = g_aligned_alloc((gsize)gemm_workspace_bytes(dt), 1, 64);
  return k;
}

static void kernels_free(void) {
  for (int d = 0; d < DT_COUNT_; d++) {
    jit_unload(kernels[d].code);
    g_aligned_free(kernels[d].work);
  }
  memset(kernels, 0, sizeof kernels);
}

/* ------------------------------------------------------------ elements */

static gsize elem_bytes(DType dt) { return dtype_storage_bytes(dt); }

static double get(DType dt, const void *p, int64_t i) {
  switch (dt) {
  case DT_F32:
    return ((const float *)p)[i];
  case DT_F64:
    return ((const double *)p)[i];
  default:
    return tensor_bf16_to_f32(((const uint16_t *)p)[i]);
  }
}

static void set(DType dt, void *p, int64_t i, double v) {
  switch (dt) {
  case DT_F32:
    ((float *)p)[i] = (float)v;
    break;
  case DT_F64:
    ((double *)p)[i] = v;
    break;
  default:
    ((uint16_t *)p)[i] = tensor_bf16_from_f32((float)v);
  }
}

static double unit_roundoff(DType dt) {
  return dt == DT_F64 ? ldexp(1, -53) : ldexp(1, -24);
}

/* --------------------------------------------------------------- cases */

/* How the operands lie in memory. */
typedef struct Layout {
  gboolean a_trans, b_trans; /* stored K x M, N x K */
  int64_t c_pad;             /* rsc = N + c_pad */
} Layout;

/* A matrix 'rows' x 'cols' with leading dimension ld > its row length:
 * element (i, j) at i*rs + j*cs. */
typedef struct Mat {
  void *data;
  int64_t rs, cs, size;
} Mat;

static Mat mat_new(DType dt, int64_t rows, int64_t cols, gboolean trans) {
  Mat m;
  int64_t ld = (trans ? rows : cols) + 2; /* not packed: strides matter */
  m.rs = trans ? 1 : ld;
  m.cs = trans ? ld : 1;
  m.size = (trans ? cols : rows) * ld;
  m.data = g_malloc0((gsize)MAX(m.size, 1) * elem_bytes(dt));
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++)
      set(dt, m.data, i * m.rs + j * m.cs, g_test_rand_double_range(-1, 1));
  return m;
}

/* Runs the kernel on M x K times K x N and checks every element. */
static void check_case(DType dt, int64_t m, int64_t n, int64_t k,
                       const Layout *lay) {
  Kernel *kern = kernel(dt);
  Mat a = mat_new(dt, m, k, lay->a_trans), b = mat_new(dt, k, n, lay->b_trans);
  int64_t rsc = n + lay->c_pad, csize = MAX(m * rsc, 1);
  void *c = g_malloc((gsize)csize * elem_bytes(dt));
  const double sentinel = 777.0;
  for (int64_t i = 0; i < csize; i++)
    set(dt, c, i, sentinel);
  kern->fn(m, n, k, a.data, a.rs, a.cs, b.data, b.rs, b.cs, c, rsc, kern->work);
  double u = unit_roundoff(dt), gamma = k * u / (1 - k * u);
  for (int64_t i = 0; i < m; i++) {
    for (int64_t j = 0; j < rsc; j++) {
      double got = get(dt, c, i * rsc + j);
      if (j >= n) { /* beyond the row: untouched */
        g_assert_cmpfloat(got, ==, dt == DT_BF16 ? 776.0 : sentinel);
        continue;
      }
      long double ref = 0, mag = 0;
      for (int64_t p = 0; p < k; p++) {
        long double x = get(dt, a.data, i * a.rs + p * a.cs);
        long double y = get(dt, b.data, p * b.rs + j * b.cs);
        ref += x * y;
        mag += fabsl(x * y);
      }
      double tol = gamma * (double)mag;
      if (dt == DT_BF16)
        tol += ldexp(fabs((double)ref) + tol, -8);
      double err = fabs(got - (double)ref);
      if (!(err <= tol)) {
        g_test_message("%s %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                       "x%" G_GINT64_FORMAT
                       " a_trans %d b_trans %d: C[%" G_GINT64_FORMAT
                       "][%" G_GINT64_FORMAT "] = %.17g, want %.17Lg +- %.3g",
                       dtype_name(dt), m, n, k, lay->a_trans, lay->b_trans, i,
                       j, got, ref, tol);
        g_assert_cmpfloat(err, <=, tol);
      }
    }
  }
  g_free(a.data);
  g_free(b.data);
  g_free(c);
}

/* Shapes at the edges of every host's blocks (gemm_shape): register
 * blocks of 6 or 12 rows and 4 to 32 columns, KC 512, MC 72 or 144, NC
 * 256 to 2048; and primes. */
static const int64_t shapes[][3] = {
    {1, 1, 1},      {1, 1, 0},     {5, 7, 0},       {7, 13, 29},   {2, 3, 5},
    {6, 16, 8},     {5, 15, 9},    {7, 17, 10},     {12, 32, 16},  {11, 31, 17},
    {13, 33, 15},   {24, 64, 3},   {23, 63, 4},     {25, 65, 5},   {14, 48, 7},
    {3, 4, 257},    {9, 9, 513},   {4, 5, 1025},    {241, 9, 3},   {37, 8, 255},
    {121, 33, 17},  {3, 4097, 2},  {2, 2049, 3},    {13, 1025, 2}, {61, 67, 71},
    {24, 64, 1030}, {13, 33, 600}, {300, 200, 500},
};

static void check_dtype(DType dt) {
  static const Layout layouts[] = {
      {FALSE, FALSE, 0}, {TRUE, FALSE, 3}, {FALSE, TRUE, 1}, {TRUE, TRUE, 5}};
  for (gsize s = 0; s < G_N_ELEMENTS(shapes); s++) {
    const int64_t *sh = shapes[s];
    gboolean big = sh[0] * sh[1] * sh[2] > 1000000;
    for (gsize l = 0; l < G_N_ELEMENTS(layouts); l++)
      if (!big || l == 0 || l == 3) /* the large one in two layouts */
        check_case(dt, sh[0], sh[1], sh[2], &layouts[l]);
  }
}

static void test_f32(void) { check_dtype(DT_F32); }
static void test_f64(void) { check_dtype(DT_F64); }
static void test_bf16(void) { check_dtype(DT_BF16); }

/* The kernels other hosts get (AVX2's 256-bit and SSE's 128-bit
 * registers: another register block and other cache blocks), made here
 * with $PARTIR_GEMM_VECTOR_BITS (where this host is narrower, its own). */
static void test_narrow(void) {
  static const char *const widths[] = {"256", "128"};
  for (gsize w = 0; w < G_N_ELEMENTS(widths); w++) {
    kernels_free();
    g_setenv("PARTIR_GEMM_VECTOR_BITS", widths[w], TRUE);
    check_dtype(DT_F32);
    check_dtype(DT_F64);
    check_dtype(DT_BF16);
  }
  g_unsetenv("PARTIR_GEMM_VECTOR_BITS");
  kernels_free();
}

/* A NaN in A makes its row of C NaN (a quiet NaN in bf16); an infinity
 * in B, times positive elements of A, makes its column infinite. */
static void check_special(DType dt) {
  const int64_t m = 30, n = 70, k = 300;
  Kernel *kern = kernel(dt);
  gsize e = elem_bytes(dt);
  void *a = g_malloc(m * k * e), *b = g_malloc(k * n * e),
       *c = g_malloc(m * n * e);
  for (int64_t i = 0; i < m * k; i++)
    set(dt, a, i, g_test_rand_double_range(0.5, 1));
  for (int64_t i = 0; i < k * n; i++)
    set(dt, b, i, g_test_rand_double_range(-1, 1));
  set(dt, a, 17 * k + 260, NAN);
  set(dt, b, 5 * n + 41, INFINITY);
  kern->fn(m, n, k, a, k, 1, b, n, 1, c, n, kern->work);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double got = get(dt, c, i * n + j);
      if (i == 17)
        g_assert_true(isnan(got));
      else if (j == 41)
        g_assert_cmpfloat(got, ==, INFINITY);
      else
        g_assert_true(isfinite(got));
      if (dt == DT_BF16 && isnan(got))
        g_assert_cmpuint(((uint16_t *)c)[i * n + j] & 0x40u, !=, 0);
    }
  g_free(a);
  g_free(b);
  g_free(c);
}

static void test_special(void) {
  check_special(DT_F32);
  check_special(DT_F64);
  check_special(DT_BF16);
}

/* bf16 results are rounded once, to nearest even: 1 + 2^-8 (a tie
 * between 1 and 1 + 2^-7) gives 1; 1 + 3 * 2^-8 (a tie between
 * 1 + 2^-7 and 1 + 2^-6) gives 1 + 2^-6. */
static void test_bf16_rounding(void) {
  Kernel *kern = kernel(DT_BF16);
  uint16_t a[2], b[4], c[2];
  set(DT_BF16, a, 0, 1);
  set(DT_BF16, a, 1, 1);
  /* column 0: 1, 2^-8; column 1: 1, 3 * 2^-8 */
  set(DT_BF16, b, 0, 1);
  set(DT_BF16, b, 2, ldexp(1, -8));
  set(DT_BF16, b, 1, 1);
  set(DT_BF16, b, 3, 3 * ldexp(1, -8));
  kern->fn(1, 2, 2, a, 2, 1, b, 2, 1, c, 2, kern->work);
  g_assert_cmphex(c[0], ==, 0x3f80);
  g_assert_cmphex(c[1], ==, 0x3f82);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/gemm/f32", test_f32);
  g_test_add_func("/gemm/f64", test_f64);
  g_test_add_func("/gemm/bf16", test_bf16);
  g_test_add_func("/gemm/nan-inf", test_special);
  g_test_add_func("/gemm/bf16-rounding", test_bf16_rounding);
  g_test_add_func("/gemm/narrow", test_narrow);
  int rc = g_test_run();
  kernels_free();
  return rc;
}
