/* interp.c — the reference interpreter: the meaning of every term.
 *
 * Evaluates a function's result terms over Tensors, operands first, with
 * base operators delegated to kernels.c.  Tiles and sums run their body
 * sequentially for every range value; slices read the chunk the range
 * value selects.  It is the oracle that rewrites, lowering and compiled
 * code are checked against, so it favours plainness over speed.
 *
 * Sharing: each distinct term is evaluated once per environment.  A term
 * is memoised in the table of its home, the region depth of the highest
 * binder level it uses (closed terms at depth 0); entering a new
 * iteration of a region clears that region's table.  A region is run at
 * its home: when one is needed inside a deeper region (a value computed
 * once per outer iteration, first asked for from inside), the tables and
 * binder values of the depths it uses are set aside while it runs, so
 * within one table a term pointer has one meaning.
 *
 * Memory: a value leaves its table at its last use.  Before a run,
 * 'count_uses' counts how often each term is asked for in one environment
 * of its table: once per operand slot of every parent memoised in the
 * same table (such a parent is evaluated once there), once by a region
 * whose body it is when it uses the region's binder (one iteration is one
 * environment), once per result slot.  A term also asked for from deeper
 * (a region's iterations reuse what they do not vary in) is pinned: it
 * lives until its table is cleared.  A count may be too high (a term
 * shared by two regions counts the uses in both), which only keeps a
 * value longer; never too low.  Results are references of their own.
 * 'interp_check' refuses up front a program whose peak of live values
 * (estimated by 'peak_bytes' below) exceeds the memory available.
 *
 * Interrupts: 'partir_interrupt' is polled between the iterations of a
 * region, in a sum's accumulation and inside the kernels (kernels.c);
 * once it is seen the remaining operators are skipped and the run fails
 * with PARTIR_ERROR_INTERRUPTED, its unfinished values discarded.
 *
 * requires: the function is well typed (every stored Term is).
 */
#include "eval/eval.h"

#include <string.h>

/* The use count of a term asked for from a deeper level too. */
#define USES_PINNED G_MAXUINT

typedef struct Interp {
  Tensor *const *inputs;
  gboolean interrupted; /* partir_interrupt was seen: results are garbage */
  GHashTable *uses;     /* Term -> uses in one environment (count_uses) */
  int64_t start[PARTIR_MAX_REGIONS + 2];    /* binder value of region depth k */
  GHashTable *memo[PARTIR_MAX_REGIONS + 2]; /* Term -> Memo */
  int depth; /* the deepest region body running */
} Interp;

/* A memoised value and the uses left before it is dropped. */
typedef struct Memo {
  Tensor *value;
  guint left; /* USES_PINNED: kept until the table is cleared */
} Memo;

static void memo_free(gpointer p) {
  Memo *m = p;
  tensor_unref(m->value);
  g_free(m);
}

/* ------------------------------------------------------------ use counts */

/* Whether operand 'a' of operator or slice 'p' is memoised in p's table:
 * both closed, or both with the same innermost binder. */
static gboolean same_table(const Term *p, const Term *a) {
  return term_home(p) == term_home(a);
}

static void add_use(GHashTable *uses, const Term *t, gboolean pinned) {
  if (t->kind == TM_ARG || t->kind == TM_BVAR)
    return; /* not memoised */
  guint n = GPOINTER_TO_UINT(g_hash_table_lookup(uses, t));
  if (pinned || n == USES_PINNED)
    n = USES_PINNED;
  else
    n++;
  g_hash_table_insert(uses, (gpointer)t, GUINT_TO_POINTER(n));
}

/* The uses of every term reachable from 'body' (the results' tuple), as
 * the top of this file says.  Each distinct parent counts once: it is
 * evaluated once in each environment of its table. */
