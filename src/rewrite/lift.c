/* lift.c — an operator computed outside a region over an axis, so that a
 * split over that axis can enter it ('lift VALUE REGION').
 *
 * ZeRO stores a weight split over the batch axis and gathers it where a
 * batch tile uses it.  The other way to use it is in place: the
 * activation is gathered instead, and the weight's split enters the
 * operator (its columns a tile over the axis, its rows a sum).  That
 * needs the operator outside every region over the axis, since a device
 * has one index along an axis.  'lift' moves it there:
 *
 * 1. Cut the regions around VALUE (fission.c) from the innermost to
 *    REGION: where VALUE is a region's whole body, the region itself is
 *    what is cut out; elsewhere VALUE is materialized as a tile over the
 *    region's range along a dimension of its width.  What REGION's body
 *    then reads is the slice, by REGION's range value, of one tile T
 *    over REGION's range: the tile of the nest around VALUE.
 * 2. Move T's tile inward through that nest ('tile-sum', 'tile-tile'),
 *    down to VALUE: tile d (\r -> op(a(r), b)).
 * 3. Take the operator out of the tile ('OP-tile-d-rev'): each operand
 *    that depends on r is materialized as the tile of its parts along
 *    the dimension that carries d: op(tile (\r -> a(r)), b).  Such a
 *    tile is the operand gathered, unless the tile of a slice or of an
 *    operator on slices by r is the whole operand again ('tile-slice',
 *    OP-tile-rev), which moves nothing.  A function argument is the
 *    exception: it stays received as the tactics split it, and its tile
 *    is gathered.
 * 4. An operand that is a slice of a tile over REGION's axis along
 *    another dimension (ZeRO's weight, cut by Megatron's range) gives
 *    its tile to the operator ('slice-tile', then OP-tile-D or OP-sum-K
 *    as its dimension carries a result dimension or a reduction, then
 *    'fuse'): the weight is used in place.
 *
 * Every step is a rule checked against the interpreter or a fission, so
 * the lifted program computes what the program computed.  The lowering
 * of the cut: REGION slices T by its own range, which is free when T is
 * split that way, and a reduce_scatter when step 4 left it a sum over
 * the axis.  Whether that is cheaper than gathering the weight depends
 * on the sizes: 'lift --cheaper' keeps the lifted program only when the
 * cost model (the Pricer) prices it faster, which is how
 * tactics/zero.lua asks for it (docs/spmd.md, "ZeRO: the weight or the
 * activations").
 */
#include "rewrite/rewrite.h"

#include <string.h>

/* Memoized: whether 'target' occurs in 't'. */
static gboolean reaches(const Term *t, const Term *target, GHashTable *memo) {
  if (t == target)
    return TRUE;
  if (t->height <= target->height)
    return FALSE;
  gpointer v;
  if (g_hash_table_lookup_extended(memo, t, NULL, &v))
    return GPOINTER_TO_INT(v);
  gboolean found = FALSE;
  for (int i = 0; i < t->nargs && !found; i++)
    found = reaches(t->args[i], target, memo);
  g_hash_table_insert(memo, (gpointer)t, GINT_TO_POINTER(found));
  return found;
}

/* Whether 'target', which uses level 'level', occurs in 't' in the scope
 * of the binder of that level: through terms that use it too (a value
 * computed outside that region holds 'target' under a region of its
 * own, and uses the level no more). */
static gboolean in_scope(const Term *t, const Term *target, int level,
                         GHashTable *memo, GHashTable *visited) {
  if (t == target)
    return TRUE;
  /* a term visited before gave FALSE: TRUE would have ended the search */
  if (!term_uses(t, level) || !g_hash_table_add(visited, (gpointer)t) ||
      !reaches(t, target, memo))
    return FALSE;
  for (int i = 0; i < t->nargs; i++)
    if (in_scope(t->args[i], target, level, memo, visited))
      return TRUE;
  return FALSE;
}

/* The tile or sum in 't' whose binder is 'level' and whose body holds
 * 'target' in its scope, or NULL. */
