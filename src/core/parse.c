/* parse.c — text to a Module of type-checked, hash-consed terms.
 *
 * A recursive-descent parser over lex.c's tokens (grammar in
 * docs/language.md).  SSA statements are not kept: each '%v = ...' builds
 * a Term at once (term_op & co. type-check it) and binds the name to it,
 * so the function body is just the tuple of returned Terms.  Names the
 * user gave are recorded in the Module's name tables for the printer.
 *
 * Regions (tile, sum) nest; 'depth' counts the enclosing binders.  A
 * binder opened at depth k (its region has depth k+1) is level k, and a
 * value means the same term at any depth.  A region written deeper than
 * its home (its body does not use every binder around it) moves to its
 * home when it closes: its body is renamed, and so are the keys of the
 * names recorded inside it.  Names defined in a region go out of sight
 * when it closes but stay reserved: a name is defined once per function.
 *
 * Errors stop the parse at the first problem: one diagnostic with the
 * source line and a caret, plus a note where an unclosed '{' opened.
 * Nesting of regions and lists, and the height of terms, are bounded so
 * that no input can exhaust the stack.
 */
#include "core/core.h"

#include <string.h>

typedef struct ValueDef {
  const Term *term;  /* as built at 'depth'; NULL for binders */
  const Type *range; /* binders: the range type */
  int depth;         /* values: region depth of the definition; binders: the
                        depth outside the region they open */
  gboolean binder;
  gboolean visible;
  Loc loc;
} ValueDef;

/* A name recorded for the printer: the table and the key it is under. */
typedef struct Recorded {
  GHashTable *table;
  const Term *key;
} Recorded;

typedef struct Parser {
  Cursor c;
  Module *m;
  GHashTable *defs; /* name -> ValueDef*, per function */
  GPtrArray *scope; /* names defined in open regions, NULL marks a region */
  GArray *recorded; /* Recorded, in open regions (to rename their keys) */
  int depth;
} Parser;

static gboolean parse_int(Parser *p, const char *what, int64_t *out) {
  if (p->c.failed)
    return FALSE;
  if (p->c.tok.kind != TK_INT)
    return cursor_expected(&p->c, what);
  *out = p->c.tok.i;
  cursor_next(&p->c);
  return !p->c.failed;
}

/* ------------------------------------------------------------------ types */

static gboolean parse_type(Parser *p, const Type **out) {
  if (p->c.failed)
    return FALSE;
  Loc at = p->c.tok.loc;
  if (token_is(&p->c.tok, "tensor")) {
    cursor_next(&p->c);
    if (!token_punct(&p->c.tok, '<'))
      return cursor_expected(&p->c, "'<' after 'tensor'");
    int rank;
    int64_t dims[PARTIR_MAX_RANK];
    DType dt;
    if (!lex_tensor_shape(&p->c.lx, &rank, dims, &dt)) {
      p->c.failed = TRUE;
      return FALSE;
    }
    /* keep element counts far from overflow in every size computation */
    int64_t numel = 1;
    for (int i = 0; i < rank; i++) {
      if (dims[i] > PARTIR_MAX_ELEMS / numel)
        return cursor_fail(&p->c, at,
                           "tensor type has more than 2^48 elements");
      numel *= dims[i];
    }
    *out = type_tensor(dt, rank, dims);
    cursor_next(&p->c);
    return !p->c.failed;
  }
  if (token_punct(&p->c.tok, '!')) {
    cursor_next(&p->c);
    int64_t n = 0, w = 0;
    if (!cursor_word(&p->c, "partir.range") || !cursor_punct(&p->c, '<') ||
        !parse_int(p, "the range size", &n) || !cursor_punct(&p->c, ',') ||
        !parse_int(p, "the range width", &w) || !cursor_punct(&p->c, '>'))
      return FALSE;
    if (n < 1 || w < 1 || n > ((int64_t)1 << 48))
      return cursor_fail(&p->c, at, "range size and width must be positive");
    *out = type_range(n, w);
    return TRUE;
  }
  return cursor_expected(&p->c,
                         "a type ('tensor<...>' or '!partir.range<n,w>')");
}

static gboolean parse_tensor_type(Parser *p, const Type **out) {
  Loc at = p->c.tok.loc;
  if (!parse_type(p, out))
    return FALSE;
  if ((*out)->kind != TY_TENSOR)
    return cursor_fail(&p->c, at, "expected a tensor type here, not a range");
  return TRUE;
}

/* ------------------------------------------------------------- attributes */

static gboolean attr_value(Cursor *c, int nest, AttrValue *v) {
  memset(v, 0, sizeof *v);
  if (c->failed)
    return FALSE;
  switch (c->tok.kind) {
  case TK_INT:
    v->kind = AV_INT;
    v->i = c->tok.i;
    cursor_next(c);
    return !c->failed;
  case TK_FLOAT:
    v->kind = AV_FLOAT;
    v->f = c->tok.f;
    cursor_next(c);
    return !c->failed;
  case TK_IDENT:
  case TK_STRING: {
    g_autofree char *name = token_name(&c->tok);
    v->kind = AV_SYMBOL;
    v->sym = g_intern_string(name);
    cursor_next(c);
    return !c->failed;
  }
  case TK_PUNCT:
    if (c->tok.punct == '[') {
      Loc open = c->tok.loc;
      if (nest + 1 > PARTIR_MAX_DEPTH)
        return cursor_fail(c, open, "attribute lists nest deeper than %d",
                           PARTIR_MAX_DEPTH);
      cursor_next(c);
      GArray *items = g_array_new(FALSE, TRUE, sizeof(AttrValue));
      v->kind = AV_LIST;
      while (!c->failed && !token_punct(&c->tok, ']')) {
        if (items->len > 0 && !cursor_punct(c, ','))
          break;
        AttrValue item;
        gboolean ok = attr_value(c, nest + 1, &item);
        g_array_append_val(items, item);
        if (!ok)
          break;
      }
      v->count = (int)items->len;
      v->items = (AttrValue *)g_array_free(items, FALSE);
      if (c->failed) {
        attr_value_clear(v);
        return FALSE;
      }
      cursor_next(c);  /* ']' */
      if (c->failed) { /* after the list: the caller drops 'v' */
        attr_value_clear(v);
        return FALSE;
      }
      return TRUE;
    }
    break;
  default:
    break;
  }
  return cursor_expected(c,
                         "an attribute value (number, name, string or list)");
}

