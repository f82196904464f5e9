/* emit.c — a plan's LLVM IR: one loop nest per operator.
 *
 * The entry 'void ENTRY(ptr bufs)' (bufs[i]: the buffer of slot i) walks
 * the printer's schedule: for each computed value it calls the function
 * of its kind (op_function, chunk_function) with its buffers, and a tile
 * or sum is a loop over its range's chunks around its body's statements,
 * each iteration's value put into its chunk (a tile) or added to a
 * double or i64 accumulator rounded once at the end (a sum), as the
 * interpreter's eval_region does.  Each operator mirrors its
 * interpreter kernel (src/eval/kernels.c), so the results agree bit for
 * bit:
 *
 *   - elements are loaded widened (floats to double, bf16 through f32,
 *     integers to i64, i1 as 0/1) and stored rounded (floats) or wrapped
 *     (integers), as tensor_get_* and tensor_set_* do;
 *   - elementwise operators compute in double or i64, with the kernels'
 *     NaN rules, XLA's integer division, and libm's exp, log, tanh, pow;
 *   - broadcast_in_dim, transpose and slice are strided copies, reshape
 *     a copy, concatenate a copy per operand;
 *   - reductions fold the reduced elements in row-major order into one
 *     accumulator per result element (double, or i64 for integers);
 *   - contractions sum over the contracting indices in row-major order
 *     (the kernel's k loop) in double or i64.
 *
 * Loops count from 0 to n - 1 with n >= 1: an operator whose result has
 * no elements has nothing to compute and emits nothing.
 */
#include "codegen/internal.h"

#include <math.h>

typedef struct Gen {
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMValueRef fn;
  LLVMTypeRef i1, i8, i16, i32, i64, f32, f64, ptr, vd;
  const Type **vt;    /* the types of the function's buffers */
  LLVMValueRef *base; /* its buffers: the result's, then each operand's */
  LLVMValueRef acc_f, acc_i; /* entry-block accumulators: double, i64 */
} Gen;

static LLVMValueRef c64(Gen *g, int64_t v) {
  return LLVMConstInt(g->i64, (unsigned long long)v, 1);
}

static LLVMValueRef cf64(Gen *g, double v) { return LLVMConstReal(g->f64, v); }

/* Inside an operator's function, its buffers are its parameters: 0 the
 * result's, OPERAND(k) operand k's. */
#define OPERAND(k) ((k) + 1)

static const Type *vtype(Gen *g, int v) { return g->vt[v]; }

/* The storage type of an element of 'dt'. */
static LLVMTypeRef storage(Gen *g, DType dt) {
  switch (dt) {
  case DT_F32:
    return g->f32;
  case DT_F64:
    return g->f64;
  case DT_BF16:
    return g->i16;
  case DT_I32:
    return g->i32;
  case DT_I64:
    return g->i64;
  case DT_I1:
    return g->i8;
  default:
    g_assert_not_reached();
  }
}

static LLVMValueRef elem_ptr(Gen *g, int s, LLVMValueRef off) {
  LLVMTypeRef ty = storage(g, vtype(g, s)->dtype);
  return LLVMBuildGEP2(g->b, ty, g->base[s], &off, 1, "");
}

/* Element 'off' of slot 's' as stored (no conversion). */
static LLVMValueRef load_raw(Gen *g, int s, LLVMValueRef off) {
  LLVMTypeRef ty = storage(g, vtype(g, s)->dtype);
  return LLVMBuildLoad2(g->b, ty, elem_ptr(g, s, off), "");
}

static void store_raw(Gen *g, int s, LLVMValueRef off, LLVMValueRef v) {
  LLVMBuildStore(g->b, v, elem_ptr(g, s, off));
}

/* Element 'off' of slot 's' widened: double for floating types, i64
 * for integer types (i1 as 0 or 1). */
static LLVMValueRef load_elem(Gen *g, int s, LLVMValueRef off) {
  DType dt = vtype(g, s)->dtype;
  LLVMValueRef v = load_raw(g, s, off);
  switch (dt) {
  case DT_F32:
    return LLVMBuildFPExt(g->b, v, g->f64, "");
  case DT_F64:
    return v;
  case DT_BF16: { /* the top half of an f32 */
    LLVMValueRef wide = LLVMBuildZExt(g->b, v, g->i32, "");
    wide = LLVMBuildShl(g->b, wide, LLVMConstInt(g->i32, 16, 0), "");
    return LLVMBuildFPExt(g->b, LLVMBuildBitCast(g->b, wide, g->f32, ""),
                          g->f64, "");
  }
  case DT_I32:
    return LLVMBuildSExt(g->b, v, g->i64, "");
  case DT_I64:
    return v;
  case DT_I1:
    return LLVMBuildZExt(g->b, v, g->i64, "");
  default:
    g_assert_not_reached();
  }
}

/* bf16 from an f32: round to nearest even, NaN kept quiet (as
 * tensor_bf16_from_f32). */
