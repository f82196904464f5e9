/* print.c — the canonical text of a function.
 *
 * Printing turns the term DAG back into SSA statements in three passes:
 *
 * 1. schedule: a depth-first walk from the results, operands before users
 *    (so the order is a deterministic function of the term).  Each value
 *    is placed in the region of the innermost binder it uses — closed
 *    values at the top, loop-invariant code hoisted out of tiles — in the
 *    form term_placed() gives it, and printed once per region instance
 *    (sibling tiles that use the same loose term each print it).
 * 2. name: in textual order, every value takes the user's name from the
 *    module's tables when it has one not yet taken, else a fresh number
 *    (%0, %1, ... in order of definition); binders take their user name
 *    or %r, %r1, ...  Fresh names avoid every user name of the module.
 * 3. emit.
 *
 * requires: terms well typed (true of every stored Term).
 */
#include "partir-int.h"

#include <string.h>

typedef struct Named {
  const char *user; /* the name from the module's tables, or NULL */
  char *name;       /* assigned in pass 2 */
} Named;

typedef struct Region Region;

typedef struct Stmt {
  Named n;
  const Term *t; /* placed form */
  int nops;
  Named **ops;   /* operands (TM_OP, TM_SLICE) */
  Region *child; /* TM_TILE, TM_SUM */
} Stmt;

struct Region {
  Named binder;
  GPtrArray *stmts;  /* Stmt*, in order */
  GHashTable *memo;  /* placed Term -> Stmt* */
  Named *yield;
};

typedef struct Printer {
  const Module *m;
  GHashTable *names;
  GHashTable *binder_names;
  Region *open[PARTIR_MAX_REGIONS + 2]; /* open regions by depth */
  Named *args;
  GHashTable *reserved; /* user names: fresh names avoid them */
  GHashTable *taken;    /* names already given in this function */
  int next_number;
} Printer;

static Region *region_new(const char *binder_user) {
  Region *r = g_new0(Region, 1);
  r->binder.user = binder_user;
  r->stmts = g_ptr_array_new();
  r->memo = g_hash_table_new(NULL, NULL);
  return r;
}

static void region_free(Region *r) {
  for (guint i = 0; i < r->stmts->len; i++) {
    Stmt *s = g_ptr_array_index(r->stmts, i);
    if (s->child)
      region_free(s->child);
    g_free(s->ops);
    g_free(s->n.name);
    g_free(s);
  }
  g_ptr_array_unref(r->stmts);
  if (r->memo)
    g_hash_table_unref(r->memo);
  g_free(r->binder.name);
  g_free(r);
}

/* ------------------------------------------------------------- schedule */

/* Returns the Named for 't' as seen at region depth 'depth', scheduling
 * its statement (and its operands') when needed. */
static Named *schedule(Printer *pr, int depth, const Term *t) {
  if (t->kind == TM_ARG)
    return &pr->args[t->index];
  if (t->kind == TM_BVAR)
    return &pr->open[depth - t->index]->binder;
  int target = term_home_depth(t, depth);
  const Term *placed = term_placed(t);
  Region *r = pr->open[target];
  Stmt *s = g_hash_table_lookup(r->memo, placed);
  if (s)
    return &s->n;
  s = g_new0(Stmt, 1);
  s->t = placed;
  s->n.user = g_hash_table_lookup(pr->names, placed);
  if (placed->kind == TM_TILE || placed->kind == TM_SUM) {
    Region *child =
        region_new(g_hash_table_lookup(pr->binder_names, placed));
    /* a hoisted tile opens its region below regions still being
     * scheduled: keep theirs */
    Region *outer = pr->open[target + 1];
    pr->open[target + 1] = child;
    child->yield = schedule(pr, target + 1, placed->args[0]);
    pr->open[target + 1] = outer;
    g_hash_table_unref(child->memo);
    child->memo = NULL; /* a region instance is done once closed */
    s->child = child;
  } else {
    s->nops = placed->nargs;
    s->ops = g_new(Named *, (gsize)placed->nargs);
    for (int i = 0; i < placed->nargs; i++)
      s->ops[i] = schedule(pr, target, placed->args[i]);
  }
  g_ptr_array_add(r->stmts, s);
  g_hash_table_insert(r->memo, (gpointer)placed, s);
  return &s->n;
}

/* ----------------------------------------------------------------- names */

static gboolean name_free(Printer *pr, const char *name) {
  return !g_hash_table_contains(pr->reserved, name) &&
         !g_hash_table_contains(pr->taken, name);
}

static void take(Printer *pr, Named *n, char *name) {
  n->name = name;
  g_hash_table_add(pr->taken, g_strdup(name));
}

static void name_value(Printer *pr, Named *n) {
  if (n->user && !g_hash_table_contains(pr->taken, n->user)) {
    take(pr, n, g_strdup(n->user));
    return;
  }
  for (;;) {
    char *cand = g_strdup_printf("%d", pr->next_number++);
    if (name_free(pr, cand)) {
      take(pr, n, cand);
      return;
    }
    g_free(cand);
  }
}

