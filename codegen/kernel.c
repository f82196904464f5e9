/* kernel.c — the loop nest of a value with a buffer, its fused operands
 * computed inside it.
 *
 * A kernel computes one value (its root) element by element.  An
 * element of the root, or of an operand, is named by an index (Ix) into
 * its value's shape; a fused operand is computed at the index its user
 * maps it to (the same index for an elementwise operator, a permuted,
 * broadcast or strided one for transpose, broadcast_in_dim and slice,
 * the same linear offset for reshape, a start read from its indices and
 * clamped, plus the offset in the slice, for gather and dynamic_slice),
 * a leaf is loaded from its buffer.  So a chain of elementwise operators and
 * index maps reads each of its inputs once per element and writes only its
 * root.
 *
 * Roots: an elementwise operator or index map (one nest over its shape,
 * or one flat loop when no index map needs the multi-index), a
 * reduction (a nest over the kept dimensions around one over the
 * reduced ones, an accumulator per result element), concatenate (a nest
 * per operand, into its place), pad (a nest over its result, reading
 * its operands' buffers), scatter_add and dynamic_update_slice (their
 * operands' buffers, scatter.c), a collective (a call into the runtime),
 * a contraction (dot.c).
 */
#include "codegen/gen.h"

/* An index into a value of type 'ty': its multi-index, its linear
 * offset, or both, each computed from the other when first needed. */
typedef struct Ix {
  const Type *ty;
  LLVMValueRef lin;                /* or NULL */
  LLVMValueRef d[PARTIR_MAX_RANK]; /* valid when has_d */
  gboolean has_d;
} Ix;

static LLVMValueRef ix_lin(Gen *g, Ix *ix) {
  if (!ix->lin) {
    int64_t strides[PARTIR_MAX_RANK];
    strides_of(ix->ty, strides);
    ix->lin = c64(g, 0);
    for (int d = 0; d < ix->ty->rank; d++)
      ix->lin = LLVMBuildNSWAdd(
          g->b, ix->lin,
          LLVMBuildNSWMul(g->b, ix->d[d], c64(g, strides[d]), ""), "");
  }
  return ix->lin;
}

static LLVMValueRef ix_dim(Gen *g, Ix *ix, int d) {
  if (!ix->has_d) {
    int64_t strides[PARTIR_MAX_RANK];
    strides_of(ix->ty, strides);
    for (int j = 0; j < ix->ty->rank; j++) {
      LLVMValueRef q = LLVMBuildUDiv(g->b, ix->lin, c64(g, strides[j]), "");
      ix->d[j] =
          j == 0 ? q : LLVMBuildURem(g->b, q, c64(g, ix->ty->dims[j]), "");
    }
    ix->has_d = TRUE;
  }
  return ix->d[d];
}

typedef struct Kern {
  Gen *g;
  const Plan *p;
  const Term *root;
  GHashTable *leaf;  /* Term -> parameter number */
  GPtrArray *leaves; /* the leaves in parameter order */
  GString *key;
  gboolean needs_d; /* an index map reads the multi-index */
} Kern;

static const Slot *slot_of(const Kern *k, const Term *t) {
  return &g_array_index(k->p->slots, Slot, plan_slot(k->p, t));
}

static gboolean is_leaf(const Kern *k, const Term *t) {
  return t != k->root && !slot_of(k, t)->fused;
}

/* The key of the kernel's tree, its leaves numbered as first met. */
static void walk_tree(Kern *k, const Term *t) {
  if (is_leaf(k, t)) {
    gpointer at = g_hash_table_lookup(k->leaf, t);
    if (!at) {
      g_ptr_array_add(k->leaves, (gpointer)t);
      at = GINT_TO_POINTER(k->leaves->len);
      g_hash_table_insert(k->leaf, (gpointer)t, at);
    }
    g_string_append_printf(k->key, " L%d:%p%s", GPOINTER_TO_INT(at),
                           (const void *)t->type,
                           slot_of(k, t)->splat ? "S" : "");
    return;
  }
  g_string_append_printf(k->key, " (%d %p %p", (int)t->op,
                         (const void *)t->attrs, (const void *)t->type);
  if (t->op == OP_BROADCAST_IN_DIM || t->op == OP_TRANSPOSE ||
      t->op == OP_SLICE || t->op == OP_GATHER || t->op == OP_DYNAMIC_SLICE)
    k->needs_d = TRUE; /* its index map reads the multi-index */
  for (int a = 0; a < t->nargs; a++) {
    if (t == k->root && !fusion_absorbs(t)) { /* operand a is buffer a + 1 */
      g_ptr_array_add(k->leaves, (gpointer)t->args[a]);
      g_string_append_printf(k->key, " L:%p", (const void *)t->args[a]->type);
    } else {
      walk_tree(k, t->args[a]);
    }
  }
  g_string_append_c(k->key, ')');
}