gboolean cursor_attrs(Cursor *c, const Attrs **out) {
  *out = attrs_empty();
  if (!token_punct(&c->tok, '{'))
    return TRUE;
  cursor_next(c);
  GPtrArray *keys = g_ptr_array_new();
  GArray *values = g_array_new(FALSE, TRUE, sizeof(AttrValue));
  while (!c->failed && !token_punct(&c->tok, '}')) {
    if (keys->len > 0 && !cursor_punct(c, ','))
      break;
    if (c->tok.kind != TK_IDENT) {
      cursor_expected(c, "an attribute name");
      break;
    }
    g_autofree char *key = token_name(&c->tok);
    const char *ikey = g_intern_string(key);
    for (guint i = 0; i < keys->len; i++)
      if (g_ptr_array_index(keys, i) == ikey)
        cursor_fail(c, c->tok.loc, "attribute '%s' given twice", key);
    cursor_next(c);
    AttrValue v;
    if (!cursor_punct(c, '=') || !attr_value(c, 0, &v))
      break;
    g_ptr_array_add(keys, (gpointer)ikey);
    g_array_append_val(values, v);
  }
  if (c->failed) {
    for (guint i = 0; i < values->len; i++)
      attr_value_clear(&g_array_index(values, AttrValue, i));
    g_array_free(values, TRUE);
    g_ptr_array_free(keys, TRUE);
    return FALSE;
  }
  cursor_next(c); /* '}' */
  int count = (int)keys->len;
  *out = attrs_intern(count, (const char **)g_ptr_array_free(keys, FALSE),
                      (AttrValue *)g_array_free(values, FALSE));
  return !c->failed;
}

/* ----------------------------------------------------------------- values */

static gboolean name_is_anonymous(const char *name) {
  for (const char *c = name; *c; c++)
    if (!g_ascii_isdigit(*c))
      return FALSE;
  return TRUE;
}

/* Binds a name in the current scope; refuses a second definition. */
static ValueDef *define(Parser *p, const char *name, Loc loc) {
  ValueDef *old = g_hash_table_lookup(p->defs, name);
  if (old) {
    cursor_fail(&p->c, loc, "'%%%s' is already defined", name);
    diag_note(p->c.lx.diag, old->loc, "'%%%s' was defined here", name);
    return NULL;
  }
  ValueDef *d = g_new0(ValueDef, 1);
  d->loc = loc;
  d->visible = TRUE;
  d->depth = p->depth;
  char *key = g_strdup(name);
  g_hash_table_insert(p->defs, key, d);
  g_ptr_array_add(p->scope, key);
  return d;
}

/* Records a user name for a value for the printer (first name wins). */
static void record_name(Parser *p, const char *name, const Term *t) {
  if (name_is_anonymous(name) || g_hash_table_contains(p->m->names, t))
    return;
  g_hash_table_insert(p->m->names, (gpointer)t, g_strdup(name));
  if (p->depth > 0)
    g_array_append_val(p->recorded, ((Recorded){p->m->names, t}));
}

/* Reads a '%name' use and returns its Term as seen at the current depth. */
static const Term *parse_use(Parser *p) {
  if (p->c.failed)
    return NULL;
  if (p->c.tok.kind != TK_VALUE) {
    cursor_expected(&p->c, "a value ('%name')");
    return NULL;
  }
  g_autofree char *name = token_name(&p->c.tok);
  Loc at = p->c.tok.loc;
  ValueDef *d = g_hash_table_lookup(p->defs, name);
  if (!d) {
    cursor_fail(&p->c, at, "use of undefined value '%%%s'", name);
    return NULL;
  }
  if (!d->visible) {
    cursor_fail(&p->c, at,
                "'%%%s' is defined inside a region and is not visible here",
                name);
    diag_note(p->c.lx.diag, d->loc, "'%%%s' was defined here", name);
    return NULL;
  }
  cursor_next(&p->c);
  return d->binder ? term_bvar(d->depth, d->range) : d->term;
}

static gboolean check_height(Parser *p, const Term *t, Loc at) {
  if (t->height > PARTIR_MAX_HEIGHT)
    return cursor_fail(&p->c, at,
                       "program is too deep (more than %d nested values)",
                       PARTIR_MAX_HEIGHT);
  return TRUE;
}

/* ------------------------------------------------------------- statements */

static const Term *parse_stmt_expr(Parser *p, Loc def_loc);

/* Parses statements up to 'terminator' (an identifier: 'return' or
 * 'partir.yield'); 'open' is where the enclosing '{' was. */
