/* support.c — which operations partir can express, judged all at once.
 *
 * An export from JAX is a whole model; when partir cannot express some
 * of it, the user wants the whole list, not the first refusal and then
 * another after each fix.  So every operation of every function is
 * judged (calls or not), and one diagnostic lists each refused
 * operation with its file:line:col, the reason and the source line.
 *
 * An operation is supported when its name is in hlo_ops.def, its types
 * are tensors partir has (static shapes, the element types of
 * dtype_all_names), and the few operations whose meaning depends on
 * more (power on integers, a shift of i1, a reduce over a subtraction,
 * a scatter that does not add, a total-order comparison) say what
 * partir expresses exactly.  Operations
 * inside the region of a refused one are not judged again: the outer one is
 * listed.
 *
 * requires: an HloFile from hlo_read.
 */
#include "import/import.h"

#include <string.h>

static const char *const supported[] = {
#define X(name, lowering, op, arity) name,
#include "import/hlo_ops.def"
#undef X
    NULL};

const char *hlo_custom_call_op(const char *target) {
  if (!target || !g_str_has_prefix(target, "mhlo."))
    return NULL;
  const char *rest = target + strlen("mhlo.");
  for (int i = 0; supported[i]; i++) {
    const char *dot = strchr(supported[i], '.');
    if ((g_str_has_prefix(supported[i], "chlo.") ||
         g_str_has_prefix(supported[i], "stablehlo.")) &&
        strcmp(dot + 1, rest) == 0 &&
        strcmp(supported[i], "stablehlo.custom_call") != 0)
      return supported[i];
  }
  return NULL;
}

/* What partir lacks, for the operations exports contain most. */
static const struct {
  const char *name;
  const char *why;
} known_refusals[] = {
    {"stablehlo.select_and_scatter", "windowed reductions"},
    {"stablehlo.rng", "random numbers"},
    {"stablehlo.rng_bit_generator", "random numbers"},
    {"stablehlo.all_reduce", "a collective: import the global program"},
    {"stablehlo.all_gather", "a collective: import the global program"},
    {"stablehlo.reduce_scatter", "a collective: import the global program"},
    {"stablehlo.all_to_all", "a collective: import the global program"},
    {"stablehlo.collective_permute", "a collective: import the global program"},
    {"check.expect_serialized_eq",
     "it compares with tensors a probe wrote to files"},
};

/* The custom calls partir imports: @Sharding (the value, its sharding
 * noted), and the checks of StableHLO's generated tests. */
static const struct {
  const char *target;
  int operands, results;
} custom_calls[] = {
    {"Sharding", 1, 1},
    {"check.eq", 2, 1}, /* its result: whether they agree */
    {"check.expect_eq", 2, 0},
    {"check.expect_almost_eq", 2, 0},
    {"check.expect_close", 2, 0},
};

/* The reason a type cannot be imported, or NULL: a tuple (of values
 * made by 'stablehlo.tuple', lowered as its elements) by its elements. */
static char *type_refusal(const HloType *t) {
  if (!t || t->type)
    return NULL;
  for (guint i = 0; t->elems && i < t->elems->len; i++) {
    char *why = type_refusal(g_ptr_array_index(t->elems, i));
    if (why)
      return why;
  }
  return t->elems ? NULL : g_strdup_printf("type %s: %s", t->text, t->why);
}

static gboolean is_float_type(const HloType *t) {
  return t && t->type && dtype_is_float(t->type->dtype);
}

static gboolean is_i1_type(const HloType *t) {
  return t && t->type && t->type->dtype == DT_I1;
}

static gboolean is_unsigned_type(const HloType *t) {
  return t && t->type && dtype_is_unsigned(t->type->dtype);
}

static const HloType *operand_type(const HloOp *op, guint i) {
  return i < op->operand_types->len ? g_ptr_array_index(op->operand_types, i)
                                    : NULL;
}

static const HloType *result_type(const HloOp *op, guint i) {
  return i < op->result_types->len ? g_ptr_array_index(op->result_types, i)
                                   : NULL;
}

/* Whether converting 'from' to 'to' keeps every value (a contraction
 * whose result type is wider than its operands' computes in the wider
 * type: bf16 or f16 into f32, int8 into i32, as quantized models do). */
