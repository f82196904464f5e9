/* hardware.c — hardware descriptions: the machine the cost model prices.
 *
 * Hardware descriptions are GKeyFile text (hw/NAME.hw): a [hardware] group
 * and optional [axis NAME] groups; hw_set changes one figure ("what if
 * the links were twice as fast": link_bw=2x).  A Hardware is a plain
 * value: copy it to ask "what if" and keep the original.
 */
#include "spmd/spmd.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* ------------------------------------------------------- hardware keys */

typedef struct HwKey {
  const char *key;
  size_t offset; /* of the double in Hardware */
  gboolean zero_ok;
  const char *unit;
  gboolean optional; /* may be left out: 0, the term is not modelled */
} HwKey;

static const HwKey hw_keys[] = {
    {"peak_flops_f32", offsetof(Hardware, peak_flops_f32), FALSE, "FLOP/s",
     FALSE},
    {"peak_flops_bf16", offsetof(Hardware, peak_flops_bf16), FALSE, "FLOP/s",
     FALSE},
    {"peak_flops_f64", offsetof(Hardware, peak_flops_f64), FALSE, "FLOP/s",
     FALSE},
    {"memory_bytes", offsetof(Hardware, memory_bytes), FALSE, "bytes", FALSE},
    {"link_bw", offsetof(Hardware, link_bw), FALSE, "bytes/s", FALSE},
    {"link_latency", offsetof(Hardware, link_latency), TRUE, "seconds", FALSE},
    {"mem_bw", offsetof(Hardware, mem_bw), TRUE, "bytes/s", TRUE},
    {"kernel_overhead", offsetof(Hardware, kernel_overhead), TRUE, "seconds",
     TRUE},
    {"gemm_mr", offsetof(Hardware, gemm_mr), TRUE, "rows", TRUE},
    {"gemm_nr", offsetof(Hardware, gemm_nr), TRUE, "columns", TRUE},
    {"product_overhead", offsetof(Hardware, product_overhead), TRUE, "seconds",
     TRUE},
    {"cache_bytes", offsetof(Hardware, cache_bytes), TRUE, "bytes", TRUE},
    {"cache_bw", offsetof(Hardware, cache_bw), TRUE, "bytes/s", TRUE},
    {"step_overhead", offsetof(Hardware, step_overhead), TRUE, "seconds", TRUE},
};

static const HwKey axis_keys[] = {
    {"link_bw", offsetof(HwAxis, link_bw), FALSE, "bytes/s", FALSE},
    {"link_latency", offsetof(HwAxis, link_latency), TRUE, "seconds", FALSE},
};

static const HwKey *find_key(const HwKey *keys, gsize n, const char *key) {
  for (gsize i = 0; i < n; i++)
    if (strcmp(keys[i].key, key) == 0)
      return &keys[i];
  return NULL;
}

static double *field(void *base, const HwKey *k) {
  return (double *)((char *)base + k->offset);
}

/* What a figure may be: positive (or zero when 'zero_ok'), between
 * HW_FIGURE_MIN and HW_FIGURE_MAX: the model divides by them and
 * multiplies them by counts up to 2^60, and a subnormal FLOP/s or a
 * latency of 1e300 s makes every time infinite.  The register block is
 * a whole number of rows and columns. */
#define HW_FIGURE_MIN 1e-30
#define HW_FIGURE_MAX 1e30
#define HW_BLOCK_MAX 1024

/* Whether 'k' is a register block's size (keys are told apart by name:
 * an [axis] key's offset is into another struct). */
static gboolean is_block(const HwKey *k) {
  return strcmp(k->key, "gemm_mr") == 0 || strcmp(k->key, "gemm_nr") == 0;
}

static gboolean figure_ok(const HwKey *k, double v) {
  if (v == 0)
    return k->zero_ok;
  if (is_block(k))
    return v >= 1 && v <= HW_BLOCK_MAX && v == floor(v);
  return v >= HW_FIGURE_MIN && v <= HW_FIGURE_MAX;
}

