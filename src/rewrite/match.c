/* match.c — matching a written rule and building its right side.
 *
 * Patterns name binders ('\r'); terms use de Bruijn indices.  While
 * matching, 'scope' lists the rule binders entered so far (innermost
 * last), so a binder reference 'r' matches the index equal to its
 * distance.  A pattern variable matched under k binders records the term
 * together with those binders' names.  Building the right side, every
 * variable is re-indexed into the right side's scope: an index that
 * pointed at a rule binder now points at the right-side binder of the
 * same name (or, under a substitution e{s/r}, is replaced by s); indices
 * beyond the rule's binders point outside the matched term and are
 * shifted by the difference in depth.  A variable whose term uses a
 * binder the right side does not have makes the match fail, which is how
 * 'tile d (\r -> slice d x[r]) ~~> x' refuses an x that depends on r.
 *
 * Building goes through the type-checking constructors, so a right side
 * that does not type-check is a failed match with the reason.
 */
#include "rewrite/rewrite.h"

#include <string.h>

typedef struct TermVar {
  const char *name;
  const Term *t;
  int k;                                 /* rule binders in scope */
  const char *scope[PARTIR_MAX_REGIONS]; /* their names, outermost first */
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
  const char *scope[PARTIR_MAX_REGIONS];
  int nscope;
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

/* The term 't', matched under 'k' rule binders, seen outside all of them;
 * NULL when it uses one of them. */
static const Term *lower(const Term *t, int k) {
  if (k == 0)
    return t;
  if (t->loose & ((G_GUINT64_CONSTANT(1) << k) - 1))
    return NULL;
  return term_shift(t, -k, 0);
}

static gboolean match(Env *e, const Pat *pt, const Term *t);

static gboolean match_var(Env *e, const Pat *pt, const Term *t) {
  for (int i = 0; i < e->nterms; i++) {
    TermVar *v = &e->terms[i];
    if (v->name != pt->name)
      continue;
    gboolean same;
    if (v->k == e->nscope &&
        memcmp(v->scope, e->scope, sizeof(char *) * (gsize)v->k) == 0) {
      same = v->t == t;
    } else {
      const Term *outside = lower(v->t, v->k);
      same = outside && outside == lower(t, e->nscope);
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
  v->k = e->nscope;
  memcpy(v->scope, e->scope, sizeof(char *) * (gsize)e->nscope);
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
  if (e->nbinders == RULE_MAX_VARS || e->nscope == PARTIR_MAX_REGIONS)
    return FALSE;
  e->binders[e->nbinders++] = (Binder){pt->name, t->range, t->axis};
  e->scope[e->nscope++] = pt->name;
  gboolean ok = match(e, pt->args[0], t->args[0]);
  e->nscope--;
  return ok;
}

static gboolean match(Env *e, const Pat *pt, const Term *t) {
  switch (pt->kind) {
  case PT_VAR:
    return match_var(e, pt, t);
  case PT_BIND:
    for (int i = e->nscope - 1; i >= 0; i--)
      if (e->scope[i] == pt->name)
        return t->kind == TM_BVAR && t->index == e->nscope - 1 - i;
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

static gboolean eval_int(Env *e, const IntExpr *x, int64_t *out) {
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
    if (c->a.kind == IE_VAR && !int_lookup(e, c->a.var) &&
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

typedef struct Reindex {
  int k;                               /* indices below k are rule binders */
  const Term *map[PARTIR_MAX_REGIONS]; /* their replacements (target scope) */
  int m;                               /* depth of the target scope */
  GHashTable *memo;
  gboolean ok;
} Reindex;

static const Term *reindex(Reindex *ri, const Term *t, int cutoff) {
  if ((t->loose >> cutoff) == 0)
    return t;
  if (t->kind == TM_BVAR) {
    int j = t->index - cutoff;
    if (j < ri->k) {
      if (!ri->map[j]) {
        ri->ok = FALSE;
        return t;
      }
      return term_shift(ri->map[j], cutoff, 0);
    }
    return term_bvar(j - ri->k + ri->m + cutoff, t->type);
  }
  gpointer key = (gpointer)((guintptr)t + (guintptr)cutoff);
  const Term *done = g_hash_table_lookup(ri->memo, key);
  if (done)
    return done;
  int inner = cutoff + (t->kind == TM_TILE || t->kind == TM_SUM);
  const Term *args[SPEC_MAX_OPERANDS];
  const Term **a = t->nargs <= SPEC_MAX_OPERANDS
                       ? args
                       : g_new(const Term *, (gsize)t->nargs);
  for (int i = 0; i < t->nargs; i++)
    a[i] = reindex(ri, t->args[i], inner);
  g_autoptr(Diag) err = diag_new(NULL);
  const Term *r = ri->ok ? term_with_args(t, a, err) : t;
  if (a != args)
    g_free(a);
  if (!r) {
    ri->ok = FALSE;
    return t;
  }
  g_hash_table_insert(ri->memo, key, (gpointer)r);
  return r;
}

static const Binder *lhs_binder(Env *e, const char *name);

typedef struct Builder {
  Env *env;
  const char *scope[PARTIR_MAX_REGIONS]; /* right-side binders */
  int nscope;
} Builder;

/* The variable's term in the builder's scope; 'subst_name' (a rule
 * binder) is replaced by 'subst' when given. */
static const Term *build_var(Builder *b, const TermVar *v,
                             const char *subst_name, const Term *subst) {
  Reindex ri = {.k = v->k, .m = b->nscope, .ok = TRUE};
  for (int j = 0; j < v->k; j++) {
    const char *name = v->scope[v->k - 1 - j];
    ri.map[j] = NULL;
    if (name == subst_name) {
      ri.map[j] = subst;
      continue;
    }
    for (int pos = b->nscope - 1; pos >= 0; pos--)
      if (b->scope[pos] == name) {
        const Binder *bi = NULL;
        for (int q = 0; q < b->env->nbinders; q++)
          if (b->env->binders[q].name == name)
            bi = &b->env->binders[q];
        ri.map[j] = term_bvar(b->nscope - 1 - pos, bi->range);
        break;
      }
  }
  /* the common case (fuse in propagate): every rule binder keeps its
   * index and nothing outside moves, so the term is already right */
  gboolean identity = ri.m == ri.k || (v->t->loose >> ri.k) == 0;
  for (int j = 0; j < ri.k && identity; j++) {
    const Binder *bi = lhs_binder(b->env, v->scope[v->k - 1 - j]);
    identity = !(v->t->loose & (G_GUINT64_CONSTANT(1) << j)) ||
               (ri.map[j] && bi && ri.map[j] == term_bvar(j, bi->range));
  }
  if (identity)
    return v->t;
  ri.memo = g_hash_table_new(NULL, NULL);
  const Term *r = reindex(&ri, v->t, 0);
  g_hash_table_unref(ri.memo);
  if (!ri.ok) {
    diag_reason(b->env->why,
                "'%s' depends on a binder the right side "
                "does not have",
                v->name);
    return NULL;
  }
  return r;
}

static const Binder *lhs_binder(Env *e, const char *name) {
  for (int q = 0; q < e->nbinders; q++)
    if (e->binders[q].name == name)
      return &e->binders[q];
  return NULL;
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
  for (int pos = b->nscope - 1; pos >= 0; pos--)
    if (b->scope[pos] == name) {
      const Binder *bi = lhs_binder(b->env, name);
      g_assert(bi);
      return term_bvar(b->nscope - 1 - pos, bi->range);
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
    if (n < 1 || w < 1 || n % w != 0) {
      diag_reason(e->why,
                  "width %" G_GINT64_FORMAT
                  " does not divide size %" G_GINT64_FORMAT,
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
  if (b->nscope == PARTIR_MAX_REGIONS)
    return NULL;
  b->scope[b->nscope++] = pt->name;
  const Term *body = build(b, pt->args[0]);
  b->nscope--;
  if (!body)
    return NULL;
  int64_t dim = 0;
  if (pt->kind == PT_TILE && !int_of(b, &pt->dim, &dim))
    return NULL;
  const Term *t = pt->kind == PT_TILE
                      ? term_tile((int)CLAMP(dim, -1, PARTIR_MAX_RANK), range,
                                  axis, body, e->why)
                      : term_sum(range, axis, body, e->why);
  return t;
}

static const Term *build(Builder *b, const Pat *pt) {
  Env *e = b->env;
  switch (pt->kind) {
  case PT_VAR:
    return build_var(b, term_var(e, pt->name), NULL, NULL);
  case PT_BIND:
    return build_bind(b, pt->name);
  case PT_SUBST: {
    const Pat *sp = pt->args[1];
    const Term *s = sp->kind == PT_BIND
                        ? build_bind(b, sp->name)
                        : build_var(b, term_var(e, sp->name), NULL, NULL);
    if (!s)
      return NULL;
    return build_var(b, term_var(e, pt->args[0]->name), pt->name, s);
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
  e->nterms = e->nints = e->nattrs = e->naxes = e->nbinders = e->nscope = 0;
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
    Builder b = {.env = e};
    out = build(&b, rule->rhs);
  } else if (!diag_any(why)) {
    diag_reason(why, "'%s' does not match here", rule->name);
  }
  g_free(e);
  return out;
}
