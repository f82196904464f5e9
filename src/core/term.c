/* term.c — the term store: immutable, hash-consed terms.
 *
 * Every Term is created through term_intern(), which looks the node up by
 * content (kind, operator, index, types, attributes and operand pointers)
 * and returns the existing node when there is one.  Structural equality is
 * therefore pointer equality, and a rewrite that rebuilds the path to the
 * root shares every untouched subterm with the old term.
 *
 * Binders are nameless: a range variable is its binder's de Bruijn
 * *level* (how many binders enclose that binder), and every region is
 * built at its home, so alpha-equivalent terms are one node too, and a
 * value computed in one region and used in a region nested inside it is
 * the same node in both (with de Bruijn indices it would be a shifted
 * copy under every binder between: in a stack of layers, each layer's
 * regions held a copy of every earlier layer).  Each node records which
 * levels occur free in it ('loose' mask): the printer, the interpreter
 * and the lowering place a value in the region of the highest level it
 * uses, and renaming (relevel) stops at terms that use no renamed level.
 *
 * Constructors type-check: a node exists only if it is well typed (the
 * operator rules are in typerule.c).  Nodes live until a collection
 * (term_store_collect) finds no root that reaches them; only an owner of
 * every live term can call it (the agent protocol, between requests).
 */
#include "core/core.h"

#include <string.h>

static GHashTable *store;
static void relevel_cache_clear(void);
static size_t store_bytes; /* bytes of Term nodes allocated */

static guint term_hash(gconstpointer p) { return ((const Term *)p)->hash; }

