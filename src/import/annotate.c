/* annotate.c — the sharding annotations of an import, judged.
 *
 * The lowering notes every sharding annotation it meets (HloNote: on an
 * argument, a result or another value, as written); this file decides
 * what they mean for partir:
 *
 *   the mesh    the 'sdy.mesh' the shardings name (all of them the same
 *               one: a partir program runs on one mesh), else the only
 *               one the file declares; the mesh the caller gives must be
 *               that mesh, and is the mesh when the file has none.  A mesh
 *               whose device_ids reorder the devices is refused where it
 *               is used: partir numbers devices row-major over the axes.
 *   shardings   each read (Shardy's text, or a GSPMD string mapped onto
 *               the mesh: sharding.c), for a value of its rank, over axes
 *               of the mesh that divide the dimensions they split.
 *
 * The first annotation partir cannot express stops the import with its
 * position.  What the shardings then do to the program (the actions they
 * become) is the rewrite layer's (rewrite/layouts.c): this layer only
 * reads.
 *
 * requires: an HloLowered from hlo_lower of 'f'.
 */
#include "import/import.h"

#include <string.h>

/* A mesh the file declares. */
typedef struct Declared {
  const char *name;
  Mesh mesh;
  gboolean reordered; /* its device_ids are not in order */
  Loc reordered_at;
  Loc loc;
} Declared;

typedef struct Annotate {
  const HloFile *f;
  const Func *entry;
  Diag *diag;
  GArray *declared; /* Declared */
  /* the mesh the shardings use, once one does */
  gboolean used;
  Mesh mesh;
  char *mesh_name; /* NULL: written inline */
  Loc used_at;     /* its declaration, or the sharding that writes it */
} Annotate;

static gboolean afail(Annotate *an, Loc at, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);
static gboolean afail(Annotate *an, Loc at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_verror(an->diag, at, fmt, ap);
  va_end(ap);
  return FALSE;
}

/* "x=2,y=4", or "no axes". */
static char *mesh_text(const Mesh *m) {
  char *s = mesh_to_string(m);
  if (*s)
    return s;
  g_free(s);
  return g_strdup("no axes");
}

/* "file:line:col" of 'at'. */
static char *where(const Annotate *an, Loc at) {
  return g_strdup_printf("%s:%d:%d", an->f->src->name, at.line, at.col);
}

/* Reads the file's 'sdy.mesh' declarations. */
static gboolean read_declared(Annotate *an) {
  for (guint i = 0; i < an->f->meshes->len; i++) {
    const HloOp *op = g_ptr_array_index(an->f->meshes, i);
    const HloAttr *name = hlo_op_attr(op, "sym_name");
    const HloAttr *mesh = hlo_op_attr(op, "mesh");
    if (!name || name->kind != HA_STRING || !mesh)
      return afail(an, op->loc, "'sdy.mesh' needs a name and a mesh");
    Declared d = {.name = g_intern_string(name->s), .loc = op->loc};
    for (guint k = 0; k < an->declared->len; k++)
      if (g_array_index(an->declared, Declared, k).name == d.name)
        return afail(an, op->loc, "mesh '@%s' is declared twice", d.name);
    ShardingText t = sharding_text_of(an->f->src, mesh, an->diag);
    if (!sharding_read_mesh(&t, &d.mesh, &d.reordered, &d.reordered_at))
      return FALSE;
    g_array_append_val(an->declared, d);
  }
  return TRUE;
}

static const Declared *find_declared(const Annotate *an, const char *name) {
  const char *interned = g_intern_string(name);
  for (guint k = 0; k < an->declared->len; k++)
    if (g_array_index(an->declared, Declared, k).name == interned)
      return &g_array_index(an->declared, Declared, k);
  return NULL;
}

/* Refuses a mesh whose devices are not in partir's order. */
static gboolean mesh_in_order(Annotate *an, const Declared *d) {
  if (!d->reordered)
    return TRUE;
  return afail(an, d->reordered_at,
               "mesh '@%s': device_ids reorder its devices; partir numbers a "
               "mesh's devices in order, row-major over its axes",
               d->name);
}

/* Makes the mesh a Shardy sharding at 'at' names the program's: the
 * first one used, or the same as it. */
