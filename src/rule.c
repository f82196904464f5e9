/* rule.c — rule files: operator specs, written rules, derived rules.
 *
 * A rule file (grammar in docs/rules.md) holds three kinds of item:
 *
 *   include "other.rules"
 *   op matmul(x[i,k], y[k,j]) -> [i,j]      tiling specification
 *   rule fuse [propagate]:                  a rewrite rule
 *     slice d (tile d (\r:range<n,w> -> e))[s:range<n,w>]  ~~>  e{s/r}
 *
 * Patterns use the talk's expression form.  Names bound by the left side
 * are pattern variables; integer variables (dims, range sizes) and axis
 * variables on the right that the left side does not bind are parameters
 * the caller supplies (arg-tile's d and w).  '<~~>' gives two rules, NAME
 * and NAME-rev.
 *
 * From every 'op' declaration the loader derives the operator's tiling
 * rules (OP-tile-D, OP-sum[-K]) and slice propagation rules (slice-OP-D).
 *
 * Load-time checks, each reported as file:line:col with the source line:
 * syntax, unknown operators or builtin kinds, right-side variables the
 * left side does not bind, substitutions of unbound binders, duplicate
 * rule names and duplicate op declarations.  A file with any error loads
 * nothing.  Type preservation and meaning are checked by check-rules
 * (checkrules.c), which instantiates every rule.
 */
#include "rule.h"

#include "lex.h"

#include <string.h>

typedef struct RuleParser {
  Lexer lx;
  Token tok;
  Diag *diag;
  RuleSet *rs;
  const Source *src;
  gboolean failed;
  int depth;
  /* binders in scope while parsing one side */
  const char *scope[PARTIR_MAX_REGIONS];
  int nscope;
  gsize prev_end;   /* where the last consumed token ended */
  GString *errors;  /* messages without a source position of this file */
} RuleParser;

static void rnext(RuleParser *p) {
  if (p->tok.start)
    p->prev_end = (gsize)(p->tok.start - p->src->text) + p->tok.len;
  lex_next(&p->lx, &p->tok);
  if (p->tok.kind == TK_ERROR)
    p->failed = TRUE;
}

static gboolean rfail(RuleParser *p, Loc loc, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);
static gboolean rfail(RuleParser *p, Loc loc, const char *fmt, ...) {
  if (!p->failed) {
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    diag_error(p->diag, loc, "%s", msg);
  }
  p->failed = TRUE;
  return FALSE;
}

static gboolean rexpected(RuleParser *p, const char *what) {
  g_autofree char *got = token_describe(&p->tok);
  return rfail(p, p->tok.loc, "expected %s, got %s", what, got);
}

static gboolean rpunct(RuleParser *p, char c) {
  if (p->failed)
    return FALSE;
  if (!token_punct(&p->tok, c)) {
    char what[4] = {'\'', c, '\'', 0};
    return rexpected(p, what);
  }
  rnext(p);
  return !p->failed;
}

static gboolean rkeyword(RuleParser *p, const char *kw) {
  if (p->failed)
    return FALSE;
  if (!token_is(&p->tok, kw)) {
    g_autofree char *what = g_strdup_printf("'%s'", kw);
    return rexpected(p, what);
  }
  rnext(p);
  return !p->failed;
}

static const char *rname(RuleParser *p, const char *what) {
  if (p->failed)
    return NULL;
  if (p->tok.kind != TK_IDENT) {
    rexpected(p, what);
    return NULL;
  }
  g_autofree char *n = token_name(&p->tok);
  rnext(p);
  return g_intern_string(n);
}

/* ------------------------------------------------------------- patterns */

static Pat *pat_new(PatKind kind, Loc loc) {
  Pat *pt = g_new0(Pat, 1);
  pt->kind = kind;
  pt->loc = loc;
  return pt;
}

static void pat_free(Pat *pt) {
  if (!pt)
    return;
  for (int i = 0; i < pt->nargs; i++)
    pat_free(pt->args[i]);
  g_free(pt->args);
  g_free(pt->attr_keys);
  g_free(pt->attr_vals);
  g_free(pt);
}

static void pat_add(Pat *pt, Pat *arg) {
  pt->args = g_renew(Pat *, pt->args, (gsize)pt->nargs + 1);
  pt->args[pt->nargs++] = arg;
}

/* INT or NAME: a literal or an integer variable. */
static gboolean parse_intref(RuleParser *p, IntRef *r, const char *what) {
  r->present = TRUE;
  if (p->tok.kind == TK_INT) {
    r->value = p->tok.i;
    r->var = NULL;
    rnext(p);
    return !p->failed;
  }
  r->var = rname(p, what);
  return r->var != NULL;
}

/* [':' 'range' '<' n ',' w '>'] */
static gboolean parse_range_annot(RuleParser *p, IntRef *n, IntRef *w) {
  if (!token_punct(&p->tok, ':'))
    return TRUE;
  rnext(p);
  return rkeyword(p, "range") && rpunct(p, '<') &&
         parse_intref(p, n, "the range size") && rpunct(p, ',') &&
         parse_intref(p, w, "the range width") && rpunct(p, '>');
}