/* The index into operand 0 of index map 't' for index 'ix' of 't'. */
static void map_index(Gen *g, const Term *t, Ix *ix, Ix *sub) {
  const Type *in = t->args[0]->type;
  *sub = (Ix){.ty = in};
  int64_t a[PARTIR_MAX_RANK], step[PARTIR_MAX_RANK];
  switch (t->op) {
  case OP_RESHAPE: /* row-major: the same offset */
    sub->lin = ix_lin(g, ix);
    return;
  case OP_BROADCAST_IN_DIM:
    attr_ints(t, "dims", a);
    for (int j = 0; j < in->rank; j++)
      sub->d[j] = in->dims[j] == 1 ? c64(g, 0) : ix_dim(g, ix, (int)a[j]);
    break;
  case OP_TRANSPOSE: /* result dim j is operand dim perm[j] */
    attr_ints(t, "permutation", a);
    for (int j = 0; j < in->rank; j++)
      sub->d[a[j]] = ix_dim(g, ix, j);
    break;
  case OP_SLICE: {
    attr_ints(t, "start", a);
    int nstep = attr_ints(t, "strides", step);
    for (int d = 0; d < in->rank; d++)
      sub->d[d] =
          LLVMBuildNSWAdd(g->b, c64(g, a[d]),
                          LLVMBuildNSWMul(g->b, ix_dim(g, ix, d),
                                          c64(g, d < nstep ? step[d] : 1), ""),
                          "");
    break;
  }
  default:
    g_assert_not_reached();
  }
  sub->has_d = TRUE;
}

static LLVMValueRef element(Kern *k, const Term *t, Ix *ix);

/* Start 'v' (an integer in i64) clamped to [0, hi], as StableHLO clamps
 * the starts of gather and dynamic_slice so that the slice fits. */
static LLVMValueRef clamp_start(Gen *g, LLVMValueRef v, int64_t hi) {
  g_assert(LLVMTypeOf(v) == g->i64);
  LLVMValueRef lo = c64(g, 0), top = c64(g, hi);
  v = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, v, lo, ""), lo, v,
                      "");
  return LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSGT, v, top, ""), top,
                         v, "");
}

/* The index into operand 0 of gather 't' for index 'ix' of 't': each
 * component of the start read from the indices (operand 1, computed
 * there when fused) and clamped, plus the batching dims' positions and
 * ix's offset within the slice (core/gather.c). */
static void gather_index(Kern *k, const Term *t, Ix *ix, Ix *sub) {
  Gen *g = k->g;
  GatherDims gd;
  gather_dims_of(t, &gd);
  const Type *in = t->args[0]->type, *it = t->args[1]->type;
  *sub = (Ix){.ty = in, .has_d = TRUE};
  for (int d = 0; d < in->rank; d++)
    sub->d[d] = c64(g, 0);
  Ix at = {.ty = it, .has_d = TRUE};
  for (int d = 0; d < t->type->rank; d++) {
    GatherDim m = gather_result_dim(&gd, d);
    if (!m.offset)
      at.d[m.indices] = ix_dim(g, ix, d);
    if (m.operand >= 0)
      sub->d[m.operand] = ix_dim(g, ix, d);
  }
  for (int c = 0; c < gd.nstart; c++) {
    if (gd.index_vector_dim < it->rank)
      at.d[gd.index_vector_dim] = c64(g, c);
    at.lin = NULL; /* the component's own offset */
    int64_t od = gd.start_index_map[c];
    LLVMValueRef s = clamp_start(g, element(k, t->args[1], &at),
                                 in->dims[od] - gd.slice_sizes[od]);
    sub->d[od] = LLVMBuildNSWAdd(g->b, sub->d[od], s, "");
  }
}

