/* gradcheck.c — the vjp rules checked: their types when the rules load,
 * their meaning by central finite differences of the interpreter.
 *
 * Each check runs on random applications of the operator (the instances
 * check-rules uses, check_random_op), made f64.  For a random cotangent
 * dz and a random direction v over every floating-point operand, the
 * vjps must give
 *
 *   sum_i <dx_i, v_i>  =  (<dz, f(x + h v)> - <dz, f(x - h v)>) / 2h
 *
 * which holds for the true derivative up to O(h^2) (h = 1e-6 on inputs
 * of magnitude 1: agreement to about 1e-7 relative; a wrong rule is off
 * by order 1).  Operands whose derivative has a pole or a kink near 0
 * (log, sqrt, pow, rem, relu ...) get inputs of magnitude 0.5 to 2, of
 * random sign unless the operator needs them positive.
 */
#include "check/check.h"

#include <math.h>
#include <string.h>

#define FD_STEP 1e-6
#define FD_TOLERANCE 1e-5

/* 't' with every floating-point value made f64 (arguments, constants,
 * converts' written types), the rest as it is */
static const Term *to_f64(const Term *t, GHashTable *memo, Diag *err) {
  const Term *done = g_hash_table_lookup(memo, t);
  if (done)
    return done;
  const Term *r = NULL;
  gboolean fl = t->type->kind == TY_TENSOR && dtype_is_float(t->type->dtype);
  const Type *ty = fl ? type_with_dtype(t->type, DT_F64) : t->type;
  if (t->kind == TM_ARG) {
    r = term_arg(t->index, ty);
  } else if (t->kind == TM_OP) {
    const Term *args[SPEC_MAX_OPERANDS];
    for (int i = 0; i < t->nargs && i < SPEC_MAX_OPERANDS; i++)
      if (!(args[i] = to_f64(t->args[i], memo, err)))
        return NULL;
    r = term_op(t->op, t->nargs, args, t->attrs,
                op_takes_written_type(t->op) ? ty : NULL, err);
  } else {
    diag_reason(err, "an instance with regions");
  }
  if (r)
    g_hash_table_insert(memo, (gpointer)t, (gpointer)r);
  return r;
}

static gboolean positive_domain(Op op) {
  switch (op) {
  case OP_LOG:
  case OP_SQRT:
  case OP_RSQRT:
  case OP_POW:
  case OP_LOG1P:
  case OP_REDUCE_PROD:
    return TRUE;
  default:
    return FALSE;
  }
}

static void fill(Tensor *x, GRand *rng, gboolean positive) {
  if (!dtype_is_float(x->type->dtype)) {
    tensor_fill_random(x, rng);
    return;
  }
  double *d = x->data;
  int64_t n = type_numel(x->type);
  for (int64_t k = 0; k < n; k++) {
    double m = g_rand_double_range(rng, 0.5, 2.0);
    d[k] = positive || g_rand_boolean(rng) ? m : -m;
  }
}

static double dot(const Tensor *a, const Tensor *b) {
  const double *x = a->data, *y = b->data;
  double s = 0;
  for (int64_t k = 0, n = type_numel(a->type); k < n; k++)
    s += x[k] * y[k];
  return s;
}

/* <dz, f(x + s h v)> */
static double probe(const Func *f, Tensor **x, Tensor **v, double s,
                    const Tensor *dz, GError **error) {
  g_autofree Tensor **in = g_new0(Tensor *, (gsize)f->nargs + 1);
  for (int i = 0; i < f->nargs; i++) {
    in[i] = tensor_new(x[i]->type);
    memcpy(in[i]->data, x[i]->data, tensor_type_bytes(x[i]->type));
    if (v[i]) {
      double *d = in[i]->data;
      const double *dv = v[i]->data;
      for (int64_t k = 0, n = type_numel(x[i]->type); k < n; k++)
        d[k] += s * FD_STEP * dv[k];
    }
  }
  GPtrArray *out = interp_run(f, in, error);
  for (int i = 0; i < f->nargs; i++)
    tensor_unref(in[i]);
  if (!out)
    return NAN;
  double r = dot(g_ptr_array_index(out, 0), dz);
  g_ptr_array_unref(out);
  return r;
}

