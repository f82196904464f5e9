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
 * Values follow the Tensor conventions of eval.h: floating types
 * are doubles already rounded to their element type, integer types are
 * int64 already wrapped to their width, i1 is 0/1.  So:
 *
 *  - Elementwise float results are computed in double and rounded once
 *    by tensor_round_value (which takes bf16 through f32, so bf16 is
 *    "computed in f32" as the language says).
 *  - Integer arithmetic is done in uint64 (wrapping, no UB) and wrapped
 *    to the width afterwards.  Integer div never traps: x/0 is -1 and
 *    INT_MIN/-1 is INT_MIN (XLA's choice).  The type rules keep i1 out
 *    of arithmetic, iota, contractions and reductions.
 *  - Contractions and reductions accumulate in double (int64 for integer
 *    types) and round once at the end, as docs/language.md specifies.
 *
 * Data movement (broadcast_in_dim, transpose, static slice) is one
 * strided gather: every result element reads the operand at
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

static int64_t dtype_int_min(DType dt) {
  switch (dt) {
  case DT_I32:
    return INT32_MIN;
  case DT_I64:
    return INT64_MIN;
  case DT_I1:
    return 0;
  default:
    g_assert_not_reached();
  }
}

static int64_t dtype_int_max(DType dt) {
  switch (dt) {
  case DT_I32:
    return INT32_MAX;
  case DT_I64:
    return INT64_MAX;
  case DT_I1:
    return 1;
  default:
    g_assert_not_reached();
  }
}

/* Float to integer: truncates toward zero, saturates to the target range,
 * NaN gives 0; to i1 it is 'v != 0' (so NaN is 1, as IEEE says). */
static int64_t float_to_int(DType dt, double v) {
  if (dt == DT_I1)
    return v != 0;
  if (isnan(v))
    return 0;
  /* Bounds as exact doubles: -2^31 .. 2^31 and -2^63 .. 2^63. */
  double lo = (double)dtype_int_min(dt);
  double hi_excl = -lo;
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

/* Reads a required integer attribute. */
/* Element storage of a tensor: both representations are 8 bytes wide, so
 * data movement can copy raw elements without looking at the dtype. */
static char *tensor_bytes(const Tensor *x) {
  return dtype_is_float(x->type->dtype) ? (char *)x->f : (char *)x->i;
}

G_STATIC_ASSERT(sizeof(double) == sizeof(int64_t));
#define ELEM ((gsize)sizeof(double))

/* Fills 'out' (row-major over its own shape) with the elements of 'src'
 * at 'base + sum(index[d] * strides[d])'. */
static void gather_strided(Tensor *out, const Tensor *src, int64_t base,
                           const int64_t *strides) {
  const Type *ty = out->type;
  int64_t n = type_numel(ty);
  if (n == 0)
    return;
  char *dst = tensor_bytes(out);
  const char *from = tensor_bytes(src);
  int64_t idx[PARTIR_MAX_RANK] = {0};
  int64_t off = base;
  for (int64_t k = 0; k < n && !stop_at(k); k++) {
    memcpy(dst + k * ELEM, from + off * ELEM, ELEM);
    /* Advance the row-major counter, keeping 'off' in step. */
    for (int d = ty->rank - 1; d >= 0; d--) {
      off += strides[d];
      if (++idx[d] < ty->dims[d])
        break;
      off -= strides[d] * ty->dims[d];
      idx[d] = 0;
    }
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
  case OP_MAX:
    return a > b ? a : b;
  case OP_MIN:
    return a < b ? a : b;
  default:
    g_assert_not_reached(); /* pow is floats only */
  }
}

/* add sub mul div max min pow. */
static Tensor *k_binary(const Term *t, Tensor *const *args) {
  Tensor *out = tensor_new(t->type);
  DType dt = t->type->dtype;
  int64_t n = type_numel(t->type);
  if (dtype_is_float(dt)) {
    const double *a = args[0]->f, *b = args[1]->f;
    for (int64_t k = 0; k < n && !stop_at(k); k++)
      out->f[k] = tensor_round_value(dt, binary_float(t->op, a[k], b[k]));
  } else {
    const int64_t *a = args[0]->i, *b = args[1]->i;
    for (int64_t k = 0; k < n && !stop_at(k); k++)
      out->i[k] = tensor_wrap_value(dt, binary_int(t->op, dt, a[k], b[k]));
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

/* neg abs relu exp log tanh logistic sqrt rsqrt. */
static Tensor *k_unary(const Term *t, Tensor *const *args) {
  Tensor *out = tensor_new(t->type);
  DType dt = t->type->dtype;
  int64_t n = type_numel(t->type);
  if (dtype_is_float(dt)) {
    for (int64_t k = 0; k < n && !stop_at(k); k++)
      out->f[k] = tensor_round_value(dt, unary_float(t->op, args[0]->f[k]));
  } else {
    for (int64_t k = 0; k < n && !stop_at(k); k++)
      out->i[k] = tensor_wrap_value(dt, unary_int(t->op, args[0]->i[k]));
  }
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
  if (dtype_is_float(args[0]->type->dtype)) {
    const double *a = args[0]->f, *b = args[1]->f;
    for (int64_t k = 0; k < n && !stop_at(k); k++) {
      int ord = a[k] < b[k] ? -1 : a[k] > b[k] ? 1 : a[k] == b[k] ? 0 : 2;
      out->i[k] = compare_result(dir, ord);
    }
  } else {
    const int64_t *a = args[0]->i, *b = args[1]->i;
    for (int64_t k = 0; k < n && !stop_at(k); k++) {
      int ord = a[k] < b[k] ? -1 : a[k] > b[k] ? 1 : 0;
      out->i[k] = compare_result(dir, ord);
    }
  }
  return out;
}

static Tensor *k_select(const Term *t, Tensor *const *args) {
  Tensor *out = tensor_new(t->type);
  int64_t n = type_numel(t->type);
  const int64_t *pred = args[0]->i;
  char *dst = tensor_bytes(out);
  const char *on_true = tensor_bytes(args[1]);
  const char *on_false = tensor_bytes(args[2]);
  for (int64_t k = 0; k < n && !stop_at(k); k++)
    memcpy(dst + k * ELEM, (pred[k] ? on_true : on_false) + k * ELEM, ELEM);
  return out;
}

/* Element type conversion, elementwise; the shape is unchanged. */
static Tensor *k_convert(const Term *t, Tensor *const *args) {
  Tensor *out = tensor_new(t->type);
  DType to = t->type->dtype, from = args[0]->type->dtype;
  int64_t n = type_numel(t->type);
  for (int64_t k = 0; k < n && !stop_at(k); k++) {
    if (dtype_is_float(from) && dtype_is_float(to))
      out->f[k] = tensor_round_value(to, args[0]->f[k]);
    else if (dtype_is_float(from))
      out->i[k] = float_to_int(to, args[0]->f[k]);
    else if (dtype_is_float(to))
      out->f[k] = int_to_float(to, args[0]->i[k]);
    else if (to == DT_I1)
      out->i[k] = args[0]->i[k] != 0;
    else
      out->i[k] = tensor_wrap_value(to, args[0]->i[k]);
  }
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
    out->f[k] = v->kind == AV_INT ? int_to_float(dt, v->i)
                                  : tensor_round_value(dt, v->f);
  else if (v->kind == AV_FLOAT)
    out->i[k] = float_to_int(dt, v->f);
  else if (dt == DT_I1)
    out->i[k] = v->i != 0;
  else
    out->i[k] = tensor_wrap_value(dt, v->i);
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
  char *bytes = tensor_bytes(out);
  for (int64_t k = 1; k < n && !stop_at(k); k++)
    memcpy(bytes + k * ELEM, bytes, ELEM);
  return out;
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
      out->f[k] = int_to_float(ty->dtype, v);
    else
      out->i[k] = tensor_wrap_value(ty->dtype, v);
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

/* matmul and dot_general.  The result is [batch..., lhs free...,
 * rhs free...], i.e. a row-major [B, M, N] block; it is computed as
 * out[b,m,:] += lhs[b,m,k] * rhs[b,k,:] over k (i-k-j order), with
 * double (float types) or wrapping int64 (integer types) accumulators
 * held in the result's own storage and rounded once at the end. */
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

  Tensor *out = tensor_new(t->type);
  DType dt = t->type->dtype;
  int64_t work = 0; /* multiply-adds since the last poll */
  if (dtype_is_float(dt)) {
    const double *lhs = args[0]->f, *rhs = args[1]->f;
    for (int64_t b = 0; b < B; b++)
      for (int64_t m = 0; m < M; m++) {
        double *acc = out->f + (b * M + m) * N;
        const double *lrow = lhs + lbo[b] + lmo[m];
        for (int64_t k = 0; k < K; k++) {
          double a = lrow[lko[k]];
          const double *rrow = rhs + rbo[b] + rko[k];
          if (contiguous)
            for (int64_t n = 0; n < N; n++)
              acc[n] += a * rrow[n];
          else
            for (int64_t n = 0; n < N; n++)
              acc[n] += a * rrow[rno[n]];
          if ((work += N) >= KERNEL_POLL) {
            work = 0;
            if (partir_interrupt)
              goto stopped;
          }
        }
      }
  } else {
    const int64_t *lhs = args[0]->i, *rhs = args[1]->i;
    for (int64_t b = 0; b < B; b++)
      for (int64_t m = 0; m < M; m++) {
        int64_t *acc = out->i + (b * M + m) * N;
        const int64_t *lrow = lhs + lbo[b] + lmo[m];
        for (int64_t k = 0; k < K; k++) {
          uint64_t a = (uint64_t)lrow[lko[k]];
          const int64_t *rrow = rhs + rbo[b] + rko[k];
          for (int64_t n = 0; n < N; n++)
            acc[n] = (int64_t)((uint64_t)acc[n] +
                               a * (uint64_t)rrow[contiguous ? n : rno[n]]);
          if ((work += N) >= KERNEL_POLL) {
            work = 0;
            if (partir_interrupt)
              goto stopped;
          }
        }
      }
  }
stopped:
  tensor_round(out);
  g_free(lbo);
  g_free(rbo);
  g_free(lmo);
  g_free(lko);
  g_free(rko);
  g_free(rno);
  return out;
}

/* ----------------------------------------------------------- reductions */

/* reduce_sum and reduce_max over 'dims'.  Walks the operand row-major,
 * tracking the offset of the result element each operand element folds
 * into (reduced dimensions have result stride 0). */
static Tensor *k_reduce(const Term *t, Tensor *const *args) {
  const Type *in = args[0]->type;
  DType dt = in->dtype;
  gboolean is_max = t->op == OP_REDUCE_MAX;
  int64_t dims[PARTIR_MAX_RANK];
  int ndims = attr_ints(t, "dims", dims);
  gboolean reduced[PARTIR_MAX_RANK] = {FALSE};
  for (int j = 0; j < ndims; j++) {
    g_assert(dims[j] >= 0 && dims[j] < in->rank);
    reduced[dims[j]] = TRUE;
  }
  /* Result strides laid over the operand's dimensions. */
  int64_t out_strides[PARTIR_MAX_RANK], stride = 1;
  for (int d = in->rank - 1; d >= 0; d--) {
    out_strides[d] = reduced[d] ? 0 : stride;
    if (!reduced[d])
      stride *= in->dims[d];
  }

  Tensor *out = tensor_new(t->type);
  int64_t nout = type_numel(t->type), nin = type_numel(in);
  g_assert(nout == stride);
  gboolean is_float = dtype_is_float(dt);
  for (int64_t k = 0; k < nout && is_max; k++) {
    if (is_float)
      out->f[k] = -INFINITY;
    else
      out->i[k] = dtype_int_min(dt);
  }

  int64_t idx[PARTIR_MAX_RANK] = {0};
  int64_t o = 0;
  for (int64_t k = 0; k < nin && !stop_at(k); k++) {
    if (is_float) {
      double v = args[0]->f[k];
      if (!is_max)
        out->f[o] += v;
      else if (isnan(v) || v > out->f[o])
        out->f[o] = v; /* once NaN, 'v > NaN' is false: it sticks */
    } else {
      int64_t v = args[0]->i[k];
      if (!is_max)
        out->i[o] = (int64_t)((uint64_t)out->i[o] + (uint64_t)v);
      else if (v > out->i[o])
        out->i[o] = v;
    }
    for (int d = in->rank - 1; d >= 0; d--) {
      o += out_strides[d];
      if (++idx[d] < in->dims[d])
        break;
      o -= out_strides[d] * in->dims[d];
      idx[d] = 0;
    }
  }
  tensor_round(out);
  return out;
}

/* -------------------------------------------------------- data movement */

static Tensor *k_broadcast_in_dim(const Term *t, Tensor *const *args) {
  const Type *in = args[0]->type;
  int64_t dims[PARTIR_MAX_RANK], in_strides[PARTIR_MAX_RANK];
  int64_t strides[PARTIR_MAX_RANK] = {0};
  int ndims G_GNUC_UNUSED = attr_ints(t, "dims", dims);
  g_assert(ndims == in->rank);
  tensor_strides(in, in_strides);
  for (int j = 0; j < in->rank; j++) {
    g_assert(dims[j] >= 0 && dims[j] < t->type->rank);
    strides[dims[j]] = in->dims[j] == 1 ? 0 : in_strides[j];
  }
  Tensor *out = tensor_new(t->type);
  gather_strided(out, args[0], 0, strides);
  return out;
}

static Tensor *k_transpose(const Term *t, Tensor *const *args) {
  const Type *in = args[0]->type;
  int64_t perm[PARTIR_MAX_RANK], in_strides[PARTIR_MAX_RANK];
  int64_t strides[PARTIR_MAX_RANK];
  int nperm G_GNUC_UNUSED = attr_ints(t, "permutation", perm);
  g_assert(nperm == in->rank);
  tensor_strides(in, in_strides);
  for (int j = 0; j < in->rank; j++) {
    g_assert(perm[j] >= 0 && perm[j] < in->rank);
    strides[j] = in_strides[perm[j]];
  }
  Tensor *out = tensor_new(t->type);
  gather_strided(out, args[0], 0, strides);
  return out;
}

static Tensor *k_reshape(const Term *t, Tensor *const *args) {
  Tensor *out = tensor_new(t->type);
  int64_t n = type_numel(t->type);
  g_assert(n == type_numel(args[0]->type));
  if (n > 0)
    memcpy(tensor_bytes(out), tensor_bytes(args[0]), (gsize)n * ELEM);
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
  char *dst = tensor_bytes(out);
  int64_t row = ty->dims[dim] * inner, col = 0;
  for (int a = 0; a < t->nargs; a++) {
    int64_t width = args[a]->type->dims[dim] * inner;
    const char *src = tensor_bytes(args[a]);
    for (int64_t o = 0; o < outer && width > 0; o++)
      memcpy(dst + (o * row + col) * ELEM, src + o * width * ELEM,
             (gsize)width * ELEM);
    col += width;
  }
  g_assert(col == row);
  return out;
}

/* The static 'slice' operator: start, limit, optional strides. */
static Tensor *k_static_slice(const Term *t, Tensor *const *args) {
  const Type *in = args[0]->type;
  int64_t start[PARTIR_MAX_RANK], step[PARTIR_MAX_RANK];
  int64_t in_strides[PARTIR_MAX_RANK], strides[PARTIR_MAX_RANK];
  int nstart G_GNUC_UNUSED = attr_ints(t, "start", start);
  int nstep = attr_ints(t, "strides", step);
  g_assert(nstart == in->rank && (nstep == 0 || nstep == in->rank));
  for (int d = nstep; d < in->rank; d++)
    step[d] = 1;
  tensor_strides(in, in_strides);
  int64_t base = 0;
  for (int d = 0; d < in->rank; d++) {
    base += start[d] * in_strides[d];
    strides[d] = step[d] * in_strides[d];
  }
  Tensor *out = tensor_new(t->type);
  gather_strided(out, args[0], base, strides);
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
