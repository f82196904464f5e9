/* gen.h — what the IR emitter's files share (emit.c, ir.c, arith.c,
 * kernel.c, scatter.c, dot.c): the builder's state, loops, and element
 * arithmetic.
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
  gboolean gpu;       /* NVPTX kernels (nvptx.c): a function is a kernel,
                         its outer loop spread over the grid's threads,
                         transcendentals from libdevice */
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
  LLVMValueRef step;      /* NULL: 1 */
  LLVMBasicBlockRef exit; /* a strided loop's, made when it opens */
} Loop;

/* Opens 'for (iv = 0; iv < n; iv++)', n >= 1: the body follows. */
LLVMValueRef loop_open(Gen *g, int64_t n, Loop *l);
/* Opens 'for (iv = start; iv < n; iv += step)' (start may be n or more:
 * no iteration), 'start' and 'step' i64 values: a GPU thread's share. */
LLVMValueRef loop_open_strided(Gen *g, LLVMValueRef start, LLVMValueRef step,
                               int64_t n, Loop *l);
void loop_close(Gen *g, Loop *l);

/* The kernel's outer loop over 'n' elements: on the CPU loop_open, on a
 * GPU a grid-stride loop (thread t of the grid takes t, t + threads,
 * ...).  n >= 1 on the CPU. */
LLVMValueRef par_loop_open(Gen *g, int64_t n, Loop *l);

/* A GPU special register (PTX %tid.x, %ntid.x, %ctaid.x, %nctaid.x: 'reg'
 * "tid.x" ...) as an i64. */
LLVMValueRef gpu_sreg(Gen *g, const char *reg);
/* bar.sync 0: every thread of the block waits for the others. */
void gpu_barrier(Gen *g);

/* A nest of loops over the index space 'sizes[0..rank)', row-major, that
 * keeps linear offsets by up to three sets of strides ('off[k]' =
 * base[k] + sum(index[d] * strides[k][d])). */
typedef struct Nest {
  int rank, nsets;
  Loop loops[PARTIR_MAX_RANK * 3];
  LLVMValueRef off[3];
  gboolean flat; /* par_nest_open on a GPU: one grid-stride loop ('whole'),
                    loops[d].iv the indices computed from its own */
  Loop whole;
} Nest;

void nest_open(Gen *g, Nest *n, int rank, const int64_t *sizes, int nsets,
               const int64_t *const *strides, const LLVMValueRef *base);
/* The kernel's outer nest: nest_open on the CPU; on a GPU one grid-stride
 * loop over the elements, each thread's multi-index computed from its
 * linear one (loops[d].iv). */
void par_nest_open(Gen *g, Nest *n, int rank, const int64_t *sizes, int nsets,
                   const int64_t *const *strides, const LLVMValueRef *base);
void nest_close(Gen *g, Nest *n);

/* A call of 'name', declared in the module when first used, of the type
 * 'ret (params...)'; on a GPU of libdevice's '__nv_NAME' (libm's names
 * and arguments: __nv_exp, __nv_powf, ...). */
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
 * builder in its entry block (on a GPU an exported kernel).  Its body
 * follows; then ir_finish. */
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

/* ---------------------------------------------------------- scatter.c */

/* The bodies of scatter_add and dynamic_update_slice roots: the operand
 * (buffer 1) copied to the result (buffer 0), then the updates added at
 * their windows or written at the clamped starts. */
void emit_scatter_add(Gen *g, const Term *t);
void emit_dynamic_update_slice(Gen *g, const Term *t);

/* ------------------------------------------------------------- emit.c */

/* 'void f(ptr a, ptr b, i64 r)' copying between a chunk-sized value and
 * chunk r (width w along dim d) of a whole one: 'slice d x[r]' reads the
 * chunk (a = the slice, b = x); a tile's iteration r writes it (a = the
 * tile, b = its body's value).  On a GPU, also a collective's packing
 * (nvptx.c). */
Fn *chunk_function(Gen *g, gboolean put, int d, int64_t w, const Type *whole,
                   const Type *chunk, GHashTable *made);

/* A sum's accumulator (double, or i64 for integers): 'zero' sets it to 0,
 * 'add' adds an iteration's body value, 'round' stores it rounded (or
 * wrapped) into the sum's result, once, as the interpreter does
 * (tensor_new_acc, tensor_from_acc). */
typedef enum { ACC_ZERO, ACC_ADD, ACC_ROUND } AccStep;
Fn *acc_function(Gen *g, AccStep step, const Type *acc, const Type *other,
                 GHashTable *made);

/* The element types of a new module's Gen (its builder made too). */
void gen_init(Gen *g, LLVMContextRef ctx, LLVMModuleRef mod);

/* -------------------------------------------------------------- dot.c */

/* The dimensions of a contraction: per group, each dimension's size
 * and its strides in lhs, rhs and the result. */
typedef struct Dim {
  int64_t size, l, r, o;
} Dim;

typedef struct Groups {
  int nb, nm, nn, nk;
  Dim b[PARTIR_MAX_RANK], m[PARTIR_MAX_RANK], n[PARTIR_MAX_RANK],
      k[PARTIR_MAX_RANK];
} Groups;

void dot_groups(const Term *t, Groups *gr);

/* Merges the innermost run of 'dims' whose strides nest (each the next
 * one's times its size, in lhs, rhs and the result alike; size-1
 * dimensions nest anywhere) into one: its size and strides into *out.
 * Returns how many dimensions stay outside it. */
int dot_merge(const Dim *dims, int n, Dim *out);

/* matmul or dot_general 't' into buffer 0 from buffers 1 and 2, with
 * buffer 3 its scratch (the plan sizes it: dot_scratch_bytes). */
void emit_dot(Gen *g, const Term *t);

#endif
