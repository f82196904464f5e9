/* rulecheck.c — every rule checked for meaning, and random rewriting.
 *
 * check_rules() gives each rule concrete instances and runs both sides
 * through the interpreter on the same random data:
 *
 *   - a derived operator rule (OP-tile-D, OP-sum-K, slice-OP-D) is applied
 *     to a random application of OP built so that D (or K) exists: random
 *     shapes, ranks up to 8, random attributes, a random width that
 *     divides the size; a slice rule is applied to the slice that tiling
 *     the application along D creates;
 *   - a written rule is looked for along random walks (below) from random
 *     operator applications, and applied wherever it matches.
 *
 * Every rule is checked, whatever fails before it: a rule that fails is
 * reported with the instance and left out of the walks that follow, and
 * a pass (propagate, fuse, simplify) that fails is reported once and not
 * taken again.
 *
 * check_walks() takes random legal steps — arg-tile with random
 * parameters, any rule at any location where it applies, propagate, fuse,
 * simplify, a region's fission at a value inside it — and after every step
 * checks that the printed state parses (and so type-checks) back to the same
 * term and computes what the start computes.  This is the property test of the
 * engine.
 *
 * Agreement: |a - b| <= 1e-6 + 1e-5 |a| + 1e-4 max|A| elementwise (sums
 * reorder floating-point additions, and the rounding of each part is
 * relative to the part, not the result), in bf16 and f16 4 and 16 of
 * their roundings where those are more (tensor_results_agree); NaN
 * agrees with NaN, and infinities must be equal.
 */
#include "check/check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------- comparisons */

static Tensor **random_inputs(const Func *f, guint32 seed) {
  Tensor **in = g_new0(Tensor *, (gsize)f->nargs + 1);
  GRand *rng = g_rand_new_with_seed(seed);
  for (int i = 0; i < f->nargs; i++) {
    in[i] = tensor_new(f->arg_types[i]);
    tensor_fill_random(in[i], rng);
  }
  g_rand_free(rng);
  return in;
}

static void free_inputs(const Func *f, Tensor **in) {
  for (int i = 0; i < f->nargs; i++)
    tensor_unref(in[i]);
  g_free(in);
}

/* The reference outputs of one body, kept while a walk runs from it. */
typedef struct Reference {
  const Term *body;
  GPtrArray *out;
} Reference;

static void reference_clear(Reference *ref) {
  if (ref->out)
    g_ptr_array_unref(ref->out);
  ref->out = NULL;
  ref->body = NULL;
}

/* Runs 'after' and compares with what 'before' computes (cached in 'ref')
 * on the same seeded inputs. */
static gboolean same_meaning(const Func *f, const Term *before,
                             const Term *after, guint32 seed, Reference *ref,
                             Diag *why) {
  Tensor **in = random_inputs(f, seed);
  Func g = *f, h = *f;
  g.body = before;
  h.body = after;
  GError *error = NULL;
  if (ref->body != before) {
    reference_clear(ref);
    ref->out = interp_run(&g, in, &error);
    ref->body = ref->out ? before : NULL;
  }
  GPtrArray *b = ref->out ? interp_run(&h, in, &error) : NULL;
  gboolean ok = FALSE;
  if (!b) {
    diag_reason(why, "%s", error->message);
    g_error_free(error);
  } else {
    ok = tensor_results_agree(ref->out, b, why);
    g_ptr_array_unref(b);
  }
  free_inputs(f, in);
  return ok;
}

/* ------------------------------------------------ random op applications */

typedef struct Gen {
  GRand *rng;
  GPtrArray *arg_types; /* const Type* */
  int form; /* gather and scatter_add: 0 any, 1 an embedding lookup, 2
               windows wider than one (gen_gather_dims) */
} Gen;

static int rnd(Gen *g, int lo, int hi) { /* inclusive */
  return g_rand_int_range(g->rng, lo, hi + 1);
}

/* MAX(floor, a random value in [lo, hi]), drawing once (MAX evaluates its
 * arguments twice). */
static int rnd_at_least(Gen *g, int floor, int lo, int hi) {
  int v = rnd(g, lo, hi);
  return v > floor ? v : floor;
}

static const Term *new_arg(Gen *g, const Type *t) {
  g_ptr_array_add(g->arg_types, (gpointer)t);
  return term_arg((int)g->arg_types->len - 1, t);
}

/* A shape of 'rank' dims: small sizes so that rank 8 stays small, with
 * dimension 'big' (if >= 0) divisible by several widths. */
static const Type *rshape(Gen *g, DType dt, int rank, int big) {
  int64_t dims[PARTIR_MAX_RANK];
  for (int i = 0; i < rank; i++)
    dims[i] = i == big ? (rnd(g, 0, 1) ? 4 : 6) : rnd(g, 1, rank > 4 ? 2 : 3);
  return type_tensor(dt, rank, dims);
}

static AttrValue av_int(int64_t v) {
  return (AttrValue){.kind = AV_INT, .i = v};
}

static AttrValue av_list(const int64_t *xs, int n) {
  AttrValue v = {.kind = AV_LIST, .count = n};
  v.items = g_new0(AttrValue, (gsize)MAX(n, 1));
  for (int i = 0; i < n; i++)
    v.items[i] = av_int(xs[i]);
  return v;
}

static const Attrs *attrs1(const char *k, AttrValue v) {
  const char **keys = g_new(const char *, 1);
  AttrValue *vals = g_new(AttrValue, 1);
  keys[0] = g_intern_string(k);
  vals[0] = v;
  return attrs_intern(1, keys, vals);
}

static void shuffle(Gen *g, int64_t *xs, int n) {
  for (int i = n - 1; i > 0; i--) {
    int j = rnd(g, 0, i);
    int64_t t = xs[i];
    xs[i] = xs[j];
    xs[j] = t;
  }
}

/* matmul of random [m,k] x [k,n] operands; NULL when asked for a result
 * dim above 1 or a second reduction. */
static const Term *gen_matmul(Gen *g, Op op, int dim, int red, Diag *err) {
  if (dim > 1 || red > 0)
    return NULL;
  int64_t m = rnd(g, 0, 1) ? 4 : 6, k = rnd(g, 0, 1) ? 4 : 6, n = 4;
  const Term *a = new_arg(g, type_tensor(DT_F32, 2, (int64_t[]){m, k}));
  const Term *b = new_arg(g, type_tensor(DT_F32, 2, (int64_t[]){k, n}));
  return term_op(op, 2, (const Term *[]){a, b}, attrs_empty(), NULL, err);
}

/* dot_general with random batch, contracting and free dims in shuffled
 * positions: result rank >= 'minr', more than 'red' contractions (nb
 * batch, nc contracting, fl/fr free dims; lhs rank nb+nc+fl <= 8). */
