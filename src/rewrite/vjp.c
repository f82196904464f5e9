/* vjp.c — vector-Jacobian product rules: their syntax in rule files and
 * their application to an operator's term.
 *
 *   vjp div(x, y) -> z, dz: x = div(dz, y), y = neg(mul(dz, div(z, y)))
 *
 * The right sides use the operators and attributes of the program text
 * (compare(x, 0) {direction = GT}).  A number is a constant of the type
 * its neighbours have: the operands beside it that share the operator's
 * result type (every operand of add, select's two choices), else the
 * type the enclosing call expects there, else the type of the operand
 * whose cotangent the expression is.  That keeps the rules free of
 * shapes: one rule serves every rank and element type.
 *
 * Load-time checks here (file:line:col): syntax, unknown operators and
 * builtin kinds, operand counts, unbound names, an operand listed twice,
 * a second vjp for one operator.  Types are checked when the pipeline
 * loads the rules (check_vjp_types, on random instances of each
 * operator), meaning by check-rules (finite differences in f64).
 */
#include "rewrite/rewrite.h"

#include <string.h>

static void expr_free(VjpExpr *e) {
  if (!e)
    return;
  for (int i = 0; i < e->nargs; i++)
    expr_free(e->args[i]);
  g_free(e->args);
  g_free(e);
}

void vjp_free(Vjp *v) {
  if (!v)
    return;
  for (int i = 0; i < SPEC_MAX_OPERANDS; i++)
    expr_free(v->ct[i]);
  g_free(v->builtin);
  g_free(v);
}

/* ------------------------------------------------------------- parsing */

typedef struct VjpParser {
  Cursor *c;
  Vjp *v;
  int depth;
} VjpParser;

static int name_index(const Vjp *v, const char *name) {
  for (int i = 0; i < v->nargs + 2; i++)
    if (v->names[i] == name)
      return i;
  return -1;
}

static VjpExpr *parse_expr(VjpParser *p);

static VjpExpr *expr_new(VjpExprKind kind, Loc loc) {
  VjpExpr *e = g_new0(VjpExpr, 1);
  e->kind = kind;
  e->loc = loc;
  return e;
}

/* OP '(' expr, ... ')' ['{' attrs '}'] */
static VjpExpr *parse_call(VjpParser *p, Op op, Loc at) {
  Cursor *c = p->c;
  cursor_next(c); /* the name */
  cursor_next(c); /* '(' */
  VjpExpr *e = expr_new(VX_OP, at);
  e->op = op;
  e->attrs = attrs_empty();
  GPtrArray *args = g_ptr_array_new();
  while (!c->failed && !token_punct(&c->tok, ')')) {
    if (args->len > 0 && !cursor_punct(c, ','))
      break;
    VjpExpr *a = parse_expr(p);
    if (a)
      g_ptr_array_add(args, a);
  }
  e->nargs = (int)args->len;
  e->args = (VjpExpr **)g_ptr_array_free(args, FALSE);
  if (!c->failed)
    cursor_next(c); /* ')' */
  if (!c->failed && token_punct(&c->tok, '{'))
    cursor_attrs(c, &e->attrs);
  if (!c->failed && op_arity(op) >= 0 && e->nargs != op_arity(op))
    cursor_fail(c, at, "'%s' takes %d operands, not %d", op_name(op),
                op_arity(op), e->nargs);
  if (!c->failed && op_arity(op) == 0)
    cursor_fail(c, at, "'%s' needs a written type: write a number instead",
                op_name(op));
  if (c->failed) {
    expr_free(e);
    return NULL;
  }
  return e;
}

static VjpExpr *parse_expr(VjpParser *p) {
  Cursor *c = p->c;
  if (c->failed)
    return NULL;
  Loc at = c->tok.loc;
  if (++p->depth > PARTIR_MAX_DEPTH) {
    cursor_fail(c, at, "expression nests deeper than %d", PARTIR_MAX_DEPTH);
    return NULL;
  }
  VjpExpr *e = NULL;
  if (c->tok.kind == TK_INT || c->tok.kind == TK_FLOAT) {
    e = expr_new(VX_NUMBER, at);
    e->value = c->tok.kind == TK_INT ? (double)c->tok.i : c->tok.f;
    cursor_next(c);
  } else if (c->tok.kind == TK_IDENT) {
    Op op;
    if (op_from_name(c->tok.start, c->tok.len, &op) &&
        cursor_peek_punct(c, '(')) {
      e = parse_call(p, op, at);
    } else {
      const char *name = cursor_name(c, "an expression");
      int k = name ? name_index(p->v, name) : -1;
      if (name && k < 0)
        cursor_fail(c, at,
                    "'%s' is not an operand, the result or its "
                    "cotangent",
                    name);
      else if (name) {
        e = expr_new(VX_NAME, at);
        e->name = k;
      }
    }
  } else {
    cursor_expected(c, "an expression (a call, a name or a number)");
  }
  p->depth--;
  return e;
}

