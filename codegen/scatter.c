/* scatter.c — the kernels of scatter_add and dynamic_update_slice: a
 * copy of the operand, then the updates added or written in place.
 *
 * requires: the term type-checked (core/gather.c names the dims), its
 * operands in buffers of their own (fuse.c fuses nothing into these
 * roots: buffer 1 the operand, 2 the indices or the update, then the
 * updates or the starts), the result in buffer 0, never sharing bytes
 * with an operand (arena.c).
 *
 * The updates are walked in row-major order, as the interpreter walks
 * them (eval/gather.c), so colliding windows add in the same order and
 * round the same way: each add is rounded to the dtype at once.  A
 * scatter window whose start does not fit is left out (as XLA does); the
 * starts of dynamic_update_slice are clamped.  Both phases run in order
 * in one thread: on a GPU thread 0 of block 0 does the whole kernel (no
 * grid-wide barrier orders the copy before the adds, and colliding adds
 * would race): correct, not fast.
 */
#include "codegen/gen.h"

/* On a GPU, a branch that only thread 0 of block 0 takes; NULL on the
 * CPU.  'scatter_done' joins it. */
static LLVMBasicBlockRef one_thread(Gen *g) {
  if (!g->gpu)
    return NULL;
  LLVMValueRef zero = c64(g, 0);
  LLVMValueRef first = LLVMBuildAnd(
      g->b, LLVMBuildICmp(g->b, LLVMIntEQ, gpu_sreg(g, "tid.x"), zero, ""),
      LLVMBuildICmp(g->b, LLVMIntEQ, gpu_sreg(g, "ctaid.x"), zero, ""), "");
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "one");
  LLVMBasicBlockRef done =
      LLVMAppendBasicBlockInContext(g->ctx, g->fn, "others");
  LLVMBuildCondBr(g->b, first, body, done);
  LLVMPositionBuilderAtEnd(g->b, body);
  return done;
}

static void scatter_done(Gen *g, LLVMBasicBlockRef done) {
  if (!done)
    return;
  LLVMBuildBr(g->b, done);
  LLVMPositionBuilderAtEnd(g->b, done);
}

/* Buffer 0 = buffer 1, element by element as stored. */
static void copy_operand(Gen *g, const Type *ty) {
  int64_t n = type_numel(ty);
  if (n == 0)
    return;
  Loop l;
  LLVMValueRef i = loop_open(g, n, &l);
  store_raw(g, 0, i, load_raw(g, 1, i));
  loop_close(g, &l);
}

/* 'v' (i64) clamped to [0, hi]. */
static LLVMValueRef clamp(Gen *g, LLVMValueRef v, int64_t hi) {
  LLVMValueRef lo = c64(g, 0), top = c64(g, hi);
  v = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, v, lo, ""), lo, v,
                      "");
  return LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSGT, v, top, ""), top,
                         v, "");
}

/* Buffer 0 at 'to' plus buffer 'from_buf' at 'from', in the result's
 * compute type, rounded to its dtype. */
static void add_into(Gen *g, DType dt, LLVMValueRef to, int from_buf,
                     LLVMValueRef from) {
  LLVMValueRef a = load_elem(g, 0, to), b = load_elem(g, from_buf, from);
  LLVMValueRef sum = dtype_is_float(dt) ? LLVMBuildFAdd(g->b, a, b, "")
                                        : LLVMBuildAdd(g->b, a, b, "");
  store_elem(g, 0, to, sum);
}

