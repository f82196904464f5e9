/* program.c — modules (parsed files) and their functions. */
#include "rule.h"

#include <string.h>

Module *module_new(void) {
  Module *m = g_new0(Module, 1);
  m->refcount = 1;
  m->funcs = g_ptr_array_new_with_free_func((GDestroyNotify)func_free);
  m->names = g_hash_table_new_full(NULL, NULL, NULL, g_free);
  m->binder_names = g_hash_table_new_full(NULL, NULL, NULL, g_free);
  collect_track_module(m, TRUE);
  return m;
}

Module *module_ref(Module *m) {
  m->refcount++;
  return m;
}

void module_free(Module *m) {
  if (!m || --m->refcount > 0)
    return;
  collect_track_module(m, FALSE);
  g_ptr_array_unref(m->funcs);
  g_hash_table_unref(m->names);
  g_hash_table_unref(m->binder_names);
  if (m->reserved)
    g_hash_table_unref(m->reserved);
  g_free(m);
}

void func_free(Func *f) {
  if (!f)
    return;
  if (f->spmd) {
    g_free(f->spmd->arg_dists);
    g_free(f->spmd->result_dists);
    g_free(f->spmd);
  }
  g_free(f->name);
  g_strfreev(f->arg_names);
  g_free(f->arg_types);
  g_free(f->result_types);
  g_free(f);
}

char *func_result_name(const Module *m, const Func *f, int i) {
  const Term *r = f->body->args[i];
  const char *user = r->kind == TM_ARG ? f->arg_names[r->index]
                                       : g_hash_table_lookup(m->names, r);
  gboolean clash = FALSE;
  for (int j = 0; user && j < f->nresults; j++)
    clash |= j != i && f->body->args[j] == r;
  if (!user || clash || strchr(user, '/') || user[0] == '.')
    return g_strdup_printf("result%d", i);
  return g_strdup(user);
}

Func *module_entry(Module *m) {
  if (m->funcs->len == 1)
    return g_ptr_array_index(m->funcs, 0);
  for (guint i = 0; i < m->funcs->len; i++) {
    Func *f = g_ptr_array_index(m->funcs, i);
    if (g_strcmp0(f->name, "main") == 0)
      return f;
  }
  return NULL;
}

static void print_axes(GString *out, const char *const *axes, int n) {
  g_string_append_c(out, '[');
  for (int k = 0; k < n; k++)
    g_string_append_printf(out, "%s\"%s\"", k ? ", " : "", axes[k]);
  g_string_append_c(out, ']');
}

int dist_replicated(const Dist *d, const Mesh *m, const char **out) {
  int n = 0;
  for (int a = 0; a < m->naxes; a++) {
    gboolean used = FALSE;
    for (int i = 0; i < d->rank; i++)
      for (int k = 0; k < d->naxes[i]; k++)
        used |= d->axes[i][k] == m->names[a];
    for (int k = 0; k < d->npartial; k++)
      used |= d->partial[k] == m->names[a];
    if (!used)
      out[n++] = m->names[a];
  }
  return n;
}

void dist_print(GString *out, const Dist *d, const Mesh *m) {
  g_string_append(out, "{dist = [");
  for (int i = 0; i < d->rank; i++) {
    if (i)
      g_string_append(out, ", ");
    print_axes(out, d->axes[i], d->naxes[i]);
  }
  g_string_append_c(out, ']');
  if (d->npartial) {
    g_string_append(out, ", partial = ");
    print_axes(out, d->partial, d->npartial);
  }
  const char *rep[MESH_MAX_AXES];
  int nrep = dist_replicated(d, m, rep);
  if (nrep) {
    g_string_append(out, ", replicated = ");
    print_axes(out, rep, nrep);
  }
  g_string_append_c(out, '}');
}

int64_t dist_parts(const Dist *d, const Mesh *m, int dim) {
  int64_t parts = 1;
  for (int k = 0; k < d->naxes[dim]; k++)
    parts *= mesh_axis_size(m, d->axes[dim][k]);
  return parts;
}
