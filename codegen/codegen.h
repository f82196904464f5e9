/* codegen.h — native code for a program on one device (layer 5).
 *
 * A function becomes LLVM IR through the LLVM-C API, is optimized for
 * the host CPU and loaded with ORC LLJIT, and runs on tensors
 * (docs/codegen.md).  Fast arithmetic (the default) computes each value
 * in its own type, within a stated bound of the interpreter's results;
 * exact arithmetic (CodegenOptions.exact) computes the interpreter's
 * bits.
 *
 *   codegen.c  the plan (a slot per value), compiling, running
 *   fuse.c     which values are computed inside their users' loops
 *   arena.c    where the computed values live during a run
 *   emit.c     the IR's entry: the schedule's calls and region loops
 *   kernel.c   a value's loop nest, its fused operands inside
 *   dot.c      contractions: strided matrix products
 *   gemm.c     the BLIS-style matrix-multiply kernel
 *   arith.c    one element: loads, stores, each operator
 *   mathfn.c   exp, log, tanh, logistic as inline polynomials
 *   ir.c       constants, loops, calls, functions
 *   profile.c  the time of each kernel (--profile)
 *   runtime.c  what the generated code calls (collectives)
 *   threads.c  the threaded runtime's collectives, in shared memory
 *   mpi.c      the MPI runtime: a process (rank) per device (HAVE_MPI)
 *   jit.c      the host's target machine, the O3 pipeline, LLJIT
 *   nvptx.c    NVIDIA GPUs: the plan's kernels as PTX, libdevice linked
 *   nvptx_plan.c  the GPU launch plan: kernels, cuBLAS, NCCL, in order
 *   cuda.c     the CUDA runtime: driver API, cuBLAS, NCCL (dlopen'ed)
 *   cuda_mpi.c the CUDA runtime under MPI: a GPU per rank (HAVE_MPI)
 *
 * Tiles and sums are loops; an SPMD program runs on a thread a device
 * (codegen_run_spmd).
 */
#ifndef PARTIR_CODEGEN_H
#define PARTIR_CODEGEN_H

#include "eval/eval.h"

/* A compiled function, ready to run. */
typedef struct Compiled Compiled;

/* How matrix products are computed. */
typedef enum {
  CODEGEN_BLAS_NONE,     /* the generated kernel */
  CODEGEN_BLAS_OPENBLAS, /* cblas_sgemm/dgemm for f32 and f64 */
} CodegenBlas;

/* Where the code runs. */
typedef enum {
  CODEGEN_TARGET_HOST,  /* this CPU, through LLJIT */
  CODEGEN_TARGET_NVPTX, /* NVIDIA GPUs: PTX kernels and a launch plan */
} CodegenTarget;

/* The GPU architectures the NVPTX target compiles for. */
#define CODEGEN_NVPTX_ARCHS "sm_80, sm_90"

/* What the code is compiled for.  Zero is the default: fast arithmetic
 * (each value computed in its own type), the generated matmul kernel,
 * no profiling, the host CPU. */
typedef struct CodegenOptions {
  CodegenTarget target;
  const char *arch; /* NVPTX: "sm_80" (NULL) or "sm_90" */
  /* the interpreter's arithmetic, bit for bit (doubles rounded on
   * store, libm's transcendentals, sums in double in its order) */
  gboolean exact;
  CodegenBlas blas;
  /* time each kernel and collective (codegen_profile) */
  gboolean profile;
} CodegenOptions;

/* Compiles 'f' (names from 'm', may be NULL) for the host CPU, an SPMD
 * program too (a device's program), as 'o' says (NULL: the defaults).
 * NULL with the reason in 'why'. */
Compiled *codegen_compile(const Module *m, const Func *f,
                          const CodegenOptions *o, Diag *why);
void codegen_free(Compiled *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Compiled, codegen_free)

/* Runs 'c' on 'args' (one per argument, of the function's types): its
 * results, new tensors, in order.  An SPMD program runs only on a
 * device (codegen_run_spmd). */
GPtrArray *codegen_run(Compiled *c, Tensor *const *args);

/* Runs SPMD program 'f', compiled as 'c', on one thread per device of its
 * mesh, on the global inputs: as spmd_simulate (scatter, run, gather),
 * each device running the compiled code, its collectives in shared
 * memory.  With 'steps' > 1, each device runs it that many times on the
 * inputs it holds, and 'step_seconds' (may be NULL) gets each step's
 * time (SpmdRuntime.steps).  NULL with the reason (diag) or the error. */
GPtrArray *codegen_run_spmd(Compiled *c, const Func *f,
                            Tensor *const *global_inputs, int steps,
                            double *step_seconds, Diag *diag, GError **error);

/* The register block of the generated matrix kernel for 'dt' on this
 * host: a product is computed in whole blocks of 'mr' rows by 'nr'
 * columns (the cost model's gemm_mr and gemm_nr, docs/cost.md). */
