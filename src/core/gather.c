/* gather.c — the dimension numbers of gather and dynamic_slice.
 *
 * StableHLO's gather reads slices of an operand at start positions held
 * in a tensor of indices: an embedding lookup 'table[ids]' is one.  Its
 * meaning is in its attributes (StableHLO's names, flattened):
 *
 *   offset_dims           result dims that run over a slice, sorted
 *   collapsed_slice_dims  operand dims of slice size 1 the result drops
 *   operand_batching_dims operand dims paired with ...
 *   start_indices_batching_dims  ... these indices dims (size 1 slices)
 *   start_index_map       operand dim of each component of a start index
 *   index_vector_dim      the indices dim holding those components (its
 *                         rank: each index is one number)
 *   slice_sizes           the slice's size along every operand dim
 *   indices_are_sorted    a promise, true or false (no effect here)
 *
 * The result's batch dims (those not in offset_dims, in order) are the
 * indices' dims but index_vector_dim, in order.  For a result index i,
 * the operand index is the start (each component clamped so the slice
 * fits: to [0, dim - slice size]) plus the batching dims' positions plus
 * i's offset dims spread over the operand dims that are neither
 * collapsed nor batching.  Every one of the type rule, the interpreter's
 * kernel, the tiling spec, the code generator and the importer reads the
 * dims through this file, so each fact about them is said once.
 *
 * dynamic_slice takes its start from scalar operands (one per operand
 * dim, clamped the same way) and 'slice_sizes'.
 *
 * scatter_add(operand, indices, updates) is gather read backwards, and
 * the cotangent of one: StableHLO's scatter with an add region, whose
 * dimension numbers are a gather's under other names
 * (update_window_dims = offset_dims, inserted_window_dims =
 * collapsed_slice_dims, input_batching_dims = operand_batching_dims,
 * scatter_indices_batching_dims = start_indices_batching_dims,
 * scatter_dims_to_operand_dims = start_index_map, index_vector_dim),
 * its slice sizes those of the update window (1 along inserted and
 * batching dims).  So it is read into a GatherDims, checked by the same
 * code, and the updates must have the type the matching gather of the
 * result would give.  A window whose start does not fit (a start
 * outside [0, dim - slice size]) is left out, not clamped, as XLA does
 * (StableHLO leaves it to the implementation); gather's cotangent clamps
 * its indices first (vjp_index.c).
 * dynamic_update_slice(operand, update, starts...) writes 'update' at
 * the starts, clamped as dynamic_slice clamps them.
 */
#include "core/core.h"

#include <string.h>

/* The attribute names of the dimension numbers, in GatherDims' order:
 * a gather's and a scatter_add's (which has no 'slice_sizes'). */
typedef struct DimNames {
  const char *op;
  const char *keys[6];
} DimNames;

static const DimNames gather_names = {
    "gather",
    {"offset_dims", "collapsed_slice_dims", "operand_batching_dims",
     "start_indices_batching_dims", "start_index_map", "slice_sizes"}};
static const DimNames scatter_names = {
    "scatter_add",
    {"update_window_dims", "inserted_window_dims", "input_batching_dims",
     "scatter_indices_batching_dims", "scatter_dims_to_operand_dims", NULL}};

/* The list attribute 'key' into 'out' (absent: empty when optional). */
static gboolean read_list(const DimNames *nm, const Attrs *a, const char *key,
                          gboolean required, int64_t *out, int *n, Diag *err) {
  const AttrValue *v = attrs_get(a, key);
  *n = 0;
  if (!v) {
    if (required)
      diag_reason(err, "'%s' needs attribute '%s'", nm->op, key);
    return !required;
  }
  gboolean ok = v->kind == AV_LIST && v->count <= PARTIR_MAX_RANK;
  for (int i = 0; ok && i < v->count; i++)
    ok = v->items[i].kind == AV_INT;
  if (!ok) {
    diag_reason(err,
                "'%s' attribute '%s' must be a list of at most %d "
                "integers",
                nm->op, key, PARTIR_MAX_RANK);
    return FALSE;
  }
  for (int i = 0; i < v->count; i++)
    out[i] = v->items[i].i;
  *n = v->count;
  return TRUE;
}

