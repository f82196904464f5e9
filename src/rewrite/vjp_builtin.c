/* vjp_builtin.c — the vjps whose shape depends on the operator's
 * attributes (dimension numbers, permutations, offsets), named in
 * rules/grad.rules as 'vjp OP -> builtin KIND'.
 *
 * Each builds the cotangent from operators of the language alone, so a
 * derivative is an ordinary program that every later stage partitions,
 * lowers and compiles.  The identities (x the operand, z the result,
 * dz its cotangent):
 *
 *   dot          dx = transpose(dot_general(dz, y)), the contraction over
 *                y's free dimensions; dy likewise from x and dz
 *   reduce_sum   dx = broadcast_in_dim(dz) over the reduced dimensions
 *   reduce_pick  (max, min) dz goes to the elements equal to z, shared
 *                equally among ties (as JAX does)
 *   reduce_prod  dx = broadcast(dz * z) / x (x with no zero element)
 *   broadcast    dx = reduce_sum(dz) over the added and expanded
 *                dimensions, then back to x's order and shape
 *   transpose    dx = transpose(dz) by the inverse permutation
 *   reshape      dx = reshape(dz) to x's type; convert likewise
 *   slice        dx = pad(dz, 0) back to x's size (strides as interior
 *                padding)
 *   pad          dx = slice(dz) of the kept elements (zeros for cropped
 *                ones); the padding value's cotangent is the sum of the
 *                rest
 *   concatenate  each operand's dx is its slice of dz
 *
 * gather, scatter_add, dynamic_slice and dynamic_update_slice are in
 * vjp_index.c.
 */
#include "rewrite/rewrite.h"

#include <string.h>

static int64_t list_at(const Term *t, const char *key, int i, int64_t dflt) {
  const AttrValue *v = attrs_get(t->attrs, key);
  return v && i < v->count ? v->items[i].i : dflt;
}

static int list_len(const Term *t, const char *key) {
  const AttrValue *v = attrs_get(t->attrs, key);
  return v ? v->count : 0;
}

static const Term *op1(Op op, const Term *x, const Attrs *a, const Type *ty,
                       Diag *err) {
  return x ? term_op(op, 1, &x, a, ty, err) : NULL;
}

/* transpose(x) {permutation = perm}: result dimension i is x's
 * dimension perm[i]; x itself for the identity */
static const Term *permute(const Term *x, const int64_t *perm, Diag *err) {
  if (!x)
    return NULL;
  gboolean id = TRUE;
  for (int i = 0; i < x->type->rank; i++)
    id &= perm[i] == i;
  return id ? x
            : op1(OP_TRANSPOSE, x,
                  attrs_ints("permutation", x->type->rank, perm), NULL, err);
}

static int rank_in(const int64_t *xs, int n, int64_t x) {
  int r = 0;
  for (int k = 0; k < n; k++)
    r += xs[k] < x;
  return r;
}

static int find(const int64_t *xs, int n, int64_t x) {
  for (int k = 0; k < n; k++)
    if (xs[k] == x)
      return k;
  return -1;
}

typedef struct DotDims {
  int nb, nc;
  int64_t batch[2][PARTIR_MAX_RANK], contract[2][PARTIR_MAX_RANK];
  int nfree[2];
  int64_t free[2][PARTIR_MAX_RANK]; /* in dimension order */
} DotDims;

static void dot_dims(const Term *t, DotDims *d) {
  memset(d, 0, sizeof *d);
  const char *bk[2] = {"lhs_batch", "rhs_batch"};
  const char *ck[2] = {"lhs_contract", "rhs_contract"};
  d->nb = list_len(t, bk[0]);
  d->nc = list_len(t, ck[0]);
  for (int s = 0; s < 2; s++) {
    for (int k = 0; k < d->nb; k++)
      d->batch[s][k] = list_at(t, bk[s], k, 0);
    for (int k = 0; k < d->nc; k++)
      d->contract[s][k] = list_at(t, ck[s], k, 0);
    for (int i = 0; i < t->args[s]->type->rank; i++)
      if (find(d->batch[s], d->nb, i) < 0 && find(d->contract[s], d->nc, i) < 0)
        d->free[s][d->nfree[s]++] = i;
  }
}

static const Attrs *dot_attrs(int nb, const int64_t *lb, const int64_t *rb,
                              int nc, const int64_t *lc, const int64_t *rc) {
  AttrValue v[4] = {attr_new_ints(nb, lb), attr_new_ints(nb, rb),
                    attr_new_ints(nc, lc), attr_new_ints(nc, rc)};
  return attrs_build(4,
                     (const char *[]){"lhs_batch", "rhs_batch", "lhs_contract",
                                      "rhs_contract"},
                     v);
}