static GHashTable *count_uses(const Term *body) {
  GHashTable *uses = g_hash_table_new(NULL, NULL);
  g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
  g_autoptr(GPtrArray) todo = g_ptr_array_new();
  for (int i = 0; i < body->nargs; i++) {
    add_use(uses, body->args[i], FALSE);
    g_ptr_array_add(todo, (gpointer)body->args[i]);
  }
  while (todo->len > 0) {
    const Term *p = g_ptr_array_steal_index_fast(todo, todo->len - 1);
    if (!g_hash_table_add(seen, (gpointer)p))
      continue;
    if (p->kind == TM_TILE || p->kind == TM_SUM) {
      const Term *b = p->args[0];
      add_use(uses, b, !term_uses(b, p->binder));
      g_ptr_array_add(todo, (gpointer)b);
      continue;
    }
    if (p->kind != TM_OP && p->kind != TM_SLICE)
      continue;
    int n = p->kind == TM_SLICE ? 1 : p->nargs; /* not the slice's binder */
    for (int i = 0; i < n; i++) {
      add_use(uses, p->args[i], !same_table(p, p->args[i]));
      g_ptr_array_add(todo, (gpointer)p->args[i]);
    }
  }
  return uses;
}

static Tensor *eval(Interp *in, const Term *t);

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
  int64_t width = (int64_t)dtype_storage_bytes(dst->type->dtype);
  g_assert(src->type->dtype == dst->type->dtype);
  for (int64_t o = 0; o < outer; o++) {
    int64_t di = (o * dn + dst_off) * inner, si = (o * sn + src_off) * inner;
    memcpy((char *)dst->data + di * width, (const char *)src->data + si * width,
           (gsize)(count * inner * width));
  }
}

static void clear_from(Interp *in, int level) {
  for (int k = level; k < PARTIR_MAX_REGIONS + 2 && in->memo[k]; k++)
    g_hash_table_remove_all(in->memo[k]);
}

static GHashTable *memo_at(Interp *in, int level) {
  if (!in->memo[level])
    in->memo[level] = g_hash_table_new_full(NULL, NULL, NULL, memo_free);
  return in->memo[level];
}

/* Runs a region at its home: the tables and binder values of the depths
 * its body uses are its own while it runs.  A tile copies each
 * iteration's value into its chunk of the result, the last chunk of an
 * uneven range without its padding; a sum adds them up in an
 * accumulator (tensor_new_acc) and rounds once. */
static Tensor *eval_region(Interp *in, const Term *t) {
  const Type *range = t->range;
  int64_t count = type_range_parts(range);
  Tensor *out =
      t->kind == TM_TILE ? tensor_new(t->type) : tensor_new_acc(t->type);
  int inner = t->binder + 1, outer_depth = in->depth;
  GHashTable *saved_memo[PARTIR_MAX_REGIONS + 2];
  int64_t saved_start[PARTIR_MAX_REGIONS + 2];
  for (int k = inner; k <= outer_depth; k++) {
    saved_memo[k] = in->memo[k];
    saved_start[k] = in->start[k];
    in->memo[k] = NULL;
  }
  in->depth = inner;
  for (int64_t k = 0; k < count && !in->interrupted; k++) {
    if (partir_interrupt)
      in->interrupted = TRUE;
    in->start[inner] = k * range->w;
    clear_from(in, inner);
    Tensor *v = eval(in, t->args[0]);
    if (t->kind == TM_TILE) {
      copy_chunk(out, k * range->w, v, 0, t->index,
                 MIN(range->w, range->n - k * range->w));
    } else {
      int64_t n = type_numel(t->type);
      for (int64_t j = 0; j < n; j++) {
        if ((j & (KERNEL_POLL - 1)) == 0 && partir_interrupt) {
          in->interrupted = TRUE;
          break;
        }
        tensor_acc_add(out, j, v, j);
      }
    }
    tensor_unref(v);
  }
  for (int k = inner; k < PARTIR_MAX_REGIONS + 2 && in->memo[k]; k++) {
    g_hash_table_unref(in->memo[k]);
    in->memo[k] = NULL;
  }
  for (int k = inner; k <= outer_depth; k++) {
    in->memo[k] = saved_memo[k];
    in->start[k] = saved_start[k];
  }
  in->depth = outer_depth;
  if (t->kind == TM_SUM) {
    Tensor *acc = out;
    out = tensor_from_acc(acc, t->type);
    tensor_unref(acc);
  }
  return out;
}

