/* dot.c — matmul and dot_general.
 *
 * Exact arithmetic, in the interpreter's order: the result is
 * [batch..., lhs free..., rhs free...], a row-major [B, M, N] block; for
 * each (b, m) a row of N accumulators (buffer DOT_ROW: double, or i64)
 * gets acc[n] += lhs[b,m,k] * rhs[b,k,n] for each k in row-major order,
 * reading rhs rows contiguously, and is stored rounded.  Each element
 * sums its products in k order, as the kernel does.
 *
 * Fast arithmetic on f32, f64 and bf16 (f16 takes the rows above, its
 * operands widened to the double accumulators): the contraction as
 * matrix products.  Its
 * lhs free dimensions make M, its rhs free ones N, its contracting ones
 * K, each merged into one strided dimension where the operand's layout
 * allows (its innermost run of dimensions with matching strides: any
 * row-major or transposed matrix, a head of a [B, S, H, D] tensor);
 * the rest, and the batch dimensions, are loops around one product per
 * iteration, computed by the generated BLIS-style kernel (gemm.c) or
 * by OpenBLAS (--blas openblas; f32 and f64 with a unit stride in each
 * operand).  Where K's dimensions do not merge (heads contracted with
 * their width, [B, H, S, D] x [H, D, E]), the first block's product is
 * written to the result and each other block's to a buffer added to
 * it.  Products with K = 0 write zeros (the kernel's).
 */
#include "codegen/gemm.h"
#include "codegen/gen.h"

#ifdef HAVE_OPENBLAS
#include <cblas.h>
#endif

#define DOT_ROW 3

/* acc + a * b: exact, rounded twice as the interpreter does; fast, one
 * fused multiply-add where the target has it. */
static LLVMValueRef mul_add(Gen *g, LLVMValueRef acc, LLVMValueRef a,
                            LLVMValueRef b) {
  if (LLVMTypeOf(acc) == g->i64)
    return LLVMBuildAdd(g->b, acc, LLVMBuildMul(g->b, a, b, ""), "");
  if (g->exact)
    return LLVMBuildFAdd(g->b, acc, LLVMBuildFMul(g->b, a, b, ""), "");
  LLVMValueRef args[3] = {a, b, acc};
  return ir_intrinsic(g, "llvm.fmuladd", args, 3);
}

/* The batch and contracted dimensions of 't' in each operand. */
typedef struct Contraction {
  int nb, nc;
  int64_t lb[PARTIR_MAX_RANK], rb[PARTIR_MAX_RANK];
  int64_t lc[PARTIR_MAX_RANK], rc[PARTIR_MAX_RANK];
} Contraction;

static void contraction_of(const Term *t, Contraction *c) {
  *c = (Contraction){.nc = 1};
  if (t->op == OP_MATMUL) {
    c->lc[0] = 1;
    c->rc[0] = 0;
    return;
  }
  c->nb = attr_ints(t, "lhs_batch", c->lb);
  attr_ints(t, "rhs_batch", c->rb);
  c->nc = attr_ints(t, "lhs_contract", c->lc);
  attr_ints(t, "rhs_contract", c->rc);
}

/* dot_groups with the operands' strides 'ls' and 'rs'. */
static void groups_with(const Term *t, const int64_t *ls, const int64_t *rs,
                        Groups *gr) {
  Contraction ct;
  contraction_of(t, &ct);
  const int64_t *lb = ct.lb, *rb = ct.rb, *lc = ct.lc, *rc = ct.rc;
  int nb = ct.nb, nc = ct.nc;
  const Type *lt = t->args[0]->type, *rt = t->args[1]->type;
  int64_t os[PARTIR_MAX_RANK];
  strides_of(t->type, os);
  gboolean lused[PARTIR_MAX_RANK] = {FALSE}, rused[PARTIR_MAX_RANK] = {FALSE};
  *gr = (Groups){0};
  int od = 0; /* the result's dimensions: batch, lhs free, rhs free */
  for (int j = 0; j < nb; j++) {
    lused[lb[j]] = rused[rb[j]] = TRUE;
    gr->b[gr->nb++] = (Dim){lt->dims[lb[j]], ls[lb[j]], rs[rb[j]], os[od++]};
  }
  for (int j = 0; j < nc; j++) {
    lused[lc[j]] = rused[rc[j]] = TRUE;
    gr->k[gr->nk++] = (Dim){lt->dims[lc[j]], ls[lc[j]], rs[rc[j]], 0};
  }
  for (int d = 0; d < lt->rank; d++)
    if (!lused[d])
      gr->m[gr->nm++] = (Dim){lt->dims[d], ls[d], 0, os[od++]};
  for (int d = 0; d < rt->rank; d++)
    if (!rused[d])
      gr->n[gr->nn++] = (Dim){rt->dims[d], 0, rs[d], os[od++]};
}

