/* runtime.c — what the generated code calls back into.
 *
 * A collective: the generated code passes the term and its buffers to
 * the Collectives of the device whose thread runs the code (kernel_comm,
 * set by spmd_run).  A runtime that works on buffers (the threaded one,
 * threads.c) reads and writes them in place; one that only takes
 * tensors (the simulator's) gets the operand as a copy, and its result
 * is copied back.
 */
#include "codegen/internal.h"

void codegen_rt_collective(const Term *t, const void *in, void *out) {
  if (kernel_comm->collective_into) {
    kernel_comm->collective_into(kernel_comm, t, in, out);
    return;
  }
  Tensor *x = tensor_new(t->args[0]->type);
  memcpy(x->data, in, tensor_type_bytes(x->type));
  Tensor *r = kernel_comm->collective(kernel_comm, t, x);
  memcpy(out, r->data, tensor_type_bytes(t->type));
  tensor_unref(r);
  tensor_unref(x);
}