static const Term *gen_dot_general(Gen *g, Op op, int red, int minr,
                                   Diag *err) {
  int nc = rnd_at_least(g, red + 1, 0, 1), nb = rnd(g, 0, 1);
  int out = rnd(g, minr, MAX(minr, 3));
  if (nc + out > 8)
    out = MAX(minr, 8 - nc);
  if (nb > out)
    nb = out;
  int fl = (out - nb) / 2, fr = out - nb - fl;
  if (nb + nc + fl > 8 || nb + nc + fr > 8)
    return NULL;
  int la = nb + nc + fl, ra = nb + nc + fr;
  int64_t lp[8], rp[8];
  for (int i = 0; i < la; i++)
    lp[i] = i;
  for (int i = 0; i < ra; i++)
    rp[i] = i;
  shuffle(g, lp, la);
  shuffle(g, rp, ra);
  int64_t ld[8], rd[8];
  for (int i = 0; i < nb + nc; i++) { /* paired dims share a size */
    ld[lp[i]] = rd[rp[i]] =
        (la + ra > 10) ? rnd(g, 1, 2) : (rnd(g, 0, 1) ? 4 : 2);
  }
  for (int i = nb + nc; i < la; i++)
    ld[lp[i]] = la > 5 ? 2 : 4;
  for (int i = nb + nc; i < ra; i++)
    rd[rp[i]] = ra > 5 ? 2 : 4;
  const Term *a = new_arg(g, type_tensor(DT_F32, la, ld));
  const Term *b = new_arg(g, type_tensor(DT_F32, ra, rd));
  const char **keys = g_new(const char *, 4);
  AttrValue *vals = g_new(AttrValue, 4);
  keys[0] = g_intern_string("lhs_batch");
  keys[1] = g_intern_string("rhs_batch");
  keys[2] = g_intern_string("lhs_contract");
  keys[3] = g_intern_string("rhs_contract");
  vals[0] = av_list(lp, nb);
  vals[1] = av_list(rp, nb);
  vals[2] = av_list(lp + nb, nc);
  vals[3] = av_list(rp + nb, nc);
  return term_op(op, 2, (const Term *[]){a, b}, attrs_intern(4, keys, vals),
                 NULL, err);
}

/* A reduction over shuffled dims, keeping at least 'minr'; only
 * reduce_sum has reductions to split.  reduce_and and reduce_or take i32
 * or i1, the others f32. */
static const Term *gen_reduce(Gen *g, Op op, int red, int minr, Diag *err) {
  int nred = rnd_at_least(g, red + 1, 1, 2);
  int kept = rnd_at_least(g, minr, 0, 2);
  kept = MIN(kept, 8 - nred);
  int rank = kept + nred;
  if (kept < minr || (red >= 0 && op != OP_REDUCE_SUM))
    return NULL;
  int64_t dims[8];
  for (int i = 0; i < rank; i++)
    dims[i] = i;
  shuffle(g, dims, rank);
  DType dt = DT_F32;
  if (op == OP_REDUCE_AND || op == OP_REDUCE_OR)
    dt = rnd(g, 0, 1) ? DT_I32 : DT_I1;
  const Term *a = new_arg(g, rshape(g, dt, rank, -1));
  return term_op(op, 1, (const Term *[]){a},
                 attrs1("dims", av_list(dims, nred)), NULL, err);
}

/* broadcast_in_dim from a random subset of the result's dims, some of
 * them of size 1 in the operand. */
static const Term *gen_broadcast(Gen *g, Op op, int dim, int minr, Diag *err) {
  int rank = rnd_at_least(g, minr, 1, 3);
  const Type *rt = rshape(g, DT_F32, rank, dim);
  int64_t map[8], od[8];
  int n = 0;
  for (int i = 0; i < rank; i++)
    if (rnd(g, 0, 1))
      map[n++] = i;
  for (int i = 0; i < n; i++)
    od[i] = rnd(g, 0, 2) ? rt->dims[map[i]] : 1;
  const Term *a = new_arg(g, type_tensor(DT_F32, n, od));
  return term_op(op, 1, (const Term *[]){a}, attrs1("dims", av_list(map, n)),
                 rt, err);
}

/* transpose by a random permutation of rank 'minr' or more. */
static const Term *gen_transpose(Gen *g, Op op, int dim, int minr, Diag *err) {
  int rank = rnd_at_least(g, minr, 2, 3);
  int64_t perm[8];
  for (int i = 0; i < rank; i++)
    perm[i] = i;
  shuffle(g, perm, rank);
  const Term *a =
      new_arg(g, rshape(g, DT_F32, rank, dim >= 0 ? (int)perm[dim] : -1));
  return term_op(op, 1, (const Term *[]){a},
                 attrs1("permutation", av_list(perm, rank)), NULL, err);
}

/* reshape splitting one dimension of size 4 into 2x2, away from 'dim'. */
static const Term *gen_reshape_away(Gen *g, Op op, int dim, int minr,
                                    Diag *err) {
  int rank = rnd_at_least(g, minr, 2, 3); /* result rank */
  if (dim >= 0 && dim < 2)
    rank = MAX(rank, dim + 3); /* room for the split after 'dim' */
  if (rank > 8)
    return NULL;
  int j; /* the split puts result dims j, j+1 together */
  for (j = 0; j + 1 < rank; j++)
    if (dim < 0 || (dim != j && dim != j + 1))
      break;
  if (j + 1 >= rank)
    return NULL;
  const Type *rt = rshape(g, DT_F32, rank, dim);
  int64_t rd[8], od[8];
  memcpy(rd, rt->dims, sizeof(int64_t) * (gsize)rank);
  rd[j] = rd[j + 1] = 2;
  int o = 0;
  for (int i = 0; i < rank; i++) {
    if (i == j + 1)
      continue;
    od[o++] = i == j ? 4 : rd[i];
  }
  const Term *a = new_arg(g, type_tensor(DT_F32, o, od));
  return term_op(op, 1, (const Term *[]){a}, attrs_empty(),
                 type_tensor(DT_F32, rank, rd), err);
}

/* reshape through result dim 'dim' (random when -1) itself: either the
 * major half of an operand dim split in two (dim 1 of 3x8 -> 3x4x2), or
 * two operand dims merged into it (dims 0, 1 of 4x3x2 -> 12x2).  A tile
 * of 'dim' carries to the operand dim in as many parts, where they
 * divide it (spec_reshape). */
static const Term *gen_reshape_through(Gen *g, Op op, int dim, int minr,
                                       Diag *err) {
  int rank = rnd_at_least(g, MAX(minr, 1), 1, 3); /* result rank */
  gboolean split = rnd(g, 0, 1);
  if (split)
    rank = MAX(rank, 2);
  if (rank > 7)
    return NULL;
  int d = dim >= 0 ? dim : rnd(g, 0, rank - (split ? 2 : 1));
  if (split && d + 1 >= rank)
    return NULL;
  const Type *rt = rshape(g, DT_F32, rank, d);
  int64_t rd[8], od[8];
  memcpy(rd, rt->dims, sizeof(int64_t) * (gsize)rank);
  int o = 0;
  for (int i = 0; i < rank; i++) {
    if (split && i == d) { /* operand dim rd[d] * rd[d+1] */
      rd[d + 1] = 2;
      od[o++] = rd[d] * 2;
      i++;
    } else if (!split && i == d) { /* operand dims a x b, a*b = rd[d] */
      int64_t b = rd[d] % 3 == 0 ? 3 : 2;
      od[o++] = rd[d] / b;
      od[o++] = b;
    } else {
      od[o++] = rd[i];
    }
  }
  if (o > 8)
    return NULL;
  const Term *a = new_arg(g, type_tensor(DT_F32, o, od));
  return term_op(op, 1, (const Term *[]){a}, attrs_empty(),
                 type_tensor(DT_F32, rank, rd), err);
}

static const Term *gen_reshape(Gen *g, Op op, int dim, int minr, Diag *err) {
  return rnd(g, 0, 1) ? gen_reshape_away(g, op, dim, minr, err)
                      : gen_reshape_through(g, op, dim, minr, err);
}

/* concatenate of 2 or 3 operands along a dim other than 'dim'. */
static const Term *gen_concatenate(Gen *g, Op op, int dim, int minr,
                                   Diag *err) {
  int rank = rnd_at_least(g, minr, 1, 3);
  int cd;
  do
    cd = rnd(g, 0, rank - 1);
  while (cd == dim && rank > 1);
  if (cd == dim)
    return NULL;
  const Type *base = rshape(g, DT_F32, rank, dim);
  int n = rnd(g, 2, 3);
  const Term *ops[3];
  for (int i = 0; i < n; i++)
    ops[i] = new_arg(g, type_with_dim(base, cd, rnd(g, 1, 3)));
  return term_op(op, n, ops, attrs1("dim", av_int(cd)), NULL, err);
}

