/* tensor.c — dense tensor values of the reference interpreter.
 *
 * A Tensor is a refcounted block of elements in row-major order, one
 * element per index of its Type's shape (a rank-0 tensor has one), each
 * at its dtype's own width (dtype_storage_bytes):
 *
 *   f32 float, f64 double, bf16 the top 16 bits of an f32, f16 IEEE
 *   binary16, i8 i16 i32 i64 int8_t..int64_t, ui8 ui16 ui32
 *   uint8_t..uint32_t, i1 one byte, 0 or 1
 *
 * so a value takes the memory its type says, as on a device.  Kernels
 * compute floats in double (bf16 through f32) and integers in int64, and
 * store through tensor_set_float and tensor_set_int (eval.h), which round
 * or wrap to the dtype: every stored value is one of its type.  Sums
 * (contractions, reductions, the 'sum' region, all-reduce) accumulate in
 * a wider accumulator and round once (tensor_new_acc).
 *
 * 'data' is never NULL, even for tensors with no elements.
 */
#include "eval/eval.h"

#include <math.h>
#include <string.h>

guint64 tensor_type_bytes(const Type *type) {
  return (guint64)type_numel(type) * dtype_storage_bytes(type->dtype);
}

/* Allocates a zero-filled tensor of 'type' with one reference (all-zero
 * bits are 0 in every dtype). */
Tensor *tensor_new(const Type *type) {
  g_assert(type != NULL && type->kind == TY_TENSOR);
  int64_t n = type_numel(type);
  g_assert(n >= 0);
  Tensor *t = g_new0(Tensor, 1);
  t->refcount = 1;
  t->type = type;
  /* on a cache line: a compiled kernel's vector loads and stores of a
   * row-major tensor then stay within lines (malloc's large blocks start
   * 16 bytes into a page, and every 64-byte load of such a tensor
   * spanned two lines) */
  t->data = partir_buffer_new(tensor_type_bytes(type));
  if (!t->data)
    g_error("partir: out of memory for a %" G_GUINT64_FORMAT "-byte tensor",
            tensor_type_bytes(type));
  return t;
}

Tensor *tensor_view(Tensor *base, const Type *type, guint64 offset) {
  g_assert(type != NULL && type->kind == TY_TENSOR);
  g_assert(offset + tensor_type_bytes(type) <= tensor_type_bytes(base->type));
  Tensor *t = g_new0(Tensor, 1);
  t->refcount = 1;
  t->type = type;
  t->data = (char *)base->data + offset;
  t->base = tensor_ref(base);
  return t;
}

Tensor *tensor_ref(Tensor *t) {
  g_assert(t != NULL && t->refcount > 0);
  g_atomic_int_inc(&t->refcount);
  return t;
}

void tensor_unref(Tensor *t) {
  if (t == NULL)
    return;
  g_assert(t->refcount > 0);
  if (!g_atomic_int_dec_and_test(&t->refcount))
    return;
  if (t->base)
    tensor_unref(t->base);
  else
    partir_buffer_free(t->data);
  g_free(t);
}

/* Rounds 'v' to the nearest value of floating type 'dt'.  bf16 goes
 * through f32 first (bf16 is computed in f32), then keeps the top 16 bits
 * of the f32 pattern, rounding to nearest even; f16 rounds once, to
 * nearest even.  Overflow gives infinity and NaN stays NaN. */
double tensor_round_value(DType dt, double v) {
  switch (dt) {
  case DT_F64:
    return v;
  case DT_F32:
    return (double)(float)v;
  case DT_BF16:
    return isnan(v) ? v : tensor_bf16_to_f32(tensor_bf16_from_f32((float)v));
  case DT_F16:
    return isnan(v) ? v : dtype_f16_to_f32(dtype_f16_from_f64(v));
  default:
    g_assert_not_reached();
  }
}

/* Wraps 'v' to integer type 'dt': its low bits, two's complement for
 * the signed types; 0/1 for i1. */
int64_t tensor_wrap_value(DType dt, int64_t v) {
  uint64_t u = (uint64_t)v;
  switch (dt) {
  case DT_I64:
    return v;
  case DT_I32:
    return (int32_t)(uint32_t)u;
  case DT_I16:
    return (int16_t)(uint16_t)u;
  case DT_I8:
    return (int8_t)(uint8_t)u;
  case DT_UI32:
    return (uint32_t)u;
  case DT_UI16:
    return (uint16_t)u;
  case DT_UI8:
    return (uint8_t)u;
  case DT_I1:
    return v != 0;
  default:
    g_assert_not_reached();
  }
}

