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
 *   gather.c     the kernels of gather, dynamic_slice and their transposes
 *   interp.c     running a function
 *   expect.c     the comparisons of StableHLO's check operations
 */
#ifndef PARTIR_EVAL_H
#define PARTIR_EVAL_H

#include "core/core.h"

#include <math.h>
#include <string.h>

/* Largest tensor the interpreter will allocate (elements): the bound of
 * interp_check, and of the .npy files read for it. */
#define INTERP_MAX_ELEMS ((int64_t)1 << 29)

/* --------------------------------------------------------------- tensor.c */

/* A dense tensor value of the interpreter: its elements in row-major
 * order, each stored at its dtype's own width (dtype_storage_bytes): f32
 * as float, f64 as double, bf16 as the top 16 bits of an f32, f16 as
 * IEEE binary16, i8 i16 i32 i64 as int8..int64, ui8 ui16 ui32 as
 * uint8..uint32, i1 as one byte 0 or 1.  Kernels read and write elements
 * through the accessors below, which compute in double (floats) or int64
 * (integers: an unsigned element is its value, zero-extended, so int64
 * order is its order) and round or wrap on the way in. */
typedef struct Tensor {
  int refcount;
  const Type *type;
  void *data;          /* type_numel elements of dtype_storage_bytes each */
  struct Tensor *base; /* a view: 'data' lies in base's, held; else NULL */
} Tensor;

Tensor *tensor_new(const Type *type); /* zero-filled */
/* A tensor of 'type' whose elements are those of 'base' from byte
 * 'offset' on (a contiguous part of it, such as a device's chunk along
 * its first dimension), sharing its memory and holding a reference to
 * it: for readers only, as neither is copied when the other is
 * written. */
Tensor *tensor_view(Tensor *base, const Type *type, guint64 offset);
Tensor *tensor_ref(Tensor *t);
void tensor_unref(Tensor *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Tensor, tensor_unref)
/* The bytes the elements of a tensor of 'type' take. */
guint64 tensor_type_bytes(const Type *type);

/* bf16 is the top half of an f32: 'tensor_bf16_from_f32' rounds to
 * nearest even (overflow gives infinity; NaN stays a quiet NaN). */
static inline uint16_t tensor_bf16_from_f32(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  if (isnan(f))
    return (uint16_t)(bits >> 16 | 0x40u);
  bits += 0x7fffu + (bits >> 16 & 1u);
  return (uint16_t)(bits >> 16);
}

