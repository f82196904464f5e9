/* dedup.c — one computation, one region: outlining work that two regions
 * would both do, or that a region would redo in every iteration of the
 * regions around it.
 *
 * A value that uses binder level L is computed inside the region that
 * binds L — in every such region that reaches it.  Two different regions
 * at level L over the same range (sibling tiles after propagation: the
 * keys and the values of an attention split along the sequence, each
 * pulled out of the layers before it) that reach the same value both
 * compute it, and so do the regions after them: the program grows with
 * the square of its depth, or worse.  Tiling never requires that.
 *
 * This pass finds such values and computes each once, in a tile of its
 * own over the same range, placed where the regions are (at level L):
 *
 *   X(r) used in R1 and R2   ~~>   V = tile d (\r -> X(r));
 *                                  slice d V[r] in R1 and in R2
 *
 * the inverse of fusion (a slice of a tile by the tile's range is its
 * body).  The same outlining hoists a value out of the regions around its
 * own when it uses none of their binders (loop-invariant code motion):
 * a value computed in a region at level L that uses level L but not L-1
 * runs again in every iteration of the region at L-1; its tile, built
 * with binder L, sits at its home outside them (two tilings of one
 * model nest a region over one axis inside a region over another, and
 * each layer's keys, which need every chunk of the sequence, ran once
 * per chunk of the queries).  Only the largest such values are outlined
 * (those used by a value that is not itself outlined with them, or
 * yielded); what they use goes with them.  A new tile can be shared by regions
 * one level out: the pass repeats until nothing is shared.  A value without a
 * dimension of the range's width, or shared by regions over different ranges or
 * axes, stays as it is.
 *
 * Each round walks every value once per region around it (the program's
 * size times its nesting, which the printed program bounds).  Rounds
 * stop when nothing is outlined.
 */
#include "rewrite/rewrite.h"

/* Outlining a value can make what it uses shared in turn: rounds go on
 * until nothing is (a few on the models we know; 40 on a 12-layer
 * transformer tiled over two axes in conflicting ways). */
#define DEDUP_MAX_ROUNDS 64

/* What the walk learns about a value computed inside regions. */
typedef struct Owned {
  const Term *owner; /* the first region computing it */
  gboolean shared;   /* a second, different region computes it too */
  gboolean mixed;    /* its regions differ in axis (a value that uses a
                        binder has its range: regions that share it have
                        the same range) */
  gboolean maximal;  /* used by a value of its region not outlined with it */
} Owned;

typedef struct Dedup {
  GHashTable *owned; /* Term -> Owned* (terms with home > 0) */
  GPtrArray *regions;
  GHashTable *computes; /* Term -> 1 + computes() (memo) */
} Dedup;

/* Whether 't' does arithmetic where it is computed: an operator with
 * FLOPs or a region among it and the values of its depth it uses.  A
 * value that only moves data (a chunk of a value computed outside) is
 * cheaper to repeat than to outline. */
static gboolean computes(Dedup *d, const Term *t) {
  gpointer memo = g_hash_table_lookup(d->computes, t);
  if (memo)
    return GPOINTER_TO_INT(memo) - 1;
  gboolean yes = t->kind == TM_OP && op_flops(t) > 0;
  if (t->kind == TM_TILE || t->kind == TM_SUM) /* what its body computes */
    yes = term_uses(t->args[0], t->binder) && computes(d, t->args[0]);
  for (int i = 0;
       i < t->nargs && !yes && t->kind != TM_TILE && t->kind != TM_SUM; i++)
    if (term_home(t->args[i]) == term_home(t))
      yes = computes(d, t->args[i]);
  g_hash_table_insert(d->computes, (gpointer)t, GINT_TO_POINTER(yes + 1));
  return yes;
}

static Owned *owned_of(Dedup *d, const Term *t) {
  Owned *o = g_hash_table_lookup(d->owned, t);
  if (!o) {
    o = g_new0(Owned, 1);
    g_hash_table_insert(d->owned, (gpointer)t, o);
  }
  return o;
}

/* The values region 'r' computes: those reachable from its body whose
 * home is its body's depth.  'visit' is called at every use of one, with
 * 'via': the value of that depth the use comes from (the nested region,
 * for a use inside one), or NULL for the body itself. */
