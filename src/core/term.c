/* term.c — the term store: immutable, hash-consed terms.
 *
 * Every Term is created through term_intern(), which looks the node up by
 * content (kind, operator, index, types, attributes and operand pointers)
 * and returns the existing node when there is one.  Structural equality is
 * therefore pointer equality, and a rewrite that rebuilds the path to the
 * root shares every untouched subterm with the old term.
 *
 * Binders are locally nameless (de Bruijn indices), so alpha-equivalent
 * terms are one node too.  Each node records which indices occur loose in
 * it ('loose' mask), which lets term_shift() stop at closed subterms and
 * lets the printer place a value in the region of the innermost binder it
 * uses.
 *
 * Constructors type-check: a node exists only if it is well typed (the
 * operator rules are in typerule.c).  Nodes live until a collection
 * (term_store_collect) finds no root that reaches them; only an owner of
 * every live term can call it (the agent protocol, between requests).
 */
#include "core/core.h"

#include <string.h>

static GHashTable *store;
static size_t store_bytes; /* bytes of Term nodes allocated */

static guint term_hash(gconstpointer p) { return ((const Term *)p)->hash; }

static gboolean term_equal(gconstpointer pa, gconstpointer pb) {
  const Term *a = pa, *b = pb;
  if (a->kind != b->kind || a->op != b->op || a->index != b->index ||
      a->nargs != b->nargs || a->type != b->type || a->range != b->range ||
      a->axis != b->axis || a->attrs != b->attrs)
    return FALSE;
  for (int i = 0; i < a->nargs; i++)
    if (a->args[i] != b->args[i])
      return FALSE;
  return TRUE;
}

static guint64 mix(guint64 h, guint64 v) {
  h ^= v + G_GUINT64_CONSTANT(0x9e3779b97f4a7c15) + (h << 6) + (h >> 2);
  return h * G_GUINT64_CONSTANT(0xff51afd7ed558ccd);
}

static guint64 type_content(const Type *t) {
  guint64 h = mix(t->kind, t->dtype);
  h = mix(h, (guint64)t->rank);
  for (int i = 0; i < t->rank; i++)
    h = mix(h, (guint64)t->dims[i]);
  return mix(mix(h, (guint64)t->n), (guint64)t->w);
}

static guint64 value_content(const AttrValue *v) {
  guint64 h = mix(0, v->kind);
  switch (v->kind) {
  case AV_INT:
    return mix(h, (guint64)v->i);
  case AV_FLOAT: {
    guint64 bits;
    memcpy(&bits, &v->f, sizeof bits);
    return mix(h, bits);
  }
  case AV_SYMBOL:
    return mix(h, g_str_hash(v->sym));
  case AV_LIST:
    for (int i = 0; i < v->count; i++)
      h = mix(h, value_content(&v->items[i]));
    return h;
  }
  return h;
}

/* A hash of what the node is, built from its operands' content hashes:
 * independent of addresses, so equal programs hash equally in any run. */
static guint64 content_hash(const Term *k) {
  guint64 h = mix(k->kind, k->op);
  h = mix(h, (guint64)(gint64)k->index);
  if (k->type)
    h = mix(h, type_content(k->type));
  if (k->range)
    h = mix(h, type_content(k->range));
  if (k->axis)
    h = mix(h, g_str_hash(k->axis));
  for (int i = 0; k->attrs && i < k->attrs->count; i++)
    h = mix(mix(h, g_str_hash(k->attrs->keys[i])),
            value_content(&k->attrs->values[i]));
  for (int i = 0; i < k->nargs; i++)
    h = mix(h, k->args[i]->content);
  return h;
}

/* Returns the unique node equal to 'key' (whose args follow it), copying
 * it into the store when new.  Fills in the derived fields. */
