/* emit.c — a plan's LLVM IR: the entry, its loops, its calls.
 *
 * The entry 'void ENTRY(ptr bufs)' (bufs[i]: the buffer of slot i) walks
 * the printer's schedule: for each value with a buffer it calls the
 * function of its kind (kernel.c: the value's loop nest with its fused
 * operands inside), and a tile or sum is a loop over its range's chunks
 * around its body's statements, each iteration's value put into its
 * chunk (a tile) or added to a double or i64 accumulator rounded once
 * at the end (a sum), as the interpreter's eval_region does.
 *
 * Loops count from 0 to n - 1 with n >= 1: a value with no elements has
 * nothing to compute and emits nothing.
 */
#include "codegen/gen.h"

Fn *chunk_function(Gen *g, gboolean put, int d, int64_t w, const Type *whole,
                   const Type *chunk, GHashTable *made) {
  char *key =
      g_strdup_printf("%s %d %" G_GINT64_FORMAT " %p %p", put ? "put" : "slice",
                      d, w, (const void *)whole, (const void *)chunk);
  Fn *known = fn_known(made, key);
  if (known)
    return known;
  /* buffer 0 is the one written */
  const Type *vt[2] = {put ? whole : chunk, put ? chunk : whole};
  int at_whole = put ? 0 : 1, at_chunk = 1 - at_whole;
  g_autofree char *name =
      g_strdup_printf("%s_%u", put ? "tile" : "slice", g_hash_table_size(made));
  LLVMTypeRef ty;
  LLVMValueRef fn = ir_function(g, name, 2, TRUE, vt, &ty);
  int64_t strides[2][PARTIR_MAX_RANK];
  strides_of(whole, strides[at_whole]);
  strides_of(chunk, strides[at_chunk]);
  const int64_t *sets[2] = {strides[0], strides[1]};
  LLVMValueRef bases[2];
  bases[at_chunk] = c64(g, 0);
  bases[at_whole] = LLVMBuildNSWMul(g->b, LLVMGetParam(fn, 2),
                                    c64(g, w * strides[at_whole][d]), "");
  Nest nest;
  par_nest_open(g, &nest, chunk->rank, chunk->dims, 2, sets, bases);
  store_raw(g, 0, nest.off[0], load_raw(g, 1, nest.off[1]));
  nest_close(g, &nest);
  ir_finish(g);
  return fn_remember(made, key, fn, ty);
}

Fn *acc_function(Gen *g, AccStep step, const Type *acc, const Type *other,
                 GHashTable *made) {
  static const char *const names[] = {"acc_zero", "acc_add", "acc_round"};
  char *key = g_strdup_printf("%s %p %p", names[step], (const void *)acc,
                              (const void *)other);
  Fn *known = fn_known(made, key);
  if (known)
    return known;
  /* buffers: 0 the accumulator (ACC_ROUND: the result), 1 the other */
  const Type *vt[2] = {step == ACC_ROUND ? other : acc,
                       step == ACC_ROUND ? acc : other};
  g_autofree char *name =
      g_strdup_printf("%s_%u", names[step], g_hash_table_size(made));
  LLVMTypeRef ty;
  LLVMValueRef fn =
      ir_function(g, name, step == ACC_ZERO ? 1 : 2, FALSE, vt, &ty);
  gboolean is_float = dtype_is_float(acc->dtype);
  Loop l;
  LLVMValueRef i = par_loop_open(g, type_numel(acc), &l);
  switch (step) {
  case ACC_ZERO:
    store_elem(g, 0, i, is_float ? cf64(g, 0) : c64(g, 0));
    break;
  case ACC_ADD: {
    LLVMValueRef a = load_elem(g, 0, i), v = load_elem(g, 1, i);
    if (LLVMTypeOf(v) != LLVMTypeOf(a)) /* fast: a float into a double */
      v = LLVMBuildFPExt(g->b, v, LLVMTypeOf(a), "");
    store_elem(g, 0, i,
               is_float ? LLVMBuildFAdd(g->b, a, v, "")
                        : LLVMBuildAdd(g->b, a, v, ""));
    break;
  }
  case ACC_ROUND:
    store_elem(g, 0, i, load_elem(g, 1, i));
    break;
  }
  loop_close(g, &l);
  ir_finish(g);
  return fn_remember(made, key, fn, ty);
}

