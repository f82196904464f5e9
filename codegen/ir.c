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
  l->body = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "loop");
  l->n = n;
  LLVMBuildBr(g->b, l->body);
  LLVMPositionBuilderAtEnd(g->b, l->body);
  l->iv = LLVMBuildPhi(g->b, g->i64, "i");
  LLVMValueRef zero = c64(g, 0);
  LLVMAddIncoming(l->iv, &zero, &pre, 1);
  return l->iv;
}

void loop_close(Gen *g, Loop *l) {
  LLVMValueRef next = LLVMBuildNSWAdd(g->b, l->iv, c64(g, 1), "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b);
  LLVMAddIncoming(l->iv, &next, &latch, 1);
  LLVMValueRef more = LLVMBuildICmp(g->b, LLVMIntSLT, next, c64(g, l->n), "");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "done");
  LLVMBuildCondBr(g->b, more, l->body, done);
  LLVMPositionBuilderAtEnd(g->b, done);
}

void nest_open(Gen *g, Nest *n, int rank, const int64_t *sizes, int nsets,
               const int64_t *const *strides, const LLVMValueRef *base) {
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

void nest_close(Gen *g, Nest *n) {
  for (int d = n->rank - 1; d >= 0; d--)
    loop_close(g, &n->loops[d]);
}

/* ---------------------------------------------------------------- calls */

LLVMValueRef ir_call(Gen *g, const char *name, LLVMTypeRef ret,
                     LLVMTypeRef *params, LLVMValueRef *args, int n) {
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
  LLVMSetLinkage(fn, LLVMInternalLinkage);
  LLVMAddAttributeAtIndex(
      fn, LLVMAttributeFunctionIndex,
      LLVMCreateEnumAttribute(
          g->ctx, LLVMGetEnumAttributeKindForName("noinline", 8), 0));
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