Tensor *tensor_new_acc(const Type *type) {
  DType wide = dtype_is_float(type->dtype) ? DT_F64 : DT_I64;
  return tensor_new(type_with_dtype(type, wide));
}

Tensor *tensor_from_acc(const Tensor *acc, const Type *type) {
  Tensor *t = tensor_new(type);
  int64_t n = type_numel(type);
  g_assert(type_numel(acc->type) == n);
  for (int64_t k = 0; k < n; k++) {
    if (acc->type->dtype == DT_F64)
      tensor_set_float(t, k, ((const double *)acc->data)[k]);
    else
      tensor_set_int(t, k, ((const int64_t *)acc->data)[k]);
  }
  return t;
}

void tensor_strides(const Type *t, int64_t *strides) {
  int64_t s = 1;
  for (int d = t->rank - 1; d >= 0; d--) {
    strides[d] = s;
    s *= t->dims[d];
  }
}

/* Appends one float element: %.7g for f32, bf16 and f16, %.15g for f64, in the
 * C locale whatever the process's locale; nan, inf and -inf by name. */
static void append_float(GString *out, DType dt, double v) {
  if (isnan(v)) {
    g_string_append(out, "nan");
  } else if (isinf(v)) {
    g_string_append(out, v < 0 ? "-inf" : "inf");
  } else {
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    g_ascii_formatd(buf, sizeof buf, dt == DT_F64 ? "%.15g" : "%.7g", v);
    g_string_append(out, buf);
  }
}

/* Appends element 'k' of 't' in its type's notation. */
static void append_elem(GString *out, const Tensor *t, int64_t k) {
  DType dt = t->type->dtype;
  if (dtype_is_float(dt))
    append_float(out, dt, tensor_get_float(t, k));
  else if (dt == DT_I1)
    g_string_append(out, tensor_get_int(t, k) ? "true" : "false");
  else
    g_string_append_printf(out, "%" G_GINT64_FORMAT, tensor_get_int(t, k));
}

/* Appends the sub-tensor at dimension 'd' starting at element 'base' as
 * nested brackets. */
static void append_nested(GString *out, const Tensor *t, const int64_t *strides,
                          int d, int64_t base) {
  if (d == t->type->rank) {
    append_elem(out, t, base);
    return;
  }
  g_string_append_c(out, '[');
  for (int64_t k = 0; k < t->type->dims[d]; k++) {
    if (k > 0)
      g_string_append(out, ", ");
    append_nested(out, t, strides, d + 1, base + k * strides[d]);
  }
  g_string_append_c(out, ']');
}

/* The summary line for a large tensor: shape, dtype, min, max, mean (NaN
 * propagates, as in numpy) and the first four elements. */
static void append_summary(GString *out, const Tensor *t, int64_t n) {
  const Type *ty = t->type;
  DType dt = ty->dtype;
  gboolean is_float = dtype_is_float(dt);

  g_string_append(out, "shape ");
  if (ty->rank == 0)
    g_string_append(out, "()");
  for (int d = 0; d < ty->rank; d++)
    g_string_append_printf(out, "%s%" G_GINT64_FORMAT, d ? "x" : "",
                           ty->dims[d]);
  g_string_append_printf(out, " %s:", dtype_name(dt));

  double sum = 0;
  int64_t kmin = -1, kmax = -1; /* indices of the extremes */
  gboolean has_nan = FALSE;
  for (int64_t k = 0; k < n; k++) {
    if (is_float) {
      double v = tensor_get_float(t, k);
      sum += v;
      if (isnan(v)) {
        has_nan = TRUE;
        continue;
      }
      if (kmin < 0 || v < tensor_get_float(t, kmin))
        kmin = k;
      if (kmax < 0 || v > tensor_get_float(t, kmax))
        kmax = k;
    } else {
      int64_t v = tensor_get_int(t, k);
      sum += (double)v;
      if (kmin < 0 || v < tensor_get_int(t, kmin))
        kmin = k;
      if (kmax < 0 || v > tensor_get_int(t, kmax))
        kmax = k;
    }
  }

  g_string_append(out, " min ");
  if (has_nan)
    g_string_append(out, "nan");
  else
    append_elem(out, t, kmin);
  g_string_append(out, " max ");
  if (has_nan)
    g_string_append(out, "nan");
  else
    append_elem(out, t, kmax);
  g_string_append(out, " mean ");
  append_float(out, dt == DT_F64 ? DT_F64 : DT_F32, sum / (double)n);

  g_string_append(out, " first [");
  for (int64_t k = 0; k < n && k < 4; k++) {
    if (k > 0)
      g_string_append(out, ", ");
    append_elem(out, t, k);
  }
  g_string_append(out, n > 4 ? ", ...]" : "]");
}

