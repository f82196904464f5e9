/* nvptx.c — a plan's kernels for NVIDIA GPUs, as PTX, and the launch
 * plan that runs them.
 *
 * The plan (codegen.c), its fusion (fuse.c) and its arena (arena.c) are
 * the CPU's: the same values have buffers, the same operands are fused
 * into the same kernels.  Each kernel is the function kernel.c and
 * emit.c build for the CPU, made with 'Gen.gpu' set: an exported
 * function of the PTX kernel calling convention (and nvvm.annotations,
 * which LLVM 19 still reads) whose outer loop is spread over the grid
 * (par_loop_open: thread t takes elements t, t + threads, ...), a
 * reduction a block per result element with a tree in shared memory,
 * libm's functions libdevice's.  What the CPU entry does between kernels
 * the host does here, from the launch plan walked in the schedule's
 * order:
 *
 *   kernel      a launch: grid and block from the shape (nvptx_plan.c);
 *   gemm        matmul and dot_general: cublasGemmStridedBatchedEx
 *               calls (not PTX: cuBLAS is faster than anything generated
 *               here);
 *   collective  an NCCL call, its operand packed and its result
 *               unpacked by chunk kernels where its chunks are not
 *               contiguous (a gather along an inner dimension);
 *   loop / end  a tile or sum: its body's steps once per chunk, with
 *               the chunk kernels of emit.c (slice, put, accumulate).
 *
 * The module then gets libdevice (CUDA's nvvm/libdevice/libdevice.10.bc)
 * linked in when a kernel calls it, every function but the kernels made
 * internal, the O3 pipeline (NVVMReflect answers libdevice's
 * __nvvm_reflect: no flush to zero), and the NVPTX back end's assembly:
 * PTX for sm_80 or sm_90, which ptxas checks (tests/ptx.sh) and the CUDA
 * driver loads (cuda.c).
 *
 * The GPU computes fast arithmetic only: a reduction's tree and cuBLAS
 * sum in another order than the interpreter, so --exact is the CPU's.
 */
#include "codegen/gen.h"

#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>

typedef struct Build {
  Gen g;
  const Plan *p;
  const Mesh *mesh;
  GHashTable *made;
  GPtrArray *leaves;
  GpuProgram *gp;
  Diag *why;
  gboolean failed;
} Build;

static const Slot *slot_at(const Plan *p, int s) {
  return &g_array_index(p->slots, Slot, s);
}

static GpuStep *add_step(Build *b, GpuStepKind kind, const Term *t,
                         const char *name) {
  GpuStep st = {.kind = kind, .t = t, .name = name};
  g_array_append_val(b->gp->steps, st);
  return &g_array_index(b->gp->steps, GpuStep, b->gp->steps->len - 1);
}

/* A launch of 'f' over 'n' elements (a grid-stride kernel) on buffers
 * 'args' (slots; -1 the staging buffer). */
static GpuLaunch launch_of(const Fn *f, int64_t n, const int *args, int nargs,
                           GpuIndex index) {
  size_t len = 0;
  const char *name = LLVMGetValueName2(f->fn, &len);
  GpuLaunch l = {.kernel = g_strndup(name, len),
                 .grid = gpu_map_grid(n),
                 .block = GPU_BLOCK,
                 .args = g_memdup2(args, sizeof *args * (gsize)nargs),
                 .nargs = nargs,
                 .index = index};
  return l;
}

static void add_kernel(Build *b, const Term *t, const char *name, const Fn *f,
                       int64_t n, const int *args, int nargs, GpuIndex index,
                       int level) {
  GpuStep *st = add_step(b, GPU_KERNEL, t, name);
  st->launch = launch_of(f, n, args, nargs, index);
  st->launch.level = level;
}

static void build_statements(Build *b, const SchedRegion *r);

