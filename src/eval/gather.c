/* gather.c — the kernels of gather and dynamic_slice, and of their
 * transposes scatter_add and dynamic_update_slice: data movement at
 * positions read from tensors at run time.
 *
 * requires: the Term type-checked (typerule.c, core/gather.c), so the
 * dimension numbers are consistent with the operand types.
 *
 * Both walk the result in row-major order and copy, for each element,
 * the operand element StableHLO names (core/gather.c): a start position
 * read from the indices (gather) or from the scalar operands
 * (dynamic_slice), each component clamped so that the slice fits in the
 * operand, plus the element's own offset within the slice.  Elements are
 * copied as stored, without looking at their values.  scatter_add and
 * dynamic_update_slice start from a copy of their operand and walk their
 * updates the same way, adding (a window whose start does not fit is
 * left out, as XLA's scatter does) or writing (starts clamped).  The
 * loops poll 'partir_interrupt' every KERNEL_POLL elements, as kernels.c's do.
 */
#include "eval/eval.h"

/* 'v' clamped to [0, hi] (hi >= 0: a slice never exceeds its operand). */
static int64_t clamp_start(int64_t v, int64_t hi) {
  return v < 0 ? 0 : v > hi ? hi : v;
}

/* Steps the row-major multi-index 'idx' over 'ty' to the next element. */
static void next_index(const Type *ty, int64_t *idx) {
  for (int d = ty->rank - 1; d >= 0; d--) {
    if (++idx[d] < ty->dims[d])
      return;
    idx[d] = 0;
  }
}

static void copy_element(Tensor *out, int64_t to, const Tensor *src,
                         int64_t from) {
  gsize width = dtype_storage_bytes(src->type->dtype);
  memcpy((char *)out->data + to * (int64_t)width,
         (const char *)src->data + from * (int64_t)width, width);
}

/* The walk shared by gather and scatter_add: for element 'idx' of the
 * gather result (or of scatter_add's updates, the same shape), the
 * operand offset StableHLO names, in '*from'.  A start that does not fit
 * is clamped (gather) or, when 'drop', the element has no place (a
 * scatter leaves its window out): FALSE. */
typedef struct Walk {
  GatherDims g;
  GatherDim dim[PARTIR_MAX_RANK];
  int rank;                    /* of the result or updates */
  int64_t xs[PARTIR_MAX_RANK]; /* operand strides */
  int64_t is[PARTIR_MAX_RANK]; /* indices strides */
  const Type *x;               /* operand type */
  const Tensor *ids;
} Walk;

static void walk_init(Walk *w, const Term *t, const Type *x, const Tensor *ids,
                      int rank) {
  gather_dims_of(t, &w->g);
  w->x = x;
  w->ids = ids;
  w->rank = rank;
  tensor_strides(x, w->xs);
  tensor_strides(ids->type, w->is);
  for (int d = 0; d < rank; d++)
    w->dim[d] = gather_result_dim(&w->g, d);
}

static gboolean walk_position(const Walk *w, const int64_t *idx, gboolean drop,
                              int64_t *from) {
  const GatherDims *g = &w->g;
  /* the offset of this element's index vector in 'ids' (component 0),
   * and the operand position of its batch and offset dims */
  int64_t at = 0;
  *from = 0;
  for (int d = 0; d < w->rank; d++) {
    if (w->dim[d].offset) {
      *from += idx[d] * w->xs[w->dim[d].operand];
      continue;
    }
    at += idx[d] * w->is[w->dim[d].indices];
    if (w->dim[d].operand >= 0) /* a batching dim */
      *from += idx[d] * w->xs[w->dim[d].operand];
  }
  int64_t step =
      g->index_vector_dim < w->ids->type->rank ? w->is[g->index_vector_dim] : 0;
  for (int c = 0; c < g->nstart; c++) {
    int64_t od = g->start_index_map[c];
    int64_t hi = w->x->dims[od] - g->slice_sizes[od];
    int64_t v = tensor_get_int(w->ids, at + c * step);
    if (drop && (v < 0 || v > hi))
      return FALSE;
    *from += clamp_start(v, hi) * w->xs[od];
  }
  return TRUE;
}

