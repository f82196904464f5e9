/* remat.c — rematerialization: a training step's backward pass
 * recomputes chosen activations instead of keeping them from the
 * forward pass.
 *
 * The step's forward pass is what its last result (the loss, as
 * train.c returns it) reads; every other value is the backward pass or
 * the update.  'remat %a' gives the backward pass its own copy of %a,
 * computed from what %a reads: those values the forward keeps (unless
 * they are rematerialized too, then from theirs).  The copy reads its
 * kept inputs through a convert to their own type: the term store shares
 * equal terms, so without it the copy would be the forward's value again.
 * (JAX's checkpoint keeps its copy apart the same way, with an
 * optimization barrier.)  The forward's %a then dies after its last
 * forward use, and the copy lives from where the backward pass computes
 * it: less memory at the peak, the copy's FLOPs more ('partir cost'
 * shows both).  A region can be rematerialized too: ZeRO-3's gathered
 * weight (a tile of the device's parts) is gathered again for the
 * backward pass instead of kept between the passes.
 */
#include "rewrite/rewrite.h"

typedef struct Remat {
  GHashTable *forward; /* the values the loss reads */
  GHashTable *chosen;  /* the values to recompute */
  GHashTable *copies;  /* chosen value -> its copy */
  GHashTable *rebuilt; /* backward value -> with the copies */
  Diag *why;
  gboolean failed;
} Remat;

static const Term *copy_of(Remat *r, const Term *t);

/* operand 'a' as the copy reads it */
static const Term *copy_operand(void *ud, const Term *a) {
  Remat *r = ud;
  if (r->failed)
    return a;
  if (g_hash_table_contains(r->chosen, a))
    return copy_of(r, a);
  if (a->kind == TM_BVAR || a->type->kind != TY_TENSOR)
    return a; /* a region's binder: nothing to keep apart */
  if (!term_is_closed(a))
    return copy_of(r, a); /* inside a region: copied too */
  const Term *kept = term_op(OP_CONVERT, 1, &a, attrs_empty(), a->type, r->why);
  if (!kept)
    r->failed = TRUE;
  return kept ? kept : a;
}

static const Term *copy_of(Remat *r, const Term *t) {
  const Term *done = g_hash_table_lookup(r->copies, t);
  if (done)
    return done;
  const Term *c;
  const Term *x = t->kind == TM_SLICE ? t->args[0] : NULL;
  if (x && term_is_closed(x) && !g_hash_table_contains(r->chosen, x))
    /* a part of a kept value is kept apart as the part, not through a
     * copy of the whole: ZeRO-3's weight is read in its parts again, so
     * each device still stores its own part only */
    c = term_op(OP_CONVERT, 1, &t, attrs_empty(), t->type, r->why);
  else
    c = term_map_args(t, copy_operand, r, r->why);
  if (!c) { /* a constant or an iota (no operand) is its own copy */
    r->failed = TRUE;
    c = t;
  }
  g_hash_table_insert(r->copies, (gpointer)t, (gpointer)c);
  return c;
}

static const Term *rebuild(Remat *r, const Term *t);

static const Term *rebuild_operand(void *ud, const Term *a) {
  Remat *r = ud;
  if (r->failed)
    return a;
  if (g_hash_table_contains(r->chosen, a))
    return copy_of(r, a);
  if (g_hash_table_contains(r->forward, a))
    return a;
  return rebuild(r, a);
}

static const Term *rebuild(Remat *r, const Term *t) {
  const Term *done = g_hash_table_lookup(r->rebuilt, t);
  if (done)
    return done;
  const Term *u = term_map_args(t, rebuild_operand, r, r->why);
  if (!u) {
    r->failed = TRUE;
    return t;
  }
  g_hash_table_insert(r->rebuilt, (gpointer)t, (gpointer)u);
  return u;
}

const Term *rw_remat(const Term *body, const Term *const *values, int n,
                     GHashTable *names, Diag *why) {
  if (body->kind != TM_TUPLE || body->nargs < 2) {
    diag_reason(why, "remat: a training step has its loss as its last "
                     "result, after the values it updates");
    return NULL;
  }
  Remat r = {.why = why};
  r.forward = g_hash_table_new(NULL, NULL);
  r.chosen = g_hash_table_new(NULL, NULL);
  r.copies = g_hash_table_new(NULL, NULL);
  r.rebuilt = g_hash_table_new(NULL, NULL);
  term_reach(body->args[body->nargs - 1], r.forward);
  for (int i = 0; i < n && !r.failed; i++) {
    const Term *v = values[i];
    if (v->kind == TM_ARG || v->kind == TM_BVAR || v->kind == TM_SLICE ||
        !term_is_closed(v) || !g_hash_table_contains(r.forward, v)) {
      diag_reason(why,
                  "remat: value %d is not an operator or a region of the "
                  "forward pass (what the loss reads), outside every region",
                  i + 1);
      r.failed = TRUE;
    }
    g_hash_table_add(r.chosen, (gpointer)v);
  }
  const Term *out = NULL;
  if (!r.failed) {
    const Term **res = g_new(const Term *, (gsize)body->nargs);
    for (int i = 0; i < body->nargs; i++)
      res[i] = i == body->nargs - 1 ||
                       g_hash_table_contains(r.forward, body->args[i])
                   ? body->args[i]
                   : rebuild(&r, body->args[i]);
    for (int i = 0; i < body->nargs && !r.failed; i++)
      replace_inherit_name(names, body->args[i], res[i]);
    if (!r.failed)
      out = term_tuple(body->nargs, res);
    g_free(res);
  }
  g_hash_table_destroy(r.forward);
  g_hash_table_destroy(r.chosen);
  g_hash_table_destroy(r.copies);
  g_hash_table_destroy(r.rebuilt);
  return out;
}
