/* test-codegen — the code generator's API: results equal the
 * interpreter's (regions included), and compiling again and again keeps
 * the JIT's memory flat (each program's code is removed when it is
 * freed). */
#include "check/check.h"
#include "codegen/codegen.h"

#include <stdio.h>
#include <unistd.h>

static const char mlp[] =
    "func @mlp(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> "
    "tensor<8x16xf32> {\n"
    "  %h = matmul(%x, %w)\n"
    "  %y = relu(%h)\n"
    "  return %y\n"
    "}\n";

static Module *parse(const char *text) {
  g_autoptr(Diag) errors = diag_new(NULL);
  Module *m = parse_text("test.pir", text, strlen(text), errors);
  g_assert_nonnull(m);
  return m;
}

/* Compiles 'text' (two arguments, one result), runs it twice on random
 * arguments and checks both runs give the interpreter's result: byte for
 * byte with exact arithmetic; with fast arithmetic, each element within
 * 'rel' of the result's largest magnitude. */
static void check_func(const Module *m, const Func *f, guint64 seed,
                       gboolean exact, double rel) {
  g_autoptr(Diag) why = diag_new(NULL);
  CodegenOptions o = {.exact = exact};
  g_autoptr(Compiled) c = codegen_compile(m, f, &o, why);
  g_assert_nonnull(c);
  g_autofree Tensor **args = g_new0(Tensor *, (gsize)f->nargs + 1);
  for (int a = 0; a < f->nargs; a++)
    args[a] = interp_random_input(f, a, seed);
  GError *error = NULL;
  g_autoptr(GPtrArray) want = interp_run(f, args, &error);
  g_assert_no_error(error);
  const Tensor *w = g_ptr_array_index(want, 0);
  for (int run = 0; run < 2; run++) { /* the same code, run again */
    g_autoptr(GPtrArray) got = codegen_run(c, args);
    g_assert_cmpuint(got->len, ==, 1);
    const Tensor *b = g_ptr_array_index(got, 0);
    g_assert_true(w->type == b->type);
    if (exact) {
      g_assert_cmpmem(w->data, tensor_type_bytes(w->type), b->data,
                      tensor_type_bytes(b->type));
      continue;
    }
    double scale = 0;
    for (int64_t i = 0; i < type_numel(w->type); i++)
      if (isfinite(tensor_get_double(w, i)))
        scale = MAX(scale, fabs(tensor_get_double(w, i)));
    for (int64_t i = 0; i < type_numel(w->type); i++) {
      double x = tensor_get_double(w, i), y = tensor_get_double(b, i);
      if (x == y || (isnan(x) && isnan(y)))
        continue; /* integers, infinities and NaN: exactly */
      g_assert_true(dtype_is_float(w->type->dtype) && isfinite(x));
      g_assert_cmpfloat(fabs(x - y), <=, rel * scale);
    }
  }
  for (int a = 0; a < f->nargs; a++)
    tensor_unref(args[a]);
}

static void check_near(const char *text, guint64 seed, gboolean exact,
                       double rel) {
  g_autoptr(Module) m = parse(text);
  check_func(m, module_entry(m), seed, exact, rel);
}

static void check_same(const char *text, guint64 seed) {
  check_near(text, seed, TRUE, 0);
}

/* Compiled, the program gives the interpreter's results exactly. */
static void test_same_as_interpreter(void) { check_same(mlp, 7); }

/* With fast arithmetic (f32 products of 16 terms, FMA), within
 * (8 + 16) eps of the largest result (tests/codegen.sh's bound). */
static void test_fast_near_interpreter(void) {
  check_near(mlp, 7, FALSE, 24 * 0x1p-23);
}

/* Tiles and sums are loops: a tile of rows over a sum of column
 * blocks, computed as the interpreter computes it. */
static void test_regions(void) {
  check_same(
      "func @f(%x: tensor<8x4xf32>, %w: tensor<4x6xf32>) -> tensor<8x6xf32> "
      "{\n"
      "  %y = partir.tile 0 (%r : !partir.range<8,2>) {\n"
      "    %xs = partir.slice 0 %x[%r]\n"
      "    %p = partir.sum (%k : !partir.range<4,2>) {\n"
      "      %a = partir.slice 1 %xs[%k]\n"
      "      %b = partir.slice 0 %w[%k]\n"
      "      %c = matmul(%a, %b)\n"
      "      partir.yield %c\n"
      "    }\n"
      "    %n = neg(%p)\n"
      "    partir.yield %n\n"
      "  }\n"
      "  return %y\n"
      "}\n",
      3);
}

