/* cost.c — the cost model: what one step of an SPMD program costs each
 * device, on a machine described by a hardware file.
 *
 * An SPMD program (Func with 'spmd' set) holds local shapes: every device
 * runs the same body on same-shaped data, so one walk gives the figures
 * of every device.  Its tiles and sums are sequential loops on the device
 * (a tile over range<n,w> runs its body n/w times); its collectives move
 * data between the devices of the mesh axes named in their 'axes'.
 *
 * The walk follows the schedule for memory (schedule_for_memory: the
 * printer's, with the tallest operand first and the last result first):
 * each distinct value once per instance of the region it is placed in,
 * loop-invariant values hoisted out — the sharing of the reference
 * interpreter, in the order a memory-aware compiler would run it.  The walk
 * reconstructs the region structure from that order: a tile/sum statement opens
 * its region, whose statements follow it, and the region closes after its yield
 * (the last statement placed in it; a region whose body uses no value of its
 * own is empty).  From the walk come
 *
 *   FLOPs       op_flops of every statement times the iterations of the
 *               loops around it;
 *   peak bytes  a liveness sweep over one iteration of every loop: a value
 *               lives from its statement to its last use; a value used
 *               inside a loop it is defined outside of lives to the end of
 *               that loop; a tile/sum's whole result buffer lives from its
 *               statement; arguments and results live throughout;
 *   collectives ring formulas for the bytes each device sends and
 *               steps * latency + bytes / bandwidth for the time, over the
 *               slowest link among the axes;
 *   time        compute (flops / peak FLOP/s of the operator's dtype) plus
 *               communication, with no overlap.  Where the hardware
 *               gives mem_bw or kernel_overhead, compute is priced as the
 *               code generator runs it: a kernel per value with a buffer
 *               (fusion.c), each the longer of its FLOPs (its fused
 *               operands' included) at peak and the bytes it reads and
 *               writes at mem_bw, plus kernel_overhead (a roofline);
 *               a matrix product both, in whole register blocks, and an
 *               overhead per product (docs/cost.md); and, where the
 *               hardware gives it, step_overhead once a step.
 *
 * The machine is a Hardware description (hardware.c).
 */
#include "spmd/spmd.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* --------------------------------------------------------- validation */

/* Refuses what the model cannot cost: collectives over axes the mesh
 * lacks or of a size other than the axes' product, and tiles or sums
 * still bound to a mesh axis in an SPMD program. */
static gboolean check_program(const Func *f, Diag *diag) {
  if (!f->spmd)
    return TRUE;
  const Mesh *mesh = &f->spmd->mesh;
  g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
  g_autoptr(GPtrArray) todo = g_ptr_array_new();
  g_ptr_array_add(todo, (gpointer)f->body);
  g_autofree char *mesh_text = mesh_to_string(mesh);
  while (todo->len > 0) {
    const Term *t = g_ptr_array_steal_index_fast(todo, todo->len - 1);
    if (!g_hash_table_add(seen, (gpointer)t))
      continue;
    if ((t->kind == TM_TILE || t->kind == TM_SUM) && t->axis) {
      diag_reason(diag,
                  "a partir.%s bound to axis '%s' in an SPMD program: lower "
                  "it first (the cost model runs tiles and sums as loops)",
                  t->kind == TM_TILE ? "tile" : "sum", t->axis);
      return FALSE;
    }
    if (t->kind == TM_OP && op_is_collective(t->op)) {
      const AttrValue *axes = attrs_get(t->attrs, "axes");
      int64_t product = 1;
      for (int i = 0; i < axes->count; i++) {
        int64_t s = mesh_axis_size(mesh, axes->items[i].sym);
        if (s == 0) {
          diag_reason(diag,
                      "'%s' over axis '%s', which mesh '%s' does not have",
                      op_name(t->op), axes->items[i].sym, mesh_text);
          return FALSE;
        }
        product *= s;
      }
      int64_t size = attrs_get(t->attrs, "size")->i;
      if (size != product) {
        diag_reason(diag,
                    "'%s' has size %" G_GINT64_FORMAT " but its axes have "
                    "%" G_GINT64_FORMAT " devices in mesh '%s'",
                    op_name(t->op), size, product, mesh_text);
        return FALSE;
      }
    }
    for (int i = 0; i < t->nargs; i++)
      g_ptr_array_add(todo, (gpointer)t->args[i]);
  }
  return TRUE;
}

/* --------------------------------------------------------------- walk */