/* What 'k' may be, in words, for a message. */
static char *figure_range(const HwKey *k) {
  if (is_block(k))
    return g_strdup_printf("a whole number of %s, 1 to %d%s", k->unit,
                           HW_BLOCK_MAX, k->zero_ok ? ", or 0" : "");
  return g_strdup_printf(
      "%s number (%s) from %g to %g%s", k->zero_ok ? "a" : "a positive",
      k->unit, HW_FIGURE_MIN, HW_FIGURE_MAX, k->zero_ok ? ", or 0" : "");
}

/* Parses a finite number, positive (or zero when 'zero_ok'); the whole
 * of 'text' but surrounding blanks. */
static gboolean parse_number(const char *text, gboolean zero_ok, double *out) {
  while (g_ascii_isspace(*text))
    text++;
  if (!*text)
    return FALSE;
  char *end;
  double v = g_ascii_strtod(text, &end);
  while (g_ascii_isspace(*end))
    end++;
  if (end == text || *end || !isfinite(v) || v < 0 || (v == 0 && !zero_ok))
    return FALSE;
  *out = v;
  return TRUE;
}

/* The per-axis entry for 'axis', made from the defaults when 'create'. */
static HwAxis *axis_entry(Hardware *hw, const char *axis, gboolean create) {
  const char *name = g_intern_string(axis);
  for (int i = 0; i < hw->naxes; i++)
    if (hw->axes[i].name == name)
      return &hw->axes[i];
  if (!create || hw->naxes == HW_MAX_AXES)
    return NULL;
  HwAxis *a = &hw->axes[hw->naxes++];
  *a = (HwAxis){name, hw->link_bw, hw->link_latency};
  return a;
}

void hw_link(const Hardware *hw, const char *axis, double *bw,
             double *latency) {
  /* compared as text, not interned: the cost model asks for every
   * collective, and interning takes a lock and a hash */
  *bw = hw->link_bw;
  *latency = hw->link_latency;
  for (int i = 0; i < hw->naxes; i++)
    if (hw->axes[i].name == axis || strcmp(hw->axes[i].name, axis) == 0) {
      *bw = hw->axes[i].link_bw;
      *latency = hw->axes[i].link_latency;
    }
}

double hw_peak_flops(const Hardware *hw, DType dt) {
  switch (dt) {
  case DT_BF16:
  case DT_F16: /* the same half-precision units */
    return hw->peak_flops_bf16;
  case DT_F64:
    return hw->peak_flops_f64;
  default:
    return hw->peak_flops_f32;
  }
}

static char *key_list(const HwKey *keys, gsize n) {
  GString *s = g_string_new(NULL);
  for (gsize i = 0; i < n; i++)
    g_string_append_printf(s, "%s%s", i ? ", " : "", keys[i].key);
  return g_string_free(s, FALSE);
}

/* ------------------------------------------------------ hardware files */

/* A key as written: its group, its name, where it starts. */
typedef struct KeyLine {
  char *group, *key;
  Loc at;
} KeyLine;

static void key_line_clear(gpointer p) {
  KeyLine *k = p;
  g_free(k->group);
  g_free(k->key);
}

/* Every 'key = value' line of 'src' in order (GKeyFile gives keys, not
 * where they are, and merges a key written twice). */
static GArray *key_lines(const Source *src) {
  GArray *out = g_array_new(FALSE, FALSE, sizeof(KeyLine));
  g_array_set_clear_func(out, key_line_clear);
  g_autofree char *group = g_strdup("");
  int line = 1;
  for (const char *p = src->text; *p; line++) {
    const char *end = strchr(p, '\n');
    gsize n = end ? (gsize)(end - p) : strlen(p);
    const char *q = p;
    while (q < p + n && (*q == ' ' || *q == '\t'))
      q++;
    const char *eq = memchr(q, '=', (gsize)(p + n - q));
    if (*q == '[') {
      const char *close = memchr(q, ']', (gsize)(p + n - q));
      g_free(group);
      group = close ? g_strndup(q + 1, (gsize)(close - q - 1)) : g_strdup("");
    } else if (*q != '#' && eq) {
      const char *k = eq;
      while (k > q && (k[-1] == ' ' || k[-1] == '\t'))
        k--;
      KeyLine kl = {g_strdup(group),
                    g_strndup(q, (gsize)(k - q)),
                    {line, (int)(q - p) + 1, (gsize)(q - src->text)}};
      g_array_append_val(out, kl);
    }
    if (!end)
      break;
    p = end + 1;
  }
  return out;
}

