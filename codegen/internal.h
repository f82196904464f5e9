/* internal.h — what the code generator's files share (codegen/ only):
 * the plan, the IR emitter and the JIT.  Only these files see LLVM. */
#ifndef PARTIR_CODEGEN_INTERNAL_H
#define PARTIR_CODEGEN_INTERNAL_H

#include "codegen/codegen.h"
#include "spmd/spmd.h"

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

/* One buffer per value: an argument (its tensor is passed in), a
 * constant or iota (evaluated once, when compiling, by the interpreter's
 * kernel), or a value the code computes.  A value inside a tile or sum
 * has one buffer, which each iteration overwrites; a sum also has an
 * accumulator. */
typedef struct Slot {
  const Term *t; /* NULL for a sum's accumulator */
  const Type *type;
  const char *name; /* the printed name, for messages */
  int arg;          /* argument number, or -1 */
  Tensor *value;    /* constant's value, or NULL */
  int acc;          /* accumulators (double or i64): a sum's, or a
                       contraction's row; or -1 */
  gboolean fused;   /* computed inside its users' loops: no buffer */
  gboolean splat;   /* a constant of one number: 'value' holds it alone,
                       and its users read element 0 */
  const SchedRegion *region; /* where the schedule puts it */
  int64_t offset;            /* its bytes in the run's arena, or -1 (arena.c) */
} Slot;

typedef struct Plan {
  CodegenOptions opt;
  gboolean spmd;     /* a device's program: it runs on a device */
  Schedule *sched;   /* the printer's: regions and their statements */
  GArray *slots;     /* Slot */
  GHashTable *index; /* Term -> slot + 1 */
  int *results;      /* per result: its slot */
  int nresults;
  int64_t arena_bytes; /* the block the computed values share */
} Plan;

/* arena.c: the offsets of the values that share the run's arena (Slot.
 * offset), and its size (Plan.arena_bytes). */
void plan_arena(Plan *p);

/* The slot of 't' in 'p', or -1. */
static inline int plan_slot(const Plan *p, const Term *t) {
  return GPOINTER_TO_INT(g_hash_table_lookup(p->index, t)) - 1;
}

/* fuse.c: marks the values computed inside their users' loops (Slot.
 * fused, as fusion.c decides for 'f'), evaluates the constants and
 * iotas (a splat read by fused kernels only keeps its one number), and
 * prints the decision (partir compile --emit fusion). */
void plan_fuse(Plan *p, const Func *f);
char *plan_fusion_text(const Plan *p);

/* dot.c: the scratch buffer of contraction 't': the products'
 * workspace (fast arithmetic on floats), or a row of accumulators in
 * double or i64 (the interpreter's order). */
const Type *dot_scratch(const Term *t, gboolean exact);

/* The plan of 'f', or NULL with the reason (a program too large for
 * memory). */
Plan *plan_new(const Module *m, const Func *f, const CodegenOptions *o,
               Diag *why);
void plan_free(Plan *p);

/* A collective of the generated code: 't' on this device's operand 'in'
 * (t's operand type), its result written to 'out', through the device's
 * Collectives (kernel_comm, set on the device's thread). */
void codegen_rt_collective(const Term *t, const void *in, void *out);

/* profile.c: what a profiled program's entry calls around each kernel
 * (slot: the value it computes), and the counters it adds to. */
void codegen_rt_clock_start(void);
void codegen_rt_clock_stop(int64_t slot);
typedef struct Profile Profile;
Profile *profile_new(int nslots);
void profile_free(Profile *pr);
/* This thread runs a program with counters 'pr' (NULL: not profiled),
 * until profile_leave. */
void profile_enter(Profile *pr);
void profile_leave(void);
void profile_report(const Profile *pr, const Plan *p, GString *out);

/* The IR of 'p': 'void ENTRY(ptr bufs)' in a new module of 'ctx', bufs[i]
 * the buffer of slot i. */
LLVMModuleRef emit_module(LLVMContextRef ctx, const Plan *p, const char *entry);

/* LLVM's error diagnostics on 'ctx' go to 'why' (a compile with one
 * fails), never to stderr or an abort. */
void jit_catch_diagnostics(LLVMContextRef ctx, Diag *why);

/* The width of the host CPU's vector registers in bits: 512 with
 * AVX-512, 256 with AVX, else 128 (detected once, at run time). */