static gboolean widens_exactly(DType from, DType to) {
  if (from == to)
    return TRUE;
  if (dtype_is_float(from) || dtype_is_float(to))
    return (from == DT_BF16 || from == DT_F16 || from == DT_F32) &&
           (to == DT_F32 || to == DT_F64) &&
           dtype_storage_bytes(to) > dtype_storage_bytes(from);
  return from != DT_I1 && to != DT_I1 &&
         dtype_int_min(to) <= dtype_int_min(from) &&
         dtype_int_max(to) >= dtype_int_max(from);
}

/* The binary operation a reduce applies: its 'applies' word, or the one
 * operation of its body applied to the block's two arguments; NULL when
 * the body does more. */
static const char *reducer_of(const HloOp *op) {
  const HloAttr *w = hlo_op_attr(op, "applies");
  if (w && w->kind == HA_WORD)
    return w->s;
  if (op->regions->len != 1)
    return NULL;
  const HloRegion *g = g_ptr_array_index(op->regions, 0);
  if (g->blocks != 1 || g->args->len != 2 || g->ops->len != 2)
    return NULL;
  const HloOp *body = g_ptr_array_index(g->ops, 0);
  const HloOp *ret = g_ptr_array_index(g->ops, 1);
  if (body->uses->len != 2 || body->defs->len != 1 ||
      g_array_index(body->defs, HloDef, 0).count != 1 ||
      strcmp(ret->name, "stablehlo.return") != 0 || ret->uses->len != 1 ||
      strcmp(g_array_index(ret->uses, HloUse, 0).name,
             g_array_index(body->defs, HloDef, 0).name) != 0)
    return NULL;
  const HloArg *a = g_ptr_array_index(g->args, 0);
  const HloArg *b = g_ptr_array_index(g->args, 1);
  const char *x = g_array_index(body->uses, HloUse, 0).name;
  const char *y = g_array_index(body->uses, HloUse, 1).name;
  if (!((strcmp(x, a->name) == 0 && strcmp(y, b->name) == 0) ||
        (strcmp(x, b->name) == 0 && strcmp(y, a->name) == 0)))
    return NULL;
  return body->name;
}

gboolean hlo_scatter_sets(const HloOp *op) {
  if (op->regions->len != 1)
    return FALSE;
  const HloRegion *g = g_ptr_array_index(op->regions, 0);
  if (g->blocks != 1 || g->args->len != 2 || g->ops->len != 1)
    return FALSE;
  const HloOp *ret = g_ptr_array_index(g->ops, 0);
  const HloArg *update = g_ptr_array_index(g->args, 1);
  return strcmp(ret->name, "stablehlo.return") == 0 && ret->uses->len == 1 &&
         strcmp(g_array_index(ret->uses, HloUse, 0).name, update->name) == 0;
}

/* The operations whose regions lower.c lowers into the program (a
 * while unrolled, an if's or a case's branches selected, a sort's
 * comparator applied to every pair): their regions' operations are
 * judged as the function's are. */
static gboolean has_lowered_regions(const char *n) {
  return strcmp(n, "stablehlo.while") == 0 || strcmp(n, "stablehlo.if") == 0 ||
         strcmp(n, "stablehlo.case") == 0 || strcmp(n, "stablehlo.sort") == 0;
}

/* Why the body of reduce or reduce_window 'op' of operand type 'x' is
 * not one partir reduces with; NULL when it is. */
static char *body_refusal(const HloOp *op, const HloType *x) {
  const char *body = reducer_of(op);
  if (!body)
    return g_strdup_printf("a %s whose body is not one operation on its two "
                           "arguments",
                           op->name + strlen("stablehlo."));
  gboolean numbers = strcmp(body, "stablehlo.add") == 0 ||
                     strcmp(body, "stablehlo.maximum") == 0 ||
                     strcmp(body, "stablehlo.minimum") == 0 ||
                     strcmp(body, "stablehlo.multiply") == 0;
  gboolean bits =
      strcmp(body, "stablehlo.and") == 0 || strcmp(body, "stablehlo.or") == 0;
  if (!numbers && !bits)
    return g_strdup_printf("a %s over %s (partir has reduce_sum, "
                           "reduce_max, reduce_min, reduce_prod, "
                           "reduce_and and reduce_or)",
                           op->name + strlen("stablehlo."), body);
  if (numbers && is_i1_type(x))
    return g_strdup_printf("a %s over %s on i1",
                           op->name + strlen("stablehlo."), body);
  if (bits && is_float_type(x))
    return g_strdup_printf("a %s over %s on %s",
                           op->name + strlen("stablehlo."), body, x->text);
  return NULL;
}