static LLVMValueRef bf16_from_f32(Gen *g, LLVMValueRef f) {
  LLVMValueRef bits = LLVMBuildBitCast(g->b, f, g->i32, "");
  LLVMValueRef c16 = LLVMConstInt(g->i32, 16, 0);
  LLVMValueRef hi = LLVMBuildLShr(g->b, bits, c16, "");
  LLVMValueRef nan_bits =
      LLVMBuildOr(g->b, hi, LLVMConstInt(g->i32, 0x40, 0), "");
  LLVMValueRef odd = LLVMBuildAnd(g->b, hi, LLVMConstInt(g->i32, 1, 0), "");
  LLVMValueRef bias =
      LLVMBuildAdd(g->b, LLVMConstInt(g->i32, 0x7fff, 0), odd, "");
  LLVMValueRef rounded =
      LLVMBuildLShr(g->b, LLVMBuildAdd(g->b, bits, bias, ""), c16, "");
  LLVMValueRef is_nan = LLVMBuildFCmp(g->b, LLVMRealUNO, f, f, "");
  LLVMValueRef r = LLVMBuildSelect(g->b, is_nan, nan_bits, rounded, "");
  return LLVMBuildTrunc(g->b, r, g->i16, "");
}

/* Stores 'v' (double or i64, as load_elem gives) into element 'off' of
 * slot 's', rounded or wrapped to its type (as tensor_set_*). */
static void store_elem(Gen *g, int s, LLVMValueRef off, LLVMValueRef v) {
  DType dt = vtype(g, s)->dtype;
  LLVMValueRef out = NULL;
  switch (dt) {
  case DT_F32:
    out = LLVMBuildFPTrunc(g->b, v, g->f32, "");
    break;
  case DT_F64:
    out = v;
    break;
  case DT_BF16:
    out = bf16_from_f32(g, LLVMBuildFPTrunc(g->b, v, g->f32, ""));
    break;
  case DT_I32:
    out = LLVMBuildTrunc(g->b, v, g->i32, "");
    break;
  case DT_I64:
    out = v;
    break;
  case DT_I1:
    out = LLVMBuildZExt(g->b, LLVMBuildICmp(g->b, LLVMIntNE, v, c64(g, 0), ""),
                        g->i8, "");
    break;
  default:
    g_assert_not_reached();
  }
  store_raw(g, s, off, out);
}

/* ---------------------------------------------------------------- loops */

typedef struct Loop {
  LLVMBasicBlockRef body;
  LLVMValueRef iv;
  int64_t n;
} Loop;

/* Opens 'for (iv = 0; iv < n; iv++)', n >= 1: the body follows. */
static LLVMValueRef loop_open(Gen *g, int64_t n, Loop *l) {
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

static void loop_close(Gen *g, Loop *l) {
  LLVMValueRef next = LLVMBuildNSWAdd(g->b, l->iv, c64(g, 1), "");
  LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b);
  LLVMAddIncoming(l->iv, &next, &latch, 1);
  LLVMValueRef more = LLVMBuildICmp(g->b, LLVMIntSLT, next, c64(g, l->n), "");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "done");
  LLVMBuildCondBr(g->b, more, l->body, done);
  LLVMPositionBuilderAtEnd(g->b, done);
}

/* A nest of loops over the index space 'sizes[0..rank)', row-major, that
 * keeps linear offsets by up to three sets of strides ('offs[k]' =
 * base[k] + sum(index[d] * strides[k][d])). */
typedef struct Nest {
  int rank, nsets;
  Loop loops[PARTIR_MAX_RANK * 3];
  LLVMValueRef off[3];
} Nest;