int jit_host_vector_bits(void);

/* The host's target machine (CPU name and features), or NULL + why. */
LLVMTargetMachineRef jit_host_machine(Diag *why);
/* The NVPTX target machine for GPU architecture 'arch' ("sm_90"), or
 * NULL + why. */
LLVMTargetMachineRef jit_nvptx_machine(const char *arch, Diag *why);
/* Runs the O3 pipeline on 'mod' for 'tm'. */
gboolean jit_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, Diag *why);

/* 'mod' as an object or as assembly text, in memory; NULL + why. */
LLVMMemoryBufferRef jit_emit(LLVMModuleRef mod, LLVMTargetMachineRef tm,
                             LLVMCodeGenFileType kind, Diag *why);

/* A module loaded into the process's JIT, until jit_unload. */
typedef struct JitCode JitCode;
typedef void (*EntryFn)(void **bufs);
/* Emits 'mod' (optimized, for 'tm') as an object in memory and loads it;
 * 'entry' is its function.  NULL with the reason. */
JitCode *jit_load(LLVMModuleRef mod, LLVMTargetMachineRef tm, const char *entry,
                  Diag *why);
EntryFn jit_entry(JitCode *code);
void jit_unload(JitCode *code);

/* ------------------------------------------------------- nvptx_plan.c */

/* What a GPU runs for a program (nvptx.c makes it): one PTX module of
 * kernels, and the launch plan the host walks, in the schedule's order.
 * Every device of a mesh runs the same plan on its own GPU. */

/* A kernel launch: 'kernel' on a 1-D grid of 'grid' blocks of 'block'
 * threads, its buffers the slots 'args' (-1: the collective's staging
 * buffer 'stage' at 'stage_at' bytes), then the chunk index when it has
 * one. */
typedef enum {
  GPU_INDEX_NONE,
  GPU_INDEX_LOOP,     /* the iteration of the loop over region 'level' */
  GPU_INDEX_POSITION, /* the device's position in the group of 'axes' */
  GPU_INDEX_MEMBER,   /* each member of a collective's group in turn */
} GpuIndex;

typedef struct GpuLaunch {
  char *kernel;
  int64_t grid, block;
  int *args;
  int nargs;
  GpuIndex index;
  int level; /* GPU_INDEX_LOOP */
} GpuLaunch;

/* A dimension a contraction's matrix products loop over on the host:
 * its size and strides (elements) in cuBLAS's A (rhs), B (lhs) and C. */
typedef struct GpuOuter {
  int64_t size, a, b, c;
  gboolean contracted; /* a K dimension: its first product writes C, the
                          others add to it (beta 1) */
} GpuOuter;

/* A contraction as cublasGemmStridedBatchedEx calls, column-major:
 * C (m x n) = op(A) op(B), with A the rhs and B the lhs (a row-major
 * product is the column-major product of the transposes), once per
 * index of the outer dimensions. */
typedef struct GpuGemm {
  DType dtype;
  int64_t m, n, k;
  gboolean trans_a, trans_b;
  int64_t lda, ldb, ldc;
  int64_t batch, stride_a, stride_b, stride_c;
  int nouter;
  GpuOuter outer[PARTIR_MAX_RANK * 4];
  int a, b, c; /* slots: rhs, lhs, the result */
} GpuGemm;

/* A collective: NCCL's call between 'in' and 'out' (slots), the
 * operand first packed into the staging buffer member by member when
 * its chunks are not contiguous ('pack'), the result unpacked from it
 * ('unpack'). */
typedef struct GpuCollective {
  int in, out;
  int members;       /* the group's size */
  int64_t chunk;     /* bytes a member sends or receives (all_gather,
                        reduce_scatter, all_to_all) */
  GpuLaunch *pack;   /* or NULL: a slice of 'in' per member */
  GpuLaunch *unpack; /* or NULL: a put into 'out' per member */
} GpuCollective;

typedef enum {
  GPU_KERNEL,
  GPU_GEMM,
  GPU_COLLECTIVE,
  GPU_LOOP, /* the steps up to its GPU_END, 'count' times */
  GPU_END,
} GpuStepKind;

