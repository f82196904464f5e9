/* lookup.c — an embedding lookup split along the table's rows.
 *
 * A gather that reads one row of a table per index (start_index_map =
 * [v], a slice of size 1 along v, no batching dims: 'table[ids]') is a
 * lookup.  Split the table's rows (its vocabulary, dimension v) into
 * parts, one a device, and each part can answer only the indices in its
 * own range.  So the lookup is the sum over the parts of a masked local
 * lookup, Megatron's vocabulary-parallel embedding: every device looks
 * its indices up in its own rows, puts zero where an index is not its
 * own, and one all_reduce adds the parts.  The derived rule gather-sum
 * writes that sum with the operators partir has:
 *
 *   gather(T, ids) ~~> sum (\r -> select(hit, rows, 0)) where
 *
 *     iv    = iota : tensor<V x I>            the row numbers of T
 *     want  = gather(iv, ids)                 the row the lookup reads:
 *                                             ids clamped to [0, V), as
 *                                             gather clamps its starts
 *     part  = slice 0 iv[r]                   the rows of part r
 *     off   = broadcast(reshape(slice(part){start = [0], limit = [1]}))
 *                                             the part's first row
 *     local = sub(want, off)                  that row within the part
 *     rows  = gather(slice v T[r], local)     the part's lookup (local is
 *                                             clamped into the part)
 *     got   = gather(part, local)             the row it read
 *     hit   = broadcast(compare(got, want) {direction = EQ})
 *
 * 'got' is 'want' clamped into the part's rows, so it equals 'want' in
 * exactly one part: the sum is the lookup, for every index, in range or
 * not (an index past the end reads the last row, in the last part).  A
 * part adds nothing but zeros elsewhere, so the sum is exact.
 *
 * The reverse, gather-sum-rev, recognises the body by rebuilding it:
 * from a body of this shape it takes T and ids, builds the body the
 * forward rule makes of gather(T, ids) and compares (terms are
 * hash-consed: one pointer comparison).
 */
#include "rewrite/rewrite.h"

#include <string.h>

int lookup_dim(const Term *t) {
  if (t->kind != TM_OP || t->op != OP_GATHER)
    return -1;
  GatherDims g;
  gather_dims_of(t, &g);
  if (g.nstart != 1 || g.nbatching != 0)
    return -1;
  int v = (int)g.start_index_map[0];
  int64_t rows = t->args[0]->type->dims[v];
  if (g.slice_sizes[v] != 1 || rows < 2)
    return -1;
  /* every row number must be a value of the ids' type (the parts' first
   * rows are iota values of it); below 2^(bits - 1) holds for signed and
   * unsigned types alike */
  gsize bits = 8 * dtype_storage_bytes(t->args[1]->type->dtype);
  if (bits < 64 && rows - 1 >= (int64_t)1 << (bits - 1))
    return -1;
  return v;
}

static AttrValue ints(const int64_t *xs, int n) {
  AttrValue a = {.kind = AV_LIST, .count = n};
  a.items = g_new0(AttrValue, (gsize)MAX(n, 1));
  for (int i = 0; i < n; i++)
    a.items[i] = (AttrValue){.kind = AV_INT, .i = xs[i]};
  return a;
}

static const Attrs *one_attr(const char *key, AttrValue v) {
  const char **keys = g_new(const char *, 1);
  AttrValue *vals = g_new(AttrValue, 1);
  keys[0] = g_intern_string(key);
  vals[0] = v;
  return attrs_intern(1, keys, vals);
}

/* A gather of one element of the rank-1 'from' per index of 'ids', whose
 * index vector is dimension 'ivd' of ids. */
static const Term *gather_rank1(const Term *from, const Term *ids, int64_t ivd,
                                Diag *why) {
  GatherDims g = {.ncollapsed = 1, .nstart = 1, .nslice = 1};
  g.collapsed[0] = 0;
  g.start_index_map[0] = 0;
  g.slice_sizes[0] = 1;
  g.index_vector_dim = ivd;
  const Term *args[2] = {from, ids};
  return term_op(OP_GATHER, 2, args, gather_attrs(&g), NULL, why);
}

static const Term *op2(Op op, const Term *a, const Term *b, const Attrs *at,
                       Diag *why) {
  const Term *args[2] = {a, b};
  return a && b ? term_op(op, 2, args, at ? at : attrs_empty(), NULL, why)
                : NULL;
}

static const Term *op1(Op op, const Term *a, const Attrs *at,
                       const Type *written, Diag *why) {
  return a ? term_op(op, 1, &a, at, written, why) : NULL;
}