/* A value of the schedule: an argument or a statement. */
typedef struct Value {
  const Term *t;         /* the value's term */
  const SchedName *name; /* its name in the schedule (unnamed: NULL text) */
  int pos;               /* statement number; -1 for arguments */
  int last;              /* last statement it is needed at */
  double bytes;
} Value;

/* A region instance being walked (depth 0: the function body). */
typedef struct Open {
  int stmt;         /* its tile/sum value; -1 at depth 0 */
  GArray *crossing; /* int: values of outer regions used inside it */
  double mult;      /* evaluations of each of its statements per step */
} Open;

typedef struct Walk {
  const Hardware *hw;
  const Fusion *fusion; /* the compiled program's kernels, when priced */
  GHashTable *reads;    /* a kernel's values reached so far (kernel_reads) */
  CostReport *out;
  Value *values; /* by SchedName.index: the arguments, then the statements */
  int nvalues;
  Open open[PARTIR_MAX_REGIONS + 2];
  int depth; /* innermost open region */
  int npos;  /* statements walked */
  int nargs;
  const Term *peak_term; /* the value computed at the peak, or NULL */
  double cached_time;    /* compute_time with the kernels' bytes at cache_bw */
} Walk;

static Value *value_at(Walk *w, int i) { return &w->values[i]; }

static double bytes_of(const Type *t) {
  return (double)type_numel(t) * (double)dtype_storage_bytes(t->dtype);
}

static void open_region(Walk *w, int stmt, double mult) {
  g_assert(w->depth + 1 < PARTIR_MAX_REGIONS + 2);
  Open *o = &w->open[++w->depth];
  *o = (Open){stmt, g_array_new(FALSE, FALSE, sizeof(int)), mult};
}

/* Records that operand 'u', named 'n' in the schedule and seen at region
 * depth 'depth', is used by the statement at 'pos'.  The schedule names
 * the statement of 'u' that is in scope there (its instance in the
 * region it is placed in). */
static void use(Walk *w, const Term *u, const SchedName *n, int depth,
                int pos) {
  if (u->kind == TM_BVAR || u->kind == TM_ARG) /* ranges; args live always */
    return;
  int target = term_home(u);
  g_assert(target >= 0 && target <= depth && n->index >= 0);
  int i = n->index;
  Value *v = value_at(w, i);
  v->last = MAX(v->last, pos);
  if (target < depth) /* needed by every iteration of the loop it is in */
    g_array_append_val(w->open[target + 1].crossing, i);
}

/* Closes the innermost region, whose yield is 'yield', at statement
 * 'pos' (its last one). */
static void close_region(Walk *w, const SchedName *yield, int pos) {
  Open *o = &w->open[w->depth];
  const Term *tile = value_at(w, o->stmt)->t;
  /* each iteration hands its yield to the tile/sum */
  use(w, tile->args[0], yield, w->depth, pos);
  for (guint i = 0; i < o->crossing->len; i++) {
    Value *v = value_at(w, g_array_index(o->crossing, int, i));
    v->last = MAX(v->last, pos);
  }
  g_array_unref(o->crossing);
  w->depth--;
}

/* The axes of a collective with attributes 'attrs', as interned text
 * ("batch,model"), the key of its CostComm.  Attributes are interned for
 * the life of the process, so the text is made once per attributes: the
 * agent protocol costs thousands of collectives a step. */
static const char *axes_text_of(const Attrs *attrs, const AttrValue *axes) {
  static GHashTable *known; /* Attrs* -> interned text */
  if (!known)
    known = g_hash_table_new(NULL, NULL);
  const char *text = g_hash_table_lookup(known, attrs);
  if (text)
    return text;
  GString *key = g_string_new(NULL);
  for (int i = 0; i < axes->count; i++) {
    if (i)
      g_string_append_c(key, ',');
    g_string_append(key, axes->items[i].sym);
  }
  text = g_intern_string(key->str);
  g_string_free(key, TRUE);
  g_hash_table_insert(known, (gpointer)attrs, (gpointer)text);
  return text;
}

/* Adds the bytes and time of one evaluation of collective 't', 'mult'
 * times. */
