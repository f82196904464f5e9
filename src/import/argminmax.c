/* argminmax.c — recognizing the reduce that jnp.argmax and jnp.argmin
 * export: two inputs (the values and their indices, an iota), reduced
 * together by a body that keeps the larger (smaller) value, a NaN first,
 * and among equal values the smaller index:
 *
 *   p = or(compare GT a b, compare NE a a)        (LT for argmin)
 *   q = or(p, and(compare EQ a b, compare LT i j))
 *   return select(p, a, b), select(q, i, j)
 *
 * with (a, i) one side's value and index and (b, j) the other's; on
 * integers the NaN test (always false) may be absent.  partir has no reduce of
 * two inputs; lower.c computes the same pair from one-input reductions
 * (lower_argminmax).  PyTorch/XLA's body (matches_torch) is another
 * form of the same.  The match is on the structure of the body, so
 * the names, the order of or's and and's operands and of the two sides
 * do not matter; any other body is refused. */
#include "import/import.h"

#include <string.h>

/* The block being matched: its four arguments (lhs value, lhs index,
 * rhs value, rhs index) and its operations. */
typedef struct Body {
  const HloRegion *g;
  const char *arg[4];
} Body;

/* The operation of 'g' that defines 'name' (one result), or NULL. */
static const HloOp *def_of(const Body *b, const char *name) {
  for (guint i = 0; i < b->g->ops->len; i++) {
    const HloOp *op = g_ptr_array_index(b->g->ops, i);
    if (op->defs->len == 1 && g_array_index(op->defs, HloDef, 0).count == 1 &&
        strcmp(g_array_index(op->defs, HloDef, 0).name, name) == 0)
      return op;
  }
  return NULL;
}

static const char *use(const HloOp *op, guint i) {
  return i < op->uses->len ? g_array_index(op->uses, HloUse, i).name : NULL;
}

static gboolean named(const char *a, const char *b) {
  return a && b && strcmp(a, b) == 0;
}

/* Whether 'name' is 'op_name'(x, y) (x, y NULL: any operands; select's
 * third not looked at here); the operation in '*out'. */
static gboolean is_op(const Body *b, const char *name, const char *op_name,
                      const char *x, const char *y, const HloOp **out) {
  const HloOp *op = name ? def_of(b, name) : NULL;
  guint arity = strcmp(op_name, "stablehlo.select") == 0 ? 3 : 2;
  if (!op || strcmp(op->name, op_name) != 0 || op->uses->len != arity ||
      (x && !named(use(op, 0), x)) || (y && !named(use(op, 1), y)))
    return FALSE;
  if (out)
    *out = op;
  return TRUE;
}

/* Whether 'name' is compare 'dir'(x, y). */
static gboolean is_compare(const Body *b, const char *name, const char *dir,
                           const char *x, const char *y) {
  const HloOp *op;
  if (!is_op(b, name, "stablehlo.compare", x, y, &op))
    return FALSE;
  const HloAttr *d = hlo_op_attr(op, "comparison_direction");
  return d && d->kind == HA_WORD && strcmp(d->s, dir) == 0;
}

/* Whether 'name' is 'op_name' of two operands, one satisfying 'first'
 * and the other 'second' (in either order). */
typedef gboolean (*Test)(const Body *b, const char *name, const void *data);

static gboolean either(const Body *b, const char *name, const char *op_name,
                       Test first, const void *d1, Test second,
                       const void *d2) {
  const HloOp *op;
  if (!is_op(b, name, op_name, NULL, NULL, &op))
    return FALSE;
  const char *u = use(op, 0), *v = use(op, 1);
  return (first(b, u, d1) && second(b, v, d2)) ||
         (first(b, v, d1) && second(b, u, d2));
}

/* What the tests below compare: the sides' names, the direction. */
typedef struct Sides {
  const char *a, *i, *bv, *j; /* this side's value and index, the other's */
  const char *dir;            /* GT or LT */
  const char *p;              /* the value's predicate, once matched */
} Sides;

static gboolean is_better(const Body *b, const char *name, const void *d) {
  const Sides *s = d;
  return is_compare(b, name, s->dir, s->a, s->bv);
}

static gboolean is_nan_test(const Body *b, const char *name, const void *d) {
  const Sides *s = d;
  return is_compare(b, name, "NE", s->a, s->a);
}

static gboolean is_equal(const Body *b, const char *name, const void *d) {
  const Sides *s = d;
  return is_compare(b, name, "EQ", s->a, s->bv);
}

static gboolean is_first(const Body *b, const char *name, const void *d) {
  const Sides *s = d;
  return is_compare(b, name, "LT", s->i, s->j);
}

static gboolean is_tie(const Body *b, const char *name, const void *d) {
  return either(b, name, "stablehlo.and", is_equal, d, is_first, d);
}