static inline float tensor_bf16_to_f32(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* Element 'k' of a floating tensor, exactly. */
static inline double tensor_get_float(const Tensor *t, int64_t k) {
  switch (t->type->dtype) {
  case DT_F32:
    return ((const float *)t->data)[k];
  case DT_F64:
    return ((const double *)t->data)[k];
  case DT_BF16:
    return tensor_bf16_to_f32(((const uint16_t *)t->data)[k]);
  case DT_F16:
    return dtype_f16_to_f32(((const uint16_t *)t->data)[k]);
  default:
    g_assert_not_reached();
  }
}

/* Stores 'v' rounded to the floating tensor's dtype (bf16 through f32,
 * f16 once). */
static inline void tensor_set_float(Tensor *t, int64_t k, double v) {
  switch (t->type->dtype) {
  case DT_F32:
    ((float *)t->data)[k] = (float)v;
    break;
  case DT_F64:
    ((double *)t->data)[k] = v;
    break;
  case DT_BF16:
    ((uint16_t *)t->data)[k] = tensor_bf16_from_f32((float)v);
    break;
  case DT_F16:
    ((uint16_t *)t->data)[k] = dtype_f16_from_f64(v);
    break;
  default:
    g_assert_not_reached();
  }
}

/* Element 'k' of an integer tensor. */
static inline int64_t tensor_get_int(const Tensor *t, int64_t k) {
  switch (t->type->dtype) {
  case DT_I32:
    return ((const int32_t *)t->data)[k];
  case DT_I64:
    return ((const int64_t *)t->data)[k];
  case DT_I1:
    return ((const uint8_t *)t->data)[k];
  case DT_I8:
    return ((const int8_t *)t->data)[k];
  case DT_I16:
    return ((const int16_t *)t->data)[k];
  case DT_UI8:
    return ((const uint8_t *)t->data)[k];
  case DT_UI16:
    return ((const uint16_t *)t->data)[k];
  case DT_UI32:
    return ((const uint32_t *)t->data)[k];
  default:
    g_assert_not_reached();
  }
}

/* Stores 'v' wrapped to the integer tensor's dtype: its low bits (two's
 * complement for the signed types), 'v != 0' for i1. */
static inline void tensor_set_int(Tensor *t, int64_t k, int64_t v) {
  switch (t->type->dtype) {
  case DT_I32:
    ((int32_t *)t->data)[k] = (int32_t)(uint32_t)(uint64_t)v;
    break;
  case DT_I64:
    ((int64_t *)t->data)[k] = v;
    break;
  case DT_I1:
    ((uint8_t *)t->data)[k] = v != 0;
    break;
  case DT_I8:
  case DT_UI8:
    ((uint8_t *)t->data)[k] = (uint8_t)(uint64_t)v;
    break;
  case DT_I16:
  case DT_UI16:
    ((uint16_t *)t->data)[k] = (uint16_t)(uint64_t)v;
    break;
  case DT_UI32:
    ((uint32_t *)t->data)[k] = (uint32_t)(uint64_t)v;
    break;
  default:
    g_assert_not_reached();
  }
}

/* Element 'k' of any tensor as a double (integers converted). */
static inline double tensor_get_double(const Tensor *t, int64_t k) {
  return dtype_is_float(t->type->dtype) ? tensor_get_float(t, k)
                                        : (double)tensor_get_int(t, k);
}

/* One value rounded (floats) or wrapped (integers) to 'dt'.  An
 * integer 'v' wrapped is the value its low bits mean in 'dt' (unsigned:
 * 0 to 2^n - 1). */
double tensor_round_value(DType dt, double v);
int64_t tensor_wrap_value(DType dt, int64_t v);

/* Sums accumulate in double (floating types) or wrapping int64 (integer
 * types) and round once at the end: 'tensor_new_acc' gives a zeroed
 * accumulator for values of 'type' (its shape in f64 or i64),
 * 'tensor_acc_add' adds element 'j' of 'x' to element 'k' of 'acc', and
 * 'tensor_from_acc' rounds every element to 'type' (a new tensor). */
Tensor *tensor_new_acc(const Type *type);
static inline void tensor_acc_add(Tensor *acc, int64_t k, const Tensor *x,
                                  int64_t j) {
  if (acc->type->dtype == DT_F64) {
    ((double *)acc->data)[k] += tensor_get_float(x, j);
  } else {
    int64_t *a = (int64_t *)acc->data + k;
    *a = (int64_t)((uint64_t)*a + (uint64_t)tensor_get_int(x, j));
  }
}
Tensor *tensor_from_acc(const Tensor *acc, const Type *type);
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

/* The largest .npy file read: INTERP_MAX_ELEMS elements of 8 bytes (the
 * widest dtype), and 1 MiB for the preamble and the header. */
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
/* Constant 't' when its value is one number (a splat): that number as a
 * tensor of rank 0 of t's dtype, else NULL. */
Tensor *kernel_constant_splat(const Term *t);
/* broadcast_in_dim, transpose and the static slice are one strided
 * gather: result element i is the operand's element at
 * base + sum(i[d] * strides[d]).  Fills 'strides' (the result's rank),
 * returns base. */
int64_t kernel_gather_strides(const Term *t, int64_t *strides);
/* The value a reduction starts from (what it gives for no elements):
 * on floats, 0, 1, -inf or inf for sum, prod, max and min; on integers
 * of 'dt' also the least and greatest value, and -1 (every bit) for
 * and, 0 for or. */
double kernel_reduce_identity_float(Op op);
int64_t kernel_reduce_identity_int(Op op, DType dt);
#define KERNEL_POLL 4096 /* a power of two */

/* --------------------------------------------------------------- gather.c */

/* gather and dynamic_slice (kernels.c dispatches to them): each result
 * element is the operand's element at the clamped start plus its offset
 * in the slice (StableHLO's meaning, core/gather.c). */
Tensor *kernel_gather_op(const Term *t, Tensor *const *args);
Tensor *kernel_dynamic_slice(const Term *t, Tensor *const *args);
/* Their transposes: a copy of the operand with the updates added at
 * their windows (scatter_add) or written at the clamped starts
 * (dynamic_update_slice). */
Tensor *kernel_scatter_add(const Term *t, Tensor *const *args);
Tensor *kernel_dynamic_update_slice(const Term *t, Tensor *const *args);

/* The collectives of one device: a struct of function pointers that the
 * SPMD simulator implements, and the runtimes (codegen/threads.c).  The
 * kernels of the collective operators call the calling thread's
 * 'kernel_comm'; it is NULL outside a device, where interp_check refuses
 * programs with collectives.  'collective' and 'fail' are required,
 * the others may be NULL. */
typedef struct Collectives Collectives;
struct Collectives {
  /* Evaluates collective 't' on this device's operand 'x' (borrowed);
   * returns the result (a new reference). */
  Tensor *(*collective)(Collectives *self, const Term *t, Tensor *x);
  /* The same on buffers, without allocating (compiled code): 'in' holds
   * the operand (of t->args[0]->type), the result goes to 'out' (of
   * t->type).  The caller keeps 'in' unchanged until it returns. */
  void (*collective_into)(Collectives *self, const Term *t, const void *in,
                          void *out);
  /* This device failed with 'error': the other devices stop waiting for
   * it, and their collectives from then on return zeros at once. */
  void (*fail)(Collectives *self, const GError *error);
  /* FALSE, with the first failure's error, when this device's exchanges
   * were abandoned (a device failed, or an interrupt while waiting): the
   * values it computed since are meaningless. */
  gboolean (*check)(Collectives *self, GError **error);
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

/* --------------------------------------------------------------- expect.c */

/* How a check of a StableHLO test compares two values (expect.c says
 * exactly). */
typedef enum {
  EXPECT_EQ,        /* equal */
  EXPECT_ALMOST_EQ, /* within 'tolerance' */
  EXPECT_CLOSE,     /* within [min_ulp, max_ulp] units in the last place */
} ExpectKind;

typedef struct Expect {
  ExpectKind kind;
  double tolerance;
  uint64_t min_ulp, max_ulp;
} Expect;

/* Whether 'actual' passes check 'e' against 'expected' (of its type);
 * when not, how many elements differ and the first, appended to 'why'. */
gboolean tensor_expect(const Expect *e, const Tensor *actual,
                       const Tensor *expected, GString *why);

#endif
