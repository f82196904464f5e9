/* test-tensor.c — tensors (rounding, wrapping, printing, random fill),
 * the .npy reader and writer, and the interpreter's use of memory and
 * its interrupts.
 *
 * Expected values come from outside the code under test: bf16, f16 and
 * f32 roundings are derived by hand in the comments, and the .npy fixtures
 * are written by numpy (tests/fixtures/npy/make.py, whose literal arrays
 * the tables below repeat).  Malformed files are built here, one table
 * row each, with the substring their error message must contain.
 */
#include "eval/eval.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

static char *tmp_dir; /* scratch files; removed at exit */

/* The path of fixture 'name' under tests/fixtures/npy.  The build sets
 * $top_srcdir (and $G_TEST_SRCDIR to its tests/); run by hand, the
 * binary is assumed to sit in tests/unit of the source tree. */
static char *fixture_path(const char *name) {
  const char *top = g_getenv("top_srcdir");
  if (top != NULL)
    return g_build_filename(top, "tests", "fixtures", "npy", name, NULL);
  const char *tests = g_getenv("G_TEST_SRCDIR");
  if (tests != NULL)
    return g_build_filename(tests, "fixtures", "npy", name, NULL);
  return g_test_build_filename(G_TEST_DIST, "..", "fixtures", "npy", name,
                               NULL);
}

/* A fresh scratch directory under $TESTS_TMPDIR (set by the build) or
 * the system's temporary directory. */
static char *make_tmp_dir(void) {
  const char *base = g_getenv("TESTS_TMPDIR");
  if (base == NULL)
    base = g_get_tmp_dir();
  g_mkdir_with_parents(base, 0755);
  char *dir = g_build_filename(base, "test-tensor-XXXXXX", NULL);
  if (g_mkdtemp(dir) == NULL)
    g_error("cannot make a scratch directory %s: %s", dir, g_strerror(errno));
  return dir;
}

/* Writes 'len' bytes to scratch file 'name'; returns its path. */
static char *write_scratch(const char *name, const void *data, gsize len) {
  char *path = g_build_filename(tmp_dir, name, NULL);
  g_autoptr(GError) err = NULL;
  g_file_set_contents(path, data, (gssize)len, &err);
  g_assert_no_error(err);
  return path;
}

/* A version-1.0 file with header text 'dict' (not padded) and 'datalen'
 * bytes of data 0x00 0x01 0x02 .... */
static GByteArray *make_npy(const char *dict, gsize datalen) {
  GByteArray *b = g_byte_array_new();
  gsize hlen = strlen(dict);
  guint8 size[2] = {(guint8)hlen, (guint8)(hlen >> 8)};
  g_byte_array_append(b, (const guint8 *)"\x93NUMPY\x01\x00", 8);
  g_byte_array_append(b, size, 2);
  g_byte_array_append(b, (const guint8 *)dict, (guint)hlen);
  for (gsize k = 0; k < datalen; k++) {
    guint8 byte = (guint8)k;
    g_byte_array_append(b, &byte, 1);
  }
  return b;
}

static gboolean same_double(double a, double b) {
  return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b));
}

/* ------------------------------------------------------------ rounding */

static void test_round_bf16(void) {
  static const struct {
    double in, out;
  } cases[] = {
      {1.0, 1.0},
      {1.0078125, 1.0078125},   /* 1 + 2^-7: exactly representable */
      {1.00390625, 1.0},        /* 1 + 2^-8: tie between 1 and 1+2^-7, even */
      {1.01171875, 1.015625},   /* 1 + 3*2^-8: tie, 1+2^-6 has the even bit */
      {-1.01171875, -1.015625}, /* sign does not matter */
      {1.005, 1.0078125},       /* nearer 1+2^-7 than 1 */
      /* 0.1 as f32 is 0x3DCCCCCD; low half 0xCCCD > 0x8000 rounds up to
       * 0x3DCD0000 = (128+77)/128 * 2^-4 */
      {0.1, 0.10009765625},
      {256.5, 256.0}, /* 256 = 2^8: the bf16 ulp there is 2 */
      {257.0, 256.0}, /* tie: 256 (mantissa 0) over 258 (1) */
      {259.0, 260.0}, /* tie: 260 (mantissa 2) over 258 (1) */
      /* 1 + 2^-8 + 2^-30 rounds to 1 + 2^-8 in f32 first, then ties to 1:
       * bf16 is computed in f32, so this double rounding is intended */
      {1.0 + 1.0 / 256 + 1.0 / 1073741824.0, 1.0},
      {3.3895313892515355e38, 3.3895313892515355e38}, /* largest bf16 */
      {3.4e38, INFINITY}, /* beyond largest + half an ulp */
      {-3.4e38, -INFINITY},
      {1e-45, 0.0}, /* smallest f32 subnormal is below bf16's */
      {-0.0, -0.0},
      {INFINITY, INFINITY},
  };
  for (gsize k = 0; k < G_N_ELEMENTS(cases); k++) {
    double got = tensor_round_value(DT_BF16, cases[k].in);
    if (!same_double(got, cases[k].out))
      g_error("bf16(%.17g) = %.17g, want %.17g", cases[k].in, got,
              cases[k].out);
  }
  g_assert_true(isnan(tensor_round_value(DT_BF16, NAN)));
  g_assert_true(isnan(tensor_round_value(DT_BF16, -NAN)));
}

/* f16: 11 significant bits, exponent -14..15, rounded once from the
 * double, ties to even.  By hand (numpy's float16 agrees): */
