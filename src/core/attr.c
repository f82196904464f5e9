/* attr.c — operator attribute dictionaries, interned.
 *
 * An Attrs is a dictionary sorted by key whose values are integers,
 * floats, symbols or (nested) lists.  Dictionaries are interned by
 * content so that hash-consed Terms can compare them by pointer.  Floats
 * compare by bit pattern, so 0.0 and -0.0 (and NaNs with different
 * payloads) stay distinct.
 */
#include "core/core.h"

#include <math.h>
#include <string.h>

static guint value_hash(const AttrValue *v) {
  guint h = (guint)v->kind;
  switch (v->kind) {
  case AV_INT:
    return h * 31u + (guint)(v->i ^ (v->i >> 32));
  case AV_FLOAT: {
    guint64 bits;
    memcpy(&bits, &v->f, sizeof bits);
    return h * 31u + (guint)(bits ^ (bits >> 32));
  }
  case AV_SYMBOL:
    return h * 31u + g_direct_hash(v->sym);
  case AV_LIST:
    h = h * 31u + (guint)v->count;
    for (int i = 0; i < v->count; i++)
      h = h * 1000003u + value_hash(&v->items[i]);
    return h;
  }
  g_assert_not_reached();
}

gboolean attr_value_equal(const AttrValue *a, const AttrValue *b) {
  if (a->kind != b->kind)
    return FALSE;
  switch (a->kind) {
  case AV_INT:
    return a->i == b->i;
  case AV_FLOAT:
    return memcmp(&a->f, &b->f, sizeof a->f) == 0;
  case AV_SYMBOL:
    return a->sym == b->sym;
  case AV_LIST:
    if (a->count != b->count)
      return FALSE;
    for (int i = 0; i < a->count; i++)
      if (!attr_value_equal(&a->items[i], &b->items[i]))
        return FALSE;
    return TRUE;
  }
  g_assert_not_reached();
}

void attr_value_clear(AttrValue *v) {
  if (v->kind == AV_LIST) {
    for (int i = 0; i < v->count; i++)
      attr_value_clear(&v->items[i]);
    g_free(v->items);
  }
  v->kind = AV_INT;
  v->count = 0;
  v->items = NULL;
}

AttrValue attr_value_copy(const AttrValue *v) {
  AttrValue c = *v;
  if (v->kind == AV_LIST) {
    c.items = g_new0(AttrValue, (gsize)MAX(v->count, 1));
    for (int i = 0; i < v->count; i++)
      c.items[i] = attr_value_copy(&v->items[i]);
  }
  return c;
}

static guint attrs_hash(gconstpointer p) { return ((const Attrs *)p)->hash; }

static gboolean attrs_equal(gconstpointer pa, gconstpointer pb) {
  const Attrs *a = pa, *b = pb;
  if (a->count != b->count)
    return FALSE;
  for (int i = 0; i < a->count; i++)
    if (a->keys[i] != b->keys[i] ||
        !attr_value_equal(&a->values[i], &b->values[i]))
      return FALSE;
  return TRUE;
}

static GHashTable *attrs_table(void) {
  static GHashTable *table;
  if (!table)
    table = g_hash_table_new(attrs_hash, attrs_equal);
  return table;
}

const Attrs *attrs_empty(void) {
  static const Attrs *empty;
  if (!empty)
    empty = attrs_intern(0, NULL, NULL);
  return empty;
}

/* Orders entries by key text so the printed order is stable. */
static void attrs_sort(int count, const char **keys, AttrValue *values) {
  for (int i = 1; i < count; i++)
    for (int j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
      const char *k = keys[j];
      keys[j] = keys[j - 1];
      keys[j - 1] = k;
      AttrValue v = values[j];
      values[j] = values[j - 1];
      values[j - 1] = v;
    }
}

const Attrs *attrs_intern(int count, const char **keys, AttrValue *values) {
  Attrs key = {.count = count, .keys = keys, .values = values};
  attrs_sort(count, keys, values);
  guint h = (guint)count;
  for (int i = 0; i < count; i++)
    h = h * 1000003u + g_direct_hash(keys[i]) * 31u + value_hash(&values[i]);
  key.hash = h;
  GHashTable *table = attrs_table();
  const Attrs *found = g_hash_table_lookup(table, &key);
  if (found) {
    for (int i = 0; i < count; i++)
      attr_value_clear(&values[i]);
    g_free(values);
    g_free(keys);
    return found;
  }
  Attrs *a = g_new(Attrs, 1);
  *a = key;
  g_hash_table_add(table, a);
  return a;
}

const AttrValue *attrs_get(const Attrs *a, const char *key) {
  for (int i = 0; i < a->count; i++)
    if (strcmp(a->keys[i], key) == 0)
      return &a->values[i];
  return NULL;
}

int64_t attrs_get_int(const Attrs *a, const char *key) {
  const AttrValue *v = attrs_get(a, key);
  g_assert(v && v->kind == AV_INT); /* the type rules checked it */
  return v->i;
}

