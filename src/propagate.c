/* propagate.c — propagation and the other fixed-point passes.
 *
 * propagate pushes slices in, pulls tiles out and fuses, to a fixed
 * point, in one bottom-up pass over the term DAG:
 *
 *   - an operator with a tiled operand is tiled the same way: the derived
 *     rule OP-tile-D (or OP-sum-K when the operand's tiled dimension is
 *     one the operator reduces) with the operand's width and axis; the
 *     slice of the operand's tile that this creates then fuses ('fuse'),
 *     which is "pulling the tile out";
 *   - a slice of a value is pushed into the value: the rules tagged
 *     [propagate] in the rule files (fuse, slice-tile, slice-sum) and the
 *     derived slice-OP-D.
 *
 * Rewrites do not depend on a term's context, so each distinct term is
 * normalised once (memo by pointer) and the pass is linear in the size
 * of the DAG plus the work of the rewrites.  Operands are visited in
 * order, so the result is deterministic: the first tiled operand's tile
 * ends up outermost.  What cannot be resolved — a tiled dimension the
 * operator cannot carry, two tilings of one dimension with different
 * widths, an axis used twice in one nest — is left in place and reported.
 *
 * requires: the rule set has 'fuse' (partir.rules) and the op specs.
 */
#include "rule.h"

#include <string.h>

typedef struct Norm Norm;
typedef const Term *(*StepFn)(Norm *n, const Term *t);

struct Norm {
  const RuleSet *rs;
  GHashTable *memo;
  GPtrArray *rules; /* pattern rules tried at every node */
  StepFn step;
  GString *report;
  GHashTable *reported;
};

static void note(Norm *n, const char *msg) {
  if (!n->report || !g_hash_table_add(n->reported, g_strdup(msg)))
    return;
  g_string_append_printf(n->report, "%s\n", msg);
}

static const Term *norm(Norm *n, const Term *t);

/* Tries the pattern rules at 't'. */
static const Term *try_rules(Norm *n, const Term *t) {
  g_autoptr(GString) why = g_string_new(NULL);
  for (guint i = 0; i < n->rules->len; i++) {
    const Rule *r = g_ptr_array_index(n->rules, i);
    const Term *out = rule_apply_here(n->rs, r, t, NULL, 0, why);
    if (out)
      return out;
  }
  return NULL;
}

static const Term *apply_named(Norm *n, const char *name, const Term *t,
                               int64_t w, const char *axis) {
  const Rule *r = ruleset_find(n->rs, name);
  if (!r)
    return NULL;
  RuleArg args[2] = {{g_intern_string("w"), FALSE, w, NULL},
                     {g_intern_string("a"), TRUE, 0, axis}};
  g_autoptr(GString) why = g_string_new(NULL);
  return rule_apply_here(n->rs, r, t, args, axis ? 2 : 1, why);
}

/* Pulls the first tiled operand's tile out of operator 't'. */
static const Term *pull_tile(Norm *n, const Term *t) {
  TileSpec spec;
  if (!spec_of(n->rs, t, &spec))
    return NULL;
  for (int i = 0; i < t->nargs; i++) {
    const Term *a = t->args[i];
    if (a->kind != TM_TILE)
      continue;
    int c = a->index;
    g_autofree char *name = NULL;
    for (int d = 0; d < spec.nout && !name; d++)
      if (spec.out_ok[d] && spec.out[d][i] == c)
        name = g_strdup_printf("%s-tile-%d", op_name(t->op), d);
    for (int k = 0; k < spec.nred && !name; k++)
      if (spec.red[k][i] == c)
        name = k ? g_strdup_printf("%s-sum-%d", op_name(t->op), k)
                 : g_strdup_printf("%s-sum", op_name(t->op));
    const Term *out = name ? apply_named(n, name, t, a->range->w, a->axis) : NULL;
    if (out)
      return out;
    g_autofree char *msg = g_strdup_printf(
        "cannot propagate the tiling of operand %d of '%s' along dimension "
        "%d%s%s",
        i + 1, op_name(t->op), c, name ? ": " : " (the operator cannot carry it)",
        name ? name : "");
    note(n, msg);
  }
  return NULL;
}

