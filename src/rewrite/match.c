/* match.c — matching a written rule and building its right side.
 *
 * Patterns name binders ('\r'); terms use de Bruijn levels.  While
 * matching, 'scope' lists the rule binders entered so far (innermost
 * last) with the level each has in the term, so a binder reference 'r'
 * matches the variable of that level.  A pattern variable records the
 * term together with the rule binders around it.  Building the right
 * side, each right-side region is placed at its home first (its level is
 * one more than the highest level its body will use from outside), then
 * every variable's levels are renamed into the right side's: a level that
 * was a rule binder becomes the right-side binder of the same name (or,
 * under a substitution e{s/r}, the level of s); other levels lie outside
 * the matched term and stay.  A variable whose term uses a binder the
 * right side does not have makes the match fail, which is how
 * 'tile d (\r -> slice d x[r]) ~~> x' refuses an x that depends on r.
 *
 * Building goes through the type-checking constructors, so a right side
 * that does not type-check is a failed match with the reason.
 */
#include "rewrite/rewrite.h"

#include <string.h>

/* The rule binders around a place of the left side (outermost first). */
typedef struct Scope {
  int n;
  const char *names[PARTIR_MAX_REGIONS];
  int levels[PARTIR_MAX_REGIONS]; /* their levels in the matched term */
} Scope;

/* The rule binder whose level is 'level' in 'sc', or NULL. */
static const char *scope_name_at(const Scope *sc, int level) {
  for (int i = sc->n - 1; i >= 0; i--)
    if (sc->levels[i] == level)
      return sc->names[i];
  return NULL;
}

typedef struct TermVar {
  const char *name;
  const Term *t;
  Scope scope;
} TermVar;

typedef struct Binder {
  const char *name;
  const Type *range;
  const char *axis;
} Binder;

typedef struct Env {
  TermVar terms[RULE_MAX_VARS];
  int nterms;
  const char *int_names[RULE_MAX_VARS * 2];
  int64_t ints[RULE_MAX_VARS * 2];
  int nints;
  const char *attr_names[RULE_MAX_VARS]; /* non-integer attribute values */
  const AttrValue *attrs[RULE_MAX_VARS];
  int nattrs;
  const char *axis_names[RULE_MAX_VARS];
  const char *axes[RULE_MAX_VARS];
  int naxes;
  Binder binders[RULE_MAX_VARS];
  int nbinders;
  Scope scope;
  Diag *why;
} Env;

static int64_t *int_lookup(Env *e, const char *name) {
  for (int i = 0; i < e->nints; i++)
    if (e->int_names[i] == name)
      return &e->ints[i];
  return NULL;
}

static gboolean int_bind(Env *e, const char *name, int64_t v) {
  int64_t *old = int_lookup(e, name);
  if (old) {
    if (*old != v) {
      diag_reason(e->why,
                  "'%s' would be both %" G_GINT64_FORMAT
                  " and %" G_GINT64_FORMAT,
                  name, *old, v);
      return FALSE;
    }
    return TRUE;
  }
  if (e->nints == (int)G_N_ELEMENTS(e->ints))
    return FALSE;
  e->int_names[e->nints] = name;
  e->ints[e->nints++] = v;
  return TRUE;
}

static gboolean match_intref(Env *e, const IntRef *r, int64_t v,
                             const char *what) {
  if (!r->present)
    return TRUE;
  if (!r->var) {
    if (r->value != v)
      diag_reason(e->why, "%s is %" G_GINT64_FORMAT ", not %" G_GINT64_FORMAT,
                  what, v, r->value);
    return r->value == v;
  }
  return int_bind(e, r->var, v);
}

static const AttrValue *attr_lookup(Env *e, const char *name) {
  for (int i = 0; i < e->nattrs; i++)
    if (e->attr_names[i] == name)
      return e->attrs[i];
  return NULL;
}

