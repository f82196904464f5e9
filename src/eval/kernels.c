/* kernels.c — the reference interpreter's operator kernels.
 *
 * requires: the Term is a TM_OP that type-checked (typerule.c), so every
 * shape, attribute and operand count is already known to be consistent;
 * a kernel never fails, and a violated assumption is a bug (g_assert).
 *
 * kernel_eval dispatches on the operator through a table generated from
 * ops.def: one static k_* function per kernel column.  Each kernel reads
 * its operands (never modified, never unreferenced) and returns a fresh
 * Tensor of t->type with refcount 1.
 *
 * Values follow the Tensor conventions of eval.h: each element is stored
 * at its dtype's width, and read as a double (floating types) or an int64
 * (integer types, i1 as 0/1) through tensor_get_float / tensor_get_int.
 * So:
 *
 *  - Elementwise float results are computed in double and rounded once
 *    as tensor_set_float stores them (bf16 through f32, so bf16 is
 *    "computed in f32" as the language says; f16 once, which for + - * /
 *    and sqrt is what computing in f32 gives).
 *  - Integer arithmetic is done in uint64 (wrapping, no UB) and wrapped
 *    to the width as tensor_set_int stores it; unsigned values are read
 *    zero-extended, so int64 comparison and division are theirs.
 *    Integer div and rem never trap: x/0 is -1 (all ones), INT_MIN/-1 is
 *    INT_MIN, x%0 is x and INT_MIN%-1 is 0 (XLA's choices).  The type
 *    rules keep i1 out of arithmetic, iota, contractions and the
 *    reductions but reduce_and and reduce_or.
 *  - Contractions and reductions accumulate in double (int64 for integer
 *    types) and round once at the end, as docs/language.md specifies: a
 *    contraction in a row of accumulators, a reduction in one accumulator
 *    per result element, which folds its operand elements in row-major
 *    order.
 *
 * Data movement (broadcast_in_dim, transpose, static slice, select,
 * reshape, concatenate, pad) copies elements as they are stored, without
 * looking at their values.  The first three are one strided gather:
 * every result element reads the operand at
 * 'base + sum(index[d] * stride[d])', where a stride of 0 broadcasts.
 * dot_general is lowered to a batched [B,M,K]x[B,K,N] loop over offset
 * tables, so arbitrary batch/contract/free dimension orders cost one
 * table lookup per index and the common row-major case runs i-k-j over
 * contiguous rows.
 *
 * Interrupts: the loops over elements poll 'partir_interrupt' every
 * KERNEL_POLL elements (a contraction after every KERNEL_POLL
 * multiply-adds, or every row of its result when a row is longer) and
 * stop early when it is set.  What such a kernel returns is unfinished;
 * the interpreter, which sees the flag too, discards it ("interrupted").
 */
#include <math.h>
#include <string.h>

#include "eval/eval.h"

typedef Tensor *(*KernelFn)(const Term *t, Tensor *const *args);

G_STATIC_ASSERT((KERNEL_POLL & (KERNEL_POLL - 1)) == 0);

/* TRUE at every KERNEL_POLL-th element 'k' once an interrupt is asked
 * for: the loop stops there. */
static inline gboolean stop_at(int64_t k) {
  return (k & (KERNEL_POLL - 1)) == 0 && partir_interrupt;
}

/* ------------------------------------------------------------ helpers */

/* Float to integer: truncates toward zero, saturates to the target range
 * (unsigned: negatives give 0), NaN gives 0 (as XLA does); to i1 it is
 * 'v != 0' (so NaN is 1, as IEEE says). */
static int64_t float_to_int(DType dt, double v) {
  if (dt == DT_I1)
    return v != 0;
  if (isnan(v))
    return 0;
  /* Bounds as exact doubles: -2^(n-1) or 0, and 2^(n-1) or 2^n (for i64
   * the greatest value rounds up to 2^63, which is right). */
  double lo = (double)dtype_int_min(dt);
  double hi_excl = (double)dtype_int_max(dt) + 1.0;
  if (v <= lo)
    return dtype_int_min(dt);
  if (v >= hi_excl)
    return dtype_int_max(dt);
  return (int64_t)trunc(v);
}

/* Integer to float, rounded once to 'dt'. */
static double int_to_float(DType dt, int64_t v) {
  if (dt == DT_F32)
    return (double)(float)v; /* one rounding even for |v| > 2^53 */
  return tensor_round_value(dt, (double)v);
}

/* Reads an optional list-of-ints attribute into 'out' (at most
 * PARTIR_MAX_RANK entries); returns its length, 0 when absent. */
static int attr_ints(const Term *t, const char *key, int64_t *out) {
  const AttrValue *v = attrs_get(t->attrs, key);
  if (!v)
    return 0;
  g_assert(v->kind == AV_LIST && v->count <= PARTIR_MAX_RANK);
  for (int j = 0; j < v->count; j++) {
    g_assert(v->items[j].kind == AV_INT);
    out[j] = v->items[j].i;
  }
  return v->count;
}

/* The bytes of one element of 'x' as stored. */
static gsize elem_bytes(const Tensor *x) {
  return dtype_storage_bytes(x->type->dtype);
}

/* Copies element 'from' of 'src' to element 'to' of 'dst' (same dtype),
 * as stored: a fixed-size move per width. */