static gboolean has(const int64_t *xs, int n, int64_t x) {
  for (int i = 0; i < n; i++)
    if (xs[i] == x)
      return TRUE;
  return FALSE;
}

/* 'xs' are distinct dims below 'rank' (and increasing when 'sorted'). */
static gboolean dims_ok(const DimNames *nm, const char *key, const int64_t *xs,
                        int n, int rank, gboolean sorted, Diag *err) {
  for (int i = 0; i < n; i++) {
    if (xs[i] < 0 || xs[i] >= rank) {
      diag_reason(err,
                  "'%s' attribute '%s': dimension %" G_GINT64_FORMAT
                  " out of range for rank %d",
                  nm->op, key, xs[i], rank);
      return FALSE;
    }
    if (i > 0 && (sorted ? xs[i] <= xs[i - 1] : has(xs, i, xs[i]))) {
      diag_reason(err, "'%s' attribute '%s' must be %s", nm->op, key,
                  sorted ? "increasing" : "distinct dimensions");
      return FALSE;
    }
  }
  return TRUE;
}

/* The dimension numbers named by 'nm' (all lists but slice_sizes when
 * its key is NULL), index_vector_dim and indices_are_sorted. */
static gboolean read_dims(const DimNames *nm, const Attrs *a, GatherDims *g,
                          Diag *err) {
  memset(g, 0, sizeof *g);
  int64_t *lists[] = {g->offset_dims,      g->collapsed,
                      g->operand_batching, g->indices_batching,
                      g->start_index_map,  g->slice_sizes};
  int *counts[] = {&g->noffset,           &g->ncollapsed, &g->nbatching,
                   &g->nbatching_indices, &g->nstart,     &g->nslice};
  for (gsize k = 0; k < G_N_ELEMENTS(lists); k++)
    if (nm->keys[k] &&
        !read_list(nm, a, nm->keys[k], k == 5, lists[k], counts[k], err))
      return FALSE;
  const AttrValue *ivd = attrs_get(a, "index_vector_dim");
  if (!ivd || ivd->kind != AV_INT) {
    diag_reason(err, "'%s' needs the integer attribute 'index_vector_dim'",
                nm->op);
    return FALSE;
  }
  g->index_vector_dim = ivd->i;
  const AttrValue *sorted = attrs_get(a, "indices_are_sorted");
  if (sorted &&
      (sorted->kind != AV_SYMBOL || (strcmp(sorted->sym, "true") != 0 &&
                                     strcmp(sorted->sym, "false") != 0))) {
    diag_reason(err,
                "'%s' attribute 'indices_are_sorted' must be true or false",
                nm->op);
    return FALSE;
  }
  g->sorted = sorted && strcmp(sorted->sym, "true") == 0;
  return TRUE;
}

/* StableHLO's constraints on the dimension numbers 'g' of a gather of
 * 'operand' at 'indices' (or the scatter_add named in 'nm'); sets
 * g->rank, the gather result's. */
