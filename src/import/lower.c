/* lower.c — a checked HloFile to a Module of partir terms.
 *
 * The entry function (@main, or the only public one) becomes the
 * module's one function.  Its operations are lowered in order, each to
 * the terms hlo_ops.def names (term_op type-checks every one, and the
 * type the source wrote for each operand and result must be the type
 * partir gives it).  A call to a private function is inlined: the
 * callee's body is lowered again with its arguments bound to the
 * caller's operands; the results of a call are kept per callee and
 * operands, so a function called many times with the same values is
 * lowered once (hash-consing makes its terms one anyway).  Calls nest at
 * most HLO_MAX_DEPTH deep, which also refuses recursion.
 *
 * Names.  A value the source named (%cst, %x) keeps its name, and an
 * argument takes the name of its location when JAX wrote one
 * ('%arg0: tensor<...> loc("x")' becomes %x); names are made valid
 * partir names ('-' -> '_') and unique in the function; values of an
 * inlined function are prefixed with its name (%clip.cst).  Numbered
 * values (%0, %12) stay anonymous, as in .pir.  Where a location names
 * the operation ('loc("jit(f)/dot_general"(...))'), the printer writes
 * it as a comment after the statement (Module.notes), with the first
 * file position under it, so a user can find the operation in the
 * model's source.
 *
 * requires: an HloFile that hlo_check_support accepted.
 */
#include "import/import.h"

#include <math.h>
#include <string.h>

/* The values one definition group names ('%0:2' is one group of two). */
typedef struct Group {
  int count;
  const Term **terms;
  gboolean tuple; /* a stablehlo.tuple: used whole, as its elements */
} Group;

static void group_free(Group *g) {
  g_free(g->terms);
  g_free(g);
}

typedef struct Lower {
  const HloFile *file;
  Module *m;
  Diag *diag;
  gboolean failed;
  GHashTable *funcs;  /* name -> const HloFunc* */
  GHashTable *taken;  /* names given so far (char*, owned) */
  GHashTable *suffix; /* base name -> the last k unique_name tried */
  GHashTable *memo;   /* call key -> GPtrArray* of result terms */
  int depth;          /* calls being inlined */
  GPtrArray *notes;   /* HloNote*: the sharding annotations met */
  GArray *checks;     /* HloCheck, 'actual' and 'expected' indexing ... */
  GPtrArray *checked; /* ... these terms (each once) */
  const struct Scope *scope; /* of the operation being lowered */
  int64_t unrolled;          /* operations lowered in loops' bodies */
  /* A sort's comparator is lowered on every pair of elements at once:
   * its scalar values are of this shape (NULL elsewhere). */
  const Type *pointwise;
} Lower;

/* The scope of one function body (or a loop's region) being lowered;
 * a region sees the values of the scopes around it. */
typedef struct Scope {
  GHashTable *values;        /* name -> Group* */
  const char *prefix;        /* "" or "callee." for names */
  const struct Scope *outer; /* a region's enclosing scope, or NULL */
} Scope;

static gboolean lfail(Lower *lw, Loc at, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);
static gboolean lfail(Lower *lw, Loc at, const char *fmt, ...) {
  if (lw->failed)
    return FALSE;
  va_list ap;
  va_start(ap, fmt);
  diag_verror(lw->diag, at, fmt, ap);
  va_end(ap);
  lw->failed = TRUE;
  return FALSE;
}

/* ------------------------------------------------------------ names */

/* 'raw' as a partir value name: letters, digits, '_', '.', '$' ('-' and
 * other bytes become '_'; 'params['w1']' becomes 'params.w1'); NULL
 * when nothing is left or it would be anonymous (all digits). */
static char *sanitize_name(const char *raw) {
  GString *s = g_string_new(NULL);
  for (const char *p = raw; *p; p++) {
    char c = *p;
    if (g_ascii_isalnum(c) || c == '_' || c == '$')
      g_string_append_c(s, c);
    else if (c == '[' || c == ']' || c == '\'' || c == '"' || c == '.' ||
             c == '/')
      g_string_append_c(s, '.');
    else
      g_string_append_c(s, '_');
  }
  /* no leading, trailing or doubled dots */
  GString *t = g_string_new(NULL);
  for (gsize i = 0; i < s->len; i++) {
    char c = s->str[i];
    if (c == '.' && (t->len == 0 || t->str[t->len - 1] == '.'))
      continue;
    g_string_append_c(t, c);
  }
  while (t->len && t->str[t->len - 1] == '.')
    g_string_truncate(t, t->len - 1);
  g_string_free(s, TRUE);
  gboolean digits = TRUE;
  for (gsize i = 0; i < t->len; i++)
    digits &= g_ascii_isdigit(t->str[i]) != 0;
  if (t->len == 0 || digits) {
    g_string_free(t, TRUE);
    return NULL;
  }
  return g_string_free(t, FALSE);
}

/* A name no value of the function has yet: 'base', else 'base_1', ...
 * The search resumes where it last stopped for 'base', so an unrolled
 * loop naming one value thousands of times stays linear. */
static char *unique_name(Lower *lw, const char *base) {
  char *name = g_strdup(base);
  int k = GPOINTER_TO_INT(g_hash_table_lookup(lw->suffix, base));
  while (g_hash_table_contains(lw->taken, name)) {
    g_free(name);
    name = g_strdup_printf("%s_%d", base, ++k);
  }
  g_hash_table_insert(lw->suffix, g_strdup(base), GINT_TO_POINTER(k));
  g_hash_table_add(lw->taken, g_strdup(name));
  return name;
}

/* Gives 't' the source's name 'raw' (prefixed in an inlined function),
 * unless it is anonymous, an argument, or named already. */
static void name_value(Lower *lw, const Scope *sc, const Term *t,
                       const char *raw) {
  if (t->kind == TM_ARG || g_hash_table_contains(lw->m->names, t))
    return;
  g_autofree char *joined = g_strconcat(sc->prefix, raw, NULL);
  g_autofree char *base = sanitize_name(joined);
  gboolean anonymous = TRUE;
  for (const char *p = raw; *p; p++)
    anonymous &= g_ascii_isdigit(*p) != 0;
  if (!base || anonymous)
    return;
  g_hash_table_insert(lw->m->names, (gpointer)t, unique_name(lw, base));
}

/* ------------------------------------------------------------ locations */

/* The innermost name and the first file position of 'l' (depth-bounded:
 * aliases may refer to each other). */
static void describe(const HloFile *f, const HloLoc *l, int depth,
                     const char **name, const HloLoc **pos) {
  if (!l || depth > HLO_MAX_DEPTH)
    return;
  switch (l->kind) {
  case HL_ALIAS:
    describe(f, g_hash_table_lookup(f->aliases, l->s), depth + 1, name, pos);
    return;
  case HL_NAME:
    if (!*name)
      *name = l->s;
    break;
  case HL_FILE:
    if (!*pos)
      *pos = l;
    return;
  default:
    break;
  }
  for (guint i = 0; i < l->children->len; i++)
    describe(f, g_ptr_array_index(l->children, i), depth + 1, name, pos);
}

char *hlo_loc_describe(const HloFile *f, const HloLoc *l) {
  const char *name = NULL;
  const HloLoc *pos = NULL;
  describe(f, l, 0, &name, &pos);
  if (!name && !pos)
    return NULL;
  GString *s = g_string_new(name);
  if (pos)
    g_string_append_printf(s, "%s%s:%d:%d", name ? " at " : "", pos->s,
                           pos->line, pos->col);
  /* one line of printable text */
  for (gsize i = 0; i < s->len; i++)
    if ((unsigned char)s->str[i] < 0x20 || s->str[i] == 0x7f)
      s->str[i] = ' ';
  return g_string_free(s, FALSE);
}

/* The name a location gives an argument: 'loc("x")' (a name alone, not
 * an operation's path 'jit(f)/dot_general'). */
static const char *arg_loc_name(const HloFile *f, const HloLoc *l) {
  for (int depth = 0; l && l->kind == HL_ALIAS && depth < HLO_MAX_DEPTH;
       depth++)
    l = g_hash_table_lookup(f->aliases, l->s);
  if (!l || l->kind != HL_NAME || l->children->len > 0 || strchr(l->s, '/'))
    return NULL;
  return l->s;
}

/* ---------------------------------------------------------- attributes */

typedef struct Kv {
  const char *key;
  AttrValue v;
} Kv;

static const Attrs *make_attrs(const Kv *kv, int n) {
  const char **keys = g_new(const char *, MAX(n, 1));
  AttrValue *values = g_new0(AttrValue, MAX(n, 1));
  for (int i = 0; i < n; i++) {
    keys[i] = g_intern_string(kv[i].key);
    values[i] = kv[i].v;
  }
  return attrs_intern(n, keys, values);
}

static AttrValue av_int(int64_t i) {
  return (AttrValue){.kind = AV_INT, .i = i};
}

static AttrValue av_symbol(const char *s) {
  return (AttrValue){.kind = AV_SYMBOL, .sym = g_intern_string(s)};
}

static AttrValue av_ints(const int64_t *v, int n) {
  AttrValue a = {.kind = AV_LIST, .count = n};
  a.items = g_new0(AttrValue, MAX(n, 1));
  for (int i = 0; i < n; i++)
    a.items[i] = av_int(v[i]);
  return a;
}

/* An integer list attribute of 'op' ([1, 2], array<i64: 1, 2>,
 * dense<[1, 2]> : tensor<2xi64>): how many into 'out' (at most 'max');
 * -1 when it is missing or malformed (an error reported). */
static int int_list(Lower *lw, const HloOp *op, const char *key, int64_t *out,
                    int max, gboolean required) {
  const HloAttr *a = hlo_op_attr(op, key);
  if (!a) {
    if (required)
      lfail(lw, op->loc, "'%s' needs the attribute '%s'", op->name, key);
    return required ? -1 : 0;
  }
  const HloAttr *list = hlo_dense_body(a);
  if (list->kind == HA_INT && a->kind == HA_DENSE) { /* dense<3> splat */
    out[0] = list->i;
    return 1;
  }
  if (list->kind != HA_LIST) {
    lfail(lw, a->loc, "'%s' of '%s' must be a list of integers", key, op->name);
    return -1;
  }
  if ((int)list->items->len > max) {
    lfail(lw, a->loc, "'%s' of '%s' has more than %d entries", key, op->name,
          max);
    return -1;
  }
  for (guint i = 0; i < list->items->len; i++) {
    const HloAttr *x = g_ptr_array_index(list->items, i);
    if (x->kind != HA_INT) {
      lfail(lw, x->loc, "'%s' of '%s' must be a list of integers", key,
            op->name);
      return -1;
    }
    out[i] = x->i;
  }
  return (int)list->items->len;
}

/* An integer attribute ('dim = 0', 'iota_dimension = 0 : i64'). */
static gboolean int_attr(Lower *lw, const HloOp *op, const char *key,
                         int64_t *out) {
  const HloAttr *a = hlo_op_attr(op, key);
  if (!a || a->kind != HA_INT)
    return lfail(lw, a ? a->loc : op->loc, "'%s' needs the integer '%s'",
                 op->name, key);
  *out = a->i;
  return TRUE;
}

/* ------------------------------------------------------------ building */

/* term_op, reporting its refusal at the operation. */
static const Term *build(Lower *lw, const HloOp *op, Op pop, int nargs,
                         const Term *const *args, const Attrs *attrs,
                         const Type *written) {
  g_autoptr(Diag) err = diag_new(NULL);
  const Term *t =
      term_op(pop, nargs, args, attrs ? attrs : attrs_empty(), written, err);
  if (!t)
    lfail(lw, op->loc, "'%s': %s", op->name, diag_text(err));
  return t;
}

/* Type 't' as the lowering sees it: a scalar of a comparator lowered
 * pointwise has the pairs' shape. */
static const Type *seen_type(const Lower *lw, const Type *t) {
  return lw->pointwise && t && t->kind == TY_TENSOR && t->rank == 0
             ? type_with_dtype(lw->pointwise, t->dtype)
             : t;
}

static const Type *written_result(const Lower *lw, const HloOp *op, guint i) {
  if (i >= op->result_types->len)
    return NULL;
  return seen_type(
      lw, ((const HloType *)g_ptr_array_index(op->result_types, i))->type);
}

/* A scalar constant of 'dt' shaped like 't' (splatted). */
static const Term *splat(Lower *lw, const HloOp *op, const Type *t, double v) {
  Kv kv = {"value", dtype_is_float(t->dtype)
                        ? (AttrValue){.kind = AV_FLOAT, .f = v}
                        : av_int((int64_t)v)};
  return build(lw, op, OP_CONSTANT, 0, NULL, make_attrs(&kv, 1), t);
}

/* 'x' (rank 0) broadcast to 'shape's shape. */
static const Term *broadcast_scalar(Lower *lw, const HloOp *op, const Term *x,
                                    const Type *shape) {
  if (!x || x->type->rank == shape->rank)
    return x;
  if (x->type->rank != 0) {
    lfail(lw, op->loc,
          "'%s': an operand of rank %d where rank 0 or %d is "
          "needed",
          op->name, x->type->rank, shape->rank);
    return NULL;
  }
  Kv kv = {"dims", av_ints(NULL, 0)};
  return build(lw, op, OP_BROADCAST_IN_DIM, 1, &x, make_attrs(&kv, 1),
               type_with_dtype(shape, x->type->dtype));
}

static const Term *compare(Lower *lw, const HloOp *op, const Term *a,
                           const Term *b, const char *direction) {
  if (!a || !b)
    return NULL;
  const Term *args[2] = {a, b};
  Kv kv = {"direction", av_symbol(direction)};
  return build(lw, op, OP_COMPARE, 2, args, make_attrs(&kv, 1), NULL);
}

static const Term *select3(Lower *lw, const HloOp *op, const Term *p,
                           const Term *a, const Term *b) {
  if (!p || !a || !b)
    return NULL;
  const Term *args[3] = {p, a, b};
  return build(lw, op, OP_SELECT, 3, args, NULL, NULL);
}

/* Whether 't' is a constant whose every element is 'v'. */
static gboolean constant_is(const Term *t, double v) {
  if (t->kind != TM_OP || t->op != OP_CONSTANT)
    return FALSE;
  const AttrValue *a = attrs_get(t->attrs, "value");
  g_autoptr(GArray) nums = g_array_new(FALSE, FALSE, sizeof(double));
  if (!a || !attr_value_numbers(a, nums))
    return FALSE;
  for (guint i = 0; i < nums->len; i++) {
    double x = g_array_index(nums, double, i);
    if (!(x == v && signbit(x) == signbit(v)))
      return FALSE;
  }
  return TRUE;
}

/* 'op' of 'b' and 'a' (a shorthand for the terms of check_flag). */
static const Term *binary(Lower *lw, const HloOp *op, Op o, const Term *a,
                          const Term *b) {
  if (!a || !b)
    return NULL;
  const Term *args[2] = {a, b};
  return build(lw, op, o, 2, args, NULL, NULL);
}

/* A floating-point attribute of 0 or more (a check's 'tolerance =
 * 1.0e-3', a batch norm's epsilon); unchanged when absent. */
static gboolean number_attr(Lower *lw, const HloOp *op, const char *key,
                            double *out) {
  const HloAttr *a = hlo_op_attr(op, key);
  if (!a)
    return TRUE;
  if (a->kind == HA_FLOAT || (a->kind == HA_INT && !a->boolean)) {
    *out = a->kind == HA_FLOAT ? a->f : (double)a->i;
    if (*out >= 0)
      return TRUE;
  }
  return lfail(lw, a->loc, "'%s' of '%s' must be a number of 0 or more", key,
               op->name);
}

/* ---------------------------------------------------------- lowerings */

typedef gboolean (*Lowering)(Lower *lw, const HloOp *op, Op pop,
                             const Term *const *x, int nx, GPtrArray *out);

static gboolean one(GPtrArray *out, const Term *t) {
  if (!t)
    return FALSE;
  g_ptr_array_add(out, (gpointer)t);
  return TRUE;
}

static gboolean lower_elementwise(Lower *lw, const HloOp *op, Op pop,
                                  const Term *const *x, int nx,
                                  GPtrArray *out) {
  return one(out, build(lw, op, pop, nx, x, NULL, NULL));
}

/* Float 'x' as a signed integer of its width that orders as IEEE 754's
 * totalOrder does (-NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN):
 * its bits, the ones of a negative number but the sign flipped. */
static const Term *total_key(Lower *lw, const HloOp *op, const Term *x) {
  if (!x)
    return NULL;
  DType dt = x->type->dtype;
  DType it = dt == DT_F64 ? DT_I64 : dt == DT_F32 ? DT_I32 : DT_I16;
  const Type *t = type_with_dtype(x->type, it);
  const Term *bits = build(lw, op, OP_BITCAST, 1, &x, NULL, t);
  Kv kv = {"value", av_int(dtype_int_max(it))};
  const Term *low = build(lw, op, OP_CONSTANT, 0, NULL, make_attrs(&kv, 1), t);
  const Term *a[2] = {bits, low};
  const Term *flipped =
      bits && low ? build(lw, op, OP_XOR, 2, a, NULL, NULL) : NULL;
  return select3(lw, op, compare(lw, op, bits, splat(lw, op, t, 0), "LT"),
                 flipped, bits);
}

static gboolean lower_compare(Lower *lw, const HloOp *op, Op pop,
                              const Term *const *x, int nx, GPtrArray *out) {
  (void)pop;
  const HloAttr *d = hlo_op_attr(op, "comparison_direction");
  if (!d || d->kind != HA_WORD || nx != 2)
    return lfail(lw, op->loc,
                 "'%s' needs two operands and a direction (EQ, NE, LT, LE, "
                 "GT, GE)",
                 op->name);
  const HloAttr *how = hlo_op_attr(op, "compare_type");
  if (how && how->kind == HA_WORD && strcmp(how->s, "TOTALORDER") == 0 &&
      dtype_is_float(x[0]->type->dtype))
    return one(out, compare(lw, op, total_key(lw, op, x[0]),
                            total_key(lw, op, x[1]), d->s));
  return one(out, compare(lw, op, x[0], x[1], d->s));
}

