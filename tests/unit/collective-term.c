/* collective-term.c — see collective-term.h. */
#include "collective-term.h"

const Term *collective_term(Op op, const Term *x, const char *axes,
                            int64_t size, const char *k1, int64_t v1,
                            const char *k2, int64_t v2, Diag *err) {
  g_auto(GStrv) names = g_strsplit(axes, ",", -1);
  int n = (int)g_strv_length(names);
  const char **keys = g_new0(const char *, 4);
  AttrValue *vals = g_new0(AttrValue, 4);
  int count = 0;
  keys[count] = g_intern_string("axes");
  vals[count].kind = AV_LIST;
  vals[count].count = n;
  vals[count].items = g_new0(AttrValue, (gsize)n);
  for (int i = 0; i < n; i++)
    vals[count].items[i] =
        (AttrValue){.kind = AV_SYMBOL, .sym = g_intern_string(names[i])};
  count++;
  keys[count] = g_intern_string("size");
  vals[count++] = (AttrValue){.kind = AV_INT, .i = size};
  if (k1) {
    keys[count] = g_intern_string(k1);
    vals[count++] = (AttrValue){.kind = AV_INT, .i = v1};
  }
  if (k2) {
    keys[count] = g_intern_string(k2);
    vals[count++] = (AttrValue){.kind = AV_INT, .i = v2};
  }
  return term_op(op, 1, &x, attrs_intern(count, keys, vals), NULL, err);
}
