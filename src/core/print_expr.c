/* print_expr.c — the compact expression form of the talk.
 *
 *   mlp(x, w, u) = tile 0 (\r:range<16,8> -> matmul(matmul(slice 0 x[r], w),
 * u))
 *
 * Every value is written inline where it is used, except that a closed
 * value used more than once is bound once with 'let' so the text stays
 * proportional to the term DAG.  Binders take the user's names where
 * known, else r, r1, ...  This form is for reading; the canonical printer
 * (print.c) is the one that parses back.
 */
#include "core/core.h"

typedef struct ExprPrinter {
  const Module *m;
  const Func *f;
  GHashTable *uses;                            /* closed Term -> use count */
  GHashTable *bound;                           /* closed Term -> let name */
  const char *binders[PARTIR_MAX_REGIONS + 2]; /* by level */
  int nlets;
} ExprPrinter;

static void count_uses(ExprPrinter *ep, const Term *t) {
  if (term_is_closed(t) && t->kind != TM_ARG) {
    guint n = GPOINTER_TO_UINT(g_hash_table_lookup(ep->uses, t));
    g_hash_table_insert(ep->uses, (gpointer)t, GUINT_TO_POINTER(n + 1));
    if (n > 0)
      return; /* operands already counted */
  }
  for (int i = 0; i < t->nargs; i++)
    count_uses(ep, t->args[i]);
}

static void expr(ExprPrinter *ep, GString *out, int depth, const Term *t);

static void expr_binder(ExprPrinter *ep, GString *out, int depth,
                        const Term *t) {
  const char *user = g_hash_table_lookup(ep->m->binder_names, t);
  char *name = user    ? g_strdup(user)
               : depth ? g_strdup_printf("r%d", depth)
                       : g_strdup("r");
  /* written inline, a region may sit deeper than its level: inside it,
   * its level names its binder */
  const char *outer = ep->binders[t->binder];
  ep->binders[t->binder] = name;
  g_string_append_printf(
      out, "(\\%s:range<%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ">", name,
      t->range->n, t->range->w);
  if (t->axis)
    g_string_append_printf(out, " @%s", t->axis);
  g_string_append(out, " -> ");
  expr(ep, out, depth + 1, t->args[0]);
  g_string_append_c(out, ')');
  ep->binders[t->binder] = outer;
  g_free(name);
}

static void expr(ExprPrinter *ep, GString *out, int depth, const Term *t) {
  const char *let = g_hash_table_lookup(ep->bound, t);
  if (let) {
    g_string_append(out, let);
    return;
  }
  switch (t->kind) {
  case TM_ARG:
    g_string_append(out, ep->f->arg_names[t->index]);
    return;
  case TM_BVAR:
    g_string_append(out, ep->binders[t->index]);
    return;
  case TM_OP:
    g_string_append_printf(out, "%s(", op_name(t->op));
    for (int i = 0; i < t->nargs; i++) {
      if (i)
        g_string_append(out, ", ");
      expr(ep, out, depth, t->args[i]);
    }
    g_string_append_c(out, ')');
    attrs_print(out, t->attrs);
    if (op_takes_written_type(t->op)) {
      g_string_append(out, " : ");
      type_print(out, t->type);
    }
    return;
  case TM_SLICE:
    g_string_append_printf(out, "slice %d ", t->index);
    expr(ep, out, depth, t->args[0]);
    g_string_append_c(out, '[');
    expr(ep, out, depth, t->args[1]);
    g_string_append_c(out, ']');
    return;
  case TM_TILE:
    g_string_append_printf(out, "tile %d ", t->index);
    expr_binder(ep, out, depth, t);
    return;
  case TM_SUM:
    g_string_append(out, "sum ");
    expr_binder(ep, out, depth, t);
    return;
  case TM_TUPLE:
    g_assert_not_reached();
  }
}

/* Emits 'let' bindings for shared closed values, operands first. */
static void emit_lets(ExprPrinter *ep, GString *out, const Term *t) {
  if (g_hash_table_contains(ep->bound, t))
    return;
  for (int i = 0; i < t->nargs; i++)
    emit_lets(ep, out, t->args[i]);
  if (t->kind == TM_ARG || !term_is_closed(t) ||
      GPOINTER_TO_UINT(g_hash_table_lookup(ep->uses, t)) < 2)
    return;
  const char *user = g_hash_table_lookup(ep->m->names, t);
  char *name = user ? g_strdup(user) : g_strdup_printf("v%d", ep->nlets);
  ep->nlets++;
  g_string_append_printf(out, "  let %s = ", name);
  expr(ep, out, 0, t);
  g_string_append(out, " in\n");
  g_hash_table_insert(ep->bound, (gpointer)t, name);
}

void print_func_expr(GString *out, const Module *m, const Func *f) {
  ExprPrinter ep = {.m = m, .f = f};
  ep.uses = g_hash_table_new(NULL, NULL);
  ep.bound = g_hash_table_new_full(NULL, NULL, NULL, g_free);
  for (int i = 0; i < f->nresults; i++)
    count_uses(&ep, f->body->args[i]);
  g_string_append_printf(out, "%s(", f->name);
  for (int i = 0; i < f->nargs; i++)
    g_string_append_printf(out, "%s%s", i ? ", " : "", f->arg_names[i]);
  g_string_append(out, ") =\n");
  for (int i = 0; i < f->nresults; i++)
    emit_lets(&ep, out, f->body->args[i]);
  g_string_append(out, "  ");
  if (f->nresults > 1)
    g_string_append_c(out, '(');
  for (int i = 0; i < f->nresults; i++) {
    if (i)
      g_string_append(out, ", ");
    expr(&ep, out, 0, f->body->args[i]);
  }
  if (f->nresults > 1)
    g_string_append_c(out, ')');
  g_string_append_c(out, '\n');
  g_hash_table_unref(ep.uses);
  g_hash_table_unref(ep.bound);
}

void print_module_expr(GString *out, const Module *m) {
  for (guint fi = 0; fi < m->funcs->len; fi++)
    print_func_expr(out, m, g_ptr_array_index(m->funcs, fi));
}
