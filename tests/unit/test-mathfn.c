/* test-mathfn — codegen/mathfn.c's transcendentals, compiled and run.
 *
 * For each function and type a loop 'void f(ptr out, ptr in, i64 n)'
 * over math_emit is optimized and loaded with the JIT, as the code
 * generator's own code is.  Its results are measured in ulp against
 * references it does not share: f32 over a strided sweep of all f32 bit
 * patterns against libm in double, f64 over random doubles against libm
 * in long double.  The largest error must be within math_max_ulp, the
 * special values (NaN, infinities, zeros, overflow) exact, and the
 * optimized f32 and f64 loops vectorized, with no call but intrinsics.
 */
#include "codegen/mathfn.h"

#include <float.h>
#include <math.h>
#include <stdio.h>

#define NFN 6

static const char *const fn_names[NFN] = {"exp",      "log",  "tanh",
                                          "logistic", "sqrt", "rsqrt"};

typedef void (*MathLoop)(void *out, const void *in, int64_t n);

/* One compiled loop: its code, entry and optimized IR. */
typedef struct Loop {
  JitCode *code;
  MathLoop run;
  char *ir;
} Loop;

static LLVMTargetMachineRef host;

/* Under valgrind ($VALGRIND set by the test harness) the sweeps sample
 * about 100 times fewer values. */
static gboolean slow_run(void) {
  const char *v = g_getenv("VALGRIND");
  return v && *v;
}
static Loop loops[NFN][2]; /* [fn][dt]: DT_F32, DT_F64 */

/* 'void name(ptr noalias out, ptr noalias in, i64 n)': out[i] = fn(in[i]). */
static LLVMModuleRef build_loop(LLVMContextRef ctx, MathFn fn, DType dt,
                                const char *name) {
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(name, ctx);
  LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
  LLVMTypeRef ft =
      dt == DT_F32 ? LLVMFloatTypeInContext(ctx) : LLVMDoubleTypeInContext(ctx);
  LLVMTypeRef params[3] = {ptr, ptr, i64};
  LLVMValueRef f = LLVMAddFunction(
      mod, name, LLVMFunctionType(LLVMVoidTypeInContext(ctx), params, 3, 0));
  unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
  for (unsigned i = 1; i <= 2; i++)
    LLVMAddAttributeAtIndex(f, i, LLVMCreateEnumAttribute(ctx, noalias, 0));
  LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(ctx, f, "entry");
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(ctx, f, "body");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(ctx, f, "done");
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  LLVMPositionBuilderAtEnd(b, entry);
  LLVMValueRef n = LLVMGetParam(f, 2), zero = LLVMConstInt(i64, 0, 0);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSGT, n, zero, ""), body, done);
  LLVMPositionBuilderAtEnd(b, body);
  LLVMValueRef i = LLVMBuildPhi(b, i64, "i");
  LLVMValueRef x = LLVMBuildLoad2(
      b, ft, LLVMBuildGEP2(b, ft, LLVMGetParam(f, 1), &i, 1, ""), "x");
  LLVMValueRef y = math_emit(mod, b, fn, x);
  LLVMBuildStore(b, y, LLVMBuildGEP2(b, ft, LLVMGetParam(f, 0), &i, 1, ""));
  LLVMValueRef next = LLVMBuildAdd(b, i, LLVMConstInt(i64, 1, 0), "");
  LLVMValueRef in_vals[2] = {zero, next};
  LLVMBasicBlockRef in_blocks[2] = {entry, body};
  LLVMAddIncoming(i, in_vals, in_blocks, 2);
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, next, n, ""), body, done);
  LLVMPositionBuilderAtEnd(b, done);
  LLVMBuildRetVoid(b);
  LLVMDisposeBuilder(b);
  return mod;
}

/* 'mod' (of 'ctx', both consumed) optimized and loaded: its function
 * 'name', and its optimized IR in '*ir' if asked. */
static JitCode *compile(LLVMContextRef ctx, LLVMModuleRef mod, const char *name,
                        char **ir) {
  g_autoptr(Diag) why = diag_new(NULL);
  if (!host)
    host = jit_host_machine(why);
  g_assert_nonnull(host);
  gboolean ok = jit_optimize(mod, host, why);
  if (!ok)
    g_printerr("%s\n", diag_text(why));
  g_assert_true(ok);
  if (ir) {
    char *text = LLVMPrintModuleToString(mod);
    *ir = g_strdup(text);
    LLVMDisposeMessage(text);
  }
  JitCode *code = jit_load(mod, host, name, why);
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  if (!code)
    g_printerr("%s\n", diag_text(why));
  g_assert_nonnull(code);
  return code;
}

