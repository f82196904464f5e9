/* sharding.c — shardings as Shardy and GSPMD write them, in one
 * representation.
 *
 * A Sharding (import.h) says, for each dimension of a value, which mesh
 * axes split it, major first.  That is Shardy's own model, so its text
 * maps straight in:
 *
 *   sdy.mesh @mesh = <["x"=2, "y"=4]>
 *   #sdy.sharding<@mesh, [{"x"}, {"y", ?}p1, {}], replicated={"z"}>
 *
 * GSPMD (the 'mhlo.sharding' strings of older JAX and of XLA) writes the
 * same thing as a grid of device ids instead: '{devices=[4,2]<=[2,4]
 * T(1,0)}' tiles dimension 0 four ways and dimension 1 two ways, tile
 * (i, j) on the device at (i, j) of the iota [2,4] transposed.  Device d
 * of a mesh sits at the row-major coordinates of d over the mesh's axes,
 * so a grid is a split over mesh axes when, along each grid dimension,
 * the devices step through the coordinates of some axes (minor first):
 * sharding_from_gspmd finds those axes from the steps and then checks
 * the whole grid against them.  sharding_print_gspmd goes back, in the
 * canonical form XLA prints.
 *
 * The text of an attribute is read here, not by the reader (syntax.c
 * keeps the extent of what it reads past), so that a file whose
 * shardings are ignored is never refused for them.  The scanner is
 * small: strings, integers, words and punctuation, every error at its
 * position in the file.
 */
#include "import/import.h"

#include <stdlib.h>
#include <string.h>

/* The most devices a GSPMD grid may list (its tiles are expanded). */
#define GSPMD_MAX_DEVICES ((int64_t)1 << 20)

/* ------------------------------------------------------------- scanning */

typedef struct Scan {
  const ShardingText *t;
  gsize pos;
  gboolean failed;
} Scan;

/* The position of byte 'pos' of the text in the file. */
static Loc scan_loc(const Scan *s, gsize pos) {
  Loc l = s->t->at;
  if (!s->t->exact)
    return l;
  for (gsize i = 0; i < pos && i < s->t->len; i++) {
    l.offset++;
    if (s->t->text[i] == '\n') {
      l.line++;
      l.col = 1;
    } else {
      l.col++;
    }
  }
  return l;
}

static gboolean scan_fail(Scan *s, gsize pos, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);
static gboolean scan_fail(Scan *s, gsize pos, const char *fmt, ...) {
  if (s->failed)
    return FALSE;
  va_list ap;
  va_start(ap, fmt);
  diag_verror(s->t->diag, scan_loc(s, pos), fmt, ap);
  va_end(ap);
  s->failed = TRUE;
  return FALSE;
}

static void skip_space(Scan *s) {
  while (s->pos < s->t->len && g_ascii_isspace(s->t->text[s->pos]))
    s->pos++;
}

/* The next byte after spaces (0 at the end). */
static char peek(Scan *s) {
  skip_space(s);
  return s->pos < s->t->len ? s->t->text[s->pos] : '\0';
}

static gboolean accept(Scan *s, char c) {
  if (s->failed || peek(s) != c)
    return FALSE;
  s->pos++;
  return TRUE;
}

/* What is at the current position, for "expected X, got Y". */
static char *scan_got(Scan *s) {
  if (peek(s) == '\0')
    return g_strdup("the end of the attribute");
  const char *p = s->t->text + s->pos;
  const char *close =
      p[0] == '"' ? memchr(p + 1, '"', s->t->len - s->pos - 1) : NULL;
  if (close && close - p < 24)
    return g_strdup_printf("'%.*s'", (int)(close - p + 1), p);
  gsize n = 1;
  while (s->pos + n < s->t->len && n < 12 &&
         (g_ascii_isalnum(s->t->text[s->pos + n]) ||
          s->t->text[s->pos + n] == '_'))
    n++;
  return g_strdup_printf("'%.*s'", (int)n, s->t->text + s->pos);
}

static gboolean expected(Scan *s, const char *what) {
  g_autofree char *got = scan_got(s);
  return scan_fail(s, s->pos, "expected %s, got %s", what, got);
}

static gboolean expect(Scan *s, char c) {
  if (accept(s, c))
    return TRUE;
  char what[8] = {'\'', c, '\'', '\0'};
  return expected(s, what);
}

static gboolean is_word_byte(char c) {
  return g_ascii_isalnum(c) || c == '_' || c == '.' || c == '$' || c == '-';
}