static const Term *term_intern(Term *key) {
  guint h = (guint)key->kind * 131u + (guint)key->op;
  h = h * 1000003u + (guint)key->index;
  h = h * 1000003u + g_direct_hash(key->type);
  h = h * 1000003u + g_direct_hash(key->range);
  h = h * 1000003u + g_direct_hash(key->axis);
  h = h * 1000003u + g_direct_hash(key->attrs);
  for (int i = 0; i < key->nargs; i++)
    h = h * 1000003u + g_direct_hash(key->args[i]);
  key->hash = h;
  if (!store)
    store = g_hash_table_new(term_hash, term_equal);
  const Term *found = g_hash_table_lookup(store, key);
  if (found)
    return found;

  guint64 loose = 0;
  guint32 height = 0;
  guint16 nest = 0;
  for (int i = 0; i < key->nargs; i++) {
    loose |= key->args[i]->loose;
    height = MAX(height, key->args[i]->height + 1);
    /* a closed operand is computed at the top, outside any region here */
    if (key->args[i]->loose)
      nest = MAX(nest, key->args[i]->nest);
  }
  if (key->kind == TM_TILE || key->kind == TM_SUM)
    nest++;
  key->nest = nest;
  if (key->kind == TM_BVAR)
    loose = G_GUINT64_CONSTANT(1) << key->index;
  if (key->kind == TM_TILE || key->kind == TM_SUM)
    loose >>= 1; /* the body's index 0 is bound here */
  key->loose = loose;
  key->height = height;
  key->content = content_hash(key);

  gsize size = sizeof(Term) + sizeof(Term *) * (gsize)key->nargs;
  Term *t = g_malloc(size);
  memcpy(t, key, size);
  store_bytes += size;
  g_hash_table_add(store, t);
  return t;
}

size_t term_store_size(void) { return store ? g_hash_table_size(store) : 0; }

static void mark(GPtrArray *todo) {
  while (todo->len > 0) {
    Term *t = g_ptr_array_steal_index_fast(todo, todo->len - 1);
    if (t->marked)
      continue;
    t->marked = 1;
    for (int i = 0; i < t->nargs; i++)
      if (!t->args[i]->marked)
        g_ptr_array_add(todo, (gpointer)t->args[i]);
    if (!term_is_closed(t) && term_lo(t) > 0) /* may make it: unmarked */
      g_ptr_array_add(todo, (gpointer)term_placed(t));
  }
}

static gboolean key_unmarked(gpointer key, gpointer value, gpointer data) {
  return !((const Term *)key)->marked;
}

static gboolean sweep(gpointer key, gpointer value, gpointer data) {
  Term *t = key;
  if (t->marked) {
    t->marked = 0;
    return FALSE;
  }
  g_ptr_array_add(data, t);
  return TRUE;
}

size_t term_store_collect(const Term *const *roots, gsize nroots,
                          GHashTable *const *tables, gsize ntables) {
  if (!store)
    return 0;
  GPtrArray *todo = g_ptr_array_new();
  for (gsize i = 0; i < nroots; i++)
    g_ptr_array_add(todo, (gpointer)roots[i]);
  mark(todo);
  g_ptr_array_unref(todo);
  for (gsize i = 0; i < ntables; i++)
    g_hash_table_foreach_remove(tables[i], key_unmarked, NULL);
  GPtrArray *dead = g_ptr_array_new();
  g_hash_table_foreach_remove(store, sweep, dead);
  for (guint i = 0; i < dead->len; i++) {
    Term *t = g_ptr_array_index(dead, i);
    store_bytes -= sizeof(Term) + sizeof(Term *) * (gsize)t->nargs;
    g_free(t);
  }
  size_t n = dead->len;
  g_ptr_array_unref(dead);
  return n;
}
size_t term_store_bytes(void) { return store_bytes; }

/* A key on the stack with room for 'n' operands. */
#define KEY(name, n)                                                           \
  union {                                                                      \
    Term t;                                                                    \
    char bytes[sizeof(Term) + sizeof(Term *) * (n)];                           \
  } name##_u = {0};                                                            \
  Term *name = &name##_u.t

const Term *term_arg(int index, const Type *type) {
  KEY(k, 0);
  k->kind = TM_ARG;
  k->index = index;
  k->type = type;
  return term_intern(k);
}

const Term *term_bvar(int index, const Type *range) {
  g_assert(index >= 0 && index < 64 && range->kind == TY_RANGE);
  KEY(k, 0);
  k->kind = TM_BVAR;
  k->index = index;
  k->type = range;
  return term_intern(k);
}

/* The key sits on the stack; only operators with many operands
 * (concatenate) need a heap one. */