static void test_round_f16(void) {
  static const struct {
    double in, out;
  } cases[] = {
      {65504.0, 65504.0},  /* the largest f16: 0x7BFF */
      {65519.99, 65504.0}, /* below 65504 + half its ulp (16) */
      {65520.0, INFINITY}, /* the tie rounds to even: up, inf */
      {-70000.0, -INFINITY},
      {0x1p-24, 0x1p-24},                 /* the least subnormal: 0x0001 */
      {0x1p-25, 0.0},                     /* half of it: a tie, to even 0 */
      {0x1p-25 * (1 + 0x1p-20), 0x1p-24}, /* above the tie */
      {1.0 + 0x1p-11, 1.0},               /* tie: to the even 1 */
      {1.0 + 3 * 0x1p-11, 1.0 + 0x1p-9},  /* tie: to the even 1 + 2^-9 */
      /* rounded once: above the tie, so up; through f32 (which drops
       * 2^-40) it would tie back down to 1 */
      {1.0 + 0x1p-11 + 0x1p-40, 1.0 + 0x1p-10},
      {0.1, 0.0999755859375},       /* 0x2E66 = 1638 * 2^-14 */
      {1.0 / 3.0, 0.333251953125},  /* 0x3555 = 1365 * 2^-12 */
      {0x1p-14 - 0x1p-25, 0x1p-14}, /* the largest subnormal rounds up to
                                      the least normal, 0x0400 */
      {6.1e-5, 1023 * 0x1p-24},     /* just below: the largest subnormal */
      {1e-8, 0.0},
      {-0.0, -0.0},
      {INFINITY, INFINITY},
  };
  for (gsize k = 0; k < G_N_ELEMENTS(cases); k++) {
    double got = tensor_round_value(DT_F16, cases[k].in);
    if (!same_double(got, cases[k].out))
      g_error("f16(%.17g) = %.17g, want %.17g", cases[k].in, got, cases[k].out);
  }
  g_assert_true(isnan(tensor_round_value(DT_F16, NAN)));
  /* the bits, through a tensor: 1.5 is 0x3E00, -2 is 0xC000, the least
   * normal 0x0400, inf 0x7C00, and a NaN stays a quiet NaN */
  int64_t d5[] = {5};
  g_autoptr(Tensor) h = tensor_new(type_tensor(DT_F16, 1, d5));
  tensor_set_float(h, 0, 1.5);
  tensor_set_float(h, 1, -2.0);
  tensor_set_float(h, 2, 0x1p-14);
  tensor_set_float(h, 3, 1e9);
  tensor_set_float(h, 4, NAN);
  const uint16_t *hv = h->data;
  g_assert_cmphex(hv[0], ==, 0x3E00);
  g_assert_cmphex(hv[1], ==, 0xC000);
  g_assert_cmphex(hv[2], ==, 0x0400);
  g_assert_cmphex(hv[3], ==, 0x7C00);
  g_assert_cmphex(hv[4] & 0x7E00, ==, 0x7E00);
  g_assert_true(isnan(tensor_get_float(h, 4)));
}

static void test_round_f32(void) {
  static const struct {
    double in, out;
  } cases[] = {
      {0.1, 0.100000001490116119384765625}, /* 0x3DCCCCCD */
      {16777217.0, 16777216.0},             /* 2^24 + 1: tie, even */
      {16777219.0, 16777220.0},             /* 2^24 + 3: tie, even */
      {1e39, INFINITY},
      {-1e39, -INFINITY},
      {1e-46, 0.0},
      {3.4028234663852886e38, 3.4028234663852886e38}, /* FLT_MAX */
  };
  for (gsize k = 0; k < G_N_ELEMENTS(cases); k++)
    g_assert_cmpfloat(tensor_round_value(DT_F32, cases[k].in), ==,
                      cases[k].out);
  g_assert_true(isnan(tensor_round_value(DT_F32, NAN)));
  g_assert_cmpfloat(tensor_round_value(DT_F64, 0.1), ==, 0.1);
  g_assert_cmpfloat(tensor_round_value(DT_F64, 1e300), ==, 1e300);
}

static void test_wrap(void) {
  g_assert_cmpint(tensor_wrap_value(DT_I32, 2147483648LL), ==, -2147483648LL);
  g_assert_cmpint(tensor_wrap_value(DT_I32, -2147483649LL), ==, 2147483647);
  g_assert_cmpint(tensor_wrap_value(DT_I32, 4294967301LL), ==, 5);
  g_assert_cmpint(tensor_wrap_value(DT_I32, -7), ==, -7);
  g_assert_cmpint(tensor_wrap_value(DT_I32, INT64_MIN), ==, 0);
  g_assert_cmpint(tensor_wrap_value(DT_I64, INT64_MIN), ==, INT64_MIN);
  g_assert_cmpint(tensor_wrap_value(DT_I64, INT64_MAX), ==, INT64_MAX);
  g_assert_cmpint(tensor_wrap_value(DT_I1, 2), ==, 1);
  g_assert_cmpint(tensor_wrap_value(DT_I1, -1), ==, 1);
  g_assert_cmpint(tensor_wrap_value(DT_I1, 0), ==, 0);
  /* the narrow types: the low bits, signed or not */
  g_assert_cmpint(tensor_wrap_value(DT_I8, 128), ==, -128);
  g_assert_cmpint(tensor_wrap_value(DT_I8, -129), ==, 127);
  g_assert_cmpint(tensor_wrap_value(DT_I16, 32768), ==, -32768);
  g_assert_cmpint(tensor_wrap_value(DT_I16, 65537), ==, 1);
  g_assert_cmpint(tensor_wrap_value(DT_UI8, -1), ==, 255);
  g_assert_cmpint(tensor_wrap_value(DT_UI8, 256), ==, 0);
  g_assert_cmpint(tensor_wrap_value(DT_UI8, 300), ==, 44);
  g_assert_cmpint(tensor_wrap_value(DT_UI16, -2), ==, 65534);
  g_assert_cmpint(tensor_wrap_value(DT_UI32, -1), ==, 4294967295LL);
  g_assert_cmpint(tensor_wrap_value(DT_UI32, 4294967296LL), ==, 0);
  /* and their ranges */
  g_assert_cmpint(dtype_int_min(DT_I8), ==, -128);
  g_assert_cmpint(dtype_int_max(DT_I16), ==, 32767);
  g_assert_cmpint(dtype_int_min(DT_UI32), ==, 0);
  g_assert_cmpint(dtype_int_max(DT_UI32), ==, 4294967295LL);
  g_assert_cmpint(dtype_int_min(DT_I64), ==, INT64_MIN);
  g_assert_cmpint(dtype_int_max(DT_I64), ==, INT64_MAX);
  g_assert_cmpint(dtype_int_max(DT_I1), ==, 1);
}

/* ------------------------------------------------------------- tensors */

/* A view reads its base's elements from its offset and keeps the base
 * alive after the caller's reference is gone. */
static void test_view(void) {
  int64_t dims[] = {3, 4}, row[] = {4};
  Tensor *base = tensor_new(type_tensor(DT_F32, 2, dims));
  for (int k = 0; k < 12; k++)
    tensor_set_float(base, k, k);
  Tensor *v = tensor_view(base, type_tensor(DT_F32, 1, row), 2 * 4 * 4);
  g_assert_true(v->base == base);
  g_assert_cmpint(base->refcount, ==, 2);
  tensor_unref(base); /* the view holds it now */
  for (int k = 0; k < 4; k++)
    g_assert_cmpfloat(tensor_get_float(v, k), ==, 8 + k); /* row 2 */
  tensor_unref(v);
}

