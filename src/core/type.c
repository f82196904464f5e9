/* type.c — tensor and range types, interned.
 *
 * Every Type is unique: type_tensor() and type_range() return the same
 * pointer for equal arguments, so Terms compare types with ==.  Types live
 * for the life of the process (there are few of them).
 */
#include "core/core.h"

#include <string.h>

/* Integers are two's complement (signed) or plain binary (unsigned) in
 * 'bytes' bytes; i1 is one byte holding 0 or 1. */
static const struct {
  const char *name;
  gsize bytes;
  gboolean is_float, is_unsigned;
} dtype_info[DT_COUNT_] = {
    [DT_F32] = {"f32", 4, TRUE, FALSE},   [DT_F64] = {"f64", 8, TRUE, FALSE},
    [DT_BF16] = {"bf16", 2, TRUE, FALSE}, [DT_I32] = {"i32", 4, FALSE, FALSE},
    [DT_I64] = {"i64", 8, FALSE, FALSE},  [DT_I1] = {"i1", 1, FALSE, FALSE},
    [DT_F16] = {"f16", 2, TRUE, FALSE},   [DT_I8] = {"i8", 1, FALSE, FALSE},
    [DT_I16] = {"i16", 2, FALSE, FALSE},  [DT_UI8] = {"ui8", 1, FALSE, TRUE},
    [DT_UI16] = {"ui16", 2, FALSE, TRUE}, [DT_UI32] = {"ui32", 4, FALSE, TRUE},
};

const char *dtype_name(DType dt) { return dtype_info[dt].name; }
gboolean dtype_is_float(DType dt) { return dtype_info[dt].is_float; }
gboolean dtype_is_unsigned(DType dt) { return dtype_info[dt].is_unsigned; }
gsize dtype_storage_bytes(DType dt) { return dtype_info[dt].bytes; }

int64_t dtype_int_min(DType dt) {
  g_assert(!dtype_is_float(dt));
  if (dt == DT_I1 || dtype_is_unsigned(dt))
    return 0;
  return (int64_t)((uint64_t)-1 << (8 * dtype_info[dt].bytes - 1));
}

int64_t dtype_int_max(DType dt) {
  g_assert(!dtype_is_float(dt));
  if (dt == DT_I1)
    return 1;
  int bits = 8 * (int)dtype_info[dt].bytes - !dtype_is_unsigned(dt);
  return (int64_t)(((uint64_t)1 << bits) - 1); /* bits <= 63 */
}

/* Floats first, then integers, each from the widest: as a reader scans
 * for the one they meant. */
const char *dtype_all_names(void) {
  static const DType order[] = {DT_F64,  DT_F32,  DT_BF16, DT_F16,
                                DT_I64,  DT_I32,  DT_I16,  DT_I8,
                                DT_UI32, DT_UI16, DT_UI8,  DT_I1};
  G_STATIC_ASSERT(G_N_ELEMENTS(order) == DT_COUNT_);
  static gsize names;
  if (g_once_init_enter(&names)) {
    GString *s = g_string_new(NULL);
    for (int i = 0; i < DT_COUNT_; i++)
      g_string_append_printf(s, "%s%s", i ? ", " : "",
                             dtype_info[order[i]].name);
    g_once_init_leave(&names, (gsize)g_string_free(s, FALSE));
  }
  return (const char *)names;
}

gboolean dtype_from_name(const char *s, gsize len, DType *out) {
  for (int i = 0; i < DT_COUNT_; i++)
    if (strlen(dtype_info[i].name) == len &&
        memcmp(dtype_info[i].name, s, len) == 0) {
      *out = (DType)i;
      return TRUE;
    }
  return FALSE;
}

static guint type_hash(gconstpointer p) {
  const Type *t = p;
  guint h = (guint)t->kind * 31u + (guint)t->dtype;
  h = h * 31u + (guint)t->rank;
  for (int i = 0; i < t->rank; i++)
    h = h * 1000003u + (guint)t->dims[i];
  h = h * 31u + (guint)t->n;
  return h * 31u + (guint)t->w;
}

static gboolean type_equal(gconstpointer a, gconstpointer b) {
  const Type *x = a, *y = b;
  if (x->kind != y->kind || x->dtype != y->dtype || x->rank != y->rank ||
      x->n != y->n || x->w != y->w)
    return FALSE;
  return memcmp(x->dims, y->dims, sizeof(int64_t) * (gsize)x->rank) == 0;
}

/* Types are made from any thread: the SPMD simulator's devices run on
 * threads, and a sum's accumulator is a type of its own
 * (tensor_new_acc).  Terms are not (the store is one thread's). */
static const Type *type_intern(const Type *key) {
  static GMutex lock;
  static GHashTable *table;
  g_mutex_lock(&lock);
  if (!table)
    table = g_hash_table_new(type_hash, type_equal);
  Type *t = g_hash_table_lookup(table, key);
  if (!t) {
    t = g_memdup2(key, sizeof *key);
    g_hash_table_add(table, t);
  }
  g_mutex_unlock(&lock);
  return t;
}

const Type *type_tensor(DType dt, int rank, const int64_t *dims) {
  g_assert(rank >= 0 && rank <= PARTIR_MAX_RANK);
  Type key = {.kind = TY_TENSOR, .dtype = dt, .rank = rank};
  if (rank > 0)
    memcpy(key.dims, dims, sizeof(int64_t) * (gsize)rank);
  return type_intern(&key);
}

const Type *type_range(int64_t n, int64_t w) {
  Type key = {.kind = TY_RANGE, .n = n, .w = w};
  return type_intern(&key);
}

int64_t type_range_parts(const Type *range) {
  g_assert(range->kind == TY_RANGE);
  if (range->w <= 0 || range->n <= 0)
    return 0;
  return range->n / range->w + (range->n % range->w != 0);
}

gboolean type_range_even(const Type *range) { return range->n % range->w == 0; }

int64_t type_range_cut(const Type *range, int64_t size) {
  int64_t parts = type_range_parts(range);
  if (parts < 1 || range->w > range->n)
    return 0;
  if (size == range->n)
    return range->w;
  return size % parts == 0 ? size / parts : 0;
}

const Type *type_with_dim(const Type *t, int d, int64_t size) {
  Type key = *t;
  key.dims[d] = size;
  return type_intern(&key);
}

const Type *type_with_dtype(const Type *t, DType dt) {
  Type key = *t;
  key.dtype = dt;
  return type_intern(&key);
}

int64_t type_numel(const Type *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++)
    if (__builtin_mul_overflow(n, t->dims[i], &n))
      return G_MAXINT64;
  return n;
}

gboolean type_size_ok(const Type *t) {
  return t->kind != TY_TENSOR || type_numel(t) <= PARTIR_MAX_ELEMS;
}

void type_print(GString *out, const Type *t) {
  if (t->kind == TY_RANGE) {
    g_string_append_printf(
        out, "!partir.range<%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ">", t->n,
        t->w);
    return;
  }
  g_string_append(out, "tensor<");
  for (int i = 0; i < t->rank; i++)
    g_string_append_printf(out, "%" G_GINT64_FORMAT "x", t->dims[i]);
  g_string_append_printf(out, "%s>", dtype_name(t->dtype));
}

char *type_to_string(const Type *t) {
  GString *s = g_string_new(NULL);
  type_print(s, t);
  return g_string_free(s, FALSE);
}