/* ------------------------------------------------------------ the entry */

typedef struct Entry {
  Gen *g;
  const Plan *p;
  GHashTable *made;
  GPtrArray *leaves; /* a kernel's, while calling it */
  LLVMValueRef fn, bufs;
  LLVMValueRef ivs[PARTIR_MAX_REGIONS + 1]; /* per level: the iteration */
} Entry;

/* The buffer of slot 's', read from 'bufs' in the entry function. */
static LLVMValueRef buffer(Entry *e, int s) {
  LLVMValueRef i = c64(e->g, s);
  LLVMValueRef at = LLVMBuildGEP2(e->g->b, e->g->ptr, e->bufs, &i, 1, "");
  return LLVMBuildLoad2(e->g->b, e->g->ptr, at, "buf");
}

/* Calls 'f' from the entry, where the builder is left. */
static void call(Entry *e, Fn *f, LLVMValueRef *args, int n) {
  LLVMBuildCall2(e->g->b, f->ty, f->fn, args, (unsigned)n, "");
}

/* Functions are made on the way (each in its own blocks): the entry's
 * place is kept and the builder put back there after each. */
static void back_to_entry(Entry *e, LLVMBasicBlockRef at) {
  e->g->fn = e->fn;
  LLVMPositionBuilderAtEnd(e->g->b, at);
}

static void emit_statements(Entry *e, const SchedRegion *r);

/* Profiling: the runtime's clock started before a kernel, stopped after
 * it with the value's slot. */
static void profile_clock(Entry *e, gboolean stop, int slot) {
  if (!e->p->opt.profile)
    return;
  Gen *g = e->g;
  LLVMTypeRef i64 = g->i64;
  LLVMValueRef arg = c64(g, slot);
  if (stop)
    ir_call_address(g, (const void *)codegen_rt_clock_stop, g->vd, &i64, &arg,
                    1);
  else
    ir_call_address(g, (const void *)codegen_rt_clock_start, g->vd, NULL, NULL,
                    0);
}

/* A tile or sum: a loop over its range's chunks in the entry. */
static void emit_region(Entry *e, const Term *t, const SchedRegion *body) {
  Gen *g = e->g;
  int s = plan_slot(e->p, t), b = plan_slot(e->p, t->args[0]);
  const Slot *slot = &g_array_index(e->p->slots, Slot, s);
  LLVMBasicBlockRef at = LLVMGetInsertBlock(g->b);
  Fn *put = NULL, *zero = NULL, *round = NULL;
  const Type *acc =
      slot->acc >= 0 ? g_array_index(e->p->slots, Slot, slot->acc).type : NULL;
  if (t->kind == TM_TILE) {
    put = chunk_function(g, TRUE, t->index, t->range->w, t->type,
                         t->args[0]->type, e->made);
  } else {
    zero = acc_function(g, ACC_ZERO, acc, NULL, e->made);
    put = acc_function(g, ACC_ADD, acc, t->args[0]->type, e->made);
    round = acc_function(g, ACC_ROUND, acc, t->type, e->made);
  }
  back_to_entry(e, at);
  LLVMValueRef accbuf = acc ? buffer(e, slot->acc) : NULL;
  if (zero)
    call(e, zero, &accbuf, 1);
  Loop l;
  e->ivs[t->binder] = loop_open(g, type_range_parts(t->range), &l);
  emit_statements(e, body);
  if (t->kind == TM_TILE) {
    LLVMValueRef args[3] = {buffer(e, s), buffer(e, b), e->ivs[t->binder]};
    call(e, put, args, 3);
  } else {
    LLVMValueRef args[2] = {accbuf, buffer(e, b)};
    call(e, put, args, 2);
  }
  loop_close(g, &l);
  if (round) {
    LLVMValueRef args[2] = {buffer(e, s), accbuf};
    call(e, round, args, 2);
  }
}