static void test_new_and_strides(void) {
  int64_t dims[] = {2, 3, 4};
  g_autoptr(Tensor) t = tensor_new(type_tensor(DT_BF16, 3, dims));
  g_assert_nonnull(t->data);
  for (int k = 0; k < 24; k++)
    g_assert_cmpfloat(tensor_get_float(t, k), ==, 0.0);
  int64_t strides[3];
  tensor_strides(t->type, strides);
  g_assert_cmpint(strides[0], ==, 12);
  g_assert_cmpint(strides[1], ==, 4);
  g_assert_cmpint(strides[2], ==, 1);

  g_autoptr(Tensor) s = tensor_new(type_tensor(DT_I1, 0, NULL));
  g_assert_nonnull(s->data);
  g_assert_cmpint(tensor_get_int(s, 0), ==, 0);

  int64_t empty[] = {0, 5};
  g_autoptr(Tensor) e = tensor_new(type_tensor(DT_F32, 2, empty));
  g_assert_nonnull(e->data);

  Tensor *r = tensor_ref(t);
  g_assert_true(r == t);
  g_assert_cmpint(t->refcount, ==, 2);
  tensor_unref(r);
  g_assert_cmpint(t->refcount, ==, 1);
}

/* Each dtype is stored at its own width: the bytes a tensor takes, and
 * the stored elements read back as their C types.  By hand: 1.5 is
 * 0x3FC00000 in f32, so 0x3FC0 in bf16; 0.1f is 0x3DCCCCCD, whose low
 * half 0xCCCD > 0x8000 rounds the bf16 up to 0x3DCD; 2^32 + 5 wraps to 5
 * in i32; 7 is 1 in i1. */
static void test_storage_width(void) {
  int64_t d3[] = {3};
  static const guint64 bytes[DT_COUNT_] = {
      [DT_F32] = 12, [DT_F64] = 24, [DT_BF16] = 6, [DT_I32] = 12,
      [DT_I64] = 24, [DT_I1] = 3,   [DT_F16] = 6,  [DT_I8] = 3,
      [DT_I16] = 6,  [DT_UI8] = 3,  [DT_UI16] = 6, [DT_UI32] = 12,
  };
  for (int dt = 0; dt < DT_COUNT_; dt++)
    g_assert_cmpuint(tensor_type_bytes(type_tensor((DType)dt, 1, d3)), ==,
                     bytes[dt]);

  g_autoptr(Tensor) f32 = tensor_new(type_tensor(DT_F32, 1, d3));
  tensor_set_float(f32, 1, 1.5);
  tensor_set_float(f32, 2, 0.1);
  const float *fv = f32->data;
  g_assert_true(fv[0] == 0.0f && fv[1] == 1.5f && fv[2] == 0.1f);

  g_autoptr(Tensor) f64 = tensor_new(type_tensor(DT_F64, 1, d3));
  tensor_set_float(f64, 2, 0.1);
  g_assert_true(((const double *)f64->data)[2] == 0.1);

  g_autoptr(Tensor) bf = tensor_new(type_tensor(DT_BF16, 1, d3));
  tensor_set_float(bf, 1, 1.5);
  tensor_set_float(bf, 2, 0.1);
  const uint16_t *hv = bf->data;
  g_assert_cmphex(hv[0], ==, 0);
  g_assert_cmphex(hv[1], ==, 0x3FC0);
  g_assert_cmphex(hv[2], ==, 0x3DCD);
  g_assert_cmpfloat(tensor_get_float(bf, 2), ==, 205.0 / 2048);

  g_autoptr(Tensor) i32 = tensor_new(type_tensor(DT_I32, 1, d3));
  tensor_set_int(i32, 0, ((int64_t)1 << 32) + 5);
  tensor_set_int(i32, 1, -7);
  const int32_t *iv = i32->data;
  g_assert_cmpint(iv[0], ==, 5);
  g_assert_cmpint(iv[1], ==, -7);

  g_autoptr(Tensor) i64 = tensor_new(type_tensor(DT_I64, 1, d3));
  tensor_set_int(i64, 1, INT64_MIN);
  g_assert_cmpint(((const int64_t *)i64->data)[1], ==, INT64_MIN);

  g_autoptr(Tensor) b = tensor_new(type_tensor(DT_I1, 1, d3));
  tensor_set_int(b, 0, 7);
  tensor_set_int(b, 2, 1);
  const uint8_t *bv = b->data;
  g_assert_true(bv[0] == 1 && bv[1] == 0 && bv[2] == 1);
}

/* Builds a tensor of 'dt' and shape 'dims' from doubles (ints cast). */
static Tensor *tensor_from(DType dt, int rank, const int64_t *dims,
                           const double *vals) {
  Tensor *t = tensor_new(type_tensor(dt, rank, dims));
  int64_t n = type_numel(t->type);
  for (int64_t k = 0; k < n; k++) {
    if (dtype_is_float(dt))
      tensor_set_float(t, k, vals[k]);
    else
      tensor_set_int(t, k, (int64_t)vals[k]);
  }
  return t;
}

static void check_print(const Tensor *t, int max_elems, const char *want) {
  g_autoptr(GString) out = g_string_new(NULL);
  tensor_print(out, t, max_elems);
  g_assert_cmpstr(out->str, ==, want);
}

