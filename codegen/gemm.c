/* gemm.c — a BLIS-style matrix multiply generated in LLVM IR.
 *
 * C (M x N) = A (M x K) . B (K x N), any strides, for f32, f64 and bf16,
 * as four internal functions of the module:
 *
 *   gemm      the cache blocking: NC columns of B, KC of the contracted
 *             dimension, MC rows of A, around the macro-kernel;
 *   pack_b    a KC x NC block of B into panels of NR columns, each panel
 *             k-major (NR contiguous elements per k), zero-padded to NR;
 *   pack_a    an MC x KC block of A into panels of MR rows, each k-major
 *             (MR contiguous elements per k), zero-padded to MR;
 *   ukernel   one MR x NR block of C held in MR x NV vector registers
 *             (NR = NV vectors of VW elements), llvm.fmuladd over k of
 *             a broadcast element of A and NV vectors of B; written to C
 *             directly when the block is whole, else through an MR x NR
 *             tile of the workspace.  Two shorter ones, of a third and
 *             two thirds of MR rows, run the last rows of C when fewer
 *             are left (M = 256 is 21 blocks of 12 and 4 rows: a whole
 *             block there cost 3 % of the product in padding).
 *
 * The packing handles the strides (row-major, transposed, batch slices
 * are all the same to the kernel), widens bf16 to f32 and pads the
 * edges, so a micro-kernel always runs all of its register block.
 *
 * The register block and the cache blocks come from the host's vector
 * registers, found at run time (LLVMGetHostCPUFeatures; the environment
 * may ask for narrower ones, see vector_bits): 32 registers of
 * 512 bits with AVX-512 (MR 12, NV 2: 24 accumulators, 2 vectors of B,
 * one broadcast), else 16 of 256 (AVX) or 128 bits (MR 6, NV 2).  KC
 * x NR of B is streamed from L1 and L2 by each MR x NR block, MC x KC of
 * A stays in L2, KC x NC of B in L3 (gemm_shape).  The C block is
 * prefetched while the k loop runs.
 *
 * f32 and f64 accumulate into C itself across the KC blocks (the first
 * block stores, the others add).  bf16 must be rounded once, so its loops
 * run NC, MC, then KC innermost, into an MC x NC f32 tile of the
 * workspace, rounded into C (to nearest even, NaN quiet, as
 * tensor_bf16_from_f32) once its sum is complete; B is packed again for
 * each MC block, which bf16 pays for its single rounding.
 *
 * Workspace (gemm_workspace_bytes, each part 64-byte aligned): packed B
 * (KC x NC), packed A (MC x KC), the edge tile (MR x NR), and for bf16
 * the f32 tile (MC x NC).  Elements are of the compute type: f32 for
 * f32 and bf16, f64 for f64.
 */
#include "codegen/gemm.h"

#include <stdlib.h>

/* The blocking of a gemm on this host. */
typedef struct Shape {
  int vw;         /* elements per vector register */
  int mr, nv, nr; /* register block: MR rows x NR = NV * VW columns */
  int kc, mc, nc; /* cache blocks (MC a multiple of MR, NC of NR) */
  int bits;       /* the vector registers' width */
} Shape;

/* The vector width the kernel is made for: the host's, or a narrower one
 * that $PARTIR_GEMM_VECTOR_BITS (128, 256) asks for, so that one machine
 * can test the kernels of others. */
static int vector_bits(void) {
  int host = jit_host_vector_bits();
  const char *want = g_getenv("PARTIR_GEMM_VECTOR_BITS");
  int bits = want ? atoi(want) : host;
  return (bits == 128 || bits == 256 || bits == 512) && bits <= host ? bits
                                                                     : host;
}

static int compute_bytes(DType dt) { return dt == DT_F64 ? 8 : 4; }

static Shape gemm_shape(DType dt) {
  Shape s;
  s.bits = vector_bits();
  s.vw = s.bits / 8 / compute_bytes(dt);
  s.nv = 2;
  s.mr = s.bits == 512 ? 12 : 6;
  s.nr = s.nv * s.vw;
  /* KC x NR of B: 64 KB (at most 512 deep), streamed past L1 with the
   * C block's update amortized over 512 steps; MC x KC of A: 12 panels,
   * 144 KB to 288 KB of L2; KC x NC of B: 2 to 4 MB (measured on a
   * Sapphire Rapids core: KC 256 gave 0.85 of OpenBLAS at n = 2048, 512
   * gives 0.92; MC and NC within a few per cent over 96..480, 1024..4096) */
  s.kc = MIN(512, 65536 / (s.nr * compute_bytes(dt)));
  s.mc = s.mr * 12;
  s.nc = s.nr * (dt == DT_BF16 ? 32 : 64);
  return s;
}

void codegen_gemm_block(DType dt, int *mr, int *nr) {
  Shape s = gemm_shape(dt);
  *mr = s.mr;
  *nr = s.nr;
}

static int64_t align64(int64_t n) { return (n + 63) / 64 * 64; }

/* Byte offsets of the workspace's parts. */
typedef struct Layout {
  int64_t bpack, apack, edge, tile, total;
} Layout;

static Layout gemm_layout(DType dt, const Shape *s) {
  int64_t e = compute_bytes(dt);
  Layout l;
  l.bpack = 0;
  l.apack = l.bpack + align64((int64_t)s->kc * s->nc * e);
  l.edge = l.apack + align64((int64_t)s->mc * s->kc * e);
  l.tile = l.edge + align64((int64_t)s->mr * s->nr * e);
  l.total = l.tile + (dt == DT_BF16 ? align64((int64_t)s->mc * s->nc * 4) : 0);
  return l;
}

