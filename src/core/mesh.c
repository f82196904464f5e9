/* mesh.c — device meshes, and how a value lies on one.
 *
 * "batch=2,model=4" is a 2x4 mesh whose axes are named batch and model.
 * Tactics size their tiles from it; lowering maps ranges bound to an
 * axis onto its devices.  A Dist says, for a value of an SPMD program,
 * which axes split each dimension and over which axes devices hold
 * partial sums; every other axis replicates it.
 */
#include "core/core.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

gboolean mesh_parse(const char *spec, Mesh *out, Diag *diag) {
  memset(out, 0, sizeof *out);
  if (!spec || !*spec)
    return TRUE;
  g_auto(GStrv) parts = g_strsplit(spec, ",", -1);
  for (char **p = parts; *p; p++) {
    g_autofree char *item = g_strstrip(g_strdup(*p));
    char *eq = strchr(item, '=');
    char *end = NULL;
    errno = 0;
    long long size = eq ? strtoll(eq + 1, &end, 10) : 0;
    gboolean too_large = errno == ERANGE || size > MESH_MAX_AXIS_SIZE;
    if (!eq || eq == item || !end || *end || end == eq + 1 ||
        (size < 1 && !too_large)) {
      diag_reason(diag,
                  "mesh '%s': expected AXIS=SIZE (a positive size), got '%s'",
                  spec, item);
      return FALSE;
    }
    *eq = '\0';
    if (too_large) { /* the size as written: strtoll saturates */
      diag_reason(diag,
                  "mesh '%s': axis '%s' has size %s, more than the limit of "
                  "2^20 (%d)",
                  spec, item, eq + 1, MESH_MAX_AXIS_SIZE);
      return FALSE;
    }
    if (!mesh_axis_name_ok(item)) {
      diag_reason(diag,
                  "mesh '%s': axis name '%s' must be letters, digits or '_'",
                  spec, item);
      return FALSE;
    }
    const char *name = g_intern_string(item);
    for (int i = 0; i < out->naxes; i++)
      if (out->names[i] == name) {
        diag_reason(diag, "mesh '%s': axis '%s' given twice", spec, name);
        return FALSE;
      }
    if (out->naxes == MESH_MAX_AXES) {
      diag_reason(diag, "mesh '%s': more than %d axes", spec, MESH_MAX_AXES);
      return FALSE;
    }
    out->names[out->naxes] = name;
    out->sizes[out->naxes++] = size;
  }
  if (!mesh_devices_ok(out, diag)) {
    diag_prefix(diag, "mesh '%s': ", spec);
    return FALSE;
  }
  return TRUE;
}

gboolean mesh_devices_ok(const Mesh *m, Diag *diag) {
  int64_t n = 1; /* stays at most MESH_MAX_DEVICES: no overflow */
  for (int i = 0; i < m->naxes; i++) {
    if (m->sizes[i] > MESH_MAX_DEVICES / n) {
      diag_reason(diag,
                  "its axes make more than 2^31 devices (the limit is "
                  "%" G_GINT64_FORMAT ")",
                  MESH_MAX_DEVICES);
      return FALSE;
    }
    n *= m->sizes[i];
  }
  return TRUE;
}

gboolean mesh_axis_name_ok(const char *name) {
  if (!*name)
    return FALSE;
  for (const char *c = name; *c; c++)
    if (!g_ascii_isalnum(*c) && *c != '_')
      return FALSE;
  return TRUE;
}

int mesh_axis_index(const Mesh *m, const char *axis) {
  const char *name = g_intern_string(axis);
  for (int i = 0; i < m->naxes; i++)
    if (m->names[i] == name)
      return i;
  return -1;
}

int64_t mesh_axis_size(const Mesh *m, const char *axis) {
  int i = mesh_axis_index(m, axis);
  return i < 0 ? 0 : m->sizes[i];
}

int64_t mesh_devices(const Mesh *m) {
  int64_t n = 1;
  for (int i = 0; m && i < m->naxes; i++) {
    if (n > G_MAXINT64 / m->sizes[i])
      return G_MAXINT64;
    n *= m->sizes[i];
  }
  return n;
}

gboolean mesh_equal(const Mesh *a, const Mesh *b) {
  if (a->naxes != b->naxes)
    return FALSE;
  for (int i = 0; i < a->naxes; i++) /* names are interned */
    if (a->names[i] != b->names[i] || a->sizes[i] != b->sizes[i])
      return FALSE;
  return TRUE;
}

char *mesh_to_string(const Mesh *m) {
  GString *s = g_string_new(NULL);
  for (int i = 0; i < m->naxes; i++)
    g_string_append_printf(s, "%s%s=%" G_GINT64_FORMAT, i ? "," : "",
                           m->names[i], m->sizes[i]);
  return g_string_free(s, FALSE);
}

static void print_axes(GString *out, const char *const *axes, int n) {
  g_string_append_c(out, '[');
  for (int k = 0; k < n; k++) {
    if (k)
      g_string_append(out, ", ");
    lex_append_string(out, axes[k]);
  }
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
  gboolean padded = FALSE;
  for (int i = 0; i < d->rank; i++)
    padded |= d->global[i] != 0;
  if (padded) { /* the sizes the padded chunks hold */
    g_string_append(out, ", global = [");
    for (int i = 0; i < d->rank; i++)
      g_string_append_printf(out, "%s%" G_GINT64_FORMAT, i ? ", " : "",
                             d->global[i]);
    g_string_append_c(out, ']');
  }
  g_string_append_c(out, '}');
}

int64_t dist_local_size(int64_t size, int64_t parts) {
  return size / parts + (size % parts != 0);
}

int64_t dist_global_size(const Dist *d, const Mesh *m, const Type *local,
                         int dim) {
  return d->global[dim] ? d->global[dim]
                        : local->dims[dim] * dist_parts(d, m, dim);
}

void dist_set_global(Dist *d, const Mesh *m, const Type *local,
                     const Type *global) {
  for (int i = 0; i < d->rank; i++)
    d->global[i] = local->dims[i] * dist_parts(d, m, i) != global->dims[i]
                       ? global->dims[i]
                       : 0;
}

gboolean dist_same_axes(const Dist *a, int da, const Dist *b, int db) {
  if (a->naxes[da] != b->naxes[db])
    return FALSE;
  for (int k = 0; k < a->naxes[da]; k++)
    if (a->axes[da][k] != b->axes[db][k])
      return FALSE;
  return TRUE;
}

int64_t dist_parts(const Dist *d, const Mesh *m, int dim) {
  int64_t parts = 1;
  for (int k = 0; k < d->naxes[dim]; k++)
    parts *= mesh_axis_size(m, d->axes[dim][k]);
  return parts;
}
