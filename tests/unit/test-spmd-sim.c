/* test-spmd-sim — the SPMD simulator: collectives, scattering of the
 * inputs, assembly of the results, and its errors.
 *
 * Each case builds an SPMD program by hand (a mesh, the local types, the
 * layouts, a body of collectives) and runs it on small global inputs.
 * The expected values are worked out by hand in the comments from the
 * definitions of the collectives and the device numbering (row-major
 * over the mesh axes as listed; a group's order row-major over the
 * collective's axes as it lists them), not from the simulator.
 */
#include "spmd/spmd.h"
#include "tests/unit/collective-term.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------- builders */

static const Type *ty(DType dt, int rank, int64_t d0, int64_t d1) {
  int64_t dims[2] = {d0, d1};
  return type_tensor(dt, rank, dims);
}
#define F32_1(a) ty(DT_F32, 1, a, 0)
#define F32_2(a, b) ty(DT_F32, 2, a, b)

/* A layout from text: one "[axis,axis]" per dimension ("[]": not split),
 * then optionally " partial=axis,axis". */
static Dist dist(const char *spec) {
  Dist d = {0};
  const char *p = spec;
  while (*p == '[') {
    const char *close = strchr(p, ']');
    g_assert_nonnull(close);
    g_autofree char *inner = g_strndup(p + 1, (gsize)(close - p - 1));
    g_auto(GStrv) axes = g_strsplit(inner, ",", -1);
    for (char **a = axes; *a && **a; a++)
      d.axes[d.rank][d.naxes[d.rank]++] = g_intern_string(*a);
    d.rank++;
    p = close + 1;
  }
  if (g_str_has_prefix(p, " partial=")) {
    g_auto(GStrv) axes = g_strsplit(p + strlen(" partial="), ",", -1);
    for (char **a = axes; *a; a++)
      d.partial[d.npartial++] = g_intern_string(*a);
  } else {
    g_assert_cmpstr(p, ==, "");
  }
  return d;
}

/* An SPMD function on mesh 'mesh_spec' with one argument per entry of
 * 'arg_types' (layouts 'arg_dists') and results 'results' (layouts
 * 'result_dists').  Free with func_free. */
static Func *spmd_func(const char *mesh_spec, int nargs,
                       const Type *const *arg_types,
                       const char *const *arg_dists, int nresults,
                       const Term *const *results,
                       const char *const *result_dists) {
  Func *f = g_new0(Func, 1);
  f->name = g_strdup("main");
  f->nargs = nargs;
  f->arg_names = g_new0(char *, (gsize)nargs + 1);
  f->arg_types = g_new0(const Type *, (gsize)nargs + 1);
  f->nresults = nresults;
  f->result_types = g_new0(const Type *, (gsize)nresults + 1);
  f->body = term_tuple(nresults, results);
  f->spmd = g_new0(SpmdInfo, 1);
  g_autoptr(Diag) err = diag_new(NULL);
  g_assert_true(mesh_parse(mesh_spec, &f->spmd->mesh, err));
  f->spmd->arg_dists = g_new0(Dist, (gsize)nargs + 1);
  f->spmd->result_dists = g_new0(Dist, (gsize)nresults + 1);
  for (int i = 0; i < nargs; i++) {
    f->arg_names[i] = g_strdup_printf("x%d", i);
    f->arg_types[i] = arg_types[i];
    f->spmd->arg_dists[i] = dist(arg_dists[i]);
  }
  for (int i = 0; i < nresults; i++) {
    f->result_types[i] = results[i]->type;
    f->spmd->result_dists[i] = dist(result_dists[i]);
  }
  return f;
}

/* The common case: one argument, one result. */
static Func *spmd_func1(const char *mesh_spec, const Type *arg_type,
                        const char *arg_dist, const Term *result,
                        const char *result_dist) {
  return spmd_func(mesh_spec, 1, &arg_type, &arg_dist, 1, &result,
                   &result_dist);
}

/* A collective over comma-separated 'axes' with 'size', and up to two
 * integer attributes (NULL key: absent). */
static const Term *coll(Op op, const Term *x, const char *axes, int64_t size,
                        const char *k1, int64_t v1, const char *k2,
                        int64_t v2) {
  g_autoptr(Diag) err = diag_new(NULL);
  const Term *t = collective_term(op, x, axes, size, k1, v1, k2, v2, err);
  if (!t)
    g_error("building %s: %s", op_name(op), diag_text(err));
  return t;
}

