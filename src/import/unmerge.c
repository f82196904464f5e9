/* unmerge.c — reshapes that merge dimensions, taken apart.
 *
 * PyTorch/XLA writes its tensors' views as reshapes.  Attention runs on
 * [seq, batch * heads, head_dim]: a view that merges the batch with the
 * heads, which the projection keeps apart ([seq, batch, heads * hd] ->
 * [seq, batch * heads, hd]).  Every nn.Linear runs on [seq * batch, d].
 * A split of the heads (Megatron) or of the batch of a sequence-first
 * layout cuts the inner factor of such a merged dimension, whose parts
 * are not one part of it (batch b, head h is element b * heads + h): no
 * tile crosses that reshape, and the whole is gathered on every device.
 *
 * Here a reshape that merges dimensions gives its value at the common
 * refinement of its operand's and result's shapes ([seq, batch, heads,
 * hd]: every boundary of either's row-major groups), and so does each
 * value computed from it whose operator takes each group of fine
 * dimensions as one dimension (elementwise operators, transposes that
 * move groups whole, broadcasts, reductions, products batched over
 * whole groups or keeping them free); it is the reshape of that value
 * back to its own shape where anything else uses it, and a reshape of
 * it is a reshape of the fine value.  Reshapes are row-major
 * relabellings, so every rebuilt value holds the same elements as the
 * one it replaces.  A program with no merging reshape is left as it is.
 */
#include "import/import.h"

#include <string.h>

#define MAX_FINE PARTIR_MAX_RANK

/* A value rebuilt: itself, and maybe the same elements in a finer
 * shape, each of its dimensions d the fine dimensions
 * [first[d], first[d + 1]). */
typedef struct Fine {
  const Term *plain;
  const Term *fine; /* or NULL */
  int first[PARTIR_MAX_RANK + 1];
} Fine;

typedef struct Unmerge {
  GHashTable *done; /* Term -> Fine* */
  Diag *err;
} Unmerge;

/* 'x' at 'type' (a reshape; none where it has it, the reshape of a
 * reshape as one). */
static const Term *reshaped(Unmerge *u, const Term *x, const Type *type) {
  if (x->type == type)
    return x;
  if (x->kind == TM_OP && x->op == OP_RESHAPE)
    x = x->args[0];
  if (x->type == type)
    return x;
  return term_op(OP_RESHAPE, 1, &x, attrs_empty(), type, u->err);
}

/* The dimensions of 'a' and 'b' (the same element count) but those of
 * size 1 cut at every boundary of either's row-major groups: their
 * common refinement, in 'f' (its count returned; -1 where two
 * boundaries do not divide, 6 x 4 and 4 x 6). */
static int common_refinement(const Type *a, const Type *b, int64_t *f) {
  int64_t bound[2 * PARTIR_MAX_RANK];
  int nb = 0;
  int64_t p = 1;
  for (int i = 0; i < a->rank; i++)
    bound[nb++] = p *= a->dims[i];
  p = 1;
  for (int i = 0; i < b->rank; i++)
    bound[nb++] = p *= b->dims[i];
  for (int i = 1; i < nb; i++)
    for (int j = i; j > 0 && bound[j] < bound[j - 1]; j--) {
      int64_t s = bound[j];
      bound[j] = bound[j - 1];
      bound[j - 1] = s;
    }
  int n = 0;
  int64_t prev = 1;
  for (int i = 0; i < nb; i++) {
    if (bound[i] == prev)
      continue;
    if (bound[i] % prev != 0 || n == MAX_FINE)
      return -1;
    f[n++] = bound[i] / prev;
    prev = bound[i];
  }
  return n;
}

static int non_unit(const Type *t) {
  int n = 0;
  for (int i = 0; i < t->rank; i++)
    n += t->dims[i] != 1;
  return n;
}

/* Shape 't' cut as 'f' cuts it (dimensions of size 1 kept in place):
 * the fine shape in 'dims' (its rank returned, -1 where 'f' does not
 * cut t's dimensions whole or is too long), t's dimension d the fine
 * ones [first[d], first[d + 1]). */