static void nest_open(Gen *g, Nest *n, int rank, const int64_t *sizes,
                      int nsets, const int64_t *const *strides,
                      const LLVMValueRef *base) {
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

static void nest_close(Gen *g, Nest *n) {
  for (int d = n->rank - 1; d >= 0; d--)
    loop_close(g, &n->loops[d]);
}

/* Row-major strides of 'ty' (as tensor_strides). */
static void strides_of(const Type *ty, int64_t *strides) {
  tensor_strides(ty, strides);
}

/* ------------------------------------------ libm calls and intrinsics */

static LLVMValueRef libm(Gen *g, const char *name, LLVMValueRef *args,
                         int nargs) {
  LLVMTypeRef params[2] = {g->f64, g->f64};
  LLVMTypeRef fty = LLVMFunctionType(g->f64, params, (unsigned)nargs, 0);
  LLVMValueRef f = LLVMGetNamedFunction(g->mod, name);
  if (!f)
    f = LLVMAddFunction(g->mod, name, fty);
  return LLVMBuildCall2(g->b, fty, f, args, (unsigned)nargs, "");
}

/* llvm.sqrt is exact, as libm's sqrt */
static LLVMValueRef sqrt_f64(Gen *g, LLVMValueRef x) {
  return libm(g, "llvm.sqrt.f64", &x, 1);
}

/* ---------------------------------------------------------- elementwise */

static LLVMValueRef is_nan(Gen *g, LLVMValueRef x) {
  return LLVMBuildFCmp(g->b, LLVMRealUNO, x, x, "");
}

static LLVMValueRef binary_float(Gen *g, Op op, LLVMValueRef a,
                                 LLVMValueRef b) {
  switch (op) {
  case OP_ADD:
    return LLVMBuildFAdd(g->b, a, b, "");
  case OP_SUB:
    return LLVMBuildFSub(g->b, a, b, "");
  case OP_MUL:
    return LLVMBuildFMul(g->b, a, b, "");
  case OP_DIV:
    return LLVMBuildFDiv(g->b, a, b, "");
  case OP_MAX:
  case OP_MIN: {
    LLVMValueRef pick =
        LLVMBuildFCmp(g->b, op == OP_MAX ? LLVMRealOGT : LLVMRealOLT, a, b, "");
    LLVMValueRef r = LLVMBuildSelect(g->b, pick, a, b, "");
    LLVMValueRef nan = LLVMBuildOr(g->b, is_nan(g, a), is_nan(g, b), "");
    return LLVMBuildSelect(g->b, nan, cf64(g, NAN), r, "");
  }
  case OP_POW: {
    LLVMValueRef args[2] = {a, b};
    return libm(g, "pow", args, 2);
  }
  default:
    g_assert_not_reached();
  }
}

static LLVMValueRef binary_int(Gen *g, Op op, DType dt, LLVMValueRef a,
                               LLVMValueRef b) {
  switch (op) {
  case OP_ADD:
    return LLVMBuildAdd(g->b, a, b, "");
  case OP_SUB:
    return LLVMBuildSub(g->b, a, b, "");
  case OP_MUL:
    return LLVMBuildMul(g->b, a, b, "");
  case OP_DIV: { /* x/0 is -1, MIN/-1 is MIN (XLA), never a trap */
    LLVMValueRef zero = LLVMBuildICmp(g->b, LLVMIntEQ, b, c64(g, 0), "");
    LLVMValueRef min = c64(g, dt == DT_I32 ? INT32_MIN : INT64_MIN);
    LLVMValueRef overflow =
        LLVMBuildAnd(g->b, LLVMBuildICmp(g->b, LLVMIntEQ, b, c64(g, -1), ""),
                     LLVMBuildICmp(g->b, LLVMIntEQ, a, min, ""), "");
    LLVMValueRef unsafe = LLVMBuildOr(g->b, zero, overflow, "");
    LLVMValueRef d = LLVMBuildSelect(g->b, unsafe, c64(g, 1), b, "");
    LLVMValueRef q = LLVMBuildSDiv(g->b, a, d, "");
    q = LLVMBuildSelect(g->b, overflow, a, q, "");
    return LLVMBuildSelect(g->b, zero, c64(g, -1), q, "");
  }
  case OP_MAX:
  case OP_MIN: {
    LLVMValueRef pick =
        LLVMBuildICmp(g->b, op == OP_MAX ? LLVMIntSGT : LLVMIntSLT, a, b, "");
    return LLVMBuildSelect(g->b, pick, a, b, "");
  }
  default:
    g_assert_not_reached();
  }
}

static LLVMValueRef unary_float(Gen *g, Op op, LLVMValueRef x) {
  switch (op) {
  case OP_NEG:
    return LLVMBuildFNeg(g->b, x, "");
  case OP_ABS: { /* as fabs: the sign bit cleared (-0 and NaNs too) */
    LLVMValueRef bits = LLVMBuildBitCast(g->b, x, g->i64, "");
    bits = LLVMBuildAnd(g->b, bits, c64(g, INT64_MAX), "");
    return LLVMBuildBitCast(g->b, bits, g->f64, "");
  }
  case OP_RELU: { /* NaN stays, else max(x, 0) */
    LLVMValueRef pos = LLVMBuildFCmp(g->b, LLVMRealOGT, x, cf64(g, 0), "");
    LLVMValueRef r = LLVMBuildSelect(g->b, pos, x, cf64(g, 0), "");
    return LLVMBuildSelect(g->b, is_nan(g, x), x, r, "");
  }
  case OP_EXP:
    return libm(g, "exp", &x, 1);
  case OP_LOG:
    return libm(g, "log", &x, 1);
  case OP_TANH:
    return libm(g, "tanh", &x, 1);
  case OP_LOGISTIC: {
    LLVMValueRef nx = LLVMBuildFNeg(g->b, x, "");
    LLVMValueRef e = libm(g, "exp", &nx, 1);
    return LLVMBuildFDiv(g->b, cf64(g, 1.0),
                         LLVMBuildFAdd(g->b, cf64(g, 1.0), e, ""), "");
  }
  case OP_SQRT:
    return sqrt_f64(g, x);
  case OP_RSQRT:
    return LLVMBuildFDiv(g->b, cf64(g, 1.0), sqrt_f64(g, x), "");
  default:
    g_assert_not_reached();
  }
}

static LLVMValueRef unary_int(Gen *g, Op op, LLVMValueRef x) {
  switch (op) {
  case OP_NEG:
    return LLVMBuildSub(g->b, c64(g, 0), x, "");
  case OP_ABS: {
    LLVMValueRef neg = LLVMBuildICmp(g->b, LLVMIntSLT, x, c64(g, 0), "");
    return LLVMBuildSelect(g->b, neg, LLVMBuildSub(g->b, c64(g, 0), x, ""), x,
                           "");
  }
  case OP_RELU: {
    LLVMValueRef pos = LLVMBuildICmp(g->b, LLVMIntSGT, x, c64(g, 0), "");
    return LLVMBuildSelect(g->b, pos, x, c64(g, 0), "");
  }
  default:
    g_assert_not_reached();
  }
}

/* The three-way order of 'a' and 'b' (-1, 0, 1; 2 when unordered) as the
 * comparison 'dir' reads it: true or false, as an i1. */
static LLVMValueRef compare(Gen *g, const char *dir, gboolean is_float,
                            LLVMValueRef a, LLVMValueRef b) {
  static const struct {
    const char *name;
    LLVMRealPredicate real; /* ordered, but NE: unordered or not equal */
    LLVMIntPredicate integer;
  } preds[] = {
      {"EQ", LLVMRealOEQ, LLVMIntEQ},  {"NE", LLVMRealUNE, LLVMIntNE},
      {"LT", LLVMRealOLT, LLVMIntSLT}, {"LE", LLVMRealOLE, LLVMIntSLE},
      {"GT", LLVMRealOGT, LLVMIntSGT}, {"GE", LLVMRealOGE, LLVMIntSGE}};
  for (guint j = 0; j < G_N_ELEMENTS(preds); j++)
    if (strcmp(dir, preds[j].name) == 0)
      return is_float ? LLVMBuildFCmp(g->b, preds[j].real, a, b, "")
                      : LLVMBuildICmp(g->b, preds[j].integer, a, b, "");
  g_assert_not_reached(); /* the type rule checked the direction */
}

/* convert: float to float rounds; float to integer truncates toward
 * zero, saturates and gives 0 for NaN (to i1: x != 0); integer to f32
 * rounds once (as (float)v), to the other floats through double. */
static LLVMValueRef convert(Gen *g, DType from, DType to, LLVMValueRef x) {
  gboolean ff = dtype_is_float(from), tf = dtype_is_float(to);
  if (ff && tf)
    return x;
  if (!ff && !tf)
    return x;
  if (ff) {
    if (to == DT_I1)
      return LLVMBuildZExt(g->b,
                           LLVMBuildFCmp(g->b, LLVMRealUNE, x, cf64(g, 0), ""),
                           g->i64, "");
    double lo = to == DT_I32 ? (double)INT32_MIN : (double)INT64_MIN;
    int64_t min = to == DT_I32 ? INT32_MIN : INT64_MIN;
    int64_t max = to == DT_I32 ? INT32_MAX : INT64_MAX;
    LLVMValueRef low = LLVMBuildFCmp(g->b, LLVMRealOLE, x, cf64(g, lo), "");
    LLVMValueRef high = LLVMBuildFCmp(g->b, LLVMRealOGE, x, cf64(g, -lo), "");
    LLVMValueRef inside = LLVMBuildNot(
        g->b,
        LLVMBuildOr(g->b, LLVMBuildOr(g->b, low, high, ""), is_nan(g, x), ""),
        "");
    /* fptosi of a value outside i64 is poison: convert a safe one */
    LLVMValueRef safe = LLVMBuildSelect(g->b, inside, x, cf64(g, 0), "");
    LLVMValueRef v = LLVMBuildFPToSI(g->b, safe, g->i64, "");
    v = LLVMBuildSelect(g->b, low, c64(g, min), v, "");
    v = LLVMBuildSelect(g->b, high, c64(g, max), v, "");
    return LLVMBuildSelect(g->b, is_nan(g, x), c64(g, 0), v, "");
  }
  if (to == DT_F32)
    return LLVMBuildFPExt(g->b, LLVMBuildSIToFP(g->b, x, g->f32, ""), g->f64,
                          "");
  return LLVMBuildSIToFP(g->b, x, g->f64, "");
}

/* Operators whose operands and result have one shape: one flat loop. */
static void emit_elementwise(Gen *g, int s, const Term *t) {
  int64_t n = type_numel(t->type);
  Loop l;
  LLVMValueRef i = loop_open(g, n, &l);
  LLVMValueRef v[3];
  for (int k = 0; k < t->nargs; k++)
    v[k] = t->op == OP_SELECT && k > 0 ? NULL : load_elem(g, OPERAND(k), i);
  DType in = t->args[0]->type->dtype;
  switch (t->op) {
  case OP_SELECT: { /* copies the chosen element as stored */
    LLVMValueRef c = LLVMBuildICmp(g->b, LLVMIntNE, v[0], c64(g, 0), "");
    LLVMValueRef x = load_raw(g, OPERAND(1), i);
    LLVMValueRef y = load_raw(g, OPERAND(2), i);
    store_raw(g, s, i, LLVMBuildSelect(g->b, c, x, y, ""));
    break;
  }
  case OP_COMPARE: {
    const char *dir = attrs_get(t->attrs, "direction")->sym;
    LLVMValueRef r = compare(g, dir, dtype_is_float(in), v[0], v[1]);
    store_elem(g, s, i, LLVMBuildZExt(g->b, r, g->i64, ""));
    break;
  }
  case OP_CONVERT:
    store_elem(g, s, i, convert(g, in, t->type->dtype, v[0]));
    break;
  default:
    if (t->nargs == 2)
      store_elem(g, s, i,
                 dtype_is_float(in)
                     ? binary_float(g, t->op, v[0], v[1])
                     : binary_int(g, t->op, t->type->dtype, v[0], v[1]));
    else
      store_elem(g, s, i,
                 dtype_is_float(in) ? unary_float(g, t->op, v[0])
                                    : unary_int(g, t->op, v[0]));
    break;
  }
  loop_close(g, &l);
}

/* ------------------------------------------------------- data movement */

static int attr_ints(const Term *t, const char *key, int64_t *out) {
  const AttrValue *v = attrs_get(t->attrs, key);
  if (!v)
    return 0;
  for (int j = 0; j < v->count; j++)
    out[j] = v->items[j].i;
  return v->count;
}

/* out[index] = src[base + sum(index[d] * strides[d])], as stored. */
static void emit_gather(Gen *g, int s, int src, int64_t base,
                        const int64_t *strides) {
  const Type *ty = vtype(g, s);
  int64_t out_strides[PARTIR_MAX_RANK];
  strides_of(ty, out_strides);
  const int64_t *sets[2] = {out_strides, strides};
  LLVMValueRef bases[2] = {c64(g, 0), c64(g, base)};
  Nest n;
  nest_open(g, &n, ty->rank, ty->dims, 2, sets, bases);
  store_raw(g, s, n.off[0], load_raw(g, src, n.off[1]));
  nest_close(g, &n);
}

/* broadcast_in_dim, transpose and the static slice: the interpreter's
 * strides (kernel_gather_strides). */
static void emit_strided(Gen *g, int s, const Term *t) {
  int64_t strides[PARTIR_MAX_RANK];
  int64_t base = kernel_gather_strides(t, strides);
  emit_gather(g, s, OPERAND(0), base, strides);
}

/* A copy of 'n' elements from 'src' at 'from' to slot 's' at 'to'. */
static void emit_copy(Gen *g, int s, LLVMValueRef to, int src,
                      LLVMValueRef from, int64_t n) {
  Loop l;
  LLVMValueRef i = loop_open(g, n, &l);
  store_raw(g, s, LLVMBuildNSWAdd(g->b, to, i, ""),
            load_raw(g, src, LLVMBuildNSWAdd(g->b, from, i, "")));
  loop_close(g, &l);
}

static void emit_reshape(Gen *g, int s, const Term *t) {
  emit_copy(g, s, c64(g, 0), OPERAND(0), c64(g, 0), type_numel(t->type));
}

/* Each operand's [outer, width] block into its column range of the
 * result viewed as [outer, row]. */
static void emit_concatenate(Gen *g, int s, const Term *t) {
  const Type *ty = t->type;
  int64_t dim = attrs_get_int(t->attrs, "dim");
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; d++)
    outer *= ty->dims[d];
  for (int d = (int)dim + 1; d < ty->rank; d++)
    inner *= ty->dims[d];
  int64_t row = ty->dims[dim] * inner, col = 0;
  for (int a = 0; a < t->nargs; a++) {
    int64_t width = t->args[a]->type->dims[dim] * inner;
    if (width > 0) {
      Loop l;
      LLVMValueRef o = loop_open(g, outer, &l);
      LLVMValueRef to = LLVMBuildNSWAdd(
          g->b, LLVMBuildNSWMul(g->b, o, c64(g, row), ""), c64(g, col), "");
      LLVMValueRef from = LLVMBuildNSWMul(g->b, o, c64(g, width), "");
      emit_copy(g, s, to, OPERAND(a), from, width);
      loop_close(g, &l);
    }
    col += width;
  }
}