static inline void copy_elem(Tensor *dst, int64_t to, const Tensor *src,
                             int64_t from, gsize width) {
  char *d = (char *)dst->data + to * (int64_t)width;
  const char *s = (const char *)src->data + from * (int64_t)width;
  switch (width) {
  case 1:
    memcpy(d, s, 1);
    break;
  case 2:
    memcpy(d, s, 2);
    break;
  case 4:
    memcpy(d, s, 4);
    break;
  case 8:
    memcpy(d, s, 8);
    break;
  default:
    g_assert_not_reached();
  }
}

/* A row-major walk over the index space 'sizes[0..rank)' that keeps
 * 'off' = base + sum(index[d] * strides[d]) in step. */
typedef struct Walk {
  int rank;
  const int64_t *sizes, *strides;
  int64_t idx[PARTIR_MAX_RANK];
  int64_t off;
} Walk;

static void walk_start(Walk *w, int rank, const int64_t *sizes,
                       const int64_t *strides, int64_t base) {
  w->rank = rank;
  w->sizes = sizes;
  w->strides = strides;
  memset(w->idx, 0, sizeof w->idx);
  w->off = base;
}

/* Steps to the next index (after the last, back to the first). */
static inline void walk_next(Walk *w) {
  for (int d = w->rank - 1; d >= 0; d--) {
    w->off += w->strides[d];
    if (++w->idx[d] < w->sizes[d])
      return;
    w->off -= w->strides[d] * w->sizes[d];
    w->idx[d] = 0;
  }
}

/* Fills 'out' (row-major over its own shape) with the elements of 'src'
 * at 'base + sum(index[d] * strides[d])'. */
static void gather_strided(Tensor *out, const Tensor *src, int64_t base,
                           const int64_t *strides) {
  const Type *ty = out->type;
  int64_t n = type_numel(ty);
  gsize width = elem_bytes(out);
  Walk w;
  walk_start(&w, ty->rank, ty->dims, strides, base);
  for (int64_t k = 0; k < n && !stop_at(k); k++) {
    copy_elem(out, k, src, w.off, width);
    walk_next(&w);
  }
}

/* ---------------------------------------------------------- elementwise */

static double binary_float(Op op, double a, double b) {
  switch (op) {
  case OP_ADD:
    return a + b;
  case OP_SUB:
    return a - b;
  case OP_MUL:
    return a * b;
  case OP_DIV:
    return a / b;
  case OP_MAX:
    if (isnan(a) || isnan(b))
      return NAN;
    return a > b ? a : b;
  case OP_MIN:
    if (isnan(a) || isnan(b))
      return NAN;
    return a < b ? a : b;
  case OP_POW:
    return pow(a, b);
  case OP_REM: /* the sign of the dividend; exact */
    return fmod(a, b);
  default:
    g_assert_not_reached();
  }
}

static int64_t binary_int(Op op, DType dt, int64_t a, int64_t b) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  switch (op) {
  case OP_ADD:
    return (int64_t)(ua + ub);
  case OP_SUB:
    return (int64_t)(ua - ub);
  case OP_MUL:
    return (int64_t)(ua * ub);
  case OP_DIV:
    if (b == 0)
      return -1;
    if (b == -1 && a == dtype_int_min(dt))
      return a;
    return a / b;
  case OP_REM: /* x%0 is x, MIN%-1 is 0 (XLA), never a trap */
    if (b == 0)
      return a;
    if (b == -1)
      return 0;
    return a % b;
  case OP_MAX:
    return a > b ? a : b;
  case OP_MIN:
    return a < b ? a : b;
  default:
    g_assert_not_reached(); /* pow is floats only */
  }
}

/* add sub mul div max min pow rem. */
static Tensor *k_binary(const Term *t, Tensor *const *args) {
  Tensor *out = tensor_new(t->type);
  DType dt = t->type->dtype;
  int64_t n = type_numel(t->type);
  const Tensor *a = args[0], *b = args[1];
  if (dtype_is_float(dt)) {
    for (int64_t k = 0; k < n && !stop_at(k); k++)
      tensor_set_float(
          out, k,
          binary_float(t->op, tensor_get_float(a, k), tensor_get_float(b, k)));
  } else {
    for (int64_t k = 0; k < n && !stop_at(k); k++)
      tensor_set_int(
          out, k,
          binary_int(t->op, dt, tensor_get_int(a, k), tensor_get_int(b, k)));
  }
  return out;
}

static double unary_float(Op op, double x) {
  switch (op) {
  case OP_NEG:
    return -x;
  case OP_ABS:
    return fabs(x);
  case OP_RELU:
    return isnan(x) ? x : (x > 0 ? x : 0.0);
  case OP_EXP:
    return exp(x);
  case OP_LOG:
    return log(x);
  case OP_TANH:
    return tanh(x);
  case OP_LOGISTIC:
    return 1.0 / (1.0 + exp(-x));
  case OP_SQRT:
    return sqrt(x);
  case OP_RSQRT:
    return 1.0 / sqrt(x);
  case OP_LOG1P:
    return log1p(x);
  case OP_SIN:
    return sin(x);
  case OP_COS:
    return cos(x);
  case OP_ERF:
    return erf(x);
  case OP_ERFC:
    return erfc(x);
  case OP_EXPM1:
    return expm1(x);
  case OP_FLOOR:
    return floor(x);
  case OP_CEIL:
    return ceil(x);
  case OP_ROUND_AWAY:
    return round(x);
  case OP_ROUND_EVEN: /* a tie is twice the half rounded: 2.5 -> 2, -0.5 -> -0
                       */
    return fabs(x - trunc(x)) == 0.5 ? 2.0 * round(x / 2.0) : round(x);
  default:
    g_assert_not_reached();
  }
}

