/* train.c — a model's training step, as an ordinary program:
 *
 *   (parameters, optimizer state, batch) -> (new parameters, new
 *                                            optimizer state, loss)
 *
 * The model is the module's entry function; its first result is the
 * prediction.  The loss compares it with a target (a new argument of its
 * type, after the batch) or sums it; grad.c gives each parameter's
 * gradient, and the optimizer's update is written out elementwise, so
 * every later stage (tactics, lowering, the compiler) sees one program.
 * The argument order, the names and the constants are in docs/grad.md.
 */
#include "rewrite/rewrite.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------- term building */

typedef struct Builder {
  Diag *err;
  gboolean failed;
  GHashTable *stop; /* values the backward pass does not go through */
} Builder;

static const Term *check(Builder *b, const Term *t) {
  if (!t)
    b->failed = TRUE;
  return t;
}

static const Term *bin(Builder *b, Op op, const Term *x, const Term *y) {
  if (b->failed)
    return NULL;
  const Term *args[2] = {x, y};
  return check(b, term_op(op, 2, args, attrs_empty(), NULL, b->err));
}

static const Term *un(Builder *b, Op op, const Term *x) {
  if (b->failed)
    return NULL;
  return check(b, term_op(op, 1, &x, attrs_empty(), NULL, b->err));
}

static const Term *splat(Builder *b, double v, const Type *ty) {
  return b->failed ? NULL : check(b, term_splat(v, ty, b->err));
}

static const Type *scalar_of(const Type *t) {
  return type_tensor(t->dtype, 0, NULL);
}

/* reduce_sum over 'n' dimensions from 'first' */
static const Term *sum_dims(Builder *b, const Term *x, int first, int n) {
  if (b->failed)
    return NULL;
  int64_t dims[PARTIR_MAX_RANK], kept[PARTIR_MAX_RANK];
  int nk = 0;
  for (int i = 0; i < n; i++)
    dims[i] = first + i;
  for (int i = 0; i < x->type->rank; i++)
    if (i < first || i >= first + n)
      kept[nk++] = x->type->dims[i];
  return check(b, term_op(OP_REDUCE_SUM, 1, &x, attrs_ints("dims", n, dims),
                          type_tensor(x->type->dtype, nk, kept), b->err));
}

/* broadcast_in_dim of 'x' (the leading dimensions of 'to') to 'to' */
static const Term *widen(Builder *b, const Term *x, const Type *to) {
  if (b->failed)
    return NULL;
  int64_t dims[PARTIR_MAX_RANK];
  for (int i = 0; i < x->type->rank; i++)
    dims[i] = i;
  return check(b, term_op(OP_BROADCAST_IN_DIM, 1, &x,
                          attrs_ints("dims", x->type->rank, dims), to, b->err));
}

static const Term *scaled(Builder *b, const Term *x, double by) {
  return bin(b, OP_MUL, x, splat(b, by, x ? x->type : NULL));
}

/* ---------------------------------------------------------------- loss */

static int64_t numel(const Type *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++)
    n *= t->dims[i];
  return n;
}

/* the mean of (p - y)^2 */
static const Term *mse(Builder *b, const Term *p, const Term *y) {
  const Term *e = bin(b, OP_SUB, p, y);
  const Term *total = sum_dims(b, bin(b, OP_MUL, e, e), 0, p->type->rank);
  return scaled(b, total, 1.0 / (double)numel(p->type));
}

/* softmax cross-entropy over the last dimension (the classes), the
 * target a probability per class, averaged over the rest:
 * -mean(sum(y * log_softmax(p))) with log_softmax = s - log(sum(exp(s))),
 * s = p - max(p).  The loss does not depend on the max, which is there
 * for range only: its cotangent is zero, and it is not differentiated
 * (JAX's logsumexp stops its gradient too).  So a prediction split over
 * its classes (Megatron's last layer) is not gathered for the backward
 * pass of a max. */
static const Term *xent(Builder *b, const Term *p, const Term *y) {
  int last = p->type->rank - 1;
  const Term *mx = NULL;
  if (!b->failed) {
    int64_t d = last, kept[PARTIR_MAX_RANK];
    for (int i = 0; i < last; i++)
      kept[i] = p->type->dims[i];
    mx = check(b, term_op(OP_REDUCE_MAX, 1, &p, attrs_ints("dims", 1, &d),
                          type_tensor(p->type->dtype, last, kept), b->err));
    if (mx)
      g_hash_table_add(b->stop, (gpointer)mx);
  }
  const Term *s = bin(b, OP_SUB, p, widen(b, mx, p->type));
  const Term *lse = un(b, OP_LOG, sum_dims(b, un(b, OP_EXP, s), last, 1));
  const Term *logp = bin(b, OP_SUB, s, widen(b, lse, p->type));
  const Term *total = sum_dims(b, bin(b, OP_MUL, y, logp), 0, p->type->rank);
  int64_t rows = numel(p->type) / MAX(p->type->dims[last], 1);
  return scaled(b, un(b, OP_NEG, total), 1.0 / (double)MAX(rows, 1));
}