static gboolean in_scope(RuleParser *p, const char *name) {
  for (int i = 0; i < p->nscope; i++)
    if (p->scope[i] == name)
      return TRUE;
  return FALSE;
}

static Pat *parse_pat(RuleParser *p);

/* NAME, a binder of the rule or a variable, with an optional {s/r}. */
static Pat *parse_name_pat(RuleParser *p) {
  Loc at = p->tok.loc;
  const char *name = rname(p, "a pattern");
  if (!name)
    return NULL;
  Pat *pt = pat_new(in_scope(p, name) ? PT_BIND : PT_VAR, at);
  pt->name = name;
  if (!token_punct(&p->tok, '{'))
    return pt;
  /* e{s/r} */
  Loc sub_at = p->tok.loc;
  rnext(p);
  Loc s_at = p->tok.loc;
  const char *s = rname(p, "the substituted value");
  if (!s || !rpunct(p, '/')) {
    pat_free(pt);
    return NULL;
  }
  const char *r = rname(p, "the binder to replace");
  if (!r || !rpunct(p, '}')) {
    pat_free(pt);
    return NULL;
  }
  Pat *sub = pat_new(PT_SUBST, sub_at);
  sub->name = r;
  pat_add(sub, pt);
  Pat *sp = pat_new(in_scope(p, s) ? PT_BIND : PT_VAR, s_at);
  sp->name = s;
  pat_add(sub, sp);
  return sub;
}

/* '{' key '=' (INT | NAME) (',' ...)* '}' after an operator pattern */
static void parse_attr_pats(RuleParser *p, Pat *pt) {
  rnext(p); /* '{' */
  while (!p->failed && !token_punct(&p->tok, '}')) {
    if (pt->nattrs > 0 && !rpunct(p, ','))
      return;
    Loc ka = p->tok.loc;
    const char *key = rname(p, "an attribute name");
    if (!key || !rpunct(p, '='))
      return;
    for (int i = 0; i < pt->nattrs; i++)
      if (pt->attr_keys[i] == key) {
        rfail(p, ka, "attribute '%s' is written twice", key);
        return;
      }
    int i = pt->nattrs++;
    pt->attr_keys = g_renew(const char *, pt->attr_keys, (gsize)pt->nattrs);
    pt->attr_vals = g_renew(IntRef, pt->attr_vals, (gsize)pt->nattrs);
    pt->attr_keys[i] = key;
    memset(&pt->attr_vals[i], 0, sizeof(IntRef));
    if (!parse_intref(p, &pt->attr_vals[i], "an integer or a variable"))
      return;
  }
  rpunct(p, '}');
  /* sorted by key, as interned attributes are */
  for (int i = 1; i < pt->nattrs; i++)
    for (int j = i; j > 0 && strcmp(pt->attr_keys[j - 1], pt->attr_keys[j]) > 0;
         j--) {
      const char *k = pt->attr_keys[j];
      pt->attr_keys[j] = pt->attr_keys[j - 1];
      pt->attr_keys[j - 1] = k;
      IntRef v = pt->attr_vals[j];
      pt->attr_vals[j] = pt->attr_vals[j - 1];
      pt->attr_vals[j - 1] = v;
    }
}

/* (\r[:range<n,w>][@a] -> p) for tile and sum */
static gboolean parse_binder_body(RuleParser *p, Pat *pt) {
  if (!rpunct(p, '(') || !rpunct(p, '\\'))
    return FALSE;
  pt->name = rname(p, "a binder name");
  if (!pt->name || !parse_range_annot(p, &pt->n, &pt->w))
    return FALSE;
  if (p->tok.kind == TK_SYMBOL) {
    g_autofree char *a = token_name(&p->tok);
    pt->axis = g_intern_string(a);
    rnext(p);
  }
  if (p->tok.kind != TK_ARROW)
    return rexpected(p, "'->'");
  rnext(p);
  if (p->nscope == PARTIR_MAX_REGIONS)
    return rfail(p, pt->loc, "binders nest too deeply");
  if (in_scope(p, pt->name))
    return rfail(p, pt->loc, "binder '%s' shadows another of the same name",
                 pt->name);
  p->scope[p->nscope++] = pt->name;
  Pat *body = parse_pat(p);
  p->nscope--;
  if (!body)
    return FALSE;
  pat_add(pt, body);
  return rpunct(p, ')');
}