static gboolean parse_stmts(Parser *p, const char *terminator, Loc open) {
  while (!p->c.failed && !token_is(&p->c.tok, terminator)) {
    if (p->c.tok.kind == TK_EOF) {
      cursor_fail(&p->c, p->c.tok.loc,
                  "unexpected end of input: '%s' and '}' expected "
                  "(to close '{' at line %d)",
                  terminator, open.line);
      diag_note(p->c.lx.diag, open, "the region opened here");
      return FALSE;
    }
    if (token_punct(&p->c.tok, '}')) {
      cursor_fail(&p->c, p->c.tok.loc,
                  "'%s' expected before '}' (to close '{' at line %d)",
                  terminator, open.line);
      return FALSE;
    }
    if (p->c.tok.kind != TK_VALUE) {
      g_autofree char *what =
          g_strdup_printf("a statement ('%%name = ...') or '%s'", terminator);
      return cursor_expected(&p->c, what);
    }
    g_autofree char *name = token_name(&p->c.tok);
    Loc at = p->c.tok.loc;
    cursor_next(&p->c);
    if (!cursor_punct(&p->c, '='))
      return FALSE;
    const Term *t = parse_stmt_expr(p, at);
    if (!t || !check_height(p, t, at))
      return FALSE;
    ValueDef *d = define(p, name, at);
    if (!d)
      return FALSE;
    d->term = t;
    record_name(p, name, t);
  }
  return !p->c.failed;
}

/* Hides the names defined since the last region marker. */
static void close_scope(Parser *p) {
  while (p->scope->len > 0) {
    char *name = g_ptr_array_steal_index(p->scope, p->scope->len - 1);
    if (!name)
      return;
    ValueDef *d = g_hash_table_lookup(p->defs, name);
    d->visible = FALSE;
  }
}

/* Moves a region's body from binder level 'level' to the region's home
 * level, renaming the keys of the names recorded since 'mark'. */
static const Term *move_home(Parser *p, const Term *body, int *level,
                             guint mark, Loc at) {
  int home = term_region_level(body, *level);
  if (home == *level || !term_uses(body, *level)) {
    *level = home;
    return body;
  }
  Relevel *rl = relevel_new();
  relevel_map(rl, *level, home);
  g_autoptr(Diag) err = diag_new(NULL);
  const Term *r = relevel_apply(rl, body, err);
  for (guint i = mark; r && i < p->recorded->len; i++) {
    Recorded *n = &g_array_index(p->recorded, Recorded, i);
    const Term *key = relevel_apply(rl, n->key, err);
    char *name;
    if (key == n->key ||
        !g_hash_table_steal_extended(n->table, n->key, NULL, (gpointer *)&name))
      continue;
    if (g_hash_table_contains(n->table, key))
      g_free(name);
    else
      g_hash_table_insert(n->table, (gpointer)key, name);
    n->key = key;
  }
  relevel_free(rl);
  if (!r)
    cursor_fail(&p->c, at, "%s", diag_text(err));
  *level = home;
  return r;
}

/* binder := '(' %name ':' rangetype ['@' axis] ')' ; then '{' stmts
 * 'partir.yield' %v '}'.  Returns the body as seen inside the region, its
 * binder at the region's home level (in 'level'); the binder's range,
 * axis and name come back through the out parameters. */
static const Term *parse_region(Parser *p, const Type **range,
                                const char **axis, char **binder_name,
                                int *level) {
  *axis = NULL;
  *binder_name = NULL;
  if (!cursor_punct(&p->c, '('))
    return NULL;
  if (p->c.tok.kind != TK_VALUE) {
    cursor_expected(&p->c, "a range binder ('%r')");
    return NULL;
  }
  g_autofree char *name = token_name(&p->c.tok);
  Loc name_loc = p->c.tok.loc;
  cursor_next(&p->c);
  Loc type_loc = p->c.tok.loc;
  if (!cursor_punct(&p->c, ':') || !parse_type(p, range))
    return NULL;
  if ((*range)->kind != TY_RANGE) {
    cursor_fail(&p->c, type_loc,
                "a binder needs a range type ('!partir.range<n,w>')");
    return NULL;
  }
  if (p->c.tok.kind == TK_SYMBOL) {
    g_autofree char *a = token_name(&p->c.tok);
    *axis = g_intern_string(a);
    cursor_next(&p->c);
  }
  if (!cursor_punct(&p->c, ')'))
    return NULL;
  Loc open = p->c.tok.loc;
  if (!cursor_punct(&p->c, '{'))
    return NULL;
  if (p->depth >= PARTIR_MAX_REGIONS) {
    cursor_fail(&p->c, open, "regions nest deeper than %d", PARTIR_MAX_REGIONS);
    return NULL;
  }
  ValueDef *b = define(p, name, name_loc);
  if (!b)
    return NULL;
  b->binder = TRUE;
  b->range = *range;
  g_ptr_array_add(p->scope, NULL); /* region marker */
  guint mark = p->recorded->len;
  *level = p->depth;
  p->depth++;
  const Term *body = NULL;
  if (parse_stmts(p, "partir.yield", open)) {
    cursor_next(&p->c);
    body = parse_use(p);
    if (body && !token_punct(&p->c.tok, '}')) {
      cursor_fail(&p->c, p->c.tok.loc,
                  "'}' expected after 'partir.yield' (to close '{' "
                  "at line %d)",
                  open.line);
      body = NULL;
    }
    if (body)
      cursor_next(&p->c);
  }
  p->depth--;
  close_scope(p);
  /* the binder itself belongs to the enclosing scope's list but must not
   * be visible after the region */
  b->visible = FALSE;
  if (body && !p->c.failed)
    body = move_home(p, body, level, mark, open);
  if (p->depth == 0)
    g_array_set_size(p->recorded, 0); /* top-level keys never move */
  if (!body || p->c.failed)           /* the name goes out only with a body */
    return NULL;
  *binder_name = g_steal_pointer(&name);
  return body;
}