static Tensor *tensor_of(const Type *type, const double *values) {
  Tensor *t = tensor_new(type);
  for (int64_t j = 0; j < type_numel(type); j++) {
    if (dtype_is_float(type->dtype))
      tensor_set_float(t, j, values[j]);
    else
      tensor_set_int(t, j, (int64_t)values[j]);
  }
  return t;
}

/* 0, 1, 2, ... times 'scale' plus 'base'. */
static Tensor *tensor_iota(const Type *type, double base, double scale) {
  Tensor *t = tensor_new(type);
  for (int64_t j = 0; j < type_numel(type); j++)
    tensor_set_float(t, j, base + scale * (double)j);
  return t;
}

static void assert_values(const Tensor *t, const Type *type,
                          const double *want) {
  g_assert_true(t->type == type);
  for (int64_t j = 0; j < type_numel(type); j++) {
    double got = tensor_get_double(t, j);
    if (got != want[j])
      g_error("element %" G_GINT64_FORMAT ": got %.9g, want %.9g", j, got,
              want[j]);
  }
}

/* Runs 'f' on one input; returns its single result (asserting success). */
static Tensor *run1(const Func *f, Tensor *in) {
  g_autoptr(Diag) diag = diag_new(NULL);
  g_autoptr(GError) err = NULL;
  GPtrArray *out = spmd_simulate(f, &in, diag, &err);
  g_assert_no_error(err);
  g_assert_false(diag_any(diag));
  g_assert_nonnull(out);
  g_assert_cmpuint(out->len, ==, 1);
  Tensor *r = tensor_ref(g_ptr_array_index(out, 0));
  g_ptr_array_unref(out);
  return r;
}

/* Runs 'f' on one input expecting failure; returns the message. */
static char *run1_error(const Func *f, Tensor *in) {
  g_autoptr(Diag) diag = diag_new(NULL);
  g_autoptr(GError) err = NULL;
  GPtrArray *out = spmd_simulate(f, &in, diag, &err);
  g_assert_null(out);
  /* a wrong program is a diagnostic, an interrupted run an error */
  g_assert_true((err != NULL) != diag_any(diag));
  return g_strdup(err ? err->message : diag_text(diag));
}

#define assert_contains(hay, needle)                                           \
  do {                                                                         \
    if (!strstr((hay), (needle)))                                              \
      g_error("message '%s' lacks '%s'", (hay), (needle));                     \
  } while (0)

/* ----------------------------------------------------------- all_reduce */

/* batch=2,model=2; x global [4,3] row r = [10r, 10r+1, 10r+2], rows split
 * over [batch, model]: device (b, m) holds row 2b+m.  all_reduce over
 * model sums the pair (b,0),(b,1): rows 2b and 2b+1.  Result split over
 * batch, replicated over model: [[10,12,14], [50,52,54]]. */
static void test_all_reduce_2x2(void) {
  const Type *local = F32_2(1, 3);
  const Term *x = term_arg(0, local);
  const Term *r = coll(OP_ALL_REDUCE, x, "model", 2, NULL, 0, NULL, 0);
  Func *f =
      spmd_func1("batch=2,model=2", local, "[batch,model][]", r, "[batch][]");
  g_autoptr(Tensor) in = tensor_new(F32_2(4, 3));
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 3; j++)
      tensor_set_float(in, i * 3 + j, 10 * i + j);
  g_autoptr(Tensor) out = run1(f, in);
  assert_values(out, F32_2(2, 3), (double[]){10, 12, 14, 50, 52, 54});
  func_free(f);
}

/* x=4; x global [1..8] split: chunks [1,2] [3,4] [5,6] [7,8]; the sum
 * over all four is [16, 20], replicated everywhere.  Over both axes of a
 * 2x2 mesh, in either order, the same. */
static void test_all_reduce_all(void) {
  const Term *x = term_arg(0, F32_1(2));
  g_autoptr(Tensor) in = tensor_iota(F32_1(8), 1, 1);
  Func *f = spmd_func1("x=4", F32_1(2), "[x]",
                       coll(OP_ALL_REDUCE, x, "x", 4, NULL, 0, NULL, 0), "[]");
  g_autoptr(Tensor) out = run1(f, in);
  assert_values(out, F32_1(2), (double[]){16, 20});
  func_free(f);
  Func *g =
      spmd_func1("a=2,b=2", F32_1(2), "[a,b]",
                 coll(OP_ALL_REDUCE, x, "b,a", 4, NULL, 0, NULL, 0), "[]");
  g_autoptr(Tensor) out2 = run1(g, in);
  assert_values(out2, F32_1(2), (double[]){16, 20});
  func_free(g);
}

