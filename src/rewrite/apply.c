/* apply.c — applying one rule at one value.
 *
 * rw_apply_here() applies one rule to one term: written rules through
 * match.c, derived operator rules from the operator's TileSpec:
 *
 *   OP-tile-D   op(a, b)  ~~>  tile D (\r:range<n,w> -> op(a', b'))
 *   OP-sum[-K]  op(a, b)  ~~>  sum (\r:range<n,w> -> op(a', b'))
 *   slice-OP-D  slice D (op(a, b))[s]  ~~>  op(a'', b'')
 *   OP-tile-D-rev, OP-sum[-K]-rev   the first two backwards
 *   sink-slice-OP  slice(op(a, b)) {start, limit, strides}  ~~>
 *                  op(slice(a) {..}, b)
 *
 * (gather-sum splits a lookup's table rows: its body is a masked lookup
 * on each part, not the gather on parts; lookup.c builds it)
 *
 * where a' slices each operand along the dimension that carries result
 * dimension D (or reduction K) by the new binder, and a'' by s.  The
 * last takes a static slice (StableHLO's) into the operator the same
 * way: each operand is sliced where it carries a dimension the slice
 * narrows, so only the part kept is computed (the q, k and v that a
 * model splits off one fused projection become three contractions with
 * the weight's slices: Megatron then splits those).  Every replacement
 * must have the type of what it replaces.
 *
 * Uneven ranges (docs/spmd.md, "Uneven sizes"): the last part of a
 * range<n,w> that w does not divide is padded, and what the body computes
 * there is garbage (exp of a zero is one).  A tile drops it; a sum would
 * add it, so OP-sum masks every sliced operand to zero past n
 * (rw_mask_padding), and OP-sum-rev accepts the masked operands.
 *
 * rw_apply() applies a rule at a location (a value of the printed
 * program) and replaces that value everywhere in the program
 * (replace.c), so every use sees the rewrite.
 */
#include "rewrite/rewrite.h"

#include <stdlib.h>
#include <string.h>

static int64_t arg_int(const RuleArg *args, int nargs, const char *name,
                       gboolean *found) {
  for (int i = 0; i < nargs; i++)
    if (!args[i].is_axis && strcmp(args[i].name, name) == 0) {
      *found = TRUE;
      return args[i].value;
    }
  *found = FALSE;
  return 0;
}

static const char *arg_axis(const RuleArg *args, int nargs) {
  for (int i = 0; i < nargs; i++)
    if (args[i].is_axis)
      return args[i].axis;
  return NULL;
}

/* A static slice's attributes when its operand changes type from 'from'
 * to 'to' along dimensions the slice takes whole (the only ones its spec
 * lets a rule split or join): those limits follow the operand's size. */
const Attrs *rw_slice_attrs_follow(const Attrs *a, const Type *from,
                                   const Type *to) {
  const AttrValue *start = attrs_get(a, "start");
  const char **keys = g_new(const char *, (gsize)a->count);
  AttrValue *vals = g_new0(AttrValue, (gsize)a->count);
  for (int i = 0; i < a->count; i++) {
    keys[i] = a->keys[i];
    vals[i] = attr_value_copy(&a->values[i]);
    if (strcmp(keys[i], "limit") == 0 && vals[i].kind == AV_LIST)
      for (int d = 0; d < vals[i].count && d < from->rank; d++)
        if (start->items[d].i == 0 && vals[i].items[d].i == from->dims[d])
          vals[i].items[d].i = to->dims[d];
  }
  return attrs_intern(a->count, keys, vals);
}

const Attrs *rw_attrs_follow(const Term *t, const Term *const *args) {
  switch (t->op) {
  case OP_SLICE:
    return rw_slice_attrs_follow(t->attrs, t->args[0]->type, args[0]->type);
  case OP_GATHER:
  case OP_DYNAMIC_SLICE:
    return gather_sizes_follow(t, args[0]->type);
  default:
    return t->attrs;
  }
}