/* The loop of (fn, dt), compiled at its first use. */
static Loop *loop_of(MathFn fn, DType dt) {
  Loop *l = &loops[fn][dt == DT_F64];
  if (l->code)
    return l;
  g_autofree char *name = g_strdup_printf("mathfn_%s_%s", fn_names[fn],
                                          dt == DT_F32 ? "f32" : "f64");
  LLVMContextRef ctx = LLVMContextCreate();
  l->code = compile(ctx, build_loop(ctx, fn, dt, name), name, &l->ir);
  l->run = (MathLoop)(uintptr_t)jit_entry(l->code);
  return l;
}

static void run_f32(MathFn fn, float *out, const float *in, int64_t n) {
  loop_of(fn, DT_F32)->run(out, in, n);
}

static void run_f64(MathFn fn, double *out, const double *in, int64_t n) {
  loop_of(fn, DT_F64)->run(out, in, n);
}

/* ------------------------------------------------------------ references */

/* fn(x) in double: a reference for f32 (error ~2^-29 of an f32 ulp). */
static double ref_f32(MathFn fn, float x) {
  double d = x;
  switch (fn) {
  case MATH_EXP:
    return exp(d);
  case MATH_LOG:
    return log(d);
  case MATH_TANH:
    return tanh(d);
  case MATH_LOGISTIC:
    return 1.0 / (1.0 + exp(-d));
  case MATH_SQRT:
    return sqrt(d);
  case MATH_RSQRT:
    return 1.0 / sqrt(d);
  }
  g_assert_not_reached();
}

/* fn(x) in long double: a reference for f64 (x86's 64-bit mantissa). */
static long double ref_f64(MathFn fn, double x) {
  long double d = x;
  switch (fn) {
  case MATH_EXP:
    return expl(d);
  case MATH_LOG:
    return logl(d);
  case MATH_TANH:
    return tanhl(d);
  case MATH_LOGISTIC:
    return 1.0L / (1.0L + expl(-d));
  case MATH_SQRT:
    return sqrtl(d);
  case MATH_RSQRT:
    return 1.0L / sqrtl(d);
  }
  g_assert_not_reached();
}

/* The error of 'got' in ulps of the f32 nearest 'ref' (NaN for NaN, an
 * infinity or zero that should not be: infinite). */
static double ulp_f32(float got, double ref) {
  if (isnan(ref) || isnan(got))
    return isnan(ref) && isnan(got) ? 0 : INFINITY;
  /* ref rounded to f32 (beyond FLT_MAX and half an ulp: infinite) */
  float near =
      fabs(ref) < 0x1.ffffffp127 ? (float)ref : copysignf(INFINITY, ref);
  if (got == near)
    return 0;
  if (isinf(got))
    return INFINITY;
  int e;
  frexp(fmin(fabs(ref), FLT_MAX), &e); /* |ref| in [2^(e-1), 2^e) */
  double ulp = ldexp(1.0, MAX(e - 24, -149));
  return fabs((double)got - ref) / ulp;
}

static double ulp_f64(double got, long double ref) {
  if (isnan(ref) || isnan(got))
    return isnan(ref) && isnan(got) ? 0 : INFINITY;
  double near = fabsl(ref) < 0x1.fffffffffffff8p1023L ? (double)ref
                                                      : copysign(INFINITY, ref);
  if (got == near)
    return 0;
  if (isinf(got))
    return INFINITY;
  int e;
  frexpl(fminl(fabsl(ref), DBL_MAX), &e);
  long double ulp = ldexpl(1.0L, MAX(e - 53, -1074));
  return (double)(fabsl((long double)got - ref) / ulp);
}

/* ----------------------------------------------------------------- sweeps */

#define CHUNK (1 << 20)

typedef struct Worst {
  double ulp;
  double at;
} Worst;

static void worse(Worst *w, double ulp, double x) {
  if (ulp > w->ulp || (isinf(ulp) && !isinf(w->ulp))) {
    w->ulp = ulp;
    w->at = x;
  }
}

/* Every 61st f32 bit pattern (all signs and exponents, NaN and infinities
 * included: about 7e7 values; every 7th thorough), then the edges of
 * exp's and tanh's ranges. */