/* ----------------------------------------------------------- the step */

typedef struct Signature {
  GPtrArray *names; /* char* */
  GPtrArray *types; /* const Type* */
} Signature;

static const Term *arg(Signature *s, const char *name, const Type *type) {
  g_ptr_array_add(s->names, g_strdup(name));
  g_ptr_array_add(s->types, (gpointer)type);
  return term_arg((int)s->types->len - 1, type);
}

/* 't' with argument i of the model replaced by args[i] */
static const Term *remap(const Term *t, const Term *const *args,
                         GHashTable *memo, Diag *err);

typedef struct Remap {
  const Term *const *args;
  GHashTable *memo;
  Diag *err;
  gboolean failed;
} Remap;

static const Term *remap_fn(void *ud, const Term *t) {
  Remap *r = ud;
  if (r->failed)
    return t;
  const Term *u = remap(t, r->args, r->memo, r->err);
  if (!u) {
    r->failed = TRUE;
    return t;
  }
  return u;
}

static const Term *remap(const Term *t, const Term *const *args,
                         GHashTable *memo, Diag *err) {
  if (t->kind == TM_ARG)
    return args[t->index];
  const Term *done = g_hash_table_lookup(memo, t);
  if (done)
    return done;
  Remap r = {args, memo, err, FALSE};
  const Term *u = term_map_args(t, remap_fn, &r, err);
  if (r.failed || !u)
    return NULL;
  g_hash_table_insert(memo, (gpointer)t, (gpointer)u);
  return u;
}

static gboolean is_param(const TrainOptions *o, const Func *f, int i) {
  if (!o->params)
    return i >= o->params_from;
  for (int k = 0; o->params[k]; k++)
    if (strcmp(o->params[k], f->arg_names[i]) == 0)
      return TRUE;
  return FALSE;
}

static gboolean check_options(const TrainOptions *o, const Func *f, Diag *err) {
  if (f->nresults < 1 || f->result_types[0]->kind != TY_TENSOR ||
      !dtype_is_float(f->result_types[0]->dtype)) {
    diag_reason(err, "grad: the model's first result must be a "
                     "floating-point tensor (its prediction)");
    return FALSE;
  }
  if (o->loss == LOSS_XENT && f->result_types[0]->rank < 1) {
    diag_reason(err, "grad: --loss xent needs a prediction with a class "
                     "dimension (the last)");
    return FALSE;
  }
  for (int k = 0; o->params && o->params[k]; k++) {
    for (int j = 0; j < k; j++)
      if (strcmp(o->params[j], o->params[k]) == 0) {
        diag_reason(err, "grad: parameter '%s' is named twice", o->params[k]);
        return FALSE;
      }
    gboolean found = FALSE;
    for (int i = 0; i < f->nargs; i++)
      found |= strcmp(o->params[k], f->arg_names[i]) == 0;
    if (!found) {
      g_autoptr(GPtrArray) names = g_ptr_array_new();
      for (int i = 0; i < f->nargs; i++)
        g_ptr_array_add(names, f->arg_names[i]);
      g_ptr_array_add(names, NULL);
      g_autofree char *hint =
          diag_did_you_mean(o->params[k], (const char *const *)names->pdata);
      diag_reason(err, "grad: the model has no argument '%s'%s", o->params[k],
                  hint);
      return FALSE;
    }
  }
  int n = 0;
  for (int i = 0; i < f->nargs; i++)
    if (is_param(o, f, i)) {
      n++;
      if (!dtype_is_float(f->arg_types[i]->dtype)) {
        diag_reason(err, "grad: parameter '%s' is not a floating-point tensor",
                    f->arg_names[i]);
        return FALSE;
      }
    }
  if (n == 0) {
    diag_reason(err, "grad: no parameters to differentiate (--wrt or "
                     "--params-from-arg)");
    return FALSE;
  }
  if (!(o->lr > 0) || !isfinite(o->lr)) {
    diag_reason(err, "grad: the learning rate must be a positive number");
    return FALSE;
  }
  return TRUE;
}

/* the optimizer's constants (docs/grad.md) */
#define MOMENTUM 0.9
#define ADAM_B1 0.9
#define ADAM_B2 0.999
#define ADAM_EPS 1e-8