static gboolean check_dims(const DimNames *nm, const Type *operand,
                           const Type *indices, GatherDims *g, Diag *err) {
  const char *const *key = nm->keys;
  if (dtype_is_float(indices->dtype) || indices->dtype == DT_I1) {
    diag_reason(err, "'%s' indices must be integers, not %s", nm->op,
                dtype_name(indices->dtype));
    return FALSE;
  }
  int orank = operand->rank, irank = indices->rank;
  if (g->index_vector_dim < 0 || g->index_vector_dim > irank) {
    diag_reason(err,
                "'%s' index_vector_dim %" G_GINT64_FORMAT
                " out of range for indices of rank %d",
                nm->op, g->index_vector_dim, irank);
    return FALSE;
  }
  int64_t ncomp =
      g->index_vector_dim < irank ? indices->dims[g->index_vector_dim] : 1;
  if (g->nstart != ncomp) {
    diag_reason(err,
                "'%s' %s has %d entries but each start index has "
                "%" G_GINT64_FORMAT " components",
                nm->op, key[4], g->nstart, ncomp);
    return FALSE;
  }
  if (g->nslice != orank) { /* a scatter's are computed: always orank */
    diag_reason(err,
                "'gather' slice_sizes has %d entries for an operand of "
                "rank %d",
                g->nslice, orank);
    return FALSE;
  }
  if (g->nbatching != g->nbatching_indices) {
    diag_reason(err, "'%s' needs as many %s as %s", nm->op, key[2], key[3]);
    return FALSE;
  }
  int64_t dropped[2 * PARTIR_MAX_RANK];
  memcpy(dropped, g->collapsed, sizeof(int64_t) * (gsize)g->ncollapsed);
  memcpy(dropped + g->ncollapsed, g->operand_batching,
         sizeof(int64_t) * (gsize)g->nbatching);
  int64_t mapped[2 * PARTIR_MAX_RANK];
  memcpy(mapped, g->start_index_map, sizeof(int64_t) * (gsize)g->nstart);
  memcpy(mapped + g->nstart, g->operand_batching,
         sizeof(int64_t) * (gsize)g->nbatching);
  g_autofree char *both_dropped = g_strdup_printf("%s/%s", key[1], key[2]);
  g_autofree char *both_mapped = g_strdup_printf("%s/%s", key[4], key[2]);
  if (!dims_ok(nm, key[1], g->collapsed, g->ncollapsed, orank, TRUE, err) ||
      !dims_ok(nm, key[2], g->operand_batching, g->nbatching, orank, TRUE,
               err) ||
      !dims_ok(nm, both_dropped, dropped, g->ncollapsed + g->nbatching, orank,
               FALSE, err) ||
      !dims_ok(nm, both_mapped, mapped, g->nstart + g->nbatching, orank, FALSE,
               err) ||
      !dims_ok(nm, key[3], g->indices_batching, g->nbatching, irank, FALSE,
               err))
    return FALSE;
  if (has(g->indices_batching, g->nbatching, g->index_vector_dim)) {
    diag_reason(err, "'%s' index_vector_dim is one of its %s", nm->op, key[3]);
    return FALSE;
  }
  for (int d = 0; d < orank; d++) {
    gboolean one = has(dropped, g->ncollapsed + g->nbatching, d);
    if (g->slice_sizes[d] < 0 || g->slice_sizes[d] > operand->dims[d] ||
        (one && g->slice_sizes[d] > 1)) {
      diag_reason(err,
                  "'%s' %s size %" G_GINT64_FORMAT " of dimension %d: "
                  "need 0 to %" G_GINT64_FORMAT "%s",
                  nm->op, key[5] ? "slice" : "window", g->slice_sizes[d], d,
                  one ? 1 : operand->dims[d],
                  one ? " (collapsed or batching)" : "");
      return FALSE;
    }
  }
  for (int k = 0; k < g->nbatching; k++)
    if (operand->dims[g->operand_batching[k]] !=
        indices->dims[g->indices_batching[k]]) {
      diag_reason(err,
                  "'%s' batching dimensions differ in size: operand "
                  "dim %" G_GINT64_FORMAT ", indices dim %" G_GINT64_FORMAT,
                  nm->op, g->operand_batching[k], g->indices_batching[k]);
      return FALSE;
    }
  int nbatch = irank - (g->index_vector_dim < irank);
  int rank = nbatch + g->noffset;
  if (g->noffset != orank - g->ncollapsed - g->nbatching) {
    diag_reason(err,
                "'%s' %s has %d entries: the operand's rank "
                "%d less %d %s and %d batching dims",
                nm->op, key[0], g->noffset, orank, g->ncollapsed,
                key[5] ? "collapsed" : "inserted", g->nbatching);
    return FALSE;
  }
  if (rank > PARTIR_MAX_RANK) {
    diag_reason(err, "'%s' %s rank %d exceeds %d", nm->op,
                key[5] ? "result" : "updates", rank, PARTIR_MAX_RANK);
    return FALSE;
  }
  if (!dims_ok(nm, key[0], g->offset_dims, g->noffset, rank, TRUE, err))
    return FALSE;
  g->rank = rank;
  return TRUE;
}