/* Matches the written attributes of an operator pattern. */
static gboolean match_attrs(Env *e, const Pat *pt, const Attrs *a) {
  for (int i = 0; i < pt->nattrs; i++) {
    const char *key = pt->attr_keys[i];
    const IntRef *want = &pt->attr_vals[i];
    const AttrValue *v = attrs_get(a, key);
    if (!v) {
      diag_reason(e->why, "no attribute '%s'", key);
      return FALSE;
    }
    if (v->kind == AV_INT) {
      if (!match_intref(e, want, v->i, key))
        return FALSE;
      continue;
    }
    if (!want->var) {
      diag_reason(e->why, "attribute '%s' is not an integer", key);
      return FALSE;
    }
    const AttrValue *old = attr_lookup(e, want->var);
    if (old) {
      if (!attr_value_equal(old, v)) {
        diag_reason(e->why, "the two occurrences of '%s' differ", want->var);
        return FALSE;
      }
      continue;
    }
    if (e->nattrs == RULE_MAX_VARS)
      return FALSE;
    e->attr_names[e->nattrs] = want->var;
    e->attrs[e->nattrs++] = v;
  }
  return TRUE;
}

static const char **axis_slot(Env *e, const char *name, gboolean create) {
  for (int i = 0; i < e->naxes; i++)
    if (e->axis_names[i] == name)
      return &e->axes[i];
  if (!create || e->naxes == RULE_MAX_VARS)
    return NULL;
  e->axis_names[e->naxes] = name;
  e->axes[e->naxes] = NULL;
  return &e->axes[e->naxes++];
}

static gboolean match(Env *e, const Pat *pt, const Term *t);

/* Two occurrences of a variable match when they are the same term and
 * every level it uses means the same binder at both places. */
static gboolean match_var(Env *e, const Pat *pt, const Term *t) {
  for (int i = 0; i < e->nterms; i++) {
    TermVar *v = &e->terms[i];
    if (v->name != pt->name)
      continue;
    gboolean same = v->t == t;
    for (guint64 m = t->loose; same && m; m &= m - 1) {
      int l = __builtin_ctzll(m);
      same = scope_name_at(&v->scope, l) == scope_name_at(&e->scope, l);
    }
    if (!same)
      diag_reason(e->why, "the two occurrences of '%s' differ", pt->name);
    return same;
  }
  if (e->nterms == RULE_MAX_VARS)
    return FALSE;
  TermVar *v = &e->terms[e->nterms++];
  v->name = pt->name;
  v->t = t;
  v->scope.n = e->scope.n;
  memcpy(v->scope.names, e->scope.names, sizeof(char *) * (gsize)e->scope.n);
  memcpy(v->scope.levels, e->scope.levels, sizeof(int) * (gsize)e->scope.n);
  return TRUE;
}

static gboolean match_binder(Env *e, const Pat *pt, const Term *t) {
  if (!match_intref(e, &pt->n, t->range->n, "the range size") ||
      !match_intref(e, &pt->w, t->range->w, "the range width"))
    return FALSE;
  if (pt->axis) {
    const char **slot = axis_slot(e, pt->axis, TRUE);
    if (!slot)
      return FALSE;
    *slot = t->axis;
  }
  if (e->nbinders == RULE_MAX_VARS || e->scope.n == PARTIR_MAX_REGIONS)
    return FALSE;
  e->binders[e->nbinders++] = (Binder){pt->name, t->range, t->axis};
  e->scope.names[e->scope.n] = pt->name;
  e->scope.levels[e->scope.n++] = t->binder;
  gboolean ok = match(e, pt->args[0], t->args[0]);
  e->scope.n--;
  return ok;
}

static gboolean match(Env *e, const Pat *pt, const Term *t) {
  switch (pt->kind) {
  case PT_VAR:
    return match_var(e, pt, t);
  case PT_BIND:
    for (int i = e->scope.n - 1; i >= 0; i--)
      if (e->scope.names[i] == pt->name)
        return t->kind == TM_BVAR && t->index == e->scope.levels[i];
    return FALSE;
  case PT_OP:
    if (t->kind != TM_OP || t->op != pt->op || t->nargs != pt->nargs) {
      diag_reason(e->why, "not a '%s'", op_name(pt->op));
      return FALSE;
    }
    if (!match_attrs(e, pt, t->attrs))
      return FALSE;
    for (int i = 0; i < pt->nargs; i++)
      if (!match(e, pt->args[i], t->args[i]))
        return FALSE;
    return TRUE;
  case PT_SLICE:
    if (t->kind != TM_SLICE) {
      diag_reason(e->why, "not a partir.slice");
      return FALSE;
    }
    return match_intref(e, &pt->dim, t->index, "the sliced dimension") &&
           match(e, pt->args[0], t->args[0]) &&
           match(e, pt->args[1], t->args[1]) &&
           match_intref(e, &pt->n, t->args[1]->type->n,
                        "the index range size") &&
           match_intref(e, &pt->w, t->args[1]->type->w,
                        "the index range width");
  case PT_TILE:
    if (t->kind != TM_TILE) {
      diag_reason(e->why, "not a partir.tile");
      return FALSE;
    }
    return match_intref(e, &pt->dim, t->index, "the tiled dimension") &&
           match_binder(e, pt, t);
  case PT_SUM:
    if (t->kind != TM_SUM) {
      diag_reason(e->why, "not a partir.sum");
      return FALSE;
    }
    return match_binder(e, pt, t);
  case PT_SUBST:
    return FALSE;
  }
  return FALSE;
}

