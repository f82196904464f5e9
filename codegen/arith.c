/* arith.c — one element: loading it into its compute type, storing it
 * rounded, and each elementwise operator on it.
 *
 * Exact arithmetic mirrors the interpreter's kernels (src/eval/
 * kernels.c) so that results agree bit for bit: elements widened to
 * double or i64 as tensor_get_* does, rounded or wrapped as tensor_set_*
 * does, the kernels' NaN rules, XLA's integer division and remainder,
 * libm's exp, log, tanh, pow, log1p and expm1.  Fast arithmetic computes
 * f32, bf16 and f16 in float and f64 in double, with the polynomial
 * transcendentals of mathfn.c; integers are computed alike in both
 * (they are exact): in i64, signed types sign-extended and unsigned ones
 * zero-extended, so i64 comparison and division are theirs.
 */
#include "codegen/gen.h"
#include "codegen/mathfn.h"

LLVMTypeRef storage(Gen *g, DType dt) {
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
  case DT_I8:
  case DT_UI8:
    return g->i8;
  case DT_F16:
  case DT_I16:
  case DT_UI16:
    return g->i16;
  case DT_UI32:
    return g->i32;
  default:
    g_assert_not_reached();
  }
}

LLVMTypeRef compute_type(Gen *g, DType dt) {
  if (!dtype_is_float(dt))
    return g->i64;
  return g->exact || dt == DT_F64 ? g->f64 : g->f32;
}

static LLVMValueRef elem_ptr(Gen *g, int s, LLVMValueRef off) {
  LLVMTypeRef ty = storage(g, g->vt[s]->dtype);
  return LLVMBuildGEP2(g->b, ty, g->base[s], &off, 1, "");
}

LLVMValueRef load_raw(Gen *g, int s, LLVMValueRef off) {
  LLVMTypeRef ty = storage(g, g->vt[s]->dtype);
  return LLVMBuildLoad2(g->b, ty, elem_ptr(g, s, off), "");
}

void store_raw(Gen *g, int s, LLVMValueRef off, LLVMValueRef v) {
  LLVMBuildStore(g->b, v, elem_ptr(g, s, off));
}

/* A float (f32) widened to the compute type of 'dt'. */
static LLVMValueRef from_float(Gen *g, DType dt, LLVMValueRef f) {
  LLVMTypeRef ty = compute_type(g, dt);
  return ty == g->f32 ? f : LLVMBuildFPExt(g->b, f, ty, "");
}

/* bf16 bits to the f32 they are the top half of. */
static LLVMValueRef f32_from_bf16(Gen *g, LLVMValueRef v) {
  LLVMValueRef wide = LLVMBuildZExt(g->b, v, g->i32, "");
  wide = LLVMBuildShl(g->b, wide, LLVMConstInt(g->i32, 16, 0), "");
  return LLVMBuildBitCast(g->b, wide, g->f32, "");
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
  LLVMValueRef r = LLVMBuildSelect(g->b, is_nan(g, f), nan_bits, rounded, "");
  return LLVMBuildTrunc(g->b, r, g->i16, "");
}

/* f16 bits to the f32 they mean (as dtype_f16_to_f32): the exponent
 * rebiased, or for a subnormal its fraction times 2^-24. */
