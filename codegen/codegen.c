/* codegen.c — the plan of a function (a buffer per value), compiling it,
 * running it.
 *
 * The plan follows the printer's schedule (schedule_new): arguments,
 * then each value after its operands, a region's statements after it,
 * each with its printed name for messages.  Constants and iotas are evaluated
 * once, when compiling, by the interpreter's own kernel (they depend on
 * nothing), and passed in as buffers; every other value is computed by the
 * generated code into a buffer of its own (no reuse yet: memory is the sum of
 * the values').
 */
#include "codegen/internal.h"
#include "codegen/threads.h"

#include "spmd/spmd.h"

#include <stdatomic.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

struct Compiled {
  Plan *plan;
  JitCode *code;
  GpuProgram *gpu;  /* compiled for NVPTX: no 'code', run by cuda.c */
  Profile *profile; /* compiled with 'profile', else NULL */
  /* arenas not in use, kept for the next run (device threads run one
   * Compiled at once, each with an arena of its own; a kept one has its
   * pages mapped already) */
  GMutex lock;
  GPtrArray *arenas;
  /* results handed out, a reference kept: one whose caller has dropped
   * it (its count back to 1) is written again by a later run instead of
   * a new tensor (no allocation, no page faults, in a steady loop) */
  GPtrArray *results;
  /* buffers for the chunks of arguments codegen_run_spmd copies, a
   * reference kept: one whose run has ended (its count back to 1) takes
   * the next run's chunk (spmd_run drops its inputs when the run ends,
   * so these are as many as one run copies) */
  GPtrArray *inputs;
};

/* At most this many results, and input buffers, are kept per compiled
 * program. */
#define KEPT_RESULTS 16
#define KEPT_INPUTS 64

/* A tensor of 'type' for a result: a kept one nobody else holds, or a
 * new one. */
static Tensor *result_take(Compiled *c, const Type *type) {
  Tensor *t = NULL;
  g_mutex_lock(&c->lock);
  for (guint i = 0; i < c->results->len && !t; i++) {
    Tensor *k = g_ptr_array_index(c->results, i);
    if (k->type == type && g_atomic_int_get(&k->refcount) == 1)
      t = g_ptr_array_steal_index_fast(c->results, i);
  }
  g_mutex_unlock(&c->lock);
  return t ? t : tensor_new(type);
}

/* Keeps a reference to result 't' for result_take. */
static void result_keep(Compiled *c, Tensor *t) {
  g_mutex_lock(&c->lock);
  if (c->results->len >= KEPT_RESULTS)
    g_ptr_array_remove_index(c->results, 0);
  g_ptr_array_add(c->results, tensor_ref(t));
  g_mutex_unlock(&c->lock);
}

/* SpmdBuffer for codegen_run_spmd: a kept tensor of 'type' nobody else
 * holds, or a new one, kept. */
static Tensor *input_buffer(void *data, const Type *type) {
  Compiled *c = data;
  Tensor *t = NULL;
  g_mutex_lock(&c->lock);
  for (guint i = 0; i < c->inputs->len && !t; i++) {
    Tensor *k = g_ptr_array_index(c->inputs, i);
    if (k->type == type && g_atomic_int_get(&k->refcount) == 1)
      t = tensor_ref(k);
  }
  g_mutex_unlock(&c->lock);
  if (t)
    return t;
  t = tensor_new(type); /* outside the lock: the other devices' go on */
  g_mutex_lock(&c->lock);
  if (c->inputs->len >= KEPT_INPUTS)
    g_ptr_array_remove_index(c->inputs, 0);
  g_ptr_array_add(c->inputs, tensor_ref(t));
  g_mutex_unlock(&c->lock);
  return t;
}

/* An arena of the plan's size (64-byte aligned), from the kept ones when
 * there is one. */
static void *arena_take(Compiled *c) {
  g_mutex_lock(&c->lock);
  void *a = c->arenas->len
                ? g_ptr_array_steal_index_fast(c->arenas, c->arenas->len - 1)
                : NULL;
  g_mutex_unlock(&c->lock);
  if (!a && !(a = partir_buffer_new((size_t)MAX(c->plan->arena_bytes, 64))))
    g_error("partir: out of memory for a %" G_GINT64_FORMAT "-byte arena",
            c->plan->arena_bytes);
  return a;
}

static void arena_give(Compiled *c, void *a) {
  g_mutex_lock(&c->lock);
  g_ptr_array_add(c->arenas, a);
  g_mutex_unlock(&c->lock);
}