/* A tile or sum: a loop of the host around its body's steps. */
static void build_region(Build *b, const Term *t, const SchedRegion *body) {
  Gen *g = &b->g;
  const Plan *p = b->p;
  int s = plan_slot(p, t), v = plan_slot(p, t->args[0]);
  const Slot *slot = slot_at(p, s);
  const Type *acc = slot->acc >= 0 ? slot_at(p, slot->acc)->type : NULL;
  int64_t body_n = type_numel(t->args[0]->type);
  if (t->kind == TM_SUM) {
    Fn *zero = acc_function(g, ACC_ZERO, acc, NULL, b->made);
    add_kernel(b, t, slot->name, zero, type_numel(acc), &slot->acc, 1,
               GPU_INDEX_NONE, 0);
  }
  GpuStep *loop = add_step(b, GPU_LOOP, t, slot->name);
  loop->count = type_range_parts(t->range);
  loop->level = t->binder;
  build_statements(b, body);
  if (t->kind == TM_TILE) {
    Fn *put = chunk_function(g, TRUE, t->index, t->range->w, t->type,
                             t->args[0]->type, b->made);
    int args[2] = {s, v};
    add_kernel(b, t, slot->name, put, body_n, args, 2, GPU_INDEX_LOOP,
               t->binder);
  } else {
    Fn *add = acc_function(g, ACC_ADD, acc, t->args[0]->type, b->made);
    int args[2] = {slot->acc, v};
    add_kernel(b, t, slot->name, add, body_n, args, 2, GPU_INDEX_NONE, 0);
  }
  add_step(b, GPU_END, t, slot->name);
  if (t->kind == TM_SUM) {
    Fn *round = acc_function(g, ACC_ROUND, acc, t->type, b->made);
    int args[2] = {s, slot->acc};
    add_kernel(b, t, slot->name, round, type_numel(acc), args, 2,
               GPU_INDEX_NONE, 0);
  }
}

/* Whether the chunks of 'ty' along 'd' lie one after another (every
 * dimension before d has size 1): NCCL then reads or writes them in
 * place. */
static gboolean chunks_contiguous(const Type *ty, int d) {
  for (int j = 0; j < d; j++)
    if (ty->dims[j] != 1)
      return FALSE;
  return TRUE;
}

/* The kernel copying member j's chunk ('chunk', width w along d) out of
 * ('put' FALSE: into the staging buffer) or into 'whole'. */
static GpuLaunch *member_copy(Build *b, gboolean put, int d, const Type *whole,
                              const Type *chunk, int slot) {
  Fn *f = chunk_function(&b->g, put, d, chunk->dims[d], whole, chunk, b->made);
  int args[2] = {put ? slot : -1, put ? -1 : slot};
  GpuLaunch *l = g_new(GpuLaunch, 1);
  *l = launch_of(f, type_numel(chunk), args, 2, GPU_INDEX_MEMBER);
  return l;
}

/* The devices in the group of collective 't' on the mesh. */
static int group_members(const Build *b, const Term *t) {
  const AttrValue *axes = attrs_get(t->attrs, "axes");
  int members = 1;
  for (int j = 0; b->mesh && axes && j < axes->count; j++) {
    int a = mesh_axis_index(b->mesh, axes->items[j].sym);
    if (a >= 0)
      members *= (int)b->mesh->sizes[a];
  }
  return members;
}