/* ------------------------------------------------------------ conditions */

static TermVar *term_var(Env *e, const char *name) {
  for (int i = 0; i < e->nterms; i++)
    if (e->terms[i].name == name)
      return &e->terms[i];
  return NULL;
}

static gboolean eval_atom(Env *e, const IntExpr *x, int64_t *out) {
  switch (x->kind) {
  case IE_LIT:
    *out = x->value;
    return TRUE;
  case IE_VAR: {
    int64_t *v = int_lookup(e, x->var);
    if (v)
      *out = *v;
    return v != NULL;
  }
  case IE_DIM:
  case IE_RANK: {
    TermVar *v = term_var(e, x->var);
    if (!v || v->t->type->kind != TY_TENSOR)
      return FALSE;
    if (x->kind == IE_RANK) {
      *out = v->t->type->rank;
      return TRUE;
    }
    int64_t d = x->dim.value;
    if (x->dim.var && !int_lookup(e, x->dim.var))
      return FALSE;
    if (x->dim.var)
      d = *int_lookup(e, x->dim.var);
    if (d < 0 || d >= v->t->type->rank) {
      diag_reason(e->why,
                  "dimension %" G_GINT64_FORMAT " out of range for rank %d", d,
                  v->t->type->rank);
      return FALSE;
    }
    *out = v->t->type->dims[d];
    return TRUE;
  }
  }
  return FALSE;
}

/* An atom, or two atoms multiplied or divided (a division by zero does
 * not evaluate).  Division rounds up, so 'n / w' is the number of parts
 * of range<n,w>, uneven ones included. */
static gboolean eval_int(Env *e, const IntExpr *x, int64_t *out) {
  int64_t by;
  if (!eval_atom(e, x, out))
    return FALSE;
  if (!x->arith)
    return TRUE;
  if (!eval_atom(e, x->by, &by) || (x->arith == '/' && by == 0))
    return FALSE;
  if (x->arith == '*')
    *out *= by;
  else if (*out > 0 && by > 0)
    *out = (*out + by - 1) / by;
  else
    *out /= by;
  return TRUE;
}

/* disjoint(a, b): two lists (or single values) sharing no element. */
static gboolean disjoint(Env *e, const Cond *c) {
  const AttrValue *a = attr_lookup(e, c->a.var), *b = attr_lookup(e, c->b.var);
  if (!a || !b) {
    diag_reason(e->why, "disjoint() needs two list attributes");
    return FALSE;
  }
  int na = a->kind == AV_LIST ? a->count : 1;
  int nb = b->kind == AV_LIST ? b->count : 1;
  for (int i = 0; i < na; i++)
    for (int j = 0; j < nb; j++)
      if (attr_value_equal(a->kind == AV_LIST ? &a->items[i] : a,
                           b->kind == AV_LIST ? &b->items[j] : b)) {
        diag_reason(e->why, "side condition '%s' fails", c->text);
        return FALSE;
      }
  return TRUE;
}

static gboolean check_conds(Env *e, const Rule *r) {
  for (int i = 0; i < r->nconds; i++) {
    const Cond *c = &r->conds[i];
    if (strcmp(c->op, "dj") == 0) {
      if (!disjoint(e, c))
        return FALSE;
      continue;
    }
    int64_t a, b;
    if (!eval_int(e, &c->b, &b)) {
      if (!diag_any(e->why))
        diag_reason(e->why, "cannot evaluate a side condition");
      return FALSE;
    }
    if (c->a.kind == IE_VAR && !c->a.arith && !int_lookup(e, c->a.var) &&
        strcmp(c->op, "==") == 0) {
      int_bind(e, c->a.var, b); /* 'when n == dim(x, d)' defines n */
      continue;
    }
    if (!eval_int(e, &c->a, &a)) {
      if (!diag_any(e->why))
        diag_reason(e->why, "cannot evaluate a side condition");
      return FALSE;
    }
    gboolean ok = strcmp(c->op, "==") == 0   ? a == b
                  : strcmp(c->op, "!=") == 0 ? a != b
                  : strcmp(c->op, "<=") == 0 ? a <= b
                  : strcmp(c->op, ">=") == 0 ? a >= b
                  : strcmp(c->op, "<") == 0  ? a < b
                                             : a > b;
    if (!ok) {
      diag_reason(e->why,
                  "side condition '%s' fails: %" G_GINT64_FORMAT " %s "
                  "%" G_GINT64_FORMAT,
                  c->text, a, c->op, b);
      return FALSE;
    }
  }
  return TRUE;
}

