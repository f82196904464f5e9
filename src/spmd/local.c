/* local.c — each device builds its own chunk of a value it can make
 * without the others.
 *
 * Lowering takes a device's chunk of a value literally: shard(x) of the
 * whole x.  For a value that needs no input from other devices that
 * means building all of it and keeping a part: a GPT-3 layer's
 * 1x96x2048x2048 attention scale (a splat constant, 1.6 GB) on every
 * one of 8 devices.  This pass builds the chunk instead:
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
 * Each is the same value as before, of the same type: a redistribution
 * rule that the rule language cannot state (a splat is a property of
 * the constant's value, "d is not among dims" is no attribute test).
 */
#include "spmd/spmd.h"

typedef struct Local {
  GHashTable *memo;  /* Term -> rebuilt Term */
  GHashTable *names; /* value names rebuilt values keep, or NULL */
  Diag *err;
  gboolean changed;
} Local;

/* The shard's attributes with 'dim' set to 'dim'. */
static const Attrs *shard_along(const Attrs *a, int64_t dim) {
  const char **keys = g_new(const char *, (gsize)a->count);
  AttrValue *values = g_new0(AttrValue, (gsize)a->count);
  for (int i = 0; i < a->count; i++) {
    keys[i] = a->keys[i];
    values[i] = attr_value_copy(&a->values[i]);
    if (strcmp(a->keys[i], "dim") == 0)
      values[i] = (AttrValue){.kind = AV_INT, .i = dim};
  }
  return attrs_intern(a->count, keys, values);
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
    const AttrValue *dims = attrs_get(x->attrs, "dims");
    int from = -1; /* the dimension of a that becomes d */
    for (int i = 0; i < dims->count; i++)
      if (dims->items[i].i == d)
        from = i;
    if (from >= 0 && a->type->dims[from] > 1) {
      const Term *part =
          term_op(OP_SHARD, 1, &a, shard_along(sh->attrs, from), NULL, err);
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

static const Term *localize(void *ud, const Term *t) {
  Local *l = ud;
  if (t->nargs == 0)
    return t;
  const Term *done = g_hash_table_lookup(l->memo, t);
  if (done)
    return done;
  const Term *r = term_map_args(t, localize, l, l->err);
  g_assert(r); /* same types, no new nesting */
  if (r->kind == TM_OP && r->op == OP_SHARD) {
    const Term *chunk = build_chunk(r, r->args[0], l->err);
    if (chunk) {
      g_assert(chunk->type == r->type);
      r = chunk;
      l->changed = TRUE;
    }
  }
  replace_inherit_name(l->names, t, r);
  g_hash_table_insert(l->memo, (gpointer)t, (gpointer)r);
  return r;
}

const Term *spmd_build_chunks(const Term *body, GHashTable *names,
                              gboolean *changed) {
  Local l = {g_hash_table_new(NULL, NULL), names, diag_new(NULL), FALSE};
  const Term *out = localize(&l, body);
  g_hash_table_unref(l.memo);
  diag_free(l.err);
  *changed = l.changed;
  return out;
}
