/* nest.c — one axis per nest: finding an axis bound by two nested
 * regions.  A device has one index along each mesh axis, so a region over
 * an axis inside another over the same axis is a program no device runs
 * (the lowering refuses it).  The rewrite passes check their results
 * with this (propagate.c reports it or fails, dedup.c undoes a round that
 * would make one).
 *
 * Nesting is where values are computed, as the printer places them
 * (print.c): a value sits in the region of the innermost binder it uses,
 * so a closed value used inside a region is not nested in it.  Each value
 * is visited once per region instance, as printed: linear in the printed
 * program.
 */
#include "rewrite/rewrite.h"

typedef struct AxisCheck {
  GPtrArray *found; /* the axes bound twice, per place (may be NULL) */
  const char *first;
  const char *axes[PARTIR_MAX_REGIONS + 2]; /* region depth -> its axis */
  GHashTable *seen[PARTIR_MAX_REGIONS + 2]; /* terms, per region */
} AxisCheck;

static void check_axes(AxisCheck *c, int depth, const Term *t) {
  if (t->kind == TM_ARG || t->kind == TM_BVAR)
    return;
  int target = term_home(t);
  g_assert(target <= depth);
  if (!g_hash_table_add(c->seen[target], (gpointer)t))
    return;
  if (t->kind != TM_TILE && t->kind != TM_SUM) {
    for (int i = 0; i < t->nargs; i++)
      check_axes(c, target, t->args[i]);
    return;
  }
  for (int k = 1; k <= target && t->axis; k++)
    if (c->axes[k] == t->axis) {
      if (!c->first)
        c->first = t->axis;
      if (c->found)
        g_ptr_array_add(c->found, (gpointer)t->axis);
    }
  if (target + 1 > PARTIR_MAX_REGIONS)
    return;
  GHashTable *outer_seen = c->seen[target + 1];
  const char *outer_axis = c->axes[target + 1];
  c->seen[target + 1] = g_hash_table_new(NULL, NULL);
  c->axes[target + 1] = t->axis;
  check_axes(c, target + 1, t->args[0]);
  g_hash_table_unref(c->seen[target + 1]);
  c->seen[target + 1] = outer_seen;
  c->axes[target + 1] = outer_axis;
}

const char *rw_axes_bound_twice(const Term *body, GPtrArray *found) {
  AxisCheck c = {.found = found};
  c.seen[0] = g_hash_table_new(NULL, NULL);
  check_axes(&c, 0, body);
  g_hash_table_unref(c.seen[0]);
  return c.first;
}