static void emit_statement(Entry *e, const SchedStmt *st) {
  Gen *g = e->g;
  const Term *t = st->t;
  int s = plan_slot(e->p, t);
  const Slot *slot = &g_array_index(e->p->slots, Slot, s);
  if (slot->value || slot->fused || type_numel(slot->type) == 0)
    return; /* evaluated when compiling, computed by its users, or empty */
  LLVMBasicBlockRef at = LLVMGetInsertBlock(g->b);
  if (t->kind == TM_TILE || t->kind == TM_SUM) {
    emit_region(e, t, st->child);
  } else if (t->kind == TM_SLICE) {
    /* the loop's index is the part: chunks of the slice's own width */
    Fn *f = chunk_function(g, FALSE, t->index, t->type->dims[t->index],
                           t->args[0]->type, t->type, e->made);
    back_to_entry(e, at);
    LLVMValueRef args[3] = {buffer(e, s),
                            buffer(e, plan_slot(e->p, t->args[0])),
                            e->ivs[t->args[1]->index]};
    call(e, f, args, 3);
  } else {
    const Type *scratch = slot->acc >= 0
                              ? g_array_index(e->p->slots, Slot, slot->acc).type
                              : NULL;
    Fn *f = kernel_function(g, e->p, t, scratch, e->made, e->leaves);
    back_to_entry(e, at);
    g_autofree LLVMValueRef *args =
        g_new(LLVMValueRef, (gsize)e->leaves->len + 2);
    int n = 0;
    args[n++] = buffer(e, s);
    for (guint k = 0; k < e->leaves->len; k++)
      args[n++] = buffer(e, plan_slot(e->p, g_ptr_array_index(e->leaves, k)));
    if (scratch)
      args[n++] = buffer(e, slot->acc);
    profile_clock(e, FALSE, s);
    call(e, f, args, n);
    profile_clock(e, TRUE, s);
  }
}

static void emit_statements(Entry *e, const SchedRegion *r) {
  for (guint i = 0; i < r->stmts->len; i++)
    emit_statement(e, g_ptr_array_index(r->stmts, i));
}

void gen_init(Gen *g, LLVMContextRef ctx, LLVMModuleRef mod) {
  g->ctx = ctx;
  g->mod = mod;
  g->b = LLVMCreateBuilderInContext(ctx);
  g->i1 = LLVMInt1TypeInContext(ctx);
  g->i8 = LLVMInt8TypeInContext(ctx);
  g->i16 = LLVMInt16TypeInContext(ctx);
  g->i32 = LLVMInt32TypeInContext(ctx);
  g->i64 = LLVMInt64TypeInContext(ctx);
  g->f32 = LLVMFloatTypeInContext(ctx);
  g->f64 = LLVMDoubleTypeInContext(ctx);
  g->ptr = LLVMPointerTypeInContext(ctx, 0);
  g->vd = LLVMVoidTypeInContext(ctx);
}

LLVMModuleRef emit_module(LLVMContextRef ctx, const Plan *p,
                          const char *entry) {
  Gen g = {.exact = p->opt.exact, .blas = p->opt.blas};
  gen_init(&g, ctx, LLVMModuleCreateWithNameInContext("partir", ctx));
  Entry e = {.g = &g, .p = p};
  e.made = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  e.leaves = g_ptr_array_new();
  LLVMTypeRef ety = LLVMFunctionType(g.vd, &g.ptr, 1, 0);
  e.fn = LLVMAddFunction(g.mod, entry, ety);
  e.bufs = LLVMGetParam(e.fn, 0);
  g.fn = e.fn;
  LLVMPositionBuilderAtEnd(g.b,
                           LLVMAppendBasicBlockInContext(ctx, e.fn, "entry"));
  emit_statements(&e, p->sched->top);
  LLVMBuildRetVoid(g.b);
  g_hash_table_unref(e.made);
  g_ptr_array_unref(e.leaves);
  LLVMDisposeBuilder(g.b);
  return g.mod;
}