/* select with a scalar predicate: the predicate broadcast first. */
static gboolean lower_select(Lower *lw, const HloOp *op, Op pop,
                             const Term *const *x, int nx, GPtrArray *out) {
  (void)pop;
  if (nx != 3)
    return lfail(lw, op->loc, "'%s' takes 3 operands", op->name);
  const Term *p = broadcast_scalar(lw, op, x[0], x[1]->type);
  return one(out, select3(lw, op, p, x[1], x[2]));
}

/* clamp(lo, x, hi) = min(max(x, lo), hi), the bounds broadcast when
 * scalars: StableHLO's own definition. */
static gboolean lower_clamp(Lower *lw, const HloOp *op, Op pop,
                            const Term *const *x, int nx, GPtrArray *out) {
  (void)pop;
  if (nx != 3)
    return lfail(lw, op->loc, "'%s' takes 3 operands", op->name);
  const Term *lo = broadcast_scalar(lw, op, x[0], x[1]->type);
  const Term *hi = broadcast_scalar(lw, op, x[2], x[1]->type);
  if (!lo || !hi)
    return FALSE;
  const Term *a[2] = {x[1], lo};
  const Term *m = build(lw, op, OP_MAX, 2, a, NULL, NULL);
  if (!m)
    return FALSE;
  const Term *b[2] = {m, hi};
  return one(out, build(lw, op, OP_MIN, 2, b, NULL, NULL));
}

/* tan(x) = sin(x) / cos(x): each within an ulp, so the quotient within
 * about three (JAX's XLA:CPU computes it by its own approximation). */
static gboolean lower_tan(Lower *lw, const HloOp *op, Op pop,
                          const Term *const *x, int nx, GPtrArray *out) {
  (void)pop;
  if (nx != 1)
    return lfail(lw, op->loc, "'%s' takes 1 operand", op->name);
  const Term *s = build(lw, op, OP_SIN, 1, x, NULL, NULL);
  const Term *c = s ? build(lw, op, OP_COS, 1, x, NULL, NULL) : NULL;
  if (!c)
    return FALSE;
  const Term *a[2] = {s, c};
  return one(out, build(lw, op, OP_DIV, 2, a, NULL, NULL));
}

/* chlo.square (jnp.square, lax.square: what jnp.var writes) is x * x,
 * as XLA computes it. */
static gboolean lower_square(Lower *lw, const HloOp *op, Op pop,
                             const Term *const *x, int nx, GPtrArray *out) {
  (void)pop;
  if (nx != 1)
    return lfail(lw, op->loc, "'%s' takes 1 operand", op->name);
  const Term *a[2] = {x[0], x[0]};
  return one(out, build(lw, op, OP_MUL, 2, a, NULL, NULL));
}

/* sign(x) = x > 0 ? 1 : (x < 0 ? -1 : x): zeros keep their sign and NaN
 * stays NaN, as StableHLO defines it. */
static gboolean lower_sign(Lower *lw, const HloOp *op, Op pop,
                           const Term *const *x, int nx, GPtrArray *out) {
  (void)pop;
  (void)nx;
  const Type *t = x[0]->type;
  const Term *zero = splat(lw, op, t, 0), *plus = splat(lw, op, t, 1),
             *minus = splat(lw, op, t, -1);
  if (!zero || !plus || !minus)
    return FALSE;
  const Term *neg =
      select3(lw, op, compare(lw, op, x[0], zero, "LT"), minus, x[0]);
  return one(out,
             select3(lw, op, compare(lw, op, x[0], zero, "GT"), plus, neg));
}

/* a (b: a term) c, built; NULL when an operand is. */
static const Term *bin(Lower *lw, const HloOp *op, Op pop, const Term *a,
                       const Term *b) {
  const Term *args[2] = {a, b};
  return a && b ? build(lw, op, pop, 2, args, NULL, NULL) : NULL;
}

/* The polynomial sum_k c[k] w^(n-1-k) by Horner's rule, in w's type. */
static const Term *horner(Lower *lw, const HloOp *op, const Term *w,
                          const double *c, int n) {
  const Term *p = w ? splat(lw, op, w->type, c[0]) : NULL;
  for (int k = 1; k < n && p; k++)
    p = bin(lw, op, OP_ADD, bin(lw, op, OP_MUL, p, w),
            splat(lw, op, w->type, c[k]));
  return p;
}

/* chlo.erf_inv on f32 (and the narrower floats, as XLA computes them):
 * Giles' single-precision approximation, the one XLA's decomposition
 * and JAX's export write ("Approximating the erfinv function", GPU
 * Computing Gems, 2010).  w = -log1p(-x x) (as XLA computes it: x x
 * rounded first, which decides the last digits near +-1); below 5 a
 * polynomial in w - 2.5, else one in sqrt(w) - 3; times x; +-1 give
 * +-inf.  f64 (another polynomial in XLA) is refused. */
static gboolean lower_erf_inv(Lower *lw, const HloOp *op, Op pop,
                              const Term *const *x, int nx, GPtrArray *out) {
  (void)pop;
  if (nx != 1)
    return lfail(lw, op->loc, "'%s' takes 1 operand", op->name);
  const Type *t = x[0]->type;
  if (!dtype_is_float(t->dtype) || t->dtype == DT_F64)
    return lfail(lw, op->loc,
                 "'%s' is imported on f32, bf16 and f16 (XLA's polynomial "
                 "for them), not on %s",
                 op->name, dtype_name(t->dtype));
  static const double near[] = {2.81022636e-08,  3.43273939e-07, -3.5233877e-06,
                                -4.39150654e-06, 0.00021858087,  -0.00125372503,
                                -0.00417768164,  0.246640727,    1.50140941};
  static const double far[] = {-0.000200214257, 0.000100950558, 0.00134934322,
                               -0.00367342844,  0.00573950773,  -0.0076224613,
                               0.00943887047,   1.00167406,     2.83297682};
  const Term *one_ = splat(lw, op, t, 1);
  const Term *sq = bin(lw, op, OP_MUL, x[0], x[0]);
  const Term *nsq = sq ? build(lw, op, OP_NEG, 1, &sq, NULL, NULL) : NULL;
  const Term *lg = nsq ? build(lw, op, OP_LOG1P, 1, &nsq, NULL, NULL) : NULL;
  const Term *w = lg ? build(lw, op, OP_NEG, 1, &lg, NULL, NULL) : NULL;
  if (!w)
    return FALSE;
  const Term *root = build(lw, op, OP_SQRT, 1, &w, NULL, NULL);
  const Term *pn = horner(lw, op, bin(lw, op, OP_SUB, w, splat(lw, op, t, 2.5)),
                          near, G_N_ELEMENTS(near));
  const Term *pf =
      horner(lw, op, bin(lw, op, OP_SUB, root, splat(lw, op, t, 3)), far,
             G_N_ELEMENTS(far));
  const Term *p =
      select3(lw, op, compare(lw, op, w, splat(lw, op, t, 5), "LT"), pn, pf);
  const Term *r = bin(lw, op, OP_MUL, p, x[0]);
  const Term *a = build(lw, op, OP_ABS, 1, x, NULL, NULL);
  const Term *edge = bin(lw, op, OP_MUL, x[0], splat(lw, op, t, INFINITY));
  return one(out, select3(lw, op, compare(lw, op, a, one_, "EQ"), edge, r));
}

/* is_finite(x) = (x - x == 0): zero for every finite x, NaN for an
 * infinity or a NaN (jax.nn.logsumexp guards its max with it). */
static gboolean lower_is_finite(Lower *lw, const HloOp *op, Op pop,
                                const Term *const *x, int nx, GPtrArray *out) {
  (void)pop;
  (void)nx;
  const Term *zero = splat(lw, op, x[0]->type, 0);
  const Term *a[2] = {x[0], x[0]};
  const Term *d = zero ? build(lw, op, OP_SUB, 2, a, NULL, NULL) : NULL;
  return d && one(out, compare(lw, op, d, zero, "EQ"));
}

/* convert: to the same type is the value itself. */
static gboolean lower_convert(Lower *lw, const HloOp *op, Op pop,
                              const Term *const *x, int nx, GPtrArray *out) {
  (void)nx;
  const Type *to = written_result(lw, op, 0);
  if (to == x[0]->type)
    return one(out, x[0]);
  return one(out, build(lw, op, pop, 1, x, NULL, to));
}

/* A reshape that splits again what the reshape of a product merged
 * (PyTorch/XLA merges the batch and the heads for each matrix product of
 * attention, and splits them after it; lower_dot_general made that
 * product over the dimensions unmerged) is that product itself. */
static gboolean lower_reshape(Lower *lw, const HloOp *op, Op pop,
                              const Term *const *x, int nx, GPtrArray *out) {
  const Term *src = x[0];
  if (nx == 1 && src->kind == TM_OP && src->op == OP_RESHAPE &&
      src->args[0]->kind == TM_OP && src->args[0]->op == OP_DOT_GENERAL &&
      src->args[0]->type == written_result(lw, op, 0))
    return one(out, src->args[0]);
  return lower_convert(lw, op, pop, x, nx, out);
}

/* broadcast_in_dim: partir takes increasing 'dims'; other orders are a
 * transpose of the operand first. */
static gboolean lower_broadcast_in_dim(Lower *lw, const HloOp *op, Op pop,
                                       const Term *const *x, int nx,
                                       GPtrArray *out) {
  (void)nx;
  int64_t dims[PARTIR_MAX_RANK];
  int n = int_list(lw, op, "broadcast_dimensions", dims, PARTIR_MAX_RANK, TRUE);
  if (n < 0)
    return FALSE;
  const Type *to = written_result(lw, op, 0);
  const Term *src = x[0];
  gboolean identity = to == src->type;
  for (int i = 0; i < n; i++)
    identity &= dims[i] == i;
  if (identity)
    return one(out, src);
  gboolean increasing = TRUE;
  for (int i = 1; i < n; i++)
    increasing &= dims[i] > dims[i - 1];
  if (!increasing && n == src->type->rank) {
    /* perm[i]: the operand dimension that goes i-th in increasing order */
    int64_t perm[PARTIR_MAX_RANK], sorted[PARTIR_MAX_RANK];
    for (int i = 0; i < n; i++)
      perm[i] = i;
    for (int i = 1; i < n; i++)
      for (int j = i; j > 0 && dims[perm[j]] < dims[perm[j - 1]]; j--) {
        int64_t s = perm[j];
        perm[j] = perm[j - 1];
        perm[j - 1] = s;
      }
    for (int i = 0; i < n; i++)
      sorted[i] = dims[perm[i]];
    Kv kp = {"permutation", av_ints(perm, n)};
    src = build(lw, op, OP_TRANSPOSE, 1, &src, make_attrs(&kp, 1), NULL);
    if (!src)
      return FALSE;
    memcpy(dims, sorted, sizeof(int64_t) * (gsize)n);
  }
  Kv kv = {"dims", av_ints(dims, n)};
  return one(out, build(lw, op, pop, 1, &src, make_attrs(&kv, 1), to));
}

static gboolean lower_transpose(Lower *lw, const HloOp *op, Op pop,
                                const Term *const *x, int nx, GPtrArray *out) {
  (void)nx;
  int64_t perm[PARTIR_MAX_RANK];
  int n = int_list(lw, op, "permutation", perm, PARTIR_MAX_RANK, TRUE);
  if (n < 0)
    return FALSE;
  gboolean identity = TRUE;
  for (int i = 0; i < n; i++)
    identity &= perm[i] == i;
  if (identity && n == x[0]->type->rank)
    return one(out, x[0]);
  Kv kv = {"permutation", av_ints(perm, n)};
  return one(out, build(lw, op, pop, 1, x, make_attrs(&kv, 1), NULL));
}

static gboolean lower_slice(Lower *lw, const HloOp *op, Op pop,
                            const Term *const *x, int nx, GPtrArray *out) {
  (void)nx;
  int64_t start[PARTIR_MAX_RANK], limit[PARTIR_MAX_RANK],
      strides[PARTIR_MAX_RANK];
  int ns = int_list(lw, op, "start_indices", start, PARTIR_MAX_RANK, TRUE);
  int nl = int_list(lw, op, "limit_indices", limit, PARTIR_MAX_RANK, TRUE);
  int nt = int_list(lw, op, "strides", strides, PARTIR_MAX_RANK, FALSE);
  if (ns < 0 || nl < 0 || nt < 0)
    return FALSE;
  Kv kv[3] = {{"start", av_ints(start, ns)}, {"limit", av_ints(limit, nl)}};
  int n = 2;
  if (nt > 0)
    kv[n++] = (Kv){"strides", av_ints(strides, nt)};
  return one(out, build(lw, op, pop, 1, x, make_attrs(kv, n), NULL));
}

static gboolean lower_concatenate(Lower *lw, const HloOp *op, Op pop,
                                  const Term *const *x, int nx,
                                  GPtrArray *out) {
  int64_t dim;
  if (!int_attr(lw, op, "dimension", &dim))
    return FALSE;
  Kv kv = {"dim", av_int(dim)};
  return one(out, build(lw, op, pop, nx, x, make_attrs(&kv, 1), NULL));
}

static gboolean lower_constant(Lower *lw, const HloOp *op, Op pop,
                               const Term *const *x, int nx, GPtrArray *out) {
  (void)x;
  (void)nx;
  const HloAttr *v = hlo_op_attr(op, "value");
  const Type *t = written_result(lw, op, 0);
  if (!v || v->kind != HA_DENSE || !t)
    return lfail(lw, op->loc, "'%s' needs a dense value and its type",
                 op->name);
  if (v->type && v->type->type && seen_type(lw, v->type->type) != t)
    return lfail(
        lw, v->loc,
        "the constant's value has type %s but its "
        "result has %s",
        v->type->text,
        ((const HloType *)g_ptr_array_index(op->result_types, 0))->text);
  g_autoptr(Diag) why = diag_new(NULL);
  Kv kv = {"value", {0}};
  if (!hlo_dense_value(v, t, &kv.v, why))
    return lfail(lw, v->loc, "'%s': %s", op->name, diag_text(why));
  return one(out, build(lw, op, pop, 0, NULL, make_attrs(&kv, 1), t));
}

static gboolean lower_iota(Lower *lw, const HloOp *op, Op pop,
                           const Term *const *x, int nx, GPtrArray *out) {
  (void)x;
  (void)nx;
  int64_t dim;
  if (!int_attr(lw, op, "iota_dimension", &dim))
    return FALSE;
  Kv kv = {"dim", av_int(dim)};
  return one(out, build(lw, op, pop, 0, NULL, make_attrs(&kv, 1),
                        written_result(lw, op, 0)));
}

/* 'x' converted to element type 'dt' (a contraction into a wider type
 * computes in it: every value converts exactly, support.c checked). */
static const Term *widen(Lower *lw, const HloOp *op, const Term *x, DType dt) {
  if (x->type->dtype == dt)
    return x;
  return build(lw, op, OP_CONVERT, 1, &x, NULL, type_with_dtype(x->type, dt));
}

/* How many leading dimensions reshape 't' merges into its first one
 * (its operand's first k multiply to it, the rest are its other ones),
 * or 0 when it is no such reshape. */
static int merged_lead(const Term *t) {
  if (t->kind != TM_OP || t->op != OP_RESHAPE)
    return 0;
  const Type *a = t->args[0]->type, *r = t->type;
  int k = a->rank - r->rank + 1;
  if (r->rank < 1 || k < 2)
    return 0;
  int64_t p = 1;
  for (int i = 0; i < k; i++)
    p *= a->dims[i];
  for (int j = 1; j < r->rank; j++)
    if (a->dims[k - 1 + j] != r->dims[j])
      return 0;
  return p == r->dims[0] ? k : 0;
}

/* The batch dimensions both operands of a product batched over their
 * first merge alike (PyTorch/XLA's reshapes of [batch, heads, ...] into
 * [batch * heads, ...] for a matrix product), or 0: the product is then
 * the same over the dimensions unmerged, which a split of the heads
 * reaches (a merged dimension is split only along its first). */
static int merged_batch(const Term *a, const Term *b) {
  int k = merged_lead(a);
  if (k == 0 || merged_lead(b) != k)
    return 0;
  for (int i = 0; i < k; i++)
    if (a->args[0]->type->dims[i] != b->args[0]->type->dims[i])
      return 0;
  return k;
}

