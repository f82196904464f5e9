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

/* Whether maps 'a' and 'b' (Term -> Term) are equal. */
static gboolean same_map(GHashTable *a, GHashTable *b) {
  if (g_hash_table_size(a) != g_hash_table_size(b))
    return FALSE;
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, a);
  while (g_hash_table_iter_next(&it, &k, &v))
    if (g_hash_table_lookup(b, k) != v)
      return FALSE;
  return TRUE;
}

/* One round: the arguments used only through one shard are received
 * sharded.  With 'memo' (may be NULL) the rebuilt terms of an earlier
 * call with the same replacements are taken from it. */
static const Term *shard_inputs_once(const Term *body, Func *f, Dist *dists,
                                     GHashTable *names, SpmdMemo *memo,
                                     gboolean *changed) {
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
    *changed = TRUE;
    const AttrValue *axes = attrs_get(sh->attrs, "axes");
    int d = (int)attrs_get(sh->attrs, "dim")->i;
    Dist *dd = &dists[i];
    for (int k = 0; k < axes->count; k++)
      dd->axes[d][dd->naxes[d]++] = axes->items[k].sym;
    f->arg_types[i] = sh->type;
    g_hash_table_insert(sw.map, (gpointer)sh, (gpointer)term_arg(i, sh->type));
  }
  if (*changed && memo) {
    if (!same_map(sw.map, memo->swap_map)) {
      g_hash_table_remove_all(memo->swap);
      g_hash_table_remove_all(memo->swap_map);
      GHashTableIter it;
      gpointer k, v;
      g_hash_table_iter_init(&it, sw.map);
      while (g_hash_table_iter_next(&it, &k, &v))
        g_hash_table_insert(memo->swap_map, k, v);
    }
    g_hash_table_unref(sw.memo);
    sw.memo = g_hash_table_ref(memo->swap);
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
                                GHashTable *names, SpmdMemo *memo) {
  for (gboolean changed = TRUE; changed;) {
    changed = FALSE;
    body = shard_inputs_once(body, f, dists, names, memo, &changed);
  }
  return body;
}

/* spmd_fuse, with the results 'memo' holds when given (then without
 * names). */
static gboolean fuse_func(const RuleSet *rs, Func *f, Module *names,
                          SpmdMemo *memo, Diag *why) {
  g_assert(f->spmd);
  GHashTable *table = names ? names->names : NULL;
  const Term *body = f->body;
  for (gboolean changed = TRUE; changed;) { /* a chunk built may fuse */
    body = memo ? rw_fixpoint_memo(rs, body, memo->fixpoint, why)
                : rw_fixpoint(rs, body, RULE_TAG_SPMD, table, NULL, why);
    if (!body)
      return FALSE;
    if (memo) {
      const Term *narrowed = spmd_narrow_memo(body, memo->narrow);
      changed = narrowed != body;
      body = narrowed;
    } else {
      body = spmd_narrow(body, table, &changed);
    }
  }
  f->body = shard_inputs(body, f, f->spmd->arg_dists, table, memo);
  for (int i = 0; i < f->nresults; i++)
    f->result_types[i] = f->body->args[i]->type;
  return TRUE;
}

gboolean spmd_fuse(const RuleSet *rs, Func *f, Module *names, Diag *why) {
  return fuse_func(rs, f, names, NULL, why);
}

gboolean spmd_fuse_memo(Func *f, SpmdMemo *memo, Diag *why) {
  spmd_memo_check(memo);
  return fuse_func(memo->rs, f, NULL, memo, why);
}