/* attrs {key = value} with one integer value */
static const Attrs *int_attr(const char *key, int64_t value) {
  const char **keys = g_new(const char *, 1);
  AttrValue *vals = g_new0(AttrValue, 1);
  keys[0] = g_intern_string(key);
  vals[0] = (AttrValue){.kind = AV_INT, .i = value};
  return attrs_intern(1, keys, vals);
}

/* select(broadcast_in_dim(compare(slice 0 iota[r], n, LT)), x, 0): x
 * with the positions of dimension 'dim' past the range's size set to
 * zero.  The iota has the padded size P*w, so its slice by r holds the
 * global index of each position of the part, padding included. */
const Term *rw_mask_padding(const Term *x, int dim, const Term *r, Diag *why) {
  const Type *range = r->type;
  int64_t padded = type_range_parts(range) * range->w;
  DType it = padded <= G_MAXINT32 ? DT_I32 : DT_I64;
  const Type *ity = type_tensor(it, 1, &padded);
  const Type *part = type_tensor(it, 1, &range->w);
  const Term *iota = term_op(OP_IOTA, 0, NULL, int_attr("dim", 0), ity, why);
  const Term *pos = iota ? term_slice(0, iota, r, why) : NULL;
  const Term *size =
      term_op(OP_CONSTANT, 0, NULL, int_attr("value", range->n), part, why);
  if (!pos || !size)
    return NULL;
  const char **keys = g_new(const char *, 1);
  AttrValue *vals = g_new0(AttrValue, 1);
  keys[0] = g_intern_string("direction");
  vals[0] = (AttrValue){.kind = AV_SYMBOL, .sym = g_intern_string("LT")};
  const Term *cmp[2] = {pos, size};
  const Term *valid =
      term_op(OP_COMPARE, 2, cmp, attrs_intern(1, keys, vals), NULL, why);
  if (!valid)
    return NULL;
  keys = g_new(const char *, 1);
  vals = g_new0(AttrValue, 1);
  keys[0] = g_intern_string("dims");
  vals[0] = (AttrValue){.kind = AV_LIST, .count = 1};
  vals[0].items = g_new0(AttrValue, 1);
  vals[0].items[0] = (AttrValue){.kind = AV_INT, .i = dim};
  const Term *pred =
      term_op(OP_BROADCAST_IN_DIM, 1, &valid, attrs_intern(1, keys, vals),
              type_with_dtype(x->type, DT_I1), why);
  const Term *zero =
      term_op(OP_CONSTANT, 0, NULL, int_attr("value", 0), x->type, why);
  if (!pred || !zero)
    return NULL;
  const Term *sel[3] = {pred, x, zero};
  return term_op(OP_SELECT, 3, sel, attrs_empty(), NULL, why);
}

/* The operand rw_mask_padding masked in 'a' along 'dim' by 'r', or NULL
 * when 'a' is no such mask. */
static const Term *unmask_padding(const Term *a, int dim, const Term *r) {
  if (a->kind != TM_OP || a->op != OP_SELECT)
    return NULL;
  g_autoptr(Diag) err = diag_new(NULL);
  return rw_mask_padding(a->args[1], dim, r, err) == a ? a->args[1] : NULL;
}

/* op(operands, each sliced along dims[i] (>= 0) by range value 'r', and
 * masked past the range's size when 'mask'); 'size' is the size of the
 * dimension 'r' cuts in the value the operator computes. */