static gboolean lower_dot_general(Lower *lw, const HloOp *op, Op pop,
                                  const Term *const *x, int nx,
                                  GPtrArray *out) {
  if (nx != 2)
    return lfail(lw, op->loc, "'%s' takes 2 operands", op->name);
  int64_t lb[PARTIR_MAX_RANK], rb[PARTIR_MAX_RANK], lc[PARTIR_MAX_RANK],
      rc[PARTIR_MAX_RANK];
  int nlb, nrb, nlc, nrc;
  if (strcmp(op->name, "stablehlo.dot") == 0) {
    /* dot: the last dimension of lhs with the first of rhs */
    nlb = nrb = 0;
    nlc = nrc = 1;
    lc[0] = x[0]->type->rank - 1;
    rc[0] = 0;
  } else {
    /* the generic form nests these in #stablehlo.dot<...> */
    const HloAttr *nums = hlo_op_attr(op, "dot_dimension_numbers");
    nlb = nrb = nlc = nrc = 0;
    struct {
      const char *key;
      int64_t *out;
      int *n;
    } lists[] = {{"lhs_batching_dimensions", lb, &nlb},
                 {"rhs_batching_dimensions", rb, &nrb},
                 {"lhs_contracting_dimensions", lc, &nlc},
                 {"rhs_contracting_dimensions", rc, &nrc}};
    for (gsize k = 0; k < G_N_ELEMENTS(lists); k++) {
      HloOp view = *op;
      const HloAttr *a = hlo_op_attr(op, lists[k].key);
      if (!a && nums && nums->kind == HA_DICT) {
        /* read it from the nested dictionary */
        view.attr_keys = nums->keys;
        view.attr_values = nums->items;
      }
      int n = int_list(lw, &view, lists[k].key, lists[k].out, PARTIR_MAX_RANK,
                       FALSE);
      if (n < 0)
        return FALSE;
      *lists[k].n = n;
    }
  }
  DType dt = written_result(lw, op, 0)->dtype;
  const Term *args[2] = {widen(lw, op, x[0], dt), widen(lw, op, x[1], dt)};
  if (!args[0] || !args[1])
    return FALSE;
  int k = nlb == 1 && nrb == 1 && lb[0] == 0 && rb[0] == 0
              ? merged_batch(args[0], args[1])
              : 0;
  if (k > 0) { /* the product over the batch dimensions the reshapes
                * merged, its result merged after it */
    const Term *whole[2] = {args[0]->args[0], args[1]->args[0]};
    for (int i = 0; i < k; i++)
      lb[i] = rb[i] = i;
    for (int i = 0; i < nlc; i++)
      lc[i] += k - 1;
    for (int i = 0; i < nrc; i++)
      rc[i] += k - 1;
    Kv bk[4] = {{"lhs_batch", av_ints(lb, k)},
                {"rhs_batch", av_ints(rb, k)},
                {"lhs_contract", av_ints(lc, nlc)},
                {"rhs_contract", av_ints(rc, nrc)}};
    const Term *d = build(lw, op, pop, 2, whole, make_attrs(bk, 4), NULL);
    return one(out, d ? build(lw, op, OP_RESHAPE, 1, &d, NULL,
                              written_result(lw, op, 0))
                      : NULL);
  }
  Kv kv[4];
  int n = 0;
  if (nlb)
    kv[n++] = (Kv){"lhs_batch", av_ints(lb, nlb)};
  if (nrb)
    kv[n++] = (Kv){"rhs_batch", av_ints(rb, nrb)};
  if (nlc)
    kv[n++] = (Kv){"lhs_contract", av_ints(lc, nlc)};
  if (nrc)
    kv[n++] = (Kv){"rhs_contract", av_ints(rc, nrc)};
  return one(out, build(lw, op, pop, 2, args, make_attrs(kv, n), NULL));
}

/* The reductions a reduce's body names, with the elementwise operator
 * that combines the result with an init value that is not the
 * identity. */
static const struct {
  const char *body;
  Op reduce, combine;
} reducers[] = {
    {"stablehlo.add", OP_REDUCE_SUM, OP_ADD},
    {"stablehlo.maximum", OP_REDUCE_MAX, OP_MAX},
    {"stablehlo.minimum", OP_REDUCE_MIN, OP_MIN},
    {"stablehlo.multiply", OP_REDUCE_PROD, OP_MUL},
    {"stablehlo.and", OP_REDUCE_AND, OP_AND},
    {"stablehlo.or", OP_REDUCE_OR, OP_OR},
};

/* The reducers' entry of reduce or reduce_window 'op': its 'applies'
 * word, or its body's one operation (support.c checked it is one). */
static gsize reducer_index(const HloOp *op) {
  const HloAttr *w = hlo_op_attr(op, "applies");
  const char *body;
  if (w)
    body = w->s;
  else {
    const HloRegion *g = g_ptr_array_index(op->regions, 0);
    body = ((const HloOp *)g_ptr_array_index(g->ops, 0))->name;
  }
  gsize k = 0;
  while (k < G_N_ELEMENTS(reducers) && strcmp(reducers[k].body, body) != 0)
    k++;
  g_assert(k < G_N_ELEMENTS(reducers)); /* hlo_check_support passed it */
  return k;
}

/* Whether 'init' is the identity of reduction 'rop' on 'dt' (what the
 * reduction starts from: kernel_reduce_identity_*), so that the result
 * needs no combining with it. */
static AttrValue identity_of(Op rop, DType dt) {
  gboolean fl = dtype_is_float(dt);
  switch (rop) {
  case OP_REDUCE_SUM:
  case OP_REDUCE_OR:
    return fl ? (AttrValue){.kind = AV_FLOAT, .f = 0} : av_int(0);
  case OP_REDUCE_PROD:
    return fl ? (AttrValue){.kind = AV_FLOAT, .f = 1} : av_int(1);
  case OP_REDUCE_MAX:
    return fl ? (AttrValue){.kind = AV_FLOAT, .f = -INFINITY}
              : av_int(dtype_int_min(dt));
  case OP_REDUCE_MIN:
    return fl ? (AttrValue){.kind = AV_FLOAT, .f = INFINITY}
              : av_int(dtype_int_max(dt));
  default: /* and: every bit set */
    return av_int(dtype_is_unsigned(dt) || dt == DT_I1 ? dtype_int_max(dt)
                                                       : -1);
  }
}

static gboolean is_identity(const Term *init, Op rop, DType dt) {
  AttrValue v = identity_of(rop, dt);
  return constant_is(init, v.kind == AV_FLOAT ? v.f : (double)v.i);
}

/* reduce(r) of 'x' over 'dims' ('n' of them; none: x itself). */
static const Term *reduced(Lower *lw, const HloOp *op, Op r, const Term *x,
                           const int64_t *dims, int n) {
  if (!x || n == 0)
    return x;
  Kv kv = {"dims", av_ints(dims, n)};
  return build(lw, op, r, 1, &x, make_attrs(&kv, 1), NULL);
}

/* jnp.argmax (dir 1) and jnp.argmin (-1): the reduce of values v and
 * indices i from inits v0 and i0 whose body hlo_argminmax matched, from
 * one-input reductions.  m = max v (NaN when any is: the body keeps a
 * NaN), with v0 unless v0 is max's identity; the index is the least
 * index among the elements equal to m or NaN, or i0 when v0 is m (the
 * body keeps the lesser index of equal values, the init's too). */
static gboolean lower_argminmax(Lower *lw, const HloOp *op, int dir,
                                const Term *const *x, GPtrArray *out) {
  const Term *v = x[0], *i = x[1], *v0 = x[2], *i0 = x[3];
  if (v0->type->rank != 0 || i0->type->rank != 0)
    return lfail(lw, op->loc, "'%s': the init values must be scalars",
                 op->name);
  if (type_with_dtype(v->type, i->type->dtype) != i->type)
    return lfail(lw, op->loc, "'%s': the values and indices differ in shape",
                 op->name);
  int64_t dims[PARTIR_MAX_RANK], kept[PARTIR_MAX_RANK];
  int n = int_list(lw, op, "dimensions", dims, PARTIR_MAX_RANK, TRUE);
  if (n < 0)
    return FALSE;
  int nk = 0;
  for (int d = 0; d < v->type->rank; d++) {
    gboolean gone = FALSE;
    for (int j = 0; j < n; j++)
      gone |= dims[j] == d;
    if (!gone)
      kept[nk++] = d;
  }
  Op rop = dir > 0 ? OP_REDUCE_MAX : OP_REDUCE_MIN;
  DType dt = v->type->dtype;
  const Term *m = reduced(lw, op, rop, v, dims, n);
  if (m && !is_identity(v0, rop, dt)) {
    const Term *pair[2] = {m, broadcast_scalar(lw, op, v0, m->type)};
    m = pair[1] ? build(lw, op, dir > 0 ? OP_MAX : OP_MIN, 2, pair, NULL, NULL)
                : NULL;
  }
  if (!m)
    return FALSE;
  Kv kv = {"dims", av_ints(kept, nk)};
  const Term *mb =
      n ? build(lw, op, OP_BROADCAST_IN_DIM, 1, &m, make_attrs(&kv, 1), v->type)
        : m;
  const Term *hit = compare(lw, op, v, mb, "EQ");
  if (hit && dtype_is_float(dt)) {
    const Term *pair[2] = {hit, compare(lw, op, v, v, "NE")};
    hit = pair[1] ? build(lw, op, OP_OR, 2, pair, NULL, NULL) : NULL;
  }
  double none = (double)dtype_int_max(i->type->dtype);
  const Term *k =
      reduced(lw, op, OP_REDUCE_MIN,
              select3(lw, op, hit, i, splat(lw, op, i->type, none)), dims, n);
  if (!k)
    return FALSE;
  const Term *init = select3(
      lw, op, compare(lw, op, m, broadcast_scalar(lw, op, v0, m->type), "EQ"),
      broadcast_scalar(lw, op, i0, k->type), splat(lw, op, k->type, none));
  const Term *pair[2] = {k, init};
  k = init ? build(lw, op, OP_MIN, 2, pair, NULL, NULL) : NULL;
  return k && one(out, m) && one(out, k);
}

/* reduce over add, maximum, minimum, multiply, and, or: the partir
 * reduction (support.c checked the body and the types), and the init
 * value combined with the result unless it is the reduction's
 * identity; jnp.argmax's and argmin's reduce of two inputs as
 * lower_argminmax says. */
static gboolean lower_reduce(Lower *lw, const HloOp *op, Op pop,
                             const Term *const *x, int nx, GPtrArray *out) {
  (void)pop;
  if (nx == 4) {
    int dir = hlo_argminmax(op, dtype_is_float(x[0]->type->dtype));
    if (dir)
      return lower_argminmax(lw, op, dir, x, out);
  }
  if (nx != 2)
    return lfail(lw, op->loc, "'%s' of %d operands: partir reduces one input",
                 op->name, nx);
  gsize k = reducer_index(op);
  Op rop = reducers[k].reduce;
  int64_t dims[PARTIR_MAX_RANK];
  int n = int_list(lw, op, "dimensions", dims, PARTIR_MAX_RANK, TRUE);
  if (n < 0)
    return FALSE;
  const Term *input = x[0], *init = x[1];
  if (init->type->rank != 0)
    return lfail(lw, op->loc, "'%s': the init value must be a scalar",
                 op->name);
  DType dt = input->type->dtype;
  const Term *r = input;
  if (n > 0) {
    Kv kv = {"dims", av_ints(dims, n)};
    r = build(lw, op, rop, 1, &input, make_attrs(&kv, 1), NULL);
    if (!r)
      return FALSE;
  }
  if (is_identity(init, rop, dt) && n > 0)
    return one(out, r);
  const Term *ib = broadcast_scalar(lw, op, init, r->type);
  if (!ib)
    return FALSE;
  const Term *pair[2] = {r, ib};
  return one(out, build(lw, op, reducers[k].combine, 2, pair, NULL, NULL));
}

/* A padding attribute 'key' of 'op', [[low, high], ...] for 'rank'
 * dimensions (dense<[[0, 0], [7, 0]]>, or a splat dense<1> for every
 * one), into 'low' and 'high'; all zero when absent.  Negative values
 * (a convolution's crop) only where 'crop'. */
static gboolean padding_pairs(Lower *lw, const HloOp *op, const char *key,
                              int rank, gboolean crop, int64_t *low,
                              int64_t *high) {
  for (int d = 0; d < rank; d++)
    low[d] = high[d] = 0;
  const HloAttr *a = hlo_op_attr(op, key);
  if (!a)
    return TRUE;
  const HloAttr *list = hlo_dense_body(a);
  if (list->kind == HA_INT && (crop || list->i >= 0)) { /* every pair */
    for (int d = 0; d < rank; d++)
      low[d] = high[d] = list->i;
    return TRUE;
  }
  gboolean ok = list->kind == HA_LIST && (int)list->items->len == rank;
  for (int d = 0; ok && d < rank; d++) {
    const HloAttr *pair = g_ptr_array_index(list->items, d);
    ok = pair->kind == HA_LIST && pair->items->len == 2;
    for (guint k = 0; ok && k < 2; k++) {
      const HloAttr *v = g_ptr_array_index(pair->items, k);
      ok = v->kind == HA_INT && (crop || v->i >= 0);
      if (ok)
        (k ? high : low)[d] = v->i;
    }
  }
  if (!ok)
    return lfail(lw, a->loc, "'%s' of '%s' must be %d pairs of integers%s", key,
                 op->name, rank, crop ? "" : ", none negative");
  return TRUE;
}

/* 'x' padded with 'value' (a scalar), 'low', 'high' and 'interior'
 * elements per dimension; NULL when 'value' is. */
static const Term *padded(Lower *lw, const HloOp *op, const Term *x,
                          const Term *value, const int64_t *low,
                          const int64_t *high, const int64_t *interior) {
  int r = x->type->rank;
  Kv kv[3] = {{"low", av_ints(low, r)},
              {"high", av_ints(high, r)},
              {"interior", av_ints(interior, r)}};
  const Term *a[2] = {x, value};
  return value ? build(lw, op, OP_PAD, 2, a, make_attrs(kv, 3), NULL) : NULL;
}

/* 'x' sliced along dimension 'd' from 'start', 'n' elements 'stride'
 * apart. */
static const Term *slice_dim(Lower *lw, const HloOp *op, const Term *x, int d,
                             int64_t start, int64_t n, int64_t stride) {
  if (!x)
    return NULL;
  int r = x->type->rank;
  int64_t lo[PARTIR_MAX_RANK], hi[PARTIR_MAX_RANK], st[PARTIR_MAX_RANK];
  for (int k = 0; k < r; k++) {
    lo[k] = 0;
    hi[k] = x->type->dims[k];
    st[k] = 1;
  }
  lo[d] = start;
  hi[d] = start + (n - 1) * stride + 1;
  st[d] = stride;
  if (lo[d] == 0 && hi[d] == x->type->dims[d] && stride == 1)
    return x;
  Kv kv[3] = {{"start", av_ints(lo, r)},
              {"limit", av_ints(hi, r)},
              {"strides", av_ints(st, r)}};
  return build(lw, op, OP_SLICE, 1, &x, make_attrs(kv, 3), NULL);
}

/* The windows of 'w' elements, 'stride' apart, along dimension 'd' of
 * 'y', each reduced by 'combine': R_1 = y, and R_2k = R_k combined with
 * itself shifted by k (R_k[i] reduces y[i .. i + k - 1]); a window of w
 * is the R_b of w's bits side by side.  So a cumulative sum over 2048
 * elements is 33 operations, not 2048.  Windows that do not overlap
 * (a pooling layer's) are their w strided slices combined. */
static const Term *window_dim(Lower *lw, const HloOp *op, Op combine,
                              const Term *y, int d, int64_t w, int64_t stride) {
  int64_t len = y->type->dims[d];
  int64_t n = (len - w) / stride + 1; /* the windows (w <= len) */
  if (w <= stride) { /* windows apart (pooling): each offset, strided */
    const Term *acc = slice_dim(lw, op, y, d, 0, n, stride);
    for (int64_t k = 1; k < w && acc; k++)
      acc = bin(lw, op, combine, acc, slice_dim(lw, op, y, d, k, n, stride));
    return acc;
  }
  const Term *r[64] = {y}; /* r[j] = R_(2^j) */
  int top = 0;
  for (int64_t k = 1; 2 * k <= w; k *= 2, top++) {
    int64_t have = len - k + 1; /* R_k's length */
    r[top + 1] =
        bin(lw, op, combine, slice_dim(lw, op, r[top], d, 0, have - k, 1),
            slice_dim(lw, op, r[top], d, k, have - k, 1));
    if (!r[top + 1])
      return NULL;
  }
  const Term *acc = NULL;
  int64_t at = 0;
  for (int j = top; j >= 0; j--) {
    int64_t b = (int64_t)1 << j;
    if (!(w & b))
      continue;
    const Term *piece = slice_dim(lw, op, r[j], d, at, n, stride);
    acc = acc ? bin(lw, op, combine, acc, piece) : piece;
    if (!acc)
      return NULL;
    at += b;
  }
  return acc;
}

/* reduce_window over add, maximum, minimum, multiply, and, or (one
 * input; dilations of 1: support.c): the input padded with the
 * reduction's identity, reduced one dimension at a time (the reducers are
 * associative and commutative, so a box is its rows' reductions reduced;
 * window_dim says how), and the init value combined once unless it is the
 * identity.  StableHLO's specification pads with the init value; XLA
 * counts a window's init once whatever its padding, and so does partir
 * (they agree where the init is the identity, as JAX's always is).  What
 * jnp.cumsum, cumprod, cummax and the pooling layers export; the sums are added
 * in another order than XLA's. */
static gboolean lower_reduce_window(Lower *lw, const HloOp *op, Op pop,
                                    const Term *const *x, int nx,
                                    GPtrArray *out) {
  (void)pop;
  if (nx != 2)
    return lfail(lw, op->loc, "'%s' of %d operands: partir reduces one input",
                 op->name, nx);
  const Term *y = x[0], *init = x[1];
  int rank = y->type->rank;
  if (init->type->rank != 0)
    return lfail(lw, op->loc, "'%s': the init value must be a scalar",
                 op->name);
  gsize k = reducer_index(op);
  int64_t w[PARTIR_MAX_RANK], s[PARTIR_MAX_RANK], low[PARTIR_MAX_RANK],
      high[PARTIR_MAX_RANK];
  int nw = int_list(lw, op, "window_dimensions", w, PARTIR_MAX_RANK, TRUE);
  int ns = int_list(lw, op, "window_strides", s, PARTIR_MAX_RANK, FALSE);
  if (nw < 0 || ns < 0 ||
      !padding_pairs(lw, op, "padding", rank, FALSE, low, high))
    return FALSE;
  if (ns == 0)
    for (int d = 0; d < rank; d++)
      s[d] = 1;
  if (nw != rank || (ns != 0 && ns != rank))
    return lfail(lw, op->loc, "'%s': a window and strides of %d dimensions",
                 op->name, rank);
  gboolean pads = FALSE;
  for (int d = 0; d < rank; d++) {
    if (w[d] < 1 || s[d] < 1 || w[d] > y->type->dims[d] + low[d] + high[d])
      return lfail(lw, op->loc,
                   "'%s': dimension %d's window of %" G_GINT64_FORMAT
                   " with stride %" G_GINT64_FORMAT
                   " does not fit its %" G_GINT64_FORMAT " padded elements",
                   op->name, d, w[d], s[d],
                   y->type->dims[d] + low[d] + high[d]);
    pads |= low[d] || high[d];
  }
  if (pads) {
    int64_t none[PARTIR_MAX_RANK] = {0};
    Kv value = {"value", identity_of(reducers[k].reduce, y->type->dtype)};
    y = padded(
        lw, op, y,
        build(lw, op, OP_CONSTANT, 0, NULL, make_attrs(&value, 1), init->type),
        low, high, none);
  }
  for (int d = 0; d < rank && y; d++)
    if (w[d] > 1 || s[d] > 1)
      y = window_dim(lw, op, reducers[k].combine, y, d, w[d], s[d]);
  if (!y)
    return FALSE;
  if (is_identity(init, reducers[k].reduce, y->type->dtype))
    return one(out, y);
  return one(out, bin(lw, op, reducers[k].combine, y,
                      broadcast_scalar(lw, op, init, y->type)));
}

