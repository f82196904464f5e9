/* inputs.c — which arguments of a program are its data, not parameters.
 *
 * The tactics split a program's data along its batch dimension (batch,
 * sequence) and never split it as a weight (Megatron, ZeRO).  A program
 * written by hand puts its data first, but the exporters do not: a
 * PyTorch/XLA export lists the module's parameters before the forward's
 * inputs, and a Flax 'apply(params, x)' flattens the parameters first.
 * Neither says which is which.  The data are found from what the
 * program computes instead:
 *
 *   1. the arguments whose dimension 'dim' is the results' dimension
 *      'dim': walking back from each result's dimension 'dim' along the
 *      dimension of each operand that carries it (the operator's tiling
 *      specification, spec.c, as propagation tiles it), an argument met
 *      at its dimension 'dim' is data.  A bias broadcast across the
 *      batch, a weight contracted with the activations, an embedding
 *      table indexed by the tokens carry no result dimension there;
 *   2. where that finds none (a training step returns the loss and
 *      the new parameters, or their gradients): as 1, walking back
 *      from the reductions over an operand's dimension 'dim' (the
 *      loss's mean over the batch, a bias's gradient), not from a
 *      contraction's;
 *   3. where that finds none either, in a training step, the arguments
 *      no result updates.
 *
 * A result that updates an argument (a training step's new parameter)
 * is its parameter's, not the data's: it is not walked from, and the
 * argument is not data.  partir's own training steps say which they
 * are ('{updates = %w}'); an exported one does not, and a program that
 * returns a scalar (its loss) beside results of its arguments' types is
 * read as one: a result computed from an argument of its type by
 * elementwise operators alone (w - lr * g) updates it.  (Without the
 * scalar, a residual block's output, x + f(x), would read as x's
 * update.)
 */
#include "rewrite/rewrite.h"

typedef struct Walk {
  const RuleSet *rs;
  GHashTable *seen; /* Term -> mask of dimensions walked from */
  GArray *todo;     /* Mark */
  gboolean *is_data;
  int dim;
} Walk;

typedef struct Mark {
  const Term *t;
  int d;
} Mark;

static void mark(Walk *w, const Term *t, int d) {
  guint mask = GPOINTER_TO_UINT(g_hash_table_lookup(w->seen, t));
  if (mask & (1u << d))
    return;
  g_hash_table_insert(w->seen, (gpointer)t, GUINT_TO_POINTER(mask | 1u << d));
  g_array_append_val(w->todo, ((Mark){t, d}));
}

/* Walks back from every mark. */
static void walk(Walk *w) {
  while (w->todo->len) {
    Mark m = g_array_index(w->todo, Mark, w->todo->len - 1);
    g_array_set_size(w->todo, w->todo->len - 1);
    const Term *t = m.t;
    switch (t->kind) {
    case TM_ARG:
      if (m.d == w->dim)
        w->is_data[t->index] = TRUE;
      break;
    case TM_SLICE: /* part of the operand's dimension d */
    case TM_TILE:  /* the body's dimensions, one part of d */
    case TM_SUM:
      mark(w, t->args[0], m.d);
      break;
    case TM_OP: {
      TileSpec s;
      if (!spec_of(w->rs, t, &s))
        break;
      for (int i = 0; i < t->nargs && i < SPEC_MAX_OPERANDS; i++)
        if (m.d < s.nout && s.out_ok[m.d] && s.out[m.d][i] >= 0)
          mark(w, t->args[i], s.out[m.d][i]);
      break;
    }
    default:
      break;
    }
  }
}

/* Every reduction in 'body' over its operand's dimension 'dim' (not a
 * contraction's, nor a lookup's rows, which a split table sums over):
 * walked from. */