/* Sums accumulate exactly and round once, as partir.sum does.  x=4, x
 * global [8] (device j holds elements 2j, 2j+1), f32:
 *   element 0: 1 + 2^-24 + 2^-24 + 0; in f32 step by step that is 1
 *     (each step ties to even), but the exact sum 1 + 2^-23 is an f32;
 *   element 1: 1 + 2^-25 + 0 + 0 is not an f32 and rounds to 1.
 * The all_reduce is converted to f64 so that an unrounded sum would
 * show.  Integers wrap to their width: 2147483647 + 1 in i32 is
 * -2147483648 (seen through a convert to i64). */
static void test_all_reduce_rounding(void) {
  g_autoptr(Diag) err = diag_new(NULL);
  const Term *x = term_arg(0, F32_1(2));
  const Term *sum = coll(OP_ALL_REDUCE, x, "x", 4, NULL, 0, NULL, 0);
  const Type *f64 = ty(DT_F64, 1, 2, 0);
  const Term *wide = term_op(OP_CONVERT, 1, &sum, attrs_empty(), f64, err);
  g_assert_nonnull(wide);
  Func *f = spmd_func1("x=4", F32_1(2), "[x]", wide, "[]");
  double e24 = ldexp(1, -24), e25 = ldexp(1, -25);
  g_autoptr(Tensor) in =
      tensor_of(F32_1(8), (double[]){1, 1, e24, e25, e24, 0, 0, 0});
  g_autoptr(Tensor) out = run1(f, in);
  assert_values(out, f64, (double[]){1 + ldexp(1, -23), 1});
  func_free(f);

  const Type *i32 = ty(DT_I32, 1, 1, 0), *i64 = ty(DT_I64, 1, 1, 0);
  const Term *y = term_arg(0, i32);
  const Term *isum = coll(OP_ALL_REDUCE, y, "x", 2, NULL, 0, NULL, 0);
  const Term *iwide = term_op(OP_CONVERT, 1, &isum, attrs_empty(), i64, err);
  g_assert_nonnull(iwide);
  Func *g = spmd_func1("x=2", i32, "[x]", iwide, "[]");
  g_autoptr(Tensor) iin =
      tensor_of(ty(DT_I32, 1, 2, 0), (double[]){2147483647, 1});
  g_autoptr(Tensor) iout = run1(g, iin);
  assert_values(iout, i64, (double[]){-2147483648.0});
  func_free(g);
}

/* ----------------------------------------------------------- all_gather */

/* batch=2,model=2; x global [4,2] row r = [r, 100+r], device (b, m)
 * holds row 2b+m.  Gathering over [model, batch] orders the group
 * model-major: g = 2m + b, so position 0 is (0,0) row 0, 1 is (b=1,m=0)
 * row 2, 2 is (0,1) row 1, 3 is row 3: [[0,100],[2,102],[1,101],[3,103]]
 * on every device. */
static void test_all_gather_order(void) {
  const Term *x = term_arg(0, F32_2(1, 2));
  const Term *r = coll(OP_ALL_GATHER, x, "model,batch", 4, "dim", 0, NULL, 0);
  Func *f =
      spmd_func1("batch=2,model=2", F32_2(1, 2), "[batch,model][]", r, "[][]");
  g_autoptr(Tensor) in =
      tensor_of(F32_2(4, 2), (double[]){0, 100, 1, 101, 2, 102, 3, 103});
  g_autoptr(Tensor) out = run1(f, in);
  assert_values(out, F32_2(4, 2), (double[]){0, 100, 2, 102, 1, 101, 3, 103});
  func_free(f);
}

/* x=4; x global [2,4] = [[0,1,2,3],[4,5,6,7]], columns split: device g
 * holds column g.  Gathering dim 1 in group order gives back x on every
 * device. */
static void test_all_gather_dim1(void) {
  const Term *x = term_arg(0, F32_2(2, 1));
  const Term *r = coll(OP_ALL_GATHER, x, "x", 4, "dim", 1, NULL, 0);
  Func *f = spmd_func1("x=4", F32_2(2, 1), "[][x]", r, "[][]");
  g_autoptr(Tensor) in = tensor_iota(F32_2(2, 4), 0, 1);
  g_autoptr(Tensor) out = run1(f, in);
  assert_values(out, F32_2(2, 4), (double[]){0, 1, 2, 3, 4, 5, 6, 7});
  func_free(f);
}