static const Term *built(Parser *p, const Term *t, Diag *err, Loc at) {
  if (!t)
    cursor_fail(&p->c, at, "%s", diag_text(err));
  return t;
}

static void record_binder(Parser *p, const Term *t, char *binder_name) {
  if (g_hash_table_contains(p->m->binder_names, t) ||
      name_is_anonymous(binder_name)) {
    g_free(binder_name);
    return;
  }
  g_hash_table_insert(p->m->binder_names, (gpointer)t, binder_name);
  if (p->depth > 0)
    g_array_append_val(p->recorded, ((Recorded){p->m->binder_names, t}));
}

/* FALSE (having failed at 'at') when dimension literal 'dim' of 'what' is
 * too large for the term constructors' int: the literal as written, with
 * the rank of 't' as they say it.  Smaller ones they check themselves. */
static gboolean dim_fits(Parser *p, const char *what, int64_t dim,
                         const Type *t, Loc at) {
  if (dim >= G_MININT && dim <= G_MAXINT)
    return TRUE;
  if (t->kind != TY_TENSOR)
    return cursor_fail(
        &p->c, at, "%s dimension %" G_GINT64_FORMAT " out of range", what, dim);
  return cursor_fail(
      &p->c, at, "%s dimension %" G_GINT64_FORMAT " out of range for rank %d",
      what, dim, t->rank);
}

static const Term *parse_stmt_expr(Parser *p, Loc def_loc) {
  if (p->c.failed)
    return NULL;
  g_autoptr(Diag) err = diag_new(NULL);
  if (p->c.tok.kind != TK_IDENT) {
    cursor_expected(&p->c, "an operator or a partir construct");
    return NULL;
  }
  Loc at = p->c.tok.loc;
  if (token_is(&p->c.tok, "partir.slice")) {
    cursor_next(&p->c);
    int64_t dim = 0;
    if (!parse_int(p, "the sliced dimension", &dim))
      return NULL;
    const Term *x = parse_use(p);
    if (!x || !cursor_punct(&p->c, '['))
      return NULL;
    const Term *r = parse_use(p);
    if (!r || !cursor_punct(&p->c, ']'))
      return NULL;
    if (!dim_fits(p, "partir.slice", dim, x->type, def_loc))
      return NULL;
    return built(p, term_slice((int)dim, x, r, err), err, def_loc);
  }
  if (token_is(&p->c.tok, "partir.tile") || token_is(&p->c.tok, "partir.sum")) {
    gboolean tile = token_is(&p->c.tok, "partir.tile");
    cursor_next(&p->c);
    int64_t dim = 0;
    if (tile && !parse_int(p, "the tiled dimension", &dim))
      return NULL;
    const Type *range;
    const char *axis;
    char *binder_name;
    int level;
    const Term *body = parse_region(p, &range, &axis, &binder_name, &level);
    if (!body)
      return NULL;
    if (tile && !dim_fits(p, "partir.tile", dim, body->type, def_loc)) {
      g_free(binder_name);
      return NULL;
    }
    const Term *t = tile ? term_tile((int)dim, range, axis, body, level, err)
                         : term_sum(range, axis, body, level, err);
    if (!built(p, t, err, def_loc)) {
      g_free(binder_name);
      return NULL;
    }
    record_binder(p, t, binder_name);
    return t;
  }
  Op op;
  if (!op_from_name(p->c.tok.start, p->c.tok.len, &op)) {
    g_autofree char *name = token_name(&p->c.tok);
    cursor_fail(&p->c, at, "unknown operator '%s'", name);
    return NULL;
  }
  cursor_next(&p->c);
  if (!cursor_punct(&p->c, '('))
    return NULL;
  g_autoptr(GPtrArray) operands = g_ptr_array_new();
  while (!p->c.failed && !token_punct(&p->c.tok, ')')) {
    if (operands->len > 0 && !cursor_punct(&p->c, ','))
      return NULL;
    const Term *x = parse_use(p);
    if (!x)
      return NULL;
    g_ptr_array_add(operands, (gpointer)x);
  }
  if (!cursor_punct(&p->c, ')'))
    return NULL;
  const Attrs *attrs;
  if (!cursor_attrs(&p->c, &attrs))
    return NULL;
  const Type *written = NULL;
  if (token_punct(&p->c.tok, ':')) {
    cursor_next(&p->c);
    if (!parse_tensor_type(p, &written))
      return NULL;
  }
  const Term *t =
      term_op(op, (int)operands->len, (const Term *const *)operands->pdata,
              attrs, written, err);
  return built(p, t, err, def_loc);
}

/* -------------------------------------------------------------- functions */

/* -------------------------------------------------------- SPMD programs */

/* What a layout says it replicates, checked once the mesh is known. */
typedef struct Replicated {
  Loc at;
  int n;
  const char *axes[MESH_MAX_AXES];
  Dist dist;
} Replicated;

/* A mesh axis gives a value one role: it splits one dimension, or holds
 * partial sums, once (a device has one coordinate on it). */