void dot_groups(const Term *t, Groups *gr) {
  int64_t ls[PARTIR_MAX_RANK], rs[PARTIR_MAX_RANK];
  strides_of(t->args[0]->type, ls);
  strides_of(t->args[1]->type, rs);
  groups_with(t, ls, rs, gr);
}

int dot_merge(const Dim *dims, int n, Dim *out) {
  *out = (Dim){1, 0, 0, 0};
  int at = n;
  while (at > 0) {
    const Dim *d = &dims[at - 1];
    if (d->size != 1 && out->size != 1 &&
        (d->l != out->l * out->size || d->r != out->r * out->size ||
         d->o != out->o * out->size))
      break;
    if (d->size != 1) {
      if (out->size == 1) { /* the first: its strides */
        out->l = d->l;
        out->r = d->r;
        out->o = d->o;
      }
      out->size *= d->size;
    }
    at--;
  }
  return at;
}

/* Operands copied so that their contracted dimensions merge
 * (contraction_relayout_pays): the lhs into [its other dimensions, the
 * contracted ones in contraction order], the rhs into [the contracted
 * ones in order, its other dimensions], each row-major, in the scratch
 * after the kernel's workspace. */
typedef struct Relayout {
  gboolean copy[2];
  int64_t strides[2][PARTIR_MAX_RANK]; /* of the copy where copied */
  int64_t offset[2];                   /* the copy's bytes into the scratch */
  int64_t bytes;                       /* the copies' */
} Relayout;

/* Whether the dimensions 'kd' of 'ty' (row-major) nest in that order,
 * size-1 ones anywhere. */
static gboolean dims_nest(const Type *ty, const int64_t *kd, int n) {
  int64_t st[PARTIR_MAX_RANK];
  strides_of(ty, st);
  int64_t inner = -1;
  for (int j = n - 1; j >= 0; j--) {
    int64_t d = kd[j];
    if (ty->dims[d] == 1)
      continue;
    if (inner >= 0 && st[d] != st[inner] * ty->dims[inner])
      return FALSE;
    inner = d;
  }
  return TRUE;
}

/* Row-major strides of 'ty' with its dimensions laid out in 'order'. */
static void strides_in_order(const Type *ty, const int64_t *order,
                             int64_t *st) {
  int64_t s = 1;
  for (int j = ty->rank - 1; j >= 0; j--) {
    st[order[j]] = s;
    s *= ty->dims[order[j]];
  }
}

static int64_t round64(int64_t n) { return (n + 63) / 64 * 64; }

static void relayout_of(const Term *t, Relayout *rl) {
  *rl = (Relayout){0};
  Contraction ct;
  contraction_of(t, &ct);
  const Type *ty[2] = {t->args[0]->type, t->args[1]->type};
  const int64_t *kd[2] = {ct.lc, ct.rc};
  for (int side = 0; side < 2; side++)
    strides_of(ty[side], rl->strides[side]);
  Groups gr;
  dot_groups(t, &gr);
  Dim k;
  int ok = dot_merge(gr.k, gr.nk, &k);
  double groups = 1, copied = 0;
  for (int j = 0; j < ok; j++)
    groups *= (double)gr.k[j].size;
  for (int side = 0; side < 2; side++)
    if (!dims_nest(ty[side], kd[side], ct.nc)) {
      rl->copy[side] = TRUE;
      copied += (double)type_numel(ty[side]);
    }
  if (!contraction_relayout_pays(copied, (double)type_numel(t->type), groups)) {
    rl->copy[0] = rl->copy[1] = FALSE;
    return;
  }
  DType dt = t->type->dtype;
  int64_t at = round64(gemm_workspace_bytes(dt) + 64);
  for (int side = 0; side < 2; side++) {
    if (!rl->copy[side])
      continue;
    gboolean is_k[PARTIR_MAX_RANK] = {FALSE};
    for (int j = 0; j < ct.nc; j++)
      is_k[kd[side][j]] = TRUE;
    int64_t order[PARTIR_MAX_RANK];
    int n = 0;
    if (side == 1) /* the rhs: contracted first */
      for (int j = 0; j < ct.nc; j++)
        order[n++] = kd[side][j];
    for (int d = 0; d < ty[side]->rank; d++)
      if (!is_k[d])
        order[n++] = d;
    if (side == 0) /* the lhs: contracted last */
      for (int j = 0; j < ct.nc; j++)
        order[n++] = kd[side][j];
    strides_in_order(ty[side], order, rl->strides[side]);
    rl->offset[side] = at;
    at += round64(type_numel(ty[side]) * (int64_t)dtype_storage_bytes(dt));
  }
  rl->bytes = at - round64(gemm_workspace_bytes(dt) + 64);
}