static void account_collective(Walk *w, const Term *t, double mult) {
  const AttrValue *axes = attrs_get(t->attrs, "axes");
  int64_t k = attrs_get(t->attrs, "size")->i;
  double bw = INFINITY, latency = 0;
  for (int i = 0; i < axes->count; i++) {
    double b, l;
    hw_link(w->hw, axes->items[i].sym, &b, &l);
    bw = MIN(bw, b);
    latency = MAX(latency, l);
  }
  const char *axes_text = axes_text_of(t->attrs, axes);

  double in = bytes_of(t->args[0]->type), out = bytes_of(t->type);
  double part = (double)(k - 1) / (double)k, bytes = 0, steps = 0;
  switch (t->op) {
  case OP_ALL_REDUCE: /* ring: reduce-scatter then all-gather */
    bytes = 2 * part * in;
    steps = 2.0 * (double)(k - 1);
    break;
  case OP_ALL_GATHER:
    bytes = part * out;
    steps = (double)(k - 1);
    break;
  case OP_REDUCE_SCATTER:
  case OP_ALL_TO_ALL:
    bytes = part * in;
    steps = (double)(k - 1);
    break;
  case OP_SHARD: /* a local slice of a replicated value */
    break;
  default:
    g_assert_not_reached();
  }
  double time = bytes > 0 ? steps * latency + bytes / bw : 0;

  GArray *comms = w->out->comms;
  CostComm *c = NULL;
  for (guint i = 0; i < comms->len && !c; i++) {
    CostComm *e = &g_array_index(comms, CostComm, i);
    if (e->op == t->op && e->axes == axes_text && e->size == k)
      c = e;
  }
  if (!c) {
    CostComm fresh = {.op = t->op, .axes = axes_text, .size = k};
    g_array_append_val(comms, fresh);
    c = &g_array_index(comms, CostComm, comms->len - 1);
  }
  c->count += mult;
  c->bytes += bytes * mult;
  c->time += time * mult;
  w->out->comm_time += time * mult;
}

/* The dtype operator 't' computes in: a comparison computes in its
 * operands' type, not in i1. */
static DType compute_dtype(const Term *t) {
  return t->type->dtype == DT_I1 && t->nargs > 0 ? t->args[0]->type->dtype
                                                 : t->type->dtype;
}

/* The bytes a kernel reads of value 't', which has a buffer: a splat
 * constant that no user reads whole is one number (fusion.c). */
static double stored_bytes(const Walk *w, const Term *t) {
  if (t->kind == TM_OP && t->op == OP_CONSTANT && type_numel(t->type) > 1 &&
      !fusion_read_whole(w->fusion, t)) {
    Tensor *one = kernel_constant_splat(t);
    if (one) {
      tensor_unref(one);
      return dtype_storage_bytes(t->type->dtype);
    }
  }
  return bytes_of(t->type);
}

/* What the kernel of 't' computes inside its loops and reads: the FLOPs
 * of its fused operands, the bytes of the buffers it reaches through
 * them, each once. */
static void kernel_reads(const Walk *w, const Term *t, GHashTable *seen,
                         double *flops, double *bytes) {
  for (int k = 0; k < t->nargs; k++) {
    const Term *a = t->args[k];
    if (a->kind == TM_BVAR || !g_hash_table_add(seen, (gpointer)a))
      continue;
    if (fusion_fused(w->fusion, a)) {
      *flops += op_flops(a);
      kernel_reads(w, a, seen, flops, bytes);
    } else if (k == 0 && t->kind == TM_OP &&
               (t->op == OP_GATHER || t->op == OP_DYNAMIC_SLICE)) {
      /* the rows a lookup reads, not the whole table */
      *bytes += MIN(stored_bytes(w, a), bytes_of(t->type));
    } else {
      *bytes += stored_bytes(w, a);
    }
  }
}

/* 'x' rounded up to a whole number of blocks of 'block' (0: 1). */
static double whole_blocks(double x, double block) {
  return block > 1 ? ceil(x / block) * block : x;
}

/* The dimension numbers of list attribute 'key' of 't' (none when
 * absent); their count. */
static int dims_attr(const Term *t, const char *key, int *out) {
  const AttrValue *v = attrs_get(t->attrs, key);
  int n = v && v->kind == AV_LIST ? MIN(v->count, PARTIR_MAX_RANK) : 0;
  for (int k = 0; k < n; k++)
    out[k] = (int)v->items[k].i;
  return n;
}

/* The dimensions of 'rank' that are neither in 'a' nor in 'b', in order. */
static int other_dims(int rank, const int *a, int na, const int *b, int nb,
                      int *out) {
  int n = 0;
  for (int d = 0; d < rank; d++) {
    gboolean listed = FALSE;
    for (int k = 0; k < na; k++)
      listed |= a[k] == d;
    for (int k = 0; k < nb; k++)
      listed |= b[k] == d;
    if (!listed)
      out[n++] = d;
  }
  return n;
}

/* The generated kernel merges the innermost run of a group's dimensions
 * that follow each other in the operand (row-major: one strided
 * dimension) and loops over the rest (dot.c): the run's size; the
 * loops' sizes multiply '*loops'.  'y' (may be NULL) must have its own
 * dimensions follow each other too (K, in both operands).  pos[0][d]
 * is where dimension d of x's operand lies in its layout (pos[1] of y's
 * operand): d itself, or its place in a copy. */