static LLVMValueRef f32_from_f16(Gen *g, LLVMValueRef v) {
  LLVMValueRef w = LLVMBuildZExt(g->b, v, g->i32, "");
#define K(x) LLVMConstInt(g->i32, (x), 0)
  LLVMValueRef sign =
      LLVMBuildShl(g->b, LLVMBuildAnd(g->b, w, K(0x8000), ""), K(16), "");
  LLVMValueRef exp =
      LLVMBuildAnd(g->b, LLVMBuildLShr(g->b, w, K(10), ""), K(0x1f), "");
  LLVMValueRef frac = LLVMBuildAnd(g->b, w, K(0x3ff), "");
  LLVMValueRef frac_bits = LLVMBuildShl(g->b, frac, K(13), "");
  LLVMValueRef normal =
      LLVMBuildShl(g->b, LLVMBuildAdd(g->b, exp, K(112), ""), K(23), "");
  LLVMValueRef top = LLVMBuildICmp(g->b, LLVMIntEQ, exp, K(31), "");
  LLVMValueRef bits = LLVMBuildOr(
      g->b, sign,
      LLVMBuildOr(g->b, LLVMBuildSelect(g->b, top, K(0x7f800000), normal, ""),
                  frac_bits, ""),
      "");
  LLVMValueRef sub =
      LLVMBuildFMul(g->b, LLVMBuildUIToFP(g->b, frac, g->f32, ""),
                    LLVMConstReal(g->f32, 0x1p-24), "");
  LLVMValueRef sub_bits =
      LLVMBuildOr(g->b, LLVMBuildBitCast(g->b, sub, g->i32, ""), sign, "");
  LLVMValueRef zero = LLVMBuildICmp(g->b, LLVMIntEQ, exp, K(0), "");
  return LLVMBuildBitCast(g->b, LLVMBuildSelect(g->b, zero, sub_bits, bits, ""),
                          g->f32, "");
}

/* f16 bits from an f32: round to nearest even, as dtype_f16_from_f32
 * (the same steps, as selects: they vectorize). */
static LLVMValueRef f16_from_f32(Gen *g, LLVMValueRef f) {
  LLVMValueRef bits = LLVMBuildBitCast(g->b, f, g->i32, "");
  LLVMValueRef sign =
      LLVMBuildAnd(g->b, LLVMBuildLShr(g->b, bits, K(16), ""), K(0x8000), "");
  LLVMValueRef mag = LLVMBuildAnd(g->b, bits, K(0x7fffffff), "");
  LLVMValueRef nan = LLVMBuildOr(
      g->b, K(0x7e00),
      LLVMBuildAnd(g->b, LLVMBuildLShr(g->b, mag, K(13), ""), K(0x3ff), ""),
      "");
  /* a normal f16: the exponent rebiased, 10 bits kept */
  LLVMValueRef h_norm = LLVMBuildLShr(
      g->b, LLVMBuildSub(g->b, mag, K(0x38000000), ""), K(13), "");
  LLVMValueRef rest_norm = LLVMBuildAnd(g->b, mag, K(0x1fff), "");
  /* a subnormal one: m >> (126 - e), the shift kept in 14..25 (25 and
   * above give 0 and round down) */
  LLVMValueRef e = LLVMBuildLShr(g->b, mag, K(23), "");
  LLVMValueRef shift = LLVMBuildSub(
      g->b, K(126),
      LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntUGT, e, K(112), ""),
                      K(112), e, ""),
      "");
  shift =
      LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntUGT, shift, K(25), ""),
                      K(25), shift, "");
  LLVMValueRef m = LLVMBuildOr(g->b, LLVMBuildAnd(g->b, mag, K(0x7fffff), ""),
                               K(0x800000), "");
  LLVMValueRef h_sub = LLVMBuildLShr(g->b, m, shift, "");
  LLVMValueRef half_sub =
      LLVMBuildShl(g->b, K(1), LLVMBuildSub(g->b, shift, K(1), ""), "");
  LLVMValueRef rest_sub = LLVMBuildAnd(
      g->b, m,
      LLVMBuildSub(g->b, LLVMBuildShl(g->b, K(1), shift, ""), K(1), ""), "");
  LLVMValueRef normal = LLVMBuildICmp(g->b, LLVMIntUGE, mag, K(0x38800000), "");
  LLVMValueRef h = LLVMBuildSelect(g->b, normal, h_norm, h_sub, "");
  LLVMValueRef rest = LLVMBuildSelect(g->b, normal, rest_norm, rest_sub, "");
  LLVMValueRef half = LLVMBuildSelect(g->b, normal, K(0x1000), half_sub, "");
  LLVMValueRef up = LLVMBuildOr(
      g->b, LLVMBuildICmp(g->b, LLVMIntUGT, rest, half, ""),
      LLVMBuildAnd(g->b, LLVMBuildICmp(g->b, LLVMIntEQ, rest, half, ""),
                   LLVMBuildTrunc(g->b, h, g->i1, ""), ""),
      "");
  h = LLVMBuildAdd(g->b, h, LLVMBuildZExt(g->b, up, g->i32, ""), "");
  h = LLVMBuildSelect(g->b,
                      LLVMBuildICmp(g->b, LLVMIntUGE, mag, K(0x47800000), ""),
                      K(0x7c00), h, "");
  h = LLVMBuildSelect(g->b,
                      LLVMBuildICmp(g->b, LLVMIntUGT, mag, K(0x7f800000), ""),
                      nan, h, "");
  return LLVMBuildTrunc(g->b, LLVMBuildOr(g->b, sign, h, ""), g->i16, "");
}