/* Consumes the word 'w' (not a prefix of a longer one). */
static gboolean accept_word(Scan *s, const char *w) {
  gsize n = strlen(w);
  if (s->failed || peek(s) == '\0' || s->pos + n > s->t->len ||
      memcmp(s->t->text + s->pos, w, n) != 0 ||
      (s->pos + n < s->t->len && is_word_byte(s->t->text[s->pos + n])))
    return FALSE;
  s->pos += n;
  return TRUE;
}

/* A word (letters, digits, '_', '.', '$', '-'): a new string, or NULL. */
static char *read_word(Scan *s) {
  if (s->failed || !is_word_byte(peek(s)))
    return NULL;
  gsize from = s->pos;
  while (s->pos < s->t->len && is_word_byte(s->t->text[s->pos]))
    s->pos++;
  return g_strndup(s->t->text + from, s->pos - from);
}

/* A non-negative integer no larger than 'max'. */
static gboolean read_int(Scan *s, int64_t max, int64_t *out, const char *what) {
  if (!g_ascii_isdigit(peek(s)))
    return expected(s, what);
  gsize from = s->pos;
  int64_t v = 0;
  while (s->pos < s->t->len && g_ascii_isdigit(s->t->text[s->pos])) {
    int d = s->t->text[s->pos++] - '0';
    if (v > (max - d) / 10) {
      while (s->pos < s->t->len && g_ascii_isdigit(s->t->text[s->pos]))
        s->pos++;
      return scan_fail(s, from, "%s %.*s is more than %" G_GINT64_FORMAT, what,
                       (int)(s->pos - from), s->t->text + from, max);
    }
    v = v * 10 + d;
  }
  *out = v;
  return TRUE;
}

/* '[' INT, ... ']' into 'out' (at most 'max'); their count, or -1. */
static int read_int_list(Scan *s, int64_t *out, int max, int64_t vmax,
                         const char *what) {
  if (!expect(s, '['))
    return -1;
  int n = 0;
  if (accept(s, ']'))
    return 0;
  do {
    if (n == max) {
      scan_fail(s, s->pos, "more than %d %ss", max, what);
      return -1;
    }
    if (!read_int(s, vmax, &out[n++], what))
      return -1;
  } while (accept(s, ','));
  return expect(s, ']') ? n : -1;
}

/* A string "..." with MLIR's escapes (\" \\ \n \t \XX): a new string. */
static char *read_string(Scan *s, const char *what) {
  if (peek(s) != '"') {
    expected(s, what);
    return NULL;
  }
  gsize from = s->pos++;
  GString *out = g_string_new(NULL);
  while (s->pos < s->t->len && s->t->text[s->pos] != '"') {
    char c = s->t->text[s->pos++];
    if (c == '\\' && s->pos < s->t->len) {
      char e = s->t->text[s->pos++];
      if (e == 'n')
        c = '\n';
      else if (e == 't')
        c = '\t';
      else if (g_ascii_isxdigit(e) && s->pos < s->t->len &&
               g_ascii_isxdigit(s->t->text[s->pos]))
        c = (char)(g_ascii_xdigit_value(e) * 16 +
                   g_ascii_xdigit_value(s->t->text[s->pos++]));
      else
        c = e;
    }
    g_string_append_c(out, c);
  }
  if (s->pos >= s->t->len) {
    g_string_free(out, TRUE);
    scan_fail(s, from, "a string without its closing '\"'");
    return NULL;
  }
  s->pos++;
  return g_string_free(out, FALSE);
}

/* Skips a balanced '{...}' (GSPMD metadata), strings included. */
static gboolean skip_braces(Scan *s) {
  gsize from = s->pos;
  int depth = 0;
  while (s->pos < s->t->len) {
    char c = s->t->text[s->pos];
    if (c == '"') {
      g_autofree char *str = read_string(s, "a string");
      if (!str)
        return FALSE;
      continue;
    }
    s->pos++;
    if (c == '{')
      depth++;
    else if (c == '}' && --depth == 0)
      return TRUE;
  }
  return scan_fail(s, from, "'}' expected (to close this '{')");
}

/* The end of the text: nothing after what was read but spaces. */
static gboolean expect_end(Scan *s) {
  if (peek(s) == '\0')
    return TRUE;
  g_autofree char *got = scan_got(s);
  return scan_fail(s, s->pos, "unexpected %s after the attribute", got);
}