/* Fails the load with "path:line:col: error: message", the line and a
 * caret under 'at'. */
static gboolean fail_at(GError **error, const Source *src, Loc at,
                        const char *fmt, ...) G_GNUC_PRINTF(4, 5);
static gboolean fail_at(GError **error, const Source *src, Loc at,
                        const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_autoptr(Diag) d = diag_new(src);
  diag_error(d, at, "%s", msg);
  g_autofree char *text = g_strdup(diag_text(d));
  g_strchomp(text);
  g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_FORMAT, "%s", text);
  return FALSE;
}

/* fail_at key 'key' of 'group' (its first line there), or at the file's
 * start when 'key' is NULL or cannot be found. */
static gboolean hw_fail(GError **error, const Source *src, const char *group,
                        const char *key, const char *fmt, ...)
    G_GNUC_PRINTF(5, 6);
static gboolean hw_fail(GError **error, const Source *src, const char *group,
                        const char *key, const char *fmt, ...) {
  Loc at = {1, 1, 0};
  g_autoptr(GArray) lines = key ? key_lines(src) : NULL;
  for (guint i = 0; lines && i < lines->len; i++) {
    const KeyLine *k = &g_array_index(lines, KeyLine, i);
    if (strcmp(k->group, group) == 0 && strcmp(k->key, key) == 0) {
      at = k->at;
      break;
    }
  }
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  return fail_at(error, src, at, "%s", msg);
}

/* A key written twice in one group (GKeyFile keeps the last silently):
 * refused at its second line. */
static gboolean no_key_twice(const Source *src, GError **error) {
  g_autoptr(GArray) lines = key_lines(src);
  g_autoptr(GHashTable) seen =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; i < lines->len; i++) {
    const KeyLine *k = &g_array_index(lines, KeyLine, i);
    if (!g_hash_table_add(seen, g_strdup_printf("%s\n%s", k->group, k->key)))
      return fail_at(error, src, k->at, "[%s] %s is given twice", k->group,
                     k->key);
  }
  return TRUE;
}

/* Reads the keys of 'group' into the doubles of 'base' ('seen' marks the
 * keys present). */
static gboolean read_group(GKeyFile *kf, const Source *src, const char *group,
                           const HwKey *keys, gsize nkeys, void *base,
                           gboolean *seen, gboolean allow_name,
                           GError **error) {
  g_auto(GStrv) names = g_key_file_get_keys(kf, group, NULL, NULL);
  for (char **k = names; k && *k; k++) {
    if (allow_name && strcmp(*k, "name") == 0)
      continue;
    const HwKey *key = find_key(keys, nkeys, *k);
    if (!key) {
      g_autofree char *known = key_list(keys, nkeys);
      return hw_fail(error, src, group, *k, "[%s] has no key '%s' (keys: %s%s)",
                     group, *k, allow_name ? "name, " : "", known);
    }
    g_autofree char *text = g_key_file_get_value(kf, group, *k, NULL);
    double *v = field(base, key);
    if (!text || !parse_number(text, key->zero_ok, v) || !figure_ok(key, *v)) {
      g_autofree char *range = figure_range(key);
      return hw_fail(error, src, group, *k, "[%s] %s = '%s': expected %s",
                     group, *k, text ? text : "", range);
    }
    seen[key - keys] = TRUE;
  }
  return TRUE;
}