/* ------------------------------------------------------- reduce_scatter */

/* d=2; x global [[1,2,3,4],[10,20,30,40]], rows split.  reduce_scatter
 * dim 1: device g gets columns 2g, 2g+1 of the row sum [11,22,33,44];
 * result columns split over d: [[11,22,33,44]]. */
static void test_reduce_scatter(void) {
  const Term *x = term_arg(0, F32_2(1, 4));
  const Term *r = coll(OP_REDUCE_SCATTER, x, "d", 2, "dim", 1, NULL, 0);
  Func *f = spmd_func1("d=2", F32_2(1, 4), "[d][]", r, "[][d]");
  g_autoptr(Tensor) in =
      tensor_of(F32_2(2, 4), (double[]){1, 2, 3, 4, 10, 20, 30, 40});
  g_autoptr(Tensor) out = run1(f, in);
  assert_values(out, F32_2(1, 4), (double[]){11, 22, 33, 44});
  func_free(f);
}

/* batch=2,model=2; x global [4,4] x[r][c] = 4r + c, columns split over
 * [batch, model]: device (b, m) holds column 2b+m.  reduce_scatter over
 * batch along dim 0: device (b, m) gets rows 2b, 2b+1 of column m plus
 * column 2+m.  Rows split over batch, columns over model: out[r][m] =
 * (4r+m) + (4r+2+m) = 8r + 2m + 2. */
static void test_reduce_scatter_2x2(void) {
  const Term *x = term_arg(0, F32_2(4, 1));
  const Term *r = coll(OP_REDUCE_SCATTER, x, "batch", 2, "dim", 0, NULL, 0);
  Func *f = spmd_func1("batch=2,model=2", F32_2(4, 1), "[][batch,model]", r,
                       "[batch][model]");
  g_autoptr(Tensor) in = tensor_iota(F32_2(4, 4), 0, 1);
  g_autoptr(Tensor) out = run1(f, in);
  assert_values(out, F32_2(4, 2), (double[]){2, 4, 10, 12, 18, 20, 26, 28});
  func_free(f);
}

/* ----------------------------------------------------------- all_to_all */

/* x=4; x global [4,8] rows split.  all_to_all(split 1, concat 0): device
 * g receives from j the columns 2g, 2g+1 of row j, placed at row j, so
 * it holds columns 2g..2g+1 of x; with columns split over x the result
 * is x again. */
static void test_all_to_all_reshard(void) {
  const Term *x = term_arg(0, F32_2(1, 8));
  const Term *r =
      coll(OP_ALL_TO_ALL, x, "x", 4, "split_dim", 1, "concat_dim", 0);
  g_assert_true(r->type == F32_2(4, 2));
  Func *f = spmd_func1("x=4", F32_2(1, 8), "[x][]", r, "[][x]");
  g_autoptr(Tensor) in = tensor_iota(F32_2(4, 8), 0, 1);
  g_autoptr(Tensor) out = run1(f, in);
  double want[32];
  for (int j = 0; j < 32; j++)
    want[j] = j;
  assert_values(out, F32_2(4, 8), want);
  func_free(f);
}

/* x=4; x global [0..15], device j holds 4j..4j+3.  all_to_all(split 0,
 * concat 0): device g's element j is element g of device j's chunk,
 * 4j + g; placed at 4g + j, the result is the transpose of x as a 4x4
 * matrix. */
static void test_all_to_all_same_dim(void) {
  const Term *x = term_arg(0, F32_1(4));
  const Term *r =
      coll(OP_ALL_TO_ALL, x, "x", 4, "split_dim", 0, "concat_dim", 0);
  Func *f = spmd_func1("x=4", F32_1(4), "[x]", r, "[x]");
  g_autoptr(Tensor) in = tensor_iota(F32_1(16), 0, 1);
  g_autoptr(Tensor) out = run1(f, in);
  assert_values(
      out, F32_1(16),
      (double[]){0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15});
  func_free(f);
}

/* ---------------------------------------------------------------- shard */

/* batch=2,model=2; x [4,2] = 0..7 replicated.  shard over model, dim 0:
 * device (b, m) keeps rows 2m, 2m+1; rows split over model gives x.
 * shard over [model, batch]: device (b, m) keeps row 2m+b; with rows
 * split over [batch, model] it lands at row 2b+m: rows 0, 2, 1, 3. */
