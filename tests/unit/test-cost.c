/* test-cost — the cost model against hand-computed figures: FLOPs of
 * matmuls, the 2-layer MLP whole and split over model=2, loops, peak live
 * bytes, ring formulas of the collectives; hardware files and "what if"
 * settings; the lowering stage's height limit. */
#include "pipeline.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

/* ------------------------------------------------------------- helpers */

static const Type *f32(int64_t a, int64_t b) {
  int64_t dims[2] = {a, b};
  return type_tensor(DT_F32, 2, dims);
}

static const Term *op1(Op op, const Term *a, const Attrs *attrs) {
  g_autoptr(Diag) err = diag_new(NULL);
  const Term *t = term_op(op, 1, (const Term *[]){a},
                          attrs ? attrs : attrs_empty(), NULL, err);
  if (!t)
    g_error("%s", diag_text(err));
  return t;
}

static const Term *op2(Op op, const Term *a, const Term *b) {
  g_autoptr(Diag) err = diag_new(NULL);
  const Term *t =
      term_op(op, 2, (const Term *[]){a, b}, attrs_empty(), NULL, err);
  if (!t)
    g_error("%s", diag_text(err));
  return t;
}

static const Term *slice(int dim, const Term *x, const Type *range) {
  g_autoptr(Diag) err = diag_new(NULL);
  const Term *t = term_slice(dim, x, term_bvar(0, range), err);
  if (!t)
    g_error("%s", diag_text(err));
  return t;
}

/* A tile whose binder is the highest level its body uses. */
static const Term *tile(int dim, const Type *range, const Term *body) {
  g_autoptr(Diag) err = diag_new(NULL);
  int level = term_home(body) > 0 ? term_home(body) - 1 : 0;
  const Term *t = term_tile(dim, range, NULL, body, level, err);
  if (!t)
    g_error("%s", diag_text(err));
  return t;
}

/* Collective attributes: axes (comma-separated), size, and up to two
 * integer attributes (NULL key: absent). */
static const Attrs *coll(const char *axes, int64_t size, const char *k1,
                         int64_t v1, const char *k2, int64_t v2) {
  g_auto(GStrv) names = g_strsplit(axes, ",", -1);
  int n = 2 + (k1 != NULL) + (k2 != NULL);
  const char **keys = g_new(const char *, n);
  AttrValue *vals = g_new0(AttrValue, n);
  keys[0] = g_intern_string("axes");
  vals[0].kind = AV_LIST;
  vals[0].count = (int)g_strv_length(names);
  vals[0].items = g_new0(AttrValue, vals[0].count);
  for (int i = 0; i < vals[0].count; i++) {
    vals[0].items[i].kind = AV_SYMBOL;
    vals[0].items[i].sym = g_intern_string(names[i]);
  }
  keys[1] = g_intern_string("size");
  vals[1] = (AttrValue){.kind = AV_INT, .i = size};
  if (k1) {
    keys[2] = g_intern_string(k1);
    vals[2] = (AttrValue){.kind = AV_INT, .i = v1};
  }
  if (k2) {
    keys[3] = g_intern_string(k2);
    vals[3] = (AttrValue){.kind = AV_INT, .i = v2};
  }
  return attrs_intern(n, keys, vals);
}

/* A function of 'nargs' arguments (%a0, %a1, ...) returning 'result';
 * an SPMD program on 'mesh' unless it is NULL.  Free with func_free. */
static Func *func(const char *mesh, int nargs, const Type *const *types,
                  const Term *result) {
  Func *f = g_new0(Func, 1);
  f->name = g_strdup("f");
  f->nargs = nargs;
  f->arg_names = g_new0(char *, (gsize)nargs + 1);
  f->arg_types = g_new(const Type *, (gsize)nargs);
  for (int i = 0; i < nargs; i++) {
    f->arg_names[i] = g_strdup_printf("a%d", i);
    f->arg_types[i] = types[i];
  }
  f->nresults = 1;
  f->result_types = g_new(const Type *, 1);
  f->result_types[0] = result->type;
  f->body = term_tuple(1, &result);
  if (mesh) {
    f->spmd = g_new0(SpmdInfo, 1);
    g_assert_true(mesh_parse(mesh, &f->spmd->mesh, NULL));
  }
  return f;
}

/* Round figures that make the expected times easy to compute by hand. */
static Hardware test_hw(void) {
  Hardware hw = {.name = g_intern_string("test"),
                 .peak_flops_f32 = 1e12,
                 .peak_flops_bf16 = 4e12,
                 .peak_flops_f64 = 0.5e12,
                 .memory_bytes = 1e6,
                 .link_bw = 1e9,
                 .link_latency = 1e-6};
  return hw;
}

/* Field by field (struct copies need not copy padding). */
static gboolean hw_equal(const Hardware *a, const Hardware *b) {
  if (a->name != b->name || strcmp(a->changes, b->changes) != 0 ||
      a->peak_flops_f32 != b->peak_flops_f32 ||
      a->peak_flops_bf16 != b->peak_flops_bf16 ||
      a->peak_flops_f64 != b->peak_flops_f64 ||
      a->memory_bytes != b->memory_bytes || a->link_bw != b->link_bw ||
      a->link_latency != b->link_latency || a->mem_bw != b->mem_bw ||
      a->kernel_overhead != b->kernel_overhead || a->gemm_mr != b->gemm_mr ||
      a->gemm_nr != b->gemm_nr || a->product_overhead != b->product_overhead ||
      a->cache_bytes != b->cache_bytes || a->cache_bw != b->cache_bw ||
      a->naxes != b->naxes)
    return FALSE;
  for (int i = 0; i < a->naxes; i++)
    if (a->axes[i].name != b->axes[i].name ||
        a->axes[i].link_bw != b->axes[i].link_bw ||
        a->axes[i].link_latency != b->axes[i].link_latency)
      return FALSE;
  return TRUE;
}

static void estimate(const Func *f, const Hardware *hw, CostReport *r) {
  g_autoptr(Diag) error = diag_new(NULL);
  g_assert_true(cost_estimate(NULL, f, hw, r, error));
  g_assert_false(diag_any(error));
}

static const CostComm *comm(const CostReport *r, Op op, const char *axes) {
  for (guint i = 0; i < r->comms->len; i++) {
    const CostComm *c = &g_array_index(r->comms, CostComm, i);
    if (c->op == op && strcmp(c->axes, axes) == 0)
      return c;
  }
  return NULL;
}

#define assert_close(a, b)                                                     \
  g_assert_cmpfloat_with_epsilon((a), (b), 1e-9 * fabs(b) + 1e-15)