static void test_print(void) {
  int64_t d23[] = {2, 3};
  double v23[] = {1, 2.5, -3, 4, 5, 6};
  g_autoptr(Tensor) a = tensor_from(DT_F32, 2, d23, v23);
  check_print(a, 100, "tensor<2x3xf32>\n[[1, 2.5, -3], [4, 5, 6]]\n");
  check_print(a, 6, "tensor<2x3xf32>\n[[1, 2.5, -3], [4, 5, 6]]\n");
  check_print(a, -1, "tensor<2x3xf32>\n[[1, 2.5, -3], [4, 5, 6]]\n");
  /* mean 15.5/6 = 2.58333... */
  check_print(a, 5,
              "shape 2x3 f32: min -3 max 6 mean 2.583333 "
              "first [1, 2.5, -3, 4, ...]\n");

  int64_t d4[] = {4};
  double v4[] = {0.1, NAN, INFINITY, -INFINITY};
  g_autoptr(Tensor) f64 = tensor_from(DT_F64, 1, d4, v4);
  check_print(f64, 10, "tensor<4xf64>\n[0.1, nan, inf, -inf]\n");
  check_print(f64, 2,
              "shape 4 f64: min nan max nan mean nan "
              "first [0.1, nan, inf, -inf]\n");
  g_autoptr(Tensor) f32 = tensor_from(DT_F32, 1, d4, v4);
  check_print(f32, 10, "tensor<4xf32>\n[0.1, nan, inf, -inf]\n");
  /* f32 0.1 printed with 15 digits would show 0.100000001490116 */
  double v3[] = {0.1, 1.0 / 3, 1e-10};
  int64_t d3[] = {3};
  g_autoptr(Tensor) f64b = tensor_from(DT_F64, 1, d3, v3);
  check_print(f64b, 10, "tensor<3xf64>\n[0.1, 0.333333333333333, 1e-10]\n");
  /* bf16(0.1) = 205/2048 (see test_round_bf16); 1/3 is 0x3EAAAAAB in f32,
   * low half 0xAAAB > 0x8000 rounds up to 0x3EAB = 171/512 */
  double vbf[] = {0.1, 1.0 / 3, -256.5};
  g_autoptr(Tensor) bf = tensor_from(DT_BF16, 1, d3, vbf);
  check_print(bf, 10, "tensor<3xbf16>\n[0.1000977, 0.3339844, -256]\n");

  double vi[] = {1, -2, 3, 4, 5, 600};
  g_autoptr(Tensor) i32 = tensor_from(DT_I32, 2, d23, vi);
  check_print(i32, 10, "tensor<2x3xi32>\n[[1, -2, 3], [4, 5, 600]]\n");
  /* mean 611/6 */
  check_print(i32, 3,
              "shape 2x3 i32: min -2 max 600 mean 101.8333 "
              "first [1, -2, 3, 4, ...]\n");
  g_autoptr(Tensor) i64 = tensor_new(type_tensor(DT_I64, 1, d3));
  tensor_set_int(i64, 0, INT64_MIN);
  tensor_set_int(i64, 2, INT64_MAX);
  check_print(i64, 10,
              "tensor<3xi64>\n[-9223372036854775808, 0, "
              "9223372036854775807]\n");

  double vb[] = {1, 0, 0};
  g_autoptr(Tensor) b = tensor_from(DT_I1, 1, d3, vb);
  check_print(b, 10, "tensor<3xi1>\n[true, false, false]\n");
  check_print(b, 2,
              "shape 3 i1: min false max true mean 0.3333333 "
              "first [true, false, false]\n");

  double vs[] = {3.25};
  g_autoptr(Tensor) s = tensor_from(DT_F32, 0, NULL, vs);
  check_print(s, 10, "tensor<f32>\n3.25\n");
  check_print(s, 0,
              "shape () f32: min 3.25 max 3.25 mean 3.25 "
              "first [3.25]\n");

  int64_t d0[] = {2, 0};
  g_autoptr(Tensor) e = tensor_new(type_tensor(DT_F32, 2, d0));
  check_print(e, 10, "tensor<2x0xf32>\n[]\n");

  int64_t d212[] = {2, 1, 2};
  double v212[] = {1, 2, 3, 4};
  g_autoptr(Tensor) r3 = tensor_from(DT_I64, 3, d212, v212);
  check_print(r3, 10, "tensor<2x1x2xi64>\n[[[1, 2]], [[3, 4]]]\n");
}

static void test_fill_random(void) {
  int64_t dims[] = {50, 40};
  for (int dt = 0; dt < DT_COUNT_; dt++) {
    g_autoptr(Tensor) a = tensor_new(type_tensor((DType)dt, 2, dims));
    g_autoptr(Tensor) b = tensor_new(type_tensor((DType)dt, 2, dims));
    g_autoptr(GRand) r1 = g_rand_new_with_seed(7);
    g_autoptr(GRand) r2 = g_rand_new_with_seed(7);
    tensor_fill_random(a, r1);
    tensor_fill_random(b, r2);
    gboolean seen_lo = FALSE, seen_hi = FALSE;
    for (int k = 0; k < 2000; k++) {
      if (dtype_is_float((DType)dt)) {
        double v = tensor_get_float(a, k);
        g_assert_cmpfloat(v, ==, tensor_get_float(b, k));
        g_assert_cmpfloat(v, >=, -1.0);
        g_assert_cmpfloat(v, <=, 1.0);
        g_assert_cmpfloat(tensor_round_value((DType)dt, v), ==, v);
        seen_lo |= v < -0.9;
        seen_hi |= v > 0.9;
      } else {
        int64_t v = tensor_get_int(a, k);
        gboolean u = dtype_is_unsigned((DType)dt);
        int64_t lo = dt == DT_I1 || u ? 0 : -10;
        int64_t hi = dt == DT_I1 ? 1 : u ? 20 : 10;
        g_assert_cmpint(v, ==, tensor_get_int(b, k));
        g_assert_cmpint(v, >=, lo);
        g_assert_cmpint(v, <=, hi);
        seen_lo |= v == lo;
        seen_hi |= v == hi;
      }
    }
    g_assert_true(seen_lo && seen_hi);
  }
}

/* ----------------------------------------------------------- npy read */

/* A fixture from make.py and what it holds. */
typedef struct Expected {
  const char *file;
  DType dtype;
  int rank;
  int64_t dims[PARTIR_MAX_RANK];
  int64_t numel;
  double f[8];        /* float fixtures */
  int64_t i[16];      /* integer fixtures */
  gboolean reencodes; /* npy_encode gives numpy's bytes back */
} Expected;

