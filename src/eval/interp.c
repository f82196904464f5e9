/* interp.c — the reference interpreter: the meaning of every term.
 *
 * Evaluates a function's result terms over Tensors, operands first, with
 * base operators delegated to kernels.c.  Tiles and sums run their body
 * sequentially for every range value; slices read the chunk the range
 * value selects.  It is the oracle that rewrites, lowering and compiled
 * code are checked against, so it favours plainness over speed.
 *
 * Sharing: each distinct term is evaluated once per environment.  A term
 * is memoised in the table of the region of the innermost binder it uses
 * (closed terms at depth 0); entering a new iteration of a region clears
 * that region's table.  Within one table a term pointer has one meaning,
 * because the region depth and the term's smallest loose index fix the
 * depth it is used at.
 *
 * requires: the function is well typed (every stored Term is).
 */
#include "eval/eval.h"

#include <string.h>

typedef struct Interp {
  Tensor *const *inputs;
  gboolean interrupted; /* partir_interrupt was seen: results are garbage */
  int64_t start[PARTIR_MAX_REGIONS + 2]; /* binder value of region depth k */
  GHashTable *memo[PARTIR_MAX_REGIONS + 2];
} Interp;

static Tensor *eval(Interp *in, int depth, const Term *t);

/* Views a shape as [outer, size of dim d, inner] for chunk copies. */
static void split_at(const Type *ty, int d, int64_t *outer, int64_t *inner) {
  *outer = 1;
  *inner = 1;
  for (int i = 0; i < d; i++)
    *outer *= ty->dims[i];
  for (int i = d + 1; i < ty->rank; i++)
    *inner *= ty->dims[i];
}

/* Copies along dimension 'd': dst[.., dst_off + j, ..] = src[.., src_off +
 * j, ..] for j < count. */
static void copy_chunk(Tensor *dst, int64_t dst_off, const Tensor *src,
                       int64_t src_off, int d, int64_t count) {
  int64_t outer, inner;
  split_at(dst->type, d, &outer, &inner);
  int64_t dn = dst->type->dims[d], sn = src->type->dims[d];
  gsize bytes = (gsize)(count * inner) * sizeof(double);
  for (int64_t o = 0; o < outer; o++) {
    int64_t di = (o * dn + dst_off) * inner, si = (o * sn + src_off) * inner;
    if (dst->f)
      memcpy(dst->f + di, src->f + si, bytes);
    else
      memcpy(dst->i + di, src->i + si, bytes);
  }
}

static void clear_from(Interp *in, int level) {
  for (int k = level; k < PARTIR_MAX_REGIONS + 2 && in->memo[k]; k++)
    g_hash_table_remove_all(in->memo[k]);
}

static GHashTable *memo_at(Interp *in, int level) {
  if (!in->memo[level])
    in->memo[level] =
        g_hash_table_new_full(NULL, NULL, NULL, (GDestroyNotify)tensor_unref);
  return in->memo[level];
}

static Tensor *eval_region(Interp *in, int depth, const Term *t) {
  const Type *range = t->range;
  int64_t count = range->n / range->w;
  Tensor *out = tensor_new(t->type);
  int inner = depth + 1;
  for (int64_t k = 0; k < count && !in->interrupted; k++) {
    if (partir_interrupt)
      in->interrupted = TRUE;
    in->start[inner] = k * range->w;
    clear_from(in, inner);
    Tensor *v = eval(in, inner, t->args[0]);
    if (t->kind == TM_TILE) {
      copy_chunk(out, k * range->w, v, 0, t->index, range->w);
    } else {
      int64_t n = type_numel(t->type);
      for (int64_t j = 0; j < n; j++) {
        if (out->f)
          out->f[j] += v->f[j]; /* accumulate in double, round once */
        else                    /* wrapping, as the integer types do */
          out->i[j] = (int64_t)((uint64_t)out->i[j] + (uint64_t)v->i[j]);
      }
    }
    tensor_unref(v);
  }
  clear_from(in, inner);
  if (t->kind == TM_SUM)
    tensor_round(out);
  return out;
}