static const Term *sliced_op(const Term *t, const int *dims, const Term *r,
                             int64_t size, gboolean mask, const Type *written,
                             Diag *why) {
  const Term *args[SPEC_MAX_OPERANDS];
  for (int i = 0; i < t->nargs; i++) {
    const Term *a = t->args[i];
    /* an uneven range's padding is at the end of the dimension it cuts:
     * a dimension of another size (a reshape's) is cut elsewhere */
    if (dims[i] >= 0 && !type_range_even(r->type) &&
        a->type->dims[dims[i]] != size) {
      diag_reason(why,
                  "operand %d has size %" G_GINT64_FORMAT " where the uneven "
                  "range cuts %" G_GINT64_FORMAT,
                  i + 1, a->type->dims[dims[i]], size);
      return NULL;
    }
    if (dims[i] >= 0 && !(a = term_slice(dims[i], a, r, why)))
      return NULL;
    if (dims[i] >= 0 && mask && !(a = rw_mask_padding(a, dims[i], r, why)))
      return NULL;
    args[i] = a;
  }
  return term_op(t->op, t->nargs, args, rw_attrs_follow(t, args),
                 op_takes_written_type(t->op) ? written : NULL, why);
}

/* OP-tile-D-rev and OP-sum[-K]-rev: a region whose body is the operator
 * on operands sliced by the region's binder along the dimensions that
 * carry D (or K), the other operands independent of the binder, is the
 * operator on the whole operands. */
static const Term *apply_unregion(const RuleSet *rs, const Rule *rule,
                                  const Term *t, Diag *why) {
  gboolean tile = rule->kind == RULE_OP_TILE_REV;
  int k = rule->index;
  if (!tile && rule->op == OP_GATHER && t->kind == TM_SUM)
    return lookup_whole(t, why); /* a masked lookup, not a gather, inside */
  const Term *b = t->nargs == 1 ? t->args[0] : NULL;
  if (t->kind != (tile ? TM_TILE : TM_SUM) || (tile && t->index != k) ||
      b->kind != TM_OP || b->op != rule->op) {
    if (tile)
      diag_reason(why,
                  "'%s' applies to a partir.tile along dimension %d "
                  "of a '%s'",
                  rule->name, k, op_name(rule->op));
    else
      diag_reason(why, "'%s' applies to a partir.sum of a '%s'", rule->name,
                  op_name(rule->op));
    return NULL;
  }
  TileSpec spec;
  if (!spec_of(rs, b, &spec) ||
      (tile ? k >= spec.nout || !spec.out_ok[k] : k >= spec.nred)) {
    diag_reason(why, "'%s' does not split this '%s' that way", rule->name,
                op_name(b->op));
    return NULL;
  }
  const Term *r = term_bvar(t->binder, t->range);
  const Term *args[SPEC_MAX_OPERANDS];
  for (int i = 0; i < b->nargs; i++) {
    int c = tile ? spec.out[k][i] : spec.red[k][i];
    const Term *a = b->args[i];
    const Term *inner = c >= 0 && !tile && !type_range_even(t->range)
                            ? unmask_padding(a, c, r)
                            : a;
    if (!inner) {
      diag_reason(why,
                  "operand %d is not masked past the size of the uneven "
                  "range",
                  i + 1);
      return NULL;
    }
    a = inner;
    if (c >= 0) {
      if (a->kind != TM_SLICE || a->index != c || a->args[1] != r) {
        diag_reason(why,
                    "operand %d is not sliced along dimension %d by "
                    "the region's binder",
                    i + 1, c);
        return NULL;
      }
      a = a->args[0];
    }
    if (term_uses(a, t->binder)) {
      diag_reason(why, "operand %d depends on the region's binder", i + 1);
      return NULL;
    }
    args[i] = a;
  }
  return term_op(b->op, b->nargs, args, rw_attrs_follow(b, args),
                 op_takes_written_type(b->op) ? t->type : NULL, why);
}

/* StableHLO's static slice of 'x', [from, to) by 'step' in each
 * dimension; the strides written only where one is not 1, as a model's
 * slices are written. */