static int64_t unary_int(Op op, int64_t x) {
  switch (op) {
  case OP_NEG:
    return (int64_t)(0 - (uint64_t)x);
  case OP_ABS:
    return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
  case OP_RELU:
    return x > 0 ? x : 0;
  default:
    g_assert_not_reached(); /* the rest are floats only */
  }
}

/* neg abs relu exp log tanh logistic sqrt rsqrt log1p expm1 sin cos erf erfc
 * floor ceil round_even round_away. */
static Tensor *k_unary(const Term *t, Tensor *const *args) {
  Tensor *out = tensor_new(t->type);
  DType dt = t->type->dtype;
  int64_t n = type_numel(t->type);
  if (dtype_is_float(dt)) {
    for (int64_t k = 0; k < n && !stop_at(k); k++)
      tensor_set_float(out, k,
                       unary_float(t->op, tensor_get_float(args[0], k)));
  } else {
    for (int64_t k = 0; k < n && !stop_at(k); k++)
      tensor_set_int(out, k, unary_int(t->op, tensor_get_int(args[0], k)));
  }
  return out;
}

/* ------------------------------------------------------------- bitwise */

/* The bits of a 'dt' element: its width, and the mask of them. */
static int dtype_bits(DType dt) { return (int)dtype_storage_bytes(dt) * 8; }

static uint64_t bits_mask(int width) {
  return width == 64 ? ~(uint64_t)0 : ((uint64_t)1 << width) - 1;
}

/* One element of a bitwise operator on 'dt' (docs/language.md).  The
 * operands are read as tensor_get_int gives them (sign- or zero-
 * extended), the result is wrapped as tensor_set_int stores it.  A
 * shift amount is read as unsigned in the operand's width (StableHLO,
 * XLA): an amount of the width or more, a negative one included, shifts
 * every bit out, giving 0, or the sign in every bit for an arithmetic
 * shift right.  On i1, not is logical ('x == 0'); and, or and xor of 0
 * and 1 already are. */
static int64_t bitwise_int(Op op, DType dt, int64_t a, int64_t b) {
  int width = dtype_bits(dt);
  uint64_t mask = bits_mask(width), ua = (uint64_t)a & mask;
  uint64_t amount = (uint64_t)b & mask;
  gboolean out = amount >= (uint64_t)width;
  switch (op) {
  case OP_AND:
    return a & b;
  case OP_OR:
    return a | b;
  case OP_XOR:
    return a ^ b;
  case OP_NOT:
    return dt == DT_I1 ? a == 0 : ~a;
  case OP_SHIFT_LEFT:
    return out ? 0 : (int64_t)(ua << amount);
  case OP_SHIFT_RIGHT_LOGICAL:
    return out ? 0 : (int64_t)(ua >> amount);
  case OP_SHIFT_RIGHT_ARITHMETIC: {
    /* the width's top bit is the sign, unsigned types too */
    gboolean negative = (ua >> (width - 1)) & 1;
    if (out)
      return negative ? -1 : 0;
    uint64_t shifted = ua >> amount;
    return (int64_t)(negative ? shifted | ~(mask >> amount) : shifted);
  }
  case OP_POPCNT:
    return __builtin_popcountll(ua);
  case OP_CLZ: /* the zeros above the highest bit set, in the width */
    return ua == 0 ? width : __builtin_clzll(ua) - (64 - width);
  default:
    g_assert_not_reached();
  }
}

/* and or xor not shift_left shift_right_arithmetic shift_right_logical
 * popcnt clz: integers and i1 only (tr_bitwise, tr_integer). */
static Tensor *k_bitwise(const Term *t, Tensor *const *args) {
  Tensor *out = tensor_new(t->type);
  DType dt = t->type->dtype;
  int64_t n = type_numel(t->type);
  for (int64_t k = 0; k < n && !stop_at(k); k++)
    tensor_set_int(out, k,
                   bitwise_int(t->op, dt, tensor_get_int(args[0], k),
                               t->nargs == 2 ? tensor_get_int(args[1], k) : 0));
  return out;
}

typedef enum { CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE } Direction;

