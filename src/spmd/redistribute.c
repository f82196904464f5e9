/* redistribute.c — redistribution fusion: the pass after lowering.
 *
 * requires: an SPMD program from spmd_lower, where every device's chunk
 * of a value is taken literally (all_reduce or all_gather, then 'shard').
 *
 * Two steps:
 *   1. the [spmd] rules (rules/spmd.rules) run to a fixed point on the
 *      body and fuse those pairs: shard(all_reduce) is a reduce_scatter,
 *      shard(all_gather) on another dimension an all_to_all, on the same
 *      dimension nothing at all; and each device builds its own chunk
 *      of a constant, an iota or a broadcast, and gathers a broadcast's
 *      operand (narrow.c), until neither changes anything;
 *   2. an argument used only through one 'shard' is stored sharded: the
 *      device receives its chunk and the 'shard' disappears (repeated, so
 *      a chunk of a chunk is received as such).  This step is not a rule:
 *      it changes the program's signature (what each device is given),
 *      and a rule rewrites a value into an equal value of the same type.
 */
#include "spmd/spmd.h"

typedef struct Uses {
  GHashTable *seen;
  int nargs;
  const Term **only_shard; /* per argument: its single shard, or NULL */
  gboolean *other_use;
} Uses;

static void find_uses(Uses *u, const Term *t) {
  if (!g_hash_table_add(u->seen, (gpointer)t))
    return;
  for (int i = 0; i < t->nargs; i++) {
    const Term *a = t->args[i];
    if (a->kind == TM_ARG && a->index < u->nargs) {
      int k = a->index;
      if (t->kind == TM_OP && t->op == OP_SHARD &&
          (!u->only_shard[k] || u->only_shard[k] == t))
        u->only_shard[k] = t;
      else
        u->other_use[k] = TRUE;
    }
    find_uses(u, a);
  }
}

/* An argument used only through one shard is received sharded. */
/* Replaces closed terms by map (one pass, shared subterms once). */
typedef struct Swap {
  GHashTable *map, *memo;
  GHashTable *names; /* value names rebuilt values keep, or NULL */
  Diag *err;
} Swap;

static const Term *swap(void *ud, const Term *t) {
  Swap *sw = ud;
  const Term *to = g_hash_table_lookup(sw->map, t);
  if (to)
    return to;
  if (t->nargs == 0)
    return t;
  const Term *done = g_hash_table_lookup(sw->memo, t);
  if (done)
    return done;
  const Term *r = term_map_args(t, swap, sw, sw->err);
  g_assert(r); /* same types, no new nesting */
  replace_inherit_name(sw->names, t, r);
  g_hash_table_insert(sw->memo, (gpointer)t, (gpointer)r);
  return r;
}

static const Term *shard_inputs_once(const Term *body, Func *f, Dist *dists,
                                     GHashTable *names, gboolean *changed) {
  Uses u = {g_hash_table_new(NULL, NULL), f->nargs,
            g_new0(const Term *, (gsize)f->nargs + 1),
            g_new0(gboolean, (gsize)f->nargs + 1)};
  find_uses(&u, body);
  Swap sw = {g_hash_table_new(NULL, NULL), g_hash_table_new(NULL, NULL), names,
             diag_new(NULL)};
  for (int i = 0; i < f->nargs; i++) {
    const Term *sh = u.only_shard[i];
    if (!sh || u.other_use[i])
      continue;
    const AttrValue *axes = attrs_get(sh->attrs, "axes");
    int d = (int)attrs_get(sh->attrs, "dim")->i;
    Dist *dd = &dists[i];
    /* a padded chunk of a chunk is not where one all_gather over both
     * axes would put it: an uneven split stays on one axis */
    int64_t whole = f->arg_types[i]->dims[d];
    gboolean padded = whole % attrs_get(sh->attrs, "size")->i != 0;
    if (dd->naxes[d] && (padded || dd->global[d]))
      continue;
    if (padded)
      dd->global[d] = whole;
    *changed = TRUE;
    for (int k = 0; k < axes->count; k++)
      dd->axes[d][dd->naxes[d]++] = axes->items[k].sym;
    f->arg_types[i] = sh->type;
    g_hash_table_insert(sw.map, (gpointer)sh, (gpointer)term_arg(i, sh->type));
  }
  if (*changed)
    body = swap(&sw, body);
  g_hash_table_unref(sw.map);
  g_hash_table_unref(sw.memo);
  diag_free(sw.err);
  g_hash_table_unref(u.seen);
  g_free(u.only_shard);
  g_free(u.other_use);
  return body;
}

/* Until no argument is used only through a shard: a chunk of a chunk
 * (split over two axes) is received as such. */
static const Term *shard_inputs(const Term *body, Func *f, Dist *dists,
                                GHashTable *names) {
  for (gboolean changed = TRUE; changed;) {
    changed = FALSE;
    body = shard_inputs_once(body, f, dists, names, &changed);
  }
  return body;
}

gboolean spmd_fuse(const RuleSet *rs, Func *f, Module *names, Diag *why) {
  g_assert(f->spmd);
  GHashTable *table = names ? names->names : NULL;
  const Term *body = f->body;
  for (gboolean changed = TRUE; changed;) { /* a chunk built may fuse */
    body = rw_fixpoint(rs, body, RULE_TAG_SPMD, table, NULL, why);
    if (!body)
      return FALSE;
    body = spmd_narrow(body, table, &changed);
  }
  f->body = shard_inputs(body, f, f->spmd->arg_dists, table);
  for (int i = 0; i < f->nresults; i++)
    f->result_types[i] = f->body->args[i]->type;
  return TRUE;
}