static const Term *static_slice(const Term *x, const int64_t *from,
                                const int64_t *to, const int64_t *step,
                                Diag *why) {
  int rank = x->type->rank;
  gboolean strided = FALSE;
  for (int d = 0; d < rank; d++)
    strided |= step[d] != 1;
  AttrValue v[3] = {attr_new_ints(rank, from), attr_new_ints(rank, to),
                    attr_new_ints(rank, step)};
  const Attrs *sa = attrs_build(
      strided ? 3 : 2, (const char *[]){"start", "limit", "strides"}, v);
  if (!strided)
    attr_value_clear(&v[2]);
  return term_op(OP_SLICE, 1, &x, sa, NULL, why);
}

/* A static slice of a reshape as the reshape of a slice of its operand.
 * A reshape relabels the elements in row-major order: its operand's and
 * result's dimensions fall into groups of equal products (a dimension of
 * 96 split as 3 x 32, 16 merged from 8 x 2).  In a group that splits
 * one operand dimension, the slice may narrow one result dimension, the
 * ones before it of size 1 and the ones after it whole: part [s, l) of
 * it is the operand's [s * inner, l * inner), inner the product of the
 * dimensions after it (PyTorch's q, k and v from unflatten(-1, (3, E))
 * of a fused projection).  In a group that merges operand dimensions
 * into one, a part of whole rows of the inner ones is a part of the
 * outermost.  A stride only where the group is one dimension on either
 * side.  Any other narrowing is no slice of the operand: NULL. */
static const Term *sink_slice_reshape(const Term *t, const Term *x,
                                      const char *name, Diag *why) {
  const Term *a = x->args[0];
  const Type *at = a->type, *xt = x->type;
  const AttrValue *start = attrs_get(t->attrs, "start");
  const AttrValue *limit = attrs_get(t->attrs, "limit");
  const AttrValue *strides = attrs_get(t->attrs, "strides");
  int64_t from[PARTIR_MAX_RANK], to[PARTIR_MAX_RANK], step[PARTIR_MAX_RANK];
  for (int d = 0; d < at->rank; d++) {
    from[d] = 0;
    to[d] = at->dims[d];
    step[d] = 1;
  }
  gboolean any = FALSE;
  int i = 0, j = 0;
  while (i < at->rank || j < xt->rank) {
    /* the next group: operand dims [i, i2), result dims [j, j2) */
    int i2 = i, j2 = j;
    int64_t pa = 1, px = 1;
    do {
      if (i2 < at->rank && (pa <= px || j2 == xt->rank))
        pa *= at->dims[i2++];
      else if (j2 < xt->rank)
        px *= xt->dims[j2++];
    } while ((pa != px || (i2 == i && j2 == j)) &&
             (i2 < at->rank || j2 < xt->rank));
    int narrowed = -1, count = 0;
    for (int k = j; k < j2; k++) {
      int64_t st = strides ? strides->items[k].i : 1;
      if (start->items[k].i != 0 || limit->items[k].i != xt->dims[k] ||
          st != 1) {
        narrowed = k;
        count++;
      }
    }
    if (count > 1) {
      diag_reason(why,
                  "'%s' does not apply: the slice narrows the reshape's "
                  "dimensions %d to %d in a way no part of its operand is",
                  name, j, j2 - 1);
      return NULL;
    }
    if (count == 1) {
      int64_t s = start->items[narrowed].i, l = limit->items[narrowed].i;
      int64_t st = strides ? strides->items[narrowed].i : 1;
      int64_t inner = 1;
      for (int k = narrowed + 1; k < j2; k++)
        inner *= xt->dims[k];
      gboolean ok = TRUE;
      for (int k = j; k < narrowed; k++)
        ok &= xt->dims[k] == 1;
      /* the operand dimension the part falls in: the group's first of
       * more than one element, all inside it whole rows */
      int m = i;
      while (m < i2 - 1 && at->dims[m] == 1)
        m++;
      int64_t rows = 1; /* elements of a step of operand dim m */
      for (int k = m + 1; k < i2; k++)
        rows *= at->dims[k];
      int64_t lo = s * inner, hi = l * inner;
      ok &= lo % rows == 0 && hi % rows == 0;
      /* a stride steps over elements one to one only where nothing
       * lies inside a step on either side */
      ok &= st == 1 || (inner == 1 && rows == 1);
      if (!ok) {
        diag_reason(why,
                    "'%s' does not apply: the part of the reshape's "
                    "dimension %d is no part of an operand dimension",
                    name, narrowed);
        return NULL;
      }
      from[m] = lo / rows;
      to[m] = hi / rows;
      step[m] = st;
      any = TRUE;
    }
    i = i2;
    j = j2;
  }
  if (!any) {
    diag_reason(why, "'%s' does not apply: the slice narrows no dimension",
                name);
    return NULL;
  }
  const Term *part = static_slice(a, from, to, step, why);
  return part ? term_op(OP_RESHAPE, 1, &part, x->attrs, t->type, why) : NULL;
}