static void mark_reductions(Walk *w, const Term *body) {
  GHashTable *visited = g_hash_table_new(NULL, NULL);
  GPtrArray *stack = g_ptr_array_new();
  g_ptr_array_add(stack, (gpointer)body);
  while (stack->len) {
    const Term *t = g_ptr_array_steal_index_fast(stack, stack->len - 1);
    if (!g_hash_table_add(visited, (gpointer)t))
      continue;
    const AttrValue *dims = t->kind == TM_OP && op_is_reduction(t->op)
                                ? attrs_get(t->attrs, "dims")
                                : NULL;
    for (int k = 0; dims && k < dims->count; k++)
      if (dims->items[k].i == w->dim)
        mark(w, t->args[0], w->dim);
    for (int i = 0; i < t->nargs; i++)
      g_ptr_array_add(stack, (gpointer)t->args[i]);
  }
  g_ptr_array_unref(stack);
  g_hash_table_unref(visited);
}

/* The argument of r's type that r is computed from by elementwise
 * operators alone (w - lr * g), or -1. */
static int elementwise_from(const RuleSet *rs, const Term *r) {
  GHashTable *visited = g_hash_table_new(NULL, NULL);
  GPtrArray *stack = g_ptr_array_new();
  g_ptr_array_add(stack, (gpointer)r);
  int found = -1;
  while (stack->len && found < 0) {
    const Term *t = g_ptr_array_steal_index_fast(stack, stack->len - 1);
    if (!g_hash_table_add(visited, (gpointer)t))
      continue;
    if (t->kind == TM_ARG && t->type == r->type)
      found = t->index;
    else if (t->kind == TM_OP && t->type == r->type && rs->specs[t->op] &&
             rs->specs[t->op]->kind == SPEC_ELEMENTWISE)
      for (int i = 0; i < t->nargs; i++)
        g_ptr_array_add(stack, (gpointer)t->args[i]);
  }
  g_ptr_array_unref(stack);
  g_hash_table_unref(visited);
  return found;
}

/* Per result, the argument it updates, or -1: f->result_updates where
 * the program says, else as an exported training step reads. */
static int *result_updates(const RuleSet *rs, const Func *f) {
  int *updates = g_new(int, (gsize)f->nresults + 1);
  gboolean loss = FALSE;
  for (int i = 0; i < f->nresults; i++) {
    updates[i] = f->result_updates ? f->result_updates[i] : -1;
    loss |= f->body->args[i]->type->rank == 0;
  }
  if (!f->result_updates && loss)
    for (int i = 0; i < f->nresults; i++)
      if (f->body->args[i]->type->rank > 0)
        updates[i] = elementwise_from(rs, f->body->args[i]);
  return updates;
}

int rw_data_args(const RuleSet *rs, const Func *f, int dim, gboolean *is_data) {
  const Term *body = f->body;
  int *updates = result_updates(rs, f);
  gboolean *updated = g_new0(gboolean, (gsize)f->nargs + 1);
  gboolean any_update = FALSE;
  for (int i = 0; i < f->nresults; i++)
    if (updates[i] >= 0 && updates[i] < f->nargs)
      updated[updates[i]] = any_update = TRUE;
  for (int a = 0; a < f->nargs; a++)
    is_data[a] = FALSE;
  Walk w = {rs, g_hash_table_new(NULL, NULL),
            g_array_new(FALSE, FALSE, sizeof(Mark)), is_data, dim};
  gboolean walked = FALSE;
  for (int i = 0; i < body->nargs; i++) {
    const Term *r = body->args[i];
    if (updates[i] >= 0 || dim < 0 || dim >= r->type->rank)
      continue;
    mark(&w, r, dim);
    walked = TRUE;
  }
  walk(&w);
  int n = 0;
  for (int a = 0; a < f->nargs; a++)
    n += is_data[a] && !updated[a];
  if (!walked || n == 0) { /* a loss: from the reductions over 'dim' */
    mark_reductions(&w, body);
    walk(&w);
  }
  n = 0;
  for (int a = 0; a < f->nargs; a++) {
    is_data[a] &= !updated[a];
    n += is_data[a];
  }
  if (n == 0 && any_update) /* the arguments no result updates */
    for (int a = 0; a < f->nargs; a++) {
      is_data[a] = !updated[a] && dim >= 0 && dim < f->arg_types[a]->rank;
      n += is_data[a];
    }
  g_hash_table_unref(w.seen);
  g_array_unref(w.todo);
  g_free(updated);
  g_free(updates);
  return n;
}
