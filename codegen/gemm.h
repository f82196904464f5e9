/* gemm.h — the code generator's matrix-multiply kernel (codegen/ only):
 * a BLIS-style gemm generated in LLVM IR, one function per module and
 * dtype, which the emitter calls for a contraction (gemm.c). */
#ifndef PARTIR_CODEGEN_GEMM_H
#define PARTIR_CODEGEN_GEMM_H

#include "codegen/internal.h"

/* Bytes of workspace a gemm of 'dt' needs (its packed panels). */
int64_t gemm_workspace_bytes(DType dt);

/* The function 'void (i64 M, i64 N, i64 K, ptr A, i64 rsa, i64 csa,
 * ptr B, i64 rsb, i64 csb, ptr C, i64 rsc, ptr work)', made once per
 * module and dtype (internal linkage), computing
 *   C[i*rsc + j] = sum_k A[i*rsa + k*csa] * B[k*rsb + j*csb]
 * for i < M, j < N (C overwritten; K == 0 gives zeros), strides in
 * elements (any: row-major, transposed, or a batch slice of a larger
 * array), 'work' gemm_workspace_bytes(dt) bytes aligned to 64.
 * dt: DT_F32, DT_F64, or DT_BF16 (stored as the top 16 bits of an f32:
 * packed to f32, accumulated in f32, stored rounded to nearest even, NaN
 * kept quiet).  Its type in *fty. */
LLVMValueRef gemm_function(LLVMModuleRef mod, DType dt, LLVMTypeRef *fty);

#endif