ShardingText sharding_text_of(const Source *src, const HloAttr *a, Diag *diag) {
  ShardingText t = {.src = src, .at = a->loc, .diag = diag};
  if (a->kind == HA_OPAQUE && a->end > a->loc.offset && a->end <= src->len) {
    t.text = src->text + a->loc.offset;
    t.len = a->end - a->loc.offset;
    t.exact = TRUE;
    return t;
  }
  t.text = a->s ? a->s : "";
  t.len = strlen(t.text);
  /* a string whose bytes are the file's (no escapes): errors point
   * inside it, past its opening quote */
  gsize o = a->loc.offset;
  if (a->kind == HA_STRING && o + 1 + t.len < src->len && src->text[o] == '"' &&
      memcmp(src->text + o + 1, t.text, t.len) == 0 &&
      src->text[o + 1 + t.len] == '"') {
    t.exact = TRUE;
    t.at.offset++;
    t.at.col++;
  }
  return t;
}

/* ---------------------------------------------------------------- meshes */

/* An axis name as Shardy writes it, interned: one partir can spell. */
static const char *read_axis_name(Scan *s, gsize *at) {
  skip_space(s);
  *at = s->pos;
  g_autofree char *name = read_string(s, "an axis name (\"x\")");
  if (!name)
    return NULL;
  if (!mesh_axis_name_ok(name)) {
    scan_fail(s, *at,
              "axis name \"%s\": partir's axis names are letters, digits "
              "and '_'",
              name);
    return NULL;
  }
  return g_intern_string(name);
}

/* '[' "x"=2, ... ']' [',' device_ids=[...]] (after the '<'). */
static gboolean read_mesh_body(Scan *s, Mesh *out, gboolean *reordered,
                               Loc *reordered_at) {
  memset(out, 0, sizeof *out);
  *reordered = FALSE;
  if (!expect(s, '['))
    return FALSE;
  if (!accept(s, ']')) {
    do {
      gsize at;
      const char *name = read_axis_name(s, &at);
      if (!name)
        return FALSE;
      for (int i = 0; i < out->naxes; i++)
        if (out->names[i] == name)
          return scan_fail(s, at, "axis \"%s\" is in the mesh twice", name);
      if (out->naxes == MESH_MAX_AXES)
        return scan_fail(s, at, "a mesh of more than %d axes", MESH_MAX_AXES);
      int64_t size;
      if (!expect(s, '=') ||
          !read_int(s, MESH_MAX_AXIS_SIZE, &size, "an axis size"))
        return FALSE;
      if (size < 1)
        return scan_fail(s, at, "axis \"%s\" has size 0", name);
      out->names[out->naxes] = name;
      out->sizes[out->naxes++] = size;
    } while (accept(s, ','));
    if (!expect(s, ']'))
      return FALSE;
  }
  int64_t n = mesh_devices(out);
  if (n > GSPMD_MAX_DEVICES)
    return scan_fail(s, 0, "a mesh of more than %" G_GINT64_FORMAT " devices",
                     GSPMD_MAX_DEVICES);
  if (!accept(s, ','))
    return TRUE;
  skip_space(s);
  gsize at = s->pos;
  if (!accept_word(s, "device_ids"))
    return expected(s, "'device_ids'");
  if (!expect(s, '='))
    return FALSE;
  g_autofree int64_t *ids = g_new(int64_t, n);
  int count = read_int_list(s, ids, (int)n, G_MAXINT64, "device id");
  if (count < 0)
    return FALSE;
  if (count != n)
    return scan_fail(
        s, at, "device_ids lists %d devices but the mesh has %" G_GINT64_FORMAT,
        count, n);
  for (int64_t i = 0; i < n; i++)
    if (ids[i] != i) {
      *reordered = TRUE;
      *reordered_at = scan_loc(s, at);
    }
  return TRUE;
}

/* 'prefix' (a '#dialect.name' the text may start with), then '<'. */
static gboolean open_angle(Scan *s, const char *prefix) {
  skip_space(s);
  if (peek(s) == '#') {
    gsize at = s->pos++;
    if (!accept_word(s, prefix + 1)) {
      skip_space(s);
      s->pos = at;
      g_autofree char *got = scan_got(s);
      return scan_fail(s, at, "expected %s<...>, got %s", prefix, got);
    }
  }
  return expect(s, '<');
}

gboolean sharding_read_mesh(const ShardingText *t, Mesh *out,
                            gboolean *reordered, Loc *reordered_at) {
  Scan s = {.t = t};
  return open_angle(&s, "#sdy.mesh") &&
         read_mesh_body(&s, out, reordered, reordered_at) && expect(&s, '>') &&
         expect_end(&s);
}

/* -------------------------------------------------------------- Shardy */