/* The index into operand 0 of dynamic_slice 't': the clamped starts
 * (scalar operands) plus ix. */
static void dynamic_slice_index(Kern *k, const Term *t, Ix *ix, Ix *sub) {
  Gen *g = k->g;
  const Type *in = t->args[0]->type;
  *sub = (Ix){.ty = in, .has_d = TRUE};
  for (int d = 0; d < in->rank; d++) {
    Ix scalar = {.ty = t->args[d + 1]->type, .lin = c64(g, 0), .has_d = TRUE};
    LLVMValueRef s = clamp_start(g, element(k, t->args[d + 1], &scalar),
                                 in->dims[d] - t->type->dims[d]);
    sub->d[d] = LLVMBuildNSWAdd(g->b, s, ix_dim(g, ix, d), "");
  }
}

/* Element 'ix' of 't' in its compute type: loaded (a leaf) or computed
 * (the root, or a fused value). */
static LLVMValueRef element(Kern *k, const Term *t, Ix *ix) {
  Gen *g = k->g;
  if (is_leaf(k, t)) {
    int at = GPOINTER_TO_INT(g_hash_table_lookup(k->leaf, t));
    /* a splat's one number is every element */
    return load_elem(g, at, slot_of(k, t)->splat ? c64(g, 0) : ix_lin(g, ix));
  }
  switch (t->op) {
  case OP_RESHAPE:
  case OP_BROADCAST_IN_DIM:
  case OP_TRANSPOSE:
  case OP_SLICE: {
    Ix sub;
    map_index(g, t, ix, &sub);
    return element(k, t->args[0], &sub);
  }
  case OP_GATHER:
  case OP_DYNAMIC_SLICE: {
    Ix sub;
    if (t->op == OP_GATHER)
      gather_index(k, t, ix, &sub);
    else
      dynamic_slice_index(k, t, ix, &sub);
    return element(k, t->args[0], &sub);
  }
  default: {
    LLVMValueRef v[3];
    for (int a = 0; a < t->nargs; a++)
      v[a] = element(k, t->args[a], ix);
    return round_to(g, t->type->dtype, arith_op(g, t, v));
  }
  }
}

/* An elementwise or index-map root: a nest over its shape (a flat loop
 * when nothing needs the multi-index). */
static void emit_map(Kern *k) {
  Gen *g = k->g;
  const Type *ty = k->root->type;
  Ix ix = {.ty = ty};
  if (!k->needs_d) {
    Loop l;
    ix.lin = par_loop_open(g, type_numel(ty), &l);
    store_elem(g, 0, ix.lin, element(k, k->root, &ix));
    loop_close(g, &l);
    return;
  }
  int64_t strides[PARTIR_MAX_RANK];
  strides_of(ty, strides);
  const int64_t *sets[1] = {strides};
  LLVMValueRef zero = c64(g, 0);
  Nest n;
  par_nest_open(g, &n, ty->rank, ty->dims, 1, sets, &zero);
  for (int d = 0; d < ty->rank; d++)
    ix.d[d] = n.loops[d].iv;
  ix.has_d = TRUE;
  ix.lin = n.off[0];
  store_elem(g, 0, ix.lin, element(k, k->root, &ix));
  nest_close(g, &n);
}

/* The entry-block accumulator of type 'aty': double, float or i64. */
static LLVMValueRef acc_slot(Gen *g, LLVMTypeRef aty) {
  return aty == g->i64 ? g->acc_i : aty == g->f32 ? g->acc_s : g->acc_f;
}

/* One step of reduction 'op': 'acc' folded with 'v' (the interpreter's
 * fold_float and fold_int). */