static int cut(const Type *t, const int64_t *f, int nf, int64_t *dims,
               int *first) {
  int n = 0, k = 0;
  for (int d = 0; d < t->rank; d++) {
    first[d] = n;
    int64_t need = t->dims[d];
    if (need == 1) {
      if (n == MAX_FINE)
        return -1;
      dims[n++] = 1;
      continue;
    }
    while (need > 1) {
      if (k == nf || need % f[k] != 0 || n == MAX_FINE)
        return -1;
      need /= f[k];
      dims[n++] = f[k++];
    }
  }
  first[t->rank] = n;
  return k == nf ? n : -1;
}

/* ------------------------------------------------------------ values */

static Fine *fine_new(const Term *plain) {
  Fine *v = g_new0(Fine, 1);
  v->plain = plain;
  return v;
}

/* Value 'fine', whose fine dimensions group as 'first' into 'type''s:
 * recorded, with 'type' itself its reshape. */
static Fine *fine_value(Unmerge *u, const Term *fine, const Type *type,
                        const int *first) {
  const Term *plain = fine ? reshaped(u, fine, type) : NULL;
  if (!plain)
    return NULL;
  Fine *v = fine_new(plain);
  v->fine = fine;
  memcpy(v->first, first, sizeof(int) * (gsize)(type->rank + 1));
  return v;
}

/* The sizes of the fine dimensions of v's dimension d (a value without
 * a fine form: the dimension itself). */
static int group(const Fine *v, int d, int64_t *sizes) {
  if (!v->fine) {
    sizes[0] = v->plain->type->dims[d];
    return 1;
  }
  int n = v->first[d + 1] - v->first[d];
  for (int k = 0; k < n; k++)
    sizes[k] = v->fine->type->dims[v->first[d] + k];
  return n;
}

static gboolean same_groups(const Fine *a, const Fine *b) {
  const Type *ta = a->fine->type, *tb = b->fine->type;
  if (ta->rank != tb->rank)
    return FALSE;
  for (int d = 0; d <= a->plain->type->rank; d++)
    if (a->first[d] != b->first[d])
      return FALSE;
  for (int k = 0; k < ta->rank; k++)
    if (ta->dims[k] != tb->dims[k])
      return FALSE;
  return TRUE;
}

/* ------------------------------------------------------------ operators */

/* reshape(x): where it merges dimensions, its value at the common
 * refinement. */
static Fine *unmerge_reshape(Unmerge *u, const Term *t, const Fine *x) {
  const Term *src = x->fine ? x->fine : x->plain;
  int64_t f[MAX_FINE], dims[MAX_FINE];
  int first[PARTIR_MAX_RANK + 1];
  int nf = common_refinement(x->plain->type, t->type, f);
  gboolean regroups = nf > non_unit(t->type);
  if (regroups && x->fine) /* cut what the operand's fine form cuts too */
    nf = common_refinement(src->type, t->type, f);
  int n = regroups && nf > 0 ? cut(t->type, f, nf, dims, first) : -1;
  if (n < 0)
    return fine_new(reshaped(u, src, t->type));
  const Term *fine = reshaped(u, src, type_tensor(t->type->dtype, n, dims));
  return fine_value(u, fine, t->type, first);
}

/* broadcast_in_dim 'x' made at shape 'want', whose fine dimensions
 * group as 'first' into x's: each operand dimension cut as the group it
 * lands in (one of size 1 into as many of size 1), so a bias added to
 * [seq x batch, d] is added to [seq, batch, d] without a reshape of the
 * broadcast (which a split of the batch could not cross). */
static const Term *broadcast_at(Unmerge *u, const Term *x, const Type *want,
                                const int *first) {
  const AttrValue *dims = attrs_get(x->attrs, "dims");
  const Type *ot = x->args[0]->type;
  int64_t shape[MAX_FINE], fd[MAX_FINE];
  int n = 0;
  for (int i = 0; i < dims->count; i++) {
    int r = (int)dims->items[i].i;
    for (int k = first[r]; k < first[r + 1]; k++) {
      if (n == MAX_FINE)
        return NULL;
      fd[n] = k;
      shape[n++] = ot->dims[i] == 1 ? 1 : want->dims[k];
    }
    if (ot->dims[i] != 1 && ot->dims[i] != x->type->dims[r])
      return NULL;
  }
  const Term *op = reshaped(u, x->args[0], type_tensor(ot->dtype, n, shape));
  return op ? term_op(OP_BROADCAST_IN_DIM, 1, &op, attrs_ints("dims", n, fd),
                      want, u->err)
            : NULL;
}

