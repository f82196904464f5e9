/* npy.c — NumPy .npy files in and out.
 *
 * A .npy file is
 *
 *   "\x93NUMPY" major minor  header-length  header  data
 *
 * where the header length is a little-endian u16 in version 1.0 and a u32
 * in versions 2.0 and 3.0, and the header is a Python dict literal such as
 *
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 *
 * padded with spaces and a final '\n' so that the data starts at a
 * multiple of 64 bytes.  The data is the array's elements in row-major
 * order ('fortran_order': False), each in the byte order 'descr' names.
 *
 * The reader accepts the dtypes partir has ('<f2' '<f4' '<f8' '|i1' '<i2'
 * '<i4' '<i8' '|u1' '<u2' '<u4' '|b1', and their big-endian forms, which
 * it byteswaps) and parses the header
 * dict by hand: it is a tiny subset of Python literals, and a hand parser
 * can refuse any junk with a clear message.  It checks the data size
 * against the shape before allocating, so a lying header cannot make it
 * allocate more than the file holds.  bf16 has no .npy dtype: a bf16
 * tensor is written as '<f4', and read from '<V2' (the raw 2-byte
 * values ml_dtypes' bfloat16 is saved as, JAX's).
 *
 * The writer produces exactly what numpy.save produces for the same
 * array (version 1.0, numpy's key order, spacing and padding).  Both
 * copy the elements as a Tensor stores them (eval.h), which is the
 * little-endian .npy layout on a little-endian machine; only bf16 is
 * converted (to f32).
 */
#include "eval/eval.h"

#include <string.h>

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN 64
#define NPY_GROWTH_DIGITS 21 /* numpy's spare room after the shape */
#define NPY_MAX_NESTING 32   /* bracket depth of header values we skip */

/* ------------------------------------------------------------ reading */

/* A cursor over the header text; 'err' holds the first parse error. */
typedef struct HeaderParser {
  const char *start, *p, *end;
  GString *err;
} HeaderParser;

/* Records a parse error at the cursor (the first one wins); returns FALSE
 * so callers can 'return hp_fail(...)'. */
static gboolean hp_fail(HeaderParser *hp, const char *what) {
  if (hp->err->len == 0)
    g_string_printf(hp->err, "malformed header at byte %td: %s",
                    hp->p - hp->start, what);
  return FALSE;
}

static void hp_skip_space(HeaderParser *hp) {
  while (hp->p < hp->end && g_ascii_isspace(*hp->p))
    hp->p++;
}

/* Consumes 'c' (after white space) if it is next. */
static gboolean hp_accept(HeaderParser *hp, char c) {
  hp_skip_space(hp);
  if (hp->p < hp->end && *hp->p == c) {
    hp->p++;
    return TRUE;
  }
  return FALSE;
}

static gboolean hp_expect(HeaderParser *hp, char c, const char *what) {
  return hp_accept(hp, c) || hp_fail(hp, what);
}

/* Parses a quoted string ('...' or "...", with backslash escapes taken
 * literally) into 'out'. */
static gboolean hp_string(HeaderParser *hp, GString *out) {
  hp_skip_space(hp);
  if (hp->p >= hp->end || (*hp->p != '\'' && *hp->p != '"'))
    return hp_fail(hp, "expected a quoted string");
  char quote = *hp->p++;
  g_string_truncate(out, 0);
  while (hp->p < hp->end && *hp->p != quote) {
    if (*hp->p == '\\' && hp->p + 1 < hp->end)
      hp->p++;
    if (*hp->p == '\n' || *hp->p == '\0')
      return hp_fail(hp, "newline or NUL in string");
    g_string_append_c(out, *hp->p++);
  }
  if (hp->p >= hp->end)
    return hp_fail(hp, "unterminated string");
  hp->p++;
  return TRUE;
}