/* z = [batch, free of x, free of y].  The cotangent of operand s comes
 * from dz and the other operand o, contracting dz's part of o's free
 * dimensions with them; its dimensions come out as [batch, s's free, s's
 * contracted in the order of o's matching dimensions sorted], and a
 * transpose puts them back in s's order. */
static const Term *vjp_dot(const Term *t, int s, const Term *dz, Diag *err) {
  DotDims d;
  dot_dims(t, &d);
  int o = 1 - s;
  /* dz = [batch, x's free, y's free]: its batch dimensions, and where
   * o's free dimensions are in it */
  int64_t zb[PARTIR_MAX_RANK], zo[PARTIR_MAX_RANK];
  for (int k = 0; k < d.nb; k++)
    zb[k] = k;
  for (int k = 0; k < d.nfree[o]; k++)
    zo[k] = d.nb + (s == 0 ? d.nfree[0] : 0) + k;
  /* p = [batch, s's free (in order), o's contracted (in order)] */
  const Term *p =
      term_op2(OP_DOT_GENERAL, dz, t->args[o],
               dot_attrs(d.nb, zb, d.batch[o], d.nfree[o], zo, d.free[o]), err);
  if (!p)
    return NULL;
  int64_t perm[PARTIR_MAX_RANK];
  for (int i = 0; i < t->args[s]->type->rank; i++) {
    int k;
    if ((k = find(d.batch[s], d.nb, i)) >= 0)
      perm[i] = k;
    else if ((k = find(d.free[s], d.nfree[s], i)) >= 0)
      perm[i] = d.nb + k;
    else { /* contracted with o's dimension contract[o][k] */
      k = find(d.contract[s], d.nc, i);
      perm[i] =
          d.nb + d.nfree[s] + rank_in(d.contract[o], d.nc, d.contract[o][k]);
    }
  }
  return permute(p, perm, err);
}

/* broadcast_in_dim(x) over result dims not listed in 'kept' */
static const Term *broadcast_back(const Term *x, const Type *to, int nkept,
                                  const int64_t *kept, Diag *err) {
  return op1(OP_BROADCAST_IN_DIM, x, attrs_ints("dims", nkept, kept), to, err);
}

/* the dimensions a reduction keeps, in order */
static int kept_dims(const Term *t, int64_t *kept) {
  int n = 0, nred = list_len(t, "dims");
  for (int i = 0; i < t->args[0]->type->rank; i++) {
    gboolean reduced = FALSE;
    for (int k = 0; k < nred; k++)
      reduced |= list_at(t, "dims", k, -1) == i;
    if (!reduced)
      kept[n++] = i;
  }
  return n;
}

static const Term *vjp_reduce_sum(const Term *t, const Term *dz, Diag *err) {
  int64_t kept[PARTIR_MAX_RANK];
  int n = kept_dims(t, kept);
  return broadcast_back(dz, t->args[0]->type, n, kept, err);
}

/* dz * (x == z) / count(x == z) */
static const Term *vjp_reduce_pick(const Term *t, const Term *dz, Diag *err) {
  const Term *x = t->args[0];
  int64_t kept[PARTIR_MAX_RANK];
  int n = kept_dims(t, kept);
  const Term *zb = broadcast_back(t, x->type, n, kept, err);
  AttrValue eq = attr_new_symbol("EQ");
  const Term *hit =
      term_op2(OP_COMPARE, x, zb,
               attrs_build(1, (const char *[]){"direction"}, &eq), err);
  const Term *one = op1(OP_CONVERT, hit, attrs_empty(), x->type, err);
  const Term *count = op1(OP_REDUCE_SUM, one, t->attrs, t->type, err);
  const Term *share = term_op2(OP_DIV, dz, count, NULL, err);
  return term_op2(OP_MUL, one, broadcast_back(share, x->type, n, kept, err),
                  NULL, err);
}

static const Term *vjp_reduce_prod(const Term *t, const Term *dz, Diag *err) {
  const Term *x = t->args[0];
  int64_t kept[PARTIR_MAX_RANK];
  int n = kept_dims(t, kept);
  const Term *p = term_op2(OP_MUL, dz, t, NULL, err);
  return term_op2(OP_DIV, broadcast_back(p, x->type, n, kept, err), x, NULL,
                  err);
}

/* reduce_sum over the dimensions broadcast added or expanded, then the
 * kept ones into x's order, then x's shape (its size-1 dimensions) */
