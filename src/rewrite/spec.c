/* spec.c — the tiling specification of one operator application.
 *
 * Rule files declare, per operator, how its result dimensions relate to
 * its operands' ('op matmul(x[i,k], y[k,j]) -> [i,j]').  For operators
 * whose relation depends on attributes (dot_general's batch and
 * contracting dims, a reduction's dims, a permutation ...) the file names
 * a builtin kind and the mapping is computed here.  From a TileSpec the
 * engine derives the tiling rules (apply.c): a result dimension d that
 * is 'out_ok' can be tiled by slicing each operand along out[d][i]; a
 * reduction index k becomes a partir.sum over slices along red[k][i].
 * The operand dimension has the result dimension's size, except through
 * a reshape that splits or merges it: a slice takes part r of whatever it
 * cuts (term_slice), so tiles of both carry as the same number of parts,
 * where that number divides both sizes; an uneven range's split (its last
 * part padded) carries only to dimensions of its own size.
 */
#include "rewrite/rewrite.h"

#include <string.h>

/* Each builtin kind reads its operator's attributes, so it serves only
 * the operators that have them. */
static const struct {
  const char *kind;
  Op ops[5];
  int nops;
} builtin_kinds[] = {
    {"dot", {OP_MATMUL, OP_DOT_GENERAL}, 2},
    {"reduce_sum", {OP_REDUCE_SUM}, 1},
    {"reduce_max", {OP_REDUCE_MAX}, 1},
    {"reduce_kept",
     {OP_REDUCE_MAX, OP_REDUCE_MIN, OP_REDUCE_PROD, OP_REDUCE_AND,
      OP_REDUCE_OR},
     5},
    {"pad", {OP_PAD}, 1},
    {"broadcast", {OP_BROADCAST_IN_DIM}, 1},
    {"transpose", {OP_TRANSPOSE}, 1},
    {"reshape", {OP_RESHAPE}, 1},
    {"concatenate", {OP_CONCATENATE}, 1},
    {"static_slice", {OP_SLICE}, 1},
    {"gather", {OP_GATHER}, 1},
    {"dynamic_slice", {OP_DYNAMIC_SLICE}, 1},
    {"scatter_add", {OP_SCATTER_ADD}, 1},
    {"dynamic_update_slice", {OP_DYNAMIC_UPDATE_SLICE}, 1},
};

gboolean spec_builtin_known(const char *kind, Op op, Diag *why) {
  for (gsize i = 0; i < G_N_ELEMENTS(builtin_kinds); i++) {
    if (strcmp(builtin_kinds[i].kind, kind) != 0)
      continue;
    for (int k = 0; k < builtin_kinds[i].nops; k++)
      if (builtin_kinds[i].ops[k] == op)
        return TRUE;
    diag_reason(why, "builtin tiling kind '%s' does not apply to '%s'", kind,
                op_name(op));
    return FALSE;
  }
  diag_reason(why, "unknown builtin tiling kind '%s'", kind);
  return FALSE;
}

static void spec_clear(TileSpec *s, const Term *t) {
  memset(s, 0, sizeof *s);
  s->nout = t->type->rank;
  for (int d = 0; d < PARTIR_MAX_RANK; d++)
    for (int i = 0; i < SPEC_MAX_OPERANDS; i++)
      s->out[d][i] = s->red[d][i] = -1;
}

static void list_attr(const Term *t, const char *key, int64_t *out, int *n) {
  const AttrValue *v = attrs_get(t->attrs, key);
  *n = 0;
  for (int i = 0; v && i < v->count && i < PARTIR_MAX_RANK; i++)
    out[(*n)++] = v->items[i].i;
}

static int find(const int64_t *xs, int n, int64_t x) {
  for (int i = 0; i < n; i++)
    if (xs[i] == x)
      return i;
  return -1;
}