/* Parses a Python name (True, False, None, ...) into 'out'. */
static gboolean hp_name(HeaderParser *hp, GString *out) {
  hp_skip_space(hp);
  g_string_truncate(out, 0);
  while (hp->p < hp->end && (g_ascii_isalnum(*hp->p) || *hp->p == '_'))
    g_string_append_c(out, *hp->p++);
  return out->len > 0 || hp_fail(hp, "expected a name");
}

/* Parses a decimal integer with an optional sign and Python 2's 'L'
 * suffix; '*overflow' is set when it does not fit in int64. */
static gboolean hp_int(HeaderParser *hp, int64_t *v, gboolean *overflow) {
  hp_skip_space(hp);
  gboolean neg = FALSE;
  if (hp->p < hp->end && (*hp->p == '-' || *hp->p == '+'))
    neg = *hp->p++ == '-';
  if (hp->p >= hp->end || !g_ascii_isdigit(*hp->p))
    return hp_fail(hp, "expected an integer");
  uint64_t u = 0;
  *overflow = FALSE;
  while (hp->p < hp->end && g_ascii_isdigit(*hp->p)) {
    unsigned digit = (unsigned)(*hp->p++ - '0');
    if (u > (UINT64_MAX - digit) / 10)
      *overflow = TRUE;
    else
      u = u * 10 + digit;
  }
  if (hp->p < hp->end && (*hp->p == 'L' || *hp->p == 'l'))
    hp->p++;
  if (u > (uint64_t)INT64_MAX)
    *overflow = TRUE;
  *v = *overflow ? 0 : neg ? -(int64_t)u : (int64_t)u;
  return TRUE;
}

/* Skips one value of a key we do not use: a string, a number or name, or
 * a bracketed group nested at most NPY_MAX_NESTING deep. */
static gboolean hp_skip_value(HeaderParser *hp, int depth) {
  hp_skip_space(hp);
  if (hp->p >= hp->end)
    return hp_fail(hp, "expected a value");
  char c = *hp->p;
  if (c == '\'' || c == '"') {
    g_autoptr(GString) s = g_string_new(NULL);
    return hp_string(hp, s);
  }
  if (c == '(' || c == '[' || c == '{') {
    char close = c == '(' ? ')' : c == '[' ? ']' : '}';
    if (depth >= NPY_MAX_NESTING)
      return hp_fail(hp, "values nested too deeply");
    hp->p++;
    while (!hp_accept(hp, close)) {
      if (!hp_skip_value(hp, depth + 1))
        return FALSE;
      if (c == '{' && (!hp_expect(hp, ':', "expected ':'") ||
                       !hp_skip_value(hp, depth + 1)))
        return FALSE;
      if (hp_accept(hp, close))
        break;
      if (!hp_expect(hp, ',', "expected ',' or a closing bracket"))
        return FALSE;
    }
    return TRUE;
  }
  const char *from = hp->p;
  while (hp->p < hp->end &&
         (g_ascii_isalnum(*hp->p) || strchr("_.+-", *hp->p) != NULL))
    hp->p++;
  return hp->p > from || hp_fail(hp, "expected a value");
}

/* What the header dict says. */
typedef struct NpyHeader {
  gboolean has_descr, has_order, has_shape;
  GString *descr;
  gboolean fortran_order;
  int rank;                      /* entries in 'shape', may exceed the max */
  int64_t dims[PARTIR_MAX_RANK]; /* the first PARTIR_MAX_RANK of them */
  gboolean dim_overflow;         /* an entry did not fit in int64 */
  int64_t negative_dim;          /* a negative entry, or 0 if none */
} NpyHeader;