typedef void (*VisitFn)(Dedup *d, const Term *r, const Term *t,
                        const Term *via);

static void walk_region(Dedup *d, const Term *r, VisitFn visit) {
  int home = r->binder + 1;
  g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
  g_autoptr(GPtrArray) todo = g_ptr_array_new();
  g_autoptr(GPtrArray) vias = g_ptr_array_new();
  g_ptr_array_add(todo, (gpointer)r->args[0]);
  g_ptr_array_add(vias, NULL);
  while (todo->len > 0) {
    const Term *t = g_ptr_array_steal_index_fast(todo, todo->len - 1);
    const Term *via = g_ptr_array_steal_index_fast(vias, vias->len - 1);
    if (term_home(t) < home || t->kind == TM_BVAR)
      continue; /* computed outside */
    if (term_home(t) == home)
      visit(d, r, t, via);
    if (!g_hash_table_add(seen, (gpointer)t))
      continue;
    /* deeper values belong to nested regions; what they use from this
     * depth is used through the value of this depth that holds them */
    const Term *next_via = term_home(t) == home ? t : via;
    for (int i = 0; i < t->nargs; i++) {
      g_ptr_array_add(todo, (gpointer)t->args[i]);
      g_ptr_array_add(vias, (gpointer)next_via);
    }
  }
}

static void count_owner(Dedup *d, const Term *r, const Term *t,
                        const Term *via) {
  Owned *o = owned_of(d, t);
  if (!o->owner) {
    o->owner = r;
  } else if (o->owner != r) {
    o->shared = TRUE;
    if (o->owner->range != r->range || o->owner->axis != r->axis)
      o->mixed = TRUE;
  }
}

/* Where a tile of 't', computed in a region with binder 'level', would
 * sit: one above the other levels it uses. */
static int hoist_target(const Term *t, int level) {
  return term_region_level(t, level);
}

/* Whether 't' (computed in region 'r') should be outlined: shared with
 * another region, or using none of the binders between its home and the
 * level it could sit at. */
static gboolean outlined(Dedup *d, const Term *r, const Term *t) {
  Owned *o = g_hash_table_lookup(d->owned, t);
  return o && (o->shared || hoist_target(t, r->binder) < r->binder);
}

static void mark_maximal(Dedup *d, const Term *r, const Term *t,
                         const Term *via) {
  Owned *o = owned_of(d, t);
  if (o->maximal || !outlined(d, r, t))
    return;
  /* a user outlined with it takes it along: the same sharing, and a tile
   * at the same place */
  if (!via || !outlined(d, r, via) ||
      hoist_target(via, r->binder) != hoist_target(t, r->binder) ||
      owned_of(d, via)->shared != o->shared)
    o->maximal = TRUE;
}

static void collect_regions(Dedup *d, const Term *body) {
  g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
  g_autoptr(GPtrArray) todo = g_ptr_array_new();
  g_ptr_array_add(todo, (gpointer)body);
  while (todo->len > 0) {
    const Term *t = g_ptr_array_steal_index_fast(todo, todo->len - 1);
    if (!g_hash_table_add(seen, (gpointer)t))
      continue;
    if (t->kind == TM_TILE || t->kind == TM_SUM)
      g_ptr_array_add(d->regions, (gpointer)t);
    for (int i = 0; i < t->nargs; i++)
      g_ptr_array_add(todo, (gpointer)t->args[i]);
  }
}

/* The dimension of 't' that a tile over 'range' can concatenate, or -1. */
static int outline_dim(const Term *t, const Type *range) {
  if (t->type->kind != TY_TENSOR)
    return -1;
  for (int i = 0; i < t->type->rank; i++)
    if (t->type->dims[i] == range->w)
      return i;
  return -1;
}

/* tile d (\r -> slice d x[r]) where x is itself a tile of d over the same
 * range and axis is x: outlining builds such tiles of tiles (a region
 * whose work went to another outlined value reads its chunks). */
static const Term *without_retile(const Term *t) {
  if (t->kind != TM_TILE)
    return t;
  const Term *b = t->args[0];
  if (b->kind != TM_SLICE || b->index != t->index ||
      b->args[1]->kind != TM_BVAR || b->args[1]->index != t->binder)
    return t;
  const Term *x = b->args[0];
  if (x->kind != TM_TILE || x->index != t->index || x->range != t->range ||
      x->axis != t->axis || term_uses(x, t->binder))
    return t;
  return x;
}

