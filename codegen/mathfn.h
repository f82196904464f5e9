/* mathfn.h — transcendentals as inline LLVM IR (codegen/ only).
 *
 * exp, log, tanh, logistic, sqrt and rsqrt built from instructions the
 * loop vectorizer widens, so that a loop over them vectorizes (a call to
 * libm stops it).  Each is computed in its own type, f32 in f32 and f64
 * in f64, within math_max_ulp of the exact result.  The IR relies on
 * IEEE semantics: give its instructions no fast-math flags (reassociation
 * would undo the Cody-Waite and Fast2Sum steps, 'nnan' the NaN
 * selects). */
#ifndef PARTIR_CODEGEN_MATHFN_H
#define PARTIR_CODEGEN_MATHFN_H

#include "codegen/internal.h"

/* ------------------------------------------------------------- mathfn.c */

typedef enum {
  MATH_EXP,
  MATH_LOG,
  MATH_TANH,
  MATH_LOGISTIC, /* 1 / (1 + exp(-x)) */
  MATH_SQRT,
  MATH_RSQRT, /* 1 / sqrt(x) */
} MathFn;

/* fn(x) built at the builder's insert point: x a float or double, or a
 * vector of them (any width); only instructions and intrinsics that the
 * loop vectorizer widens (fmul/fadd, llvm.fma or llvm.fmuladd, llvm.sqrt,
 * llvm.fabs, llvm.rint/llvm.floor, llvm.copysign, bitcasts, integer ops,
 * selects): no calls to libm. */
LLVMValueRef math_emit(LLVMModuleRef mod, LLVMBuilderRef b, MathFn fn,
                       LLVMValueRef x);
/* The maximum error of math_emit's fn in ulp for DT_F32 or DT_F64: the
 * documented bound that the test asserts. */
double math_max_ulp(MathFn fn, DType dt);

#endif