/* Parses the shape tuple '(2, 3)', '(3,)' or '()'. */
static gboolean hp_shape(HeaderParser *hp, NpyHeader *h) {
  if (!hp_expect(hp, '(', "'shape' must be a tuple of integers"))
    return FALSE;
  h->rank = 0;
  h->dim_overflow = FALSE;
  h->negative_dim = 0;
  while (!hp_accept(hp, ')')) {
    int64_t v;
    gboolean overflow;
    if (!hp_int(hp, &v, &overflow))
      return FALSE;
    if (overflow)
      h->dim_overflow = TRUE;
    else if (v < 0 && h->negative_dim == 0)
      h->negative_dim = v;
    if (h->rank < PARTIR_MAX_RANK)
      h->dims[h->rank] = v;
    if (h->rank < G_MAXINT)
      h->rank++;
    if (hp_accept(hp, ')'))
      break;
    if (!hp_expect(hp, ',', "expected ',' or ')'"))
      return FALSE;
  }
  return TRUE;
}

/* Parses the whole header dict into 'h'; keys other than the three numpy
 * writes are skipped, and one of those three given twice is refused
 * (Python would keep the last, a hand-edited file likely meant another). */
static gboolean hp_dict(HeaderParser *hp, NpyHeader *h) {
  g_autoptr(GString) key = g_string_new(NULL);
  g_autoptr(GString) name = g_string_new(NULL);
  if (!hp_expect(hp, '{', "expected '{'"))
    return FALSE;
  while (!hp_accept(hp, '}')) {
    hp_skip_space(hp);
    const char *key_at = hp->p;
    if (!hp_string(hp, key))
      return FALSE;
    gboolean again = (strcmp(key->str, "descr") == 0 && h->has_descr) ||
                     (strcmp(key->str, "fortran_order") == 0 && h->has_order) ||
                     (strcmp(key->str, "shape") == 0 && h->has_shape);
    if (again) {
      hp->p = key_at;
      g_autofree char *what = g_strdup_printf("key '%s' is repeated", key->str);
      return hp_fail(hp, what);
    }
    if (!hp_expect(hp, ':', "expected ':'"))
      return FALSE;
    if (strcmp(key->str, "descr") == 0) {
      hp_skip_space(hp);
      if (hp->p < hp->end && *hp->p == '[')
        return hp_fail(hp, "structured dtypes are not supported");
      if (!hp_string(hp, h->descr))
        return FALSE;
      h->has_descr = TRUE;
    } else if (strcmp(key->str, "fortran_order") == 0) {
      hp_skip_space(hp);
      const char *value = hp->p;
      if (!hp_name(hp, name))
        return FALSE;
      if (strcmp(name->str, "True") == 0) {
        h->fortran_order = TRUE;
      } else if (strcmp(name->str, "False") == 0) {
        h->fortran_order = FALSE;
      } else {
        hp->p = value;
        return hp_fail(hp, "'fortran_order' must be True or False");
      }
      h->has_order = TRUE;
    } else if (strcmp(key->str, "shape") == 0) {
      if (!hp_shape(hp, h))
        return FALSE;
      h->has_shape = TRUE;
    } else if (!hp_skip_value(hp, 0)) {
      return FALSE;
    }
    if (hp_accept(hp, '}'))
      break;
    if (!hp_expect(hp, ',', "expected ',' or '}'"))
      return FALSE;
  }
  hp_skip_space(hp);
  if (hp->p < hp->end)
    return hp_fail(hp, "unexpected text after the dict");
  return TRUE;
}

/* One dtype partir reads and writes. */
typedef struct NpyDType {
  char kind; /* numpy's kind letter: 'f', 'i', 'u', 'b' */
  int size;  /* bytes */
  DType dtype;
} NpyDType;

/* NumPy has no bf16: ml_dtypes' bfloat16 (JAX's) is saved as raw 2-byte
 * values, '<V2' or '|V2', the only dtype of that description partir
 * has, so those are read as bf16 (in the machine's byte order, as they
 * were written: a void has none of its own). */
static const NpyDType npy_bf16 = {'V', 2, DT_BF16};