/* sink-slice-OP: static slice 't' of an 'OP' as that operator on its
 * operands sliced along the dimensions that carry the ones 't' narrows
 * (a dimension no operand carries cannot be narrowed). */
static const Term *sink_slice(const RuleSet *rs, const Rule *rule,
                              const Term *t, Diag *why) {
  const Term *x = t->kind == TM_OP && t->op == OP_SLICE ? t->args[0] : NULL;
  if (!x || x->kind != TM_OP || x->op != rule->op) {
    diag_reason(why, "'%s' applies to a slice of '%s'", rule->name,
                op_name(rule->op));
    return NULL;
  }
  if (x->op == OP_RESHAPE)
    return sink_slice_reshape(t, x, rule->name, why);
  TileSpec spec;
  if (!spec_of(rs, x, &spec))
    return NULL;
  const AttrValue *start = attrs_get(t->attrs, "start");
  const AttrValue *limit = attrs_get(t->attrs, "limit");
  const AttrValue *strides = attrs_get(t->attrs, "strides");
  int64_t from[SPEC_MAX_OPERANDS][PARTIR_MAX_RANK],
      to[SPEC_MAX_OPERANDS][PARTIR_MAX_RANK],
      step[SPEC_MAX_OPERANDS][PARTIR_MAX_RANK];
  gboolean cut[SPEC_MAX_OPERANDS][PARTIR_MAX_RANK] = {{0}};
  for (int i = 0; i < x->nargs; i++)
    for (int d = 0; d < x->args[i]->type->rank; d++) {
      from[i][d] = 0;
      to[i][d] = x->args[i]->type->dims[d];
      step[i][d] = 1;
    }
  gboolean any = FALSE;
  for (int k = 0; k < x->type->rank; k++) {
    int64_t s = start->items[k].i, l = limit->items[k].i,
            st = strides ? strides->items[k].i : 1;
    if (s == 0 && l == x->type->dims[k] && st == 1)
      continue;
    if (k >= spec.nout || !spec.out_ok[k]) {
      diag_reason(why,
                  "'%s' does not apply: the slice narrows dimension %d, "
                  "which the operands do not carry",
                  rule->name, k);
      return NULL;
    }
    for (int i = 0; i < x->nargs; i++) {
      int d = spec.out[k][i];
      if (d < 0)
        continue; /* not in this operand: it is used whole */
      if (x->args[i]->type->dims[d] != x->type->dims[k] || cut[i][d]) {
        diag_reason(why,
                    "'%s' does not apply: operand %d's dimension %d is "
                    "not the result's dimension %d",
                    rule->name, i + 1, d, k);
        return NULL;
      }
      from[i][d] = s;
      to[i][d] = l;
      step[i][d] = st;
      cut[i][d] = any = TRUE;
    }
  }
  if (!any) {
    diag_reason(why, "'%s' does not apply: the slice narrows no dimension",
                rule->name);
    return NULL;
  }
  const Term *args[SPEC_MAX_OPERANDS];
  for (int i = 0; i < x->nargs; i++) {
    const Term *a = x->args[i];
    int rank = a->type->rank;
    gboolean sliced = FALSE;
    for (int d = 0; d < rank; d++)
      sliced |= cut[i][d];
    if (sliced && !(a = static_slice(a, from[i], to[i], step[i], why)))
      return NULL;
    args[i] = a;
  }
  return term_op(x->op, x->nargs, args, rw_attrs_follow(x, args),
                 op_takes_written_type(x->op) ? t->type : NULL, why);
}