/* '(' x, y ')' '->' z ',' dz ':' then 'x = expr' separated by ',' */
static gboolean parse_written(VjpParser *p) {
  Cursor *c = p->c;
  Vjp *v = p->v;
  int arity = op_arity(v->op);
  Loc open = c->tok.loc;
  if (arity < 0)
    return cursor_fail(c, open,
                       "'%s' takes any number of operands: its vjp is "
                       "'builtin'",
                       op_name(v->op));
  if (!cursor_punct(c, '('))
    return FALSE;
  while (!c->failed && !token_punct(&c->tok, ')')) {
    if (v->nargs > 0 && !cursor_punct(c, ','))
      return FALSE;
    Loc at = c->tok.loc;
    const char *n = cursor_name(c, "an operand name");
    if (!n)
      return FALSE;
    if (name_index(v, n) >= 0)
      return cursor_fail(c, at, "'%s' is named twice", n);
    if (v->nargs == arity)
      return cursor_fail(c, at, "'%s' takes %d operands", op_name(v->op),
                         arity);
    v->names[v->nargs++] = n;
  }
  cursor_next(c); /* ')' */
  if (!c->failed && v->nargs != arity)
    return cursor_fail(c, open, "'%s' takes %d operands, not %d",
                       op_name(v->op), arity, v->nargs);
  if (c->failed)
    return FALSE;
  if (c->tok.kind != TK_ARROW)
    return cursor_expected(c, "'->'");
  cursor_next(c);
  for (int k = 0; k < 2; k++) {
    Loc at = c->tok.loc;
    const char *n =
        cursor_name(c, k ? "the cotangent's name" : "the result's name");
    if (!n || (k == 0 && !cursor_punct(c, ',')))
      return FALSE;
    if (name_index(v, n) >= 0)
      return cursor_fail(c, at, "'%s' is named twice", n);
    v->names[v->nargs + k] = n;
  }
  if (!cursor_punct(c, ':'))
    return FALSE;
  do {
    Loc at = c->tok.loc;
    const char *n = cursor_name(c, "an operand name");
    if (!n)
      return FALSE;
    int k = name_index(v, n);
    if (k < 0 || k >= v->nargs)
      return cursor_fail(c, at, "'%s' is not an operand of '%s'", n,
                         op_name(v->op));
    if (v->ct[k])
      return cursor_fail(c, at, "the cotangent of '%s' is given twice", n);
    if (!cursor_punct(c, '='))
      return FALSE;
    v->ct[k] = parse_expr(p);
    if (!v->ct[k])
      return FALSE;
  } while (token_punct(&c->tok, ',') && (cursor_next(c), !c->failed));
  return !c->failed;
}

gboolean vjp_parse(Cursor *c, RuleSet *rs, const Source *src, Loc at) {
  cursor_next(c); /* 'vjp' */
  Loc name_at = c->tok.loc;
  if (c->tok.kind != TK_IDENT)
    return cursor_expected(c, "an operator name");
  Op op;
  if (!op_from_name(c->tok.start, c->tok.len, &op)) {
    g_autofree char *n = token_name(&c->tok);
    return cursor_fail(c, name_at, "unknown operator '%s'", n);
  }
  cursor_next(c);
  Vjp *v = g_new0(Vjp, 1);
  v->op = op;
  v->src = src;
  v->loc = at;
  VjpParser p = {.c = c, .v = v};
  if (c->tok.kind == TK_ARROW) {
    cursor_next(c);
    Loc ka = c->tok.loc;
    if (token_is(&c->tok, "zero")) {
      cursor_next(c);
      v->kind = VJP_ZERO;
    } else if (cursor_word(c, "builtin")) {
      const char *kind = cursor_name(c, "a builtin kind");
      g_autoptr(Diag) why = diag_new(NULL);
      if (kind && !vjp_builtin_known(kind, op, why))
        cursor_fail(c, ka, "%s", diag_text(why));
      v->kind = VJP_BUILTIN;
      v->builtin = g_strdup(kind);
    }
  } else {
    v->kind = VJP_WRITTEN;
    parse_written(&p);
  }
  if (!c->failed && rs->vjps[op])
    cursor_fail(c, name_at, "operator '%s' already has a vjp (%s:%d)",
                op_name(op), rs->vjps[op]->src->name, rs->vjps[op]->loc.line);
  if (c->failed) {
    vjp_free(v);
    return FALSE;
  }
  rs->vjps[op] = v;
  return TRUE;
}

