/* dense.c — the elements of dense<...> as a partir constant's value.
 *
 * MLIR writes a tensor constant as a splat ('dense<1.0>'), a nested list
 * ('dense<[[1, 2], [3, 4]]>'), or, for large ones, a hex blob of the
 * elements' bytes ('dense<"0x0000803F...">', little-endian, one element
 * for a splat).  A float that is not finite is written as its bit
 * pattern ('0xFF800000' is -inf in f32, '0x7C00' inf in f16).  i1
 * elements are 'true' and 'false', one byte each in a blob.  A partir
 * 'constant' takes a scalar (splatted) or the flat row-major list; floats
 * become doubles (every f16, bf16, f32 and f64 is one), integers stay integers
 * (an unsigned one its value: ui32's 0xFFFFFFFF is 4294967295).
 *
 * requires: the tensor type 't' of the constant (a partir type).
 */
#include "import/import.h"

#include <math.h>
#include <string.h>

/* The value of bit pattern 'bits' in element type 'dt' (a float).  A
 * NaN is the language's one NaN: a constant prints as 'nan', which reads
 * back as the quiet NaN, so a payload or a sign (0x7FF0000000000003,
 * 0xFFC00000) would not survive printing (tests/fuzz found one). */
static double float_from_bits(guint64 bits, DType dt) {
  double v;
  if (dt == DT_F64) {
    memcpy(&v, &bits, sizeof v);
  } else if (dt == DT_F16) {
    v = dtype_f16_to_f32((uint16_t)bits);
  } else {
    guint32 w = dt == DT_BF16 ? (guint32)(bits & 0xffff) << 16 : (guint32)bits;
    float f;
    memcpy(&f, &w, sizeof f);
    v = f;
  }
  return isnan(v) ? NAN : v;
}

/* An integer of 'dt' from its low bits (sign-extended for the signed
 * types). */
static int64_t int_from_bits(guint64 bits, DType dt) {
  switch (dt) {
  case DT_I1:
    return (int64_t)(bits & 1);
  case DT_I8:
    return (int8_t)(uint8_t)bits;
  case DT_I16:
    return (int16_t)(uint16_t)bits;
  case DT_I32:
    return (int32_t)(uint32_t)bits;
  case DT_UI8:
    return (uint8_t)bits;
  case DT_UI16:
    return (uint16_t)bits;
  case DT_UI32:
    return (uint32_t)bits;
  default:
    return (int64_t)bits;
  }
}

/* One element as written ('e', a number or true/false) into 'out'. */
static gboolean element(const HloAttr *e, DType dt, AttrValue *out, Diag *why) {
  gboolean is_float = dtype_is_float(dt);
  if (e->kind == HA_FLOAT) {
    if (!is_float) {
      diag_reason(why, "a float element in a constant of %s", dtype_name(dt));
      return FALSE;
    }
    *out = (AttrValue){.kind = AV_FLOAT, .f = e->f};
    return TRUE;
  }
  if (e->kind != HA_INT) {
    diag_reason(why, "a constant's elements are numbers, true or false");
    return FALSE;
  }
  if (is_float) {
    double v = e->hex ? float_from_bits((guint64)e->i, dt) : (double)e->i;
    *out = (AttrValue){.kind = AV_FLOAT, .f = v};
    return TRUE;
  }
  int64_t v = e->hex ? int_from_bits((guint64)e->i, dt) : e->i;
  if (v < dtype_int_min(dt) || v > dtype_int_max(dt)) {
    diag_reason(why, "element %" G_GINT64_FORMAT " does not fit %s", v,
                dtype_name(dt));
    return FALSE;
  }
  *out = (AttrValue){.kind = AV_INT, .i = v};
  return TRUE;
}

/* Flattens nested lists of elements into 'out' (AttrValue); FALSE past
 * 'limit' elements or at a bad one. */
