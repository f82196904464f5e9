/* show.c — looking at an SPMD program: collective statistics and a
 * Graphviz graph.
 *
 * Both walk the program as the printer names it (schedule_walk), so counts
 * are per printed statement: a collective inside a sequential loop counts
 * once here (the cost model multiplies by the trip count).
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

/* ---------------------------------------------------------------- DOT */

typedef struct Dot {
  GString *out;
  GHashTable *names; /* placed Term -> node name */
} Dot;

static void dot_shape(GString *out, const Type *t) {
  for (int i = 0; i < t->rank; i++)
    g_string_append_printf(out, "%s%" G_GINT64_FORMAT, i ? "x" : "",
                           t->dims[i]);
  g_string_append_printf(out, "%s%s", t->rank ? " " : "", dtype_name(t->dtype));
}

static void dot_visit(void *ud, const char *name, const Term *t) {
  Dot *d = ud;
  g_hash_table_insert(d->names, (gpointer)t, g_strdup(name));
  const char *what = t->kind == TM_ARG     ? "arg"
                     : t->kind == TM_OP    ? op_name(t->op)
                     : t->kind == TM_SLICE ? "partir.slice"
                     : t->kind == TM_TILE  ? "partir.tile"
                                           : "partir.sum";
  gboolean coll =
      t->kind == TM_OP && op_is_collective(t->op) && t->op != OP_SHARD;
  g_string_append_printf(d->out, "  \"%s\" [label=\"%%%s\\n%s", name, name,
                         what);
  if (coll) {
    g_autofree char *axes = axes_key(t);
    g_string_append_printf(d->out, "\\nover %s", axes);
  }
  g_string_append_c(d->out, '"');
  if (coll)
    g_string_append(d->out,
                    ", style=filled, fillcolor=\"#f4a582\", penwidth=2");
  else if (t->kind == TM_ARG)
    g_string_append(d->out, ", shape=box");
  g_string_append(d->out, "];\n");
  for (int i = 0; i < t->nargs; i++) {
    const Term *a = t->args[i];
    if (a->kind == TM_BVAR)
      continue;
    const char *from = g_hash_table_lookup(d->names, term_placed(a));
    if (!from)
      continue; /* a value of an enclosing region instance */
    g_string_append_printf(d->out, "  \"%s\" -> \"%s\" [label=\"", from, name);
    dot_shape(d->out, a->type); /* per-device shapes on the edges */
    g_string_append(d->out, "\"];\n");
  }
}

void spmd_print_dot(GString *out, const Func *f) {
  Dot d = {out, g_hash_table_new_full(NULL, NULL, NULL, g_free)};
  g_string_append_printf(out,
                         "digraph \"%s\" {\n  rankdir=TB;\n  node "
                         "[shape=ellipse, fontname=\"monospace\"];\n",
                         f->name);
  schedule_walk(NULL, f, dot_visit, &d);
  for (int i = 0; i < f->nresults; i++) {
    const char *from =
        g_hash_table_lookup(d.names, term_placed(f->body->args[i]));
    g_string_append_printf(out, "  \"result%d\" [shape=doubleoctagon];\n", i);
    if (from) {
      g_string_append_printf(out, "  \"%s\" -> \"result%d\" [label=\"", from,
                             i);
      dot_shape(out, f->body->args[i]->type);
      g_string_append(out, "\"];\n");
    }
  }
  g_string_append(out, "}\n");
  g_hash_table_unref(d.names);
}