static Pat *parse_pat(RuleParser *p) {
  if (p->failed)
    return NULL;
  if (++p->depth > PARTIR_MAX_DEPTH) {
    rfail(p, p->tok.loc, "pattern nests deeper than %d", PARTIR_MAX_DEPTH);
    return NULL;
  }
  Loc at = p->tok.loc;
  Pat *pt = NULL;
  if (token_punct(&p->tok, '(')) {
    rnext(p);
    pt = parse_pat(p);
    if (pt && !rpunct(p, ')')) {
      pat_free(pt);
      pt = NULL;
    }
  } else if (token_is(&p->tok, "slice")) {
    rnext(p);
    pt = pat_new(PT_SLICE, at);
    Pat *x = NULL;
    if (parse_intref(p, &pt->dim, "the sliced dimension"))
      x = parse_pat(p);
    if (x) {
      pat_add(pt, x);
      Loc ia = p->tok.loc;
      const char *idx = NULL;
      if (rpunct(p, '['))
        idx = rname(p, "a range value");
      if (idx) {
        Pat *ip = pat_new(in_scope(p, idx) ? PT_BIND : PT_VAR, ia);
        ip->name = idx;
        pat_add(pt, ip);
        if (!parse_range_annot(p, &pt->n, &pt->w) || !rpunct(p, ']'))
          p->failed = TRUE;
      }
    }
  } else if (token_is(&p->tok, "tile") || token_is(&p->tok, "sum")) {
    gboolean tile = token_is(&p->tok, "tile");
    rnext(p);
    pt = pat_new(tile ? PT_TILE : PT_SUM, at);
    if (tile && !parse_intref(p, &pt->dim, "the tiled dimension"))
      p->failed = TRUE;
    else
      parse_binder_body(p, pt);
  } else if (p->tok.kind == TK_IDENT) {
    Op op;
    gsize save = p->lx.pos;
    int line = p->lx.line;
    gsize line_start = p->lx.line_start;
    if (op_from_name(p->tok.start, p->tok.len, &op)) {
      /* an operator only when '(' follows */
      Token peeked = {0};
      lex_next(&p->lx, &peeked);
      gboolean call = token_punct(&peeked, '(');
      token_clear(&peeked);
      p->lx.pos = save;
      p->lx.line = line;
      p->lx.line_start = line_start;
      if (call) {
        rnext(p); /* name */
        rnext(p); /* '(' */
        pt = pat_new(PT_OP, at);
        pt->op = op;
        while (!p->failed && !token_punct(&p->tok, ')')) {
          if (pt->nargs > 0 && !rpunct(p, ','))
            break;
          Pat *a = parse_pat(p);
          if (a)
            pat_add(pt, a);
        }
        if (!p->failed)
          rnext(p);
        if (!p->failed && token_punct(&p->tok, '{'))
          parse_attr_pats(p, pt);
        if (!p->failed && op_arity(op) >= 0 && pt->nargs != op_arity(op))
          rfail(p, at, "'%s' takes %d operands, the pattern gives %d",
                op_name(op), op_arity(op), pt->nargs);
      }
    }
    if (!pt)
      pt = parse_name_pat(p);
  } else {
    rexpected(p, "a pattern");
  }
  p->depth--;
  if (p->failed) {
    pat_free(pt);
    return NULL;
  }
  return pt;
}

/* ------------------------------------------------------------- op specs */