/* Every operator on random shapes and attributes (the check-rules
 * generator: layouts of dot_general, permutations, broadcasts, slices,
 * reshapes, concatenations): exact arithmetic gives the interpreter's
 * bytes; fast arithmetic is within (8 + K + 8 T) eps of each result's
 * largest magnitude, K the largest dimension, T 1 for a transcendental
 * (tests/codegen.sh's bound). */
static void test_random_ops(void) {
  int programs = 0;
  for (Op op = 0; op < OP_COUNT_; op++) {
    for (guint32 seed = 1; seed <= 12; seed++) {
      g_autoptr(Module) m = check_random_op(op, seed);
      if (!m)
        continue;
      const Func *f = module_entry(m);
      g_autoptr(Diag) why = diag_new(NULL);
      if (!interp_check(f, why))
        continue;
      int64_t k = 1;
      for (int a = 0; a < f->nargs; a++)
        for (int d = 0; d < f->arg_types[a]->rank; d++)
          k = MAX(k, f->arg_types[a]->dims[d]);
      gboolean trans = op == OP_EXP || op == OP_LOG || op == OP_TANH ||
                       op == OP_LOGISTIC || op == OP_POW || op == OP_LOG1P ||
                       op == OP_EXPM1;
      DType dt = f->result_types[0]->dtype;
      double eps = dt == DT_BF16  ? 0x1p-7
                   : dt == DT_F16 ? 0x1p-10
                   : dt == DT_F64 ? 0x1p-52
                                  : 0x1p-23;
      for (int exact = 0; exact <= 1; exact++)
        check_func(m, f, seed, exact, (8.0 + (double)k + 8 * trans) * eps);
      programs++;
    }
  }
  /* 37 operators (all but constants, iotas and collectives) with 12 seeds
   * each, some seeds giving no instance */
  g_assert_cmpint(programs, >=, 350);
}

/* Resident memory in KiB (/proc/self/statm), or -1. */
static long rss_kb(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long size = 0, resident = -1;
  if (!f)
    return -1;
  if (fscanf(f, "%ld %ld", &size, &resident) != 2)
    resident = -1;
  fclose(f);
  return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Whether memory is measured under a tool that keeps freed memory
 * (ASan's quarantine, valgrind). */
static gboolean under_tool(void) {
#ifdef __SANITIZE_ADDRESS__
  return TRUE;
#else
  g_autofree char *maps = NULL;
  return g_file_get_contents("/proc/self/maps", &maps, NULL, NULL) &&
         strstr(maps, "vgpreload") != NULL;
#endif
}

/* 300 compiles of one program, each freed: after the first 50 (LLVM's
 * own tables warm up) resident memory grows by less than 640 KiB.
 * Measured: 40 KiB; with the programs kept (no codegen_free), 1304 KiB,
 * about 5 KiB of code and JIT tables each. */
static void test_memory_flat(void) {
  if (under_tool() || rss_kb() < 0) {
    g_test_skip("under ASan or valgrind, or without /proc");
    return;
  }
  g_autoptr(Module) m = parse(mlp);
  const Func *f = module_entry(m);
  long start = 0;
  for (int i = 0; i < 300; i++) {
    if (i == 50)
      start = rss_kb();
    g_autoptr(Diag) why = diag_new(NULL);
    Compiled *c = codegen_compile(m, f, NULL, why);
    g_assert_nonnull(c);
    codegen_free(c);
  }
  long grown = rss_kb() - start;
  g_test_message("resident memory grew by %ld KiB over 250 compiles", grown);
  g_assert_cmpint(grown, <, 640);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/codegen/same-as-interpreter", test_same_as_interpreter);
  g_test_add_func("/codegen/fast-near-interpreter", test_fast_near_interpreter);
  g_test_add_func("/codegen/random-ops", test_random_ops);
  g_test_add_func("/codegen/regions", test_regions);
  g_test_add_func("/codegen/memory-flat", test_memory_flat);
  return g_test_run();
}
