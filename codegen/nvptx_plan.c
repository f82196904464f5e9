/* nvptx_plan.c — the GPU launch plan's arithmetic and its text: launch
 * shapes, contractions as cuBLAS calls, NCCL's data types, and
 * 'partir compile --target nvptx --emit gpu-plan'.
 *
 * Nothing here runs on a GPU or needs one: the shapes the kernels are
 * compiled for (a reduction's block size is a constant of its kernel)
 * and the arguments of each cuBLAS call are plain arithmetic, so the
 * unit test and tests/ptx.sh check them on any machine.
 *
 * cuBLAS is column-major and partir's tensors row-major.  A row-major
 * M x N result is the column-major N x M matrix, so the product
 * C = lhs . rhs is computed as C^T = rhs^T . lhs^T: cuBLAS's A is the
 * rhs, its B the lhs, m = N, n = M.  An operand whose innermost stride
 * is 1 is read as it lies; one whose outer stride is 1 (a transposed
 * matrix, a [D, S] view of [S, D]) with the transpose flag.
 */
#include "codegen/gen.h"

int64_t gpu_map_grid(int64_t n) {
  return CLAMP((n + GPU_BLOCK - 1) / GPU_BLOCK, 1, GPU_MAX_GRID);
}

int gpu_reduce_block(int64_t width) {
  int block = 32; /* a warp: fewer threads leave the rest of it idle */
  while (block < 256 && block < width)
    block *= 2;
  return block;
}

int64_t gpu_reduce_grid(int64_t rows) { return CLAMP(rows, 1, GPU_MAX_GRID); }

gboolean gpu_operand(int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                     gboolean *trans, int64_t *ld) {
  if (cs == 1 || cols == 1) { /* column-major cols x rows, as it lies */
    *trans = FALSE;
    *ld = rows == 1 ? MAX(cols, 1) : rs;
    return *ld >= MAX(cols, 1);
  }
  if (rs == 1 || rows == 1) { /* column-major rows x cols: transposed */
    *trans = TRUE;
    *ld = cols == 1 ? MAX(rows, 1) : cs;
    return *ld >= MAX(rows, 1);
  }
  return FALSE;
}

/* The outer dimensions 'dims[0..n)' of one group, as loops around the
 * products: their strides in A (rhs), B (lhs) and C. */
static void add_outer(GpuGemm *gm, const Dim *dims, int n, gboolean in_a,
                      gboolean in_b, gboolean contracted) {
  for (int j = 0; j < n; j++)
    gm->outer[gm->nouter++] = (GpuOuter){.size = dims[j].size,
                                         .a = in_a ? dims[j].r : 0,
                                         .b = in_b ? dims[j].l : 0,
                                         .c = contracted ? 0 : dims[j].o,
                                         .contracted = contracted};
}

gboolean gpu_gemm_of(const Term *t, int lhs, int rhs, int out, GpuGemm *gm,
                     Diag *why) {
  DType dt = t->type->dtype;
  if (!dtype_is_float(dt) || dt != t->args[0]->type->dtype ||
      dt != t->args[1]->type->dtype) {
    diag_reason(why,
                "the GPU computes contractions with cuBLAS, on floats of "
                "one type: %s of %s and %s has no GPU code",
                op_name(t->op), dtype_name(t->args[0]->type->dtype),
                dtype_name(t->args[1]->type->dtype));
    return FALSE;
  }
  Groups gr;
  dot_groups(t, &gr);
  Dim b, m, n, k;
  int ob = dot_merge(gr.b, gr.nb, &b), om = dot_merge(gr.m, gr.nm, &m);
  int on = dot_merge(gr.n, gr.nn, &n), ok = dot_merge(gr.k, gr.nk, &k);
  *gm = (GpuGemm){.dtype = dt,
                  .m = n.size,
                  .n = m.size,
                  .k = k.size,
                  .batch = b.size,
                  .stride_a = b.r,
                  .stride_b = b.l,
                  .stride_c = b.o,
                  .a = rhs,
                  .b = lhs,
                  .c = out};
  gboolean trans_c = FALSE;
  if (!gpu_operand(m.size, n.size, m.o, n.o, &trans_c, &gm->ldc) || trans_c ||
      !gpu_operand(k.size, n.size, k.r, n.r, &gm->trans_a, &gm->lda) ||
      !gpu_operand(m.size, k.size, m.l, k.l, &gm->trans_b, &gm->ldb)) {
    diag_reason(why,
                "%s: an operand has no unit stride in its matrix, which "
                "cuBLAS needs",
                op_name(t->op));
    return FALSE;
  }
  add_outer(gm, gr.b, ob, TRUE, TRUE, FALSE);
  add_outer(gm, gr.m, om, FALSE, TRUE, FALSE);
  add_outer(gm, gr.n, on, TRUE, FALSE, FALSE);
  add_outer(gm, gr.k, ok, TRUE, TRUE, TRUE);
  return TRUE;
}