/* Copies operand 'side' (buffer side + 1) into its layout 'rl' in the
 * scratch; the copy. */
static LLVMValueRef emit_relayout(Gen *g, const Term *t, const Relayout *rl,
                                  int side) {
  const Type *ty = t->args[side]->type;
  DType dt = ty->dtype;
  int64_t from[PARTIR_MAX_RANK];
  strides_of(ty, from);
  LLVMValueRef off = c64(g, rl->offset[side]);
  LLVMValueRef dst = LLVMBuildGEP2(g->b, g->i8, g->base[3], &off, 1, "");
  const int64_t *sets[2] = {from, rl->strides[side]};
  LLVMValueRef zeros[2] = {c64(g, 0), c64(g, 0)};
  Nest nest;
  nest_open(g, &nest, ty->rank, ty->dims, 2, sets, zeros);
  LLVMTypeRef st = storage(g, dt);
  LLVMValueRef v = LLVMBuildLoad2(
      g->b, st, LLVMBuildGEP2(g->b, st, g->base[side + 1], &nest.off[0], 1, ""),
      "");
  LLVMBuildStore(g->b, v, LLVMBuildGEP2(g->b, st, dst, &nest.off[1], 1, ""));
  nest_close(g, &nest);
  return dst;
}

/* A pointer 'off' elements into buffer 's'. */
static LLVMValueRef elem_at(Gen *g, int s, LLVMValueRef off) {
  return LLVMBuildGEP2(g->b, storage(g, g->vt[s]->dtype), g->base[s], &off, 1,
                       "");
}

#ifdef HAVE_OPENBLAS
/* cblas_?gemm row-major for an (rs, cs)-strided operand: its transpose
 * flag and leading dimension, or FALSE when neither stride is 1. */
static gboolean blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                            int *trans, int64_t *ld) {
  if (cs == 1 || cols == 1) {
    *trans = CblasNoTrans;
    *ld = MAX(rows == 1 ? cols : rs, MAX(cols, 1));
    return rows == 1 || rs >= cols;
  }
  if (rs == 1 || rows == 1) {
    *trans = CblasTrans;
    *ld = MAX(cols == 1 ? rows : cs, MAX(rows, 1));
    return cols == 1 || cs >= rows;
  }
  return FALSE;
}

/* C = A B through OpenBLAS: FALSE (nothing emitted) when its layouts do
 * not fit. */
static gboolean emit_blas(Gen *g, DType dt, const Dim *m, const Dim *n,
                          const Dim *k, LLVMValueRef a, LLVMValueRef b,
                          LLVMValueRef c) {
  int ta, tb;
  int64_t lda, ldb;
  if ((dt != DT_F32 && dt != DT_F64) || k->size == 0 ||
      !blas_layout(m->size, k->size, m->l, k->l, &ta, &lda) ||
      !blas_layout(k->size, n->size, k->r, n->r, &tb, &ldb) ||
      (n->o != 1 && n->size != 1))
    return FALSE;
  LLVMTypeRef ft = dt == DT_F32 ? g->f32 : g->f64;
  LLVMTypeRef p[14] = {g->i32, g->i32, g->i32, g->i32, g->i32, g->i32, ft,
                       g->ptr, g->i32, g->ptr, g->i32, ft,     g->ptr, g->i32};
  LLVMValueRef i32s[] = {LLVMConstInt(g->i32, CblasRowMajor, 0),
                         LLVMConstInt(g->i32, (unsigned)ta, 0),
                         LLVMConstInt(g->i32, (unsigned)tb, 0)};
#define I32(v) LLVMConstInt(g->i32, (unsigned long long)(v), 0)
  LLVMValueRef args[14] = {i32s[0],
                           i32s[1],
                           i32s[2],
                           I32(m->size),
                           I32(n->size),
                           I32(k->size),
                           LLVMConstReal(ft, 1.0),
                           a,
                           I32(lda),
                           b,
                           I32(ldb),
                           LLVMConstReal(ft, 0.0),
                           c,
                           I32(MAX(m->o, MAX(n->size, 1)))};
#undef I32
  const void *fn =
      dt == DT_F32 ? (const void *)cblas_sgemm : (const void *)cblas_dgemm;
  ir_call_address(g, fn, g->vd, p, args, 14);
  return TRUE;
}
#endif