/* --------------------------------------------------------------- FLOPs */

/* matmul [16,256] x [256,512]: 2*m*k*n = 2*16*256*512 = 4194304. */
static void test_matmul(void) {
  Hardware hw = test_hw();
  const Type *types[] = {f32(16, 256), f32(256, 512)};
  const Term *x = term_arg(0, types[0]), *w = term_arg(1, types[1]);
  Func *f = func(NULL, 2, types, op2(OP_MATMUL, x, w));
  g_auto(CostReport) r = {0};
  estimate(f, &hw, &r);
  g_assert_cmpfloat(r.flops, ==, 4194304);
  g_assert_cmpint(r.ndevices, ==, 1);
  assert_close(r.compute_time, 4194304 / 1e12);
  g_assert_cmpuint(r.comms->len, ==, 0);
  g_assert_cmpfloat(r.comm_time, ==, 0);
  g_assert_cmpfloat(r.total_time, ==, r.compute_time);
  /* bytes: x 16384 + w 524288 + result 16*512*4 = 32768 */
  g_assert_cmpfloat(r.peak_bytes, ==, 16384 + 524288 + 32768);
  func_free(f);
}

/* The 2-layer MLP x[16,256] @ w[256,256] @ u[256,256]: 2 * (2*16*256*256)
 * = 4194304 FLOPs.  Peak: the three arguments (16384 + 2 * 262144) plus
 * the hidden value and the result together (2 * 16384) = 573440. */
static void test_mlp(void) {
  Hardware hw = test_hw();
  const Type *types[] = {f32(16, 256), f32(256, 256), f32(256, 256)};
  const Term *x = term_arg(0, types[0]), *w = term_arg(1, types[1]),
             *u = term_arg(2, types[2]);
  Func *f = func(NULL, 3, types, op2(OP_MATMUL, op2(OP_MATMUL, x, w), u));
  g_auto(CostReport) r = {0};
  estimate(f, &hw, &r);
  g_assert_cmpfloat(r.flops, ==, 4194304);
  g_assert_cmpfloat(r.peak_bytes, ==, 573440);
  g_assert_cmpstr(r.peak_at, ==, "1"); /* the second matmul */
  g_assert_true(r.fits);               /* 573440 <= 1e6 */
  func_free(f);
}

/* The MLP split Megatron-style over model=2: each device holds x whole,
 * w[256,128] (columns) and u[128,256] (rows); FLOPs 2*16*256*128 +
 * 2*16*128*256 = 2097152, then an all_reduce of the [16,256] f32 partial
 * sums (16384 bytes): 2*(2-1)/2*16384 = 16384 bytes, 2*(2-1) = 2 steps. */
static void test_mlp_model2(void) {
  Hardware hw = test_hw();
  const Type *types[] = {f32(16, 256), f32(256, 128), f32(128, 256)};
  const Term *x = term_arg(0, types[0]), *w = term_arg(1, types[1]),
             *u = term_arg(2, types[2]);
  const Term *y = op2(OP_MATMUL, op2(OP_MATMUL, x, w), u);
  const Term *r_ = op1(OP_ALL_REDUCE, y, coll("model", 2, NULL, 0, NULL, 0));
  Func *f = func("model=2", 3, types, r_);
  g_auto(CostReport) r = {0};
  estimate(f, &hw, &r);
  g_assert_cmpint(r.ndevices, ==, 2);
  g_assert_cmpfloat(r.flops, ==, 2 * 16 * 256 * 128 + 2 * 16 * 128 * 256);
  g_assert_cmpfloat(r.flops, ==, 2097152);
  g_assert_cmpuint(r.comms->len, ==, 1);
  const CostComm *c = comm(&r, OP_ALL_REDUCE, "model");
  g_assert_nonnull(c);
  g_assert_cmpfloat(c->count, ==, 1);
  g_assert_cmpfloat(c->bytes, ==, 16384);
  assert_close(c->time, 2 * 1e-6 + 16384 / 1e9);
  assert_close(r.comm_time, c->time);
  assert_close(r.compute_time, 2097152 / 1e12);
  assert_close(r.total_time, 2097152 / 1e12 + 2 * 1e-6 + 16384 / 1e9);
  /* args 16384 + 131072 + 131072; at the all_reduce: its operand and
   * result (2 * 16384) */
  g_assert_cmpfloat(r.peak_bytes, ==, 278528 + 32768);
  g_assert_cmpstr(r.peak_at, ==, "2");

  g_autoptr(GString) text = g_string_new(NULL);
  cost_print(text, &r, &hw, &f->spmd->mesh);
  g_assert_nonnull(strstr(text->str, "mesh model=2 (2 devices)"));
  g_assert_nonnull(strstr(text->str, "all_reduce"));
  g_assert_nonnull(strstr(text->str, "2097152"));
  g_assert_nonnull(strstr(text->str, "4194304")); /* FLOPs of both devices */
  g_assert_null(strstr(text->str, "DOES NOT FIT"));
  func_free(f);
}

/* exp, mul, add over [8,4]: one FLOP per element each, 3 * 32 = 96;
 * bf16 ops are timed at the bf16 peak. */
static void test_elementwise(void) {
  Hardware hw = test_hw();
  int64_t dims[2] = {8, 4};
  const Type *types[] = {type_tensor(DT_BF16, 2, dims)};
  const Term *x = term_arg(0, types[0]);
  const Term *a = op1(OP_EXP, x, NULL);
  const Term *b = op2(OP_MUL, a, x);
  Func *f = func(NULL, 1, types, op2(OP_ADD, b, a));
  g_auto(CostReport) r = {0};
  estimate(f, &hw, &r);
  g_assert_cmpfloat(r.flops, ==, 96);
  assert_close(r.compute_time, 96 / 4e12);
  /* bf16 is 2 bytes: 64 per value; at the add: x, a, b and the sum */
  g_assert_cmpfloat(r.peak_bytes, ==, 4 * 64);
  func_free(f);
}

/* A sequential tile over range<16,4> runs its body 4 times: 4 * (2*4*256
 * *256) = 2097152, as the untiled matmul.  The closed exp(w) in the body
 * is hoisted and counted once (65536), not per iteration. */
