/* ir.c — building blocks of the generated IR: constants, loops, calls,
 * and the functions every kernel is made in. */
#include "codegen/gen.h"

LLVMValueRef c64(Gen *g, int64_t v) {
  return LLVMConstInt(g->i64, (unsigned long long)v, 1);
}

LLVMValueRef cf64(Gen *g, double v) { return LLVMConstReal(g->f64, v); }

LLVMValueRef cfl(Gen *g, LLVMValueRef like, double v) {
  (void)g;
  return LLVMConstReal(LLVMTypeOf(like), v);
}

/* ---------------------------------------------------------------- loops */

LLVMValueRef loop_open(Gen *g, int64_t n, Loop *l) {
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b);
  *l = (Loop){.n = n};
  l->body = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "loop");
  LLVMBuildBr(g->b, l->body);
  LLVMPositionBuilderAtEnd(g->b, l->body);
  l->iv = LLVMBuildPhi(g->b, g->i64, "i");
  LLVMValueRef zero = c64(g, 0);
  LLVMAddIncoming(l->iv, &zero, &pre, 1);
  return l->iv;
}

LLVMValueRef loop_open_strided(Gen *g, LLVMValueRef start, LLVMValueRef step,
                               int64_t n, Loop *l) {
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b);
  *l = (Loop){.n = n, .step = step};
  l->body = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "loop");
  l->exit = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "done");
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, start, c64(g, n), ""),
                  l->body, l->exit);
  LLVMPositionBuilderAtEnd(g->b, l->body);
  l->iv = LLVMBuildPhi(g->b, g->i64, "i");
  LLVMAddIncoming(l->iv, &start, &pre, 1);
  return l->iv;
}