/* Whether list attribute 'a' (integers or booleans, a list, an array
 * or a dense splat) is absent or every entry 'v'. */
static gboolean all_are(const HloAttr *a, int64_t v) {
  if (!a)
    return TRUE;
  const HloAttr *list = hlo_dense_body(a);
  if (list->kind == HA_INT)
    return list->i == v;
  if (list->kind != HA_LIST)
    return FALSE;
  for (guint i = 0; i < list->items->len; i++) {
    const HloAttr *x = g_ptr_array_index(list->items, i);
    if (x->kind != HA_INT || x->i != v)
      return FALSE;
  }
  return TRUE;
}

/* The checks of operations whose support depends on their types or
 * attributes. */
static char *refine(const HloOp *op) {
  const char *n = op->name;
  if (strcmp(n, "stablehlo.custom_call") == 0) { /* @mhlo.erf: as chlo.erf */
    const HloAttr *t = hlo_op_attr(op, "call_target_name");
    const char *as = hlo_custom_call_op(t ? t->s : NULL);
    n = as ? as : n;
  }
  const HloType *x = operand_type(op, 0);
  if (strcmp(n, "stablehlo.power") == 0 && !is_float_type(x))
    return g_strdup("on integers (partir's pow takes "
                    "floats)");
  if (strcmp(n, "stablehlo.compare") == 0) {
    const HloAttr *ct = hlo_op_attr(op, "compare_type");
    const char *type = ct && (ct->kind == HA_WORD) ? ct->s : NULL;
    if (type && strcmp(type, "TOTALORDER") == 0 && !is_float_type(x))
      return g_strdup_printf("compare_type TOTALORDER of %s (it orders "
                             "floats)",
                             x ? x->text : "?");
    if (type && strcmp(type, "UNSIGNED") == 0 && !is_i1_type(x) &&
        !is_unsigned_type(x))
      return g_strdup_printf("an UNSIGNED comparison of %s (partir compares "
                             "a type as its values)",
                             x ? x->text : "?");
  }
  if ((strcmp(n, "stablehlo.not") == 0 || strcmp(n, "stablehlo.and") == 0 ||
       strcmp(n, "stablehlo.or") == 0 || strcmp(n, "stablehlo.xor") == 0) &&
      is_float_type(x))
    return g_strdup_printf("on %s (bitwise operations take integers and "
                           "i1)",
                           x->text);
  if ((g_str_has_prefix(n, "stablehlo.shift_") ||
       strcmp(n, "stablehlo.popcnt") == 0 ||
       strcmp(n, "stablehlo.count_leading_zeros") == 0) &&
      (is_float_type(x) || is_i1_type(x)))
    return g_strdup_printf("on %s (it takes integers)", x->text);
  if (strcmp(n, "stablehlo.while") == 0) {
    for (guint k = 0; k < op->regions->len; k++) {
      const HloRegion *g = g_ptr_array_index(op->regions, k);
      if (g->args->len != op->uses->len)
        return g_strdup_printf("its %s takes %u values, the loop has %u",
                               k ? "body" : "condition", g->args->len,
                               op->uses->len);
    }
    if (op->regions->len != 2)
      return g_strdup("a while needs a condition and a body");
  }
  if (strcmp(n, "stablehlo.if") == 0 || strcmp(n, "stablehlo.case") == 0) {
    for (guint k = 0; k < op->regions->len; k++)
      if (((const HloRegion *)g_ptr_array_index(op->regions, k))->args->len)
        return g_strdup(
            "a branch that takes arguments (StableHLO's take none)");
    if (op->regions->len < (strcmp(n, "stablehlo.if") == 0 ? 2u : 1u))
      return g_strdup("too few branches");
  }
  if (strcmp(n, "stablehlo.reduce") == 0) {
    if (op->uses->len == 4 && hlo_argminmax(op, is_float_type(x))) {
      const HloType *ix = operand_type(op, 1);
      if (is_i1_type(x) || !ix || !ix->type ||
          dtype_is_float(ix->type->dtype) || ix->type->dtype == DT_I1)
        return g_strdup("an argmax or argmin whose values are i1 or whose "
                        "indices are not integers");
      return NULL;
    }
    if (op->uses->len != 2)
      return g_strdup_printf("a reduce of %u inputs at once (of two, "
                             "partir takes jnp.argmax's and argmin's)",
                             op->uses->len / 2);
    return body_refusal(op, x);
  }
  if (strcmp(n, "stablehlo.convolution") == 0) {
    const HloAttr *rev = hlo_op_attr(op, "window_reversal");
    if (!rev)
      rev = hlo_dict_get(hlo_op_attr(op, "window"), "reverse");
    if (!all_are(rev, 0))
      return g_strdup("a reversed window");
  }
  if (strcmp(n, "stablehlo.reduce_window") == 0) {
    if (op->uses->len != 2)
      return g_strdup_printf("a reduce_window of %u inputs at once",
                             op->uses->len / 2);
    static const char *const dilations[] = {"base_dilations",
                                            "window_dilations"};
    for (gsize k = 0; k < G_N_ELEMENTS(dilations); k++)
      if (!all_are(hlo_op_attr(op, dilations[k]), 1))
        return g_strdup_printf("%s other than 1", dilations[k]);
    return body_refusal(op, x);
  }
  if (strcmp(n, "stablehlo.scatter") == 0) {
    /* partir's scatter_add: one operand, one update, an add region */
    if (op->uses->len != 3)
      return g_strdup_printf("a scatter of %u operands at once (partir's "
                             "scatter_add takes one)",
                             (op->uses->len - 1) / 2);
    if (hlo_scatter_sets(op))
      return NULL;
    const char *body = reducer_of(op);
    if (!body || strcmp(body, "stablehlo.add") != 0)
      return g_strdup_printf(
          "a scatter whose update computation is %s (partir has "
          "scatter_add, and a region that returns its update: a set)",
          body ? body : "not one operation on its two arguments");
    if (is_i1_type(x))
      return g_strdup("a scatter that adds i1 values");
  }
  if (strcmp(n, "stablehlo.dot_general") == 0 ||
      strcmp(n, "stablehlo.dot") == 0) {
    const HloType *y = operand_type(op, 1), *z = result_type(op, 0);
    if (x && y && z && x->type && y->type && z->type &&
        (!widens_exactly(x->type->dtype, z->type->dtype) ||
         !widens_exactly(y->type->dtype, z->type->dtype)))
      return g_strdup_printf("a contraction of %s and %s into %s "
                             "(partir computes in the operands' type)",
                             dtype_name(x->type->dtype),
                             dtype_name(y->type->dtype),
                             dtype_name(z->type->dtype));
  }
  if (strcmp(n, "stablehlo.custom_call") == 0) {
    const HloAttr *t = hlo_op_attr(op, "call_target_name");
    const char *target = t && t->s ? t->s : "?";
    gsize k = 0;
    while (k < G_N_ELEMENTS(custom_calls) &&
           strcmp(custom_calls[k].target, target) != 0)
      k++;
    if (k == G_N_ELEMENTS(custom_calls) ||
        (int)op->uses->len != custom_calls[k].operands ||
        (int)op->result_types->len != custom_calls[k].results)
      return g_strdup_printf("custom call @%s", target);
    n = target; /* a check: judged as the check operation below */
  }
  gboolean floats_only = g_str_has_suffix(n, "almost_eq") ||
                         g_str_has_suffix(n, "almost_eq_const") ||
                         g_str_has_suffix(n, "expect_close");
  if (floats_only && x && x->type && !dtype_is_float(x->type->dtype))
    return g_strdup_printf("on %s (it compares floats)", x->text);
  if (strcmp(n, "stablehlo.constant") == 0 ||
      strcmp(n, "arith.constant") == 0 || strcmp(n, "sdy.constant") == 0) {
    const HloAttr *v = hlo_op_attr(op, "value");
    if (v && v->kind == HA_OPAQUE)
      return g_strdup_printf("a constant held as %s", v->s);
    if (!v || v->kind != HA_DENSE)
      return g_strdup("a constant that is not 'dense<...>'");
  }
  if (op->regions->len > 0 && strcmp(n, "stablehlo.reduce") != 0 &&
      strcmp(n, "stablehlo.reduce_window") != 0 &&
      strcmp(n, "stablehlo.scatter") != 0 && !has_lowered_regions(n))
    return g_strdup_printf("%s with a region", n);
  return NULL;
}