/* -------------------------------------------------------------- building */

static const Binder *lhs_binder(Env *e, const char *name) {
  for (int q = 0; q < e->nbinders; q++)
    if (e->binders[q].name == name)
      return &e->binders[q];
  return NULL;
}

/* The right side's binders open while building (outermost first), with
 * the levels they were given. */
typedef struct Builder {
  Env *env;
  Scope scope;
} Builder;

/* The level of right-side binder 'name' where the builder is, or -1. */
static int builder_level(const Builder *b, const char *name) {
  for (int i = b->scope.n - 1; i >= 0; i--)
    if (b->scope.names[i] == name)
      return b->scope.levels[i];
  return -1;
}

static TermVar *term_var(Env *e, const char *name);

/* The levels the term built from 'pt' will use from outside: binders open
 * in the builder count, binders the pattern will open itself do not. */
static guint64 outside_mask(Builder *b, const Pat *pt) {
  switch (pt->kind) {
  case PT_BIND: {
    int l = builder_level(b, pt->name);
    return l >= 0 ? G_GUINT64_CONSTANT(1) << l : 0;
  }
  case PT_VAR:
  case PT_SUBST: {
    const TermVar *v =
        term_var(b->env, pt->kind == PT_VAR ? pt->name : pt->args[0]->name);
    if (!v)
      return 0;
    guint64 out = 0;
    for (guint64 m = v->t->loose; m; m &= m - 1) {
      int l = __builtin_ctzll(m);
      const char *name = scope_name_at(&v->scope, l);
      if (!name) /* a level outside the matched term */
        out |= G_GUINT64_CONSTANT(1) << l;
      else if (pt->kind == PT_SUBST && name == pt->name)
        out |= outside_mask(b, pt->args[1]);
      else if (builder_level(b, name) >= 0)
        out |= G_GUINT64_CONSTANT(1) << builder_level(b, name);
    }
    return out;
  }
  default: {
    guint64 out = 0;
    for (int i = 0; i < pt->nargs; i++)
      out |= outside_mask(b, pt->args[i]);
    return out;
  }
  }
}

/* The variable's term in the builder's scope; 'subst_name' (a rule
 * binder) becomes level 'subst' (>= 0) when given, its variables of type
 * 'subst_range' when that is not NULL (a range of as many parts). */
static const Term *build_var(Builder *b, const TermVar *v,
                             const char *subst_name, int subst,
                             const Type *subst_range) {
  Relevel *rl = NULL;
  for (guint64 m = v->t->loose; m; m &= m - 1) {
    int l = __builtin_ctzll(m);
    const char *name = scope_name_at(&v->scope, l);
    if (!name)
      continue; /* outside the matched term: the same level here */
    int to = name == subst_name ? subst : builder_level(b, name);
    if (to < 0) {
      diag_reason(b->env->why,
                  "'%s' depends on a binder the right side "
                  "does not have",
                  v->name);
      if (rl)
        relevel_free(rl);
      return NULL;
    }
    const Type *as = name == subst_name ? subst_range : NULL;
    if ((to != l || as) && !rl)
      rl = relevel_new();
    if (rl && as)
      relevel_map_range(rl, l, to, as);
    else if (rl)
      relevel_map(rl, l, to);
  }
  /* the common case (fuse in propagate): every binder keeps its level */
  if (!rl)
    return v->t;
  const Term *r = relevel_apply(rl, v->t, b->env->why);
  relevel_free(rl);
  return r;
}