typedef struct Instance {
  Func f;          /* the application, f64 */
  Func g;          /* (args..., dz) -> the operands' cotangents */
  const Term **ct; /* per argument, or NULL */
} Instance;

static void instance_clear(Instance *in) {
  g_free(in->f.arg_types);
  g_free(in->f.result_types);
  g_free(in->g.arg_types);
  g_free(in->g.result_types);
  g_free(in->ct);
}

/* The instance of 'm' made f64, and its cotangents; FALSE + err when the
 * rule cannot be applied to it. */
static gboolean instance(const RuleSet *rs, Module *m, Instance *in,
                         Diag *err) {
  const Func *f0 = module_entry(m);
  g_autoptr(GHashTable) memo = g_hash_table_new(NULL, NULL);
  const Term *y = to_f64(f0->body->args[0], memo, err);
  if (!y)
    return FALSE;
  int n = f0->nargs;
  in->f = (Func){.name = f0->name, .nargs = n, .nresults = 1};
  in->f.arg_types = g_new(const Type *, (gsize)n + 1);
  in->f.arg_names = f0->arg_names;
  for (int i = 0; i < n; i++) {
    const Type *t = f0->arg_types[i];
    in->f.arg_types[i] =
        dtype_is_float(t->dtype) ? type_with_dtype(t, DT_F64) : t;
  }
  in->f.result_types = g_new(const Type *, 1);
  in->f.result_types[0] = y->type;
  in->f.body = term_tuple(1, &y);
  const Term *dz = term_arg(n, y->type);
  in->ct = g_new0(const Term *, (gsize)n);
  if (!grad_backward(rs, 1, &y, &dz, n, in->ct, NULL, err))
    return FALSE;
  in->g = (Func){.name = f0->name, .nargs = n + 1, .nresults = n};
  in->g.arg_types = g_new(const Type *, (gsize)n + 1);
  memcpy(in->g.arg_types, in->f.arg_types, sizeof(const Type *) * (gsize)n);
  in->g.arg_types[n] = y->type;
  in->g.result_types = g_new(const Type *, (gsize)MAX(n, 1));
  const Term **cts = g_newa(const Term *, (gsize)MAX(n, 1));
  int k = 0;
  for (int i = 0; i < n; i++)
    if (in->ct[i]) {
      in->g.result_types[k] = in->ct[i]->type;
      cts[k++] = in->ct[i];
    }
  in->g.nresults = k;
  in->g.body = term_tuple(k, cts);
  return TRUE;
}

/* One finite-difference comparison on 'm'; -1 after writing why to
 * 'out', 0 when the instance has no differentiable operand, 1 when it
 * agrees. */