int64_t gemm_workspace_bytes(DType dt) {
  Shape s = gemm_shape(dt);
  return gemm_layout(dt, &s).total;
}

/* ---------------------------------------------------------- IR helpers */

typedef struct Gen {
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMValueRef fn; /* the function being built */
  DType dt;
  Shape s;
  LLVMTypeRef i1, i16, i32, i64, ptr, voidt;
  LLVMTypeRef elem;  /* the compute type: float or double */
  LLVMTypeRef store; /* an element of A, B, C: float, double, i16 */
  LLVMTypeRef vec;   /* <VW x elem> */
  LLVMTypeRef fma_ty;
  LLVMValueRef fma; /* llvm.fmuladd on 'vec' */
  char prefix[32];  /* the functions' names: partir_gemm_DT */
} Gen;

static LLVMValueRef k64(Gen *g, int64_t v) {
  return LLVMConstInt(g->i64, (unsigned long long)v, 1);
}

static LLVMValueRef add(Gen *g, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildAdd(g->b, a, b, "");
}

static LLVMValueRef mul(Gen *g, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildMul(g->b, a, b, "");
}

static LLVMValueRef min64(Gen *g, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef lt = LLVMBuildICmp(g->b, LLVMIntSLT, a, b, "");
  return LLVMBuildSelect(g->b, lt, a, b, "");
}

/* Element 'idx' of 'base', an array of 'ty'. */
static LLVMValueRef at(Gen *g, LLVMTypeRef ty, LLVMValueRef base,
                       LLVMValueRef idx) {
  return LLVMBuildGEP2(g->b, ty, base, &idx, 1, "");
}

static LLVMValueRef load(Gen *g, LLVMTypeRef ty, LLVMValueRef p,
                         unsigned align) {
  LLVMValueRef v = LLVMBuildLoad2(g->b, ty, p, "");
  LLVMSetAlignment(v, align);
  return v;
}

static void store(Gen *g, LLVMValueRef v, LLVMValueRef p, unsigned align) {
  LLVMSetAlignment(LLVMBuildStore(g->b, v, p), align);
}

static LLVMBasicBlockRef block(Gen *g, const char *name) {
  return LLVMAppendBasicBlockInContext(g->ctx, g->fn, name);
}

static void enter(Gen *g, LLVMBasicBlockRef bb) {
  LLVMPositionBuilderAtEnd(g->b, bb);
}

/* A counted loop 'for (i = lo; i < hi; i += step)'; loop_open leaves the
 * builder in its body, loop_close after it. */
typedef struct Loop {
  LLVMValueRef i, step;
  LLVMBasicBlockRef head, exit;
} Loop;

static Loop loop_open(Gen *g, LLVMValueRef lo, LLVMValueRef hi,
                      LLVMValueRef step) {
  Loop l = {.step = step};
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b);
  l.head = block(g, "loop");
  LLVMBasicBlockRef body = block(g, "body");
  l.exit = block(g, "done");
  LLVMBuildBr(g->b, l.head);
  enter(g, l.head);
  l.i = LLVMBuildPhi(g->b, g->i64, "i");
  LLVMAddIncoming(l.i, &lo, &pre, 1);
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, l.i, hi, ""), body,
                  l.exit);
  enter(g, body);
  return l;
}

static void loop_close(Gen *g, Loop *l) {
  LLVMValueRef next = add(g, l->i, l->step);
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b);
  LLVMBuildBr(g->b, l->head);
  LLVMAddIncoming(l->i, &next, &latch, 1);
  enter(g, l->exit);
}

/* 'if (cond) { then } else { other }': if_open leaves the builder in
 * 'then'; if_else moves it to 'other'; if_close after both. */
typedef struct If {
  LLVMBasicBlockRef other, join;
} If;

static If if_open(Gen *g, LLVMValueRef cond) {
  If c = {.other = NULL};
  LLVMBasicBlockRef then = block(g, "then");
  c.other = block(g, "else");
  c.join = block(g, "join");
  LLVMBuildCondBr(g->b, cond, then, c.other);
  enter(g, then);
  return c;
}

static void if_else(Gen *g, If *c) {
  LLVMBuildBr(g->b, c->join);
  enter(g, c->other);
}

static void if_close(Gen *g, If *c) {
  LLVMBuildBr(g->b, c->join);
  enter(g, c->join);
}

static unsigned store_align(Gen *g) {
  return g->dt == DT_F64 ? 8 : g->dt == DT_BF16 ? 2 : 4;
}

static unsigned elem_align(Gen *g) { return g->dt == DT_F64 ? 8 : 4; }

/* 'x' in each of 'n' lanes. */
static LLVMValueRef splat(Gen *g, unsigned n, LLVMValueRef x) {
  LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(x), n);
  LLVMValueRef one = LLVMBuildInsertElement(g->b, LLVMGetPoison(vt), x,
                                            LLVMConstInt(g->i32, 0, 0), "");
  LLVMValueRef zeros = LLVMConstNull(LLVMVectorType(g->i32, n));
  return LLVMBuildShuffleVector(g->b, one, LLVMGetPoison(vt), zeros, "");
}

/* bf16 bits (i16, or a vector of them) widened to f32. */
static LLVMValueRef bf16_widen(Gen *g, LLVMValueRef h, LLVMTypeRef i32ty,
                               LLVMTypeRef fty) {
  LLVMValueRef w = LLVMBuildZExt(g->b, h, i32ty, "");
  LLVMValueRef sixteen = LLVMConstInt(g->i32, 16, 0);
  if (LLVMGetTypeKind(i32ty) == LLVMVectorTypeKind)
    sixteen = splat(g, LLVMGetVectorSize(i32ty), sixteen);
  return LLVMBuildBitCast(g->b, LLVMBuildShl(g->b, w, sixteen, ""), fty, "");
}