static const Term *intern_with_args(Term *proto, int nargs,
                                    const Term *const *args) {
  KEY(small, 8);
  gsize size = sizeof(Term) + sizeof(Term *) * (gsize)nargs;
  Term *k = nargs <= 8 ? small : g_malloc0(size);
  *k = *proto;
  k->nargs = nargs;
  if (nargs > 0)
    memcpy(k->args, args, sizeof(Term *) * (gsize)nargs);
  const Term *t = term_intern(k);
  if (k != small)
    g_free(k);
  return t;
}

const Term *term_op(Op op, int nargs, const Term *const *args,
                    const Attrs *attrs, const Type *written, Diag *err) {
  for (int i = 0; i < nargs; i++)
    if (args[i]->type->kind != TY_TENSOR) {
      diag_reason(err, "operand %d of '%s' is a range, not a tensor", i + 1,
                  op_name(op));
      return NULL;
    }
  const Type *type = typerule_infer(op, nargs, args, attrs, written, err);
  if (!type)
    return NULL;
  if (!type_size_ok(type)) {
    diag_reason(err, "the result of '%s' has more than 2^48 elements",
                op_name(op));
    return NULL;
  }
  if (written && written != type) {
    g_autofree char *w = type_to_string(written);
    g_autofree char *inf = type_to_string(type);
    diag_reason(err, "written result type %s does not match the inferred %s", w,
                inf);
    return NULL;
  }
  Term proto = {.kind = TM_OP, .op = op, .type = type, .attrs = attrs};
  return intern_with_args(&proto, nargs, args);
}

const Term *term_slice(int dim, const Term *x, const Term *r, Diag *err) {
  if (r->type->kind != TY_RANGE) {
    diag_reason(err, "partir.slice needs a range value in [...]");
    return NULL;
  }
  if (x->type->kind != TY_TENSOR) {
    diag_reason(err, "partir.slice of a range");
    return NULL;
  }
  if (dim < 0 || dim >= x->type->rank) {
    diag_reason(err, "partir.slice dimension %d out of range for rank %d", dim,
                x->type->rank);
    return NULL;
  }
  if (x->type->dims[dim] != r->type->n) {
    diag_reason(err,
                "partir.slice: dimension %d has size %" G_GINT64_FORMAT
                " but the range covers %" G_GINT64_FORMAT,
                dim, x->type->dims[dim], r->type->n);
    return NULL;
  }
  KEY(k, 2);
  k->kind = TM_SLICE;
  k->index = dim;
  k->nargs = 2;
  k->type = type_with_dim(x->type, dim, r->type->w);
  k->args[0] = x;
  k->args[1] = r;
  return term_intern(k);
}

