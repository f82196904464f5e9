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
 * What a line changed (repl_describe_change, printed in place of the
 * whole program): the values of the two programs are compared as terms
 * (hash-consed, so by pointer).  Values only the new program has are new;
 * a new one with the operator of a value only the old one had is that
 * value rewritten (the pairing is by operator and order, a guess where
 * several changed); the rest of the old ones are gone.  New tiles and
 * sums are shown as statements, other values by name, and with a mesh
 * set, the collectives the program lowers to.  A program of another
 * module (a 'load') is described whole.
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
static int64_t pieces_of(const Term *t) { return type_range_parts(t->range); }

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

/* ------------------------------------------------------- what changed */

#define SUMMARY_NAMES 12  /* value names listed on one line */
#define SUMMARY_REGIONS 6 /* new tiles and sums listed */

/* Every statement of region 'r' and the regions in it, in text order. */
static void collect_stmts(const SchedRegion *r, GPtrArray *out) {
  for (guint i = 0; i < r->stmts->len; i++) {
    const SchedStmt *st = g_ptr_array_index(r->stmts, i);
    g_ptr_array_add(out, (gpointer)st);
    if (st->child)
      collect_stmts(st->child, out);
  }
}

/* "LABEL: %a, %b, ... and N more\n" for the names in 'names'. */
static void append_names(GString *out, const char *label, GPtrArray *names) {
  if (!names->len)
    return;
  g_string_append_printf(out, "%s: ", label);
  for (guint i = 0; i < names->len && i < SUMMARY_NAMES; i++)
    g_string_append_printf(out, "%s%%%s", i ? ", " : "",
                           (const char *)g_ptr_array_index(names, i));
  if (names->len > SUMMARY_NAMES)
    g_string_append_printf(out, " and %u more", names->len - SUMMARY_NAMES);
  g_string_append_c(out, '\n');
}

/* "on MESH: the collectives" of 'st' lowered on the session's mesh. */
static void append_collectives(GString *out, const Session *s,
                               const State *st) {
  if (!s->mesh.naxes)
    return;
  g_autofree char *mesh = mesh_to_string(&s->mesh);
  g_auto(Lowered) l = {0};
  g_autoptr(Diag) why = diag_new(NULL);
  g_string_append_printf(out, "on %s: ", mesh);
  if (pipeline_lower(s->rs, st->module, &st->func, &s->mesh, &l, why))
    spmd_print_collectives(out, l.spmd);
  else
    g_string_append_printf(out, "not lowered yet (%s)", diag_text(why));
  g_string_append_c(out, '\n');
}

void repl_describe_change(GString *out, const Session *s, const State *before,
                          const State *after) {
  g_autoptr(Schedule) sa = schedule_new(after->module, &after->func);
  g_autoptr(GPtrArray) va = g_ptr_array_new();
  collect_stmts(sa->top, va);
  if (!before || before->module != after->module) {
    const Func *f = &after->func;
    g_string_append_printf(
        out, "@%s: %d argument%s, %u value%s, %d result%s ('show' prints it)\n",
        f->name, f->nargs, f->nargs == 1 ? "" : "s", va->len,
        va->len == 1 ? "" : "s", f->nresults, f->nresults == 1 ? "" : "s");
    append_collectives(out, s, after);
    return;
  }
  /* values are terms: those only 'before' has are gone, those only
   * 'after' has are new; a new value of the same operator as a gone one
   * is that value rewritten */
  g_autoptr(Schedule) sb = schedule_new(before->module, &before->func);
  g_autoptr(GPtrArray) vb = g_ptr_array_new();
  collect_stmts(sb->top, vb);
  g_autoptr(GHashTable) in_before = g_hash_table_new(NULL, NULL);
  g_autoptr(GHashTable) in_after = g_hash_table_new(NULL, NULL);
  for (guint i = 0; i < vb->len; i++)
    g_hash_table_add(in_before, (gpointer)((SchedStmt *)vb->pdata[i])->t);
  for (guint i = 0; i < va->len; i++)
    g_hash_table_add(in_after, (gpointer)((SchedStmt *)va->pdata[i])->t);
  g_autoptr(GHashTable) gone = g_hash_table_new(g_str_hash, g_str_equal);
  g_autoptr(GHashTable) counted = g_hash_table_new(NULL, NULL);
  guint ngone = 0;
  for (guint i = 0; i < vb->len; i++) {
    const Term *t = ((SchedStmt *)vb->pdata[i])->t;
    if (g_hash_table_contains(in_after, t) ||
        !g_hash_table_add(counted, (gpointer)t))
      continue;
    const char *kind = operator_of(t);
    g_hash_table_insert(
        gone, (gpointer)kind,
        GINT_TO_POINTER(GPOINTER_TO_INT(g_hash_table_lookup(gone, kind)) + 1));
    ngone++;
  }
  g_autoptr(GPtrArray) rewritten = g_ptr_array_new();
  g_autoptr(GPtrArray) regions = g_ptr_array_new();
  g_autoptr(GPtrArray) fresh = g_ptr_array_new();
  g_hash_table_remove_all(counted);
  for (guint i = 0; i < va->len; i++) {
    const SchedStmt *st = va->pdata[i];
    if (g_hash_table_contains(in_before, st->t) ||
        !g_hash_table_add(counted, (gpointer)st->t))
      continue;
    const char *kind = operator_of(st->t);
    int left = GPOINTER_TO_INT(g_hash_table_lookup(gone, kind));
    if (left > 0) {
      g_hash_table_insert(gone, (gpointer)kind, GINT_TO_POINTER(left - 1));
      ngone--;
      g_ptr_array_add(rewritten, st->n.name);
    } else if (st->child) {
      g_ptr_array_add(regions, (gpointer)st);
    } else {
      g_ptr_array_add(fresh, st->n.name);
    }
  }
  if (!rewritten->len && !regions->len && !fresh->len && !ngone)
    g_string_append(out, "the program shown before\n");
  g_auto(GStrv) lines = regions->len ? repl_program_lines(after) : NULL;
  for (guint i = 0; i < regions->len && i < SUMMARY_REGIONS; i++) {
    const SchedStmt *st = regions->pdata[i];
    g_string_append_printf(out,
                           "new %s: ", st->t->kind == TM_TILE ? "tile" : "sum");
    repl_append_statement(out, lines, st->n.name, st->t);
    g_string_append_c(out, '\n');
  }
  if (regions->len > SUMMARY_REGIONS)
    g_string_append_printf(out, "new: %u more tiles and sums\n",
                           regions->len - SUMMARY_REGIONS);
  append_names(out, "new", fresh);
  append_names(out, "rewritten", rewritten);
  if (ngone)
    g_string_append_printf(out, "gone: %u value%s\n", ngone,
                           ngone == 1 ? "" : "s");
  append_collectives(out, s, after);
}
