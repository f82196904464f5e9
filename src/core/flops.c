/* flops.c — floating-point operation counts for the cost model.
 *
 * requires: the Term is a TM_OP that type-checked, so its operands' types
 * and its attributes are consistent.
 *
 * op_flops dispatches on the operator through a table generated from the
 * flops column of ops.def.  The counts are per evaluation of the operator
 * on its full (possibly tiled) operand types:
 *
 *   fl_elementwise  one per result element
 *   fl_dot          2 * (result elements) * (contracted elements): one
 *                   multiply and one add per term of every dot product
 *   fl_reduce       one per operand element
 *   fl_scatter      one add per element of the updates
 *   fl_none         0 (data movement, sources, select, convert)
 */
#include "core/core.h"

typedef double (*FlopsFn)(const Term *t);

static double fl_elementwise(const Term *t) {
  return (double)type_numel(t->type);
}

/* The product of the lhs dimensions that are contracted away: 'k' of a
 * matmul, the 'lhs_contract' dimensions of a dot_general. */
static double contracted_size(const Term *t) {
  const Type *lhs = t->args[0]->type;
  if (t->op == OP_MATMUL)
    return (double)lhs->dims[1];
  const AttrValue *v = attrs_get(t->attrs, "lhs_contract");
  double size = 1;
  for (int j = 0; v && j < v->count; j++) {
    g_assert(v->kind == AV_LIST && v->items[j].kind == AV_INT);
    int64_t d = v->items[j].i;
    g_assert(d >= 0 && d < lhs->rank);
    size *= (double)lhs->dims[d];
  }
  return size;
}

static double fl_dot(const Term *t) {
  return 2.0 * (double)type_numel(t->type) * contracted_size(t);
}

static double fl_reduce(const Term *t) {
  return (double)type_numel(t->args[0]->type);
}

static double fl_scatter(const Term *t) {
  return (double)type_numel(t->args[2]->type);
}

static double fl_none(const Term *t) { return 0; }

static const FlopsFn flops_fns[OP_COUNT_] = {
#define X(e, name, arity, tr, k, fl) [e] = fl,
#include "core/ops.def"
#undef X
};

gboolean op_is_elementwise(Op op) {
  return op < OP_COUNT_ && flops_fns[op] == fl_elementwise;
}

double op_flops(const Term *t) {
  g_assert(t->kind == TM_OP && t->op < OP_COUNT_ && flops_fns[t->op]);
  return flops_fns[t->op](t);
}

gboolean contraction_relayout_pays(double copied, double result,
                                   double groups) {
  return groups > 1 && copied <= 2 * result * (groups - 1);
}
