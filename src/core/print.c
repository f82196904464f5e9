/* print.c — the canonical text of a function.
 *
 * The statements come from the schedule (schedule.c: operands before
 * users, each value in the region of the innermost binder it uses, named
 * from the module's tables or freshly); printing emits them, a tile or
 * sum opening a block that ends with its yield.  The text parses back to
 * the same terms (round trip).
 *
 * requires: terms well typed (true of every stored Term).
 */
#include "core/core.h"

typedef SchedRegion Region;
typedef SchedStmt Stmt;

static void indent(GString *out, int level) {
  for (int i = 0; i < level; i++)
    g_string_append(out, "  ");
}

static void emit_binder(GString *out, const Term *t, const Region *child) {
  g_string_append_printf(out, "(%%%s : ", child->binder.name);
  type_print(out, t->range);
  if (t->axis) {
    g_string_append(out, " @");
    lex_append_string(out, t->axis);
  }
  g_string_append(out, ") {\n");
}

/* The module's note on a statement's value, as a comment. */
static void emit_note(GString *out, const Module *m, const Term *t) {
  const char *note = m ? g_hash_table_lookup(m->notes, t) : NULL;
  if (note)
    g_string_append_printf(out, "  // %s", note);
}

static void emit_region(GString *out, const Module *m, const Region *r,
                        int level) {
  for (guint i = 0; i < r->stmts->len; i++) {
    const Stmt *s = g_ptr_array_index(r->stmts, i);
    const Term *t = s->t;
    indent(out, level);
    g_string_append_printf(out, "%%%s = ", s->n.name);
    switch (t->kind) {
    case TM_OP:
      g_string_append_printf(out, "%s(", op_name(t->op));
      for (int k = 0; k < s->nops; k++)
        g_string_append_printf(out, "%s%%%s", k ? ", " : "", s->ops[k]->name);
      g_string_append_c(out, ')');
      attrs_print(out, t->attrs);
      if (op_takes_written_type(t->op)) {
        g_string_append(out, " : ");
        type_print(out, t->type);
      }
      emit_note(out, m, t);
      g_string_append_c(out, '\n');
      break;
    case TM_SLICE:
      g_string_append_printf(out, "partir.slice %d %%%s[%%%s]\n", t->index,
                             s->ops[0]->name, s->ops[1]->name);
      break;
    case TM_TILE:
    case TM_SUM:
      if (t->kind == TM_TILE)
        g_string_append_printf(out, "partir.tile %d ", t->index);
      else
        g_string_append(out, "partir.sum ");
      emit_binder(out, t, s->child);
      emit_region(out, m, s->child, level + 1);
      indent(out, level + 1);
      g_string_append_printf(out, "partir.yield %%%s\n", s->child->yield->name);
      indent(out, level);
      g_string_append(out, "}\n");
      break;
    default:
      g_assert_not_reached();
    }
  }
}

void print_func(GString *out, const Module *m, const Func *f) {
  g_autoptr(Schedule) sc = schedule_new(m, f);
  /* an SPMD program: local types with their layouts, and the mesh */
  const SpmdInfo *sp = f->spmd;
  g_string_append_printf(out, "%s @%s(", sp ? "spmd" : "func", f->name);
  for (int i = 0; i < f->nargs; i++) {
    g_string_append_printf(out, "%s%%%s: ", i ? ", " : "", f->arg_names[i]);
    type_print(out, f->arg_types[i]);
    if (sp) {
      g_string_append_c(out, ' ');
      dist_print(out, &sp->arg_dists[i], &sp->mesh);
    }
  }
  g_string_append(out, ") -> ");
  const int *updates = f->result_updates;
  if (f->nresults > 1 || sp || updates)
    g_string_append_c(out, '(');
  for (int i = 0; i < f->nresults; i++) {
    if (i)
      g_string_append(out, ", ");
    type_print(out, f->result_types[i]);
    if (sp) {
      g_string_append_c(out, ' ');
      dist_print(out, &sp->result_dists[i], &sp->mesh);
    }
    if (updates && updates[i] >= 0)
      g_string_append_printf(out, " {updates = %%%s}",
                             f->arg_names[updates[i]]);
  }
  if (f->nresults > 1 || sp || updates)
    g_string_append_c(out, ')');
  if (sp) {
    g_string_append(out, " mesh {");
    for (int i = 0; i < sp->mesh.naxes; i++) {
      /* an axis name the lexer would not read bare ("0model") is quoted,
       * as symbols in attributes are */
      AttrValue name = {.kind = AV_SYMBOL, .sym = sp->mesh.names[i]};
      g_string_append(out, i ? ", " : "");
      attr_value_print(out, &name);
      g_string_append_printf(out, " = %" G_GINT64_FORMAT, sp->mesh.sizes[i]);
    }
    g_string_append_c(out, '}');
  }
  g_string_append(out, " {\n");
  emit_region(out, m, sc->top, 1);
  g_string_append(out, "  return ");
  for (int i = 0; i < f->nresults; i++)
    g_string_append_printf(out, "%s%%%s", i ? ", " : "", sc->results[i]->name);
  g_string_append(out, "\n}\n");
}

void print_module(GString *out, const Module *m) {
  for (guint i = 0; i < m->funcs->len; i++) {
    if (i)
      g_string_append_c(out, '\n');
    print_func(out, m, g_ptr_array_index(m->funcs, i));
  }
}