static void name_binder(Printer *pr, Named *n) {
  if (n->user && !g_hash_table_contains(pr->taken, n->user)) {
    take(pr, n, g_strdup(n->user));
    return;
  }
  for (int i = 0;; i++) {
    char *cand = i ? g_strdup_printf("r%d", i) : g_strdup("r");
    if (name_free(pr, cand)) {
      take(pr, n, cand);
      return;
    }
    g_free(cand);
  }
}

static void name_region(Printer *pr, Region *r) {
  for (guint i = 0; i < r->stmts->len; i++) {
    Stmt *s = g_ptr_array_index(r->stmts, i);
    name_value(pr, &s->n);
    if (s->child) {
      name_binder(pr, &s->child->binder);
      name_region(pr, s->child);
    }
  }
}

/* ------------------------------------------------------------------ emit */

static void indent(GString *out, int level) {
  for (int i = 0; i < level; i++)
    g_string_append(out, "  ");
}

static void emit_binder(GString *out, const Term *t, const Region *child) {
  g_string_append_printf(out, "(%%%s : ", child->binder.name);
  type_print(out, t->range);
  if (t->axis) {
    g_autofree char *esc = g_strescape(t->axis, NULL);
    g_string_append_printf(out, " @\"%s\"", esc);
  }
  g_string_append(out, ") {\n");
}

static void emit_region(GString *out, const Region *r, int level) {
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
      emit_region(out, s->child, level + 1);
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

/* Copies: the name tables may lose entries (term_store_collect), and
 * the reserved names must not change with them. */
static void collect_reserved(gpointer key, gpointer value, gpointer data) {
  g_hash_table_add(data, g_strdup(value));
}

/* Passes 1 and 2 for 'f': schedules and names every statement. */
static Region *prepare(Printer *pr, const Module *m, const Func *f,
                       Named ***results) {
  *pr = (Printer){.m = m, .names = m->names, .binder_names = m->binder_names};
  /* The distinct user names never grow after parsing (rewrites only
   * give new terms names the module already has: inherit_name), so the
   * set is built once per module and kept. */
  Module *cache = (Module *)m;
  if (!cache->reserved) {
    cache->reserved = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_hash_table_foreach(m->names, collect_reserved, cache->reserved);
    g_hash_table_foreach(m->binder_names, collect_reserved, cache->reserved);
  }
  pr->reserved = cache->reserved;
  pr->taken = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  pr->args = g_new0(Named, (gsize)f->nargs);
  for (int i = 0; i < f->nargs; i++) {
    take(pr, &pr->args[i], g_strdup(f->arg_names[i]));
  }
  Region *top = region_new(NULL);
  pr->open[0] = top;
  *results = g_new(Named *, (gsize)f->nresults);
  for (int i = 0; i < f->nresults; i++)
    (*results)[i] = schedule(pr, 0, f->body->args[i]);
  name_region(pr, top);
  return top;
}

static void finish(Printer *pr, const Func *f, Region *top, Named **results) {
  g_free(results);
  region_free(top);
  for (int i = 0; i < f->nargs; i++)
    g_free(pr->args[i].name);
  g_free(pr->args);

  g_hash_table_unref(pr->taken);
}

void print_func(GString *out, const Module *m, const Func *f) {
  Printer pr;
  Named **results;
  Region *top = prepare(&pr, m, f, &results);
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
  if (f->nresults > 1 || sp)
    g_string_append_c(out, '(');
  for (int i = 0; i < f->nresults; i++) {
    if (i)
      g_string_append(out, ", ");
    type_print(out, f->result_types[i]);
    if (sp) {
      g_string_append_c(out, ' ');
      dist_print(out, &sp->result_dists[i], &sp->mesh);
    }
  }
  if (f->nresults > 1 || sp)
    g_string_append_c(out, ')');
  if (sp) {
    g_string_append(out, " mesh {");
    for (int i = 0; i < sp->mesh.naxes; i++)
      g_string_append_printf(out, "%s%s = %" G_GINT64_FORMAT, i ? ", " : "",
                             sp->mesh.names[i], sp->mesh.sizes[i]);
    g_string_append_c(out, '}');
  }
  g_string_append(out, " {\n");
  emit_region(out, top, 1);
  g_string_append(out, "  return ");
  for (int i = 0; i < f->nresults; i++)
    g_string_append_printf(out, "%s%%%s", i ? ", " : "", results[i]->name);
  g_string_append(out, "\n}\n");
  finish(&pr, f, top, results);
}

static void walk_region(const Region *r, PrintVisit visit, void *ud) {
  for (guint i = 0; i < r->stmts->len; i++) {
    const Stmt *s = g_ptr_array_index(r->stmts, i);
    visit(ud, s->n.name, s->t);
    if (s->child)
      walk_region(s->child, visit, ud);
  }
}

void print_walk(const Module *m, const Func *f, PrintVisit visit, void *ud) {
  Printer pr;
  Named **results;
  Region *top = prepare(&pr, m, f, &results);
  for (int i = 0; i < f->nargs; i++)
    visit(ud, pr.args[i].name, term_arg(i, f->arg_types[i]));
  walk_region(top, visit, ud);
  finish(&pr, f, top, results);
}

void print_module(GString *out, const Module *m) {
  for (guint i = 0; i < m->funcs->len; i++) {
    if (i)
      g_string_append_c(out, '\n');
    print_func(out, m, g_ptr_array_index(m->funcs, i));
  }
}
