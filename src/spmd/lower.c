/* lower.c — a partitioned program to the program every device runs.
 *
 * requires: a well-typed program whose tiles and sums bound to mesh axes
 * have as many parts as their axis has devices.
 *
 * The SPMD program computes local values: each global value v becomes a
 * local term plus a Dist saying how v lies on the mesh (which axes split
 * each dimension, over which axes devices hold partial sums, the rest
 * replicated).  Lowering walks the global term:
 *
 *   tile d (\r@A -> e)   the device with coordinate a on A computes e for
 *                        r = a: the result is e's local value, with A
 *                        splitting dimension d
 *   sum (\r@A -> e)      likewise; the result is partial over A
 *   slice d x[r@A]       this device's chunk of x, taken literally: x is
 *                        made whole over A and along d (all_reduce what
 *                        is partial, all_gather what is split), then
 *                        'shard' cuts the chunk out; the next pass
 *                        (redistribute.c) fuses those pairs
 *   tile/sum unbound     stay sequential loops in the local program
 *   op(a, b)             the operator on local operands; its tiling spec
 *                        says which operand dims carry which result dims
 *                        and which are reduced: operands that agree keep
 *                        their split (a reduced dim split the same way
 *                        makes the result partial); operands that do not
 *                        are gathered ('all_gather'); partial operands are
 *                        summed first ('all_reduce')
 *   results              summed if partial; splits are kept (the Dist of
 *                        the result says how to read it)
 *
 * Inside a region bound to axis A the local value of the body is the
 * whole value for this device's r, so values used there must not be
 * split by A: they are gathered over A first.
 *
 * Names: a local value that stands for one named global value (the
 * value itself, this device's chunk of it, or the local value of a tile
 * or sum bound to an axis) takes the user's name, and a loop that stays
 * keeps its binder's name; collectives the lowering adds have none.  The
 * names go to a Module of their own, keyed by local terms as the
 * printer looks them up.
 */
#include "spmd/spmd.h"

#include <string.h>

typedef struct LVal {
  const Term *t;      /* local term */
  const Type *global; /* the global value's type */
  Dist d;
} LVal;

typedef struct Binder {
  const char *axis; /* NULL: a sequential loop */
  int local_pos;    /* sequential: its position among local binders */
  const Type *local_range;
} Binder;

typedef struct Lower {
  const RuleSet *rs;
  const Mesh *mesh;
  Diag *why;
  gboolean failed;
  Binder binders[PARTIR_MAX_REGIONS + 2]; /* by level */
  int depth;                              /* global binders entered */
  int ldepth; /* local (sequential) binders entered */
  /* global Term -> LVal*, per region depth (0: closed terms); a region
   * instance starts with its binders' table for its depth: a fresh one,
   * or the one 'regions' keeps for them */
  GHashTable *memo[PARTIR_MAX_REGIONS + 2];
  GHashTable *regions;        /* SpmdMemo's, or NULL */
  const Module *global_names; /* the user's names of the global values */
  Module *local_names;        /* what the local values take, or NULL */
} Lower;

