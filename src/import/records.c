/* records.c — the records a StableHLO file is read into (import.h):
 * making and freeing them, and the attributes of an operation.  An
 * HloFile owns its functions, their regions and operations, and every
 * location made while reading (HloFile.locs: locations refer to each
 * other, so one list frees them).
 */
#include "import/import.h"

#include <string.h>

HloAttr *hlo_attr_new(HloAttrKind kind, Loc loc) {
  HloAttr *a = g_new0(HloAttr, 1);
  a->kind = kind;
  a->loc = loc;
  return a;
}

void hlo_type_free(HloType *t) {
  if (!t)
    return;
  g_free(t->text);
  g_free(t->why);
  if (t->elems)
    g_ptr_array_unref(t->elems);
  g_free(t);
}

HloType *hlo_type_copy(const HloType *t) {
  HloType *c = g_new0(HloType, 1);
  *c = *t;
  c->text = g_strdup(t->text);
  c->why = g_strdup(t->why);
  if (t->elems) {
    c->elems = g_ptr_array_new_with_free_func((GDestroyNotify)hlo_type_free);
    for (guint i = 0; i < t->elems->len; i++)
      g_ptr_array_add(c->elems, hlo_type_copy(g_ptr_array_index(t->elems, i)));
  }
  return c;
}

void hlo_attr_free(HloAttr *a) {
  if (!a)
    return;
  g_free(a->s);
  if (a->items)
    g_ptr_array_unref(a->items);
  if (a->keys)
    g_ptr_array_unref(a->keys);
  hlo_type_free(a->type);
  g_free(a);
}

GPtrArray *hlo_attr_array(void) {
  return g_ptr_array_new_with_free_func((GDestroyNotify)hlo_attr_free);
}

GPtrArray *hlo_type_array(void) {
  return g_ptr_array_new_with_free_func((GDestroyNotify)hlo_type_free);
}

HloOp *hlo_op_new(const char *name, Loc loc) {
  HloOp *op = g_new0(HloOp, 1);
  op->name = g_strdup(name);
  op->loc = loc;
  op->start = loc;
  op->defs = g_array_new(FALSE, TRUE, sizeof(HloDef));
  op->uses = g_array_new(FALSE, TRUE, sizeof(HloUse));
  op->attr_keys = g_ptr_array_new_with_free_func(g_free);
  op->attr_values = hlo_attr_array();
  op->operand_types = hlo_type_array();
  op->result_types = hlo_type_array();
  op->regions = g_ptr_array_new_with_free_func((GDestroyNotify)hlo_region_free);
  return op;
}

void hlo_op_free(HloOp *op) {
  if (!op)
    return;
  g_free(op->name);
  for (guint i = 0; i < op->defs->len; i++)
    g_free(g_array_index(op->defs, HloDef, i).name);
  for (guint i = 0; i < op->uses->len; i++)
    g_free(g_array_index(op->uses, HloUse, i).name);
  g_array_free(op->defs, TRUE);
  g_array_free(op->uses, TRUE);
  g_ptr_array_unref(op->attr_keys);
  g_ptr_array_unref(op->attr_values);
  g_ptr_array_unref(op->operand_types);
  g_ptr_array_unref(op->result_types);
  g_ptr_array_unref(op->regions);
  g_free(op);
}

static void arg_free(HloArg *a) {
  g_free(a->name);
  hlo_type_free(a->type);
  hlo_attr_free(a->attrs);
  g_free(a);
}

HloRegion *hlo_region_new(Loc loc) {
  HloRegion *g = g_new0(HloRegion, 1);
  g->loc = loc;
  g->args = g_ptr_array_new_with_free_func((GDestroyNotify)arg_free);
  g->ops = g_ptr_array_new_with_free_func((GDestroyNotify)hlo_op_free);
  g->blocks = 1;
  return g;
}

void hlo_region_free(HloRegion *g) {
  if (!g)
    return;
  g_ptr_array_unref(g->args);
  g_ptr_array_unref(g->ops);
  g_free(g);
}

void hlo_func_free(HloFunc *f) {
  g_free(f->name);
  g_ptr_array_unref(f->args);
  g_ptr_array_unref(f->result_types);
  g_ptr_array_unref(f->result_attrs);
  hlo_region_free(f->body);
  g_free(f);
}

HloFunc *hlo_func_new(Loc loc) {
  HloFunc *f = g_new0(HloFunc, 1);
  f->loc = loc;
  f->args = g_ptr_array_new_with_free_func((GDestroyNotify)arg_free);
  f->result_types = hlo_type_array();
  f->result_attrs = hlo_attr_array();
  return f;
}

void hlo_loc_free(HloLoc *l) {
  g_free(l->s);
  if (l->children)
    g_ptr_array_unref(l->children); /* not owning: file->locs owns */
  g_free(l);
}

void hlo_file_free(HloFile *f) {
  if (!f)
    return;
  g_free(f->module_name);
  g_ptr_array_unref(f->funcs);
  g_hash_table_unref(f->aliases);
  g_ptr_array_unref(f->locs);
  g_ptr_array_unref(f->meshes);
  g_free(f);
}

void hlo_op_add_attr(HloOp *op, const char *key, HloAttr *value) {
  g_ptr_array_add(op->attr_keys, g_strdup(key));
  g_ptr_array_add(op->attr_values, value);
}

const HloAttr *hlo_op_attr(const HloOp *op, const char *key) {
  for (guint i = 0; i < op->attr_keys->len; i++)
    if (strcmp(g_ptr_array_index(op->attr_keys, i), key) == 0)
      return g_ptr_array_index(op->attr_values, i);
  return NULL;
}

const HloAttr *hlo_dict_get(const HloAttr *dict, const char *key) {
  if (!dict || dict->kind != HA_DICT)
    return NULL;
  for (guint i = 0; i < dict->keys->len; i++)
    if (strcmp(g_ptr_array_index(dict->keys, i), key) == 0)
      return g_ptr_array_index(dict->items, i);
  return NULL;
}

const HloAttr *hlo_dense_body(const HloAttr *a) {
  if (a->kind == HA_DENSE && !a->s && a->items->len == 1)
    return g_ptr_array_index(a->items, 0);
  return a;
}

HloFile *hlo_file_new(const Source *src) {
  HloFile *f = g_new0(HloFile, 1);
  f->src = src;
  f->funcs = g_ptr_array_new_with_free_func((GDestroyNotify)hlo_func_free);
  f->aliases = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  f->locs = g_ptr_array_new_with_free_func((GDestroyNotify)hlo_loc_free);
  f->meshes = g_ptr_array_new_with_free_func((GDestroyNotify)hlo_op_free);
  return f;
}