/* slice dropping the first element of random dims other than 'dim'. */
static const Term *gen_slice(Gen *g, Op op, int dim, int minr, Diag *err) {
  int rank = rnd_at_least(g, minr, 1, 3);
  const Type *t = rshape(g, DT_F32, rank, dim);
  int64_t start[8], limit[8];
  for (int i = 0; i < rank; i++) {
    gboolean whole = i == dim || rnd(g, 0, 1) || t->dims[i] == 1;
    start[i] = whole ? 0 : 1;
    limit[i] = t->dims[i];
  }
  const Term *a = new_arg(g, t);
  const char **keys = g_new(const char *, 2);
  AttrValue *vals = g_new(AttrValue, 2);
  keys[0] = g_intern_string("start");
  keys[1] = g_intern_string("limit");
  vals[0] = av_list(start, rank);
  vals[1] = av_list(limit, rank);
  return term_op(op, 1, (const Term *[]){a}, attrs_intern(2, keys, vals), NULL,
                 err);
}

/* A random subset of 'k' of the positions 0..n-1, increasing. */
static void pick_sorted(Gen *g, int n, int k, int64_t *out) {
  int64_t all[2 * PARTIR_MAX_RANK];
  for (int i = 0; i < n; i++)
    all[i] = i;
  shuffle(g, all, n);
  for (int i = 0; i < k; i++)
    out[i] = all[i];
  for (int i = 1; i < k; i++) /* insertion sort */
    for (int j = i; j > 0 && out[j] < out[j - 1]; j--) {
      int64_t t = out[j];
      out[j] = out[j - 1];
      out[j - 1] = t;
    }
}

/* The dimension numbers of a random gather, and its operand and
 * indices types: an operand of rank 1 to 3 ('orank' or more), one or
 * two of its dims indexed (each collapsed or kept as an offset dim of
 * slice size 1), sometimes a batching pair, the others sliced whole or
 * in part; i32 indices (random values in [-10, 10]: out-of-range starts
 * are clamped by gather, left out by scatter_add) with enough batch dims
 * that the result has rank 'minr' or more and 'nfree' of them are not
 * batching, their index vector dim anywhere or implicit.  A reduction
 * ('red' 0) is a lookup's table rows (lookup.c): one indexed dim, no
 * batching.  When 'dim' >= 0, result dim 'dim' is one a tile can split.
 * 'g->form' asks for an embedding lookup (1: rows of a table, collapsed,
 * whole columns) or a windowed one (2: two indexed dims, windows wider
 * than one).  FALSE when the draw is too large. */
static gboolean gen_gather_dims(Gen *g, int dim, int red, int minr, int orank,
                                int nfree, GatherDims *gd, const Type **ot,
                                const Type **it) {
  int form = dim < 0 && red < 0 ? g->form : 0;
  orank = MAX(orank, rnd(g, 1, 3));
  if (form)
    orank = 2;
  int nstart = red == 0 || form == 1 ? 1 : rnd(g, 1, MIN(2, orank));
  if (form == 2)
    nstart = 2;
  int nbatching = !form && red < 0 && orank > nstart && rnd(g, 0, 3) == 0;
  int64_t perm[PARTIR_MAX_RANK];
  for (int i = 0; i < orank; i++)
    perm[i] = i;
  if (!form)
    shuffle(g, perm, orank);
  /* perm: the indexed dims, then a batching dim, then the others */
  *ot = rshape(g, DT_F32, orank, (int)perm[0]);
  *gd = (GatherDims){.nstart = nstart,
                     .nslice = orank,
                     .nbatching = nbatching,
                     .nbatching_indices = nbatching};
  gboolean collapsed[PARTIR_MAX_RANK] = {FALSE};
  for (int c = 0; c < nstart; c++) {
    gd->start_index_map[c] = perm[c];
    gd->slice_sizes[perm[c]] =
        form == 2 ? rnd(g, 1, (int)(*ot)->dims[perm[c]]) : 1;
    collapsed[perm[c]] = form ? form == 1 : rnd(g, 0, 1);
  }
  if (nbatching) {
    gd->operand_batching[0] = perm[nstart];
    gd->slice_sizes[perm[nstart]] = 1;
  }
  for (int i = nstart + nbatching; i < orank; i++)
    gd->slice_sizes[perm[i]] = form == 1 || rnd(g, 0, 1)
                                   ? (*ot)->dims[perm[i]]
                                   : rnd(g, 1, (int)(*ot)->dims[perm[i]]);
  for (int d = 0; d < orank; d++)
    if (collapsed[d])
      gd->collapsed[gd->ncollapsed++] = d;
  gd->noffset = orank - gd->ncollapsed - nbatching;
  int nbatch = rnd_at_least(
      g, MAX(MAX(minr - gd->noffset, nbatching), nfree + nbatching), 0, 2);
  int rank = nbatch + gd->noffset;
  /* the indices: the batch dims, and the index vector dim when written */
  gboolean vec = nstart > 1 || (nbatch < 8 && rnd(g, 0, 1));
  int irank = nbatch + vec;
  if (irank > 8 || rank > 8)
    return FALSE;
  pick_sorted(g, rank, gd->noffset, gd->offset_dims);
  gd->rank = rank;
  gd->index_vector_dim = vec ? rnd(g, 0, nbatch) : nbatch;
  int64_t idims[PARTIR_MAX_RANK];
  const Type *bt = rshape(g, DT_I32, nbatch, -1);
  for (int i = 0, b = 0; i < irank; i++)
    idims[i] = vec && i == gd->index_vector_dim ? nstart : bt->dims[b++];
  if (nbatching) { /* pair operand dim perm[nstart] with an indices dim */
    int i;
    do
      i = rnd(g, 0, irank - 1);
    while (vec && i == gd->index_vector_dim);
    gd->indices_batching[0] = i;
    idims[i] = (*ot)->dims[perm[nstart]];
  }
  if (dim >= 0) { /* make result dim 'dim' one a tile splits */
    GatherDim m = gather_result_dim(gd, dim);
    if (m.offset)
      gd->slice_sizes[m.operand] = (*ot)->dims[m.operand];
  }
  *it = type_tensor(DT_I32, irank, idims);
  return TRUE;
}

static const Term *gen_gather(Gen *g, Op op, int dim, int red, int minr,
                              Diag *err) {
  GatherDims gd;
  const Type *ot, *it;
  if (red > 0 || !gen_gather_dims(g, dim, red, minr, 0, 0, &gd, &ot, &it))
    return NULL;
  const Term *args[2] = {new_arg(g, ot), new_arg(g, it)};
  return term_op(op, 2, args, gather_attrs(&gd), NULL, err);
}

/* scatter_add: the transpose of a random gather (gen_gather_dims), its
 * updates of that gather's result type.  For a tile of result dim 'dim'
 * the operand has that dim, a window over all of it; for reduction
 * 'red' (the updates' batch dims) the operand is zero (spec.c) and the
 * updates have red + 1 batch dims that are not batching.  Draws until
 * one fits (its arguments taken back when it does not). */
