/* typerule.c — the type rule of every base operator.
 *
 * typerule_infer() checks an operator application (operand types and
 * attributes) and returns its result type, or NULL with a message in
 * 'err'.  The rule for each operator is named in ops.def.  Operators
 * that, as in StableHLO, take their result type from the written one
 * (constant, iota, convert, broadcast_in_dim, reshape) check that it was
 * written and is consistent with the operands.
 *
 * requires: operands are tensors (term_op checks).
 */
#include "core/core.h"

#include <math.h>
#include <string.h>

#define RULE_ARGS                                                              \
  Op op, int nargs, const Term *const *args, const Attrs *attrs,               \
      const Type *written, Diag *err

typedef const Type *(*TypeRule)(RULE_ARGS);

#define X(e, name, arity, tr, k, fl) static const Type *tr(RULE_ARGS);
#include "core/ops.def"
#undef X

static const TypeRule rules[OP_COUNT_] = {
#define X(e, name, arity, tr, k, fl) [e] = tr,
#include "core/ops.def"
#undef X
};

gboolean op_needs_attrs(Op op) {
  return op == OP_COMPARE || op_is_reduction(op) || op == OP_TRANSPOSE ||
         op == OP_CONCATENATE || op == OP_SLICE || op == OP_IOTA ||
         op == OP_CONSTANT || op == OP_BROADCAST_IN_DIM || op == OP_PAD ||
         op == OP_GATHER || op == OP_DYNAMIC_SLICE || op == OP_SCATTER_ADD ||
         op_is_collective(op);
}

gboolean op_is_reduction(Op op) {
  return op == OP_REDUCE_SUM || op == OP_REDUCE_MAX || op == OP_REDUCE_MIN ||
         op == OP_REDUCE_PROD || op == OP_REDUCE_AND || op == OP_REDUCE_OR;
}

gboolean op_takes_written_type(Op op) {
  return op == OP_CONSTANT || op == OP_IOTA || op == OP_CONVERT ||
         op == OP_BITCAST || op == OP_BROADCAST_IN_DIM || op == OP_RESHAPE;
}

/* Refuses attributes the operator does not know.  'allowed' is a
 * NULL-terminated list. */
static gboolean check_attr_names(Op op, const Attrs *attrs,
                                 const char *const *allowed, Diag *err) {
  for (int i = 0; i < attrs->count; i++) {
    gboolean ok = FALSE;
    for (const char *const *a = allowed; *a; a++)
      ok |= strcmp(*a, attrs->keys[i]) == 0;
    if (!ok) {
      diag_reason(err, "'%s' has no attribute '%s'", op_name(op),
                  attrs->keys[i]);
      return FALSE;
    }
  }
  return TRUE;
}
#define ATTRS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NO_ATTRS ((const char *const[]){NULL})

/* Reads integer attribute 'key' into *out. */
static gboolean get_int(Op op, const Attrs *attrs, const char *key,
                        int64_t *out, Diag *err) {
  const AttrValue *v = attrs_get(attrs, key);
  if (!v) {
    diag_reason(err, "'%s' needs attribute '%s'", op_name(op), key);
    return FALSE;
  }
  if (v->kind != AV_INT) {
    diag_reason(err, "'%s' attribute '%s' must be an integer", op_name(op),
                key);
    return FALSE;
  }
  *out = v->i;
  return TRUE;
}

/* Reads integer-list attribute 'key' (absent = empty when !required). */
static gboolean get_int_list(Op op, const Attrs *attrs, const char *key,
                             gboolean required, int64_t *out, int *count,
                             Diag *err) {
  const AttrValue *v = attrs_get(attrs, key);
  *count = 0;
  if (!v) {
    if (required)
      diag_reason(err, "'%s' needs attribute '%s'", op_name(op), key);
    return !required;
  }
  if (v->kind != AV_LIST) {
    diag_reason(err, "'%s' attribute '%s' must be a list of integers",
                op_name(op), key);
    return FALSE;
  }
  if (v->count > PARTIR_MAX_RANK) {
    diag_reason(err, "'%s' attribute '%s' has %d entries (at most %d)",
                op_name(op), key, v->count, PARTIR_MAX_RANK);
    return FALSE;
  }
  for (int i = 0; i < v->count; i++) {
    if (v->items[i].kind != AV_INT) {
      diag_reason(err, "'%s' attribute '%s' must be a list of integers",
                  op_name(op), key);
      return FALSE;
    }
    out[i] = v->items[i].i;
  }
  *count = v->count;
  return TRUE;
}