static void spec_dot(const Term *t, TileSpec *s) {
  int64_t lb[PARTIR_MAX_RANK], rb[PARTIR_MAX_RANK], lc[PARTIR_MAX_RANK],
      rc[PARTIR_MAX_RANK];
  int nlb, nrb, nlc, nrc;
  if (t->op == OP_MATMUL) {
    nlb = nrb = 0;
    nlc = nrc = 1;
    lc[0] = 1;
    rc[0] = 0;
  } else {
    list_attr(t, "lhs_batch", lb, &nlb);
    list_attr(t, "rhs_batch", rb, &nrb);
    list_attr(t, "lhs_contract", lc, &nlc);
    list_attr(t, "rhs_contract", rc, &nrc);
  }
  int d = 0;
  for (int i = 0; i < nlb; i++, d++) {
    s->out[d][0] = (int)lb[i];
    s->out[d][1] = (int)rb[i];
  }
  int ra = t->args[0]->type->rank, rbk = t->args[1]->type->rank;
  for (int i = 0; i < ra; i++)
    if (find(lb, nlb, i) < 0 && find(lc, nlc, i) < 0)
      s->out[d++][0] = i;
  for (int i = 0; i < rbk; i++)
    if (find(rb, nrb, i) < 0 && find(rc, nrc, i) < 0)
      s->out[d++][1] = i;
  for (int k = 0; k < d; k++)
    s->out_ok[k] = TRUE;
  s->nred = nlc;
  for (int k = 0; k < nlc; k++) {
    s->red[k][0] = (int)lc[k];
    s->red[k][1] = (int)rc[k];
  }
}

static void spec_reduce(const Term *t, TileSpec *s, gboolean sum) {
  int64_t dims[PARTIR_MAX_RANK];
  int n;
  list_attr(t, "dims", dims, &n);
  int d = 0;
  for (int i = 0; i < t->args[0]->type->rank; i++) {
    if (find(dims, n, i) >= 0) {
      if (sum)
        s->red[s->nred++][0] = i; /* max over parts is not a sum: no rule */
      continue;
    }
    s->out_ok[d] = TRUE;
    s->out[d++][0] = i;
  }
}

static void spec_broadcast(const Term *t, TileSpec *s) {
  int64_t dims[PARTIR_MAX_RANK];
  int n;
  list_attr(t, "dims", dims, &n);
  const Type *a = t->args[0]->type;
  for (int d = 0; d < s->nout; d++) {
    s->out_ok[d] = TRUE;
    int j = find(dims, n, d);
    /* a broadcast (size-1) operand dim is not sliced */
    if (j >= 0 && a->dims[j] == t->type->dims[d])
      s->out[d][0] = j;
  }
}

static void spec_transpose(const Term *t, TileSpec *s) {
  int64_t perm[PARTIR_MAX_RANK];
  int n;
  list_attr(t, "permutation", perm, &n);
  for (int d = 0; d < n; d++) {
    s->out_ok[d] = TRUE;
    s->out[d][0] = (int)perm[d];
  }
}

/* Result dim d of a reshape carries operand dim j when both have the
 * same number of elements before them (row-major), whatever their sizes.
 * Then for every p below that number, the elements under index p of
 * the dims before are one contiguous block in both, and part k of c
 * parts of dim d is part k of c of that block, which is part k of c of
 * dim j: slicing commutes with the reshape for any c that divides both
 * sizes.  That is how a split moves through a reshape that splits or
 * merges dimensions: columns 128 = heads 4 x 32 (dim 1 of 16x128 and
 * dim 1 of 16x4x32 have 16 elements before them) in 2 parts are heads
 * in 2 parts; [B,S] -> [B*S] carries parts of B to parts of B*S.  A
 * minor dim (32 above) has more elements before it than any operand dim
 * and carries nothing, unless the dims before it are all of size 1.
 * Among the operand dims with a given number before them at most one
 * has a size above 1 (the next has more before it): a result dim above
 * 1 maps to that one; one of size 1 only to one of size 1, as before. */
static void spec_reshape(const Term *t, TileSpec *s) {
  const Type *a = t->args[0]->type, *r = t->type;
  int64_t before_r = 1;
  for (int d = 0; d < r->rank; d++) {
    int64_t before_a = 1;
    for (int j = 0; j < a->rank && before_a <= before_r; j++) {
      if (before_a == before_r && (a->dims[j] > 1) == (r->dims[d] > 1)) {
        s->out_ok[d] = TRUE;
        s->out[d][0] = j;
        break;
      }
      before_a *= a->dims[j];
    }
    before_r *= r->dims[d];
  }
}

static void spec_concatenate(const Term *t, TileSpec *s) {
  int64_t dim = attrs_get(t->attrs, "dim")->i;
  for (int d = 0; d < s->nout; d++) {
    if (d == dim)
      continue;
    s->out_ok[d] = TRUE;
    for (int i = 0; i < t->nargs; i++)
      s->out[d][i] = d;
  }
}

