/* rule.c — rule files: operator specs, written rules, derived rules.
 *
 * A rule file (grammar in docs/rules.md) holds four kinds of item:
 *
 *   include "other.rules"
 *   op matmul(x[i,k], y[k,j]) -> [i,j]      tiling specification
 *   rule fuse [propagate]:                  a rewrite rule
 *     slice d (tile d (\r:range<n,w> -> e))[s:range<n,w>]  ~~>  e{s/r}
 *   vjp mul(x, y) -> z, dz: x = mul(dz, y), y = mul(dz, x)
 *                                           a derivative (vjp.c)
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
 * nothing.  Type preservation is checked when the pipeline loads the
 * rules (pipeline_load_rules), meaning by check-rules (check/rulecheck.c,
 * which instantiates every rule).
 */
#include "rewrite/rewrite.h"

#include <string.h>

typedef struct RuleParser {
  Cursor c;
  RuleSet *rs;
  const Source *src;
  int depth;
  /* binders in scope while parsing one side */
  const char *scope[PARTIR_MAX_REGIONS];
  int nscope;
  Diag *errors; /* messages without a source position of this file */
} RuleParser;

static const char *rname(RuleParser *p, const char *what) {
  return cursor_name(&p->c, what);
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
  if (p->c.tok.kind == TK_INT) {
    r->value = p->c.tok.i;
    r->var = NULL;
    cursor_next(&p->c);
    return !p->c.failed;
  }
  r->var = rname(p, what);
  return r->var != NULL;
}

/* The size or width ('what') of a range: as parse_intref, and a literal
 * must be at least 1 (no range is empty). */
static gboolean parse_range_int(RuleParser *p, IntRef *r, const char *what) {
  Loc at = p->c.tok.loc;
  g_autofree char *expected = g_strdup_printf("the range %s", what);
  if (!parse_intref(p, r, expected))
    return FALSE;
  if (!r->var && r->value < 1)
    return cursor_fail(&p->c, at,
                       "a range %s must be at least 1, not %" G_GINT64_FORMAT,
                       what, r->value);
  return TRUE;
}