static const Term *gen_scatter_add(Gen *g, Op op, int dim, int red, Diag *err) {
  guint args0 = g->arg_types->len;
  for (int tries = 0; tries < 32; tries++) {
    g_ptr_array_set_size(g->arg_types, args0);
    GatherDims gd;
    const Type *ot, *it;
    if (!gen_gather_dims(g, -1, red >= 0 ? -2 : -1, 0, dim + 1,
                         red >= 0 ? red + 1 : 0, &gd, &ot, &it))
      continue;
    if (dim >= 0) {
      /* a window over the whole of 'dim' (an inserted dim taken back) */
      int k = 0;
      while (k < gd.ncollapsed && gd.collapsed[k] != dim)
        k++;
      gboolean batching = gd.nbatching && gd.operand_batching[0] == dim;
      if (k < gd.ncollapsed) {
        memmove(&gd.collapsed[k], &gd.collapsed[k + 1],
                sizeof(int64_t) * (gsize)(gd.ncollapsed - k - 1));
        gd.ncollapsed--;
        gd.noffset++;
        int rank = gd.noffset + it->rank - (gd.index_vector_dim < it->rank);
        if (rank > 8)
          continue;
        pick_sorted(g, rank, gd.noffset, gd.offset_dims);
        gd.rank = rank;
      }
      if (!batching)
        gd.slice_sizes[dim] = ot->dims[dim];
    }
    const Term *args[3] = {red >= 0 ? term_splat(0, ot, err) : new_arg(g, ot),
                           new_arg(g, it),
                           new_arg(g, gather_result_type(&gd, ot, it))};
    if (!args[0])
      return NULL;
    return term_op(op, 3, args, scatter_attrs(&gd), NULL, err);
  }
  g_ptr_array_set_size(g->arg_types, args0);
  return NULL;
}

/* dynamic_update_slice of a random operand: an update of random sizes
 * (the whole dim for 'dim'), i32 scalar starts (random values in
 * [-10, 10]: clamped). */
static const Term *gen_dynamic_update_slice(Gen *g, Op op, int dim, int minr,
                                            Diag *err) {
  int rank = rnd_at_least(g, minr, 1, 3);
  const Type *t = rshape(g, DT_F32, rank, dim);
  const Term *args[PARTIR_MAX_RANK + 2];
  int64_t sizes[PARTIR_MAX_RANK];
  args[0] = new_arg(g, t);
  for (int d = 0; d < rank; d++)
    sizes[d] =
        d == dim || rnd(g, 0, 1) ? t->dims[d] : rnd(g, 1, (int)t->dims[d]);
  args[1] = new_arg(g, type_tensor(DT_F32, rank, sizes));
  for (int d = 0; d < rank; d++)
    args[d + 2] = new_arg(g, type_tensor(DT_I32, 0, NULL));
  return term_op(op, rank + 2, args, attrs_empty(), NULL, err);
}

/* dynamic_slice of a random operand: random sizes (the whole dim for
 * 'dim'), i32 scalar starts (random values in [-10, 10]: clamped). */
static const Term *gen_dynamic_slice(Gen *g, Op op, int dim, int minr,
                                     Diag *err) {
  int rank = rnd_at_least(g, minr, 1, 3);
  const Type *t = rshape(g, DT_F32, rank, dim);
  const Term *args[PARTIR_MAX_RANK + 1];
  int64_t sizes[PARTIR_MAX_RANK];
  args[0] = new_arg(g, t);
  for (int d = 0; d < rank; d++) {
    sizes[d] =
        d == dim || rnd(g, 0, 1) ? t->dims[d] : rnd(g, 1, (int)t->dims[d]);
    args[d + 1] = new_arg(g, type_tensor(DT_I32, 0, NULL));
  }
  return term_op(op, rank + 1, args,
                 attrs1("slice_sizes", av_list(sizes, rank)), NULL, err);
}

/* pad with random low, high (-1 to 2) and interior (0 or 1) padding in
 * every dim but 'dim', by a scalar argument. */
static const Term *gen_pad(Gen *g, Op op, int dim, int minr, Diag *err) {
  int rank = rnd_at_least(g, minr, 1, 3);
  const Type *t = rshape(g, DT_F32, rank, dim);
  int64_t low[8], high[8], interior[8];
  for (int i = 0; i < rank; i++) {
    gboolean pads = i != dim && rnd(g, 0, 2) > 0;
    low[i] = pads ? rnd(g, -1, 2) : 0;
    high[i] = pads ? rnd(g, -1, 2) : 0;
    interior[i] = pads ? rnd(g, 0, 1) : 0;
    int64_t size =
        low[i] + high[i] + t->dims[i] + (t->dims[i] - 1) * interior[i];
    if (size < 1) /* cropped away: keep one element */
      high[i] += 1 - size;
  }
  const Term *args[2] = {new_arg(g, t),
                         new_arg(g, type_tensor(DT_F32, 0, NULL))};
  const char **keys = g_new(const char *, 3);
  AttrValue *vals = g_new(AttrValue, 3);
  keys[0] = g_intern_string("low");
  keys[1] = g_intern_string("high");
  keys[2] = g_intern_string("interior");
  vals[0] = av_list(low, rank);
  vals[1] = av_list(high, rank);
  vals[2] = av_list(interior, rank);
  return term_op(op, 2, args, attrs_intern(3, keys, vals), NULL, err);
}

/* The element type of 'op''s random instances: f32, but integers for
 * the operators that take nothing else (and, or, xor and not i1 too). */
static DType elementwise_dtype(Gen *g, Op op) {
  switch (op) {
  case OP_AND:
  case OP_OR:
  case OP_XOR:
  case OP_NOT:
    return rnd(g, 0, 1) ? DT_I32 : DT_I1;
  case OP_SHIFT_LEFT:
  case OP_SHIFT_RIGHT_ARITHMETIC:
  case OP_SHIFT_RIGHT_LOGICAL:
  case OP_POPCNT:
  case OP_CLZ:
    return rnd(g, 0, 1) ? DT_I32 : DT_UI8;
  default:
    return DT_F32;
  }
}

/* An elementwise operator over operands of one random shape (select's
 * condition is i1, compare gets a random direction, convert goes to
 * f64, the bitwise operators take integers). */
