/* fuse.c — the fusion decision (src/spmd/fusion.c) applied to a plan:
 * which slots have no buffer, the constants evaluated when compiling,
 * and the decision printed (partir compile --emit fusion). */
#include "codegen/internal.h"

/* Constants and iotas depend on nothing: evaluated once, here, by the
 * interpreter's kernels; a splat that no user reads whole keeps its one
 * number (a scale broadcast to a [B, H, S, S] shape costs 4 bytes, not
 * a buffer of that shape). */
static void evaluate_constants(Plan *p, const Fusion *fu) {
  for (guint s = 0; s < p->slots->len; s++) {
    Slot *slot = &g_array_index(p->slots, Slot, s);
    const Term *t = slot->t;
    if (!t || t->kind != TM_OP || (t->op != OP_CONSTANT && t->op != OP_IOTA))
      continue;
    if (!fusion_read_whole(fu, t) && type_numel(t->type) > 1 &&
        (slot->value = kernel_constant_splat(t)))
      slot->splat = TRUE;
    else
      slot->value = kernel_eval(t, NULL);
  }
}

void plan_fuse(Plan *p, const Func *f) {
  g_autoptr(Fusion) fu = fusion_new(p->sched, f);
  evaluate_constants(p, fu);
  for (guint s = 0; s < p->slots->len; s++) {
    Slot *slot = &g_array_index(p->slots, Slot, s);
    slot->fused = slot->t && fusion_fused(fu, slot->t);
  }
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
          type_range_parts(t->range));
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