const Term *lookup_part(const Term *t, const Term *r, Diag *why) {
  int v = lookup_dim(t);
  g_assert(v >= 0);
  GatherDims g;
  gather_dims_of(t, &g);
  const Term *table = t->args[0], *ids = t->args[1];
  DType it = ids->type->dtype;
  int64_t rows_n = table->type->dims[v];
  const Term *iv = term_op(OP_IOTA, 0, NULL,
                           one_attr("dim", (AttrValue){.kind = AV_INT, .i = 0}),
                           type_tensor(it, 1, &rows_n), why);
  const Term *want = iv ? gather_rank1(iv, ids, g.index_vector_dim, why) : NULL;
  const Term *part = iv ? term_slice(0, iv, r, why) : NULL;
  if (!want || !part)
    return NULL;
  int64_t zero = 0, one = 1;
  const char **keys = g_new(const char *, 2);
  AttrValue *vals = g_new(AttrValue, 2);
  keys[0] = g_intern_string("start");
  keys[1] = g_intern_string("limit");
  vals[0] = ints(&zero, 1);
  vals[1] = ints(&one, 1);
  const Term *first =
      op1(OP_SLICE, part, attrs_intern(2, keys, vals), NULL, why);
  const Term *off =
      op1(OP_RESHAPE, first, attrs_empty(), type_tensor(it, 0, NULL), why);
  const Type *batch = want->type;
  if (off && batch->rank > 0)
    off = op1(OP_BROADCAST_IN_DIM, off, one_attr("dims", ints(NULL, 0)), batch,
              why);
  const Term *local = op2(OP_SUB, want, off, NULL, why);
  const Term *got = local ? gather_rank1(part, local, batch->rank, why) : NULL;
  const Term *hit =
      op2(OP_COMPARE, got, want,
          one_attr("direction", (AttrValue){.kind = AV_SYMBOL,
                                            .sym = g_intern_string("EQ")}),
          why);
  const Term *rows_part = term_slice(v, table, r, why);
  const Attrs *local_attrs =
      attrs_with(t->attrs, "index_vector_dim",
                 (AttrValue){.kind = AV_INT, .i = batch->rank});
  const Term *rows = rows_part && local
                         ? op2(OP_GATHER, rows_part, local, local_attrs, why)
                         : NULL;
  if (!hit || !rows)
    return NULL;
  if (t->type->rank > batch->rank) { /* the mask over the offset dims too */
    int64_t dims[PARTIR_MAX_RANK];
    int n = 0;
    for (int d = 0; d < t->type->rank; d++)
      if (!gather_result_dim(&g, d).offset)
        dims[n++] = d;
    hit = op1(OP_BROADCAST_IN_DIM, hit, one_attr("dims", ints(dims, n)),
              type_with_dtype(t->type, DT_I1), why);
  }
  AttrValue z = dtype_is_float(t->type->dtype)
                    ? (AttrValue){.kind = AV_FLOAT, .f = 0.0}
                    : (AttrValue){.kind = AV_INT, .i = 0};
  const Term *zeros =
      term_op(OP_CONSTANT, 0, NULL, one_attr("value", z), t->type, why);
  if (!hit || !zeros)
    return NULL;
  const Term *sel[3] = {hit, rows, zeros};
  return term_op(OP_SELECT, 3, sel, attrs_empty(), NULL, why);
}

/* Operand 'i' of 't' when 't' is operator 'op', else NULL. */
static const Term *arg_of(const Term *t, Op op, int i) {
  return t && t->kind == TM_OP && t->op == op && i < t->nargs ? t->args[i]
                                                              : NULL;
}

const Term *lookup_whole(const Term *sum, Diag *why) {
  const Term *body = sum->args[0];
  const Term *rows = arg_of(body, OP_SELECT, 1);
  const Term *part = arg_of(rows, OP_GATHER, 0);
  const Term *want = arg_of(arg_of(rows, OP_GATHER, 1), OP_SUB, 0);
  const Term *ids = arg_of(want, OP_GATHER, 1);
  const Term *r = term_bvar(sum->binder, sum->range);
  if (!part || part->kind != TM_SLICE || part->args[1] != r || !ids) {
    diag_reason(why, "'gather-sum-rev' applies to the sum of a "
                     "vocabulary-parallel lookup (what gather-sum makes)");
    return NULL;
  }
  const Term *table = part->args[0];
  if (term_uses(table, sum->binder) || term_uses(ids, sum->binder)) {
    diag_reason(why, "the table or the indices depend on the sum's binder");
    return NULL;
  }
  const Attrs *attrs = attrs_with(rows->attrs, "index_vector_dim",
                                  *attrs_get(want->attrs, "index_vector_dim"));
  const Term *args[2] = {table, ids};
  g_autoptr(Diag) quiet = diag_new(NULL);
  const Term *t = term_op(OP_GATHER, 2, args, attrs, NULL, quiet);
  if (!t || lookup_dim(t) != part->index || lookup_part(t, r, quiet) != body) {
    diag_reason(why, "the sum's body is not the vocabulary-parallel lookup "
                     "that gather-sum makes");
    return NULL;
  }
  return t;
}
