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
 *     derived slice-OP-D;
 *   - the [propagate] rules whose left side is an operator (sum-add: two
 *     sums over one axis, added, become one) where no tile is pulled.
 *
 * Rewrites do not depend on a term's context, so each distinct term is
 * normalised once (memo by pointer) and the pass is linear in the size
 * of the DAG plus the work of the rewrites.  Operands are visited in
 * order, so the result is deterministic: the first tiled operand's tile
 * ends up outermost.  What cannot be resolved — a tiled dimension the
 * operator cannot carry, two tilings of one dimension with different
 * widths, an axis used twice in one nest — is left in place and reported;
 * so are operands split along one dimension over two axes, where the
 * first operand's axis wins.  An axis used twice in one nest is a program
 * no device runs: a pass run without a report (the agent protocol's
 * steps) fails on it instead.
 *
 * Two operands split over one axis along dimensions the operator does
 * not match are a conflict (conflict.c): with a Conflicts to collect
 * them, each is recorded where the pass meets it, with the side it kept
 * (the first operand's, or the one Conflicts.prefer names), and the
 * command fails on those not decided (or resolve.c decides them).  What
 * keeping one side entails (the other's tile left whole, or sliced
 * across, inside a region over the axis) is then the conflict's to say,
 * not the report's: while the pass normalises the tile it pulled past a
 * conflict, it does not note those over the conflict's axis.
 *
 * Every pass has fuel: a number of rewrites in proportion to the size of
 * its input.  A rule set can loop (neg(x) ~~> neg(neg(x)) tagged
 * [simplify]); a pass that would rewrite once its fuel is spent fails,
 * naming itself, rather than return a program it did not finish.  A pass
 * that remembers its results across calls (rw_fixpoint_memo, the cost of
 * the agent protocol's states) rewrites only what is new in its input:
 * it counts the input (a walk of the whole program) only once it has
 * spent the base of its budget, which most calls never do.
 *
 * requires: the rule set has 'fuse' (partir.rules) and the op specs.
 */
#include "rewrite/rewrite.h"

#include <string.h>

typedef struct Norm Norm;
typedef const Term *(*StepFn)(Norm *n, const Term *t);

/* Rewrites one pass may do per node of its input (plus a constant), and
 * how deeply rewrites of rewrites may nest, before it stops and fails
 * without a fixed point: a rule set can loop (neg(x) ~~> neg(neg(x))).
 * Propagation does a few rewrites per node. */
#define NORM_FUEL_PER_NODE 64
#define NORM_MAX_NEST 100000

/* New terms a pass may build per node of its input (plus a constant)
 * before it stops: a tiling that nests a region inside another over the
 * same axis can make propagation rebuild a program in ever deeper
 * regions, each rewrite renaming all it moves.  The passes we know build
 * a few terms per node (batch, Megatron and ZeRO composed on the
 * GPT-3-shaped transformer: at most 4.6). */
#define NORM_TERMS_PER_NODE 64
#define NORM_TERMS_BASE 65536

struct Norm {
  const RuleSet *rs;
  long fuel;
  /* The budget (fuel and the store's ceiling) is in proportion to the
   * size of the input; a pass that remembers results across calls
   * (rw_fixpoint_memo) does little work per call, and counts its input
   * only once it has spent what a pass gets without counting. */
  const Term *input;  /* what 'size' counts */
  size_t size;        /* its nodes, once counted */
  gboolean sized;     /* 'size' is counted and in the budget */
  long fuel_given;    /* the fuel the budget gave */
  size_t new_terms;   /* the new terms it allows */
  size_t store_start; /* the store's size when the pass began */
  int nest;
  gboolean stopped;  /* a rewrite was due with no fuel left: no fixed point */
  gboolean grew;     /* ... or with the store past its ceiling */
  GHashTable *memos; /* context -> (Term -> result) */
  GPtrArray *rules;  /* pattern rules tried at every node */
  StepFn step;
  GString *report;
  GHashTable *reported;
  GHashTable *names; /* the module's value names, or NULL */
  Diag *err;         /* why the store refused a rebuilt term */
  GHashTable *nests; /* context -> (Term -> nests_own_axis's answer) */
  gboolean flat;     /* no axes to keep apart (a device's own program,
                        the [spmd] rules): one context, no nest checks */
  /* Where the value being normalised sits: axes[k] is the axis of the
   * region binding level k on the way down (NULL: none), ctx[d] a hash
   * of axes[0..d-1].  A value at home h is inside the regions binding
   * levels 0..h-1, whatever path reaches it. */
  const char *axes[PARTIR_MAX_REGIONS + 1];
  guint64 ctx[PARTIR_MAX_REGIONS + 2];
  Conflicts *cx;          /* conflicts met (NULL: not looked for) */
  GHashTable *written;    /* cx: redistributions the input has already */
  GPtrArray *quiet;       /* cx: axes of the conflicts whose pulled tiles
                             are being normalised */
  const char *conflicted; /* the step just taken pulled a tile past a
                             conflict over this axis */
  const Term *stepping;   /* the value whose step runs (for its name) */
};

/* The regions around a value at home 'h', as a memo key: two places
 * with the same axes around them rewrite a value alike. */
static guint64 context_at(const Norm *n, int h) {
  return n->flat ? 0 : n->ctx[h];
}

/* Enters the body of region 't': its level is bound over its axis.  A
 * region at the same level may be inside the body (one that does not use
 * t's binder sits beside t): what this replaces comes back when the body
 * is done (leave_region). */
typedef struct Around {
  const char *axis;
  guint64 ctx;
} Around;

static Around enter_region(Norm *n, const Term *t) {
  int k = t->binder;
  Around was = {n->axes[k], n->ctx[k + 1]};
  n->axes[k] = t->axis;
  n->ctx[k + 1] = (n->ctx[k] ^ (t->axis ? g_str_hash(t->axis) : 0x5bd1e995u)) *
                  G_GUINT64_CONSTANT(0xff51afd7ed558ccd);
  return was;
}

static void leave_region(Norm *n, const Term *t, Around was) {
  n->axes[t->binder] = was.axis;
  n->ctx[t->binder + 1] = was.ctx;
}

/* The table for the values at home 'h' on the current path, from
 * 'tables' (context -> table). */
static GHashTable *table_at(Norm *n, GHashTable *tables, int h) {
  gpointer key = GSIZE_TO_POINTER((gsize)context_at(n, h));
  GHashTable *table = g_hash_table_lookup(tables, key);
  if (!table) {
    table = g_hash_table_new(NULL, NULL);
    g_hash_table_insert(tables, key, table);
  }
  return table;
}

/* The axis of a region in 't' that sits inside a region over that same
 * axis, or NULL: one nest binds an axis once (each device has one index
 * along it).  The regions around 't' are those on n->axes.  Each value
 * is looked at once per context in a pass (n->nests), so checking every
 * rewrite's result costs, over the pass, the size of the program. */
static const char NESTS_NONE[] = "";

static const char *nests_own_axis(Norm *n, const Term *t) {
  if (t->nargs == 0 || n->flat)
    return NULL;
  GHashTable *known = table_at(n, n->nests, term_home(t));
  const char *axis = g_hash_table_lookup(known, t);
  if (axis)
    return axis == NESTS_NONE ? NULL : axis;
  gboolean region = t->kind == TM_TILE || t->kind == TM_SUM;
  for (int k = 0; region && t->axis && k < t->binder && !axis; k++)
    if (n->axes[k] == t->axis)
      axis = t->axis;
  if (!axis) {
    Around was = region ? enter_region(n, t) : (Around){0};
    for (int i = 0; i < t->nargs && !axis; i++)
      axis = nests_own_axis(n, t->args[i]);
    if (region)
      leave_region(n, t, was);
  }
  g_hash_table_insert(known, (gpointer)t, (gpointer)(axis ? axis : NESTS_NONE));
  return axis;
}

static const Term *push_step(Norm *n, const Term *t);

/* A line of the report, once; it starts with the name of the value
 * whose step it is about, where the program names it ('%h: cannot
 * propagate ...'): in a model of many layers, which one. */
static void note(Norm *n, const char *msg) {
  if (!n->report)
    return;
  const char *at = n->names && n->stepping
                       ? g_hash_table_lookup(n->names, n->stepping)
                       : NULL;
  char *line = at ? g_strdup_printf("%%%s: %s", at, msg) : g_strdup(msg);
  if (g_hash_table_add(n->reported, line))
    g_string_append_printf(n->report, "%s\n", line);
}

/* A rewrite passed over because it would bind 'axis' inside a region
 * over it: 'tile' stays where it is, sliced along 'dim' (-1: used
 * whole), and the lowering redistributes it.  Noted unless that follows
 * from a conflict being recorded, or the program had this
 * redistribution before the pass (conflict.c). */
static void note_nested(Norm *n, const char *axis, const Term *tile, int dim,
                        const char *msg) {
  if (n->step == push_step) /* tiles stay where they are: that is asked */
    return;
  if (n->cx) {
    for (guint i = 0; i < n->quiet->len; i++)
      if (g_ptr_array_index(n->quiet, i) == axis)
        return;
    if (tile && conflicts_written_has(n->written, tile, dim))
      return;
  }
  note(n, msg);
}

static const Term *norm(Norm *n, const Term *t);
static void count_input(Norm *n);

/* 'x' is a sum over other axes of a tile along 'dim' over 'axis': its
 * value is split there already, so a slice of it along 'dim' by a range
 * over 'axis' is each device's own part, and staying a slice costs
 * nothing.  (Pushing the slice in would nest the sum's body, and what
 * it shares with earlier regions, inside a region over 'axis'.) */
static gboolean sum_split_along(const Term *x, int dim, const char *axis) {
  while (x && x->kind == TM_SUM && g_strcmp0(x->axis, axis) != 0)
    x = x->args[0];
  return x && x->kind == TM_TILE && x->index == dim &&
         g_strcmp0(x->axis, axis) == 0;
}

/* Tries the pattern rules at 't'.  A rule whose result is a region over
 * an axis that a region around 't' binds already (a slice of a tile
 * pushed into it across a region over the tile's axis) is passed over:
 * the slice of the tile stays, and the lowering redistributes it. */
static const Term *try_rules(Norm *n, const Term *t) {
  for (guint i = 0; i < n->rules->len; i++) {
    const Rule *r = g_ptr_array_index(n->rules, i);
    if (!match_head_may_match(r, t))
      continue;
    const Term *out = rw_apply_here(n->rs, r, t, NULL, 0, n->err);
    const char *nested = out ? nests_own_axis(n, out) : NULL;
    if (nested) {
      g_autofree char *msg = g_strdup_printf(
          "'%s' would bind axis \"%s\" inside a region over it: not applied",
          r->name, nested);
      /* a slice of a tile across its dimension: a re-split */
      const Term *x = t->kind == TM_SLICE ? t->args[0] : NULL;
      gboolean across = x && x->kind == TM_TILE && x->index != t->index;
      /* a slice of a sum over the same axis is what a reduce_scatter
       * lowers from: the split wanted there, nothing to report */
      gboolean scatter =
          x && x->kind == TM_SUM && g_strcmp0(x->axis, nested) == 0;
      if (!scatter && !sum_split_along(x, t->index, nested))
        note_nested(n, nested, across ? x : NULL, t->index, msg);
      continue;
    }
    if (out)
      return out;
  }
  return NULL;
}

/* Derived rule 'r' at 't' with width 'w' and 'axis' (may be NULL). */
static const Term *apply_derived_rule(Norm *n, const Rule *r, const Term *t,
                                      int64_t w, const char *axis) {
  static const char *w_key, *a_key;
  if (!w_key) {
    w_key = g_intern_static_string("w");
    a_key = g_intern_static_string("a");
  }
  if (!r)
    return NULL;
  RuleArg args[2] = {{w_key, FALSE, w, NULL}, {a_key, TRUE, 0, axis}};
  return rw_apply_here(n->rs, r, t, args, axis ? 2 : 1, n->err);
}

/* Operand i's tile is pulled out of 't': another operand tiled along
 * the dimension that carries the same result dimension (or reduction)
 * over another axis has its tiling fused into operand i's, and its axis
 * is dropped.  The program still computes the same, but the user asked
 * for something else: say so. */
static void note_axis_conflicts(Norm *n, const Term *t, const TileSpec *spec,
                                int i) {
  const Term *a = t->args[i];
  if (!a->axis)
    return;
  for (int j = i + 1; j < t->nargs; j++) {
    const Term *b = t->args[j];
    if (b->kind != TM_TILE || !b->axis || b->axis == a->axis)
      continue;
    gboolean same = FALSE;
    for (int d = 0; d < spec->nout; d++)
      same |= spec->out[d][i] == a->index && spec->out[d][j] == b->index;
    for (int k = 0; k < spec->nred; k++)
      same |= spec->red[k][i] == a->index && spec->red[k][j] == b->index;
    if (!same)
      continue;
    g_autofree char *msg = g_strdup_printf(
        "operands %d and %d of '%s' are split along the same dimension over "
        "different axes (\"%s\" and \"%s\"): kept \"%s\"",
        i + 1, j + 1, op_name(t->op), a->axis, b->axis, a->axis);
    note(n, msg);
  }
}

/* Whether the body of region 'a' does at most 'most' operations that
 * compute in the region, each at most one FLOP an element it makes (no
 * product, reduction or nested region): what depends on its binder only
 * moves data (slices, broadcasts, reshapes, transposes, converts) but for
 * those.  What does not depend on the binder is computed outside the
 * region and is not looked at.  Gives up (FALSE) after a few nodes. */
static gboolean body_computes_at_most(const Term *a, int most) {
  g_autoptr(GPtrArray) todo = g_ptr_array_new();
  g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
  g_ptr_array_add(todo, (gpointer)a->args[0]);
  int budget = 64;
  while (todo->len > 0) {
    const Term *u = g_ptr_array_steal_index_fast(todo, todo->len - 1);
    if (!term_uses(u, a->binder) || !g_hash_table_add(seen, (gpointer)u))
      continue;
    if (--budget < 0 || u->kind == TM_TILE || u->kind == TM_SUM)
      return FALSE;
    double flops = u->kind == TM_OP ? op_flops(u) : 0;
    if (flops > 0 && (--most < 0 || flops > (double)type_numel(u->type)))
      return FALSE;
    for (int i = 0; i < u->nargs; i++)
      g_ptr_array_add(todo, (gpointer)u->args[i]);
  }
  return TRUE;
}

static gboolean body_moves_data_only(const Term *a) {
  return body_computes_at_most(a, 0);
}

/* The elementwise operations a tile's body may do and still be pulled
 * into regions over other axes (below): index arithmetic on token ids
 * before a lookup is three or four. */
#define PULL_CHEAP_OPS 8

/* Pulling the tile of operand 'a' out of 't' puts a's body where 't' is
 * computed.  When that is deeper than 'a' (t uses binders 'a' does not)
 * and a region between is a sequential loop, the body would run again
 * in every iteration of it: work that tiling does not require, and
 * which compounds through a chain of such values (a sequence split of
 * attention, whose keys every query chunk uses, grew a 12-layer
 * transformer to a million values).  Such a tile stays whole where it
 * is, used whole inside (the lowering gathers it), unless its body only
 * moves data.  Regions bound to other mesh axes than a's run one
 * iteration a device: there the body runs once a device, as it did
 * outside, and pulling it in keeps the split (a batch tile of token ids
 * used inside Megatron's vocabulary-parallel lookup: left whole, every
 * layer after it lost the batch split).  Inside a region over a's own
 * axis it stays whole: a device holds one part of each. */
static gboolean pull_duplicates_work(const Norm *n, const Term *t,
                                     const Term *a) {
  int from = term_home(a), to = term_home(t);
  if (to <= from || body_moves_data_only(a))
    return FALSE;
  for (int k = from; k < to; k++)
    if (!n->axes[k] || n->axes[k] == a->axis) /* a loop, or a's own axis */
      return TRUE;
  /* regions over other axes: pulled when the body is a few elementwise
   * operations; a larger body pulled in would be written again in each
   * region that uses it (random walks that tile over both axes grew
   * programs half as large again) */
  return !body_computes_at_most(a, PULL_CHEAP_OPS);
}

/* Whether tile 'a', used inside a region that it is not pulled into,
 * stays whole there by design (pull_duplicates_work): its body computes. */
static gboolean kept_whole(const Term *a) { return !body_moves_data_only(a); }

/* The operand of 't' whose tile a decision keeps (resolve.c), or -1. */
static int preferred_operand(const Norm *n, const Term *t) {
  if (!n->cx || !n->cx->prefer)
    return -1;
  return GPOINTER_TO_INT(g_hash_table_lookup(n->cx->prefer, t)) - 1;
}

/* Operand i's tile was pulled out of 't': records the conflict when
 * other operands are split over its axis along other dimensions, and
 * says that the step took one (norm keeps quiet about what follows). */
static void note_split_conflict(Norm *n, const Term *t, const TileSpec *spec,
                                int i) {
  if (!n->cx)
    return;
  const char *name = n->names && n->stepping
                         ? g_hash_table_lookup(n->names, n->stepping)
                         : NULL;
  if (conflicts_note(n->cx, t, spec, i, name, n->names, kept_whole))
    n->conflicted = t->args[i]->axis;
}

/* Whether operand i of 't' is a tile whose dimension carries a
 * dimension of the result (else a reduction: pulled out, a sum). */
static gboolean tile_kept_by_result(const Term *t, const TileSpec *spec,
                                    int i) {
  const Term *a = t->args[i];
  for (int d = 0; a->kind == TM_TILE && d < spec->nout; d++)
    if (spec->out_ok[d] && spec->out[d][i] == a->index)
      return TRUE;
  return FALSE;
}

/* Whether operand i's tile would make 't' a sum over its axis while
 * another operand's tile over the same axis is one the result keeps:
 * the two conflict, and the one the result keeps is pulled first, the
 * other operand then gathered, whichever operand comes first (attention
 * split along the sequence: the queries' split kept, the keys and
 * values gathered, for dot_general(p, v) as for dot_general(v, p)). */
static gboolean yields_to_kept(const Term *t, const TileSpec *spec, int i) {
  const Term *a = t->args[i];
  if (a->kind != TM_TILE || !a->axis || tile_kept_by_result(t, spec, i))
    return FALSE;
  for (int j = 0; j < t->nargs; j++)
    if (j != i && t->args[j]->kind == TM_TILE && t->args[j]->axis == a->axis &&
        tile_kept_by_result(t, spec, j))
      return TRUE;
  return FALSE;
}

/* Pulls the first tiled operand's tile out of operator 't' (or the one
 * a decision keeps), a tile the result keeps before one of the same
 * axis that would make a sum. */
static const Term *pull_tile(Norm *n, const Term *t) {
  TileSpec spec;
  if (!spec_of(n->rs, t, &spec))
    return NULL;
  int first = preferred_operand(n, t);
  for (int at = 0; at < 2 * t->nargs; at++) {
    /* the preferred operand, then the others in order; those that yield
     * to a kept tile in a second round */
    int o = at % t->nargs;
    int i = first < 0 ? o : o == 0 ? first : o <= first ? o - 1 : o;
    if ((at < t->nargs) == (first < 0 && yields_to_kept(t, &spec, i)))
      continue;
    const Term *a = t->args[i];
    if (a->kind != TM_TILE || pull_duplicates_work(n, t, a))
      continue;
    int c = a->index;
    const Rule *rule = NULL;
    int64_t w = a->range->w;
    int carried = -1; /* the result dim a's tiled dim carries */
    for (int d = 0; d < spec.nout && !rule; d++)
      if (spec.out_ok[d] && spec.out[d][i] == c) {
        rule = ruleset_derived(n->rs, RULE_OP_TILE, t->op, d);
        /* as many parts as a's tile (a reshape's dims differ in size) */
        w = spec_width_for_parts(t, d, a->range);
        carried = d;
      }
    for (int k = 0; k < spec.nred && !rule; k++)
      if (spec.red[k][i] == c)
        rule = ruleset_derived(n->rs, RULE_OP_SUM, t->op, k);
    const char *name = rule ? rule->name : NULL;
    const Term *out = w ? apply_derived_rule(n, rule, t, w, a->axis) : NULL;
    const char *nested = out ? nests_own_axis(n, out) : NULL;
    if (nested) {
      g_autofree char *msg = g_strdup_printf(
          "operand %d of '%s': pulling its tile out would bind axis \"%s\" "
          "inside a region over it: the tile is used whole there",
          i + 1, op_name(t->op), nested);
      note_nested(n, nested, a, -1, msg);
      continue;
    }
    if (out) {
      note_axis_conflicts(n, t, &spec, i);
      note_split_conflict(n, t, &spec, i);
      return out;
    }
    g_autofree char *msg =
        w ? g_strdup_printf(
                "cannot propagate the tiling of operand %d of '%s' along "
                "dimension %d%s%s",
                i + 1, op_name(t->op), c,
                name ? ": " : " (the operator cannot carry it)",
                name ? name : "")
          : g_strdup_printf(
                "cannot propagate the tiling of operand %d of '%s' along "
                "dimension %d: its %" G_GINT64_FORMAT " parts do not divide "
                "dimension %d of the result (size %" G_GINT64_FORMAT
                "), which carries it (%s); the tile is used whole",
                i + 1, op_name(t->op), c, type_range_parts(a->range), carried,
                t->type->dims[carried], name);
    note(n, msg);
  }
  return NULL;
}

static const Term *propagate_step(Norm *n, const Term *t) {
  if (t->kind == TM_OP) {
    const Term *out = pull_tile(n, t);
    return out ? out : try_rules(n, t); /* sum-add */
  }
  if (t->kind != TM_SLICE)
    return NULL;
  const Term *out = try_rules(n, t);
  if (out)
    return out;
  const Term *x = t->args[0];
  if (x->kind == TM_OP)
    return apply_derived_rule(
        n, ruleset_derived(n->rs, RULE_SLICE_OP, x->op, t->index), t, 0, NULL);
  if (x->kind == TM_TILE && x->index == t->index) {
    g_autofree char *msg = g_strdup_printf(
        "conflicting tilings of dimension %d: a slice of width "
        "%" G_GINT64_FORMAT " of a tile of width %" G_GINT64_FORMAT,
        t->index, t->args[1]->type->w, x->range->w);
    note(n, msg);
  }
  return NULL;
}

/* Whether propagate_step rewrites somewhere in 't': the step itself at
 * every value, no pass.  'memo' is keyed by content hash (the answer
 * depends on the term alone), so it holds no term and outlives
 * collections. */
static gboolean pending_rec(Norm *n, const Term *t, GHashTable *memo) {
  if (t->nargs == 0)
    return FALSE;
  gpointer key = GSIZE_TO_POINTER(
      (gsize)(t->content ^ context_at(n, term_home(t)) * 0x9e3779b97f4a7c15u));
  gpointer known = g_hash_table_lookup(memo, key);
  if (known)
    return GPOINTER_TO_INT(known) == 2;
  gboolean pending = FALSE;
  gboolean region = t->kind == TM_TILE || t->kind == TM_SUM;
  Around was = region ? enter_region(n, t) : (Around){0};
  for (int i = 0; i < t->nargs && !pending; i++)
    pending = pending_rec(n, t->args[i], memo);
  if (region)
    leave_region(n, t, was);
  if (!pending)
    pending = propagate_step(n, t) != NULL;
  g_hash_table_insert(memo, key, GINT_TO_POINTER(pending ? 2 : 1));
  return pending;
}

static void norm_rules(Norm *n, guint tag) {
  n->rules = g_ptr_array_new();
  for (guint i = 0; i < n->rs->rules->len; i++) {
    const Rule *r = g_ptr_array_index(n->rs->rules, i);
    if (r->kind == RULE_PATTERN && (r->tags & tag))
      g_ptr_array_add(n->rules, (gpointer)r);
  }
}

gboolean rw_propagate_pending(const RuleSet *rs, const Term *body,
                              GHashTable *memo) {
  Norm n = {.rs = rs, .err = diag_new_quiet()}; /* no report: no notes */
  n.nests = g_hash_table_new_full(NULL, NULL, NULL,
                                  (GDestroyNotify)g_hash_table_unref);
  norm_rules(&n, RULE_TAG_PROPAGATE);
  g_autoptr(GHashTable) own = memo ? NULL : g_hash_table_new(NULL, NULL);
  gboolean pending = pending_rec(&n, body, memo ? memo : own);
  g_hash_table_unref(n.nests);
  g_ptr_array_unref(n.rules);
  diag_free(n.err);
  return pending;
}

static const Term *rules_step(Norm *n, const Term *t) {
  return try_rules(n, t);
}

static const Term *norm_arg(void *n, const Term *t) { return norm(n, t); }

static const Term *norm(Norm *n, const Term *t) {
  if (t->nargs == 0)
    return t;
  GHashTable *memo = table_at(n, n->memos, term_home(t));
  const Term *done = g_hash_table_lookup(memo, t);
  if (done)
    return done;
  gboolean region = t->kind == TM_TILE || t->kind == TM_SUM;
  Around was = region ? enter_region(n, t) : (Around){0};
  const Term *t1 = term_map_args(t, norm_arg, n, n->err);
  if (region)
    leave_region(n, t, was);
  n->stepping = t; /* its operands' steps set it too */
  if (!t1) {       /* only the store's limits (nesting) can refuse it */
    note(n, diag_text(n->err));
    t1 = t;
  }
  const Term *r = n->stopped ? NULL : n->step(n, t1);
  const char *conflicted = n->conflicted;
  n->conflicted = NULL;
  if (r && !n->sized && (n->fuel <= 0 || term_store_past_ceiling()))
    count_input(n);
  if (r &&
      (n->fuel <= 0 || n->nest >= NORM_MAX_NEST || term_store_past_ceiling())) {
    n->stopped = TRUE; /* the caller fails: what is built is not used */
    n->grew = term_store_past_ceiling();
    r = NULL;
  }
  const Term *result = t1;
  if (r) {
    n->fuel--;
    n->nest++;
    if (conflicted) /* the conflict says what follows from its choice */
      g_ptr_array_add(n->quiet, (gpointer)conflicted);
    result = norm(n, r);
    if (conflicted)
      g_ptr_array_set_size(n->quiet, n->quiet->len - 1);
    n->nest--;
  }
  /* the result computes what t computed: it keeps t's name */
  replace_inherit_name(n->names, t, result);
  g_hash_table_insert(memo, (gpointer)t, (gpointer)result);
  g_hash_table_insert(table_at(n, n->memos, term_home(result)),
                      (gpointer)result, (gpointer)result);
  return result;
}

static size_t dag_size(const Term *root);

/* Puts the size of the input into the budget: NORM_FUEL_PER_NODE
 * rewrites and NORM_TERMS_PER_NODE new terms per node, over the base
 * that a pass gets before counting. */
static void count_input(Norm *n) {
  n->size = dag_size(n->input);
  n->sized = TRUE;
  long more = NORM_FUEL_PER_NODE * (long)n->size;
  n->fuel += more;
  n->fuel_given += more;
  n->new_terms += NORM_TERMS_PER_NODE * n->size;
  term_store_ceiling(n->store_start + n->new_terms);
}

static size_t dag_size(const Term *root) {
  g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
  term_reach(root, seen);
  return g_hash_table_size(seen);
}

/* The pass named 'pass' over 'body' with 'step' and the rules tagged
 * 'tag' (named 'tag_name'); NULL with the reason in 'why' when it runs
 * out of fuel, and then 'report' is left as it was.  'cx' (may be NULL)
 * collects the conflicts the pass meets. */
static const Term *run(const RuleSet *rs, const Term *body, StepFn step,
                       guint tag, const char *pass, const char *tag_name,
                       GHashTable *names, Conflicts *cx, GHashTable *memo,
                       GString *report, Diag *why) {
  Norm n = {.rs = rs,
            .step = step,
            .report = report,
            .names = names,
            .flat = tag == RULE_TAG_SPMD,
            /* its text goes to the report alone */
            .err = report ? diag_new(NULL) : diag_new_quiet(),
            .cx = cx};
  if (cx) {
    n.written = conflicts_written(body);
    n.quiet = g_ptr_array_new();
  }
  n.input = body;
  n.fuel = n.fuel_given = 1024;
  n.new_terms = NORM_TERMS_BASE;
  n.store_start = term_store_size();
  const size_t ceiling = term_store_ceiling(n.store_start + n.new_terms);
  if (!memo) /* counted at once: the budget of a pass without a memo */
    count_input(&n);
  const gsize reported = report ? report->len : 0;
  n.memos = g_hash_table_new_full(NULL, NULL, NULL,
                                  (GDestroyNotify)g_hash_table_unref);
  if (memo) { /* a flat pass has one context, 0 */
    g_assert(n.flat);
    g_hash_table_insert(n.memos, NULL, g_hash_table_ref(memo));
  }
  n.nests = g_hash_table_new_full(NULL, NULL, NULL,
                                  (GDestroyNotify)g_hash_table_unref);
  n.reported = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  norm_rules(&n, tag);
  term_carry_names(names);
  const Term *out = norm(&n, body);
  term_carry_names(NULL);
  term_store_ceiling(ceiling);
  if (n.stopped && n.grew) {
    diag_reason(why,
                "the %s pass stopped after %ld rewrites: it would build more "
                "than %zu new terms from a program of %zu (a tiling that "
                "nests regions over one axis, or [%s] rules that grow?)",
                pass, n.fuel_given - n.fuel, n.new_terms, n.size, tag_name);
    if (report)
      g_string_truncate(report, reported);
    out = NULL;
  } else if (n.stopped) {
    diag_reason(why,
                "the %s pass stopped without reaching a fixed point after "
                "%ld rewrites (do the [%s] rules loop?)",
                pass, n.fuel_given - n.fuel, tag_name);
    if (report)
      g_string_truncate(report, reported);
    out = NULL;
  }
  if (n.stopped && memo) /* it remembers values it did not finish */
    g_hash_table_remove_all(memo);
  if (!n.stopped && !n.flat) {
    /* with a report, the nest is reported (a tactic fails on it); without
     * one (the agent protocol) the pass fails: no state it reaches may be
     * one that no device program runs.  (A device's own program, which
     * the [spmd] rules rewrite, binds no axis.) */
    g_autoptr(GPtrArray) twice = g_ptr_array_new();
    rw_axes_bound_twice(out, twice);
    for (guint i = 0; i < twice->len; i++) {
      g_autofree char *msg =
          g_strdup_printf("axis \"%s\" is bound by two nested regions",
                          (const char *)g_ptr_array_index(twice, i));
      note(&n, msg);
    }
    if (twice->len > 0 && !report) {
      diag_reason(why,
                  "the %s pass would bind axis \"%s\" in two nested regions "
                  "(no device program runs that)",
                  pass, (const char *)g_ptr_array_index(twice, 0));
      out = NULL;
    }
  }
  g_hash_table_unref(n.memos);
  g_hash_table_unref(n.nests);
  g_hash_table_unref(n.reported);
  diag_free(n.err);
  g_ptr_array_unref(n.rules);
  if (cx) {
    g_hash_table_unref(n.written);
    g_ptr_array_unref(n.quiet);
  }
  return out;
}

const Term *rw_propagate(const RuleSet *rs, const Term *body, GHashTable *names,
                         GString *report, Diag *why) {
  return rw_propagate_conflicts(rs, body, names, NULL, report, why);
}

/* Slices only: a tile stays where it is, so a split given to a result
 * reaches back as far as slices go and no further. */
static const Term *push_step(Norm *n, const Term *t) {
  return t->kind == TM_SLICE ? propagate_step(n, t) : NULL;
}

const Term *rw_push(const RuleSet *rs, const Term *body, GHashTable *names,
                    GString *report, Diag *why) {
  return run(rs, body, push_step, RULE_TAG_PROPAGATE, "push", "propagate",
             names, NULL, NULL, report, why);
}

const Term *rw_propagate_conflicts(const RuleSet *rs, const Term *body,
                                   GHashTable *names, Conflicts *cx,
                                   GString *report, Diag *why) {
  const Term *out = run(rs, body, propagate_step, RULE_TAG_PROPAGATE,
                        "propagate", "propagate", names, cx, NULL, report, why);
  /* pulling tiles out makes sibling regions that each compute what they
   * share: compute it once (dedup.c) */
  return out ? rw_dedup(out, names) : NULL;
}

const Term *rw_fixpoint(const RuleSet *rs, const Term *body, guint tag,
                        GHashTable *names, GString *report, Diag *why) {
  const char *tag_name = tag == RULE_TAG_FUSE       ? "fuse"
                         : tag == RULE_TAG_SIMPLIFY ? "simplify"
                         : tag == RULE_TAG_SPMD     ? "spmd"
                                                    : NULL;
  g_assert(tag_name); /* the tag of one fixed-point pass */
  const char *pass = tag == RULE_TAG_SPMD ? "redistribution fusion" : tag_name;
  return run(rs, body, rules_step, tag, pass, tag_name, names, NULL, NULL,
             report, why);
}

const Term *rw_fixpoint_memo(const RuleSet *rs, const Term *body,
                             GHashTable *memo, Diag *why) {
  return run(rs, body, rules_step, RULE_TAG_SPMD, "redistribution fusion",
             "spmd", NULL, NULL, memo, NULL, why);
}