static gboolean load_file(const char *path, Hardware *out, GError **error) {
  Source *loaded = NULL;
  if (!source_load(path, &loaded, error))
    return FALSE;
  g_autoptr(Source) src = loaded;
  g_autoptr(GKeyFile) kf = g_key_file_new();
  GError *local = NULL;
  if (!g_key_file_load_from_data(kf, src->text, src->len, G_KEY_FILE_NONE,
                                 &local)) {
    g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_FORMAT, "%s: %s", path,
                local->message);
    g_error_free(local);
    return FALSE;
  }
  if (!no_key_twice(src, error))
    return FALSE;
  Hardware hw = {0};
  if (!g_key_file_has_group(kf, "hardware"))
    return hw_fail(error, src, NULL, NULL, "no [hardware] group");
  gboolean seen[G_N_ELEMENTS(hw_keys)] = {0};
  if (!read_group(kf, src, "hardware", hw_keys, G_N_ELEMENTS(hw_keys), &hw,
                  seen, TRUE, error))
    return FALSE;
  for (gsize i = 0; i < G_N_ELEMENTS(hw_keys); i++)
    if (!seen[i] && !hw_keys[i].optional)
      return hw_fail(error, src, NULL, NULL, "[hardware] needs key '%s' (%s)",
                     hw_keys[i].key, hw_keys[i].unit);
  g_autofree char *name = g_key_file_get_string(kf, "hardware", "name", NULL);
  if (!name || !*name) {
    g_free(name);
    g_autofree char *base = g_path_get_basename(path);
    if (g_str_has_suffix(base, ".hw"))
      base[strlen(base) - 3] = '\0';
    name = g_strdup(base);
  }
  hw.name = g_intern_string(name);
  hw.source = g_intern_string(path);

  g_auto(GStrv) groups = g_key_file_get_groups(kf, NULL);
  for (char **g = groups; *g; g++) {
    if (strcmp(*g, "hardware") == 0)
      continue;
    if (!g_str_has_prefix(*g, "axis ")) {
      g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_FORMAT,
                  "%s: unknown group [%s] (expected [hardware] and "
                  "[axis NAME])",
                  path, *g);
      return FALSE;
    }
    g_autofree char *axis = g_strstrip(g_strdup(*g + 5));
    if (!mesh_axis_name_ok(axis)) {
      g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_FORMAT,
                  "%s: [%s]: an axis name is letters, digits or '_'", path, *g);
      return FALSE;
    }
    HwAxis *a = axis_entry(&hw, axis, TRUE);
    if (!a) {
      g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_FORMAT,
                  "%s: [%s]: more than %d axis groups", path, *g, HW_MAX_AXES);
      return FALSE;
    }
    gboolean axis_seen[G_N_ELEMENTS(axis_keys)] = {0};
    if (!read_group(kf, src, *g, axis_keys, G_N_ELEMENTS(axis_keys), a,
                    axis_seen, FALSE, error))
      return FALSE;
  }
  *out = hw;
  return TRUE;
}

char **hw_search_path(void) {
  return partir_search_path("PARTIR_HW", PARTIR_DATADIR "/hw");
}

/* g_ptr_array_sort passes pointers to the elements, not the strings. */
static int compare_names(gconstpointer a, gconstpointer b) {
  return g_ascii_strcasecmp(*(const char *const *)a, *(const char *const *)b);
}

/* "a, b, c": the NAME of every NAME.hw in 'dirs', sorted, once each. */
static char *known_names(char **dirs) {
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  for (char **d = dirs; *d; d++) {
    g_autoptr(GDir) dir = g_dir_open(*d, 0, NULL);
    const char *entry;
    while (dir && (entry = g_dir_read_name(dir)))
      if (g_str_has_suffix(entry, ".hw") && strlen(entry) > 3)
        g_ptr_array_add(names, g_strndup(entry, strlen(entry) - 3));
  }
  g_ptr_array_sort(names, compare_names);
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < names->len; i++) {
    const char *n = g_ptr_array_index(names, i);
    if (i > 0 && strcmp(n, g_ptr_array_index(names, i - 1)) == 0)
      continue;
    g_string_append_printf(s, "%s%s", s->len ? ", " : "", n);
  }
  return g_string_free(s, FALSE);
}