/* Result 't', the new value of argument 'of' (NULL: of none). */
static void add_result(GPtrArray *results, GArray *updates, const Term *t,
                       const Term *of) {
  int a = of ? of->index : -1;
  g_ptr_array_add(results, (gpointer)t);
  g_array_append_val(updates, a);
}

typedef struct Update {
  const Term *p, *g;        /* the parameter and its gradient */
  const Term *m, *v;        /* its optimizer state, or NULL */
  const Term *p2, *m2, *v2; /* their new values */
} Update;

static void update(Builder *b, const TrainOptions *o, Update *u,
                   const Term *step2) {
  const Type *ty = u->p->type;
  switch (o->optimizer) {
  case OPT_SGD:
    u->p2 = bin(b, OP_SUB, u->p, scaled(b, u->g, o->lr));
    break;
  case OPT_MOMENTUM:
    u->m2 = bin(b, OP_ADD, scaled(b, u->m, MOMENTUM), u->g);
    u->p2 = bin(b, OP_SUB, u->p, scaled(b, u->m2, o->lr));
    break;
  case OPT_ADAM: {
    u->m2 =
        bin(b, OP_ADD, scaled(b, u->m, ADAM_B1), scaled(b, u->g, 1 - ADAM_B1));
    u->v2 = bin(b, OP_ADD, scaled(b, u->v, ADAM_B2),
                scaled(b, bin(b, OP_MUL, u->g, u->g), 1 - ADAM_B2));
    /* bias corrections 1 - beta^t, t the new step count */
    const Type *sc = scalar_of(ty);
    const Term *c1 = bin(b, OP_SUB, splat(b, 1, sc),
                         bin(b, OP_POW, splat(b, ADAM_B1, sc), step2));
    const Term *c2 = bin(b, OP_SUB, splat(b, 1, sc),
                         bin(b, OP_POW, splat(b, ADAM_B2, sc), step2));
    const Term *mhat = bin(b, OP_DIV, u->m2, widen(b, c1, ty));
    const Term *vhat = bin(b, OP_DIV, u->v2, widen(b, c2, ty));
    const Term *den =
        bin(b, OP_ADD, un(b, OP_SQRT, vhat), splat(b, ADAM_EPS, ty));
    u->p2 = bin(b, OP_SUB, u->p, scaled(b, bin(b, OP_DIV, mhat, den), o->lr));
    break;
  }
  }
}

/* names the value 't' (when it has none yet); takes 'name' */
static void name_result(Module *m, const Term *t, char *name) {
  if (t && !g_hash_table_contains(m->names, t))
    g_hash_table_insert(m->names, (gpointer)t, name);
  else
    g_free(name);
}