static const NpyDType npy_dtypes[] = {
    {'f', 2, DT_F16},  {'f', 4, DT_F32},  {'f', 8, DT_F64}, {'i', 1, DT_I8},
    {'i', 2, DT_I16},  {'i', 4, DT_I32},  {'i', 8, DT_I64}, {'u', 1, DT_UI8},
    {'u', 2, DT_UI16}, {'u', 4, DT_UI32}, {'b', 1, DT_I1},
};

/* Maps a descr ('<f4', '>i8', '|b1', ...) to a dtype and its byte order;
 * FALSE if partir has no such dtype. */
static gboolean descr_lookup(const char *descr, const NpyDType **out,
                             gboolean *big_endian) {
  if (strlen(descr) != 3 || strchr("<>=|", descr[0]) == NULL)
    return FALSE;
  if (descr[0] != '>' && strcmp(descr + 1, "V2") == 0) {
    *out = &npy_bf16;
    *big_endian = G_BYTE_ORDER == G_BIG_ENDIAN;
    return TRUE;
  }
  int size = descr[2] - '0';
  for (size_t k = 0; k < G_N_ELEMENTS(npy_dtypes); k++) {
    const NpyDType *d = &npy_dtypes[k];
    if (d->kind != descr[1] || d->size != size)
      continue;
    if (descr[0] == '|' && size != 1)
      return FALSE;
    *out = d;
    *big_endian =
        descr[0] == '>' || (descr[0] == '=' && G_BYTE_ORDER == G_BIG_ENDIAN);
    return TRUE;
  }
  return FALSE;
}

/* Formats a shape the way numpy prints a tuple: '()', '(3,)', '(2, 3)'. */
static void append_shape_tuple(GString *out, int rank, const int64_t *dims) {
  g_string_append_c(out, '(');
  for (int d = 0; d < rank; d++)
    g_string_append_printf(out, "%s%" G_GINT64_FORMAT, d ? ", " : "", dims[d]);
  g_string_append(out, rank == 1 ? ",)" : ")");
}

/* Reverses the bytes of each of the 'n' elements of 'size' bytes at
 * 'data': between the file's byte order and the machine's. */
static void swap_elements(guint8 *data, int64_t n, int size) {
  for (int64_t k = 0; k < n; k++)
    for (int lo = 0, hi = size - 1; lo < hi; lo++, hi--) {
      guint8 c = data[k * size + lo];
      data[k * size + lo] = data[k * size + hi];
      data[k * size + hi] = c;
    }
}

/* Copies 'n' elements of 'd' at 'data' into 't', whose dtype is d's and
 * so has the same width: byteswapped when the file's byte order is not
 * the machine's; a boolean byte other than 0 is 1. */
static void decode_data(Tensor *t, const NpyDType *d, gboolean big_endian,
                        const guint8 *data, int64_t n) {
  g_assert(dtype_storage_bytes(d->dtype) == (gsize)d->size);
  guint8 *e = t->data;
  memcpy(e, data, (gsize)n * (gsize)d->size);
  if (big_endian != (G_BYTE_ORDER == G_BIG_ENDIAN))
    swap_elements(e, n, d->size);
  for (int64_t k = 0; d->dtype == DT_I1 && k < n; k++)
    e[k] = e[k] != 0;
}

#define FORMAT_ERROR(...)                                                      \
  (g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_FORMAT, __VA_ARGS__), FALSE)

/* Reads the .npy file at 'path' into a new tensor (bf16 from '<V2').  A file
 * that cannot be read (not a regular file, over NPY_MAX_BYTES) is a
 * PARTIR_ERROR_IO error; every defect of its contents is a PARTIR_ERROR_FORMAT
 * error "PATH: what is wrong", and nothing is allocated for it. */