static const Term *gen_elementwise(Gen *g, Op op, int dim, int minr,
                                   Diag *err) {
  int rank = rnd_at_least(g, minr, 1, 3);
  const Type *t = rshape(g, elementwise_dtype(g, op), rank, dim);
  const Term *args[3];
  int n = op_arity(op);
  if (op == OP_SELECT) {
    args[0] = new_arg(g, type_with_dtype(t, DT_I1));
    args[1] = new_arg(g, t);
    args[2] = new_arg(g, t);
  } else {
    for (int i = 0; i < n; i++)
      args[i] = new_arg(g, t);
  }
  const Attrs *at = attrs_empty();
  if (op == OP_COMPARE) {
    static const char *const dirs[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
    AttrValue v = {.kind = AV_SYMBOL,
                   .sym = g_intern_string(dirs[rnd(g, 0, 5)])};
    at = attrs1("direction", v);
  }
  return term_op(op, n, args, at,
                 op == OP_CONVERT   ? type_with_dtype(t, DT_F64)
                 : op == OP_BITCAST ? type_with_dtype(t, DT_I32)
                                    : NULL,
                 err);
}

/* An application of 'op' whose result has rank > 'dim' (when dim >= 0)
 * and more than 'red' reductions (when red >= 0); NULL if impossible.
 * Its operands are new arguments of 'g'. */
static const Term *gen_op(Gen *g, Op op, int dim, int red) {
  g_autoptr(Diag) err = diag_new(NULL);
  int minr = dim >= 0 ? dim + 1 : (red >= 0 ? 0 : 1);
  switch (op) {
  case OP_MATMUL:
    return gen_matmul(g, op, dim, red, err);
  case OP_DOT_GENERAL:
    return gen_dot_general(g, op, red, minr, err);
  case OP_REDUCE_SUM:
  case OP_REDUCE_MAX:
  case OP_REDUCE_MIN:
  case OP_REDUCE_PROD:
  case OP_REDUCE_AND:
  case OP_REDUCE_OR:
    return gen_reduce(g, op, red, minr, err);
  case OP_BROADCAST_IN_DIM:
    return gen_broadcast(g, op, dim, minr, err);
  case OP_TRANSPOSE:
    return gen_transpose(g, op, dim, minr, err);
  case OP_RESHAPE:
    return gen_reshape(g, op, dim, minr, err);
  case OP_CONCATENATE:
    return gen_concatenate(g, op, dim, minr, err);
  case OP_SLICE:
    return gen_slice(g, op, dim, minr, err);
  case OP_GATHER:
    return gen_gather(g, op, dim, red, minr, err);
  case OP_DYNAMIC_SLICE:
    return red >= 0 ? NULL : gen_dynamic_slice(g, op, dim, minr, err);
  case OP_SCATTER_ADD:
    return gen_scatter_add(g, op, dim, red, err);
  case OP_DYNAMIC_UPDATE_SLICE:
    return red >= 0 ? NULL : gen_dynamic_update_slice(g, op, dim, minr, err);
  case OP_PAD:
    return gen_pad(g, op, dim, minr, err);
  case OP_CONSTANT:
  case OP_IOTA:
    return NULL;
  default:
    break;
  }
  if (red >= 0)
    return NULL;
  return gen_elementwise(g, op, dim, minr, err);
}

/* Wraps a body into a module with one function over the generated args. */
static Module *instance_module(Gen *g, const Term *result) {
  Module *m = module_new();
  Func *f = g_new0(Func, 1);
  f->name = g_strdup("main");
  f->nargs = (int)g->arg_types->len;
  f->arg_names = g_new0(char *, (gsize)f->nargs + 1);
  f->arg_types = g_new(const Type *, (gsize)MAX(f->nargs, 1));
  for (int i = 0; i < f->nargs; i++) {
    f->arg_names[i] = g_strdup_printf("a%d", i);
    f->arg_types[i] = g_ptr_array_index(g->arg_types, i);
  }
  f->nresults = 1;
  f->result_types = g_new(const Type *, 1);
  f->result_types[0] = result->type;
  f->body = term_tuple(1, &result);
  g_ptr_array_add(m->funcs, f);
  return m;
}

Module *check_random_op(Op op, guint32 seed) {
  /* every third instance an embedding lookup, every third windowed */
  Gen g = {g_rand_new_with_seed(seed), g_ptr_array_new(), (int)(seed % 3)};
  const Term *t = op_is_collective(op) ? NULL : gen_op(&g, op, -1, -1);
  Module *m = t ? instance_module(&g, t) : NULL;
  g_rand_free(g.rng);
  g_ptr_array_unref(g.arg_types);
  return m;
}

/* ------------------------------------------------------------ the walker */

typedef struct Walker {
  const RuleSet *rs;
  GRand *rng;
  GHashTable *applied; /* rule name -> count of checked applications */
  GHashTable *failed;  /* names of the rules whose check failed */
  const Rule *stepped; /* the rule the last random step applied, or NULL */
  guint stepped_pass;  /* ... or the tag of the pass it ran, or 0 */
  guint stopped;       /* tags of the passes that failed: not run again */
  GString *out;
  int failures;      /* every failure reported */
  int pass_failures; /* ... of those, failures of a pass, not of a rule */
  guint32 seed;
  GHashTable *type_changes; /* probe mode: Rule* -> message; no checks */
  Reference ref;            /* outputs of the current walk's start */
  gboolean fissions; /* walks take fissions too (check-rules' walks, which
                        exercise rules, do not) */
} Walker;

/* A random width for size n with at most 8 parts, so that nests of
 * regions stay cheap to interpret.  With 'uneven', widths that pad the
 * last part are drawn too: the instance of each rule checks it on padded
 * parts (OP-sum's masks among them).  Random walks draw divisors: a
 * propagation over uneven ranges nested inside each other's padded parts
 * is not checked (docs/spmd.md, "Uneven sizes"). */
static int64_t random_width(GRand *rng, int64_t n, gboolean uneven) {
  int64_t ds[64];
  int k = 0;
  for (int64_t d = 1; d <= n && k < 64; d++)
    if ((n + d - 1) / d <= 8 && (uneven || n % d == 0))
      ds[k++] = d;
  return ds[g_rand_int_range(rng, 0, k)];
}

/* Fills parameters for 'rule' at 't': widths and dims chosen at random
 * among the values that can fit. */
static int random_params(Walker *w, const Rule *rule, const Term *t,
                         RuleArg *args, gboolean uneven) {
  int n = 0;
  for (int i = 0; i < rule->nparams; i++) {
    RuleArg *a = &args[n];
    a->name = rule->params[i];
    if (rule->axis_params & (1u << i))
      continue; /* axes are optional: leave unbound */
    a->is_axis = FALSE;
    if (strcmp(a->name, "d") == 0 && t->type->kind == TY_TENSOR &&
        t->type->rank > 0)
      a->value = g_rand_int_range(w->rng, 0, t->type->rank);
    else
      a->value = 0;
    n++;
  }
  /* widths: a divisor of the dimension the rule splits */
  for (int i = 0; i < n; i++) {
    if (strcmp(args[i].name, "w") != 0)
      continue;
    int64_t size = 1;
    if (rule->kind == RULE_OP_TILE && rule->index < t->type->rank)
      size = t->type->dims[rule->index];
    else if (rule->kind == RULE_OP_SUM) {
      TileSpec spec;
      if (spec_of(w->rs, t, &spec) && rule->index < spec.nred)
        for (int k = 0; k < t->nargs; k++)
          if (spec.red[rule->index][k] >= 0)
            size = t->args[k]->type->dims[spec.red[rule->index][k]];
    } else {
      int64_t d = 0;
      for (int k = 0; k < n; k++)
        if (strcmp(args[k].name, "d") == 0)
          d = args[k].value;
      if (t->type->kind == TY_TENSOR && d < t->type->rank)
        size = t->type->dims[d];
    }
    args[i].value = random_width(w->rng, size, uneven);
  }
  return n;
}

static void count(Walker *w, const Rule *r) {
  int c = GPOINTER_TO_INT(g_hash_table_lookup(w->applied, r->name));
  g_hash_table_insert(w->applied, r->name, GINT_TO_POINTER(c + 1));
}

/* Checks 'next' against 'start'; reports with the step that led there. */
static gboolean check_step(Walker *w, const State *start, const State *prev,
                           const State *next, const char *step) {
  g_autoptr(Diag) why = diag_new(NULL);
  g_autoptr(GString) text = g_string_new(NULL);
  state_print(text, next, FALSE);
  g_autoptr(Diag) errors = diag_new(NULL);
  g_autoptr(Module) again = parse_text("(state)", text->str, text->len, errors);
  gboolean ok = again && module_entry(again)->body == next->func.body;
  if (!ok)
    diag_reason(why, "the state does not parse back to itself:\n%s",
                diag_text(errors));
  if (ok)
    ok = same_meaning(&start->func, start->func.body, next->func.body, w->seed,
                      &w->ref, why);
  if (!ok) {
    w->failures++;
    g_autoptr(GString) before = g_string_new(NULL);
    state_print(before, prev, FALSE);
    g_string_append_printf(w->out, "FAIL after '%s': %s\nbefore:\n%safter:\n%s",
                           step, diag_text(why), before->str, text->str);
  }
  return ok;
}

/* Pass 'tag' over 's' as a step; NULL when it finds no fixed point,
 * which is a failure, reported the first time. */
static State *pass_step(Walker *w, State *s, guint tag, GString *step) {
  g_autoptr(Diag) why = diag_new(NULL);
  g_string_assign(step, tag == RULE_TAG_PROPAGATE ? "propagate"
                        : tag == RULE_TAG_FUSE    ? "fuse"
                                                  : "simplify");
  if (w->stopped & tag)
    return NULL;
  w->stepped_pass = tag;
  const Term *body =
      tag == RULE_TAG_PROPAGATE
          ? rw_propagate(w->rs, s->func.body, NULL, NULL, why)
          : rw_fixpoint(w->rs, s->func.body, tag, NULL, NULL, why);
  if (body)
    return state_with_body(s, body);
  w->stopped |= tag;
  if (!w->type_changes) { /* probe mode checks types only */
    w->failures++;
    w->pass_failures++;
    g_string_append_printf(w->out, "FAIL at '%s': %s\n", step->str,
                           diag_text(why));
  }
  return NULL;
}

/* A fission (src/rewrite/fission.c) at a random value inside a random
 * region, along a random dimension of the region's width; NULL when the
 * draw finds none. */
static State *fission_step(Walker *w, State *s, GString *step) {
  g_autoptr(GPtrArray) locs = state_locations(s);
  g_autoptr(GPtrArray) regions = g_ptr_array_new();
  for (guint i = 0; i < locs->len; i++) {
    const Location *l = g_ptr_array_index(locs, i);
    if (l->term->kind == TM_TILE || l->term->kind == TM_SUM)
      g_ptr_array_add(regions, (gpointer)l);
  }
  if (regions->len == 0)
    return NULL;
  const Location *region = g_ptr_array_index(
      regions, g_rand_int_range(w->rng, 0, (gint32)regions->len));
  const Term *g = region->term;
  g_autoptr(GPtrArray) inside = g_ptr_array_new();
  for (guint i = 0; i < locs->len; i++) {
    const Location *l = g_ptr_array_index(locs, i);
    if (l->term->type->kind == TY_TENSOR && term_uses(l->term, g->binder))
      g_ptr_array_add(inside, (gpointer)l);
  }
  if (inside->len == 0)
    return NULL;
  const Location *value = g_ptr_array_index(
      inside, g_rand_int_range(w->rng, 0, (gint32)inside->len));
  int dims[PARTIR_MAX_RANK], n = 0;
  for (int d = 0; d < value->term->type->rank; d++)
    if (value->term->type->dims[d] == g->range->w)
      dims[n++] = d;
  if (n == 0)
    return NULL;
  int d = dims[g_rand_int_range(w->rng, 0, n)];
  g_autoptr(Diag) why = diag_new(NULL);
  State *next = rw_fission(s, value, region, d, why);
  if (next)
    g_string_printf(step, "fission %%%s %d %%%s", value->name, d, region->name);
  return next;
}

/* One random legal step from 's'; NULL when the chosen step did not apply.
 * 'w->stepped' and 'w->stepped_pass' say what it was. */
static State *random_step(Walker *w, State *s, GString *step) {
  g_autoptr(Diag) why = diag_new(NULL);
  w->stepped = NULL;
  w->stepped_pass = 0;
  if (w->fissions && g_rand_int_range(w->rng, 0, 11) == 0)
    return fission_step(w, s, step);
  int choice = g_rand_int_range(w->rng, 0, 10);
  if (choice == 0)
    return pass_step(w, s, RULE_TAG_PROPAGATE, step);
  if (choice == 1)
    return pass_step(
        w, s, g_rand_boolean(w->rng) ? RULE_TAG_FUSE : RULE_TAG_SIMPLIFY, step);
  /* a rule at a location where it applies */
  g_autoptr(GPtrArray) locs = state_locations(s);
  if (locs->len == 0)
    return NULL;
  const Location *loc =
      g_ptr_array_index(locs, g_rand_int_range(w->rng, 0, (gint32)locs->len));
  const Term *t = loc->term;
  const Term *opt = t->kind == TM_SLICE ? t->args[0] : t;
  g_autoptr(GPtrArray) cands = g_ptr_array_new();
  for (guint i = 0; i < w->rs->rules->len; i++) {
    const Rule *r = g_ptr_array_index(w->rs->rules, i);
    if (g_hash_table_size(w->failed) && /* hashing every name is slow */
        g_hash_table_contains(w->failed, r->name))
      continue; /* reported once: let the walks check the others */
    gboolean rev = r->kind == RULE_OP_TILE_REV || r->kind == RULE_OP_SUM_REV;
    const Term *body =
        t->kind == TM_TILE || t->kind == TM_SUM ? t->args[0] : NULL;
    if (r->kind == RULE_PATTERN ||
        (rev ? body && body->kind == TM_OP && r->op == body->op
         : r->kind == RULE_SINK_SLICE
             ? t->kind == TM_OP && t->op == OP_SLICE &&
                   t->args[0]->kind == TM_OP && t->args[0]->op == r->op
             : opt->kind == TM_OP && r->op == opt->op &&
                   (r->kind == RULE_SLICE_OP) == (t->kind == TM_SLICE)))
      g_ptr_array_add(cands, (gpointer)r);
  }
  while (cands->len > 0) {
    guint k = (guint)g_rand_int_range(w->rng, 0, (gint32)cands->len);
    const Rule *r = g_ptr_array_index(cands, k);
    g_ptr_array_remove_index_fast(cands, k);
    RuleArg args[RULE_MAX_VARS];
    int nargs = random_params(w, r, t, args, FALSE);
    State *next = rw_apply(w->rs, s, r, loc, args, nargs, why);
    if (next) {
      g_string_printf(step, "apply %s at %%%s", r->name, loc->name);
      for (int i = 0; i < nargs; i++)
        g_string_append_printf(step, " %s=%" G_GINT64_FORMAT, args[i].name,
                               args[i].value);
      count(w, r);
      w->stepped = r;
      return next;
    }
  }
  return NULL;
}

/* Probe mode: tries every written rule everywhere in 's' and records
 * those whose right side has another type than what it matched. */
static void probe_types(Walker *w, const State *s) {
  g_autoptr(GPtrArray) locs = state_locations(s);
  g_autoptr(Diag) why = diag_new(NULL);
  for (guint i = 0; i < w->rs->rules->len; i++) {
    const Rule *r = g_ptr_array_index(w->rs->rules, i);
    if (r->kind != RULE_PATTERN || g_hash_table_contains(w->type_changes, r))
      continue;
    for (guint k = 0; k < locs->len; k++) {
      const Location *l = g_ptr_array_index(locs, k);
      RuleArg args[RULE_MAX_VARS];
      int nargs = random_params(w, r, l->term, args, FALSE);
      const Term *out = match_apply(r, l->term, args, nargs, why);
      if (out && out->type != l->term->type) {
        g_autofree char *a = type_to_string(l->term->type);
        g_autofree char *b = type_to_string(out->type);
        g_hash_table_insert(w->type_changes, (gpointer)r,
                            g_strdup_printf("%s becomes %s", a, b));
        break;
      }
    }
  }
}

static void walk(Walker *w, State *start, int steps) {
  State *s = state_ref(start);
  g_autoptr(GString) step = g_string_new(NULL);
  for (int i = 0; i < steps; i++) {
    if (w->type_changes)
      probe_types(w, s);
    State *next = random_step(w, s, step);
    if (!next)
      continue;
    gboolean ok = w->type_changes || check_step(w, start, s, next, step->str);
    if (!ok && w->stepped) {
      g_hash_table_add(w->failed, w->stepped->name);
    } else if (!ok) {
      w->pass_failures++;
      w->stopped |= w->stepped_pass;
    }
    state_unref(s);
    s = next;
    if (!ok)
      break;
  }
  state_unref(s);
}

static Walker walker_new(const RuleSet *rs, GString *out, guint32 seed) {
  Walker w = {.rs = rs, .out = out, .seed = seed};
  w.rng = g_rand_new_with_seed(seed);
  w.applied = g_hash_table_new(g_str_hash, g_str_equal);
  w.failed = g_hash_table_new(g_str_hash, g_str_equal);
  return w;
}

static void walker_clear(Walker *w) {
  g_rand_free(w->rng);
  g_hash_table_unref(w->applied);
  g_hash_table_unref(w->failed);
  reference_clear(&w->ref);
  if (w->type_changes)
    g_hash_table_unref(w->type_changes);
}

gboolean check_walks(const RuleSet *rs, Module *m, guint32 seed, int walks,
                     int steps, GString *out) {
  Walker w = walker_new(rs, out, seed);
  w.fissions = TRUE;
  g_autoptr(State) start = state_new(m);
  g_autoptr(Diag) why = diag_new(NULL);
  if (!interp_check(&start->func, why)) {
    g_string_append_printf(out, "%s\n", diag_text(why));
    w.failures++;
  }
  for (int i = 0; i < walks && w.failures == 0; i++)
    walk(&w, start, steps);
  walker_clear(&w);
  return w.failures == 0;
}

/* --------------------------------------------------------- check-rules */

/* A static slice of 't' narrowing some of the dimensions its tiling
 * spec lets a rule split, at random (start, limit and a stride of 1 or
 * 2), or NULL when it narrows none. */
static const Term *random_static_slice(const RuleSet *rs, GRand *rng,
                                       const Term *t) {
  TileSpec spec;
  if (!spec_of(rs, t, &spec))
    return NULL;
  int rank = t->type->rank;
  int64_t start[PARTIR_MAX_RANK], limit[PARTIR_MAX_RANK], step[PARTIR_MAX_RANK];
  int open[PARTIR_MAX_RANK], nopen = 0;
  for (int d = 0; d < rank; d++)
    if (t->type->dims[d] >= 2 && d < spec.nout && spec.out_ok[d])
      open[nopen++] = d;
  if (nopen == 0)
    return NULL;
  int sure = open[g_rand_int_range(rng, 0, nopen)]; /* one at least */
  gboolean any = FALSE;
  for (int d = 0; d < rank; d++) {
    int64_t n = t->type->dims[d];
    start[d] = 0;
    limit[d] = n;
    step[d] = 1;
    if (n < 2 || d >= spec.nout || !spec.out_ok[d] ||
        (d != sure && g_rand_boolean(rng)))
      continue;
    start[d] = g_rand_int_range(rng, 0, (gint32)n - 1);
    limit[d] = g_rand_int_range(rng, (gint32)start[d] + 1, (gint32)n + 1);
    step[d] = g_rand_int_range(rng, 1, 3);
    any = TRUE;
  }
  if (!any)
    return NULL;
  AttrValue v[3] = {attr_new_ints(rank, start), attr_new_ints(rank, limit),
                    attr_new_ints(rank, step)};
  const Attrs *a =
      attrs_build(3, (const char *[]){"start", "limit", "strides"}, v);
  g_autoptr(Diag) err = diag_new_quiet();
  return term_op(OP_SLICE, 1, &t, a, NULL, err);
}

/* Checks a derived rule on up to 'tries' random instances. */
static int check_derived(Walker *w, const Rule *r, int tries) {
  int checked = 0;
  for (int i = 0; i < tries * 4 && checked < tries; i++) {
    gboolean rev = r->kind == RULE_OP_TILE_REV || r->kind == RULE_OP_SUM_REV;
    gboolean sum = r->kind == RULE_OP_SUM || r->kind == RULE_OP_SUM_REV;
    Gen g = {w->rng, g_ptr_array_new(), 0};
    gboolean sink = r->kind == RULE_SINK_SLICE;
    /* sink-slice: an instance whose first dim a slice can narrow */
    const Term *t = gen_op(&g, r->op, sum ? -1 : r->index, sum ? r->index : -1);
    if (sink && t) /* the slice the rule takes in */
      t = random_static_slice(w->rs, w->rng, t);
    if (!t || (!sum && r->index >= t->type->rank)) {
      g_ptr_array_unref(g.arg_types);
      continue;
    }
    g_autoptr(Module) m = instance_module(&g, t);
    g_ptr_array_unref(g.arg_types);
    g_autoptr(State) s = state_new(m);
    g_autoptr(Diag) why = diag_new(NULL);
    g_autoptr(State) target = NULL;
    if (r->kind == RULE_SLICE_OP) {
      /* tile the application along the rule's dim: that makes the slice */
      RuleArg a[2] = {{g_intern_string("d"), FALSE, r->index, NULL},
                      {g_intern_string("w"), FALSE,
                       random_width(w->rng, t->type->dims[r->index], TRUE),
                       NULL}};
      g_autoptr(GPtrArray) locs = state_locations(s);
      const Location *loc = g_ptr_array_index(locs, locs->len - 1);
      target =
          rw_apply(w->rs, s, ruleset_find(w->rs, "arg-tile"), loc, a, 2, why);
    } else if (rev) {
      /* split the application with the forward rule: that makes the
       * region the reverse rule joins again */
      const Rule *fwd = ruleset_derived(
          w->rs, r->kind == RULE_OP_TILE_REV ? RULE_OP_TILE : RULE_OP_SUM,
          r->op, r->index);
      g_autoptr(GPtrArray) locs = state_locations(s);
      const Location *loc = g_ptr_array_index(locs, locs->len - 1);
      RuleArg a[RULE_MAX_VARS];
      int na = fwd ? random_params(w, fwd, loc->term, a, TRUE) : 0;
      target = fwd ? rw_apply(w->rs, s, fwd, loc, a, na, why) : NULL;
    } else {
      target = state_ref(s);
    }
    if (!target)
      continue;
    g_autoptr(GPtrArray) locs = state_locations(target);
    for (guint k = 0; k < locs->len; k++) {
      const Location *loc = g_ptr_array_index(locs, k);
      RuleArg args[RULE_MAX_VARS];
      int nargs = random_params(w, r, loc->term, args, TRUE);
      g_autoptr(State) next = rw_apply(w->rs, target, r, loc, args, nargs, why);
      if (!next)
        continue;
      g_autofree char *step =
          g_strdup_printf("apply %s at %%%s", r->name, loc->name);
      if (!check_step(w, target, target, next, step))
        return -1;
      if (rev && next->func.body != s->func.body) {
        w->failures++;
        g_autoptr(GString) text = g_string_new(NULL);
        state_print(text, next, FALSE);
        g_string_append_printf(w->out,
                               "FAIL after '%s': the forward rule and "
                               "'%s' do not give back the program:\n%s",
                               step, r->name, text->str);
        return -1;
      }
      checked++;
      break;
    }
  }
  return checked;
}

/* Random walks from a matmul chain tiled two ways (nested regions), once
 * per round; none once propagation has failed. */
static void walk_matmul_chain(Walker *w) {
  if (w->stopped & RULE_TAG_PROPAGATE)
    return;
  Gen c = {w->rng, g_ptr_array_new(), 0};
  int64_t d[4] = {4, 6, 4, 6}; /* x 4x6, y 6x4, z 4x6 */
  const Term *x = new_arg(&c, type_tensor(DT_F32, 2, d));
  const Term *y = new_arg(&c, type_tensor(DT_F32, 2, d + 1));
  const Term *z = new_arg(&c, type_tensor(DT_F32, 2, d + 2));
  g_autoptr(Diag) err = diag_new(NULL);
  const Term *xy =
      term_op(OP_MATMUL, 2, (const Term *[]){x, y}, attrs_empty(), NULL, err);
  const Term *xyz =
      term_op(OP_MATMUL, 2, (const Term *[]){xy, z}, attrs_empty(), NULL, err);
  g_autoptr(Module) m = instance_module(&c, xyz);
  g_ptr_array_unref(c.arg_types);
  g_autoptr(State) s0 = state_new(m);
  g_autoptr(Diag) why = diag_new(NULL);
  g_autoptr(State) s = rw_script(
      w->rs, s0, "arg-tile 0 0 2; arg-tile 1 1 2; arg-tile 2 0 2; propagate",
      NULL, why);
  if (!s) { /* the shapes suit the widths: propagate found no fixed point */
    w->stopped |= RULE_TAG_PROPAGATE;
    w->failures++;
    w->pass_failures++;
    g_string_append_printf(w->out, "FAIL tiling a matmul chain: %s\n",
                           diag_text(why));
    return;
  }
  for (int k = 0; k < 8; k++)
    walk(w, s, 12);
}

/* Random walks from add(sum (\r -> x[r] . y[r]), sum (\s -> z[s] . y[s]))
 * over one axis: two partial products added, as a backward pass makes
 * them (sum-add's left side; propagation merges them, so a walk from a
 * propagated program never meets it). */
static void walk_sum_pair(Walker *w) {
  Gen c = {w->rng, g_ptr_array_new(), 0};
  int64_t d[3] = {4, 6, 4}; /* x, z 4x6, y 6x4 */
  const Term *x = new_arg(&c, type_tensor(DT_F32, 2, d));
  const Term *y = new_arg(&c, type_tensor(DT_F32, 2, d + 1));
  const Term *z = new_arg(&c, type_tensor(DT_F32, 2, d));
  g_autoptr(Diag) err = diag_new(NULL);
  const char *axis = g_intern_string("model");
  const Type *range = type_range(6, 3);
  const Term *parts[2];
  for (int k = 0; k < 2; k++) {
    const Term *r = term_bvar(0, range);
    const Term *a = term_slice(1, k ? z : x, r, err);
    const Term *b = term_slice(0, y, r, err);
    const Term *ab = a && b ? term_op(OP_MATMUL, 2, (const Term *[]){a, b},
                                      attrs_empty(), NULL, err)
                            : NULL;
    parts[k] = ab ? term_sum(range, axis, ab, 0, err) : NULL;
  }
  const Term *sum = parts[0] && parts[1]
                        ? term_op(OP_ADD, 2, parts, attrs_empty(), NULL, err)
                        : NULL;
  if (sum) {
    g_autoptr(Module) m = instance_module(&c, sum);
    g_autoptr(State) s = state_new(m);
    for (int k = 0; k < 4; k++)
      walk(w, s, 6);
  }
  g_ptr_array_unref(c.arg_types);
}

gboolean check_rules(const RuleSet *rs, guint32 seed, int tries, GString *out) {
  /* instances are made by tiling arguments: without the rule, none */
  if (!ruleset_find(rs, "arg-tile")) {
    g_string_append(out, "check-rules: no 'arg-tile' rule is loaded (it "
                         "makes the instances; add rules/partir.rules)\n");
    return FALSE;
  }
  Walker w = walker_new(rs, out, seed);
  /* written rules: random walks from random applications of every op */
  for (int round = 0; round < tries; round++)
    for (int op = 0; op < OP_COUNT_; op++) {
      Gen g = {w.rng, g_ptr_array_new(), 0};
      const Term *t = gen_op(&g, (Op)op, -1, -1);
      if (t) {
        g_autoptr(Module) m = instance_module(&g, t);
        g_autoptr(State) s = state_new(m);
        walk(&w, s, 8);
      }
      if (op == OP_MATMUL) {
        walk_matmul_chain(&w);
        walk_sum_pair(&w);
      }
      g_ptr_array_unref(g.arg_types);
    }
  /* every rule, whatever failed before it */
  int failed = 0, unexercised = 0;
  for (guint i = 0; i < rs->rules->len; i++) {
    const Rule *r = g_ptr_array_index(rs->rules, i);
    int n;
    if (r->kind == RULE_PATTERN && (r->tags & RULE_TAG_SPMD))
      n = check_spmd_rule(r, w.rng, tries, out);
    else if (r->kind == RULE_PATTERN)
      n = g_hash_table_contains(w.failed, r->name)
              ? -1
              : GPOINTER_TO_INT(g_hash_table_lookup(w.applied, r->name));
    else
      n = check_derived(&w, r, MAX(tries / 4, 2));
    if (n < 0) {
      failed++;
      g_string_append_printf(
          out, "FAIL  %-24s wrong on an instance shown above (%s)\n", r->name,
          r->origin);
    } else if (n == 0) {
      unexercised++;
      g_string_append_printf(out, "NONE  %-24s no instance found (%s)\n",
                             r->name, r->origin);
    } else {
      g_string_append_printf(out, "ok    %-24s %d instance%s\n", r->name, n,
                             n == 1 ? "" : "s");
    }
  }
  g_string_append_printf(out, "%u rules, %d failed, %d without an instance",
                         rs->rules->len, failed, unexercised);
  if (w.pass_failures > 0)
    g_string_append_printf(out, "; %d failure%s of propagate, fuse or simplify",
                           w.pass_failures, w.pass_failures == 1 ? "" : "s");
  g_string_append_c(out, '\n');
  walker_clear(&w);
  return failed == 0 && w.pass_failures == 0 && unexercised == 0;
}

gboolean check_rule_types(const RuleSet *rs, Diag *errors) {
  g_autoptr(GString) ignored = g_string_new(NULL);
  Walker w = walker_new(rs, ignored, 1);
  w.type_changes = g_hash_table_new_full(NULL, NULL, NULL, g_free);
  for (int op = 0; op < OP_COUNT_; op++) {
    Gen g = {w.rng, g_ptr_array_new(), 0};
    const Term *t = gen_op(&g, (Op)op, -1, -1);
    if (t) {
      g_autoptr(Module) m = instance_module(&g, t);
      g_autoptr(State) s = state_new(m);
      walk(&w, s, 4);
    }
    g_ptr_array_unref(g.arg_types);
  }
  for (guint i = 0; i < rs->rules->len; i++) {
    const Rule *r = g_ptr_array_index(rs->rules, i);
    g_autoptr(Diag) msg = diag_new(NULL);
    if (r->kind == RULE_PATTERN && (r->tags & RULE_TAG_SPMD) &&
        check_spmd_rule_type(r, w.rng, msg))
      g_hash_table_insert(w.type_changes, (gpointer)r,
                          g_strdup(diag_text(msg)));
  }
  gboolean ok = TRUE;
  for (guint i = 0; i < rs->rules->len; i++) {
    const Rule *r = g_ptr_array_index(rs->rules, i);
    const char *msg = g_hash_table_lookup(w.type_changes, r);
    if (!msg)
      continue;
    ok = FALSE;
    Diag d;
    diag_init(&d, r->src);
    diag_error(&d, r->loc, "rule '%s' changes the type of what it rewrites: %s",
               r->name, msg);
    diag_append(errors, &d);
    diag_clear(&d);
  }
  walker_clear(&w);
  return ok;
}
