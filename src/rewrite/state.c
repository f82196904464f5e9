/* state.c — program states and locations.
 *
 * A State is a function body (a hash-consed Term) with the module it came
 * from, which supplies the signature and the user's names.  Rewrites make
 * new States that share every untouched subterm with their parent, so a
 * new state costs memory in proportion to what changed, and undo, fork
 * and search hold old states for free.
 */
#include "rewrite/rewrite.h"

State *state_new(Module *m) {
  State *s = g_new0(State, 1);
  s->refcount = 1;
  s->module = module_ref(m);
  s->func = *module_entry(m);
  collect_track_func(&s->func, TRUE);
  return s;
}

State *state_with_body(const State *parent, const Term *body) {
  State *s = state_new(parent->module);
  s->func.body = body;
  return s;
}

State *state_ref(State *s) {
  s->refcount++;
  return s;
}

void state_unref(State *s) {
  if (!s || --s->refcount > 0)
    return;
  collect_track_func(&s->func, FALSE);
  module_free(s->module);
  g_free(s);
}

void state_print(GString *out, const State *s, gboolean expr) {
  if (expr)
    print_func_expr(out, s->module, &s->func);
  else
    print_func(out, s->module, &s->func);
}

guint64 state_hash(const State *s) {
  guint64 h = s->func.body->content;
  for (int i = 0; i < s->func.nargs; i++)
    h = h * G_GUINT64_CONSTANT(1099511628211) ^
        g_str_hash(s->func.arg_names[i]);
  return h;
}

void location_free(Location *l) {
  if (!l)
    return;
  g_free(l->name);
  g_free(l->around);
  g_free(l);
}

static void add_location(void *ud, const char *name, const Term *placed,
                         const char *const *around, int naround) {
  Location *l = g_new0(Location, 1);
  l->name = g_strdup(name);
  l->term = placed;
  int n = 0;
  for (int i = 0; i < naround; i++)
    n += around[i] != NULL;
  if (n > 0) {
    l->around = g_new(const char *, (gsize)n);
    for (int i = 0; i < naround; i++)
      if (around[i])
        l->around[l->naround++] = around[i];
  }
  g_ptr_array_add(ud, l);
}

gboolean location_inside_axis(const Location *l, const char *axis) {
  for (int i = 0; axis && i < l->naround; i++)
    if (l->around[i] == axis)
      return TRUE;
  return FALSE;
}

GPtrArray *state_locations(const State *s) {
  GPtrArray *out =
      g_ptr_array_new_with_free_func((GDestroyNotify)location_free);
  schedule_walk_around(s->module, &s->func, add_location, out);
  return out;
}

const Location *state_find_location(GPtrArray *locs, const char *name) {
  if (name[0] == '%')
    name++;
  for (guint i = 0; i < locs->len; i++) {
    const Location *l = g_ptr_array_index(locs, i);
    if (strcmp(l->name, name) == 0)
      return l;
  }
  return NULL;
}