static LLVMValueRef fold(Gen *g, Op op, LLVMValueRef acc, LLVMValueRef v) {
  gboolean is_float = LLVMTypeOf(v) != g->i64;
  gboolean is_max = op == OP_REDUCE_MAX;
  switch (op) {
  case OP_REDUCE_SUM:
  case OP_REDUCE_PROD: {
    if (!is_float)
      return op == OP_REDUCE_SUM ? LLVMBuildAdd(g->b, acc, v, "")
                                 : LLVMBuildMul(g->b, acc, v, "");
    LLVMValueRef r = op == OP_REDUCE_SUM ? LLVMBuildFAdd(g->b, acc, v, "")
                                         : LLVMBuildFMul(g->b, acc, v, "");
    ir_reassoc(g, r); /* fast: any order, so the loop vectorizes */
    return r;
  }
  case OP_REDUCE_AND:
    return LLVMBuildAnd(g->b, acc, v, "");
  case OP_REDUCE_OR:
    return LLVMBuildOr(g->b, acc, v, "");
  case OP_REDUCE_MAX:
  case OP_REDUCE_MIN:
    break;
  default:
    g_assert_not_reached();
  }
  if (!is_float)
    return LLVMBuildSelect(
        g->b, LLVMBuildICmp(g->b, is_max ? LLVMIntSGT : LLVMIntSLT, v, acc, ""),
        v, acc, "");
  if (!g->exact) { /* NaN-propagating, and a reduction LLVM vectorizes */
    LLVMValueRef args[2] = {acc, v};
    return ir_intrinsic(g, is_max ? "llvm.maximum" : "llvm.minimum", args, 2);
  }
  /* once NaN, it sticks ('v > NaN' is false) */
  return LLVMBuildSelect(
      g->b,
      LLVMBuildOr(
          g->b, is_nan(g, v),
          LLVMBuildFCmp(g->b, is_max ? LLVMRealOGT : LLVMRealOLT, v, acc, ""),
          ""),
      v, acc, "");
}

/* A reduction's dimensions: those it keeps (the result's, in order) and
 * those it folds, each with its size. */
typedef struct Reduced {
  int nkept, nred;
  int kept_dim[PARTIR_MAX_RANK], red_dim[PARTIR_MAX_RANK];
  int64_t kept_size[PARTIR_MAX_RANK], red_size[PARTIR_MAX_RANK];
  LLVMTypeRef aty;   /* the accumulator's type */
  LLVMValueRef init; /* the reduction's identity */
} Reduced;

static void reduced_of(Gen *g, const Term *t, Reduced *r) {
  const Type *in = t->args[0]->type;
  DType dt = in->dtype;
  int64_t dims[PARTIR_MAX_RANK];
  int ndims = attr_ints(t, "dims", dims);
  gboolean reduced[PARTIR_MAX_RANK] = {FALSE};
  for (int j = 0; j < ndims; j++)
    reduced[dims[j]] = TRUE;
  r->nkept = r->nred = 0;
  for (int d = 0; d < in->rank; d++) {
    if (reduced[d]) {
      r->red_dim[r->nred] = d;
      r->red_size[r->nred++] = in->dims[d];
    } else {
      r->kept_dim[r->nkept] = d;
      r->kept_size[r->nkept++] = in->dims[d];
    }
  }
  /* exact: double or i64, the interpreter's; fast: the compute type,
   * but a product of floats in double (f32 products overflow long
   * before the result does) */
  r->aty = compute_type(g, dt);
  if (dtype_is_float(dt) && (g->exact || t->op == OP_REDUCE_PROD))
    r->aty = g->f64;
  r->init = dtype_is_float(dt)
                ? LLVMConstReal(r->aty, kernel_reduce_identity_float(t->op))
                : c64(g, kernel_reduce_identity_int(t->op, dt));
}

/* The multi-index of linear offset 'lin' in the row-major space 'sizes'
 * into ix->d at 'dims'. */
static void unflatten(Gen *g, LLVMValueRef lin, int n, const int *dims,
                      const int64_t *sizes, Ix *ix) {
  for (int j = n - 1; j >= 0; j--) {
    ix->d[dims[j]] = j ? LLVMBuildURem(g->b, lin, c64(g, sizes[j]), "") : lin;
    if (j)
      lin = LLVMBuildUDiv(g->b, lin, c64(g, sizes[j]), "");
  }
}

/* A reduction on a GPU: a block per result element (grid-stride over
 * them), its threads folding the reduced elements t, t + block, ...
 * each into its own accumulator, then a tree over the block in shared
 * memory (half the threads fold the other half's, log2(block) steps,
 * a barrier after each); thread 0 stores.  The block size is
 * gpu_reduce_block's, the launch's. */
