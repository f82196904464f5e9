/* sharding.c — a value's layout as JAX and XLA write shardings.
 *
 * A Dist (mesh.c) says which mesh axes split each dimension of a value,
 * major first, and every other axis replicates it.  The exporter
 * (export.c) writes that in the two notations XLA reads, and the device
 * groups of a collective:
 *
 *   Shardy   #sdy.sharding<@mesh, [{"model"}, {}]>: per dimension, the
 *            axes that split it, major first; unnamed axes replicate.
 *            The mesh is declared once: #sdy.mesh<["batch"=2, "model"=2]>.
 *   GSPMD    {devices=[1,2,2]<=[4] last_tile_dim_replicate}: the number of
 *            tiles along each dimension, then (when some axis replicates
 *            the value) the number of copies, and which device holds
 *            each tile.  Devices are numbered row-major over the mesh,
 *            as jax.sharding.Mesh numbers an array of devices reshaped to
 *            its shape; the tile assignment is that array of ids with its
 *            axes reordered (the axes of dimension 0, major first, then
 *            those of dimension 1, ..., then the replicating axes in mesh
 *            order) and reshaped to the tile counts.  XLA writes such an
 *            array as an iota: '<=[N]' when no axis moves, else
 *            '<=[s0,s1,...]T(p0,p1,...)', the mesh's sizes and the
 *            order taken, in its canonical form: axes of size 1 dropped,
 *            and axes that stay next to each other in both orders merged
 *            ([2,2,2]T(1,2,0) is [2,4]T(1,0)).
 *   groups   replica_groups of a collective over axes A: one group per
 *            coordinate of the other axes (row-major), each listing the
 *            devices that differ only on A, ordered row-major over A in
 *            the order A lists them (a device's position in its group is
 *            the chunk it holds, as in the simulator).
 */
#include "spmd/spmd.h"

#include <string.h>

/* The index of each axis of 'd' in 'm', and whether it splits the value;
 * FALSE when 'd' names an axis 'm' lacks. */
static gboolean split_axes(const Dist *d, const Mesh *m, gboolean *splits) {
  memset(splits, 0, sizeof(gboolean) * MESH_MAX_AXES);
  for (int i = 0; i < d->rank; i++)
    for (int k = 0; k < d->naxes[i]; k++) {
      int a = mesh_axis_index(m, d->axes[i][k]);
      if (a < 0)
        return FALSE;
      splits[a] = TRUE;
    }
  return TRUE;
}

void sharding_sdy_mesh(GString *out, const Mesh *m) {
  g_string_append(out, "#sdy.mesh<[");
  for (int a = 0; a < m->naxes; a++)
    g_string_append_printf(out, "%s\"%s\"=%" G_GINT64_FORMAT, a ? ", " : "",
                           m->names[a], m->sizes[a]);
  g_string_append(out, "]>");
}

void sharding_sdy(GString *out, const Dist *d, const char *mesh_name) {
  g_string_append_printf(out, "#sdy.sharding<@%s, [", mesh_name);
  for (int i = 0; i < d->rank; i++) {
    g_string_append(out, i ? ", {" : "{");
    for (int k = 0; k < d->naxes[i]; k++)
      g_string_append_printf(out, "%s\"%s\"", k ? ", " : "", d->axes[i][k]);
    g_string_append_c(out, '}');
  }
  g_string_append(out, "]>");
}

/* Appends '<=[...]' for the device ids of 'm' (row-major) with the axes
 * taken in 'order' (mesh indices, every axis once), canonical as XLA
 * prints it. */