static void sweep_f32(gconstpointer data) {
  MathFn fn = GPOINTER_TO_INT(data);
  const guint64 stride = g_test_thorough() ? 7 : slow_run() ? 6101 : 61;
  g_autofree float *in = g_new(float, CHUNK);
  g_autofree float *out = g_new(float, CHUNK);
  Worst w = {0, 0};
  guint64 bits = 0;
  while (bits < G_GUINT64_CONSTANT(1) << 32) {
    int64_t n = 0;
    for (; n < CHUNK && bits < G_GUINT64_CONSTANT(1) << 32; n++) {
      guint32 b32 = (guint32)bits;
      memcpy(&in[n], &b32, sizeof b32);
      bits += stride;
    }
    run_f32(fn, out, in, n);
    for (int64_t i = 0; i < n; i++)
      worse(&w, ulp_f32(out[i], ref_f32(fn, in[i])), in[i]);
  }
  static const float edges[] = {88.72f,    88.7228f, 88.72283f, -87.33f,
                                -87.34f,   -103.27f, -103.97f,  -103.98f,
                                -104.0f,   -88.72f,  1.0f,      0x1p-149f,
                                0x1p-126f, FLT_MAX,  0.5493f,   0.54931f};
  float eout[G_N_ELEMENTS(edges)];
  run_f32(fn, eout, edges, G_N_ELEMENTS(edges));
  for (guint i = 0; i < G_N_ELEMENTS(edges); i++)
    worse(&w, ulp_f32(eout[i], ref_f32(fn, edges[i])), edges[i]);
  g_test_message("%s f32: max %.3f ulp at %a (bound %.1f)", fn_names[fn], w.ulp,
                 w.at, math_max_ulp(fn, DT_F32));
  g_assert_cmpfloat(w.ulp, <=, math_max_ulp(fn, DT_F32));
}

/* Whether long double arithmetic carries more bits than double: not
 * under valgrind, which computes x87 arithmetic in double. */
static gboolean long_double_precise(void) {
  volatile long double one = 1.0L, tiny = 0x1p-60L;
  return LDBL_MANT_DIG >= 64 && one + tiny != one;
}

/* A random double for fn: half uniform over the range where fn varies,
 * half a random finite bit pattern (positive for log, sqrt, rsqrt). */
static double random_f64(GRand *r, MathFn fn) {
  static const double lo[NFN] = {-750, 0, -25, -750, 0, 0};
  static const double hi[NFN] = {715, 4, 25, 750, 4, 4};
  if (g_rand_boolean(r))
    return g_rand_double_range(r, lo[fn], hi[fn]);
  gboolean positive = fn == MATH_LOG || fn == MATH_SQRT || fn == MATH_RSQRT;
  guint64 exponent = (guint64)g_rand_int_range(r, 0, 2047);
  guint64 mantissa = ((guint64)g_rand_int(r) << 32 | g_rand_int(r)) &
                     ((G_GUINT64_CONSTANT(1) << 52) - 1);
  guint64 sign = !positive && g_rand_boolean(r);
  guint64 b64 = sign << 63 | exponent << 52 | mantissa;
  double x;
  memcpy(&x, &b64, sizeof x);
  return x;
}

/* 4 million random doubles (64 thorough), then the edges of exp's range. */
static void sweep_f64(gconstpointer data) {
  MathFn fn = GPOINTER_TO_INT(data);
  if (!long_double_precise()) {
    g_test_skip("long double is no more precise than double here");
    return;
  }
  const int rounds = g_test_thorough() ? 64 : 4;
  const int per_round = slow_run() ? CHUNK / 64 : CHUNK;
  g_autoptr(GRand) r = g_rand_new_with_seed(1234 + fn);
  g_autofree double *in = g_new(double, CHUNK);
  g_autofree double *out = g_new(double, CHUNK);
  Worst w = {0, 0};
  for (int round = 0; round < rounds; round++) {
    for (int i = 0; i < per_round; i++)
      in[i] = random_f64(r, fn);
    run_f64(fn, out, in, per_round);
    for (int i = 0; i < per_round; i++)
      worse(&w, ulp_f64(out[i], ref_f64(fn, in[i])), in[i]);
  }
  static const double edges[] = {709.78,
                                 709.782712893383,
                                 709.7827128933840,
                                 -708.39,
                                 -708.4,
                                 -744.44,
                                 -745.13,
                                 -745.14,
                                 -746.0,
                                 -709.78,
                                 1.0,
                                 0x1p-1074,
                                 0x1p-1022,
                                 DBL_MAX,
                                 0.5493061443340548,
                                 0.5493061443340549};
  double eout[G_N_ELEMENTS(edges)];
  run_f64(fn, eout, edges, G_N_ELEMENTS(edges));
  for (guint i = 0; i < G_N_ELEMENTS(edges); i++)
    worse(&w, ulp_f64(eout[i], ref_f64(fn, edges[i])), edges[i]);
  g_test_message("%s f64: max %.3f ulp at %a (bound %.1f)", fn_names[fn], w.ulp,
                 w.at, math_max_ulp(fn, DT_F64));
  g_assert_cmpfloat(w.ulp, <=, math_max_ulp(fn, DT_F64));
}