gboolean gather_dims_read(const Attrs *a, const Type *operand,
                          const Type *indices, GatherDims *g, Diag *err) {
  return read_dims(&gather_names, a, g, err) &&
         check_dims(&gather_names, operand, indices, g, err);
}

/* A scatter's slice sizes: the update window's size along each operand
 * dim that is neither inserted nor batching (the k-th such dim is window
 * dim update_window_dims[k]), 1 along the others. */
static gboolean window_sizes(const Type *operand, const Type *updates,
                             GatherDims *g, Diag *err) {
  int k = 0;
  for (int d = 0; d < operand->rank; d++) {
    if (has(g->collapsed, g->ncollapsed, d) ||
        has(g->operand_batching, g->nbatching, d)) {
      g->slice_sizes[d] = 1;
      continue;
    }
    if (k < g->noffset &&
        (g->offset_dims[k] < 0 || g->offset_dims[k] >= updates->rank)) {
      diag_reason(err,
                  "'scatter_add' attribute 'update_window_dims': dimension "
                  "%" G_GINT64_FORMAT " out of range for updates of rank %d",
                  g->offset_dims[k], updates->rank);
      return FALSE;
    }
    g->slice_sizes[d] = k < g->noffset ? updates->dims[g->offset_dims[k]] : 0;
    k++;
  }
  if (k != g->noffset) {
    diag_reason(err,
                "'scatter_add' update_window_dims has %d entries: the "
                "operand's rank %d less its inserted and batching dims (%d)",
                g->noffset, operand->rank, k);
    return FALSE;
  }
  g->nslice = operand->rank;
  return TRUE;
}

gboolean scatter_dims_read(const Attrs *a, const Type *operand,
                           const Type *indices, const Type *updates,
                           GatherDims *g, Diag *err) {
  if (!read_dims(&scatter_names, a, g, err) ||
      !window_sizes(operand, updates, g, err) ||
      !check_dims(&scatter_names, operand, indices, g, err))
    return FALSE;
  const Type *want = gather_result_type(g, operand, indices);
  if (updates->dtype != operand->dtype || updates->rank != want->rank ||
      memcmp(updates->dims, want->dims, sizeof(int64_t) * (gsize)want->rank) !=
          0) {
    g_autofree char *have = type_to_string(updates);
    g_autofree char *need = type_to_string(want);
    diag_reason(err,
                "'scatter_add' updates are %s: its operand, indices and "
                "dimension numbers need %s",
                have, need);
    return FALSE;
  }
  return TRUE;
}

void gather_dims_of(const Term *t, GatherDims *g) {
  g_assert(t->kind == TM_OP && (t->op == OP_GATHER || t->op == OP_SCATTER_ADD));
  g_autoptr(Diag) err = diag_new(NULL);
  gboolean ok G_GNUC_UNUSED =
      t->op == OP_GATHER
          ? gather_dims_read(t->attrs, t->args[0]->type, t->args[1]->type, g,
                             err)
          : scatter_dims_read(t->attrs, t->args[0]->type, t->args[1]->type,
                              t->args[2]->type, g, err);
  g_assert(ok); /* the type rule checked them */
}

