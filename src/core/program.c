/* program.c — modules (parsed files) and their functions. */
#include "core/core.h"

#include <string.h>

Module *module_new(void) {
  Module *m = g_new0(Module, 1);
  m->refcount = 1;
  m->funcs = g_ptr_array_new_with_free_func((GDestroyNotify)func_free);
  m->names = g_hash_table_new_full(NULL, NULL, NULL, g_free);
  m->binder_names = g_hash_table_new_full(NULL, NULL, NULL, g_free);
  m->notes = g_hash_table_new_full(NULL, NULL, NULL, g_free);
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
  g_hash_table_unref(m->notes);
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
  g_free(f->result_updates);
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
