/* expect.c — the comparisons of StableHLO's check operations.
 *
 * A test file of StableHLO (its interpreter's tests, JAX's generated
 * ones) asserts its own values: 'check.expect_eq', 'expect_almost_eq',
 * 'expect_close' and their custom-call forms.  The importer makes the two
 * values each compares results of the program (import/lower.c); this
 * file compares them as StableHLO's interpreter defines the checks:
 *
 *   EQ         every element equal: integers exactly, floats by ==
 *              (NaN is not equal to itself; -0 equals +0).
 *   ALMOST_EQ  floats: equal, or both NaN, or both finite, of one sign
 *              (-0 is negative) and |a - b| <= tolerance, in double.
 *              An infinity is almost equal to itself only.
 *   CLOSE      floats: min_ulp <= the distance in units of the last
 *              place <= max_ulp.  The distance counts the floats of the
 *              element type between the two (through zero when the signs
 *              differ); it is 0 for bitwise-equal elements and for two
 *              NaNs, and the largest there is when one is not finite.
 *
 * The distance is read from the bits at the element's own width (f64:
 * 64, f32: 32, bf16: 16), so it is the element type's own.
 */
#include "eval/eval.h"

#include <inttypes.h>

/* Element 'k' of a floating tensor as stored: its bits, and where its
 * sign bit is. */
static uint64_t float_bits(const Tensor *t, int64_t k, uint64_t *sign) {
  switch (dtype_storage_bytes(t->type->dtype)) {
  case 2:
    *sign = (uint64_t)1 << 15;
    return ((const uint16_t *)t->data)[k];
  case 4:
    *sign = (uint64_t)1 << 31;
    return ((const uint32_t *)t->data)[k];
  default:
    *sign = (uint64_t)1 << 63;
    return ((const uint64_t *)t->data)[k];
  }
}

/* The distance in ulps between element 'k' of 'a' and of 'b'. */
static uint64_t ulp_distance(const Tensor *a, const Tensor *b, int64_t k) {
  uint64_t sign;
  uint64_t x = float_bits(a, k, &sign), y = float_bits(b, k, &sign);
  if (x == y)
    return 0;
  double fx = tensor_get_float(a, k), fy = tensor_get_float(b, k);
  if (isnan(fx) && isnan(fy))
    return 0;
  if (!isfinite(fx) || !isfinite(fy))
    return UINT64_MAX;
  uint64_t mx = x & ~sign, my = y & ~sign; /* distances from zero */
  if ((x & sign) != (y & sign))
    return mx + my;
  return mx > my ? mx - my : my - mx;
}

static gboolean almost_equal(double a, double b, double tolerance) {
  if (a == b)
    return TRUE;
  if (isnan(a) || isnan(b))
    return isnan(a) && isnan(b);
  if (!isfinite(a) || !isfinite(b))
    return FALSE;
  if (signbit(a) != signbit(b))
    return FALSE;
  return fabs(a - b) <= tolerance;
}

/* Whether element 'k' passes; '*ulps' gets the distance (CLOSE). */
static gboolean element_ok(const Expect *e, const Tensor *a, const Tensor *b,
                           int64_t k, uint64_t *ulps) {
  if (!dtype_is_float(a->type->dtype))
    return tensor_get_int(a, k) == tensor_get_int(b, k);
  double x = tensor_get_float(a, k), y = tensor_get_float(b, k);
  switch (e->kind) {
  case EXPECT_EQ:
    return x == y;
  case EXPECT_ALMOST_EQ:
    return almost_equal(x, y, e->tolerance);
  case EXPECT_CLOSE:
    *ulps = ulp_distance(a, b, k);
    return *ulps >= e->min_ulp && *ulps <= e->max_ulp;
  }
  g_assert_not_reached();
}

static void append_element(GString *out, const Tensor *t, int64_t k) {
  if (dtype_is_float(t->type->dtype))
    g_string_append_printf(out, "%.9g", tensor_get_float(t, k));
  else
    g_string_append_printf(out, "%" PRId64, tensor_get_int(t, k));
}

gboolean tensor_expect(const Expect *e, const Tensor *actual,
                       const Tensor *expected, GString *why) {
  g_assert(actual->type == expected->type);
  int64_t n = type_numel(actual->type), bad = 0, first = -1;
  uint64_t first_ulps = 0;
  for (int64_t k = 0; k < n; k++) {
    uint64_t ulps = 0;
    if (element_ok(e, actual, expected, k, &ulps))
      continue;
    if (bad++ == 0) {
      first = k;
      first_ulps = ulps;
    }
  }
  if (bad == 0)
    return TRUE;
  g_string_append_printf(why, "%" PRId64 " of %" PRId64 " element%s differ%s",
                         bad, n, n == 1 ? "" : "s", bad == 1 ? "s" : "");
  /* the first, at its index */
  const Type *t = actual->type;
  int64_t strides[PARTIR_MAX_RANK];
  tensor_strides(t, strides);
  g_string_append(why, "; at [");
  for (int d = 0; d < t->rank; d++)
    g_string_append_printf(why, "%s%" PRId64, d ? ", " : "",
                           first / strides[d] % t->dims[d]);
  g_string_append(why, "] it is ");
  append_element(why, actual, first);
  g_string_append(why, ", expected ");
  append_element(why, expected, first);
  if (e->kind == EXPECT_ALMOST_EQ && dtype_is_float(t->dtype))
    g_string_append_printf(why, " (tolerance %g)", e->tolerance);
  if (e->kind == EXPECT_CLOSE) {
    if (first_ulps == UINT64_MAX)
      g_string_append(why, " (not both finite)");
    else
      g_string_append_printf(
          why, " (%" PRIu64 " ulps apart; allowed %" PRIu64 " to %" PRIu64 ")",
          first_ulps, e->min_ulp, e->max_ulp);
  }
  return FALSE;
}