static void emit_reduce_gpu(Kern *k, const Reduced *r) {
  Gen *g = k->g;
  const Term *t = k->root;
  int64_t rows = type_numel(t->type), width = 1;
  for (int j = 0; j < r->nred; j++)
    width *= r->red_size[j];
  int block = gpu_reduce_block(width);
  LLVMTypeRef shty = LLVMArrayType2(r->aty, (uint64_t)block);
  LLVMValueRef shared =
      LLVMAddGlobalInAddressSpace(g->mod, shty, "partials", 3);
  LLVMSetLinkage(shared, LLVMInternalLinkage);
  LLVMSetInitializer(shared, LLVMGetUndef(shty));
  LLVMValueRef tid = gpu_sreg(g, "tid.x");
  Loop row;
  LLVMValueRef at = loop_open_strided(g, gpu_sreg(g, "ctaid.x"),
                                      gpu_sreg(g, "nctaid.x"), rows, &row);
  LLVMValueRef accp = acc_slot(g, r->aty);
  LLVMBuildStore(g->b, r->init, accp);
  if (width > 0) {
    Loop mine;
    LLVMValueRef j =
        loop_open_strided(g, tid, gpu_sreg(g, "ntid.x"), width, &mine);
    Ix ix = {.ty = t->args[0]->type, .has_d = TRUE};
    unflatten(g, at, r->nkept, r->kept_dim, r->kept_size, &ix);
    unflatten(g, j, r->nred, r->red_dim, r->red_size, &ix);
    LLVMValueRef v = element(k, t->args[0], &ix);
    if (LLVMTypeOf(v) != r->aty)
      v = LLVMBuildFPExt(g->b, v, r->aty, "");
    LLVMValueRef acc = LLVMBuildLoad2(g->b, r->aty, accp, "");
    LLVMBuildStore(g->b, fold(g, t->op, acc, v), accp);
    loop_close(g, &mine);
  }
  LLVMValueRef zero = c64(g, 0);
  LLVMValueRef idx[2] = {zero, tid};
  LLVMValueRef own = LLVMBuildGEP2(g->b, shty, shared, idx, 2, "");
  LLVMBuildStore(g->b, LLVMBuildLoad2(g->b, r->aty, accp, ""), own);
  gpu_barrier(g);
  for (int half = block / 2; half >= 1; half /= 2) {
    LLVMBasicBlockRef folds =
        LLVMAppendBasicBlockInContext(g->ctx, g->fn, "fold");
    LLVMBasicBlockRef next =
        LLVMAppendBasicBlockInContext(g->ctx, g->fn, "folded");
    LLVMBuildCondBr(g->b,
                    LLVMBuildICmp(g->b, LLVMIntULT, tid, c64(g, half), ""),
                    folds, next);
    LLVMPositionBuilderAtEnd(g->b, folds);
    idx[1] = LLVMBuildNUWAdd(g->b, tid, c64(g, half), "");
    LLVMValueRef other = LLVMBuildGEP2(g->b, shty, shared, idx, 2, "");
    LLVMValueRef a = LLVMBuildLoad2(g->b, r->aty, own, "");
    LLVMValueRef b = LLVMBuildLoad2(g->b, r->aty, other, "");
    LLVMBuildStore(g->b, fold(g, t->op, a, b), own);
    LLVMBuildBr(g->b, next);
    LLVMPositionBuilderAtEnd(g->b, next);
    gpu_barrier(g);
  }
  LLVMBasicBlockRef store =
      LLVMAppendBasicBlockInContext(g->ctx, g->fn, "store");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "row");
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntEQ, tid, zero, ""), store,
                  done);
  LLVMPositionBuilderAtEnd(g->b, store);
  store_elem(g, 0, at, LLVMBuildLoad2(g->b, r->aty, own, ""));
  LLVMBuildBr(g->b, done);
  LLVMPositionBuilderAtEnd(g->b, done);
  gpu_barrier(g); /* the partials are the next row's */
  loop_close(g, &row);
}

/* A reduction (op_is_reduction): for each kept index, the reduced
 * elements of the (fused) operand folded in row-major order from the
 * reduction's identity. */
