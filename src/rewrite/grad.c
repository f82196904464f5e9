/* grad.c — reverse-mode differentiation of terms, partitioned or not.
 *
 * The cotangents flow from the results to the arguments through each
 * operator's vjp rule (vjp.c), in reverse topological order of the term
 * graph, adding where a value has several users.  Regions are
 * differentiated as the identities of docs/grad.md say:
 *
 *   tile d (\r -> e)      the body's cotangent is slice d dz[r]
 *   sum (\r -> e)         the body's cotangent is dz itself, for every r
 *   slice d x[r]          x's cotangent is tile d (\r -> dz): the parts
 *                         of the slices by the region's own binder put
 *                         back in place (a scatter into zeros, summed
 *                         over r, is exactly that tile)
 *   x used in the region  x's cotangent is sum (\r -> its cotangent in
 *                         the body): each part's contribution added
 *
 * So a region is differentiated by a pass of its own over the values
 * that use its binder (the values placed in it), and what reaches the
 * values outside leaves it through a tile or a sum over the same range
 * and axis.  A data-parallel region's weights get their gradients as a
 * sum over the batch axis (an all_reduce once lowered); a Megatron
 * region's activations get theirs as a tile or a sum over the model
 * axis, as Megatron-LM's f and g operators do.
 */
#include "rewrite/rewrite.h"

/* One region's pass: the values placed in it (term_home(t) == level + 1;
 * the top's closed values at level -1) are its nodes; what they use from
 * outside is reached through 'outside'. */
typedef struct Pass {
  const RuleSet *rs;
  int level;
  GHashTable *ct;     /* node -> its cotangent so far */
  GHashTable *summed; /* outside value -> its cotangent inside (uses r) */
  GHashTable *tiled;  /* slice d x[r] node -> (x's cotangent part): keyed
                         by the slice, x and d read from it */
  GPtrArray *outside; /* the outside values, in the order first reached */
  GHashTable *stop;   /* values whose cotangent goes no further, or NULL */
  Diag *err;
} Pass;

static gboolean placed_here(const Pass *p, const Term *t) {
  return term_home(t) == p->level + 1;
}

static const Term *plus(const Term *a, const Term *b, Diag *err) {
  if (!a)
    return b;
  const Term *args[2] = {a, b};
  return term_op(OP_ADD, 2, args, attrs_empty(), NULL, err);
}

/* Adds cotangent 'dv' to value 'v' of this pass or outside it. */
static gboolean add(Pass *p, const Term *v, const Term *dv) {
  if (!dv)
    return TRUE;
  GHashTable *into = placed_here(p, v) ? p->ct : p->summed;
  const Term *old = g_hash_table_lookup(into, v);
  const Term *sum = plus(old, dv, p->err);
  if (!sum)
    return FALSE;
  if (!old && into == p->summed)
    g_ptr_array_add(p->outside, (gpointer)v);
  g_hash_table_insert(into, (gpointer)v, (gpointer)sum);
  return TRUE;
}

/* The values of this pass that 't' (a node) uses, directly or from inside
 * a region nested in it. */
static void uses_here(const Pass *p, const Term *t, GPtrArray *out,
                      GHashTable *seen) {
  GPtrArray *stack = g_ptr_array_new();
  g_ptr_array_add(stack, (gpointer)t);
  while (stack->len > 0) {
    const Term *u = g_ptr_array_steal_index_fast(stack, stack->len - 1);
    for (int i = 0; i < u->nargs; i++) {
      const Term *a = u->args[i];
      if (term_home(a) <= p->level + 1 && !placed_here(p, a))
        continue; /* outside: a leaf of this pass */
      if (g_hash_table_contains(seen, a))
        continue;
      g_hash_table_add(seen, (gpointer)a);
      if (placed_here(p, a))
        g_ptr_array_add(out, (gpointer)a);
      else
        g_ptr_array_add(stack, (gpointer)a); /* inside a nested region */
    }
  }
  g_ptr_array_free(stack, TRUE);
}

/* The nodes reachable from 'roots', users before what they use. */
static GPtrArray *reverse_order(const Pass *p, int n,
                                const Term *const *roots) {
  GPtrArray *post = g_ptr_array_new();
  GHashTable *state = g_hash_table_new(NULL, NULL); /* 1 open, 2 done */
  GPtrArray *stack = g_ptr_array_new();
  GPtrArray *deps = g_ptr_array_new();
  for (int i = 0; i < n; i++) {
    if (!placed_here(p, roots[i]) || g_hash_table_contains(state, roots[i]))
      continue;
    g_ptr_array_add(stack, (gpointer)roots[i]);
    while (stack->len > 0) {
      const Term *t = g_ptr_array_index(stack, stack->len - 1);
      int s = GPOINTER_TO_INT(g_hash_table_lookup(state, t));
      if (s == 2) {
        stack->len--;
        continue;
      }
      if (s == 1) {
        g_hash_table_insert(state, (gpointer)t, GINT_TO_POINTER(2));
        g_ptr_array_add(post, (gpointer)t);
        stack->len--;
        continue;
      }
      g_hash_table_insert(state, (gpointer)t, GINT_TO_POINTER(1));
      g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
      deps->len = 0;
      uses_here(p, t, deps, seen);
      for (guint k = 0; k < deps->len; k++)
        if (!g_hash_table_contains(state, deps->pdata[k]))
          g_ptr_array_add(stack, deps->pdata[k]);
    }
  }
  g_ptr_array_free(stack, TRUE);
  g_ptr_array_free(deps, TRUE);
  g_hash_table_destroy(state);
  /* users first */
  for (guint i = 0, j = post->len ? post->len - 1 : 0; i < j; i++, j--) {
    gpointer x = post->pdata[i];
    post->pdata[i] = post->pdata[j];
    post->pdata[j] = x;
  }
  return post;
}

