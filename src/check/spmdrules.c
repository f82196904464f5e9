/* spmdrules.c — the [spmd] rules checked for meaning.
 *
 * An [spmd] rule rewrites a local term of an SPMD program, whose meaning
 * depends on what the other devices hold.  Each instance is built from
 * the rule's left side: every variable a fresh argument with a random
 * shape, every unwritten attribute random (axes: a list of the mesh
 * {x=2, y=3}; size: their product; anything else: a dimension of the
 * first operand).  Both sides then run as one-result SPMD programs on the
 * simulated devices (spmd/simulate.c) with every argument and the result split
 * along dimension 0 over both axes, so that every device holds different
 * data and the assembled result shows every device's local value.
 */
#include "check/check.h"

#include <string.h>

#define INST_MAX_ARGS 8

typedef struct Inst {
  GRand *rng;
  Mesh mesh;
  const char *vars[RULE_MAX_VARS]; /* term variables -> args[i] */
  const Term *args[INST_MAX_ARGS];
  int nargs;
  const char *attr_names[RULE_MAX_VARS];
  AttrValue attr_vals[RULE_MAX_VARS]; /* shallow: items owned by 'lists' */
  int nattrs;
  GPtrArray *lists; /* AttrValue item arrays to free */
  Diag *why;
} Inst;

static const AttrValue *inst_attr(Inst *in, const char *name) {
  for (int i = 0; i < in->nattrs; i++)
    if (in->attr_names[i] == name)
      return &in->attr_vals[i];
  return NULL;
}

static void inst_bind(Inst *in, const char *name, AttrValue v) {
  if (name && in->nattrs < RULE_MAX_VARS) {
    in->attr_names[in->nattrs] = name;
    in->attr_vals[in->nattrs++] = v;
  }
}

static AttrValue random_axes(Inst *in) {
  static const int orders[4][2] = {{0, -1}, {1, -1}, {0, 1}, {1, 0}};
  const int *o = orders[g_rand_int_range(in->rng, 0, 4)];
  int n = o[1] < 0 ? 1 : 2;
  AttrValue v = {.kind = AV_LIST, .count = n};
  v.items = g_new0(AttrValue, 2);
  g_ptr_array_add(in->lists, v.items);
  for (int i = 0; i < n; i++)
    v.items[i] = (AttrValue){.kind = AV_SYMBOL, .sym = in->mesh.names[o[i]]};
  return v;
}

static int64_t axes_size(Inst *in, const AttrValue *axes) {
  int64_t k = 1;
  for (int i = 0; axes && axes->kind == AV_LIST && i < axes->count; i++)
    k *= mesh_axis_size(&in->mesh, axes->items[i].sym);
  return k;
}

static const Term *instantiate(Inst *in, const Pat *pt);

/* The attributes of an operator pattern, unwritten ones chosen. */
static const Attrs *inst_attrs(Inst *in, const Pat *pt, const Term *first) {
  const char **keys = g_new(const char *, (gsize)MAX(pt->nattrs, 1));
  AttrValue *vals = g_new0(AttrValue, (gsize)MAX(pt->nattrs, 1));
  AttrValue axes = {.kind = AV_LIST, .count = 0};
  for (int i = 0; i < pt->nattrs; i++) { /* keys are sorted: axes first */
    const char *key = pt->attr_keys[i];
    const IntRef *r = &pt->attr_vals[i];
    const AttrValue *bound = r->var ? inst_attr(in, r->var) : NULL;
    AttrValue v;
    if (!r->var)
      v = (AttrValue){.kind = AV_INT, .i = r->value};
    else if (bound)
      v = *bound;
    else if (strcmp(key, "axes") == 0)
      v = random_axes(in);
    else if (strcmp(key, "size") == 0)
      v = (AttrValue){.kind = AV_INT, .i = axes_size(in, &axes)};
    else
      v = (AttrValue){
          .kind = AV_INT,
          .i = g_rand_int_range(in->rng, 0, first ? first->type->rank : 1)};
    if (r->var && !bound)
      inst_bind(in, r->var, v);
    keys[i] = key;
    vals[i] = attr_value_copy(&v);
    if (strcmp(key, "axes") == 0)
      axes = v;
  }
  return attrs_intern(pt->nattrs, keys, vals);
}

static const Term *instantiate(Inst *in, const Pat *pt) {
  switch (pt->kind) {
  case PT_VAR: {
    for (int i = 0; i < in->nargs; i++)
      if (in->vars[i] == pt->name)
        return in->args[i];
    if (in->nargs == INST_MAX_ARGS)
      return NULL;
    int64_t dims[3];
    int rank = g_rand_int_range(in->rng, 1, 4);
    for (int d = 0; d < rank; d++)
      dims[d] = g_rand_boolean(in->rng) ? 6 : 12; /* split by 2, 3 and 6 */
    const Term *a = term_arg(in->nargs, type_tensor(DT_F32, rank, dims));
    in->vars[in->nargs] = pt->name;
    in->args[in->nargs++] = a;
    return a;
  }
  case PT_OP: {
    const Term *args[SPEC_MAX_OPERANDS];
    if (pt->nargs > SPEC_MAX_OPERANDS)
      return NULL;
    for (int i = 0; i < pt->nargs; i++)
      if (!(args[i] = instantiate(in, pt->args[i])))
        return NULL;
    const Attrs *attrs = inst_attrs(in, pt, pt->nargs ? args[0] : NULL);
    return term_op(pt->op, pt->nargs, args, attrs, NULL, in->why);
  }
  default:
    diag_reason(in->why, "an [spmd] rule may match only operators and "
                         "variables");
    return NULL;
  }
}