/* Element 'idx' of 'base' (A or B: the stored type) as the compute type. */
static LLVMValueRef load_elem(Gen *g, LLVMValueRef base, LLVMValueRef idx) {
  LLVMValueRef v =
      load(g, g->store, at(g, g->store, base, idx), store_align(g));
  return g->dt == DT_BF16 ? bf16_widen(g, v, g->i32, g->elem) : v;
}

/* VW consecutive elements from 'idx' of 'base', as a compute vector. */
static LLVMValueRef load_elems(Gen *g, LLVMValueRef base, LLVMValueRef idx) {
  LLVMTypeRef ty = LLVMVectorType(g->store, (unsigned)g->s.vw);
  LLVMValueRef v = load(g, ty, at(g, g->store, base, idx), store_align(g));
  if (g->dt != DT_BF16)
    return v;
  return bf16_widen(g, v, LLVMVectorType(g->i32, (unsigned)g->s.vw), g->vec);
}

/* f32 'v' rounded to bf16 bits: to nearest even, NaN kept quiet. */
static LLVMValueRef bf16_round(Gen *g, LLVMValueRef v) {
  LLVMValueRef bits = LLVMBuildBitCast(g->b, v, g->i32, "");
  LLVMValueRef hi = LLVMBuildLShr(g->b, bits, LLVMConstInt(g->i32, 16, 0), "");
  LLVMValueRef odd = LLVMBuildAnd(g->b, hi, LLVMConstInt(g->i32, 1, 0), "");
  LLVMValueRef bias = add(g, odd, LLVMConstInt(g->i32, 0x7fff, 0));
  LLVMValueRef rounded =
      LLVMBuildLShr(g->b, add(g, bits, bias), LLVMConstInt(g->i32, 16, 0), "");
  LLVMValueRef quiet = LLVMBuildOr(g->b, hi, LLVMConstInt(g->i32, 0x40, 0), "");
  LLVMValueRef nan = LLVMBuildFCmp(g->b, LLVMRealUNO, v, v, "");
  LLVMValueRef r = LLVMBuildSelect(g->b, nan, quiet, rounded, "");
  return LLVMBuildTrunc(g->b, r, g->i16, "");
}

/* Stores compute value 'v' as element 'idx' of C. */
static void store_elem(Gen *g, LLVMValueRef v, LLVMValueRef base,
                       LLVMValueRef idx) {
  if (g->dt == DT_BF16)
    v = bf16_round(g, v);
  store(g, v, at(g, g->store, base, idx), store_align(g));
}

static LLVMValueRef zero_elem(Gen *g) { return LLVMConstReal(g->elem, 0.0); }

/* A new internal function 'prefix_suffix' of type 'ty', the builder at
 * its entry. */
static LLVMValueRef begin_function(Gen *g, const char *suffix, LLVMTypeRef ty) {
  char name[64];
  g_snprintf(name, sizeof name, "%s%s", g->prefix, suffix);
  g->fn = LLVMAddFunction(g->mod, name, ty);
  LLVMSetLinkage(g->fn, LLVMInternalLinkage);
  /* on a cache line: where the loops fall against 64-byte lines (and the
   * core's fetch blocks) then does not change with where the JIT puts
   * the code, nor the kernel's speed from one compile to the next */
  LLVMSetAlignment(g->fn, 64);
  LLVMAddAttributeAtIndex(
      g->fn, LLVMAttributeFunctionIndex,
      LLVMCreateEnumAttribute(
          g->ctx, LLVMGetEnumAttributeKindForName("nounwind", 8), 0));
  if (g->s.bits == 512) {
    /* 512-bit registers: without these the x86 back end splits the
     * vectors in two on CPUs that prefer 256 bits */
    LLVMAddAttributeAtIndex(
        g->fn, LLVMAttributeFunctionIndex,
        LLVMCreateStringAttribute(g->ctx, "prefer-vector-width", 19, "512", 3));
    LLVMAddAttributeAtIndex(g->fn, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(g->ctx,
                                                      "min-legal-vector-width",
                                                      22, "512", 3));
  }
  enter(g, block(g, "entry"));
  return g->fn;
}

static LLVMValueRef param(Gen *g, unsigned i) { return LLVMGetParam(g->fn, i); }

/* ------------------------------------------------------------- packing */

/* 'void pack_b(i64 kc, i64 nc, ptr B, i64 rsb, i64 csb, ptr dst)':
 * panel p (columns p*NR ..) at dst + p*NR*kc, element (k, j) of a panel
 * at k*NR + j; columns past nc are zeros.
 *
 * When B's rows are contiguous the whole panels are filled a row of B at
 * a time: B is read in order, which the hardware prefetcher follows.
 * Panel by panel, each read would be NR elements of a row thousands of
 * bytes from the last, a cache miss each (at n = 2048 that packing ran
 * at half the memory bandwidth and cost a tenth of a 256-row product). */