static void build_collective(Build *b, const Term *t, const char *name, int s) {
  const Type *in = t->args[0]->type, *out = t->type;
  int x = plan_slot(b->p, t->args[0]);
  if (t->op == OP_SHARD) { /* no exchange: the device's own chunk */
    int d = (int)attrs_get_int(t->attrs, "dim");
    Fn *f = chunk_function(&b->g, FALSE, d, out->dims[d], in, out, b->made);
    int args[2] = {s, x};
    add_kernel(b, t, name, f, type_numel(out), args, 2, GPU_INDEX_POSITION, 0);
    return;
  }
  gboolean reduces = t->op == OP_ALL_REDUCE || t->op == OP_REDUCE_SCATTER;
  if (gpu_nccl_type(out->dtype, NULL) < 0 || (reduces && out->dtype == DT_I1)) {
    diag_reason(b->why, "%s: NCCL has no %s of %s", name, op_name(t->op),
                dtype_name(out->dtype));
    b->failed = TRUE;
    return;
  }
  GpuStep *st = add_step(b, GPU_COLLECTIVE, t, name);
  GpuCollective *c = &st->coll;
  *c = (GpuCollective){.in = x, .out = s, .members = group_members(b, t)};
  int64_t stage = 0;
  switch (t->op) {
  case OP_ALL_GATHER: {
    int d = (int)attrs_get_int(t->attrs, "dim");
    c->chunk = tensor_type_bytes(in);
    if (!chunks_contiguous(out, d)) {
      c->unpack = member_copy(b, TRUE, d, out, in, s);
      stage = c->chunk * c->members;
    }
    break;
  }
  case OP_REDUCE_SCATTER: {
    int d = (int)attrs_get_int(t->attrs, "dim");
    c->chunk = tensor_type_bytes(out);
    if (!chunks_contiguous(in, d)) {
      c->pack = member_copy(b, FALSE, d, in, out, x);
      stage = c->chunk * c->members;
    }
    break;
  }
  case OP_ALL_TO_ALL: {
    int sd = (int)attrs_get_int(t->attrs, "split_dim");
    int cd = (int)attrs_get_int(t->attrs, "concat_dim");
    const Type *chunk =
        type_with_dim(in, sd, in->dims[sd] / MAX(c->members, 1));
    c->chunk = tensor_type_bytes(chunk);
    if (!chunks_contiguous(in, sd))
      c->pack = member_copy(b, FALSE, sd, in, chunk, x);
    if (!chunks_contiguous(out, cd))
      c->unpack = member_copy(b, TRUE, cd, out, chunk, s);
    /* sent chunks first, received ones after them */
    if (c->pack || c->unpack)
      stage = 2 * c->chunk * c->members;
    break;
  }
  default: /* all_reduce */
    break;
  }
  b->gp->stage_bytes = MAX(b->gp->stage_bytes, stage);
}

static void build_statement(Build *b, const SchedStmt *st) {
  const Plan *p = b->p;
  const Term *t = st->t;
  int s = plan_slot(p, t);
  const Slot *slot = slot_at(p, s);
  if (b->failed || slot->value || slot->fused || type_numel(slot->type) == 0)
    return; /* evaluated when compiling, computed by its users, or empty */
  if (t->kind == TM_TILE || t->kind == TM_SUM) {
    build_region(b, t, st->child);
    return;
  }
  if (t->kind == TM_SLICE) { /* chunk r of its operand, r the loop's */
    Fn *f = chunk_function(&b->g, FALSE, t->index, t->type->dims[t->index],
                           t->args[0]->type, t->type, b->made);
    int args[2] = {s, plan_slot(p, t->args[0])};
    add_kernel(b, t, slot->name, f, type_numel(t->type), args, 2,
               GPU_INDEX_LOOP, t->args[1]->index);
    return;
  }
  if (op_is_collective(t->op)) {
    build_collective(b, t, slot->name, s);
    return;
  }
  if (t->op == OP_MATMUL || t->op == OP_DOT_GENERAL) {
    GpuStep *g = add_step(b, GPU_GEMM, t, slot->name);
    if (!gpu_gemm_of(t, plan_slot(p, t->args[0]), plan_slot(p, t->args[1]), s,
                     &g->gemm, b->why)) {
      diag_prefix(b->why, "%s: ", slot->name);
      b->failed = TRUE;
    }
    return;
  }
  Fn *f = kernel_function(&b->g, p, t, NULL, b->made, b->leaves);
  g_autofree int *args = g_new(int, (gsize)b->leaves->len + 1);
  args[0] = s;
  for (guint k = 0; k < b->leaves->len; k++)
    args[k + 1] = plan_slot(p, g_ptr_array_index(b->leaves, k));
  add_kernel(b, t, slot->name, f, type_numel(t->type), args,
             (int)b->leaves->len + 1, GPU_INDEX_NONE, 0);
  if (op_is_reduction(t->op)) { /* a block per row (kernel.c) */
    GpuLaunch *l =
        &g_array_index(b->gp->steps, GpuStep, b->gp->steps->len - 1).launch;
    int64_t rows = type_numel(t->type);
    l->grid = gpu_reduce_grid(rows);
    l->block = gpu_reduce_block(type_numel(t->args[0]->type) / rows);
  }
}

static void build_statements(Build *b, const SchedRegion *r) {
  for (guint i = 0; i < r->stmts->len; i++)
    build_statement(b, g_ptr_array_index(r->stmts, i));
}

/* ------------------------------------------------------------ libdevice */

/* Where libdevice is: $PARTIR_LIBDEVICE, else under $CUDA_HOME, the
 * toolkit configure found, /usr/local/cuda, or Debian's package. */