/* A one-result SPMD program: arguments and the result split along
 * dimension 0 over every axis of the mesh. */
static Func *spmd_func(const Inst *in, const Term *result) {
  Func *f = g_new0(Func, 1);
  f->name = g_strdup("instance");
  f->nargs = in->nargs;
  f->arg_names = g_new0(char *, (gsize)in->nargs + 1);
  f->arg_types = g_new0(const Type *, (gsize)MAX(in->nargs, 1));
  f->spmd = g_new0(SpmdInfo, 1);
  f->spmd->mesh = in->mesh;
  f->spmd->arg_dists = g_new0(Dist, (gsize)MAX(in->nargs, 1));
  f->spmd->result_dists = g_new0(Dist, 1);
  Dist split = {.rank = 0};
  split.naxes[0] = in->mesh.naxes;
  for (int k = 0; k < in->mesh.naxes; k++)
    split.axes[0][k] = in->mesh.names[k];
  for (int i = 0; i < in->nargs; i++) {
    f->arg_names[i] = g_strdup_printf("a%d", i);
    f->arg_types[i] = in->args[i]->type;
    f->spmd->arg_dists[i] = split;
    f->spmd->arg_dists[i].rank = in->args[i]->type->rank;
  }
  f->nresults = 1;
  f->result_types = g_new(const Type *, 1);
  f->result_types[0] = result->type;
  f->spmd->result_dists[0] = split;
  f->spmd->result_dists[0].rank = result->type->rank;
  f->body = term_tuple(1, &result);
  return f;
}

static const Type *global_of(const Mesh *m, const Type *local) {
  return type_with_dim(local, 0, local->dims[0] * mesh_devices(m));
}

/* Runs both sides on the same inputs; FALSE with the reason in 'why'. */
static gboolean same_on_devices(const Inst *in, const Term *lhs,
                                const Term *rhs, guint32 seed, Diag *why) {
  if (lhs->type != rhs->type) {
    g_autofree char *a = type_to_string(lhs->type);
    g_autofree char *b = type_to_string(rhs->type);
    diag_reason(why, "the right side is a %s, the left side a %s", b, a);
    return FALSE;
  }
  Func *fl = spmd_func(in, lhs), *fr = spmd_func(in, rhs);
  Tensor *inputs[INST_MAX_ARGS + 1] = {NULL};
  GRand *rng = g_rand_new_with_seed(seed);
  for (int i = 0; i < in->nargs; i++) {
    inputs[i] = tensor_new(global_of(&in->mesh, in->args[i]->type));
    tensor_fill_random(inputs[i], rng);
  }
  g_rand_free(rng);
  GError *error = NULL;
  GPtrArray *a = spmd_simulate(fl, inputs, why, &error);
  GPtrArray *b = a ? spmd_simulate(fr, inputs, why, &error) : NULL;
  gboolean ok = b && tensor_results_agree(a, b, why);
  if (error) {
    diag_reason(why, "%s", error->message);
    g_error_free(error);
  }
  if (a)
    g_ptr_array_unref(a);
  if (b)
    g_ptr_array_unref(b);
  for (int i = 0; i < in->nargs; i++)
    tensor_unref(inputs[i]);
  func_free(fl);
  func_free(fr);
  return ok;
}

static void print_instance(GString *out, const Inst *in, const Term *t) {
  Func *f = spmd_func(in, t);
  print_func(out, NULL, f);
  func_free(f);
}

static gboolean new_instance(Inst *in, GRand *rng, Diag *why) {
  *in = (Inst){
      .rng = rng, .why = why, .lists = g_ptr_array_new_with_free_func(g_free)};
  gboolean meshed = mesh_parse("x=2,y=3", &in->mesh, why);
  g_assert(meshed);
  return meshed;
}

gboolean check_spmd_rule_type(const Rule *r, GRand *rng, Diag *msg) {
  g_autoptr(Diag) why = diag_new(NULL);
  gboolean changes = FALSE;
  for (int i = 0; i < 16 && !changes; i++) {
    Inst in;
    new_instance(&in, rng, why);
    const Term *lhs = instantiate(&in, r->lhs);
    const Term *rhs = lhs ? match_apply(r, lhs, NULL, 0, why) : NULL;
    if (rhs && rhs->type != lhs->type) {
      g_autofree char *a = type_to_string(lhs->type);
      g_autofree char *b = type_to_string(rhs->type);
      diag_reason(msg, "%s becomes %s", a, b);
      changes = TRUE;
    }
    g_ptr_array_unref(in.lists);
  }
  return changes;
}

int check_spmd_rule(const Rule *r, GRand *rng, int tries, GString *out) {
  int checked = 0;
  g_autoptr(Diag) why = diag_new(NULL);
  for (int i = 0; i < tries * 8 && checked < tries; i++) {
    Inst in;
    new_instance(&in, rng, why);
    const Term *lhs = instantiate(&in, r->lhs);
    const Term *rhs = lhs ? match_apply(r, lhs, NULL, 0, why) : NULL;
    gboolean ok = TRUE;
    if (rhs) {
      g_autoptr(Diag) fail = diag_new(NULL);
      ok = same_on_devices(&in, lhs, rhs, g_rand_int(rng), fail);
      if (!ok) {
        g_string_append_printf(out, "FAIL  %s: %s\nbefore:\n", r->name,
                               diag_text(fail));
        print_instance(out, &in, lhs);
        g_string_append(out, "after:\n");
        print_instance(out, &in, rhs);
      }
      checked++;
    }
    g_ptr_array_unref(in.lists);
    if (!ok)
      return -1;
  }
  return checked;
}