void attr_append_shortest_double(GString *out, double f) {
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  for (int digits = 6; digits <= 17; digits++) {
    char fmt[8];
    g_snprintf(fmt, sizeof fmt, "%%.%dg", digits);
    g_ascii_formatd(buf, sizeof buf, fmt, f);
    if (g_ascii_strtod(buf, NULL) == f)
      break;
  }
  g_string_append(out, buf);
}

/* Prints a float so that it reads back to the same double. */
static void print_double(GString *out, double f) {
  if (isnan(f)) {
    g_string_append(out, "nan");
    return;
  }
  if (isinf(f)) {
    g_string_append(out, f < 0 ? "-inf" : "inf");
    return;
  }
  gsize from = out->len;
  attr_append_shortest_double(out, f);
  /* keep it a float literal: 2 -> 2.0 */
  if (!strpbrk(out->str + from, ".eE"))
    g_string_append(out, ".0");
}

static gboolean symbol_is_bare(const char *s) {
  if (!g_ascii_isalpha(s[0]) && s[0] != '_')
    return FALSE;
  for (const char *p = s; *p; p++)
    if (!g_ascii_isalnum(*p) && *p != '_')
      return FALSE;
  /* these words read back as numbers */
  return strcmp(s, "nan") != 0 && strcmp(s, "inf") != 0;
}

void attr_value_print(GString *out, const AttrValue *v) {
  switch (v->kind) {
  case AV_INT:
    g_string_append_printf(out, "%" G_GINT64_FORMAT, v->i);
    return;
  case AV_FLOAT:
    print_double(out, v->f);
    return;
  case AV_SYMBOL:
    if (symbol_is_bare(v->sym)) {
      g_string_append(out, v->sym);
    } else {
      lex_append_string(out, v->sym);
    }
    return;
  case AV_LIST:
    g_string_append_c(out, '[');
    for (int i = 0; i < v->count; i++) {
      if (i)
        g_string_append(out, ", ");
      attr_value_print(out, &v->items[i]);
    }
    g_string_append_c(out, ']');
    return;
  }
}

void attrs_print(GString *out, const Attrs *a) {
  if (a->count == 0)
    return;
  g_string_append(out, " {");
  for (int i = 0; i < a->count; i++) {
    g_string_append_printf(out, "%s%s = ", i ? ", " : "", a->keys[i]);
    attr_value_print(out, &a->values[i]);
  }
  g_string_append_c(out, '}');
}

gboolean attr_value_numbers(const AttrValue *v, GArray *out) {
  double d;
  switch (v->kind) {
  case AV_INT:
    d = (double)v->i;
    g_array_append_val(out, d);
    return TRUE;
  case AV_FLOAT:
    g_array_append_val(out, v->f);
    return TRUE;
  case AV_SYMBOL:
    return FALSE;
  case AV_LIST:
    for (int i = 0; i < v->count; i++)
      if (!attr_value_numbers(&v->items[i], out))
        return FALSE;
    return TRUE;
  }
  return FALSE;
}

/* A copy of dictionary 'a' with 'key' set to 'v' (added when absent); 'v' is
 * copied, not taken. */
const Attrs *attrs_with(const Attrs *a, const char *key, AttrValue v) {
  const char **keys = g_new(const char *, (gsize)a->count + 1);
  AttrValue *vals = g_new0(AttrValue, (gsize)a->count + 1);
  const char *k = g_intern_string(key);
  int n = 0;
  gboolean set = FALSE;
  for (int i = 0; i < a->count; i++) {
    keys[n] = a->keys[i];
    if (a->keys[i] == k) {
      vals[n++] = attr_value_copy(&v);
      set = TRUE;
    } else {
      vals[n++] = attr_value_copy(&a->values[i]);
    }
  }
  if (!set) {
    keys[n] = k;
    vals[n++] = attr_value_copy(&v);
  }
  return attrs_intern(n, keys, vals);
}

AttrValue attr_new_int(int64_t i) {
  return (AttrValue){.kind = AV_INT, .i = i};
}

AttrValue attr_new_float(double f) {
  return (AttrValue){.kind = AV_FLOAT, .f = f};
}

AttrValue attr_new_symbol(const char *s) {
  return (AttrValue){.kind = AV_SYMBOL, .sym = g_intern_string(s)};
}

AttrValue attr_new_ints(int n, const int64_t *v) {
  AttrValue l = {.kind = AV_LIST, .count = n};
  l.items = g_new0(AttrValue, (gsize)MAX(n, 1));
  for (int i = 0; i < n; i++)
    l.items[i] = attr_new_int(v[i]);
  return l;
}

const Attrs *attrs_build(int n, const char *const *keys, AttrValue *values) {
  const char **k = g_new(const char *, (gsize)MAX(n, 1));
  AttrValue *v = g_new0(AttrValue, (gsize)MAX(n, 1));
  for (int i = 0; i < n; i++) {
    k[i] = g_intern_string(keys[i]);
    v[i] = values[i];
  }
  return attrs_intern(n, k, v);
}

const Attrs *attrs_ints(const char *key, int n, const int64_t *v) {
  AttrValue a = attr_new_ints(n, v);
  return attrs_build(1, (const char *[]){key}, &a);
}
