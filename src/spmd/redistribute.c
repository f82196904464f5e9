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
 *      Before it, an argument stored split over axes B along d but used
 *      as its chunk over other axes A along the same d (ZeRO over B of a
 *      bias that Megatron cuts over A):
 *
 *        shard(all_gather(shard(x){B, d}){B, d}){A, d}
 *          ->  all_gather(shard(shard(x){A, d}){B, d}){B, d}
 *
 *      is stored split over A and then B, and gathers its A-chunk, not
 *      the whole.  Both sides are x's A-chunk where x is the same on the
 *      devices of each B group (an argument, or a chunk of one over
 *      other axes): the rule language cannot state that condition.
 */
#include "spmd/spmd.h"

typedef struct Uses {
  GHashTable *seen;
  int nargs;
  const Term **only_shard; /* per argument: its single shard, or NULL */
  gboolean *other_use;
  /* shard(argument) -> its single user when that is a shard, or
   * &other_user: whether the next round can receive a chunk of the
   * chunk this round receives */
  GHashTable *shard_users;
} Uses;

static const char other_user[] = "";

static gboolean is_shard(const Term *t) {
  return t->kind == TM_OP && t->op == OP_SHARD;
}

static void find_uses(Uses *u, const Term *t) {
  if (!g_hash_table_add(u->seen, (gpointer)t))
    return;
  for (int i = 0; i < t->nargs; i++) {
    const Term *a = t->args[i];
    if (a->kind == TM_ARG && a->index < u->nargs) {
      int k = a->index;
      if (is_shard(t) && (!u->only_shard[k] || u->only_shard[k] == t))
        u->only_shard[k] = t;
      else
        u->other_use[k] = TRUE;
    } else if (is_shard(a) && a->args[0]->kind == TM_ARG) {
      gpointer was = g_hash_table_lookup(u->shard_users, a);
      g_hash_table_insert(u->shard_users, (gpointer)a,
                          is_shard(t) && (!was || was == t)
                              ? (gpointer)t
                              : (gpointer)other_user);
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
 * call with the same replacements in the same round are taken from it
 * (each round has a map of its own: one memo for all would be emptied
 * at every round). */
static const Term *shard_inputs_once(const Term *body, Func *f, Dist *dists,
                                     GHashTable *names, SpmdMemo *memo,
                                     int round, gboolean *changed,
                                     gboolean *again) {
  Uses u = {g_hash_table_new(NULL, NULL), f->nargs,
            g_new0(const Term *, (gsize)f->nargs + 1),
            g_new0(gboolean, (gsize)f->nargs + 1),
            g_hash_table_new(NULL, NULL)};
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
    /* received as 'sh', the argument's users are sh's (rebuilt): used
     * only through one shard, it is received as that in the next round */
    const Term *user = g_hash_table_lookup(u.shard_users, sh);
    *again |= user && user != (const Term *)other_user;
  }
  if (*changed && memo && round < SPMD_SWAP_ROUNDS) {
    GHashTable *map = memo->swap_map[round];
    if (!same_map(sw.map, map)) {
      g_hash_table_remove_all(memo->swap[round]);
      g_hash_table_remove_all(map);
      GHashTableIter it;
      gpointer k, v;
      g_hash_table_iter_init(&it, sw.map);
      while (g_hash_table_iter_next(&it, &k, &v))
        g_hash_table_insert(map, k, v);
    }
    g_hash_table_unref(sw.memo);
    sw.memo = g_hash_table_ref(memo->swap[round]);
  }
  if (*changed)
    body = swap(&sw, body);
  g_hash_table_unref(sw.map);
  g_hash_table_unref(sw.memo);
  diag_free(sw.err);
  g_hash_table_unref(u.seen);
  g_hash_table_unref(u.shard_users);
  g_free(u.only_shard);
  g_free(u.other_use);
  return body;
}

/* Whether two lists of axes share none. */
static gboolean disjoint_axes(const AttrValue *a, const AttrValue *b) {
  for (int i = 0; i < a->count; i++)
    for (int k = 0; k < b->count; k++)
      if (a->items[i].sym == b->items[k].sym)
        return FALSE;
  return TRUE;
}

/* Whether every device of a group over 'axes' holds the same 't': an
 * argument (every device is given it whole, until step 2), or a chunk of
 * one over other axes. */
static gboolean same_over(const Term *t, const AttrValue *axes) {
  for (; t->kind == TM_OP && t->op == OP_SHARD; t = t->args[0])
    if (!disjoint_axes(attrs_get(t->attrs, "axes"), axes))
      return FALSE;
  return t->kind == TM_ARG;
}

/* 'sh' = shard(all_gather(shard(x){B, d}){B, d}){A, d} as the gather of
 * x's chunk over A then B, or NULL when 'sh' is not that. */
static const Term *gather_chunk(const Term *sh, Diag *err) {
  const Term *g = sh->args[0];
  if (g->kind != TM_OP || g->op != OP_ALL_GATHER)
    return NULL;
  const Term *inner = g->args[0];
  if (inner->kind != TM_OP || inner->op != OP_SHARD)
    return NULL;
  const AttrValue *over = attrs_get(g->attrs, "axes");
  if (attrs_get_int(g->attrs, "dim") != attrs_get_int(sh->attrs, "dim") ||
      inner->attrs != g->attrs ||
      !disjoint_axes(attrs_get(sh->attrs, "axes"), over) ||
      !same_over(inner->args[0], over))
    return NULL;
  /* the gather's attributes are the inner shard's (same axes, size and
   * dimension): x is cut over B and gathered back whole */
  const Term *x = inner->args[0];
  const Term *part = term_op(OP_SHARD, 1, &x, sh->attrs, NULL, err);
  if (part)
    part = term_op(OP_SHARD, 1, &part, inner->attrs, NULL, err);
  if (part)
    part = term_op(OP_ALL_GATHER, 1, &part, g->attrs, NULL, err);
  /* A's chunk cut over B again need not divide evenly (96 heads over
   * model=8, then batch=8: 12 in parts of 2, padded to 16): then the
   * gather of the chunk is not A's chunk, and the gather stays */
  return part && part->type == sh->type ? part : NULL;
}

typedef struct Regather {
  GHashTable *memo;  /* Term -> rebuilt Term */
  GHashTable *names; /* value names rebuilt values keep, or NULL */
  Diag *err;
} Regather;

static const Term *regather(void *ud, const Term *t) {
  Regather *rg = ud;
  if (t->nargs == 0)
    return t;
  const Term *done = g_hash_table_lookup(rg->memo, t);
  if (done)
    return done;
  const Term *r = term_map_args(t, regather, rg, rg->err);
  g_assert(r); /* same types, no new nesting */
  if (r->kind == TM_OP && r->op == OP_SHARD) {
    const Term *chunk = gather_chunk(r, rg->err);
    if (chunk)
      r = chunk;
  }
  replace_inherit_name(rg->names, t, r);
  g_hash_table_insert(rg->memo, (gpointer)t, (gpointer)r);
  return r;
}

/* Until no argument is used only through a shard: a chunk of a chunk
 * (split over two axes) is received as such.  A round after one that
 * received no argument whose chunk is used only through one shard would
 * change nothing (the arguments it did not receive are used as they
 * were), so it is not run: it would walk the whole program. */
static const Term *shard_inputs(const Term *body, Func *f, Dist *dists,
                                GHashTable *names, SpmdMemo *memo) {
  int round = 0;
  for (gboolean again = TRUE; again; round++) {
    gboolean changed = FALSE;
    again = FALSE;
    body =
        shard_inputs_once(body, f, dists, names, memo, round, &changed, &again);
  }
  return body;
}

/* Local result 'r', laid out as 'got', in layout 'want' instead: the
 * dimensions 'got' splits otherwise gathered, then cut as 'want' cuts
 * them (outer axis first, as lowering cuts them).  NULL to leave it as
 * it is: an uneven split (its padding is the lowering's to place), or a
 * collective that does not type. */
static const Term *relayout(const Mesh *mesh, const Term *r, const Dist *got,
                            const Dist *want) {
  for (int d = 0; d < got->rank; d++)
    if (got->global[d] || want->global[d])
      return NULL;
  g_autoptr(Diag) err = diag_new(NULL);
  Dist now = *got;
  for (int d = 0; d < got->rank && r; d++)
    if (now.naxes[d] && !dist_same_axes(&now, d, want, d)) {
      r = spmd_collective(mesh, OP_ALL_GATHER, r, now.axes[d], now.naxes[d], d,
                          0, 0, err);
      now.naxes[d] = 0;
    }
  for (int d = 0; d < got->rank && r; d++)
    for (int k = 0; !now.naxes[d] && k < want->naxes[d] && r; k++)
      r = spmd_collective(mesh, OP_SHARD, r, &want->axes[d][k], 1, d, 0, 0,
                          err);
  return r;
}

/* Each result that updates an argument in the argument's layout (what
 * shard_inputs gave it); whether any changed. */
static gboolean results_as_updated(Func *f) {
  if (!f->result_updates)
    return FALSE;
  const SpmdInfo *sp = f->spmd;
  const Term **results = g_newa(const Term *, (gsize)MAX(f->nresults, 1));
  gboolean changed = FALSE;
  for (int i = 0; i < f->nresults; i++) {
    results[i] = f->body->args[i];
    int k = f->result_updates[i];
    const Dist *want = k >= 0 ? &sp->arg_dists[k] : NULL;
    Dist *got = &sp->result_dists[i];
    if (!want || want->npartial || got->npartial)
      continue;
    gboolean same = TRUE;
    for (int d = 0; d < got->rank; d++)
      same &= dist_same_axes(got, d, want, d);
    const Term *r = same ? NULL : relayout(&sp->mesh, results[i], got, want);
    if (!r)
      continue;
    results[i] = r;
    *got = *want;
    changed = TRUE;
  }
  if (changed)
    f->body = term_tuple(f->nresults, results);
  return changed;
}

/* spmd_fuse, with the results 'memo' holds when given (then without
 * names). */
static gboolean fuse_func(const RuleSet *rs, Func *f, Module *names,
                          SpmdMemo *memo, Diag *why) {
  g_assert(f->spmd);
  GHashTable *table = names ? names->names : NULL;
  const Term *body = f->body;
again:
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
  /* its result depends on the term alone: kept with 'memo' */
  Regather rg = {memo ? g_hash_table_ref(memo->regather)
                      : g_hash_table_new(NULL, NULL),
                 table, diag_new(NULL)};
  body = regather(&rg, body);
  g_hash_table_unref(rg.memo);
  diag_free(rg.err);
  f->body = shard_inputs(body, f, f->spmd->arg_dists, table, memo);
  /* the collectives a result's layout adds may fuse (shard(all_gather)
   * on another dimension is an all_to_all); the arguments' layouts stay */
  if (results_as_updated(f)) {
    body = f->body;
    goto again;
  }
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