/* Only dimensions pad leaves alone (no low, high or interior padding)
 * can be tiled; the padding value is a scalar, never sliced. */
static void spec_pad(const Term *t, TileSpec *s) {
  int64_t low[PARTIR_MAX_RANK], high[PARTIR_MAX_RANK],
      interior[PARTIR_MAX_RANK] = {0};
  int n, m, k;
  list_attr(t, "low", low, &n);
  list_attr(t, "high", high, &m);
  list_attr(t, "interior", interior, &k);
  for (int d = 0; d < s->nout; d++) {
    if (low[d] == 0 && high[d] == 0 && interior[d] == 0) {
      s->out_ok[d] = TRUE;
      s->out[d][0] = d;
    }
  }
}

/* Only dimensions the static slice takes whole can be tiled. */
static void spec_static_slice(const Term *t, TileSpec *s) {
  int64_t start[PARTIR_MAX_RANK], limit[PARTIR_MAX_RANK],
      strides[PARTIR_MAX_RANK];
  int n, m, k;
  list_attr(t, "start", start, &n);
  list_attr(t, "limit", limit, &m);
  list_attr(t, "strides", strides, &k);
  for (int d = 0; d < s->nout; d++) {
    if (start[d] == 0 && limit[d] == t->args[0]->type->dims[d] &&
        (k == 0 || strides[d] == 1)) {
      s->out_ok[d] = TRUE;
      s->out[d][0] = d;
    }
  }
}

/* A gather's batch dims are the indices' (and a batching dim the
 * operand's too); an offset dim over a whole operand dim is that dim.
 * A lookup's table rows are a reduction: the sum of masked lookups on
 * the parts (lookup.c). */
static void spec_gather(const Term *t, TileSpec *s) {
  GatherDims g;
  gather_dims_of(t, &g);
  const Type *x = t->args[0]->type;
  for (int d = 0; d < s->nout; d++) {
    GatherDim m = gather_result_dim(&g, d);
    if (m.offset && g.slice_sizes[m.operand] != x->dims[m.operand])
      continue; /* a part of the dim: its start comes from the indices */
    s->out_ok[d] = TRUE;
    s->out[d][0] = m.operand;
    if (!m.offset)
      s->out[d][1] = m.indices;
  }
  int v = lookup_dim(t);
  if (v >= 0) {
    s->red[0][0] = v;
    s->red_masked[0] = TRUE;
    s->nred = 1;
  }
}

/* Only the dimensions the slice takes whole (its start is then 0). */
static void spec_dynamic_slice(const Term *t, TileSpec *s) {
  for (int d = 0; d < s->nout; d++)
    if (t->type->dims[d] == t->args[0]->type->dims[d]) {
      s->out_ok[d] = TRUE;
      s->out[d][0] = d;
    }
}

/* Whether every element of 't' is 0 (the start of a gradient's
 * scatter): a constant 0 of any type, or one broadcast, reshaped,
 * transposed or converted, as exporters write it (JAX's zeros are a
 * broadcast_in_dim of a scalar 0). */
static gboolean all_zero(const Term *t) {
  for (; t->kind == TM_OP; t = t->args[0])
    switch (t->op) {
    case OP_CONSTANT: {
      const AttrValue *v = attrs_get(t->attrs, "value");
      return v && ((v->kind == AV_INT && v->i == 0) ||
                   (v->kind == AV_FLOAT && v->f == 0));
    }
    case OP_BROADCAST_IN_DIM:
    case OP_RESHAPE:
    case OP_TRANSPOSE:
    case OP_CONVERT:
      continue;
    default:
      return FALSE;
    }
  return FALSE;
}

/* scatter_add(x, ids, u): result dim d is x's; a batching dim is the
 * indices' and the updates' too, a window dim over the whole of d the
 * updates' (its start is then 0 or the window is left out, on a part
 * as on the whole).  The updates' other batch dims are a reduction when
 * x is zero: the scatter of all updates is the sum of the scatters of
 * their parts (each part's into zeros; a nonzero x would be added once
 * per part).  That sum is what splits an embedding's gradient over the
 * batch. */
