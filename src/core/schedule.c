/* schedule.c — the statement order and the names of a function's values.
 *
 * The printer, the cost model, the locations of the engine, the
 * protocol's graph features and the SPMD statistics all see a function
 * as the same sequence of SSA statements; this file makes it, in two
 * passes over the term DAG:
 *
 * 1. schedule: a depth-first walk from the results, operands before users
 *    (so the order is a deterministic function of the term).  Each value
 *    is placed in the region of the innermost binder it uses (its home,
 *    term_home) — closed values at the top, loop-invariant code hoisted
 *    out of tiles — and appears once per region instance (sibling tiles
 *    that use the same open term each hold it).
 * 2. name: in textual order, every value takes the user's name from the
 *    module's tables when it has one not yet taken, else a fresh number
 *    (%0, %1, ... in order of definition); binders take their user name
 *    or %r, %r1, ...  Fresh names avoid every user name of the module.
 *    A walk that needs no names (the cost of a device's program, the
 *    counts of the protocol's features) skips this pass: its values
 *    have the name NULL (schedule_order).
 *
 * requires: terms well typed (true of every stored Term).
 */
#include "core/core.h"

#include <string.h>

typedef SchedName Named;
typedef SchedRegion Region;
typedef SchedStmt Stmt;

/* The state of both passes. */
typedef struct Namer Namer;
struct Namer {
  GHashTable *names;                    /* the module's, or NULL */
  GHashTable *binder_names;             /* the module's, or NULL */
  Region *open[PARTIR_MAX_REGIONS + 2]; /* open regions by depth */
  Named *args;
  GHashTable *reserved; /* user names: fresh names avoid them */
  GHashTable *taken;    /* names already given in this function */
  int next_number;      /* fresh value names are tried from %N on */
  int next_binder;      /* fresh binder names are tried from %rN on */
  gboolean by_memory;   /* schedule_for_memory's order */
  GPtrArray *blocks;    /* the schedule's: where statements are made */
  char *free_at;        /* the room left in the last block */
  gsize left;
};

static Region *region_new(const char *binder_user) {
  Region *r = g_new0(Region, 1);
  r->binder.user = binder_user;
  r->binder.index = -1;
  r->stmts = g_ptr_array_new();
  r->memo = g_hash_table_new(NULL, NULL);
  return r;
}

/* Statements are many, made in one pass and freed together: they come
 * from blocks of the schedule's own, a block for many (the agent
 * protocol schedules a program of a thousand values three times a
 * step, and allocating and freeing each statement was 5 % of it). */
#define SCHED_BLOCK_BYTES ((gsize)64 * 1024)

static Stmt *stmt_new(Namer *pr, int nops) {
  gsize size = sizeof(Stmt) + (gsize)nops * sizeof(Named *);
  size = (size + 15) & ~(gsize)15; /* malloc's alignment */
  if (size > pr->left) {
    gsize n = MAX(size, SCHED_BLOCK_BYTES);
    pr->free_at = g_malloc(n);
    pr->left = n;
    g_ptr_array_add(pr->blocks, pr->free_at);
  }
  Stmt *s = (Stmt *)(gpointer)pr->free_at;
  pr->free_at += size;
  pr->left -= size;
  memset(s, 0, size);
  return s;
}

static void region_free(Region *r) {
  for (guint i = 0; i < r->stmts->len; i++) {
    Stmt *s = g_ptr_array_index(r->stmts, i);
    if (s->child)
      region_free(s->child);
    g_free(s->n.name);
  }
  g_ptr_array_unref(r->stmts);
  if (r->memo)
    g_hash_table_unref(r->memo);
  g_free(r->binder.name);
  g_free(r);
}

/* ------------------------------------------------------------- schedule */

#define SCHED_MAX_OPERANDS 16

/* The order the operands of 't' are scheduled in (the first 'n' of
 * them, n returned; the rest follow in order): as written, or for
 * memory the tallest first.  An operand's chain is then computed before
 * the short ones, which are computed just before 't' uses them and live
 * the less: a training step's rematerialized copy (a short chain from
 * the arguments) where the backward pass reads it, not ahead of the
 * forward pass (Sethi-Ullman's order, on heights). */