static const Term *vjp_broadcast(const Term *t, const Term *dz, Diag *err) {
  const Type *xt = t->args[0]->type;
  int rank = t->type->rank;
  int64_t red[PARTIR_MAX_RANK], left[PARTIR_MAX_RANK], from[PARTIR_MAX_RANK];
  int nred = 0, nleft = 0;
  for (int r = 0; r < rank; r++) {
    int i = -1;
    for (int k = 0; k < xt->rank; k++)
      if (list_at(t, "dims", k, -1) == r)
        i = k;
    if (i < 0 || xt->dims[i] != t->type->dims[r])
      red[nred++] = r;
    else
      from[nleft] = i, left[nleft++] = r;
  }
  const Term *s = dz;
  if (nred > 0) {
    int64_t dims[PARTIR_MAX_RANK];
    for (int k = 0; k < nleft; k++)
      dims[k] = t->type->dims[left[k]];
    s = op1(OP_REDUCE_SUM, dz, attrs_ints("dims", nred, red),
            type_tensor(xt->dtype, nleft, dims), err);
  }
  /* s's dimension j is x's dimension from[j]; x's order takes them by
   * increasing from[j] */
  int64_t perm[PARTIR_MAX_RANK];
  for (int j = 0; j < nleft; j++)
    perm[rank_in(from, nleft, from[j])] = j;
  s = permute(s, perm, err);
  if (s && s->type != xt)
    s = op1(OP_RESHAPE, s, attrs_empty(), xt, err);
  return s;
}

static const Term *vjp_transpose(const Term *t, const Term *dz, Diag *err) {
  int rank = t->type->rank;
  int64_t inv[PARTIR_MAX_RANK];
  for (int i = 0; i < rank; i++)
    inv[list_at(t, "permutation", i, i)] = i;
  return permute(dz, inv, err);
}

static const Term *vjp_slice(const Term *t, const Term *dz, Diag *err) {
  const Type *xt = t->args[0]->type;
  int rank = xt->rank;
  int64_t low[PARTIR_MAX_RANK], high[PARTIR_MAX_RANK], in[PARTIR_MAX_RANK];
  for (int d = 0; d < rank; d++) {
    int64_t start = list_at(t, "start", d, 0);
    int64_t stride = list_at(t, "strides", d, 1);
    int64_t n = t->type->dims[d];
    low[d] = start;
    in[d] = n > 0 ? stride - 1 : 0;
    high[d] = xt->dims[d] - (n > 0 ? start + (n - 1) * stride + 1 : start);
  }
  AttrValue v[3] = {attr_new_ints(rank, low), attr_new_ints(rank, high),
                    attr_new_ints(rank, in)};
  const Attrs *a =
      attrs_build(3, (const char *[]){"low", "high", "interior"}, v);
  const Type *scalar = type_tensor(xt->dtype, 0, NULL);
  return term_op2(OP_PAD, dz, term_splat(0, scalar, err), a, err);
}

/* x's element j of dimension d is dz's at low + j (interior + 1).  A
 * negative low or high crops: dz is first padded back with zeros there,
 * so every element of x has a place (the cropped ones get 0). */
static const Term *vjp_pad(const Term *t, int i, const Term *dz, Diag *err) {
  const Type *xt = t->args[0]->type;
  int rank = xt->rank;
  int64_t start[PARTIR_MAX_RANK], limit[PARTIR_MAX_RANK], step[PARTIR_MAX_RANK];
  int64_t back_lo[PARTIR_MAX_RANK], back_hi[PARTIR_MAX_RANK],
      none[PARTIR_MAX_RANK] = {0};
  gboolean cropped = FALSE;
  for (int d = 0; d < rank; d++) {
    int64_t low = list_at(t, "low", d, 0), high = list_at(t, "high", d, 0);
    back_lo[d] = MAX(-low, 0);
    back_hi[d] = MAX(-high, 0);
    cropped |= low < 0 || high < 0;
    step[d] = list_at(t, "interior", d, 0) + 1;
    start[d] = MAX(low, 0);
    limit[d] =
        xt->dims[d] > 0 ? start[d] + (xt->dims[d] - 1) * step[d] + 1 : start[d];
  }
  const Term *whole = dz;
  if (cropped) {
    AttrValue v[3] = {attr_new_ints(rank, back_lo),
                      attr_new_ints(rank, back_hi), attr_new_ints(rank, none)};
    whole = term_op2(
        OP_PAD, dz, term_splat(0, type_tensor(xt->dtype, 0, NULL), err),
        attrs_build(3, (const char *[]){"low", "high", "interior"}, v), err);
  }
  AttrValue v[3] = {attr_new_ints(rank, start), attr_new_ints(rank, limit),
                    attr_new_ints(rank, step)};
  const Term *dx =
      op1(OP_SLICE, whole,
          attrs_build(3, (const char *[]){"start", "limit", "strides"}, v),
          NULL, err);
  if (i == 0 || !dx)
    return dx;
  /* the padding value: every element of dz that is not x's */
  int64_t all[PARTIR_MAX_RANK];
  for (int d = 0; d < rank; d++)
    all[d] = d;
  const Type *scalar = t->args[1]->type;
  const Attrs *a = attrs_ints("dims", rank, all);
  return term_op2(OP_SUB, op1(OP_REDUCE_SUM, dz, a, scalar, err),
                  op1(OP_REDUCE_SUM, dx, a, scalar, err), NULL, err);
}