/* One dimension: '{' ["x", ...] [?] '}' ['p' N]. */
static gboolean read_dim(Scan *s, ShardingDim *d, const Sharding *sofar,
                         int dim) {
  *d = (ShardingDim){.priority = -1};
  if (!expect(s, '{'))
    return FALSE;
  if (!accept(s, '}')) {
    do {
      if (accept(s, '?')) {
        d->open = TRUE;
        break;
      }
      gsize at;
      const char *axis = read_axis_name(s, &at);
      if (!axis)
        return FALSE;
      if (peek(s) == ':')
        return scan_fail(s, s->pos,
                         "a sub-axis of \"%s\": partir splits a dimension "
                         "over whole mesh axes",
                         axis);
      for (int k = 0; k <= dim; k++) {
        const ShardingDim *o = k < dim ? &sofar->dims[k] : d;
        for (int i = 0; i < o->naxes; i++)
          if (o->axes[i] == axis)
            return scan_fail(s, at, "axis \"%s\" splits %s twice", axis,
                             k == dim ? "this dimension" : "the value");
      }
      if (d->naxes == MESH_MAX_AXES)
        return scan_fail(s, at, "more than %d axes", MESH_MAX_AXES);
      d->axes[d->naxes++] = axis;
    } while (accept(s, ','));
    if (!expect(s, '}'))
      return FALSE;
  }
  if (s->pos < s->t->len && s->t->text[s->pos] == 'p') {
    s->pos++;
    int64_t p;
    if (!read_int(s, G_MAXINT, &p, "a priority"))
      return FALSE;
    d->priority = (int)p;
  }
  return TRUE;
}

/* 'replicated={"x", ...}' after its name. */
static gboolean read_replicated(Scan *s, Sharding *out) {
  if (!expect(s, '=') || !expect(s, '{'))
    return FALSE;
  if (accept(s, '}'))
    return TRUE;
  do {
    gsize at;
    const char *axis = read_axis_name(s, &at);
    if (!axis)
      return FALSE;
    for (int d = 0; d < out->rank; d++)
      for (int i = 0; i < out->dims[d].naxes; i++)
        if (out->dims[d].axes[i] == axis)
          return scan_fail(s, at,
                           "axis \"%s\" both splits and replicates "
                           "the value",
                           axis);
    if (out->nreplicated == MESH_MAX_AXES)
      return scan_fail(s, at, "more than %d axes", MESH_MAX_AXES);
    out->replicated[out->nreplicated++] = axis;
  } while (accept(s, ','));
  return expect(s, '}');
}

gboolean sharding_read_sdy(const ShardingText *t, Sharding *out,
                           ShardingMeshRef *mesh) {
  Scan s = {.t = t};
  memset(out, 0, sizeof *out);
  memset(mesh, 0, sizeof *mesh);
  if (!open_angle(&s, "#sdy.sharding"))
    return FALSE;
  skip_space(&s);
  if (accept(&s, '@')) {
    if (peek(&s) == '"')
      mesh->name = read_string(&s, "a mesh name");
    else
      mesh->name = read_word(&s);
    if (!mesh->name)
      return expected(&s, "a mesh name");
  } else if (accept_word(&s, "mesh") ||
             (peek(&s) == '#' && (s.pos++, accept_word(&s, "sdy.mesh")))) {
    gboolean reordered;
    Loc at;
    if (!expect(&s, '<') || !read_mesh_body(&s, &mesh->mesh, &reordered, &at) ||
        !expect(&s, '>'))
      return FALSE;
    if (reordered) {
      diag_error(t->diag, at,
                 "device_ids reorder the devices: partir numbers a mesh's "
                 "devices in order, row-major over its axes");
      return FALSE;
    }
  } else {
    return expected(&s, "a mesh ('@name' or 'mesh<...>')");
  }
  if (!expect(&s, ',') || !expect(&s, '['))
    return FALSE;
  if (!accept(&s, ']')) {
    do {
      if (out->rank == PARTIR_MAX_RANK)
        return scan_fail(&s, s.pos, "more than %d dimensions", PARTIR_MAX_RANK);
      if (!read_dim(&s, &out->dims[out->rank], out, out->rank))
        return FALSE;
      out->rank++;
    } while (accept(&s, ','));
    if (!expect(&s, ']'))
      return FALSE;
  }
  while (accept(&s, ',')) {
    skip_space(&s);
    gsize at = s.pos;
    if (accept_word(&s, "replicated")) {
      if (!read_replicated(&s, out))
        return FALSE;
    } else if (accept_word(&s, "unreduced")) {
      return scan_fail(&s, at,
                       "'unreduced' axes (partial sums left unreduced): "
                       "partir has no such layout for a value it imports");
    } else {
      return expected(&s, "'replicated={...}'");
    }
  }
  return expect(&s, '>') && expect_end(&s);
}