static Tensor *eval_uncached(Interp *in, const Term *t) {
  switch (t->kind) {
  case TM_OP: {
    Tensor *stack_args[8];
    Tensor **args =
        t->nargs <= 8 ? stack_args : g_new(Tensor *, (gsize)t->nargs);
    for (int i = 0; i < t->nargs; i++)
      args[i] = eval(in, t->args[i]);
    /* Once interrupted, the run's values are discarded: skip the work.
     * A kernel that sees the interrupt stops early (kernels.c). */
    Tensor *r = in->interrupted ? tensor_new(t->type) : kernel_eval(t, args);
    if (partir_interrupt)
      in->interrupted = TRUE;
    for (int i = 0; i < t->nargs; i++)
      tensor_unref(args[i]);
    if (args != stack_args)
      g_free(args);
    return r;
  }
  case TM_SLICE: {
    Tensor *x = eval(in, t->args[0]);
    const Term *r = t->args[1];
    g_assert(r->kind == TM_BVAR);
    Tensor *out = tensor_new(t->type);
    /* level l is the binder of the region whose body is at depth l+1;
     * the slice takes the same part of a dimension of any size; the
     * padding of an uneven range's last part is zeros (tensor_new) */
    int64_t part = in->start[r->index + 1] / r->type->w;
    int64_t width = t->type->dims[t->index];
    int64_t size = x->type->dims[t->index];
    copy_chunk(out, 0, x, part * width, t->index,
               MIN(width, size - part * width));
    tensor_unref(x);
    return out;
  }
  case TM_TILE:
  case TM_SUM:
    return eval_region(in, t);
  default:
    g_assert_not_reached();
  }
}

/* The value of 't' (a new reference): from its table,
 * which drops it at its last use, or computed and kept there for the
 * uses to come. */
