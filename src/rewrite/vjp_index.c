/* vjp_index.c — the vjps of the operators that index by runtime values:
 * gather and dynamic_slice, and their transposes scatter_add and
 * dynamic_update_slice (rules/grad.rules names them 'builtin'; the
 * dimension numbers are core/gather.c's).  x the operand, z the result,
 * dz its cotangent; integer operands (indices, starts) get none:
 *
 *   gather                dx = scatter_add(0, clamp(ids), dz), the
 *                         scatter with gather's dimension numbers under
 *                         its own names.  gather clamps each start so
 *                         its slice fits and scatter_add leaves a window
 *                         that does not fit out (as XLA does): the indices
 *                         are clamped first, as JAX's transpose does
 *   scatter_add           dx = dz; dupdates = gather(dz, ids), zero
 *                         where the window was left out
 *   dynamic_slice         dx = dynamic_update_slice(0, dz, starts)
 *   dynamic_update_slice  dx = dz with the window zeroed (an update of
 *                         zeros), dupdate = dynamic_slice(dz, starts):
 *                         both clamp the starts alike
 *
 * So an embedding lookup's gradient is a scatter-add of the rows' dz
 * into a zero table, which the tiling spec lets data parallelism split
 * as a sum over the batch (rewrite/spec.c).
 */
#include "rewrite/rewrite.h"

#include <string.h>

static const Term *compare(const Term *x, const Term *y, const char *dir,
                           Diag *err) {
  AttrValue d = attr_new_symbol(dir);
  return term_op2(OP_COMPARE, x, y,
                  attrs_build(1, (const char *[]){"direction"}, &d), err);
}

/* The largest start of each index component that lets its slice fit,
 * as a tensor of the indices' type: component c along index_vector_dim
 * (an iota there picks it), one number when the components agree.  A
 * limit past the type's largest value is that value (i8 ids in a table
 * of 1000 rows: every id fits). */
static const Term *start_limits(const GatherDims *g, const Type *x,
                                const Type *ids, Diag *err) {
  int64_t hi[PARTIR_MAX_RANK] = {0}; /* no components: one 0, unused */
  gboolean same = TRUE;
  for (int c = 0; c < g->nstart; c++) {
    int64_t od = g->start_index_map[c];
    hi[c] = MIN(x->dims[od] - g->slice_sizes[od], dtype_int_max(ids->dtype));
    same &= hi[c] == hi[0];
  }
  if (same || g->index_vector_dim >= ids->rank)
    return term_splat((double)hi[0], ids, err);
  int64_t dim = g->index_vector_dim;
  AttrValue at = attr_new_int(dim);
  const Term *c = term_op(
      OP_IOTA, 0, NULL, attrs_build(1, (const char *[]){"dim"}, &at), ids, err);
  const Term *limits = term_splat((double)hi[g->nstart - 1], ids, err);
  for (int k = g->nstart - 2; k >= 0 && limits; k--) {
    const Term *args[3] = {
        compare(c, term_splat((double)k, ids, err), "EQ", err),
        term_splat((double)hi[k], ids, err), limits};
    limits = args[0] && args[1]
                 ? term_op(OP_SELECT, 3, args, attrs_empty(), NULL, err)
                 : NULL;
  }
  return limits;
}

/* The gather (or scatter_add) 't''s indices clamped as gather clamps
 * them. */
static const Term *clamped_indices(const Term *t, const GatherDims *g,
                                   Diag *err) {
  const Term *ids = t->args[1];
  const Term *hi = start_limits(g, t->args[0]->type, ids->type, err);
  return term_op2(OP_MAX, term_op2(OP_MIN, ids, hi, NULL, err),
                  term_splat(0, ids->type, err), NULL, err);
}

/* Which windows of scatter_add 't' fit, as an i1 tensor of its updates'
 * shape: every start component in [0, limit], the answer spread along
 * the window dims. */