/* 'x' at shape 'want' (its elements' count), whose fine dimensions
 * group as 'first' into x's: a splat constant or a broadcast made at
 * that shape, anything else reshaped. */
static const Term *at_shape(Unmerge *u, const Term *x, const Type *want,
                            const int *first) {
  const AttrValue *v = x->kind == TM_OP && x->op == OP_CONSTANT
                           ? attrs_get(x->attrs, "value")
                           : NULL;
  if (v && v->kind != AV_LIST)
    return term_op(OP_CONSTANT, 0, NULL, x->attrs, want, u->err);
  if (x->kind == TM_OP && x->op == OP_BROADCAST_IN_DIM) {
    const Term *b = broadcast_at(u, x, want, first);
    if (b)
      return b;
  }
  return reshaped(u, x, want);
}

/* An elementwise operator: at the fine shape of its fine operands (all
 * cut alike), the others reshaped to it. */
static Fine *unmerge_elementwise(Unmerge *u, const Term *t, Fine **x) {
  const Fine *like = NULL;
  for (int i = 0; i < t->nargs; i++)
    if (x[i]->fine && x[i]->plain->type->rank == t->type->rank) {
      if (like && !same_groups(like, x[i]))
        return NULL;
      like = like ? like : x[i];
    }
  if (!like)
    return NULL;
  const Type *shape = like->fine->type;
  const Term *args[3];
  for (int i = 0; i < t->nargs; i++) {
    const Type *want = type_with_dtype(shape, x[i]->plain->type->dtype);
    args[i] = x[i]->fine && x[i]->fine->type == want
                  ? x[i]->fine
                  : at_shape(u, x[i]->plain, want, like->first);
    if (!args[i])
      return NULL;
  }
  const Type *written = op_takes_written_type(t->op)
                            ? type_with_dtype(shape, t->type->dtype)
                            : NULL;
  const Term *fine = term_op(t->op, t->nargs, args, t->attrs, written, u->err);
  return fine_value(u, fine, t->type, like->first);
}

/* transpose(x): moving whole groups, the fine dimensions' transpose. */
static Fine *unmerge_transpose(Unmerge *u, const Term *t, const Fine *x) {
  const AttrValue *perm = attrs_get(t->attrs, "permutation");
  int64_t fp[MAX_FINE];
  int first[PARTIR_MAX_RANK + 1], n = 0;
  for (int d = 0; d < perm->count; d++) {
    int from = (int)perm->items[d].i;
    first[d] = n;
    for (int k = x->first[from]; k < x->first[from + 1]; k++)
      fp[n++] = k;
  }
  first[perm->count] = n;
  const Attrs *a = attrs_ints("permutation", n, fp);
  const Term *fine = term_op(OP_TRANSPOSE, 1, &x->fine, a, NULL, u->err);
  return fine_value(u, fine, t->type, first);
}

/* broadcast_in_dim(x): each operand dimension's group where the result
 * keeps its size, a new dimension whole. */
static Fine *unmerge_broadcast(Unmerge *u, const Term *t, const Fine *x) {
  const AttrValue *dims = attrs_get(t->attrs, "dims");
  int64_t shape[MAX_FINE], fd[MAX_FINE];
  int first[PARTIR_MAX_RANK + 1], n = 0, nd = 0;
  for (int d = 0; d < t->type->rank; d++) {
    first[d] = n;
    int from = -1;
    for (int i = 0; i < dims->count; i++)
      if (dims->items[i].i == d)
        from = i;
    gboolean kept = from >= 0 && x->plain->type->dims[from] == t->type->dims[d];
    int64_t sizes[MAX_FINE];
    int k = kept ? group(x, from, sizes) : 1;
    if (!kept)
      sizes[0] = t->type->dims[d];
    if (n + k > MAX_FINE)
      return NULL;
    for (int j = 0; j < k; j++) {
      if (from >= 0) /* the operand's fine dimension (or its 1) lands here */
        fd[nd++] = n;
      shape[n++] = sizes[j];
    }
  }
  first[t->type->rank] = n;
  const Term *fine =
      term_op(OP_BROADCAST_IN_DIM, 1, &x->fine, attrs_ints("dims", nd, fd),
              type_tensor(t->type->dtype, n, shape), u->err);
  return fine_value(u, fine, t->type, first);
}