typedef struct GpuStep {
  GpuStepKind kind;
  const Term *t;    /* the value it computes, the region it loops, the
                       collective (its op, axes and dims) */
  const char *name; /* the value's printed name */
  GpuLaunch launch; /* GPU_KERNEL */
  GpuGemm gemm;
  GpuCollective coll;
  int64_t count; /* GPU_LOOP */
  int level;     /* GPU_LOOP: the region's level */
} GpuStep;

typedef struct GpuProgram {
  char *arch;          /* "sm_80" */
  char *ptx;           /* the module, NUL-terminated */
  GArray *steps;       /* GpuStep */
  int64_t stage_bytes; /* the largest staging buffer a collective needs */
  const Plan *plan;    /* slots, arena offsets, constants */
} GpuProgram;

#define GPU_BLOCK 256      /* threads per block of an elementwise kernel */
#define GPU_MAX_GRID 65535 /* blocks at most: more elements loop */

/* Launch shapes (plain arithmetic, tested in tests/unit/test-nvptx): an
 * elementwise kernel over 'n' elements gets GPU_BLOCK threads a block
 * and enough blocks for one element a thread, at most GPU_MAX_GRID; a
 * reduction of rows of 'width' elements a block per row (at most
 * GPU_MAX_GRID), its block the smallest power of two from 32 to 256
 * that covers the row. */
int64_t gpu_map_grid(int64_t n);
int gpu_reduce_block(int64_t width);
int64_t gpu_reduce_grid(int64_t rows);

/* cuBLAS's view of a row-major operand of 'rows' x 'cols' with strides
 * 'rs' and 'cs' (elements), read as the column-major matrix of cuBLAS
 * (cols x rows when 'cs' is 1, rows x cols transposed when 'rs' is 1):
 * whether it is transposed and its leading dimension; FALSE when
 * neither stride is 1 (cuBLAS needs a unit stride). */
gboolean gpu_operand(int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                     gboolean *trans, int64_t *ld);

/* Contraction 't' as cuBLAS calls, its operands and result in slots
 * 'lhs', 'rhs' and 'out'; FALSE with the reason when cuBLAS cannot
 * compute it (an integer contraction, no unit stride). */
gboolean gpu_gemm_of(const Term *t, int lhs, int rhs, int out, GpuGemm *gm,
                     Diag *why);

/* How many cuBLAS calls 'gm' makes: one per index of its outer
 * dimensions. */
int64_t gpu_gemm_calls(const GpuGemm *gm);
/* Call number 'call' (row-major over the outer dimensions, contracted
 * ones last): the offsets (elements) of its A, B and C; TRUE when it
 * writes C (beta 0: its contracted indices are all 0, the first of its
 * C), FALSE when it adds to it (beta 1). */
gboolean gpu_gemm_call(const GpuGemm *gm, int64_t call, int64_t *a, int64_t *b,
                       int64_t *c);

/* NCCL's data type of 'dt' (ncclDataType_t) and its name ("ncclFloat32"
 * into *name, may be NULL); -1 when NCCL has none (16-bit integers). */
int gpu_nccl_type(DType dt, const char **name);

/* The launch plan as text (partir compile --emit gpu-plan). */
char *gpu_plan_text(const GpuProgram *gp);

/* ------------------------------------------------------------ nvptx.c */

/* The GPU program of 'p' (a device's program on 'mesh', or NULL) for
 * 'arch' ("sm_80", "sm_90"): its kernels
 * compiled to PTX with libdevice linked in, and its launch plan; NULL
 * with the reason.  'llvm' (may be NULL) gets the optimized module as
 * LLVM IR text. */
GpuProgram *nvptx_program_new(const Plan *p, const Mesh *mesh, const char *arch,
                              char **llvm, Diag *why);
void nvptx_program_free(GpuProgram *gp);

/* codegen.c: the GPU program 'c' was compiled to, or NULL (the host's). */
const GpuProgram *codegen_gpu(const Compiled *c);

/* ------------------------------------------------------------- cuda.c */

/* NCCL's entry points that cuda.c calls, as nccl.h declares them: the
 * library's (opened with dlopen), or a test's. */