static void emit_reduce(Kern *k) {
  Gen *g = k->g;
  const Term *t = k->root;
  const Type *in = t->args[0]->type;
  Reduced r;
  reduced_of(g, t, &r);
  if (g->gpu) {
    emit_reduce_gpu(k, &r);
    return;
  }
  int64_t out_strides[PARTIR_MAX_RANK];
  strides_of(t->type, out_strides);
  const int64_t *kept_sets[1] = {out_strides};
  LLVMValueRef zero = c64(g, 0);
  Nest kept;
  nest_open(g, &kept, r.nkept, r.kept_size, 1, kept_sets, &zero);
  LLVMValueRef accp = acc_slot(g, r.aty);
  LLVMBuildStore(g->b, r.init, accp);
  if (!any_empty(r.nred, r.red_size)) {
    const int64_t *none[1] = {NULL};
    Nest red;
    nest_open(g, &red, r.nred, r.red_size, 0, none, NULL);
    Ix ix = {.ty = in, .has_d = TRUE};
    for (int j = 0; j < r.nkept; j++)
      ix.d[r.kept_dim[j]] = kept.loops[j].iv;
    for (int j = 0; j < r.nred; j++)
      ix.d[r.red_dim[j]] = red.loops[j].iv;
    LLVMValueRef v = element(k, t->args[0], &ix);
    if (LLVMTypeOf(v) != r.aty) /* a float into a double accumulator */
      v = LLVMBuildFPExt(g->b, v, r.aty, "");
    LLVMValueRef acc = LLVMBuildLoad2(g->b, r.aty, accp, "");
    LLVMBuildStore(g->b, fold(g, t->op, acc, v), accp);
    nest_close(g, &red);
  }
  store_elem(g, 0, kept.off[0], LLVMBuildLoad2(g->b, r.aty, accp, ""));
  nest_close(g, &kept);
}

/* Each operand's elements into their place along 'dim'. */
static void emit_concatenate(Kern *k) {
  Gen *g = k->g;
  const Term *t = k->root;
  int64_t dim = attrs_get_int(t->attrs, "dim");
  int64_t out_strides[PARTIR_MAX_RANK], at = 0;
  strides_of(t->type, out_strides);
  for (int a = 0; a < t->nargs; a++) {
    const Type *ty = t->args[a]->type;
    if (type_numel(ty) > 0) {
      const int64_t *sets[1] = {out_strides};
      LLVMValueRef base = c64(g, at * out_strides[dim]);
      Nest n;
      par_nest_open(g, &n, ty->rank, ty->dims, 1, sets, &base);
      Ix ix = {.ty = ty, .has_d = TRUE};
      for (int d = 0; d < ty->rank; d++)
        ix.d[d] = n.loops[d].iv;
      store_elem(g, 0, n.off[0], element(k, t->args[a], &ix));
      nest_close(g, &n);
    }
    at += ty->dims[dim];
  }
}

/* pad, from its operand (buffer 1) and padding value (buffer 2, one
 * element): result index i takes the operand's element at
 * (i[d] - low[d]) / (interior[d] + 1) when every such quotient is exact
 * and inside the operand, else the padding value.  The operand is read
 * at a clamped index either way (no load outside it), and its element
 * or the value chosen, as stored. */
static void emit_pad(Gen *g, const Term *t) {
  const Type *in = t->args[0]->type, *ty = t->type;
  int64_t low[PARTIR_MAX_RANK], step[PARTIR_MAX_RANK] = {0};
  int64_t out_strides[PARTIR_MAX_RANK], in_strides[PARTIR_MAX_RANK];
  attr_ints(t, "low", low);
  attr_ints(t, "interior", step);
  strides_of(ty, out_strides);
  strides_of(in, in_strides);
  if (any_empty(ty->rank, ty->dims))
    return;
  const int64_t *sets[1] = {out_strides};
  LLVMValueRef zero = c64(g, 0);
  Nest n;
  par_nest_open(g, &n, ty->rank, ty->dims, 1, sets, &zero);
  LLVMValueRef inside = LLVMConstInt(g->i1, 1, 0), src = c64(g, 0);
  for (int d = 0; d < ty->rank; d++) {
    int64_t every = step[d] + 1;
    LLVMValueRef j =
        LLVMBuildSub(g->b, n.loops[d].iv, c64(g, low[d]), ""); /* may be < 0 */
    LLVMValueRef ok = LLVMBuildICmp(g->b, LLVMIntSGE, j, zero, "");
    j = LLVMBuildSelect(g->b, ok, j, zero, "");
    LLVMValueRef q = LLVMBuildUDiv(g->b, j, c64(g, every), "");
    ok = LLVMBuildAnd(g->b, ok,
                      LLVMBuildICmp(g->b, LLVMIntEQ,
                                    LLVMBuildURem(g->b, j, c64(g, every), ""),
                                    zero, ""),
                      "");
    ok = LLVMBuildAnd(
        g->b, ok, LLVMBuildICmp(g->b, LLVMIntSLT, q, c64(g, in->dims[d]), ""),
        "");
    q = LLVMBuildSelect(g->b, ok, q, zero, "");
    src = LLVMBuildAdd(g->b, src,
                       LLVMBuildMul(g->b, q, c64(g, in_strides[d]), ""), "");
    inside = LLVMBuildAnd(g->b, inside, ok, "");
  }
  /* an empty operand has nothing to read: every element is padding */
  LLVMValueRef x = type_numel(in) > 0 ? load_raw(g, 1, src) : NULL;
  LLVMValueRef v = load_raw(g, 2, zero);
  store_raw(g, 0, n.off[0], x ? LLVMBuildSelect(g->b, inside, x, v, "") : v);
  nest_close(g, &n);
}