static Tensor *eval_uncached(Interp *in, int depth, const Term *t) {
  switch (t->kind) {
  case TM_OP: {
    Tensor *stack_args[8];
    Tensor **args =
        t->nargs <= 8 ? stack_args : g_new(Tensor *, (gsize)t->nargs);
    for (int i = 0; i < t->nargs; i++)
      args[i] = eval(in, depth, t->args[i]);
    Tensor *r = kernel_eval(t, args);
    for (int i = 0; i < t->nargs; i++)
      tensor_unref(args[i]);
    if (args != stack_args)
      g_free(args);
    return r;
  }
  case TM_SLICE: {
    Tensor *x = eval(in, depth, t->args[0]);
    const Term *r = t->args[1];
    g_assert(r->kind == TM_BVAR);
    Tensor *out = tensor_new(t->type);
    copy_chunk(out, 0, x, in->start[depth - r->index], t->index, r->type->w);
    tensor_unref(x);
    return out;
  }
  case TM_TILE:
  case TM_SUM:
    return eval_region(in, depth, t);
  default:
    g_assert_not_reached();
  }
}

static Tensor *eval(Interp *in, int depth, const Term *t) {
  if (t->kind == TM_ARG)
    return tensor_ref(in->inputs[t->index]);
  int level = term_home_depth(t, depth);
  GHashTable *memo = memo_at(in, level);
  Tensor *v = g_hash_table_lookup(memo, t);
  if (v)
    return tensor_ref(v);
  v = eval_uncached(in, depth, t);
  g_hash_table_insert(memo, (gpointer)t, tensor_ref(v));
  return v;
}

static gboolean too_large(const Type *t, Diag *diag) {
  if (t && t->kind == TY_TENSOR && type_numel(t) > INTERP_MAX_ELEMS) {
    g_autofree char *ty = type_to_string(t);
    diag_reason(diag,
                "a value of type %s is too large for the reference "
                "interpreter (limit %" G_GINT64_FORMAT " elements)",
                ty, INTERP_MAX_ELEMS);
    return TRUE;
  }
  return FALSE;
}

/* Refuses programs with a tensor too large to interpret here. */
static gboolean check_sizes(const Term *root, Diag *diag) {
  g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
  g_autoptr(GPtrArray) todo = g_ptr_array_new();
  g_ptr_array_add(todo, (gpointer)root);
  while (todo->len > 0) {
    const Term *t = g_ptr_array_steal_index_fast(todo, todo->len - 1);
    if (!g_hash_table_add(seen, (gpointer)t))
      continue;
    if (too_large(t->type, diag))
      return FALSE;
    if (t->kind == TM_OP && op_is_collective(t->op) && !kernel_comm) {
      diag_reason(diag,
                  "'%s' is a collective of an SPMD program: run it with the "
                  "SPMD simulator (partir lower --simulate)",
                  op_name(t->op));
      return FALSE;
    }
    for (int i = 0; i < t->nargs; i++)
      g_ptr_array_add(todo, (gpointer)t->args[i]);
  }
  return TRUE;
}

Tensor *interp_random_input(const Func *f, int i, gint64 seed) {
  /* one stream per argument, so that giving one input leaves the others */
  guint32 key[2] = {(guint32)seed, (guint32)i};
  GRand *rng = g_rand_new_with_seed_array(key, 2);
  Tensor *t = tensor_new(f->arg_types[i]);
  tensor_fill_random(t, rng);
  g_rand_free(rng);
  return t;
}

gboolean interp_check(const Func *f, Diag *diag) {
  for (int i = 0; i < f->nargs; i++)
    if (too_large(f->arg_types[i], diag))
      return FALSE;
  return check_sizes(f->body, diag);
}

GPtrArray *interp_run_seeded(const Func *f, gint64 seed, GError **error) {
  Tensor **inputs = g_new0(Tensor *, (gsize)f->nargs + 1);
  for (int i = 0; i < f->nargs; i++)
    inputs[i] = interp_random_input(f, i, seed);
  GPtrArray *out = interp_run(f, inputs, error);
  for (int i = 0; i < f->nargs; i++)
    tensor_unref(inputs[i]);
  g_free(inputs);
  return out;
}

GPtrArray *interp_run(const Func *f, Tensor *const *inputs, GError **error) {
  for (int i = 0; i < f->nargs; i++)
    g_assert(inputs[i]->type == f->arg_types[i]);
  Interp in = {.inputs = inputs};
  GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)tensor_unref);
  for (int i = 0; i < f->nresults && !in.interrupted; i++)
    g_ptr_array_add(out, eval(&in, 0, f->body->args[i]));
  for (int k = 0; k < PARTIR_MAX_REGIONS + 2; k++)
    if (in.memo[k])
      g_hash_table_unref(in.memo[k]);
  if (in.interrupted || partir_interrupt) {
    g_ptr_array_unref(out);
    g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_INTERRUPTED, "interrupted");
    return NULL;
  }
  return out;
}