void codegen_gemm_block(DType dt, int *mr, int *nr);

/* Compiled with 'profile': the time each kernel and collective took,
 * summed over the runs so far (on a device thread: the first device's),
 * the largest first, as a table. */
void codegen_profile_report(Compiled *c, GString *out);

/* ------------------------------------------------------------------ mpi.c */

/* The MPI runtime (built when configure finds MPI, HAVE_MPI;
 * docs/runtime.md): each rank of an mpirun is a device of the mesh, rank
 * r the device numbered r row-major. */
#ifdef HAVE_MPI
/* Joins the ranks (MPI_Init): this process's 'rank' of 'ranks'.  FALSE
 * with the error when MPI cannot start. */
gboolean codegen_mpi_start(int *rank, int *ranks, GError **error);
/* Leaves them: 'status' 0 finalizes, once every rank is here (so each
 * has printed what it had to before mpirun sees one exit); any other
 * ends every rank at once (MPI_Abort), so that none is left waiting for
 * this one.  Nothing when MPI did not start. */
void codegen_mpi_stop(int status);
/* codegen_run_spmd with a rank per device: rank 0 passes the global
 * inputs and gets the global results; the other ranks pass NULL and get
 * an empty array.  The number of ranks must be the mesh's devices.
 * NULL with the reason (diag, on rank 0: the caller then ends every
 * rank with codegen_mpi_stop). */
GPtrArray *codegen_run_mpi(Compiled *c, const Func *f,
                           Tensor *const *global_inputs, int steps,
                           double *step_seconds, Diag *diag, GError **error);
/* This rank's device on mesh 'm' (its rank's coordinates), with a
 * communicator for each axis list of the collectives under 'roots' (made
 * by every rank at once: all must pass the same terms).  For a device
 * that runs its collectives itself (the benchmarks). */
Collectives *codegen_mpi_connect(const Mesh *m, const Term *const *roots,
                                 int nroots);
void codegen_mpi_disconnect(Collectives *c);
#endif

/* What 'partir compile --emit' shows. */
typedef enum {
  EMIT_LLVM,     /* the optimized module as LLVM IR */
  EMIT_ASM,      /* the host's assembly */
  EMIT_OBJ,      /* an ELF object (binary) */
  EMIT_FUSION,   /* the kernels: what each computes and reads */
  EMIT_PTX,      /* NVPTX: the kernels' PTX module */
  EMIT_GPU_PLAN, /* NVPTX: the launch plan, in order */
} CodegenEmit;

/* 'what' for 'f' (a new buffer of *len bytes, NUL-terminated), or NULL
 * with the reason. */
char *codegen_text(const Module *m, const Func *f, const CodegenOptions *o,
                   CodegenEmit what, gsize *len, Diag *why);

/* ------------------------------------------------------------- cuda.c */

/* Whether 'c' was compiled for NVPTX (it runs through codegen_cuda_run). */
gboolean codegen_on_gpu(const Compiled *c);

/* TRUE when the CUDA driver (libcuda.so.1) loads and sees a GPU; else
 * FALSE with the reason (no driver, no device), which says how to run
 * without one. */
gboolean codegen_cuda_available(GError **error);

/* Runs 'f' compiled for NVPTX as 'c' on the global inputs: one GPU per
 * device of its mesh (an SPMD program: scattered, run, gathered as
 * spmd_run does; collectives through NCCL) or GPU 0, driven by this
 * process.  NULL with the reason (diag) or the error (no GPU, a CUDA,
 * cuBLAS or NCCL failure). */
GPtrArray *codegen_cuda_run(Compiled *c, const Func *f,
                            Tensor *const *global_inputs, Diag *diag,
                            GError **error);

/* --------------------------------------------------------- cuda_mpi.c */

/* The CUDA runtime under MPI (HAVE_MPI; docs/gpu.md): a rank per device
 * of the mesh, each driving one GPU, NCCL between them. */
#ifdef HAVE_MPI
/* Joins the ranks (codegen_mpi_start) and gives this rank its GPU (its
 * local rank on its host).  FALSE with this rank's reason when MPI
 * cannot start or any rank has no GPU (every rank then fails alike):
 * the caller says why, then leaves with codegen_mpi_stop(0). */
gboolean codegen_cuda_mpi_start(int *rank, int *ranks, GError **error);
/* codegen_cuda_run with a rank per device (codegen_run_mpi's scatter and
 * gather): rank 0 passes the global inputs and gets the global results,
 * the other ranks pass NULL and get an empty array.  NULL with the
 * reason (diag, on rank 0) or this rank's error: the caller then ends
 * every rank with codegen_mpi_stop. */
GPtrArray *codegen_run_cuda_mpi(Compiled *c, const Func *f,
                                Tensor *const *global_inputs, Diag *diag,
                                GError **error);
#endif

#endif