gboolean hw_is_path(const char *name_or_path) {
  return strchr(name_or_path, '/') || g_str_has_suffix(name_or_path, ".hw");
}

gboolean hw_load(const char *name_or_path, Hardware *out, GError **error) {
  if (hw_is_path(name_or_path))
    return load_file(name_or_path, out, error);
  g_auto(GStrv) dirs = hw_search_path();
  for (char **d = dirs; *d; d++) {
    g_autofree char *file = g_strconcat(name_or_path, ".hw", NULL);
    g_autofree char *path = g_build_filename(*d, file, NULL);
    if (g_file_test(path, G_FILE_TEST_IS_REGULAR))
      return load_file(path, out, error);
  }
  g_autofree char *where = g_strjoinv(", ", dirs);
  g_autofree char *known = known_names(dirs);
  g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_IO,
              "hardware '%s' not found: no %s.hw in %s (set $PARTIR_HW or "
              "give a path)%s%s",
              name_or_path, name_or_path, *where ? where : "(no directory)",
              *known ? "; known: " : "", known);
  return FALSE;
}

/* Sets or scales (when 'scale') figure 'k' at 'base' (a Hardware, or the
 * HwAxis 'axis'); FALSE with the reason when the result is not finite
 * and positive (or zero, where 'k' allows it): a factor can overflow to
 * inf or underflow to 0. */
static gboolean apply(void *base, const char *axis, const HwKey *k, double x,
                      gboolean scale, const char *assignment, Diag *diag) {
  double *v = field(base, k);
  double r = scale ? *v * x : x;
  if (!isfinite(r) || !figure_ok(k, r)) {
    g_autoptr(GString) shown = g_string_new(NULL);
    attr_append_shortest_double(shown, r);
    g_autofree char *range = figure_range(k);
    diag_reason(diag, "hardware setting '%s': %s%s%s%s would be %s %s, not %s",
                assignment, axis ? "axis." : "", axis ? axis : "",
                axis ? "." : "", k->key, shown->str, k->unit, range);
    return FALSE;
  }
  *v = r;
  return TRUE;
}