static const Term *vjp_concatenate(const Term *t, int i, const Term *dz,
                                   Diag *err) {
  int dim = (int)attrs_get_int(t->attrs, "dim");
  int rank = t->type->rank;
  int64_t start[PARTIR_MAX_RANK] = {0}, limit[PARTIR_MAX_RANK];
  for (int d = 0; d < rank; d++)
    limit[d] = t->type->dims[d];
  for (int k = 0; k < i; k++)
    start[dim] += t->args[k]->type->dims[dim];
  limit[dim] = start[dim] + t->args[i]->type->dims[dim];
  AttrValue v[2] = {attr_new_ints(rank, start), attr_new_ints(rank, limit)};
  return op1(OP_SLICE, dz,
             attrs_build(2, (const char *[]){"start", "limit"}, v), NULL, err);
}

static const struct {
  const char *kind;
  Op ops[6];
  int nops;
} kinds[] = {
    {"dot", {OP_DOT_GENERAL}, 1},
    {"reduce_sum", {OP_REDUCE_SUM}, 1},
    {"reduce_pick", {OP_REDUCE_MAX, OP_REDUCE_MIN}, 2},
    {"reduce_prod", {OP_REDUCE_PROD}, 1},
    {"broadcast", {OP_BROADCAST_IN_DIM}, 1},
    {"transpose", {OP_TRANSPOSE}, 1},
    {"retype", {OP_RESHAPE, OP_CONVERT}, 2},
    {"slice", {OP_SLICE}, 1},
    {"pad", {OP_PAD}, 1},
    {"concatenate", {OP_CONCATENATE}, 1},
    {"gather", {OP_GATHER}, 1},
    {"scatter_add", {OP_SCATTER_ADD}, 1},
    {"dynamic_slice", {OP_DYNAMIC_SLICE}, 1},
    {"dynamic_update_slice", {OP_DYNAMIC_UPDATE_SLICE}, 1},
};

gboolean vjp_builtin_known(const char *kind, Op op, Diag *why) {
  for (gsize i = 0; i < G_N_ELEMENTS(kinds); i++) {
    if (strcmp(kinds[i].kind, kind) != 0)
      continue;
    for (int k = 0; k < kinds[i].nops; k++)
      if (kinds[i].ops[k] == op)
        return TRUE;
    diag_reason(why, "builtin vjp '%s' does not apply to '%s'", kind,
                op_name(op));
    return FALSE;
  }
  diag_reason(why, "unknown builtin vjp '%s'", kind);
  return FALSE;
}

const Term *vjp_builtin(const char *kind, const Term *t, int i, const Term *dz,
                        Diag *err) {
  if (strcmp(kind, "dot") == 0)
    return vjp_dot(t, i, dz, err);
  if (strcmp(kind, "concatenate") == 0)
    return vjp_concatenate(t, i, dz, err);
  if (strcmp(kind, "pad") == 0)
    return vjp_pad(t, i, dz, err);
  if (strcmp(kind, "gather") == 0 || strcmp(kind, "scatter_add") == 0 ||
      strcmp(kind, "dynamic_slice") == 0 ||
      strcmp(kind, "dynamic_update_slice") == 0)
    return vjp_indexing(kind, t, i, dz, err);
  if (i != 0)
    return NULL;
  if (strcmp(kind, "reduce_sum") == 0)
    return vjp_reduce_sum(t, dz, err);
  if (strcmp(kind, "reduce_pick") == 0)
    return vjp_reduce_pick(t, dz, err);
  if (strcmp(kind, "reduce_prod") == 0)
    return vjp_reduce_prod(t, dz, err);
  if (strcmp(kind, "broadcast") == 0)
    return vjp_broadcast(t, dz, err);
  if (strcmp(kind, "transpose") == 0)
    return vjp_transpose(t, dz, err);
  if (strcmp(kind, "retype") == 0)
    return op1(t->op, dz, t->op == OP_CONVERT ? attrs_empty() : t->attrs,
               t->args[0]->type, err);
  if (strcmp(kind, "slice") == 0)
    return vjp_slice(t, dz, err);
  diag_reason(err, "unknown builtin vjp '%s'", kind);
  return NULL;
}