/* reverse: per dimension d of 'dims', a gather of the rows n-1, ..., 0
 * (indices an iota subtracted from n - 1): one operation whatever n,
 * exact, and partitioned as any gather (its other dimensions split). */
static gboolean lower_reverse(Lower *lw, const HloOp *op, Op pop,
                              const Term *const *x, int nx, GPtrArray *out) {
  (void)pop;
  (void)nx;
  int64_t dims[PARTIR_MAX_RANK];
  int n = int_list(lw, op, "dimensions", dims, PARTIR_MAX_RANK, TRUE);
  if (n < 0)
    return FALSE;
  const Term *y = x[0];
  int rank = y->type->rank;
  for (int k = 0; k < n && y; k++) {
    int64_t d = dims[k];
    if (d < 0 || d >= rank)
      return lfail(lw, op->loc,
                   "'%s': dimension %" G_GINT64_FORMAT
                   " of an operand of rank %d",
                   op->name, d, rank);
    int64_t len = y->type->dims[d];
    if (len < 2)
      continue;
    const Type *it = type_tensor(DT_I32, 1, &len);
    Kv kv = {"dim", av_int(0)};
    const Term *idx =
        bin(lw, op, OP_SUB, splat(lw, op, it, (double)(len - 1)),
            build(lw, op, OP_IOTA, 0, NULL, make_attrs(&kv, 1), it));
    GatherDims g = {
        .ncollapsed = 1, .nstart = 1, .index_vector_dim = 1, .nslice = rank};
    g.collapsed[0] = g.start_index_map[0] = d;
    for (int j = 0; j < rank; j++) {
      g.slice_sizes[j] = j == d ? 1 : y->type->dims[j];
      if (j != d)
        g.offset_dims[g.noffset++] = j;
    }
    const Term *a[2] = {y, idx};
    y = idx ? build(lw, op, OP_GATHER, 2, a, gather_attrs(&g), NULL) : NULL;
  }
  return one(out, y);
}

/* ------------------------------------------------------------ sorting */

static const Term *transposed(Lower *lw, const HloOp *op, const Term *x,
                              const int64_t *perm) {
  gboolean same = TRUE;
  for (int d = 0; x && d < x->type->rank; d++)
    same &= perm[d] == d;
  if (!x || same)
    return x;
  Kv kv = {"permutation", av_ints(perm, x->type->rank)};
  return build(lw, op, OP_TRANSPOSE, 1, &x, make_attrs(&kv, 1), NULL);
}

static const Term *reshaped(Lower *lw, const HloOp *op, const Term *x, int rank,
                            const int64_t *dims) {
  if (!x)
    return NULL;
  return build(lw, op, OP_RESHAPE, 1, &x, NULL,
               type_tensor(x->type->dtype, rank, dims));
}

static gboolean lower_region(Lower *lw, const HloRegion *g, const Scope *outer,
                             const Term *const *args, GPtrArray *results);

/* Pairs of elements along dimension 'd' of shape 's': shape s with a
 * last dimension of n = s[d] added, element i along d and j along the
 * last.  'x' (shape s) as element i (along d) or as element j (along
 * the last). */
static const Term *as_i(Lower *lw, const HloOp *op, const Term *x,
                        const Type *pairs) {
  int64_t dims[PARTIR_MAX_RANK];
  for (int e = 0; e < x->type->rank; e++)
    dims[e] = e;
  Kv kv = {"dims", av_ints(dims, x->type->rank)};
  return build(lw, op, OP_BROADCAST_IN_DIM, 1, &x, make_attrs(&kv, 1),
               type_with_dtype(pairs, x->type->dtype));
}

static const Term *as_j(Lower *lw, const HloOp *op, const Term *x, int d,
                        const Type *pairs) {
  int r = x->type->rank;
  int64_t perm[PARTIR_MAX_RANK], dims[PARTIR_MAX_RANK];
  for (int e = 0, k = 0; e < r; e++)
    if (e != d) {
      perm[k] = e;
      dims[k++] = e;
    }
  perm[r - 1] = d;
  dims[r - 1] = r;
  const Term *t = transposed(lw, op, x, perm);
  Kv kv = {"dims", av_ints(dims, r)};
  return t ? build(lw, op, OP_BROADCAST_IN_DIM, 1, &t, make_attrs(&kv, 1),
                   type_with_dtype(pairs, x->type->dtype))
           : NULL;
}

/* How a sort compares: its comparator region, lowered on every pair at
 * once, or (region NULL) top_k's totalOrder greater-than on operand 0. */
typedef struct Order {
  const HloRegion *region;
} Order;

/* 'before[i, j]', element j sorts before element i: comparator(x_j, x_i). */
static const Term *order_less(Lower *lw, const HloOp *op, const Order *o,
                              const Term *const *x, int nx, int d,
                              const Type *pairs) {
  if (!o->region) {
    const Term *a = total_key(lw, op, as_j(lw, op, x[0], d, pairs));
    const Term *b = total_key(lw, op, as_i(lw, op, x[0], pairs));
    return compare(lw, op, a, b, "GT");
  }
  g_autofree const Term **args = g_new0(const Term *, 2 * (gsize)nx + 1);
  for (int k = 0; k < nx; k++) {
    args[2 * k] = as_j(lw, op, x[k], d, pairs);
    args[2 * k + 1] = as_i(lw, op, x[k], pairs);
    if (!args[2 * k] || !args[2 * k + 1])
      return NULL;
  }
  const Scope *outer = lw->scope;
  const Type *saved = lw->pointwise;
  lw->pointwise = pairs;
  g_autoptr(GPtrArray) r = g_ptr_array_new();
  gboolean ok = lower_region(lw, o->region, outer, args, r);
  lw->pointwise = saved;
  lw->scope = outer;
  if (!ok)
    return NULL;
  const Term *less = r->len == 1 ? g_ptr_array_index(r, 0) : NULL;
  if (!less || less->type != type_with_dtype(pairs, DT_I1)) {
    lfail(lw, op->loc, "'%s': its comparator must return one i1", op->name);
    return NULL;
  }
  return less;
}

/* The operands 'x' sorted together along 'd' by 'o', stably: element
 * i's position is the number of elements j that sort before it (j < i
 * by the order, or equal to it and j < i), found by comparing every
 * pair; each operand is then gathered at the inverse permutation.  So
 * a sort costs n^2 comparisons per row: at most 2^26 pairs in all. */
static gboolean sort_by(Lower *lw, const HloOp *op, const Order *o,
                        const Term *const *x, int nx, int d, GPtrArray *out) {
  const Type *s = x[0]->type;
  int r = s->rank;
  int64_t n = s->dims[d], size = 1;
  for (int e = 0; e < r; e++)
    size *= s->dims[e];
  if (n < 2) {
    for (int k = 0; k < nx; k++)
      g_ptr_array_add(out, (gpointer)x[k]);
    return TRUE;
  }
  if ((double)size * (double)n > (double)(1 << 26))
    return lfail(lw, op->loc,
                 "'%s': %" G_GINT64_FORMAT
                 " elements sorted in rows of %" G_GINT64_FORMAT
                 " (partir compares every pair of a row: "
                 "at most 2^26 pairs in all)",
                 op->name, size, n);
  int64_t pd[PARTIR_MAX_RANK + 1];
  memcpy(pd, s->dims, sizeof(int64_t) * (gsize)r);
  pd[r] = n;
  const Type *pairs = type_tensor(s->dtype, r + 1, pd);
  const Term *less = order_less(lw, op, o, x, nx, d, pairs);
  if (!less)
    return FALSE;
  /* j before i: less(j, i), or neither before the other and j < i */
  const Type *ip = type_with_dtype(pairs, DT_I32);
  Kv ki = {"dim", av_int(d)}, kj = {"dim", av_int(r)};
  const Term *ii = build(lw, op, OP_IOTA, 0, NULL, make_attrs(&ki, 1), ip);
  const Term *jj = build(lw, op, OP_IOTA, 0, NULL, make_attrs(&kj, 1), ip);
  int64_t swap[PARTIR_MAX_RANK + 1];
  for (int e = 0; e <= r; e++)
    swap[e] = e;
  swap[d] = r;
  swap[r] = d;
  const Term *more = transposed(lw, op, less, swap); /* less(i, j) */
  const Term *tie = more ? build(lw, op, OP_NOT, 1, &more, NULL, NULL) : NULL;
  const Term *before =
      bin(lw, op, OP_OR, less,
          bin(lw, op, OP_AND, tie, compare(lw, op, jj, ii, "LT")));
  const Term *one_if =
      select3(lw, op, before, splat(lw, op, ip, 1), splat(lw, op, ip, 0));
  int64_t last = r;
  const Term *pos = reduced(lw, op, OP_REDUCE_SUM, one_if, &last, 1);
  /* the inverse permutation: at position p, the i whose pos is p */
  const Term *hit =
      pos ? compare(lw, op, as_j(lw, op, pos, d, ip), ii, "EQ") : NULL;
  const Term *perm =
      reduced(lw, op, OP_REDUCE_SUM,
              select3(lw, op, hit, jj, splat(lw, op, ip, 0)), &last, 1);
  if (!perm)
    return FALSE;
  GatherDims g = {
      .ncollapsed = 1, .nstart = 1, .index_vector_dim = r, .nslice = r};
  g.collapsed[0] = g.start_index_map[0] = d;
  for (int e = 0; e < r; e++) {
    g.slice_sizes[e] = 1;
    if (e != d) {
      g.operand_batching[g.nbatching++] = e;
      g.indices_batching[g.nbatching_indices++] = e;
    }
  }
  for (int k = 0; k < nx; k++) {
    const Term *a[2] = {x[k], perm};
    const Term *t = build(lw, op, OP_GATHER, 2, a, gather_attrs(&g), NULL);
    if (!t)
      return FALSE;
    g_ptr_array_add(out, (gpointer)t);
  }
  return TRUE;
}

/* sort: the operands (of one shape) sorted along 'dimension' by its
 * comparator, stably (a valid order for an unstable sort too). */
static gboolean lower_sort(Lower *lw, const HloOp *op, Op pop,
                           const Term *const *x, int nx, GPtrArray *out) {
  (void)pop;
  int64_t d = 0;
  if (nx < 1 || op->regions->len != 1)
    return lfail(lw, op->loc, "'%s' takes operands and a comparator", op->name);
  if (hlo_op_attr(op, "dimension") && !int_attr(lw, op, "dimension", &d))
    return FALSE;
  int r = x[0]->type->rank;
  if (d < 0)
    d += r;
  if (d < 0 || d >= r)
    return lfail(lw, op->loc,
                 "'%s': no dimension %" G_GINT64_FORMAT
                 " in an operand of rank %d",
                 op->name, d, r);
  for (int k = 1; k < nx; k++)
    if (type_with_dtype(x[k]->type, x[0]->type->dtype) != x[0]->type)
      return lfail(lw, op->loc, "'%s': its operands differ in shape", op->name);
  Order o = {g_ptr_array_index(op->regions, 0)};
  return sort_by(lw, op, &o, x, nx, (int)d, out);
}

/* chlo.top_k(x, k = K): the K greatest along the last dimension, in
 * decreasing order by totalOrder (NaN greatest), equals by index, with
 * their indices: x and its indices sorted so, then the first K. */
static gboolean lower_top_k(Lower *lw, const HloOp *op, Op pop,
                            const Term *const *x, int nx, GPtrArray *out) {
  (void)pop;
  (void)nx;
  int64_t k;
  if (!int_attr(lw, op, "k", &k))
    return FALSE;
  int r = x[0]->type->rank;
  if (r < 1 || !dtype_is_float(x[0]->type->dtype) || k < 0 ||
      k > x[0]->type->dims[r - 1])
    return lfail(lw, op->loc,
                 "'%s' takes floats of rank 1 or more and k from 0 to the "
                 "last dimension's size",
                 op->name);
  Kv kv = {"dim", av_int(r - 1)};
  const Term *both[2] = {x[0],
                         build(lw, op, OP_IOTA, 0, NULL, make_attrs(&kv, 1),
                               type_with_dtype(x[0]->type, DT_I32))};
  Order o = {NULL};
  g_autoptr(GPtrArray) sorted = g_ptr_array_new();
  if (!both[1] || !sort_by(lw, op, &o, both, 2, r - 1, sorted))
    return FALSE;
  for (guint i = 0; i < 2; i++)
    if (!one(out,
             slice_dim(lw, op, g_ptr_array_index(sorted, i), r - 1, 0, k, 1)))
      return FALSE;
  return TRUE;
}

/* ------------------------------------------------------- batch norm */

/* A batch norm's operands checked (each of 'nfeat' feature vectors of
 * rank 1, as long as the operand's feature dimension, of its type), its
 * feature dimension into '*f', the other dimensions into 'dims' (how
 * many: the return value, -1 on error) and the elements per feature
 * into '*count'. */
static int bn_dims(Lower *lw, const HloOp *op, const Term *const *x, int nx,
                   int nfeat, int64_t *f, int64_t *dims, double *count) {
  const Type *t = x[0]->type;
  if (!int_attr(lw, op, "feature_index", f))
    return -1;
  if (!dtype_is_float(t->dtype) || *f < 0 || *f >= t->rank) {
    lfail(lw, op->loc,
          "'%s' takes a float operand and a feature_index from 0 to its "
          "rank - 1",
          op->name);
    return -1;
  }
  for (int i = 1; i <= nfeat && i < nx; i++)
    if (x[i]->type->rank != 1 || x[i]->type->dims[0] != t->dims[*f] ||
        x[i]->type->dtype != t->dtype) {
      lfail(lw, op->loc,
            "'%s': operand %d must be a vector of %" G_GINT64_FORMAT
            " of the operand's type",
            op->name, i + 1, t->dims[*f]);
      return -1;
    }
  int n = 0;
  *count = 1;
  for (int d = 0; d < t->rank; d++)
    if (d != *f) {
      dims[n++] = d;
      *count *= (double)t->dims[d];
    }
  return n;
}

/* Feature vector 'v' broadcast along feature dimension 'f' of 'shape'. */
static const Term *bn_spread(Lower *lw, const HloOp *op, const Term *v,
                             int64_t f, const Type *shape) {
  if (!v)
    return NULL;
  Kv kv = {"dims", av_ints(&f, 1)};
  return build(lw, op, OP_BROADCAST_IN_DIM, 1, &v, make_attrs(&kv, 1), shape);
}

/* The mean over 'dims' of 'x' (a feature vector): its sum over 'count'. */
static const Term *bn_mean(Lower *lw, const HloOp *op, const Term *x,
                           const int64_t *dims, int n, double count) {
  const Term *sum = reduced(lw, op, OP_REDUCE_SUM, x, dims, n);
  return sum ? binary(lw, op, OP_DIV, sum, splat(lw, op, sum->type, count))
             : NULL;
}

/* x - mean, the feature vector 'mean' spread over x. */
static const Term *bn_centered(Lower *lw, const HloOp *op, const Term *x,
                               const Term *mean, int64_t f) {
  const Term *mb = mean ? bn_spread(lw, op, mean, f, x->type) : NULL;
  return mb ? binary(lw, op, OP_SUB, x, mb) : NULL;
}

/* 1 / sqrt(var + epsilon), var a feature vector spread over 'shape'. */
static const Term *bn_inverse_stddev(Lower *lw, const HloOp *op,
                                     const Term *var, int64_t f,
                                     const Type *shape) {
  double eps = 0;
  if (!number_attr(lw, op, "epsilon", &eps))
    return NULL;
  const Term *v = bn_spread(lw, op, var, f, shape);
  const Term *ve =
      v ? binary(lw, op, OP_ADD, v, splat(lw, op, shape, eps)) : NULL;
  return ve ? build(lw, op, OP_RSQRT, 1, &ve, NULL, NULL) : NULL;
}

/* (x - mean) * rstd * scale + offset, the vectors spread over x. */
static const Term *bn_normalize(Lower *lw, const HloOp *op, const Term *c,
                                const Term *rstd, const Term *scale,
                                const Term *offset, int64_t f) {
  const Type *t = c->type;
  const Term *n = rstd ? binary(lw, op, OP_MUL, c, rstd) : NULL;
  const Term *sc = n ? bn_spread(lw, op, scale, f, t) : NULL;
  const Term *y = sc ? binary(lw, op, OP_MUL, n, sc) : NULL;
  const Term *of = y ? bn_spread(lw, op, offset, f, t) : NULL;
  return of ? binary(lw, op, OP_ADD, y, of) : NULL;
}

/* batch_norm_training(x, scale, offset): x normalized per feature by
 * the mean and (biased) variance over every other dimension, scaled and
 * offset; with that mean and variance.  PyTorch/XLA writes LayerNorm so
 * (the rows as features of a 1 x rows x width operand).  The variance
 * is the centered one, (x - mean)^2 averaged, in the operand's type. */