/* -------------------------------------------------------- instantiation */

/* Whether operand 'i' of 'op' has the operator's result type. */
static gboolean shares_result_type(Op op, int i) {
  switch (op) {
  case OP_SELECT:
    return i > 0;
  case OP_ADD ... OP_REM:
  case OP_NEG ... OP_ROUND_AWAY:
    return TRUE;
  default:
    return FALSE;
  }
}

/* Whether operands 'i' and 'j' of 'op' have one type. */
static gboolean same_type(Op op, int i, int j) {
  return op == OP_COMPARE ||
         (shares_result_type(op, i) && shares_result_type(op, j));
}

typedef struct Inst {
  const Term *t;  /* the forward application */
  const Term *dz; /* its result's cotangent */
  Diag *err;
} Inst;

static const Term *build(Inst *in, const VjpExpr *e, const Type *expect);

static const Term *number(Inst *in, const VjpExpr *e, const Type *type) {
  if (!type) {
    diag_reason(in->err,
                "the number %g has no operand beside it to take its type "
                "from",
                e->value);
    return NULL;
  }
  return term_splat(e->value, type, in->err);
}

static const Term *call(Inst *in, const VjpExpr *e, const Type *expect) {
  const Term *args[SPEC_MAX_OPERANDS] = {0};
  if (e->nargs > SPEC_MAX_OPERANDS) {
    diag_reason(in->err, "'%s' with more than %d operands", op_name(e->op),
                SPEC_MAX_OPERANDS);
    return NULL;
  }
  /* names and calls first, numbers last: a number takes the type of an
   * operand beside it */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < e->nargs; i++) {
      if ((e->args[i]->kind == VX_NUMBER) != (pass == 1))
        continue;
      const Type *want = shares_result_type(e->op, i) ? expect : NULL;
      for (int j = 0; j < e->nargs; j++)
        if (j != i && args[j] && same_type(e->op, i, j)) {
          want = args[j]->type;
          break;
        }
      if (!(args[i] = build(in, e->args[i], want)))
        return NULL;
    }
  return term_op(e->op, e->nargs, args, e->attrs, NULL, in->err);
}

static const Term *build(Inst *in, const VjpExpr *e, const Type *expect) {
  switch (e->kind) {
  case VX_NUMBER:
    return number(in, e, expect);
  case VX_NAME:
    if (e->name < in->t->nargs)
      return in->t->args[e->name];
    return e->name == in->t->nargs ? in->t : in->dz;
  case VX_OP:
    return call(in, e, expect);
  }
  return NULL;
}

const Term *vjp_cotangent(const RuleSet *rs, const Term *t, int i,
                          const Term *dz, Diag *err) {
  const Type *xt = t->args[i]->type;
  if (!dtype_is_float(xt->dtype))
    return NULL;
  const Vjp *v = rs->vjps[t->op];
  if (!v) {
    diag_reason(err, "'%s' has no vjp rule (rules/grad.rules)", op_name(t->op));
    return NULL;
  }
  const Term *ct = NULL;
  switch (v->kind) {
  case VJP_ZERO:
    return NULL;
  case VJP_BUILTIN:
    ct = vjp_builtin(v->builtin, t, i, dz, err);
    break;
  case VJP_WRITTEN: {
    if (!v->ct[i])
      return NULL;
    Inst in = {t, dz, err};
    ct = build(&in, v->ct[i], xt);
    break;
  }
  }
  if (ct && ct->type != xt) {
    g_autofree char *got = type_to_string(ct->type);
    g_autofree char *want = type_to_string(xt);
    diag_reason(err,
                "the vjp of '%s' (%s:%d) gives operand %d a cotangent of "
                "type %s, not %s",
                op_name(t->op), v->src->name, v->loc.line, i, got, want);
    return NULL;
  }
  return ct;
}