/* f16 bits from a double, rounded once (as dtype_f16_from_f64): the
 * double rounded to odd in f32, then to nearest even. */
static LLVMValueRef f16_from_f64(Gen *g, LLVMValueRef d) {
  LLVMValueRef f = LLVMBuildFPTrunc(g->b, d, g->f32, "");
  LLVMValueRef back = LLVMBuildFPExt(g->b, f, g->f64, "");
  LLVMValueRef inexact = LLVMBuildFCmp(g->b, LLVMRealONE, back, d, "");
  LLVMValueRef away =
      LLVMBuildFCmp(g->b, LLVMRealOGT, ir_intrinsic(g, "llvm.fabs", &back, 1),
                    ir_intrinsic(g, "llvm.fabs", &d, 1), "");
  LLVMValueRef bits = LLVMBuildBitCast(g->b, f, g->i32, "");
  bits =
      LLVMBuildSelect(g->b, away, LLVMBuildSub(g->b, bits, K(1), ""), bits, "");
  bits = LLVMBuildSelect(g->b, inexact, LLVMBuildOr(g->b, bits, K(1), ""), bits,
                         "");
  return f16_from_f32(g, LLVMBuildBitCast(g->b, bits, g->f32, ""));
}
#undef K

/* f16 bits from a float or a double (the compute types), rounded once. */
static LLVMValueRef f16_from(Gen *g, LLVMValueRef v) {
  return LLVMTypeOf(v) == g->f64 ? f16_from_f64(g, v) : f16_from_f32(g, v);
}

/* A floating value as an f32 (the compute type is float or double). */
static LLVMValueRef to_float(Gen *g, LLVMValueRef v) {
  return LLVMTypeOf(v) == g->f32 ? v : LLVMBuildFPTrunc(g->b, v, g->f32, "");
}

/* Stored 'raw' of 'dt' back in its compute type . */
static LLVMValueRef from_storage(Gen *g, DType dt, LLVMValueRef raw) {
  switch (dt) {
  case DT_F32:
    return from_float(g, dt, raw);
  case DT_BF16:
    return from_float(g, dt, f32_from_bf16(g, raw));
  case DT_F16:
    return from_float(g, dt, f32_from_f16(g, raw));
  case DT_I8:
  case DT_I16:
  case DT_I32:
    return LLVMBuildSExt(g->b, raw, g->i64, "");
  case DT_I1:
  case DT_UI8:
  case DT_UI16:
  case DT_UI32:
    return LLVMBuildZExt(g->b, raw, g->i64, "");
  default:
    return raw;
  }
}

static LLVMValueRef to_storage(Gen *g, DType dt, LLVMValueRef v);

LLVMValueRef load_elem(Gen *g, int s, LLVMValueRef off) {
  return from_storage(g, g->vt[s]->dtype, load_raw(g, s, off));
}

LLVMValueRef load_at(Gen *g, DType dt, LLVMValueRef ptr) {
  return from_storage(g, dt, LLVMBuildLoad2(g->b, storage(g, dt), ptr, ""));
}

void store_at(Gen *g, DType dt, LLVMValueRef ptr, LLVMValueRef v) {
  LLVMBuildStore(g->b, to_storage(g, dt, v), ptr);
}