static gboolean lower_batch_norm_training(Lower *lw, const HloOp *op, Op pop,
                                          const Term *const *x, int nx,
                                          GPtrArray *out) {
  (void)pop;
  int64_t f, dims[PARTIR_MAX_RANK];
  double count;
  int n = bn_dims(lw, op, x, nx, 2, &f, dims, &count);
  if (n < 0)
    return FALSE;
  const Term *mean = bn_mean(lw, op, x[0], dims, n, count);
  const Term *c = bn_centered(lw, op, x[0], mean, f);
  const Term *sq = c ? binary(lw, op, OP_MUL, c, c) : NULL;
  const Term *var = sq ? bn_mean(lw, op, sq, dims, n, count) : NULL;
  const Term *rstd = var ? bn_inverse_stddev(lw, op, var, f, x[0]->type) : NULL;
  const Term *y = rstd ? bn_normalize(lw, op, c, rstd, x[1], x[2], f) : NULL;
  return one(out, y) && one(out, mean) && one(out, var);
}

/* batch_norm_inference(x, scale, offset, mean, variance): x normalized
 * per feature by the given mean and variance, scaled and offset. */
static gboolean lower_batch_norm_inference(Lower *lw, const HloOp *op, Op pop,
                                           const Term *const *x, int nx,
                                           GPtrArray *out) {
  (void)pop;
  int64_t f, dims[PARTIR_MAX_RANK];
  double count;
  if (bn_dims(lw, op, x, nx, 4, &f, dims, &count) < 0)
    return FALSE;
  const Term *c = bn_centered(lw, op, x[0], x[3], f);
  const Term *rstd = c ? bn_inverse_stddev(lw, op, x[4], f, x[0]->type) : NULL;
  return one(out, rstd ? bn_normalize(lw, op, c, rstd, x[1], x[2], f) : NULL);
}

/* batch_norm_grad(x, scale, mean, variance, dy): the gradients of
 * batch_norm_training's output with respect to x, scale and offset, as
 * the StableHLO spec writes them (N elements a feature, c = x - mean,
 * r = 1 / sqrt(variance + epsilon)):
 *   dx      = scale r / N (N dy - sum dy - c r^2 sum(dy c))
 *   dscale  = sum(dy c r)
 *   doffset = sum dy */
static gboolean lower_batch_norm_grad(Lower *lw, const HloOp *op, Op pop,
                                      const Term *const *x, int nx,
                                      GPtrArray *out) {
  (void)pop;
  int64_t f, dims[PARTIR_MAX_RANK];
  double count;
  int n = bn_dims(lw, op, x, nx, 3, &f, dims, &count);
  if (n < 0)
    return FALSE;
  const Type *t = x[0]->type;
  const Term *dy = x[4];
  if (dy->type != t)
    return lfail(lw, op->loc, "'%s': grad_output must be of the operand's type",
                 op->name);
  const Term *c = bn_centered(lw, op, x[0], x[2], f);
  const Term *r = c ? bn_inverse_stddev(lw, op, x[3], f, t) : NULL;
  const Term *dyc = r ? binary(lw, op, OP_MUL, dy, c) : NULL;
  const Term *sum_dy = dyc ? reduced(lw, op, OP_REDUCE_SUM, dy, dims, n) : NULL;
  const Term *sum_dyc =
      sum_dy ? reduced(lw, op, OP_REDUCE_SUM, dyc, dims, n) : NULL;
  if (!sum_dyc)
    return FALSE;
  const Term *rr = binary(lw, op, OP_MUL, r, r);
  const Term *k = binary(lw, op, OP_MUL, c, rr);
  const Term *k2 = binary(lw, op, OP_MUL, k, bn_spread(lw, op, sum_dyc, f, t));
  const Term *ndy = binary(lw, op, OP_MUL, dy, splat(lw, op, t, count));
  const Term *i6 =
      binary(lw, op, OP_SUB,
             binary(lw, op, OP_SUB, ndy, bn_spread(lw, op, sum_dy, f, t)), k2);
  const Term *sr = binary(lw, op, OP_MUL, bn_spread(lw, op, x[1], f, t), r);
  const Term *dx = binary(
      lw, op, OP_MUL, binary(lw, op, OP_DIV, sr, splat(lw, op, t, count)), i6);
  const Term *dscale =
      reduced(lw, op, OP_REDUCE_SUM, binary(lw, op, OP_MUL, dyc, r), dims, n);
  return one(out, dx) && one(out, dscale) && one(out, sum_dy);
}

/* ------------------------------------------------------- convolution */

/* A convolution's dimension numbers: the input's batch and feature
 * dimensions, the kernel's input and output feature ones, the result's
 * batch and feature ones, and each one's spatial dimensions in order. */
typedef struct ConvDims {
  int n; /* spatial dimensions */
  int64_t in[2], in_s[PARTIR_MAX_RANK];
  int64_t k[2], k_s[PARTIR_MAX_RANK];
  int64_t out[2], out_s[PARTIR_MAX_RANK];
} ConvDims;

/* One operand's '[b, 0, 1, f]' at 'p' (letters 'l0' and 'l1' for its
 * two named dimensions): where each is, into 'two' and 'sp'; the text
 * after it, or NULL. */
static const char *conv_operand(const char *p, const char *end, char l0,
                                char l1, int rank, int64_t two[2],
                                int64_t *sp) {
  gboolean seen[PARTIR_MAX_RANK + 2] = {FALSE};
  two[0] = two[1] = -1;
  while (p < end && g_ascii_isspace(*p))
    p++;
  if (p >= end || *p++ != '[')
    return NULL;
  int pos = 0;
  for (;; pos++) {
    while (p < end && g_ascii_isspace(*p))
      p++;
    if (p >= end || pos >= rank)
      return NULL;
    if (*p == l0 || *p == l1) {
      int64_t *at = &two[*p == l1];
      if (*at >= 0)
        return NULL;
      *at = pos;
      p++;
    } else if (g_ascii_isdigit(*p)) {
      int64_t k = 0;
      while (p < end && g_ascii_isdigit(*p) && k < rank)
        k = k * 10 + (*p++ - '0');
      if (k >= rank - 2 || seen[k])
        return NULL;
      seen[k] = TRUE;
      sp[k] = pos;
    } else {
      return NULL;
    }
    while (p < end && g_ascii_isspace(*p))
      p++;
    if (p < end && *p == ',') {
      p++;
      continue;
    }
    if (p < end && *p == ']')
      break;
    return NULL;
  }
  p++;
  if (pos + 1 != rank || two[0] < 0 || two[1] < 0)
    return NULL;
  return p;
}

/* The dimension numbers, '[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]' in
 * the text the attribute spans (the pretty form's dim_numbers or the
 * generic form's #stablehlo.conv<...>). */
static gboolean conv_dims(Lower *lw, const HloOp *op, int rank, ConvDims *cd) {
  const HloAttr *a = hlo_op_attr(op, "dimension_numbers");
  const Source *src = lw->file->src;
  const char *p = NULL, *end = NULL;
  if (a && a->kind == HA_OPAQUE && a->end > a->loc.offset &&
      a->end <= src->len) {
    end = src->text + a->end;
    p = memchr(src->text + a->loc.offset, '[', a->end - a->loc.offset);
  }
  cd->n = rank - 2;
  if (p && rank >= 3)
    p = conv_operand(p, end, 'b', 'f', rank, cd->in, cd->in_s);
  while (p && p < end && g_ascii_isspace(*p))
    p++;
  if (p && p < end && *p == 'x')
    p = conv_operand(p + 1, end, 'i', 'o', rank, cd->k, cd->k_s);
  else
    p = NULL;
  while (p && p < end && g_ascii_isspace(*p))
    p++;
  if (p && p + 1 < end && p[0] == '-' && p[1] == '>')
    p = conv_operand(p + 2, end, 'b', 'f', rank, cd->out, cd->out_s);
  else
    p = NULL;
  if (!p)
    return lfail(lw, a ? a->loc : op->loc,
                 "'%s' needs its dimension numbers for operands of rank %d: "
                 "b, f and the spatial dimensions 0 to %d once each, then i, "
                 "o and the spatial ones, then the result's (rank 4: "
                 "'[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]')",
                 op->name, rank, rank - 3);
  return TRUE;
}

/* Where a convolution's window attribute is read: the generic form's
 * 'key' on 'op', or the pretty form's 'pretty' in its 'window'
 * dictionary.  '*view' is the operation to read the key returned of. */
static const char *window_key(const HloOp *op, const char *key,
                              const char *pretty, HloOp *view) {
  *view = *op;
  const HloAttr *w = hlo_op_attr(op, "window");
  if (hlo_op_attr(op, key) || !w || w->kind != HA_DICT)
    return key;
  view->attr_keys = w->keys;
  view->attr_values = w->items;
  return pretty;
}

/* The integers of the generic attribute 'key', or of the pretty form's
 * window entry 'pretty', or 'rank' times 'dflt'. */
static gboolean window_ints(Lower *lw, const HloOp *op, const char *key,
                            const char *pretty, int rank, int64_t dflt,
                            int64_t *v) {
  HloOp view;
  key = window_key(op, key, pretty, &view);
  int n = int_list(lw, &view, key, v, PARTIR_MAX_RANK, FALSE);
  if (n < 0)
    return FALSE;
  if (n == 0)
    for (int d = 0; d < rank; d++)
      v[d] = dflt;
  else if (n != rank)
    return lfail(lw, op->loc, "'%s': '%s' has %d entries, not %d", op->name,
                 key, n, rank);
  return TRUE;
}

/* convolution: a sum over the kernel's window positions of products.
 * The input is laid out [batch, spatial..., feature] and padded (its
 * padding, and its lhs_dilation as interior padding); the kernel
 * [spatial..., in, out].  For each position k of the window, the
 * input's strided slice at k (times rhs_dilation) is contracted over
 * the features with the kernel's [in, out] at k, a dot_general; with
 * feature groups the features are split into [group, in] and the
 * groups are a batch dimension of the product; with batch groups (the
 * kernel gradient of a grouped convolution) the batch is split into
 * [group, batch / groups] and the output features into groups, the
 * groups again a batch dimension of the product.  The sum is laid out as
 * the result's dimension numbers say.  A 3x3 kernel is nine products of
 * what partir already partitions (the batch, the spatial and the
 * feature dimensions split as slices and products split). */
static gboolean lower_convolution(Lower *lw, const HloOp *op, Op pop,
                                  const Term *const *x, int nx,
                                  GPtrArray *out) {
  (void)pop;
  if (nx != 2)
    return lfail(lw, op->loc, "'%s' takes 2 operands", op->name);
  const Type *rt = written_result(lw, op, 0);
  int rank = x[0]->type->rank;
  ConvDims cd;
  if (!rt || rt->rank != rank || x[1]->type->rank != rank)
    return lfail(lw, op->loc, "'%s': its operands and result differ in rank",
                 op->name);
  if (!conv_dims(lw, op, rank, &cd))
    return FALSE;
  int n = cd.n;
  int64_t stride[PARTIR_MAX_RANK], ldil[PARTIR_MAX_RANK], rdil[PARTIR_MAX_RANK],
      low[PARTIR_MAX_RANK], high[PARTIR_MAX_RANK];
  HloOp view;
  const char *pad_key = window_key(op, "padding", "pad", &view);
  if (!window_ints(lw, op, "window_strides", "stride", n, 1, stride) ||
      !window_ints(lw, op, "lhs_dilation", "lhs_dilate", n, 1, ldil) ||
      !window_ints(lw, op, "rhs_dilation", "rhs_dilate", n, 1, rdil) ||
      !padding_pairs(lw, &view, pad_key, n, TRUE, low, high))
    return FALSE;
  int64_t groups = 1, bgroups = 1;
  if ((hlo_op_attr(op, "feature_group_count") &&
       !int_attr(lw, op, "feature_group_count", &groups)) ||
      (hlo_op_attr(op, "batch_group_count") &&
       !int_attr(lw, op, "batch_group_count", &bgroups)))
    return FALSE;
  if (groups < 1 || bgroups < 1 || (groups > 1 && bgroups > 1))
    return lfail(lw, op->loc,
                 "'%s': feature_group_count and batch_group_count must be 1 "
                 "or more, one of them 1",
                 op->name);
  DType dt = rt->dtype;
  /* the input as [b, spatial..., f], padded and dilated */
  int64_t perm[PARTIR_MAX_RANK];
  perm[0] = cd.in[0];
  for (int j = 0; j < n; j++)
    perm[1 + j] = cd.in_s[j];
  perm[n + 1] = cd.in[1];
  const Term *in = transposed(lw, op, widen(lw, op, x[0], dt), perm);
  gboolean pads = FALSE;
  int64_t lo[PARTIR_MAX_RANK] = {0}, hi[PARTIR_MAX_RANK] = {0},
          mid[PARTIR_MAX_RANK] = {0};
  for (int j = 0; j < n; j++) {
    if (stride[j] < 1 || ldil[j] < 1 || rdil[j] < 1)
      return lfail(lw, op->loc, "'%s': strides and dilations must be 1 or more",
                   op->name);
    lo[1 + j] = low[j];
    hi[1 + j] = high[j];
    mid[1 + j] = ldil[j] - 1;
    pads |= low[j] || high[j] || ldil[j] > 1;
  }
  if (in && pads)
    in = padded(lw, op, in, splat(lw, op, type_tensor(dt, 0, NULL), 0), lo, hi,
                mid);
  /* the kernel as [spatial..., in, out] */
  for (int j = 0; j < n; j++)
    perm[j] = cd.k_s[j];
  perm[n] = cd.k[0];
  perm[n + 1] = cd.k[1];
  const Term *kern = transposed(lw, op, widen(lw, op, x[1], dt), perm);
  if (!in || !kern)
    return FALSE;
  const int64_t *id = in->type->dims, *kd = kern->type->dims;
  int64_t c = id[n + 1], cg = kd[n], o = kd[n + 1];
  /* g groups of the features, or of the batch: a batch dimension of the
   * products either way */
  int64_t g = groups * bgroups, batch = id[0] / bgroups;
  if (c != cg * groups || o % g != 0 || id[0] % bgroups != 0 ||
      rt->dims[cd.out[0]] != batch || rt->dims[cd.out[1]] != o)
    return lfail(lw, op->loc,
                 "'%s': features do not agree (input %" G_GINT64_FORMAT
                 ", kernel %" G_GINT64_FORMAT " to %" G_GINT64_FORMAT
                 ", %" G_GINT64_FORMAT " groups of %s)",
                 op->name, c, cg, o, g, bgroups > 1 ? "the batch" : "features");
  int64_t outs[PARTIR_MAX_RANK], positions = 1;
  for (int j = 0; j < n; j++) {
    int64_t span = (kd[j] - 1) * rdil[j] + 1;
    outs[j] = id[1 + j] >= span ? (id[1 + j] - span) / stride[j] + 1 : 0;
    if (outs[j] < 1 || outs[j] != rt->dims[cd.out_s[j]])
      return lfail(lw, op->loc,
                   "'%s': spatial dimension %d gives %" G_GINT64_FORMAT
                   " positions, not the result's %" G_GINT64_FORMAT,
                   op->name, j, outs[j], rt->dims[cd.out_s[j]]);
    positions *= kd[j];
  }
  if (positions > 4096)
    return lfail(lw, op->loc,
                 "'%s': a window of %" G_GINT64_FORMAT
                 " positions (partir takes at most 4096)",
                 op->name, positions);
  /* the shapes of each position's operands and product */
  int64_t xs[PARTIR_MAX_RANK + 1], xb[PARTIR_MAX_RANK + 1], ws[3];
  xs[0] = id[0];
  xb[0] = bgroups;
  xb[1] = batch;
  for (int j = 0; j < n; j++)
    xs[1 + j] = xb[2 + j] = outs[j];
  xs[n + 1] = groups;
  xs[n + 2] = xb[n + 2] = cg;
  ws[0] = cg;
  ws[1] = g;
  ws[2] = o / g;
  const Term *acc = NULL;
  for (int64_t at = 0; at < positions; at++) {
    const Term *a = in, *b = kern;
    int64_t rest = at;
    for (int j = n - 1; j >= 0; j--) {
      int64_t k = rest % kd[j];
      rest /= kd[j];
      a = slice_dim(lw, op, a, 1 + j, k * rdil[j], outs[j], stride[j]);
      b = slice_dim(lw, op, b, j, k, 1, 1);
    }
    Kv kv[4];
    if (g == 1) {
      b = reshaped(lw, op, b, 2, (int64_t[]){cg, o});
      int64_t lc = n + 1, rc = 0;
      kv[0] = (Kv){"lhs_contract", av_ints(&lc, 1)};
      kv[1] = (Kv){"rhs_contract", av_ints(&rc, 1)};
    } else { /* [.., g, cg] or [g, b/g, ..] with [cg, g, o/g] */
      a = groups > 1 ? reshaped(lw, op, a, n + 3, xs)
                     : reshaped(lw, op, a, n + 3, xb);
      b = reshaped(lw, op, b, 3, ws);
      int64_t lb = groups > 1 ? n + 1 : 0, rb = 1, lc = n + 2, rc = 0;
      kv[0] = (Kv){"lhs_batch", av_ints(&lb, 1)};
      kv[1] = (Kv){"rhs_batch", av_ints(&rb, 1)};
      kv[2] = (Kv){"lhs_contract", av_ints(&lc, 1)};
      kv[3] = (Kv){"rhs_contract", av_ints(&rc, 1)};
    }
    const Term *pair[2] = {a, b};
    const Term *prod = a && b ? build(lw, op, OP_DOT_GENERAL, 2, pair,
                                      make_attrs(kv, g == 1 ? 2 : 4), NULL)
                              : NULL;
    acc = acc ? bin(lw, op, OP_ADD, acc, prod) : prod;
    if (!acc)
      return FALSE;
  }
  if (g > 1) { /* [g, b, spatial..., o/g] to [b, spatial..., o] */
    for (int d = 0; d <= n; d++)
      perm[d] = d + 1;
    perm[n + 1] = 0;
    perm[n + 2] = n + 2;
    acc = transposed(lw, op, acc, perm);
    xs[0] = batch;
    xs[n + 1] = o;
    acc = reshaped(lw, op, acc, n + 2, xs);
  }
  /* [b, spatial..., o] to the result's layout */
  perm[cd.out[0]] = 0;
  for (int j = 0; j < n; j++)
    perm[cd.out_s[j]] = 1 + j;
  perm[cd.out[1]] = n + 1;
  return one(out, transposed(lw, op, acc, perm));
}