static gboolean check_axes_once(Parser *p, Loc at, const Dist *d) {
  const char *seen[PARTIR_MAX_RANK * MESH_MAX_AXES + MESH_MAX_AXES];
  int where[G_N_ELEMENTS(seen)]; /* its dimension, or -1: partial */
  int n = 0;
  for (int i = 0; i <= d->rank; i++) {
    int count = i < d->rank ? d->naxes[i] : d->npartial;
    for (int k = 0; k < count; k++) {
      const char *axis = i < d->rank ? d->axes[i][k] : d->partial[k];
      int role = i < d->rank ? i : -1;
      for (int j = 0; j < n; j++) {
        if (seen[j] != axis)
          continue;
        if (role >= 0 && where[j] >= 0 && where[j] != role)
          return cursor_fail(&p->c, at,
                             "mesh axis \"%s\" splits two dimensions of one "
                             "value (%d and %d): a device has one coordinate "
                             "on it",
                             axis, where[j], role);
        if (role != where[j])
          return cursor_fail(&p->c, at,
                             "mesh axis \"%s\" both splits dimension %d and "
                             "holds partial sums",
                             axis, where[j] >= 0 ? where[j] : role);
        return cursor_fail(&p->c, at, "mesh axis \"%s\" is named twice in %s",
                           axis,
                           role >= 0 ? "one dimension's split" : "partial");
      }
      seen[n] = axis;
      where[n++] = role;
    }
  }
  return TRUE;
}

/* {dist = [["a"], []], partial = ["b"], replicated = ["c"]} after an SPMD
 * program's argument or result type: the layout of a value of rank
 * 'rank'.  'replicated' is optional; when given it goes to 'reps'. */
static gboolean parse_dist(Parser *p, int rank, Dist *out, GArray *axes_used,
                           GArray *reps) {
  memset(out, 0, sizeof *out);
  out->rank = rank;
  Loc at = p->c.tok.loc;
  if (!token_punct(&p->c.tok, '{'))
    return cursor_expected(&p->c, "a layout ('{dist = [...]}')");
  const Attrs *a;
  if (!cursor_attrs(&p->c, &a))
    return FALSE;
  const AttrValue *dist = attrs_get(a, "dist");
  const AttrValue *partial = attrs_get(a, "partial");
  const AttrValue *replicated = attrs_get(a, "replicated");
  const AttrValue *global = attrs_get(a, "global");
  gboolean ok = dist && dist->kind == AV_LIST && dist->count == rank &&
                a->count == 1 + (partial != NULL) + (replicated != NULL) +
                                (global != NULL);
  for (int i = 0; ok && i < rank; i++) {
    const AttrValue *axes = &dist->items[i];
    ok = axes->kind == AV_LIST && axes->count <= MESH_MAX_AXES;
    for (int k = 0; ok && k < axes->count; k++) {
      ok = axes->items[k].kind == AV_SYMBOL;
      out->axes[i][k] = axes->items[k].sym;
      g_array_append_val(axes_used, axes->items[k].sym);
    }
    out->naxes[i] = ok ? axes->count : 0;
  }
  if (ok && partial) {
    ok = partial->kind == AV_LIST && partial->count <= MESH_MAX_AXES;
    for (int k = 0; ok && k < partial->count; k++) {
      ok = partial->items[k].kind == AV_SYMBOL;
      out->partial[k] = partial->items[k].sym;
      g_array_append_val(axes_used, partial->items[k].sym);
    }
    out->npartial = ok ? partial->count : 0;
  }
  if (ok && global) { /* sizes of padded dimensions, 0 for the others */
    ok = global->kind == AV_LIST && global->count == rank;
    for (int i = 0; ok && i < rank; i++) {
      ok = global->items[i].kind == AV_INT && global->items[i].i >= 0;
      out->global[i] = global->items[i].i;
    }
  }
  Replicated rep = {.at = at};
  if (ok && replicated) {
    ok = replicated->kind == AV_LIST && replicated->count <= MESH_MAX_AXES;
    for (int k = 0; ok && k < replicated->count; k++) {
      ok = replicated->items[k].kind == AV_SYMBOL;
      rep.axes[rep.n++] = replicated->items[k].sym;
    }
  }
  if (!ok)
    return cursor_fail(&p->c, at,
                       "a layout is {dist = [axes of each of the %d "
                       "dimensions], partial = [axes], replicated = [axes], "
                       "global = [size of each padded dimension, else 0]}",
                       rank);
  if (!check_axes_once(p, at, out))
    return FALSE;
  if (replicated) {
    rep.dist = *out;
    g_array_append_val(reps, rep);
  }
  return TRUE;
}

/* A written 'replicated' must name exactly the axes the layout leaves. */
static gboolean check_replicated(Parser *p, const Replicated *r,
                                 const Mesh *mesh) {
  const char *want[MESH_MAX_AXES];
  int n = dist_replicated(&r->dist, mesh, want);
  gboolean same = n == r->n;
  for (int i = 0; same && i < n; i++) {
    gboolean found = FALSE;
    for (int k = 0; k < r->n; k++)
      found |= r->axes[k] == want[i];
    same = found;
  }
  if (same)
    return TRUE;
  g_autoptr(GString) said = g_string_new(NULL);
  g_autoptr(GString) axes = g_string_new(NULL);
  for (int i = 0; i < r->n; i++)
    g_string_append_printf(said, "%s\"%s\"", i ? ", " : "", r->axes[i]);
  for (int i = 0; i < n; i++)
    g_string_append_printf(axes, "%s\"%s\"", i ? ", " : "", want[i]);
  return cursor_fail(&p->c, r->at,
                     "replicated = [%s], but this layout replicates the "
                     "value over [%s] (the mesh axes that neither split it "
                     "nor hold partial sums)",
                     said->str, axes->str);
}