static double merged(const Type *tx, const int *x, const int *y, int n,
                     const int *const *pos, double *loops) {
  if (n == 0)
    return 1;
  int k = n - 1;
  double run = (double)tx->dims[x[k]];
  while (k > 0 && pos[0][x[k - 1]] == pos[0][x[k]] - 1 &&
         (!y || pos[1][y[k - 1]] == pos[1][y[k]] - 1))
    run *= (double)tx->dims[x[--k]];
  for (int j = 0; j < k; j++)
    *loops *= (double)tx->dims[x[j]];
  return run;
}

/* The rows of C the generated kernel computes for 'm' (gemm.c): whole
 * register blocks of 'mr' rows, the last rows by the shortest of its
 * kernels of a third, two thirds or all of 'mr' rows that holds them
 * (13 rows on a 12-row block: 12 + 4). */
static double kernel_rows(double m, double mr) {
  if (mr <= 1)
    return m;
  double whole = floor(m / mr) * mr, left = m - whole;
  for (int i = 1; i <= 3 && left > 0; i++) {
    double rows = floor(mr * i / 3);
    if (left <= rows)
      return whole + rows;
  }
  return whole;
}

/* Whether dimensions 'x' of 'tx' (row-major) nest in that order, size-1
 * ones anywhere: an operand whose contracted ones do not is copied
 * before the product, when that pays (dot.c). */
static gboolean dims_nest(const Type *tx, const int *x, int n) {
  int64_t st[PARTIR_MAX_RANK];
  int64_t s = 1;
  for (int d = tx->rank - 1; d >= 0; d--) {
    st[d] = s;
    s *= tx->dims[d];
  }
  int inner = -1;
  for (int j = n - 1; j >= 0; j--) {
    if (tx->dims[x[j]] == 1)
      continue;
    if (inner >= 0 && st[x[j]] != st[inner] * tx->dims[inner])
      return FALSE;
    inner = x[j];
  }
  return TRUE;
}

/* pos[d]: where dimension d of 'tx' lies in a copy laid out as its
 * dimensions other than 'k' in order, with 'k' in order after them
 * ('k_last') or before them. */
static void copy_positions(const Type *tx, const int *k, int nk,
                           gboolean k_last, int *pos) {
  gboolean is_k[PARTIR_MAX_RANK] = {FALSE};
  for (int j = 0; j < nk; j++)
    is_k[k[j]] = TRUE;
  int at = 0;
  for (int j = 0; j < nk && !k_last; j++)
    pos[k[j]] = at++;
  for (int d = 0; d < tx->rank; d++)
    if (!is_k[d])
      pos[d] = at++;
  for (int j = 0; j < nk && k_last; j++)
    pos[k[j]] = at++;
}

/* The FLOPs matrix product 't' costs as the generated kernel computes
 * it (dot.c): one M x N x K product per batch element and per
 * dimension it cannot merge, each computed in register blocks of
 * gemm_mr x gemm_nr, their rows as kernel_rows says (a 13 x 33 product
 * costs a 16 x 64 one on a 12 x 32 block); the number of products in
 * '*products'.  Contracted dimensions that do not merge are loops of
 * products, or, where contraction_relayout_pays, a copy of the operands
 * they do not follow each other in, whose bytes (read and written) go
 * to '*copy_bytes', and one product K deep. */