static LLVMValueRef emit_pack_b(Gen *g) {
  LLVMTypeRef ps[] = {g->i64, g->i64, g->ptr, g->i64, g->i64, g->ptr};
  begin_function(g, "_pack_b", LLVMFunctionType(g->voidt, ps, 6, 0));
  LLVMValueRef kc = param(g, 0), nc = param(g, 1), src = param(g, 2);
  LLVMValueRef rsb = param(g, 3), csb = param(g, 4), dst = param(g, 5);
  int nr = g->s.nr;
  /* the columns of the whole panels */
  LLVMValueRef nfull =
      LLVMBuildSub(g->b, nc, LLVMBuildSRem(g->b, nc, k64(g, nr), ""), "");
  If contiguous =
      if_open(g, LLVMBuildICmp(g->b, LLVMIntEQ, csb, k64(g, 1), ""));
  {
    Loop k = loop_open(g, k64(g, 0), kc, k64(g, 1));
    LLVMValueRef row = at(g, g->store, src, mul(g, k.i, rsb));
    LLVMValueRef out0 = at(g, g->elem, dst, mul(g, k.i, k64(g, nr)));
    Loop jp = loop_open(g, k64(g, 0), nfull, k64(g, nr));
    LLVMValueRef out = at(g, g->elem, out0, mul(g, jp.i, kc));
    for (int v = 0; v < g->s.nv; v++)
      store(g, load_elems(g, row, add(g, jp.i, k64(g, v * g->s.vw))),
            at(g, g->elem, out, k64(g, v * g->s.vw)), elem_align(g));
    loop_close(g, &jp);
    loop_close(g, &k);
  }
  if_else(g, &contiguous);
  {
    Loop jp = loop_open(g, k64(g, 0), nfull, k64(g, nr));
    LLVMValueRef panel = at(g, g->elem, dst, mul(g, jp.i, kc));
    LLVMValueRef col0 = at(g, g->store, src, mul(g, jp.i, csb));
    Loop k = loop_open(g, k64(g, 0), kc, k64(g, 1));
    LLVMValueRef row = at(g, g->store, col0, mul(g, k.i, rsb));
    LLVMValueRef out = at(g, g->elem, panel, mul(g, k.i, k64(g, nr)));
    for (int j = 0; j < nr; j++)
      store(g, load_elem(g, row, mul(g, k64(g, j), csb)),
            at(g, g->elem, out, k64(g, j)), elem_align(g));
    loop_close(g, &k);
    loop_close(g, &jp);
  }
  if_close(g, &contiguous);
  /* the last, narrower panel: its columns, then zeros */
  If narrow = if_open(g, LLVMBuildICmp(g->b, LLVMIntSLT, nfull, nc, ""));
  {
    LLVMValueRef width = LLVMBuildSub(g->b, nc, nfull, "");
    LLVMValueRef panel = at(g, g->elem, dst, mul(g, nfull, kc));
    LLVMValueRef col0 = at(g, g->store, src, mul(g, nfull, csb));
    Loop k = loop_open(g, k64(g, 0), kc, k64(g, 1));
    LLVMValueRef row = at(g, g->store, col0, mul(g, k.i, rsb));
    LLVMValueRef out = at(g, g->elem, panel, mul(g, k.i, k64(g, nr)));
    Loop j = loop_open(g, k64(g, 0), k64(g, nr), k64(g, 1));
    LLVMValueRef inside = LLVMBuildICmp(g->b, LLVMIntSLT, j.i, width, "");
    If in = if_open(g, inside);
    store(g, load_elem(g, row, mul(g, j.i, csb)), at(g, g->elem, out, j.i),
          elem_align(g));
    if_else(g, &in);
    store(g, zero_elem(g), at(g, g->elem, out, j.i), elem_align(g));
    if_close(g, &in);
    loop_close(g, &j);
    loop_close(g, &k);
  }
  if_else(g, &narrow);
  if_close(g, &narrow);
  LLVMBuildRetVoid(g->b);
  return g->fn;
}

/* 'void pack_a(i64 mc, i64 kc, ptr A, i64 rsa, i64 csa, ptr dst)':
 * panel p (rows p*MR ..) at dst + p*MR*kc, element (i, k) of a panel at
 * k*MR + i; rows past mc are zeros. */
static LLVMValueRef emit_pack_a(Gen *g) {
  LLVMTypeRef ps[] = {g->i64, g->i64, g->ptr, g->i64, g->i64, g->ptr};
  begin_function(g, "_pack_a", LLVMFunctionType(g->voidt, ps, 6, 0));
  LLVMValueRef mc = param(g, 0), kc = param(g, 1), src = param(g, 2);
  LLVMValueRef rsa = param(g, 3), csa = param(g, 4), dst = param(g, 5);
  int mr = g->s.mr;
  Loop ip = loop_open(g, k64(g, 0), mc, k64(g, mr));
  LLVMValueRef panel = at(g, g->elem, dst, mul(g, ip.i, kc));
  LLVMValueRef row0 = at(g, g->store, src, mul(g, ip.i, rsa));
  LLVMValueRef height = min64(g, k64(g, mr), LLVMBuildSub(g->b, mc, ip.i, ""));
  LLVMValueRef full = LLVMBuildICmp(g->b, LLVMIntEQ, height, k64(g, mr), "");
  If whole = if_open(g, full);
  {
    Loop k = loop_open(g, k64(g, 0), kc, k64(g, 1));
    LLVMValueRef col = at(g, g->store, row0, mul(g, k.i, csa));
    LLVMValueRef out = at(g, g->elem, panel, mul(g, k.i, k64(g, mr)));
    for (int i = 0; i < mr; i++)
      store(g, load_elem(g, col, mul(g, k64(g, i), rsa)),
            at(g, g->elem, out, k64(g, i)), elem_align(g));
    loop_close(g, &k);
  }
  if_else(g, &whole);
  {
    Loop k = loop_open(g, k64(g, 0), kc, k64(g, 1));
    LLVMValueRef col = at(g, g->store, row0, mul(g, k.i, csa));
    LLVMValueRef out = at(g, g->elem, panel, mul(g, k.i, k64(g, mr)));
    Loop i = loop_open(g, k64(g, 0), k64(g, mr), k64(g, 1));
    If in = if_open(g, LLVMBuildICmp(g->b, LLVMIntSLT, i.i, height, ""));
    store(g, load_elem(g, col, mul(g, i.i, rsa)), at(g, g->elem, out, i.i),
          elem_align(g));
    if_else(g, &in);
    store(g, zero_elem(g), at(g, g->elem, out, i.i), elem_align(g));
    if_close(g, &in);
    loop_close(g, &i);
    loop_close(g, &k);
  }
  if_close(g, &whole);
  loop_close(g, &ip);
  LLVMBuildRetVoid(g->b);
  return g->fn;
}

