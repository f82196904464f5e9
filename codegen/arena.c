/* arena.c — where the computed values live: one block per run, values
 * whose lives do not overlap sharing bytes.
 *
 * A value's life runs from the top-level statement that computes it to
 * the last top-level statement that reads it (a value inside a tile or
 * sum lives for its whole region: its buffer is rewritten each
 * iteration).  Lives are closed intervals, so a kernel's result never
 * shares bytes with an operand it reads.  Offsets are chosen first fit,
 * in the order lives start, each 64-byte aligned (vector loads, the
 * kernel's packed panels).  Arguments are the caller's, constants the
 * plan's, results tensors of their own (returned to the caller), and
 * fused values have no buffer: none of them is in the arena.
 */
#include "codegen/internal.h"

#define ARENA_ALIGN 64

typedef struct Life {
  int slot;
  int start, end; /* top-level statement positions, inclusive */
  int64_t bytes, offset;
} Life;

typedef struct LifeWalk {
  const Plan *p;
  int *start, *end; /* per slot, -1 when not seen */
  int pos;          /* the top-level statement being walked */
} LifeWalk;

static void touch(LifeWalk *w, int s) {
  if (s < 0)
    return;
  if (w->start[s] < 0)
    w->start[s] = w->pos;
  w->end[s] = MAX(w->end[s], w->pos);
}

/* The values 't''s kernel reads: its operands, and through a fused one
 * that one's operands (a fused value is computed where its user is). */
static void touch_operands(LifeWalk *w, const Term *t) {
  for (int k = 0; k < t->nargs; k++) {
    int a = plan_slot(w->p, t->args[k]);
    if (a >= 0 && g_array_index(w->p->slots, Slot, a).fused)
      touch_operands(w, t->args[k]);
    else
      touch(w, a);
  }
}

static void walk_region(LifeWalk *w, const SchedRegion *r, gboolean top) {
  for (guint i = 0; i < r->stmts->len; i++) {
    const SchedStmt *st = g_ptr_array_index(r->stmts, i);
    if (top)
      w->pos++;
    int s = plan_slot(w->p, st->t);
    const Slot *slot = &g_array_index(w->p->slots, Slot, s);
    if (slot->fused)
      continue;
    touch(w, s);
    if (slot->acc >= 0)
      touch(w, slot->acc);
    touch_operands(w, st->t);
    if (st->child)
      walk_region(w, st->child, FALSE);
  }
}

static int by_start(const void *a, const void *b) {
  const Life *x = a, *y = b;
  return x->start != y->start ? (x->start > y->start) - (x->start < y->start)
                              : (x->slot > y->slot) - (x->slot < y->slot);
}

static int by_offset(const void *a, const void *b) {
  const Life *x = *(Life *const *)a, *y = *(Life *const *)b;
  return (x->offset > y->offset) - (x->offset < y->offset);
}

static gboolean in_arena(const Plan *p, int s, const gboolean *result) {
  const Slot *slot = &g_array_index(p->slots, Slot, s);
  return slot->arg < 0 && !slot->value && !slot->fused && !result[s] &&
         type_numel(slot->type) > 0;
}

void plan_arena(Plan *p) {
  guint n = p->slots->len;
  g_autofree int *start = g_new(int, n + 1);
  g_autofree int *end = g_new(int, n + 1);
  g_autofree gboolean *result = g_new0(gboolean, n + 1);
  for (guint s = 0; s < n; s++) {
    start[s] = end[s] = -1;
    g_array_index(p->slots, Slot, s).offset = -1;
  }
  for (int i = 0; i < p->nresults; i++)
    result[p->results[i]] = TRUE;
  LifeWalk w = {p, start, end, 0};
  walk_region(&w, p->sched->top, TRUE);
  g_autofree Life *lives = g_new(Life, n + 1);
  int nl = 0;
  for (guint s = 0; s < n; s++)
    if (start[s] >= 0 && in_arena(p, (int)s, result))
      lives[nl++] = (Life){
          (int)s, start[s], end[s],
          (int64_t)tensor_type_bytes(g_array_index(p->slots, Slot, s).type), 0};
  qsort(lives, (size_t)nl, sizeof *lives, by_start);
  /* first fit among the placed lives that overlap this one, by offset */
  g_autofree Life **live = g_new(Life *, (gsize)nl + 1);
  int64_t top = 0;
  for (int i = 0; i < nl; i++) {
    int nlive = 0;
    for (int j = 0; j < i; j++)
      if (lives[j].end >= lives[i].start)
        live[nlive++] = &lives[j];
    qsort(live, (size_t)nlive, sizeof *live, by_offset);
    int64_t at = 0;
    for (int j = 0; j < nlive; j++) {
      if (live[j]->offset >= at + lives[i].bytes)
        break; /* fits in the gap before it */
      at = MAX(at, (live[j]->offset + live[j]->bytes + ARENA_ALIGN - 1) /
                       ARENA_ALIGN * ARENA_ALIGN);
    }
    lives[i].offset = at;
    top = MAX(top, at + lives[i].bytes);
    g_array_index(p->slots, Slot, lives[i].slot).offset = at;
  }
  p->arena_bytes = top;
}