static const Expected fixtures[] = {
    {"f32_2x2.npy", DT_F32, 2, {2, 2}, 4, {1.5, -2, 3, 4}, {0}, TRUE},
    {"f64_3.npy", DT_F64, 1, {3}, 3, {0.1, -1e300, INFINITY}, {0}, TRUE},
    {"f32_special.npy",
     DT_F32,
     1,
     {4},
     4,
     {NAN, -INFINITY, 1.4012984643248171e-45, 3.4028234663852886e38},
     {0},
     TRUE},
    {"i32_2x3.npy",
     DT_I32,
     2,
     {2, 3},
     6,
     {0},
     {1, -2, 3, 2147483647, -2147483648LL, 0},
     TRUE},
    {"i64_3.npy", DT_I64, 1, {3}, 3, {0}, {INT64_MIN, 1, INT64_MAX}, TRUE},
    {"b1_4.npy", DT_I1, 1, {4}, 4, {0}, {1, 0, 0, 1}, TRUE},
    {"f32_scalar.npy", DT_F32, 0, {0}, 1, {3.25}, {0}, TRUE},
    {"i64_0x3.npy", DT_I64, 2, {0, 3}, 0, {0}, {0}, TRUE},
    {"i32_rank8.npy",
     DT_I32,
     8,
     {1, 2, 1, 2, 1, 2, 1, 2},
     16,
     {0},
     {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
     TRUE},
    {"f32_be.npy", DT_F32, 1, {3}, 3, {1.5, -2.0, 3.0e10f}, {0}, FALSE},
    {"i64_be.npy", DT_I64, 1, {3}, 3, {0}, {1, -2, 1099511627779LL}, FALSE},
    {"f32_v2.npy", DT_F32, 2, {1, 3}, 3, {1, 2, 3}, {0}, FALSE},
    {"f64_v3.npy", DT_F64, 1, {2}, 2, {-0.5, 0.25}, {0}, FALSE},
    {"f16_special.npy",
     DT_F16,
     1,
     {6},
     6,
     {65504.0, -INFINITY, NAN, 0x1p-24, 0.0999755859375, -0.0},
     {0},
     TRUE},
    {"i8_4.npy", DT_I8, 1, {4}, 4, {0}, {-128, 127, -1, 0}, TRUE},
    {"i16_2x2.npy", DT_I16, 2, {2, 2}, 4, {0}, {-32768, 32767, 5, -5}, TRUE},
    {"u1_3.npy", DT_UI8, 1, {3}, 3, {0}, {0, 255, 128}, TRUE},
    {"u2_3.npy", DT_UI16, 1, {3}, 3, {0}, {65535, 1, 32768}, TRUE},
    {"u4_3.npy",
     DT_UI32,
     1,
     {3},
     3,
     {0},
     {4294967295LL, 0, 2147483648LL},
     TRUE},
    {"f16_be.npy", DT_F16, 1, {2}, 2, {1.5, -2.0}, {0}, FALSE},
    {"u4_be.npy", DT_UI32, 1, {2}, 2, {0}, {4294967295LL, 258}, FALSE},
};

static void check_expected(const Expected *e, const Tensor *t) {
  g_assert_cmpint(t->type->dtype, ==, e->dtype);
  g_assert_cmpint(t->type->rank, ==, e->rank);
  for (int d = 0; d < e->rank; d++)
    g_assert_cmpint(t->type->dims[d], ==, e->dims[d]);
  g_assert_cmpint(type_numel(t->type), ==, e->numel);
  for (int64_t k = 0; k < e->numel; k++) {
    if (dtype_is_float(e->dtype)) {
      if (!same_double(tensor_get_float(t, k), e->f[k]))
        g_error("%s[%" G_GINT64_FORMAT "] = %.17g, want %.17g", e->file, k,
                tensor_get_float(t, k), e->f[k]);
    } else {
      g_assert_cmpint(tensor_get_int(t, k), ==, e->i[k]);
    }
  }
}

static void test_read_fixtures(void) {
  for (gsize k = 0; k < G_N_ELEMENTS(fixtures); k++) {
    const Expected *e = &fixtures[k];
    g_autofree char *path = fixture_path(e->file);
    g_autoptr(GError) err = NULL;
    g_autoptr(Tensor) t = NULL;
    g_test_message("reading %s", path);
    g_assert_true(npy_read(path, &t, &err));
    g_assert_no_error(err);
    check_expected(e, t);

    if (!e->reencodes)
      continue;
    g_autofree char *bytes = NULL;
    gsize len;
    g_assert_true(g_file_get_contents(path, &bytes, &len, NULL));
    g_autoptr(GBytes) enc = npy_encode(t);
    g_assert_cmpmem(g_bytes_get_data(enc, NULL), g_bytes_get_size(enc), bytes,
                    len);
  }
}

/* ------------------------------------------------- npy round trip */

static void test_round_trip(void) {
  int64_t dims[] = {3, 5};
  g_autoptr(GRand) rng = g_rand_new_with_seed(11);
  for (int dt = 0; dt < DT_COUNT_; dt++) {
    for (int rank = 0; rank <= 2; rank += 2) {
      g_autoptr(Tensor) t = tensor_new(type_tensor((DType)dt, rank, dims));
      tensor_fill_random(t, rng);
      if (dtype_is_float((DType)dt) && rank == 2) {
        tensor_set_float(t, 0, NAN);
        tensor_set_float(t, 1, -INFINITY);
        tensor_set_float(t, 2, -0.0);
        tensor_set_float(t, 3, 1e30);
      } else if ((dt == DT_I32 || dt == DT_I64) && rank == 2) {
        tensor_set_int(t, 0, INT64_MIN);
        tensor_set_int(t, 1, INT64_MAX);
        tensor_set_int(t, 2, dt == DT_I32 ? INT32_MIN : INT64_MIN);
      }
      g_autoptr(GBytes) enc = npy_encode(t);
      gsize len = g_bytes_get_size(enc);
      const guint8 *data = g_bytes_get_data(enc, NULL);
      /* the data starts at a multiple of 64, after a '\n' */
      gsize hlen = data[8] | (gsize)data[9] << 8;
      g_assert_cmpint((10 + hlen) % 64, ==, 0);
      g_assert_cmpint(data[10 + hlen - 1], ==, '\n');
      /* by hand: numpy's itemsize of each ('<f4' for bf16) */
      static const gsize itemsize[DT_COUNT_] = {
          [DT_F32] = 4, [DT_F64] = 8, [DT_BF16] = 4, [DT_I32] = 4,
          [DT_I64] = 8, [DT_I1] = 1,  [DT_F16] = 2,  [DT_I8] = 1,
          [DT_I16] = 2, [DT_UI8] = 1, [DT_UI16] = 2, [DT_UI32] = 4,
      };
      gsize elem = itemsize[dt];
      g_assert_cmpint(len, ==, 10 + hlen + elem * (rank ? 15 : 1));

      g_autofree char *name =
          g_strdup_printf("rt-%s-%d.npy", dtype_name((DType)dt), rank);
      g_autofree char *path = write_scratch(name, data, len);
      g_autoptr(GError) err = NULL;
      g_autoptr(Tensor) back = NULL;
      g_assert_true(npy_read(path, &back, &err));
      g_assert_no_error(err);
      DType want = dt == DT_BF16 ? DT_F32 : (DType)dt;
      g_assert_true(back->type == type_with_dtype(t->type, want));
      for (int64_t k = 0; k < type_numel(t->type); k++) {
        if (dtype_is_float((DType)dt))
          g_assert_true(
              same_double(tensor_get_float(back, k), tensor_get_float(t, k)));
        else
          g_assert_cmpint(tensor_get_int(back, k), ==, tensor_get_int(t, k));
      }
      g_remove(path);
    }
  }
}

/* ---------------------------------------------- npy malformed files */

static void expect_failure(const char *path, int code, const char *substr) {
  g_autoptr(GError) err = NULL;
  Tensor *t = NULL;
  g_assert_false(npy_read(path, &t, &err));
  g_assert_null(t);
  g_assert_error(err, PARTIR_ERROR, code);
  g_assert_true(g_str_has_prefix(err->message, path));
  if (strstr(err->message, substr) == NULL)
    g_error("message '%s' lacks '%s'", err->message, substr);
}

/* Headers that are wrong in one way each, with 'datalen' bytes of data. */
static const struct {
  const char *dict;
  gsize datalen;
  const char *message; /* a substring of the message; NULL: accepted */
} bad_headers[] = {
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", 16, NULL},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", 12,
     "truncated data: shape (2, 2) of <f4 needs 16 bytes, the file has 12"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", 20,
     "4 unexpected bytes after the data of shape (2, 2) of <f4"},
    {"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16,
     "fortran_order arrays are not supported"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }", 0,
     "negative dimension -3"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,"
     "), }",
     0, "a dimension of the shape is too large"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,"
     " 4), }",
     0, "shape (4611686018427387904, 4) is too large"},
    {"{'descr': '<f8', 'fortran_order': False, 'shape': (1152921504606846976,"
     "), }",
     0, "is too large"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, "
     "1, 1, 1), }",
     4, "rank 10 exceeds the limit of 8"},
    {"{'descr': '<f4', 'fortran_order': False, }", 4, "lacks 'shape'"},
    {"{'fortran_order': False, 'shape': (1,), }", 4, "lacks 'descr'"},
    {"{'descr': '<f4', 'shape': (1,), }", 4, "lacks 'fortran_order'"},
    {"{'descr': '<u4', 'fortran_order': False, 'shape': (1,), }", 4, NULL},
    {"{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }", 8,
     "unsupported dtype '<u8'"},
    {"{'descr': '|i2', 'fortran_order': False, 'shape': (1,), }", 2,
     "unsupported dtype '|i2'"},
    {"{'descr': '|f4', 'fortran_order': False, 'shape': (1,), }", 4,
     "unsupported dtype '|f4'"},
    {"{'descr': '<f16', 'fortran_order': False, 'shape': (1,), }", 4,
     "unsupported dtype '<f16'"},
    {"{'descr': '', 'fortran_order': False, 'shape': (1,), }", 4,
     "unsupported dtype ''"},
    {"{'descr': 'O', 'fortran_order': False, 'shape': (1,), }", 4,
     "unsupported dtype 'O'"},
    {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }", 4,
     "'fortran_order' must be True or False"},
    {"{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }", 4,
     "at byte 34: 'fortran_order' must be True or False"},
    {"{'descr': '<f4', 'fortran_order': , 'shape': (1,), }", 4,
     "at byte 34: expected a name"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': [1], }", 4,
     "'shape' must be a tuple of integers"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,,), }", 4,
     "expected an integer"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (1.5,), }", 4,
     "expected ',' or ')'"},
    {"{'descr': '<f4' 'fortran_order': False, 'shape': (1,), }", 4,
     "malformed header at byte 16: expected ',' or '}'"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } junk", 4,
     "unexpected text after the dict"},
    {"{'descr': '<f4", 4, "unterminated string"},
    {"['descr']", 4, "expected '{'"},
    {"", 4, "expected '{'"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", 4,
     "expected ',' or '}'"},
    {"{descr: '<f4'}", 4, "expected a quoted string"},
    {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", 4,
     "structured dtypes are not supported"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': [[[[[[[[[["
     "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
     4, "values nested too deeply"},
    /* a key given twice is refused, not read as its last value */
    {"{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (1,)"
     ", }",
     4, "at byte 17: key 'descr' is repeated"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'fortran_order'"
     ": True, }",
     4, "key 'fortran_order' is repeated"},
    {"{'shape': (2,), 'descr': '<f4', 'fortran_order': False, 'shape': (1,)"
     ", }",
     4, "key 'shape' is repeated"},
    /* accepted oddities: Python 2 longs, double quotes, no trailing comma,
     * keys numpy does not write, '=' and '>' */
    {"{'descr': '<i8', 'fortran_order': False, 'shape': (2L, 1L), }", 16, NULL},
    {"{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (1,)}", 4,
     NULL},
    {"{'shape': (1,), 'descr': '<f4', 'fortran_order': False, 'extra': [1, "
     "(2, 'x'), {'a': None}, -1.5e3], }",
     4, NULL},
    {"{'descr': '=f4', 'fortran_order': False, 'shape': (1,), }", 4, NULL},
    {"{'descr': '<b1', 'fortran_order': False, 'shape': (3,), }", 3, NULL},
    {"  {'descr':'<f4','fortran_order':False,'shape':(1,)}  \n", 4, NULL},
    /* raw 2-byte values (ml_dtypes' bfloat16): bf16; no other void */
    {"{'descr': '|V2', 'fortran_order': False, 'shape': (2,), }", 4, NULL},
    {"{'descr': '>V2', 'fortran_order': False, 'shape': (1,), }", 2,
     "unsupported dtype '>V2'"},
    {"{'descr': '<V4', 'fortran_order': False, 'shape': (1,), }", 4,
     "unsupported dtype '<V4'"},
};