/* 'v' (compute type of dt) as stored: rounded or wrapped. */
static LLVMValueRef to_storage(Gen *g, DType dt, LLVMValueRef v) {
  switch (dt) {
  case DT_F32:
    return to_float(g, v);
  case DT_F64:
    return v;
  case DT_BF16:
    return bf16_from_f32(g, to_float(g, v));
  case DT_F16:
    return f16_from(g, v);
  case DT_I8:
  case DT_I16:
  case DT_I32:
  case DT_UI8:
  case DT_UI16:
  case DT_UI32:
    return LLVMBuildTrunc(g->b, v, storage(g, dt), "");
  case DT_I64:
    return v;
  case DT_I1:
    return LLVMBuildZExt(g->b, LLVMBuildICmp(g->b, LLVMIntNE, v, c64(g, 0), ""),
                         g->i8, "");
  default:
    g_assert_not_reached();
  }
}

void store_elem(Gen *g, int s, LLVMValueRef off, LLVMValueRef v) {
  store_raw(g, s, off, to_storage(g, g->vt[s]->dtype, v));
}

LLVMValueRef round_to(Gen *g, DType dt, LLVMValueRef v) {
  if (dt == DT_F64 || dt == DT_I64 || (!g->exact && dtype_is_float(dt)))
    return v;
  return from_storage(g, dt, to_storage(g, dt, v));
}

LLVMValueRef is_nan(Gen *g, LLVMValueRef x) {
  return LLVMBuildFCmp(g->b, LLVMRealUNO, x, x, "");
}

/* ------------------------------------------------------ transcendentals */

/* libm's 'name' on doubles (exact arithmetic: the interpreter's calls). */
static LLVMValueRef libm(Gen *g, const char *name, LLVMValueRef *args,
                         int nargs) {
  LLVMTypeRef params[2] = {g->f64, g->f64};
  return ir_call(g, name, g->f64, params, args, nargs);
}

/* Fast exp, log, tanh and logistic in the value's own type: inline
 * polynomials that vectorize (mathfn.c, within math_max_ulp). */
static LLVMValueRef math_fast(Gen *g, Op op, LLVMValueRef x) {
  MathFn fn = op == OP_EXP    ? MATH_EXP
              : op == OP_LOG  ? MATH_LOG
              : op == OP_TANH ? MATH_TANH
                              : MATH_LOGISTIC;
  return math_emit(g->mod, g->b, fn, x);
}

/* log1p, expm1, sin, cos, erf and erfc: libm's, in the value's own type
 * (log1pf for a float: fast arithmetic on f32, bf16 and f16; on a GPU
 * libdevice's __nv_log1pf...).  No polynomial: exports use them on
 * small tensors (log-probabilities, GELU variants, rotary position
 * embeddings' angles), and libm reduces any argument of sin and cos
 * exactly. */
static LLVMValueRef libm_own_type(Gen *g, Op op, LLVMValueRef x) {
  gboolean is_double = LLVMTypeOf(x) == g->f64;
  const char *base = op == OP_LOG1P   ? "log1p"
                     : op == OP_EXPM1 ? "expm1"
                     : op == OP_SIN   ? "sin"
                     : op == OP_COS   ? "cos"
                     : op == OP_ERF   ? "erf"
                                      : "erfc";
  g_autofree char *name = g_strconcat(base, is_double ? "" : "f", NULL);
  LLVMTypeRef ty = LLVMTypeOf(x);
  return ir_call(g, name, ty, &ty, &x, 1);
}

/* Fast exp, log, tanh and logistic on a GPU: libdevice's, in the
 * value's own type (__nv_expf, __nv_exp, ...), which the GPU computes
 * with its special function units; logistic as 1 / (1 + exp(-x)). */