/* -------------------------------------------------------- micro-kernel */

/* Writes the accumulators 'acc' (rows x NV vectors) to the compute-type
 * block at 'c' (row stride 'rsc'): stores them, or adds them to what is
 * there unless 'first'. */
static void write_block(Gen *g, int rows, LLVMValueRef *acc, LLVMValueRef c,
                        LLVMValueRef rsc, LLVMValueRef first) {
  int nv = g->s.nv, vw = g->s.vw;
  If fresh = if_open(g, first);
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < rows; i++) {
      LLVMValueRef row = at(g, g->elem, c, mul(g, k64(g, i), rsc));
      for (int v = 0; v < nv; v++) {
        LLVMValueRef p = at(g, g->elem, row, k64(g, v * vw));
        LLVMValueRef x = acc[i * nv + v];
        if (pass == 1)
          x = LLVMBuildFAdd(g->b, load(g, g->vec, p, elem_align(g)), x, "");
        store(g, x, p, elem_align(g));
      }
    }
    if (pass == 0)
      if_else(g, &fresh);
  }
  if_close(g, &fresh);
}

/* The edge of C: the accumulators (rows x NV vectors) through the tile
 * 'edge' (NR wide), then its top-left mr x nr elements to 'c' as
 * write_block does. */
static void write_edge(Gen *g, int rows, LLVMValueRef *acc, LLVMValueRef c,
                       LLVMValueRef rsc, LLVMValueRef mr, LLVMValueRef nr,
                       LLVMValueRef first, LLVMValueRef edge) {
  int nv = g->s.nv, vw = g->s.vw;
  unsigned valign = (unsigned)(vw * compute_bytes(g->dt));
  for (int i = 0; i < rows; i++)
    for (int v = 0; v < nv; v++)
      store(g, acc[i * nv + v],
            at(g, g->elem, edge, k64(g, i * g->s.nr + v * vw)), valign);
  Loop i = loop_open(g, k64(g, 0), mr, k64(g, 1));
  LLVMValueRef row = at(g, g->elem, c, mul(g, i.i, rsc));
  LLVMValueRef tile = at(g, g->elem, edge, mul(g, i.i, k64(g, g->s.nr)));
  Loop j = loop_open(g, k64(g, 0), nr, k64(g, 1));
  LLVMValueRef p = at(g, g->elem, row, j.i);
  LLVMValueRef x = load(g, g->elem, at(g, g->elem, tile, j.i), elem_align(g));
  LLVMValueRef sum =
      LLVMBuildFAdd(g->b, load(g, g->elem, p, elem_align(g)), x, "");
  store(g, LLVMBuildSelect(g->b, first, x, sum, ""), p, elem_align(g));
  loop_close(g, &j);
  loop_close(g, &i);
}

/* Asks for the rows x NR block of C at 'c' in the cache while the k loop
 * runs: C's rows are far apart (at n = 2048 they fall in the same L1
 * set), and the block is read once per KC.  A prefetch never faults, so
 * an edge block asks for lines beyond C harmlessly. */
static void emit_prefetch_block(Gen *g, int rows, LLVMValueRef c,
                                LLVMValueRef rsc) {
  LLVMTypeRef ptr = g->ptr;
  unsigned id = LLVMLookupIntrinsicID("llvm.prefetch", 13);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(g->mod, id, &ptr, 1);
  LLVMTypeRef fty = LLVMIntrinsicGetType(g->ctx, id, &ptr, 1);
  int per_line = 64 / compute_bytes(g->dt);
  for (int i = 0; i < rows; i++) {
    LLVMValueRef row = at(g, g->elem, c, mul(g, k64(g, i), rsc));
    for (int j = 0; j < g->s.nr; j += per_line) {
      LLVMValueRef args[] = {at(g, g->elem, row, k64(g, j)),
                             LLVMConstInt(g->i32, 1, 0),  /* for writing */
                             LLVMConstInt(g->i32, 3, 0),  /* keep close */
                             LLVMConstInt(g->i32, 1, 0)}; /* data */
      LLVMBuildCall2(g->b, fty, fn, args, 4, "");
    }
  }
}

/* 'void ukernelR(i64 kc, ptr a, ptr b, ptr c, i64 rsc, i64 mr, i64 nr,
 * i1 first, ptr edge)': the R x NR block (R = 'rows' <= MR) of packed
 * panels 'a' (MR rows, of which the first R are read) and 'b' over kc,
 * written to the mr x nr block at 'c' (compute type; mr <= R). */
