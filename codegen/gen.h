/* gen.h — what the IR emitter's files share (emit.c, ir.c, arith.c,
 * kernel.c, dot.c): the builder's state, loops, and element arithmetic.
 *
 * Inside a generated function its buffers are its parameters, numbered
 * as 'vt' types them: 0 the result's, then the operands' (leaves of a
 * fused kernel), then scratch.  Elements are loaded into their compute
 * type and stored from it (arith.c):
 *
 *   exact  floats in double, rounded to their type after every
 *          operator (a fused chain rounds each link, as the interpreter
 *          stores each value), integers in i64 wrapped as stored;
 *   fast   f32 and bf16 in float, f64 in double, integers in i64;
 *          bf16 rounded where it is stored or converted to.
 */
#ifndef PARTIR_CODEGEN_GEN_H
#define PARTIR_CODEGEN_GEN_H

#include "codegen/internal.h"

typedef struct Gen {
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMValueRef fn;
  LLVMTypeRef i1, i8, i16, i32, i64, f32, f64, ptr, vd;
  gboolean exact;     /* the interpreter's arithmetic (CodegenOptions) */
  CodegenBlas blas;   /* matrix products through BLAS (dot.c) */
  const Type **vt;    /* the types of the function's buffers */
  LLVMValueRef *base; /* its buffers */
  /* entry-block accumulators: double, float, i64 */
  LLVMValueRef acc_f, acc_s, acc_i;
} Gen;

/* ---------------------------------------------------------------- ir.c */

LLVMValueRef c64(Gen *g, int64_t v);
LLVMValueRef cf64(Gen *g, double v);
/* A floating constant of the type of 'like' (a float or a double). */
LLVMValueRef cfl(Gen *g, LLVMValueRef like, double v);

typedef struct Loop {
  LLVMBasicBlockRef body;
  LLVMValueRef iv;
  int64_t n;
} Loop;

/* Opens 'for (iv = 0; iv < n; iv++)', n >= 1: the body follows. */
LLVMValueRef loop_open(Gen *g, int64_t n, Loop *l);
void loop_close(Gen *g, Loop *l);

/* A nest of loops over the index space 'sizes[0..rank)', row-major, that
 * keeps linear offsets by up to three sets of strides ('off[k]' =
 * base[k] + sum(index[d] * strides[k][d])). */
typedef struct Nest {
  int rank, nsets;
  Loop loops[PARTIR_MAX_RANK * 3];
  LLVMValueRef off[3];
} Nest;

void nest_open(Gen *g, Nest *n, int rank, const int64_t *sizes, int nsets,
               const int64_t *const *strides, const LLVMValueRef *base);
void nest_close(Gen *g, Nest *n);

/* A call of 'name', declared in the module when first used, of the type
 * 'ret (params...)'. */
LLVMValueRef ir_call(Gen *g, const char *name, LLVMTypeRef ret,
                     LLVMTypeRef *params, LLVMValueRef *args, int n);
/* The same for an intrinsic over the type of args[0] (llvm.fmuladd.*). */
LLVMValueRef ir_intrinsic(Gen *g, const char *name, LLVMValueRef *args, int n);
/* A call of a function of this process at 'addr'. */
LLVMValueRef ir_call_address(Gen *g, const void *addr, LLVMTypeRef ret,
                             LLVMTypeRef *params, LLVMValueRef *args, int n);

/* Allows reassociation of floating instruction 'v' (a reduction that may
 * be vectorized: fast arithmetic only). */
void ir_reassoc(Gen *g, LLVMValueRef v);

/* A new internal, never-inlined function 'void NAME(ptr b0, ...,
 * ptr b[n-1] [, i64 index])' whose buffers have the types 'vt', the
 * builder in its entry block.  Its body follows; then ir_finish. */
LLVMValueRef ir_function(Gen *g, const char *name, int n, gboolean index,
                         const Type **vt, LLVMTypeRef *fty);
void ir_finish(Gen *g);

/* Row-major strides of 'ty' (as tensor_strides). */
void strides_of(const Type *ty, int64_t *strides);
/* The integers of list attribute 'key' of 't' into 'out': their count. */
int attr_ints(const Term *t, const char *key, int64_t *out);
gboolean any_empty(int n, const int64_t *sizes);

/* ------------------------------------------------- ir.c: function cache */

/* A function made once per kind of value (its key), as 'made'
 * remembers: values alike share it (each layer of a model the same
 * few), so the optimizer works on each kind once and compiling takes
 * time in proportion to the kinds, not to the program. */
typedef struct Fn {
  LLVMValueRef fn;
  LLVMTypeRef ty;
} Fn;

/* The function of 'key' in 'made' (then 'key' is freed), or NULL. */
Fn *fn_known(GHashTable *made, char *key);
Fn *fn_remember(GHashTable *made, char *key, LLVMValueRef fn, LLVMTypeRef ty);

/* ------------------------------------------------------------- arith.c */

/* The storage type of an element of 'dt'; the type it is computed in. */
LLVMTypeRef storage(Gen *g, DType dt);
LLVMTypeRef compute_type(Gen *g, DType dt);

/* Element 'off' of buffer 's': as stored, or in its compute type. */
LLVMValueRef load_raw(Gen *g, int s, LLVMValueRef off);
LLVMValueRef load_elem(Gen *g, int s, LLVMValueRef off);
void store_raw(Gen *g, int s, LLVMValueRef off, LLVMValueRef v);
/* Stores 'v' (in the compute type of the buffer's dtype) rounded or
 * wrapped to its type. */
void store_elem(Gen *g, int s, LLVMValueRef off, LLVMValueRef v);

/* An element of 'dt' at 'ptr': loaded into its compute type; stored
 * from it. */
LLVMValueRef load_at(Gen *g, DType dt, LLVMValueRef ptr);
void store_at(Gen *g, DType dt, LLVMValueRef ptr, LLVMValueRef v);

/* 'v', computed for a value of 'dt', as the value holds it: rounded to
 * dt and back (exact: after every operator of a fused chain). */
LLVMValueRef round_to(Gen *g, DType dt, LLVMValueRef v);

/* Operator 'op' of an elementwise term 't' (compare, convert, select
 * included) on its operands' values 'v' (compute types): the result in
 * t's compute type, not yet rounded. */
LLVMValueRef arith_op(Gen *g, const Term *t, LLVMValueRef *v);

LLVMValueRef is_nan(Gen *g, LLVMValueRef x);

/* ----------------------------------------------------------- kernel.c */

/* The function computing value 't' (an operator with a buffer) of 'p':
 * 'void f(ptr result, ptr leaf..., [ptr scratch])', its fused operands
 * computed inside its loops.  The values it reads (its leaves: values
 * with buffers) are appended to 'leaves' in parameter order;
 * 'scratch' is the type of its scratch buffer, or NULL. */
Fn *kernel_function(Gen *g, const Plan *p, const Term *t, const Type *scratch,
                    GHashTable *made, GPtrArray *leaves);

/* -------------------------------------------------------------- dot.c */

/* matmul or dot_general 't' into buffer 0 from buffers 1 and 2, with
 * buffer 3 its scratch (the plan sizes it: dot_scratch_bytes). */
void emit_dot(Gen *g, const Term *t);

#endif