typedef struct PlanWalk {
  Plan *plan;
  const SchedRegion *region; /* the one being walked */
} PlanWalk;

static int add_slot(Plan *p, Slot s) {
  g_array_append_val(p->slots, s);
  return (int)p->slots->len - 1;
}

static void plan_value(PlanWalk *w, const char *name, const Term *t) {
  Slot s = {.t = t,
            .type = t->type,
            .name = g_intern_string(name),
            .arg = t->kind == TM_ARG ? t->index : -1,
            .acc = -1,
            .region = w->region};
  int at = add_slot(w->plan, s);
  g_hash_table_insert(w->plan->index, (gpointer)t, GINT_TO_POINTER(at + 1));
  /* scratch: a sum's accumulator (the result's shape, in double or
   * i64); a contraction's (dot.c) */
  const Type *acc = NULL;
  if (t->kind == TM_SUM)
    acc = type_with_dtype(t->type,
                          dtype_is_float(t->type->dtype) ? DT_F64 : DT_I64);
  if (t->kind == TM_OP && (t->op == OP_MATMUL || t->op == OP_DOT_GENERAL) &&
      w->plan->opt.target == CODEGEN_TARGET_HOST) /* cuBLAS needs none */
    acc = dot_scratch(t, w->plan->opt.exact);
  if (acc) {
    Slot a = {.type = acc, .name = s.name, .arg = -1, .acc = -1};
    int i = add_slot(w->plan, a);
    g_array_index(w->plan->slots, Slot, at).acc = i;
  }
}

static void plan_region(PlanWalk *w, const SchedRegion *r) {
  for (guint i = 0; i < r->stmts->len; i++) {
    const SchedStmt *st = g_ptr_array_index(r->stmts, i);
    w->region = r;
    plan_value(w, st->n.name, st->t);
    if (st->child)
      plan_region(w, st->child);
  }
}

Plan *plan_new(const Module *m, const Func *f, const CodegenOptions *o,
               Diag *why) {
  /* an SPMD program's collectives are checked as a device's (spmd_run
   * runs it on devices): with a device's Collectives in place */
  Collectives probe = {0}, *saved = kernel_comm;
  if (f->spmd)
    kernel_comm = &probe;
  gboolean ok = interp_check(f, why);
  kernel_comm = saved;
  if (!ok)
    return NULL; /* too large for memory, or not runnable */
  Plan *p = g_new0(Plan, 1);
  p->sched = schedule_new(m, f);
  p->slots = g_array_new(FALSE, TRUE, sizeof(Slot));
  p->index = g_hash_table_new(NULL, NULL);
  p->spmd = f->spmd != NULL;
  if (o)
    p->opt = *o;
  PlanWalk w = {.plan = p, .region = p->sched->top};
  for (int i = 0; i < f->nargs; i++)
    plan_value(&w, p->sched->args[i].name, term_arg(i, f->arg_types[i]));
  plan_region(&w, p->sched->top);
  p->nresults = f->nresults;
  p->results = g_new(int, (gsize)MAX(f->nresults, 1));
  for (int i = 0; i < f->nresults; i++)
    p->results[i] = plan_slot(p, f->body->args[i]);
  plan_fuse(p, f);
  plan_arena(p);
  return p;
}

void plan_free(Plan *p) {
  if (!p)
    return;
  for (guint s = 0; s < p->slots->len; s++) {
    Slot *slot = &g_array_index(p->slots, Slot, s);
    if (slot->value)
      tensor_unref(slot->value);
  }
  g_array_unref(p->slots);
  g_hash_table_unref(p->index);
  schedule_free(p->sched);
  g_free(p->results);
  g_free(p);
}

/* The entry function's name: one per compile (one JIT holds them all). */
static char *entry_name(void) {
  static atomic_uint next;
  return g_strdup_printf("partir_main_%u", atomic_fetch_add(&next, 1));
}

/* The plan's module, optimized for the host: NULL with the reason. */
static LLVMModuleRef optimized(LLVMContextRef ctx, const Plan *p,
                               const char *entry, LLVMTargetMachineRef tm,
                               Diag *why) {
  jit_catch_diagnostics(ctx, why);
  LLVMModuleRef mod = emit_module(ctx, p, entry);
  if (!jit_optimize(mod, tm, why) || diag_any(why)) {
    LLVMDisposeModule(mod);
    return NULL;
  }
  return mod;
}

/* A device's mesh, for the GPU's collectives; NULL on one device. */
static const Mesh *mesh_of(const Func *f) {
  return f->spmd ? &f->spmd->mesh : NULL;
}