/* Checks that 'dims' are distinct dimensions of a rank-'rank' tensor. */
static gboolean check_dims(Op op, const char *key, const int64_t *dims,
                           int count, int rank, Diag *err) {
  for (int i = 0; i < count; i++) {
    if (dims[i] < 0 || dims[i] >= rank) {
      diag_reason(err,
                  "'%s' attribute '%s': dimension %" G_GINT64_FORMAT
                  " out of range for rank %d",
                  op_name(op), key, dims[i], rank);
      return FALSE;
    }
    for (int j = 0; j < i; j++)
      if (dims[j] == dims[i]) {
        diag_reason(
            err, "'%s' attribute '%s': dimension %" G_GINT64_FORMAT " repeated",
            op_name(op), key, dims[i]);
        return FALSE;
      }
  }
  return TRUE;
}

static gboolean need_written(Op op, const Type *written, Diag *err) {
  if (!written || written->kind != TY_TENSOR) {
    diag_reason(err, "'%s' needs its result type written (': tensor<...>')",
                op_name(op));
    return FALSE;
  }
  return TRUE;
}

static gboolean not_i1(Op op, const Type *t, Diag *err) {
  if (t->dtype == DT_I1) {
    diag_reason(err, "'%s' is not defined on i1", op_name(op));
    return FALSE;
  }
  return TRUE;
}

static gboolean need_float(Op op, const Type *t, Diag *err) {
  if (!dtype_is_float(t->dtype)) {
    diag_reason(err, "'%s' needs a floating-point operand, not %s", op_name(op),
                dtype_name(t->dtype));
    return FALSE;
  }
  return TRUE;
}

static gboolean same_type(Op op, const Type *a, const Type *b, Diag *err) {
  if (a != b) {
    g_autofree char *x = type_to_string(a);
    g_autofree char *y = type_to_string(b);
    diag_reason(err, "'%s' operands have different types: %s and %s",
                op_name(op), x, y);
    return FALSE;
  }
  return TRUE;
}

static gboolean same_dtype(Op op, const Type *a, const Type *b, Diag *err) {
  if (a->dtype != b->dtype) {
    diag_reason(err, "'%s' operands have different element types: %s and %s",
                op_name(op), dtype_name(a->dtype), dtype_name(b->dtype));
    return FALSE;
  }
  return TRUE;
}

static const Type *tr_binary(RULE_ARGS) {
  const Type *a = args[0]->type;
  if (!check_attr_names(op, attrs, NO_ATTRS, err) ||
      !same_type(op, a, args[1]->type, err) || !not_i1(op, a, err))
    return NULL;
  return a;
}

static const Type *tr_binary_float(RULE_ARGS) {
  const Type *t = tr_binary(op, nargs, args, attrs, written, err);
  return t && need_float(op, t, err) ? t : NULL;
}

static const Type *tr_unary(RULE_ARGS) {
  const Type *a = args[0]->type;
  if (!check_attr_names(op, attrs, NO_ATTRS, err) || !not_i1(op, a, err))
    return NULL;
  return a;
}

static const Type *tr_unary_float(RULE_ARGS) {
  const Type *t = tr_unary(op, nargs, args, attrs, written, err);
  return t && need_float(op, t, err) ? t : NULL;
}

/* and, or, xor, not: operands of one integer or i1 type. */
static const Type *tr_bitwise(RULE_ARGS) {
  const Type *a = args[0]->type;
  if (!check_attr_names(op, attrs, NO_ATTRS, err) ||
      (nargs == 2 && !same_type(op, a, args[1]->type, err)))
    return NULL;
  if (dtype_is_float(a->dtype)) {
    diag_reason(err, "'%s' needs an integer or i1 operand, not %s", op_name(op),
                dtype_name(a->dtype));
    return NULL;
  }
  return a;
}

/* shift_left, shift_right_arithmetic, shift_right_logical, popcnt, clz:
 * operands of one integer type (i1 has no bits to shift or count). */
static const Type *tr_integer(RULE_ARGS) {
  const Type *t = tr_bitwise(op, nargs, args, attrs, written, err);
  return t && not_i1(op, t, err) ? t : NULL;
}