GatherDim gather_result_dim(const GatherDims *g, int d) {
  GatherDim r = {.indices = -1, .operand = -1, .offset = FALSE};
  int batch = 0, offset = 0;
  for (int k = 0; k < d; k++) {
    if (has(g->offset_dims, g->noffset, k))
      offset++;
    else
      batch++;
  }
  if (has(g->offset_dims, g->noffset, d)) {
    /* the offset-th operand dim that is neither collapsed nor batching */
    r.offset = TRUE;
    for (int od = 0; od < g->nslice; od++) {
      if (has(g->collapsed, g->ncollapsed, od) ||
          has(g->operand_batching, g->nbatching, od))
        continue;
      if (offset-- == 0) {
        r.operand = od;
        break;
      }
    }
    return r;
  }
  /* the batch-th indices dim but index_vector_dim */
  r.indices = batch < g->index_vector_dim ? batch : batch + 1;
  for (int k = 0; k < g->nbatching; k++)
    if (g->indices_batching[k] == r.indices)
      r.operand = (int)g->operand_batching[k];
  return r;
}

const Type *gather_result_type(const GatherDims *g, const Type *operand,
                               const Type *indices) {
  int64_t dims[PARTIR_MAX_RANK];
  for (int d = 0; d < g->rank; d++) {
    GatherDim m = gather_result_dim(g, d);
    dims[d] = m.offset ? g->slice_sizes[m.operand] : indices->dims[m.indices];
  }
  return type_tensor(operand->dtype, g->rank, dims);
}

static AttrValue int_value(int64_t i) {
  return (AttrValue){.kind = AV_INT, .i = i};
}

static AttrValue list_value(const int64_t *xs, int n) {
  AttrValue v = {.kind = AV_LIST, .count = n};
  v.items = g_new0(AttrValue, (gsize)MAX(n, 1));
  for (int i = 0; i < n; i++)
    v.items[i] = int_value(xs[i]);
  return v;
}

/* The attributes of 'g' under the names 'nm' (a scatter leaves its
 * slice sizes out: its updates' type says them). */
static const Attrs *dims_attrs(const DimNames *nm, const GatherDims *g) {
  const char **keys = g_new(const char *, 9);
  AttrValue *vals = g_new0(AttrValue, 9);
  const int64_t *lists[] = {g->offset_dims,      g->collapsed,
                            g->operand_batching, g->indices_batching,
                            g->start_index_map,  g->slice_sizes};
  const int counts[] = {g->noffset,           g->ncollapsed, g->nbatching,
                        g->nbatching_indices, g->nstart,     g->nslice};
  int n = 0;
  for (gsize k = 0; k < G_N_ELEMENTS(lists); k++) {
    /* empty batching lists are left out, as StableHLO prints them */
    if (!nm->keys[k] || ((k == 2 || k == 3) && counts[k] == 0))
      continue;
    keys[n] = g_intern_static_string(nm->keys[k]);
    vals[n++] = list_value(lists[k], counts[k]);
  }
  keys[n] = g_intern_static_string("index_vector_dim");
  vals[n++] = int_value(g->index_vector_dim);
  if (g->sorted) {
    keys[n] = g_intern_static_string("indices_are_sorted");
    vals[n++] = (AttrValue){.kind = AV_SYMBOL, .sym = g_intern_string("true")};
  }
  return attrs_intern(n, keys, vals);
}

const Attrs *gather_attrs(const GatherDims *g) {
  return dims_attrs(&gather_names, g);
}

const Attrs *scatter_attrs(const GatherDims *g) {
  return dims_attrs(&scatter_names, g);
}

/* ------------------------------------------------------------ operands */

const Attrs *gather_sizes_follow(const Term *t, const Type *operand) {
  const AttrValue *v = attrs_get(t->attrs, "slice_sizes");
  const Type *from = t->args[0]->type;
  g_assert(v && v->kind == AV_LIST && v->count == from->rank &&
           operand->rank == from->rank);
  AttrValue sizes = attr_value_copy(v);
  gboolean changed = FALSE;
  for (int d = 0; d < from->rank; d++)
    if (operand->dims[d] != from->dims[d] &&
        sizes.items[d].i == from->dims[d]) {
      sizes.items[d].i = operand->dims[d];
      changed = TRUE;
    }
  const Attrs *out =
      changed ? attrs_with(t->attrs, "slice_sizes", sizes) : t->attrs;
  attr_value_clear(&sizes);
  return out;
}