/* A reduction over some dimensions: over their fine ones. */
static Fine *unmerge_reduce(Unmerge *u, const Term *t, const Fine *x) {
  const AttrValue *dims = attrs_get(t->attrs, "dims");
  gboolean gone[PARTIR_MAX_RANK] = {0};
  for (int i = 0; i < dims->count; i++)
    gone[dims->items[i].i] = TRUE;
  int64_t fd[MAX_FINE];
  int first[PARTIR_MAX_RANK + 1], nd = 0, r = 0, n = 0;
  for (int d = 0; d < x->plain->type->rank; d++) {
    int k = x->first[d + 1] - x->first[d];
    if (gone[d]) {
      for (int j = 0; j < k; j++)
        fd[nd++] = x->first[d] + j;
    } else {
      first[r++] = n;
      n += k;
    }
  }
  first[r] = n;
  AttrValue v = attr_new_ints(nd, fd);
  const Attrs *a = attrs_with(t->attrs, "dims", v);
  attr_value_clear(&v);
  const Term *fine = term_op(t->op, 1, &x->fine, a, NULL, u->err);
  return fine_value(u, fine, t->type, first);
}

/* A dimension list attribute of dot_general (absent: none). */
static int dim_list(const Term *t, const char *key, int64_t *out) {
  const AttrValue *v = attrs_get(t->attrs, key);
  int n = v ? v->count : 0;
  for (int i = 0; i < n; i++)
    out[i] = v->items[i].i;
  return n;
}

static gboolean listed(const int64_t *xs, int n, int64_t x) {
  for (int i = 0; i < n; i++)
    if (xs[i] == x)
      return TRUE;
  return FALSE;
}

/* dot_general(a, b): each batch and contracted pair cut alike on both
 * sides (a side with one dimension where the other has several is
 * reshaped to cut it so), over the fine dimensions. */