typedef struct NcclComm *NcclComm;    /* ncclComm_t */
typedef struct CUstream_st *CUstream; /* the driver's, and cudaStream_t */
#define NCCL_ID_BYTES 128             /* NCCL_UNIQUE_ID_BYTES */
typedef struct NcclId {               /* ncclUniqueId */
  char bytes[NCCL_ID_BYTES];
} NcclId;
typedef struct NcclApi {
  int (*init_all)(NcclComm *, int, const int *);
  int (*get_unique_id)(NcclId *);
  int (*init_rank)(NcclComm *, int nranks, NcclId id, int rank);
  int (*destroy)(NcclComm);
  int (*abort)(NcclComm);
  int (*all_reduce)(const void *, void *, size_t, int, int, NcclComm, CUstream);
  int (*all_gather)(const void *, void *, size_t, int, NcclComm, CUstream);
  int (*reduce_scatter)(const void *, void *, size_t, int, int, NcclComm,
                        CUstream);
  int (*send)(const void *, size_t, int, int, NcclComm, CUstream);
  int (*recv)(void *, size_t, int, int, NcclComm, CUstream);
  int (*group_start)(void);
  int (*group_end)(void);
  const char *(*error_string)(int);
} NcclApi;

/* How the processes of one run share bytes (cuda_mpi.c: MPI_Bcast):
 * 'bcast' copies the 'bytes' at 'data' on rank 0 to 'data' on every
 * rank.  Every rank calls it at once. */
typedef struct RankExchange {
  void (*bcast)(void *data, gsize bytes, void *user);
  void *user;
} RankExchange;

/* The CUDA driver, initialized, and how many GPUs it sees in *count:
 * FALSE with the reason when it does not load or sees none. */
gboolean cuda_gpu_count(int *count, GError **error);

/* The UUID of GPU 'gpu' (CUDA_GPU_UUID_BYTES at 'uuid'): the same GPU
 * has the same UUID in every process, whatever the GPU's number there. */
#define CUDA_GPU_UUID_BYTES 16
gboolean cuda_gpu_uuid(int gpu, char *uuid, GError **error);

/* Device 'device' of 'mesh', a process of its own (a rank, its GPU
 * current): its NCCL communicator for each axis list that a collective
 * of 'gp' uses, into 'comms' (axes key -> NcclComm), in the order the
 * steps first use them.  For each axis list, device 0 makes an id per
 * group (ncclGetUniqueId), at the number of the group's first member
 * (ndevices ids, the others zero); 'x' shares them; each device joins
 * its group's (ncclCommInitRank, its rank its position in the group, as
 * in one process).  Every device calls it at once.  FALSE with the
 * error at the first NCCL failure, the communicators made so far in
 * 'comms' (to abort). */
gboolean cuda_rank_connect(const GpuProgram *gp, const Mesh *mesh, int device,
                           const NcclApi *api, const RankExchange *x,
                           GHashTable *comms, GError **error);

/* The GPU of the process that is local rank 'local_rank' on its host,
 * where it sees 'gpus' GPUs: the local rank's, or the one GPU when it
 * sees one (the launcher gave each rank its own: CUDA_VISIBLE_DEVICES,
 * a scheduler's binding); -1 when the host has too few. */
int cuda_rank_gpu(int local_rank, int gpus);

/* Device 'device' of 'mesh' (NULL: a program without one) run by this
 * process on GPU 'gpu', with its local inputs: its local results, or
 * NULL with the error (its communicators aborted).  Its communicators
 * come from cuda_rank_connect through 'x'. */
GPtrArray *cuda_rank_run(const GpuProgram *gp, const Mesh *mesh, int device,
                         int gpu, const RankExchange *x, Tensor *const *inputs,
                         GError **error);

/* -------------------------------------------------------------- mpi.c */

#ifdef HAVE_MPI
/* A rank's part of a run spread over the ranks: its device's results
 * from its local inputs, or NULL with the error. */
typedef GPtrArray *(*MpiRankRun)(void *data, int rank, Tensor *const *inputs,
                                 GError **error);
/* Rank 0 checks the global inputs and scatters each rank's chunks; each
 * rank runs 'run'; rank 0 gathers the global results, which it returns
 * (the other ranks an empty array).  NULL with the reason (diag, on
 * rank 0) or the error of 'run': the caller then ends every rank
 * (codegen_mpi_stop). */
GPtrArray *codegen_mpi_spread(const Func *f, Tensor *const *global_inputs,
                              MpiRankRun run, void *data, Diag *diag,
                              GError **error);
#endif

#endif