static void test_tile_loop(void) {
  Hardware hw = test_hw();
  const Type *types[] = {f32(16, 256), f32(256, 256)};
  const Term *x = term_arg(0, types[0]), *w = term_arg(1, types[1]);
  const Type *range = type_range(16, 4);
  const Term *e = op1(OP_EXP, w, NULL);
  Func *f = func(NULL, 2, types,
                 tile(0, range, op2(OP_MATMUL, slice(0, x, range), e)));
  g_auto(CostReport) r = {0};
  estimate(f, &hw, &r);
  g_assert_cmpfloat(r.flops, ==, 4 * (2 * 4 * 256 * 256) + 65536);
  /* schedule: %0 = exp (262144 B, live through the loop), %1 = tile
   * (whole buffer 16384 B), %2 = slice (4096 B), %3 = matmul (4096 B);
   * args 16384 + 262144 */
  g_assert_cmpfloat(r.peak_bytes, ==,
                    16384 + 262144 + 262144 + 16384 + 4096 + 4096);
  g_assert_cmpstr(r.peak_at, ==, "3");

  /* the same without the hoisted value: the loop's FLOPs alone */
  Func *g = func(NULL, 2, types,
                 tile(0, range, op2(OP_MATMUL, slice(0, x, range), w)));
  g_auto(CostReport) r2 = {0};
  estimate(g, &hw, &r2);
  g_assert_cmpfloat(r2.flops, ==, 2097152);

  /* a body that uses no range value is computed once, outside: exp of
   * an [8,256] argument (2048 FLOPs) copied into both halves */
  const Type *half[] = {f32(8, 256)};
  Func *h =
      func(NULL, 1, half,
           tile(0, type_range(16, 8), op1(OP_EXP, term_arg(0, half[0]), NULL)));
  g_auto(CostReport) r3 = {0};
  estimate(h, &hw, &r3);
  g_assert_cmpfloat(r3.flops, ==, 2048);
  /* the argument, the exp and the tile's buffer */
  g_assert_cmpfloat(r3.peak_bytes, ==, 8192 + 8192 + 16384);
  func_free(f);
  func_free(g);
  func_free(h);
}

/* Nested loops multiply: tile 0 over range<16,8> (2 iterations) of tile 1
 * over range<256,64> (4 iterations) of an exp of an [8,64] chunk: 8
 * evaluations of 512 FLOPs = 4096, one per element of x. */
static void test_nested_loops(void) {
  Hardware hw = test_hw();
  const Type *types[] = {f32(16, 256)};
  const Term *x = term_arg(0, types[0]);
  const Type *r0 = type_range(16, 8), *r1 = type_range(256, 64);
  g_autoptr(Diag) err = diag_new(NULL);
  const Term *outer = term_slice(0, x, term_bvar(0, r0), err); /* [8,256] */
  const Term *inner = term_slice(1, outer, term_bvar(1, r1), err);
  g_assert_nonnull(inner);
  const Term *t = tile(0, r0, tile(1, r1, op1(OP_EXP, inner, NULL)));
  Func *f = func(NULL, 1, types, t);
  g_auto(CostReport) r = {0};
  estimate(f, &hw, &r);
  g_assert_cmpfloat(r.flops, ==, 16 * 256);
  /* x 16384; outer tile 16384; outer slice [8,256] 8192 (live through
   * the inner loop); inner tile [8,256] 8192; inner slice and exp [8,64]
   * 2048 each */
  g_assert_cmpfloat(r.peak_bytes, ==,
                    16384 + 16384 + 8192 + 8192 + 2048 + 2048);
  func_free(f);
}

/* A chain of three values x -> neg -> neg -> neg: at most two of them
 * and the argument are live at once. */
static void test_chain_memory(void) {
  Hardware hw = test_hw();
  const Type *types[] = {f32(32, 32)}; /* 4096 bytes */
  const Term *x = term_arg(0, types[0]);
  const Term *c = op1(OP_NEG, op1(OP_NEG, op1(OP_NEG, x, NULL), NULL), NULL);
  Func *f = func(NULL, 1, types, c);
  g_auto(CostReport) r = {0};
  estimate(f, &hw, &r);
  g_assert_cmpfloat(r.peak_bytes, ==, 3 * 4096);
  g_assert_cmpfloat(r.flops, ==, 3 * 1024);
  /* an argument returned as it is: just the argument */
  Func *g = func(NULL, 1, types, x);
  g_auto(CostReport) r2 = {0};
  estimate(g, &hw, &r2);
  g_assert_cmpfloat(r2.peak_bytes, ==, 4096);
  g_assert_null(r2.peak_at);
  g_assert_cmpfloat(r2.flops, ==, 0);
  func_free(f);
  func_free(g);
}

/* --------------------------------------------------------- collectives */

/* all_reduce of a [16,256] f32 (16384 bytes) over 4 devices:
 * 2*3/4*16384 = 24576 bytes in 2*3 = 6 steps. */
static void test_all_reduce(void) {
  Hardware hw = test_hw();
  const Type *types[] = {f32(16, 256)};
  const Term *x = term_arg(0, types[0]);
  Func *f = func("model=4", 1, types,
                 op1(OP_ALL_REDUCE, x, coll("model", 4, NULL, 0, NULL, 0)));
  g_auto(CostReport) r = {0};
  estimate(f, &hw, &r);
  const CostComm *c = comm(&r, OP_ALL_REDUCE, "model");
  g_assert_nonnull(c);
  g_assert_cmpfloat(c->bytes, ==, 2.0 * 3 / 4 * 16384);
  g_assert_cmpfloat(c->bytes, ==, 24576);
  assert_close(c->time, 6 * 1e-6 + 24576 / 1e9);
  g_assert_cmpfloat(r.flops, ==, 0);
  func_free(f);
}

/* all_gather [4,256] -> [16,256] over 4: (4-1)/4 * 16384 (the output) =
 * 12288; reduce_scatter [16,256] -> [4,256]: 3/4 * 16384 (the input) =
 * 12288; all_to_all [16,256] -> [4,1024]: 3/4 * 16384 = 12288; shard:
 * nothing.  Each of the first three takes 3 steps. */