static LLVMValueRef emit_ukernel(Gen *g, int rows) {
  LLVMTypeRef ps[] = {g->i64, g->ptr, g->ptr, g->ptr, g->i64,
                      g->i64, g->i64, g->i1,  g->ptr};
  char suffix[24];
  g_snprintf(suffix, sizeof suffix, "_ukernel%d", rows);
  begin_function(g, suffix, LLVMFunctionType(g->voidt, ps, 9, 0));
  LLVMValueRef kc = param(g, 0), a = param(g, 1), b = param(g, 2);
  LLVMValueRef c = param(g, 3), rsc = param(g, 4), mr = param(g, 5);
  LLVMValueRef nr = param(g, 6), first = param(g, 7), edge = param(g, 8);
  int MR = g->s.mr, NV = g->s.nv, VW = g->s.vw, NR = g->s.nr;
  int nacc = rows * NV;
  unsigned valign = (unsigned)(VW * compute_bytes(g->dt));
  emit_prefetch_block(g, rows, c, rsc);
  /* the accumulators are phis of the k loop, zero on entry */
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b);
  LLVMBasicBlockRef head = block(g, "k"), done = block(g, "kdone");
  LLVMValueRef zero = LLVMConstNull(g->vec);
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSGT, kc, k64(g, 0), ""),
                  head, done);
  enter(g, head);
  LLVMValueRef k = LLVMBuildPhi(g->b, g->i64, "k");
  LLVMValueRef *acc = g_new(LLVMValueRef, nacc);
  LLVMValueRef *next = g_new(LLVMValueRef, nacc);
  for (int x = 0; x < nacc; x++)
    acc[x] = LLVMBuildPhi(g->b, g->vec, "acc");
  LLVMValueRef brow = at(g, g->elem, b, mul(g, k, k64(g, NR)));
  LLVMValueRef acol = at(g, g->elem, a, mul(g, k, k64(g, MR)));
  LLVMValueRef *bv = g_new(LLVMValueRef, NV);
  for (int v = 0; v < NV; v++)
    bv[v] = load(g, g->vec, at(g, g->elem, brow, k64(g, v * VW)), valign);
  for (int i = 0; i < rows; i++) {
    LLVMValueRef ai =
        load(g, g->elem, at(g, g->elem, acol, k64(g, i)), elem_align(g));
    LLVMValueRef as = splat(g, (unsigned)VW, ai);
    for (int v = 0; v < NV; v++) {
      LLVMValueRef args[] = {as, bv[v], acc[i * NV + v]};
      next[i * NV + v] = LLVMBuildCall2(g->b, g->fma_ty, g->fma, args, 3, "");
    }
  }
  LLVMValueRef k1 = add(g, k, k64(g, 1));
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b);
  LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, k1, kc, ""), head,
                  done);
  LLVMValueRef k0 = k64(g, 0);
  LLVMAddIncoming(k, &k0, &pre, 1);
  LLVMAddIncoming(k, &k1, &latch, 1);
  for (int x = 0; x < nacc; x++) {
    LLVMAddIncoming(acc[x], &zero, &pre, 1);
    LLVMAddIncoming(acc[x], &next[x], &latch, 1);
  }
  enter(g, done);
  LLVMValueRef *sum = g_new(LLVMValueRef, nacc);
  for (int x = 0; x < nacc; x++) {
    sum[x] = LLVMBuildPhi(g->b, g->vec, "sum");
    LLVMAddIncoming(sum[x], &zero, &pre, 1);
    LLVMAddIncoming(sum[x], &next[x], &latch, 1);
  }
  LLVMValueRef whole =
      LLVMBuildAnd(g->b, LLVMBuildICmp(g->b, LLVMIntEQ, mr, k64(g, rows), ""),
                   LLVMBuildICmp(g->b, LLVMIntEQ, nr, k64(g, NR), ""), "");
  If w = if_open(g, whole);
  write_block(g, rows, sum, c, rsc, first);
  if_else(g, &w);
  write_edge(g, rows, sum, c, rsc, mr, nr, first, edge);
  if_close(g, &w);
  LLVMBuildRetVoid(g->b);
  g_free(acc);
  g_free(next);
  g_free(bv);
  g_free(sum);
  return g->fn;
}

/* --------------------------------------------------------- the driver */

/* The functions the driver calls. */
typedef struct Parts {
  LLVMValueRef pack_a, pack_b;
  LLVMValueRef ukernel[3]; /* of MR/3, 2 MR/3 and MR rows */
  LLVMTypeRef pack_ty, ukernel_ty;
} Parts;

/* The rows of the micro-kernels: a third, two thirds and all of MR. */
static int ukernel_rows(const Gen *g, int i) { return g->s.mr * (i + 1) / 3; }

/* Calls the shortest micro-kernel that holds 'mr' rows. */
static void call_ukernel(Gen *g, const Parts *parts, LLVMValueRef *args,
                         LLVMValueRef mr, int from) {
  if (from == 2) {
    LLVMBuildCall2(g->b, parts->ukernel_ty, parts->ukernel[2], args, 9, "");
    return;
  }
  If fits = if_open(g, LLVMBuildICmp(g->b, LLVMIntSLE, mr,
                                     k64(g, ukernel_rows(g, from)), ""));
  LLVMBuildCall2(g->b, parts->ukernel_ty, parts->ukernel[from], args, 9, "");
  if_else(g, &fits);
  call_ukernel(g, parts, args, mr, from + 1);
  if_close(g, &fits);
}

/* The macro-kernel: every MR x NR block of the mc x nc block of C at 'c'
 * (compute type, row stride 'ldc') from packed 'apack' and 'bpack'.
 * 'whole': C is padded to whole blocks (bf16's tile). */