static const Term *apply_derived(const RuleSet *rs, const Rule *rule,
                                 const Term *t, const RuleArg *args, int nargs,
                                 Diag *why) {
  if (rule->kind == RULE_OP_TILE_REV || rule->kind == RULE_OP_SUM_REV)
    return apply_unregion(rs, rule, t, why);
  if (rule->kind == RULE_SINK_SLICE)
    return sink_slice(rs, rule, t, why);
  TileSpec spec;
  const Term *opt =
      rule->kind == RULE_SLICE_OP && t->kind == TM_SLICE ? t->args[0] : t;
  if (opt->kind != TM_OP || opt->op != rule->op ||
      (rule->kind == RULE_SLICE_OP && t->kind != TM_SLICE)) {
    diag_reason(why, "'%s' applies to %s'%s'", rule->name,
                rule->kind == RULE_SLICE_OP ? "a slice of " : "",
                op_name(rule->op));
    return NULL;
  }
  if (!spec_of(rs, opt, &spec))
    return NULL;
  int k = rule->index;
  if (rule->kind == RULE_SLICE_OP) {
    if (t->index != k || k >= spec.nout || !spec.out_ok[k]) {
      diag_reason(why,
                  "'%s' does not apply: the slice is along "
                  "dimension %d",
                  rule->name, t->index);
      return NULL;
    }
    int dims[SPEC_MAX_OPERANDS];
    for (int i = 0; i < opt->nargs; i++)
      dims[i] = spec.out[k][i];
    return sliced_op(opt, dims, t->args[1], opt->type->dims[k], FALSE, t->type,
                     why);
  }
  gboolean have_w;
  int64_t w = arg_int(args, nargs, "w", &have_w);
  if (!have_w) {
    diag_reason(why, "rule '%s' needs parameter 'w' (the width)", rule->name);
    return NULL;
  }
  const char *axis = arg_axis(args, nargs);
  int dims[SPEC_MAX_OPERANDS];
  int64_t n = -1;
  if (rule->kind == RULE_OP_TILE) {
    if (k >= spec.nout || !spec.out_ok[k]) {
      diag_reason(why, "result dimension %d of this '%s' cannot be tiled", k,
                  op_name(rule->op));
      return NULL;
    }
    n = t->type->dims[k];
    for (int i = 0; i < t->nargs; i++)
      dims[i] = spec.out[k][i];
  } else {
    if (k >= spec.nred) {
      diag_reason(why, "this '%s' has no reduction %d", op_name(rule->op), k);
      return NULL;
    }
    for (int i = 0; i < t->nargs; i++) {
      dims[i] = spec.red[k][i];
      if (dims[i] >= 0)
        n = t->args[i]->type->dims[dims[i]];
    }
  }
  if (w < 1 || w > n) {
    diag_reason(why,
                "width %" G_GINT64_FORMAT " is not between 1 and the size "
                "%" G_GINT64_FORMAT,
                w, n);
    return NULL;
  }
  const Type *range = type_range(n, w);
  /* the new region sits where t is computed: its binder is t's home */
  int level = term_home(t);
  const Term *r = term_bvar(level, range);
  const Type *written =
      rule->kind == RULE_OP_TILE ? type_with_dim(t->type, k, w) : t->type;
  gboolean mask = rule->kind == RULE_OP_SUM && !type_range_even(range);
  const Term *body = rule->kind == RULE_OP_SUM && spec.red_masked[k]
                         ? lookup_part(t, r, why)
                         : sliced_op(t, dims, r, n, mask, written, why);
  if (!body)
    return NULL;
  return rule->kind == RULE_OP_TILE
             ? term_tile(k, range, axis, body, level, why)
             : term_sum(range, axis, body, level, why);
}