/* C = A B, M x N (C's rows 'rsc' apart, unit columns): by OpenBLAS
 * when asked and the layouts fit, else by the generated kernel. */
static void emit_product(Gen *g, DType dt, const Dim *m, const Dim *n,
                         const Dim *k, LLVMValueRef a, LLVMValueRef b,
                         LLVMValueRef c, int64_t rsc) {
  Dim mc = *m;
  mc.o = rsc;
#ifdef HAVE_OPENBLAS
  if (g->blas == CODEGEN_BLAS_OPENBLAS && emit_blas(g, dt, &mc, n, k, a, b, c))
    return;
#endif
  LLVMTypeRef fty;
  LLVMValueRef fn = gemm_function(g->mod, dt, &fty);
  /* the workspace, aligned to 64 (the scratch has 64 bytes to spare) */
  LLVMValueRef w = LLVMBuildPtrToInt(g->b, g->base[3], g->i64, "");
  w = LLVMBuildAnd(g->b, LLVMBuildAdd(g->b, w, c64(g, 63), ""), c64(g, -64),
                   "");
  LLVMValueRef args[12] = {c64(g, m->size),
                           c64(g, n->size),
                           c64(g, k->size),
                           a,
                           c64(g, m->l),
                           c64(g, k->l),
                           b,
                           c64(g, k->r),
                           c64(g, n->r),
                           c,
                           c64(g, rsc),
                           LLVMBuildIntToPtr(g->b, w, g->ptr, "")};
  LLVMBuildCall2(g->b, fty, fn, args, 12, "");
}

/* The partial product buffer of a contraction whose K is split: in the
 * scratch, after the kernel's workspace. */
static LLVMValueRef partial_buffer(Gen *g, DType dt) {
  LLVMValueRef off = c64(g, gemm_workspace_bytes(dt) + 64);
  return LLVMBuildGEP2(g->b, g->i8, g->base[3], &off, 1, "");
}

/* C += T over M x N (T's rows N apart). */
static void emit_accumulate(Gen *g, DType dt, const Dim *m, const Dim *n,
                            LLVMValueRef c, LLVMValueRef tmp) {
  int64_t sizes[2] = {m->size, n->size};
  int64_t sc[2] = {m->o, 1}, st[2] = {n->size, 1};
  const int64_t *sets[2] = {sc, st};
  LLVMValueRef zeros[2] = {c64(g, 0), c64(g, 0)};
  Nest nest;
  nest_open(g, &nest, 2, sizes, 2, sets, zeros);
  LLVMTypeRef ty = storage(g, dt);
  LLVMValueRef pc = LLVMBuildGEP2(g->b, ty, c, &nest.off[0], 1, "");
  LLVMValueRef pt = LLVMBuildGEP2(g->b, ty, tmp, &nest.off[1], 1, "");
  store_at(g, dt, pc,
           LLVMBuildFAdd(g->b, load_at(g, dt, pc), load_at(g, dt, pt), ""));
  nest_close(g, &nest);
}