static double product_flops(const Hardware *hw, const Term *t, double *products,
                            double *copy_bytes) {
  const Type *l = t->args[0]->type, *r = t->args[1]->type;
  int lb[PARTIR_MAX_RANK] = {0}, rb[PARTIR_MAX_RANK] = {0}, lc[PARTIR_MAX_RANK],
      rc[PARTIR_MAX_RANK], lf[PARTIR_MAX_RANK], rf[PARTIR_MAX_RANK];
  int nb = 0, nc = 1;
  if (t->op == OP_MATMUL) {
    lc[0] = l->rank - 1;
    rc[0] = 0;
  } else {
    nb = dims_attr(t, "lhs_batch", lb);
    dims_attr(t, "rhs_batch", rb);
    nc = dims_attr(t, "lhs_contract", lc);
    dims_attr(t, "rhs_contract", rc);
  }
  int nlf = other_dims(l->rank, lb, nb, lc, nc, lf);
  int nrf = other_dims(r->rank, rb, nb, rc, nc, rf);
  int lpos[PARTIR_MAX_RANK], rpos[PARTIR_MAX_RANK];
  for (int d = 0; d < PARTIR_MAX_RANK; d++)
    lpos[d] = rpos[d] = d;
  const int *lp[2] = {lpos, rpos}, *rp[1] = {rpos};
  double kloops = 1;
  merged(l, lc, rc, nc, lp, &kloops);
  *copy_bytes = 0;
  gboolean lcopy = !dims_nest(l, lc, nc), rcopy = !dims_nest(r, rc, nc);
  double copied =
      (lcopy ? (double)type_numel(l) : 0) + (rcopy ? (double)type_numel(r) : 0);
  if (kloops > 1 &&
      contraction_relayout_pays(copied, (double)type_numel(t->type), kloops)) {
    /* the copies' layouts: the lhs [its other dims, K..], the rhs [K..,
     * its other dims] (dot.c) */
    if (lcopy)
      copy_positions(l, lc, nc, TRUE, lpos);
    if (rcopy)
      copy_positions(r, rc, nc, FALSE, rpos);
    *copy_bytes = 2 * copied * dtype_storage_bytes(t->type->dtype);
  }
  double count = 1;
  for (int k = 0; k < nb; k++)
    count *= (double)l->dims[lb[k]];
  double m = merged(l, lf, NULL, nlf, lp, &count);
  double n = merged(r, rf, NULL, nrf, rp, &count);
  double depth = merged(l, lc, rc, nc, lp, &count);
  *products = type_numel(t->type) > 0 ? count : 0;
  return 2 * *products * kernel_rows(m, hw->gemm_mr) *
         whole_blocks(n, hw->gemm_nr) * depth;
}

/* A kernel's time with its bytes moved at 'bw' (0: not priced): the
 * longer of its FLOPs at peak and its bytes, or for a matrix product
 * both (its packing pass, then its blocks) and an overhead per product;
 * and the kernel's overhead. */
static double kernel_time(const Hardware *hw, gboolean product, double flops,
                          double bytes, double products, double peak,
                          double bw) {
  double memory = bw > 0 ? bytes / bw : 0;
  double compute = product
                       ? flops / peak + memory + products * hw->product_overhead
                       : MAX(flops / peak, memory);
  return compute + hw->kernel_overhead;
}

/* One run of the kernel of 't' (a value with a buffer), 'mult' times:
 * the longer of its FLOPs at peak and its bytes at memory bandwidth, and
 * the kernel's overhead.  A matrix product pays both, one after the
 * other: the kernel packs its operands in a pass of their own before
 * its register blocks run (their FLOPs in whole blocks), and an
 * overhead per product.  Priced at cache_bw too, for a step that turns
 * out to fit in the cache (estimate). */
static void account_kernel(Walk *w, const Term *t, double mult) {
  double flops = op_flops(t), bytes = bytes_of(t->type);
  g_hash_table_remove_all(w->reads);
  kernel_reads(w, t, w->reads, &flops, &bytes);
  const Hardware *hw = w->hw;
  double peak = hw_peak_flops(hw, compute_dtype(t));
  gboolean product =
      t->kind == TM_OP && (t->op == OP_MATMUL || t->op == OP_DOT_GENERAL);
  double products = 0, copy_bytes = 0;
  if (product) {
    flops += product_flops(hw, t, &products, &copy_bytes) - op_flops(t);
    bytes += copy_bytes;
  }
  double cache_bw = hw->cache_bw > 0 ? hw->cache_bw : hw->mem_bw;
  w->out->compute_time +=
      kernel_time(hw, product, flops, bytes, products, peak, hw->mem_bw) * mult;
  w->cached_time +=
      kernel_time(hw, product, flops, bytes, products, peak, cache_bw) * mult;
  w->out->kernels += mult;
  w->out->traffic_bytes += bytes * mult;
}

static void account_op(Walk *w, const Term *t, double mult) {
  if (op_is_collective(t->op)) {
    account_collective(w, t, mult);
    return;
  }
  double flops = op_flops(t) * mult;
  w->out->flops += flops;
  if (w->fusion) { /* constants and iotas are evaluated when compiling */
    if (!fusion_fused(w->fusion, t) && t->op != OP_CONSTANT && t->op != OP_IOTA)
      account_kernel(w, t, mult);
    return;
  }
  w->out->compute_time += flops / hw_peak_flops(w->hw, compute_dtype(t));
  w->cached_time += flops / hw_peak_flops(w->hw, compute_dtype(t));
}

static void add_value(Walk *w, const Term *t, const SchedName *n, int pos) {
  g_assert(n->index >= 0 && n->index < w->nvalues);
  w->values[n->index] = (Value){t, n, pos, pos, bytes_of(t->type)};
}

