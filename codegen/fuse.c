/* fuse.c — which values are computed inside their users' loops.
 *
 * A fused value has no buffer: the kernel of the value that reads it
 * computes it, element by element, where it needs it (kernel.c).  The
 * decision is made on the term, producer by producer:
 *
 *   - the producer is elementwise (arithmetic, compare, select, convert)
 *     or moves data by an index map (broadcast_in_dim, transpose, slice,
 *     reshape);
 *   - every user reads fused operands: an elementwise or index-map
 *     operator, a reduction, concatenate (not a contraction, a
 *     collective, a tile's or sum's body, a region's slice, a result);
 *   - every user is in the producer's region (never recomputed in each
 *     iteration of a loop it does not depend on), and none broadcasts
 *     it (a row's statistic is computed once, not once per column);
 *   - it has one use, or it is an index map or convert of a value with
 *     a buffer (cheap to compute twice: an expensive producer is never
 *     duplicated, and duplication never compounds).
 */
#include "codegen/internal.h"

gboolean fuse_fusible(const Term *t) {
  if (t->kind != TM_OP)
    return FALSE;
  switch (t->op) { /* constants and iotas are evaluated when compiling */
  case OP_ADD:
  case OP_SUB:
  case OP_MUL:
  case OP_DIV:
  case OP_MAX:
  case OP_MIN:
  case OP_POW:
  case OP_NEG:
  case OP_ABS:
  case OP_RELU:
  case OP_EXP:
  case OP_LOG:
  case OP_TANH:
  case OP_LOGISTIC:
  case OP_SQRT:
  case OP_RSQRT:
  case OP_COMPARE:
  case OP_SELECT:
  case OP_CONVERT:
  case OP_BROADCAST_IN_DIM:
  case OP_TRANSPOSE:
  case OP_SLICE:
  case OP_RESHAPE:
    return TRUE;
  default:
    return FALSE;
  }
}

gboolean fuse_absorbs(const Term *t) {
  return fuse_fusible(t) || (t->kind == TM_OP && (t->op == OP_REDUCE_SUM ||
                                                  t->op == OP_REDUCE_MAX ||
                                                  t->op == OP_CONCATENATE));
}

/* Cheap enough to compute once per user. */
static gboolean index_map(const Term *t) {
  switch (t->op) {
  case OP_BROADCAST_IN_DIM:
  case OP_TRANSPOSE:
  case OP_SLICE:
  case OP_RESHAPE:
  case OP_CONVERT:
    return TRUE;
  default:
    return FALSE;
  }
}

/* Whether 't' would compute its operand 'a' more than once per element
 * of it: a broadcast that repeats an operand that is not an index map
 * (an expensive producer is never duplicated). */
static gboolean spreads(const Term *t, const Term *a) {
  return t->op == OP_BROADCAST_IN_DIM &&
         type_numel(t->type) > type_numel(a->type) &&
         !(a->kind == TM_OP && index_map(a));
}

typedef struct Uses {
  int *count;       /* per slot */
  gboolean *pinned; /* per slot: must have a buffer */
  gboolean *whole;  /* per slot: read as a whole buffer (not by fused
                       kernels' element loads) */
} Uses;

static void pin(const Plan *p, Uses *u, const Term *t) {
  int s = plan_slot(p, t);
  if (s >= 0)
    u->pinned[s] = u->whole[s] = TRUE;
}

static void count_region(const Plan *p, Uses *u, const SchedRegion *r) {
  for (guint i = 0; i < r->stmts->len; i++) {
    const SchedStmt *st = g_ptr_array_index(r->stmts, i);
    const Term *t = st->t;
    if (t->kind == TM_OP) {
      for (int k = 0; k < t->nargs; k++) {
        int a = plan_slot(p, t->args[k]);
        u->count[a]++;
        const Slot *as = &g_array_index(p->slots, Slot, a);
        if (!fuse_absorbs(t))
          u->whole[a] = TRUE;
        if (!fuse_absorbs(t) || as->region != r || spreads(t, as->t))
          u->pinned[a] = TRUE;
      }
    } else if (t->nargs > 0) { /* a tile's or sum's body, a slice's whole */
      pin(p, u, t->args[0]);
    }
    if (st->child)
      count_region(p, u, st->child);
  }
}