/* pad: its low, high and interior padding per dimension ([1, 0],
 * array<i64: 1, 0>, dense<[1, 0]>). */
static gboolean lower_pad(Lower *lw, const HloOp *op, Op pop,
                          const Term *const *x, int nx, GPtrArray *out) {
  int64_t low[PARTIR_MAX_RANK], high[PARTIR_MAX_RANK],
      interior[PARTIR_MAX_RANK];
  int nl = int_list(lw, op, "edge_padding_low", low, PARTIR_MAX_RANK, TRUE);
  int nh = int_list(lw, op, "edge_padding_high", high, PARTIR_MAX_RANK, TRUE);
  int ni =
      int_list(lw, op, "interior_padding", interior, PARTIR_MAX_RANK, TRUE);
  if (nl < 0 || nh < 0 || ni < 0)
    return FALSE;
  Kv kv[3] = {{"low", av_ints(low, nl)},
              {"high", av_ints(high, nh)},
              {"interior", av_ints(interior, ni)}};
  return one(out, build(lw, op, pop, nx, x, make_attrs(kv, 3), NULL));
}

/* ---------------------------------------- indexing by runtime values */

/* The dimension numbers of a gather or a scatter (the scatter's names
 * in 'names', StableHLO's order of GatherDims' lists: offset,
 * collapsed, operand batching, indices batching, start index map),
 * nested in the dictionary attribute 'dict' (#stablehlo.gather<...>)
 * or at the top, as older exports wrote them, and index_vector_dim and
 * indices_are_sorted. */
static gboolean read_dims(Lower *lw, const HloOp *op, const char *dict,
                          const char *const names[5], GatherDims *g) {
  const HloAttr *nums = hlo_op_attr(op, dict);
  HloOp nested = *op; /* reads the nested dictionary when there is one */
  if (nums && nums->kind == HA_DICT) {
    nested.attr_keys = nums->keys;
    nested.attr_values = nums->items;
  }
  int64_t *lists[5] = {g->offset_dims, g->collapsed, g->operand_batching,
                       g->indices_batching, g->start_index_map};
  int *counts[5] = {&g->noffset, &g->ncollapsed, &g->nbatching,
                    &g->nbatching_indices, &g->nstart};
  for (int k = 0; k < 5; k++) {
    const HloOp *from = hlo_op_attr(op, names[k]) ? op : &nested;
    *counts[k] = int_list(lw, from, names[k], lists[k], PARTIR_MAX_RANK, FALSE);
    if (*counts[k] < 0)
      return FALSE;
  }
  const HloOp *from = hlo_op_attr(op, "index_vector_dim") ? op : &nested;
  /* MLIR leaves out an index_vector_dim of 0, its default */
  g->index_vector_dim = 0;
  if (hlo_op_attr(from, "index_vector_dim") &&
      !int_attr(lw, from, "index_vector_dim", &g->index_vector_dim))
    return FALSE;
  const HloAttr *sorted = hlo_op_attr(op, "indices_are_sorted");
  g->sorted = sorted && sorted->kind == HA_INT && sorted->i;
  return TRUE;
}

/* The indices of a gather or scatter with its position components
 * made batching dimensions (batched.c); NULL after lfail. */
static const Term *batched_indices(Lower *lw, const HloOp *op,
                                   const Type *operand, const Term *indices,
                                   GatherDims *g) {
  g_autoptr(Diag) err = diag_new(NULL);
  const Term *t = hlo_batch_iota_indices(operand, indices, g, err);
  if (!t)
    lfail(lw, op->loc, "'%s': %s", op->name, diag_text(err));
  return t;
}

/* gather: its dimension numbers become partir's attributes of the same
 * names (core/gather.c), a component that is the position a batching
 * dimension (batched.c). */
static gboolean lower_gather(Lower *lw, const HloOp *op, Op pop,
                             const Term *const *x, int nx, GPtrArray *out) {
  (void)nx;
  static const char *const names[5] = {
      "offset_dims", "collapsed_slice_dims", "operand_batching_dims",
      "start_indices_batching_dims", "start_index_map"};
  GatherDims g = {0};
  if (!read_dims(lw, op, "dimension_numbers", names, &g))
    return FALSE;
  g.nslice =
      int_list(lw, op, "slice_sizes", g.slice_sizes, PARTIR_MAX_RANK, TRUE);
  if (g.nslice < 0)
    return FALSE;
  const Term *a[2] = {x[0], batched_indices(lw, op, x[0]->type, x[1], &g)};
  return a[1] && one(out, build(lw, op, pop, 2, a, gather_attrs(&g), NULL));
}

/* dynamic_slice: 'sizes' in the pretty form, 'slice_sizes' in the
 * generic one (pretty.c renames the first). */
static gboolean lower_dynamic_slice(Lower *lw, const HloOp *op, Op pop,
                                    const Term *const *x, int nx,
                                    GPtrArray *out) {
  int64_t sizes[PARTIR_MAX_RANK];
  int m = int_list(lw, op, "slice_sizes", sizes, PARTIR_MAX_RANK, TRUE);
  if (m < 0)
    return FALSE;
  Kv kv = {"slice_sizes", av_ints(sizes, m)};
  return one(out, build(lw, op, pop, nx, x, make_attrs(&kv, 1), NULL));
}

/* scatter with an add region (support.c refused any other): its
 * dimension numbers become scatter_add's attributes of the same names
 * (core/gather.c). */
static gboolean lower_scatter(Lower *lw, const HloOp *op, Op pop,
                              const Term *const *x, int nx, GPtrArray *out) {
  (void)nx;
  static const char *const names[5] = {
      "update_window_dims", "inserted_window_dims", "input_batching_dims",
      "scatter_indices_batching_dims", "scatter_dims_to_operand_dims"};
  GatherDims g = {0};
  if (!read_dims(lw, op, "scatter_dimension_numbers", names, &g))
    return FALSE;
  const Term *idx = batched_indices(lw, op, x[0]->type, x[1], &g);
  if (!idx)
    return FALSE;
  const Attrs *attrs = scatter_attrs(&g);
  if (!hlo_scatter_sets(op)) {
    const Term *a[3] = {x[0], idx, x[2]};
    return one(out, build(lw, op, pop, 3, a, attrs, NULL));
  }
  /* a set (x.at[i].set(u)): the updates added onto -0 (the identity
   * of addition, so a -0 update stays -0), how many landed on each
   * element counted the same way, and the sum taken where one did: an
   * element written once gets its update exactly.  One written more
   * than once (JAX leaves which update wins undefined) gets their mean,
   * or for i1 their or. */
  const Term *x0 = x[0], *u = x[2];
  DType dt = x0->type->dtype;
  const Type *ci = type_with_dtype(x0->type, DT_I32);
  const Type *ui = type_with_dtype(u->type, DT_I32);
  const Term *zero_i = splat(lw, op, ci, 0);
  const Term *c_args[3] = {zero_i, idx, splat(lw, op, ui, 1)};
  const Term *count =
      zero_i && c_args[2] ? build(lw, op, pop, 3, c_args, attrs, NULL) : NULL;
  const Term *hit = compare(lw, op, count, zero_i, "GT");
  const Term *value;
  if (dt == DT_I1) {
    const Term *s_args[3] = {zero_i, idx,
                             build(lw, op, OP_CONVERT, 1, &u, NULL, ui)};
    const Term *sum =
        s_args[2] ? build(lw, op, pop, 3, s_args, attrs, NULL) : NULL;
    value = compare(lw, op, sum, zero_i, "GT");
  } else {
    const Term *s_args[3] = {
        splat(lw, op, x0->type, dtype_is_float(dt) ? -0.0 : 0), idx, u};
    const Term *sum =
        s_args[0] ? build(lw, op, pop, 3, s_args, attrs, NULL) : NULL;
    const Term *n = bin(lw, op, OP_MAX, count, splat(lw, op, ci, 1));
    if (n && dt != DT_I32)
      n = build(lw, op, OP_CONVERT, 1, &n, NULL, x0->type);
    value = bin(lw, op, OP_DIV, sum, n);
  }
  return one(out, select3(lw, op, hit, value, x0));
}

/* dynamic_update_slice(x, update, starts...): as it is. */
static gboolean lower_dynamic_update_slice(Lower *lw, const HloOp *op, Op pop,
                                           const Term *const *x, int nx,
                                           GPtrArray *out) {
  return one(out, build(lw, op, pop, nx, x, attrs_empty(), NULL));
}

/* optimization_barrier: the values themselves. */
static gboolean lower_identity(Lower *lw, const HloOp *op, Op pop,
                               const Term *const *x, int nx, GPtrArray *out) {
  (void)lw;
  (void)op;
  (void)pop;
  for (int i = 0; i < nx; i++)
    g_ptr_array_add(out, (gpointer)x[i]);
  return TRUE;
}

/* ------------------------------------------------ annotations, checks */

/* The sharding annotation in attribute dictionary 'attrs' (Shardy's
 * 'sdy.sharding', else GSPMD's 'mhlo.sharding'), noted on 'value'. */
static void note_attrs(Lower *lw, HloNoteSite site, int index,
                       const Term *value, const HloAttr *attrs) {
  const HloAttr *a = hlo_dict_get(attrs, "sdy.sharding");
  gboolean gspmd = !a;
  if (!a)
    a = hlo_dict_get(attrs, "mhlo.sharding");
  if (!a)
    return;
  HloNote *n = g_new0(HloNote, 1);
  *n = (HloNote){.site = site,
                 .index = index,
                 .value = value,
                 .attr = a,
                 .gspmd = gspmd,
                 .loc = a->loc};
  g_ptr_array_add(lw->notes, n);
}

/* An argument's 'tf.aliasing_output = N' (jit's donated argument whose
 * buffer result N reuses: a training step's parameter and its update)
 * is what partir writes '{updates = %arg}' on result N. */
static void read_aliasing(Lower *lw, const HloFunc *fn, Func *out) {
  for (guint i = 0; i < fn->args->len && !lw->failed; i++) {
    const HloArg *a = g_ptr_array_index(fn->args, i);
    const HloAttr *n =
        a->attrs ? hlo_dict_get(a->attrs, "tf.aliasing_output") : NULL;
    if (!n)
      continue;
    if (n->kind != HA_INT || n->i < 0 || n->i >= out->nresults ||
        out->result_types[n->i] != out->arg_types[i]) {
      lfail(lw, n->loc,
            "'tf.aliasing_output' of argument %u names no result of its "
            "type",
            i);
      return;
    }
    if (!out->result_updates) {
      out->result_updates = g_new(int, (gsize)out->nresults);
      for (int k = 0; k < out->nresults; k++)
        out->result_updates[k] = -1;
    }
    if (out->result_updates[n->i] >= 0) {
      lfail(lw, n->loc, "two arguments alias result %" G_GINT64_FORMAT, n->i);
      return;
    }
    out->result_updates[n->i] = (int)i;
  }
}

/* sdy.sharding_constraint, sdy.reshard: the value, its sharding noted. */
static gboolean lower_sharding(Lower *lw, const HloOp *op, Op pop,
                               const Term *const *x, int nx, GPtrArray *out) {
  (void)pop;
  (void)nx;
  const HloAttr *a = hlo_op_attr(op, "sharding");
  if (!a)
    return lfail(lw, op->loc, "'%s' needs its sharding", op->name);
  HloNote *n = g_new0(HloNote, 1);
  *n = (HloNote){.site = HLO_ON_VALUE, .value = x[0], .attr = a, .loc = a->loc};
  g_ptr_array_add(lw->notes, n);
  return one(out, x[0]);
}

static const Term *both(Lower *lw, const HloOp *op, const Term *p,
                        const Term *q) {
  return select3(lw, op, p, q, p);
}

static const Term *either(Lower *lw, const HloOp *op, const Term *p,
                          const Term *q) {
  return select3(lw, op, p, p, q);
}

/* Whether every element of predicate 'ok' is true: a scalar i1. */
static const Term *all_true(Lower *lw, const HloOp *op, const Term *ok) {
  if (!ok || ok->type->rank == 0)
    return ok;
  const Type *wide = type_with_dtype(ok->type, DT_I32);
  const Term *bad =
      select3(lw, op, ok, splat(lw, op, wide, 0), splat(lw, op, wide, 1));
  int64_t dims[PARTIR_MAX_RANK];
  for (int d = 0; d < ok->type->rank; d++)
    dims[d] = d;
  Kv kv = {"dims", av_ints(dims, ok->type->rank)};
  const Term *worst =
      bad ? build(lw, op, OP_REDUCE_MAX, 1, &bad, make_attrs(&kv, 1), NULL)
          : NULL;
  return worst ? compare(lw, op, worst, splat(lw, op, worst->type, 0), "EQ")
               : NULL;
}

/* What '@check.eq' returns: whether 'a' and 'b' agree, as its checks
 * do (an i1 scalar).  Integers: equal.  Floats, as StableHLO's
 * interpreter compares them almost equal: equal, or both NaN, or of
 * one sign (-0 negative) and |a - b| <= tolerance, in double. */
static const Term *check_flag(Lower *lw, const HloOp *op, const Term *a,
                              const Term *b, double tolerance) {
  if (!dtype_is_float(a->type->dtype))
    return all_true(lw, op, compare(lw, op, a, b, "EQ"));
  const Type *t = type_with_dtype(a->type, DT_F64);
  if (a->type != t) {
    a = build(lw, op, OP_CONVERT, 1, &a, NULL, t);
    b = a ? build(lw, op, OP_CONVERT, 1, &b, NULL, t) : NULL;
    if (!a || !b)
      return NULL;
  }
  const Term *zero = splat(lw, op, t, 0), *one_ = splat(lw, op, t, 1);
  /* 1/x < 0 also for -0 */
  const Term *neg_a =
      compare(lw, op, binary(lw, op, OP_DIV, one_, a), zero, "LT");
  const Term *neg_b =
      compare(lw, op, binary(lw, op, OP_DIV, one_, b), zero, "LT");
  const Term *diff = binary(lw, op, OP_SUB, a, b);
  const Term *dist = diff ? build(lw, op, OP_ABS, 1, &diff, NULL, NULL) : NULL;
  const Term *near =
      both(lw, op, compare(lw, op, neg_a, neg_b, "EQ"),
           compare(lw, op, dist, splat(lw, op, t, tolerance), "LE"));
  const Term *nans =
      both(lw, op, compare(lw, op, a, a, "NE"), compare(lw, op, b, b, "NE"));
  const Term *ok =
      either(lw, op, compare(lw, op, a, b, "EQ"), either(lw, op, nans, near));
  return all_true(lw, op, ok);
}

/* The checks partir imports: their kinds, and the defaults StableHLO's
 * interpreter gives the custom-call forms (they take no attributes). */
static const struct {
  const char *name;
  HloCheckKind kind;
  double tolerance;
  uint64_t max_ulp;
} check_kinds[] = {
    {"check.expect_eq", HLO_CHECK_EQ, 0, 0},
    {"check.expect_eq_const", HLO_CHECK_EQ, 0, 0},
    {"check.expect_almost_eq", HLO_CHECK_ALMOST_EQ, 1e-4, 0},
    {"check.expect_almost_eq_const", HLO_CHECK_ALMOST_EQ, 1e-4, 0},
    {"check.expect_close", HLO_CHECK_CLOSE, 0, 1},
    /* custom calls */
    {"@check.eq", HLO_CHECK_ALMOST_EQ, 1e-4, 0}, /* integers: equal */
    {"@check.expect_eq", HLO_CHECK_EQ, 0, 0},
    {"@check.expect_almost_eq", HLO_CHECK_ALMOST_EQ, 1e-3, 0},
    {"@check.expect_close", HLO_CHECK_CLOSE, 0, 3},
};

/* The place of 't' among the values checks compare (a value checked
 * twice is one result). */
static int checked_result(Lower *lw, const Term *t) {
  guint i;
  if (!g_ptr_array_find(lw->checked, t, &i)) {
    i = lw->checked->len;
    g_ptr_array_add(lw->checked, (gpointer)t);
  }
  return (int)i;
}

/* A check: the values it compares noted (they become results of the
 * program); '@check.eq' also gives whether they agree. */
static gboolean lower_check(Lower *lw, const HloOp *op, Op pop,
                            const Term *const *x, int nx, GPtrArray *out) {
  (void)pop;
  const HloAttr *target = hlo_op_attr(op, "call_target_name");
  g_autofree char *name = target && target->s
                              ? g_strconcat("@", target->s, NULL)
                              : g_strdup(op->name);
  gsize k = 0;
  while (k < G_N_ELEMENTS(check_kinds) && strcmp(check_kinds[k].name, name))
    k++;
  g_assert(k < G_N_ELEMENTS(check_kinds)); /* support.c lets no other in */
  HloCheck c = {.kind = check_kinds[k].kind,
                .name = check_kinds[k].name,
                .tolerance = check_kinds[k].tolerance,
                .max_ulp = check_kinds[k].max_ulp,
                .loc = op->loc};
  const Term *actual = x[0], *expected = nx > 1 ? x[1] : NULL;
  if (!expected) { /* the _const forms: their value */
    const HloAttr *v = hlo_op_attr(op, "value");
    if (!v || v->kind != HA_DENSE)
      return lfail(lw, op->loc, "'%s' needs a dense value", op->name);
    if (v->type && v->type->type && v->type->type != actual->type) {
      g_autofree char *got = type_to_string(actual->type);
      return lfail(lw, v->loc, "'%s' compares %s with a value of type %s",
                   op->name, got, v->type->text);
    }
    g_autoptr(Diag) why = diag_new(NULL);
    Kv kv = {"value", {0}};
    if (!hlo_dense_value(v, actual->type, &kv.v, why))
      return lfail(lw, v->loc, "'%s': %s", op->name, diag_text(why));
    expected =
        build(lw, op, OP_CONSTANT, 0, NULL, make_attrs(&kv, 1), actual->type);
    if (!expected)
      return FALSE;
  }
  if (expected->type != actual->type) {
    g_autofree char *ta = type_to_string(actual->type);
    g_autofree char *te = type_to_string(expected->type);
    return lfail(lw, op->loc, "'%s' compares values of types %s and %s",
                 name + (name[0] == '@'), ta, te);
  }
  gboolean floats = dtype_is_float(actual->type->dtype);
  if (c.kind != HLO_CHECK_EQ && !floats) {
    if (strcmp(name, "@check.eq") != 0) {
      g_autofree char *ta = type_to_string(actual->type);
      return lfail(lw, op->loc, "'%s' compares floats, not %s",
                   name + (name[0] == '@'), ta);
    }
    c.kind = HLO_CHECK_EQ;
  }
  double max_ulp = (double)c.max_ulp, min_ulp = 0;
  if (!number_attr(lw, op, "tolerance", &c.tolerance) ||
      !number_attr(lw, op, "max_ulp_difference", &max_ulp) ||
      !number_attr(lw, op, "min_ulp_difference", &min_ulp))
    return FALSE;
  c.max_ulp = (uint64_t)MIN(max_ulp, 1e18);
  c.min_ulp = (uint64_t)MIN(min_ulp, 1e18);
  c.actual = checked_result(lw, actual);
  c.expected = checked_result(lw, expected);
  g_array_append_val(lw->checks, c);
  if (op->result_types->len == 0)
    return TRUE;
  return one(out, check_flag(lw, op, actual, expected, c.tolerance));
}