static void emit_macro(Gen *g, const Parts *parts, LLVMValueRef kc,
                       LLVMValueRef mc, LLVMValueRef nc, LLVMValueRef apack,
                       LLVMValueRef bpack, LLVMValueRef c, LLVMValueRef ldc,
                       LLVMValueRef first, LLVMValueRef edge, gboolean whole) {
  int MR = g->s.mr, NR = g->s.nr;
  Loop jr = loop_open(g, k64(g, 0), nc, k64(g, NR));
  LLVMValueRef nr =
      whole ? k64(g, NR)
            : min64(g, k64(g, NR), LLVMBuildSub(g->b, nc, jr.i, ""));
  LLVMValueRef bp = at(g, g->elem, bpack, mul(g, jr.i, kc));
  Loop ir = loop_open(g, k64(g, 0), mc, k64(g, MR));
  LLVMValueRef mr =
      whole ? k64(g, MR)
            : min64(g, k64(g, MR), LLVMBuildSub(g->b, mc, ir.i, ""));
  LLVMValueRef ap = at(g, g->elem, apack, mul(g, ir.i, kc));
  LLVMValueRef cp = at(g, g->elem, c, add(g, mul(g, ir.i, ldc), jr.i));
  LLVMValueRef args[] = {kc, ap, bp, cp, ldc, mr, nr, first, edge};
  call_ukernel(g, parts, args, mr, whole ? 2 : 0);
  loop_close(g, &ir);
  loop_close(g, &jr);
}

/* C's M x N elements set to zero (K == 0). */
static void emit_zero(Gen *g, LLVMValueRef m, LLVMValueRef n, LLVMValueRef c,
                      LLVMValueRef rsc) {
  Loop i = loop_open(g, k64(g, 0), m, k64(g, 1));
  LLVMValueRef row = at(g, g->store, c, mul(g, i.i, rsc));
  Loop j = loop_open(g, k64(g, 0), n, k64(g, 1));
  store(g, LLVMConstNull(g->store), at(g, g->store, row, j.i), store_align(g));
  loop_close(g, &j);
  loop_close(g, &i);
}

/* The driver's parameters. */
typedef struct Args {
  LLVMValueRef m, n, k, a, rsa, csa, b, rsb, csb, c, rsc;
  LLVMValueRef bpack, apack, edge, tile;
} Args;

static void call_pack(Gen *g, const Parts *parts, LLVMValueRef fn,
                      LLVMValueRef x, LLVMValueRef y, LLVMValueRef src,
                      LLVMValueRef rs, LLVMValueRef cs, LLVMValueRef dst) {
  LLVMValueRef args[] = {x, y, src, rs, cs, dst};
  LLVMBuildCall2(g->b, parts->pack_ty, fn, args, 6, "");
}

/* f32 and f64: NC, KC, MC blocks, accumulating in C. */
static void emit_blocks_in_place(Gen *g, const Parts *p, const Args *x) {
  Loop jc = loop_open(g, k64(g, 0), x->n, k64(g, g->s.nc));
  LLVMValueRef nc =
      min64(g, k64(g, g->s.nc), LLVMBuildSub(g->b, x->n, jc.i, ""));
  Loop pc = loop_open(g, k64(g, 0), x->k, k64(g, g->s.kc));
  LLVMValueRef kc =
      min64(g, k64(g, g->s.kc), LLVMBuildSub(g->b, x->k, pc.i, ""));
  LLVMValueRef first = LLVMBuildICmp(g->b, LLVMIntEQ, pc.i, k64(g, 0), "");
  LLVMValueRef bsrc =
      at(g, g->store, x->b, add(g, mul(g, pc.i, x->rsb), mul(g, jc.i, x->csb)));
  call_pack(g, p, p->pack_b, kc, nc, bsrc, x->rsb, x->csb, x->bpack);
  Loop ic = loop_open(g, k64(g, 0), x->m, k64(g, g->s.mc));
  LLVMValueRef mc =
      min64(g, k64(g, g->s.mc), LLVMBuildSub(g->b, x->m, ic.i, ""));
  LLVMValueRef asrc =
      at(g, g->store, x->a, add(g, mul(g, ic.i, x->rsa), mul(g, pc.i, x->csa)));
  call_pack(g, p, p->pack_a, mc, kc, asrc, x->rsa, x->csa, x->apack);
  LLVMValueRef c = at(g, g->store, x->c, add(g, mul(g, ic.i, x->rsc), jc.i));
  emit_macro(g, p, kc, mc, nc, x->apack, x->bpack, c, x->rsc, first, x->edge,
             FALSE);
  loop_close(g, &ic);
  loop_close(g, &pc);
  loop_close(g, &jc);
}

/* bf16: NC, MC, then KC blocks into the f32 tile, rounded into C once. */
static void emit_blocks_tiled(Gen *g, const Parts *p, const Args *x) {
  LLVMValueRef ldt = k64(g, g->s.nc);
  Loop jc = loop_open(g, k64(g, 0), x->n, k64(g, g->s.nc));
  LLVMValueRef nc =
      min64(g, k64(g, g->s.nc), LLVMBuildSub(g->b, x->n, jc.i, ""));
  Loop ic = loop_open(g, k64(g, 0), x->m, k64(g, g->s.mc));
  LLVMValueRef mc =
      min64(g, k64(g, g->s.mc), LLVMBuildSub(g->b, x->m, ic.i, ""));
  Loop pc = loop_open(g, k64(g, 0), x->k, k64(g, g->s.kc));
  LLVMValueRef kc =
      min64(g, k64(g, g->s.kc), LLVMBuildSub(g->b, x->k, pc.i, ""));
  LLVMValueRef first = LLVMBuildICmp(g->b, LLVMIntEQ, pc.i, k64(g, 0), "");
  LLVMValueRef bsrc =
      at(g, g->store, x->b, add(g, mul(g, pc.i, x->rsb), mul(g, jc.i, x->csb)));
  call_pack(g, p, p->pack_b, kc, nc, bsrc, x->rsb, x->csb, x->bpack);
  LLVMValueRef asrc =
      at(g, g->store, x->a, add(g, mul(g, ic.i, x->rsa), mul(g, pc.i, x->csa)));
  call_pack(g, p, p->pack_a, mc, kc, asrc, x->rsa, x->csa, x->apack);
  emit_macro(g, p, kc, mc, nc, x->apack, x->bpack, x->tile, ldt, first, x->edge,
             TRUE);
  loop_close(g, &pc);
  /* the tile's sums, complete: rounded into C */
  LLVMValueRef c = at(g, g->store, x->c, add(g, mul(g, ic.i, x->rsc), jc.i));
  Loop i = loop_open(g, k64(g, 0), mc, k64(g, 1));
  LLVMValueRef crow = at(g, g->store, c, mul(g, i.i, x->rsc));
  LLVMValueRef trow = at(g, g->elem, x->tile, mul(g, i.i, ldt));
  Loop j = loop_open(g, k64(g, 0), nc, k64(g, 1));
  store_elem(g, load(g, g->elem, at(g, g->elem, trow, j.i), elem_align(g)),
             crow, j.i);
  loop_close(g, &j);
  loop_close(g, &i);
  loop_close(g, &ic);
  loop_close(g, &jc);
}