static Tensor *eval(Interp *in, const Term *t) {
  if (t->kind == TM_ARG)
    return tensor_ref(in->inputs[t->index]);
  int level = term_home(t);
  g_assert(level <= in->depth);
  GHashTable *memo = memo_at(in, level);
  Memo *m = g_hash_table_lookup(memo, t);
  if (m) {
    Tensor *v = tensor_ref(m->value);
    if (m->left != USES_PINNED && --m->left == 0)
      g_hash_table_remove(memo, t);
    return v;
  }
  Tensor *v = eval_uncached(in, t);
  guint uses = GPOINTER_TO_UINT(g_hash_table_lookup(in->uses, t));
  g_assert(uses > 0); /* count_uses saw every term eval reaches */
  if (uses > 1) {     /* this was one use */
    m = g_new(Memo, 1);
    m->value = tensor_ref(v);
    m->left = uses == USES_PINNED ? USES_PINNED : uses - 1;
    g_hash_table_insert(memo, (gpointer)t, m);
  }
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

/* ----------------------------------------------------------- peak memory */

/* 'peak_bytes' replays the order of 'eval' without computing: the live
 * bytes of closed values (every value outside regions) follow the use
 * counts exactly, as the interpreter drops them; the arguments and the
 * results live throughout.  Inside a region it is conservative: while a
 * region runs, every distinct value of its body (each nested body
 * included) counts as live at once, on top of its result buffer and the
 * closed values its body computes, and, for a sum, its accumulator.
 * Values take the bytes of their dtype (tensor_type_bytes), a sum's
 * accumulator 8 bytes an element (tensor_new_acc); the kernels' scratch
 * (a contraction's index tables and its row of accumulators, no larger
 * than its operands and result at 8 bytes an element) and the program's
 * terms are not counted. */
typedef struct Peak {
  GHashTable *uses; /* count_uses */
  GHashTable *left; /* closed Term -> uses left while memoised */
  GHashTable *refs; /* closed Term -> references held to its value */
  guint64 live;     /* bytes of the values alive now */
  guint64 extra;    /* bytes counted for the regions now running */
  guint64 peak;
} Peak;

/* The accumulator of a sum region 't' (tensor_new_acc); 0 for a tile. */
static guint64 acc_bytes(const Term *t) {
  return t->kind == TM_SUM ? (guint64)type_numel(t->type) * sizeof(double) : 0;
}

static void peak_hold(Peak *pk, const Term *t) {
  guint n = GPOINTER_TO_UINT(g_hash_table_lookup(pk->refs, t));
  if (n == 0) {
    pk->live += tensor_type_bytes(t->type);
    pk->peak = MAX(pk->peak, pk->live + pk->extra);
  }
  g_hash_table_insert(pk->refs, (gpointer)t, GUINT_TO_POINTER(n + 1));
}

static void peak_release(Peak *pk, const Term *t) {
  guint n = GPOINTER_TO_UINT(g_hash_table_lookup(pk->refs, t));
  g_assert(n > 0);
  if (n > 1) {
    g_hash_table_insert(pk->refs, (gpointer)t, GUINT_TO_POINTER(n - 1));
    return;
  }
  g_hash_table_remove(pk->refs, t);
  pk->live -= tensor_type_bytes(t->type);
}

/* Bytes of the distinct values in the body of region 'r' (relative
 * depth 1), nested bodies included: the terms that are not closed, each
 * once per depth it is seen at. */
static guint64 inner_bytes(const Term *r) {
  g_autoptr(GHashTable) seen =
      g_hash_table_new_full(NULL, NULL, NULL, g_free); /* Term -> depths */
  g_autoptr(GPtrArray) todo = g_ptr_array_new();
  g_autoptr(GArray) depths = g_array_new(FALSE, FALSE, sizeof(int));
  guint64 bytes = 0;
  int one = 1;
  g_ptr_array_add(todo, (gpointer)r->args[0]);
  g_array_append_val(depths, one);
  while (todo->len > 0) {
    const Term *u = g_ptr_array_steal_index_fast(todo, todo->len - 1);
    int d = g_array_index(depths, int, depths->len - 1);
    g_array_set_size(depths, depths->len - 1);
    if (term_is_closed(u) || u->kind == TM_BVAR)
      continue; /* closed values are counted as they are computed */
    guint64 *mask = g_hash_table_lookup(seen, u);
    if (!mask) {
      mask = g_new0(guint64, 1);
      g_hash_table_insert(seen, (gpointer)u, mask);
    }
    if (*mask & ((guint64)1 << d))
      continue;
    *mask |= (guint64)1 << d;
    bytes += tensor_type_bytes(u->type) + acc_bytes(u);
    int inner = u->kind == TM_TILE || u->kind == TM_SUM ? d + 1 : d;
    int n = u->kind == TM_SLICE ? 1 : u->nargs;
    for (int i = 0; i < n; i++) {
      g_ptr_array_add(todo, (gpointer)u->args[i]);
      g_array_append_val(depths, inner);
    }
  }
  return bytes;
}

static void peak_eval(Peak *pk, const Term *t);

/* Replays the closed values that the body of a region computes, in
 * eval's order: 'u' seen at relative depth 'd'; 'seen' holds the terms
 * already walked, per depth. */
static void peak_walk(Peak *pk, GHashTable *seen, const Term *u, int d) {
  if (u->kind == TM_ARG || u->kind == TM_BVAR)
    return;
  if (term_is_closed(u)) { /* computed at depth 0 and kept (pinned) */
    peak_eval(pk, u);
    peak_release(pk, u);
    return;
  }
  guint64 *mask = g_hash_table_lookup(seen, u);
  if (!mask) {
    mask = g_new0(guint64, 1);
    g_hash_table_insert(seen, (gpointer)u, mask);
  }
  if (*mask & ((guint64)1 << d))
    return;
  *mask |= (guint64)1 << d;
  int inner = u->kind == TM_TILE || u->kind == TM_SUM ? d + 1 : d;
  int n = u->kind == TM_SLICE ? 1 : u->nargs;
  for (int i = 0; i < n; i++)
    peak_walk(pk, seen, u->args[i], inner);
}

/* eval of closed term 't', replayed: the caller holds a reference after. */
static void peak_eval(Peak *pk, const Term *t) {
  if (t->kind == TM_ARG)
    return; /* the arguments are counted once, throughout */
  gpointer left;
  if (g_hash_table_lookup_extended(pk->left, t, NULL, &left)) {
    peak_hold(pk, t);
    guint n = GPOINTER_TO_UINT(left);
    if (n == USES_PINNED)
      return;
    if (--n > 0) {
      g_hash_table_insert(pk->left, (gpointer)t, GUINT_TO_POINTER(n));
      return;
    }
    g_hash_table_remove(pk->left, t);
    peak_release(pk, t);
    return;
  }
  if (t->kind == TM_TILE || t->kind == TM_SUM) {
    peak_hold(pk, t); /* the result buffer comes first */
    guint64 inner = inner_bytes(t) + acc_bytes(t);
    pk->extra += inner;
    pk->peak = MAX(pk->peak, pk->live + pk->extra);
    g_autoptr(GHashTable) seen =
        g_hash_table_new_full(NULL, NULL, NULL, g_free);
    peak_walk(pk, seen, t->args[0], 1);
    pk->extra -= inner;
  } else { /* an operator (a slice names a binder: it is not closed) */
    for (int i = 0; i < t->nargs; i++)
      peak_eval(pk, t->args[i]);
    peak_hold(pk, t);
    for (int i = 0; i < t->nargs; i++)
      if (t->args[i]->kind != TM_ARG)
        peak_release(pk, t->args[i]);
  }
  guint uses = GPOINTER_TO_UINT(g_hash_table_lookup(pk->uses, t));
  if (uses > 1) {
    g_hash_table_insert(
        pk->left, (gpointer)t,
        GUINT_TO_POINTER(uses == USES_PINNED ? uses : uses - 1));
    peak_hold(pk, t);
  }
}

/* An estimate, from above, of the most bytes of values alive at once
 * when 'f' runs (see Peak). */
static guint64 peak_bytes(const Func *f) {
  Peak pk = {.uses = count_uses(f->body),
             .left = g_hash_table_new(NULL, NULL),
             .refs = g_hash_table_new(NULL, NULL)};
  for (int i = 0; i < f->nargs; i++)
    pk.live += tensor_type_bytes(f->arg_types[i]);
  pk.peak = pk.live;
  for (int i = 0; i < f->nresults; i++)
    peak_eval(&pk, f->body->args[i]); /* results are kept */
  g_hash_table_unref(pk.uses);
  g_hash_table_unref(pk.left);
  g_hash_table_unref(pk.refs);
  return pk.peak;
}

/* 'bytes' in decimal units, "4.3 TB" (ASCII, unlike g_format_size). */
static char *bytes_text(guint64 bytes) {
  static const char *const units[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1000 && u < (int)G_N_ELEMENTS(units) - 1) {
    v /= 1000;
    u++;
  }
  return u == 0 ? g_strdup_printf("%" G_GUINT64_FORMAT " B", bytes)
                : g_strdup_printf("%.1f %s", v, units[u]);
}

/* Refuses a program whose values would not fit in memory at their peak. */
static gboolean check_memory(const Func *f, Diag *diag) {
  guint64 avail = partir_memory_available();
  if (avail == 0)
    return TRUE; /* unknown: let it run */
  guint64 need = peak_bytes(f);
  if (need <= avail)
    return TRUE;
  g_autofree char *need_text = bytes_text(need);
  g_autofree char *avail_text = bytes_text(avail);
  diag_reason(diag,
              "running it needs %s (%" G_GUINT64_FORMAT
              " bytes) of values alive at once, more than the %s "
              "(%" G_GUINT64_FORMAT " bytes) of memory available",
              need_text, need, avail_text, avail);
  return FALSE;
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
  return check_sizes(f->body, diag) && check_memory(f, diag);
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
  Interp in = {.inputs = inputs, .uses = count_uses(f->body)};
  GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)tensor_unref);
  for (int i = 0; i < f->nresults && !in.interrupted; i++)
    g_ptr_array_add(out, eval(&in, f->body->args[i]));
  for (int k = 0; k < PARTIR_MAX_REGIONS + 2; k++)
    if (in.memo[k])
      g_hash_table_unref(in.memo[k]);
  g_hash_table_unref(in.uses);
  if (in.interrupted || partir_interrupt) {
    g_ptr_array_unref(out);
    g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_INTERRUPTED, "interrupted");
    return NULL;
  }
  return out;
}