static LLVMValueRef libdevice_fast(Gen *g, Op op, LLVMValueRef x) {
  gboolean is_double = LLVMTypeOf(x) == g->f64;
  LLVMTypeRef ty = LLVMTypeOf(x);
  const char *base = op == OP_LOG ? "log" : op == OP_TANH ? "tanh" : "exp";
  g_autofree char *name = g_strconcat(base, is_double ? "" : "f", NULL);
  if (op != OP_LOGISTIC)
    return ir_call(g, name, ty, &ty, &x, 1);
  LLVMValueRef nx = LLVMBuildFNeg(g->b, x, "");
  LLVMValueRef e = ir_call(g, name, ty, &ty, &nx, 1);
  return LLVMBuildFDiv(g->b, cfl(g, x, 1.0),
                       LLVMBuildFAdd(g->b, cfl(g, x, 1.0), e, ""), "");
}

/* exp, log, tanh, logistic, sqrt, rsqrt in the value's own type. */
static LLVMValueRef transcendental(Gen *g, Op op, LLVMValueRef x) {
  if (op == OP_SQRT || op == OP_RSQRT) { /* correctly rounded, as libm */
    LLVMValueRef r = ir_intrinsic(g, "llvm.sqrt", &x, 1);
    return op == OP_SQRT ? r : LLVMBuildFDiv(g->b, cfl(g, x, 1.0), r, "");
  }
  if (g->exact) {
    if (op == OP_LOGISTIC) {
      LLVMValueRef nx = LLVMBuildFNeg(g->b, x, "");
      LLVMValueRef e = libm(g, "exp", &nx, 1);
      return LLVMBuildFDiv(g->b, cf64(g, 1.0),
                           LLVMBuildFAdd(g->b, cf64(g, 1.0), e, ""), "");
    }
    return libm(g, op == OP_EXP ? "exp" : op == OP_LOG ? "log" : "tanh", &x, 1);
  }
  return g->gpu ? libdevice_fast(g, op, x) : math_fast(g, op, x);
}