static const Term *region_around(const Term *t, const Term *target, int level,
                                 GHashTable *memo, GHashTable *seen) {
  if (!g_hash_table_add(seen, (gpointer)t) || !reaches(t, target, memo))
    return NULL;
  if ((t->kind == TM_TILE || t->kind == TM_SUM) && t->binder == level) {
    g_autoptr(GHashTable) visited = g_hash_table_new(NULL, NULL);
    if (in_scope(t->args[0], target, level, memo, visited))
      return t;
  }
  for (int i = 0; i < t->nargs; i++) {
    const Term *r = region_around(t->args[i], target, level, memo, seen);
    if (r)
      return r;
  }
  return NULL;
}

/* A dimension of 'v' of the width of 'region''s range: the region's own
 * dimension when it is a tile and that fits, else the first but 'avoid'
 * (the lifted tile's, which a tile inside it along the same dimension
 * could not commute with), else -1. */
static int width_dim(const Term *v, const Term *region, int avoid) {
  const Type *t = v->type;
  if (region->kind == TM_TILE && region->index < t->rank &&
      region->index != avoid && t->dims[region->index] == region->range->w)
    return region->index;
  for (int d = 0; d < t->rank; d++)
    if (d != avoid && t->dims[d] == region->range->w)
      return d;
  return -1;
}

typedef struct Lift {
  const RuleSet *rs;
  const char *axis; /* the lifted region's axis */
  Diag *why;
} Lift;

/* Written rule 'name' (rules/partir.rules) applied at 't', or NULL where
 * it does not apply or the rule set lacks it. */
static const Term *apply_named(const Lift *lf, const char *name,
                               const Term *t) {
  const Rule *rule = ruleset_find(lf->rs, name);
  g_autoptr(Diag) ignore = diag_new(NULL);
  return rule ? rw_apply_here(lf->rs, rule, t, NULL, 0, ignore) : NULL;
}

/* 'tile' (a tile of an operand's parts) as the whole operand where that
 * moves nothing: the tile of slices by its binder, or of an operator on
 * such slices; else 'tile' itself. */
static const Term *whole_if_free(const Lift *lf, const Term *tile) {
  const Term *whole = apply_named(lf, "tile-slice", tile);
  /* an argument stays received as the tactics split it (a batch of
   * inputs is not turned into a split of its features): its tile is
   * gathered, and the pricing sees that */
  if (whole)
    return whole->kind == TM_ARG ? tile : whole;
  const Term *body = tile->args[0];
  const Rule *rev =
      body->kind == TM_OP
          ? ruleset_derived(lf->rs, RULE_OP_TILE_REV, body->op, tile->index)
          : NULL;
  g_autoptr(Diag) ignore = diag_new(NULL);
  whole = rev ? rw_apply_here(lf->rs, rev, tile, NULL, 0, ignore) : NULL;
  return whole ? whole : tile;
}

/* Step 4 at operator 'op': an operand that is a tile over the lifted axis,
 * or a slice of one along another dimension, gives that tile to the
 * operator; 'op' itself when none does.  Operands marked in 'gathered'
 * are the ones step 3 made whole: their tiles stay where they are. */
static const Term *enter_split(const Lift *lf, const Term *op,
                               const gboolean *gathered) {
  TileSpec spec;
  if (!spec_of(lf->rs, op, &spec))
    return op;
  for (int i = 0; i < op->nargs; i++) {
    const Term *a = op->args[i], *tile = NULL;
    if (gathered[i])
      continue;
    if (a->kind == TM_TILE && a->axis == lf->axis)
      tile = a; /* the weight itself (no Megatron chunk) */
    else if (a->kind == TM_SLICE && a->args[0]->kind == TM_TILE &&
             a->args[0]->axis == lf->axis && a->args[0]->index != a->index)
      tile = apply_named(lf, "slice-tile", a);
    if (!tile)
      continue;
    int d = tile->index;
    const Rule *rule = NULL;
    for (int j = 0; j < spec.nout && !rule; j++)
      if (spec.out_ok[j] && spec.out[j][i] == d)
        rule = ruleset_derived(lf->rs, RULE_OP_TILE, op->op, j);
    for (int k = 0; k < spec.nred && !rule; k++)
      if (spec.red[k][i] == d && !spec.red_masked[k])
        rule = ruleset_derived(lf->rs, RULE_OP_SUM, op->op, k);
    if (!rule)
      continue;
    const Term *args[SPEC_MAX_OPERANDS];
    memcpy(args, op->args, sizeof *args * (gsize)op->nargs);
    args[i] = tile;
    const Term *with = term_with_args(op, args, lf->why);
    if (!with)
      return NULL;
    RuleArg ra[2] = {{g_intern_string("w"), FALSE, tile->range->w, NULL},
                     {g_intern_string("a"), TRUE, 0, lf->axis}};
    g_autoptr(Diag) ignore = diag_new(NULL);
    const Term *region = rw_apply_here(lf->rs, rule, with, ra, 2, ignore);
    if (!region)
      continue;
    /* the operand sliced by the new region's own range is its body */
    const Term *body = region->args[0];
    const Term *fused[SPEC_MAX_OPERANDS];
    for (int k = 0; k < body->nargs; k++) {
      fused[k] = apply_named(lf, "fuse", body->args[k]);
      if (!fused[k])
        fused[k] = body->args[k];
    }
    const Term *nb = term_with_args(body, fused, lf->why);
    return nb ? term_with_args(region, &nb, lf->why) : NULL;
  }
  return op;
}