static int operand_order(const Namer *pr, const Term *t, int *order) {
  int n = MIN(t->nargs, SCHED_MAX_OPERANDS);
  for (int i = 0; i < n; i++) {
    int k = i;
    /* insertion sort, stable: ties keep the written order */
    while (pr->by_memory && k > 0 &&
           t->args[order[k - 1]]->height < t->args[i]->height) {
      order[k] = order[k - 1];
      k--;
    }
    order[k] = i;
  }
  return n;
}

/* Returns the Named for 't' as seen at region depth 'depth', scheduling
 * its statement (and its operands') when needed. */
static Named *schedule_value(Namer *pr, int depth, const Term *t) {
  if (t->kind == TM_ARG)
    return &pr->args[t->index];
  if (t->kind == TM_BVAR) /* level l: the binder of the region at depth l+1 */
    return &pr->open[t->index + 1]->binder;
  g_assert(term_home(t) <= depth);
  int target = term_home(t);
  const Term *placed = t;
  Region *r = pr->open[target];
  Stmt *s = g_hash_table_lookup(r->memo, placed);
  if (s)
    return &s->n;
  /* the operands' names live in the statement's own block */
  gsize nops = placed->kind == TM_TILE || placed->kind == TM_SUM
                   ? 0
                   : (gsize)placed->nargs;
  s = stmt_new(pr, (int)nops);
  s->t = placed;
  if (placed->kind == TM_TILE || placed->kind == TM_SUM) {
    Region *child = region_new(NULL);
    /* a hoisted tile opens its region below regions still being
     * scheduled: keep theirs */
    Region *outer = pr->open[target + 1];
    pr->open[target + 1] = child;
    child->yield = schedule_value(pr, target + 1, placed->args[0]);
    pr->open[target + 1] = outer;
    g_hash_table_unref(child->memo);
    child->memo = NULL; /* a region instance is done once closed */
    s->child = child;
  } else {
    s->nops = placed->nargs;
    s->ops = (Named **)(s + 1);
    int order[SCHED_MAX_OPERANDS];
    int n = operand_order(pr, placed, order);
    for (int k = 0; k < n; k++)
      s->ops[order[k]] = schedule_value(pr, target, placed->args[order[k]]);
    for (int i = n; i < placed->nargs; i++)
      s->ops[i] = schedule_value(pr, target, placed->args[i]);
  }
  g_ptr_array_add(r->stmts, s);
  g_hash_table_insert(r->memo, (gpointer)placed, s);
  return &s->n;
}

/* ----------------------------------------------------------------- names */

static gboolean name_free(Namer *pr, const char *name) {
  return !g_hash_table_contains(pr->reserved, name) &&
         !g_hash_table_contains(pr->taken, name);
}

/* 'taken' holds the user names and argument names given so far, the
 * very strings (the schedule owns them, and they outlive the naming).
 * A fresh name needs no entry: it avoids every user name ('reserved')
 * and every name taken, and its counter never gives it again. */
static void take(Namer *pr, Named *n, char *name) {
  n->name = name;
  g_hash_table_add(pr->taken, name);
}

/* 'prefix' followed by the decimal digits of 'i' (>= 0): a fresh name,
 * made for every value without a user name, so without printf. */
static char *numbered(const char *prefix, int i) {
  char digits[16];
  int n = 0;
  do
    digits[n++] = (char)('0' + i % 10);
  while ((i /= 10) > 0);
  gsize len = strlen(prefix);
  char *out = g_malloc(len + (gsize)n + 1);
  memcpy(out, prefix, len);
  for (int k = 0; k < n; k++)
    out[len + (gsize)k] = digits[n - 1 - k];
  out[len + (gsize)n] = '\0';
  return out;
}

static void name_value(Namer *pr, Named *n) {
  if (n->user && !g_hash_table_contains(pr->taken, n->user)) {
    take(pr, n, g_strdup(n->user));
    return;
  }
  for (;;) {
    char *cand = numbered("", pr->next_number++);
    if (name_free(pr, cand)) {
      n->name = cand; /* fresh: see take() */
      return;
    }
    g_free(cand);
  }
}