static void test_gather_scatter(void) {
  Hardware hw = test_hw();
  const Type *types[] = {f32(4, 256), f32(16, 256), f32(16, 256)};
  const Term *a = term_arg(0, types[0]), *b = term_arg(1, types[1]),
             *c = term_arg(2, types[2]);
  const Term *g = op1(OP_ALL_GATHER, a, coll("model", 4, "dim", 0, NULL, 0));
  const Term *s =
      op1(OP_REDUCE_SCATTER, b, coll("model", 4, "dim", 0, NULL, 0));
  const Term *t =
      op1(OP_ALL_TO_ALL, c, coll("model", 4, "split_dim", 0, "concat_dim", 1));
  const Term *sh = op1(OP_SHARD, c, coll("model", 4, "dim", 1, NULL, 0));
  g_assert_cmpint(g->type->dims[0], ==, 16);
  g_assert_cmpint(t->type->dims[1], ==, 1024);
  /* one function using all four: bring every value back to [16,256]
   * (t and sh through one more collective each) and add them up */
  const Term *sum1 = op2(OP_ADD, g, g); /* [16,256] */
  const Term *t_back = op1(OP_REDUCE_SCATTER, t,
                           coll("model", 4, "dim", 1, NULL, 0)); /* [4,256] */
  const Term *sh_back = op1(OP_ALL_GATHER, sh,
                            coll("model", 4, "dim", 1, NULL, 0)); /* [16,256] */
  const Term *res = op2(OP_ADD, op2(OP_ADD, sum1, sh_back),
                        op1(OP_ALL_GATHER, op2(OP_ADD, s, t_back),
                            coll("model", 4, "dim", 0, NULL, 0)));
  Func *f = func("model=4", 3, types, res);
  g_auto(CostReport) r = {0};
  estimate(f, &hw, &r);
  /* all_gather: g (out 16384), sh_back (out [16,256]: 16384), the last
   * (out 16384): 3 * 12288 */
  const CostComm *cg = comm(&r, OP_ALL_GATHER, "model");
  g_assert_cmpfloat(cg->count, ==, 3);
  g_assert_cmpfloat(cg->bytes, ==, 3 * 12288);
  /* reduce_scatter: s (in 16384) and t_back (in [4,1024]: 16384) */
  const CostComm *cs = comm(&r, OP_REDUCE_SCATTER, "model");
  g_assert_cmpfloat(cs->count, ==, 2);
  g_assert_cmpfloat(cs->bytes, ==, 2 * 12288);
  assert_close(cs->time, 2 * (3 * 1e-6 + 12288 / 1e9));
  const CostComm *ct = comm(&r, OP_ALL_TO_ALL, "model");
  g_assert_cmpfloat(ct->count, ==, 1);
  g_assert_cmpfloat(ct->bytes, ==, 12288);
  const CostComm *csh = comm(&r, OP_SHARD, "model");
  g_assert_cmpfloat(csh->count, ==, 1);
  g_assert_cmpfloat(csh->bytes, ==, 0);
  g_assert_cmpfloat(csh->time, ==, 0);
  assert_close(r.comm_time, 6 * (3 * 1e-6 + 12288 / 1e9));
  /* ordered by operator */
  g_assert_cmpint(g_array_index(r.comms, CostComm, 0).op, ==, OP_ALL_GATHER);
  func_free(f);
}

/* A collective over two axes uses the slower link (per-axis override)
 * and the larger latency: all_reduce over batch,model (2*4 = 8 devices)
 * of 16384 bytes: 2*7/8*16384 = 28672 bytes, 14 steps. */
static void test_two_axes(void) {
  Hardware hw = test_hw();
  g_autoptr(Diag) error = diag_new(NULL);
  g_assert_true(hw_set(&hw, "axis.batch.link_bw=0.25e9", error));
  g_assert_true(hw_set(&hw, "axis.model.link_latency=3e-6", error));
  const Type *types[] = {f32(16, 256)};
  const Term *x = term_arg(0, types[0]);
  Func *f =
      func("batch=2,model=4", 1, types,
           op1(OP_ALL_REDUCE, x, coll("batch,model", 8, NULL, 0, NULL, 0)));
  g_auto(CostReport) r = {0};
  estimate(f, &hw, &r);
  g_assert_cmpint(r.ndevices, ==, 8);
  const CostComm *c = comm(&r, OP_ALL_REDUCE, "batch,model");
  g_assert_nonnull(c);
  g_assert_cmpint(c->size, ==, 8);
  g_assert_cmpfloat(c->bytes, ==, 28672);
  assert_close(c->time, 14 * 3e-6 + 28672 / 0.25e9);
  func_free(f);
}

/* A collective in a sequential loop counts once per iteration: 4
 * all_reduces over model=4 of a [4,256] chunk (4096 bytes), 2*3/4*4096
 * = 6144 bytes each. */
static void test_collective_in_loop(void) {
  Hardware hw = test_hw();
  const Type *types[] = {f32(16, 256)};
  const Term *x = term_arg(0, types[0]);
  const Type *range = type_range(16, 4);
  const Term *body = op1(OP_ALL_REDUCE, slice(0, x, range),
                         coll("model", 4, NULL, 0, NULL, 0));
  Func *f = func("model=4", 1, types, tile(0, range, body));
  g_auto(CostReport) r = {0};
  estimate(f, &hw, &r);
  const CostComm *c = comm(&r, OP_ALL_REDUCE, "model");
  g_assert_cmpfloat(c->count, ==, 4);
  g_assert_cmpfloat(c->bytes, ==, 4 * 6144);
  assert_close(c->time, 4 * (6 * 1e-6 + 6144 / 1e9));
  func_free(f);
}