static Direction direction_of(const Term *t) {
  static const char *const names[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
  const AttrValue *v = attrs_get(t->attrs, "direction");
  g_assert(v && v->kind == AV_SYMBOL);
  for (guint j = 0; j < G_N_ELEMENTS(names); j++)
    if (strcmp(v->sym, names[j]) == 0)
      return (Direction)j;
  g_assert_not_reached();
}

/* Compares two already-converted operands; 'ord' is -1/0/1 for less,
 * equal, greater, or 2 when unordered (a NaN operand), which makes every
 * direction but NE false, as IEEE says. */
static int64_t compare_result(Direction dir, int ord) {
  switch (dir) {
  case CMP_EQ:
    return ord == 0;
  case CMP_NE:
    return ord != 0;
  case CMP_LT:
    return ord == -1;
  case CMP_LE:
    return ord == -1 || ord == 0;
  case CMP_GT:
    return ord == 1;
  case CMP_GE:
    return ord == 1 || ord == 0;
  }
  g_assert_not_reached();
}

static Tensor *k_compare(const Term *t, Tensor *const *args) {
  Tensor *out = tensor_new(t->type);
  Direction dir = direction_of(t);
  int64_t n = type_numel(t->type);
  const Tensor *a = args[0], *b = args[1];
  if (dtype_is_float(a->type->dtype)) {
    for (int64_t k = 0; k < n && !stop_at(k); k++) {
      double x = tensor_get_float(a, k), y = tensor_get_float(b, k);
      int ord = x < y ? -1 : x > y ? 1 : x == y ? 0 : 2;
      tensor_set_int(out, k, compare_result(dir, ord));
    }
  } else {
    for (int64_t k = 0; k < n && !stop_at(k); k++) {
      int64_t x = tensor_get_int(a, k), y = tensor_get_int(b, k);
      int ord = x < y ? -1 : x > y ? 1 : 0;
      tensor_set_int(out, k, compare_result(dir, ord));
    }
  }
  return out;
}

static Tensor *k_select(const Term *t, Tensor *const *args) {
  Tensor *out = tensor_new(t->type);
  int64_t n = type_numel(t->type);
  gsize width = elem_bytes(out);
  for (int64_t k = 0; k < n && !stop_at(k); k++)
    copy_elem(out, k, tensor_get_int(args[0], k) ? args[1] : args[2], k, width);
  return out;
}

/* Element type conversion, elementwise; the shape is unchanged. */
static Tensor *k_convert(const Term *t, Tensor *const *args) {
  Tensor *out = tensor_new(t->type);
  DType to = t->type->dtype, from = args[0]->type->dtype;
  int64_t n = type_numel(t->type);
  const Tensor *x = args[0];
  for (int64_t k = 0; k < n && !stop_at(k); k++) {
    if (dtype_is_float(from) && dtype_is_float(to))
      tensor_set_float(out, k, tensor_get_float(x, k));
    else if (dtype_is_float(from))
      tensor_set_int(out, k, float_to_int(to, tensor_get_float(x, k)));
    else if (dtype_is_float(to))
      tensor_set_float(out, k, int_to_float(to, tensor_get_int(x, k)));
    else
      tensor_set_int(out, k, tensor_get_int(x, k));
  }
  return out;
}

/* The same bytes, of another element type of their width. */
static Tensor *k_bitcast(const Term *t, Tensor *const *args) {
  Tensor *out = tensor_new(t->type);
  memcpy(out->data, args[0]->data,
         (size_t)type_numel(t->type) * dtype_storage_bytes(t->type->dtype));
  return out;
}

/* -------------------------------------------------------------- sources */

/* Stores the numbers of a (possibly nested) 'value' list row-major into
 * 'out' from element '*pos' on.  Integer literals reach integer tensors
 * exactly (no trip through double), so every i64 constant is exact. */
static void constant_fill(Tensor *out, const AttrValue *v, int64_t *pos) {
  DType dt = out->type->dtype;
  if (v->kind == AV_LIST) {
    for (int j = 0; j < v->count; j++)
      constant_fill(out, &v->items[j], pos);
    return;
  }
  g_assert(v->kind == AV_INT || v->kind == AV_FLOAT);
  g_assert(*pos < type_numel(out->type));
  int64_t k = (*pos)++;
  if (dtype_is_float(dt))
    tensor_set_float(out, k, v->kind == AV_INT ? int_to_float(dt, v->i) : v->f);
  else if (v->kind == AV_FLOAT)
    tensor_set_int(out, k, float_to_int(dt, v->f));
  else
    tensor_set_int(out, k, v->i);
}

/* 'value' is a scalar, splatted, or a list of exactly numel numbers. */
static Tensor *k_constant(const Term *t, Tensor *const *args) {
  Tensor *out = tensor_new(t->type);
  const AttrValue *v = attrs_get(t->attrs, "value");
  g_assert(v);
  int64_t n = type_numel(t->type);
  if (n == 0)
    return out;
  int64_t filled = 0;
  constant_fill(out, v, &filled);
  if (filled == n)
    return out;
  /* A scalar (or a one-number list) splats. */
  g_assert(filled == 1);
  gsize width = elem_bytes(out);
  for (int64_t k = 1; k < n && !stop_at(k); k++)
    copy_elem(out, k, out, 0, width);
  return out;
}

/* The number of numbers in 'v'. */
static int64_t constant_count(const AttrValue *v) {
  if (v->kind != AV_LIST)
    return 1;
  int64_t n = 0;
  for (int j = 0; j < v->count; j++)
    n += constant_count(&v->items[j]);
  return n;
}

Tensor *kernel_constant_splat(const Term *t) {
  const AttrValue *v = attrs_get(t->attrs, "value");
  if (t->op != OP_CONSTANT || !v || constant_count(v) != 1)
    return NULL;
  Tensor *one = tensor_new(type_tensor(t->type->dtype, 0, NULL));
  int64_t filled = 0;
  constant_fill(one, v, &filled);
  return one;
}

static Tensor *k_iota(const Term *t, Tensor *const *args) {
  Tensor *out = tensor_new(t->type);
  const Type *ty = t->type;
  int64_t dim = attrs_get_int(t->attrs, "dim");
  g_assert(dim >= 0 && dim < ty->rank);
  int64_t strides[PARTIR_MAX_RANK];
  tensor_strides(ty, strides);
  int64_t n = type_numel(ty);
  for (int64_t k = 0; k < n && !stop_at(k); k++) {
    int64_t v = (k / strides[dim]) % ty->dims[dim];
    if (dtype_is_float(ty->dtype))
      tensor_set_float(out, k, int_to_float(ty->dtype, v));
    else
      tensor_set_int(out, k, v);
  }
  return out;
}

/* --------------------------------------------------------- contractions */

/* Fills 'table' with the linear offsets (by 'strides') of every index of
 * the shape 'sizes[0..n)', in row-major order; returns the count. */
static int64_t offset_table(int n, const int64_t *sizes, const int64_t *strides,
                            int64_t **table) {
  int64_t count = 1;
  for (int j = 0; j < n; j++)
    count *= sizes[j];
  int64_t *tab = g_new(int64_t, count > 0 ? count : 1);
  int64_t idx[PARTIR_MAX_RANK] = {0};
  int64_t off = 0;
  for (int64_t k = 0; k < count; k++) {
    tab[k] = off;
    for (int j = n - 1; j >= 0; j--) {
      off += strides[j];
      if (++idx[j] < sizes[j])
        break;
      off -= strides[j] * sizes[j];
      idx[j] = 0;
    }
  }
  *table = tab;
  return count;
}

/* One operand's view of a contraction: sizes and strides of its batch,
 * free and contracting dimensions, each group in attribute order (free
 * dimensions in increasing order). */
typedef struct DotSide {
  int nbatch, nfree, ncontract;
  int64_t batch_size[PARTIR_MAX_RANK], batch_stride[PARTIR_MAX_RANK];
  int64_t free_size[PARTIR_MAX_RANK], free_stride[PARTIR_MAX_RANK];
  int64_t contract_size[PARTIR_MAX_RANK], contract_stride[PARTIR_MAX_RANK];
} DotSide;

static void dot_side(const Type *ty, int nbatch, const int64_t *batch,
                     int ncontract, const int64_t *contract, DotSide *s) {
  int64_t strides[PARTIR_MAX_RANK];
  gboolean used[PARTIR_MAX_RANK] = {FALSE};
  tensor_strides(ty, strides);
  s->nbatch = nbatch;
  s->ncontract = ncontract;
  for (int j = 0; j < nbatch; j++) {
    g_assert(batch[j] >= 0 && batch[j] < ty->rank && !used[batch[j]]);
    used[batch[j]] = TRUE;
    s->batch_size[j] = ty->dims[batch[j]];
    s->batch_stride[j] = strides[batch[j]];
  }
  for (int j = 0; j < ncontract; j++) {
    g_assert(contract[j] >= 0 && contract[j] < ty->rank && !used[contract[j]]);
    used[contract[j]] = TRUE;
    s->contract_size[j] = ty->dims[contract[j]];
    s->contract_stride[j] = strides[contract[j]];
  }
  s->nfree = 0;
  for (int d = 0; d < ty->rank; d++) {
    if (used[d])
      continue;
    s->free_size[s->nfree] = ty->dims[d];
    s->free_stride[s->nfree] = strides[d];
    s->nfree++;
  }
}

/* acc[n] += a * x[base + offs[n]] for n < count, 'x' a floating tensor
 * ('base + n' when 'offs' is NULL): one loop per storage type, so that
 * the dtype is looked at once a row, not once an element. */
static void axpy_float_row(double *acc, double a, const Tensor *x, int64_t base,
                           const int64_t *offs, int64_t count) {
#define AXPY_ROW(TYPE, TO_DOUBLE)                                              \
  do {                                                                         \
    const TYPE *from = (const TYPE *)x->data + base;                           \
    if (offs)                                                                  \
      for (int64_t n = 0; n < count; n++)                                      \
        acc[n] += a * TO_DOUBLE(from[offs[n]]);                                \
    else                                                                       \
      for (int64_t n = 0; n < count; n++)                                      \
        acc[n] += a * TO_DOUBLE(from[n]);                                      \
  } while (0)
  switch (x->type->dtype) {
  case DT_F32:
    AXPY_ROW(float, (double));
    break;
  case DT_F64:
    AXPY_ROW(double, );
    break;
  case DT_BF16:
    AXPY_ROW(uint16_t, (double)tensor_bf16_to_f32);
    break;
  case DT_F16:
    AXPY_ROW(uint16_t, (double)dtype_f16_to_f32);
    break;
  default:
    g_assert_not_reached();
  }
#undef AXPY_ROW
}

/* matmul and dot_general.  The result is [batch..., lhs free...,
 * rhs free...], i.e. a row-major [B, M, N] block; each row out[b,m,:] is
 * computed as acc[:] += lhs[b,m,k] * rhs[b,k,:] over k (i-k-j order) in
 * a row of double (float types) or wrapping int64 (integer types)
 * accumulators, and rounded once as it is stored. */
static Tensor *k_dot(const Term *t, Tensor *const *args) {
  int64_t lb[PARTIR_MAX_RANK], rb[PARTIR_MAX_RANK];
  int64_t lc[PARTIR_MAX_RANK], rc[PARTIR_MAX_RANK];
  int nb, nc;
  if (t->op == OP_MATMUL) {
    nb = 0;
    nc = 1;
    lc[0] = 1;
    rc[0] = 0;
  } else {
    nb = attr_ints(t, "lhs_batch", lb);
    int nrb G_GNUC_UNUSED = attr_ints(t, "rhs_batch", rb);
    nc = attr_ints(t, "lhs_contract", lc);
    int nrc G_GNUC_UNUSED = attr_ints(t, "rhs_contract", rc);
    g_assert(nrb == nb && nrc == nc);
  }
  DotSide l, r;
  dot_side(args[0]->type, nb, lb, nc, lc, &l);
  dot_side(args[1]->type, nb, rb, nc, rc, &r);

  int64_t *lbo, *rbo, *lmo, *lko, *rko, *rno;
  int64_t B = offset_table(nb, l.batch_size, l.batch_stride, &lbo);
  int64_t rB G_GNUC_UNUSED =
      offset_table(nb, r.batch_size, r.batch_stride, &rbo);
  int64_t M = offset_table(l.nfree, l.free_size, l.free_stride, &lmo);
  int64_t K = offset_table(nc, l.contract_size, l.contract_stride, &lko);
  int64_t rK G_GNUC_UNUSED =
      offset_table(nc, r.contract_size, r.contract_stride, &rko);
  int64_t N = offset_table(r.nfree, r.free_size, r.free_stride, &rno);
  g_assert(rB == B && rK == K && B * M * N == type_numel(t->type));

  /* The rhs free block is contiguous in the common (row-major) case. */
  gboolean contiguous = TRUE;
  for (int64_t n = 0; n < N && contiguous; n++)
    contiguous = rno[n] == n;

  const Tensor *lhs = args[0], *rhs = args[1];
  Tensor *out = tensor_new(t->type);
  gboolean is_float = dtype_is_float(t->type->dtype);
  double *facc = is_float ? g_new(double, MAX(N, 1)) : NULL;
  int64_t *iacc = is_float ? NULL : g_new(int64_t, MAX(N, 1));
  int64_t work = 0; /* multiply-adds since the last poll */
  for (int64_t b = 0; b < B; b++)
    for (int64_t m = 0; m < M; m++) {
      int64_t lrow = lbo[b] + lmo[m];
      if (is_float)
        memset(facc, 0, (gsize)N * sizeof *facc);
      else
        memset(iacc, 0, (gsize)N * sizeof *iacc);
      for (int64_t k = 0; k < K; k++) {
        int64_t rrow = rbo[b] + rko[k];
        if (is_float) {
          double a = tensor_get_float(lhs, lrow + lko[k]);
          axpy_float_row(facc, a, rhs, rrow, contiguous ? NULL : rno, N);
        } else {
          uint64_t a = (uint64_t)tensor_get_int(lhs, lrow + lko[k]);
          for (int64_t n = 0; n < N; n++)
            iacc[n] =
                (int64_t)((uint64_t)iacc[n] +
                          a * (uint64_t)tensor_get_int(rhs, rrow + rno[n]));
        }
        if ((work += N) >= KERNEL_POLL) {
          work = 0;
          if (partir_interrupt)
            goto stopped;
        }
      }
      int64_t row = (b * M + m) * N;
      for (int64_t n = 0; n < N; n++) {
        if (is_float)
          tensor_set_float(out, row + n, facc[n]);
        else
          tensor_set_int(out, row + n, iacc[n]);
      }
    }
stopped:
  g_free(facc);
  g_free(iacc);
  g_free(lbo);
  g_free(rbo);
  g_free(lmo);
  g_free(lko);
  g_free(rko);
  g_free(rno);
  return out;
}

/* ----------------------------------------------------------- reductions */

/* The step of a float reduction.  max and min: once NaN, it sticks
 * ('v > NaN' is false). */
static inline double fold_float(Op op, double acc, double v) {
  switch (op) {
  case OP_REDUCE_SUM:
    return acc + v;
  case OP_REDUCE_PROD:
    return acc * v;
  case OP_REDUCE_MAX:
    return isnan(v) || v > acc ? v : acc;
  case OP_REDUCE_MIN:
    return isnan(v) || v < acc ? v : acc;
  default:
    g_assert_not_reached(); /* and, or: integers only */
  }
}

/* The step of an integer reduction: sums and products wrap, and and or
 * are bitwise (on sign-extended values, so their low bits are the
 * narrow type's; on i1, 0 and 1: logical). */
static inline int64_t fold_int(Op op, int64_t acc, int64_t v) {
  switch (op) {
  case OP_REDUCE_SUM:
    return (int64_t)((uint64_t)acc + (uint64_t)v);
  case OP_REDUCE_PROD:
    return (int64_t)((uint64_t)acc * (uint64_t)v);
  case OP_REDUCE_MAX:
    return v > acc ? v : acc;
  case OP_REDUCE_MIN:
    return v < acc ? v : acc;
  case OP_REDUCE_AND:
    return acc & v;
  case OP_REDUCE_OR:
    return acc | v;
  default:
    g_assert_not_reached();
  }
}

double kernel_reduce_identity_float(Op op) {
  switch (op) {
  case OP_REDUCE_SUM:
    return 0;
  case OP_REDUCE_PROD:
    return 1;
  case OP_REDUCE_MAX:
    return -INFINITY;
  case OP_REDUCE_MIN:
    return INFINITY;
  default:
    g_assert_not_reached();
  }
}

int64_t kernel_reduce_identity_int(Op op, DType dt) {
  switch (op) {
  case OP_REDUCE_SUM:
  case OP_REDUCE_OR:
    return 0;
  case OP_REDUCE_PROD:
    return 1;
  case OP_REDUCE_MAX:
    return dtype_int_min(dt);
  case OP_REDUCE_MIN:
    return dtype_int_max(dt);
  case OP_REDUCE_AND:
    return -1; /* every bit set: i1's true once stored */
  default:
    g_assert_not_reached();
  }
}

/* reduce_sum, reduce_max, reduce_min, reduce_prod, reduce_and and
 * reduce_or over 'dims'.  Each result element folds the operand elements
 * that reduce into it, in row-major order, in one accumulator (double,
 * or wrapping int64), starting from the reduction's identity: two walks
 * over the operand, one over the kept dimensions and one, for each
 * result element, over the reduced ones. */
static Tensor *k_reduce(const Term *t, Tensor *const *args) {
  const Tensor *x = args[0];
  const Type *in = x->type;
  DType dt = in->dtype;
  Op op = t->op;
  int64_t dims[PARTIR_MAX_RANK];
  int ndims = attr_ints(t, "dims", dims);
  gboolean reduced[PARTIR_MAX_RANK] = {FALSE};
  for (int j = 0; j < ndims; j++) {
    g_assert(dims[j] >= 0 && dims[j] < in->rank);
    reduced[dims[j]] = TRUE;
  }
  /* The kept and the reduced dimensions, with the operand's strides. */
  int64_t strides[PARTIR_MAX_RANK];
  int64_t kept_size[PARTIR_MAX_RANK], kept_stride[PARTIR_MAX_RANK];
  int64_t red_size[PARTIR_MAX_RANK], red_stride[PARTIR_MAX_RANK];
  int nkept = 0, nred = 0;
  int64_t per_out = 1; /* operand elements per result element */
  tensor_strides(in, strides);
  for (int d = 0; d < in->rank; d++) {
    if (reduced[d]) {
      red_size[nred] = in->dims[d];
      red_stride[nred++] = strides[d];
      per_out *= in->dims[d];
    } else {
      kept_size[nkept] = in->dims[d];
      kept_stride[nkept++] = strides[d];
    }
  }

  Tensor *out = tensor_new(t->type);
  int64_t nout = type_numel(t->type);
  gboolean is_float = dtype_is_float(dt);
  int64_t k = 0; /* operand elements folded so far */
  Walk kept, red;
  walk_start(&kept, nkept, kept_size, kept_stride, 0);
  for (int64_t o = 0; o < nout; o++, walk_next(&kept)) {
    walk_start(&red, nred, red_size, red_stride, kept.off);
    if (is_float) {
      double acc = kernel_reduce_identity_float(op);
      for (int64_t j = 0; j < per_out; j++, k++, walk_next(&red)) {
        if (stop_at(k))
          return out;
        acc = fold_float(op, acc, tensor_get_float(x, red.off));
      }
      tensor_set_float(out, o, acc);
    } else {
      int64_t acc = kernel_reduce_identity_int(op, dt);
      for (int64_t j = 0; j < per_out; j++, k++, walk_next(&red)) {
        if (stop_at(k))
          return out;
        acc = fold_int(op, acc, tensor_get_int(x, red.off));
      }
      tensor_set_int(out, o, acc);
    }
  }
  return out;
}

/* -------------------------------------------------------- data movement */

/* broadcast_in_dim, transpose and the static slice are one strided
 * gather: the result element at index i is the operand's element at
 * base + sum(i[d] * strides[d]) (a stride of 0 broadcasts).  Returns the
 * base; the code generator reads the same strides. */
int64_t kernel_gather_strides(const Term *t, int64_t *strides) {
  const Type *in = t->args[0]->type;
  int64_t idx[PARTIR_MAX_RANK], in_strides[PARTIR_MAX_RANK];
  tensor_strides(in, in_strides);
  int64_t base = 0;
  switch (t->op) {
  case OP_BROADCAST_IN_DIM: {
    int n G_GNUC_UNUSED = attr_ints(t, "dims", idx);
    g_assert(n == in->rank);
    for (int d = 0; d < t->type->rank; d++)
      strides[d] = 0;
    for (int j = 0; j < in->rank; j++) {
      g_assert(idx[j] >= 0 && idx[j] < t->type->rank);
      strides[idx[j]] = in->dims[j] == 1 ? 0 : in_strides[j];
    }
    return 0;
  }
  case OP_TRANSPOSE: {
    int n G_GNUC_UNUSED = attr_ints(t, "permutation", idx);
    g_assert(n == in->rank);
    for (int j = 0; j < in->rank; j++) {
      g_assert(idx[j] >= 0 && idx[j] < in->rank);
      strides[j] = in_strides[idx[j]];
    }
    return 0;
  }
  case OP_SLICE: {
    int64_t step[PARTIR_MAX_RANK];
    int n G_GNUC_UNUSED = attr_ints(t, "start", idx);
    int nstep = attr_ints(t, "strides", step);
    g_assert(n == in->rank && (nstep == 0 || nstep == in->rank));
    for (int d = nstep; d < in->rank; d++)
      step[d] = 1;
    for (int d = 0; d < in->rank; d++) {
      base += idx[d] * in_strides[d];
      strides[d] = step[d] * in_strides[d];
    }
    return base;
  }
  default:
    g_assert_not_reached();
  }
}

/* broadcast_in_dim, transpose and the static slice. */
static Tensor *k_gather(const Term *t, Tensor *const *args) {
  int64_t strides[PARTIR_MAX_RANK];
  int64_t base = kernel_gather_strides(t, strides);
  Tensor *out = tensor_new(t->type);
  gather_strided(out, args[0], base, strides);
  return out;
}

/* pad: the padding value (operand 1) everywhere, then each operand
 * element at low[d] + i[d] * (interior[d] + 1) in every dimension d,
 * unless that falls outside the result (a negative low or high crops). */
static Tensor *k_pad(const Term *t, Tensor *const *args) {
  const Tensor *x = args[0];
  const Type *in = x->type, *ty = t->type;
  Tensor *out = tensor_new(ty);
  gsize width = elem_bytes(out);
  int64_t n = type_numel(ty);
  for (int64_t k = 0; k < n && !stop_at(k); k++)
    copy_elem(out, k, args[1], 0, width);
  int64_t low[PARTIR_MAX_RANK], step[PARTIR_MAX_RANK] = {0},
                                out_strides[PARTIR_MAX_RANK],
                                strides[PARTIR_MAX_RANK];
  int nl G_GNUC_UNUSED = attr_ints(t, "low", low);
  int ni = attr_ints(t, "interior", step);
  g_assert(nl == in->rank && (ni == 0 || ni == in->rank));
  tensor_strides(ty, out_strides);
  int64_t base = 0;
  for (int d = 0; d < in->rank; d++) {
    step[d] += 1; /* interior + 1 */
    strides[d] = step[d] * out_strides[d];
    base += low[d] * out_strides[d];
  }
  /* 'w.off' is the result offset the operand index maps to, when every
   * one of its coordinates is inside the result */
  Walk w;
  walk_start(&w, in->rank, in->dims, strides, base);
  int64_t m = type_numel(in);
  for (int64_t k = 0; k < m && !stop_at(k); k++, walk_next(&w)) {
    gboolean inside = TRUE;
    for (int d = 0; d < in->rank && inside; d++) {
      int64_t at = low[d] + w.idx[d] * step[d];
      inside = at >= 0 && at < ty->dims[d];
    }
    if (inside)
      copy_elem(out, w.off, x, k, width);
  }
  return out;
}

static Tensor *k_reshape(const Term *t, Tensor *const *args) {
  Tensor *out = tensor_new(t->type);
  g_assert(type_numel(t->type) == type_numel(args[0]->type));
  memcpy(out->data, args[0]->data, tensor_type_bytes(t->type));
  return out;
}

/* Views the result as [outer, size(dim) * inner] and copies each operand's
 * [outer, size_k(dim) * inner] block into its column range. */
static Tensor *k_concatenate(const Term *t, Tensor *const *args) {
  const Type *ty = t->type;
  int64_t dim = attrs_get_int(t->attrs, "dim");
  g_assert(dim >= 0 && dim < ty->rank);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; d++)
    outer *= ty->dims[d];
  for (int d = (int)dim + 1; d < ty->rank; d++)
    inner *= ty->dims[d];
  Tensor *out = tensor_new(ty);
  char *dst = out->data;
  gsize elem = elem_bytes(out);
  int64_t row = ty->dims[dim] * inner, col = 0;
  for (int a = 0; a < t->nargs; a++) {
    int64_t width = args[a]->type->dims[dim] * inner;
    const char *src = args[a]->data;
    for (int64_t o = 0; o < outer && width > 0; o++)
      memcpy(dst + (o * row + col) * (int64_t)elem,
             src + o * width * (int64_t)elem, (gsize)width * elem);
    col += width;
  }
  g_assert(col == row);
  return out;
}

/* Collectives exchange with the other devices through the thread's
 * Collectives (the simulator's, or a runtime's); interp_check keeps them
 * out of single-device runs. */
_Thread_local Collectives *kernel_comm;

static Tensor *k_collective(const Term *t, Tensor *const *args) {
  g_assert(kernel_comm);
  return kernel_comm->collective(kernel_comm, t, args[0]);
}

/* ------------------------------------------------------------- dispatch */

static const KernelFn kernels[OP_COUNT_] = {
#define X(e, name, arity, tr, k, fl) [e] = k,
#include "core/ops.def"
#undef X
};

Tensor *kernel_eval(const Term *t, Tensor *const *args) {
  g_assert(t->kind == TM_OP && t->op < OP_COUNT_ && kernels[t->op]);
  Tensor *out = kernels[t->op](t, args);
  g_assert(out->type == t->type);
  return out;
}