gboolean npy_read(const char *path, Tensor **out, GError **error) {
  g_autofree guint8 *b = NULL;
  gsize len;
  if (!partir_read_file(path, NPY_MAX_BYTES, (char **)&b, &len, error))
    return FALSE;

  if (len < NPY_MAGIC_LEN || memcmp(b, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
    return FORMAT_ERROR("%s: not a .npy file (bad magic)", path);
  if (len < NPY_MAGIC_LEN + 2)
    return FORMAT_ERROR("%s: truncated: the file ends in its preamble", path);
  int major = b[6], minor = b[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return FORMAT_ERROR("%s: unsupported .npy version %d.%d (1.0, 2.0 and "
                        "3.0 are)",
                        path, major, minor);
  gsize prefix = major == 1 ? 10 : 12;
  if (len < prefix)
    return FORMAT_ERROR("%s: truncated: the file ends in its preamble", path);
  gsize hlen = major == 1 ? (gsize)b[8] | (gsize)b[9] << 8
                          : (gsize)b[8] | (gsize)b[9] << 8 |
                                (gsize)b[10] << 16 | (gsize)b[11] << 24;
  if (hlen > len - prefix)
    return FORMAT_ERROR("%s: truncated: the header is %" G_GSIZE_FORMAT
                        " bytes but the file has %" G_GSIZE_FORMAT
                        " after the preamble",
                        path, hlen, len - prefix);

  NpyHeader h = {0};
  g_autoptr(GString) descr = g_string_new(NULL);
  g_autoptr(GString) perr = g_string_new(NULL);
  h.descr = descr;
  HeaderParser hp = {(const char *)b + prefix, (const char *)b + prefix,
                     (const char *)b + prefix + hlen, perr};
  if (!hp_dict(&hp, &h))
    return FORMAT_ERROR("%s: %s", path, perr->str);
  if (!h.has_descr || !h.has_order || !h.has_shape)
    return FORMAT_ERROR("%s: the header lacks '%s'", path,
                        !h.has_descr   ? "descr"
                        : !h.has_order ? "fortran_order"
                                       : "shape");

  const NpyDType *d;
  gboolean big_endian;
  if (!descr_lookup(h.descr->str, &d, &big_endian))
    return FORMAT_ERROR("%s: unsupported dtype '%s' (partir reads <f2 <f4 "
                        "<f8 |i1 <i2 <i4 <i8 |u1 <u2 <u4 |b1, and their "
                        "big-endian forms, and <V2 as ml_dtypes' bfloat16)",
                        path, h.descr->str);
  if (h.fortran_order)
    return FORMAT_ERROR("%s: fortran_order arrays are not supported; save a "
                        "C-ordered array (numpy.ascontiguousarray)",
                        path);
  if (h.rank > PARTIR_MAX_RANK)
    return FORMAT_ERROR("%s: rank %d exceeds the limit of %d", path, h.rank,
                        PARTIR_MAX_RANK);
  if (h.dim_overflow)
    return FORMAT_ERROR("%s: a dimension of the shape is too large", path);
  if (h.negative_dim < 0)
    return FORMAT_ERROR("%s: negative dimension %" G_GINT64_FORMAT
                        " in the shape",
                        path, h.negative_dim);

  g_autoptr(GString) shape = g_string_new(NULL);
  append_shape_tuple(shape, h.rank, h.dims);
  int64_t numel = 1;
  for (int k = 0; k < h.rank; k++) {
    if (h.dims[k] != 0 && numel > INT64_MAX / d->size / h.dims[k])
      return FORMAT_ERROR("%s: shape %s is too large", path, shape->str);
    numel *= h.dims[k];
  }
  if (numel > INTERP_MAX_ELEMS)
    return FORMAT_ERROR("%s: shape %s has more than %" G_GINT64_FORMAT
                        " elements, the most the interpreter takes",
                        path, shape->str, INTERP_MAX_ELEMS);
  uint64_t need = (uint64_t)numel * (uint64_t)d->size;
  gsize have = len - prefix - hlen;
  if (have < need)
    return FORMAT_ERROR(
        "%s: truncated data: shape %s of %s needs %" G_GUINT64_FORMAT
        " bytes, the file has %" G_GSIZE_FORMAT,
        path, shape->str, h.descr->str, need, have);
  if (have > need)
    return FORMAT_ERROR("%s: %" G_GUINT64_FORMAT " unexpected bytes after the "
                        "data of shape %s of %s",
                        path, (uint64_t)have - need, shape->str, h.descr->str);

  Tensor *t = tensor_new(type_tensor(d->dtype, h.rank, h.dims));
  decode_data(t, d, big_endian, b + prefix + hlen, numel);
  *out = t;
  return TRUE;
}

/* ------------------------------------------------------------ writing */

/* The descr numpy writes for 'dt'; bf16 is widened to f32. */
static const char *descr_for(DType dt) {
  switch (dt) {
  case DT_F32:
  case DT_BF16:
    return "<f4";
  case DT_F64:
    return "<f8";
  case DT_I32:
    return "<i4";
  case DT_I64:
    return "<i8";
  case DT_I1:
    return "|b1";
  case DT_F16:
    return "<f2";
  case DT_I8:
    return "|i1";
  case DT_I16:
    return "<i2";
  case DT_UI8:
    return "|u1";
  case DT_UI16:
    return "<u2";
  case DT_UI32:
    return "<u4";
  default:
    g_assert_not_reached();
  }
}

/* Serialises 't' as numpy.save would: version 1.0, the header dict in
 * numpy's key order with its spare room after the shape, padded so the
 * data starts at a multiple of 64 bytes. */
GBytes *npy_encode(const Tensor *t) {
  const Type *ty = t->type;
  int64_t n = type_numel(ty);

  g_autoptr(GString) dict = g_string_new(NULL);
  g_string_append_printf(dict,
                         "{'descr': '%s', 'fortran_order': False, "
                         "'shape': ",
                         descr_for(ty->dtype));
  append_shape_tuple(dict, ty->rank, ty->dims);
  g_string_append(dict, ", }");
  if (ty->rank > 0) {
    char first[32];
    int digits =
        g_snprintf(first, sizeof first, "%" G_GINT64_FORMAT, ty->dims[0]);
    for (int k = digits; k < NPY_GROWTH_DIGITS; k++)
      g_string_append_c(dict, ' ');
  }
  gsize hlen = dict->len + 1;
  gsize pad = NPY_ALIGN - (NPY_MAGIC_LEN + 2 + 2 + hlen) % NPY_ALIGN;
  for (gsize k = 0; k < pad; k++)
    g_string_append_c(dict, ' ');
  g_string_append_c(dict, '\n');
  g_assert(dict->len <= G_MAXUINT16);

  GByteArray *out = g_byte_array_new();
  guint8 hlen_le[2] = {(guint8)(dict->len & 0xff), (guint8)(dict->len >> 8)};
  g_byte_array_append(out, (const guint8 *)NPY_MAGIC "\x01\x00", 8);
  g_byte_array_append(out, hlen_le, 2);
  g_byte_array_append(out, (const guint8 *)dict->str, (guint)dict->len);

  if (ty->dtype == DT_BF16) {
    for (int64_t k = 0; k < n; k++) {
      float v = (float)tensor_get_float(t, k);
      uint32_t bits;
      memcpy(&bits, &v, sizeof bits);
      bits = GUINT32_TO_LE(bits);
      g_byte_array_append(out, (const guint8 *)&bits, sizeof bits);
    }
    return g_byte_array_free_to_bytes(out);
  }
  /* the elements as stored, in chunks that a guint length can hold */
  gsize at = out->len, size = tensor_type_bytes(ty);
  for (gsize done = 0; done < size;) {
    guint chunk = (guint)MIN(size - done, (gsize)1 << 30);
    g_byte_array_append(out, (const guint8 *)t->data + done, chunk);
    done += chunk;
  }
  if (G_BYTE_ORDER == G_BIG_ENDIAN)
    swap_elements(out->data + at, n, (int)dtype_storage_bytes(ty->dtype));
  return g_byte_array_free_to_bytes(out);
}