static gboolean flatten(const HloAttr *a, DType dt, GArray *out, int64_t limit,
                        Diag *why) {
  if (a->kind != HA_LIST) {
    AttrValue v;
    if ((int64_t)out->len >= limit) {
      diag_reason(why, "more elements than the type has");
      return FALSE;
    }
    if (!element(a, dt, &v, why))
      return FALSE;
    g_array_append_val(out, v);
    return TRUE;
  }
  for (guint i = 0; i < a->items->len; i++)
    if (!flatten(g_ptr_array_index(a->items, i), dt, out, limit, why))
      return FALSE;
  return TRUE;
}

/* A hex blob: 'count' elements (1: a splat) of 'dt' in little-endian
 * bytes. */
static gboolean from_blob(const char *hex, const Type *t, AttrValue *out,
                          Diag *why) {
  DType dt = t->dtype;
  gsize width = dt == DT_I1 ? 1 : dtype_storage_bytes(dt);
  gsize digits = strlen(hex);
  if (digits < 2 || hex[0] != '0' || (hex[1] != 'x' && hex[1] != 'X') ||
      (digits - 2) % 2 != 0) {
    diag_reason(why, "a dense string is a hex blob \"0x...\"");
    return FALSE;
  }
  gsize bytes = (digits - 2) / 2;
  int64_t numel = type_numel(t);
  if (bytes != width && bytes != width * (gsize)numel) {
    diag_reason(why,
                "a hex blob of %zu bytes for %" G_GINT64_FORMAT
                " elements of %zu bytes",
                bytes, numel, width);
    return FALSE;
  }
  gsize count = bytes / width;
  GArray *vals =
      g_array_sized_new(FALSE, TRUE, sizeof(AttrValue), (guint)count);
  for (gsize i = 0; i < count; i++) {
    guint64 bits = 0;
    for (gsize b = 0; b < width; b++) {
      const char *p = hex + 2 + 2 * (i * width + b);
      int hi = g_ascii_xdigit_value(p[0]), lo = g_ascii_xdigit_value(p[1]);
      if (hi < 0 || lo < 0) {
        g_array_free(vals, TRUE);
        diag_reason(why, "a hex blob with a character that is no hex digit");
        return FALSE;
      }
      bits |= (guint64)(hi * 16 + lo) << (8 * b);
    }
    HloAttr e = {.kind = HA_INT, .i = (int64_t)bits, .hex = TRUE};
    AttrValue v;
    if (!element(&e, dt, &v, why)) {
      g_array_free(vals, TRUE);
      return FALSE;
    }
    g_array_append_val(vals, v);
  }
  if (count == 1) {
    *out = g_array_index(vals, AttrValue, 0);
    g_array_free(vals, TRUE);
    return TRUE;
  }
  out->kind = AV_LIST;
  out->count = (int)vals->len;
  out->items = (AttrValue *)g_array_free(vals, FALSE);
  return TRUE;
}

gboolean hlo_dense_value(const HloAttr *dense, const Type *t, AttrValue *out,
                         Diag *why) {
  memset(out, 0, sizeof *out);
  if (dense->s)
    return from_blob(dense->s, t, out, why);
  if (dense->items->len != 1) {
    diag_reason(why, "an empty dense constant");
    return FALSE;
  }
  const HloAttr *v = g_ptr_array_index(dense->items, 0);
  if (v->kind != HA_LIST)
    return element(v, t->dtype, out, why);
  int64_t numel = type_numel(t);
  GArray *vals = g_array_new(FALSE, TRUE, sizeof(AttrValue));
  if (!flatten(v, t->dtype, vals, numel, why)) {
    g_array_free(vals, TRUE);
    return FALSE;
  }
  if ((int64_t)vals->len != numel) {
    diag_reason(why, "%u elements for a type of %" G_GINT64_FORMAT " elements",
                vals->len, numel);
    g_array_free(vals, TRUE);
    return FALSE;
  }
  out->kind = AV_LIST;
  out->count = (int)vals->len;
  out->items = (AttrValue *)g_array_free(vals, FALSE);
  return TRUE;
}
