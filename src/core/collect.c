/* collect.c — reclaiming terms no program holds.
 *
 * Terms live in one hash-consed store (term.c) shared by every module
 * and state.  A collection keeps what a live module's functions or a
 * live state's body reach (and their placed forms, under which the
 * modules' name tables know values) and frees the rest; so memory
 * follows what the caller keeps, not what it ever made.
 *
 * Modules register themselves here when made and leave when freed; so
 * do the functions of program states (rewrite/state.c), which this
 * layer knows only as functions.  A collection frees any term that is held only
 * by a C variable, so it runs only at safe points, where every term in use
 * belongs to a module or a state: between requests of the agent protocol,
 * between commands of the REPL, and when Lua asks for a rewrite (s:exec,
 * s:apply
 * ...), before the rewrite starts.  The store is collected there when it
 * has doubled since the last collection, so a collection's cost (linear
 * in what is live) is spread over the rewrites that made the garbage.
 * PARTIR_COLLECT_MIN_TERMS (default 65536) is the smallest store that is
 * collected; 0 collects at every safe point (the test suite runs that
 * way once, to show that nothing holds a term it does not own).
 */
#include "core/core.h"

static GHashTable *live_modules; /* Module* set */
static GHashTable *live_funcs;   /* const Func* set: program states' */
static size_t collect_at;        /* 0: not read from the environment yet */
static size_t collected;

static size_t min_terms(void) {
  static gssize min = -1;
  if (min < 0) {
    const char *env = g_getenv("PARTIR_COLLECT_MIN_TERMS");
    guint64 v = 0;
    min = env && g_ascii_string_to_unsigned(env, 10, 0, G_MAXINT32, &v, NULL)
              ? (gssize)v
              : (gssize)1 << 16;
  }
  return (size_t)min;
}

static void track(GHashTable **set, gpointer p, gboolean alive) {
  if (!*set)
    *set = g_hash_table_new(NULL, NULL);
  if (alive)
    g_hash_table_add(*set, p);
  else
    g_hash_table_remove(*set, p);
}

void collect_track_module(Module *m, gboolean alive) {
  track(&live_modules, m, alive);
}

void collect_track_func(const Func *f, gboolean alive) {
  track(&live_funcs, (gpointer)f, alive);
}

size_t collect_now(void) {
  g_autoptr(GPtrArray) roots = g_ptr_array_new();
  g_autoptr(GPtrArray) tables = g_ptr_array_new();
  GHashTableIter it;
  gpointer key;
  if (live_modules) {
    g_hash_table_iter_init(&it, live_modules);
    while (g_hash_table_iter_next(&it, &key, NULL)) {
      Module *m = key;
      for (guint i = 0; i < m->funcs->len; i++) {
        const Func *f = g_ptr_array_index(m->funcs, i);
        if (f->body)
          g_ptr_array_add(roots, (gpointer)f->body);
      }
      g_ptr_array_add(tables, m->names);
      g_ptr_array_add(tables, m->binder_names);
      g_ptr_array_add(tables, m->notes);
    }
  }
  if (live_funcs) {
    g_hash_table_iter_init(&it, live_funcs);
    while (g_hash_table_iter_next(&it, &key, NULL))
      g_ptr_array_add(roots, (gpointer)((const Func *)key)->body);
  }
  size_t n =
      term_store_collect((const Term *const *)roots->pdata, roots->len,
                         (GHashTable *const *)tables->pdata, tables->len);
  collected += n;
  collect_at = MAX(2 * term_store_size(), min_terms());
  return n;
}

void collect_maybe(void) {
  if (collect_at == 0)
    collect_at = min_terms();
  if (term_store_size() >= collect_at || min_terms() == 0)
    collect_now();
}

size_t collect_freed(void) { return collected; }