Module *grad_train_step(const RuleSet *rs, const Func *f, GHashTable *names,
                        const TrainOptions *o, Diag *err) {
  if (!check_options(o, f, err))
    return NULL;
  Signature sig = {g_ptr_array_new_with_free_func(g_free), g_ptr_array_new()};
  g_autofree const Term **args = g_new0(const Term *, (gsize)f->nargs + 1);
  int nparams = 0;
  for (int i = 0; i < f->nargs; i++)
    if (is_param(o, f, i)) {
      args[i] = arg(&sig, f->arg_names[i], f->arg_types[i]);
      nparams++;
    }
  g_autofree Update *u = g_new0(Update, (gsize)nparams);
  for (int i = 0, k = 0; i < f->nargs; i++)
    if (is_param(o, f, i))
      u[k++].p = args[i];
  for (int s = 0; s < 2; s++) /* optimizer state: m_, then v_ */
    for (int k = 0; k < nparams; k++) {
      const char *pn = sig.names->pdata[k];
      g_autofree char *n = g_strdup_printf("%s_%s", s ? "v" : "m", pn);
      if (s == 0 && o->optimizer != OPT_SGD)
        u[k].m = arg(&sig, n, u[k].p->type);
      if (s == 1 && o->optimizer == OPT_ADAM)
        u[k].v = arg(&sig, n, u[k].p->type);
    }
  const Type *pred_t = f->result_types[0];
  const Term *step =
      o->optimizer == OPT_ADAM ? arg(&sig, "step", scalar_of(pred_t)) : NULL;
  for (int i = 0; i < f->nargs; i++)
    if (!args[i])
      args[i] = arg(&sig, f->arg_names[i], f->arg_types[i]);
  const Term *target = o->loss != LOSS_SUM ? arg(&sig, "target", pred_t) : NULL;

  g_autoptr(GHashTable) stop = g_hash_table_new(NULL, NULL);
  Builder b = {err, FALSE, stop};
  g_autoptr(GHashTable) memo = g_hash_table_new(NULL, NULL);
  const Term *pred = remap(f->body->args[0], args, memo, err);
  b.failed = !pred;
  const Term *loss = NULL;
  if (!b.failed && o->loss == LOSS_SUM && pred->type->rank == 0)
    loss = pred;
  else if (!b.failed)
    loss = o->loss == LOSS_MSE    ? mse(&b, pred, target)
           : o->loss == LOSS_XENT ? xent(&b, pred, target)
                                  : sum_dims(&b, pred, 0, pred->type->rank);
  const Term *one = splat(&b, 1.0, scalar_of(pred_t));
  int nargs = (int)sig.types->len;
  g_autofree const Term **grads = g_new0(const Term *, (gsize)nargs);
  if (!b.failed && !grad_backward(rs, 1, &loss, &one, nargs, grads, stop, err))
    b.failed = TRUE;
  const Term *step2 =
      step ? bin(&b, OP_ADD, step, splat(&b, 1, step->type)) : NULL;
  for (int k = 0; k < nparams && !b.failed; k++) {
    u[k].g = grads[k] ? grads[k] : splat(&b, 0, u[k].p->type);
    update(&b, o, &u[k], step2);
  }
  if (b.failed) {
    g_ptr_array_free(sig.names, TRUE);
    g_ptr_array_free(sig.types, TRUE);
    return NULL;
  }
  /* the new values, each with the argument it updates */
  GPtrArray *results = g_ptr_array_new();
  g_autoptr(GArray) updates = g_array_new(FALSE, FALSE, sizeof(int));
  for (int k = 0; k < nparams; k++)
    add_result(results, updates, u[k].p2, u[k].p);
  for (int k = 0; k < nparams; k++)
    if (u[k].m2)
      add_result(results, updates, u[k].m2, u[k].m);
  for (int k = 0; k < nparams; k++)
    if (u[k].v2)
      add_result(results, updates, u[k].v2, u[k].v);
  if (step2)
    add_result(results, updates, step2, step);
  add_result(results, updates, loss, NULL);

  Module *m = module_new();
  Func *tf = g_new0(Func, 1);
  tf->name = g_strdup_printf("%s_train", f->name);
  tf->nargs = nargs;
  tf->arg_types = (const Type **)g_ptr_array_free(sig.types, FALSE);
  g_ptr_array_add(sig.names, NULL);
  tf->arg_names = (char **)g_ptr_array_free(sig.names, FALSE);
  tf->nresults = (int)results->len;
  tf->result_types = g_new(const Type *, results->len);
  for (guint i = 0; i < results->len; i++)
    tf->result_types[i] = ((const Term *)results->pdata[i])->type;
  tf->body = term_tuple((int)results->len, (const Term *const *)results->pdata);
  tf->result_updates = (int *)g_array_free(g_steal_pointer(&updates), FALSE);
  tf->loc = f->loc;
  g_ptr_array_free(results, TRUE);
  g_ptr_array_add(m->funcs, tf);
  /* the model's values keep their names in the step's forward pass */
  GHashTableIter it;
  gpointer from, to;
  g_hash_table_iter_init(&it, memo);
  while (names && g_hash_table_iter_next(&it, &from, &to)) {
    const char *name = g_hash_table_lookup(names, from);
    if (name && term_is_closed(from) && term_is_closed(to))
      name_result(m, to, g_strdup(name));
  }
  name_result(m, loss, g_strdup("loss"));
  for (int k = 0; k < nparams; k++) {
    const char *pn = tf->arg_names[k];
    name_result(m, u[k].p2, g_strdup_printf("%s_new", pn));
    name_result(m, u[k].m2, g_strdup_printf("m_%s_new", pn));
    name_result(m, u[k].v2, g_strdup_printf("v_%s_new", pn));
  }
  name_result(m, step2, g_strdup("step_new"));
  return m;
}

gboolean train_options_words(const char *loss, const char *optimizer,
                             TrainOptions *o, Diag *why) {
  static const char *const losses[] = {"sum", "mse", "xent", NULL};
  static const char *const optimizers[] = {"sgd", "momentum", "adam", NULL};
  if (loss) {
    int k = 0;
    while (losses[k] && strcmp(losses[k], loss) != 0)
      k++;
    if (!losses[k]) {
      diag_reason(why, "grad: the loss is sum, mse or xent, not '%s'", loss);
      return FALSE;
    }
    o->loss = (TrainLoss)k;
  }
  if (optimizer) {
    int k = 0;
    while (optimizers[k] && strcmp(optimizers[k], optimizer) != 0)
      k++;
    if (!optimizers[k]) {
      diag_reason(why, "grad: the optimizer is sgd, momentum or adam, not '%s'",
                  optimizer);
      return FALSE;
    }
    o->optimizer = (TrainOptimizer)k;
  }
  return TRUE;
}