static const Term *windows_fit(const Term *t, const GatherDims *g, Diag *err) {
  const Term *ids = t->args[1];
  const Type *ut = t->args[2]->type;
  const Term *hi = start_limits(g, t->args[0]->type, ids->type, err);
  const Term *fits =
      term_op2(OP_AND, compare(ids, term_splat(0, ids->type, err), "GE", err),
               compare(ids, hi, "LE", err), NULL, err);
  if (!fits)
    return NULL;
  int64_t ivd = g->index_vector_dim;
  if (ivd < ids->type->rank)
    fits = term_op(OP_REDUCE_AND, 1, &fits, attrs_ints("dims", 1, &ivd), NULL,
                   err);
  /* the updates' batch dims, in order, are the indices' but ivd */
  int64_t at[PARTIR_MAX_RANK];
  int n = 0;
  for (int d = 0; d < ut->rank; d++)
    if (!gather_result_dim(g, d).offset)
      at[n++] = d;
  if (!fits)
    return NULL;
  return term_op(OP_BROADCAST_IN_DIM, 1, &fits, attrs_ints("dims", n, at),
                 type_tensor(DT_I1, ut->rank, ut->dims), err);
}

static const Term *vjp_gather(const Term *t, const Term *dz, Diag *err) {
  GatherDims g;
  gather_dims_of(t, &g);
  const Term *args[3] = {term_splat(0, t->args[0]->type, err),
                         clamped_indices(t, &g, err), dz};
  if (!args[0] || !args[1])
    return NULL;
  return term_op(OP_SCATTER_ADD, 3, args, scatter_attrs(&g), NULL, err);
}

static const Term *vjp_scatter_add(const Term *t, int i, const Term *dz,
                                   Diag *err) {
  if (i == 0)
    return dz;
  GatherDims g;
  gather_dims_of(t, &g);
  const Term *rows = term_op2(OP_GATHER, dz, t->args[1], gather_attrs(&g), err);
  const Term *args[3] = {windows_fit(t, &g, err), rows,
                         term_splat(0, t->args[2]->type, err)};
  if (!args[0] || !args[1] || !args[2])
    return NULL;
  return term_op(OP_SELECT, 3, args, attrs_empty(), NULL, err);
}

/* dynamic_update_slice(x, u, starts): x and u given, the starts 't''s
 * from operand 'first'. */
static const Term *update_at(const Term *t, int first, const Term *x,
                             const Term *u, Diag *err) {
  if (!x || !u)
    return NULL;
  int n = t->nargs - first;
  g_autofree const Term **args = g_new(const Term *, (gsize)n + 2);
  args[0] = x;
  args[1] = u;
  for (int k = 0; k < n; k++)
    args[2 + k] = t->args[first + k];
  return term_op(OP_DYNAMIC_UPDATE_SLICE, n + 2, args, attrs_empty(), NULL,
                 err);
}

static const Term *vjp_dynamic_slice(const Term *t, const Term *dz, Diag *err) {
  return update_at(t, 1, term_splat(0, t->args[0]->type, err), dz, err);
}

static const Term *vjp_dynamic_update_slice(const Term *t, int i,
                                            const Term *dz, Diag *err) {
  const Type *ut = t->args[1]->type;
  if (i == 0)
    return update_at(t, 2, dz, term_splat(0, ut, err), err);
  int n = t->nargs - 1;
  g_autofree const Term **args = g_new(const Term *, (gsize)n);
  args[0] = dz;
  for (int k = 1; k < n; k++)
    args[k] = t->args[k + 1];
  return term_op(OP_DYNAMIC_SLICE, n, args,
                 attrs_ints("slice_sizes", ut->rank, ut->dims), NULL, err);
}

const Term *vjp_indexing(const char *kind, const Term *t, int i, const Term *dz,
                         Diag *err) {
  if (strcmp(kind, "gather") == 0)
    return i == 0 ? vjp_gather(t, dz, err) : NULL;
  if (strcmp(kind, "scatter_add") == 0)
    return vjp_scatter_add(t, i, dz, err);
  if (strcmp(kind, "dynamic_slice") == 0)
    return i == 0 ? vjp_dynamic_slice(t, dz, err) : NULL;
  if (strcmp(kind, "dynamic_update_slice") == 0)
    return vjp_dynamic_update_slice(t, i, dz, err);
  return NULL;
}