static gboolean run_pass(Pass *p, int n, const Term *const *roots,
                         const Term *const *cts);

/* A region 't' of this pass with cotangent 'dt': a pass of its own over
 * its body, then what reaches the outside through a tile or a sum. */
static gboolean region(Pass *p, const Term *t, const Term *dt) {
  const Term *body = t->args[0];
  const Term *r = term_bvar(t->binder, t->range);
  const Term *dbody = dt;
  if (t->kind == TM_TILE && !(dbody = term_slice(t->index, dt, r, p->err)))
    return FALSE;
  Pass in = {.rs = p->rs, .level = t->binder, .stop = p->stop, .err = p->err};
  in.ct = g_hash_table_new(NULL, NULL);
  in.summed = g_hash_table_new(NULL, NULL);
  in.tiled = g_hash_table_new(NULL, NULL);
  in.outside = g_ptr_array_new();
  gboolean ok = run_pass(&in, 1, &body, &dbody);
  /* the slices by the binder: their parts put back in place */
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, in.tiled);
  while (ok && g_hash_table_iter_next(&it, &k, &v)) {
    const Term *s = k;
    const Term *tile =
        term_tile(s->index, t->range, t->axis, v, t->binder, p->err);
    if (tile && tile->type != s->args[0]->type) {
      g_autofree char *a = type_to_string(tile->type);
      g_autofree char *b = type_to_string(s->args[0]->type);
      diag_reason(p->err,
                  "cannot differentiate a slice whose parts do not cover "
                  "its operand (%s in parts of %s)",
                  b, a);
      tile = NULL;
    }
    ok = tile && add(p, s->args[0], tile);
  }
  /* the values used inside: each part's contribution added */
  for (guint i = 0; ok && i < in.outside->len; i++) {
    const Term *x = in.outside->pdata[i];
    const Term *dx = g_hash_table_lookup(in.summed, x);
    const Term *sum = term_sum(t->range, t->axis, dx, t->binder, p->err);
    ok = sum && add(p, x, sum);
  }
  g_hash_table_destroy(in.ct);
  g_hash_table_destroy(in.summed);
  g_hash_table_destroy(in.tiled);
  g_ptr_array_free(in.outside, TRUE);
  return ok;
}

static gboolean node(Pass *p, const Term *t, const Term *dt) {
  if (p->stop && g_hash_table_contains(p->stop, t))
    return TRUE;
  switch (t->kind) {
  case TM_OP:
    for (int i = 0; i < t->nargs; i++) {
      g_autoptr(Diag) why = diag_new(NULL);
      const Term *di = vjp_cotangent(p->rs, t, i, dt, why);
      if (!di && diag_text(why)[0]) {
        diag_reason(p->err, "%s", diag_text(why));
        return FALSE;
      }
      if (!add(p, t->args[i], di))
        return FALSE;
    }
    return TRUE;
  case TM_SLICE: {
    const Term *x = t->args[0], *r = t->args[1];
    if (r->kind != TM_BVAR || r->index != p->level || placed_here(p, x)) {
      diag_reason(p->err, "cannot differentiate a slice of a value computed "
                          "in the region of its own range");
      return FALSE;
    }
    const Term *old = g_hash_table_lookup(p->tiled, t);
    const Term *sum = plus(old, dt, p->err);
    if (!sum)
      return FALSE;
    g_hash_table_insert(p->tiled, (gpointer)t, (gpointer)sum);
    return TRUE;
  }
  case TM_TILE:
  case TM_SUM:
    return region(p, t, dt);
  case TM_ARG:
  case TM_BVAR:
  case TM_TUPLE:
    return TRUE;
  }
  return TRUE;
}

static gboolean run_pass(Pass *p, int n, const Term *const *roots,
                         const Term *const *cts) {
  for (int i = 0; i < n; i++)
    if (cts[i] && !add(p, roots[i], cts[i]))
      return FALSE;
  g_autoptr(GPtrArray) order = reverse_order(p, n, roots);
  for (guint i = 0; i < order->len; i++) {
    if (partir_interrupt) {
      diag_reason(p->err, "interrupted");
      return FALSE;
    }
    const Term *t = order->pdata[i];
    const Term *dt = g_hash_table_lookup(p->ct, t);
    if (dt && !node(p, t, dt))
      return FALSE;
  }
  return TRUE;
}

gboolean grad_backward(const RuleSet *rs, int n, const Term *const *ys,
                       const Term *const *dys, int nargs, const Term **out,
                       GHashTable *stop, Diag *err) {
  for (int i = 0; i < n; i++)
    if (!term_is_closed(ys[i]) || (dys[i] && dys[i]->type != ys[i]->type)) {
      diag_reason(err, "grad: result %d and its cotangent do not match", i);
      return FALSE;
    }
  Pass p = {.rs = rs, .level = -1, .stop = stop, .err = err};
  p.ct = g_hash_table_new(NULL, NULL);
  p.summed = g_hash_table_new(NULL, NULL);
  p.tiled = g_hash_table_new(NULL, NULL);
  p.outside = g_ptr_array_new();
  gboolean ok = run_pass(&p, n, ys, dys);
  for (int i = 0; i < nargs; i++)
    out[i] = NULL;
  if (ok) {
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, p.ct);
    while (g_hash_table_iter_next(&it, &k, &v)) {
      const Term *t = k;
      if (t->kind == TM_ARG && t->index < nargs)
        out[t->index] = v;
    }
  }
  g_hash_table_destroy(p.ct);
  g_hash_table_destroy(p.summed);
  g_hash_table_destroy(p.tiled);
  g_ptr_array_free(p.outside, TRUE);
  return ok;
}