static gboolean int_of(Builder *b, const IntRef *r, int64_t *out) {
  if (!r->var) {
    *out = r->value;
    return TRUE;
  }
  int64_t *v = int_lookup(b->env, r->var);
  if (!v) {
    diag_reason(b->env->why, "no value for '%s'", r->var);
    return FALSE;
  }
  *out = *v;
  return TRUE;
}

static const Term *build(Builder *b, const Pat *pt);

/* The written attributes of an operator on the right side. */
static const Attrs *build_attrs(Builder *b, const Pat *pt) {
  if (pt->nattrs == 0)
    return attrs_empty();
  int64_t ints[RULE_MAX_VARS];
  if (pt->nattrs > RULE_MAX_VARS)
    return NULL;
  for (int i = 0; i < pt->nattrs; i++) {
    const IntRef *r = &pt->attr_vals[i];
    if (!(r->var && attr_lookup(b->env, r->var)) && !int_of(b, r, &ints[i]))
      return NULL;
  }
  const char **keys = g_new(const char *, (gsize)pt->nattrs);
  AttrValue *vals = g_new0(AttrValue, (gsize)pt->nattrs);
  for (int i = 0; i < pt->nattrs; i++) {
    const IntRef *r = &pt->attr_vals[i];
    const AttrValue *v = r->var ? attr_lookup(b->env, r->var) : NULL;
    keys[i] = pt->attr_keys[i];
    vals[i] =
        v ? attr_value_copy(v) : (AttrValue){.kind = AV_INT, .i = ints[i]};
  }
  return attrs_intern(pt->nattrs, keys, vals);
}

static const Term *build_bind(Builder *b, const char *name) {
  int l = builder_level(b, name);
  if (l >= 0) {
    const Binder *bi = lhs_binder(b->env, name);
    g_assert(bi);
    return term_bvar(l, bi->range);
  }
  diag_reason(b->env->why, "binder '%s' is not in scope", name);
  return NULL;
}

static const Term *build_region(Builder *b, const Pat *pt) {
  Env *e = b->env;
  const Binder *lb = lhs_binder(e, pt->name);
  const Type *range = lb ? lb->range : NULL;
  const char *axis = lb ? lb->axis : NULL;
  if (pt->n.present) {
    int64_t n, w;
    if (!int_of(b, &pt->n, &n) || !int_of(b, &pt->w, &w))
      return NULL;
    if (n < 1 || w < 1 || w > n) {
      diag_reason(e->why,
                  "width %" G_GINT64_FORMAT
                  " is not between 1 and the size %" G_GINT64_FORMAT,
                  w, n);
      return NULL;
    }
    range = type_range(n, w);
  }
  if (!range) {
    diag_reason(e->why, "binder '%s' has no range", pt->name);
    return NULL;
  }
  if (pt->axis) {
    const char **slot = axis_slot(e, pt->axis, FALSE);
    axis = slot ? *slot : NULL;
  }
  if (!lb) { /* a new binder: remember its range for references */
    if (e->nbinders == RULE_MAX_VARS)
      return NULL;
    e->binders[e->nbinders++] = (Binder){pt->name, range, axis};
  }
  if (b->scope.n == PARTIR_MAX_REGIONS)
    return NULL;
  /* the region sits at its home: above every level its body uses */
  guint64 outside = outside_mask(b, pt->args[0]);
  int level = outside ? 64 - __builtin_clzll(outside) : 0;
  if (level >= PARTIR_MAX_REGIONS) {
    diag_reason(e->why, "regions would nest deeper than %d",
                PARTIR_MAX_REGIONS);
    return NULL;
  }
  b->scope.names[b->scope.n] = pt->name;
  b->scope.levels[b->scope.n++] = level;
  const Term *body = build(b, pt->args[0]);
  b->scope.n--;
  if (!body)
    return NULL;
  int64_t dim = 0;
  if (pt->kind == PT_TILE && !int_of(b, &pt->dim, &dim))
    return NULL;
  const Term *t = pt->kind == PT_TILE
                      ? term_tile((int)CLAMP(dim, -1, PARTIR_MAX_RANK), range,
                                  axis, body, level, e->why)
                      : term_sum(range, axis, body, level, e->why);
  return t;
}