static char *libdevice_path(void) {
  const char *env = g_getenv("PARTIR_LIBDEVICE");
  if (env)
    return g_strdup(env);
  const char *homes[] = {g_getenv("CUDA_HOME"),
#ifdef PARTIR_CUDA_DIR
                         PARTIR_CUDA_DIR,
#endif
                         "/usr/local/cuda", "/usr/lib/nvidia-cuda-toolkit"};
  for (guint i = 0; i < G_N_ELEMENTS(homes); i++) {
    if (!homes[i])
      continue;
    char *path = g_build_filename(homes[i], "nvvm", "libdevice",
                                  "libdevice.10.bc", NULL);
    if (g_file_test(path, G_FILE_TEST_IS_REGULAR))
      return path;
    g_free(path);
    path = g_build_filename(homes[i], "libdevice", "libdevice.10.bc", NULL);
    if (g_file_test(path, G_FILE_TEST_IS_REGULAR))
      return path;
    g_free(path);
  }
  return NULL;
}

/* Whether 'mod' calls a libdevice function (__nv_*). */
static gboolean calls_libdevice(LLVMModuleRef mod) {
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f;
       f = LLVMGetNextFunction(f)) {
    size_t len = 0;
    const char *name = LLVMGetValueName2(f, &len);
    if (LLVMIsDeclaration(f) && g_str_has_prefix(name, "__nv_"))
      return TRUE;
  }
  return FALSE;
}

static gboolean link_libdevice(LLVMContextRef ctx, LLVMModuleRef mod,
                               Diag *why) {
  g_autofree char *path = libdevice_path();
  if (!path) {
    diag_reason(why, "libdevice (nvvm/libdevice/libdevice.10.bc of the CUDA "
                     "Toolkit) not found: set CUDA_HOME or PARTIR_LIBDEVICE");
    return FALSE;
  }
  LLVMMemoryBufferRef buf = NULL;
  char *msg = NULL;
  if (LLVMCreateMemoryBufferWithContentsOfFile(path, &buf, &msg)) {
    diag_reason(why, "%s: %s", path, msg);
    LLVMDisposeMessage(msg);
    return FALSE;
  }
  LLVMModuleRef lib = NULL;
  gboolean bad = LLVMParseBitcodeInContext2(ctx, buf, &lib);
  LLVMDisposeMemoryBuffer(buf);
  if (bad) {
    diag_reason(why, "%s: not LLVM bitcode that this LLVM reads", path);
    return FALSE;
  }
  /* its triple and layout are libdevice's own: take the module's */
  LLVMSetTarget(lib, LLVMGetTarget(mod));
  LLVMSetDataLayout(lib, LLVMGetDataLayoutStr(mod));
  if (LLVMLinkModules2(mod, lib)) { /* 'lib' is gone either way */
    diag_reason(why, "%s: LLVM could not link it", path);
    return FALSE;
  }
  return TRUE;
}

/* Only the kernels stay visible: libdevice's functions and the helpers
 * become internal, so O3 drops what no kernel calls. */
static void internalize(LLVMModuleRef mod) {
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f;
       f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f) &&
        LLVMGetFunctionCallConv(f) != LLVMPTXKernelCallConv)
      LLVMSetLinkage(f, LLVMInternalLinkage);
  for (LLVMValueRef v = LLVMGetFirstGlobal(mod); v; v = LLVMGetNextGlobal(v))
    if (!LLVMIsDeclaration(v))
      LLVMSetLinkage(v, LLVMInternalLinkage);
}

/* nvvm.annotations !{ptr @k, !"kernel", i32 1} for each kernel, and
 * libdevice's reflection: no flush to zero. */
static void annotate(LLVMContextRef ctx, LLVMModuleRef mod) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx);
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f;
       f = LLVMGetNextFunction(f)) {
    if (LLVMGetFunctionCallConv(f) != LLVMPTXKernelCallConv)
      continue;
    LLVMMetadataRef md[3] = {LLVMValueAsMetadata(f),
                             LLVMMDStringInContext2(ctx, "kernel", 6),
                             LLVMValueAsMetadata(LLVMConstInt(i32, 1, 0))};
    LLVMAddNamedMetadataOperand(
        mod, "nvvm.annotations",
        LLVMMetadataAsValue(ctx, LLVMMDNodeInContext2(ctx, md, 3)));
  }
  LLVMAddModuleFlag(mod, LLVMModuleFlagBehaviorOverride, "nvvm-reflect-ftz", 16,
                    LLVMValueAsMetadata(LLVMConstInt(i32, 0, 0)));
}