static void iota_assignment(GString *out, const Mesh *m, const int *order) {
  /* the sizes of the axes kept and the order as indices into them */
  int64_t sizes[MESH_MAX_AXES];
  int perm[MESH_MAX_AXES], renum[MESH_MAX_AXES];
  int n = 0, np = 0;
  for (int a = 0; a < m->naxes; a++) {
    renum[a] = m->sizes[a] > 1 ? n : -1;
    if (m->sizes[a] > 1)
      sizes[n++] = m->sizes[a];
  }
  for (int k = 0; k < m->naxes; k++)
    if (renum[order[k]] >= 0)
      perm[np++] = renum[order[k]];
  /* merge axis j and j+1 while some perm[k] == j is followed by j+1 */
  for (gboolean merged = TRUE; merged;) {
    merged = FALSE;
    for (int k = 0; k + 1 < np && !merged; k++) {
      if (perm[k + 1] != perm[k] + 1)
        continue;
      int j = perm[k];
      sizes[j] *= sizes[j + 1];
      memmove(&sizes[j + 1], &sizes[j + 2],
              sizeof(int64_t) * (gsize)(n - j - 2));
      n--;
      memmove(&perm[k + 1], &perm[k + 2], sizeof(int) * (gsize)(np - k - 2));
      np--;
      for (int q = 0; q < np; q++)
        if (perm[q] > j)
          perm[q]--;
      merged = TRUE;
    }
  }
  if (np <= 1) { /* the identity: the devices in order */
    g_string_append_printf(out, "<=[%" G_GINT64_FORMAT "]", mesh_devices(m));
    return;
  }
  g_string_append(out, "<=[");
  for (int k = 0; k < n; k++)
    g_string_append_printf(out, "%s%" G_GINT64_FORMAT, k ? "," : "", sizes[k]);
  g_string_append(out, "]T(");
  for (int k = 0; k < np; k++)
    g_string_append_printf(out, "%s%d", k ? "," : "", perm[k]);
  g_string_append(out, ")");
}

gboolean sharding_gspmd(GString *out, const Dist *d, const Mesh *m) {
  gboolean splits[MESH_MAX_AXES];
  if (!split_axes(d, m, splits))
    return FALSE;
  int order[MESH_MAX_AXES], n = 0;
  int64_t tiles = 1, copies = 1;
  for (int i = 0; i < d->rank; i++)
    for (int k = 0; k < d->naxes[i]; k++) {
      order[n++] = mesh_axis_index(m, d->axes[i][k]);
      tiles *= mesh_axis_size(m, d->axes[i][k]);
    }
  for (int a = 0; a < m->naxes; a++)
    if (!splits[a]) {
      order[n++] = a;
      copies *= m->sizes[a];
    }
  if (tiles == 1) {
    g_string_append(out, "{replicated}");
    return TRUE;
  }
  g_string_append(out, "{devices=[");
  for (int i = 0; i < d->rank; i++)
    g_string_append_printf(out, "%s%" G_GINT64_FORMAT, i ? "," : "",
                           dist_parts(d, m, i));
  if (copies > 1)
    g_string_append_printf(out, ",%" G_GINT64_FORMAT, copies);
  g_string_append_c(out, ']');
  iota_assignment(out, m, order);
  if (copies > 1)
    g_string_append(out, " last_tile_dim_replicate");
  g_string_append_c(out, '}');
  return TRUE;
}

gboolean sharding_replica_groups(GString *out, const Mesh *m,
                                 const char *const *axes, int naxes) {
  int on[MESH_MAX_AXES], non = 0; /* the collective's axes, in its order */
  gboolean in[MESH_MAX_AXES] = {FALSE};
  for (int k = 0; k < naxes; k++) {
    int a = mesh_axis_index(m, axes[k]);
    if (a < 0 || in[a])
      return FALSE;
    in[a] = TRUE;
    on[non++] = a;
  }
  int64_t stride[MESH_MAX_AXES]; /* a device id's step along each axis */
  int64_t s = 1;
  for (int a = m->naxes - 1; a >= 0; a--) {
    stride[a] = s;
    s *= m->sizes[a];
  }
  int64_t size = 1;
  for (int k = 0; k < non; k++)
    size *= m->sizes[on[k]];
  int64_t groups = mesh_devices(m) / size;
  g_string_append(out, "dense<[");
  for (int64_t g = 0; g < groups; g++) {
    /* the base device: coordinate g (row-major) on the other axes */
    int64_t base = 0, rest = g;
    for (int a = m->naxes - 1; a >= 0; a--)
      if (!in[a]) {
        base += (rest % m->sizes[a]) * stride[a];
        rest /= m->sizes[a];
      }
    g_string_append(out, g ? ", [" : "[");
    for (int64_t j = 0; j < size; j++) {
      int64_t id = base, r = j;
      for (int k = non - 1; k >= 0; k--) {
        id += (r % m->sizes[on[k]]) * stride[on[k]];
        r /= m->sizes[on[k]];
      }
      g_string_append_printf(out, "%s%" G_GINT64_FORMAT, j ? ", " : "", id);
    }
    g_string_append_c(out, ']');
  }
  g_string_append_printf(
      out, "]> : tensor<%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "xi64>", groups,
      size);
  return TRUE;
}