/* Programs the model refuses, with the reason. */
static void test_refused(void) {
  Hardware hw = test_hw();
  const Type *types[] = {f32(16, 256)};
  const Term *x = term_arg(0, types[0]);
  struct {
    const char *mesh;
    const Term *result;
    const char *message;
  } cases[] = {
      {"batch=4", op1(OP_ALL_REDUCE, x, coll("model", 4, NULL, 0, NULL, 0)),
       "axis 'model', which mesh 'batch=4' does not have"},
      {"model=2", op1(OP_ALL_REDUCE, x, coll("model", 4, NULL, 0, NULL, 0)),
       "has size 4 but its axes have 2 devices"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    Func *f = func(cases[i].mesh, 1, types, cases[i].result);
    g_auto(CostReport) r = {0};
    g_autoptr(Diag) error = diag_new(NULL);
    g_assert_false(cost_estimate(NULL, f, &hw, &r, error));
    g_assert_true(diag_any(error));
    g_assert_nonnull(strstr(diag_text(error), cases[i].message));
    func_free(f);
  }
  /* an axis-bound tile is a lowering's job, not a loop */
  g_autoptr(Diag) err = diag_new(NULL);
  const Type *range = type_range(16, 8);
  const Term *t =
      term_tile(0, range, g_intern_string("batch"), slice(0, x, range), 0, err);
  Func *f = func("batch=2", 1, types, t);
  g_auto(CostReport) r = {0};
  g_autoptr(Diag) error = diag_new(NULL);
  g_assert_false(cost_estimate(NULL, f, &hw, &r, error));
  g_assert_nonnull(strstr(diag_text(error), "bound to axis 'batch'"));
  func_free(f);
  /* ... but in a program that is not SPMD it runs as a loop */
  Func *g = func(NULL, 1, types, t);
  g_auto(CostReport) r2 = {0};
  estimate(g, &hw, &r2);
  func_free(g);
}

/* A program deeper than PARTIR_MAX_HEIGHT (the parser takes no such
 * text, but rewriting grows programs) is refused before lowering, whose
 * recursion the deep stack was sized for, with its depth and the limit.
 * Lowering it instead overflows the stack of this thread. */
static void test_too_deep_to_lower(void) {
  g_autoptr(Diag) errors = diag_new(NULL);
  RuleSet *rs = pipeline_load_rules(NULL, NULL, errors);
  if (!rs) {
    g_test_skip("no rules on the search path ($PARTIR_RULES)");
    return;
  }
  int64_t four = 4;
  const Type *types[] = {type_tensor(DT_F32, 1, &four)};
  const Term *t = term_arg(0, types[0]);
  for (int i = 0; i < PARTIR_MAX_HEIGHT + 1; i++)
    t = op1(OP_NEG, t, NULL);
  g_assert_cmpuint(t->height, ==, PARTIR_MAX_HEIGHT + 1);
  Func *f = func(NULL, 1, types, t);
  Mesh mesh;
  g_assert_true(mesh_parse("a=2", &mesh, NULL));
  g_auto(Lowered) l = {0};
  g_autoptr(Diag) why = diag_new(NULL);
  g_assert_false(pipeline_lower(rs, NULL, f, &mesh, &l, why));
  g_assert_cmpstr(diag_text(why), ==,
                  "the program is 1000001 values deep; lowering takes at "
                  "most 1000000");
  g_assert_null(l.owned);
  func_free(f);
  ruleset_free(rs);
}

/* "DOES NOT FIT" when the peak exceeds the device's memory. */
static void test_does_not_fit(void) {
  Hardware hw = test_hw();
  g_autoptr(Diag) error = diag_new(NULL);
  g_assert_true(hw_set(&hw, "memory_bytes=1000", error));
  const Type *types[] = {f32(16, 256)};
  Func *f = func(NULL, 1, types, op1(OP_EXP, term_arg(0, types[0]), NULL));
  g_auto(CostReport) r = {0};
  estimate(f, &hw, &r);
  g_assert_false(r.fits);
  g_autoptr(GString) text = g_string_new(NULL);
  cost_print(text, &r, &hw, NULL);
  g_assert_nonnull(strstr(text->str, "DOES NOT FIT"));
  g_assert_nonnull(strstr(text->str, "one device"));
  g_assert_nonnull(strstr(text->str, "memory_bytes=1000"));
  func_free(f);
}

/* ------------------------------------------------------------ hardware */

/* hw_set: "2x" multiplies (link_bw: the default and every axis), a
 * number sets, axis.NAME.KEY overrides one axis; bad settings fail and
 * change nothing. */
static void test_hw_set(void) {
  Hardware hw = test_hw();
  g_autoptr(Diag) error = diag_new(NULL);
  g_assert_true(hw_set(&hw, "axis.model.link_bw=3e11", error));
  g_assert_true(hw_set(&hw, "link_bw=2x", error));
  g_assert_false(diag_any(error));
  g_assert_cmpfloat(hw.link_bw, ==, 2e9);
  double bw, lat;
  hw_link(&hw, "model", &bw, &lat);
  g_assert_cmpfloat(bw, ==, 6e11);
  g_assert_cmpfloat(lat, ==, 1e-6);
  hw_link(&hw, "batch", &bw, &lat);
  g_assert_cmpfloat(bw, ==, 2e9);
  g_assert_true(hw_set(&hw, "memory_bytes=80e9", error));
  g_assert_cmpfloat(hw.memory_bytes, ==, 80e9);
  g_assert_true(hw_set(&hw, "peak_flops=2x", error));
  g_assert_cmpfloat(hw.peak_flops_f32, ==, 2e12);
  g_assert_cmpfloat(hw.peak_flops_bf16, ==, 8e12);
  g_assert_cmpfloat(hw.peak_flops_f64, ==, 1e12);
  g_assert_cmpfloat(hw_peak_flops(&hw, DT_I32), ==, 2e12);
  g_assert_true(hw_set(&hw, "link_latency=0", error));
  g_assert_cmpfloat(hw.link_latency, ==, 0);
  g_assert_cmpstr(hw.changes, ==,
                  "axis.model.link_bw=3e11, link_bw=2x, memory_bytes=80e9, "
                  "peak_flops=2x, link_latency=0");
  /* what-ifs are recorded in the value (no allocation outlives it), up
   * to HW_CHANGES_MAX - 1 characters: then refused, the value unchanged.
   * the 85 characters above and 35 ", link_bw=1x" (12 each) make 505;
   * a 36th would make 517 */
  {
    Hardware many = hw;
    int applied = 0;
    while (hw_set(&many, "link_bw=1x", error))
      applied++;
    g_assert_cmpint(applied, ==, 35);
    g_assert_cmpuint(strlen(many.changes), <, HW_CHANGES_MAX);
    g_assert_nonnull(strstr(diag_text(error), "more than 511 characters"));
  }

  const char *bad[][2] = {
      {"speed=2x", "peak_flops_f32, peak_flops_bf16"},
      {"link_bw", "expected KEY=VALUE"},
      {"link_bw=fast", "expected a positive number"},
      {"link_bw=0", "expected a positive number"},
      {"memory_bytes=-1", "positive"},
      {"axis..link_bw=1", "axis.NAME.link_bw"},
      {"axis.model.speed=1", "axis.NAME.link_bw"},
      {"peak_flops_f32=x", "before 'x'"},
      /* a factor past double's range, or past the largest figure
       * (1e30): refused, nothing half-changed (the default link of 2e9
       * would fit, model's 6e11 would not) */
      {"peak_flops=1e308x", "peak_flops_f32 would be inf FLOP/s"},
      {"link_bw=1e20x", "axis.model.link_bw would be 6e+31 bytes/s"},
      {"gemm_mr=2.5", "a whole number of rows"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    Hardware before = hw;
    g_autoptr(Diag) e = diag_new(NULL);
    g_assert_false(hw_set(&hw, bad[i][0], e));
    g_assert_true(diag_any(e));
    if (!strstr(diag_text(e), bad[i][1]))
      g_error("'%s': %s", bad[i][0], diag_text(e));
    g_assert_true(hw_equal(&before, &hw)); /* unchanged */
  }
}

/* What if the mesh were twice as fast: the bandwidth term halves, the
 * latency term stays. */
static void test_what_if(void) {
  Hardware hw = test_hw();
  const Type *types[] = {f32(16, 256)};
  Func *f = func("model=4", 1, types,
                 op1(OP_ALL_REDUCE, term_arg(0, types[0]),
                     coll("model", 4, NULL, 0, NULL, 0)));
  g_auto(CostReport) r1 = {0};
  estimate(f, &hw, &r1);
  g_autoptr(Diag) error = diag_new(NULL);
  g_assert_true(hw_set(&hw, "link_bw=2x", error));
  g_auto(CostReport) r2 = {0};
  estimate(f, &hw, &r2);
  assert_close(r1.comm_time, 6e-6 + 24576 / 1e9);
  assert_close(r2.comm_time, 6e-6 + 24576 / 2e9);
  g_assert_cmpfloat(r1.flops, ==, r2.flops);
  func_free(f);
}

static char *write_file(const char *dir, const char *name, const char *text) {
  char *path = g_build_filename(dir, name, NULL);
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
  return path;
}

/* Kernels priced as the code generator runs them (mem_bw and
 * kernel_overhead given).  The matmul is a kernel: 2*256*64*64 = 2097152
 * FLOP, reading x (65536 B) and w (16384 B), writing 65536 B: 147456 B.
 * exp and add are fused into the reduction (one use each, elementwise),
 * whose kernel computes 16384 (exp) + 16384 (add) + 16384 (reduce) =
 * 49152 FLOP and reads the matmul's result and x (65536 B each), writing
 * 256 floats: 132096 B.  At 1 GFLOP/s, 1 MB/s and 1 ms a kernel the
 * matmul pays its FLOPs and its bytes (it packs its operands first) and
 * the reduction is memory-bound: 0.002097152 + 0.147456 + 0.001 +
 * 0.132096 + 0.001 s; at 1 TB/s: 0.002097152 + 1.47456e-7 + 0.001 +
 * 0.000049152 + 0.001 s.  Without either key, FLOPs alone: 2146304 /
 * 1e9 s. */
static void test_kernels(void) {
  const char *text = "func @f(%x: tensor<256x64xf32>, %w: tensor<64x64xf32>)"
                     " -> tensor<256xf32> {\n"
                     "  %0 = matmul(%x, %w)\n"
                     "  %1 = exp(%0)\n"
                     "  %2 = add(%1, %x)\n"
                     "  %3 = reduce_sum(%2) {dims = [1]}\n"
                     "  return %3\n}\n";
  g_autoptr(Diag) diag = diag_new(NULL);
  g_autoptr(Module) m =
      pipeline_read_program("k.pir", text, strlen(text), diag);
  g_assert_nonnull(m);
  const Func *f = module_entry(m);
  Hardware hw = test_hw();
  hw.peak_flops_f32 = 1e9;
  g_auto(CostReport) flops_only = {0};
  estimate(f, &hw, &flops_only);
  g_assert_cmpfloat(flops_only.flops, ==, 2146304);
  assert_close(flops_only.compute_time, 2146304 / 1e9);
  g_assert_cmpfloat(flops_only.kernels, ==, 0);

  hw.mem_bw = 1e6;
  hw.kernel_overhead = 1e-3;
  g_auto(CostReport) slow = {0};
  estimate(f, &hw, &slow);
  g_assert_cmpfloat(slow.flops, ==, 2146304);
  g_assert_cmpfloat(slow.kernels, ==, 2);
  g_assert_cmpfloat(slow.traffic_bytes, ==, 147456 + 132096);
  assert_close(slow.compute_time,
               0.002097152 + 0.147456 + 0.001 + 0.132096 + 0.001);
  assert_close(slow.total_time, slow.compute_time);

  hw.mem_bw = 1e12;
  g_auto(CostReport) fast = {0};
  estimate(f, &hw, &fast);
  assert_close(fast.compute_time,
               0.002097152 + 1.47456e-7 + 0.001 + 0.000049152 + 0.001);

  /* the table says what was priced */
  g_autoptr(GString) table = g_string_new(NULL);
  cost_print(table, &slow, &hw, NULL);
  g_assert_nonnull(strstr(table->str, "kernels          2\n"));
  g_assert_nonnull(strstr(table->str, "memory traffic   279552 B"));
  g_assert_null(strstr(table->str, "in cache"));

  /* a step whose bytes fit in the cache moves them at cache_bw.  Its
   * peak, by the model's liveness (a statement's operand and result
   * are live together): at %1 = exp(%0), x and w (65536 + 16384 B),
   * %0 and %1 (65536 B each), 212992 B; one byte less of cache and the
   * bytes move at mem_bw */
  hw.mem_bw = 1e6;
  hw.cache_bw = 1e9;
  hw.cache_bytes = 212992;
  g_auto(CostReport) cached = {0};
  estimate(f, &hw, &cached);
  g_assert_cmpfloat(cached.peak_bytes, ==, 212992);
  g_assert_true(cached.in_cache);
  assert_close(cached.compute_time,
               0.002097152 + 1.47456e-4 + 0.001 + 1.32096e-4 + 0.001);
  g_assert_cmpfloat(cached.traffic_bytes, ==, slow.traffic_bytes);
  g_string_truncate(table, 0);
  cost_print(table, &cached, &hw, NULL);
  g_assert_nonnull(strstr(table->str, "memory traffic   279552 B (273 KiB), "
                                      "in cache\n"));
  hw.cache_bytes = 212991;
  g_auto(CostReport) beyond = {0};
  estimate(f, &hw, &beyond);
  g_assert_false(beyond.in_cache);
  assert_close(beyond.compute_time, slow.compute_time);
}

/* compute_time of the one-statement program 'text' on 1 GFLOP/s, 1 TB/s,
 * a 12 x 32 register block and 1 ms a product. */
static double product_time(const char *text) {
  g_autoptr(Diag) diag = diag_new(NULL);
  g_autoptr(Module) m =
      pipeline_read_program("p.pir", text, strlen(text), diag);
  g_assert_nonnull(m);
  Hardware hw = test_hw();
  hw.peak_flops_f32 = 1e9;
  hw.mem_bw = 1e12;
  hw.gemm_mr = 12;
  hw.gemm_nr = 32;
  hw.product_overhead = 1e-3;
  g_auto(CostReport) r = {0};
  estimate(module_entry(m), &hw, &r);
  return r.compute_time;
}

/* Matrix products as the generated kernel runs them.  Four 13 x 64 x 33
 * products cost four 16 x 64 x 64 ones in 12 x 32 blocks (rows: a block
 * of 12, then the 4-row kernel for the 13th; columns: two blocks of 32):
 * 4 * 2 * 16 * 64 * 64 = 524288 FLOP, 4 ms of products, and (4*13*64 +
 * 4*64*33 + 4*13*33) * 4 = 53968 B.  Heads contracted with their width,
 * [b,h,s,d] x [h,d,e] over (h,d): h and d are not adjacent in the
 * lhs, so as it is K would be 4 blocks of 8, each product added; a copy
 * of the lhs as [b,s,h,d] pays (512 elements copied against 2 * 512 * 3
 * added), and then M = (b,s) = 16, K = (h,d) = 32, N = e = 32: one
 * product, rows 12 + 4, 2 * 16 * 32 * 32 = 32768 FLOP, 1 ms, (512 +
 * 1024 + 512) * 4 = 8192 B and the copy's 2 * 512 * 4 = 4096 B.
 * [6,2,5] x [6,5] over lhs (0,2): a copy of the lhs (60 elements) does
 * not pay against adding 6 products into 2 (2 * 2 * 5 = 20): 6 products
 * of M = 2 (the 4-row kernel), N = 1 (a block of 32), K = 5, 2 * 6 * 4 *
 * 32 * 5 = 7680 FLOP, 6 ms, (60 + 30 + 2) * 4 = 368 B.  And
 * 25 rows are 24 + 4: one product of 25 x 8 x 32, 2 * 28 * 32 * 8 =
 * 14336 FLOP, 1 ms, (200 + 256 + 800) * 4 = 5024 B. */
static void test_products(void) {
  assert_close(
      product_time(
          "func @f(%a: tensor<4x13x64xf32>, %b: tensor<4x64x33xf32>)"
          " -> tensor<4x13x33xf32> {\n"
          "  %0 = dot_general(%a, %b) {lhs_batch = [0], lhs_contract = [2],"
          " rhs_batch = [0], rhs_contract = [1]}\n"
          "  return %0\n}\n"),
      524288e-9 + 0.004 + 53968e-12);
  assert_close(
      product_time("func @f(%a: tensor<2x4x8x8xf32>, %b: tensor<4x8x32xf32>)"
                   " -> tensor<2x8x32xf32> {\n"
                   "  %0 = dot_general(%a, %b) {lhs_contract = [1, 3],"
                   " rhs_contract = [0, 1]}\n"
                   "  return %0\n}\n"),
      32768e-9 + 0.001 + 12288e-12);
  assert_close(
      product_time("func @f(%a: tensor<6x2x5xf32>, %b: tensor<6x5xf32>)"
                   " -> tensor<2xf32> {\n"
                   "  %0 = dot_general(%a, %b) {lhs_contract = [0, 2],"
                   " rhs_contract = [0, 1]}\n"
                   "  return %0\n}\n"),
      7680e-9 + 0.006 + 368e-12);
  assert_close(
      product_time("func @f(%a: tensor<25x8xf32>, %b: tensor<8x32xf32>)"
                   " -> tensor<25x32xf32> {\n"
                   "  %0 = matmul(%a, %b)\n"
                   "  return %0\n}\n"),
      14336e-9 + 0.001 + 5024e-12);
}

#define GOOD_HW                                                                \
  "# a test machine\n"                                                         \
  "[hardware]\n"                                                               \
  "name=box\n"                                                                 \
  "peak_flops_f32=1e12\n"                                                      \
  "peak_flops_bf16=2e12\n"                                                     \
  "peak_flops_f64=5e11\n"                                                      \
  "memory_bytes=16e9\n"                                                        \
  "link_bw=1e10\n"                                                             \
  "link_latency=2e-6\n"                                                        \
  "\n"                                                                         \
  "[axis model]\n"                                                             \
  "link_bw=4e10\n"

/* Loading by path and by name; every error names the file and the key. */
static void test_hw_load(void) {
  g_autofree char *dir = g_dir_make_tmp("test-cost-XXXXXX", NULL);
  g_assert_nonnull(dir);
  g_autofree char *good = write_file(dir, "box.hw", GOOD_HW);
  Hardware hw;
  g_autoptr(GError) error = NULL;
  g_assert_true(hw_load(good, &hw, &error));
  g_assert_no_error(error);
  g_assert_cmpstr(hw.name, ==, "box");
  g_assert_cmpstr(hw.source, ==, good);
  g_assert_cmpfloat(hw.peak_flops_bf16, ==, 2e12);
  g_assert_cmpfloat(hw.memory_bytes, ==, 16e9);
  double bw, lat;
  hw_link(&hw, "model", &bw, &lat);
  g_assert_cmpfloat(bw, ==, 4e10);
  g_assert_cmpfloat(lat, ==, 2e-6); /* inherited */
  hw_link(&hw, "batch", &bw, &lat);
  g_assert_cmpfloat(bw, ==, 1e10);

  /* by name through $PARTIR_HW (missing directories are skipped) */
  g_autofree char *search = g_strdup_printf("/nonexistent-dir:%s", dir);
  g_setenv("PARTIR_HW", search, TRUE);
  Hardware byname;
  g_assert_true(hw_load("box", &byname, &error));
  g_assert_cmpstr(byname.source, ==, good);
  g_assert_false(hw_load("nosuch", &byname, &error));
  g_assert_error(error, PARTIR_ERROR, PARTIR_ERROR_IO);
  g_assert_nonnull(strstr(error->message, "hardware 'nosuch' not found"));
  g_assert_nonnull(strstr(error->message, dir));
  g_assert_nonnull(strstr(error->message, "known: box"));
  g_clear_error(&error);

  /* hw_print reads back to the same description */
  g_autoptr(GString) text = g_string_new(NULL);
  hw_print(text, &hw);
  g_autofree char *again = write_file(dir, "again.hw", text->str);
  Hardware hw2;
  g_assert_true(hw_load(again, &hw2, &error));
  g_assert_true(hw_equal(&hw, &hw2));
  /* the optional figures: absent, 0 and not printed; given, read back */
  g_assert_cmpfloat(hw.mem_bw, ==, 0);
  g_assert_null(strstr(text->str, "mem_bw"));
  g_autofree char *roof =
      write_file(dir, "roof.hw",
                 GOOD_HW "\n[hardware]\nmem_bw=2e10\nkernel_overhead=3e-6\n"
                         "gemm_mr=12\ngemm_nr=32\nproduct_overhead=5e-8\n"
                         "cache_bytes=1048576\ncache_bw=1e11\n");
  Hardware hw3;
  g_assert_true(hw_load(roof, &hw3, &error));
  g_assert_no_error(error);
  g_assert_cmpfloat(hw3.mem_bw, ==, 2e10);
  g_assert_cmpfloat(hw3.kernel_overhead, ==, 3e-6);
  g_assert_cmpfloat(hw3.gemm_mr, ==, 12);
  g_assert_cmpfloat(hw3.gemm_nr, ==, 32);
  g_assert_cmpfloat(hw3.product_overhead, ==, 5e-8);
  g_assert_cmpfloat(hw3.cache_bytes, ==, 1048576);
  g_assert_cmpfloat(hw3.cache_bw, ==, 1e11);
  g_string_truncate(text, 0);
  hw_print(text, &hw3);
  g_assert_nonnull(strstr(text->str, "mem_bw=2e+10\n"));
  g_autofree char *roof2 = write_file(dir, "roof2.hw", text->str);
  Hardware hw4;
  g_assert_true(hw_load(roof2, &hw4, &error));
  g_assert_true(hw_equal(&hw3, &hw4));
  g_unlink(roof);
  g_unlink(roof2);

  struct {
    const char *text;
    const char *message;
  } bad[] = {
      {"[hardware]\nname=x\n", "[hardware] needs key 'peak_flops_f32'"},
      {"[hw]\nlink_bw=1\n", "no [hardware] group"},
      {GOOD_HW "[axis data]\nlink_bw=fast\n",
       ":14:1: error: [axis data] link_bw = 'fast': expected a positive "
       "number (bytes/s)"},
      {GOOD_HW "[axis model]\nlink_latency=1e-6\nlink_bw=1\n",
       ":15:1: error: [axis model] link_bw is given twice"},
      {GOOD_HW "[disk]\nsize=1\n", "unknown group [disk]"},
      {GOOD_HW "[axis a-b]\nlink_bw=1\n", "[axis a-b]: an axis name"},
      {GOOD_HW "[axis model]\nbandwidth=1\n",
       "[axis model] has no key 'bandwidth' (keys: link_bw, link_latency)"},
      {"[hardware]\npeak_flops_f32=1e12 # fast\n",
       "peak_flops_f32 = '1e12 # fast'"},
      {"[hardware]\nlink_latency=-1\n",
       "expected a number (seconds) from 1e-30 to 1e+30, or 0"},
      {GOOD_HW "[hardware]\nmem_bw=-5\n", "mem_bw = '-5': expected a "
                                          "number (bytes/s) from 1e-30"},
      {GOOD_HW "[hardware]\ncache_bw=1e-320\n", "cache_bw = '1e-320'"},
      {"[hardware]\nflops=1\n", ":2:1: error: [hardware] has no key 'flops' "
                                "(keys: name, peak_flops_f32"},
      {"not a key file\n", "not a key-value pair"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autofree char *name = g_strdup_printf("bad%" G_GSIZE_FORMAT ".hw", i);
    g_autofree char *path = write_file(dir, name, bad[i].text);
    g_autoptr(GError) e = NULL;
    g_assert_false(hw_load(path, &hw2, &e));
    g_assert_error(e, PARTIR_ERROR, PARTIR_ERROR_FORMAT);
    if (!g_str_has_prefix(e->message, path) ||
        !strstr(e->message, bad[i].message))
      g_error("case %" G_GSIZE_FORMAT ": %s", i, e->message);
    g_unlink(path);
  }
  g_autofree char *missing = g_build_filename(dir, "missing.hw", NULL);
  g_assert_false(hw_load(missing, &hw2, &error));
  g_assert_error(error, PARTIR_ERROR, PARTIR_ERROR_IO);
  g_assert_true(g_str_has_prefix(error->message, missing));
  g_clear_error(&error);

  g_unlink(good);
  g_unlink(again);
  g_rmdir(dir);
  g_unsetenv("PARTIR_HW");
}

/* The shipped descriptions load, with the figures their comments cite. */
static void test_hw_files(void) {
  const char *srcdir = g_getenv("G_TEST_SRCDIR");
  g_autofree char *dir =
      srcdir ? g_build_filename(srcdir, "..", "hw", NULL) : g_strdup("hw");
  g_setenv("PARTIR_HW", dir, TRUE);
  Hardware h100, tpu, cpu;
  g_autoptr(GError) error = NULL;
  g_assert_true(hw_load("h100x8", &h100, &error));
  g_assert_no_error(error);
  g_assert_cmpfloat(h100.peak_flops_bf16, ==, 989e12);
  g_assert_cmpfloat(h100.peak_flops_f32, ==, 67e12);
  g_assert_cmpfloat(h100.memory_bytes, ==, 80e9);
  g_assert_cmpfloat(h100.link_bw, ==, 450e9);
  g_assert_true(hw_load("tpuv4", &tpu, &error));
  g_assert_cmpfloat(tpu.peak_flops_bf16, ==, 275e12);
  g_assert_cmpfloat(tpu.memory_bytes, ==, 32.0 * 1024 * 1024 * 1024);
  g_assert_true(hw_load("cpu2", &cpu, &error));
  g_assert_no_error(error);
  g_assert_cmpfloat(cpu.peak_flops_f32, >, 1e9);
  g_unsetenv("PARTIR_HW");
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/cost/matmul", test_matmul);
  g_test_add_func("/cost/mlp", test_mlp);
  g_test_add_func("/cost/mlp-model2", test_mlp_model2);
  g_test_add_func("/cost/elementwise", test_elementwise);
  g_test_add_func("/cost/tile-loop", test_tile_loop);
  g_test_add_func("/cost/nested-loops", test_nested_loops);
  g_test_add_func("/cost/chain-memory", test_chain_memory);
  g_test_add_func("/cost/all-reduce", test_all_reduce);
  g_test_add_func("/cost/gather-scatter", test_gather_scatter);
  g_test_add_func("/cost/two-axes", test_two_axes);
  g_test_add_func("/cost/collective-in-loop", test_collective_in_loop);
  g_test_add_func("/cost/refused", test_refused);
  g_test_add_func("/cost/does-not-fit", test_does_not_fit);
  g_test_add_func("/cost/too-deep-to-lower", test_too_deep_to_lower);
  g_test_add_func("/cost/hw-set", test_hw_set);
  g_test_add_func("/cost/what-if", test_what_if);
  g_test_add_func("/cost/hw-load", test_hw_load);
  g_test_add_func("/cost/kernels", test_kernels);
  g_test_add_func("/cost/products", test_products);
  g_test_add_func("/cost/hw-files", test_hw_files);
  return g_test_run();
}