/* ---------------------------------------------------------- elementwise */

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
    return LLVMBuildSelect(g->b, nan, cfl(g, a, NAN), r, "");
  }
  case OP_POW: {
    LLVMValueRef args[2] = {a, b};
    if (LLVMTypeOf(a) == g->f64)
      return libm(g, "pow", args, 2);
    LLVMTypeRef params[2] = {g->f32, g->f32};
    return ir_call(g, "powf", g->f32, params, args, 2);
  }
  case OP_REM: /* fmod: exact, so the same in either type */
    return LLVMBuildFRem(g->b, a, b, "");
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
    LLVMValueRef min = c64(g, dtype_int_min(dt));
    LLVMValueRef overflow =
        LLVMBuildAnd(g->b, LLVMBuildICmp(g->b, LLVMIntEQ, b, c64(g, -1), ""),
                     LLVMBuildICmp(g->b, LLVMIntEQ, a, min, ""), "");
    LLVMValueRef unsafe = LLVMBuildOr(g->b, zero, overflow, "");
    LLVMValueRef d = LLVMBuildSelect(g->b, unsafe, c64(g, 1), b, "");
    LLVMValueRef q = LLVMBuildSDiv(g->b, a, d, "");
    q = LLVMBuildSelect(g->b, overflow, a, q, "");
    return LLVMBuildSelect(g->b, zero, c64(g, -1), q, "");
  }
  case OP_REM: { /* x%0 is x, MIN%-1 is 0 (XLA), never a trap */
    LLVMValueRef zero = LLVMBuildICmp(g->b, LLVMIntEQ, b, c64(g, 0), "");
    LLVMValueRef minus = LLVMBuildICmp(g->b, LLVMIntEQ, b, c64(g, -1), "");
    LLVMValueRef d = LLVMBuildSelect(g->b, LLVMBuildOr(g->b, zero, minus, ""),
                                     c64(g, 1), b, "");
    LLVMValueRef r = LLVMBuildSRem(g->b, a, d, ""); /* x%1 is 0 */
    return LLVMBuildSelect(g->b, zero, a, r, "");
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
  case OP_ABS: /* as fabs: the sign bit cleared (-0 and NaNs too) */
    return ir_intrinsic(g, "llvm.fabs", &x, 1);
  case OP_RELU: { /* NaN stays, else max(x, 0) */
    LLVMValueRef zero = cfl(g, x, 0);
    LLVMValueRef pos = LLVMBuildFCmp(g->b, LLVMRealOGT, x, zero, "");
    LLVMValueRef r = LLVMBuildSelect(g->b, pos, x, zero, "");
    return LLVMBuildSelect(g->b, is_nan(g, x), x, r, "");
  }
  /* exact in any type: the interpreter's floor, ceil, round and its
   * ties to even */
  case OP_FLOOR:
    return ir_intrinsic(g, "llvm.floor", &x, 1);
  case OP_CEIL:
    return ir_intrinsic(g, "llvm.ceil", &x, 1);
  case OP_ROUND_AWAY:
    return ir_intrinsic(g, "llvm.round", &x, 1);
  case OP_ROUND_EVEN:
    return ir_intrinsic(g, "llvm.roundeven", &x, 1);
  case OP_LOG1P:
  case OP_EXPM1:
  case OP_SIN:
  case OP_COS:
  case OP_ERF:
  case OP_ERFC:
    return libm_own_type(g, op, x);
  default:
    return transcendental(g, op, x);
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

/* A bitwise operator on 'dt' (b is NULL for not, popcnt and clz), as the
 * interpreter's bitwise_int: operands in i64 as loaded (sign- or zero-
 * extended), a shift amount read unsigned in the operand's width, one
 * of the width or more shifting every bit out (0, or the sign in every
 * bit for shift_right_arithmetic); LLVM's shifts by that much are
 * poison, so the amount is clamped first.  not on i1 is logical. */
static LLVMValueRef bitwise(Gen *g, Op op, DType dt, LLVMValueRef a,
                            LLVMValueRef b) {
  int width = (int)dtype_storage_bytes(dt) * 8;
  LLVMValueRef mask =
      c64(g, width == 64 ? -1 : (int64_t)(((uint64_t)1 << width) - 1));
  LLVMValueRef ua = LLVMBuildAnd(g->b, a, mask, "");
  if (op == OP_NOT)
    return LLVMBuildXor(g->b, a, c64(g, dt == DT_I1 ? 1 : -1), "");
  if (op == OP_POPCNT)
    return ir_intrinsic(g, "llvm.ctpop", &ua, 1);
  if (op == OP_CLZ) { /* of 0: 64 (not poison), less the bits above the width */
    LLVMValueRef args[2] = {ua, LLVMConstInt(g->i1, 0, 0)};
    return LLVMBuildSub(g->b, ir_intrinsic(g, "llvm.ctlz", args, 2),
                        c64(g, 64 - width), "");
  }
  if (op == OP_AND)
    return LLVMBuildAnd(g->b, a, b, "");
  if (op == OP_OR)
    return LLVMBuildOr(g->b, a, b, "");
  if (op == OP_XOR)
    return LLVMBuildXor(g->b, a, b, "");
  LLVMValueRef amount = LLVMBuildAnd(g->b, b, mask, "");
  LLVMValueRef out = LLVMBuildICmp(g->b, LLVMIntUGE, amount, c64(g, width), "");
  switch (op) {
  case OP_SHIFT_LEFT:
  case OP_SHIFT_RIGHT_LOGICAL: {
    LLVMValueRef safe = LLVMBuildSelect(g->b, out, c64(g, 0), amount, "");
    LLVMValueRef r = op == OP_SHIFT_LEFT ? LLVMBuildShl(g->b, ua, safe, "")
                                         : LLVMBuildLShr(g->b, ua, safe, "");
    return LLVMBuildSelect(g->b, out, c64(g, 0), r, "");
  }
  case OP_SHIFT_RIGHT_ARITHMETIC: { /* the width's top bit is the sign */
    LLVMValueRef up = c64(g, 64 - width);
    LLVMValueRef sa =
        LLVMBuildAShr(g->b, LLVMBuildShl(g->b, a, up, ""), up, "");
    LLVMValueRef safe = LLVMBuildSelect(g->b, out, c64(g, 63), amount, "");
    return LLVMBuildAShr(g->b, sa, safe, "");
  }
  default:
    g_assert_not_reached();
  }
}

/* Comparison 'dir' of 'a' and 'b': true or false, as an i1 (NE is true
 * when unordered, the others false). */
static LLVMValueRef compare(Gen *g, const char *dir, gboolean is_float,
                            LLVMValueRef a, LLVMValueRef b) {
  static const struct {
    const char *name;
    LLVMRealPredicate real;
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
  LLVMTypeRef ty = compute_type(g, to);
  if (ff && tf) {
    /* fast arithmetic keeps f16 in float: the conversion rounds, once
     * from whatever type it comes from */
    if (to == DT_F16 && !g->exact)
      return f32_from_f16(g, f16_from(g, x));
    if (LLVMTypeOf(x) != ty)
      x = ty == g->f64 ? LLVMBuildFPExt(g->b, x, ty, "")
                       : LLVMBuildFPTrunc(g->b, x, ty, "");
    /* ... and bf16: through f32 */
    return to == DT_BF16 && !g->exact
               ? from_float(g, to, f32_from_bf16(g, bf16_from_f32(g, x)))
               : x;
  }
  if (!ff && !tf)
    return x;
  if (ff) {
    if (LLVMTypeOf(x) != g->f64)
      x = LLVMBuildFPExt(g->b, x, g->f64, "");
    if (to == DT_I1)
      return LLVMBuildZExt(g->b,
                           LLVMBuildFCmp(g->b, LLVMRealUNE, x, cf64(g, 0), ""),
                           g->i64, "");
    /* the bounds as exact doubles (kernels.c: float_to_int) */
    int64_t min = dtype_int_min(to), max = dtype_int_max(to);
    double lo = (double)min, hi_excl = (double)max + 1.0;
    LLVMValueRef low = LLVMBuildFCmp(g->b, LLVMRealOLE, x, cf64(g, lo), "");
    LLVMValueRef high =
        LLVMBuildFCmp(g->b, LLVMRealOGE, x, cf64(g, hi_excl), "");
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
    return from_float(g, to, LLVMBuildSIToFP(g->b, x, g->f32, ""));
  LLVMValueRef d = LLVMBuildSIToFP(g->b, x, g->f64, "");
  if (to == DT_F64 || g->exact)
    return d;
  if (to == DT_F16)
    return f32_from_f16(g, f16_from_f64(g, d));
  return from_float(g, to, f32_from_bf16(g, bf16_from_f32(g, to_float(g, d))));
}

LLVMValueRef arith_op(Gen *g, const Term *t, LLVMValueRef *v) {
  DType in = t->args[0]->type->dtype;
  switch (t->op) {
  case OP_SELECT:
    return LLVMBuildSelect(g->b,
                           LLVMBuildICmp(g->b, LLVMIntNE, v[0], c64(g, 0), ""),
                           v[1], v[2], "");
  case OP_COMPARE: {
    const char *dir = attrs_get(t->attrs, "direction")->sym;
    return LLVMBuildZExt(g->b, compare(g, dir, dtype_is_float(in), v[0], v[1]),
                         g->i64, "");
  }
  case OP_CONVERT:
    return convert(g, in, t->type->dtype, v[0]);
  case OP_BITCAST: /* the stored bits, read as the other type */
    return from_storage(g, t->type->dtype,
                        LLVMBuildBitCast(g->b, to_storage(g, in, v[0]),
                                         storage(g, t->type->dtype), ""));
  case OP_AND ... OP_CLZ:
    return bitwise(g, t->op, in, v[0], t->nargs == 2 ? v[1] : NULL);
  default:
    if (t->nargs == 2)
      return dtype_is_float(in)
                 ? binary_float(g, t->op, v[0], v[1])
                 : binary_int(g, t->op, t->type->dtype, v[0], v[1]);
    return dtype_is_float(in) ? unary_float(g, t->op, v[0])
                              : unary_int(g, t->op, v[0]);
  }
}