static gboolean parse_op_spec(RuleParser *p, Loc at) {
  Loc name_at = p->tok.loc;
  if (p->tok.kind != TK_IDENT)
    return rexpected(p, "an operator name");
  Op op;
  if (!op_from_name(p->tok.start, p->tok.len, &op)) {
    g_autofree char *n = token_name(&p->tok);
    return rfail(p, name_at, "unknown operator '%s'", n);
  }
  rnext(p);
  OpSpec *os = g_new0(OpSpec, 1);
  os->op = op;
  os->origin = g_strdup_printf("%s:%d", p->src->name, at.line);
  const char *index_names[PARTIR_MAX_RANK * 2];
  gboolean star = FALSE, indexed = FALSE;
  if (!rpunct(p, '('))
    goto fail;
  while (!p->failed && !token_punct(&p->tok, ')')) {
    if (os->nargs > 0 && !rpunct(p, ','))
      goto fail;
    if (os->nargs == SPEC_MAX_OPERANDS) {
      rfail(p, p->tok.loc, "too many operands");
      goto fail;
    }
    if (!rname(p, "an operand name"))
      goto fail;
    int i = os->nargs++;
    if (!token_punct(&p->tok, '['))
      continue;
    rnext(p);
    if (token_punct(&p->tok, '*')) {
      star = TRUE;
      rnext(p);
    } else {
      indexed = TRUE;
      while (!p->failed && !token_punct(&p->tok, ']')) {
        if (os->arg_rank[i] > 0 && !rpunct(p, ','))
          goto fail;
        Loc ia = p->tok.loc;
        const char *ix = rname(p, "an index name");
        if (!ix)
          goto fail;
        if (os->arg_rank[i] == PARTIR_MAX_RANK) {
          rfail(p, ia, "rank exceeds %d", PARTIR_MAX_RANK);
          goto fail;
        }
        int id = -1;
        for (int k = 0; k < os->nindices; k++)
          if (index_names[k] == ix)
            id = k;
        if (id < 0) {
          if (os->nindices == (int)G_N_ELEMENTS(index_names)) {
            rfail(p, ia, "too many index names");
            goto fail;
          }
          id = os->nindices;
          index_names[os->nindices++] = ix;
        }
        os->arg_index[i][os->arg_rank[i]++] = id;
      }
    }
    if (!rpunct(p, ']'))
      goto fail;
  }
  if (!rpunct(p, ')'))
    goto fail;
  if (p->tok.kind != TK_ARROW) {
    rexpected(p, "'->'");
    goto fail;
  }
  rnext(p);
  if (token_is(&p->tok, "builtin")) {
    rnext(p);
    Loc ka = p->tok.loc;
    const char *kind = rname(p, "a builtin kind");
    if (!kind)
      goto fail;
    g_autoptr(GString) why = g_string_new(NULL);
    if (!spec_builtin_known(kind, op, why)) {
      rfail(p, ka, "%s", why->str);
      goto fail;
    }
    os->kind = SPEC_BUILTIN;
    os->builtin = g_strdup(kind);
  } else {
    if (!rpunct(p, '['))
      goto fail;
    if (token_punct(&p->tok, '*')) {
      rnext(p);
      if (!star || indexed) {
        rfail(p, at, "'[*]' results need '[*]' operands");
        goto fail;
      }
      os->kind = SPEC_ELEMENTWISE;
    } else {
      if (star) {
        rfail(p, at, "'[*]' operands need a '[*]' result");
        goto fail;
      }
      os->kind = SPEC_INDEXED;
      while (!p->failed && !token_punct(&p->tok, ']')) {
        if (os->out_rank > 0 && !rpunct(p, ','))
          goto fail;
        Loc ia = p->tok.loc;
        const char *ix = rname(p, "an index name");
        if (!ix)
          goto fail;
        int id = -1;
        for (int k = 0; k < os->nindices; k++)
          if (index_names[k] == ix)
            id = k;
        if (id < 0) {
          rfail(p, ia, "result index '%s' appears in no operand", ix);
          goto fail;
        }
        if (os->out_rank == PARTIR_MAX_RANK) {
          rfail(p, ia, "rank exceeds %d", PARTIR_MAX_RANK);
          goto fail;
        }
        os->out_index[os->out_rank++] = id;
      }
    }
    if (!rpunct(p, ']'))
      goto fail;
  }
  if (os->kind == SPEC_INDEXED && os->nindices - os->out_rank > PARTIR_MAX_RANK) {
    rfail(p, at, "more than %d reduction indices", PARTIR_MAX_RANK);
    goto fail;
  }
  if (p->rs->specs[op]) {
    rfail(p, name_at, "operator '%s' already has a tiling specification (%s)",
          op_name(op), p->rs->specs[op]->origin);
    goto fail;
  }
  p->rs->specs[op] = os;
  return TRUE;
fail:
  g_free(os->origin);
  g_free(os->builtin);
  g_free(os);
  return FALSE;
}

/* ---------------------------------------------------------------- rules */

static void rule_free(Rule *r) {
  if (!r)
    return;
  g_free(r->name);
  g_free(r->origin);
  g_free(r->text);
  g_free(r->where);
  g_free(r->srcline);
  /* a two-way rule's reverse shares its patterns with the forward one */
  if (!r->borrowed) {
    pat_free(r->lhs);
    pat_free(r->rhs);
  }
  g_free(r->conds);
  g_free(r);
}

/* Adds 'r' to the set, taking it (freed when refused). */
static gboolean add_rule(RuleParser *p, Rule *r, Loc at) {
  Rule *old = g_hash_table_lookup(p->rs->by_name, r->name);
  if (old && r->kind != RULE_PATTERN && old->where) {
    /* a written rule took a derived rule's name: point at the written one */
    g_string_append_printf(p->errors,
                           "%s: error: rule '%s' has the name of a rule "
                           "derived from op %s\n  %s\n",
                           old->where, r->name, op_name(r->op), old->srcline);
    p->failed = TRUE;
    rule_free(r);
    return FALSE;
  }
  if (old) {
    rfail(p, at, "rule '%s' is defined twice (first at %s)", r->name,
          old->origin);
    rule_free(r);
    return FALSE;
  }
  g_ptr_array_add(p->rs->rules, r);
  g_hash_table_insert(p->rs->by_name, r->name, r);
  return TRUE;
}

/* Names bound by a pattern: term variables, int variables, axis
 * variables. */
typedef struct Names {
  const char *terms[RULE_MAX_VARS * 2];
  int nterms;
  const char *ints[RULE_MAX_VARS * 2];
  int nints;
  const char *binders[RULE_MAX_VARS * 2];
  int nbinders;
} Names;

static gboolean has(const char *const *xs, int n, const char *x) {
  for (int i = 0; i < n; i++)
    if (xs[i] == x)
      return TRUE;
  return FALSE;
}

static void add_name(const char **xs, int *n, const char *x) {
  if (x && !has(xs, *n, x) && *n < RULE_MAX_VARS * 2)
    xs[(*n)++] = x;
}