typedef struct Rebuild {
  Dedup *d;
  gboolean mixed; /* outline values of regions over different axes too */
  GHashTable *memo;
  GHashTable *names;
  Diag *err;
  int outlined;
} Rebuild;

static const Term *rebuild(Rebuild *rb, const Term *t);

static const Term *rebuild_arg(void *rb, const Term *t) {
  return rebuild(rb, t);
}

static const Term *rebuild(Rebuild *rb, const Term *t) {
  if (t->nargs == 0)
    return t;
  const Term *done = g_hash_table_lookup(rb->memo, t);
  if (done)
    return done;
  const Term *r = term_map_args(t, rebuild_arg, rb, rb->err);
  if (!r)
    r = t;
  r = without_retile(r);
  if (r != t)
    replace_inherit_name(rb->names, t, r);
  Owned *o = g_hash_table_lookup(rb->d->owned, t);
  if (o && o->maximal && (rb->mixed || !o->mixed) && computes(rb->d, r)) {
    const Term *owner = o->owner;
    int level = owner->binder, dim = outline_dim(r, owner->range);
    const Term *v =
        dim < 0 ? NULL
                : term_tile(dim, owner->range, owner->axis, r, level, rb->err);
    if (v)
      v = without_retile(v);
    const Term *s =
        v ? term_slice(dim, v, term_bvar(level, owner->range), rb->err) : NULL;
    if (s) {
      replace_inherit_name(rb->names, t, v);
      r = s;
      rb->outlined++;
    }
  }
  g_hash_table_insert(rb->memo, (gpointer)t, (gpointer)r);
  return r;
}

/* One round: NULL when nothing is shared, else the rebuilt body.  With
 * 'mixed', a value that regions over different axes compute goes to a
 * tile over the axis of the first region the walk meets (a fixed order:
 * the result is deterministic), and the others read its chunks through a
 * change of layout (the lowering moves the data): moving a value costs less
 * than computing it again, and propagate would otherwise leave a copy of a
 * whole chain of layers in each (a sequence split over one axis in some layers
 * and the other in the rest made every layer recompute all the layers before
 * it). */
static const Term *dedup_round(const Term *body, GHashTable *names,
                               gboolean mixed) {
  Dedup d = {.owned = g_hash_table_new_full(NULL, NULL, NULL, g_free),
             .regions = g_ptr_array_new(),
             .computes = g_hash_table_new(NULL, NULL)};
  collect_regions(&d, body);
  for (guint i = 0; i < d.regions->len; i++)
    walk_region(&d, g_ptr_array_index(d.regions, i), count_owner);
  for (guint i = 0; i < d.regions->len; i++)
    walk_region(&d, g_ptr_array_index(d.regions, i), mark_maximal);
  Rebuild rb = {.d = &d,
                .mixed = mixed,
                .memo = g_hash_table_new(NULL, NULL),
                .names = names,
                .err = diag_new(NULL)};
  const Term *out = rebuild(&rb, body);
  g_hash_table_unref(rb.memo);
  diag_free(rb.err);
  g_hash_table_unref(d.owned);
  g_hash_table_unref(d.computes);
  g_ptr_array_unref(d.regions);
  return rb.outlined > 0 ? out : NULL;
}

/* A tile over one axis outlined from regions over another can land inside
 * a region over its own axis (the regions over the other axis sit in
 * one); a round that would bind an axis twice in one nest is done again
 * without outlining across axes, and dropped if it still would. */
const Term *rw_dedup(const Term *body, GHashTable *names) {
  gboolean nested = rw_axes_bound_twice(body, NULL) != NULL;
  for (int round = 0; round < DEDUP_MAX_ROUNDS; round++) {
    const Term *next = dedup_round(body, names, TRUE);
    if (next && !nested && rw_axes_bound_twice(next, NULL))
      next = dedup_round(body, names, FALSE);
    if (next && !nested && rw_axes_bound_twice(next, NULL))
      return body; /* never a program no device runs */
    if (!next || next == body)
      return body;
    body = next;
  }
  return body;
}