static gboolean check_range(const Type *range, Diag *err) {
  if (range->n <= 0 || range->w <= 0) {
    diag_reason(err,
                "range<%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                "> must have positive size and width",
                range->n, range->w);
    return FALSE;
  }
  if (range->n % range->w != 0) {
    diag_reason(err,
                "uneven range<%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                ">: the width must divide the size (uneven ranges are not "
                "supported yet)",
                range->n, range->w);
    return FALSE;
  }
  return TRUE;
}

/* Regions nest at most PARTIR_MAX_REGIONS deep: binder indices, the
 * printer and the interpreter rely on it. */
static gboolean check_nest(const Term *body, Diag *err) {
  if ((body->loose ? body->nest : 0) + 1 > PARTIR_MAX_REGIONS) {
    diag_reason(err, "regions would nest deeper than %d", PARTIR_MAX_REGIONS);
    return FALSE;
  }
  return TRUE;
}

const Term *term_tile(int dim, const Type *range, const char *axis,
                      const Term *body, Diag *err) {
  if (!check_range(range, err) || !check_nest(body, err))
    return NULL;
  const Type *bt = body->type;
  if (bt->kind != TY_TENSOR) {
    diag_reason(err, "partir.tile body yields a range, not a tensor");
    return NULL;
  }
  if (dim < 0 || dim >= bt->rank) {
    diag_reason(err, "partir.tile dimension %d out of range for rank %d", dim,
                bt->rank);
    return NULL;
  }
  if (bt->dims[dim] != range->w) {
    diag_reason(err,
                "partir.tile body yields size %" G_GINT64_FORMAT
                " in dimension %d, but the range width is %" G_GINT64_FORMAT,
                bt->dims[dim], dim, range->w);
    return NULL;
  }
  const Type *type = type_with_dim(bt, dim, range->n);
  if (!type_size_ok(type)) {
    diag_reason(err, "partir.tile result has more than 2^48 elements");
    return NULL;
  }
  KEY(k, 1);
  k->kind = TM_TILE;
  k->index = dim;
  k->nargs = 1;
  k->type = type;
  k->range = range;
  k->axis = axis;
  k->args[0] = body;
  return term_intern(k);
}

const Term *term_sum(const Type *range, const char *axis, const Term *body,
                     Diag *err) {
  if (!check_range(range, err) || !check_nest(body, err))
    return NULL;
  if (body->type->kind != TY_TENSOR) {
    diag_reason(err, "partir.sum body yields a range, not a tensor");
    return NULL;
  }
  if (body->type->dtype == DT_I1) {
    diag_reason(err, "partir.sum of i1 values is not defined");
    return NULL;
  }
  KEY(k, 1);
  k->kind = TM_SUM;
  k->nargs = 1;
  k->type = body->type;
  k->range = range;
  k->axis = axis;
  k->args[0] = body;
  return term_intern(k);
}

const Term *term_tuple(int n, const Term *const *args) {
  Term proto = {.kind = TM_TUPLE};
  return intern_with_args(&proto, n, args);
}

/* Same node with other operands whose types are known to be unchanged. */
static const Term *rebuild_same_types(const Term *t, const Term *const *args) {
  Term proto = *t;
  return intern_with_args(&proto, t->nargs, args);
}

const Term *term_with_args(const Term *t, const Term *const *args, Diag *err) {
  switch (t->kind) {
  case TM_ARG:
  case TM_BVAR:
    return t;
  case TM_OP:
    return term_op(t->op, t->nargs, args, t->attrs,
                   op_takes_written_type(t->op) ? t->type : NULL, err);
  case TM_SLICE:
    return term_slice(t->index, args[0], args[1], err);
  case TM_TILE:
    return term_tile(t->index, t->range, t->axis, args[0], err);
  case TM_SUM:
    return term_sum(t->range, t->axis, args[0], err);
  case TM_TUPLE:
    return term_tuple(t->nargs, args);
  }
  g_assert_not_reached();
}

const Term *term_map_args(const Term *t, TermMapFn fn, void *ud, Diag *err) {
  const Term *stack[8];
  const Term **args =
      t->nargs <= 8 ? stack : g_new(const Term *, (gsize)t->nargs);
  gboolean changed = FALSE;
  for (int i = 0; i < t->nargs; i++) {
    args[i] = fn(ud, t->args[i]);
    changed |= args[i] != t->args[i];
  }
  const Term *r = changed ? term_with_args(t, args, err) : t;
  if (args != stack)
    g_free(args);
  return r;
}

static const Term *shift_rec(const Term *t, int by, int cutoff,
                             GHashTable *memo) {
  if ((t->loose >> cutoff) == 0)
    return t;
  if (t->kind == TM_BVAR) {
    g_assert(t->index + by >= 0 && t->index + by < 64);
    return term_bvar(t->index + by, t->type);
  }
  /* memo entries are per cutoff: key on (t, cutoff) by offsetting */
  gpointer key = (gpointer)((guintptr)t + (guintptr)cutoff);
  const Term *done = g_hash_table_lookup(memo, key);
  if (done)
    return done;
  int inner = cutoff + (t->kind == TM_TILE || t->kind == TM_SUM);
  const Term *stack_args[8];
  const Term **args =
      t->nargs <= 8 ? stack_args : g_new(const Term *, (gsize)t->nargs);
  for (int i = 0; i < t->nargs; i++)
    args[i] = shift_rec(t->args[i], by, inner, memo);
  const Term *r = rebuild_same_types(t, args);
  if (args != stack_args)
    g_free(args);
  g_hash_table_insert(memo, key, (gpointer)r);
  return r;
}

const Term *term_shift(const Term *t, int by, int cutoff) {
  if (by == 0 || (t->loose >> cutoff) == 0)
    return t;
  g_autoptr(GHashTable) memo = g_hash_table_new(NULL, NULL);
  return shift_rec(t, by, cutoff, memo);
}

const Term *term_placed(const Term *t) {
  return term_is_closed(t) ? t : term_shift(t, -term_lo(t), 0);
}
