/* batched.c — a gather's or a scatter's index component that is its
 * position, read as a batching dimension.
 *
 * torch.gather(x, 1, idx) (what cross_entropy and take_along_dim
 * export), and the scatter of its gradient, reach StableHLO from
 * PyTorch/XLA as a gather of x at indices built by concatenating an
 * iota with idx along index_vector_dim: x[b, idx[b, k]] is read at the
 * start (iota_b, idx[b, k]), component 0 the position b along an
 * indices dimension.  That component pairs an operand dimension with an
 * indices dimension element by element, which is what StableHLO's
 * batching dimensions say (operand_batching_dims,
 * start_indices_batching_dims; JAX writes them so since 0.4.31); as an
 * index read from a tensor it pairs nothing, and the gather's tiling
 * spec cannot carry a split of the batch through it.  So here such a
 * component leaves the indices and becomes a batching pair: operand
 * dimension o (collapsed, slice size 1) and the indices dimension j the
 * iota counts along, of the same size (so no start was clamped: the
 * same elements are read or written).  The result's type is unchanged.
 */
#include "import/import.h"

#include <string.h>

/* The dimension j along which integer tensor 't' counts its position
 * (t[i] = i_j at every i), or -1: an iota, and one broadcast, reshaped
 * by adding or removing dimensions of size 1, or converted to an
 * integer type that holds every position. */
static int iota_dim(const Term *t) {
  if (t->kind != TM_OP || t->type->kind != TY_TENSOR ||
      dtype_is_float(t->type->dtype) || t->type->dtype == DT_I1)
    return -1;
  const Type *y = t->type;
  switch (t->op) {
  case OP_IOTA:
    return (int)attrs_get_int(t->attrs, "dim");
  case OP_CONVERT: {
    int j = iota_dim(t->args[0]);
    return j >= 0 && y->dims[j] - 1 <= dtype_int_max(y->dtype) ? j : -1;
  }
  case OP_BROADCAST_IN_DIM: {
    const Type *x = t->args[0]->type;
    int j = iota_dim(t->args[0]);
    const AttrValue *dims = attrs_get(t->attrs, "dims");
    if (j < 0 || !dims || j >= dims->count)
      return -1;
    int d = (int)dims->items[j].i;
    return x->dims[j] == y->dims[d] ? d : -1;
  }
  case OP_RESHAPE: {
    /* the dimensions of size 1 aside, the same shape: the k-th larger
     * dimension of either is the other's k-th */
    const Type *x = t->args[0]->type;
    int j = iota_dim(t->args[0]);
    if (j < 0 || x->dims[j] == 1)
      return -1;
    int nx = 0, ny = 0, k = -1, d = -1;
    for (int e = 0; e < x->rank; e++)
      if (x->dims[e] != 1) {
        if (e == j)
          k = nx;
        nx++;
      }
    for (int e = 0; e < y->rank; e++)
      if (y->dims[e] != 1) {
        if (ny == k)
          d = e;
        ny++;
      }
    if (nx != ny || d < 0)
      return -1;
    for (int e = 0, f = 0; e < x->rank; e++) /* the same sizes in order */
      if (x->dims[e] != 1) {
        while (y->dims[f] == 1)
          f++;
        if (y->dims[f++] != x->dims[e])
          return -1;
      }
    return d;
  }
  default:
    return -1;
  }
}

static gboolean has(const int64_t *list, int n, int64_t v) {
  for (int i = 0; i < n; i++)
    if (list[i] == v)
      return TRUE;
  return FALSE;
}

static int drop(int64_t *list, int n, int64_t v) {
  int m = 0;
  for (int i = 0; i < n; i++)
    if (list[i] != v)
      list[m++] = list[i];
  return m;
}

/* Whether component c of 'g', piece 'p' of the indices, can be the
 * batching pair of operand dimension start_index_map[c] and the indices
 * dimension p counts along ('*j'), given the pairs 'made' has already.
 * A collapsed dimension (a gather's; a scatter's inserted window
 * dimension) has slices of size 1, and the type rule checks it later. */
static gboolean batchable(const GatherDims *g, const GatherDims *made,
                          const Type *operand, const Type *indices, int c,
                          const Term *p, int *j) {
  int64_t o = g->start_index_map[c];
  *j = iota_dim(p);
  return *j >= 0 && *j != g->index_vector_dim &&
         has(made->collapsed, made->ncollapsed, o) &&
         operand->dims[o] == indices->dims[*j] &&
         !has(made->indices_batching, made->nbatching_indices, *j) &&
         made->nbatching < PARTIR_MAX_RANK;
}

const Term *hlo_batch_iota_indices(const Type *operand, const Term *indices,
                                   GatherDims *g, Diag *err) {
  const Type *it = indices->type;
  int64_t ivd = g->index_vector_dim;
  /* the components, concatenated along index_vector_dim (perhaps then
   * converted) */
  const Term *cat = indices;
  if (cat->kind == TM_OP && cat->op == OP_CONVERT)
    cat = cat->args[0];
  if (ivd >= it->rank || cat->kind != TM_OP || cat->op != OP_CONCATENATE ||
      attrs_get_int(cat->attrs, "dim") != ivd || g->nstart != it->dims[ivd])
    return indices;
  GatherDims out = *g;
  const Term *keep[PARTIR_MAX_RANK];
  int nkeep = 0, kept_map = 0;
  int64_t c = 0;
  for (int k = 0; k < cat->nargs; c += cat->args[k]->type->dims[ivd], k++) {
    const Term *p = cat->args[k];
    int j;
    if (p->type->dims[ivd] == 1 &&
        batchable(g, &out, operand, it, (int)c, p, &j)) {
      int64_t o = g->start_index_map[c];
      out.ncollapsed = drop(out.collapsed, out.ncollapsed, o);
      out.operand_batching[out.nbatching++] = o;
      out.indices_batching[out.nbatching_indices++] = j;
      continue;
    }
    if (nkeep == PARTIR_MAX_RANK)
      return indices;
    keep[nkeep++] = p;
    for (int64_t e = 0; e < p->type->dims[ivd]; e++)
      out.start_index_map[kept_map++] = g->start_index_map[c + e];
  }
  /* none batched, or every one (an index of no components is left as
   * it is: it is not worth a gather with an empty start) */
  if (nkeep == cat->nargs || nkeep == 0)
    return indices;
  out.nstart = kept_map;
  const Term *rest = keep[0];
  if (nkeep > 1)
    rest = term_op(OP_CONCATENATE, nkeep, keep, cat->attrs, NULL, err);
  if (rest && indices != cat) /* converted as the whole was */
    rest = term_op(OP_CONVERT, 1, &rest, attrs_empty(),
                   type_with_dtype(rest->type, it->dtype), err);
  if (!rest)
    return NULL;
  *g = out;
  return rest;
}
