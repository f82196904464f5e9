/* runtime.c — what the generated code calls back into.
 *
 * A collective: the generated code passes the term and its buffers; the
 * operand goes, as a tensor, to the Collectives of the device whose
 * thread runs the code (kernel_comm, set by spmd_run), and the result
 * comes back into the code's buffer.  The copies make it correct, not
 * fast: the threaded runtime's own collectives will read and write the
 * buffers in place.
 */
#include "codegen/internal.h"

void codegen_rt_collective(const Term *t, const void *in, void *out) {
  Tensor *x = tensor_new(t->args[0]->type);
  memcpy(x->data, in, tensor_type_bytes(x->type));
  Tensor *r = kernel_comm->collective(kernel_comm, t, x);
  memcpy(out, r->data, tensor_type_bytes(t->type));
  tensor_unref(r);
  tensor_unref(x);
}