char *hlo_unsupported(const HloOp *op) {
  if (op->opaque || !g_strv_contains(supported, op->name)) {
    for (gsize i = 0; i < G_N_ELEMENTS(known_refusals); i++)
      if (strcmp(op->name, known_refusals[i].name) == 0)
        return g_strdup(known_refusals[i].why);
    if (op->opaque && g_strv_contains(supported, op->name))
      return g_strdup("this form of it");
    return g_strdup("partir has no operator for it");
  }
  for (guint i = 0; i < op->operand_types->len; i++) {
    char *why = type_refusal(g_ptr_array_index(op->operand_types, i));
    if (why)
      return why;
  }
  for (guint i = 0; i < op->result_types->len; i++) {
    char *why = type_refusal(g_ptr_array_index(op->result_types, i));
    if (why)
      return why;
  }
  return refine(op);
}

typedef struct Refusals {
  Diag *diag;
  int count;
  const char *file;
} Refusals;

static void refuse(Refusals *rf, Loc at, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);
static void refuse(Refusals *rf, Loc at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_verror(rf->diag, at, fmt, ap);
  va_end(ap);
  rf->count++;
}

/* Judges the operations of a region, and the regions of the supported
 * ones (a reduce's body is judged by 'refine'). */
static void check_region(Refusals *rf, const HloRegion *g) {
  if (g->blocks > 1)
    refuse(rf, g->loc,
           "a region of %d blocks: branches (partir programs "
           "have no control flow)",
           g->blocks);
  for (guint i = 0; i < g->ops->len; i++) {
    const HloOp *op = g_ptr_array_index(g->ops, i);
    g_autofree char *why = hlo_unsupported(op);
    if (why)
      refuse(rf, op->loc, "'%s' is not supported: %s", op->name, why);
    else if (has_lowered_regions(op->name))
      for (guint k = 0; k < op->regions->len; k++) /* inlined: lower.c */
        check_region(rf, g_ptr_array_index(op->regions, k));
  }
}