void sharding_mesh_ref_clear(ShardingMeshRef *m) {
  g_clear_pointer(&m->name, g_free);
}

/* ---------------------------------------------------------------- GSPMD */

void gspmd_clear(Gspmd *g) {
  g_clear_pointer(&g->devices, g_free);
  memset(g, 0, sizeof *g);
}

/* The devices of '<=[dims]T(perm)' for a grid of 'n' tiles: the iota of
 * shape 'dims' transposed by 'perm', flattened. */
static int64_t *expand_iota(const int64_t *dims, int nd, const int64_t *perm,
                            int64_t n) {
  int64_t strides[PARTIR_MAX_RANK + 1];
  for (int k = nd - 1, st = 1; k >= 0; k--) {
    strides[k] = st;
    st *= (int)dims[k];
  }
  int64_t *out = g_new(int64_t, n);
  for (int64_t i = 0; i < n; i++) {
    /* the coordinates of i in the transposed shape, last fastest */
    int64_t rest = i, v = 0;
    for (int k = nd - 1; k >= 0; k--) {
      int64_t size = dims[perm[k]];
      v += (rest % size) * strides[perm[k]];
      rest /= size;
    }
    out[i] = v;
  }
  return out;
}

/* 'devices=[...]' and what follows, after the word 'devices'. */
static gboolean read_tiled(Scan *s, Gspmd *g) {
  g->kind = GSPMD_TILED;
  if (!expect(s, '='))
    return FALSE;
  gsize at = s->pos;
  int nt = read_int_list(s, g->tile, PARTIR_MAX_RANK + 1, GSPMD_MAX_DEVICES,
                         "tile dimension");
  if (nt < 0)
    return FALSE;
  if (nt == 0)
    return scan_fail(s, at, "an empty tile grid");
  g->ntile = nt;
  int64_t n = 1;
  for (int k = 0; k < nt; k++) {
    if (g->tile[k] < 1)
      return scan_fail(s, at, "a tile dimension of 0");
    if (n > GSPMD_MAX_DEVICES / g->tile[k])
      return scan_fail(s, at,
                       "a grid of more than %" G_GINT64_FORMAT " devices",
                       GSPMD_MAX_DEVICES);
    n *= g->tile[k];
  }
  g->ndevices = n;
  skip_space(s);
  gsize list_at = s->pos;
  if (s->pos + 1 < s->t->len && s->t->text[s->pos] == '<' &&
      s->t->text[s->pos + 1] == '=') {
    s->pos += 2;
    int64_t dims[PARTIR_MAX_RANK + 1], perm[PARTIR_MAX_RANK + 1];
    int nd = read_int_list(s, dims, PARTIR_MAX_RANK + 1, GSPMD_MAX_DEVICES,
                           "iota dimension");
    if (nd < 0)
      return FALSE;
    int64_t m = 1;
    for (int k = 0; k < nd; k++)
      m = dims[k] > 0 && m <= GSPMD_MAX_DEVICES / dims[k] ? m * dims[k] : -1;
    if (nd == 0 || m != n)
      return scan_fail(s, list_at,
                       "the iota [...] holds another number of devices than "
                       "the %" G_GINT64_FORMAT " tiles",
                       n);
    for (int k = 0; k < nd; k++)
      perm[k] = k;
    skip_space(s);
    if (s->pos < s->t->len && s->t->text[s->pos] == 'T') {
      s->pos++;
      gsize tat = s->pos;
      if (!expect(s, '('))
        return FALSE;
      int np = 0;
      do {
        if (np == nd)
          return scan_fail(s, tat, "a transpose of more dimensions than %d",
                           nd);
        if (!read_int(s, nd - 1, &perm[np++], "a dimension of the iota"))
          return FALSE;
      } while (accept(s, ','));
      if (!expect(s, ')'))
        return FALSE;
      gboolean seen[PARTIR_MAX_RANK + 1] = {FALSE};
      for (int k = 0; k < np; k++)
        seen[perm[k]] = TRUE;
      for (int k = 0; k < nd; k++)
        if (!seen[k] || np != nd)
          return scan_fail(s, tat,
                           "T(...) is no permutation of the %d "
                           "iota dimensions",
                           nd);
    }
    g->devices = expand_iota(dims, nd, perm, n);
  } else {
    g->devices = g_new(int64_t, n);
    for (int64_t i = 0; i < n; i++) {
      if (i > 0 && !expect(s, ','))
        return FALSE;
      if (!read_int(s, GSPMD_MAX_DEVICES - 1, &g->devices[i], "a device id"))
        return FALSE;
    }
    if (peek(s) == ',')
      return scan_fail(
          s, list_at, "more device ids than the %" G_GINT64_FORMAT " tiles", n);
  }
  /* every device once */
  g_autofree gboolean *seen = g_new0(gboolean, n);
  for (int64_t i = 0; i < n; i++) {
    if (g->devices[i] >= n || seen[g->devices[i]])
      return scan_fail(
          s, list_at,
          "the grid does not hold each of devices 0 to %" G_GINT64_FORMAT
          " once",
          n - 1);
    seen[g->devices[i]] = TRUE;
  }
  return TRUE;
}