/* mesh {batch = 2, model = 4}: the axes in the order written, which
 * numbers the devices (attributes would sort them). */
static gboolean parse_mesh(Parser *p, Mesh *mesh) {
  memset(mesh, 0, sizeof *mesh);
  Loc start = p->c.tok.loc;
  if (!cursor_word(&p->c, "mesh"))
    return FALSE;
  if (!token_punct(&p->c.tok, '{'))
    return cursor_expected(&p->c, "'mesh {axis = size, ...}'");
  cursor_next(&p->c);
  while (!p->c.failed && !token_punct(&p->c.tok, '}')) {
    if (mesh->naxes > 0 && !cursor_punct(&p->c, ','))
      return FALSE;
    Loc at = p->c.tok.loc;
    if (p->c.tok.kind != TK_IDENT && p->c.tok.kind != TK_STRING)
      return cursor_expected(&p->c, "a mesh axis name");
    /* a name that is no identifier ("0model") is written quoted */
    g_autofree char *name = p->c.tok.kind == TK_STRING ? g_strdup(p->c.tok.text)
                                                       : token_name(&p->c.tok);
    const char *axis = g_intern_string(name);
    cursor_next(&p->c);
    int64_t size = 0;
    if (!cursor_punct(&p->c, '=') || !parse_int(p, "the axis size", &size))
      return FALSE;
    if (size < 1 || mesh->naxes == MESH_MAX_AXES)
      return cursor_fail(&p->c, at, "mesh axis '%s' needs a positive size",
                         axis);
    if (size > MESH_MAX_AXIS_SIZE)
      return cursor_fail(&p->c, at,
                         "mesh axis '%s' has size %" G_GINT64_FORMAT
                         ", more than the limit of 2^20 (%d)",
                         axis, size, MESH_MAX_AXIS_SIZE);
    if (mesh_axis_index(mesh, axis) >= 0)
      return cursor_fail(&p->c, at, "mesh axis '%s' given twice", axis);
    mesh->names[mesh->naxes] = axis;
    mesh->sizes[mesh->naxes++] = size;
  }
  if (!cursor_punct(&p->c, '}'))
    return FALSE;
  g_autoptr(Diag) why = diag_new(NULL);
  if (!mesh_devices_ok(mesh, why))
    return cursor_fail(&p->c, start, "mesh: %s", diag_text(why));
  return TRUE;
}

/* The layouts an SPMD signature writes, gathered while it is read and
 * checked once the mesh after it is known. */
typedef struct Layouts {
  GArray *dists;     /* Dist of each argument, then of each result */
  GArray *axes_used; /* char *: every axis a layout names */
  GArray *reps;      /* Replicated: the written 'replicated' lists */
} Layouts;

/* '(%a: type, ...)': the arguments, each defined in the function's scope
 * as its Arg term; with 'lay' (an SPMD program) each type is followed by
 * a layout.  Fills 'f's argument fields even when it fails. */
static void parse_func_args(Parser *p, Func *f, Layouts *lay) {
  GPtrArray *names = g_ptr_array_new();
  GPtrArray *types = g_ptr_array_new();
  if (cursor_punct(&p->c, '(')) {
    while (!p->c.failed && !token_punct(&p->c.tok, ')')) {
      if (names->len > 0 && !cursor_punct(&p->c, ','))
        break;
      if (p->c.tok.kind != TK_VALUE) {
        cursor_expected(&p->c, "an argument ('%name: type')");
        break;
      }
      char *name = token_name(&p->c.tok);
      Loc nloc = p->c.tok.loc;
      g_ptr_array_add(names, name);
      cursor_next(&p->c);
      const Type *ty;
      if (!cursor_punct(&p->c, ':') || !parse_tensor_type(p, &ty))
        break;
      g_ptr_array_add(types, (gpointer)ty);
      Dist dist;
      if (lay) {
        if (!parse_dist(p, ty->rank, &dist, lay->axes_used, lay->reps))
          break;
        g_array_append_val(lay->dists, dist);
      }
      ValueDef *d = define(p, name, nloc);
      if (!d)
        break;
      d->term = term_arg((int)types->len - 1, ty);
    }
    if (!p->c.failed)
      cursor_next(&p->c); /* ')' */
  }
  f->nargs = (int)types->len;
  g_ptr_array_add(names, NULL);
  f->arg_names = (char **)g_ptr_array_free(names, FALSE);
  f->arg_types = (const Type **)g_ptr_array_free(types, FALSE);
}

/* '{updates = %arg}' after result 'i''s type 'type' (and its layout in
 * an SPMD program), where there is a '{': the argument the result is
 * the new value of (Func.result_updates), of the same type ('spmd': of
 * the same global type, which the layouts alone do not say). */