int64_t gpu_gemm_calls(const GpuGemm *gm) {
  int64_t calls = 1;
  for (int j = 0; j < gm->nouter; j++)
    calls *= gm->outer[j].size;
  return calls;
}

gboolean gpu_gemm_call(const GpuGemm *gm, int64_t call, int64_t *a, int64_t *b,
                       int64_t *c) {
  gboolean first = TRUE;
  *a = *b = *c = 0;
  for (int j = gm->nouter - 1; j >= 0; j--) { /* row-major: last fastest */
    const GpuOuter *o = &gm->outer[j];
    int64_t i = call % o->size;
    call /= o->size;
    *a += i * o->a;
    *b += i * o->b;
    *c += i * o->c;
    if (o->contracted && i)
      first = FALSE;
  }
  return first;
}

/* NCCL's data types: ncclDataType_t's values and names (nccl.h). */
static const struct {
  DType dt;
  int code;
  const char *name;
} nccl_types[] = {
    {DT_I8, 0, "ncclInt8"},     {DT_UI8, 1, "ncclUint8"},
    {DT_I1, 1, "ncclUint8"},    {DT_I32, 2, "ncclInt32"},
    {DT_UI32, 3, "ncclUint32"}, {DT_I64, 4, "ncclInt64"},
    {DT_F16, 6, "ncclFloat16"}, {DT_F32, 7, "ncclFloat32"},
    {DT_F64, 8, "ncclFloat64"}, {DT_BF16, 9, "ncclBfloat16"},
};

int gpu_nccl_type(DType dt, const char **name) {
  for (guint i = 0; i < G_N_ELEMENTS(nccl_types); i++)
    if (nccl_types[i].dt == dt) {
      if (name)
        *name = nccl_types[i].name;
      return nccl_types[i].code;
    }
  return -1;
}

/* ------------------------------------------------------------ the text */

static const char *slot_name(const GpuProgram *gp, int s) {
  if (s < 0)
    return "stage";
  const Slot *slot = &g_array_index(gp->plan->slots, Slot, s);
  return slot->name;
}