const Term *rw_apply_here(const RuleSet *rs, const Rule *rule, const Term *t,
                          const RuleArg *args, int nargs, Diag *why) {
  diag_reset(why);
  const Term *r = rule->kind == RULE_PATTERN
                      ? match_apply(rule, t, args, nargs, why)
                      : apply_derived(rs, rule, t, args, nargs, why);
  if (r && r->type != t->type) {
    g_autofree char *a = type_to_string(t->type);
    g_autofree char *b = type_to_string(r->type);
    diag_reason(why, "rule '%s' would change the type from %s to %s",
                rule->name, a, b);
    return NULL;
  }
  if (!r && !diag_any(why))
    diag_reason(why, "'%s' does not apply here", rule->name);
  return r;
}

/* The replacement for the value at 'loc' by 'rule', or NULL with the
 * reason ("RULE at %v: why"). */
const Term *rw_apply_at(const RuleSet *rs, const Rule *rule,
                        const Location *loc, const RuleArg *args, int nargs,
                        Diag *why) {
  for (int i = 0; i < nargs; i++)
    if (args[i].is_axis && location_inside_axis(loc, args[i].axis)) {
      diag_reason(why,
                  "%s at %%%s: %%%s is inside a region over \"%s\" already "
                  "(one nest binds an axis once: each device has one index "
                  "along it)",
                  rule->name, loc->name, loc->name, args[i].axis);
      return NULL;
    }
  const Term *to = rw_apply_here(rs, rule, loc->term, args, nargs, why);
  if (!to) {
    g_autofree char *reason = g_strdup(diag_text(why));
    diag_reason(why, "%s at %%%s: %s", rule->name, loc->name, reason);
  }
  return to;
}

/* The state where the value at 'loc' is 'to' everywhere; NULL with the
 * reason (after "RULE at %v: " when 'rule' is given) when the store
 * refuses the rebuilt program. */
State *rw_with_replacement(State *in, const Location *loc, const Term *to,
                           const Rule *rule, Diag *why) {
  const Term *body =
      replace_everywhere(in->func.body, loc->term, to, in->module->names, why);
  if (!body && rule) {
    g_autofree char *reason = g_strdup(diag_text(why));
    diag_reason(why, "%s at %%%s: %s", rule->name, loc->name, reason);
  }
  return body ? state_with_body(in, body) : NULL;
}

State *rw_apply(const RuleSet *rs, State *in, const Rule *rule,
                const Location *loc, const RuleArg *args, int nargs,
                Diag *why) {
  term_carry_names(in->module->names);
  const Term *to = rw_apply_at(rs, rule, loc, args, nargs, why);
  State *out = to ? rw_with_replacement(in, loc, to, rule, why) : NULL;
  term_carry_names(NULL);
  return out;
}

GPtrArray *rw_matches(const RuleSet *rs, const State *s, const Rule *rule) {
  g_autoptr(GPtrArray) locs = state_locations(s);
  GPtrArray *out =
      g_ptr_array_new_with_free_func((GDestroyNotify)location_free);
  g_autoptr(Diag) why = diag_new(NULL);
  for (guint i = 0; i < locs->len; i++) {
    Location *l = g_ptr_array_index(locs, i);
    /* parameters are the caller's: a rule that needs them matches where
     * its left side does; try it with a width of 1 */
    RuleArg args[2] = {{g_intern_string("w"), FALSE, 1, NULL},
                       {g_intern_string("d"), FALSE, 0, NULL}};
    if (rw_apply_here(rs, rule, l->term, args, rule->nparams ? 2 : 0, why)) {
      locs->pdata[i] = NULL;
      g_ptr_array_add(out, l);
    }
  }
  return out;
}