static void test_shard(void) {
  const Term *x = term_arg(0, F32_2(4, 2));
  g_autoptr(Tensor) in = tensor_iota(F32_2(4, 2), 0, 1);
  Func *f =
      spmd_func1("batch=2,model=2", F32_2(4, 2), "[][]",
                 coll(OP_SHARD, x, "model", 2, "dim", 0, NULL, 0), "[model][]");
  g_autoptr(Tensor) out = run1(f, in);
  assert_values(out, F32_2(4, 2), (double[]){0, 1, 2, 3, 4, 5, 6, 7});
  func_free(f);
  Func *g = spmd_func1("batch=2,model=2", F32_2(4, 2), "[][]",
                       coll(OP_SHARD, x, "model,batch", 4, "dim", 0, NULL, 0),
                       "[batch,model][]");
  g_autoptr(Tensor) out2 = run1(g, in);
  assert_values(out2, F32_2(4, 2), (double[]){0, 1, 4, 5, 2, 3, 6, 7});
  func_free(g);
}

/* ------------------------------------------------- scatter and assembly */

/* Identity programs: what goes in split one way comes out placed by the
 * result's layout.  Rows split over [model, batch]: device (b, m) holds
 * row 2m+b; placed by [batch, model] at row 2b+m: rows 0, 2, 1, 3.  A
 * [batch][model] split of a [4,6] matrix round-trips. */
static void test_scatter_assemble(void) {
  const Term *x = term_arg(0, F32_2(1, 2));
  Func *f = spmd_func1("batch=2,model=2", F32_2(1, 2), "[model,batch][]", x,
                       "[batch,model][]");
  g_autoptr(Tensor) in = tensor_iota(F32_2(4, 2), 0, 1);
  g_autoptr(Tensor) out = run1(f, in);
  assert_values(out, F32_2(4, 2), (double[]){0, 1, 4, 5, 2, 3, 6, 7});
  func_free(f);

  const Term *y = term_arg(0, F32_2(2, 3));
  Func *g = spmd_func1("batch=2,model=2", F32_2(2, 3), "[batch][model]", y,
                       "[batch][model]");
  g_autoptr(Tensor) in2 = tensor_iota(F32_2(4, 6), 0, 1);
  g_autoptr(Tensor) out2 = run1(g, in2);
  double iota24[24];
  for (int j = 0; j < 24; j++)
    iota24[j] = j; /* in2's values */
  assert_values(out2, F32_2(4, 6), iota24);
  func_free(g);

  /* a multi-result function: each result placed by its own layout.
   * x0's [2,3] blocks are split [batch][model]: device (b, m) holds
   * in[2b + i][3m + j] and, placed by [model][batch], puts it at
   * out[2m + i][3b + j]: the 2x2 grid of blocks is transposed. */
  const Type *types[2] = {F32_2(2, 3), F32_1(4)};
  const char *dists[2] = {"[batch][model]", "[]"};
  const Term *results[2] = {term_arg(1, F32_1(4)), term_arg(0, F32_2(2, 3))};
  const char *rdists[2] = {"[]", "[model][batch]"};
  Func *h = spmd_func("batch=2,model=2", 2, types, dists, 2, results, rdists);
  g_autoptr(Tensor) v = tensor_iota(F32_1(4), 7, 1);
  Tensor *ins[2] = {in2, v};
  g_autoptr(Diag) diag = diag_new(NULL);
  g_autoptr(GError) err = NULL;
  g_autoptr(GPtrArray) outs = spmd_simulate(h, ins, diag, &err);
  g_assert_no_error(err);
  g_assert_false(diag_any(diag));
  assert_values(g_ptr_array_index(outs, 0), F32_1(4),
                (double[]){7, 8, 9, 10}); /* v's values */
  double want[24];
  for (int b = 0; b < 2; b++)
    for (int m = 0; m < 2; m++)
      for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
          want[(2 * m + i) * 6 + 3 * b + j] =
              iota24[(2 * b + i) * 6 + 3 * m + j];
  assert_values(g_ptr_array_index(outs, 1), F32_2(4, 6), want);
  func_free(h);
}

/* A device's chunk that is a contiguous part of the global argument (a
 * block of rows) is a view of it, not a copy; a block of columns is
 * copied.  x [4,6] = 0..23 on batch=2,model=2. */