/* What np.save writes for an ml_dtypes bfloat16 array (JAX's): '<V2' and
 * the values' bits, read as bf16.  The bits by hand: 1.5 is 0x3fc0, -2
 * is 0xc000, 3.25 is 0x4050, -0 is 0x8000. */
static void test_read_bf16(void) {
  static const guint16 bits[] = {0x3fc0, 0xc000, 0x4050, 0x8000};
  static const double want[] = {1.5, -2.0, 3.25, -0.0};
  g_autoptr(GByteArray) b = make_npy(
      "{'descr': '<V2', 'fortran_order': False, 'shape': (2, 2), }", 0);
  for (gsize k = 0; k < G_N_ELEMENTS(bits); k++) {
    guint8 le[2] = {bits[k] & 0xff, bits[k] >> 8};
    g_byte_array_append(b, le, 2);
  }
  g_autofree char *path = write_scratch("bf16.npy", b->data, b->len);
  g_autoptr(GError) err = NULL;
  g_autoptr(Tensor) t = NULL;
  g_assert_true(npy_read(path, &t, &err));
  g_assert_no_error(err);
  int64_t dims[] = {2, 2};
  g_assert_true(t->type == type_tensor(DT_BF16, 2, dims));
  for (gsize k = 0; k < G_N_ELEMENTS(want); k++)
    g_assert_true(same_double(tensor_get_float(t, (int64_t)k), want[k]));
  g_remove(path);
}