static LLVMValueRef emit_gemm(Gen *g, const Parts *parts, LLVMTypeRef fty) {
  begin_function(g, "", fty);
  Args x = {
      .m = param(g, 0),
      .n = param(g, 1),
      .k = param(g, 2),
      .a = param(g, 3),
      .rsa = param(g, 4),
      .csa = param(g, 5),
      .b = param(g, 6),
      .rsb = param(g, 7),
      .csb = param(g, 8),
      .c = param(g, 9),
      .rsc = param(g, 10),
  };
  LLVMValueRef work = param(g, 11);
  Layout l = gemm_layout(g->dt, &g->s);
  LLVMTypeRef i8 = LLVMInt8TypeInContext(g->ctx);
  x.bpack = at(g, i8, work, k64(g, l.bpack));
  x.apack = at(g, i8, work, k64(g, l.apack));
  x.edge = at(g, i8, work, k64(g, l.edge));
  x.tile = at(g, i8, work, k64(g, l.tile));
  If empty = if_open(g, LLVMBuildICmp(g->b, LLVMIntSLE, x.k, k64(g, 0), ""));
  emit_zero(g, x.m, x.n, x.c, x.rsc);
  if_else(g, &empty);
  if (g->dt == DT_BF16)
    emit_blocks_tiled(g, parts, &x);
  else
    emit_blocks_in_place(g, parts, &x);
  if_close(g, &empty);
  LLVMBuildRetVoid(g->b);
  return g->fn;
}

static void gen_init(Gen *g, LLVMModuleRef mod, DType dt) {
  g->mod = mod;
  g->ctx = LLVMGetModuleContext(mod);
  g->dt = dt;
  g->s = gemm_shape(dt);
  g->i1 = LLVMInt1TypeInContext(g->ctx);
  g->i16 = LLVMInt16TypeInContext(g->ctx);
  g->i32 = LLVMInt32TypeInContext(g->ctx);
  g->i64 = LLVMInt64TypeInContext(g->ctx);
  g->ptr = LLVMPointerTypeInContext(g->ctx, 0);
  g->voidt = LLVMVoidTypeInContext(g->ctx);
  g->elem = dt == DT_F64 ? LLVMDoubleTypeInContext(g->ctx)
                         : LLVMFloatTypeInContext(g->ctx);
  g->store = dt == DT_BF16 ? g->i16 : g->elem;
  g->vec = LLVMVectorType(g->elem, (unsigned)g->s.vw);
  unsigned id = LLVMLookupIntrinsicID("llvm.fmuladd", 12);
  g->fma = LLVMGetIntrinsicDeclaration(mod, id, &g->vec, 1);
  g->fma_ty = LLVMIntrinsicGetType(g->ctx, id, &g->vec, 1);
  g_snprintf(g->prefix, sizeof g->prefix, "partir_gemm_%s", dtype_name(dt));
  g->b = LLVMCreateBuilderInContext(g->ctx);
}

static LLVMTypeRef gemm_type(LLVMContextRef ctx) {
  LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
  LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0);
  LLVMTypeRef ps[] = {i64, i64, i64, ptr, i64, i64,
                      ptr, i64, i64, ptr, i64, ptr};
  return LLVMFunctionType(LLVMVoidTypeInContext(ctx), ps, 12, 0);
}

LLVMValueRef gemm_function(LLVMModuleRef mod, DType dt, LLVMTypeRef *fty) {
  g_assert(dt == DT_F32 || dt == DT_F64 || dt == DT_BF16);
  *fty = gemm_type(LLVMGetModuleContext(mod));
  char name[32];
  g_snprintf(name, sizeof name, "partir_gemm_%s", dtype_name(dt));
  LLVMValueRef made = LLVMGetNamedFunction(mod, name);
  if (made)
    return made;
  Gen g;
  gen_init(&g, mod, dt);
  Parts parts;
  parts.pack_a = emit_pack_a(&g);
  parts.pack_b = emit_pack_b(&g);
  parts.pack_ty = LLVMGlobalGetValueType(parts.pack_a);
  for (int i = 0; i < 3; i++)
    parts.ukernel[i] = emit_ukernel(&g, ukernel_rows(&g, i));
  parts.ukernel_ty = LLVMGlobalGetValueType(parts.ukernel[2]);
  LLVMValueRef fn = emit_gemm(&g, &parts, *fty);
  LLVMDisposeBuilder(g.b);
  return fn;
}