/* Prints the type on one line and the values on the next, as nested
 * brackets ('[[1, 2.5], [3, 4]]'; a rank-0 tensor is a bare value); when
 * the tensor has more than 'max_elems' elements, one summary line instead
 * (a negative 'max_elems' means no limit). */
void tensor_print(GString *out, const Tensor *t, int max_elems) {
  int64_t n = type_numel(t->type);
  if (max_elems >= 0 && n > max_elems) {
    append_summary(out, t, n);
    g_string_append_c(out, '\n');
    return;
  }
  int64_t strides[PARTIR_MAX_RANK];
  tensor_strides(t->type, strides);
  type_print(out, t->type);
  g_string_append_c(out, '\n');
  if (n == 0)
    g_string_append(out, "[]"); /* not one '[]' per row of a 1e9x0 shape */
  else
    append_nested(out, t, strides, 0, 0);
  g_string_append_c(out, '\n');
}

/* Fills 't' in row-major order from 'rng': floats uniform in [-1, 1)
 * rounded to the type, signed integers in [-10, 10], unsigned ones in
 * [0, 20], i1 0 or 1.  The sequence depends only on the seed, so inputs
 * are reproducible. */
void tensor_fill_random(Tensor *t, GRand *rng) {
  DType dt = t->type->dtype;
  int64_t n = type_numel(t->type);
  for (int64_t k = 0; k < n; k++) {
    if (dtype_is_float(dt))
      tensor_set_float(t, k, g_rand_double_range(rng, -1, 1));
    else if (dt == DT_I1)
      tensor_set_int(t, k, g_rand_int_range(rng, 0, 2));
    else if (dtype_is_unsigned(dt))
      tensor_set_int(t, k, g_rand_int_range(rng, 0, 21));
    else
      tensor_set_int(t, k, g_rand_int_range(rng, -10, 11));
  }
}

gboolean tensor_results_agree(GPtrArray *a, GPtrArray *b, Diag *why) {
  for (guint r = 0; r < a->len; r++) {
    const Tensor *x = g_ptr_array_index(a, r), *y = g_ptr_array_index(b, r);
    if (x->type != y->type) {
      diag_reason(why, "result %u changed type", r);
      return FALSE;
    }
    /* norm-wise: a sum of k rounded parts can differ from the whole by a
     * few roundings of the parts, which may be larger than the result;
     * in a 16-bit float a rounding is 2^-9 (bf16) or 2^-12 (f16) of the
     * value, not f32's 2^-24: the bounds are 4 and 16 of its roundings */
    DType dt = x->type->dtype;
    double u16 = dt == DT_BF16 ? 0x1p-9 : dt == DT_F16 ? 0x1p-12 : 0;
    double rel = MAX(1e-5, 4 * u16), norm = MAX(1e-4, 16 * u16);
    double scale = 0;
    for (int64_t i = 0; i < type_numel(x->type); i++) {
      double u = tensor_get_double(x, i);
      if (isfinite(u))
        scale = MAX(scale, fabs(u));
    }
    for (int64_t i = 0; i < type_numel(x->type); i++) {
      double u = tensor_get_double(x, i);
      double v = tensor_get_double(y, i);
      if (!(fabs(u - v) <= 1e-6 + rel * fabs(u) + norm * scale) &&
          !(isnan(u) && isnan(v)) && u != v) {
        diag_reason(why,
                    "result %u element %" G_GINT64_FORMAT
                    ": %.9g before, %.9g after",
                    r, i, u, v);
        return FALSE;
      }
    }
  }
  return TRUE;
}