/* custom_call: @Sharding (the value, its GSPMD sharding noted) or a
 * check. */
static gboolean lower_as(Lower *lw, const HloOp *op, const char *name,
                         const Term *const *x, int nx, GPtrArray *out);

static gboolean lower_custom_call(Lower *lw, const HloOp *op, Op pop,
                                  const Term *const *x, int nx,
                                  GPtrArray *out) {
  const HloAttr *t = hlo_op_attr(op, "call_target_name");
  if (t && t->s && g_str_has_prefix(t->s, "check."))
    return lower_check(lw, op, pop, x, nx, out);
  const char *as = hlo_custom_call_op(t ? t->s : NULL);
  if (as)
    return lower_as(lw, op, as, x, nx, out);
  const HloAttr *a = hlo_op_attr(op, "sdy.sharding");
  gboolean gspmd = !a;
  if (!a)
    a = hlo_op_attr(op, "mhlo.sharding");
  if (a) {
    HloNote *n = g_new0(HloNote, 1);
    *n = (HloNote){.site = HLO_ON_VALUE,
                   .value = x[0],
                   .attr = a,
                   .gspmd = gspmd,
                   .loc = a->loc};
    g_ptr_array_add(lw->notes, n);
  }
  return one(out, x[0]);
}

static gboolean lower_body(Lower *lw, const HloFunc *fn, const Scope *outer,
                           const Term *const *args, GPtrArray *results,
                           Loc call_at);

/* The function attribute 'attr' of 'op' names lowered on the operands
 * (once per function and operands). */
static gboolean call_function(Lower *lw, const HloOp *op, const char *attr,
                              const Term *const *x, int nx, GPtrArray *out) {
  const HloAttr *c = hlo_op_attr(op, attr);
  const HloFunc *fn = c && c->s ? g_hash_table_lookup(lw->funcs, c->s) : NULL;
  if (!fn)
    return lfail(lw, c ? c->loc : op->loc,
                 "call of an undefined function '@%s'", c && c->s ? c->s : "?");
  if (nx != (int)fn->args->len)
    return lfail(lw, op->loc, "'@%s' takes %u argument%s, not %d", fn->name,
                 fn->args->len, fn->args->len == 1 ? "" : "s", nx);
  GString *key = g_string_new(fn->name);
  for (int i = 0; i < nx; i++)
    g_string_append_printf(key, " %p", (const void *)x[i]);
  GPtrArray *done = g_hash_table_lookup(lw->memo, key->str);
  if (done) {
    g_string_free(key, TRUE);
    for (guint i = 0; i < done->len; i++)
      g_ptr_array_add(out, g_ptr_array_index(done, i));
    return TRUE;
  }
  if (lw->depth >= HLO_MAX_DEPTH) {
    g_string_free(key, TRUE);
    return lfail(lw, op->loc,
                 "calls nest deeper than %d (a recursive function?)",
                 HLO_MAX_DEPTH);
  }
  lw->depth++;
  GPtrArray *results = g_ptr_array_new();
  Scope sc = {.prefix = fn->name};
  gboolean ok = lower_body(lw, fn, &sc, x, results, op->loc);
  lw->depth--;
  if (!ok) {
    g_ptr_array_unref(results);
    g_string_free(key, TRUE);
    return FALSE;
  }
  for (guint i = 0; i < results->len; i++)
    g_ptr_array_add(out, g_ptr_array_index(results, i));
  g_hash_table_insert(lw->memo, g_string_free(key, FALSE), results);
  return TRUE;
}

/* func.call: the callee lowered on the operands. */
static gboolean lower_call(Lower *lw, const HloOp *op, Op pop,
                           const Term *const *x, int nx, GPtrArray *out) {
  (void)pop;
  return call_function(lw, op, "callee", x, nx, out);
}

/* The composites partir has an operator for, computed by it rather
 * than by the decomposition's approximation (JAX writes erf as one). */
static const struct {
  const char *name;
  Op op;
  int arity;
} known_composites[] = {
    {"chlo.erf", OP_ERF, 1},
};

/* stablehlo.composite: a known one as its operator, any other as its
 * decomposition, a function called on the operands (what the op means
 * by definition). */
static gboolean lower_composite(Lower *lw, const HloOp *op, Op pop,
                                const Term *const *x, int nx, GPtrArray *out) {
  (void)pop;
  const HloAttr *name = hlo_op_attr(op, "name");
  for (gsize i = 0; name && name->s && i < G_N_ELEMENTS(known_composites); i++)
    if (strcmp(name->s, known_composites[i].name) == 0 &&
        nx == known_composites[i].arity)
      return lower_elementwise(lw, op, known_composites[i].op, x, nx, out);
  return call_function(lw, op, "decomposition", x, nx, out);
}

/* ---------------------------------------------------------------- while */

/* A loop runs at most this many times when unrolled, and the loops of
 * a program lower at most this many operations of their bodies in all
 * (nested loops multiply): beyond, the import is refused, not left to
 * fill the memory. */
#define HLO_MAX_TRIPS 100000
#define HLO_MAX_UNROLLED 1000000

/* The value of a rank-0 term built from constants by what a loop's
 * counter and condition use (add, sub, mul, max, min, compare, and, or,
 * not, select, convert), exactly (integers within 2^52); FALSE for
 * anything else. */
static gboolean fold_scalar(const Term *t, double *v, int depth) {
  if (depth > 64 || t->kind != TM_OP || t->type->rank != 0)
    return FALSE;
  double a = 0, b = 0, c = 0;
  int n = op_arity(t->op);
  for (int i = 0; i < n && i < 3; i++)
    if (!fold_scalar(t->args[i], i == 0 ? &a : i == 1 ? &b : &c, depth + 1))
      return FALSE;
  gboolean is_int = !dtype_is_float(t->type->dtype);
  switch (t->op) {
  case OP_CONSTANT: {
    g_autoptr(GArray) nums = g_array_new(FALSE, FALSE, sizeof(double));
    const AttrValue *val = attrs_get(t->attrs, "value");
    if (!val || !attr_value_numbers(val, nums) || nums->len != 1)
      return FALSE;
    *v = g_array_index(nums, double, 0);
    break;
  }
  case OP_CONVERT:
    *v = t->type->dtype == DT_I1 ? a != 0 : is_int ? trunc(a) : a;
    break;
  case OP_ADD:
    *v = a + b;
    break;
  case OP_SUB:
    *v = a - b;
    break;
  case OP_MUL:
    *v = a * b;
    break;
  case OP_MAX:
    *v = MAX(a, b);
    break;
  case OP_MIN:
    *v = MIN(a, b);
    break;
  case OP_AND:
  case OP_OR:
    if (t->type->dtype != DT_I1)
      return FALSE;
    *v = t->op == OP_AND ? (a != 0 && b != 0) : (a != 0 || b != 0);
    break;
  case OP_NOT:
    if (t->type->dtype != DT_I1)
      return FALSE;
    *v = a == 0;
    break;
  case OP_SELECT:
    *v = a != 0 ? b : c;
    break;
  case OP_COMPARE: {
    const AttrValue *d = attrs_get(t->attrs, "direction");
    const char *dir = d && d->kind == AV_SYMBOL ? d->sym : "";
    *v = strcmp(dir, "EQ") == 0   ? a == b
         : strcmp(dir, "NE") == 0 ? a != b
         : strcmp(dir, "LT") == 0 ? a < b
         : strcmp(dir, "LE") == 0 ? a <= b
         : strcmp(dir, "GT") == 0 ? a > b
         : strcmp(dir, "GE") == 0 ? a >= b
                                  : NAN;
    if (isnan(*v))
      return FALSE;
    break;
  }
  default:
    return FALSE;
  }
  return !is_int || fabs(*v) <= 0x1p52;
}

/* A rank-0 value folded to a constant (a loop's counter stays a
 * constant from one iteration to the next); anything else as it is. */
static const Term *folded(Lower *lw, const HloOp *op, const Term *t) {
  double v;
  if (t->type->rank != 0 || !fold_scalar(t, &v, 0) ||
      (t->kind == TM_OP && t->op == OP_CONSTANT))
    return t;
  return splat(lw, op, t->type, v);
}

static gboolean lower_op(Lower *lw, Scope *sc, const HloOp *op,
                         GPtrArray *returned);
static gboolean define(Lower *lw, Scope *sc, const HloDef *d,
                       const Term *const *terms);

/* Region 'g' lowered in a scope inside 'outer', its block's arguments
 * bound to 'args': what it returns, in 'results'. */
static gboolean lower_region(Lower *lw, const HloRegion *g, const Scope *outer,
                             const Term *const *args, GPtrArray *results) {
  Scope sc = {.values = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                              (GDestroyNotify)group_free),
              .prefix = outer->prefix,
              .outer = outer};
  gboolean ok = TRUE, returned = FALSE;
  for (guint i = 0; ok && i < g->args->len; i++) {
    const HloArg *a = g_ptr_array_index(g->args, i);
    HloDef d = {.name = a->name, .count = 1, .loc = a->loc};
    ok = define(lw, &sc, &d, &args[i]);
  }
  for (guint i = 0; ok && i < g->ops->len; i++) {
    const HloOp *op = g_ptr_array_index(g->ops, i);
    ok = returned ? lfail(lw, op->loc, "an operation after the return")
                  : lower_op(lw, &sc, op, results);
    returned = strcmp(op->name, "stablehlo.return") == 0;
  }
  g_hash_table_unref(sc.values);
  if (ok && !returned)
    return lfail(lw, g->loc, "a region does not end with a return");
  return ok;
}

/* while: unrolled.  The condition is lowered on the loop's values; it
 * must fold to a constant (a counter from a constant start, as
 * jax.lax.fori_loop and scan write them), else the loop is refused:
 * partir programs have no loops.  While it is true the body is lowered
 * on the values and gives the next ones; a rank-0 value that folds
 * stays a constant. */
static gboolean lower_while(Lower *lw, const HloOp *op, Op pop,
                            const Term *const *x, int nx, GPtrArray *out) {
  (void)pop;
  const Scope *outer = lw->scope;
  const HloRegion *cond = g_ptr_array_index(op->regions, 0);
  const HloRegion *body = g_ptr_array_index(op->regions, 1);
  g_autofree const Term **v = g_new(const Term *, MAX(nx, 1));
  for (int i = 0; i < nx; i++)
    v[i] = folded(lw, op, x[i]);
  for (int trip = 0;; trip++) {
    g_autoptr(GPtrArray) c = g_ptr_array_new();
    if (!lower_region(lw, cond, outer, v, c))
      return FALSE;
    double go;
    if (c->len != 1 ||
        ((const Term *)g_ptr_array_index(c, 0))->type->dtype != DT_I1)
      return lfail(lw, op->loc, "'%s': the condition must return one i1",
                   op->name);
    if (!fold_scalar(g_ptr_array_index(c, 0), &go, 0))
      return lfail(lw, op->loc,
                   "'%s': its condition is not known when importing (partir "
                   "unrolls a loop whose values decide its trips, as "
                   "fori_loop and scan write them; this one depends on the "
                   "program's inputs)",
                   op->name);
    if (go == 0)
      break;
    if (trip >= HLO_MAX_TRIPS)
      return lfail(lw, op->loc, "'%s' runs more than %d times", op->name,
                   HLO_MAX_TRIPS);
    lw->unrolled += (int64_t)body->ops->len + (int64_t)cond->ops->len;
    if (lw->unrolled > HLO_MAX_UNROLLED)
      return lfail(lw, op->loc,
                   "'%s': unrolling its loops would lower more than %d "
                   "operations",
                   op->name, HLO_MAX_UNROLLED);
    g_autoptr(GPtrArray) next = g_ptr_array_new();
    if (!lower_region(lw, body, outer, v, next))
      return FALSE;
    if ((int)next->len != nx)
      return lfail(lw, op->loc, "'%s': its body returns %u values, not %d",
                   op->name, next->len, nx);
    for (int i = 0; i < nx; i++) {
      const Term *t = g_ptr_array_index(next, i);
      if (t->type != v[i]->type) {
        g_autofree char *got = type_to_string(t->type);
        g_autofree char *want = type_to_string(v[i]->type);
        return lfail(lw, op->loc,
                     "'%s': its body returns %s for a value of type %s",
                     op->name, got, want);
      }
      v[i] = folded(lw, op, t);
    }
  }
  for (int i = 0; i < nx; i++)
    g_ptr_array_add(out, (gpointer)v[i]);
  return TRUE;
}

/* if and case: every branch lowered (StableHLO's operations have no
 * effects, so computing the branch not taken changes nothing), the
 * results chosen by selects on the predicate or index; a predicate or
 * index that folds to a constant takes its branch alone.  case runs
 * its last branch for an index out of range, as StableHLO says. */
static gboolean lower_branches(Lower *lw, const HloOp *op, const Term *sel,
                               GPtrArray *out) {
  /* lower_op points lw->scope at each region's scope as it goes */
  const Scope *outer = lw->scope;
  int n = (int)op->regions->len;
  gboolean is_if = strcmp(op->name, "stablehlo.if") == 0;
  double v;
  int only = -1;
  if (fold_scalar(sel, &v, 0))
    only = is_if ? (v != 0 ? 0 : 1) : (v < 0 || v >= n ? n - 1 : (int)v);
  g_autoptr(GPtrArray) chosen = NULL;
  for (int k = n - 1; k >= 0; k--) {
    if (only >= 0 && k != only)
      continue;
    g_autoptr(GPtrArray) r = g_ptr_array_new();
    if (!lower_region(lw, g_ptr_array_index(op->regions, k), outer, NULL, r))
      return FALSE;
    if (r->len != op->result_types->len)
      return lfail(lw, op->loc, "'%s': branch %d returns %u values, not %u",
                   op->name, k, r->len, op->result_types->len);
    if (!chosen) {
      chosen = g_ptr_array_ref(r);
      continue;
    }
    /* branch k where the predicate is true (if: k = 0) or the index is k */
    const Term *hit =
        is_if ? sel : compare(lw, op, sel, splat(lw, op, sel->type, k), "EQ");
    for (guint i = 0; hit && i < r->len; i++) {
      const Term *a = g_ptr_array_index(r, i),
                 *b = g_ptr_array_index(chosen, i);
      if (a->type != b->type)
        return lfail(lw, op->loc, "'%s': its branches return different types",
                     op->name);
      const Term *p = broadcast_scalar(lw, op, hit, a->type);
      const Term *c = select3(lw, op, p, a, b);
      if (!c)
        return FALSE;
      g_ptr_array_index(chosen, i) = (gpointer)c;
    }
    if (!hit)
      return FALSE;
  }
  for (guint i = 0; i < chosen->len; i++)
    g_ptr_array_add(out, g_ptr_array_index(chosen, i));
  return TRUE;
}

static gboolean lower_if(Lower *lw, const HloOp *op, Op pop,
                         const Term *const *x, int nx, GPtrArray *out) {
  (void)pop;
  if (nx != 1 || x[0]->type->rank != 0 || x[0]->type->dtype != DT_I1 ||
      op->regions->len != 2)
    return lfail(lw, op->loc, "'%s' takes an i1 predicate and two branches",
                 op->name);
  return lower_branches(lw, op, x[0], out);
}

static gboolean lower_case(Lower *lw, const HloOp *op, Op pop,
                           const Term *const *x, int nx, GPtrArray *out) {
  (void)pop;
  if (nx != 1 || x[0]->type->rank != 0 || x[0]->type->dtype != DT_I32 ||
      op->regions->len < 1)
    return lfail(lw, op->loc, "'%s' takes an i32 index and branches", op->name);
  return lower_branches(lw, op, x[0], out);
}

static gboolean lower_return(Lower *lw, const HloOp *op, Op pop,
                             const Term *const *x, int nx, GPtrArray *out) {
  return lower_identity(lw, op, pop, x, nx, out);
}

/* stablehlo.tuple (torch-xla's xm.get_stablehlo returns its results as
 * one): its elements, kept together under the tuple's name
 * (define_tuple) and used whole by return and get_tuple_element. */
static gboolean lower_tuple(Lower *lw, const HloOp *op, Op pop,
                            const Term *const *x, int nx, GPtrArray *out) {
  (void)lw;
  (void)op;
  (void)pop;
  for (int i = 0; i < nx; i++)
    g_ptr_array_add(out, (gpointer)x[i]);
  return TRUE;
}