/* A binder takes its user name when free, else the first free of %r,
 * %r1, %r2, ...  Names are only ever added to 'taken' (and 'reserved'
 * is fixed), so every candidate below the one last given stays
 * unavailable: the search goes on from there ('next_binder'), and naming
 * B binders tries O(B) candidates in all, not O(B^2) (issue 12: ZeRO on
 * a 4000-layer MLP).  The names are the same as searching from %r. */
static void name_binder(Namer *pr, Named *n) {
  if (n->user && !g_hash_table_contains(pr->taken, n->user)) {
    take(pr, n, g_strdup(n->user));
    return;
  }
  for (;;) {
    int i = pr->next_binder++;
    char *cand = i ? numbered("r", i) : g_strdup("r");
    if (name_free(pr, cand)) {
      n->name = cand; /* fresh: see take() */
      return;
    }
    g_free(cand);
  }
}

/* Names statement 's' and, for a tile or sum, its binder: the next
 * value in text order (its region's statements follow it). */
static void name_stmt(Namer *pr, Stmt *s) {
  s->n.user = pr->names ? g_hash_table_lookup(pr->names, s->t) : NULL;
  name_value(pr, &s->n);
  if (s->child) {
    s->child->binder.user =
        pr->binder_names ? g_hash_table_lookup(pr->binder_names, s->t) : NULL;
    name_binder(pr, &s->child->binder);
  }
}

/* ------------------------------------------------------------- schedules */

/* Copies: the name tables may lose entries (term_store_collect), and
 * the reserved names must not change with them. */
static void collect_reserved(gpointer key, gpointer value, gpointer data) {
  g_hash_table_add(data, g_strdup(value));
}

/* The distinct user names of 'm', which fresh names avoid.  They never
 * grow after parsing (rewrites only give new terms names the module
 * already has: replace_inherit_name), so the set is built once per
 * module and kept. */
static GHashTable *reserved_names(const Module *m) {
  Module *cache = (Module *)m;
  if (!cache->reserved) {
    cache->reserved =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_hash_table_foreach(m->names, collect_reserved, cache->reserved);
    g_hash_table_foreach(m->binder_names, collect_reserved, cache->reserved);
  }
  return g_hash_table_ref(cache->reserved);
}

/* Numbers the statements of 'r' in text order from 'next', appending
 * them to 'order'; returns the number after the last. */
static int number_region(Region *r, int next, GPtrArray *order) {
  for (guint i = 0; i < r->stmts->len; i++) {
    Stmt *s = g_ptr_array_index(r->stmts, i);
    s->n.index = next++;
    g_ptr_array_add(order, s);
    if (s->child)
      next = number_region(s->child, next, order);
  }
  return next;
}

static Schedule *schedule_by(const Func *f, gboolean by_memory) {
  Schedule *sc = g_new0(Schedule, 1);
  sc->blocks = g_ptr_array_new_with_free_func(g_free);
  Namer pr = {.by_memory = by_memory, .blocks = sc->blocks};
  sc->nargs = f->nargs;
  pr.args = sc->args = g_new0(Named, (gsize)MAX(f->nargs, 1));
  for (int i = 0; i < f->nargs; i++)
    sc->args[i].index = i;
  sc->top = pr.open[0] = region_new(NULL);
  sc->results = g_new(Named *, (gsize)MAX(f->nresults, 1));
  /* for memory, the last result first: a training step's loss (its
   * forward pass), then the updates from the last layer's back, each
   * computed as soon as its gradient is, not all after the pass */
  for (int k = 0; k < f->nresults; k++) {
    int i = by_memory ? f->nresults - 1 - k : k;
    sc->results[i] = schedule_value(&pr, 0, f->body->args[i]);
  }
  GPtrArray *order = g_ptr_array_new();
  for (int i = 0; i < f->nargs; i++)
    g_ptr_array_add(order, NULL);
  sc->nvalues = number_region(sc->top, f->nargs, order);
  sc->by_index = (Stmt **)g_ptr_array_free(order, FALSE);
  sc->named_upto = -1;
  return sc;
}

Schedule *schedule_order(const Func *f) { return schedule_by(f, FALSE); }

Schedule *schedule_for_memory(const Func *f) { return schedule_by(f, TRUE); }

