/* repl-describe.c — telling the user about a program state: the printed
 * statement of a value, and 'info' on one value.
 *
 * A value is found by the name the program prints for it ("%2", "%x").
 * 'info' says its type, where it came from and how it lies on the mesh:
 * (a rewrite below a value makes it a new term, so a value is made by
 * the last command that changed anything it uses)
 *
 *   made by     the command of the undo stack that made it: the first
 *               step of the unbroken run of steps, up to the current
 *               one, whose programs all hold its term (terms are
 *               hash-consed, so holding it is a pointer lookup); a value
 *               that came with the program names its operator instead
 *   regions     the tiles and sums it sits in, outermost first: one
 *               bound to a mesh axis runs its body once per device, for
 *               that device's index on the axis; an unbound one is a
 *               loop on every device
 *   layout      for a tile or sum bound to an axis, the split or partial
 *               sum it makes; for an argument or a result, its layout in
 *               the lowered program (lowering on the session's mesh)
 *
 * Nothing here changes the session.  It calls only repl-session.c.
 */
#include "repl.h"

#include <string.h>

/* --------------------------------------------------- the printed program */

GStrv repl_program_lines(const State *s) {
  g_autoptr(GString) text = g_string_new(NULL);
  state_print(text, s, FALSE);
  return g_strsplit(text->str, "\n", -1);
}

static int indent_of(const char *line) {
  int i = 0;
  while (line[i] == ' ')
    i++;
  return i;
}

/* The line of 'lines' that defines value 'name' ("%name = ..."), or -1. */
static int definition_line(GStrv lines, const char *name) {
  g_autofree char *head = g_strdup_printf("%%%s = ", name);
  for (int i = 0; lines[i]; i++)
    if (g_str_has_prefix(lines[i] + indent_of(lines[i]), head))
      return i;
  return -1;
}

gboolean repl_append_definition(GString *out, GStrv lines, const char *name) {
  int i = definition_line(lines, name);
  if (i < 0)
    return FALSE;
  int indent = indent_of(lines[i]);
  gboolean region = g_str_has_suffix(lines[i], "{");
  for (int k = i; lines[k]; k++) {
    g_string_append_printf(out, "%s\n",
                           lines[k] + MIN(indent, indent_of(lines[k])));
    if (!region ||
        (k > i && indent_of(lines[k]) == indent && lines[k][indent] == '}'))
      break;
  }
  return TRUE;
}

void repl_append_statement(GString *out, GStrv lines, const char *name,
                           const Term *placed) {
  if (placed->kind == TM_ARG) {
    g_autofree char *type = type_to_string(placed->type);
    g_string_append_printf(out, "%%%s: %s", name, type);
    return;
  }
  int i = definition_line(lines, name);
  if (i < 0) {
    g_string_append_printf(out, "%%%s", name);
    return;
  }
  const char *text = lines[i] + indent_of(lines[i]);
  g_string_append_printf(out, "%s%s", text,
                         g_str_has_suffix(text, "{") ? " ... }" : "");
}

/* ---------------------------------------------------------------- info */

/* The statements from the top region down to the one named 'name': the
 * tiles and sums around it, then its own; FALSE if none is named so. */
static gboolean find_path(const SchedRegion *r, const char *name,
                          GPtrArray *path) {
  for (guint i = 0; i < r->stmts->len; i++) {
    SchedStmt *st = g_ptr_array_index(r->stmts, i);
    g_ptr_array_add(path, st);
    if (strcmp(st->n.name, name) == 0)
      return TRUE;
    if (st->child && find_path(st->child, name, path))
      return TRUE;
    g_ptr_array_set_size(path, path->len - 1);
  }
  return FALSE;
}

static void add_placed(void *ud, const char *name, const Term *placed) {
  g_hash_table_add(ud, (gpointer)placed);
}

/* Whether the program of 'st' has a value whose placed term is 'placed'. */
static gboolean state_holds(const State *st, const Term *placed) {
  g_autoptr(GHashTable) terms = g_hash_table_new(NULL, NULL);
  schedule_walk(st->module, &st->func, add_placed, terms);
  return g_hash_table_contains(terms, placed);
}

/* The step whose command made 'placed' (in the current state), or -1
 * when it came with the loaded program. */
static int made_by_step(const Session *s, const Term *placed) {
  int i = s->top;
  while (i > 0 && !g_array_index(s->steps, Step, i).is_load &&
         state_holds(g_array_index(s->steps, Step, i - 1).state, placed))
    i--;
  return i < 0 || g_array_index(s->steps, Step, i).is_load ? -1 : i;
}

/* What 't' is, in words, for a value that came with the program. */
static const char *operator_of(const Term *t) {
  switch (t->kind) {
  case TM_OP:
    return op_name(t->op);
  case TM_SLICE:
    return "partir.slice";
  case TM_TILE:
    return "partir.tile";
  case TM_SUM:
    return "partir.sum";
  default:
    return "a value";
  }
}