static void test_bad_headers(void) {
  for (gsize k = 0; k < G_N_ELEMENTS(bad_headers); k++) {
    g_autoptr(GByteArray) b =
        make_npy(bad_headers[k].dict, bad_headers[k].datalen);
    g_autofree char *name = g_strdup_printf("bad-%" G_GSIZE_FORMAT ".npy", k);
    g_autofree char *path = write_scratch(name, b->data, b->len);
    g_test_message("header %s", bad_headers[k].dict);
    if (bad_headers[k].message != NULL) {
      expect_failure(path, PARTIR_ERROR_FORMAT, bad_headers[k].message);
    } else {
      g_autoptr(GError) err = NULL;
      g_autoptr(Tensor) t = NULL;
      g_assert_true(npy_read(path, &t, &err));
      g_assert_no_error(err);
    }
    g_remove(path);
  }
}

static void test_bad_files(void) {
  g_autofree char *good_path = fixture_path("f32_2x2.npy");
  g_autofree char *good = NULL;
  gsize len;
  g_assert_true(g_file_get_contents(good_path, &good, &len, NULL));
  g_assert_cmpint(len, ==, 144); /* 128 bytes of header, 16 of data */

  g_autofree char *p1 = write_scratch("magic.npy", "\x93NUMPX\x01", 7);
  expect_failure(p1, PARTIR_ERROR_FORMAT, "not a .npy file (bad magic)");
  g_autofree char *p2 = write_scratch("empty.npy", "", 0);
  expect_failure(p2, PARTIR_ERROR_FORMAT, "bad magic");
  g_autofree char *p3 = write_scratch("text.npy", "hello, world\n", 13);
  expect_failure(p3, PARTIR_ERROR_FORMAT, "bad magic");

  g_autofree char *p4 = write_scratch("cut-preamble.npy", good, 9);
  expect_failure(p4, PARTIR_ERROR_FORMAT, "the file ends in its preamble");
  g_autofree char *p5 = write_scratch("cut-header.npy", good, 60);
  expect_failure(p5, PARTIR_ERROR_FORMAT,
                 "truncated: the header is 118 bytes but the file has 50");
  g_autofree char *p6 = write_scratch("cut-data.npy", good, 141);
  expect_failure(p6, PARTIR_ERROR_FORMAT, "truncated data");

  char *copy = g_memdup2(good, len);
  copy[6] = 4;
  g_autofree char *p7 = write_scratch("version.npy", copy, len);
  expect_failure(p7, PARTIR_ERROR_FORMAT, "unsupported .npy version 4.0");
  copy[6] = 1;
  copy[7] = 1;
  g_autofree char *p8 = write_scratch("minor.npy", copy, len);
  expect_failure(p8, PARTIR_ERROR_FORMAT, "unsupported .npy version 1.1");
  copy[7] = 0;
  copy[8] = (char)0xff;
  copy[9] = (char)0xff;
  g_autofree char *p9 = write_scratch("hlen.npy", copy, len);
  expect_failure(p9, PARTIR_ERROR_FORMAT, "the header is 65535 bytes");
  g_free(copy);

  /* fixtures numpy wrote that partir refuses */
  static const struct {
    const char *file, *message;
  } refused[] = {
      {"fortran.npy", "fortran_order arrays are not supported"},
      {"u8.npy", "unsupported dtype '<u8'"},
      {"c8.npy", "unsupported dtype '<c8'"},
      {"structured.npy", "structured dtypes are not supported"},
      {"rank9.npy", "rank 9 exceeds the limit of 8"},
  };
  for (gsize k = 0; k < G_N_ELEMENTS(refused); k++) {
    g_autofree char *path = fixture_path(refused[k].file);
    expect_failure(path, PARTIR_ERROR_FORMAT, refused[k].message);
  }

  g_autofree char *missing = g_build_filename(tmp_dir, "missing.npy", NULL);
  expect_failure(missing, PARTIR_ERROR_IO, "No such file or directory");
  /* only regular files: a FIFO would block the reader, /dev/zero never
   * ends */
  expect_failure(tmp_dir, PARTIR_ERROR_IO, "not a regular file (a directory)");
  g_autofree char *fifo = g_build_filename(tmp_dir, "fifo.npy", NULL);
  g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
  expect_failure(fifo, PARTIR_ERROR_IO, "not a regular file (a FIFO)");
  g_remove(fifo);
  expect_failure("/dev/zero", PARTIR_ERROR_IO,
                 "not a regular file (a character device)");
}

/* Every proper prefix of every fixture is refused, and random corruption
 * of the header never crashes (the sanitizer builds check the rest). */
static void test_fuzz(void) {
  g_autoptr(GRand) rng = g_rand_new_with_seed(2024);
  for (gsize f = 0; f < G_N_ELEMENTS(fixtures); f++) {
    g_autofree char *path = fixture_path(fixtures[f].file);
    g_autofree char *good = NULL;
    gsize len;
    g_assert_true(g_file_get_contents(path, &good, &len, NULL));
    for (gsize cut = 0; cut < len; cut++) {
      g_autofree char *p = write_scratch("prefix.npy", good, cut);
      g_autoptr(GError) err = NULL;
      Tensor *t = NULL;
      g_assert_false(npy_read(p, &t, &err));
      g_assert_error(err, PARTIR_ERROR, PARTIR_ERROR_FORMAT);
    }
    for (int trial = 0; trial < 300; trial++) {
      g_autofree char *copy = g_memdup2(good, len);
      int flips = g_rand_int_range(rng, 1, 4);
      for (int k = 0; k < flips; k++) {
        gsize at = (gsize)g_rand_int_range(rng, 0, (gint32)MIN(len, 128));
        static const char junk[] = "(){}[],:'\" -0123456789LTF<>|fibx\n\0";
        copy[at] = g_rand_boolean(rng)
                       ? (char)g_rand_int_range(rng, 0, 256)
                       : junk[g_rand_int_range(rng, 0, sizeof junk - 1)];
      }
      g_autofree char *p = write_scratch("mutant.npy", copy, len);
      g_autoptr(GError) err = NULL;
      g_autoptr(Tensor) t = NULL;
      if (!npy_read(p, &t, &err))
        g_assert_true(g_str_has_prefix(err->message, p));
    }
  }
}

/* ------------------------------------------------------------ interpreter */

/* The module of program text 'text' (it must parse). */
static Module *parse_program(const char *text) {
  g_autoptr(Diag) diags = diag_new(NULL);
  Module *m = parse_text("test.pir", text, strlen(text), diags);
  if (!m)
    g_error("%s", diag_text(diags));
  return m;
}

/* A chain of 64 negs of 2^21-element f32 values (8 MiB each, 512 MiB in
 * all) runs in a fraction of that: each value is dropped after its one
 * use.  (Kept to the end, they took 512 MiB; 1 GiB as doubles.)  In a
 * subprocess, so that its peak resident size is its own; the bound
 * leaves room for a sanitizer's quarantine of freed memory. */