static void namer_free(Namer *pr) {
  if (!pr)
    return;
  g_hash_table_unref(pr->taken);
  g_hash_table_unref(pr->reserved);
  g_free(pr);
}

void schedule_name_upto(Schedule *sc, const Module *m, const Func *f,
                        int index) {
  if (index <= sc->named_upto)
    return;
  Namer *pr = sc->namer;
  if (!pr) { /* the first call: the arguments first */
    g_assert(sc->nargs == 0 || !sc->args[0].name); /* named once */
    pr = sc->namer = g_new0(Namer, 1);
    pr->names = m ? m->names : NULL;
    pr->binder_names = m ? m->binder_names : NULL;
    pr->reserved =
        m ? reserved_names(m) : g_hash_table_new(g_str_hash, g_str_equal);
    pr->taken = g_hash_table_new(g_str_hash, g_str_equal);
    for (int i = 0; i < f->nargs; i++)
      take(pr, &sc->args[i], g_strdup(f->arg_names[i]));
  }
  index = MIN(index, sc->nvalues - 1);
  for (int i = MAX(sc->named_upto + 1, sc->nargs); i <= index; i++)
    name_stmt(pr, sc->by_index[i]);
  sc->named_upto = index;
  if (index >= sc->nvalues - 1) { /* all named: nothing to go on from */
    namer_free(pr);
    sc->namer = NULL;
  }
}

void schedule_name(Schedule *sc, const Module *m, const Func *f) {
  schedule_name_upto(sc, m, f, MAX(sc->nvalues - 1, 0));
}

Schedule *schedule_new(const Module *m, const Func *f) {
  Schedule *sc = schedule_order(f);
  schedule_name(sc, m, f);
  return sc;
}

void schedule_free(Schedule *sc) {
  if (!sc)
    return;
  region_free(sc->top);
  namer_free(sc->namer);
  g_free(sc->by_index);
  g_ptr_array_unref(sc->blocks);
  for (int i = 0; i < sc->nargs; i++)
    g_free(sc->args[i].name);
  g_free(sc->args);
  g_free(sc->results);
  g_free(sc);
}

/* The walk's visitor and the axes of the regions it is inside. */
typedef struct Walk {
  ScheduleVisit visit;
  ScheduleVisitAround visit_around;
  void *ud;
  const char *around[PARTIR_MAX_REGIONS + 1];
  int naround;
} Walk;

static void walk_visit(Walk *w, const char *name, const Term *t) {
  if (w->visit)
    w->visit(w->ud, name, t);
  else
    w->visit_around(w->ud, name, t, w->around, w->naround);
}

static void walk_region(Walk *w, const Region *r) {
  for (guint i = 0; i < r->stmts->len; i++) {
    const Stmt *s = g_ptr_array_index(r->stmts, i);
    walk_visit(w, s->n.name, s->t);
    if (!s->child)
      continue;
    /* a region's depth is its binder's level, below the store's limit */
    g_assert(w->naround <= PARTIR_MAX_REGIONS);
    w->around[w->naround++] = s->t->axis;
    walk_region(w, s->child);
    w->naround--;
  }
}

static void walk_schedule(const Schedule *sc, const Func *f, Walk *w) {
  for (int i = 0; i < f->nargs; i++)
    walk_visit(w, sc->args[i].name, term_arg(i, f->arg_types[i]));
  walk_region(w, sc->top);
}

static void walk_func(const Module *m, const Func *f, Walk *w) {
  g_autoptr(Schedule) sc = schedule_new(m, f);
  walk_schedule(sc, f, w);
}

void schedule_visit(const Schedule *sc, const Func *f, ScheduleVisit visit,
                    void *ud) {
  Walk w = {.visit = visit, .ud = ud};
  walk_schedule(sc, f, &w);
}

void schedule_walk(const Module *m, const Func *f, ScheduleVisit visit,
                   void *ud) {
  Walk w = {.visit = visit, .ud = ud};
  walk_func(m, f, &w);
}

void schedule_walk_around(const Module *m, const Func *f,
                          ScheduleVisitAround visit, void *ud) {
  Walk w = {.visit_around = visit, .ud = ud};
  walk_func(m, f, &w);
}