static Fine *unmerge_dot(Unmerge *u, const Term *t, Fine **x) {
  int64_t batch[2][PARTIR_MAX_RANK], contract[2][PARTIR_MAX_RANK];
  int nb = dim_list(t, "lhs_batch", batch[0]);
  if (dim_list(t, "rhs_batch", batch[1]) != nb)
    return NULL;
  int nc = dim_list(t, "lhs_contract", contract[0]);
  if (dim_list(t, "rhs_contract", contract[1]) != nc)
    return NULL;
  /* per operand dimension, the sizes it is cut into */
  int64_t cuts[2][PARTIR_MAX_RANK][MAX_FINE];
  int ncut[2][PARTIR_MAX_RANK];
  for (int s = 0; s < 2; s++)
    for (int d = 0; d < x[s]->plain->type->rank; d++)
      ncut[s][d] = group(x[s], (int)d, cuts[s][d]);
  /* a pair cut alike stays cut; a batch pair cut on one side only is
   * cut so on the other (an attention mask over the merged batch and
   * heads); any other pair is taken whole on both sides (a weight that
   * contracts the heads' outputs stays the weight) */
  for (int pass = 0; pass < 2; pass++) {
    const int64_t(*pairs)[PARTIR_MAX_RANK] = pass ? contract : batch;
    for (int i = 0; i < (pass ? nc : nb); i++) {
      int da = (int)pairs[0][i], db = (int)pairs[1][i];
      int na = ncut[0][da], nbb = ncut[1][db];
      if (na == nbb &&
          !memcmp(cuts[0][da], cuts[1][db], sizeof(int64_t) * (gsize)na))
        continue;
      if (!pass && na == 1) {
        memcpy(cuts[0][da], cuts[1][db], sizeof(int64_t) * (gsize)nbb);
        ncut[0][da] = nbb;
      } else if (!pass && nbb == 1) {
        memcpy(cuts[1][db], cuts[0][da], sizeof(int64_t) * (gsize)na);
        ncut[1][db] = na;
      } else {
        ncut[0][da] = ncut[1][db] = 1;
        cuts[0][da][0] = x[0]->plain->type->dims[da];
        cuts[1][db][0] = x[1]->plain->type->dims[db];
      }
    }
  }
  /* nothing cut finer than the operands are: the product as it was */
  gboolean finer = FALSE;
  for (int s = 0; s < 2; s++)
    for (int d = 0; d < x[s]->plain->type->rank; d++)
      finer |= ncut[s][d] > 1;
  if (!finer)
    return NULL;
  /* each operand at its cut shape; where each dimension starts in it */
  const Term *args[2];
  int at[2][PARTIR_MAX_RANK + 1];
  for (int s = 0; s < 2; s++) {
    const Type *pt = x[s]->plain->type;
    int64_t shape[MAX_FINE];
    int n = 0;
    for (int d = 0; d < pt->rank; d++) {
      at[s][d] = n;
      if (n + ncut[s][d] > MAX_FINE)
        return NULL;
      for (int k = 0; k < ncut[s][d]; k++)
        shape[n++] = cuts[s][d][k];
    }
    at[s][pt->rank] = n;
    const Type *want = type_tensor(pt->dtype, n, shape);
    args[s] = x[s]->fine && x[s]->fine->type == want
                  ? x[s]->fine
                  : reshaped(u, x[s]->plain, want);
    if (!args[s])
      return NULL;
  }
  int64_t fb[2][MAX_FINE], fc[2][MAX_FINE];
  int nfb = 0, nfc = 0;
  for (int s = 0; s < 2; s++) {
    nfb = nfc = 0;
    for (int i = 0; i < nb; i++)
      for (int k = at[s][batch[s][i]]; k < at[s][batch[s][i] + 1]; k++)
        fb[s][nfb++] = k;
    for (int i = 0; i < nc; i++)
      for (int k = at[s][contract[s][i]]; k < at[s][contract[s][i] + 1]; k++)
        fc[s][nfc++] = k;
  }
  /* the result: the batch groups, then lhs's free groups, then rhs's */
  int first[PARTIR_MAX_RANK + 1], r = 0, n = 0;
  for (int i = 0; i < nb; i++) {
    first[r++] = n;
    n += ncut[0][batch[0][i]];
  }
  for (int s = 0; s < 2; s++)
    for (int d = 0; d < x[s]->plain->type->rank; d++)
      if (!listed(batch[s], nb, d) && !listed(contract[s], nc, d)) {
        first[r++] = n;
        n += ncut[s][d];
      }
  if (r != t->type->rank)
    return NULL;
  first[r] = n;
  AttrValue v[4] = {attr_new_ints(nfb, fb[0]), attr_new_ints(nfb, fb[1]),
                    attr_new_ints(nfc, fc[0]), attr_new_ints(nfc, fc[1])};
  const char *keys[4] = {"lhs_batch", "rhs_batch", "lhs_contract",
                         "rhs_contract"};
  /* partir writes no empty batch lists */
  int nk = 0;
  const char *k2[4];
  AttrValue v2[4];
  for (int i = 0; i < 4; i++) {
    if (v[i].count > 0) {
      k2[nk] = keys[i];
      v2[nk++] = v[i];
    } else {
      attr_value_clear(&v[i]);
    }
  }
  const Term *fine =
      term_op(OP_DOT_GENERAL, 2, args, attrs_build(nk, k2, v2), NULL, u->err);
  return fine_value(u, fine, t->type, first);
}

/* ------------------------------------------------------------ the walk */

static gboolean elementwise(Op op) {
  return op_is_elementwise(op) || op == OP_SELECT || op == OP_CONVERT;
}