static void parse_result_updates(Parser *p, Func *f, int i, const Type *type,
                                 gboolean spmd, GArray *updates) {
  if (!token_punct(&p->c.tok, '{'))
    return;
  cursor_next(&p->c);
  if (!cursor_word(&p->c, "updates") || !cursor_punct(&p->c, '='))
    return;
  if (p->c.tok.kind != TK_VALUE) {
    cursor_expected(&p->c, "the argument the result updates ('%name')");
    return;
  }
  g_autofree char *name = token_name(&p->c.tok);
  int k = 0;
  while (k < f->nargs && strcmp(f->arg_names[k], name) != 0)
    k++;
  if (k == f->nargs) {
    cursor_fail(&p->c, p->c.tok.loc,
                "result %d updates '%%%s', which is no argument", i, name);
    return;
  }
  if (!spmd && f->arg_types[k] != type) {
    g_autofree char *want = type_to_string(f->arg_types[k]);
    g_autofree char *got = type_to_string(type);
    cursor_fail(&p->c, p->c.tok.loc,
                "result %d (%s) updates '%%%s', of another type (%s)", i, got,
                name, want);
    return;
  }
  for (guint j = 0; j < updates->len; j++)
    if (g_array_index(updates, int, j) == k) {
      cursor_fail(&p->c, p->c.tok.loc, "results %u and %d both update '%%%s'",
                  j, i, name);
      return;
    }
  if ((int)updates->len <= i) {
    int none = -1;
    while ((int)updates->len <= i)
      g_array_append_val(updates, none);
  }
  g_array_index(updates, int, i) = k;
  cursor_next(&p->c);
  cursor_punct(&p->c, '}');
}

/* '-> type' or '-> (type, ...)': the result types, each followed by a
 * layout when 'lay' is given, or else by the argument it updates.  Fills
 * 'f's result fields even when it fails. */
static void parse_func_results(Parser *p, Func *f, Layouts *lay) {
  GPtrArray *rtypes = g_ptr_array_new();
  g_autoptr(GArray) updates = g_array_new(FALSE, FALSE, sizeof(int));
  if (p->c.tok.kind != TK_ARROW) {
    cursor_expected(&p->c, "'->' and the result types");
  } else {
    cursor_next(&p->c);
    if (token_punct(&p->c.tok, '(')) {
      cursor_next(&p->c);
      while (!p->c.failed && !token_punct(&p->c.tok, ')')) {
        if (rtypes->len > 0 && !cursor_punct(&p->c, ','))
          break;
        const Type *ty;
        if (parse_tensor_type(p, &ty))
          g_ptr_array_add(rtypes, (gpointer)ty);
        Dist dist;
        if (!p->c.failed && lay &&
            parse_dist(p, ty->rank, &dist, lay->axes_used, lay->reps))
          g_array_append_val(lay->dists, dist);
        if (!p->c.failed)
          parse_result_updates(p, f, (int)rtypes->len - 1, ty, lay != NULL,
                               updates);
      }
      if (!p->c.failed)
        cursor_next(&p->c);
    } else {
      const Type *ty;
      if (parse_tensor_type(p, &ty))
        g_ptr_array_add(rtypes, (gpointer)ty);
    }
  }
  f->nresults = (int)rtypes->len;
  f->result_types = (const Type **)g_ptr_array_free(rtypes, FALSE);
  if (updates->len > 0 && !p->c.failed) {
    f->result_updates = g_new(int, (gsize)f->nresults);
    for (int i = 0; i < f->nresults; i++)
      f->result_updates[i] =
          i < (int)updates->len ? g_array_index(updates, int, i) : -1;
  }
}

/* The 'mesh {...}' ending an SPMD signature: every axis the layouts name
 * must be on it and every written 'replicated' must be right; then the
 * mesh and the layouts become 'f's SpmdInfo.  'at' is the function's
 * start, where signature-wide errors point. */
static void parse_func_mesh(Parser *p, Func *f, Loc at, const Layouts *lay) {
  Mesh mesh;
  if (!parse_mesh(p, &mesh))
    return;
  for (guint i = 0; i < lay->axes_used->len; i++)
    if (!mesh_axis_size(&mesh, g_array_index(lay->axes_used, char *, i))) {
      cursor_fail(&p->c, at,
                  "a layout uses axis \"%s\", which the mesh does not "
                  "have",
                  g_array_index(lay->axes_used, char *, i));
      break;
    }
  for (guint i = 0; i < lay->reps->len && !p->c.failed; i++)
    check_replicated(p, &g_array_index(lay->reps, Replicated, i), &mesh);
  if (p->c.failed)
    return;
  if ((int)lay->dists->len != f->nargs + f->nresults) {
    cursor_fail(&p->c, at,
                "an SPMD program gives every argument and result a "
                "layout");
    return;
  }
  f->spmd = g_new0(SpmdInfo, 1);
  f->spmd->mesh = mesh;
  Dist *all = (Dist *)lay->dists->data;
  f->spmd->arg_dists = g_memdup2(all, sizeof(Dist) * (gsize)MAX(f->nargs, 1));
  f->spmd->result_dists =
      g_memdup2(all + f->nargs, sizeof(Dist) * (gsize)MAX(f->nresults, 1));
}

/* The values after 'return' (at 'ret_loc') must match 'f's signature in
 * number and type. */
static gboolean check_returns(Parser *p, const Func *f,
                              const GPtrArray *results, Loc ret_loc) {
  if ((int)results->len != f->nresults)
    return cursor_fail(
        &p->c, ret_loc, "'@%s' returns %u value%s but its signature has %d",
        f->name, results->len, results->len == 1 ? "" : "s", f->nresults);
  for (int i = 0; i < f->nresults; i++) {
    const Term *r = g_ptr_array_index(results, i);
    if (r->type != f->result_types[i]) {
      g_autofree char *got = type_to_string(r->type);
      g_autofree char *want = type_to_string(f->result_types[i]);
      return cursor_fail(&p->c, ret_loc,
                         "result %d of '@%s' has type %s but the signature "
                         "says %s",
                         i + 1, f->name, got, want);
    }
  }
  return TRUE;
}