Tensor *kernel_gather_op(const Term *t, Tensor *const *args) {
  const Tensor *x = args[0];
  const Type *ty = t->type;
  Walk w;
  walk_init(&w, t, x->type, args[1], ty->rank);
  Tensor *out = tensor_new(ty);
  int64_t n = type_numel(ty), idx[PARTIR_MAX_RANK] = {0};
  for (int64_t k = 0; k < n; k++) {
    if ((k & (KERNEL_POLL - 1)) == 0 && partir_interrupt)
      break;
    int64_t from;
    walk_position(&w, idx, FALSE, &from);
    copy_element(out, k, x, from);
    next_index(ty, idx);
  }
  return out;
}

/* Element 'j' of 'u' added to element 'k' of 'out' (same dtype), rounded
 * to it at once, as an add operator would: so the result depends on the
 * order, which is the updates' row-major order, as the compiled kernel's
 * (codegen/kernel.c). */
static void add_element(Tensor *out, int64_t k, const Tensor *u, int64_t j) {
  if (dtype_is_float(out->type->dtype))
    tensor_set_float(
        out, k,
        tensor_round_value(out->type->dtype,
                           tensor_get_float(out, k) + tensor_get_float(u, j)));
  else
    tensor_set_int(out, k,
                   (int64_t)((uint64_t)tensor_get_int(out, k) +
                             (uint64_t)tensor_get_int(u, j)));
}

Tensor *kernel_scatter_add(const Term *t, Tensor *const *args) {
  const Tensor *x = args[0], *u = args[2];
  Walk w;
  walk_init(&w, t, x->type, args[1], u->type->rank);
  Tensor *out = tensor_new(x->type);
  memcpy(out->data, x->data, tensor_type_bytes(x->type));
  int64_t n = type_numel(u->type), idx[PARTIR_MAX_RANK] = {0};
  for (int64_t k = 0; k < n; k++) {
    if ((k & (KERNEL_POLL - 1)) == 0 && partir_interrupt)
      break;
    int64_t to;
    if (walk_position(&w, idx, TRUE, &to))
      add_element(out, to, u, k);
    next_index(u->type, idx);
  }
  return out;
}

Tensor *kernel_dynamic_slice(const Term *t, Tensor *const *args) {
  const Tensor *x = args[0];
  const Type *ty = t->type;
  int64_t xs[PARTIR_MAX_RANK], base = 0;
  tensor_strides(x->type, xs);
  for (int d = 0; d < ty->rank; d++)
    base += clamp_start(tensor_get_int(args[1 + d], 0),
                        x->type->dims[d] - ty->dims[d]) *
            xs[d];
  Tensor *out = tensor_new(ty);
  int64_t n = type_numel(ty), idx[PARTIR_MAX_RANK] = {0};
  for (int64_t k = 0; k < n; k++) {
    if ((k & (KERNEL_POLL - 1)) == 0 && partir_interrupt)
      break;
    int64_t from = base;
    for (int d = 0; d < ty->rank; d++)
      from += idx[d] * xs[d];
    copy_element(out, k, x, from);
    next_index(ty, idx);
  }
  return out;
}

Tensor *kernel_dynamic_update_slice(const Term *t, Tensor *const *args) {
  const Tensor *x = args[0], *u = args[1];
  const Type *ut = u->type;
  int64_t xs[PARTIR_MAX_RANK], base = 0;
  tensor_strides(x->type, xs);
  for (int d = 0; d < ut->rank; d++)
    base += clamp_start(tensor_get_int(args[2 + d], 0),
                        x->type->dims[d] - ut->dims[d]) *
            xs[d];
  Tensor *out = tensor_new(t->type);
  memcpy(out->data, x->data, tensor_type_bytes(x->type));
  int64_t n = type_numel(ut), idx[PARTIR_MAX_RANK] = {0};
  for (int64_t k = 0; k < n; k++) {
    if ((k & (KERNEL_POLL - 1)) == 0 && partir_interrupt)
      break;
    int64_t to = base;
    for (int d = 0; d < ut->rank; d++)
      to += idx[d] * xs[d];
    copy_element(out, to, u, k);
    next_index(ut, idx);
  }
  return out;
}