/* Steps 2 to 4 on 'tile' (a tile over the lifted region's range): the
 * same value with the tile moved down to the operator and out of it. */
static const Term *lift_tile(const Lift *lf, const Term *tile) {
  const Term *body = tile->args[0];
  if (body->kind == TM_SUM ||
      (body->kind == TM_TILE && body->index != tile->index)) {
    const char *rule = body->kind == TM_SUM ? "tile-sum" : "tile-tile";
    const Term *swapped = apply_named(lf, rule, tile);
    if (!swapped) {
      diag_reason(lf->why,
                  "lift: the tile over '%s' does not commute with the %s "
                  "around the value (rule '%s')",
                  lf->axis, body->kind == TM_SUM ? "sum" : "tile", rule);
      return NULL;
    }
    const Term *inner = lift_tile(lf, swapped->args[0]);
    return inner ? term_with_args(swapped, &inner, lf->why) : NULL;
  }
  TileSpec spec;
  if (body->kind != TM_OP || !spec_of(lf->rs, body, &spec) ||
      tile->index >= spec.nout || !spec.out_ok[tile->index]) {
    diag_reason(lf->why,
                "lift: no operator that carries dimension %d of the "
                "tile to its operands",
                tile->index);
    return NULL;
  }
  const Rule *rev =
      ruleset_derived(lf->rs, RULE_OP_TILE_REV, body->op, tile->index);
  const Term *args[SPEC_MAX_OPERANDS];
  gboolean gathered[SPEC_MAX_OPERANDS];
  for (int i = 0; i < body->nargs; i++) {
    const Term *a = body->args[i];
    int d = spec.out[tile->index][i];
    args[i] = a;
    gathered[i] = term_uses(a, tile->binder);
    if (!gathered[i])
      continue;
    if (d < 0) {
      diag_reason(lf->why,
                  "lift: operand %d of '%s' depends on the region "
                  "but carries none of its split",
                  i + 1, op_name(body->op));
      return NULL;
    }
    if (a->kind == TM_SLICE && a->index == d && a->args[1]->kind == TM_BVAR &&
        a->args[1]->index == tile->binder && a->args[0]->kind != TM_ARG)
      continue; /* the operand's whole is there already */
    /* the operand's parts, materialized: slice d (tile d (\r' -> a))[r] */
    const Term *cut = rw_fission_term(a, tile, d, lf->why);
    if (!cut)
      return NULL;
    const Term *whole = whole_if_free(lf, cut->args[0]);
    args[i] = term_slice(d, whole, cut->args[1], lf->why);
    if (!args[i])
      return NULL;
  }
  const Term *nb = term_with_args(body, args, lf->why);
  const Term *nt = nb ? term_with_args(tile, &nb, lf->why) : NULL;
  if (!nt)
    return NULL;
  const Term *op =
      rev ? rw_apply_here(lf->rs, rev, nt, NULL, 0, lf->why) : NULL;
  if (!op) {
    diag_reason(lf->why, "lift: '%s' cannot be taken out of the tile",
                op_name(body->op));
    return NULL;
  }
  return enter_split(lf, op, gathered);
}

/* The body of 'in' with 'from' replaced by 'to' everywhere. */
static const Term *replaced(const State *in, const Term *body, const Term *from,
                            const Term *to, Diag *why) {
  return replace_everywhere(body, from, to, in->module->names, why);
}