static const Term *propagate_step(Norm *n, const Term *t) {
  if (t->kind == TM_OP)
    return pull_tile(n, t);
  if (t->kind != TM_SLICE)
    return NULL;
  const Term *out = try_rules(n, t);
  if (out)
    return out;
  const Term *x = t->args[0];
  if (x->kind == TM_OP) {
    g_autofree char *name =
        g_strdup_printf("slice-%s-%d", op_name(x->op), t->index);
    return apply_named(n, name, t, 0, NULL);
  }
  if (x->kind == TM_TILE && x->index == t->index) {
    g_autofree char *msg = g_strdup_printf(
        "conflicting tilings of dimension %d: a slice of width %" G_GINT64_FORMAT
        " of a tile of width %" G_GINT64_FORMAT,
        t->index, t->args[1]->type->w, x->range->w);
    note(n, msg);
  }
  return NULL;
}

static const Term *rules_step(Norm *n, const Term *t) {
  return try_rules(n, t);
}

static const Term *norm(Norm *n, const Term *t) {
  if (t->nargs == 0)
    return t;
  const Term *done = g_hash_table_lookup(n->memo, t);
  if (done)
    return done;
  const Term *stack[8];
  const Term **args = t->nargs <= 8 ? stack : g_new(const Term *, (gsize)t->nargs);
  gboolean changed = FALSE;
  for (int i = 0; i < t->nargs; i++) {
    args[i] = norm(n, t->args[i]);
    changed |= args[i] != t->args[i];
  }
  const Term *t1 = t;
  if (changed) {
    g_autoptr(GString) err = g_string_new(NULL);
    t1 = term_with_args(t, args, err);
    g_assert(t1);
  }
  if (args != stack)
    g_free(args);
  const Term *r = n->step(n, t1);
  const Term *result = r ? norm(n, r) : t1;
  g_hash_table_insert(n->memo, (gpointer)t, (gpointer)result);
  g_hash_table_insert(n->memo, (gpointer)result, (gpointer)result);
  return result;
}

/* Reports an axis bound twice in one nest of tiles and sums.  'seen'
 * holds the terms already checked under the current nest of axes; each
 * region with an axis starts its own, so shared subterms are visited once
 * per nest, not once per path. */
static void check_axes(Norm *n, const Term *t, const char **axes, int depth,
                       GHashTable *seen) {
  if (!g_hash_table_add(seen, (gpointer)t))
    return;
  const char *axis = (t->kind == TM_TILE || t->kind == TM_SUM) ? t->axis : NULL;
  if (!axis) {
    for (int i = 0; i < t->nargs; i++)
      check_axes(n, t->args[i], axes, depth, seen);
    return;
  }
  for (int i = 0; i < depth; i++)
    if (axes[i] == axis) {
      g_autofree char *msg =
          g_strdup_printf("axis \"%s\" is bound by two nested regions", axis);
      note(n, msg);
    }
  if (depth == PARTIR_MAX_REGIONS)
    return;
  axes[depth] = axis;
  g_autoptr(GHashTable) inner = g_hash_table_new(NULL, NULL);
  check_axes(n, t->args[0], axes, depth + 1, inner);
}

static const Term *run(const RuleSet *rs, const Term *body, StepFn step,
                       guint tag, GString *report) {
  Norm n = {.rs = rs, .step = step, .report = report};
  n.memo = g_hash_table_new(NULL, NULL);
  n.reported = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  n.rules = g_ptr_array_new();
  for (guint i = 0; i < rs->rules->len; i++) {
    const Rule *r = g_ptr_array_index(rs->rules, i);
    if (r->kind == RULE_PATTERN && (r->tags & tag))
      g_ptr_array_add(n.rules, (gpointer)r);
  }
  const Term *out = norm(&n, body);
  if (report) {
    const char *axes[PARTIR_MAX_REGIONS];
    g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
    check_axes(&n, out, axes, 0, seen);
  }
  g_hash_table_unref(n.memo);
  g_hash_table_unref(n.reported);
  g_ptr_array_unref(n.rules);
  return out;
}

const Term *propagate(const RuleSet *rs, const Term *body, GString *report) {
  return run(rs, body, propagate_step, RULE_TAG_PROPAGATE, report);
}

const Term *rewrite_fixpoint(const RuleSet *rs, const Term *body, guint tag) {
  return run(rs, body, rules_step, tag, NULL);
}