/* A collective: the runtime's codegen_rt_collective with the term (both
 * addresses in this process, where the code runs). */
static void emit_collective(Gen *g, const Term *t) {
  LLVMTypeRef params[3] = {g->ptr, g->ptr, g->ptr};
  LLVMValueRef args[3] = {
      LLVMConstIntToPtr(
          LLVMConstInt(g->i64, (unsigned long long)(uintptr_t)t, 0), g->ptr),
      g->base[1], g->base[0]};
  ir_call_address(g, (const void *)codegen_rt_collective, g->vd, params, args,
                  3);
}

static void emit_root(Kern *k) {
  const Term *t = k->root;
  switch (t->op) {
  case OP_ALL_REDUCE:
  case OP_ALL_GATHER:
  case OP_REDUCE_SCATTER:
  case OP_ALL_TO_ALL:
  case OP_SHARD:
    emit_collective(k->g, t);
    break;
  case OP_MATMUL:
  case OP_DOT_GENERAL:
    emit_dot(k->g, t);
    break;
  case OP_REDUCE_SUM:
  case OP_REDUCE_MAX:
  case OP_REDUCE_MIN:
  case OP_REDUCE_PROD:
  case OP_REDUCE_AND:
  case OP_REDUCE_OR:
    emit_reduce(k);
    break;
  case OP_CONCATENATE:
    emit_concatenate(k);
    break;
  case OP_PAD:
    emit_pad(k->g, t);
    break;
  case OP_SCATTER_ADD:
    emit_scatter_add(k->g, t);
    break;
  case OP_DYNAMIC_UPDATE_SLICE:
    emit_dynamic_update_slice(k->g, t);
    break;
  default: /* fusion_fusible: elementwise or an index map */
    emit_map(k);
    break;
  }
}

Fn *kernel_function(Gen *g, const Plan *p, const Term *t, const Type *scratch,
                    GHashTable *made, GPtrArray *leaves) {
  Kern k = {.g = g, .p = p, .root = t, .leaves = leaves};
  k.leaf = g_hash_table_new(NULL, NULL);
  k.key = g_string_new(NULL);
  g_ptr_array_set_size(leaves, 0);
  g_string_printf(k.key, "kernel %p", (const void *)scratch);
  walk_tree(&k, t);
  char *key = g_string_free(k.key, FALSE);
  Fn *known = fn_known(made, key);
  if (known) {
    g_hash_table_unref(k.leaf);
    return known;
  }
  int n = 1 + (int)leaves->len + (scratch != NULL);
  g_autofree const Type **vt = g_new(const Type *, (gsize)n);
  vt[0] = t->type;
  for (guint a = 0; a < leaves->len; a++)
    vt[a + 1] = ((const Term *)g_ptr_array_index(leaves, a))->type;
  if (scratch)
    vt[n - 1] = scratch;
  g_autofree char *name =
      g_strdup_printf("%s_%u", op_name(t->op), g_hash_table_size(made));
  LLVMTypeRef ty;
  LLVMValueRef fn = ir_function(g, name, n, FALSE, vt, &ty);
  emit_root(&k);
  ir_finish(g);
  g_hash_table_unref(k.leaf);
  return fn_remember(made, key, fn, ty);
}