/* ------------------------------------------------- reductions and dots */

/* The accumulator: double for floating values, i64 otherwise. */
static LLVMTypeRef acc_type(Gen *g, DType dt) {
  return dtype_is_float(dt) ? g->f64 : g->i64;
}

static LLVMValueRef acc_of(Gen *g, DType dt) {
  return dtype_is_float(dt) ? g->acc_f : g->acc_i;
}

static gboolean any_empty(int n, const int64_t *sizes) {
  for (int j = 0; j < n; j++)
    if (sizes[j] == 0)
      return TRUE;
  return FALSE;
}

static void emit_reduce(Gen *g, int s, const Term *t) {
  const Type *in = t->args[0]->type;
  DType dt = in->dtype;
  gboolean is_float = dtype_is_float(dt), is_max = t->op == OP_REDUCE_MAX;
  int64_t dims[PARTIR_MAX_RANK], strides[PARTIR_MAX_RANK];
  int ndims = attr_ints(t, "dims", dims);
  gboolean reduced[PARTIR_MAX_RANK] = {FALSE};
  for (int j = 0; j < ndims; j++)
    reduced[dims[j]] = TRUE;
  int64_t kept_size[PARTIR_MAX_RANK], kept_stride[PARTIR_MAX_RANK];
  int64_t red_size[PARTIR_MAX_RANK], red_stride[PARTIR_MAX_RANK];
  int nkept = 0, nred = 0;
  strides_of(in, strides);
  for (int d = 0; d < in->rank; d++) {
    if (reduced[d]) {
      red_size[nred] = in->dims[d];
      red_stride[nred++] = strides[d];
    } else {
      kept_size[nkept] = in->dims[d];
      kept_stride[nkept++] = strides[d];
    }
  }
  int64_t out_strides[PARTIR_MAX_RANK];
  strides_of(t->type, out_strides);
  int src = OPERAND(0);
  const int64_t *kept_sets[2] = {out_strides, kept_stride};
  LLVMValueRef zeros[2] = {c64(g, 0), c64(g, 0)};
  Nest kept;
  nest_open(g, &kept, nkept, kept_size, 2, kept_sets, zeros);
  LLVMTypeRef aty = acc_type(g, dt);
  int64_t min = dt == DT_I32 ? INT32_MIN : INT64_MIN;
  LLVMValueRef init =
      is_float ? cf64(g, is_max ? -INFINITY : 0.0) : c64(g, is_max ? min : 0);
  LLVMValueRef accp = acc_of(g, dt);
  LLVMBuildStore(g->b, init, accp);
  if (any_empty(nred, red_size)) { /* nothing folded: the initial value */
    store_elem(g, s, kept.off[0], init);
    nest_close(g, &kept);
    return;
  }
  const int64_t *red_sets[1] = {red_stride};
  Nest red;
  nest_open(g, &red, nred, red_size, 1, red_sets, &kept.off[1]);
  LLVMValueRef v = load_elem(g, src, red.off[0]);
  LLVMValueRef acc = LLVMBuildLoad2(g->b, aty, accp, "");
  LLVMValueRef next;
  if (!is_max)
    next = is_float ? LLVMBuildFAdd(g->b, acc, v, "")
                    : LLVMBuildAdd(g->b, acc, v, "");
  else if (is_float) /* once NaN, it sticks ('v > NaN' is false) */
    next = LLVMBuildSelect(
        g->b,
        LLVMBuildOr(g->b, is_nan(g, v),
                    LLVMBuildFCmp(g->b, LLVMRealOGT, v, acc, ""), ""),
        v, acc, "");
  else
    next = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSGT, v, acc, ""), v,
                           acc, "");
  LLVMBuildStore(g->b, next, accp);
  nest_close(g, &red);
  store_elem(g, s, kept.off[0], LLVMBuildLoad2(g->b, aty, accp, ""));
  nest_close(g, &kept);
}