/* '{ statements return %a, ... }': the body, whose returned values
 * become 'f->body'. */
static gboolean parse_func_body(Parser *p, Func *f) {
  Loc open = p->c.tok.loc;
  if (!cursor_punct(&p->c, '{') || !parse_stmts(p, "return", open))
    return FALSE;
  Loc ret_loc = p->c.tok.loc;
  cursor_next(&p->c);
  g_autoptr(GPtrArray) results = g_ptr_array_new();
  while (!p->c.failed) {
    if (results->len > 0) {
      if (!token_punct(&p->c.tok, ','))
        break;
      cursor_next(&p->c);
    }
    const Term *r = parse_use(p);
    if (r)
      g_ptr_array_add(results, (gpointer)r);
  }
  if (p->c.failed)
    return FALSE;
  if (!token_punct(&p->c.tok, '}'))
    return cursor_fail(&p->c, p->c.tok.loc,
                       "'}' expected after 'return' (to close '{' at line "
                       "%d)",
                       open.line);
  cursor_next(&p->c);
  if (!check_returns(p, f, results, ret_loc))
    return FALSE;
  f->body = term_tuple(f->nresults, (const Term *const *)results->pdata);
  return TRUE;
}

/* 'func @name(args) -> results { body }', or 'spmd @name(...)' whose
 * arguments and results carry layouts and whose signature ends with the
 * mesh.  NULL after a diagnostic. */
static Func *parse_func(Parser *p) {
  Loc at = p->c.tok.loc;
  gboolean spmd = token_is(&p->c.tok, "spmd");
  if (!spmd && !cursor_word(&p->c, "func"))
    return NULL;
  if (spmd)
    cursor_next(&p->c);
  if (p->c.tok.kind != TK_SYMBOL) {
    cursor_expected(&p->c, "a function name ('@name')");
    return NULL;
  }
  g_autoptr(GHashTable) defs =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GPtrArray) scope = g_ptr_array_new();
  g_autoptr(GArray) recorded = g_array_new(FALSE, FALSE, sizeof(Recorded));
  p->defs = defs;
  p->scope = scope;
  p->recorded = recorded;
  p->depth = 0;
  Func *f = g_new0(Func, 1);
  f->name = token_name(&p->c.tok);
  f->loc = at;
  g_autoptr(GArray) dists = g_array_new(FALSE, TRUE, sizeof(Dist));
  g_autoptr(GArray) axes_used = g_array_new(FALSE, FALSE, sizeof(char *));
  g_autoptr(GArray) reps = g_array_new(FALSE, FALSE, sizeof(Replicated));
  Layouts layouts = {dists, axes_used, reps};
  Layouts *lay = spmd ? &layouts : NULL;
  cursor_next(&p->c);
  parse_func_args(p, f, lay);
  if (p->c.failed)
    goto fail;
  parse_func_results(p, f, lay);
  if (lay && !p->c.failed)
    parse_func_mesh(p, f, at, lay);
  if (!p->c.failed && f->nresults == 0)
    cursor_fail(&p->c, at, "function '@%s' returns nothing", f->name);
  if (!parse_func_body(p, f))
    goto fail;
  p->defs = NULL;
  p->scope = NULL;
  return f;
fail:
  p->defs = NULL;
  p->scope = NULL;
  func_free(f);
  return NULL;
}

Module *parse_module(const Source *src, Diag *diag) {
  Parser p = {0};
  cursor_init(&p.c, src, diag);
  g_autoptr(Module) m = module_new();
  p.m = m;
  cursor_next(&p.c);
  while (!p.c.failed && p.c.tok.kind != TK_EOF) {
    Func *f = parse_func(&p);
    if (!f)
      break;
    for (guint i = 0; i < m->funcs->len; i++) {
      Func *g = g_ptr_array_index(m->funcs, i);
      if (strcmp(g->name, f->name) == 0) {
        cursor_fail(&p.c, f->loc, "function '@%s' is defined twice", f->name);
        diag_note(diag, g->loc, "first defined here");
      }
    }
    g_ptr_array_add(m->funcs, f);
  }
  if (!p.c.failed && m->funcs->len == 0)
    cursor_fail(&p.c, p.c.tok.loc,
                "expected 'func': the file defines no function");
  if (!p.c.failed && !module_entry(m))
    cursor_fail(&p.c, ((Func *)g_ptr_array_index(m->funcs, 0))->loc,
                "several functions and none is '@main'");
  token_clear(&p.c.tok);
  if (p.c.failed)
    return NULL;
  return g_steal_pointer(&m);
}

Module *read_module_source(ModuleReader read, const Source *src, Diag *errors) {
  Diag d;
  diag_init(&d, src);
  Module *m = read(src, &d);
  if (!m && errors)
    diag_reason(errors, "%s", diag_text(&d));
  diag_clear(&d);
  return m;
}

Module *parse_text(const char *name, const char *text, gsize len,
                   Diag *errors) {
  g_autoptr(Source) src = source_new(name, text, len);
  return read_module_source(parse_module, src, errors);
}

Module *parse_file(const char *path, Diag *errors, GError **error) {
  g_autoptr(Source) src = NULL;
  if (!source_load(path, &src, error))
    return NULL;
  return read_module_source(parse_module, src, errors);
}
