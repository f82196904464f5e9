/* show.c — looking at an SPMD program: collective statistics and a
 * Graphviz graph.
 *
 * Both walk the program as the printer names it (its schedule), so counts
 * are per printed statement: a collective inside a sequential loop counts
 * once here (the cost model multiplies by the trip count).  The graph has
 * a node per statement, named as print_func names it with the same
 * module (the user's names where the lowering kept them), and an edge per
 * operand labelled with the per-device shape; arguments and results show
 * their layouts (Dist); the body of each loop is a cluster, whose yield
 * flows to the loop's node.  Result nodes are "@resultI", which no value
 * name can be.
 */
#include "spmd/spmd.h"

#include <string.h>

/* "model" or "batch,model": the axes of a collective. */
static char *axes_key(const Term *t) {
  const AttrValue *axes = attrs_get(t->attrs, "axes");
  GString *s = g_string_new(NULL);
  for (int i = 0; axes && i < axes->count; i++)
    g_string_append_printf(s, "%s%s", i ? "," : "", axes->items[i].sym);
  return g_string_free(s, FALSE);
}

static int64_t bytes_of(const Type *t) {
  return type_numel(t) * (int64_t)dtype_storage_bytes(t->dtype);
}

typedef struct StatRow {
  char *kind_axes; /* "all_reduce over model" */
  int count;
  int64_t bytes; /* local operand bytes, summed */
} StatRow;

typedef struct Stats {
  GHashTable *rows; /* key -> StatRow* */
  GPtrArray *order; /* keys in first-seen order */
} Stats;

static void stat_visit(void *ud, const char *name, const Term *t) {
  Stats *st = ud;
  if (t->kind != TM_OP || !op_is_collective(t->op) || t->op == OP_SHARD)
    return;
  g_autofree char *axes = axes_key(t);
  char *key = g_strdup_printf("%s over %s", op_name(t->op), axes);
  StatRow *row = g_hash_table_lookup(st->rows, key);
  if (!row) {
    row = g_new0(StatRow, 1);
    row->kind_axes = key;
    g_hash_table_insert(st->rows, key, row);
    g_ptr_array_add(st->order, key);
  } else {
    g_free(key);
  }
  row->count++;
  row->bytes += bytes_of(t->args[0]->type);
}

static void stat_row_free(gpointer p) {
  StatRow *r = p;
  g_free(r->kind_axes);
  g_free(r);
}

void spmd_print_stats(GString *out, const Func *f) {
  Stats st = {
      g_hash_table_new_full(g_str_hash, g_str_equal, NULL, stat_row_free),
      g_ptr_array_new()};
  schedule_walk(NULL, f, stat_visit, &st);
  int64_t ndev = mesh_devices(f->spmd ? &f->spmd->mesh : NULL);
  g_string_append_printf(
      out, "collectives per device (%" G_GINT64_FORMAT " devices):\n", ndev);
  if (st.order->len == 0)
    g_string_append(out, "  none\n");
  for (guint i = 0; i < st.order->len; i++) {
    StatRow *r = g_hash_table_lookup(st.rows, g_ptr_array_index(st.order, i));
    g_string_append_printf(out, "  %-32s %4d   %12" G_GINT64_FORMAT " bytes\n",
                           r->kind_axes, r->count, r->bytes);
  }
  g_hash_table_unref(st.rows);
  g_ptr_array_unref(st.order);
}

void spmd_print_collectives(GString *out, const Func *f) {
  Stats st = {
      g_hash_table_new_full(g_str_hash, g_str_equal, NULL, stat_row_free),
      g_ptr_array_new()};
  schedule_walk(NULL, f, stat_visit, &st);
  if (st.order->len == 0)
    g_string_append(out, "no collectives");
  for (guint i = 0; i < st.order->len; i++) {
    StatRow *r = g_hash_table_lookup(st.rows, g_ptr_array_index(st.order, i));
    g_string_append_printf(out, "%s%d %s", i ? ", " : "", r->count,
                           r->kind_axes);
  }
  g_hash_table_unref(st.rows);
  g_ptr_array_unref(st.order);
}

/* ---------------------------------------------------------------- DOT */

/* Appends 'text' inside a DOT string: quotes and backslashes escaped. */
static void dot_escape(GString *out, const char *text) {
  for (const char *p = text; *p; p++) {
    if (*p == '"' || *p == '\\')
      g_string_append_c(out, '\\');
    g_string_append_c(out, *p);
  }
}

static void dot_shape(GString *out, const Type *t) {
  for (int i = 0; i < t->rank; i++)
    g_string_append_printf(out, "%s%" G_GINT64_FORMAT, i ? "x" : "",
                           t->dims[i]);
  g_string_append_printf(out, "%s%s", t->rank ? " " : "", dtype_name(t->dtype));
}