void emit_scatter_add(Gen *g, const Term *t) {
  const Type *x = t->args[0]->type, *it = t->args[1]->type,
             *ut = t->args[2]->type;
  GatherDims gd;
  gather_dims_of(t, &gd);
  int64_t xs[PARTIR_MAX_RANK], is[PARTIR_MAX_RANK], us[PARTIR_MAX_RANK];
  strides_of(x, xs);
  strides_of(it, is);
  strides_of(ut, us);
  LLVMBasicBlockRef done = one_thread(g);
  copy_operand(g, x);
  if (!any_empty(ut->rank, ut->dims)) {
    const int64_t *sets[1] = {us};
    LLVMValueRef zero = c64(g, 0);
    Nest n;
    nest_open(g, &n, ut->rank, ut->dims, 1, sets, &zero);
    /* the index vector's offset in the indices (component 0), and the
     * operand offset of the batching and window dims */
    LLVMValueRef at = zero, to = zero;
    for (int d = 0; d < ut->rank; d++) {
      GatherDim m = gather_result_dim(&gd, d);
      LLVMValueRef iv = n.loops[d].iv;
      if (!m.offset)
        at = LLVMBuildNSWAdd(
            g->b, at, LLVMBuildNSWMul(g->b, iv, c64(g, is[m.indices]), ""), "");
      if (m.operand >= 0)
        to = LLVMBuildNSWAdd(
            g->b, to, LLVMBuildNSWMul(g->b, iv, c64(g, xs[m.operand]), ""), "");
    }
    int64_t step = gd.index_vector_dim < it->rank ? is[gd.index_vector_dim] : 0;
    LLVMValueRef fits = LLVMConstInt(g->i1, 1, 0);
    for (int c = 0; c < gd.nstart; c++) {
      int64_t od = gd.start_index_map[c];
      int64_t hi = x->dims[od] - gd.slice_sizes[od];
      LLVMValueRef v =
          load_elem(g, 2, LLVMBuildNSWAdd(g->b, at, c64(g, c * step), ""));
      fits = LLVMBuildAnd(
          g->b, fits,
          LLVMBuildAnd(g->b, LLVMBuildICmp(g->b, LLVMIntSGE, v, c64(g, 0), ""),
                       LLVMBuildICmp(g->b, LLVMIntSLE, v, c64(g, hi), ""), ""),
          "");
      /* clamped, so that the address stays inside even when unused */
      to = LLVMBuildNSWAdd(
          g->b, to, LLVMBuildNSWMul(g->b, clamp(g, v, hi), c64(g, xs[od]), ""),
          "");
    }
    LLVMBasicBlockRef add = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "add");
    LLVMBasicBlockRef next =
        LLVMAppendBasicBlockInContext(g->ctx, g->fn, "added");
    LLVMBuildCondBr(g->b, fits, add, next);
    LLVMPositionBuilderAtEnd(g->b, add);
    add_into(g, x->dtype, to, 3, n.off[0]);
    LLVMBuildBr(g->b, next);
    LLVMPositionBuilderAtEnd(g->b, next);
    nest_close(g, &n);
  }
  scatter_done(g, done);
}

void emit_dynamic_update_slice(Gen *g, const Term *t) {
  const Type *x = t->args[0]->type, *ut = t->args[1]->type;
  int64_t xs[PARTIR_MAX_RANK], us[PARTIR_MAX_RANK];
  strides_of(x, xs);
  strides_of(ut, us);
  LLVMBasicBlockRef done = one_thread(g);
  copy_operand(g, x);
  if (!any_empty(ut->rank, ut->dims)) {
    LLVMValueRef base = c64(g, 0);
    for (int d = 0; d < x->rank; d++) {
      LLVMValueRef s =
          clamp(g, load_elem(g, 3 + d, c64(g, 0)), x->dims[d] - ut->dims[d]);
      base = LLVMBuildNSWAdd(g->b, base,
                             LLVMBuildNSWMul(g->b, s, c64(g, xs[d]), ""), "");
    }
    const int64_t *sets[2] = {us, xs};
    LLVMValueRef bases[2] = {c64(g, 0), base};
    Nest n;
    nest_open(g, &n, ut->rank, ut->dims, 2, sets, bases);
    store_raw(g, 0, n.off[1], load_raw(g, 2, n.off[0]));
    nest_close(g, &n);
  }
  scatter_done(g, done);
}