/* --------------------------------------------------------- special values */

typedef struct Special {
  MathFn fn;
  double x, want;
} Special;

/* Each holds for f32 and f64 alike (the inputs are f32 values too). */
static const Special specials[] = {
    {MATH_EXP, NAN, NAN},
    {MATH_EXP, INFINITY, INFINITY},
    {MATH_EXP, -INFINITY, 0},
    {MATH_EXP, 1000, INFINITY},
    {MATH_EXP, -1000, 0},
    {MATH_EXP, 0, 1},
    {MATH_EXP, -0.0, 1},
    {MATH_LOG, NAN, NAN},
    {MATH_LOG, 0, -INFINITY},
    {MATH_LOG, -0.0, -INFINITY},
    {MATH_LOG, -1, NAN},
    {MATH_LOG, -INFINITY, NAN},
    {MATH_LOG, INFINITY, INFINITY},
    {MATH_LOG, 1, 0},
    {MATH_TANH, NAN, NAN},
    {MATH_TANH, INFINITY, 1},
    {MATH_TANH, -INFINITY, -1},
    {MATH_TANH, 1000, 1},
    {MATH_TANH, -1000, -1},
    {MATH_TANH, 0, 0},
    {MATH_TANH, -0.0, -0.0},
    {MATH_LOGISTIC, NAN, NAN},
    {MATH_LOGISTIC, INFINITY, 1},
    {MATH_LOGISTIC, -INFINITY, 0},
    {MATH_LOGISTIC, 1000, 1},
    {MATH_LOGISTIC, -1e30, 0},
    {MATH_LOGISTIC, 0, 0.5},
    {MATH_LOGISTIC, -0.0, 0.5},
    {MATH_SQRT, NAN, NAN},
    {MATH_SQRT, INFINITY, INFINITY},
    {MATH_SQRT, 0, 0},
    {MATH_SQRT, -0.0, -0.0},
    {MATH_SQRT, -1, NAN},
    {MATH_SQRT, 4, 2},
    {MATH_RSQRT, NAN, NAN},
    {MATH_RSQRT, 0, INFINITY},
    {MATH_RSQRT, INFINITY, 0},
    {MATH_RSQRT, -1, NAN},
    {MATH_RSQRT, 4, 0.5},
};

/* 'got' is 'want' exactly: NaN for NaN, the sign of a zero too. */
static void check_special(const char *type, const Special *s, double got,
                          double want) {
  gboolean same =
      isnan(want) ? isnan(got) : got == want && !signbit(got) == !signbit(want);
  if (!same)
    g_test_message("%s %s(%g) = %g, want %g", type, fn_names[s->fn], s->x, got,
                   want);
  g_assert_true(same);
}

static void test_specials(void) {
  for (guint i = 0; i < G_N_ELEMENTS(specials); i++) {
    const Special *s = &specials[i];
    float x32 = (float)s->x, y32;
    run_f32(s->fn, &y32, &x32, 1);
    check_special("f32", s, y32, (float)s->want);
    double y64;
    run_f64(s->fn, &y64, &s->x, 1);
    check_special("f64", s, y64, s->want);
  }
}

/* ------------------------------------------------------- vector operand */

/* 'void name(ptr out, ptr in, i64 n)' storing fn of one <lanes x dt>
 * vector loaded from 'in' (n unused): math_emit given a vector. */