/* Walks the statements of region 'r' in text order: each statement
 * once per instance of the region it is placed in, a tile's or sum's
 * region right after it.  A region closes at its last statement, which
 * is its yield (operands come before their users); a region whose body
 * uses no value of its own is empty and closes at its tile or sum. */
static void walk_region(Walk *w, const SchedRegion *r) {
  for (guint k = 0; k < r->stmts->len; k++) {
    const SchedStmt *st = g_ptr_array_index(r->stmts, k);
    const Term *t = st->t;
    int pos = w->npos++;
    Open *here = &w->open[w->depth];
    /* the walk's region is where the printer placed the statement */
    g_assert(term_home(t) == w->depth);
    add_value(w, t, &st->n, pos);
    switch (t->kind) {
    case TM_OP:
      for (int i = 0; i < t->nargs; i++)
        use(w, t->args[i], st->ops[i], w->depth, pos);
      account_op(w, t, here->mult);
      break;
    case TM_SLICE:
      use(w, t->args[0], st->ops[0], w->depth, pos);
      break;
    case TM_TILE:
    case TM_SUM: {
      int64_t count = (t->range->n + t->range->w - 1) / t->range->w;
      open_region(w, st->n.index, here->mult * (double)count);
      walk_region(w, st->child);
      /* the last statement walked is the yield, or the region is empty */
      close_region(w, st->child->yield, w->npos - 1);
      break;
    }
    default:
      g_assert_not_reached();
    }
  }
}

/* The liveness sweep: peak bytes over the statements and where. */
static void sweep(Walk *w) {
  int n = w->npos;
  double base = 0; /* live before the first statement and throughout */
  g_autofree double *delta = g_new0(double, (gsize)n + 1);
  for (int i = 0; i < w->nvalues; i++) {
    Value *v = value_at(w, i);
    if (v->pos < 0) {
      base += v->bytes;
      continue;
    }
    delta[v->pos] += v->bytes;
    delta[MIN(v->last, n - 1) + 1] -= v->bytes;
  }
  double live = base, peak = base;
  int at = -1;
  for (int p = 0; p < n; p++) {
    live += delta[p];
    if (live > peak) {
      peak = live;
      at = p;
    }
  }
  w->out->peak_bytes = peak;
  for (int i = 0; at >= 0 && i < w->nvalues; i++)
    if (value_at(w, i)->pos == at)
      w->peak_term = value_at(w, i)->t;
}

/* The name the printer gives term 't' in region 'r' or a region in it
 * (NULL: none). */
static const char *printed_name(const SchedRegion *r, const Term *t) {
  for (guint k = 0; k < r->stmts->len; k++) {
    const SchedStmt *st = g_ptr_array_index(r->stmts, k);
    if (st->t == t)
      return st->n.name;
    const char *in = st->child ? printed_name(st->child, t) : NULL;
    if (in)
      return in;
  }
  return NULL;
}

void cost_report_clear(CostReport *r) {
  g_free(r->peak_at);
  if (r->comms)
    g_array_unref(r->comms);
  memset(r, 0, sizeof *r);
}

static int compare_comms(gconstpointer pa, gconstpointer pb) {
  const CostComm *a = pa, *b = pb;
  if (a->op != b->op)
    return a->op < b->op ? -1 : 1;
  int c = strcmp(a->axes, b->axes);
  if (c)
    return c;
  return a->size < b->size ? -1 : a->size > b->size;
}

/* A result that updates an argument of its size (Func.result_updates;
 * lowering gives the update its argument's layout) is written into the
 * argument's buffer, as XLA writes a donated argument's update: it takes
 * no bytes of its own.  The argument's buffer is live throughout, as
 * every argument's is (no temporary goes into a parameter's buffer). */
static void donate(Walk *w, const Func *f, const Schedule *sc) {
  for (int r = 0; f->result_updates && r < f->nresults; r++) {
    int k = f->result_updates[r];
    const Term *t = f->body->args[r];
    if (k >= 0 && k < f->nargs && t->kind != TM_ARG &&
        bytes_of(t->type) == bytes_of(f->arg_types[k]))
      value_at(w, sc->results[r]->index)->bytes = 0;
  }
}

/* The estimate of 'f' on 'hw', its statements named as 'm' names them,
 * or not named when 'named' is FALSE (no 'peak_at'); 'f' checked first
 * unless 'checked'. */