static State *lift(const RuleSet *rs, State *in, const Location *value,
                   const char *axis, Diag *why) {
  const Term *v = value->term;
  if (v->kind != TM_OP) {
    diag_reason(why, "lift: %%%s is not an operator", value->name);
    return NULL;
  }
  /* the outermost tile over 'axis' that binds a level the value uses */
  g_autoptr(GHashTable) memo = g_hash_table_new(NULL, NULL);
  const Term *R = NULL;
  for (int level = 0; level < term_home(v) && !R; level++) {
    g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
    const Term *G = term_uses(v, level)
                        ? region_around(in->func.body, v, level, memo, seen)
                        : NULL;
    if (G && G->kind == TM_TILE && G->axis == axis)
      R = G;
  }
  if (!R) {
    diag_reason(why, "lift: %%%s is not computed in a tile over '%s'",
                value->name, axis);
    return NULL;
  }
  /* step 1: cut the regions between the value and R, innermost first;
   * 'orig' is what holds the value in the program as it was, 'cur' what
   * the region at the next level out must cut */
  const Term *body = in->func.body, *cur = v, *orig = v;
  while (term_home(orig) - 1 > R->binder) {
    int level = term_home(orig) - 1;
    g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
    g_autoptr(GHashTable) memo_orig = g_hash_table_new(NULL, NULL);
    const Term *G = region_around(R->args[0], orig, level, memo_orig, seen);
    if (!G) {
      diag_reason(why, "lift: no region around %%%s at level %d", value->name,
                  level);
      return NULL;
    }
    gboolean whole_body = cur == orig && G->args[0] == orig;
    orig = G;
    if (whole_body) { /* the region's whole body: cut the region */
      cur = G;
      continue;
    }
    int d = width_dim(cur, G, R->index);
    const Term *cut = d < 0 ? NULL : rw_fission_term(cur, G, d, why);
    if (!cut) {
      if (d < 0)
        diag_reason(why,
                    "lift: %%%s has no dimension of the width of a "
                    "region around it",
                    value->name);
      return NULL;
    }
    if (!(body = replaced(in, body, cur, cut, why)))
      return NULL;
    cur = cut->args[0];
  }
  int d = width_dim(cur, R, -1);
  const Term *cut = d < 0 ? NULL : rw_fission_term(cur, R, d, why);
  if (!cut) {
    if (d < 0)
      diag_reason(why,
                  "lift: what holds %%%s has no dimension of the width of "
                  "the tile over '%s'",
                  value->name, axis);
    return NULL;
  }
  Lift lf = {rs, R->axis, why};
  const Term *whole = lift_tile(&lf, cut->args[0]);
  const Term *back = whole ? term_slice(d, whole, cut->args[1], why) : NULL;
  if (!back || !(body = replaced(in, body, cur, back, why)))
    return NULL;
  /* a region over an axis taken out of a region over another (a sum over
   * 'model' whose nest held the value) may land in a region over that
   * other axis: no device program runs that */
  const char *twice = rw_axes_bound_twice(body, NULL);
  if (twice && !rw_axes_bound_twice(in->func.body, NULL)) {
    diag_reason(why,
                "lift: %%%s would leave axis '%s' bound by two nested "
                "regions",
                value->name, twice);
    return NULL;
  }
  return state_with_body(in, body);
}

/* Whether 't' is a tile over 'axis' of the parts of argument 'arg', or a
 * slice of one (a Megatron chunk of a ZeRO part). */
static gboolean part_of(const Term *t, const Term *arg, const char *axis) {
  if (t->kind == TM_SLICE)
    t = t->args[0];
  return t->kind == TM_TILE && t->axis == axis &&
         t->args[0]->kind == TM_SLICE && t->args[0]->args[0] == arg;
}

const Location *rw_lift_use(GPtrArray *locs, const Term *arg,
                            const char *axis) {
  axis = g_intern_string(axis);
  for (guint i = 0; i < locs->len; i++) {
    const Location *l = g_ptr_array_index(locs, i);
    if (l->term->kind != TM_OP || !location_inside_axis(l, axis))
      continue;
    for (int k = 0; k < l->term->nargs; k++)
      if (part_of(l->term->args[k], arg, axis))
        return l;
  }
  return NULL;
}

State *rw_lift(const RuleSet *rs, State *in, const Location *value,
               const char *axis, Diag *why) {
  term_carry_names(in->module->names);
  State *out = lift(rs, in, value, g_intern_string(axis), why);
  term_carry_names(NULL);
  return out;
}