Compiled *codegen_compile(const Module *m, const Func *f,
                          const CodegenOptions *o, Diag *why) {
  Plan *p = plan_new(m, f, o, why);
  if (!p)
    return NULL;
  Compiled *c = g_new0(Compiled, 1);
  c->plan = p;
  g_mutex_init(&c->lock);
  c->arenas = g_ptr_array_new_with_free_func(partir_buffer_free);
  c->results = g_ptr_array_new_with_free_func((GDestroyNotify)tensor_unref);
  c->inputs = g_ptr_array_new_with_free_func((GDestroyNotify)tensor_unref);
  if (p->opt.target == CODEGEN_TARGET_NVPTX) { /* run by cuda.c */
    c->gpu = nvptx_program_new(p, mesh_of(f), o->arch, NULL, why);
    if (c->gpu)
      return c;
    codegen_free(c);
    return NULL;
  }
  LLVMTargetMachineRef tm = jit_host_machine(why);
  if (!tm) {
    codegen_free(c);
    return NULL;
  }
  g_autofree char *entry = entry_name();
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = optimized(ctx, p, entry, tm, why);
  JitCode *code = mod ? jit_load(mod, tm, entry, why) : NULL;
  if (mod)
    LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  LLVMDisposeTargetMachine(tm);
  if (!code) {
    codegen_free(c);
    return NULL;
  }
  c->code = code;
  if (p->opt.profile)
    c->profile = profile_new((int)p->slots->len);
  return c;
}

const GpuProgram *codegen_gpu(const Compiled *c) { return c->gpu; }

void codegen_free(Compiled *c) {
  if (!c)
    return;
  if (c->code)
    jit_unload(c->code);
  nvptx_program_free(c->gpu);
  g_ptr_array_unref(c->arenas);
  g_ptr_array_unref(c->results);
  g_ptr_array_unref(c->inputs);
  g_mutex_clear(&c->lock);
  profile_free(c->profile);
  plan_free(c->plan);
  g_free(c);
}

/* Fast arithmetic flushes subnormal results and operands to zero while
 * the code runs (as XLA:CPU does): an x86 core computes with them a
 * hundred times slower, and a softmax's exps underflow into them (a
 * [B, H, S, S] contraction over such probabilities took 25 times as
 * long).  Exact arithmetic keeps them, as the interpreter does. */
static unsigned flush_subnormals(void) {
#if defined(__x86_64__) || defined(__i386__)
  unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8040); /* FTZ | DAZ */
  return saved;
#else
  return 0;
#endif
}

static void restore_subnormals(unsigned saved) {
#if defined(__x86_64__) || defined(__i386__)
  _mm_setcsr(saved);
#else
  (void)saved;
#endif
}

/* Device threads run one Compiled at once: its constants are read through
 * their data only (a tensor's reference count is not atomic), and a
 * result that is a constant is returned as a copy. */
GPtrArray *codegen_run(Compiled *c, Tensor *const *args) {
  /* a device's program: only on a device (its collectives need one) */
  g_return_val_if_fail(!c->plan->spmd || kernel_comm, NULL);
  g_return_val_if_fail(!c->gpu, NULL); /* codegen_cuda_run */
  GArray *slots = c->plan->slots;
  g_autofree void **bufs = g_new0(void *, MAX(slots->len, 1));
  g_autofree Tensor **held = g_new0(Tensor *, MAX(slots->len, 1));
  void *arena = arena_take(c);
  for (guint s = 0; s < slots->len; s++) {
    Slot *slot = &g_array_index(slots, Slot, s);
    if (slot->value) {
      bufs[s] = slot->value->data;
      continue;
    }
    if (slot->fused)
      continue; /* computed where it is read */
    if (slot->offset >= 0) {
      bufs[s] = (char *)arena + slot->offset;
      continue;
    }
    held[s] = slot->arg >= 0 ? tensor_ref(args[slot->arg])
                             : result_take(c, slot->type);
    g_assert(held[s]->type == slot->type);
    bufs[s] = held[s]->data;
  }
  profile_enter(c->profile);
  unsigned saved = c->plan->opt.exact ? 0 : flush_subnormals();
  jit_entry(c->code)(bufs);
  if (!c->plan->opt.exact)
    restore_subnormals(saved);
  profile_leave();
  GPtrArray *results =
      g_ptr_array_new_with_free_func((GDestroyNotify)tensor_unref);
  for (int i = 0; i < c->plan->nresults; i++) {
    int s = c->plan->results[i];
    const Slot *slot = &g_array_index(slots, Slot, s);
    Tensor *r = held[s] ? tensor_ref(held[s]) : tensor_new(slot->type);
    if (!held[s])
      memcpy(r->data, slot->value->data, tensor_type_bytes(slot->type));
    g_ptr_array_add(results, r);
  }
  for (guint s = 0; s < slots->len; s++) {
    if (!held[s])
      continue;
    if (g_array_index(slots, Slot, s).arg < 0) /* a computed result */
      result_keep(c, held[s]);
    tensor_unref(held[s]);
  }
  arena_give(c, arena);
  return results;
}