/* "\n{dist = ...}": the layout of an argument or result, in a label. */
static void dot_layout(GString *out, const Func *f, const Dist *d) {
  if (!f->spmd)
    return;
  g_autoptr(GString) text = g_string_new(NULL);
  dist_print(text, d, &f->spmd->mesh);
  g_string_append(out, "\\n");
  dot_escape(out, text->str);
}

/* An edge from the value named 'from' to 'to', labelled with the
 * per-device shape of what flows. */
static void dot_edge(GString *out, const char *indent, const char *from,
                     const char *to, const Type *type, const char *what) {
  g_string_append_printf(out, "%s\"%s\" -> \"%s\" [label=\"%s", indent, from,
                         to, what);
  dot_shape(out, type);
  g_string_append(out, "\"];\n");
}

/* The statements of region 'r' at nesting 'depth': one node each, edges
 * from their operands, and a cluster for the body of each tile or sum
 * loop (its yield flows to the loop's node). */
static void dot_region(GString *out, const SchedRegion *r, int depth,
                       int *clusters) {
  g_autofree char *indent = g_strnfill((gsize)(2 * depth + 2), ' ');
  for (guint i = 0; i < r->stmts->len; i++) {
    const SchedStmt *st = g_ptr_array_index(r->stmts, i);
    const Term *t = st->t;
    const char *name = st->n.name;
    const char *what = t->kind == TM_OP      ? op_name(t->op)
                       : t->kind == TM_SLICE ? "partir.slice"
                       : t->kind == TM_TILE  ? "partir.tile"
                                             : "partir.sum";
    gboolean coll =
        t->kind == TM_OP && op_is_collective(t->op) && t->op != OP_SHARD;
    g_string_append_printf(out, "%s\"%s\" [label=\"%%%s\\n%s", indent, name,
                           name, what);
    if (coll) {
      g_autofree char *axes = axes_key(t);
      g_string_append_printf(out, "\\nover %s", axes);
    }
    g_string_append_c(out, '"');
    if (coll)
      g_string_append(out, ", style=filled, fillcolor=\"#f4a582\", penwidth=2");
    else if (st->child)
      g_string_append(out, ", shape=box3d");
    g_string_append(out, "];\n");
    for (int k = 0; k < st->nops; k++)
      if (t->args[k]->kind != TM_BVAR) /* the loop index: no edge */
        dot_edge(out, indent, st->ops[k]->name, name, t->args[k]->type, "");
    if (!st->child)
      continue;
    const SchedRegion *body = st->child;
    g_string_append_printf(out, "%ssubgraph \"cluster_%d\" {\n", indent,
                           (*clusters)++);
    g_string_append_printf(out, "%s  label=\"%%%s = %s", indent, name, what);
    if (t->kind == TM_TILE)
      g_string_append_printf(out, " %d", t->index);
    g_string_append_printf(
        out, " (%%%s : range<%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ">)\";\n",
        body->binder.name, t->range->n, t->range->w);
    g_string_append_printf(out, "%s  style=dashed;\n", indent);
    dot_region(out, body, depth + 1, clusters);
    g_string_append_printf(out, "%s}\n", indent);
    if (body->yield)
      dot_edge(out, indent, body->yield->name, name, t->args[0]->type,
               "yield ");
  }
}

void spmd_print_dot(GString *out, const Module *m, const Func *f) {
  g_autoptr(Schedule) sc = schedule_new(m, f);
  g_string_append(out, "digraph \"");
  dot_escape(out, f->name);
  g_string_append(out, "\" {\n  rankdir=TB;\n  node [shape=ellipse, "
                       "fontname=\"monospace\"];\n");
  for (int i = 0; i < f->nargs; i++) {
    g_string_append_printf(out, "  \"%s\" [label=\"%%%s\\narg ",
                           sc->args[i].name, sc->args[i].name);
    dot_shape(out, f->arg_types[i]);
    if (f->spmd)
      dot_layout(out, f, &f->spmd->arg_dists[i]);
    g_string_append(out, "\", shape=box];\n");
  }
  int clusters = 0;
  dot_region(out, sc->top, 0, &clusters);
  for (int i = 0; i < f->nresults; i++) {
    g_string_append_printf(out, "  \"@result%d\" [label=\"result%d", i, i);
    if (f->spmd)
      dot_layout(out, f, &f->spmd->result_dists[i]);
    g_string_append(out, "\", shape=doubleoctagon];\n");
    char node[32];
    g_snprintf(node, sizeof node, "@result%d", i);
    dot_edge(out, "  ", sc->results[i]->name, node, f->body->args[i]->type, "");
  }
  g_string_append(out, "}\n");
}