static gboolean use_mesh(Annotate *an, const ShardingMeshRef *ref, Loc at) {
  Mesh mesh = ref->mesh;
  Loc declared_at = at;
  if (ref->name) {
    const Declared *d = find_declared(an, ref->name);
    if (!d)
      return afail(an, at,
                   "no mesh '@%s' is declared ('sdy.mesh @%s = "
                   "<[...]>')",
                   ref->name, ref->name);
    if (!mesh_in_order(an, d))
      return FALSE;
    mesh = d->mesh;
    declared_at = d->loc;
  }
  if (!an->used) {
    an->used = TRUE;
    an->mesh = mesh;
    an->mesh_name = g_strdup(ref->name);
    an->used_at = declared_at;
    return TRUE;
  }
  if (mesh_equal(&mesh, &an->mesh))
    return TRUE;
  g_autofree char *a = mesh_text(&mesh), *b = mesh_text(&an->mesh);
  g_autofree char *first = where(an, an->used_at);
  g_autofree char *mine = ref->name ? g_strdup_printf("@%s (%s)", ref->name, a)
                                    : g_strdup_printf("(%s)", a);
  g_autofree char *other = an->mesh_name
                               ? g_strdup_printf("@%s (%s)", an->mesh_name, b)
                               : g_strdup_printf("(%s)", b);
  return afail(an, at,
               "this sharding's mesh %s is not the one another sharding "
               "uses, %s at %s: a partir program runs on one mesh",
               mine, other, first);
}

/* What a note is on ("%x (argument 0)", "result 0", "the value"), for
 * messages at its position. */
static char *what_of(const Annotate *an, const HloNote *n) {
  switch (n->site) {
  case HLO_ON_ARG:
    return g_strdup_printf("%%%s (argument %d)", an->entry->arg_names[n->index],
                           n->index);
  case HLO_ON_RESULT:
    return g_strdup_printf("result %d", n->index);
  case HLO_ON_VALUE:
    break;
  }
  return g_strdup("the value");
}

/* The same with where it is written, for messages without a position:
 * "%x (argument 0, f.mlir:3:40)", "result 0 (f.mlir:3:70)", "the value
 * at f.mlir:7:10". */
static char *origin_of(const Annotate *an, const HloNote *n) {
  g_autofree char *at = where(an, n->loc);
  switch (n->site) {
  case HLO_ON_ARG:
    return g_strdup_printf("%%%s (argument %d, %s)",
                           an->entry->arg_names[n->index], n->index, at);
  case HLO_ON_RESULT:
    return g_strdup_printf("result %d (%s)", n->index, at);
  case HLO_ON_VALUE:
    break;
  }
  return g_strdup_printf("the value at %s", at);
}

/* Checks 's' against the value it is on and the mesh: its rank, its
 * axes, and that they divide the dimensions they split; drops axes of
 * size 1. */
static gboolean fits(Annotate *an, const HloNote *n, Sharding *s,
                     const Mesh *mesh) {
  const Type *t = n->value->type;
  g_autofree char *what = what_of(an, n);
  if (s->rank != t->rank)
    return afail(an, n->loc, "a sharding of %d dimension%s for %s, of rank %d",
                 s->rank, s->rank == 1 ? "" : "s", what, t->rank);
  for (int d = 0; d < s->rank; d++) {
    ShardingDim *dim = &s->dims[d];
    int64_t parts = 1;
    int kept = 0;
    for (int i = 0; i < dim->naxes; i++) {
      int64_t size = mesh_axis_size(mesh, dim->axes[i]);
      if (size == 0) {
        g_autofree char *m = mesh_text(mesh);
        return afail(an, n->loc, "axis \"%s\" is not an axis of the mesh (%s)",
                     dim->axes[i], m);
      }
      parts *= size;
      if (size > 1)
        dim->axes[kept++] = dim->axes[i];
    }
    dim->naxes = kept;
    /* an uneven split, as JAX pads it: every part as wide as the first,
     * the last padded (partir's uneven range), over one axis */
    int64_t size = t->dims[d], w = parts > 0 ? (size + parts - 1) / parts : 0;
    if (size % parts != 0 &&
        (kept != 1 || w == 0 || (size + w - 1) / w != parts))
      return afail(an, n->loc,
                   "dimension %d of %s has size %" G_GINT64_FORMAT
                   ", which does not split into %" G_GINT64_FORMAT
                   " equal parts%s",
                   d, what, size, parts,
                   kept != 1 ? " (partir pads an uneven split over one axis)"
                             : " (nor into parts of one width but the last, "
                               "which partir pads)");
  }
  for (int i = 0; i < s->nreplicated; i++)
    if (mesh_axis_size(mesh, s->replicated[i]) == 0) {
      g_autofree char *m = mesh_text(mesh);
      return afail(an, n->loc, "axis \"%s\" is not an axis of the mesh (%s)",
                   s->replicated[i], m);
    }
  return TRUE;
}

/* The mesh of the program when no sharding names one: the one mesh with
 * axes the file declares (several different ones: refused). */