/* Constants and iotas depend on nothing: evaluated once, here, by the
 * interpreter's kernels; a splat that no user reads whole keeps its one
 * number (a scale broadcast to a [B, H, S, S] shape costs 4 bytes, not
 * a buffer of that shape). */
static void evaluate_constants(Plan *p, const gboolean *whole) {
  for (guint s = 0; s < p->slots->len; s++) {
    Slot *slot = &g_array_index(p->slots, Slot, s);
    const Term *t = slot->t;
    if (!t || t->kind != TM_OP || (t->op != OP_CONSTANT && t->op != OP_IOTA))
      continue;
    if (!whole[s] && type_numel(t->type) > 1 &&
        (slot->value = kernel_constant_splat(t)))
      slot->splat = TRUE;
    else
      slot->value = kernel_eval(t, NULL);
  }
}

void plan_fuse(Plan *p) {
  guint n = p->slots->len;
  Uses u = {g_new0(int, n + 1), g_new0(gboolean, n + 1),
            g_new0(gboolean, n + 1)};
  count_region(p, &u, p->sched->top);
  for (int i = 0; i < p->nresults; i++)
    u.pinned[p->results[i]] = u.whole[p->results[i]] = TRUE;
  evaluate_constants(p, u.whole);
  /* slots are in schedule order: operands are decided first */
  for (guint s = 0; s < n; s++) {
    Slot *slot = &g_array_index(p->slots, Slot, s);
    if (!slot->t || slot->value || u.pinned[s] || !fuse_fusible(slot->t))
      continue;
    gboolean once = u.count[s] == 1;
    gboolean cheap =
        index_map(slot->t) &&
        !g_array_index(p->slots, Slot, plan_slot(p, slot->t->args[0])).fused;
    slot->fused = once || cheap;
  }
  g_free(u.count);
  g_free(u.pinned);
  g_free(u.whole);
}

/* ---------------------------------------------------------- --emit fusion */

static void print_fused(GString *out, const Plan *p, const Term *t,
                        GString *reads, GHashTable *seen) {
  for (int k = 0; k < t->nargs; k++) {
    const Term *a = t->args[k];
    if (g_hash_table_contains(seen, a))
      continue;
    g_hash_table_add(seen, (gpointer)a);
    const Slot *as = &g_array_index(p->slots, Slot, plan_slot(p, a));
    if (as->fused) {
      print_fused(out, p, a, reads, seen);
      g_string_append_printf(out, "%s%s %s", out->len ? ", " : "", as->name,
                             op_name(a->op));
    } else {
      g_string_append_printf(reads, "%s%s", reads->len ? ", " : "", as->name);
    }
  }
}

static void print_region(GString *out, const Plan *p, const SchedRegion *r,
                         int depth) {
  for (guint i = 0; i < r->stmts->len; i++) {
    const SchedStmt *st = g_ptr_array_index(r->stmts, i);
    const Term *t = st->t;
    const Slot *slot = &g_array_index(p->slots, Slot, plan_slot(p, t));
    if (slot->fused || slot->value)
      continue;
    g_string_append_printf(out, "%*s", 2 * depth, "");
    if (st->child) {
      g_string_append_printf(
          out, "%s = %s: a loop of %" G_GINT64_FORMAT " iterations\n",
          slot->name, t->kind == TM_TILE ? "tile" : "sum",
          t->range->n / t->range->w);
      print_region(out, p, st->child, depth + 1);
      continue;
    }
    if (t->kind != TM_OP) {
      g_string_append_printf(
          out, "%s = slice: a chunk of %s\n", slot->name,
          g_array_index(p->slots, Slot, plan_slot(p, t->args[0])).name);
      continue;
    }
    g_autoptr(GString) fused = g_string_new(NULL);
    g_autoptr(GString) reads = g_string_new(NULL);
    g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
    print_fused(fused, p, t, reads, seen);
    g_string_append_printf(out, "%s = %s", slot->name, op_name(t->op));
    if (fused->len)
      g_string_append_printf(out, " fusing %s", fused->str);
    g_string_append_printf(out, "; reads %s\n",
                           reads->len ? reads->str : "nothing");
  }
}

char *plan_fusion_text(const Plan *p) {
  GString *out = g_string_new(NULL);
  print_region(out, p, p->sched->top, 0);
  return g_string_free(out, FALSE);
}
