/* fission.c — a region cut in two at one of its values.
 *
 * 'fission VALUE DIM REGION' materializes VALUE, computed inside the tile
 * or sum REGION (for each part r of its range), as a tile over the same
 * range and axis along DIM, and gives every use the slice of that tile
 * by r:
 *
 *     v(r)  ~~>  slice DIM (tile DIM (\r' -> v(r')))[r]
 *
 * This is the 'fuse' rule read backwards (a slice of a tile by a range
 * of as many parts is the tile's body at that part), so it holds
 * wherever v occurs, for any v whose dimension DIM has the range's
 * width.  The tile uses nothing of REGION, so it is built at its own
 * home, outside REGION: the region is cut in two, the values VALUE needs
 * in one region (bound to the same axis), the rest in the other, and the
 * cut crosses VALUE, whose parts the lowering now holds split over the
 * axis (a tile) and slices back (its own part: no communication).  What
 * the cut gains is room: outside the region the axis is free, so another
 * split over it (a ZeRO-split weight used in place, docs/spmd.md) can
 * enter the first half, and the second half can take its parts of a
 * value that the first half leaves partial (a reduce_scatter).
 *
 * Written in C, not as a rule: the left side is a value inside a region,
 * not a pattern, and the right side's binder is the region's range.
 * check_walks takes it as a random step (src/check/rulecheck.c), so it is
 * checked against the interpreter as every rule is.
 */
#include "rewrite/rewrite.h"

/* Whether 't' uses the variable of level 'level' with range 'range'
 * (a sibling region at that level may have another range). */
static gboolean uses_range(const Term *t, int level, const Type *range,
                           GHashTable *seen) {
  if (!term_uses(t, level) || !g_hash_table_add(seen, (gpointer)t))
    return FALSE;
  if (t->kind == TM_BVAR)
    return t->index == level && t->type == range;
  for (int i = 0; i < t->nargs; i++)
    if (uses_range(t->args[i], level, range, seen))
      return TRUE;
  return FALSE;
}

const Term *rw_fission_term(const Term *value, const Term *region, int dim,
                            Diag *why) {
  if (region->kind != TM_TILE && region->kind != TM_SUM) {
    diag_reason(why, "fission: the region must be a partir.tile or partir.sum");
    return NULL;
  }
  int level = region->binder;
  g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
  if (!uses_range(value, level, region->range, seen)) {
    diag_reason(why, "fission: the value does not depend on the region's "
                     "range value, so it is computed outside the region "
                     "already");
    return NULL;
  }
  if (value->type->kind != TY_TENSOR) {
    diag_reason(why, "fission: the value is a range, not a tensor");
    return NULL;
  }
  if (dim < 0 || dim >= value->type->rank) {
    diag_reason(why, "fission: dimension %d out of range for rank %d", dim,
                value->type->rank);
    return NULL;
  }
  if (value->type->dims[dim] != region->range->w) {
    diag_reason(why,
                "fission: dimension %d of the value has size %" G_GINT64_FORMAT
                ", not the region's width %" G_GINT64_FORMAT
                " (a tile concatenates parts of that width)",
                dim, value->type->dims[dim], region->range->w);
    return NULL;
  }
  /* the tile's binder must be above every level its body uses: a value
   * that uses regions nested in 'region' has its level renamed above
   * them first */
  const Term *body = value;
  int above = term_home(value);
  if (above - 1 > level &&
      !(body = term_rename_level(value, level, above, why)))
    return NULL;
  const Term *whole = term_tile(dim, region->range, region->axis, body,
                                above - 1 > level ? above : level, why);
  if (!whole)
    return NULL;
  return term_slice(dim, whole, term_bvar(level, region->range), why);
}

State *rw_fission(State *in, const Location *value, const Location *region,
                  int dim, Diag *why) {
  term_carry_names(in->module->names);
  const Term *to = rw_fission_term(value->term, region->term, dim, why);
  State *out = to ? rw_with_replacement(in, value, to, NULL, why) : NULL;
  term_carry_names(NULL);
  return out;
}