gboolean sharding_read_gspmd(const ShardingText *t, Gspmd *out) {
  Scan s = {.t = t};
  memset(out, 0, sizeof *out);
  if (!expect(&s, '{'))
    return FALSE;
  skip_space(&s);
  gsize at = s.pos;
  if (peek(&s) == '{')
    return scan_fail(&s, at,
                     "a tuple of shardings: partir takes one per "
                     "value");
  if (accept_word(&s, "replicated")) {
    out->kind = GSPMD_REPLICATED;
  } else if (accept_word(&s, "manual")) {
    out->kind = GSPMD_MANUAL;
  } else if (accept_word(&s, "maximal")) {
    out->kind = GSPMD_MAXIMAL;
    if (!accept_word(&s, "device"))
      return expected(&s, "'device=N'");
    if (!expect(&s, '=') ||
        !read_int(&s, G_MAXINT64, &out->device, "a device id"))
      return FALSE;
  } else if (accept_word(&s, "devices")) {
    if (!read_tiled(&s, out))
      return FALSE;
  } else {
    return expected(&s, "'replicated', 'maximal', 'manual' or 'devices=[...]'");
  }
  for (;;) {
    skip_space(&s);
    gsize word_at = s.pos;
    if (accept_word(&s, "last_tile_dim_replicate")) {
      if (out->kind != GSPMD_TILED || out->ntile < 2)
        return scan_fail(&s, word_at,
                         "last_tile_dim_replicate needs a tile grid of two "
                         "dimensions or more");
      out->last_replicated = TRUE;
    } else if (accept_word(&s, "last_tile_dims")) {
      return scan_fail(&s, word_at,
                       "last_tile_dims (manual or unreduced subgroups): "
                       "partir takes tiles and replication only");
    } else if (accept_word(&s, "metadata")) {
      if (!expect(&s, '=') || !skip_braces(&s))
        return FALSE;
    } else {
      break;
    }
  }
  return expect(&s, '}') && expect_end(&s);
}

/* Device d's coordinate on every axis of 'mesh' (row-major). */
static void mesh_coords(const Mesh *mesh, int64_t d, int64_t *coords) {
  for (int a = mesh->naxes - 1; a >= 0; a--) {
    coords[a] = d % mesh->sizes[a];
    d /= mesh->sizes[a];
  }
}

/* The device of grid position 'idx' when grid dimension k steps through
 * axes[k] (major first; the devices' other coordinates are 0). */
static int64_t device_at(const Mesh *mesh, const Gspmd *g,
                         const ShardingDim *dims, const int64_t *idx) {
  int64_t coords[MESH_MAX_AXES] = {0};
  for (int k = 0; k < g->ntile; k++) {
    int64_t rest = idx[k];
    for (int i = dims[k].naxes - 1; i >= 0; i--) {
      int a = mesh_axis_index(mesh, dims[k].axes[i]);
      coords[a] = rest % mesh->sizes[a];
      rest /= mesh->sizes[a];
    }
  }
  int64_t d = 0;
  for (int a = 0; a < mesh->naxes; a++)
    d = d * mesh->sizes[a] + coords[a];
  return d;
}

/* The flat index of grid position 'idx'. */
static int64_t grid_index(const Gspmd *g, const int64_t *idx) {
  int64_t i = 0;
  for (int k = 0; k < g->ntile; k++)
    i = i * g->tile[k] + idx[k];
  return i;
}

