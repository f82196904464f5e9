/* dot.c — matmul and dot_general.
 *
 * Exact arithmetic, in the interpreter's order: the result is
 * [batch..., lhs free..., rhs free...], a row-major [B, M, N] block; for
 * each (b, m) a row of N accumulators (buffer DOT_ROW: double, or i64)
 * gets acc[n] += lhs[b,m,k] * rhs[b,k,n] for each k in row-major order,
 * reading rhs rows contiguously, and is stored rounded.  Each element
 * sums its products in k order, as the kernel does.  Fast arithmetic
 * keeps the order with the row in the compute type and a fused
 * multiply-add (the loop over n vectorizes).
 */
#include "codegen/gen.h"

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

void emit_dot(Gen *g, const Term *t) {
  int s = 0;
  int64_t lb[PARTIR_MAX_RANK], rb[PARTIR_MAX_RANK];
  int64_t lc[PARTIR_MAX_RANK], rc[PARTIR_MAX_RANK];
  int nb = 0, nc = 1;
  if (t->op == OP_MATMUL) {
    lc[0] = 1;
    rc[0] = 0;
  } else {
    nb = attr_ints(t, "lhs_batch", lb);
    attr_ints(t, "rhs_batch", rb);
    nc = attr_ints(t, "lhs_contract", lc);
    attr_ints(t, "rhs_contract", rc);
  }
  const Type *lt = t->args[0]->type, *rt = t->args[1]->type;
  int64_t ls[PARTIR_MAX_RANK], rs[PARTIR_MAX_RANK], os[PARTIR_MAX_RANK];
  strides_of(lt, ls);
  strides_of(rt, rs);
  strides_of(t->type, os);
  gboolean lused[PARTIR_MAX_RANK] = {FALSE}, rused[PARTIR_MAX_RANK] = {FALSE};
  /* the rows: batch and lhs free indices, each operand's stride per index */
  int64_t size[PARTIR_MAX_RANK], lstr[PARTIR_MAX_RANK] = {0},
                                 rstr[PARTIR_MAX_RANK] = {0};
  int rows = 0;
  for (int j = 0; j < nb; j++) {
    lused[lb[j]] = rused[rb[j]] = TRUE;
    size[rows] = lt->dims[lb[j]];
    lstr[rows] = ls[lb[j]];
    rstr[rows++] = rs[rb[j]];
  }
  for (int j = 0; j < nc; j++)
    lused[lc[j]] = rused[rc[j]] = TRUE;
  for (int d = 0; d < lt->rank; d++)
    if (!lused[d]) {
      size[rows] = lt->dims[d];
      lstr[rows++] = ls[d];
    }
  /* a row: the rhs free indices, row-major in the row, rhs's strides */
  int64_t nsize[PARTIR_MAX_RANK], nrow[PARTIR_MAX_RANK], nrhs[PARTIR_MAX_RANK];
  int ncols = 0;
  for (int d = 0; d < rt->rank; d++)
    if (!rused[d]) {
      nsize[ncols] = rt->dims[d];
      nrhs[ncols++] = rs[d];
    }
  int64_t n = 1;
  for (int j = ncols - 1; j >= 0; j--) {
    nrow[j] = n;
    n *= nsize[j];
  }
  g_assert(rows + ncols == t->type->rank);
  int64_t csize[PARTIR_MAX_RANK], clstr[PARTIR_MAX_RANK],
      crstr[PARTIR_MAX_RANK];
  for (int j = 0; j < nc; j++) {
    csize[j] = lt->dims[lc[j]];
    clstr[j] = ls[lc[j]];
    crstr[j] = rs[rc[j]];
  }
  int l = 1, r = 2;
  gboolean is_float = dtype_is_float(t->type->dtype);
  LLVMValueRef zero =
      is_float ? LLVMConstReal(compute_type(g, g->vt[DOT_ROW]->dtype), 0)
               : c64(g, 0);
  const int64_t *row_sets[3] = {os, lstr, rstr};
  LLVMValueRef zeros[3] = {c64(g, 0), c64(g, 0), c64(g, 0)};
  Nest row;
  nest_open(g, &row, rows, size, 3, row_sets, zeros);
  Loop z;
  store_elem(g, DOT_ROW, loop_open(g, n, &z), zero);
  loop_close(g, &z);
  /* (an empty contraction sums nothing; one over no dimension is a nest
   * of rank 0: one product) */
  if (!any_empty(nc, csize)) {
    const int64_t *c_sets[2] = {clstr, crstr};
    Nest k;
    nest_open(g, &k, nc, csize, 2, c_sets, &row.off[1]);
    LLVMValueRef a = load_elem(g, l, k.off[0]);
    const int64_t *n_sets[2] = {nrow, nrhs};
    LLVMValueRef n_bases[2] = {c64(g, 0), k.off[1]};
    Nest cols;
    nest_open(g, &cols, ncols, nsize, 2, n_sets, n_bases);
    LLVMValueRef acc = load_elem(g, DOT_ROW, cols.off[0]);
    LLVMValueRef b = load_elem(g, r, cols.off[1]);
    store_elem(g, DOT_ROW, cols.off[0], mul_add(g, acc, a, b));
    nest_close(g, &cols);
    nest_close(g, &k);
  }
  Loop o;
  LLVMValueRef j = loop_open(g, n, &o);
  store_elem(g, s, LLVMBuildNSWAdd(g->b, row.off[0], j, ""),
             load_elem(g, DOT_ROW, j));
  loop_close(g, &o);
  nest_close(g, &row);
}