void loop_close(Gen *g, Loop *l) {
  LLVMValueRef next =
      LLVMBuildNSWAdd(g->b, l->iv, l->step ? l->step : c64(g, 1), "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b);
  LLVMAddIncoming(l->iv, &next, &latch, 1);
  LLVMValueRef more = LLVMBuildICmp(g->b, LLVMIntSLT, next, c64(g, l->n), "");
  LLVMBasicBlockRef done =
      l->exit ? l->exit : LLVMAppendBasicBlockInContext(g->ctx, g->fn, "done");
  LLVMBuildCondBr(g->b, more, l->body, done);
  LLVMPositionBuilderAtEnd(g->b, done);
}

/* -------------------------------------------------------- GPU threads */

LLVMValueRef gpu_sreg(Gen *g, const char *reg) {
  g_autofree char *name = g_strdup_printf("llvm.nvvm.read.ptx.sreg.%s", reg);
  LLVMTypeRef fty = LLVMFunctionType(g->i32, NULL, 0, 0);
  LLVMValueRef f = LLVMGetNamedFunction(g->mod, name);
  if (!f)
    f = LLVMAddFunction(g->mod, name, fty);
  return LLVMBuildZExt(g->b, LLVMBuildCall2(g->b, fty, f, NULL, 0, ""), g->i64,
                       "");
}

void gpu_barrier(Gen *g) {
  LLVMTypeRef fty = LLVMFunctionType(g->vd, NULL, 0, 0);
  LLVMValueRef f = LLVMGetNamedFunction(g->mod, "llvm.nvvm.barrier0");
  if (!f)
    f = LLVMAddFunction(g->mod, "llvm.nvvm.barrier0", fty);
  LLVMBuildCall2(g->b, fty, f, NULL, 0, "");
}

LLVMValueRef par_loop_open(Gen *g, int64_t n, Loop *l) {
  if (!g->gpu)
    return loop_open(g, n, l);
  LLVMValueRef block = gpu_sreg(g, "ntid.x");
  LLVMValueRef first = LLVMBuildNSWAdd(
      g->b, LLVMBuildNSWMul(g->b, gpu_sreg(g, "ctaid.x"), block, ""),
      gpu_sreg(g, "tid.x"), "");
  LLVMValueRef threads =
      LLVMBuildNSWMul(g->b, gpu_sreg(g, "nctaid.x"), block, "");
  return loop_open_strided(g, first, threads, n, l);
}

void nest_open(Gen *g, Nest *n, int rank, const int64_t *sizes, int nsets,
               const int64_t *const *strides, const LLVMValueRef *base) {
  n->flat = FALSE;
  n->rank = rank;
  n->nsets = nsets;
  for (int k = 0; k < nsets; k++)
    n->off[k] = base[k];
  for (int d = 0; d < rank; d++) {
    LLVMValueRef iv = loop_open(g, sizes[d], &n->loops[d]);
    for (int k = 0; k < nsets; k++)
      if (strides[k][d])
        n->off[k] = LLVMBuildNSWAdd(
            g->b, n->off[k],
            LLVMBuildNSWMul(g->b, iv, c64(g, strides[k][d]), ""), "");
  }
}

void par_nest_open(Gen *g, Nest *n, int rank, const int64_t *sizes, int nsets,
                   const int64_t *const *strides, const LLVMValueRef *base) {
  if (!g->gpu) {
    nest_open(g, n, rank, sizes, nsets, strides, base);
    return;
  }
  int64_t total = 1;
  for (int d = 0; d < rank; d++)
    total *= sizes[d];
  n->rank = rank;
  n->nsets = nsets;
  n->flat = TRUE;
  LLVMValueRef rest = par_loop_open(g, total, &n->whole);
  for (int d = rank - 1; d >= 0; d--) { /* row-major: the last dim fastest */
    n->loops[d].iv = d ? LLVMBuildURem(g->b, rest, c64(g, sizes[d]), "") : rest;
    if (d)
      rest = LLVMBuildUDiv(g->b, rest, c64(g, sizes[d]), "");
  }
  for (int k = 0; k < nsets; k++) {
    n->off[k] = base[k];
    for (int d = 0; d < rank; d++)
      if (strides[k][d])
        n->off[k] = LLVMBuildNSWAdd(
            g->b, n->off[k],
            LLVMBuildNSWMul(g->b, n->loops[d].iv, c64(g, strides[k][d]), ""),
            "");
  }
}

void nest_close(Gen *g, Nest *n) {
  if (n->flat) {
    loop_close(g, &n->whole);
    return;
  }
  for (int d = n->rank - 1; d >= 0; d--)
    loop_close(g, &n->loops[d]);
}

/* ---------------------------------------------------------------- calls */

LLVMValueRef ir_call(Gen *g, const char *name, LLVMTypeRef ret,
                     LLVMTypeRef *params, LLVMValueRef *args, int n) {
  /* on a GPU libm's functions are libdevice's, linked in (nvptx.c) */
  g_autofree char *nv = g->gpu ? g_strconcat("__nv_", name, NULL) : NULL;
  if (nv)
    name = nv;
  LLVMTypeRef fty = LLVMFunctionType(ret, params, (unsigned)n, 0);
  LLVMValueRef f = LLVMGetNamedFunction(g->mod, name);
  if (!f)
    f = LLVMAddFunction(g->mod, name, fty);
  return LLVMBuildCall2(g->b, fty, f, args, (unsigned)n, "");
}

LLVMValueRef ir_intrinsic(Gen *g, const char *name, LLVMValueRef *args, int n) {
  LLVMTypeRef ty = LLVMTypeOf(args[0]);
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  g_assert(id != 0);
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(g->mod, id, &ty, 1);
  LLVMTypeRef fty = LLVMIntrinsicGetType(g->ctx, id, &ty, 1);
  return LLVMBuildCall2(g->b, fty, f, args, (unsigned)n, "");
}

LLVMValueRef ir_call_address(Gen *g, const void *addr, LLVMTypeRef ret,
                             LLVMTypeRef *params, LLVMValueRef *args, int n) {
  LLVMTypeRef fty = LLVMFunctionType(ret, params, (unsigned)n, 0);
  LLVMValueRef fn = LLVMConstIntToPtr(
      LLVMConstInt(g->i64, (unsigned long long)(uintptr_t)addr, 0), g->ptr);
  return LLVMBuildCall2(g->b, fty, fn, args, (unsigned)n, "");
}

void ir_reassoc(Gen *g, LLVMValueRef v) {
  if (!g->exact && LLVMCanValueUseFastMathFlags(v))
    LLVMSetFastMathFlags(v,
                         LLVMFastMathAllowReassoc | LLVMFastMathAllowContract);
}

/* ------------------------------------------------------------ functions */

LLVMValueRef ir_function(Gen *g, const char *name, int n, gboolean index,
                         const Type **vt, LLVMTypeRef *fty) {
  g_autofree LLVMTypeRef *params = g_new(LLVMTypeRef, (gsize)n + 1);
  for (int k = 0; k < n; k++)
    params[k] = g->ptr;
  params[n] = g->i64;
  *fty = LLVMFunctionType(g->vd, params, (unsigned)(n + index), 0);
  LLVMValueRef fn = LLVMAddFunction(g->mod, name, *fty);
  if (g->gpu) { /* an entry the host launches */
    LLVMSetFunctionCallConv(fn, LLVMPTXKernelCallConv);
  } else {
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    LLVMAddAttributeAtIndex(
        fn, LLVMAttributeFunctionIndex,
        LLVMCreateEnumAttribute(
            g->ctx, LLVMGetEnumAttributeKindForName("noinline", 8), 0));
  }
  /* buffers never overlap: a value's buffer is its own (noalias lets
   * the loops vectorize without run-time checks) */
  unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
  for (int k = 0; k < n; k++)
    LLVMAddAttributeAtIndex(fn, (unsigned)k + 1,
                            LLVMCreateEnumAttribute(g->ctx, noalias, 0));
  g->fn = fn;
  g->vt = vt;
  g->base = g_new(LLVMValueRef, (gsize)n);
  for (int k = 0; k < n; k++)
    g->base[k] = LLVMGetParam(fn, (unsigned)k);
  LLVMPositionBuilderAtEnd(g->b,
                           LLVMAppendBasicBlockInContext(g->ctx, fn, "entry"));
  /* the accumulators, in the entry block (mem2reg makes them registers) */
  g->acc_f = LLVMBuildAlloca(g->b, g->f64, "acc");
  g->acc_s = LLVMBuildAlloca(g->b, g->f32, "sacc");
  g->acc_i = LLVMBuildAlloca(g->b, g->i64, "iacc");
  return fn;
}

void ir_finish(Gen *g) {
  LLVMBuildRetVoid(g->b);
  g_clear_pointer(&g->base, g_free);
  g->vt = NULL;
}

/* ------------------------------------------------------ function cache */

Fn *fn_known(GHashTable *made, char *key) {
  Fn *f = g_hash_table_lookup(made, key);
  if (f)
    g_free(key);
  return f;
}

Fn *fn_remember(GHashTable *made, char *key, LLVMValueRef fn, LLVMTypeRef ty) {
  Fn *f = g_new(Fn, 1);
  f->fn = fn;
  f->ty = ty;
  g_hash_table_insert(made, key, f);
  return f;
}

/* -------------------------------------------------------------- helpers */

void strides_of(const Type *ty, int64_t *strides) {
  tensor_strides(ty, strides);
}

int attr_ints(const Term *t, const char *key, int64_t *out) {
  const AttrValue *v = attrs_get(t->attrs, key);
  if (!v)
    return 0;
  for (int j = 0; j < v->count; j++)
    out[j] = v->items[j].i;
  return v->count;
}

gboolean any_empty(int n, const int64_t *sizes) {
  for (int j = 0; j < n; j++)
    if (sizes[j] == 0)
      return TRUE;
  return FALSE;
}