static int check_instance(const RuleSet *rs, Op op, Module *m, GRand *rng,
                          GString *out) {
  Instance in = {0};
  g_autoptr(Diag) err = diag_new(NULL);
  int n = module_entry(m)->nargs;
  if (!instance(rs, m, &in, err)) {
    g_string_append_printf(out, "FAIL  vjp %-20s %s\n", op_name(op),
                           diag_text(err));
    instance_clear(&in);
    return -1;
  }
  int status = 0;
  g_autofree Tensor **x = g_new0(Tensor *, (gsize)n + 1);
  g_autofree Tensor **v = g_new0(Tensor *, (gsize)n + 1);
  for (int i = 0; i < n; i++) {
    x[i] = tensor_new(in.f.arg_types[i]);
    fill(x[i], rng, positive_domain(op));
    if (in.ct[i]) {
      v[i] = tensor_new(in.f.arg_types[i]);
      fill(v[i], rng, FALSE);
    }
  }
  Tensor *dz = tensor_new(in.f.result_types[0]);
  fill(dz, rng, FALSE);
  GError *error = NULL;
  if (in.g.nresults > 0) {
    x[n] = dz;
    GPtrArray *cts = interp_run(&in.g, x, &error);
    x[n] = NULL;
    double fd = error ? NAN
                      : (probe(&in.f, x, v, 1, dz, &error) -
                         probe(&in.f, x, v, -1, dz, &error)) /
                            (2 * FD_STEP);
    double analytic = 0;
    for (int i = 0, k = 0; cts && i < n; i++)
      if (in.ct[i])
        analytic += dot(g_ptr_array_index(cts, k++), v[i]);
    if (cts)
      g_ptr_array_unref(cts);
    double scale = MAX(1.0, fabs(fd));
    status = 1;
    if (error || !(fabs(fd - analytic) <= FD_TOLERANCE * scale)) {
      g_autoptr(GString) prog = g_string_new(NULL);
      print_func(prog, m, module_entry(m));
      g_string_append_printf(
          out,
          "FAIL  vjp %-20s finite differences give %.9g, the vjp %.9g%s%s "
          "on\n%s",
          op_name(op), fd, analytic, error ? ": " : "",
          error ? error->message : "", prog->str);
      status = -1;
    }
  }
  g_clear_error(&error);
  tensor_unref(dz);
  for (int i = 0; i < n; i++) {
    tensor_unref(x[i]);
    if (v[i])
      tensor_unref(v[i]);
  }
  instance_clear(&in);
  return status;
}

gboolean check_vjps(const RuleSet *rs, guint32 seed, int tries, GString *out) {
  GRand *rng = g_rand_new_with_seed(seed);
  int failed = 0, rules = 0;
  for (int op = 0; op < OP_COUNT_; op++) {
    const Vjp *v = rs->vjps[op];
    if (!v || v->kind == VJP_ZERO)
      continue;
    rules++;
    int checked = 0, bad = 0;
    for (int k = 0; k < tries && !bad; k++) {
      g_autoptr(Module) m =
          check_random_op((Op)op, seed * 7919u + (guint32)(op * 131 + k));
      if (!m)
        continue;
      int r = check_instance(rs, (Op)op, m, rng, out);
      bad |= r < 0;
      checked += r > 0;
    }
    failed += bad;
    if (!bad)
      g_string_append_printf(out, "%s  vjp %-20s %d instance%s (%s:%d)\n",
                             checked ? "ok  " : "NONE", op_name((Op)op),
                             checked, checked == 1 ? "" : "s", v->src->name,
                             v->loc.line);
    if (!checked && !bad)
      failed++;
  }
  g_string_append_printf(out, "%d vjp rules, %d failed\n", rules, failed);
  g_rand_free(rng);
  return failed == 0;
}

gboolean check_vjp_types(const RuleSet *rs, Diag *errors) {
  gboolean ok = TRUE;
  for (int op = 0; op < OP_COUNT_; op++) {
    const Vjp *v = rs->vjps[op];
    if (!v || v->kind != VJP_WRITTEN)
      continue;
    for (guint32 k = 0; k < 3; k++) {
      g_autoptr(Module) m = check_random_op((Op)op, 17u + k);
      if (!m)
        continue;
      const Term *t = module_entry(m)->body->args[0];
      const Term *dz = term_arg(t->nargs, t->type);
      g_autoptr(Diag) why = diag_new(NULL);
      for (int i = 0; i < t->nargs && t->kind == TM_OP; i++)
        if (!vjp_cotangent(rs, t, i, dz, why) && diag_text(why)[0]) {
          Diag d;
          diag_init(&d, v->src);
          diag_error(&d, v->loc, "vjp '%s': %s", op_name((Op)op),
                     diag_text(why));
          diag_append(errors, &d);
          diag_clear(&d);
          ok = FALSE;
          k = 3;
          break;
        }
    }
  }
  return ok;
}