gboolean sharding_from_gspmd(const Gspmd *g, const Mesh *mesh, int rank,
                             Sharding *out, char **why) {
  memset(out, 0, sizeof *out);
  out->rank = rank;
  for (int d = 0; d < rank; d++)
    out->dims[d].priority = -1;
  *why = NULL;
  switch (g->kind) {
  case GSPMD_REPLICATED:
    return TRUE;
  case GSPMD_MAXIMAL:
    *why = g_strdup_printf("the whole value on device %" G_GINT64_FORMAT
                           " alone: partir splits values over mesh axes",
                           g->device);
    return FALSE;
  case GSPMD_MANUAL:
    *why = g_strdup("the value left to code written per device: partir "
                    "imports the global program");
    return FALSE;
  case GSPMD_TILED:
    break;
  }
  int want = rank + (g->last_replicated ? 1 : 0);
  if (g->ntile != want) {
    *why =
        g_strdup_printf("a grid of %d dimension%s for a value of rank %d%s",
                        g->ntile, g->ntile == 1 ? "" : "s", rank,
                        g->last_replicated ? " (and the replicated one)" : "");
    return FALSE;
  }
  int64_t n = mesh_devices(mesh);
  if (g->ndevices != n) {
    g_autofree char *m = mesh_to_string(mesh);
    *why = g_strdup_printf("it splits over %" G_GINT64_FORMAT
                           " devices but the mesh (%s) has %" G_GINT64_FORMAT,
                           g->ndevices, *m ? m : "no axes", n);
    return FALSE;
  }
  /* each grid dimension: the axis a step of 1 moves along is its most
   * minor; a step of that axis's size moves along the next; and so on */
  ShardingDim dims[PARTIR_MAX_RANK + 1] = {{0}};
  gboolean used[MESH_MAX_AXES] = {FALSE};
  int64_t base[MESH_MAX_AXES], here[MESH_MAX_AXES];
  mesh_coords(mesh, g->devices[0], base);
  for (int k = 0; k < g->ntile; k++) {
    int64_t idx[PARTIR_MAX_RANK + 1] = {0};
    int64_t step = 1;
    ShardingDim minor_first = {0};
    while (step < g->tile[k]) {
      idx[k] = step;
      mesh_coords(mesh, g->devices[grid_index(g, idx)], here);
      int moved = -1, count = 0;
      for (int a = 0; a < mesh->naxes; a++)
        if (here[a] != base[a]) {
          moved = a;
          count++;
        }
      if (count != 1 || here[moved] - base[moved] != 1 || used[moved] ||
          g->tile[k] % (step * mesh->sizes[moved]) != 0)
        goto not_axes;
      used[moved] = TRUE;
      minor_first.axes[minor_first.naxes++] = mesh->names[moved];
      step *= mesh->sizes[moved];
    }
    for (int i = 0; i < minor_first.naxes; i++)
      dims[k].axes[i] = minor_first.axes[minor_first.naxes - 1 - i];
    dims[k].naxes = minor_first.naxes;
  }
  /* the whole grid must be what those axes give */
  for (int a = 0; a < mesh->naxes; a++)
    if (base[a] != 0)
      goto not_axes;
  int64_t idx[PARTIR_MAX_RANK + 1] = {0};
  for (int64_t i = 0; i < g->ndevices; i++) {
    if (device_at(mesh, g, dims, idx) != g->devices[i])
      goto not_axes;
    for (int k = g->ntile - 1; k >= 0 && ++idx[k] == g->tile[k]; k--)
      idx[k] = 0;
  }
  for (int d = 0; d < rank; d++) {
    out->dims[d].naxes = dims[d].naxes;
    memcpy(out->dims[d].axes, dims[d].axes, sizeof dims[d].axes);
  }
  return TRUE;
not_axes : {
  g_autofree char *m = mesh_to_string(mesh);
  *why = g_strdup_printf("its tiles visit the devices in an order that no "
                         "split over the axes of the mesh (%s) gives",
                         m);
  return FALSE;
}
}

/* --------------------------------------------------------------- writing */

static void append_axis(GString *out, const char *axis) {
  g_string_append_printf(out, "\"%s\"", axis);
}

void sharding_print_sdy(GString *out, const Sharding *s, const char *mesh) {
  g_string_append_printf(out, "#sdy.sharding<@%s, [", mesh);
  for (int d = 0; d < s->rank; d++) {
    const ShardingDim *dim = &s->dims[d];
    g_string_append(out, d ? ", {" : "{");
    for (int i = 0; i < dim->naxes; i++) {
      if (i)
        g_string_append(out, ", ");
      append_axis(out, dim->axes[i]);
    }
    if (dim->open)
      g_string_append(out, dim->naxes ? ", ?" : "?");
    g_string_append_c(out, '}');
    if (dim->priority >= 0)
      g_string_append_printf(out, "p%d", dim->priority);
  }
  g_string_append_c(out, ']');
  if (s->nreplicated > 0) {
    g_string_append(out, ", replicated={");
    for (int i = 0; i < s->nreplicated; i++) {
      if (i)
        g_string_append(out, ", ");
      append_axis(out, s->replicated[i]);
    }
    g_string_append_c(out, '}');
  }
  g_string_append_c(out, '>');
}