/* The fast contraction of 't' as products (above). */
static void emit_products(Gen *g, const Term *t) {
  DType dt = t->type->dtype;
  Relayout rl;
  relayout_of(t, &rl);
  LLVMValueRef operand[2] = {g->base[1], g->base[2]};
  for (int side = 0; side < 2; side++)
    if (rl.copy[side])
      operand[side] = emit_relayout(g, t, &rl, side);
  Groups gr;
  groups_with(t, rl.strides[0], rl.strides[1], &gr);
  Dim m, n, k;
  int om = dot_merge(gr.m, gr.nm, &m);
  int on = dot_merge(gr.n, gr.nn, &n);
  int ok = dot_merge(gr.k, gr.nk, &k);
  /* the loops outside the products: batch, unmerged M and N; then the
   * unmerged K, whose products add up */
  Dim outer[PARTIR_MAX_RANK * 4];
  int no = 0;
  for (int j = 0; j < gr.nb; j++)
    outer[no++] = gr.b[j];
  for (int j = 0; j < om; j++)
    outer[no++] = gr.m[j];
  for (int j = 0; j < on; j++)
    outer[no++] = gr.n[j];
  int nouter = no;
  for (int j = 0; j < ok; j++)
    outer[no++] = gr.k[j];
  int64_t sizes[PARTIR_MAX_RANK * 4], sl[PARTIR_MAX_RANK * 4],
      sr[PARTIR_MAX_RANK * 4], so[PARTIR_MAX_RANK * 4];
  for (int j = 0; j < no; j++) {
    sizes[j] = outer[j].size;
    sl[j] = outer[j].l;
    sr[j] = outer[j].r;
    so[j] = outer[j].o;
  }
  /* in the result, M's rows are N's size apart and N is unit-stride */
  int64_t rsc = m.size == 1 ? MAX(n.size, 1) : m.o;
  const int64_t *sets[3] = {sl, sr, so};
  LLVMValueRef zeros[3] = {c64(g, 0), c64(g, 0), c64(g, 0)};
  Nest nest;
  nest_open(g, &nest, no, sizes, 3, sets, zeros);
  LLVMTypeRef st = storage(g, dt);
  LLVMValueRef a = LLVMBuildGEP2(g->b, st, operand[0], &nest.off[0], 1, "");
  LLVMValueRef b = LLVMBuildGEP2(g->b, st, operand[1], &nest.off[1], 1, "");
  LLVMValueRef c = elem_at(g, 0, nest.off[2]);
  if (ok == 0) {
    emit_product(g, dt, &m, &n, &k, a, b, c, rsc);
  } else { /* the first K block into C, each other into T, added */
    LLVMValueRef first = LLVMConstInt(g->i1, 1, 0);
    for (int j = nouter; j < no; j++)
      first = LLVMBuildAnd(
          g->b, first,
          LLVMBuildICmp(g->b, LLVMIntEQ, nest.loops[j].iv, c64(g, 0), ""), "");
    LLVMBasicBlockRef direct =
        LLVMAppendBasicBlockInContext(g->ctx, g->fn, "first");
    LLVMBasicBlockRef partial =
        LLVMAppendBasicBlockInContext(g->ctx, g->fn, "partial");
    LLVMBasicBlockRef join =
        LLVMAppendBasicBlockInContext(g->ctx, g->fn, "join");
    LLVMBuildCondBr(g->b, first, direct, partial);
    LLVMPositionBuilderAtEnd(g->b, direct);
    emit_product(g, dt, &m, &n, &k, a, b, c, rsc);
    LLVMBuildBr(g->b, join);
    LLVMPositionBuilderAtEnd(g->b, partial);
    LLVMValueRef tmp = partial_buffer(g, dt);
    emit_product(g, dt, &m, &n, &k, a, b, tmp, MAX(n.size, 1));
    Dim mc = m;
    mc.o = rsc;
    emit_accumulate(g, dt, &mc, &n, c, tmp);
    LLVMBuildBr(g->b, join);
    LLVMPositionBuilderAtEnd(g->b, join);
  }
  nest_close(g, &nest);
}

/* Whether fast arithmetic makes the contraction matrix products: on
 * the floats the kernel has (f16 sums its rows in double, as exact
 * arithmetic does, in fast arithmetic too). */
static gboolean dot_products(DType dt, gboolean exact) {
  return !exact && (dt == DT_F32 || dt == DT_F64 || dt == DT_BF16);
}

const Type *dot_scratch(const Term *t, gboolean exact) {
  DType dt = t->type->dtype;
  Groups gr;
  dot_groups(t, &gr);
  if (!dot_products(dt, exact)) { /* a row: the rhs free indices */
    int64_t n = 1;
    for (int j = 0; j < gr.nn; j++)
      n *= gr.n[j].size;
    return type_tensor(dtype_is_float(dt) ? DT_F64 : DT_I64, 1, &n);
  }
  Dim m, n, k;
  dot_merge(gr.m, gr.nm, &m);
  dot_merge(gr.n, gr.nn, &n);
  /* the kernel's workspace, 64 bytes to spare for its alignment */
  int64_t bytes = gemm_workspace_bytes(dt) + 64;
  Relayout rl;
  relayout_of(t, &rl);
  if (rl.bytes > 0) /* the copies, after the workspace */
    bytes = round64(bytes) + rl.bytes;
  else if (dot_merge(gr.k, gr.nk, &k) > 0) /* the partial products */
    bytes += m.size * n.size * (int64_t)dtype_storage_bytes(dt);
  int64_t words = (bytes + 3) / 4; /* as f32 elements */
  return type_tensor(DT_F32, 1, &words);
}