static void test_scatter_views(void) {
  g_autoptr(Tensor) in = tensor_iota(F32_2(4, 6), 0, 1);
  const char *layouts[2] = {"[batch,model][]", "[batch][model]"};
  const Type *locals[2] = {F32_2(1, 6), F32_2(2, 3)};
  for (int l = 0; l < 2; l++) {
    const Term *x = term_arg(0, locals[l]);
    Func *f =
        spmd_func1("batch=2,model=2", locals[l], layouts[l], x, layouts[l]);
    for (int dev = 0; dev < 4; dev++) {
      Tensor **chunk = spmd_scatter(f, (Tensor *const[]){in}, dev);
      const float *data = chunk[0]->data, *base = in->data;
      gboolean inside = data >= base && data < base + 24;
      g_assert_true(inside == (l == 0)); /* rows: a view */
      int b = dev / 2, m = dev % 2;
      for (int j = 0; j < 6; j++) { /* row 2b + m, or rows 2b.. cols 3m.. */
        double want =
            l == 0 ? (2 * b + m) * 6 + j : (2 * b + j / 3) * 6 + 3 * m + j % 3;
        g_assert_cmpfloat(data[j], ==, want);
      }
      tensor_unref(chunk[0]);
      g_free(chunk);
    }
    func_free(f);
  }
}

/* Partial results are summed over their axes.  batch=2,model=2, rows of
 * x [4,2] = 0..7 split over [batch, model]; the result, partial over
 * model and split over batch, is row 2b + row 2b+1: [[2,4],[10,12]].  On
 * x=4, chunks of [1..8] partial over x sum to [16, 20]. */
static void test_partial(void) {
  const Term *x = term_arg(0, F32_2(1, 2));
  Func *f = spmd_func1("batch=2,model=2", F32_2(1, 2), "[batch,model][]", x,
                       "[batch][] partial=model");
  g_autoptr(Tensor) in = tensor_iota(F32_2(4, 2), 0, 1);
  g_autoptr(Tensor) out = run1(f, in);
  assert_values(out, F32_2(2, 2), (double[]){2, 4, 10, 12});
  func_free(f);

  const Term *y = term_arg(0, F32_1(2));
  Func *g = spmd_func1("x=4", F32_1(2), "[x]", y, "[] partial=x");
  g_autoptr(Tensor) in2 = tensor_iota(F32_1(8), 1, 1);
  g_autoptr(Tensor) out2 = run1(g, in2);
  assert_values(out2, F32_1(2), (double[]){16, 20});
  func_free(g);
}

/* A result said to be replicated whose replicas differ is an error that
 * names the result and the axis. */
static void test_replica_mismatch(void) {
  const Term *x = term_arg(0, F32_2(1, 2));
  Func *f = spmd_func1("batch=2,model=2", F32_2(1, 2), "[batch,model][]", x,
                       "[batch][]");
  g_autoptr(Tensor) in = tensor_iota(F32_2(4, 2), 0, 1);
  g_autofree char *msg = run1_error(f, in);
  assert_contains(msg, "result 0");
  assert_contains(msg, "'model'");
  /* device (0,1) holds row 1 = [2,3]; (0,0) holds [0,1] */
  assert_contains(msg, "device (batch=0, model=1) has 2 at [0, 0]");
  func_free(f);

  /* replicated over batch: rows 0,1 on batch 0 vs 2,3 on batch 1 */
  Func *g = spmd_func1("batch=2,model=2", F32_2(1, 2), "[batch,model][]", x,
                       "[model][]");
  g_autofree char *msg2 = run1_error(g, in);
  assert_contains(msg2, "'batch'");
  func_free(g);

  /* within tolerance (|a - b| <= 1e-5 |a| + 1e-6 max|a|): d=2 holding
   * 1 and 1 + 2^-20 (about 1 + 9.5e-7) agree, and the result is the
   * replica at coordinate 0; 1 and 1.001 do not */
  const Term *y = term_arg(0, F32_1(1));
  Func *t = spmd_func1("d=2", F32_1(1), "[d]", y, "[]");
  g_autoptr(Tensor) close =
      tensor_of(F32_1(2), (double[]){1, 1 + ldexp(1, -20)});
  g_autoptr(Tensor) near = run1(t, close);
  assert_values(near, F32_1(1), (double[]){1});
  g_autoptr(Tensor) apart = tensor_of(F32_1(2), (double[]){1, 1.001});
  g_autofree char *msg3 = run1_error(t, apart);
  assert_contains(msg3, "'d'");
  func_free(t);

  /* an all_reduce makes true replicas */
  Func *h = spmd_func1("batch=2,model=2", F32_2(1, 2), "[batch,model][]",
                       coll(OP_ALL_REDUCE, x, "model", 2, NULL, 0, NULL, 0),
                       "[batch][]");
  g_autoptr(Tensor) out = run1(h, in);
  assert_values(out, F32_2(2, 2), (double[]){2, 4, 10, 12});
  func_free(h);
}