static gboolean fail(Lower *lw, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static gboolean fail(Lower *lw, const char *fmt, ...) {
  if (!lw->failed) {
    va_list ap;
    va_start(ap, fmt);
    diag_vreason(lw->why, fmt, ap);
    va_end(ap);
  }
  lw->failed = TRUE;
  return FALSE;
}

static Dist dist_whole(int rank) {
  Dist d = {.rank = rank};
  return d;
}

/* The local type of a global type laid out as 'd': a dimension split
 * unevenly is padded to a multiple of its parts (dist_local_size). */
static const Type *local_type(Lower *lw, const Type *global, const Dist *d) {
  const Type *t = global;
  for (int i = 0; i < d->rank; i++)
    t = type_with_dim(t, i,
                      dist_local_size(t->dims[i], dist_parts(d, lw->mesh, i)));
  return t;
}

/* Whether dimension 'dim' of 'v' is split unevenly: its chunks are
 * padded. */
static gboolean split_unevenly(Lower *lw, const LVal *v, int dim) {
  return v->t->type->dims[dim] * dist_parts(&v->d, lw->mesh, dim) !=
         v->global->dims[dim];
}

/* ------------------------------------------------------- collectives */

static AttrValue axes_value(const char *const *axes, int n) {
  AttrValue v = {.kind = AV_LIST, .count = n};
  v.items = g_new0(AttrValue, (gsize)MAX(n, 1));
  for (int i = 0; i < n; i++) {
    v.items[i].kind = AV_SYMBOL;
    v.items[i].sym = axes[i];
  }
  return v;
}

/* The attributes of a collective: what makes them, as the key of
 * 'collective_attrs'. */
typedef struct CollectiveKey {
  Op op;
  int naxes, dim, dim2;
  int64_t size, length;
  const char *axes[MESH_MAX_AXES]; /* interned */
} CollectiveKey;

static guint collective_key_hash(gconstpointer p) {
  const CollectiveKey *k = p;
  guint h = (guint)k->op * 31u + (guint)k->naxes;
  h = h * 1000003u + (guint)k->dim * 7u + (guint)k->dim2;
  h = h * 1000003u + (guint)k->size + (guint)k->length * 13u;
  for (int i = 0; i < k->naxes; i++)
    h = h * 1000003u + g_direct_hash(k->axes[i]);
  return h;
}

static gboolean collective_key_equal(gconstpointer pa, gconstpointer pb) {
  const CollectiveKey *a = pa, *b = pb;
  if (a->op != b->op || a->naxes != b->naxes || a->dim != b->dim ||
      a->dim2 != b->dim2 || a->size != b->size || a->length != b->length)
    return FALSE;
  for (int i = 0; i < a->naxes; i++)
    if (a->axes[i] != b->axes[i])
      return FALSE;
  return TRUE;
}

static const Attrs *collective_attrs_make(const CollectiveKey *k);

/* The interned attributes of a collective, made once per key: a
 * lowering makes a collective for most values it lowers, and attributes
 * are interned for the life of the process, so the table holds no more
 * than the store of attributes does. */
static const Attrs *collective_attrs(const CollectiveKey *k) {
  static GHashTable *known; /* CollectiveKey* -> Attrs* */
  if (!known)
    known = g_hash_table_new(collective_key_hash, collective_key_equal);
  const Attrs *a = g_hash_table_lookup(known, k);
  if (!a) {
    a = collective_attrs_make(k);
    g_hash_table_insert(known, g_memdup2(k, sizeof *k), (gpointer)a);
  }
  return a;
}

const Term *spmd_collective(const Mesh *mesh, Op op, const Term *x,
                            const char *const *axes, int naxes, int dim,
                            int dim2, int64_t length, Diag *err) {
  g_assert(naxes <= MESH_MAX_AXES);
  CollectiveKey k = {.op = op,
                     .naxes = naxes,
                     .dim = dim,
                     .dim2 = dim2,
                     .size = 1,
                     .length = length};
  for (int i = 0; i < naxes; i++) {
    k.axes[i] = axes[i];
    k.size *= mesh_axis_size(mesh, axes[i]);
  }
  return term_op(op, 1, &x, collective_attrs(&k), NULL, err);
}

/* spmd_collective, failing the lowering when it does not type */
static const Term *collective_length(Lower *lw, Op op, const Term *x,
                                     const char *const *axes, int naxes,
                                     int dim, int dim2, int64_t length) {
  g_autoptr(Diag) err = diag_new(NULL);
  const Term *t =
      spmd_collective(lw->mesh, op, x, axes, naxes, dim, dim2, length, err);
  if (!t)
    fail(lw, "lowering made an ill-typed %s: %s", op_name(op), diag_text(err));
  return t;
}

static const Attrs *collective_attrs_make(const CollectiveKey *k) {
  static const char *axes_key, *size_key, *split_key, *concat_key, *dim_key,
      *length_key;
  if (!axes_key) { /* interned once: g_intern_string takes a lock */
    axes_key = g_intern_static_string("axes");
    size_key = g_intern_static_string("size");
    split_key = g_intern_static_string("split_dim");
    concat_key = g_intern_static_string("concat_dim");
    dim_key = g_intern_static_string("dim");
    length_key = g_intern_static_string("length");
  }
  const char **keys = g_new(const char *, 5);
  AttrValue *vals = g_new0(AttrValue, 5);
  int n = 0;
  keys[n] = axes_key;
  vals[n++] = axes_value(k->axes, k->naxes);
  keys[n] = size_key;
  vals[n++] = (AttrValue){.kind = AV_INT, .i = k->size};
  if (k->op == OP_ALL_TO_ALL) {
    keys[n] = split_key;
    vals[n++] = (AttrValue){.kind = AV_INT, .i = k->dim};
    keys[n] = concat_key;
    vals[n++] = (AttrValue){.kind = AV_INT, .i = k->dim2};
  } else if (k->op != OP_ALL_REDUCE) {
    keys[n] = dim_key;
    vals[n++] = (AttrValue){.kind = AV_INT, .i = k->dim};
  }
  if (k->length) {
    keys[n] = length_key;
    vals[n++] = (AttrValue){.kind = AV_INT, .i = k->length};
  }
  return attrs_intern(n, keys, vals);
}

/* op(x) {axes, size, dim / split_dim, concat_dim} */
static const Term *collective(Lower *lw, Op op, const Term *x,
                              const char *const *axes, int naxes, int dim,
                              int dim2) {
  return collective_length(lw, op, x, axes, naxes, dim, dim2, 0);
}

/* Sums a partial value over its partial axes. */
static void reduce_partial(Lower *lw, LVal *v) {
  if (!v->d.npartial || lw->failed)
    return;
  v->t = collective(lw, OP_ALL_REDUCE, v->t, v->d.partial, v->d.npartial, 0, 0);
  v->d.npartial = 0;
}

/* Makes dimension 'dim' whole; of a dimension split unevenly the
 * all_gather keeps the global size, dropping the padding. */
static void gather_dim(Lower *lw, LVal *v, int dim) {
  if (!v->d.naxes[dim] || lw->failed)
    return;
  int64_t length = split_unevenly(lw, v, dim) ? v->global->dims[dim] : 0;
  v->t = collective_length(lw, OP_ALL_GATHER, v->t, v->d.axes[dim],
                           v->d.naxes[dim], dim, 0, length);
  v->d.naxes[dim] = 0;
}

/* Inside regions bound to axes, a value must not use them: gather them. */
static void detach(Lower *lw, LVal *v) {
  for (int b = 0; b < lw->depth; b++) {
    const char *axis = lw->binders[b].axis;
    if (!axis)
      continue;
    for (int k = 0; k < v->d.npartial; k++)
      if (v->d.partial[k] == axis)
        reduce_partial(lw, v);
    for (int i = 0; i < v->d.rank; i++)
      for (int k = 0; k < v->d.naxes[i]; k++)
        if (v->d.axes[i][k] == axis)
          gather_dim(lw, v, i);
  }
}

/* ----------------------------------------------------------- lowering */

/* The recursion below descends once per level of the global term, so
 * its depth is the term's height (pipeline_lower refuses one higher than
 * PARTIR_MAX_HEIGHT).  Its frames hold little more than pointers, 200 to
 * 300 bytes a level (-fstack-usage at -O0 and -O2, and with ASan), so
 * the deep stack of the front ends holds that height several times over:
 * values (an LVal is most of a kilobyte) are written through 'out',
 * operands live on the heap, and what is done once the operands are
 * lowered is in helpers that are not inlined, so their locals stay off
 * the recursion's stack.  The collectives lowering adds are levels of
 * the local program (an operand gathered at every step of a chain
 * doubles its height): a local value higher than PARTIR_MAX_HEIGHT is
 * refused, so that the passes after lowering, which recurse too, get
 * what they can hold. */
static void lower(Lower *lw, const Term *t, LVal *out);

/* slice d x[r], 'x' lowered: a local slice, or this device's chunk. */
static G_GNUC_NO_INLINE void slice_local(Lower *lw, const Term *t, LVal *out) {
  LVal x = *out;
  int d = t->index;
  const Term *r = t->args[1];
  const Binder *b = &lw->binders[r->index];
  if (!b->axis) { /* a sequential loop: a local slice of a whole dim */
    gather_dim(lw, &x, d);
    g_autoptr(Diag) err = diag_new(NULL);
    /* the local level: the sequential binders around it */
    const Term *idx = term_bvar(b->local_pos, b->local_range);
    x.t = term_slice(d, x.t, idx, err);
    if (!x.t)
      fail(lw, "lowering a sequential slice: %s", diag_text(err));
    *out = x;
    return;
  }
  /* The literal chunk: make x whole over the axis and along d, then cut
   * this device's part out.  The [spmd] rules fuse the pairs this makes
   * (all_reduce then shard is a reduce_scatter, all_gather then shard an
   * identity or an all_to_all), so the gather of a dimension split by
   * exactly this axis is made last, right under the shard. */
  const char *axis = b->axis;
  /* partial over this axis and others: sum over this axis first, so the
   * rules can make that sum the reduce_scatter and sum the others over
   * the chunk alone */
  for (int k = 0; k < x.d.npartial && x.d.npartial > 1; k++)
    if (x.d.partial[k] == axis) {
      x.t = collective(lw, OP_ALL_REDUCE, x.t, &axis, 1, 0, 0);
      memmove(&x.d.partial[k], &x.d.partial[k + 1],
              sizeof(char *) * (gsize)(x.d.npartial - k - 1));
      x.d.npartial--;
    }
  reduce_partial(lw, &x);
  gather_dim(lw, &x, d);
  int last = -1;
  for (int e = 0; e < x.d.rank; e++)
    for (int k = 0; k < x.d.naxes[e]; k++)
      if (x.d.axes[e][k] == axis) {
        if (x.d.naxes[e] == 1)
          last = e;
        else
          gather_dim(lw, &x, e);
      }
  if (last >= 0)
    gather_dim(lw, &x, last);
  x.t = collective(lw, OP_SHARD, x.t, &axis, 1, d, 0);
  *out = x;
}

static void lower_slice(Lower *lw, const Term *t, LVal *out) {
  lower(lw, t->args[0], out);
  if (!lw->failed)
    slice_local(lw, t, out);
}

/* Whether tile or sum 't', bound to an axis, fits 'mesh': the axis
 * exists, has as many devices as the range has parts, and the width is
 * the size over the devices rounded up. */
static gboolean region_fits(const Mesh *mesh, const Term *t, Diag *why) {
  const Type *range = t->range;
  const char *axis = t->axis;
  if (!axis)
    return TRUE;
  int64_t size = mesh_axis_size(mesh, axis);
  if (size == 0) {
    diag_reason(why,
                "a %s is bound to axis \"%s\", which the mesh does not have",
                t->kind == TM_TILE ? "tile" : "sum", axis);
    return FALSE;
  }
  int64_t parts = type_range_parts(range);
  if (parts != size) {
    diag_reason(why,
                "range<%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                "> has %" G_GINT64_FORMAT
                " parts but axis \"%s\" has %" G_GINT64_FORMAT " devices",
                range->n, range->w, parts, axis, size);
    return FALSE;
  }
  /* a device's chunk is padded to ceil(n / devices), as GSPMD pads */
  if (range->w != dist_local_size(range->n, size)) {
    diag_reason(why,
                "uneven range<%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                "> over axis \"%s\" of %" G_GINT64_FORMAT
                " devices: the width must be %" G_GINT64_FORMAT
                " (the size over the devices, rounded up)",
                range->n, range->w, axis, size,
                dist_local_size(range->n, size));
    return FALSE;
  }
  return TRUE;
}

static gboolean fits_rec(const Mesh *mesh, const Term *t, GHashTable *seen,
                         Diag *why) {
  if (!g_hash_table_add(seen, (gpointer)t))
    return TRUE;
  if ((t->kind == TM_TILE || t->kind == TM_SUM) && !region_fits(mesh, t, why))
    return FALSE;
  for (int i = 0; i < t->nargs; i++)
    if (!fits_rec(mesh, t->args[i], seen, why))
      return FALSE;
  return TRUE;
}

gboolean spmd_fits_mesh(const Func *g, const Mesh *mesh, Diag *why) {
  g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
  return fits_rec(mesh, g->body, seen, why);
}

/* Whether a tile or sum can be bound where it is: it fits the mesh and
 * no enclosing region binds its axis already. */
static G_GNUC_NO_INLINE gboolean region_bindable(Lower *lw, const Term *t) {
  const char *axis = t->axis;
  if (!axis)
    return TRUE;
  if (!region_fits(lw->mesh, t, lw->why)) {
    lw->failed = TRUE;
    return FALSE;
  }
  for (int b = 0; b < lw->depth; b++)
    if (lw->binders[b].axis == axis)
      return fail(lw, "axis \"%s\" is bound by two nested regions", axis);
  return TRUE;
}

/* The value of a tile or sum from its body's lowered value 'body' (whole
 * for this r): split or partial over the region's axis, or a sequential
 * loop around the body. */
static G_GNUC_NO_INLINE void region_result(Lower *lw, const Term *t,
                                           LVal *body) {
  const char *axis = t->axis;
  if (axis) {
    if (t->kind == TM_TILE) {
      int d = t->index;
      if (body->d.naxes[d] == MESH_MAX_AXES) {
        fail(lw, "too many axes split one dimension");
        return;
      }
      /* padding inside padding would not be where one all_gather over
       * both axes puts it: an uneven split has one axis */
      if (body->d.naxes[d] &&
          (!type_range_even(t->range) || split_unevenly(lw, body, d))) {
        fail(lw,
             "dimension %d is split over \"%s\" and \"%s\", unevenly: "
             "a dimension split unevenly is split over one axis only",
             d, axis, body->d.axes[d][0]);
        return;
      }
      memmove(&body->d.axes[d][1], &body->d.axes[d][0],
              sizeof(char *) * (gsize)body->d.naxes[d]);
      body->d.axes[d][0] = axis;
      body->d.naxes[d]++;
    } else {
      body->d.partial[body->d.npartial++] = axis;
    }
    return;
  }
  g_autoptr(Diag) err = diag_new(NULL);
  if (t->kind == TM_TILE)
    gather_dim(lw, body, t->index);
  int level = lw->binders[t->binder].local_pos;
  const Term *loop =
      t->kind == TM_TILE
          ? term_tile(t->index, t->range, NULL, body->t, level, err)
          : term_sum(t->range, NULL, body->t, level, err);
  if (!loop)
    fail(lw, "lowering a sequential loop: %s", diag_text(err));
  body->t = loop;
}

/* The table of the region just entered (lw->depth): what lowering
 * reads of the region's context is its binders, so with 'regions' the
 * values lowered under the same binders before are taken from there. */
static GHashTable *region_memo(Lower *lw) {
  if (!lw->regions)
    return g_hash_table_new_full(NULL, NULL, NULL, g_free);
  /* the binders' fields (not their bytes: a struct has padding) */
  guint64 key[3 * (PARTIR_MAX_REGIONS + 2)];
  int n = 0;
  for (int k = 0; k < lw->depth; k++) {
    const Binder *b = &lw->binders[k];
    key[n++] = (guint64)(guintptr)b->axis;
    key[n++] = (guint64)b->local_pos;
    key[n++] = (guint64)(guintptr)b->local_range;
  }
  GBytes *bytes = g_bytes_new(key, sizeof(guint64) * (gsize)n);
  GHashTable *table = g_hash_table_lookup(lw->regions, bytes);
  if (table) {
    g_bytes_unref(bytes);
  } else {
    table = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    g_hash_table_insert(lw->regions, bytes, table);
  }
  return g_hash_table_ref(table);
}

/* tile and sum: bound to an axis, or a sequential loop */
static void lower_region(Lower *lw, const Term *t, LVal *out) {
  const char *axis = t->axis;
  if (!region_bindable(lw, t))
    return;
  Binder *b = &lw->binders[lw->depth];
  *b = (Binder){.axis = axis, .local_pos = lw->ldepth, .local_range = t->range};
  lw->depth++;
  if (!axis)
    lw->ldepth++;
  GHashTable *outer = lw->memo[lw->depth];
  lw->memo[lw->depth] = region_memo(lw);
  lower(lw, t->args[0], out);
  if (!lw->failed)
    detach(lw, out); /* the body's value is whole for this r */
  g_hash_table_unref(lw->memo[lw->depth]);
  lw->memo[lw->depth] = outer;
  lw->depth--;
  if (!axis)
    lw->ldepth--;
  if (!lw->failed)
    region_result(lw, t, out);
}

/* A column of a tiling spec: for each operand, the dimension that
 * carries one result dimension or reduction (-1: none).  Marks those
 * dims mapped; returns the first operand in the column (-1: none) and
 * whether every operand in it is split the same way. */
static int column_first(const LVal *args, int nargs, const int *col,
                        gboolean mapped[][PARTIR_MAX_RANK], gboolean *agree) {
  int first = -1;
  *agree = TRUE;
  for (int i = 0; i < nargs; i++) {
    if (col[i] < 0)
      continue;
    mapped[i][col[i]] = TRUE;
    if (first < 0)
      first = i;
    else if (!dist_same_axes(&args[first].d, col[first], &args[i].d, col[i]))
      *agree = FALSE;
  }
  return first;
}

/* Makes the dimensions of a column whole in every operand. */
static void gather_column(Lower *lw, LVal *args, int nargs, const int *col) {
  for (int i = 0; i < nargs; i++)
    if (col[i] >= 0)
      gather_dim(lw, &args[i], col[i]);
}

/* op(args), its operands lowered (and summed, and detached from the
 * axes of enclosing regions): the layout its tiling spec gives the
 * result, the operands gathered where they disagree, and the operator on
 * the local operands. */
static G_GNUC_NO_INLINE void op_local(Lower *lw, const Term *t, LVal *args,
                                      LVal *result) {
  LVal out = {.d = dist_whole(t->type->rank)};
  TileSpec spec;
  gboolean has_spec = spec_of(lw->rs, t, &spec);
  /* which operand dims the spec accounts for */
  gboolean mapped[SPEC_MAX_OPERANDS][PARTIR_MAX_RANK] = {{FALSE}};
  if (has_spec) {
    for (int D = 0; D < spec.nout; D++) {
      gboolean agree;
      int first = column_first(args, t->nargs, spec.out[D], mapped, &agree);
      if (first < 0)
        continue;
      /* a reshape's carrying dim may have another size: its parts must
       * divide this one too (16 columns a device are no whole heads of
       * 32) */
      if (agree && spec.out_ok[D] &&
          t->type->dims[D] %
                  dist_parts(&args[first].d, lw->mesh, spec.out[D][first]) !=
              0)
        agree = FALSE;
      /* an uneven split's padding carries to a dimension of its size */
      for (int i = 0; agree && i < t->nargs; i++)
        if (spec.out[D][i] >= 0 && split_unevenly(lw, &args[i], spec.out[D][i]))
          agree = t->type->dims[D] == args[i].global->dims[spec.out[D][i]];
      if (!agree || !spec.out_ok[D])
        gather_column(lw, args, t->nargs, spec.out[D]);
      const Dist *src = &args[first].d;
      int sd = spec.out[D][first];
      out.d.naxes[D] = src->naxes[sd];
      memcpy(out.d.axes[D], src->axes[sd],
             sizeof(char *) * (gsize)src->naxes[sd]);
    }
    for (int k = 0; k < spec.nred; k++) {
      gboolean agree;
      int first = column_first(args, t->nargs, spec.red[k], mapped, &agree);
      /* the parts of a lookup are masked lookups (gather-sum), not the
       * gather on the parts: a table split along its rows is gathered */
      agree &= !spec.red_masked[k];
      /* a reduction over padding would add it: the masks that keep it
       * out are the rewrite's (OP-sum); a whole operator gathers */
      for (int i = 0; agree && i < t->nargs; i++)
        if (spec.red[k][i] >= 0 && split_unevenly(lw, &args[i], spec.red[k][i]))
          agree = FALSE;
      if (first >= 0 && !agree)
        gather_column(lw, args, t->nargs, spec.red[k]);
      if (first < 0 || !agree)
        continue;
      /* each device reduced its part: the result is partial over them */
      const Dist *src = &args[first].d;
      int sd = spec.red[k][first];
      for (int a = 0; a < src->naxes[sd]; a++)
        if (out.d.npartial < MESH_MAX_AXES)
          out.d.partial[out.d.npartial++] = src->axes[sd][a];
    }
    /* A layout uses each axis once: a result dim whose split repeats an
     * axis of an earlier dim (x's rows and w's columns both over 'model')
     * is gathered; so are reductions whose partial axes repeat one. */
    const char *used[PARTIR_MAX_RANK * MESH_MAX_AXES];
    int nused = 0;
    for (int D = 0; D < spec.nout; D++) {
      gboolean clash = FALSE;
      for (int a = 0; a < out.d.naxes[D]; a++)
        for (int u = 0; u < nused; u++)
          clash |= used[u] == out.d.axes[D][a];
      if (clash) {
        gather_column(lw, args, t->nargs, spec.out[D]);
        out.d.naxes[D] = 0;
        continue;
      }
      for (int a = 0; a < out.d.naxes[D]; a++)
        used[nused++] = out.d.axes[D][a];
    }
    gboolean clash = FALSE;
    for (int k = 0; k < out.d.npartial; k++)
      for (int u = 0; u < nused; u++)
        clash |= used[u] == out.d.partial[k];
    for (int k = 0; k < out.d.npartial && !clash; k++)
      for (int j = 0; j < k; j++)
        clash |= out.d.partial[j] == out.d.partial[k];
    if (clash) {
      for (int k = 0; k < spec.nred; k++)
        gather_column(lw, args, t->nargs, spec.red[k]);
      out.d.npartial = 0;
    }
  }
  for (int i = 0; i < t->nargs; i++) /* dims no result dim carries */
    for (int d = 0; d < args[i].d.rank; d++)
      if (!mapped[i][d])
        gather_dim(lw, &args[i], d);
  if (lw->failed)
    return;
  const Term *largs[SPEC_MAX_OPERANDS];
  for (int i = 0; i < t->nargs; i++)
    largs[i] = args[i].t;
  const Type *written =
      op_takes_written_type(t->op) ? local_type(lw, t->type, &out.d) : NULL;
  g_autoptr(Diag) err = diag_new(NULL);
  out.t =
      term_op(t->op, t->nargs, largs, rw_attrs_follow(t, largs), written, err);
  if (!out.t)
    fail(lw, "lowering '%s': %s", op_name(t->op), diag_text(err));
  *result = out;
}

static void lower_op(Lower *lw, const Term *t, LVal *out) {
  if (t->nargs > SPEC_MAX_OPERANDS) {
    fail(lw, "'%s' has too many operands to lower", op_name(t->op));
    return;
  }
  g_autofree LVal *args = g_new(LVal, (gsize)MAX(t->nargs, 1));
  for (int i = 0; i < t->nargs; i++) {
    lower(lw, t->args[i], &args[i]);
    if (lw->failed)
      return;
    reduce_partial(lw, &args[i]);
    detach(lw, &args[i]);
  }
  op_local(lw, t, args, out);
}

static void lower_here(Lower *lw, const Term *t, LVal *out);

/* Local binders among the first 'depth' global ones. */
static int local_depth_at(const Lower *lw, int depth) {
  int n = 0;
  for (int b = 0; b < depth; b++)
    n += lw->binders[b].axis == NULL;
  return n;
}

/* Lowers term 't' at the outer depth 'target' where it is
 * computed, the binders of the regions between put back afterwards. */
static void lower_outside(Lower *lw, int target, const Term *t, LVal *out) {
  int depth = lw->depth, ldepth = lw->ldepth;
  g_autofree Binder *saved =
      g_memdup2(&lw->binders[target], sizeof(Binder) * (gsize)(depth - target));
  lw->depth = target;
  lw->ldepth = local_depth_at(lw, target);
  lower_here(lw, t, out);
  lw->depth = depth;
  lw->ldepth = ldepth;
  memcpy(&lw->binders[target], saved, sizeof(Binder) * (gsize)(depth - target));
}

/* Lowers 't' (seen at the current depth) where it is computed: in the
 * region of the innermost binder it uses (closed terms at the top), as
 * the printer places it.  Regions it does not use do not enclose it. */
static void lower(Lower *lw, const Term *t, LVal *out) {
  int target = term_home(t);
  g_assert(target <= lw->depth);
  const LVal *done = g_hash_table_lookup(lw->memo[target], t);
  if (done)
    *out = *done;
  else if (target == lw->depth)
    lower_here(lw, t, out);
  else
    lower_outside(lw, target, t, out);
}

/* Refuses a local term higher than the passes after lowering can hold. */
static gboolean height_ok(Lower *lw, const Term *local) {
  if (local->height <= PARTIR_MAX_HEIGHT)
    return TRUE;
  return fail(lw,
              "the lowered program is more than %d values deep (the "
              "collectives lowering adds are levels too)",
              PARTIR_MAX_HEIGHT);
}

/* The local value 'v' of global value 't' takes the user's
 * name of 't'.  A tile or sum bound to an axis has the local value of its
 * body: the region's name wins over the body's, as the later statements
 * use it by that name.  A loop that stays keeps its binder's name. */
static void name_local(Lower *lw, const Term *t, const LVal *v) {
  if (!lw->local_names || !lw->global_names || t->kind == TM_ARG)
    return;
  const Term *local = v->t;
  const char *name = g_hash_table_lookup(lw->global_names->names, t);
  gboolean region = t->kind == TM_TILE || t->kind == TM_SUM;
  GHashTable *names = lw->local_names->names;
  if (name && (region || !g_hash_table_contains(names, local)))
    g_hash_table_insert(names, (gpointer)local, g_strdup(name));
  const char *binder =
      region && !t->axis
          ? g_hash_table_lookup(lw->global_names->binder_names, t)
          : NULL;
  if (binder)
    g_hash_table_insert(lw->local_names->binder_names, (gpointer)local,
                        g_strdup(binder));
}

/* Checks a lowered value's local type and height, remembers it and gives
 * it the user's name. */
static G_GNUC_NO_INLINE void remember(Lower *lw, const Term *t, const LVal *v) {
  if (v->t->type != local_type(lw, t->type, &v->d))
    fail(lw, "internal: the local type of a lowered value is inconsistent");
  else if (height_ok(lw, v->t)) {
    g_hash_table_insert(lw->memo[lw->depth], (gpointer)t,
                        g_memdup2(v, sizeof *v));
    name_local(lw, t, v);
  }
}

/* requires: t is computed at the current depth (its home) */
static void lower_here(Lower *lw, const Term *t, LVal *out) {
  memset(out, 0, sizeof *out);
  out->global = t->type;
  out->d.rank = t->type->kind == TY_TENSOR ? t->type->rank : 0;
  if (lw->failed)
    return;
  switch (t->kind) {
  case TM_ARG:
    out->t = t;
    break;
  case TM_SLICE:
    lower_slice(lw, t, out);
    break;
  case TM_TILE:
  case TM_SUM:
    lower_region(lw, t, out);
    break;
  case TM_OP:
    lower_op(lw, t, out);
    break;
  default:
    fail(lw, "cannot lower this term");
    break;
  }
  out->global = t->type;
  if (!lw->failed)
    remember(lw, t, out);
}

/* The lowering of 'g'; 'top' (may be NULL: one of its own) remembers
 * the closed values' lowerings, which depend on nothing else, and
 * 'regions' (may be NULL) those of values inside regions, by binders. */
static Func *lower_func(const RuleSet *rs, const Module *m, const Func *g,
                        const Mesh *mesh, Module *names, GHashTable *top,
                        GHashTable *regions, Diag *why) {
  Lower lw = {.rs = rs,
              .mesh = mesh,
              .why = why,
              .global_names = m,
              .local_names = names,
              .regions = regions};
  lw.memo[0] = top ? g_hash_table_ref(top)
                   : g_hash_table_new_full(NULL, NULL, NULL, g_free);
  Func *f = g_new0(Func, 1);
  f->name = g_strdup(g->name);
  f->nargs = g->nargs;
  f->arg_names = g_strdupv(g->arg_names);
  f->arg_types =
      g_memdup2(g->arg_types, sizeof(Type *) * (gsize)MAX(g->nargs, 1));
  f->nresults = g->nresults;
  f->result_types = g_new(const Type *, (gsize)MAX(g->nresults, 1));
  if (g->result_updates)
    f->result_updates =
        g_memdup2(g->result_updates, sizeof(int) * (gsize)MAX(g->nresults, 1));
  f->spmd = g_new0(SpmdInfo, 1);
  f->spmd->mesh = *mesh;
  f->spmd->arg_dists = g_new0(Dist, (gsize)MAX(g->nargs, 1));
  f->spmd->result_dists = g_new0(Dist, (gsize)MAX(g->nresults, 1));
  for (int i = 0; i < g->nargs; i++)
    f->spmd->arg_dists[i] = dist_whole(g->arg_types[i]->rank);
  g_autofree const Term **results =
      g_new0(const Term *, (gsize)MAX(g->nresults, 1));
  for (int i = 0; i < g->nresults && !lw.failed; i++) {
    LVal v;
    lower(&lw, g->body->args[i], &v);
    if (lw.failed)
      break;
    reduce_partial(&lw, &v);
    if (lw.failed || !height_ok(&lw, v.t))
      break;
    results[i] = v.t;
    f->result_types[i] = v.t->type;
    f->spmd->result_dists[i] = v.d;
    dist_set_global(&f->spmd->result_dists[i], mesh, v.t->type, v.global);
  }
  g_hash_table_unref(lw.memo[0]);
  if (lw.failed) {
    func_free(f);
    return NULL;
  }
  f->body = term_tuple(f->nresults, results);
  return f;
}

Func *spmd_lower(const RuleSet *rs, const Module *m, const Func *g,
                 const Mesh *mesh, Module *names, Diag *why) {
  return lower_func(rs, m, g, mesh, names, NULL, NULL, why);
}

Func *spmd_lower_memo(const Func *g, SpmdMemo *memo, Diag *why) {
  spmd_memo_check(memo);
  return lower_func(memo->rs, NULL, g, &memo->mesh, NULL, memo->lower,
                    memo->regions, why);
}
