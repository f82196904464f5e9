/* fusion.c — which values are computed inside their users' loops.
 *
 * A fused value has no buffer: the kernel of the value that reads it
 * computes it, element by element, where it needs it.  The code
 * generator builds its kernels from this decision (codegen/kernel.c) and
 * the cost model prices the same kernels (cost.c), so the decision is
 * made once, here, on the schedule's term, producer by producer:
 *
 *   - the producer is elementwise (arithmetic, compare, select, convert)
 *     or moves data by an index map (broadcast_in_dim, transpose, slice,
 *     reshape; gather and dynamic_slice, whose map reads its positions
 *     from their other operands);
 *   - every user reads fused operands: an elementwise or index-map
 *     operator, a reduction, concatenate (not a contraction, pad, a
 *     collective, a tile's or sum's body, a region's slice, a result);
 *   - every user is in the producer's region (never recomputed in each
 *     iteration of a loop it does not depend on), and none broadcasts
 *     it (a row's statistic is computed once, not once per column; a
 *     gather's indices once, not once per element of a row);
 *   - it has one use, or it is an index map or convert of a value with
 *     a buffer (cheap to compute twice: an expensive producer is never
 *     duplicated, and duplication never compounds).
 */
#include "spmd/spmd.h"

gboolean fusion_fusible(const Term *t) {
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
  case OP_REM:
  case OP_LOG1P:
  case OP_EXPM1:
  case OP_SIN:
  case OP_COS:
  case OP_ERF:
  case OP_ERFC:
  case OP_FLOOR:
  case OP_CEIL:
  case OP_ROUND_EVEN:
  case OP_ROUND_AWAY:
  case OP_AND ... OP_CLZ:
  case OP_COMPARE:
  case OP_SELECT:
  case OP_CONVERT:
  case OP_BITCAST:
  case OP_BROADCAST_IN_DIM:
  case OP_TRANSPOSE:
  case OP_SLICE:
  case OP_RESHAPE:
  case OP_GATHER:
  case OP_DYNAMIC_SLICE:
    return TRUE;
  default:
    return FALSE;
  }
}

gboolean fusion_absorbs(const Term *t) {
  return fusion_fusible(t) || (t->kind == TM_OP && (op_is_reduction(t->op) ||
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
 * (an expensive producer is never duplicated).  A gather reads its
 * indices once per element of a slice, and its operand once per index
 * that reads it; a dynamic_slice its starts once per element. */
static gboolean spreads(const Term *t, const Term *a) {
  gboolean repeats = t->op == OP_BROADCAST_IN_DIM || t->op == OP_GATHER ||
                     (t->op == OP_DYNAMIC_SLICE && a != t->args[0]);
  return repeats && type_numel(t->type) > type_numel(a->type) &&
         !(a->kind == TM_OP && index_map(a));
}

/* What is known of one value of the schedule. */
typedef struct Use {
  const SchedRegion *region; /* where the schedule places it */
  int count;                 /* operand uses by operators */
  gboolean pinned;           /* must have a buffer */
  gboolean whole;            /* read as a whole buffer by some user */
  gboolean fused;
} Use;

struct Fusion {
  GHashTable *uses; /* Term -> Use* */
};

static Use *use_of(const Fusion *fu, const Term *t) {
  return g_hash_table_lookup(fu->uses, t);
}

/* Records the values placed in 'r', in schedule order. */
static void place(Fusion *fu, const SchedRegion *r, GPtrArray *order) {
  for (guint i = 0; i < r->stmts->len; i++) {
    const SchedStmt *st = g_ptr_array_index(r->stmts, i);
    Use *u = g_new0(Use, 1);
    u->region = r;
    g_hash_table_insert(fu->uses, (gpointer)st->t, u);
    g_ptr_array_add(order, (gpointer)st->t);
    if (st->child)
      place(fu, st->child, order);
  }
}

/* Marks operand 'a' as needing a buffer (read whole when 'whole'). */
static void pin(const Fusion *fu, const Term *a, gboolean whole) {
  Use *u = use_of(fu, a);
  if (!u)
    return; /* an argument or a range: it has its buffer */
  u->pinned = TRUE;
  u->whole |= whole;
}

static void count_region(const Fusion *fu, const SchedRegion *r) {
  for (guint i = 0; i < r->stmts->len; i++) {
    const SchedStmt *st = g_ptr_array_index(r->stmts, i);
    const Term *t = st->t;
    if (t->kind == TM_OP) {
      for (int k = 0; k < t->nargs; k++) {
        const Term *a = t->args[k];
        Use *u = use_of(fu, a);
        if (!u)
          continue;
        u->count++;
        if (!fusion_absorbs(t))
          u->whole = TRUE;
        if (!fusion_absorbs(t) || u->region != r || spreads(t, a))
          u->pinned = TRUE;
      }
    } else if (t->nargs > 0) { /* a tile's or sum's body, a slice's whole */
      pin(fu, t->args[0], TRUE);
    }
    if (st->child)
      count_region(fu, st->child);
  }
}

Fusion *fusion_new(const Schedule *sc, const Func *f) {
  Fusion *fu = g_new0(Fusion, 1);
  fu->uses = g_hash_table_new_full(NULL, NULL, NULL, g_free);
  g_autoptr(GPtrArray) order = g_ptr_array_new();
  place(fu, sc->top, order);
  count_region(fu, sc->top);
  for (int i = 0; i < f->nresults; i++)
    pin(fu, f->body->args[i], TRUE);
  /* schedule order: operands are decided first */
  for (guint i = 0; i < order->len; i++) {
    const Term *t = g_ptr_array_index(order, i);
    Use *u = use_of(fu, t);
    if (u->pinned || !fusion_fusible(t))
      continue;
    const Use *a = use_of(fu, t->args[0]);
    gboolean cheap = index_map(t) && !(a && a->fused);
    u->fused = u->count == 1 || cheap;
  }
  return fu;
}

void fusion_free(Fusion *fu) {
  if (!fu)
    return;
  g_hash_table_unref(fu->uses);
  g_free(fu);
}

gboolean fusion_fused(const Fusion *fu, const Term *t) {
  const Use *u = use_of(fu, t);
  return u && u->fused;
}

gboolean fusion_read_whole(const Fusion *fu, const Term *t) {
  const Use *u = use_of(fu, t);
  return !u || u->whole;
}