/* ---------------------------------------------------------- the program */

void nvptx_program_free(GpuProgram *gp) {
  if (!gp)
    return;
  for (guint i = 0; i < gp->steps->len; i++) {
    GpuStep *st = &g_array_index(gp->steps, GpuStep, i);
    GpuLaunch *ls[3] = {&st->launch, st->coll.pack, st->coll.unpack};
    for (int j = 0; j < 3; j++)
      if (ls[j]) {
        g_free(ls[j]->kernel);
        g_free(ls[j]->args);
      }
    g_free(st->coll.pack);
    g_free(st->coll.unpack);
  }
  g_array_unref(gp->steps);
  g_free(gp->arch);
  g_free(gp->ptx);
  g_free(gp);
}

/* The optimized module of 'b' as PTX (and LLVM IR text in *llvm): FALSE
 * with the reason. */
static gboolean compile_module(Build *b, LLVMContextRef ctx, char **llvm) {
  LLVMModuleRef mod = b->g.mod;
  LLVMTargetMachineRef tm = jit_nvptx_machine(b->gp->arch, b->why);
  if (!tm)
    return FALSE;
  LLVMSetTarget(mod, "nvptx64-nvidia-cuda");
  LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(mod, layout);
  LLVMDisposeTargetData(layout);
  annotate(ctx, mod);
  gboolean ok = !calls_libdevice(mod) || link_libdevice(ctx, mod, b->why);
  if (ok) {
    internalize(mod);
    ok = jit_optimize(mod, tm, b->why) && !diag_any(b->why);
  }
  LLVMMemoryBufferRef ptx =
      ok ? jit_emit(mod, tm, LLVMAssemblyFile, b->why) : NULL;
  if (ptx) {
    b->gp->ptx = g_strndup(LLVMGetBufferStart(ptx), LLVMGetBufferSize(ptx));
    LLVMDisposeMemoryBuffer(ptx);
    if (llvm) {
      char *s = LLVMPrintModuleToString(mod);
      *llvm = g_strdup(s);
      LLVMDisposeMessage(s);
    }
  }
  LLVMDisposeTargetMachine(tm);
  return ptx != NULL;
}

GpuProgram *nvptx_program_new(const Plan *p, const Mesh *mesh, const char *arch,
                              char **llvm, Diag *why) {
  arch = arch ? arch : "sm_80";
  if (strcmp(arch, "sm_80") != 0 && strcmp(arch, "sm_90") != 0) {
    diag_reason(
        why, "the NVPTX target compiles for " CODEGEN_NVPTX_ARCHS ", not '%s'",
        arch);
    return NULL;
  }
  if (p->opt.exact || p->opt.blas != CODEGEN_BLAS_NONE || p->opt.profile) {
    diag_reason(why, "the GPU computes fast arithmetic with cuBLAS's "
                     "products, unprofiled: --exact, --blas and --profile "
                     "are the CPU's");
    return NULL;
  }
  GpuProgram *gp = g_new0(GpuProgram, 1);
  gp->arch = g_strdup(arch);
  gp->steps = g_array_new(FALSE, TRUE, sizeof(GpuStep));
  gp->plan = p;
  LLVMContextRef ctx = LLVMContextCreate();
  jit_catch_diagnostics(ctx, why);
  Build b = {.p = p, .mesh = mesh, .gp = gp, .why = why};
  b.g.gpu = TRUE;
  gen_init(&b.g, ctx, LLVMModuleCreateWithNameInContext("partir", ctx));
  b.made = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  b.leaves = g_ptr_array_new();
  build_statements(&b, p->sched->top);
  gboolean ok = !b.failed && compile_module(&b, ctx, llvm);
  g_hash_table_unref(b.made);
  g_ptr_array_unref(b.leaves);
  LLVMDisposeBuilder(b.g.b);
  LLVMDisposeModule(b.g.mod);
  LLVMContextDispose(ctx);
  if (!ok) {
    nvptx_program_free(gp);
    return NULL;
  }
  return gp;
}