static void collect(const Pat *pt, Names *nm) {
  switch (pt->kind) {
  case PT_VAR:
    add_name(nm->terms, &nm->nterms, pt->name);
    break;
  case PT_TILE:
  case PT_SUM:
    add_name(nm->binders, &nm->nbinders, pt->name);
    add_name(nm->ints, &nm->nints, pt->axis);
    break;
  default:
    break;
  }
  add_name(nm->ints, &nm->nints, pt->dim.var);
  add_name(nm->ints, &nm->nints, pt->n.var);
  add_name(nm->ints, &nm->nints, pt->w.var);
  for (int i = 0; i < pt->nattrs; i++)
    add_name(nm->ints, &nm->nints, pt->attr_vals[i].var);
  for (int i = 0; i < pt->nargs; i++)
    collect(pt->args[i], nm);
}

/* Right-side checks: term variables bound on the left; substitutions
 * replace a binder the left side binds.  Unbound int/axis variables
 * become parameters. */
static gboolean check_rhs(RuleParser *p, Rule *r, const Pat *pt,
                          const Names *lhs, const Names *bound_ints) {
  switch (pt->kind) {
  case PT_VAR:
    if (!has(lhs->terms, lhs->nterms, pt->name))
      return rfail(p, pt->loc,
                   "'%s' on the right side is not bound by the left side",
                   pt->name);
    break;
  case PT_SUBST:
    if (pt->args[0]->kind != PT_VAR)
      return rfail(p, pt->loc, "only a variable can take a substitution");
    if (!has(lhs->binders, lhs->nbinders, pt->name))
      return rfail(p, pt->loc,
                   "'%s' in the substitution is not a binder of the left side",
                   pt->name);
    break;
  case PT_OP:
    if (op_takes_written_type(pt->op) ||
        (op_needs_attrs(pt->op) && pt->nattrs == 0))
      return rfail(p, pt->loc, "'%s' cannot be built by a rule without its "
                               "%s",
                   op_name(pt->op),
                   op_takes_written_type(pt->op) ? "written result type"
                                                 : "attributes");
    for (int i = 0; i < pt->nattrs; i++) {
      const char *v = pt->attr_vals[i].var;
      if (v && !has(bound_ints->ints, bound_ints->nints, v))
        return rfail(p, pt->loc,
                     "attribute variable '%s' on the right side is not bound "
                     "by the left side",
                     v);
    }
    break;
  default:
    break;
  }
  const char *ints[4] = {pt->dim.var, pt->n.var, pt->w.var,
                         pt->kind == PT_TILE || pt->kind == PT_SUM ? pt->axis
                                                                   : NULL};
  for (int i = 0; i < 4; i++)
    if (ints[i] && !has(bound_ints->ints, bound_ints->nints, ints[i]) &&
        !has(r->params, r->nparams, ints[i]) && r->nparams < RULE_MAX_VARS) {
      if (i == 3)
        r->axis_params |= 1u << r->nparams;
      r->params[r->nparams++] = ints[i];
    }
  for (int i = 0; i < pt->nargs; i++)
    if (!check_rhs(p, r, pt->args[i], lhs, bound_ints))
      return FALSE;
  return TRUE;
}

static gboolean parse_int_expr(RuleParser *p, IntExpr *e) {
  memset(e, 0, sizeof *e);
  if (p->tok.kind == TK_INT) {
    e->kind = IE_LIT;
    e->value = p->tok.i;
    rnext(p);
    return !p->failed;
  }
  if (token_is(&p->tok, "dim") || token_is(&p->tok, "rank")) {
    gboolean dim = token_is(&p->tok, "dim");
    e->kind = dim ? IE_DIM : IE_RANK;
    rnext(p);
    if (!rpunct(p, '('))
      return FALSE;
    e->var = rname(p, "a variable");
    if (!e->var)
      return FALSE;
    if (dim && (!rpunct(p, ',') || !parse_intref(p, &e->dim, "a dimension")))
      return FALSE;
    return rpunct(p, ')');
  }
  e->kind = IE_VAR;
  e->var = rname(p, "an integer expression");
  return e->var != NULL;
}

static gboolean parse_conds(RuleParser *p, Rule *r) {
  if (!token_is(&p->tok, "when"))
    return TRUE;
  rnext(p);
  GArray *conds = g_array_new(FALSE, TRUE, sizeof(Cond));
  for (;;) {
    Cond c = {.loc = p->tok.loc};
    gsize start = (gsize)(p->tok.start - p->src->text);
    if (!parse_int_expr(p, &c.a))
      break;
    if (p->tok.kind != TK_OP || token_op(&p->tok, "~~>") ||
        token_op(&p->tok, "<~~>")) {
      if (token_punct(&p->tok, '<') || token_punct(&p->tok, '>')) {
        c.op[0] = p->tok.punct;
      } else {
        rexpected(p, "a comparison (== != < <= > >=)");
        break;
      }
    } else {
      memcpy(c.op, p->tok.start, 2);
    }
    rnext(p);
    if (!parse_int_expr(p, &c.b))
      break;
    g_strlcpy(c.text, p->src->text + start,
              MIN(sizeof c.text, p->prev_end - start + 1));
    g_array_append_val(conds, c);
    if (!token_is(&p->tok, "and"))
      break;
    rnext(p);
  }
  r->nconds = (int)conds->len;
  r->conds = (Cond *)g_array_free(conds, FALSE);
  return !p->failed;
}