/* matmul and dot_general, in the interpreter's order: the result is
 * [batch..., lhs free..., rhs free...], a row-major [B, M, N] block; for
 * each (b, m) a row of N accumulators (buffer DOT_ROW: double, or i64)
 * gets acc[n] += lhs[b,m,k] * rhs[b,k,n] for each k in row-major order,
 * reading rhs rows contiguously, and is stored rounded.  Each element
 * sums its products in k order, as the kernel does. */
#define DOT_ROW 3

static void emit_dot(Gen *g, int s, const Term *t) {
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
  int l = OPERAND(0), r = OPERAND(1);
  gboolean is_float = dtype_is_float(t->type->dtype);
  LLVMValueRef zero = is_float ? cf64(g, 0) : c64(g, 0);
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
    store_elem(g, DOT_ROW, cols.off[0],
               is_float
                   ? LLVMBuildFAdd(g->b, acc, LLVMBuildFMul(g->b, a, b, ""), "")
                   : LLVMBuildAdd(g->b, acc, LLVMBuildMul(g->b, a, b, ""), ""));
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

/* ------------------------------------------------------------- module */

/* A collective: the runtime's codegen_rt_collective with the term (both
 * addresses in this process, where the code runs). */
static void emit_collective(Gen *g, const Term *t) {
  LLVMTypeRef params[3] = {g->ptr, g->ptr, g->ptr};
  LLVMTypeRef fty = LLVMFunctionType(g->vd, params, 3, 0);
  LLVMValueRef fn = LLVMConstIntToPtr(
      LLVMConstInt(g->i64, (unsigned long long)(uintptr_t)codegen_rt_collective,
                   0),
      g->ptr);
  LLVMValueRef args[3] = {
      LLVMConstIntToPtr(
          LLVMConstInt(g->i64, (unsigned long long)(uintptr_t)t, 0), g->ptr),
      g->base[OPERAND(0)], g->base[0]};
  LLVMBuildCall2(g->b, fty, fn, args, 3, "");
}

static void emit_op(Gen *g, const Term *t) {
  int s = 0; /* the result's buffer */
  switch (t->op) {
  case OP_ALL_REDUCE:
  case OP_ALL_GATHER:
  case OP_REDUCE_SCATTER:
  case OP_ALL_TO_ALL:
  case OP_SHARD:
    emit_collective(g, t);
    break;
  case OP_BROADCAST_IN_DIM:
  case OP_TRANSPOSE:
  case OP_SLICE:
    emit_strided(g, s, t);
    break;
  case OP_RESHAPE:
    emit_reshape(g, s, t);
    break;
  case OP_CONCATENATE:
    emit_concatenate(g, s, t);
    break;
  case OP_REDUCE_SUM:
  case OP_REDUCE_MAX:
    emit_reduce(g, s, t);
    break;
  case OP_MATMUL:
  case OP_DOT_GENERAL:
    emit_dot(g, s, t);
    break;
  default: /* plan_new let only elementwise operators through */
    emit_elementwise(g, s, t);
    break;
  }
}

/* The buffers of slot 's' and of its operands, read from 'bufs' at the
 * entry of the function that computes 's'. */
/* A new function 'void NAME(ptr b0, ..., ptr b[n-1] [, i64 index])',
 * internal and never inlined, its buffers of types 'vt', the builder in
 * its entry block.  Its body follows; then finish_function. */
static LLVMValueRef new_function(Gen *g, const char *name, int n,
                                 gboolean index, const Type **vt,
                                 LLVMTypeRef *fty) {
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
  g->fn = fn;
  g->vt = vt;
  g->base = g_new(LLVMValueRef, (gsize)n);
  for (int k = 0; k < n; k++)
    g->base[k] = LLVMGetParam(fn, (unsigned)k);
  LLVMPositionBuilderAtEnd(g->b,
                           LLVMAppendBasicBlockInContext(g->ctx, fn, "entry"));
  /* the accumulators, in the entry block (mem2reg makes them registers) */
  g->acc_f = LLVMBuildAlloca(g->b, g->f64, "acc");
  g->acc_i = LLVMBuildAlloca(g->b, g->i64, "iacc");
  return fn;
}

static void finish_function(Gen *g) {
  LLVMBuildRetVoid(g->b);
  g_clear_pointer(&g->base, g_free);
  g->vt = NULL;
}

/* A function made once per kind of value (the key), as 'made' remembers:
 * values alike share it (each layer of a model the same few), so the
 * optimizer works on each kind once and compiling takes time in
 * proportion to the kinds, not to the program. */
typedef struct Fn {
  LLVMValueRef fn;
  LLVMTypeRef ty;
} Fn;

static Fn *fn_known(GHashTable *made, const char *key) {
  return g_hash_table_lookup(made, key);
}

static Fn *fn_remember(GHashTable *made, char *key, LLVMValueRef fn,
                       LLVMTypeRef ty) {
  Fn *f = g_new(Fn, 1);
  f->fn = fn;
  f->ty = ty;
  g_hash_table_insert(made, key, f);
  return f;
}

/* The types of 't' and of its operands, for a key and for vt. */
static char *types_key(const Term *t, int nargs) {
  GString *key = g_string_new(NULL);
  g_string_append_printf(key, "%p", (const void *)t->type);
  for (int k = 0; k < nargs; k++)
    g_string_append_printf(key, " %p", (const void *)t->args[k]->type);
  return g_string_free(key, FALSE);
}

/* 'void f(ptr result, ptr operand0, ... [, ptr scratch])' computing
 * operator 't' ('scratch': the type of its scratch buffer, or NULL). */
static Fn *op_function(Gen *g, const Term *t, const Type *scratch,
                       GHashTable *made) {
  g_autofree char *types = types_key(t, t->nargs);
  char *key =
      g_strdup_printf("op %d %p %s %p", (int)t->op, (const void *)t->attrs,
                      types, (const void *)scratch);
  Fn *known = fn_known(made, key);
  if (known) {
    g_free(key);
    return known;
  }
  int n = t->nargs + 1 + (scratch != NULL);
  g_autofree const Type **vt = g_new(const Type *, (gsize)n);
  vt[0] = t->type;
  for (int k = 0; k < t->nargs; k++)
    vt[k + 1] = t->args[k]->type;
  if (scratch)
    vt[n - 1] = scratch;
  g_autofree char *name =
      g_strdup_printf("%s_%u", op_name(t->op), g_hash_table_size(made));
  LLVMTypeRef ty;
  LLVMValueRef fn = new_function(g, name, n, FALSE, vt, &ty);
  emit_op(g, t);
  finish_function(g);
  return fn_remember(made, key, fn, ty);
}

/* 'void f(ptr a, ptr b, i64 r)' copying between a chunk-sized value and
 * chunk r (width w along dim d) of a whole one: 'slice d x[r]' reads the
 * chunk (a = the slice, b = x); a tile's iteration r writes it (a = the
 * tile, b = its body's value). */
static Fn *chunk_function(Gen *g, gboolean put, int d, int64_t w,
                          const Type *whole, const Type *chunk,
                          GHashTable *made) {
  char *key =
      g_strdup_printf("%s %d %" G_GINT64_FORMAT " %p %p", put ? "put" : "slice",
                      d, w, (const void *)whole, (const void *)chunk);
  Fn *known = fn_known(made, key);
  if (known) {
    g_free(key);
    return known;
  }
  /* buffer 0 is the one written */
  const Type *vt[2] = {put ? whole : chunk, put ? chunk : whole};
  int at_whole = put ? 0 : 1, at_chunk = 1 - at_whole;
  g_autofree char *name =
      g_strdup_printf("%s_%u", put ? "tile" : "slice", g_hash_table_size(made));
  LLVMTypeRef ty;
  LLVMValueRef fn = new_function(g, name, 2, TRUE, vt, &ty);
  int64_t strides[2][PARTIR_MAX_RANK];
  strides_of(whole, strides[at_whole]);
  strides_of(chunk, strides[at_chunk]);
  const int64_t *sets[2] = {strides[0], strides[1]};
  LLVMValueRef bases[2];
  bases[at_chunk] = c64(g, 0);
  bases[at_whole] = LLVMBuildNSWMul(g->b, LLVMGetParam(fn, 2),
                                    c64(g, w * strides[at_whole][d]), "");
  Nest nest;
  nest_open(g, &nest, chunk->rank, chunk->dims, 2, sets, bases);
  store_raw(g, 0, nest.off[0], load_raw(g, 1, nest.off[1]));
  nest_close(g, &nest);
  finish_function(g);
  return fn_remember(made, key, fn, ty);
}

/* A sum's accumulator (double, or i64 for integers): 'zero' sets it to 0,
 * 'add' adds an iteration's body value, 'round' stores it rounded (or
 * wrapped) into the sum's result, once, as the interpreter does
 * (tensor_new_acc, tensor_from_acc). */
typedef enum { ACC_ZERO, ACC_ADD, ACC_ROUND } AccStep;

static Fn *acc_function(Gen *g, AccStep step, const Type *acc,
                        const Type *other, GHashTable *made) {
  static const char *const names[] = {"acc_zero", "acc_add", "acc_round"};
  char *key = g_strdup_printf("%s %p %p", names[step], (const void *)acc,
                              (const void *)other);
  Fn *known = fn_known(made, key);
  if (known) {
    g_free(key);
    return known;
  }
  /* buffers: 0 the accumulator (ACC_ROUND: the result), 1 the other */
  const Type *vt[2] = {step == ACC_ROUND ? other : acc,
                       step == ACC_ROUND ? acc : other};
  g_autofree char *name =
      g_strdup_printf("%s_%u", names[step], g_hash_table_size(made));
  LLVMTypeRef ty;
  LLVMValueRef fn =
      new_function(g, name, step == ACC_ZERO ? 1 : 2, FALSE, vt, &ty);
  gboolean is_float = dtype_is_float(acc->dtype);
  Loop l;
  LLVMValueRef i = loop_open(g, type_numel(acc), &l);
  switch (step) {
  case ACC_ZERO:
    store_elem(g, 0, i, is_float ? cf64(g, 0) : c64(g, 0));
    break;
  case ACC_ADD: {
    LLVMValueRef a = load_elem(g, 0, i), v = load_elem(g, 1, i);
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
  finish_function(g);
  return fn_remember(made, key, fn, ty);
}

/* ------------------------------------------------------------ the entry */

typedef struct Entry {
  Gen *g;
  const Plan *p;
  GHashTable *made;
  LLVMValueRef fn, bufs;
  LLVMValueRef ivs[PARTIR_MAX_REGIONS + 1]; /* per level: the iteration */
} Entry;

static int slot_index(const Plan *p, const Term *t) {
  return GPOINTER_TO_INT(g_hash_table_lookup(p->index, t)) - 1;
}

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

/* A tile or sum: a loop over its range's chunks in the entry. */
static void emit_region(Entry *e, const Term *t, const SchedRegion *body) {
  Gen *g = e->g;
  int s = slot_index(e->p, t), b = slot_index(e->p, t->args[0]);
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
  e->ivs[t->binder] = loop_open(g, t->range->n / t->range->w, &l);
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
  int s = slot_index(e->p, t);
  const Slot *slot = &g_array_index(e->p->slots, Slot, s);
  if (slot->value || type_numel(slot->type) == 0)
    return; /* evaluated when compiling, or empty */
  LLVMBasicBlockRef at = LLVMGetInsertBlock(g->b);
  if (t->kind == TM_TILE || t->kind == TM_SUM) {
    emit_region(e, t, st->child);
  } else if (t->kind == TM_SLICE) {
    Fn *f = chunk_function(g, FALSE, t->index, t->args[1]->type->w,
                           t->args[0]->type, t->type, e->made);
    back_to_entry(e, at);
    LLVMValueRef args[3] = {buffer(e, s),
                            buffer(e, slot_index(e->p, t->args[0])),
                            e->ivs[t->args[1]->index]};
    call(e, f, args, 3);
  } else {
    const Type *scratch = slot->acc >= 0
                              ? g_array_index(e->p->slots, Slot, slot->acc).type
                              : NULL;
    Fn *f = op_function(g, t, scratch, e->made);
    back_to_entry(e, at);
    g_autofree LLVMValueRef *args = g_new(LLVMValueRef, (gsize)t->nargs + 2);
    int n = 0;
    args[n++] = buffer(e, s);
    for (int k = 0; k < t->nargs; k++)
      args[n++] = buffer(e, slot_index(e->p, t->args[k]));
    if (scratch)
      args[n++] = buffer(e, slot->acc);
    call(e, f, args, n);
  }
}

static void emit_statements(Entry *e, const SchedRegion *r) {
  for (guint i = 0; i < r->stmts->len; i++)
    emit_statement(e, g_ptr_array_index(r->stmts, i));
}

LLVMModuleRef emit_module(LLVMContextRef ctx, const Plan *p,
                          const char *entry) {
  Gen g = {.ctx = ctx};
  g.mod = LLVMModuleCreateWithNameInContext("partir", ctx);
  g.b = LLVMCreateBuilderInContext(ctx);
  g.i1 = LLVMInt1TypeInContext(ctx);
  g.i8 = LLVMInt8TypeInContext(ctx);
  g.i16 = LLVMInt16TypeInContext(ctx);
  g.i32 = LLVMInt32TypeInContext(ctx);
  g.i64 = LLVMInt64TypeInContext(ctx);
  g.f32 = LLVMFloatTypeInContext(ctx);
  g.f64 = LLVMDoubleTypeInContext(ctx);
  g.ptr = LLVMPointerTypeInContext(ctx, 0);
  g.vd = LLVMVoidTypeInContext(ctx);
  Entry e = {.g = &g, .p = p};
  e.made = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  LLVMTypeRef ety = LLVMFunctionType(g.vd, &g.ptr, 1, 0);
  e.fn = LLVMAddFunction(g.mod, entry, ety);
  e.bufs = LLVMGetParam(e.fn, 0);
  g.fn = e.fn;
  LLVMPositionBuilderAtEnd(g.b,
                           LLVMAppendBasicBlockInContext(ctx, e.fn, "entry"));
  emit_statements(&e, p->sched->top);
  LLVMBuildRetVoid(g.b);
  g_hash_table_unref(e.made);
  LLVMDisposeBuilder(g.b);
  return g.mod;
}