static LLVMModuleRef build_vector(LLVMContextRef ctx, MathFn fn, DType dt,
                                  unsigned lanes, const char *name) {
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(name, ctx);
  LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0);
  LLVMTypeRef elem =
      dt == DT_F32 ? LLVMFloatTypeInContext(ctx) : LLVMDoubleTypeInContext(ctx);
  LLVMTypeRef vt = LLVMVectorType(elem, lanes);
  LLVMTypeRef params[3] = {ptr, ptr, LLVMInt64TypeInContext(ctx)};
  LLVMValueRef f = LLVMAddFunction(
      mod, name, LLVMFunctionType(LLVMVoidTypeInContext(ctx), params, 3, 0));
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, f, "entry"));
  LLVMValueRef x = LLVMBuildLoad2(b, vt, LLVMGetParam(f, 1), "x");
  LLVMSetAlignment(x, dt == DT_F32 ? 4 : 8);
  LLVMValueRef store =
      LLVMBuildStore(b, math_emit(mod, b, fn, x), LLVMGetParam(f, 0));
  LLVMSetAlignment(store, dt == DT_F32 ? 4 : 8);
  LLVMBuildRetVoid(b);
  LLVMDisposeBuilder(b);
  return mod;
}

/* Given a vector of an odd width (5 floats, 3 doubles), each function
 * computes each lane within its bound, special values included. */
static void test_vector_operand(void) {
  static const float in32[5] = {NAN, -0.0f, 0.3f, 20.5f, 0x1p-140f};
  static const double in64[3] = {-INFINITY, 0.7, 0x1p-1060};
  for (int fn = 0; fn < NFN; fn++) {
    g_autofree char *n32 = g_strdup_printf("mathfn_v5_%s", fn_names[fn]);
    g_autofree char *n64 = g_strdup_printf("mathfn_v3_%s", fn_names[fn]);
    LLVMContextRef ctx = LLVMContextCreate();
    JitCode *c32 =
        compile(ctx, build_vector(ctx, fn, DT_F32, 5, n32), n32, NULL);
    ctx = LLVMContextCreate();
    JitCode *c64 =
        compile(ctx, build_vector(ctx, fn, DT_F64, 3, n64), n64, NULL);
    float out32[5];
    double out64[3];
    ((MathLoop)(uintptr_t)jit_entry(c32))(out32, in32, 5);
    ((MathLoop)(uintptr_t)jit_entry(c64))(out64, in64, 3);
    for (int i = 0; i < 5; i++)
      g_assert_cmpfloat(ulp_f32(out32[i], ref_f32(fn, in32[i])), <=,
                        math_max_ulp(fn, DT_F32));
    for (int i = 0; i < 3; i++)
      if (long_double_precise())
        g_assert_cmpfloat(ulp_f64(out64[i], ref_f64(fn, in64[i])), <=,
                          math_max_ulp(fn, DT_F64));
    jit_unload(c32);
    jit_unload(c64);
  }
}

/* ------------------------------------------------------------ vectorized */

/* The optimized loops hold vectors (4 lanes or more for f32, 2 or more
 * for f64) and call nothing but intrinsics. */
static void test_vectorized(void) {
  for (int fn = 0; fn < NFN; fn++)
    for (int d = 0; d < 2; d++) {
      const char *ir = loop_of(fn, d ? DT_F64 : DT_F32)->ir;
      gboolean vector =
          d ? strstr(ir, "<2 x double>") || strstr(ir, "<4 x double>") ||
                  strstr(ir, "<8 x double>")
            : strstr(ir, "<4 x float>") || strstr(ir, "<8 x float>") ||
                  strstr(ir, "<16 x float>");
      if (!vector)
        g_test_message("%s %s: not vectorized:\n%s", fn_names[fn],
                       d ? "f64" : "f32", ir);
      g_assert_true(vector);
      g_auto(GStrv) lines = g_strsplit(ir, "\n", -1);
      for (char **line = lines; *line; line++)
        if (strstr(*line, "call ") || g_str_has_prefix(*line, "declare "))
          g_assert_nonnull(strstr(*line, "@llvm."));
    }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/mathfn/vectorized", test_vectorized);
  g_test_add_func("/mathfn/specials", test_specials);
  g_test_add_func("/mathfn/vector-operand", test_vector_operand);
  for (int fn = 0; fn < NFN; fn++) {
    g_autofree char *p32 = g_strdup_printf("/mathfn/f32/%s", fn_names[fn]);
    g_autofree char *p64 = g_strdup_printf("/mathfn/f64/%s", fn_names[fn]);
    g_test_add_data_func(p32, GINT_TO_POINTER(fn), sweep_f32);
    g_test_add_data_func(p64, GINT_TO_POINTER(fn), sweep_f64);
  }
  int status = g_test_run();
  for (int fn = 0; fn < NFN; fn++)
    for (int d = 0; d < 2; d++) {
      jit_unload(loops[fn][d].code);
      g_free(loops[fn][d].ir);
    }
  if (host)
    LLVMDisposeTargetMachine(host);
  return status;
}