void codegen_profile_report(Compiled *c, GString *out) {
  if (c->profile)
    profile_report(c->profile, c->plan, out);
}

static GPtrArray *run_device(void *data, const Func *f, Tensor *const *inputs,
                             GError **error) {
  (void)f;
  (void)error; /* compiled code does not fail once it runs */
  return codegen_run(data, inputs);
}

GPtrArray *codegen_run_spmd(Compiled *c, const Func *f,
                            Tensor *const *global_inputs, int steps,
                            double *step_seconds, Diag *diag, GError **error) {
  g_assert(c->plan->spmd && f->spmd && !c->gpu);
  SpmdRuntime threads = {.run = run_device,
                         .run_data = c,
                         .buffer = input_buffer,
                         .connect = threads_connect,
                         .disconnect = threads_disconnect,
                         .steps = steps,
                         .step_seconds = step_seconds};
  return spmd_run(f, global_inputs, &threads, diag, error);
}

/* The optimized module of 'p' as text or an object: NULL + why. */
static char *module_text(const Plan *p, CodegenEmit what, gsize *len,
                         Diag *why) {
  LLVMTargetMachineRef tm = jit_host_machine(why);
  if (!tm)
    return NULL;
  char *text = NULL;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = optimized(ctx, p, "partir_main", tm, why);
  if (mod && what == EMIT_LLVM) {
    char *s = LLVMPrintModuleToString(mod);
    text = g_strdup(s);
    *len = strlen(text);
    LLVMDisposeMessage(s);
  } else if (mod) {
    LLVMMemoryBufferRef buf = jit_emit(
        mod, tm, what == EMIT_ASM ? LLVMAssemblyFile : LLVMObjectFile, why);
    if (buf) {
      *len = LLVMGetBufferSize(buf);
      text = g_malloc(*len + 1); /* an object holds NULs */
      memcpy(text, LLVMGetBufferStart(buf), *len);
      text[*len] = '\0';
      LLVMDisposeMemoryBuffer(buf);
    }
  }
  if (mod)
    LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  LLVMDisposeTargetMachine(tm);
  return text;
}

/* The GPU program of 'p' as 'what' shows it: the PTX (EMIT_ASM too),
 * the launch plan, or the optimized IR; NULL + why. */
static char *gpu_text(const Plan *p, const Func *f, CodegenEmit what,
                      Diag *why) {
  char *llvm = NULL;
  GpuProgram *gp = nvptx_program_new(p, mesh_of(f), p->opt.arch,
                                     what == EMIT_LLVM ? &llvm : NULL, why);
  if (!gp)
    return NULL;
  char *text = what == EMIT_LLVM       ? llvm
               : what == EMIT_GPU_PLAN ? gpu_plan_text(gp)
                                       : g_strdup(gp->ptx);
  nvptx_program_free(gp);
  return text;
}

char *codegen_text(const Module *m, const Func *f, const CodegenOptions *o,
                   CodegenEmit what, gsize *len, Diag *why) {
  gboolean gpu = o && o->target == CODEGEN_TARGET_NVPTX;
  if (!gpu && (what == EMIT_PTX || what == EMIT_GPU_PLAN)) {
    diag_reason(why, "ptx and gpu-plan are the NVPTX target's "
                     "(--target nvptx)");
    return NULL;
  }
  if (gpu && what == EMIT_OBJ) {
    diag_reason(why, "the NVPTX target emits ptx, gpu-plan, llvm or fusion");
    return NULL;
  }
  Plan *p = plan_new(m, f, o, why);
  if (!p)
    return NULL;
  char *text;
  if (what == EMIT_FUSION) {
    text = plan_fusion_text(p);
  } else if (gpu) {
    text = gpu_text(p, f, what, why);
  } else {
    text = module_text(p, what, len, why);
    plan_free(p);
    return text;
  }
  if (text)
    *len = strlen(text);
  plan_free(p);
  return text;
}