gboolean hlo_check_support(const HloFile *f, Diag *diag) {
  g_autoptr(Diag) list = diag_new(f->src);
  Refusals rf = {.diag = list, .file = f->src->name};
  for (guint i = 0; i < f->funcs->len; i++) {
    const HloFunc *fn = g_ptr_array_index(f->funcs, i);
    for (guint k = 0; k < fn->args->len; k++) {
      const HloArg *a = g_ptr_array_index(fn->args, k);
      g_autofree char *why = a->type && a->type->elems
                                 ? g_strdup("a tuple (pass its elements)")
                                 : type_refusal(a->type);
      if (why)
        refuse(&rf, a->loc, "argument %%%s of @%s is not supported: %s",
               a->name, fn->name, why);
    }
    for (guint k = 0; k < fn->result_types->len; k++) {
      const HloType *t = g_ptr_array_index(fn->result_types, k);
      g_autofree char *why =
          t->elems ? g_strdup("a tuple within a tuple") : type_refusal(t);
      if (why)
        refuse(&rf, t->loc, "result %u of @%s is not supported: %s", k + 1,
               fn->name, why);
    }
    if (fn->body)
      check_region(&rf, fn->body);
  }
  if (rf.count == 0)
    return TRUE;
  diag_append_reason(diag,
                     "%s: %d operation%s partir cannot express (nothing "
                     "was imported):\n",
                     f->src->name, rf.count, rf.count == 1 ? "" : "s");
  diag_append(diag, list);
  return FALSE;
}
