/* threads.h — the threaded runtime's collectives (codegen/threads.c):
 * the devices of one run are threads of this process, and they exchange
 * in shared memory, reading one another's buffers in place.
 *
 * The runtime is a pair of SpmdRuntime hooks (src/spmd/spmd.h): spmd_run
 * connects the devices of a mesh, runs each on its thread with its
 * Collectives as 'kernel_comm', and disconnects them.  Compiled code
 * calls 'collective_into' on its buffers (codegen_rt_collective); the
 * interpreter calls 'collective' on tensors.  Results equal the SPMD
 * simulator's bit for bit.
 */
#ifndef PARTIR_CODEGEN_THREADS_H
#define PARTIR_CODEGEN_THREADS_H

#include "eval/eval.h"

/* An all_reduce whose operand has at least this many bytes is reduced a
 * slice per device (each device sums 1/N of the elements over the
 * group and writes them to every member's result); a smaller one by
 * every device on its own. */
#define THREADS_SPLIT_BYTES ((gsize)64 << 10)

/* The collectives of the 'ndevices' devices of 'mesh' (row-major, the
 * simulator's numbering), one each; 'data' is unused.  They implement
 * every entry of Collectives.  'mesh' is copied. */
Collectives **threads_connect(void *data, const Mesh *mesh, int ndevices);
/* Frees what threads_connect made, once no device uses it. */
void threads_disconnect(void *data, Collectives **devices);

#endif