static const char *const tag_names[] = {"propagate", "simplify", "fuse",
                                        "spmd"};

static gboolean parse_rule(RuleParser *p, Loc at) {
  Token name_tok = {0};
  if (!lex_raw_name(&p->lx, &name_tok)) {
    token_clear(&name_tok);
    p->failed = TRUE;
    return FALSE;
  }
  g_autofree char *name = token_name(&name_tok);
  Loc name_at = name_tok.loc;
  token_clear(&name_tok);
  rnext(p);
  Rule *r = g_new0(Rule, 1);
  r->kind = RULE_PATTERN;
  r->name = g_strdup(name);
  r->origin = g_strdup_printf("%s:%d", p->src->name, at.line);
  r->where = g_strdup_printf("%s:%d:%d", p->src->name, name_at.line, name_at.col);
  {
    gsize b = name_at.offset, e = name_at.offset;
    while (b > 0 && p->src->text[b - 1] != '\n')
      b--;
    while (e < p->src->len && p->src->text[e] != '\n')
      e++;
    r->srcline = g_strndup(p->src->text + b, MIN(e - b, 200));
  }
  if (token_punct(&p->tok, '[')) {
    rnext(p);
    while (!p->failed && !token_punct(&p->tok, ']')) {
      if (r->tags && !rpunct(p, ','))
        break;
      Loc ta = p->tok.loc;
      const char *tag = rname(p, "a tag");
      gboolean known = FALSE;
      for (gsize i = 0; tag && i < G_N_ELEMENTS(tag_names); i++)
        if (strcmp(tag, tag_names[i]) == 0) {
          r->tags |= 1u << i;
          known = TRUE;
        }
      if (tag && !known)
        rfail(p, ta, "unknown tag '%s' (propagate, simplify, fuse, spmd)", tag);
    }
    rpunct(p, ']');
  }
  rpunct(p, ':');
  gsize text_start = p->tok.start - p->src->text;
  p->nscope = 0;
  r->lhs = parse_pat(p);
  gboolean twoway = FALSE;
  if (!p->failed) {
    if (token_op(&p->tok, "~~>") || token_op(&p->tok, "<~~>")) {
      twoway = token_op(&p->tok, "<~~>");
      rnext(p);
    } else {
      rexpected(p, "'~~>' or '<~~>'");
    }
  }
  p->nscope = 0;
  if (!p->failed)
    r->rhs = parse_pat(p);
  if (!p->failed)
    parse_conds(p, r);
  gsize text_end = p->prev_end;
  if (p->failed) {
    rule_free(r);
    return FALSE;
  }
  r->text = g_strstrip(g_strndup(p->src->text + text_start, text_end - text_start));
  for (char *c = r->text; *c; c++)
    if (*c == '\n' || *c == '\t')
      *c = ' ';

  Names lhs = {0}, rhs = {0}, bound = {0};
  collect(r->lhs, &lhs);
  collect(r->rhs, &rhs);
  bound = lhs;
  for (int i = 0; i < r->nconds; i++) /* 'when n == dim(x, d)' binds n */
    if (r->conds[i].a.kind == IE_VAR && strcmp(r->conds[i].op, "==") == 0)
      add_name(bound.ints, &bound.nints, r->conds[i].a.var);
  if (r->lhs->kind == PT_SUBST) {
    rfail(p, r->lhs->loc, "a substitution cannot appear on the left side");
    rule_free(r);
    return FALSE;
  }
  if (!check_rhs(p, r, r->rhs, &lhs, &bound)) {
    rule_free(r);
    return FALSE;
  }
  if (!add_rule(p, r, name_at))
    return FALSE;
  if (twoway) {
    /* the reverse: the right side must bind what the left side uses */
    Rule *rev = g_new0(Rule, 1);
    rev->kind = RULE_PATTERN;
    rev->name = g_strdup_printf("%s-rev", r->name);
    rev->origin = g_strdup(r->origin);
    rev->text = g_strdup_printf("(reverse of %s) %s", r->name, r->text);
    rev->where = g_strdup(r->where);
    rev->srcline = g_strdup(r->srcline);
    rev->lhs = r->rhs;
    rev->rhs = r->lhs;
    rev->borrowed = TRUE;
    rev->tags = 0;
    Names rb = rhs;
    if (!check_rhs(p, rev, rev->rhs, &rhs, &rb) || r->rhs->kind == PT_SUBST) {
      if (r->rhs->kind == PT_SUBST)
        rfail(p, r->rhs->loc, "a two-way rule cannot have a substitution");
      rule_free(rev);
      return FALSE;
    }
    if (!add_rule(p, rev, name_at))
      return FALSE;
  }
  return TRUE;
}