static gboolean declared_mesh(Annotate *an) {
  const Declared *only = NULL;
  for (guint k = 0; k < an->declared->len; k++) {
    const Declared *d = &g_array_index(an->declared, Declared, k);
    if (d->mesh.naxes == 0)
      continue;
    if (only && !mesh_equal(&only->mesh, &d->mesh))
      return afail(an, d->loc,
                   "the file declares meshes '@%s' and '@%s' and no sharding "
                   "says which the program runs on",
                   only->name, d->name);
    if (!only)
      only = d;
  }
  if (!only)
    return TRUE;
  if (!mesh_in_order(an, only))
    return FALSE;
  an->used = TRUE;
  an->mesh = only->mesh;
  an->mesh_name = g_strdup(only->name);
  an->used_at = only->loc;
  return TRUE;
}

static void imported_sharding_free(ImportedSharding *s) {
  g_free(s->origin);
  g_free(s);
}

gboolean hlo_annotate(const HloFile *f, const HloLowered *l,
                      const ImportOptions *o, Imported *out, Diag *diag) {
  gboolean given = o->mesh && o->mesh->naxes > 0;
  out->shardings =
      g_ptr_array_new_with_free_func((GDestroyNotify)imported_sharding_free);
  if (given) {
    out->has_mesh = TRUE;
    out->mesh = *o->mesh;
  }
  if (!o->shardings)
    return TRUE;
  Annotate an = {.f = f,
                 .entry = g_ptr_array_index(l->module->funcs, 0),
                 .diag = diag,
                 .declared = g_array_new(FALSE, TRUE, sizeof(Declared))};
  gboolean ok = read_declared(&an);
  /* Shardy's shardings first: they say which mesh is the program's */
  g_autofree Sharding *read = g_new0(Sharding, MAX(l->notes->len, 1));
  for (guint i = 0; ok && i < l->notes->len; i++) {
    const HloNote *n = g_ptr_array_index(l->notes, i);
    if (n->gspmd)
      continue;
    ShardingMeshRef ref;
    ShardingText t = sharding_text_of(f->src, n->attr, diag);
    ok = sharding_read_sdy(&t, &read[i], &ref) && use_mesh(&an, &ref, n->loc);
    sharding_mesh_ref_clear(&ref);
  }
  if (ok && !an.used)
    ok = declared_mesh(&an);
  if (ok && an.used && given && !mesh_equal(&an.mesh, o->mesh)) {
    g_autofree char *file = mesh_text(&an.mesh), *mine = mesh_text(o->mesh);
    ok = afail(
        &an, an.used_at, "the mesh given (%s) is not the file's mesh%s%s (%s)",
        mine, an.mesh_name ? " @" : "", an.mesh_name ? an.mesh_name : "", file);
  }
  if (ok && an.used && an.mesh.naxes > 0) {
    out->has_mesh = TRUE;
    out->mesh_in_file = TRUE;
    out->mesh = an.mesh;
    out->mesh_name = g_strdup(an.mesh_name);
  }
  /* GSPMD strings, on that mesh */
  for (guint i = 0; ok && i < l->notes->len; i++) {
    const HloNote *n = g_ptr_array_index(l->notes, i);
    if (!n->gspmd)
      continue;
    Gspmd g;
    ShardingText t = sharding_text_of(f->src, n->attr, diag);
    if (!sharding_read_gspmd(&t, &g)) {
      gspmd_clear(&g); /* what it read before the error */
      ok = FALSE;
      break;
    }
    g_autofree char *why = NULL;
    if (g.kind == GSPMD_TILED && !out->has_mesh)
      ok = afail(&an, n->loc,
                 "'%s' splits the value over %" G_GINT64_FORMAT
                 " devices, but no mesh names their axes: give the mesh "
                 "(--mesh AXIS=SIZE,...) it is a split of",
                 n->attr->s, g.ndevices);
    else if (!sharding_from_gspmd(&g, &out->mesh, n->value->type->rank,
                                  &read[i], &why))
      ok = afail(&an, n->loc, "'%s': %s", n->attr->s, why);
    gspmd_clear(&g);
  }
  for (guint i = 0; ok && i < l->notes->len; i++) {
    const HloNote *n = g_ptr_array_index(l->notes, i);
    if (!(ok = fits(&an, n, &read[i], &out->mesh)))
      break;
    ImportedSharding *s = g_new0(ImportedSharding, 1);
    *s = (ImportedSharding){.site = n->site,
                            .index = n->index,
                            .value = n->value,
                            .sharding = read[i],
                            .origin = origin_of(&an, n)};
    g_ptr_array_add(out->shardings, s);
  }
  g_array_unref(an.declared);
  g_free(an.mesh_name);
  return ok;
}