void sharding_print_mesh(GString *out, const Mesh *mesh) {
  g_string_append(out, "<[");
  for (int a = 0; a < mesh->naxes; a++)
    g_string_append_printf(out, "%s\"%s\"=%" G_GINT64_FORMAT, a ? ", " : "",
                           mesh->names[a], mesh->sizes[a]);
  g_string_append(out, "]>");
}

static void append_ints(GString *out, const int64_t *v, int n) {
  for (int i = 0; i < n; i++)
    g_string_append_printf(out, "%s%" G_GINT64_FORMAT, i ? "," : "", v[i]);
}

void sharding_print_gspmd(GString *out, const Sharding *s, const Mesh *mesh) {
  /* the grid's order of the mesh axes: each dimension's, major first,
   * then the replicated ones; axes of size 1 take no part */
  int order[MESH_MAX_AXES], n = 0;
  gboolean used[MESH_MAX_AXES] = {FALSE};
  int64_t tile[PARTIR_MAX_RANK + 1];
  for (int d = 0; d < s->rank; d++) {
    tile[d] = 1;
    for (int i = 0; i < s->dims[d].naxes; i++) {
      int a = mesh_axis_index(mesh, s->dims[d].axes[i]);
      g_assert(a >= 0);
      tile[d] *= mesh->sizes[a];
      used[a] = TRUE;
      if (mesh->sizes[a] > 1)
        order[n++] = a;
    }
  }
  int split = n;
  int64_t replicated = 1;
  for (int a = 0; a < mesh->naxes; a++)
    if (!used[a] && mesh->sizes[a] > 1) {
      order[n++] = a;
      replicated *= mesh->sizes[a];
    }
  if (split == 0) {
    g_string_append(out, "{replicated}");
    return;
  }
  int ntile = s->rank;
  if (replicated > 1)
    tile[ntile++] = replicated;
  /* XLA's canonical iota: the mesh's axes (of size > 1) as dimensions,
   * runs that the transpose keeps together merged into one */
  int pos[MESH_MAX_AXES]; /* an axis's place among the iota's dimensions */
  int64_t size_at[MESH_MAX_AXES];
  int ndims = 0;
  for (int a = 0; a < mesh->naxes; a++) {
    pos[a] = mesh->sizes[a] > 1 ? ndims : -1;
    if (mesh->sizes[a] > 1)
      size_at[ndims++] = mesh->sizes[a];
  }
  /* a dimension that follows its neighbour in the grid's order too
   * joins it */
  gboolean starts[MESH_MAX_AXES];
  int perm[MESH_MAX_AXES], nperm = 0;
  for (int i = 0; i < n; i++) {
    int p = pos[order[i]];
    starts[p] = !(i > 0 && pos[order[i - 1]] == p - 1);
    if (starts[p])
      perm[nperm++] = p;
  }
  int64_t dims[MESH_MAX_AXES];
  int rank_of[MESH_MAX_AXES];
  int nd = 0;
  for (int p = 0; p < ndims; p++) {
    if (starts[p]) {
      rank_of[p] = nd;
      dims[nd++] = 1;
    }
    dims[nd - 1] *= size_at[p];
  }
  gboolean identity = TRUE;
  for (int i = 0; i < nperm; i++) {
    perm[i] = rank_of[perm[i]];
    identity &= perm[i] == i;
  }
  g_string_append(out, "{devices=[");
  append_ints(out, tile, ntile);
  g_string_append(out, "]<=[");
  if (identity) {
    int64_t total = 1;
    for (int i = 0; i < nd; i++)
      total *= dims[i];
    append_ints(out, &total, 1);
    g_string_append_c(out, ']');
  } else {
    append_ints(out, dims, nd);
    g_string_append(out, "]T(");
    for (int i = 0; i < nperm; i++)
      g_string_append_printf(out, "%s%d", i ? "," : "", perm[i]);
    g_string_append_c(out, ')');
  }
  if (replicated > 1)
    g_string_append(out, " last_tile_dim_replicate");
  g_string_append_c(out, '}');
}