/* ------------------------------------------------------- derived rules */

static Rule *derived(RuleKind kind, Op op, int index, const OpSpec *os) {
  Rule *r = g_new0(Rule, 1);
  r->kind = kind;
  r->op = op;
  r->index = index;
  const char *opn = op_name(op);
  switch (kind) {
  case RULE_OP_TILE:
    r->name = g_strdup_printf("%s-tile-%d", opn, index);
    r->text = g_strdup_printf("%s(..) ~~> tile %d (\\r:range<n,w> -> %s(operands "
                              "sliced along result dim %d [r]))",
                              opn, index, opn, index);
    r->params[r->nparams++] = g_intern_string("w");
    r->axis_params = 1u << r->nparams;
    r->params[r->nparams++] = g_intern_string("a");
    break;
  case RULE_OP_SUM:
    r->name = index ? g_strdup_printf("%s-sum-%d", opn, index)
                    : g_strdup_printf("%s-sum", opn);
    r->text = g_strdup_printf("%s(..) ~~> sum (\\r:range<n,w> -> %s(operands "
                              "sliced along reduction %d [r]))",
                              opn, opn, index);
    r->params[r->nparams++] = g_intern_string("w");
    r->axis_params = 1u << r->nparams;
    r->params[r->nparams++] = g_intern_string("a");
    break;
  case RULE_SLICE_OP:
    r->name = g_strdup_printf("slice-%s-%d", opn, index);
    r->text = g_strdup_printf("slice %d (%s(..))[s] ~~> %s(operands sliced "
                              "along result dim %d [s])",
                              index, opn, opn, index);
    r->tags = RULE_TAG_PROPAGATE;
    break;
  default:
    g_assert_not_reached();
  }
  r->origin = g_strdup_printf("derived from op %s (%s)", opn, os->origin);
  return r;
}

static gboolean derive_rules(RuleParser *p) {
  for (int op = 0; op < OP_COUNT_; op++) {
    const OpSpec *os = p->rs->specs[op];
    if (!os)
      continue;
    int nout = os->kind == SPEC_INDEXED ? os->out_rank : PARTIR_MAX_RANK;
    /* a reduction's result has at least one dimension fewer */
    if (os->kind == SPEC_BUILTIN && g_str_has_prefix(os->builtin, "reduce_"))
      nout = PARTIR_MAX_RANK - 1;
    int nred = 0;
    if (os->kind == SPEC_INDEXED)
      nred = os->nindices - os->out_rank;
    else if (os->kind == SPEC_BUILTIN &&
             (strcmp(os->builtin, "dot") == 0 ||
              strcmp(os->builtin, "reduce_sum") == 0))
      nred = PARTIR_MAX_RANK;
    for (int d = 0; d < nout; d++) {
      Rule *r = derived(RULE_OP_TILE, (Op)op, d, os);
      Loc nowhere = {0};
      if (!add_rule(p, r, nowhere))
        return FALSE;
      r = derived(RULE_SLICE_OP, (Op)op, d, os);
      if (!add_rule(p, r, nowhere))
        return FALSE;
    }
    for (int k = 0; k < nred; k++) {
      Loc nowhere = {0};
      if (!add_rule(p, derived(RULE_OP_SUM, (Op)op, k, os), nowhere))
        return FALSE;
    }
  }
  return TRUE;
}

/* ---------------------------------------------------------------- files */

static gboolean load_file(RuleSet *rs, const char *path, GString *errors,
                          int depth);

static gboolean parse_file(RuleSet *rs, const Source *src, GString *errors,
                           int depth) {
  Diag diag;
  diag_init(&diag, src);
  RuleParser p = {.diag = &diag, .rs = rs, .src = src};
  lex_init(&p.lx, src, &diag);
  p.lx.rules = TRUE;
  rnext(&p);
  while (!p.failed && p.tok.kind != TK_EOF) {
    Loc at = p.tok.loc;
    if (token_is(&p.tok, "include")) {
      rnext(&p);
      if (p.tok.kind != TK_STRING) {
        rexpected(&p, "a file name in quotes");
        break;
      }
      g_autofree char *dir = g_path_get_dirname(src->name);
      g_autofree char *path = g_path_is_absolute(p.tok.text)
                                  ? g_strdup(p.tok.text)
                                  : g_build_filename(dir, p.tok.text, NULL);
      if (depth > 16) {
        rfail(&p, at, "includes nest deeper than 16");
        break;
      }
      rnext(&p);
      if (!load_file(rs, path, errors, depth + 1)) {
        rfail(&p, at, "in the file included here");
        break;
      }
    } else if (token_is(&p.tok, "op")) {
      rnext(&p);
      parse_op_spec(&p, at);
    } else if (token_is(&p.tok, "rule")) {
      parse_rule(&p, at);
    } else {
      rexpected(&p, "'op', 'rule' or 'include'");
    }
  }
  token_clear(&p.tok);
  g_string_append(errors, diag.text->str);
  diag_clear(&diag);
  return !p.failed;
}