static gboolean is_p(const Body *b, const char *name, const void *d) {
  return named(name, ((const Sides *)d)->p);
}

/* The value's predicate p: better, or NaN (JAX writes the NaN test on
 * integers too, where it is always false); better alone only on
 * integers. */
static gboolean value_predicate(const Body *b, const char *p, const Sides *s,
                                gboolean floats) {
  return either(b, p, "stablehlo.or", is_better, s, is_nan_test, s) ||
         (!floats && is_better(b, p, s));
}

/* The body with (a, i) on side 'lhs' (else rhs) and direction 'dir'. */
static gboolean matches(const Body *b, const char *v, const char *k,
                        gboolean lhs, const char *dir, gboolean floats) {
  Sides s = {.a = b->arg[lhs ? 0 : 2],
             .i = b->arg[lhs ? 1 : 3],
             .bv = b->arg[lhs ? 2 : 0],
             .j = b->arg[lhs ? 3 : 1],
             .dir = dir};
  const HloOp *sv, *sk;
  if (!is_op(b, v, "stablehlo.select", NULL, NULL, &sv) ||
      !is_op(b, k, "stablehlo.select", NULL, NULL, &sk) ||
      !named(use(sv, 1), s.a) || !named(use(sv, 2), s.bv) ||
      !named(use(sk, 1), s.i) || !named(use(sk, 2), s.j))
    return FALSE;
  s.p = use(sv, 0);
  if (!value_predicate(b, s.p, &s, floats))
    return FALSE;
  return either(b, use(sk, 0), "stablehlo.or", is_p, &s, is_tie, &s);
}

/* PyTorch/XLA's form (torch.argmax, max(dim)): the value kept where it
 * compares GE (LE for argmin), the smaller index where the values are
 * equal, else the kept value's:
 *
 *   c = compare GE a b;   v = select(c, a, b)
 *   e = compare EQ a b;   k = select(e, minimum(i, j), select(c, i, j))
 *
 * On values without NaN it is jnp.argmax's body; with a NaN its result
 * depends on the order of the reduction, which StableHLO leaves to the
 * implementation, and the order that combines a NaN last gives
 * jnp.argmax's answer (the NaN and its index), which lower.c computes. */
static gboolean matches_torch(const Body *b, const char *v, const char *k,
                              gboolean lhs, const char *dir) {
  Sides s = {.a = b->arg[lhs ? 0 : 2],
             .i = b->arg[lhs ? 1 : 3],
             .bv = b->arg[lhs ? 2 : 0],
             .j = b->arg[lhs ? 3 : 1],
             .dir = dir};
  const HloOp *sv, *sk, *inner, *mn;
  if (!is_op(b, v, "stablehlo.select", NULL, NULL, &sv) ||
      !named(use(sv, 1), s.a) || !named(use(sv, 2), s.bv) ||
      !is_compare(b, use(sv, 0), dir, s.a, s.bv) ||
      !is_op(b, k, "stablehlo.select", NULL, NULL, &sk) ||
      !(is_compare(b, use(sk, 0), "EQ", s.a, s.bv) ||
        is_compare(b, use(sk, 0), "EQ", s.bv, s.a)) ||
      !is_op(b, use(sk, 1), "stablehlo.minimum", NULL, NULL, &mn) ||
      !is_op(b, use(sk, 2), "stablehlo.select", NULL, NULL, &inner))
    return FALSE;
  gboolean min_ij = (named(use(mn, 0), s.i) && named(use(mn, 1), s.j)) ||
                    (named(use(mn, 0), s.j) && named(use(mn, 1), s.i));
  return min_ij && named(use(inner, 0), use(sv, 0)) &&
         named(use(inner, 1), s.i) && named(use(inner, 2), s.j);
}

int hlo_argminmax(const HloOp *reduce, gboolean floats) {
  if (reduce->uses->len != 4 || reduce->regions->len != 1)
    return 0;
  Body b = {.g = g_ptr_array_index(reduce->regions, 0)};
  if (b.g->blocks != 1 || b.g->args->len != 4 || b.g->ops->len == 0)
    return 0;
  for (int i = 0; i < 4; i++)
    b.arg[i] = ((const HloArg *)g_ptr_array_index(b.g->args, i))->name;
  const HloOp *ret = g_ptr_array_index(b.g->ops, b.g->ops->len - 1);
  if (strcmp(ret->name, "stablehlo.return") != 0 || ret->uses->len != 2)
    return 0;
  const char *v = use(ret, 0), *k = use(ret, 1);
  for (int lhs = 1; lhs >= 0; lhs--) {
    if (matches(&b, v, k, lhs, "GT", floats) ||
        matches_torch(&b, v, k, lhs, "GE"))
      return 1;
    if (matches(&b, v, k, lhs, "LT", floats) ||
        matches_torch(&b, v, k, lhs, "LE"))
      return -1;
  }
  return 0;
}