/* Collectives inside a sequential tile: d=2, x global [4,3] rows split;
 * each of the 2 iterations all-reduces one local row, so the result is
 * the all_reduce of x, rows 0-1 plus rows 2-3. */
static void test_collective_in_tile(void) {
  g_autoptr(Diag) err = diag_new(NULL);
  const Term *x = term_arg(0, F32_2(2, 3));
  const Type *range = type_range(2, 1);
  const Term *row = term_slice(0, x, term_bvar(0, range), err);
  g_assert_nonnull(row);
  const Term *body = coll(OP_ALL_REDUCE, row, "d", 2, NULL, 0, NULL, 0);
  const Term *tile = term_tile(0, range, NULL, body, 0, err);
  g_assert_nonnull(tile);
  Func *f = spmd_func1("d=2", F32_2(2, 3), "[d][]", tile, "[][]");
  g_autoptr(Tensor) in = tensor_iota(F32_2(4, 3), 0, 1);
  g_autoptr(Tensor) out = run1(f, in);
  assert_values(out, F32_2(2, 3), (double[]){6, 8, 10, 12, 14, 16});
  func_free(f);
}

/* A single device (empty mesh): collectives over no devices are not
 * possible, but plain programs run as themselves. */
static void test_one_device(void) {
  const Term *x = term_arg(0, F32_1(3));
  g_autoptr(Diag) err = diag_new(NULL);
  const Term *args[2] = {x, x};
  const Term *sum = term_op(OP_ADD, 2, args, attrs_empty(), NULL, err);
  Func *f = spmd_func1("", F32_1(3), "[]", sum, "[]");
  g_autoptr(Tensor) in = tensor_of(F32_1(3), (double[]){1, 2, 3});
  g_autoptr(Tensor) out = run1(f, in);
  assert_values(out, F32_1(3), (double[]){2, 4, 6});
  func_free(f);
}

/* ---------------------------------------------------------------- errors */

static void test_errors(void) {
  const Term *x = term_arg(0, F32_1(2));
  g_autoptr(Tensor) in8 = tensor_iota(F32_1(8), 0, 1);

  /* not an SPMD program */
  Func *f = spmd_func1("x=4", F32_1(2), "[x]", x, "[x]");
  SpmdInfo *spmd = f->spmd;
  f->spmd = NULL;
  g_autofree char *m1 = run1_error(f, in8);
  assert_contains(m1, "not an SPMD program");
  f->spmd = spmd;

  /* global input of the wrong shape */
  g_autoptr(Tensor) in4 = tensor_iota(F32_1(4), 0, 1);
  g_autofree char *m2 = run1_error(f, in4);
  assert_contains(m2, "argument 'x0'");
  assert_contains(m2, "tensor<8xf32>");
  func_free(f);

  /* a partial argument */
  Func *g = spmd_func1("x=4", F32_1(2), "[] partial=x", x, "[]");
  g_autoptr(Tensor) in2 = tensor_iota(F32_1(2), 0, 1);
  g_autofree char *m3 = run1_error(g, in2);
  assert_contains(m3, "partial");
  func_free(g);

  /* a layout axis the mesh lacks, and one used twice */
  Func *h = spmd_func1("x=4", F32_1(2), "[y]", x, "[x]");
  g_autofree char *m4 = run1_error(h, in8);
  assert_contains(m4, "'y'");
  func_free(h);
  Func *h2 = spmd_func1("x=4", F32_1(2), "[x]", x, "[x] partial=x");
  g_autofree char *m5 = run1_error(h2, in8);
  assert_contains(m5, "twice");
  func_free(h2);

  /* a collective over an axis the mesh lacks, and a wrong size */
  Func *k =
      spmd_func1("x=4", F32_1(2), "[x]",
                 coll(OP_ALL_REDUCE, x, "model", 4, NULL, 0, NULL, 0), "[]");
  g_autofree char *m6 = run1_error(k, in8);
  assert_contains(m6, "'model'");
  func_free(k);
  Func *k2 = spmd_func1("x=4", F32_1(2), "[x]",
                        coll(OP_ALL_REDUCE, x, "x", 2, NULL, 0, NULL, 0), "[]");
  g_autofree char *m7 = run1_error(k2, in8);
  assert_contains(m7, "size = 2");
  func_free(k2);
}