static void test_interp_frees(void) {
  if (!g_test_subprocess()) {
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    return;
  }
  g_autoptr(GString) text = g_string_new(
      "func @f(%x: tensor<8xf32>) -> tensor<8x262144xf32> {\n"
      "  %v0 = broadcast_in_dim(%x) {dims = [0]} : tensor<8x262144xf32>\n");
  for (int i = 1; i <= 64; i++)
    g_string_append_printf(text, "  %%v%d = neg(%%v%d)\n", i, i - 1);
  g_string_append(text, "  return %v64\n}\n");
  g_autoptr(Module) m = parse_program(text->str);
  Func *f = module_entry(m);
  g_autoptr(Diag) why = diag_new(NULL);
  g_assert_true(interp_check(f, why));
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = interp_run_seeded(f, 5, &error);
  g_assert_no_error(error);
  /* 64 negations: the broadcast argument itself */
  g_autoptr(Tensor) x = interp_random_input(f, 0, 5);
  const Tensor *y = g_ptr_array_index(out, 0);
  for (int64_t k = 0; k < 8 * 262144; k++)
    g_assert_cmpfloat(tensor_get_float(y, k), ==,
                      tensor_get_float(x, k / 262144));
  struct rusage ru;
  g_assert_cmpint(getrusage(RUSAGE_SELF, &ru), ==, 0);
  g_assert_cmpint(ru.ru_maxrss, <, 400 * 1024); /* KiB */
}

/* An f32 result of 2^25 elements takes 128 MiB, as a device would hold
 * it (stored as doubles it took 256 MiB): the run's peak resident size
 * stays under 200 MiB.  In a subprocess, as above. */
static void test_interp_f32_width(void) {
  if (!g_test_subprocess()) {
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    return;
  }
  g_autoptr(Module) m = parse_program(
      "func @f(%x: tensor<8xf32>) -> tensor<8x4194304xf32> {\n"
      "  %v = broadcast_in_dim(%x) {dims = [0]} : tensor<8x4194304xf32>\n"
      "  return %v\n"
      "}\n");
  Func *f = module_entry(m);
  g_autoptr(Diag) why = diag_new(NULL);
  g_assert_true(interp_check(f, why));
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) out = interp_run_seeded(f, 3, &error);
  g_assert_no_error(error);
  g_autoptr(Tensor) x = interp_random_input(f, 0, 3);
  const Tensor *v = g_ptr_array_index(out, 0);
  g_assert_cmpfloat(tensor_get_float(v, 5 * 4194304 + 17), ==,
                    tensor_get_float(x, 5));
  struct rusage ru;
  g_assert_cmpint(getrusage(RUSAGE_SELF, &ru), ==, 0);
  g_assert_cmpint(ru.ru_maxrss, <, 200 * 1024); /* KiB */
}

/* Ctrl-C during a long kernel: with 'partir_interrupt' set, a 2048^3
 * matmul, an elementwise op and a reduction over 2^22 elements each stop
 * early (on ones, a finished kernel gives 2048, -1 and 2048 in its last
 * element; a stopped one leaves it 0), and interp_run fails with
 * PARTIR_ERROR_INTERRUPTED at once instead of after the matmul's 8.6e9
 * multiply-adds. */
static void test_interp_interrupt(void) {
  g_autoptr(Module) m = parse_program(
      "func @f(%a: tensor<2048x2048xf32>, %b: tensor<2048x2048xf32>)\n"
      "    -> (tensor<2048x2048xf32>, tensor<2048x2048xf32>, "
      "tensor<2048xf32>) {\n"
      "  %c = matmul(%a, %b)\n"
      "  %d = neg(%a)\n"
      "  %e = reduce_sum(%a) {dims = [1]}\n"
      "  return %c, %d, %e\n"
      "}\n");
  Func *f = module_entry(m);
  g_autoptr(Tensor) ones = tensor_new(f->arg_types[0]);
  int64_t n = type_numel(ones->type);
  for (int64_t k = 0; k < n; k++)
    tensor_set_float(ones, k, 1);
  Tensor *const args[] = {ones, ones};
  partir_interrupt = 1;
  for (int i = 0; i < 3; i++) {
    g_autoptr(Tensor) r = kernel_eval(f->body->args[i], args);
    g_assert_cmpfloat(tensor_get_float(r, type_numel(r->type) - 1), ==, 0);
  }
  g_autoptr(Diag) why = diag_new(NULL);
  g_assert_true(interp_check(f, why));
  g_autoptr(GError) error = NULL;
  GPtrArray *out = interp_run(f, args, &error);
  partir_interrupt = 0;
  g_assert_null(out);
  g_assert_error(error, PARTIR_ERROR, PARTIR_ERROR_INTERRUPTED);
  /* and without the interrupt the kernels finish */
  g_autoptr(Tensor) d = kernel_eval(f->body->args[1], args);
  g_assert_cmpfloat(tensor_get_float(d, n - 1), ==, -1);
}

/* Removes the scratch directory and what is left in it. */
static void remove_tmp_dir(void) {
  g_autoptr(GDir) dir = g_dir_open(tmp_dir, 0, NULL);
  const char *name;
  while (dir != NULL && (name = g_dir_read_name(dir)) != NULL) {
    g_autofree char *path = g_build_filename(tmp_dir, name, NULL);
    g_remove(path);
  }
  g_rmdir(tmp_dir);
  g_free(tmp_dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  tmp_dir = make_tmp_dir();

  g_test_add_func("/tensor/round-bf16", test_round_bf16);
  g_test_add_func("/tensor/round-f16", test_round_f16);
  g_test_add_func("/tensor/round-f32", test_round_f32);
  g_test_add_func("/tensor/wrap", test_wrap);
  g_test_add_func("/tensor/new-and-strides", test_new_and_strides);
  g_test_add_func("/tensor/view", test_view);
  g_test_add_func("/tensor/storage-width", test_storage_width);
  g_test_add_func("/tensor/print", test_print);
  g_test_add_func("/tensor/fill-random", test_fill_random);
  g_test_add_func("/npy/read-fixtures", test_read_fixtures);
  g_test_add_func("/npy/round-trip", test_round_trip);
  g_test_add_func("/npy/bad-headers", test_bad_headers);
  g_test_add_func("/npy/read-bf16", test_read_bf16);
  g_test_add_func("/npy/bad-files", test_bad_files);
  g_test_add_func("/npy/fuzz", test_fuzz);
  g_test_add_func("/interp/frees", test_interp_frees);
  g_test_add_func("/interp/f32-width", test_interp_f32_width);
  g_test_add_func("/interp/interrupt", test_interp_interrupt);
  int status = g_test_run();
  remove_tmp_dir();
  return status;
}
