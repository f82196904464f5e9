/* gather.c — the kernels of gather and dynamic_slice: data movement at
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
 * copied as stored, without looking at their values.  The loops poll
 * 'partir_interrupt' every KERNEL_POLL elements, as kernels.c's do.
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

Tensor *kernel_gather_op(const Term *t, Tensor *const *args) {
  GatherDims g;
  gather_dims_of(t, &g);
  const Tensor *x = args[0], *ids = args[1];
  const Type *ty = t->type;
  int64_t xs[PARTIR_MAX_RANK], is[PARTIR_MAX_RANK];
  tensor_strides(x->type, xs);
  tensor_strides(ids->type, is);
  GatherDim dim[PARTIR_MAX_RANK];
  for (int d = 0; d < ty->rank; d++)
    dim[d] = gather_result_dim(&g, d);
  Tensor *out = tensor_new(ty);
  int64_t n = type_numel(ty), idx[PARTIR_MAX_RANK] = {0};
  for (int64_t k = 0; k < n; k++) {
    if ((k & (KERNEL_POLL - 1)) == 0 && partir_interrupt)
      break;
    /* the offset of this element's index vector in 'ids' (component 0),
     * and the operand position of its batch and offset dims */
    int64_t at = 0, from = 0;
    for (int d = 0; d < ty->rank; d++) {
      if (dim[d].offset) {
        from += idx[d] * xs[dim[d].operand];
        continue;
      }
      at += idx[d] * is[dim[d].indices];
      if (dim[d].operand >= 0) /* a batching dim */
        from += idx[d] * xs[dim[d].operand];
    }
    int64_t step =
        g.index_vector_dim < ids->type->rank ? is[g.index_vector_dim] : 0;
    for (int c = 0; c < g.nstart; c++) {
      int64_t od = g.start_index_map[c];
      int64_t s = clamp_start(tensor_get_int(ids, at + c * step),
                              x->type->dims[od] - g.slice_sizes[od]);
      from += s * xs[od];
    }
    copy_element(out, k, x, from);
    next_index(ty, idx);
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