static void spec_scatter_add(const Term *t, TileSpec *s) {
  GatherDims g;
  gather_dims_of(t, &g);
  const Type *x = t->args[0]->type, *u = t->args[2]->type;
  for (int d = 0; d < u->rank; d++) {
    GatherDim m = gather_result_dim(&g, d);
    if (m.operand >= 0 &&
        (!m.offset || g.slice_sizes[m.operand] == x->dims[m.operand])) {
      s->out_ok[m.operand] = TRUE;
      s->out[m.operand][0] = m.operand;
      s->out[m.operand][1] = m.indices;
      s->out[m.operand][2] = d;
    } else if (!m.offset && all_zero(t->args[0])) {
      s->red[s->nred][1] = m.indices;
      s->red[s->nred++][2] = d;
    }
  }
}

/* The dimensions the update covers whole (its start is then 0). */
static void spec_dynamic_update_slice(const Term *t, TileSpec *s) {
  for (int d = 0; d < s->nout; d++)
    if (t->args[1]->type->dims[d] == t->type->dims[d]) {
      s->out_ok[d] = TRUE;
      s->out[d][0] = s->out[d][1] = d;
    }
}

int64_t spec_width_for_parts(const Term *t, int d, const Type *range) {
  int64_t size = t->type->dims[d];
  /* an uneven range's padding sits at the end of a dimension of its
   * size: it carries only to a dimension of that size */
  if (!type_range_even(range) && size != range->n)
    return 0;
  return type_range_cut(range, size);
}

gboolean spec_of(const RuleSet *rs, const Term *t, TileSpec *s) {
  if (t->kind != TM_OP || !rs->specs[t->op])
    return FALSE;
  const OpSpec *os = rs->specs[t->op];
  spec_clear(s, t);
  if (t->nargs > SPEC_MAX_OPERANDS)
    return FALSE;
  switch (os->kind) {
  case SPEC_ELEMENTWISE:
    for (int d = 0; d < s->nout; d++) {
      s->out_ok[d] = TRUE;
      for (int i = 0; i < t->nargs; i++)
        s->out[d][i] = d;
    }
    return TRUE;
  case SPEC_INDEXED:
    if (os->nargs != t->nargs || os->out_rank != t->type->rank)
      return FALSE;
    for (int i = 0; i < t->nargs; i++)
      if (os->arg_rank[i] != t->args[i]->type->rank)
        return FALSE;
    for (int x = 0; x < os->nindices; x++) {
      int d = -1;
      for (int k = 0; k < os->out_rank; k++)
        if (os->out_index[k] == x)
          d = k;
      int *row = d >= 0 ? s->out[d] : s->red[s->nred];
      for (int i = 0; i < t->nargs; i++)
        for (int j = 0; j < os->arg_rank[i]; j++)
          if (os->arg_index[i][j] == x)
            row[i] = j;
      if (d >= 0)
        s->out_ok[d] = TRUE;
      else
        s->nred++;
    }
    return TRUE;
  case SPEC_BUILTIN:
    if (strcmp(os->builtin, "dot") == 0)
      spec_dot(t, s);
    else if (strcmp(os->builtin, "reduce_sum") == 0)
      spec_reduce(t, s, TRUE);
    else if (strcmp(os->builtin, "reduce_max") == 0 ||
             strcmp(os->builtin, "reduce_kept") == 0)
      spec_reduce(t, s, FALSE);
    else if (strcmp(os->builtin, "pad") == 0)
      spec_pad(t, s);
    else if (strcmp(os->builtin, "broadcast") == 0)
      spec_broadcast(t, s);
    else if (strcmp(os->builtin, "transpose") == 0)
      spec_transpose(t, s);
    else if (strcmp(os->builtin, "reshape") == 0)
      spec_reshape(t, s);
    else if (strcmp(os->builtin, "concatenate") == 0)
      spec_concatenate(t, s);
    else if (strcmp(os->builtin, "static_slice") == 0)
      spec_static_slice(t, s);
    else if (strcmp(os->builtin, "gather") == 0)
      spec_gather(t, s);
    else if (strcmp(os->builtin, "dynamic_slice") == 0)
      spec_dynamic_slice(t, s);
    else if (strcmp(os->builtin, "scatter_add") == 0)
      spec_scatter_add(t, s);
    else if (strcmp(os->builtin, "dynamic_update_slice") == 0)
      spec_dynamic_update_slice(t, s);
    return TRUE;
  }
  return FALSE;
}