/* [':' 'range' '<' n ',' w '>'] */
static gboolean parse_range_annot(RuleParser *p, IntRef *n, IntRef *w) {
  if (!token_punct(&p->c.tok, ':'))
    return TRUE;
  cursor_next(&p->c);
  return cursor_word(&p->c, "range") && cursor_punct(&p->c, '<') &&
         parse_range_int(p, n, "size") && cursor_punct(&p->c, ',') &&
         parse_range_int(p, w, "width") && cursor_punct(&p->c, '>');
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
  Loc at = p->c.tok.loc;
  const char *name = rname(p, "a pattern");
  if (!name)
    return NULL;
  Pat *pt = pat_new(in_scope(p, name) ? PT_BIND : PT_VAR, at);
  pt->name = name;
  if (!token_punct(&p->c.tok, '{'))
    return pt;
  /* e{s/r} */
  Loc sub_at = p->c.tok.loc;
  cursor_next(&p->c);
  Loc s_at = p->c.tok.loc;
  const char *s = rname(p, "the substituted value");
  if (!s || !cursor_punct(&p->c, '/')) {
    pat_free(pt);
    return NULL;
  }
  const char *r = rname(p, "the binder to replace");
  if (!r || !cursor_punct(&p->c, '}')) {
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
  cursor_next(&p->c); /* '{' */
  while (!p->c.failed && !token_punct(&p->c.tok, '}')) {
    if (pt->nattrs > 0 && !cursor_punct(&p->c, ','))
      return;
    Loc ka = p->c.tok.loc;
    const char *key = rname(p, "an attribute name");
    if (!key || !cursor_punct(&p->c, '='))
      return;
    for (int i = 0; i < pt->nattrs; i++)
      if (pt->attr_keys[i] == key) {
        cursor_fail(&p->c, ka, "attribute '%s' is written twice", key);
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
  cursor_punct(&p->c, '}');
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
  if (!cursor_punct(&p->c, '(') || !cursor_punct(&p->c, '\\'))
    return FALSE;
  pt->name = rname(p, "a binder name");
  if (!pt->name || !parse_range_annot(p, &pt->n, &pt->w))
    return FALSE;
  if (p->c.tok.kind == TK_SYMBOL) {
    g_autofree char *a = token_name(&p->c.tok);
    pt->axis = g_intern_string(a);
    cursor_next(&p->c);
  }
  if (p->c.tok.kind != TK_ARROW)
    return cursor_expected(&p->c, "'->'");
  cursor_next(&p->c);
  if (p->nscope == PARTIR_MAX_REGIONS)
    return cursor_fail(&p->c, pt->loc, "binders nest too deeply");
  if (in_scope(p, pt->name))
    return cursor_fail(&p->c, pt->loc,
                       "binder '%s' shadows another of the same name",
                       pt->name);
  p->scope[p->nscope++] = pt->name;
  Pat *body = parse_pat(p);
  p->nscope--;
  if (!body)
    return FALSE;
  pat_add(pt, body);
  return cursor_punct(&p->c, ')');
}

/* Whether '(' follows the current token, peeked at without moving the
 * cursor: an operator's name is an operator only when called. */
static gboolean called(RuleParser *p) { return cursor_peek_punct(&p->c, '('); }

/* OP(pattern, ...) {attrs} at 'at', the cursor on OP: an operator
 * pattern, with as many operands as the operator takes.  Returned even
 * when parsing failed, for the caller to free. */
static Pat *parse_op_pat(RuleParser *p, Op op, Loc at) {
  cursor_next(&p->c); /* name */
  cursor_next(&p->c); /* '(' */
  Pat *pt = pat_new(PT_OP, at);
  pt->op = op;
  while (!p->c.failed && !token_punct(&p->c.tok, ')')) {
    if (pt->nargs > 0 && !cursor_punct(&p->c, ','))
      break;
    Pat *a = parse_pat(p);
    if (a)
      pat_add(pt, a);
  }
  if (!p->c.failed)
    cursor_next(&p->c);
  if (!p->c.failed && token_punct(&p->c.tok, '{'))
    parse_attr_pats(p, pt);
  if (!p->c.failed && op_arity(op) >= 0 && pt->nargs != op_arity(op))
    cursor_fail(&p->c, at, "'%s' takes %d operands, the pattern gives %d",
                op_name(op), op_arity(op), pt->nargs);
  return pt;
}

/* One pattern: '(' pattern ')', 'slice D P[r]', a 'tile'/'sum' binder,
 * an operator call or a name.  Depth-bounded; NULL after a diagnostic. */
static Pat *parse_pat(RuleParser *p) {
  if (p->c.failed)
    return NULL;
  if (++p->depth > PARTIR_MAX_DEPTH) {
    cursor_fail(&p->c, p->c.tok.loc, "pattern nests deeper than %d",
                PARTIR_MAX_DEPTH);
    return NULL;
  }
  Loc at = p->c.tok.loc;
  Pat *pt = NULL;
  if (token_punct(&p->c.tok, '(')) {
    cursor_next(&p->c);
    pt = parse_pat(p);
    if (pt && !cursor_punct(&p->c, ')')) {
      pat_free(pt);
      pt = NULL;
    }
  } else if (token_is(&p->c.tok, "slice")) {
    cursor_next(&p->c);
    pt = pat_new(PT_SLICE, at);
    Pat *x = NULL;
    if (parse_intref(p, &pt->dim, "the sliced dimension"))
      x = parse_pat(p);
    if (x) {
      pat_add(pt, x);
      Loc ia = p->c.tok.loc;
      const char *idx = NULL;
      if (cursor_punct(&p->c, '['))
        idx = rname(p, "a range value");
      if (idx) {
        Pat *ip = pat_new(in_scope(p, idx) ? PT_BIND : PT_VAR, ia);
        ip->name = idx;
        pat_add(pt, ip);
        if (!parse_range_annot(p, &pt->n, &pt->w) || !cursor_punct(&p->c, ']'))
          p->c.failed = TRUE;
      }
    }
  } else if (token_is(&p->c.tok, "tile") || token_is(&p->c.tok, "sum")) {
    gboolean tile = token_is(&p->c.tok, "tile");
    cursor_next(&p->c);
    pt = pat_new(tile ? PT_TILE : PT_SUM, at);
    if (tile && !parse_intref(p, &pt->dim, "the tiled dimension"))
      p->c.failed = TRUE;
    else
      parse_binder_body(p, pt);
  } else if (p->c.tok.kind == TK_IDENT) {
    Op op;
    gboolean is_op = op_from_name(p->c.tok.start, p->c.tok.len, &op);
    if (is_op && called(p)) {
      pt = parse_op_pat(p, op, at);
    } else if (called(p)) { /* NAME(: a call, of no operator */
      g_autofree char *n = token_name(&p->c.tok);
      cursor_fail(&p->c, at, "unknown operator '%s'", n);
    } else {
      pt = parse_name_pat(p);
    }
  } else {
    cursor_expected(&p->c, "a pattern");
  }
  p->depth--;
  if (p->c.failed) {
    pat_free(pt);
    return NULL;
  }
  return pt;
}

/* ------------------------------------------------------------- op specs */

/* The position of interned 'name' among 'names', or -1. */
static int index_of(const char *const *names, int n, const char *name) {
  for (int k = 0; k < n; k++)
    if (names[k] == name)
      return k;
  return -1;
}

/* What an op spec's operands have shown, for reading and checking its
 * result. */
typedef struct SpecIndices {
  const char *names[PARTIR_MAX_RANK * 2]; /* index names, by id */
  gboolean star;                          /* some operand is '[*]' */
  gboolean indexed;                       /* some operand lists indices */
} SpecIndices;

/* '[*]' or '[i, j, ...]' after operand 'i': its index names, numbered in
 * order of first appearance across the operands. */
static gboolean parse_operand_indices(RuleParser *p, OpSpec *os, int i,
                                      SpecIndices *ix) {
  cursor_next(&p->c);
  if (token_punct(&p->c.tok, '*')) {
    ix->star = TRUE;
    cursor_next(&p->c);
  } else {
    ix->indexed = TRUE;
    while (!p->c.failed && !token_punct(&p->c.tok, ']')) {
      if (os->arg_rank[i] > 0 && !cursor_punct(&p->c, ','))
        return FALSE;
      Loc ia = p->c.tok.loc;
      const char *name = rname(p, "an index name");
      if (!name)
        return FALSE;
      if (os->arg_rank[i] == PARTIR_MAX_RANK)
        return cursor_fail(&p->c, ia, "rank exceeds %d", PARTIR_MAX_RANK);
      int id = index_of(ix->names, os->nindices, name);
      if (id < 0) {
        if (os->nindices == (int)G_N_ELEMENTS(ix->names))
          return cursor_fail(&p->c, ia, "too many index names");
        id = os->nindices;
        ix->names[os->nindices++] = name;
      }
      os->arg_index[i][os->arg_rank[i]++] = id;
    }
  }
  return cursor_punct(&p->c, ']');
}

/* '(x[i, k], y, ...)': the operands, each with optional indices. */
static gboolean parse_spec_operands(RuleParser *p, OpSpec *os,
                                    SpecIndices *ix) {
  if (!cursor_punct(&p->c, '('))
    return FALSE;
  while (!p->c.failed && !token_punct(&p->c.tok, ')')) {
    if (os->nargs > 0 && !cursor_punct(&p->c, ','))
      return FALSE;
    if (os->nargs == SPEC_MAX_OPERANDS)
      return cursor_fail(&p->c, p->c.tok.loc, "too many operands");
    if (!rname(p, "an operand name"))
      return FALSE;
    int i = os->nargs++;
    if (token_punct(&p->c.tok, '[') && !parse_operand_indices(p, os, i, ix))
      return FALSE;
  }
  return cursor_punct(&p->c, ')');
}

/* '[*]' or '[i, j, ...]' after '->': an elementwise result, which needs
 * '[*]' operands, or an indexed one, whose indices all come from the
 * operands.  'at' is the declaration, where mismatches point. */
static gboolean parse_spec_result(RuleParser *p, OpSpec *os, Loc at,
                                  const SpecIndices *ix) {
  if (!cursor_punct(&p->c, '['))
    return FALSE;
  if (token_punct(&p->c.tok, '*')) {
    cursor_next(&p->c);
    if (!ix->star || ix->indexed)
      return cursor_fail(&p->c, at, "'[*]' results need '[*]' operands");
    os->kind = SPEC_ELEMENTWISE;
  } else {
    if (ix->star)
      return cursor_fail(&p->c, at, "'[*]' operands need a '[*]' result");
    os->kind = SPEC_INDEXED;
    while (!p->c.failed && !token_punct(&p->c.tok, ']')) {
      if (os->out_rank > 0 && !cursor_punct(&p->c, ','))
        return FALSE;
      Loc ia = p->c.tok.loc;
      const char *name = rname(p, "an index name");
      if (!name)
        return FALSE;
      int id = index_of(ix->names, os->nindices, name);
      if (id < 0)
        return cursor_fail(&p->c, ia, "result index '%s' appears in no operand",
                           name);
      if (os->out_rank == PARTIR_MAX_RANK)
        return cursor_fail(&p->c, ia, "rank exceeds %d", PARTIR_MAX_RANK);
      os->out_index[os->out_rank++] = id;
    }
  }
  return cursor_punct(&p->c, ']');
}

/* 'builtin KIND' after '->': a spec the engine implements itself, if it
 * knows KIND for 'op'. */
static gboolean parse_spec_builtin(RuleParser *p, OpSpec *os, Op op) {
  cursor_next(&p->c);
  Loc ka = p->c.tok.loc;
  const char *kind = rname(p, "a builtin kind");
  if (!kind)
    return FALSE;
  g_autoptr(Diag) why = diag_new(NULL);
  if (!spec_builtin_known(kind, op, why))
    return cursor_fail(&p->c, ka, "%s", diag_text(why));
  os->kind = SPEC_BUILTIN;
  os->builtin = g_strdup(kind);
  return TRUE;
}

/* 'op NAME(operands) -> result' (after 'op', which is at 'at'): the
 * operator's tiling specification, one per operator. */
static gboolean parse_op_spec(RuleParser *p, Loc at) {
  Loc name_at = p->c.tok.loc;
  if (p->c.tok.kind != TK_IDENT)
    return cursor_expected(&p->c, "an operator name");
  Op op;
  if (!op_from_name(p->c.tok.start, p->c.tok.len, &op)) {
    g_autofree char *n = token_name(&p->c.tok);
    return cursor_fail(&p->c, name_at, "unknown operator '%s'", n);
  }
  cursor_next(&p->c);
  OpSpec *os = g_new0(OpSpec, 1);
  os->origin = g_strdup_printf("%s:%d", p->src->name, at.line);
  SpecIndices ix = {0};
  if (!parse_spec_operands(p, os, &ix))
    goto fail;
  if (p->c.tok.kind != TK_ARROW) {
    cursor_expected(&p->c, "'->'");
    goto fail;
  }
  cursor_next(&p->c);
  if (token_is(&p->c.tok, "builtin") ? !parse_spec_builtin(p, os, op)
                                     : !parse_spec_result(p, os, at, &ix))
    goto fail;
  if (os->kind == SPEC_INDEXED &&
      os->nindices - os->out_rank > PARTIR_MAX_RANK) {
    cursor_fail(&p->c, at, "more than %d reduction indices", PARTIR_MAX_RANK);
    goto fail;
  }
  if (p->rs->specs[op]) {
    cursor_fail(&p->c, name_at,
                "operator '%s' already has a tiling specification (%s)",
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
  /* a two-way rule's reverse shares its patterns with the forward one */
  if (!r->borrowed) {
    pat_free(r->lhs);
    pat_free(r->rhs);
  }
  for (int i = 0; i < r->nconds; i++) {
    g_free(r->conds[i].a.by);
    g_free(r->conds[i].b.by);
  }
  g_free(r->conds);
  g_free(r);
}

/* Adds 'r' to the set, taking it (freed when refused). */
static gboolean add_rule(RuleParser *p, Rule *r, Loc at) {
  Rule *old = g_hash_table_lookup(p->rs->by_name, r->name);
  if (old && r->kind != RULE_PATTERN && old->src) {
    /* a written rule took a derived rule's name: point at the written one */
    Diag d;
    diag_init(&d, old->src);
    diag_error(&d, old->loc,
               "rule '%s' has the name of a rule derived from "
               "op %s",
               r->name, op_name(r->op));
    diag_append(p->errors, &d);
    diag_clear(&d);
    p->c.failed = TRUE;
    rule_free(r);
    return FALSE;
  }
  if (old) {
    cursor_fail(&p->c, at, "rule '%s' is defined twice (first at %s)", r->name,
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
      return cursor_fail(&p->c, pt->loc,
                         "'%s' on the right side is not bound by the left side",
                         pt->name);
    break;
  case PT_SUBST:
    if (pt->args[0]->kind != PT_VAR)
      return cursor_fail(&p->c, pt->loc,
                         "only a variable can take a substitution");
    if (!has(lhs->binders, lhs->nbinders, pt->name))
      return cursor_fail(
          &p->c, pt->loc,
          "'%s' in the substitution is not a binder of the left side",
          pt->name);
    break;
  case PT_OP:
    if (op_takes_written_type(pt->op) ||
        (op_needs_attrs(pt->op) && pt->nattrs == 0))
      return cursor_fail(&p->c, pt->loc,
                         "'%s' cannot be built by a rule without its "
                         "%s",
                         op_name(pt->op),
                         op_takes_written_type(pt->op) ? "written result type"
                                                       : "attributes");
    for (int i = 0; i < pt->nattrs; i++) {
      const char *v = pt->attr_vals[i].var;
      if (v && !has(bound_ints->ints, bound_ints->nints, v))
        return cursor_fail(
            &p->c, pt->loc,
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

/* INT | NAME | dim(x, d) | rank(x) */
static gboolean parse_int_atom(RuleParser *p, IntExpr *e) {
  memset(e, 0, sizeof *e);
  if (p->c.tok.kind == TK_INT) {
    e->kind = IE_LIT;
    e->value = p->c.tok.i;
    cursor_next(&p->c);
    return !p->c.failed;
  }
  if (token_is(&p->c.tok, "dim") || token_is(&p->c.tok, "rank")) {
    gboolean dim = token_is(&p->c.tok, "dim");
    e->kind = dim ? IE_DIM : IE_RANK;
    cursor_next(&p->c);
    if (!cursor_punct(&p->c, '('))
      return FALSE;
    e->var = rname(p, "a variable");
    if (!e->var)
      return FALSE;
    if (dim &&
        (!cursor_punct(&p->c, ',') || !parse_intref(p, &e->dim, "a dimension")))
      return FALSE;
    return cursor_punct(&p->c, ')');
  }
  e->kind = IE_VAR;
  e->var = rname(p, "an integer expression");
  return e->var != NULL;
}

/* atom [('*' | '/') atom]: 'n / w' is the number of parts of a
 * range<n,w> (division rounding up, match.c) */
static gboolean parse_int_expr(RuleParser *p, IntExpr *e) {
  if (!parse_int_atom(p, e))
    return FALSE;
  if (!token_punct(&p->c.tok, '*') && !token_punct(&p->c.tok, '/'))
    return TRUE;
  e->arith = p->c.tok.punct;
  cursor_next(&p->c);
  e->by = g_new0(IntExpr, 1);
  if (!parse_int_atom(p, e->by))
    return FALSE;
  if (token_punct(&p->c.tok, '*') || token_punct(&p->c.tok, '/'))
    return cursor_expected(&p->c, "a comparison (one '*' or '/' a side)");
  return TRUE;
}

/* iexpr OP iexpr, or disjoint(a, b) */
static gboolean parse_cond(RuleParser *p, Cond *c) {
  if (token_is(&p->c.tok, "disjoint")) {
    cursor_next(&p->c);
    c->a.kind = c->b.kind = IE_VAR;
    memcpy(c->op, "dj", 2);
    return cursor_punct(&p->c, '(') &&
           (c->a.var = rname(p, "an attribute variable")) &&
           cursor_punct(&p->c, ',') &&
           (c->b.var = rname(p, "an attribute variable")) &&
           cursor_punct(&p->c, ')');
  }
  if (!parse_int_expr(p, &c->a))
    return FALSE;
  if (p->c.tok.kind != TK_OP || token_op(&p->c.tok, "~~>") ||
      token_op(&p->c.tok, "<~~>")) {
    if (!token_punct(&p->c.tok, '<') && !token_punct(&p->c.tok, '>'))
      return cursor_expected(&p->c, "a comparison (== != < <= > >=)");
    c->op[0] = p->c.tok.punct;
  } else {
    memcpy(c->op, p->c.tok.start, 2);
  }
  cursor_next(&p->c);
  return parse_int_expr(p, &c->b);
}

static gboolean parse_conds(RuleParser *p, Rule *r) {
  if (!token_is(&p->c.tok, "when"))
    return TRUE;
  cursor_next(&p->c);
  GArray *conds = g_array_new(FALSE, TRUE, sizeof(Cond));
  for (;;) {
    Cond c = {.loc = p->c.tok.loc};
    gsize start = (gsize)(p->c.tok.start - p->src->text);
    if (!parse_cond(p, &c)) {
      g_free(c.a.by);
      g_free(c.b.by);
      break;
    }
    g_strlcpy(c.text, p->src->text + start,
              MIN(sizeof c.text, p->c.prev_end - start + 1));
    g_array_append_val(conds, c);
    if (!token_is(&p->c.tok, "and"))
      break;
    cursor_next(&p->c);
  }
  r->nconds = (int)conds->len;
  r->conds = (Cond *)g_array_free(conds, FALSE);
  return !p->c.failed;
}

static const char *const tag_names[] = {"propagate", "simplify", "fuse",
                                        "spmd"};

/* '[tag, ...]' after a rule's name: the passes that may use the rule. */
static void parse_rule_tags(RuleParser *p, Rule *r) {
  cursor_next(&p->c);
  while (!p->c.failed && !token_punct(&p->c.tok, ']')) {
    if (r->tags && !cursor_punct(&p->c, ','))
      break;
    Loc ta = p->c.tok.loc;
    const char *tag = rname(p, "a tag");
    gboolean known = FALSE;
    for (gsize i = 0; tag && i < G_N_ELEMENTS(tag_names); i++)
      if (strcmp(tag, tag_names[i]) == 0) {
        r->tags |= 1u << i;
        known = TRUE;
      }
    if (tag && !known)
      cursor_fail(&p->c, ta,
                  "unknown tag '%s' (propagate, simplify, fuse, spmd)", tag);
  }
  cursor_punct(&p->c, ']');
}

/* 'LHS ~~> RHS [when ...]' ('<~~>' sets 'twoway'): the rule's patterns
 * and conditions, and its text with whitespace flattened for listings. */
static gboolean parse_rule_sides(RuleParser *p, Rule *r, gboolean *twoway) {
  gsize text_start = p->c.tok.start - p->src->text;
  p->nscope = 0;
  r->lhs = parse_pat(p);
  if (!p->c.failed) {
    if (token_op(&p->c.tok, "~~>") || token_op(&p->c.tok, "<~~>")) {
      *twoway = token_op(&p->c.tok, "<~~>");
      cursor_next(&p->c);
    } else {
      cursor_expected(&p->c, "'~~>' or '<~~>'");
    }
  }
  p->nscope = 0;
  if (!p->c.failed)
    r->rhs = parse_pat(p);
  if (!p->c.failed)
    parse_conds(p, r);
  gsize text_end = p->c.prev_end;
  if (p->c.failed)
    return FALSE;
  r->text =
      g_strstrip(g_strndup(p->src->text + text_start, text_end - text_start));
  for (char *c = r->text; *c; c++)
    if (*c == '\n' || *c == '\t')
      *c = ' ';
  return TRUE;
}

/* A written rule's name checks: disjoint() names attributes of the left
 * side, the left side is no substitution, and the right side uses only
 * what the left side (or a 'when n == ...') binds.  'rhs' gets the names
 * the right side binds, for a two-way rule's reverse. */
static gboolean check_rule(RuleParser *p, Rule *r, Names *rhs) {
  Names lhs = {0}, bound = {0};
  memset(rhs, 0, sizeof *rhs);
  collect(r->lhs, &lhs);
  collect(r->rhs, rhs);
  bound = lhs;
  for (int i = 0; i < r->nconds; i++) /* 'when n == dim(x, d)' binds n */
    if (r->conds[i].a.kind == IE_VAR && !r->conds[i].a.arith &&
        strcmp(r->conds[i].op, "==") == 0)
      add_name(bound.ints, &bound.nints, r->conds[i].a.var);
  for (int i = 0; i < r->nconds; i++) {
    const Cond *c = &r->conds[i];
    if (strcmp(c->op, "dj") != 0)
      continue;
    const char *v = !has(lhs.ints, lhs.nints, c->a.var)   ? c->a.var
                    : !has(lhs.ints, lhs.nints, c->b.var) ? c->b.var
                                                          : NULL;
    if (v)
      return cursor_fail(
          &p->c, c->loc,
          "'%s' in disjoint() is not an attribute of the left side", v);
  }
  if (r->lhs->kind == PT_SUBST)
    return cursor_fail(&p->c, r->lhs->loc,
                       "a substitution cannot appear on the left side");
  return check_rhs(p, r, r->rhs, &lhs, &bound);
}

/* NAME-rev, the reverse of two-way rule 'r' (whose right side binds
 * 'rhs'): sharing 'r's patterns, it needs the right side to bind what the
 * left side uses and to be no substitution. */
static gboolean add_reverse(RuleParser *p, const Rule *r, const Names *rhs) {
  Rule *rev = g_new0(Rule, 1);
  rev->kind = RULE_PATTERN;
  rev->name = g_strdup_printf("%s-rev", r->name);
  rev->origin = g_strdup(r->origin);
  rev->text = g_strdup_printf("(reverse of %s) %s", r->name, r->text);
  rev->src = r->src;
  rev->loc = r->loc;
  rev->lhs = r->rhs;
  rev->rhs = r->lhs;
  rev->borrowed = TRUE;
  rev->tags = 0;
  Names rb = *rhs;
  if (!check_rhs(p, rev, rev->rhs, rhs, &rb) || r->rhs->kind == PT_SUBST) {
    if (r->rhs->kind == PT_SUBST)
      cursor_fail(&p->c, r->rhs->loc,
                  "a two-way rule cannot have a substitution");
    rule_free(rev);
    return FALSE;
  }
  return add_rule(p, rev, r->loc);
}

/* 'rule NAME [tags]: LHS ~~> RHS [when ...]' (after 'rule', at 'at'):
 * the rule, and NAME-rev for '<~~>', added to the set once checked. */
static gboolean parse_rule(RuleParser *p, Loc at) {
  Token name_tok = {0};
  if (!lex_raw_name(&p->c.lx, &name_tok)) {
    token_clear(&name_tok);
    p->c.failed = TRUE;
    return FALSE;
  }
  g_autofree char *name = token_name(&name_tok);
  Loc name_at = name_tok.loc;
  token_clear(&name_tok);
  cursor_next(&p->c);
  Rule *r = g_new0(Rule, 1);
  r->kind = RULE_PATTERN;
  r->name = g_strdup(name);
  r->origin = g_strdup_printf("%s:%d", p->src->name, at.line);
  r->src = p->src;
  r->loc = name_at;
  if (token_punct(&p->c.tok, '['))
    parse_rule_tags(p, r);
  cursor_punct(&p->c, ':');
  gboolean twoway = FALSE;
  Names rhs;
  if (!parse_rule_sides(p, r, &twoway) || !check_rule(p, r, &rhs)) {
    rule_free(r);
    return FALSE;
  }
  if (!add_rule(p, r, name_at))
    return FALSE;
  return !twoway || add_reverse(p, r, &rhs);
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
    r->text =
        g_strdup_printf("%s(..) ~~> tile %d (\\r:range<n,w> -> %s(operands "
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
  case RULE_OP_TILE_REV:
    r->name = g_strdup_printf("%s-tile-%d-rev", opn, index);
    r->text = g_strdup_printf("tile %d (\\r -> %s(operands sliced along "
                              "result dim %d [r])) ~~> %s(..)",
                              index, opn, index, opn);
    break;
  case RULE_OP_SUM_REV:
    r->name = index ? g_strdup_printf("%s-sum-%d-rev", opn, index)
                    : g_strdup_printf("%s-sum-rev", opn);
    r->text = g_strdup_printf("sum (\\r -> %s(operands sliced along "
                              "reduction %d [r])) ~~> %s(..)",
                              opn, index, opn);
    break;
  case RULE_SLICE_OP:
    r->name = g_strdup_printf("slice-%s-%d", opn, index);
    r->text = g_strdup_printf("slice %d (%s(..))[s] ~~> %s(operands sliced "
                              "along result dim %d [s])",
                              index, opn, opn, index);
    r->tags = RULE_TAG_PROPAGATE;
    break;
  case RULE_SINK_SLICE: /* asked for by name: it does not propagate */
    r->name = g_strdup_printf("sink-slice-%s", opn);
    r->text = g_strdup_printf("slice(%s(..)) ~~> %s(operands sliced along "
                              "the dims that carry the ones the slice "
                              "narrows)",
                              opn, opn);
    break;
  default:
    g_assert_not_reached();
  }
  if (op == OP_GATHER && (kind == RULE_OP_SUM || kind == RULE_OP_SUM_REV)) {
    /* not the operator on parts: a masked lookup on each (lookup.c) */
    const char *part = "select(hit, gather(slice v T[r], ids - part r's "
                       "first row), 0)";
    g_free(r->text);
    r->text = kind == RULE_OP_SUM
                  ? g_strdup_printf("gather(T, ids) ~~> sum (\\r:range<n,w> "
                                    "-> %s)",
                                    part)
                  : g_strdup_printf("sum (\\r -> %s) ~~> gather(T, ids)", part);
  }
  r->origin = g_strdup_printf("derived from op %s (%s)", opn, os->origin);
  return r;
}

static gboolean add_derived(RuleParser *p, RuleKind kind, Op op, int index,
                            const OpSpec *os) {
  Rule *r = derived(kind, op, index, os);
  Loc nowhere = {0};
  if (!add_rule(p, r, nowhere))
    return FALSE;
  p->rs->derived[kind][op][index] = r;
  return TRUE;
}

const Rule *ruleset_derived(const RuleSet *rs, RuleKind kind, Op op,
                            int index) {
  return index >= 0 && index < PARTIR_MAX_RANK ? rs->derived[kind][op][index]
                                               : NULL;
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
              strcmp(os->builtin, "reduce_sum") == 0 ||
              strcmp(os->builtin, "scatter_add") == 0))
      nred = PARTIR_MAX_RANK; /* scatter_add: its updates' batch dims */
    else if (os->kind == SPEC_BUILTIN && strcmp(os->builtin, "gather") == 0)
      nred = 1; /* a lookup's table rows (lookup.c) */
    if (!add_derived(p, RULE_SINK_SLICE, (Op)op, 0, os))
      return FALSE;
    for (int d = 0; d < nout; d++)
      if (!add_derived(p, RULE_OP_TILE, (Op)op, d, os) ||
          !add_derived(p, RULE_SLICE_OP, (Op)op, d, os) ||
          !add_derived(p, RULE_OP_TILE_REV, (Op)op, d, os))
        return FALSE;
    for (int k = 0; k < nred; k++)
      if (!add_derived(p, RULE_OP_SUM, (Op)op, k, os) ||
          !add_derived(p, RULE_OP_SUM_REV, (Op)op, k, os))
        return FALSE;
  }
  return TRUE;
}

/* ---------------------------------------------------------------- files */

static gboolean load_file(RuleSet *rs, const char *path, Diag *errors,
                          int depth);

static gboolean parse_rule_file(RuleSet *rs, const Source *src, Diag *errors,
                                int depth) {
  Diag diag;
  diag_init(&diag, src);
  RuleParser p = {.rs = rs, .src = src};
  cursor_init(&p.c, src, &diag);
  p.c.lx.rules = TRUE;
  cursor_next(&p.c);
  while (!p.c.failed && p.c.tok.kind != TK_EOF) {
    Loc at = p.c.tok.loc;
    if (token_is(&p.c.tok, "include")) {
      cursor_next(&p.c);
      if (p.c.tok.kind != TK_STRING) {
        cursor_expected(&p.c, "a file name in quotes");
        break;
      }
      g_autofree char *dir = g_path_get_dirname(src->name);
      g_autofree char *path = g_path_is_absolute(p.c.tok.text)
                                  ? g_strdup(p.c.tok.text)
                                  : g_build_filename(dir, p.c.tok.text, NULL);
      if (depth > 16) {
        cursor_fail(&p.c, at, "includes nest deeper than 16");
        break;
      }
      cursor_next(&p.c);
      if (!load_file(rs, path, errors, depth + 1)) {
        cursor_fail(&p.c, at, "in the file included here");
        break;
      }
    } else if (token_is(&p.c.tok, "op")) {
      cursor_next(&p.c);
      parse_op_spec(&p, at);
    } else if (token_is(&p.c.tok, "rule")) {
      parse_rule(&p, at);
    } else if (token_is(&p.c.tok, "vjp")) {
      vjp_parse(&p.c, rs, src, at);
    } else {
      cursor_expected(&p.c, "'op', 'rule', 'vjp' or 'include'");
    }
  }
  token_clear(&p.c.tok);
  diag_append(errors, &diag);
  diag_clear(&diag);
  return !p.c.failed;
}

static gboolean load_file(RuleSet *rs, const char *path, Diag *errors,
                          int depth) {
  for (guint i = 0; i < rs->files->len; i++)
    if (strcmp(g_ptr_array_index(rs->files, i), path) == 0)
      return TRUE; /* included twice: once is enough */
  g_ptr_array_add(rs->files, g_strdup(path));
  GError *error = NULL;
  Source *src = NULL;
  if (!source_load(path, &src, &error)) {
    diag_append_reason(errors, "%s\n", error->message);
    g_error_free(error);
    return FALSE;
  }
  g_ptr_array_add(rs->sources, src); /* rules point into it */
  return parse_rule_file(rs, src, errors, depth);
}

/* The *.rules files of the first search directory that has any. */
static GPtrArray *default_rule_files(void) {
  g_auto(GStrv) dirs = partir_search_path("PARTIR_RULES", PARTIR_RULES_DIR);
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

RuleSet *ruleset_load(const char *const *paths, Diag *errors) {
  return ruleset_load_with(paths, NULL, errors);
}

RuleSet *ruleset_load_with(const char *const *paths, const Source *extra,
                           Diag *errors) {
  RuleSet *rs = g_new0(RuleSet, 1);
  rs->rules = g_ptr_array_new_with_free_func((GDestroyNotify)rule_free);
  rs->by_name = g_hash_table_new(g_str_hash, g_str_equal);
  rs->files = g_ptr_array_new_with_free_func(g_free);
  rs->sources = g_ptr_array_new_with_free_func((GDestroyNotify)source_free);
  g_autoptr(GPtrArray) found = NULL;
  if (!paths) {
    found = default_rule_files();
    if (found->len == 0) {
      g_auto(GStrv) dirs = partir_search_path("PARTIR_RULES", PARTIR_RULES_DIR);
      g_autofree char *path = g_strjoinv(":", dirs);
      diag_append_reason(errors,
                         "no rule files found in %s (set "
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
  if (ok && extra) {
    Source *copy = source_new(extra->name, extra->text, extra->len);
    g_ptr_array_add(rs->sources, copy);
    ok = parse_rule_file(rs, copy, errors, 0);
  }
  if (ok) {
    Source none = {.name = (char *)"(derived)", .text = (char *)"", .len = 0};
    Diag diag;
    diag_init(&diag, &none);
    RuleParser p = {.rs = rs, .src = &none, .errors = errors};
    cursor_init(&p.c, &none, &diag);
    ok = derive_rules(&p);
    diag_append(errors, &diag);
    diag_clear(&diag);
  }
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
  for (int i = 0; i < OP_COUNT_; i++)
    vjp_free(rs->vjps[i]);
  g_ptr_array_unref(rs->files);
  g_ptr_array_unref(rs->sources);
  g_free(rs);
}

const Rule *ruleset_find(const RuleSet *rs, const char *name) {
  return g_hash_table_lookup(rs->by_name, name);
}

char *ruleset_did_you_mean(const RuleSet *rs, const char *name) {
  g_autoptr(GPtrArray) names = g_ptr_array_new();
  for (guint i = 0; i < rs->rules->len; i++)
    g_ptr_array_add(
        names, (gpointer)((const Rule *)g_ptr_array_index(rs->rules, i))->name);
  g_ptr_array_add(names, NULL);
  return diag_did_you_mean(name, (const char *const *)names->pdata);
}