static const Term *build(Builder *b, const Pat *pt) {
  Env *e = b->env;
  switch (pt->kind) {
  case PT_VAR:
    return build_var(b, term_var(e, pt->name), NULL, -1, NULL);
  case PT_BIND:
    return build_bind(b, pt->name);
  case PT_SUBST: {
    const Pat *sp = pt->args[1];
    const Term *s = sp->kind == PT_BIND
                        ? build_bind(b, sp->name)
                        : build_var(b, term_var(e, sp->name), NULL, -1, NULL);
    if (!s)
      return NULL;
    if (s->kind != TM_BVAR) {
      diag_reason(e->why, "the value substituted for '%s' is not a binder",
                  pt->name);
      return NULL;
    }
    /* a range of another size with as many parts picks the same parts
     * (slices take part r of whatever they cut): its variables stand
     * for r's, retyped */
    const Binder *r = lhs_binder(e, pt->name);
    const Type *as = r && r->range != s->type ? s->type : NULL;
    if (as && type_range_parts(as) != type_range_parts(r->range)) {
      diag_reason(e->why,
                  "the range substituted for '%s' has %" G_GINT64_FORMAT
                  " parts, '%s' has %" G_GINT64_FORMAT,
                  pt->name, type_range_parts(as), pt->name,
                  type_range_parts(r->range));
      return NULL;
    }
    /* an uneven range pads its last part: another range, even with as
     * many parts, cuts the same dimensions elsewhere */
    if (as && (!type_range_even(as) || !type_range_even(r->range))) {
      diag_reason(e->why,
                  "the range substituted for '%s' is another range and one "
                  "of them is uneven",
                  pt->name);
      return NULL;
    }
    return build_var(b, term_var(e, pt->args[0]->name), pt->name, s->index, as);
  }
  case PT_OP: {
    const Term *args[SPEC_MAX_OPERANDS];
    if (pt->nargs > SPEC_MAX_OPERANDS)
      return NULL;
    for (int i = 0; i < pt->nargs; i++)
      if (!(args[i] = build(b, pt->args[i])))
        return NULL;
    const Attrs *attrs = build_attrs(b, pt);
    return attrs ? term_op(pt->op, pt->nargs, args, attrs, NULL, e->why) : NULL;
  }
  case PT_SLICE: {
    int64_t dim;
    const Term *x = build(b, pt->args[0]);
    const Term *r = x ? build(b, pt->args[1]) : NULL;
    if (!r || !int_of(b, &pt->dim, &dim))
      return NULL;
    return term_slice((int)CLAMP(dim, -1, PARTIR_MAX_RANK), x, r, e->why);
  }
  case PT_TILE:
  case PT_SUM:
    return build_region(b, pt);
  }
  return NULL;
}

gboolean match_head_may_match(const Rule *rule, const Term *t) {
  const Pat *p = rule->lhs;
  switch (p->kind) {
  case PT_OP:
    return t->kind == TM_OP && t->op == p->op;
  case PT_SLICE:
    return t->kind == TM_SLICE;
  case PT_TILE:
    return t->kind == TM_TILE;
  case PT_SUM:
    return t->kind == TM_SUM;
  default:
    return TRUE;
  }
}

const Term *match_apply(const Rule *rule, const Term *t, const RuleArg *args,
                        int nargs, Diag *why) {
  /* not zeroed: every table is read only below its count (it is large:
   * clearing it was most of the cost of a small rewrite) */
  Env *e = g_new(Env, 1);
  e->nterms = e->nints = e->nattrs = e->naxes = e->nbinders = e->scope.n = 0;
  e->why = why;
  diag_reset(why);
  for (int i = 0; i < nargs; i++) {
    if (args[i].is_axis) {
      const char **slot = axis_slot(e, args[i].name, TRUE);
      if (slot)
        *slot = args[i].axis;
    } else {
      int_bind(e, args[i].name, args[i].value);
    }
  }
  const Term *out = NULL;
  /* parameters first: a side condition may need them (dim(x, d)) */
  for (int i = 0; i < rule->nparams; i++) {
    const char *p = rule->params[i];
    if (!int_lookup(e, p) && !axis_slot(e, p, FALSE) &&
        !(rule->axis_params & (1u << i))) {
      diag_reason(why, "rule '%s' needs parameter '%s'", rule->name, p);
      g_free(e);
      return NULL;
    }
  }
  if (match(e, rule->lhs, t) && check_conds(e, rule)) {
    Builder b = {.env = e}; /* scope.n = 0: no binder open */
    out = build(&b, rule->rhs);
  } else if (!diag_any(why)) {
    diag_reason(why, "'%s' does not match here", rule->name);
  }
  g_free(e);
  return out;
}