/* How many pieces a tile or sum has: its range's size over its width. */
static int64_t pieces_of(const Term *t) { return t->range->n / t->range->w; }

/* "'AXIS' (N devices)" for a region bound to an axis, or why the
 * session's mesh cannot run it; FALSE then. */
static gboolean append_axis(GString *out, const Session *s,
                            const Term *region) {
  gint64 n = pieces_of(region), size = mesh_axis_size(&s->mesh, region->axis);
  if (size == 0) {
    g_string_append_printf(
        out, "'%s' (not in the mesh: set mesh %s=%" G_GINT64_FORMAT ")",
        region->axis, region->axis, n);
    return FALSE;
  }
  if (size != n) {
    g_string_append_printf(out,
                           "'%s' (%" G_GINT64_FORMAT
                           " devices for %" G_GINT64_FORMAT
                           " pieces: it cannot be lowered)",
                           region->axis, size, n);
    return FALSE;
  }
  g_string_append_printf(out, "'%s' (%" G_GINT64_FORMAT " devices)",
                         region->axis, size);
  return TRUE;
}

/* The layout of argument 'arg' or result 'result' (-1: not one) in the
 * program lowered on the session's mesh; nothing when it does not lower. */
static void append_lowered(GString *out, const Session *s, const State *cur,
                           int arg, int result) {
  if (!s->mesh.naxes || (arg < 0 && result < 0))
    return;
  g_auto(Lowered) l = {0};
  g_autoptr(Diag) why = diag_new(NULL);
  if (!pipeline_lower(s->rs, cur->module, &cur->func, &s->mesh, &l, why)) {
    g_string_append_printf(out, "  lowered: cannot be (%s)\n", diag_text(why));
    return;
  }
  const SpmdInfo *info = l.spmd->spmd;
  g_string_append(out, "  lowered: ");
  dist_print(out,
             arg >= 0 ? &info->arg_dists[arg] : &info->result_dists[result],
             &info->mesh);
  g_string_append_c(out, '\n');
}

gboolean repl_info(GString *out, const Session *s, const State *cur,
                   const char *name) {
  g_autoptr(GPtrArray) locs = state_locations(cur);
  const Location *l = state_find_location(locs, name);
  if (!l)
    return FALSE;
  g_auto(GStrv) lines = repl_program_lines(cur);
  const Term *t = l->term;
  repl_append_statement(out, lines, l->name, t);
  g_string_append_c(out, '\n');
  if (t->kind == TM_ARG) {
    g_string_append_printf(out, "  argument %d of @%s\n", t->index,
                           cur->func.name);
    append_lowered(out, s, cur, t->index, -1);
    return TRUE;
  }
  g_autofree char *type = type_to_string(t->type);
  g_string_append_printf(out, "  type: %s\n", type);
  int step = made_by_step(s, t);
  if (step >= 0)
    g_string_append_printf(out, "  made by: '%s'\n",
                           g_array_index(s->steps, Step, step).command);
  else
    g_string_append_printf(out, "  made by: %s, in the program as loaded\n",
                           operator_of(t));

  /* the regions around it, outermost first */
  g_autoptr(Schedule) sc = schedule_new(cur->module, &cur->func);
  g_autoptr(GPtrArray) path = g_ptr_array_new();
  find_path(sc->top, l->name, path);
  for (guint i = 0; i + 1 < path->len; i++) {
    const SchedStmt *r = g_ptr_array_index(path, i);
    g_string_append(out, "  in: ");
    repl_append_statement(out, lines, r->n.name, r->t);
    g_string_append_c(out, '\n');
    if (r->t->axis) {
      g_string_append(out, "      bound to ");
      if (append_axis(out, s, r->t))
        g_string_append_printf(out, ": each device computes it for its %%%s",
                               r->child->binder.name);
      g_string_append_c(out, '\n');
    } else {
      g_string_append(out, "      a loop on every device\n");
    }
  }

  /* what a tile or sum makes of its pieces */
  if ((t->kind == TM_TILE || t->kind == TM_SUM) && t->axis) {
    g_string_append(out, "  layout: ");
    if (t->kind == TM_TILE)
      g_string_append_printf(out, "dim %d split over ", t->index);
    else
      g_string_append(out, "partial sums over ");
    if (append_axis(out, s, t) && t->kind == TM_SUM)
      g_string_append(out, ": an all_reduce makes it whole");
    g_string_append_c(out, '\n');
  } else if (t->kind == TM_TILE || t->kind == TM_SUM) {
    g_string_append(out, "  layout: whole on every device (a loop)\n");
  }
  for (int i = 0; term_is_closed(t) && i < cur->func.nresults; i++)
    if (cur->func.body->args[i] == t) {
      append_lowered(out, s, cur, -1, i);
      break;
    }
  return TRUE;
}
