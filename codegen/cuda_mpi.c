/* cuda_mpi.c — the CUDA runtime under MPI: a process (an MPI rank) per
 * GPU, as MPI and NCCL programs usually run (mpirun -np N, a rank per
 * GPU, NCCL between them).
 *
 * It is the MPI runtime (mpi.c) with the CUDA runtime's device run
 * (cuda.c) in place of the host's: rank r is device r of the mesh,
 * row-major, exactly as under --runtime mpi, and codegen_mpi_spread
 * scatters the inputs from rank 0 and gathers the results to it by
 * their layouts.  What this file adds:
 *
 *   GPU        each rank drives one GPU: its local rank on its host (the
 *              rank in MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)), or
 *              the one GPU it sees when the launcher gave it its own
 *              (cuda_rank_gpu).  Chosen once, when the ranks start.
 *   NCCL       a communicator per group of each axis list the program's
 *              collectives use: rank 0 makes the groups' ids
 *              (ncclGetUniqueId), MPI_Bcast shares them, and each rank
 *              joins its group's with ncclCommInitRank
 *              (cuda_rank_connect, which takes the broadcast as a
 *              RankExchange so that a test can run it without MPI).
 *
 * Failure: the ranks start only when every one has a GPU (each rank
 * that has none says why; MPI_Allreduce makes them agree, so all fail
 * alike, and leave together once each has said why).  A rank whose run fails
 * returns its error, and its front end ends every rank (MPI_Abort),
 * which also ends a rank waiting in NCCL (it polls its stream) or in
 * ncclCommInitRank.
 */
#include "codegen/internal.h"

#include <mpi.h>

/* This process's GPU: one rank per process, chosen when it starts. */
static int rank_gpu = -1;

/* The MPI world's rank and host, for messages. */
static char *rank_name(int rank) {
  char host[MPI_MAX_PROCESSOR_NAME] = "";
  int len = 0;
  MPI_Get_processor_name(host, &len);
  return g_strdup_printf("rank %d (%s)", rank, host);
}

/* FALSE with the reason when another rank of this host ('host', this
 * one local rank 'local') drives the same GPU: NCCL cannot have one GPU
 * twice in a communicator.  Every rank of the host calls it. */
static gboolean gpu_unshared(MPI_Comm host, int local, int locals,
                             const char *uuid, GError **error) {
  g_autofree char *all = g_malloc((gsize)locals * CUDA_GPU_UUID_BYTES);
  MPI_Allgather(uuid, CUDA_GPU_UUID_BYTES, MPI_BYTE, all, CUDA_GPU_UUID_BYTES,
                MPI_BYTE, host);
  for (int k = 0; k < locals; k++)
    if (k != local &&
        memcmp(all + k * CUDA_GPU_UUID_BYTES, uuid, CUDA_GPU_UUID_BYTES) == 0) {
      g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_IO,
                  "local ranks %d and %d of this host would drive the same "
                  "GPU: NCCL needs a GPU per rank; give each "
                  "rank its own (CUDA_VISIBLE_DEVICES) or start fewer ranks",
                  MIN(k, local), MAX(k, local));
      return FALSE;
    }
  return TRUE;
}

/* This rank's GPU into rank_gpu: its local rank's (the rank in the
 * communicator of its host, MPI_COMM_TYPE_SHARED), or the one it sees.
 * FALSE with the reason when it has none of its own.  Every rank calls
 * it. */
static gboolean choose_gpu(int rank, GError **error) {
  MPI_Comm host;
  int local, locals, gpus = 0;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL,
                      &host);
  MPI_Comm_rank(host, &local);
  MPI_Comm_size(host, &locals);
  GError *why = NULL;
  char uuid[CUDA_GPU_UUID_BYTES] = {0}; /* zero: no GPU, shares nothing */
  gboolean ok = cuda_gpu_count(&gpus, &why);
  if (!ok) {
    g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_IO,
                "no GPU to run on: %s (run with --runtime mpi, a rank a "
                "device on its CPU)",
                why->message);
    g_error_free(why);
  } else if ((rank_gpu = cuda_rank_gpu(local, gpus)) < 0) {
    g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_IO,
                "%d ranks run on this host, which has %d GPUs: start at most "
                "one rank a GPU on each host (mpirun --map-by ppr:%d:node)",
                locals, gpus, gpus);
    ok = FALSE;
  } else {
    ok = cuda_gpu_uuid(rank_gpu, uuid, error);
    if (!ok)
      memset(uuid, 0, sizeof uuid);
  }
  /* every rank of the host takes part, with a GPU or without */
  GError *shared = NULL;
  if (!gpu_unshared(host, local, locals, uuid, &shared) && ok) {
    g_propagate_error(error, shared);
    ok = FALSE;
  }
  g_clear_error(&shared);
  MPI_Comm_free(&host);
  return ok;
}

gboolean codegen_cuda_mpi_start(int *rank, int *ranks, GError **error) {
  if (!codegen_mpi_start(rank, ranks, error))
    return FALSE;
  GError *why = NULL;
  int mine = choose_gpu(*rank, &why), all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all)
    return TRUE;
  g_autofree char *name = rank_name(*rank);
  if (why) {
    g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_IO, "%s: %s", name,
                why->message);
    g_error_free(why);
  } else {
    g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_IO,
                "%s: GPU %d is ready, but another rank has none of its own "
                "(it says why)",
                name, rank_gpu);
  }
  return FALSE; /* every rank alike: each says why, then they leave */
}

/* RankExchange's broadcast: MPI_Bcast from rank 0 (the ids are small). */
static void world_bcast(void *data, gsize bytes, void *user) {
  (void)user;
  g_assert(bytes <= G_MAXINT);
  MPI_Bcast(data, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
}

/* What every rank of codegen_run_cuda_mpi runs. */
typedef struct GpuRank {
  const GpuProgram *gp;
  const Mesh *mesh;
} GpuRank;

/* MpiRankRun: the device program on this rank's GPU; a failure is this
 * rank's message. */
static GPtrArray *gpu_rank(void *data, int rank, Tensor *const *inputs,
                           GError **error) {
  const GpuRank *job = data;
  RankExchange x = {.bcast = world_bcast};
  GPtrArray *results =
      cuda_rank_run(job->gp, job->mesh, rank, rank_gpu, &x, inputs, error);
  if (!results) {
    g_autofree char *name = rank_name(rank);
    g_prefix_error(error, "%s, GPU %d: ", name, rank_gpu);
  }
  return results;
}

GPtrArray *codegen_run_cuda_mpi(Compiled *c, const Func *f,
                                Tensor *const *global_inputs, Diag *diag,
                                GError **error) {
  const GpuProgram *gp = codegen_gpu(c);
  g_assert(gp && rank_gpu >= 0); /* compiled for NVPTX; started */
  if (!f->spmd) /* one device: one rank (the front end checked) */
    return gpu_rank(&(GpuRank){.gp = gp}, 0, global_inputs, error);
  GpuRank job = {.gp = gp, .mesh = &f->spmd->mesh};
  return codegen_mpi_spread(f, global_inputs, gpu_rank, &job, diag, error);
}