/* 'v' in the type of 'like': a float operand (fast f16) into the row's
 * double accumulators. */
static LLVMValueRef widen_to(Gen *g, LLVMValueRef v, LLVMValueRef like) {
  LLVMTypeRef ty = LLVMTypeOf(like);
  return LLVMTypeOf(v) == ty ? v : LLVMBuildFPExt(g->b, v, ty, "");
}

/* The interpreter's order (above): for each row (batch and lhs free
 * indices), a row of accumulators (rhs free indices, the result's
 * innermost) summed over the contracting indices, then stored. */
static void emit_rows(Gen *g, const Term *t) {
  Groups gr;
  dot_groups(t, &gr);
  int64_t size[PARTIR_MAX_RANK * 2], so[PARTIR_MAX_RANK * 2],
      sl[PARTIR_MAX_RANK * 2], sr[PARTIR_MAX_RANK * 2];
  int rows = 0;
  for (int j = 0; j < gr.nb + gr.nm; j++, rows++) {
    const Dim *d = j < gr.nb ? &gr.b[j] : &gr.m[j - gr.nb];
    size[rows] = d->size;
    so[rows] = d->o;
    sl[rows] = d->l;
    sr[rows] = d->r;
  }
  int64_t nsize[PARTIR_MAX_RANK], nrow[PARTIR_MAX_RANK], nrhs[PARTIR_MAX_RANK];
  int64_t n = 1;
  for (int j = 0; j < gr.nn; j++) {
    nsize[j] = gr.n[j].size;
    nrow[j] = gr.n[j].o; /* innermost in the result: the row's strides */
    nrhs[j] = gr.n[j].r;
    n *= nsize[j];
  }
  int64_t csize[PARTIR_MAX_RANK], clstr[PARTIR_MAX_RANK],
      crstr[PARTIR_MAX_RANK];
  for (int j = 0; j < gr.nk; j++) {
    csize[j] = gr.k[j].size;
    clstr[j] = gr.k[j].l;
    crstr[j] = gr.k[j].r;
  }
  gboolean is_float = dtype_is_float(t->type->dtype);
  LLVMValueRef zero =
      is_float ? LLVMConstReal(compute_type(g, g->vt[DOT_ROW]->dtype), 0)
               : c64(g, 0);
  const int64_t *row_sets[3] = {so, sl, sr};
  LLVMValueRef zeros[3] = {c64(g, 0), c64(g, 0), c64(g, 0)};
  Nest row;
  nest_open(g, &row, rows, size, 3, row_sets, zeros);
  Loop z;
  store_elem(g, DOT_ROW, loop_open(g, n, &z), zero);
  loop_close(g, &z);
  /* (an empty contraction sums nothing; one over no dimension is a nest
   * of rank 0: one product) */
  if (!any_empty(gr.nk, csize)) {
    const int64_t *c_sets[2] = {clstr, crstr};
    Nest k;
    nest_open(g, &k, gr.nk, csize, 2, c_sets, &row.off[1]);
    LLVMValueRef a = widen_to(g, load_elem(g, 1, k.off[0]), zero);
    const int64_t *n_sets[2] = {nrow, nrhs};
    LLVMValueRef n_bases[2] = {c64(g, 0), k.off[1]};
    Nest cols;
    nest_open(g, &cols, gr.nn, nsize, 2, n_sets, n_bases);
    LLVMValueRef acc = load_elem(g, DOT_ROW, cols.off[0]);
    LLVMValueRef b = widen_to(g, load_elem(g, 2, cols.off[1]), zero);
    store_elem(g, DOT_ROW, cols.off[0], mul_add(g, acc, a, b));
    nest_close(g, &cols);
    nest_close(g, &k);
  }
  Loop o;
  LLVMValueRef j = loop_open(g, n, &o);
  store_elem(g, 0, LLVMBuildNSWAdd(g->b, row.off[0], j, ""),
             load_elem(g, DOT_ROW, j));
  loop_close(g, &o);
  nest_close(g, &row);
}

void emit_dot(Gen *g, const Term *t) {
  if (dot_products(t->type->dtype, g->exact))
    emit_products(g, t);
  else
    emit_rows(g, t);
}