static gboolean estimate(const Module *m, gboolean named, gboolean checked,
                         const Func *f, const Hardware *hw, CostReport *out,
                         Diag *diag) {
  memset(out, 0, sizeof *out);
  if (!checked && !check_program(f, diag))
    return FALSE;
  out->comms = g_array_new(FALSE, TRUE, sizeof(CostComm));
  out->ndevices = mesh_devices(f->spmd ? &f->spmd->mesh : NULL);

  /* kernels are priced when the description models them */
  g_autoptr(Schedule) sc = schedule_for_memory(f);
  g_autoptr(Fusion) fusion = NULL;
  g_autoptr(GHashTable) reads = NULL;
  if (hw->mem_bw > 0 || hw->kernel_overhead > 0) {
    fusion = fusion_new(sc, f);
    reads = g_hash_table_new(NULL, NULL);
  }
  Walk w = {.hw = hw, .fusion = fusion, .reads = reads, .out = out};
  w.nvalues = sc->nvalues;
  w.values = g_new(Value, (gsize)MAX(sc->nvalues, 1));
  w.open[0] = (Open){-1, g_array_new(FALSE, FALSE, sizeof(int)), 1.0};
  for (int i = 0; i < f->nargs; i++) /* arguments come first, in order */
    add_value(&w, term_arg(i, f->arg_types[i]), &sc->args[i], -1);
  walk_region(&w, sc->top);
  g_assert(w.depth == 0);

  for (int i = 0; i < f->nresults; i++) /* results live to the end */
    use(&w, f->body->args[i], sc->results[i], 0, w.npos);
  donate(&w, f, sc);
  sweep(&w);
  if (named && w.peak_term) { /* as the printed program names it */
    g_autoptr(Schedule) printed = schedule_new(m, f);
    out->peak_at = g_strdup(printed_name(printed->top, w.peak_term));
  }

  g_array_unref(w.open[0].crossing);
  g_free(w.values);

  g_array_sort(out->comms, compare_comms);
  /* a step repeated finds in the cache what it left there, when all of
   * it fits: the kernels then move their bytes at cache_bw */
  out->in_cache = hw->cache_bytes > 0 && out->peak_bytes <= hw->cache_bytes;
  if (out->in_cache)
    out->compute_time = w.cached_time;
  out->overhead_time = hw->step_overhead;
  out->total_time = out->compute_time + out->comm_time + out->overhead_time;
  out->fits = out->peak_bytes <= hw->memory_bytes;
  return TRUE;
}

gboolean cost_estimate(const Module *m, const Func *f, const Hardware *hw,
                       CostReport *out, Diag *diag) {
  return estimate(m, TRUE, FALSE, f, hw, out, diag);
}

gboolean cost_estimate_unnamed(const Func *f, const Hardware *hw,
                               CostReport *out, Diag *diag) {
  return estimate(NULL, FALSE, FALSE, f, hw, out, diag);
}

gboolean cost_estimate_lowered(const Func *f, const Hardware *hw,
                               CostReport *out, Diag *diag) {
  return estimate(NULL, FALSE, TRUE, f, hw, out, diag);
}

double cost_comm_bytes(const CostReport *r) {
  double bytes = 0;
  for (guint i = 0; r->comms && i < r->comms->len; i++)
    bytes += g_array_index(r->comms, CostComm, i).bytes;
  return bytes;
}

/* --------------------------------------------------------------- print */

/* "4.19 M" style: three significant digits and an SI prefix. */
static void append_si(GString *out, double v, const char *unit) {
  static const char *const prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  gsize p = 0;
  while (fabs(v) >= 1000 && p + 1 < G_N_ELEMENTS(prefixes)) {
    v /= 1000;
    p++;
  }
  g_string_append_printf(out, "%.3g %s%s", v, prefixes[p], unit);
}

/* "1234 B (1.21 KiB)" */
static void append_bytes(GString *out, double v) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  g_string_append_printf(out, "%.0f B", v);
  if (v < 1024)
    return;
  gsize u = 0;
  while (v >= 1024 && u + 1 < G_N_ELEMENTS(units)) {
    v /= 1024;
    u++;
  }
  g_string_append_printf(out, " (%.3g %s)", v, units[u]);
}

void cost_append_time(GString *out, double s) {
  if (s == 0)
    g_string_append(out, "0 s");
  else if (s < 1e-6)
    g_string_append_printf(out, "%.3g ns", s * 1e9);
  else if (s < 1e-3)
    g_string_append_printf(out, "%.3g us", s * 1e6);
  else if (s < 1)
    g_string_append_printf(out, "%.3g ms", s * 1e3);
  else
    g_string_append_printf(out, "%.3g s", s);
}