static gboolean lower_get_tuple_element(Lower *lw, const HloOp *op, Op pop,
                                        const Term *const *x, int nx,
                                        GPtrArray *out) {
  (void)pop;
  int64_t i;
  if (!int_attr(lw, op, "index", &i))
    return FALSE;
  if (i < 0 || i >= nx)
    return lfail(lw, op->loc,
                 "'%s': element %" G_GINT64_FORMAT " of a tuple of %d",
                 op->name, i, nx);
  return one(out, x[i]);
}

static const struct {
  const char *name;
  Lowering lower;
  Op op;
  int arity;
} lowerings[] = {
#define X(name, lowering, op, arity) {name, lowering, op, arity},
#include "import/hlo_ops.def"
#undef X
};

/* 'op' lowered as operation 'name' of hlo_ops.def (a custom call that
 * stands for it), its arity checked. */
static gboolean lower_as(Lower *lw, const HloOp *op, const char *name,
                         const Term *const *x, int nx, GPtrArray *out) {
  gsize k = 0;
  while (k < G_N_ELEMENTS(lowerings) && strcmp(lowerings[k].name, name))
    k++;
  g_assert(k < G_N_ELEMENTS(lowerings)); /* hlo_custom_call_op found it */
  if (lowerings[k].arity >= 0 && nx != lowerings[k].arity)
    return lfail(lw, op->loc, "'@%s' (%s) takes %d operand%s, not %d",
                 name + strcspn(name, ".") + 1, name, lowerings[k].arity,
                 lowerings[k].arity == 1 ? "" : "s", nx);
  return lowerings[k].lower(lw, op, lowerings[k].op, x, nx, out);
}

/* ---------------------------------------------------------- functions */

static const Group *lookup(const Scope *sc, const char *name) {
  const Group *g = NULL;
  for (const Scope *s = sc; s && !g; s = s->outer)
    g = g_hash_table_lookup(s->values, name);
  return g;
}

/* The value use 'u' names in group 'g' (its name looked up). */
static const Term *value_in(Lower *lw, const Group *g, const HloUse *u) {
  if (!g) {
    lfail(lw, u->loc, "use of undefined value '%%%s'", u->name);
    return NULL;
  }
  if (u->index < 0 && g->count != 1) {
    lfail(lw, u->loc, "'%%%s' names %d values: write '%%%s#0' to '%%%s#%d'",
          u->name, g->count, u->name, u->name, g->count - 1);
    return NULL;
  }
  int k = u->index < 0 ? 0 : u->index;
  if (k >= g->count) {
    lfail(lw, u->loc, "'%%%s' has %d value%s; there is no '#%d'", u->name,
          g->count, g->count == 1 ? "" : "s", k);
    return NULL;
  }
  return g->terms[k];
}

static gboolean define(Lower *lw, Scope *sc, const HloDef *d,
                       const Term *const *terms) {
  if (g_hash_table_contains(sc->values, d->name))
    return lfail(lw, d->loc, "'%%%s' is defined twice", d->name);
  Group *g = g_new0(Group, 1);
  g->count = d->count;
  g->terms = g_memdup2(terms, sizeof(Term *) * (gsize)d->count);
  g_hash_table_insert(sc->values, g_strdup(d->name), g);
  return TRUE;
}

/* Lowers one operation: its operands, its terms, the types it wrote,
 * then its names and where it came from. */
/* The elements 'out' of tuple 'op' under its one name, checked against
 * its written tuple type. */
static gboolean define_tuple(Lower *lw, Scope *sc, const HloOp *op,
                             GPtrArray *out) {
  const HloType *wt = op->result_types->len == 1
                          ? g_ptr_array_index(op->result_types, 0)
                          : NULL;
  if (op->defs->len != 1 || g_array_index(op->defs, HloDef, 0).count != 1 ||
      !wt || !wt->elems || wt->elems->len != out->len)
    return lfail(lw, op->loc, "'%s' makes one tuple of its %u operands",
                 op->name, out->len);
  for (guint i = 0; i < out->len; i++) {
    const HloType *e = g_ptr_array_index(wt->elems, i);
    const Term *t = g_ptr_array_index(out, i);
    if (e->type != t->type) {
      g_autofree char *got = type_to_string(t->type);
      return lfail(lw, op->loc, "'%s': element %u is %s, not %s", op->name, i,
                   got, e->text);
    }
  }
  HloDef d = g_array_index(op->defs, HloDef, 0);
  d.count = (int)out->len;
  if (!define(lw, sc, &d, (const Term *const *)out->pdata))
    return FALSE;
  ((Group *)g_hash_table_lookup(sc->values, d.name))->tuple = TRUE;
  return TRUE;
}

static gboolean lower_op(Lower *lw, Scope *sc, const HloOp *op,
                         GPtrArray *returned) {
  g_autoptr(GPtrArray) x = g_ptr_array_new();
  for (guint i = 0; i < op->uses->len; i++) {
    const HloUse *u = &g_array_index(op->uses, HloUse, i);
    const Group *g = lookup(sc, u->name);
    if (g && g->tuple && u->index < 0) { /* return, get_tuple_element, tuple */
      for (int k = 0; k < g->count; k++)
        g_ptr_array_add(x, (gpointer)g->terms[k]);
      continue;
    }
    const Term *t = value_in(lw, g, u);
    if (!t)
      return FALSE;
    const HloType *want = i < op->operand_types->len
                              ? g_ptr_array_index(op->operand_types, i)
                              : NULL;
    /* a scalar from outside a comparator lowered pointwise (jax.export
     * moves a sort comparator's constants out of it) is the same at
     * every pair */
    if (want && want->type && lw->pointwise && t->type == want->type &&
        t->type->kind == TY_TENSOR && t->type->rank == 0 &&
        !(t = broadcast_scalar(lw, op, t, seen_type(lw, want->type))))
      return FALSE;
    if (want && want->type && seen_type(lw, want->type) != t->type) {
      g_autofree char *got = type_to_string(t->type);
      return lfail(lw, u->loc, "'%%%s' has type %s but '%s' says %s", u->name,
                   got, op->name, want->text);
    }
    g_ptr_array_add(x, (gpointer)t);
  }
  gsize k = 0;
  while (k < G_N_ELEMENTS(lowerings) && strcmp(lowerings[k].name, op->name))
    k++;
  g_assert(k < G_N_ELEMENTS(lowerings)); /* hlo_check_support passed it */
  gboolean ret = lowerings[k].lower == lower_return;
  int arity = lowerings[k].arity;
  if (arity >= 0 && (int)x->len != arity)
    return lfail(lw, op->loc, "'%s' takes %d operand%s, not %u", op->name,
                 arity, arity == 1 ? "" : "s", x->len);
  int want = 0;
  for (guint i = 0; i < op->defs->len; i++)
    want += g_array_index(op->defs, HloDef, i).count;
  if (!ret && (int)op->result_types->len != want)
    return lfail(lw, op->loc, "'%s' has %u result type%s but %d result%s named",
                 op->name, op->result_types->len,
                 op->result_types->len == 1 ? "" : "s", want,
                 want == 1 ? " is" : "s are");
  g_autoptr(GPtrArray) out = g_ptr_array_new();
  lw->scope = sc;
  if (!lowerings[k].lower(lw, op, lowerings[k].op,
                          (const Term *const *)x->pdata, (int)x->len, out))
    return FALSE;
  if (ret) {
    g_ptr_array_extend(returned, out, NULL, NULL);
    return TRUE;
  }
  if (lowerings[k].lower == lower_tuple)
    return define_tuple(lw, sc, op, out);
  if ((int)out->len != want)
    return lfail(lw, op->loc, "'%s' gives %u result%s; %d %s named", op->name,
                 out->len, out->len == 1 ? "" : "s", want,
                 want == 1 ? "is" : "are");
  for (guint i = 0; i < out->len; i++) {
    const Term *t = g_ptr_array_index(out, i);
    const HloType *wt = g_ptr_array_index(op->result_types, i);
    if (t->height > PARTIR_MAX_HEIGHT)
      return lfail(lw, op->loc,
                   "program is too deep (more than %d nested values)",
                   PARTIR_MAX_HEIGHT);
    if (seen_type(lw, wt->type) != t->type) {
      g_autofree char *got = type_to_string(t->type);
      return lfail(lw, op->loc, "'%s' computes %s but its result type says %s",
                   op->name, got, wt->text);
    }
  }
  int at = 0;
  g_autofree char *note = hlo_loc_describe(lw->file, op->where);
  for (guint i = 0; i < op->defs->len; i++) {
    const HloDef *d = &g_array_index(op->defs, HloDef, i);
    const Term *const *terms = (const Term *const *)out->pdata + at;
    if (!define(lw, sc, d, terms))
      return FALSE;
    for (int j = 0; j < d->count; j++) {
      g_autofree char *base = sanitize_name(d->name);
      g_autofree char *raw = !base ? NULL
                             : d->count == 1
                                 ? g_strdup(d->name)
                                 : g_strdup_printf("%s_%d", d->name, j);
      if (raw)
        name_value(lw, sc, terms[j], raw);
      if (note && terms[j]->kind == TM_OP &&
          !g_hash_table_contains(lw->m->notes, terms[j]))
        g_hash_table_insert(lw->m->notes, (gpointer)terms[j], g_strdup(note));
    }
    at += d->count;
  }
  return TRUE;
}

/* Lowers the body of 'fn' on argument terms 'args' into 'results' (the
 * returned values, checked against its result types). */
static gboolean lower_body(Lower *lw, const HloFunc *fn, const Scope *outer,
                           const Term *const *args, GPtrArray *results,
                           Loc call_at) {
  if (!fn->body)
    return lfail(lw, call_at, "'@%s' is declared without a body", fn->name);
  Scope sc = {.values = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                              (GDestroyNotify)group_free)};
  g_autofree char *prefix = outer && outer->prefix
                                ? g_strconcat(outer->prefix, ".", NULL)
                                : g_strdup("");
  sc.prefix = prefix;
  gboolean ok = TRUE;
  for (guint i = 0; ok && i < fn->args->len; i++) {
    const HloArg *a = g_ptr_array_index(fn->args, i);
    if (a->type && a->type->type && a->type->type != args[i]->type) {
      g_autofree char *got = type_to_string(args[i]->type);
      ok = lfail(lw, call_at,
                 "argument %u of '@%s' has type %s but the "
                 "function takes %s",
                 i + 1, fn->name, got, a->type->text);
      break;
    }
    HloDef d = {.name = a->name, .count = 1, .loc = a->loc};
    ok = define(lw, &sc, &d, &args[i]);
    if (outer) /* an inlined function's argument: a value of the caller */
      note_attrs(lw, HLO_ON_VALUE, -1, args[i], a->attrs);
  }
  const HloOp *last = NULL;
  gboolean returned = FALSE;
  for (guint i = 0; ok && i < fn->body->ops->len; i++) {
    last = g_ptr_array_index(fn->body->ops, i);
    if (returned)
      ok = lfail(lw, last->loc, "an operation after the return");
    else
      ok = lower_op(lw, &sc, last, results);
    returned = strcmp(last->name, "func.return") == 0 ||
               strcmp(last->name, "stablehlo.return") == 0;
  }
  g_hash_table_unref(sc.values);
  if (!ok)
    return FALSE;
  if (!last || (strcmp(last->name, "func.return") != 0 &&
                strcmp(last->name, "stablehlo.return") != 0))
    return lfail(lw, last ? last->loc : fn->body->loc,
                 "the body of '@%s' does not end with a return", fn->name);
  if (results->len != fn->result_types->len)
    return lfail(lw, last->loc,
                 "'@%s' returns %u value%s but its signature "
                 "has %u",
                 fn->name, results->len, results->len == 1 ? "" : "s",
                 fn->result_types->len);
  for (guint i = 0; i < results->len; i++) {
    const Term *t = g_ptr_array_index(results, i);
    const HloType *want = g_ptr_array_index(fn->result_types, i);
    if (want->type != t->type) {
      g_autofree char *got = type_to_string(t->type);
      return lfail(lw, last->loc,
                   "result %u of '@%s' has type %s but the signature says %s",
                   i + 1, fn->name, got, want->text);
    }
    if (i < fn->result_attrs->len)
      note_attrs(lw, outer ? HLO_ON_VALUE : HLO_ON_RESULT, outer ? -1 : (int)i,
                 t, g_ptr_array_index(fn->result_attrs, i));
  }
  return TRUE;
}

/* The function a program runs: @main, else the only public one, else
 * the only one. */
static const HloFunc *entry(Lower *lw) {
  const HloFunc *only_public = NULL;
  int publics = 0;
  for (guint i = 0; i < lw->file->funcs->len; i++) {
    const HloFunc *fn = g_ptr_array_index(lw->file->funcs, i);
    if (g_strcmp0(fn->name, "main") == 0)
      return fn;
    if (!fn->private_) {
      only_public = fn;
      publics++;
    }
  }
  if (publics == 1)
    return only_public;
  if (lw->file->funcs->len == 1)
    return g_ptr_array_index(lw->file->funcs, 0);
  const HloFunc *first = g_ptr_array_index(lw->file->funcs, 0);
  lfail(lw, first->loc, "%d public functions and none is '@main'", publics);
  return NULL;
}

void hlo_lowered_clear(HloLowered *l) {
  g_clear_pointer(&l->module, module_free);
  g_clear_pointer(&l->notes, g_ptr_array_unref);
  g_clear_pointer(&l->checks, g_array_unref);
}

/* Whether a note is on a value other than an argument or a result (a
 * sharding constraint). */
static gboolean notes_on_values(GPtrArray *notes) {
  for (guint i = 0; i < notes->len; i++)
    if (((HloNote *)g_ptr_array_index(notes, i))->site == HLO_ON_VALUE)
      return TRUE;
  return FALSE;
}

gboolean hlo_lower(const HloFile *f, HloLowered *res, Diag *diag) {
  *res = (HloLowered){0};
  g_autoptr(Module) m = module_new();
  Lower lw = {.file = f, .m = m, .diag = diag};
  lw.funcs = g_hash_table_new(g_str_hash, g_str_equal);
  lw.taken = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  lw.suffix = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  lw.memo = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                  (GDestroyNotify)g_ptr_array_unref);
  lw.notes = g_ptr_array_new_with_free_func(g_free);
  lw.checks = g_array_new(FALSE, TRUE, sizeof(HloCheck));
  lw.checked = g_ptr_array_new();
  for (guint i = 0; i < f->funcs->len; i++) {
    const HloFunc *fn = g_ptr_array_index(f->funcs, i);
    const HloFunc *old = g_hash_table_lookup(lw.funcs, fn->name);
    if (old) {
      lfail(&lw, fn->loc, "function '@%s' is defined twice", fn->name);
      diag_note(diag, old->loc, "first defined here");
      break;
    }
    g_hash_table_insert(lw.funcs, fn->name, (gpointer)fn);
  }
  const HloFunc *fn = lw.failed ? NULL : entry(&lw);
  Func *out = NULL;
  if (fn) {
    out = g_new0(Func, 1);
    /* MLIR's symbols take any bytes ("m/ain"), partir's names do not */
    out->name = sanitize_name(fn->name);
    if (!out->name)
      out->name = g_strdup("main");
    out->loc = fn->loc;
    out->nargs = (int)fn->args->len;
    out->arg_names = g_new0(char *, fn->args->len + 1);
    out->arg_types = g_new0(const Type *, MAX(fn->args->len, 1));
    g_autofree const Term **args = g_new0(const Term *, MAX(fn->args->len, 1));
    for (guint i = 0; i < fn->args->len; i++) {
      const HloArg *a = g_ptr_array_index(fn->args, i);
      const char *loc_name = arg_loc_name(f, a->where);
      g_autofree char *base = sanitize_name(loc_name ? loc_name : a->name);
      if (!base)
        base = g_strdup_printf("arg%u", i);
      out->arg_names[i] = unique_name(&lw, base);
      out->arg_types[i] = a->type->type;
      args[i] = term_arg((int)i, a->type->type);
      note_attrs(&lw, HLO_ON_ARG, (int)i, args[i], a->attrs);
    }
    g_autoptr(GPtrArray) results = g_ptr_array_new();
    if (lower_body(&lw, fn, NULL, args, results, fn->loc)) {
      /* the values the checks compare follow the function's own results */
      for (guint i = 0; i < lw.checks->len; i++) {
        HloCheck *c = &g_array_index(lw.checks, HloCheck, i);
        c->actual += (int)results->len;
        c->expected += (int)results->len;
      }
      g_ptr_array_extend(results, lw.checked, NULL, NULL);
      out->nresults = (int)results->len;
      out->result_types = g_new0(const Type *, MAX(results->len, 1));
      for (guint i = 0; i < results->len; i++)
        out->result_types[i] = ((const Term *)results->pdata[i])->type;
      if (out->nresults == 0)
        lfail(&lw, fn->loc, "function '@%s' returns nothing", fn->name);
      else
        out->body =
            term_tuple(out->nresults, (const Term *const *)results->pdata);
      if (!lw.failed && !notes_on_values(lw.notes)) {
        /* a constraint's value may go; the results' notes follow */
        out->body = hlo_unmerge(out->body, m->names);
        for (guint i = 0; i < lw.notes->len; i++) {
          HloNote *n = g_ptr_array_index(lw.notes, i);
          if (n->site == HLO_ON_RESULT)
            n->value = out->body->args[n->index];
        }
      }
      if (!lw.failed)
        read_aliasing(&lw, fn, out);
    }
  }
  g_hash_table_unref(lw.funcs);
  g_hash_table_unref(lw.taken);
  g_hash_table_unref(lw.suffix);
  g_hash_table_unref(lw.memo);
  g_ptr_array_unref(lw.checked);
  if (lw.failed || !out) {
    func_free(out);
    g_ptr_array_unref(lw.notes);
    g_array_unref(lw.checks);
    return FALSE;
  }
  g_ptr_array_add(m->funcs, out);
  res->module = g_steal_pointer(&m);
  res->notes = lw.notes;
  res->checks = lw.checks;
  return TRUE;
}
