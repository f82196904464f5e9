/* narrow.c — a device builds and moves the smallest form of a value.
 *
 * Lowering is literal: a device's chunk of a value is shard(x) of the
 * whole x, and a value needed whole is all_gather'ed where it is used.
 * Two kinds of value make that wasteful, and this pass rewrites them,
 * each into the same value of the same type (rules the rule language
 * cannot state: a splat is a property of a constant's value, and "the
 * operand dimension that becomes d" is no attribute test).
 *
 * A value a device can make without the others is built at the chunk's
 * shape, not whole and then cut (a GPT-3 layer's 1x96x2048x2048
 * attention scale, a splat of 1.6 GB, on every one of 8 devices):
 *
 *   shard(constant v){dim = d}          the splat v at the chunk's type
 *                                       (a dense constant stays: its
 *                                       chunks differ)
 *   shard(iota{dim = e}){dim = d}       the iota at the chunk's type,
 *                                       when d != e (along e the chunk's
 *                                       numbers depend on the device)
 *   shard(broadcast_in_dim(x)){dim = d} broadcast_in_dim at the chunk's
 *                                       type: of x itself when x does
 *                                       not have d (or has it as a
 *                                       size-1 dimension it broadcasts),
 *                                       else of shard(x) along the
 *                                       dimension of x that becomes d
 *
 * A broadcast is gathered as its operand, which is smaller (ZeRO's
 * layer-norm scales and biases are stored split and broadcast to the
 * activations' shape before their use):
 *
 *   all_gather(broadcast_in_dim(x)){dim = d}, d the image of x's
 *   dimension e (not a size-1 one)   ->  broadcast_in_dim(all_gather(x)
 *                                        {dim = e})
 */
#include "spmd/spmd.h"

typedef struct Narrow {
  GHashTable *memo;  /* Term -> rebuilt Term */
  GHashTable *names; /* value names rebuilt values keep, or NULL */
  Diag *err;
  gboolean changed;
} Narrow;

/* A collective's attributes with 'dim' set to 'dim'. */
static const Attrs *along(const Attrs *a, int64_t dim) {
  const char **keys = g_new(const char *, (gsize)a->count);
  AttrValue *values = g_new0(AttrValue, (gsize)a->count);
  for (int i = 0; i < a->count; i++) {
    keys[i] = a->keys[i];
    values[i] = strcmp(a->keys[i], "dim") == 0
                    ? (AttrValue){.kind = AV_INT, .i = dim}
                    : attr_value_copy(&a->values[i]);
  }
  return attrs_intern(a->count, keys, values);
}

/* The operand dimension of broadcast 'b' that becomes its dimension d,
 * or -1 when d is a dimension it adds or a size-1 one it widens. */
static int broadcast_source(const Term *b, int64_t d) {
  const AttrValue *dims = attrs_get(b->attrs, "dims");
  for (int i = 0; i < dims->count; i++)
    if (dims->items[i].i == d && b->args[0]->type->dims[i] > 1)
      return i;
  return -1;
}

/* The chunk 'sh' (a shard of 'x') built by the device, or NULL when x
 * is not a value it builds alone. */
static const Term *build_chunk(const Term *sh, const Term *x, Diag *err) {
  if (x->kind != TM_OP)
    return NULL;
  int64_t d = attrs_get_int(sh->attrs, "dim");
  switch (x->op) {
  case OP_CONSTANT: {
    Tensor *one = kernel_constant_splat(x);
    if (!one)
      return NULL;
    tensor_unref(one);
    return term_op(OP_CONSTANT, 0, NULL, x->attrs, sh->type, err);
  }
  case OP_IOTA:
    if (attrs_get_int(x->attrs, "dim") == d)
      return NULL;
    return term_op(OP_IOTA, 0, NULL, x->attrs, sh->type, err);
  case OP_BROADCAST_IN_DIM: {
    const Term *a = x->args[0];
    int from = broadcast_source(x, d);
    if (from >= 0) {
      const Term *part =
          term_op(OP_SHARD, 1, &a, along(sh->attrs, from), NULL, err);
      if (!part)
        return NULL;
      a = part;
    }
    return term_op(OP_BROADCAST_IN_DIM, 1, &a, x->attrs, sh->type, err);
  }
  default:
    return NULL;
  }
}

/* all_gather 'g' of broadcast 'b' as the broadcast of the gathered
 * operand, or NULL when the gathered dimension is not the operand's. */
static const Term *gather_operand(const Term *g, const Term *b, Diag *err) {
  if (b->kind != TM_OP || b->op != OP_BROADCAST_IN_DIM)
    return NULL;
  int from = broadcast_source(b, attrs_get_int(g->attrs, "dim"));
  if (from < 0)
    return NULL;
  const Term *a = b->args[0];
  const Term *whole =
      term_op(OP_ALL_GATHER, 1, &a, along(g->attrs, from), NULL, err);
  if (!whole)
    return NULL;
  return term_op(OP_BROADCAST_IN_DIM, 1, &whole, b->attrs, g->type, err);
}

static const Term *narrow(void *ud, const Term *t) {
  Narrow *l = ud;
  if (t->nargs == 0)
    return t;
  const Term *done = g_hash_table_lookup(l->memo, t);
  if (done)
    return done;
  const Term *r = term_map_args(t, narrow, l, l->err);
  g_assert(r); /* same types, no new nesting */
  const Term *smaller = NULL;
  if (r->kind == TM_OP && r->op == OP_SHARD)
    smaller = build_chunk(r, r->args[0], l->err);
  else if (r->kind == TM_OP && r->op == OP_ALL_GATHER)
    smaller = gather_operand(r, r->args[0], l->err);
  if (smaller) {
    g_assert(smaller->type == r->type);
    r = smaller;
    l->changed = TRUE;
  }
  replace_inherit_name(l->names, t, r);
  g_hash_table_insert(l->memo, (gpointer)t, (gpointer)r);
  return r;
}

/* 'narrow' rebuilds a term only where something below it changes, and
 * then into a different term (a smaller chunk is another term), so the
 * result is 'body' itself exactly when nothing changed. */
const Term *spmd_narrow_memo(const Term *body, GHashTable *memo) {
  Narrow l = {memo, NULL, diag_new(NULL), FALSE};
  const Term *out = narrow(&l, body);
  diag_free(l.err);
  return out;
}

const Term *spmd_narrow(const Term *body, GHashTable *names,
                        gboolean *changed) {
  Narrow l = {g_hash_table_new(NULL, NULL), names, diag_new(NULL), FALSE};
  const Term *out = narrow(&l, body);
  g_hash_table_unref(l.memo);
  diag_free(l.err);
  *changed = l.changed;
  return out;
}