gboolean hw_set(Hardware *hw, const char *assignment, Diag *diag) {
  const char *eq = strchr(assignment, '=');
  g_autofree char *key = g_strstrip(g_strndup(
      assignment, eq ? (gsize)(eq - assignment) : strlen(assignment)));
  g_autofree char *value = g_strstrip(g_strdup(eq ? eq + 1 : ""));
  gboolean scale = g_str_has_suffix(value, "x") || g_str_has_suffix(value, "X");
  if (scale)
    value[strlen(value) - 1] = '\0';

  /* which figure: a [hardware] key, peak_flops, or axis.NAME.KEY */
  const HwKey *hk = find_key(hw_keys, G_N_ELEMENTS(hw_keys), key);
  const HwKey *ak = NULL;
  g_autofree char *axis = NULL;
  gboolean all_peaks = strcmp(key, "peak_flops") == 0;
  if (g_str_has_prefix(key, "axis.")) {
    const char *dot = strrchr(key, '.');
    if (dot > key + 5) {
      axis = g_strndup(key + 5, (gsize)(dot - key - 5));
      ak = find_key(axis_keys, G_N_ELEMENTS(axis_keys), dot + 1);
      if (!mesh_axis_name_ok(axis))
        ak = NULL;
    }
  }
  if (!eq || (!hk && !ak && !all_peaks)) {
    g_autofree char *known = key_list(hw_keys, G_N_ELEMENTS(hw_keys));
    diag_reason(diag,
                "hardware setting '%s': expected KEY=VALUE or KEY=Nx with KEY "
                "one of %s, peak_flops, axis.NAME.link_bw, "
                "axis.NAME.link_latency",
                assignment, known);
    return FALSE;
  }
  gboolean zero_ok = (hk && hk->zero_ok) || (ak && ak->zero_ok);
  double x;
  if (!parse_number(value, zero_ok, &x)) {
    diag_reason(diag, "hardware setting '%s': expected a %s number%s",
                assignment, zero_ok ? "non-negative" : "positive",
                scale ? " before 'x'" : " or a factor such as 2x");
    return FALSE;
  }
  /* on a copy: a figure that would overflow leaves 'hw' as it was */
  Hardware h = *hw;
  gboolean ok = TRUE;
  if (ak) {
    HwAxis *a = axis_entry(&h, axis, TRUE);
    if (!a) {
      diag_reason(diag, "hardware setting '%s': more than %d axes", assignment,
                  HW_MAX_AXES);
      return FALSE;
    }
    ok = apply(a, a->name, ak, x, scale, assignment, diag);
  } else if (all_peaks) {
    for (gsize i = 0; i < G_N_ELEMENTS(hw_keys) && ok; i++)
      if (g_str_has_prefix(hw_keys[i].key, "peak_flops_"))
        ok = apply(&h, NULL, &hw_keys[i], x, scale, assignment, diag);
  } else {
    ok = apply(&h, NULL, hk, x, scale, assignment, diag);
    /* the default link and every axis's: "the whole mesh is 2x faster" */
    const HwKey *same = find_key(axis_keys, G_N_ELEMENTS(axis_keys), hk->key);
    for (int i = 0; i < h.naxes && ok && same; i++)
      ok = apply(&h.axes[i], h.axes[i].name, same, x, scale, assignment, diag);
  }
  if (!ok)
    return FALSE;
  g_autofree char *change =
      g_strdup_printf("%s=%s%s", key, value, scale ? "x" : "");
  g_autofree char *changes = hw->changes[0]
                                 ? g_strconcat(hw->changes, ", ", change, NULL)
                                 : g_strdup(change);
  if (strlen(changes) >= sizeof h.changes) {
    diag_reason(diag,
                "hardware setting '%s': the settings would take more than %d "
                "characters to record",
                assignment, HW_CHANGES_MAX - 1);
    return FALSE;
  }
  g_strlcpy(h.changes, changes, sizeof h.changes);
  *hw = h;
  return TRUE;
}

/* The name as GKeyFile writes a string, so that hw_load reads back the
 * same name (g_strescape's octal escapes are no key-file escapes). */
static char *keyfile_string(const char *s) {
  g_autoptr(GKeyFile) kf = g_key_file_new();
  g_key_file_set_string(kf, "hardware", "name", s);
  return g_key_file_get_value(kf, "hardware", "name", NULL);
}

void hw_print(GString *out, const Hardware *hw) {
  g_autofree char *name = keyfile_string(hw->name ? hw->name : "");
  g_string_append_printf(out, "[hardware]\nname=%s\n", name);
  for (gsize i = 0; i < G_N_ELEMENTS(hw_keys); i++) {
    if (hw_keys[i].optional && *field((void *)hw, &hw_keys[i]) == 0)
      continue; /* not modelled: as the file that left it out */
    g_string_append_printf(out, "%s=", hw_keys[i].key);
    attr_append_shortest_double(out, *field((void *)hw, &hw_keys[i]));
    g_string_append_c(out, '\n');
  }
  for (int i = 0; i < hw->naxes; i++) {
    g_string_append_printf(out, "\n[axis %s]\n", hw->axes[i].name);
    for (gsize k = 0; k < G_N_ELEMENTS(axis_keys); k++) {
      g_string_append_printf(out, "%s=", axis_keys[k].key);
      attr_append_shortest_double(out,
                                  *field((void *)&hw->axes[i], &axis_keys[k]));
      g_string_append_c(out, '\n');
    }
  }
}