/* 't' rebuilt from its operands' rebuilt values 'x'. */
static Fine *rebuild(Unmerge *u, const Term *t, Fine **x) {
  if (t->kind != TM_OP && t->kind != TM_TUPLE)
    return fine_new(t);
  Fine *v = NULL;
  gboolean any = FALSE;
  for (int i = 0; i < t->nargs; i++)
    any |= x[i]->fine != NULL;
  if (t->kind == TM_OP && t->op == OP_RESHAPE)
    v = unmerge_reshape(u, t, x[0]);
  else if (t->kind == TM_OP && any) {
    if (elementwise(t->op) && t->nargs <= 3)
      v = unmerge_elementwise(u, t, x);
    else if (t->op == OP_TRANSPOSE)
      v = unmerge_transpose(u, t, x[0]);
    else if (t->op == OP_BROADCAST_IN_DIM)
      v = unmerge_broadcast(u, t, x[0]);
    else if (op_is_reduction(t->op))
      v = unmerge_reduce(u, t, x[0]);
    else if (t->op == OP_DOT_GENERAL)
      v = unmerge_dot(u, t, x);
  }
  if (v)
    return v;
  /* as it was, on its operands' values at their own shapes */
  const Term *stack[8];
  const Term **args = t->nargs <= 8 ? stack : g_new(const Term *, t->nargs);
  gboolean same = TRUE;
  for (int i = 0; i < t->nargs; i++) {
    args[i] = x[i]->plain;
    same &= args[i] == t->args[i];
  }
  const Term *plain =
      same ? t
      : t->kind == TM_TUPLE
          ? term_tuple(t->nargs, args)
          : term_op(t->op, t->nargs, args, t->attrs,
                    op_takes_written_type(t->op) ? t->type : NULL, u->err);
  if (args != stack)
    g_free(args);
  return plain ? fine_new(plain) : NULL;
}

/* Whether some reshape under 'body' merges dimensions. */
static gboolean any_regrouping(const Term *body) {
  g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
  g_autoptr(GPtrArray) todo = g_ptr_array_new();
  g_ptr_array_add(todo, (gpointer)body);
  while (todo->len) {
    const Term *t = g_ptr_array_steal_index_fast(todo, todo->len - 1);
    if (!g_hash_table_add(seen, (gpointer)t))
      continue;
    if (t->kind == TM_OP && t->op == OP_RESHAPE) {
      int64_t f[MAX_FINE];
      int nf = common_refinement(t->args[0]->type, t->type, f);
      if (nf > non_unit(t->type))
        return TRUE;
    }
    for (int i = 0; i < t->nargs; i++)
      g_ptr_array_add(todo, (gpointer)t->args[i]);
  }
  return FALSE;
}

const Term *hlo_unmerge(const Term *body, GHashTable *names) {
  if (!any_regrouping(body))
    return body;
  Unmerge u = {g_hash_table_new_full(NULL, NULL, NULL, g_free), diag_new(NULL)};
  /* operands first, without recursion (a model is deep) */
  g_autoptr(GPtrArray) todo = g_ptr_array_new();
  g_ptr_array_add(todo, (gpointer)body);
  gboolean failed = FALSE;
  while (todo->len && !failed) {
    const Term *t = g_ptr_array_index(todo, todo->len - 1);
    if (g_hash_table_contains(u.done, t)) {
      g_ptr_array_set_size(todo, todo->len - 1);
      continue;
    }
    gboolean ready = TRUE;
    for (int i = 0; i < t->nargs; i++)
      if (!g_hash_table_contains(u.done, t->args[i])) {
        g_ptr_array_add(todo, (gpointer)t->args[i]);
        ready = FALSE;
      }
    if (!ready)
      continue;
    g_ptr_array_set_size(todo, todo->len - 1);
    Fine *stack[8];
    Fine **x = t->nargs <= 8 ? stack : g_new(Fine *, t->nargs);
    for (int i = 0; i < t->nargs; i++)
      x[i] = g_hash_table_lookup(u.done, t->args[i]);
    Fine *v = rebuild(&u, t, x);
    if (x != stack)
      g_free(x);
    if (!v) { /* a type rule refused: a bug here, the program kept */
      failed = TRUE;
      break;
    }
    g_hash_table_insert(u.done, (gpointer)t, v);
  }
  const Term *out = body;
  if (!failed) {
    out = ((Fine *)g_hash_table_lookup(u.done, body))->plain;
    /* the source's names go to the values that replace theirs */
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, u.done);
    while (names && g_hash_table_iter_next(&it, &k, &v)) {
      const Term *to = ((Fine *)v)->plain;
      const char *name = g_hash_table_lookup(names, k);
      if (name && to != k && !g_hash_table_contains(names, to))
        g_hash_table_insert(names, (gpointer)to, g_strdup(name));
    }
  }
  g_hash_table_unref(u.done);
  diag_free(u.err);
  return out;
}