static const Type *tr_compare(RULE_ARGS) {
  static const char *const dirs[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
  const Type *a = args[0]->type;
  if (!check_attr_names(op, attrs, ATTRS("direction"), err) ||
      !same_type(op, a, args[1]->type, err))
    return NULL;
  const AttrValue *d = attrs_get(attrs, "direction");
  gboolean ok = FALSE;
  for (gsize i = 0; d && d->kind == AV_SYMBOL && i < G_N_ELEMENTS(dirs); i++)
    ok |= strcmp(d->sym, dirs[i]) == 0;
  if (!ok) {
    diag_reason(err, "'compare' needs attribute 'direction' = EQ, NE, LT, "
                     "LE, GT or GE");
    return NULL;
  }
  return type_with_dtype(a, DT_I1);
}

static const Type *tr_select(RULE_ARGS) {
  const Type *p = args[0]->type, *a = args[1]->type;
  if (!check_attr_names(op, attrs, NO_ATTRS, err) ||
      !same_type(op, a, args[2]->type, err))
    return NULL;
  if (p->dtype != DT_I1 || type_with_dtype(p, a->dtype) != a) {
    g_autofree char *ps = type_to_string(p);
    g_autofree char *as = type_to_string(a);
    diag_reason(err,
                "'select' predicate must be i1 with the shape of the "
                "operands: got %s for operands %s",
                ps, as);
    return NULL;
  }
  return a;
}

static const Type *tr_convert(RULE_ARGS) {
  if (!check_attr_names(op, attrs, NO_ATTRS, err) ||
      !need_written(op, written, err))
    return NULL;
  if (type_with_dtype(args[0]->type, written->dtype) != written) {
    g_autofree char *a = type_to_string(args[0]->type);
    g_autofree char *w = type_to_string(written);
    diag_reason(err, "'convert' changes only the element type: %s to %s", a, w);
    return NULL;
  }
  return written;
}

/* bitcast: the same bits read as another element type of their width
 * (f32 and i32 or ui32, f64 and i64, bf16 and f16 and i16 or ui16, i8
 * and ui8); the shape stays. */
static const Type *tr_bitcast(RULE_ARGS) {
  if (!check_attr_names(op, attrs, NO_ATTRS, err) ||
      !need_written(op, written, err))
    return NULL;
  DType from = args[0]->type->dtype, to = written->dtype;
  g_autofree char *a = type_to_string(args[0]->type);
  g_autofree char *w = type_to_string(written);
  if (type_with_dtype(args[0]->type, to) != written) {
    diag_reason(err, "'bitcast' keeps the shape: %s to %s", a, w);
    return NULL;
  }
  if (from == DT_I1 || to == DT_I1 ||
      dtype_storage_bytes(from) != dtype_storage_bytes(to)) {
    diag_reason(err,
                "'bitcast' reads the bits of an element as another type of "
                "their width: not %s as %s",
                a, w);
    return NULL;
  }
  return written;
}

static const Type *tr_constant(RULE_ARGS) {
  if (!check_attr_names(op, attrs, ATTRS("value"), err) ||
      !need_written(op, written, err))
    return NULL;
  const AttrValue *v = attrs_get(attrs, "value");
  if (!v) {
    diag_reason(err, "'constant' needs attribute 'value'");
    return NULL;
  }
  g_autoptr(GArray) nums = g_array_new(FALSE, FALSE, sizeof(double));
  if (!attr_value_numbers(v, nums)) {
    diag_reason(err, "'constant' value must be a number or a list of "
                     "numbers");
    return NULL;
  }
  int64_t numel = type_numel(written);
  if (v->kind == AV_LIST && (int64_t)nums->len != numel) {
    diag_reason(err,
                "'constant' value has %u numbers but the type has "
                "%" G_GINT64_FORMAT " elements",
                nums->len, numel);
    return NULL;
  }
  if (!dtype_is_float(written->dtype))
    for (guint i = 0; i < nums->len; i++) {
      double d = g_array_index(nums, double, i);
      if (d != floor(d) || !isfinite(d)) {
        diag_reason(err, "'constant' of %s needs integer values, got %g",
                    dtype_name(written->dtype), d);
        return NULL;
      }
    }
  return written;
}

static const Type *tr_iota(RULE_ARGS) {
  int64_t dim;
  if (!check_attr_names(op, attrs, ATTRS("dim"), err) ||
      !need_written(op, written, err) || !get_int(op, attrs, "dim", &dim, err))
    return NULL;
  if (!check_dims(op, "dim", &dim, 1, written->rank, err) ||
      !not_i1(op, written, err))
    return NULL;
  return written;
}

static const Type *tr_matmul(RULE_ARGS) {
  const Type *a = args[0]->type, *b = args[1]->type;
  if (!check_attr_names(op, attrs, NO_ATTRS, err) ||
      !same_dtype(op, a, b, err) || !not_i1(op, a, err))
    return NULL;
  if (a->rank != 2 || b->rank != 2) {
    diag_reason(err,
                "'matmul' needs rank-2 operands (use dot_general), "
                "got ranks %d and %d",
                a->rank, b->rank);
    return NULL;
  }
  if (a->dims[1] != b->dims[0]) {
    diag_reason(err,
                "'matmul' contracting sizes differ: %" G_GINT64_FORMAT
                " and %" G_GINT64_FORMAT,
                a->dims[1], b->dims[0]);
    return NULL;
  }
  int64_t dims[2] = {a->dims[0], b->dims[1]};
  return type_tensor(a->dtype, 2, dims);
}

static gboolean contains(const int64_t *xs, int n, int64_t x) {
  for (int i = 0; i < n; i++)
    if (xs[i] == x)
      return TRUE;
  return FALSE;
}

static const Type *tr_dot_general(RULE_ARGS) {
  const Type *a = args[0]->type, *b = args[1]->type;
  int64_t lb[PARTIR_MAX_RANK], rb[PARTIR_MAX_RANK], lc[PARTIR_MAX_RANK],
      rc[PARTIR_MAX_RANK];
  int nlb, nrb, nlc, nrc;
  if (!check_attr_names(
          op, attrs,
          ATTRS("lhs_batch", "rhs_batch", "lhs_contract", "rhs_contract"),
          err) ||
      !same_dtype(op, a, b, err) || !not_i1(op, a, err) ||
      !get_int_list(op, attrs, "lhs_batch", FALSE, lb, &nlb, err) ||
      !get_int_list(op, attrs, "rhs_batch", FALSE, rb, &nrb, err) ||
      !get_int_list(op, attrs, "lhs_contract", FALSE, lc, &nlc, err) ||
      !get_int_list(op, attrs, "rhs_contract", FALSE, rc, &nrc, err))
    return NULL;
  if (nlb != nrb || nlc != nrc) {
    diag_reason(err,
                "'dot_general' needs as many lhs as rhs batch (%d, "
                "%d) and contracting (%d, %d) dimensions",
                nlb, nrb, nlc, nrc);
    return NULL;
  }
  int64_t lall[2 * PARTIR_MAX_RANK], rall[2 * PARTIR_MAX_RANK];
  memcpy(lall, lb, sizeof(int64_t) * (gsize)nlb);
  memcpy(lall + nlb, lc, sizeof(int64_t) * (gsize)nlc);
  memcpy(rall, rb, sizeof(int64_t) * (gsize)nrb);
  memcpy(rall + nrb, rc, sizeof(int64_t) * (gsize)nrc);
  if (!check_dims(op, "lhs_batch/lhs_contract", lall, nlb + nlc, a->rank,
                  err) ||
      !check_dims(op, "rhs_batch/rhs_contract", rall, nrb + nrc, b->rank, err))
    return NULL;
  for (int i = 0; i < nlb + nlc; i++)
    if (a->dims[lall[i]] != b->dims[rall[i]]) {
      diag_reason(err,
                  "'dot_general' %s dimension sizes differ: lhs dim "
                  "%" G_GINT64_FORMAT " is %" G_GINT64_FORMAT
                  ", rhs dim %" G_GINT64_FORMAT " is %" G_GINT64_FORMAT,
                  i < nlb ? "batch" : "contracting", lall[i], a->dims[lall[i]],
                  rall[i], b->dims[rall[i]]);
      return NULL;
    }
  int rank = nlb + (a->rank - nlb - nlc) + (b->rank - nrb - nrc);
  if (rank > PARTIR_MAX_RANK) {
    diag_reason(err, "'dot_general' result rank %d exceeds %d", rank,
                PARTIR_MAX_RANK);
    return NULL;
  }
  int64_t dims[PARTIR_MAX_RANK];
  int r = 0;
  for (int i = 0; i < nlb; i++)
    dims[r++] = a->dims[lb[i]];
  for (int i = 0; i < a->rank; i++)
    if (!contains(lall, nlb + nlc, i))
      dims[r++] = a->dims[i];
  for (int i = 0; i < b->rank; i++)
    if (!contains(rall, nrb + nrc, i))
      dims[r++] = b->dims[i];
  return type_tensor(a->dtype, rank, dims);
}

/* The operand's shape without 'dims' (a list attribute). */
static const Type *reduced_type(Op op, const Attrs *attrs, const Type *a,
                                Diag *err) {
  int64_t dims[PARTIR_MAX_RANK];
  int n;
  if (!check_attr_names(op, attrs, ATTRS("dims"), err) ||
      !get_int_list(op, attrs, "dims", TRUE, dims, &n, err) ||
      !check_dims(op, "dims", dims, n, a->rank, err))
    return NULL;
  int64_t out[PARTIR_MAX_RANK];
  int r = 0;
  for (int i = 0; i < a->rank; i++)
    if (!contains(dims, n, i))
      out[r++] = a->dims[i];
  return type_tensor(a->dtype, r, out);
}

/* reduce_sum, reduce_max, reduce_min, reduce_prod: numbers. */
static const Type *tr_reduce(RULE_ARGS) {
  const Type *a = args[0]->type;
  return not_i1(op, a, err) ? reduced_type(op, attrs, a, err) : NULL;
}

/* reduce_and, reduce_or: bitwise on integers, logical on i1. */
static const Type *tr_reduce_bits(RULE_ARGS) {
  const Type *a = args[0]->type;
  if (dtype_is_float(a->dtype)) {
    diag_reason(err, "'%s' needs an integer or i1 operand, not %s", op_name(op),
                dtype_name(a->dtype));
    return NULL;
  }
  return reduced_type(op, attrs, a, err);
}

static const Type *tr_broadcast_in_dim(RULE_ARGS) {
  const Type *a = args[0]->type;
  int64_t dims[PARTIR_MAX_RANK];
  int n;
  if (!check_attr_names(op, attrs, ATTRS("dims"), err) ||
      !need_written(op, written, err) ||
      !get_int_list(op, attrs, "dims", TRUE, dims, &n, err) ||
      !same_dtype(op, a, written, err))
    return NULL;
  if (n != a->rank) {
    diag_reason(err,
                "'broadcast_in_dim' needs one entry in 'dims' per "
                "operand dimension: %d for rank %d",
                n, a->rank);
    return NULL;
  }
  if (!check_dims(op, "dims", dims, n, written->rank, err))
    return NULL;
  for (int i = 0; i < n; i++) {
    if (i > 0 && dims[i] <= dims[i - 1]) {
      diag_reason(err, "'broadcast_in_dim' dims must be increasing");
      return NULL;
    }
    if (a->dims[i] != 1 && a->dims[i] != written->dims[dims[i]]) {
      diag_reason(err,
                  "'broadcast_in_dim': operand dimension %d has size "
                  "%" G_GINT64_FORMAT ", result dimension %" G_GINT64_FORMAT
                  " has %" G_GINT64_FORMAT,
                  i, a->dims[i], dims[i], written->dims[dims[i]]);
      return NULL;
    }
  }
  return written;
}

static const Type *tr_transpose(RULE_ARGS) {
  const Type *a = args[0]->type;
  int64_t perm[PARTIR_MAX_RANK];
  int n;
  if (!check_attr_names(op, attrs, ATTRS("permutation"), err) ||
      !get_int_list(op, attrs, "permutation", TRUE, perm, &n, err))
    return NULL;
  if (n != a->rank) {
    diag_reason(err, "'transpose' permutation has %d entries for rank %d", n,
                a->rank);
    return NULL;
  }
  if (!check_dims(op, "permutation", perm, n, a->rank, err))
    return NULL;
  int64_t dims[PARTIR_MAX_RANK];
  for (int i = 0; i < n; i++)
    dims[i] = a->dims[perm[i]];
  return type_tensor(a->dtype, n, dims);
}

/* pad(x, v): x with low[d] elements of v before it in dimension d,
 * high[d] after it and interior[d] between each two of its elements; a
 * negative low or high removes elements from that end instead
 * (StableHLO's pad).  'interior' may be left out (no interior padding). */
static const Type *tr_pad(RULE_ARGS) {
  const Type *a = args[0]->type, *v = args[1]->type;
  int64_t low[PARTIR_MAX_RANK], high[PARTIR_MAX_RANK],
      interior[PARTIR_MAX_RANK];
  int nl, nh, ni;
  if (!check_attr_names(op, attrs, ATTRS("low", "high", "interior"), err) ||
      !get_int_list(op, attrs, "low", TRUE, low, &nl, err) ||
      !get_int_list(op, attrs, "high", TRUE, high, &nh, err) ||
      !get_int_list(op, attrs, "interior", FALSE, interior, &ni, err))
    return NULL;
  if (!attrs_get(attrs, "interior"))
    for (ni = 0; ni < a->rank; ni++)
      interior[ni] = 0;
  if (v->rank != 0 || v->dtype != a->dtype) {
    g_autofree char *vs = type_to_string(v);
    diag_reason(err,
                "'pad' pads with a scalar of the operand's element type "
                "(tensor<%s>), not %s",
                dtype_name(a->dtype), vs);
    return NULL;
  }
  if (nl != a->rank || nh != a->rank || ni != a->rank) {
    diag_reason(err, "'pad' low, high and interior need %d entries", a->rank);
    return NULL;
  }
  int64_t dims[PARTIR_MAX_RANK];
  for (int i = 0; i < a->rank; i++) {
    if (interior[i] < 0) {
      diag_reason(err,
                  "'pad' dimension %d: interior padding %" G_GINT64_FORMAT
                  " is negative",
                  i, interior[i]);
      return NULL;
    }
    /* every term bounded, so the size below cannot overflow */
    int64_t bound = PARTIR_MAX_ELEMS;
    if (interior[i] > bound || low[i] < -bound || low[i] > bound ||
        high[i] < -bound || high[i] > bound) {
      diag_reason(err, "'pad' dimension %d: padding beyond 2^48", i);
      return NULL;
    }
    int64_t gaps = a->dims[i] > 0 ? a->dims[i] - 1 : 0;
    int64_t size = low[i] + high[i] + a->dims[i];
    if (gaps > 0 && interior[i] > (PARTIR_MAX_ELEMS - size) / gaps) {
      diag_reason(err, "'pad' result is too large");
      return NULL;
    }
    size += gaps * interior[i];
    if (size < 0) {
      diag_reason(err,
                  "'pad' dimension %d: low %" G_GINT64_FORMAT
                  " and high %" G_GINT64_FORMAT
                  " remove more than its %" G_GINT64_FORMAT " elements",
                  i, low[i], high[i], a->dims[i] + gaps * interior[i]);
      return NULL;
    }
    dims[i] = size;
  }
  return type_tensor(a->dtype, a->rank, dims);
}

static const Type *tr_reshape(RULE_ARGS) {
  const Type *a = args[0]->type;
  if (!check_attr_names(op, attrs, NO_ATTRS, err) ||
      !need_written(op, written, err) || !same_dtype(op, a, written, err))
    return NULL;
  if (type_numel(a) != type_numel(written)) {
    diag_reason(err,
                "'reshape' from %" G_GINT64_FORMAT " to %" G_GINT64_FORMAT
                " elements",
                type_numel(a), type_numel(written));
    return NULL;
  }
  return written;
}

static const Type *tr_concatenate(RULE_ARGS) {
  int64_t dim;
  const Type *a = args[0]->type;
  if (!check_attr_names(op, attrs, ATTRS("dim"), err) ||
      !get_int(op, attrs, "dim", &dim, err) ||
      !check_dims(op, "dim", &dim, 1, a->rank, err))
    return NULL;
  int64_t total = 0;
  for (int i = 0; i < nargs; i++) {
    const Type *b = args[i]->type;
    if (!same_dtype(op, a, b, err))
      return NULL;
    if (b->rank != a->rank || type_with_dim(b, (int)dim, a->dims[dim]) != a) {
      g_autofree char *x = type_to_string(a);
      g_autofree char *y = type_to_string(b);
      diag_reason(err,
                  "'concatenate' operands must agree except in dimension "
                  "%" G_GINT64_FORMAT ": %s and %s",
                  dim, x, y);
      return NULL;
    }
    total += b->dims[dim];
    if (total > PARTIR_MAX_ELEMS) {
      diag_reason(err, "'concatenate' result is too large");
      return NULL;
    }
  }
  return type_with_dim(a, (int)dim, total);
}

static const Type *tr_static_slice(RULE_ARGS) {
  const Type *a = args[0]->type;
  int64_t start[PARTIR_MAX_RANK], limit[PARTIR_MAX_RANK],
      strides[PARTIR_MAX_RANK];
  int ns, nl, nst;
  if (!check_attr_names(op, attrs, ATTRS("start", "limit", "strides"), err) ||
      !get_int_list(op, attrs, "start", TRUE, start, &ns, err) ||
      !get_int_list(op, attrs, "limit", TRUE, limit, &nl, err) ||
      !get_int_list(op, attrs, "strides", FALSE, strides, &nst, err))
    return NULL;
  if (!attrs_get(attrs, "strides"))
    for (nst = 0; nst < a->rank; nst++)
      strides[nst] = 1;
  if (ns != a->rank || nl != a->rank || nst != a->rank) {
    diag_reason(err, "'slice' start, limit and strides need %d entries",
                a->rank);
    return NULL;
  }
  int64_t dims[PARTIR_MAX_RANK];
  for (int i = 0; i < a->rank; i++) {
    if (start[i] < 0 || start[i] >= limit[i] || limit[i] > a->dims[i] ||
        strides[i] < 1) {
      diag_reason(err,
                  "'slice' dimension %d: need 0 <= start < limit <= "
                  "%" G_GINT64_FORMAT " and stride >= 1, got start "
                  "%" G_GINT64_FORMAT " limit %" G_GINT64_FORMAT
                  " stride %" G_GINT64_FORMAT,
                  i, a->dims[i], start[i], limit[i], strides[i]);
      return NULL;
    }
    dims[i] = (limit[i] - start[i] + strides[i] - 1) / strides[i];
  }
  return type_tensor(a->dtype, a->rank, dims);
}

/* ------------------------------------------- indexing by runtime values */

/* gather: StableHLO's dimension numbers (gather.c reads and checks
 * them); the result's shape follows from them. */
static const Type *tr_gather(RULE_ARGS) {
  if (!check_attr_names(
          op, attrs,
          ATTRS("offset_dims", "collapsed_slice_dims", "operand_batching_dims",
                "start_indices_batching_dims", "start_index_map",
                "index_vector_dim", "slice_sizes", "indices_are_sorted"),
          err))
    return NULL;
  GatherDims g;
  if (!gather_dims_read(attrs, args[0]->type, args[1]->type, &g, err))
    return NULL;
  const Type *t = gather_result_type(&g, args[0]->type, args[1]->type);
  if (!type_size_ok(t)) {
    diag_reason(err, "'gather' result is too large");
    return NULL;
  }
  return t;
}

/* dynamic_slice(x, s0, ..., s{r-1}) {slice_sizes = [..]}: one scalar
 * start per dimension of x, all of one integer type. */
static const Type *tr_dynamic_slice(RULE_ARGS) {
  const Type *a = args[0]->type;
  int64_t sizes[PARTIR_MAX_RANK];
  int n;
  if (!check_attr_names(op, attrs, ATTRS("slice_sizes"), err) ||
      !get_int_list(op, attrs, "slice_sizes", TRUE, sizes, &n, err))
    return NULL;
  if (n != a->rank || nargs != a->rank + 1) {
    diag_reason(err,
                "'dynamic_slice' of a rank-%d operand needs %d start "
                "indices and %d slice_sizes, got %d and %d",
                a->rank, a->rank, a->rank, nargs - 1, n);
    return NULL;
  }
  for (int i = 1; i < nargs; i++) {
    const Type *s = args[i]->type;
    if (s->rank != 0 || dtype_is_float(s->dtype) || s->dtype == DT_I1 ||
        s->dtype != args[1]->type->dtype) {
      g_autofree char *st = type_to_string(s);
      diag_reason(err,
                  "'dynamic_slice' start index %d is %s: the start indices "
                  "are integer scalars of one type",
                  i - 1, st);
      return NULL;
    }
  }
  for (int d = 0; d < n; d++)
    if (sizes[d] < 0 || sizes[d] > a->dims[d]) {
      diag_reason(err,
                  "'dynamic_slice' slice size %" G_GINT64_FORMAT
                  " of dimension %d: need 0 to %" G_GINT64_FORMAT,
                  sizes[d], d, a->dims[d]);
      return NULL;
    }
  return type_tensor(a->dtype, a->rank, sizes);
}

/* scatter_add(operand, indices, updates) {update_window_dims, ...}: the
 * operand's type; core/gather.c checks the dimension numbers and the
 * updates' type against them.  'unique_indices' is a promise, kept for
 * the export, with no effect here. */
static const Type *tr_scatter_add(RULE_ARGS) {
  if (!check_attr_names(
          op, attrs,
          ATTRS("update_window_dims", "inserted_window_dims",
                "input_batching_dims", "scatter_indices_batching_dims",
                "scatter_dims_to_operand_dims", "index_vector_dim",
                "indices_are_sorted", "unique_indices"),
          err))
    return NULL;
  const AttrValue *unique = attrs_get(attrs, "unique_indices");
  if (unique &&
      (unique->kind != AV_SYMBOL || (strcmp(unique->sym, "true") != 0 &&
                                     strcmp(unique->sym, "false") != 0))) {
    diag_reason(err, "'scatter_add' attribute 'unique_indices' must be true "
                     "or false");
    return NULL;
  }
  if (args[0]->type->dtype == DT_I1) {
    diag_reason(err, "'scatter_add' adds numbers, not i1");
    return NULL;
  }
  GatherDims g;
  if (!scatter_dims_read(attrs, args[0]->type, args[1]->type, args[2]->type, &g,
                         err))
    return NULL;
  return args[0]->type;
}

/* dynamic_update_slice(x, update, s0, ..., s{r-1}): x with 'update'
 * written at the starts (one integer scalar per dimension of x, of one
 * type, clamped as dynamic_slice clamps them). */
static const Type *tr_dynamic_update_slice(RULE_ARGS) {
  const Type *a = args[0]->type;
  if (!check_attr_names(op, attrs, NO_ATTRS, err))
    return NULL;
  if (nargs != a->rank + 2) {
    diag_reason(err,
                "'dynamic_update_slice' of a rank-%d operand needs an update "
                "and %d start indices, got %d operands",
                a->rank, a->rank, nargs);
    return NULL;
  }
  const Type *u = args[1]->type;
  gboolean fits = u->dtype == a->dtype && u->rank == a->rank;
  for (int d = 0; fits && d < a->rank; d++)
    fits = u->dims[d] <= a->dims[d];
  if (!fits) {
    g_autofree char *ut = type_to_string(u);
    g_autofree char *at = type_to_string(a);
    diag_reason(err,
                "'dynamic_update_slice' update %s does not fit in operand %s "
                "(same dtype and rank, no dimension larger)",
                ut, at);
    return NULL;
  }
  for (int i = 2; i < nargs; i++) {
    const Type *s = args[i]->type;
    if (s->rank != 0 || dtype_is_float(s->dtype) || s->dtype == DT_I1 ||
        s->dtype != args[2]->type->dtype) {
      g_autofree char *st = type_to_string(s);
      diag_reason(err,
                  "'dynamic_update_slice' start index %d is %s: the start "
                  "indices are integer scalars of one type",
                  i - 2, st);
      return NULL;
    }
  }
  return a;
}

gboolean op_is_collective(Op op) {
  return op == OP_ALL_REDUCE || op == OP_ALL_GATHER ||
         op == OP_REDUCE_SCATTER || op == OP_ALL_TO_ALL || op == OP_SHARD;
}

/* Collectives: 'axes' (a non-empty list of axis names) and 'size' (the
 * devices of those axes together) make the shape rule self-contained. */
static const Type *tr_collective(RULE_ARGS) {
  const Type *a = args[0]->type;
  static const char *const none[] = {"axes", "size", NULL};
  static const char *const one_dim[] = {"axes", "size", "dim", NULL};
  static const char *const gather[] = {"axes", "size", "dim", "length", NULL};
  static const char *const two_dims[] = {"axes", "size", "split_dim",
                                         "concat_dim", NULL};
  const char *const *allowed = op == OP_ALL_REDUCE   ? none
                               : op == OP_ALL_TO_ALL ? two_dims
                               : op == OP_ALL_GATHER ? gather
                                                     : one_dim;
  int64_t size;
  if (!check_attr_names(op, attrs, allowed, err) ||
      !get_int(op, attrs, "size", &size, err))
    return NULL;
  const AttrValue *axes = attrs_get(attrs, "axes");
  gboolean ok = axes && axes->kind == AV_LIST && axes->count >= 1 &&
                axes->count <= MESH_MAX_AXES;
  for (int i = 0; ok && i < axes->count; i++)
    ok = axes->items[i].kind == AV_SYMBOL;
  if (!ok || size < 1) {
    diag_reason(err,
                "'%s' needs 'axes' (a list of axis names) and a "
                "positive 'size'",
                op_name(op));
    return NULL;
  }
  if (op == OP_ALL_REDUCE)
    return not_i1(op, a, err) ? a : NULL;
  int64_t d1, d2 = -1;
  if (op == OP_ALL_TO_ALL) {
    if (!get_int(op, attrs, "split_dim", &d1, err) ||
        !get_int(op, attrs, "concat_dim", &d2, err) ||
        !check_dims(op, "split_dim", &d1, 1, a->rank, err) ||
        !check_dims(op, "concat_dim", &d2, 1, a->rank, err))
      return NULL;
  } else if (!get_int(op, attrs, "dim", &d1, err) ||
             !check_dims(op, "dim", &d1, 1, a->rank, err)) {
    return NULL;
  }
  const Type *t = a;
  if (op == OP_ALL_GATHER) {
    if (a->dims[d1] > PARTIR_MAX_ELEMS / size) {
      diag_reason(err, "'all_gather' result is too large");
      return NULL;
    }
    /* 'length': the chunks are padded; the result keeps that many */
    int64_t length = a->dims[d1] * size;
    if (attrs_get(attrs, "length") &&
        (!get_int(op, attrs, "length", &length, err) ||
         dist_local_size(length, size) != a->dims[d1])) {
      if (diag_any(err))
        return NULL;
      diag_reason(
          err,
          "'all_gather' of %" G_GINT64_FORMAT " chunks of %" G_GINT64_FORMAT
          " cannot keep length %" G_GINT64_FORMAT
          " (the chunks are that length over %" G_GINT64_FORMAT ", rounded up)",
          size, a->dims[d1], length, size);
      return NULL;
    }
    return type_with_dim(a, (int)d1, length);
  }
  /* shard and reduce_scatter pad the last chunks of a dimension the
   * devices do not divide (docs/spmd.md, "Uneven sizes") */
  if (op != OP_ALL_TO_ALL) {
    if (a->dims[d1] < size) {
      diag_reason(err,
                  "'%s': dimension %" G_GINT64_FORMAT " of size "
                  "%" G_GINT64_FORMAT " has fewer elements than the "
                  "%" G_GINT64_FORMAT " devices",
                  op_name(op), d1, a->dims[d1], size);
      return NULL;
    }
    return type_with_dim(a, (int)d1, dist_local_size(a->dims[d1], size));
  }
  if (a->dims[d1] % size != 0) {
    diag_reason(err,
                "'%s': dimension %" G_GINT64_FORMAT " of size "
                "%" G_GINT64_FORMAT " does not split %" G_GINT64_FORMAT " ways",
                op_name(op), d1, a->dims[d1], size);
    return NULL;
  }
  t = type_with_dim(a, (int)d1, a->dims[d1] / size);
  if (op == OP_ALL_TO_ALL) {
    if (t->dims[d2] > PARTIR_MAX_ELEMS / size) {
      diag_reason(err, "'all_to_all' result is too large");
      return NULL;
    }
    t = type_with_dim(t, (int)d2, t->dims[d2] * size);
  }
  return t;
}

const Type *typerule_infer(Op op, int nargs, const Term *const *args,
                           const Attrs *attrs, const Type *written, Diag *err) {
  int arity = op_arity(op);
  if ((arity >= 0 && nargs != arity) || (arity < 0 && nargs < 1)) {
    if (arity >= 0)
      diag_reason(err, "'%s' takes %d operand%s, got %d", op_name(op), arity,
                  arity == 1 ? "" : "s", nargs);
    else
      diag_reason(err, "'%s' needs at least one operand", op_name(op));
    return NULL;
  }
  return rules[op](op, nargs, args, attrs, written, err);
}
