/* eval.h — the evaluation layer: tensors and the reference interpreter.
 *
 * The interpreter gives every program its meaning; it is the oracle of
 * every rewrite, lowering and compiled program (docs/architecture.md).
 * It needs nothing above core.  Collectives, which only SPMD programs
 * contain, reach the devices through the Collectives interface that a
 * higher layer implements (the simulator; the runtimes later).
 *
 *   tensor.c     dense tensor values, rounding, printing, comparison
 *   npy.c        NumPy .npy files
 *   kernels.c    one kernel per base operator; the collective interface
 *   interp.c     running a function
 */
#ifndef PARTIR_EVAL_H
#define PARTIR_EVAL_H

#include "core/core.h"

/* Largest tensor the interpreter will allocate (elements): the bound of
 * interp_check, and of the .npy files read for it. */
#define INTERP_MAX_ELEMS ((int64_t)1 << 29)

/* --------------------------------------------------------------- tensor.c */

/* A dense tensor value of the interpreter.  Floating types are held as
 * doubles rounded to their type after every operation (f32 through float,
 * bf16 to 8 significant bits, round to nearest even); integer types as
 * int64 wrapped to their width; i1 as 0/1. */
typedef struct Tensor {
  int refcount;
  const Type *type;
  double *f;  /* dtype_is_float */
  int64_t *i; /* otherwise */
} Tensor;

Tensor *tensor_new(const Type *type); /* zero-filled */
Tensor *tensor_ref(Tensor *t);
void tensor_unref(Tensor *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Tensor, tensor_unref)
/* One value rounded (floats) or wrapped (integers) to 'dt'. */
double tensor_round_value(DType dt, double v);
int64_t tensor_wrap_value(DType dt, int64_t v);
/* Rounds (or wraps) every element to the tensor's dtype: the one rounding
 * after accumulating a sum in double (or in wrapping int64). */
void tensor_round(Tensor *t);
/* Row-major strides of a shape. */
void tensor_strides(const Type *t, int64_t *strides);
/* Readable text: shape, dtype, the values, or a summary when large. */
void tensor_print(GString *out, const Tensor *t, int max_elems);
void tensor_fill_random(Tensor *t, GRand *rng);
/* TRUE when two runs' results (Tensor* lists) agree: same types; values
 * within |a - b| <= 1e-6 + 1e-5 |a| + 1e-4 max|A|; NaN equals NaN.  The
 * first difference goes to 'why'. */
gboolean tensor_results_agree(GPtrArray *a, GPtrArray *b, Diag *why);

/* ------------------------------------------------------------------ npy.c */

/* The largest .npy file read: INTERP_MAX_ELEMS elements of 8 bytes, and
 * 1 MiB for the preamble and the header. */
#define NPY_MAX_BYTES ((gsize)INTERP_MAX_ELEMS * 8 + ((gsize)1 << 20))

/* Reads a .npy file: a regular file of at most NPY_MAX_BYTES, holding at
 * most INTERP_MAX_ELEMS elements. */
gboolean npy_read(const char *path, Tensor **out, GError **error);
/* Serialises to the .npy v1.0 format in memory; bf16 is written as f32. */
GBytes *npy_encode(const Tensor *t);

/* -------------------------------------------------------------- kernels.c */

/* Evaluates one base operator on evaluated operands.  Its loops poll
 * 'partir_interrupt' every KERNEL_POLL elements and stop early when it is
 * set: the result is then unfinished, for the caller to discard. */
Tensor *kernel_eval(const Term *t, Tensor *const *args);
#define KERNEL_POLL 4096 /* a power of two */

/* The collectives of one device: a struct of function pointers that the
 * SPMD simulator implements (and the runtimes will).  The kernels of the
 * collective operators call the calling thread's 'kernel_comm'; it is NULL
 * outside a device, where interp_check refuses programs with collectives. */
typedef struct Collectives Collectives;
struct Collectives {
  /* Evaluates collective 't' on this device's operand 'x' (borrowed);
   * returns the result (a new reference). */
  Tensor *(*collective)(Collectives *self, const Term *t, Tensor *x);
};
extern _Thread_local Collectives *kernel_comm;

/* --------------------------------------------------------------- interp.c */

/* Evaluates 'f' on 'inputs' (one per argument); returns one Tensor per
 * result (caller unrefs).
 * requires: interp_check(f) passed (the caller checks user input first).
 * Fails only when interrupted (PARTIR_ERROR_INTERRUPTED). */
GPtrArray *interp_run(const Func *f, Tensor *const *inputs, GError **error);

/* The seeded random value of argument 'i' that 'partir run --seed' (and
 * the REPL's and Lua's run) use. */
Tensor *interp_random_input(const Func *f, int i, gint64 seed);
/* FALSE, with the reason, when an argument or value of 'f' is too large
 * for the interpreter, its values alive at once would exceed the memory
 * available (an estimate from above, interp.c), or 'f' holds collectives
 * outside a device: the check of user input before a run. */
gboolean interp_check(const Func *f, Diag *diag);
/* interp_run on the seeded random inputs (the same requirement). */
GPtrArray *interp_run_seeded(const Func *f, gint64 seed, GError **error);

#endif
