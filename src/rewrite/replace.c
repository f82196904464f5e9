/* replace.c — replacing a value everywhere in a program.
 *
 * A rewrite at a location makes a new term for one value; every use of
 * that value must see it.  One rebuilding pass over the body replaces
 * every occurrence of the old term by the new one (a term means the same
 * at every depth: binders are levels), and gives rebuilt values the
 * user's names of the values they replace.  Unchanged subterms are
 * shared.
 */
#include "rewrite/rewrite.h"

void replace_inherit_name(GHashTable *names, const Term *from, const Term *to) {
  if (!names || from == to)
    return;
  const char *name = g_hash_table_lookup(names, from);
  if (name && !g_hash_table_contains(names, to))
    g_hash_table_insert(names, (gpointer)to, g_strdup(name));
}

/* One rebuilding pass: either every occurrence of 'from' becomes 'to', or every
 * argument i becomes args_to[i] (when not NULL). */
typedef struct Replace {
  const Term *from, *to;
  const Term *const *args_to;
  int nargs;
  GHashTable *memo;
  GHashTable *names;
  Diag *err; /* set when an ancestor cannot be rebuilt */
} Replace;

static const Term *replace_rec(Replace *rp, const Term *t);

static const Term *replace_arg(void *rp, const Term *t) {
  return replace_rec(rp, t);
}

static const Term *replace_rec(Replace *rp, const Term *t) {
  const Term *from = rp->from;
  if (rp->args_to && t->kind == TM_ARG)
    return t->index < rp->nargs && rp->args_to[t->index] ? rp->args_to[t->index]
                                                         : t;
  if (from && t == from) {
    replace_inherit_name(rp->names, t, rp->to);
    return rp->to;
  }
  if (t->nargs == 0 || (from && t->height < from->height))
    return t;
  const Term *done = g_hash_table_lookup(rp->memo, t);
  if (done)
    return done;
  /* types are the same below, so only the limits on nesting can fail */
  const Term *r = term_map_args(t, replace_arg, rp, rp->err);
  if (!r)
    r = t;
  else if (r != t)
    replace_inherit_name(rp->names, t, r);
  g_hash_table_insert(rp->memo, (gpointer)t, (gpointer)r);
  return r;
}

static const Term *replace_run(Replace *rp, const Term *body) {
  diag_reset(rp->err);
  rp->memo = g_hash_table_new(NULL, NULL);
  const Term *r = replace_rec(rp, body);
  g_hash_table_unref(rp->memo);
  return diag_any(rp->err) ? NULL : r;
}

const Term *replace_everywhere(const Term *body, const Term *from,
                               const Term *to, GHashTable *names, Diag *err) {
  g_assert(from->type == to->type);
  Replace rp = {.from = from, .to = to, .names = names, .err = err};
  return replace_run(&rp, body);
}

const Term *replace_args(const Term *body, const Term *const *to, int nargs,
                         GHashTable *names, Diag *err) {
  Replace rp = {.args_to = to, .nargs = nargs, .names = names, .err = err};
  return replace_run(&rp, body);
}