static gboolean load_file(RuleSet *rs, const char *path, GString *errors,
                          int depth) {
  for (guint i = 0; i < rs->files->len; i++)
    if (strcmp(g_ptr_array_index(rs->files, i), path) == 0)
      return TRUE; /* included twice: once is enough */
  g_ptr_array_add(rs->files, g_strdup(path));
  GError *error = NULL;
  g_autoptr(Source) src = NULL;
  if (!source_load(path, &src, &error)) {
    g_string_append_printf(errors, "%s\n", error->message);
    g_error_free(error);
    return FALSE;
  }
  return parse_file(rs, src, errors, depth);
}

char **rules_search_path(void) {
  GPtrArray *dirs = g_ptr_array_new();
  const char *env = g_getenv("PARTIR_RULES");
  if (env && *env) {
    g_auto(GStrv) parts = g_strsplit(env, ":", -1);
    for (char **d = parts; *d; d++)
      if (**d)
        g_ptr_array_add(dirs, g_strdup(*d));
  }
#ifdef PARTIR_RULES_DIR
  g_ptr_array_add(dirs, g_strdup(PARTIR_RULES_DIR));
#endif
  g_ptr_array_add(dirs, NULL);
  return (char **)g_ptr_array_free(dirs, FALSE);
}

/* The *.rules files of the first search directory that has any. */
static GPtrArray *default_rule_files(void) {
  g_auto(GStrv) dirs = rules_search_path();
  GPtrArray *files = g_ptr_array_new_with_free_func(g_free);
  for (char **d = dirs; *d && files->len == 0; d++) {
    GDir *dir = g_dir_open(*d, 0, NULL);
    if (!dir)
      continue;
    const char *n;
    while ((n = g_dir_read_name(dir)))
      if (g_str_has_suffix(n, ".rules"))
        g_ptr_array_add(files, g_build_filename(*d, n, NULL));
    g_dir_close(dir);
  }
  /* sorted by name, so the load order does not depend on the directory */
  for (guint i = 1; i < files->len; i++)
    for (guint j = i; j > 0 && strcmp(g_ptr_array_index(files, j - 1),
                                      g_ptr_array_index(files, j)) > 0;
         j--) {
      gpointer t = files->pdata[j];
      files->pdata[j] = files->pdata[j - 1];
      files->pdata[j - 1] = t;
    }
  return files;
}

RuleSet *ruleset_load(const char *const *paths, GString *errors) {
  return ruleset_load_with(paths, NULL, errors);
}

RuleSet *ruleset_load_with(const char *const *paths, const Source *extra,
                           GString *errors) {
  RuleSet *rs = g_new0(RuleSet, 1);
  rs->rules = g_ptr_array_new_with_free_func((GDestroyNotify)rule_free);
  rs->by_name = g_hash_table_new(g_str_hash, g_str_equal);
  rs->files = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) found = NULL;
  if (!paths) {
    found = default_rule_files();
    if (found->len == 0) {
      g_auto(GStrv) dirs = rules_search_path();
      g_autofree char *path = g_strjoinv(":", dirs);
      g_string_append_printf(errors, "no rule files found in %s (set "
                                     "PARTIR_RULES or use --rules)\n",
                             path);
      ruleset_free(rs);
      return NULL;
    }
    g_ptr_array_add(found, NULL);
    paths = (const char *const *)found->pdata;
  }
  gboolean ok = TRUE;
  for (const char *const *p = paths; *p && ok; p++)
    ok = load_file(rs, *p, errors, 0);
  if (ok && extra)
    ok = parse_file(rs, extra, errors, 0);
  if (ok) {
    Source none = {.name = (char *)"(derived)", .text = (char *)"", .len = 0};
    Diag diag;
    diag_init(&diag, &none);
    RuleParser p = {.diag = &diag, .rs = rs, .src = &none, .errors = errors};
    ok = derive_rules(&p);
    g_string_append(errors, diag.text->str);
    diag_clear(&diag);
  }
  if (ok)
    ok = rules_check_types(rs, errors);
  if (!ok) {
    ruleset_free(rs);
    return NULL;
  }
  return rs;
}

void ruleset_free(RuleSet *rs) {
  if (!rs)
    return;
  g_hash_table_unref(rs->by_name);
  /* free reverse rules (sharing patterns) before their forward rules */
  g_ptr_array_unref(rs->rules);
  for (int i = 0; i < OP_COUNT_; i++)
    if (rs->specs[i]) {
      g_free(rs->specs[i]->origin);
      g_free(rs->specs[i]->builtin);
      g_free(rs->specs[i]);
    }
  g_ptr_array_unref(rs->files);
  g_free(rs);
}

const Rule *ruleset_find(const RuleSet *rs, const char *name) {
  return g_hash_table_lookup(rs->by_name, name);
}