/* An interrupt stops the simulation with "interrupted", without
 * deadlock: set before the run, and set while the devices are in a long
 * loop of collectives.  The devices run in step (each collective is a
 * barrier) and look at the flag once per iteration, so they only
 * sometimes see it at different iterations, leaving the others waiting
 * at a collective the interrupted one never reaches; many runs with
 * varied delays make that near certain.  A watchdog turns a deadlock
 * into a failure. */
static gpointer interrupt_later(gpointer data) {
  g_usleep(GPOINTER_TO_UINT(data));
  partir_interrupt = 1;
  return NULL;
}

/* Fails the test unless '*done' is set within a minute. */
static gpointer watchdog_main(gpointer data) {
  gint *done = data;
  for (int tick = 0; tick < 600 && !g_atomic_int_get(done); tick++)
    g_usleep(100000);
  if (!g_atomic_int_get(done))
    g_error("the simulation deadlocked after an interrupt");
  return NULL;
}

static void test_interrupt(void) {
  const int n = 20000; /* seconds of collectives: far longer than a delay */
  g_autoptr(Diag) err = diag_new(NULL);
  const Type *local = F32_2(n, 1);
  const Type *range = type_range(n, 1);
  const Term *row = term_slice(0, term_arg(0, local), term_bvar(0, range), err);
  const Term *tile =
      term_tile(0, range, NULL,
                coll(OP_ALL_REDUCE, row, "x", 8, NULL, 0, NULL, 0), 0, err);
  g_assert_nonnull(tile);
  Func *f = spmd_func1("x=8", local, "[][]", tile, "[][]");
  g_autoptr(Tensor) in = tensor_new(local);

  gint done = FALSE;
  GThread *dog = g_thread_new("watchdog", watchdog_main, &done);

  partir_interrupt = 1;
  g_autofree char *m1 = run1_error(f, in);
  g_assert_cmpstr(m1, ==, "interrupted");

  for (guint trial = 0; trial < 40; trial++) {
    partir_interrupt = 0;
    GThread *timer = g_thread_new("interrupt", interrupt_later,
                                  GUINT_TO_POINTER(1000 + 250 * trial));
    g_autofree char *m2 = run1_error(f, in);
    g_thread_join(timer);
    g_assert_cmpstr(m2, ==, "interrupted");
  }
  partir_interrupt = 0;

  g_atomic_int_set(&done, TRUE);
  g_thread_join(dog);
  func_free(f);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/spmd-sim/all-reduce-2x2", test_all_reduce_2x2);
  g_test_add_func("/spmd-sim/all-reduce-all", test_all_reduce_all);
  g_test_add_func("/spmd-sim/all-reduce-rounding", test_all_reduce_rounding);
  g_test_add_func("/spmd-sim/all-gather-order", test_all_gather_order);
  g_test_add_func("/spmd-sim/all-gather-dim1", test_all_gather_dim1);
  g_test_add_func("/spmd-sim/reduce-scatter", test_reduce_scatter);
  g_test_add_func("/spmd-sim/reduce-scatter-2x2", test_reduce_scatter_2x2);
  g_test_add_func("/spmd-sim/all-to-all-reshard", test_all_to_all_reshard);
  g_test_add_func("/spmd-sim/all-to-all-same-dim", test_all_to_all_same_dim);
  g_test_add_func("/spmd-sim/shard", test_shard);
  g_test_add_func("/spmd-sim/scatter-assemble", test_scatter_assemble);
  g_test_add_func("/spmd-sim/scatter-views", test_scatter_views);
  g_test_add_func("/spmd-sim/partial", test_partial);
  g_test_add_func("/spmd-sim/replica-mismatch", test_replica_mismatch);
  g_test_add_func("/spmd-sim/collective-in-tile", test_collective_in_tile);
  g_test_add_func("/spmd-sim/one-device", test_one_device);
  g_test_add_func("/spmd-sim/errors", test_errors);
  g_test_add_func("/spmd-sim/interrupt", test_interrupt);
  return g_test_run();
}