static void append_flops(GString *out, double v) {
  g_string_append_printf(out, "%.0f", v);
  if (v >= 1000) {
    g_string_append(out, " (");
    append_si(out, v, "FLOP");
    g_string_append_c(out, ')');
  }
}

/* One row: label, per-device text, all-devices text. */
static void row(GString *out, const char *label, const char *per_device,
                const char *all) {
  if (all)
    g_string_append_printf(out, "  %-16s %-30s %s\n", label, per_device, all);
  else
    g_string_append_printf(out, "  %-16s %s\n", label, per_device);
}

void cost_print(GString *out, const CostReport *r, const Hardware *hw,
                const Mesh *mesh) {
  double n = (double)r->ndevices;
  g_autofree char *mesh_text = mesh ? mesh_to_string(mesh) : NULL;
  g_string_append_printf(
      out, "cost per step on %s%s (%" G_GINT64_FORMAT " device%s), hardware %s",
      mesh_text && *mesh_text ? "mesh " : "",
      mesh_text && *mesh_text ? mesh_text : "one device", r->ndevices,
      r->ndevices == 1 ? "" : "s", hw->name);
  if (hw->source)
    g_string_append_printf(out, " (%s)", hw->source);
  if (hw->changes[0])
    g_string_append_printf(out, " with %s", hw->changes);
  g_string_append_c(out, '\n');

  g_autoptr(GString) a = g_string_new(NULL);
  g_autoptr(GString) b = g_string_new(NULL);
  g_autofree char *all_header =
      g_strdup_printf("all %" G_GINT64_FORMAT " device%s", r->ndevices,
                      r->ndevices == 1 ? "" : "s");
  row(out, "", "per device", all_header);

  append_flops(a, r->flops);
  append_flops(b, r->flops * n);
  row(out, "FLOPs", a->str, b->str);

  g_string_truncate(a, 0);
  g_string_truncate(b, 0);
  append_bytes(a, r->peak_bytes);
  append_bytes(b, r->peak_bytes * n);
  row(out, "peak memory", a->str, b->str);
  g_string_truncate(a, 0);
  g_string_printf(a, "%.3g%% of ", 100.0 * r->peak_bytes / hw->memory_bytes);
  append_si(a, hw->memory_bytes, "B");
  if (!r->fits)
    g_string_append(a, "  DOES NOT FIT");
  row(out, "", a->str, NULL);
  if (r->peak_at)
    g_string_append_printf(out, "  %-16s %%%s\n", "peak at", r->peak_at);

  double bytes = cost_comm_bytes(r);
  g_string_truncate(a, 0);
  g_string_truncate(b, 0);
  append_bytes(a, bytes);
  append_bytes(b, bytes * n);
  row(out, "bytes sent", a->str, b->str);

  if (r->comms->len > 0) {
    g_string_append(out, "collectives per device:\n");
    g_string_append_printf(out, "  %-16s %-14s %6s %8s  %-24s %s\n", "kind",
                           "axes", "size", "count", "bytes sent", "time");
    for (guint i = 0; i < r->comms->len; i++) {
      const CostComm *c = &g_array_index(r->comms, CostComm, i);
      g_string_truncate(a, 0);
      g_string_truncate(b, 0);
      append_bytes(a, c->bytes);
      cost_append_time(b, c->time);
      g_string_append_printf(
          out, "  %-16s %-14s %6" G_GINT64_FORMAT " %8.0f  %-24s %s\n",
          op_name(c->op), c->axes, c->size, c->count, a->str, b->str);
    }
  }

  if (hw->mem_bw > 0 || hw->kernel_overhead > 0) {
    g_string_truncate(a, 0);
    g_string_printf(a, "%.0f", r->kernels);
    row(out, "kernels", a->str, NULL);
    g_string_truncate(a, 0);
    append_bytes(a, r->traffic_bytes);
    if (r->in_cache) /* why the traffic costs less than mem_bw says */
      g_string_append(a, ", in cache");
    row(out, "memory traffic", a->str, NULL);
  }

  g_string_append(out, "time per step (compute and communication do not "
                       "overlap):\n");
  g_string_truncate(a, 0);
  cost_append_time(a, r->compute_time);
  row(out, "compute", a->str, NULL);
  g_string_truncate(a, 0);
  cost_append_time(a, r->comm_time);
  row(out, "communication", a->str, NULL);
  if (r->overhead_time > 0) {
    g_string_truncate(a, 0);
    cost_append_time(a, r->overhead_time);
    row(out, "step overhead", a->str, NULL);
  }
  g_string_truncate(a, 0);
  cost_append_time(a, r->total_time);
  row(out, "total", a->str, NULL);
}