static gboolean term_equal(gconstpointer pa, gconstpointer pb) {
  const Term *a = pa, *b = pb;
  if (a->kind != b->kind || a->op != b->op || a->index != b->index ||
      a->nargs != b->nargs || a->type != b->type || a->range != b->range ||
      a->axis != b->axis || a->attrs != b->attrs || a->binder != b->binder)
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
 * independent of addresses, so equal programs hash equally in any run;
 * an operator by its name, not its place in ops.def, so that adding an
 * operator changes no program's hash. */
static guint64 content_hash(const Term *k) {
  guint64 h = mix(k->kind, k->kind == TM_OP ? g_str_hash(op_name(k->op)) : 0);
  h = mix(h, (guint64)(gint64)k->index);
  if (k->kind == TM_TILE || k->kind == TM_SUM)
    h = mix(h, (guint64)(gint64)k->binder);
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

/* Nodes of up to POOL_MAX_ARGS operands come from free lists by
 * operand count, carved from blocks that are never given back: the
 * store makes and frees nodes by the hundred thousand (the agent
 * protocol makes about 2,800 a step and collects them in batches), and
 * the C library's allocator spent 6 % of a step's instructions on them.  Memory
 * stays at the store's peak, as it did with malloc's arenas.  Under
 * AddressSanitizer every node is its own allocation, so that a use of a
 * freed node is still caught. */
#if defined(__SANITIZE_ADDRESS__)
#define NODE_POOL 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NODE_POOL 0
#endif
#endif
#ifndef NODE_POOL
#define NODE_POOL 1
#endif
#define POOL_MAX_ARGS 8
#define POOL_BLOCK_BYTES ((gsize)256 * 1024)

static void *pool_free[POOL_MAX_ARGS + 1]; /* linked by their first word */
static char *pool_at;                      /* the last block's room */
static gsize pool_left;

static gsize node_size(int nargs) {
  return sizeof(Term) + sizeof(Term *) * (gsize)nargs;
}

static Term *node_alloc(int nargs) {
  gsize size = node_size(nargs);
  if (!NODE_POOL || nargs > POOL_MAX_ARGS)
    return g_malloc(size);
  void *p = pool_free[nargs];
  if (p) {
    pool_free[nargs] = *(void **)p;
    return p;
  }
  if (pool_left < size) {
    pool_at = g_malloc(POOL_BLOCK_BYTES); /* held by the nodes: see above */
    pool_left = POOL_BLOCK_BYTES;
  }
  p = pool_at;
  pool_at += size;
  pool_left -= size;
  return p;
}

static void node_free(Term *t) {
  if (!NODE_POOL || t->nargs > POOL_MAX_ARGS) {
    g_free(t);
    return;
  }
  *(void **)t = pool_free[t->nargs];
  pool_free[t->nargs] = t;
}

/* Returns the unique node equal to 'key' (whose args follow it), copying
 * it into the store when new.  Fills in the derived fields. */
static const Term *term_intern(Term *key) {
  guint h = (guint)key->kind * 131u + (guint)key->op;
  h = h * 1000003u + (guint)key->index;
  h = h * 1000003u + (guint)key->binder;
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
  for (int i = 0; i < key->nargs; i++) {
    loose |= key->args[i]->loose;
    height = MAX(height, key->args[i]->height + 1);
  }
  if (key->kind == TM_BVAR)
    loose = G_GUINT64_CONSTANT(1) << key->index;
  if (key->kind == TM_TILE || key->kind == TM_SUM)
    loose &= ~(G_GUINT64_CONSTANT(1) << key->binder); /* bound here */
  key->loose = loose;
  key->height = height;
  key->content = content_hash(key);

  gsize size = node_size(key->nargs);
  Term *t = node_alloc(key->nargs);
  memcpy(t, key, size);
  store_bytes += size;
  g_hash_table_add(store, t);
  return t;
}

size_t term_store_size(void) { return store ? g_hash_table_size(store) : 0; }

static size_t store_ceiling;

size_t term_store_ceiling(size_t max) {
  size_t before = store_ceiling;
  store_ceiling = max;
  return before;
}

gboolean term_store_past_ceiling(void) {
  return store_ceiling && term_store_size() > store_ceiling;
}

static void mark(GPtrArray *todo) {
  while (todo->len > 0) {
    Term *t = g_ptr_array_steal_index_fast(todo, todo->len - 1);
    if (t->marked)
      continue;
    t->marked = 1;
    for (int i = 0; i < t->nargs; i++)
      if (!t->args[i]->marked)
        g_ptr_array_add(todo, (gpointer)t->args[i]);
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
  relevel_cache_clear(); /* its terms may be freed */
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
    store_bytes -= node_size(t->nargs);
    node_free(t);
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

const Term *term_bvar(int level, const Type *range) {
  g_assert(level >= 0 && level < 64 && range->kind == TY_RANGE);
  KEY(k, 0);
  k->kind = TM_BVAR;
  k->index = level;
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

const Term *term_op2(Op op, const Term *x, const Term *y, const Attrs *a,
                     Diag *err) {
  if (!x || !y)
    return NULL;
  const Term *args[2] = {x, y};
  return term_op(op, 2, args, a ? a : attrs_empty(), NULL, err);
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
  /* A range value picks one of its range's parts; the slice takes that
   * part of a dimension cut into as many.  Usually the dimension is the
   * range's size, and an uneven range's last part is padded to its width
   * (docs/spmd.md, "Uneven sizes"); a reshape carries a split to a
   * dimension of another size (128 columns in 2 parts are 4 heads in 2
   * parts), which the parts must divide. */
  int64_t size = x->type->dims[dim], parts = type_range_parts(r->type);
  if (parts < 1 || r->type->w > r->type->n) { /* its tile refuses it, after */
    diag_reason(err,
                "partir.slice: range<%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                "> has no whole part",
                r->type->n, r->type->w);
    return NULL;
  }
  int64_t width = type_range_cut(r->type, size);
  if (width == 0) {
    diag_reason(err,
                "partir.slice: range<%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                "> has %" G_GINT64_FORMAT " parts, which do not divide "
                "dimension %d of size %" G_GINT64_FORMAT,
                r->type->n, r->type->w, parts, dim, size);
    return NULL;
  }
  KEY(k, 2);
  k->kind = TM_SLICE;
  k->index = dim;
  k->nargs = 2;
  k->type = type_with_dim(x->type, dim, width);
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
  if (range->w > range->n) {
    diag_reason(err,
                "range<%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                ">: the width is larger than the size",
                range->n, range->w);
    return FALSE;
  }
  return TRUE;
}

int term_region_level(const Term *body, int level) {
  guint64 outside = body->loose & ~(G_GUINT64_CONSTANT(1) << level);
  g_assert((outside >> level) == 0); /* the binder is above what it uses */
  return outside ? 64 - __builtin_clzll(outside) : 0;
}

/* The body with its binder at its home level, or NULL + err.  Regions
 * nest at most PARTIR_MAX_REGIONS deep: levels are bits of 64-bit masks.
 * Only the nesting of the printed program counts, never the length of a
 * chain of regions computed one after another. */
static const Term *region_body(const Term *body, int level, int *home,
                               Diag *err) {
  *home = term_region_level(body, level);
  if (*home >= PARTIR_MAX_REGIONS) {
    diag_reason(err, "regions would nest deeper than %d", PARTIR_MAX_REGIONS);
    return NULL;
  }
  if (*home == level || !term_uses(body, level))
    return body;
  return term_rename_level(body, level, *home, err);
}

/* TRUE when 't' uses, free, a range variable of an uneven range other
 * than level 'own': a region over it encloses the one being built. */
static gboolean uses_uneven_outside(const Term *t, int own, GHashTable *seen) {
  if ((t->loose & ~(G_GUINT64_CONSTANT(1) << own)) == 0 ||
      !g_hash_table_add(seen, (gpointer)t))
    return FALSE;
  if (t->kind == TM_BVAR)
    return t->index != own && !type_range_even(t->type);
  for (int i = 0; i < t->nargs; i++)
    if (uses_uneven_outside(t->args[i], own, seen))
      return TRUE;
  return FALSE;
}

/* An uneven region nested in another uneven region's body (padding
 * inside padding) is refused: its masks and the lowering's padded
 * chunks are made for one padded dimension at a time, and the nesting
 * is not checked (docs/spmd.md, "Uneven sizes"). */
static gboolean check_uneven_nesting(const Type *range, const Term *body,
                                     int level, Diag *err) {
  if (type_range_even(range))
    return TRUE;
  g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
  if (!uses_uneven_outside(body, level, seen))
    return TRUE;
  diag_reason(err,
              "an uneven range<%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
              "> inside a region over another uneven range is not supported",
              range->n, range->w);
  return FALSE;
}

const Term *term_tile(int dim, const Type *range, const char *axis,
                      const Term *body, int level, Diag *err) {
  int home;
  if (!check_range(range, err) ||
      !check_uneven_nesting(range, body, level, err) ||
      !(body = region_body(body, level, &home, err)))
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
  k->binder = home;
  k->args[0] = body;
  return term_intern(k);
}

const Term *term_sum(const Type *range, const char *axis, const Term *body,
                     int level, Diag *err) {
  int home;
  if (!check_range(range, err) ||
      !check_uneven_nesting(range, body, level, err) ||
      !(body = region_body(body, level, &home, err)))
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
  k->binder = home;
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
  case TM_OP: {
    /* A type rule reads its operands' types alone: with the same ones,
     * 't' checked already, and its type stands (the rewrite passes
     * rebuild most values this way: a rule keeps the type it rewrites). */
    int i = 0;
    while (i < t->nargs && args[i]->type == t->args[i]->type)
      i++;
    if (i == t->nargs)
      return rebuild_same_types(t, args);
    return term_op(t->op, t->nargs, args, t->attrs,
                   op_takes_written_type(t->op) ? t->type : NULL, err);
  }
  case TM_SLICE:
    return term_slice(t->index, args[0], args[1], err);
  case TM_TILE:
    return term_tile(t->index, t->range, t->axis, args[0], t->binder, err);
  case TM_SUM:
    return term_sum(t->range, t->axis, args[0], t->binder, err);
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

/* ------------------------------------------------------------- relevel */

/* Renamings done before, within a call and across calls: (term, the
 * level each of its free levels becomes) -> result.  Hash-consing makes
 * the result a function of that key alone, so one table serves every
 * region and every call: within a call it makes a renaming cost the
 * size of its result (a value reached from many regions, under many
 * nested regions, is renamed once per distinct renaming of what it uses,
 * never once per path to it), and across calls it keeps a propagation
 * from renaming the same values again and again (a tile pushed into a
 * region and pulled out again renames everything computed from it, and
 * the next layer's turn renames that again).  The key spells out the
 * whole renaming of the term's free levels: a key that described only
 * some of them would need a table per region as well, whose entries die
 * with the region, and nested regions sharing their bodies would then be
 * renamed once per path — exponential in the nesting.  Cleared by a
 * collection (its terms may go) and, between calls, when it has grown
 * past RELEVEL_CACHE_MAX; never during a call. */
#define RELEVEL_CACHE_MAX (1u << 22)

typedef struct RelevelKey {
  const Term *t;
  guint8 n;      /* free levels of t */
  guint8 to[64]; /* what each becomes, lowest level first (n used) */
} RelevelKey;

static GHashTable *relevel_cache;

static guint relevel_key_hash(gconstpointer p) {
  const RelevelKey *k = p;
  guint h = g_direct_hash(k->t);
  for (int i = 0; i < k->n; i++)
    h = h * 31u + k->to[i];
  return h;
}

static gboolean relevel_key_equal(gconstpointer a, gconstpointer b) {
  const RelevelKey *x = a, *y = b;
  return x->t == y->t && x->n == y->n && memcmp(x->to, y->to, x->n) == 0;
}

static void relevel_cache_clear(void) {
  if (relevel_cache)
    g_hash_table_remove_all(relevel_cache);
}

/* Renaming levels.  'to[l]' is the level l becomes ('mask' has bit l set
 * when it differs from l).  A region whose outside levels change moves to
 * its new home: its own level is renamed too while its body is rebuilt
 * (and, inside it, the same level means its binder, not an outer one). */
static GHashTable *carried_names; /* term_carry_names */

void term_carry_names(GHashTable *names) { carried_names = names; }

struct Relevel {
  int to[64];
  const Type *as[64]; /* the range level l's variables take; NULL: theirs */
  guint64 mask;       /* levels renamed or retyped */
  Diag *err;
  gboolean failed;
  /* results of renamings that retype a level: the key's levels say which
   * are retyped but not to what, which only this Relevel knows */
  GHashTable *retyped;
};

Relevel *relevel_new(void) {
  Relevel *rl = g_new0(Relevel, 1);
  for (int l = 0; l < 64; l++)
    rl->to[l] = l;
  return rl;
}

static void relevel_set(Relevel *rl, int from, int to, const Type *range) {
  g_assert(from >= 0 && from < 64 && to >= 0 && to < 64);
  rl->to[from] = to;
  rl->as[from] = range;
  if (from != to || range)
    rl->mask |= G_GUINT64_CONSTANT(1) << from;
  else
    rl->mask &= ~(G_GUINT64_CONSTANT(1) << from);
}

void relevel_map(Relevel *rl, int from, int to) {
  relevel_set(rl, from, to, NULL);
}

void relevel_map_range(Relevel *rl, int from, int to, const Type *range) {
  g_assert(range->kind == TY_RANGE);
  relevel_set(rl, from, to, range);
}

void relevel_free(Relevel *rl) {
  if (rl->retyped)
    g_hash_table_unref(rl->retyped);
  g_free(rl);
}

static const Term *relevel_rec(Relevel *rl, const Term *t);

/* A region whose outside levels are renamed: rebuilt at its new home. */
static const Term *relevel_region(Relevel *rl, const Term *t) {
  guint64 outside = 0;
  for (guint64 m = t->loose; m; m &= m - 1)
    outside |= G_GUINT64_CONSTANT(1) << rl->to[__builtin_ctzll(m)];
  int k = t->binder;
  int home = outside ? 64 - __builtin_clzll(outside) : 0;
  if (home >= PARTIR_MAX_REGIONS) {
    diag_reason(rl->err, "regions would nest deeper than %d",
                PARTIR_MAX_REGIONS);
    rl->failed = TRUE;
    return t;
  }
  /* inside, level k is this region's binder: its own renaming */
  int saved_to = rl->to[k];
  const Type *saved_as = rl->as[k];
  guint64 saved_mask = rl->mask;
  relevel_map(rl, k, home);
  const Term *body = relevel_rec(rl, t->args[0]);
  rl->to[k] = saved_to;
  rl->as[k] = saved_as;
  rl->mask = saved_mask;
  if (rl->failed)
    return t;
  const Term *r =
      t->kind == TM_TILE
          ? term_tile(t->index, t->range, t->axis, body, home, rl->err)
          : term_sum(t->range, t->axis, body, home, rl->err);
  if (!r) {
    rl->failed = TRUE;
    return t;
  }
  return r;
}

static const Term *relevel_rec(Relevel *rl, const Term *t) {
  if (!(t->loose & rl->mask) || rl->failed)
    return t;
  if (term_store_past_ceiling()) {
    diag_reason(rl->err, "the rewrite would build more than %zu terms",
                store_ceiling);
    rl->failed = TRUE;
    return t;
  }
  if (t->kind == TM_BVAR) {
    const Type *as = rl->as[t->index];
    /* a retyped variable keeps its number of parts, so every slice by it
     * keeps its type (the caller checked: a bug otherwise) */
    g_assert(!as || type_range_parts(as) == type_range_parts(t->type));
    return term_bvar(rl->to[t->index], as ? as : t->type);
  }
  RelevelKey key;
  key.t = t;
  key.n = 0;
  gboolean retyped = FALSE;
  for (guint64 m = t->loose; m; m &= m - 1) {
    int l = __builtin_ctzll(m);
    key.to[key.n++] = (guint8)(rl->to[l] | (rl->as[l] ? 0x80 : 0));
    retyped |= rl->as[l] != NULL;
  }
  if (!relevel_cache)
    relevel_cache = g_hash_table_new_full(relevel_key_hash, relevel_key_equal,
                                          g_free, NULL);
  if (retyped && !rl->retyped)
    rl->retyped = g_hash_table_new_full(relevel_key_hash, relevel_key_equal,
                                        g_free, NULL);
  GHashTable *cache = retyped ? rl->retyped : relevel_cache;
  const Term *done = g_hash_table_lookup(cache, &key);
  if (done)
    return done;
  const Term *r;
  if (t->kind == TM_TILE || t->kind == TM_SUM) {
    r = relevel_region(rl, t);
  } else {
    const Term *stack_args[8];
    const Term **args =
        t->nargs <= 8 ? stack_args : g_new(const Term *, (gsize)t->nargs);
    for (int i = 0; i < t->nargs; i++)
      args[i] = relevel_rec(rl, t->args[i]);
    r = rebuild_same_types(t, args);
    if (args != stack_args)
      g_free(args);
  }
  if (rl->failed)
    return t;
  const char *name =
      carried_names ? g_hash_table_lookup(carried_names, t) : NULL;
  if (name && !g_hash_table_contains(carried_names, r))
    g_hash_table_insert(carried_names, (gpointer)r, g_strdup(name));
  gsize size = G_STRUCT_OFFSET(RelevelKey, to) + key.n;
  g_hash_table_insert(cache, g_memdup2(&key, size), (gpointer)r);
  return r;
}

const Term *relevel_apply(Relevel *rl, const Term *t, Diag *err) {
  rl->err = err;
  rl->failed = FALSE;
  if (relevel_cache && g_hash_table_size(relevel_cache) >= RELEVEL_CACHE_MAX)
    relevel_cache_clear();
  const Term *r = relevel_rec(rl, t);
  return rl->failed ? NULL : r;
}

const Term *term_rename_level(const Term *t, int from, int to, Diag *err) {
  if (from == to || !term_uses(t, from))
    return t;
  Relevel *rl = relevel_new();
  relevel_map(rl, from, to);
  const Term *r = relevel_apply(rl, t, err);
  relevel_free(rl);
  return r;
}

void term_reach(const Term *root, GHashTable *seen) {
  g_autoptr(GPtrArray) todo = g_ptr_array_new();
  g_ptr_array_add(todo, (gpointer)root);
  while (todo->len > 0) {
    const Term *t = g_ptr_array_steal_index_fast(todo, todo->len - 1);
    if (g_hash_table_add(seen, (gpointer)t))
      for (int i = 0; i < t->nargs; i++)
        g_ptr_array_add(todo, (gpointer)t->args[i]);
  }
}

const Term *term_splat(double v, const Type *t, Diag *err) {
  AttrValue a =
      dtype_is_float(t->dtype) ? attr_new_float(v) : attr_new_int((int64_t)v);
  return term_op(OP_CONSTANT, 0, NULL,
                 attrs_build(1, (const char *[]){"value"}, &a), t, err);
}