static void print_launch(GString *out, const GpuProgram *gp,
                         const GpuLaunch *l) {
  g_string_append_printf(out,
                         "%s<<<%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ">>>(",
                         l->kernel, l->grid, l->block);
  for (int a = 0; a < l->nargs; a++)
    g_string_append_printf(out, "%s%s", a ? ", " : "",
                           slot_name(gp, l->args[a]));
  static const char *const index[] = {"", "loop", "position", "member"};
  if (l->index != GPU_INDEX_NONE)
    g_string_append_printf(out, ", %s", index[l->index]);
  g_string_append_c(out, ')');
}

static void print_gemm(GString *out, const GpuProgram *gp, const GpuGemm *gm) {
  g_string_append_printf(
      out,
      "cublasGemmStridedBatchedEx %s %s%s m=%" G_GINT64_FORMAT
      " n=%" G_GINT64_FORMAT " k=%" G_GINT64_FORMAT " batch=%" G_GINT64_FORMAT
      " (A %s lda=%" G_GINT64_FORMAT ", B %s ldb=%" G_GINT64_FORMAT
      ", C %s ldc=%" G_GINT64_FORMAT ")",
      dtype_name(gm->dtype), gm->trans_a ? "T" : "N", gm->trans_b ? "T" : "N",
      gm->m, gm->n, gm->k, gm->batch, slot_name(gp, gm->a), gm->lda,
      slot_name(gp, gm->b), gm->ldb, slot_name(gp, gm->c), gm->ldc);
  if (gm->nouter)
    g_string_append_printf(out, " x%" G_GINT64_FORMAT " calls",
                           gpu_gemm_calls(gm));
}

static const char *nccl_call(Op op) {
  switch (op) {
  case OP_ALL_REDUCE:
    return "ncclAllReduce";
  case OP_ALL_GATHER:
    return "ncclAllGather";
  case OP_REDUCE_SCATTER:
    return "ncclReduceScatter";
  default: /* all_to_all: a send and a receive per member, grouped */
    return "ncclSend/ncclRecv";
  }
}

static void print_collective(GString *out, const GpuProgram *gp,
                             const GpuStep *st) {
  const GpuCollective *c = &st->coll;
  const AttrValue *axes = attrs_get(st->t->attrs, "axes");
  const char *type = NULL;
  gpu_nccl_type(st->t->type->dtype, &type);
  g_string_append_printf(out, "%s %s %" G_GINT64_FORMAT " elements over [",
                         nccl_call(st->t->op), type,
                         type_numel(st->t->args[0]->type));
  for (int j = 0; axes && j < axes->count; j++)
    g_string_append_printf(out, "%s%s", j ? ", " : "", axes->items[j].sym);
  g_string_append_printf(out, "] of %d (%s -> %s)", c->members,
                         slot_name(gp, c->in), slot_name(gp, c->out));
  if (c->pack) {
    g_string_append(out, "; pack ");
    print_launch(out, gp, c->pack);
  }
  if (c->unpack) {
    g_string_append(out, "; unpack ");
    print_launch(out, gp, c->unpack);
  }
}

char *gpu_plan_text(const GpuProgram *gp) {
  int kernels = 0, collectives = 0;
  int64_t gemms = 0;
  for (guint i = 0; i < gp->steps->len; i++) {
    const GpuStep *st = &g_array_index(gp->steps, GpuStep, i);
    kernels += st->kind == GPU_KERNEL;
    collectives += st->kind == GPU_COLLECTIVE;
    if (st->kind == GPU_GEMM)
      gemms += gpu_gemm_calls(&st->gemm);
  }
  GString *out = g_string_new(NULL);
  g_string_append_printf(
      out,
      "# %s: %d kernel launches, %" G_GINT64_FORMAT
      " cuBLAS calls, %d collectives; arena %" G_GINT64_FORMAT " bytes\n",
      gp->arch, kernels, gemms, collectives, gp->plan->arena_bytes);
  int depth = 0;
  for (guint i = 0; i < gp->steps->len; i++) {
    const GpuStep *st = &g_array_index(gp->steps, GpuStep, i);
    if (st->kind == GPU_END)
      depth--;
    g_string_append_printf(out, "%*s", 2 * depth, "");
    switch (st->kind) {
    case GPU_LOOP:
      g_string_append_printf(out, "loop %" G_GINT64_FORMAT " times { (%s)\n",
                             st->count, st->name);
      depth++;
      continue;
    case GPU_END:
      g_string_append(out, "}\n");
      continue;
    case GPU_KERNEL:
      g_string_append_printf(out, "%s = ", st->name);
      print_launch(out, gp, &st->launch);
      break;
    case GPU_GEMM:
      g_string_append_printf(out, "%s = ", st->name);
      print_gemm(out, gp, &st->gemm);
      break;
    case GPU_COLLECTIVE:
      g_string_append_printf(out, "%s = ", st->name);
      print_collective(out, gp, st);
      break;
    }
    g_string_append_c(out, '\n');
  }
  return g_string_free(out, FALSE);
}
