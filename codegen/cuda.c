/* cuda.c — the CUDA runtime: a program compiled for NVPTX (nvptx.c) run
 * on NVIDIA GPUs, one process driving every GPU of the mesh.
 *
 * The libraries are opened with dlopen when a program first runs, so
 * partir builds, and its tests run, where there is no GPU: libcuda.so.1
 * (the driver API), libcublas (matrix products) and libnccl.so.2
 * (collectives).  Only the entry points used are declared here, from
 * the documented ABI (cuda.h, cublas_api.h, nccl.h): the driver's
 * versioned names (cuMemAlloc_v2, ...) that cuda.h's macros select.
 *
 * A device's run (device_run), on its thread (spmd_run starts one per
 * device, as for the threaded runtime, and scatters the inputs and
 * gathers the results by their layouts): the primary context of GPU d
 * made current, the PTX loaded (cuModuleLoadDataEx: the driver compiles
 * it for the GPU at hand), one stream, a cuBLAS handle on it; the arena
 * (arena.c's offsets), each constant, argument and result a buffer of
 * its own; then the launch plan in order, everything queued on the
 * stream, and one wait at the end before the results are copied back.
 *
 * Collectives: a communicator per group of devices that a collective of
 * the program meets (its axes, as it lists them, and the coordinates
 * off them; ranks in group order, the simulator's), each made with
 * ncclCommInitAll over the group's GPUs when the devices connect.  A
 * collective's NCCL call is issued by its device's thread on its stream;
 * an all_to_all is a send and a receive per member in one NCCL group.
 *
 * Failure: a device whose call fails records the error ('fail'); the
 * others stop waiting for their streams (they poll them) and report it,
 * and disconnecting aborts the communicators (ncclCommAbort), so a
 * device waiting in a collective that will not complete does not hang
 * the process.
 *
 * A rank (cuda_mpi.c, --runtime cuda-mpi): a process that runs one
 * device of the mesh (cuda_rank_run), the same device run with a Peer of
 * its own.  Its communicators cannot come from ncclCommInitAll, whose
 * GPUs are one process's: once its GPU is current, for each axis list
 * device 0 makes an id per group (ncclGetUniqueId), the ranks share them
 * (RankExchange: MPI_Bcast), and each joins its group's with
 * ncclCommInitRank (cuda_rank_connect), ranks in group order as above.
 * The NCCL entry points are a table (NcclApi), so that a test can run
 * the exchange with a fake one.
 */
#include "codegen/internal.h"

#include <dlfcn.h>

/* The domain of the runtime's errors (the CUDA, cuBLAS or NCCL status in
 * the code). */
static GQuark cuda_error_quark(void);
G_DEFINE_QUARK(partir - cuda - error - quark, cuda_error)
#define CUDA_ERROR (cuda_error_quark())

/* --------------------------------------------------------------- the ABI */

typedef int CUresult; /* 0: CUDA_SUCCESS */
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef unsigned long long CUdeviceptr;
#define CU_JIT_ERROR_LOG_BUFFER 5
#define CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6
#define CU_ATTR_CC_MAJOR 75 /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
#define CUDA_ERROR_NOT_READY 600

typedef struct Driver {
  CUresult (*init)(unsigned);
  CUresult (*device_count)(int *);
  CUresult (*device_get)(CUdevice *, int);
  CUresult (*device_attribute)(int *, int, CUdevice);
  CUresult (*device_uuid)(char *, CUdevice); /* CUuuid: 16 bytes */
  CUresult (*primary_retain)(CUcontext *, CUdevice);
  CUresult (*primary_release)(CUdevice);
  CUresult (*ctx_set_current)(CUcontext);
  CUresult (*module_load)(CUmodule *, const void *, unsigned, int *, void **);
  CUresult (*module_function)(CUfunction *, CUmodule, const char *);
  CUresult (*module_unload)(CUmodule);
  CUresult (*mem_alloc)(CUdeviceptr *, size_t);
  CUresult (*mem_free)(CUdeviceptr);
  CUresult (*copy_in)(CUdeviceptr, const void *, size_t);
  CUresult (*copy_out)(void *, CUdeviceptr, size_t);
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                     unsigned, unsigned, unsigned, CUstream, void **, void **);
  CUresult (*stream_create)(CUstream *, unsigned);
  CUresult (*stream_destroy)(CUstream);
  CUresult (*stream_query)(CUstream);
  CUresult (*error_string)(CUresult, const char **);
} Driver;

typedef struct CublasContext *CublasHandle;
#define CUBLAS_OP_N 0
#define CUBLAS_OP_T 1
#define CUDA_R_32F 0
#define CUDA_R_64F 1
#define CUDA_R_16F 2
#define CUDA_R_16BF 14
#define CUBLAS_COMPUTE_32F 68
#define CUBLAS_COMPUTE_64F 70
#define CUBLAS_GEMM_DEFAULT (-1)

typedef struct Cublas {
  int (*create)(CublasHandle *);
  int (*destroy)(CublasHandle);
  int (*set_stream)(CublasHandle, CUstream);
  int (*gemm)(CublasHandle, int, int, int, int, int, const void *, const void *,
              int, int, long long, const void *, int, int, long long,
              const void *, void *, int, int, long long, int, int, int);
} Cublas;

#define NCCL_SUM 0

/* A library and its entry points, opened once; 'why' when it failed. */
typedef struct Library {
  gsize once;
  void *handle;
  char *why;
} Library;

static Library cuda_lib, cublas_lib, nccl_lib;
static Driver cu;
static Cublas cublas;
static NcclApi nccl;

/* Resolves 'names' into the function pointers 'slots' from 'lib': FALSE
 * (with the first missing name in lib->why) when one is missing. */
static gboolean resolve(Library *lib, const char *const *names, void **slots,
                        int n) {
  for (int i = 0; i < n; i++) {
    slots[i] = dlsym(lib->handle, names[i]);
    if (!slots[i]) {
      lib->why = g_strdup_printf("it has no %s", names[i]);
      return FALSE;
    }
  }
  return TRUE;
}

/* Opens the first of 'sonames' that loads, and resolves 'names'. */
static gboolean library_open(Library *lib, const char *const *sonames,
                             const char *const *names, void *table, int n) {
  if (g_once_init_enter(&lib->once)) {
    for (int i = 0; sonames[i] && !lib->handle; i++)
      lib->handle = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib->handle)
      lib->why =
          g_strdup_printf("%s cannot be loaded (%s)", sonames[0], dlerror());
    else if (!resolve(lib, names, table, n))
      g_clear_pointer(&lib->handle, dlclose);
    g_once_init_leave(&lib->once, 1);
  }
  return lib->handle != NULL;
}

static gboolean open_driver(GError **error) {
  static const char *const sonames[] = {"libcuda.so.1", NULL};
  static const char *const names[] = {
      "cuInit",
      "cuDeviceGetCount",
      "cuDeviceGet",
      "cuDeviceGetAttribute",
      "cuDeviceGetUuid_v2",
      "cuDevicePrimaryCtxRetain",
      "cuDevicePrimaryCtxRelease_v2",
      "cuCtxSetCurrent",
      "cuModuleLoadDataEx",
      "cuModuleGetFunction",
      "cuModuleUnload",
      "cuMemAlloc_v2",
      "cuMemFree_v2",
      "cuMemcpyHtoD_v2",
      "cuMemcpyDtoH_v2",
      "cuLaunchKernel",
      "cuStreamCreate",
      "cuStreamDestroy_v2",
      "cuStreamQuery",
      "cuGetErrorString",
  };
  G_STATIC_ASSERT(sizeof(Driver) == G_N_ELEMENTS(names) * sizeof(void *));
  if (library_open(&cuda_lib, sonames, names, &cu, G_N_ELEMENTS(names)))
    return TRUE;
  g_set_error(error, CUDA_ERROR, 0, "no CUDA driver: %s", cuda_lib.why);
  return FALSE;
}

static gboolean open_cublas(GError **error) {
  static const char *const sonames[] = {"libcublas.so", "libcublas.so.13",
                                        "libcublas.so.12", "libcublas.so.11",
                                        NULL};
  static const char *const names[] = {"cublasCreate_v2", "cublasDestroy_v2",
                                      "cublasSetStream_v2",
                                      "cublasGemmStridedBatchedEx"};
  G_STATIC_ASSERT(sizeof(Cublas) == G_N_ELEMENTS(names) * sizeof(void *));
  if (library_open(&cublas_lib, sonames, names, &cublas, G_N_ELEMENTS(names)))
    return TRUE;
  g_set_error(error, CUDA_ERROR, 0, "cuBLAS: %s", cublas_lib.why);
  return FALSE;
}

static gboolean open_nccl(GError **error) {
  static const char *const sonames[] = {"libnccl.so.2", "libnccl.so", NULL};
  static const char *const names[] = {
      "ncclCommInitAll",   "ncclGetUniqueId",   "ncclCommInitRank",
      "ncclCommDestroy",   "ncclCommAbort",     "ncclAllReduce",
      "ncclAllGather",     "ncclReduceScatter", "ncclSend",
      "ncclRecv",          "ncclGroupStart",    "ncclGroupEnd",
      "ncclGetErrorString"};
  G_STATIC_ASSERT(sizeof(NcclApi) == G_N_ELEMENTS(names) * sizeof(void *));
  if (library_open(&nccl_lib, sonames, names, &nccl, G_N_ELEMENTS(names)))
    return TRUE;
  g_set_error(error, CUDA_ERROR, 0, "NCCL: %s", nccl_lib.why);
  return FALSE;
}

/* FALSE with 'what' and the driver's message when 'r' is an error. */
static gboolean cu_ok(CUresult r, const char *what, GError **error) {
  if (r == 0)
    return TRUE;
  const char *msg = NULL;
  if (cu.error_string(r, &msg) != 0 || !msg)
    msg = "unknown error";
  g_set_error(error, CUDA_ERROR, r, "%s: CUDA error %d: %s", what, r, msg);
  return FALSE;
}

static gboolean cublas_ok(int r, const char *what, GError **error) {
  if (r == 0)
    return TRUE;
  g_set_error(error, CUDA_ERROR, r, "%s: cuBLAS status %d", what, r);
  return FALSE;
}

/* FALSE with 'what' and the message of 'api' when 'r' is an error. */
static gboolean api_ok(const NcclApi *api, int r, const char *what,
                       GError **error) {
  if (r == 0)
    return TRUE;
  g_set_error(error, CUDA_ERROR, r, "%s: NCCL: %s", what, api->error_string(r));
  return FALSE;
}

static gboolean nccl_ok(int r, const char *what, GError **error) {
  return api_ok(&nccl, r, what, error);
}

/* The driver, initialized, and how many GPUs it sees: FALSE when none. */
gboolean cuda_gpu_count(int *count, GError **error) {
  static gsize ready;
  static CUresult init;
  if (!open_driver(error))
    return FALSE;
  if (g_once_init_enter(&ready)) {
    init = cu.init(0);
    g_once_init_leave(&ready, 1);
  }
  *count = 0;
  if (!cu_ok(init, "cuInit", error) ||
      !cu_ok(cu.device_count(count), "cuDeviceGetCount", error))
    return FALSE;
  if (*count == 0) {
    g_set_error(error, CUDA_ERROR, 0, "the CUDA driver sees no GPU");
    return FALSE;
  }
  return TRUE;
}

gboolean cuda_gpu_uuid(int gpu, char *uuid, GError **error) {
  int count;
  CUdevice dev;
  return cuda_gpu_count(&count, error) &&
         cu_ok(cu.device_get(&dev, gpu), "cuDeviceGet", error) &&
         cu_ok(cu.device_uuid(uuid, dev), "cuDeviceGetUuid", error);
}

gboolean codegen_cuda_available(GError **error) {
  int count;
  GError *why = NULL;
  if (cuda_gpu_count(&count, &why))
    return TRUE;
  g_set_error(error, CUDA_ERROR, why->code,
              "no GPU to run on: %s (run with --runtime threads, or see the "
              "kernels with 'partir compile --target nvptx')",
              why->message);
  g_error_free(why);
  return FALSE;
}

gboolean codegen_on_gpu(const Compiled *c) { return codegen_gpu(c) != NULL; }

/* -------------------------------------------------------------- groups */

/* The group of device 'dev' on 'mesh' over the axes 'axes' lists: its
 * members in group order (row-major over the axes as listed) into
 * 'members' (may be NULL), its size, and the device's position. */
static int group_of(const Mesh *mesh, const AttrValue *axes, int dev,
                    int *members, int *position) {
  int64_t coords[MESH_MAX_AXES];
  int64_t rest = dev;
  for (int a = mesh->naxes - 1; a >= 0; a--) {
    coords[a] = rest % mesh->sizes[a];
    rest /= mesh->sizes[a];
  }
  int at[MESH_MAX_AXES], size = 1;
  *position = 0;
  for (int k = 0; k < axes->count; k++) {
    at[k] = mesh_axis_index(mesh, axes->items[k].sym);
    size *= (int)mesh->sizes[at[k]];
    *position = *position * (int)mesh->sizes[at[k]] + (int)coords[at[k]];
  }
  for (int j = 0; members && j < size; j++) {
    int64_t c[MESH_MAX_AXES];
    memcpy(c, coords, sizeof c);
    int r = j;
    for (int k = axes->count - 1; k >= 0; k--) {
      c[at[k]] = r % mesh->sizes[at[k]];
      r /= (int)mesh->sizes[at[k]];
    }
    int64_t d = 0;
    for (int a = 0; a < mesh->naxes; a++)
      d = d * mesh->sizes[a] + c[a];
    members[j] = (int)d;
  }
  return size;
}

/* The key of the axes of collective 't': "model" or "batch,model". */
static char *axes_key(const Term *t) {
  const AttrValue *axes = attrs_get(t->attrs, "axes");
  GString *key = g_string_new(NULL);
  for (int k = 0; k < axes->count; k++)
    g_string_append_printf(key, "%s%s", k ? "," : "", axes->items[k].sym);
  return g_string_free(key, FALSE);
}

/* ------------------------------------------------------------ the world */

typedef struct World World;

/* A device: its Collectives for spmd_run (only fail and check: compiled
 * collectives call NCCL themselves), its GPU and its communicators. */
typedef struct Peer {
  Collectives ops;
  World *world;
  int device;
  GHashTable *comms; /* axes key -> NcclComm */
  /* a rank's (cuda_rank_run): its communicators are made through it once
   * its GPU is current; NULL in one process */
  const RankExchange *exchange;
} Peer;

struct World {
  Mesh mesh;
  int ndevices;
  const GpuProgram *gp;
  Peer *peers; /* every device's, in one process; NULL for a rank */
  Collectives **views;
  GError *error; /* the first failure's, set once (atomically) */
};

static void world_fail(World *w, const GError *error) {
  GError *copy = g_error_copy(error);
  if (!g_atomic_pointer_compare_and_exchange(&w->error, NULL, copy))
    g_error_free(copy); /* not the first */
}

static void peer_fail(Collectives *self, const GError *error) {
  world_fail(((Peer *)self)->world, error);
}

/* FALSE with the first failure's error once a device failed. */
static gboolean peer_check(Collectives *self, GError **error) {
  const GError *first = g_atomic_pointer_get(&((Peer *)self)->world->error);
  if (first)
    g_propagate_error(error, g_error_copy(first));
  return first == NULL;
}

/* The communicators of every group that a collective of the program
 * meets, ncclCommInitAll over the group's GPUs (rank = position). */
static gboolean connect_groups(World *w, GError **error) {
  g_autoptr(GHashTable) done =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; i < w->gp->steps->len; i++) {
    const GpuStep *st = &g_array_index(w->gp->steps, GpuStep, i);
    if (st->kind != GPU_COLLECTIVE)
      continue;
    char *key = axes_key(st->t);
    if (!g_hash_table_add(done, key))
      continue;
    if (!open_nccl(error))
      return FALSE;
    const AttrValue *axes = attrs_get(st->t->attrs, "axes");
    g_autofree int *members = g_new(int, (gsize)w->ndevices);
    g_autofree NcclComm *comms = g_new0(NcclComm, (gsize)w->ndevices);
    int position;
    for (int dev = 0; dev < w->ndevices; dev++) {
      int size = group_of(&w->mesh, axes, dev, members, &position);
      if (position != 0) /* the group's first member makes it */
        continue;
      if (!nccl_ok(nccl.init_all(comms, size, members), "ncclCommInitAll",
                   error))
        return FALSE;
      for (int j = 0; j < size; j++)
        g_hash_table_insert(w->peers[members[j]].comms, g_strdup(key),
                            comms[j]);
    }
  }
  return TRUE;
}

static Collectives **cuda_connect(void *data, const Mesh *mesh, int ndevices) {
  World *w = g_new0(World, 1);
  w->mesh = *mesh;
  w->ndevices = ndevices;
  w->gp = data;
  w->peers = g_new0(Peer, (gsize)ndevices);
  w->views = g_new0(Collectives *, (gsize)ndevices);
  for (int dev = 0; dev < ndevices; dev++) {
    Peer *p = &w->peers[dev];
    p->ops = (Collectives){.fail = peer_fail, .check = peer_check};
    p->world = w;
    p->device = dev;
    p->comms = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    w->views[dev] = &p->ops;
  }
  GError *error = NULL;
  if (!connect_groups(w, &error)) { /* every device reports it */
    world_fail(w, error);
    g_error_free(error);
  }
  return w->views;
}

/* Ends the communicators of 'p': aborted when the run failed (a
 * collective may still wait on them), else destroyed. */
static void peer_close(Peer *p, gboolean failed) {
  GHashTableIter it;
  gpointer comm;
  g_hash_table_iter_init(&it, p->comms);
  while (g_hash_table_iter_next(&it, NULL, &comm))
    (failed ? nccl.abort : nccl.destroy)(comm);
  g_hash_table_unref(p->comms);
}

static void cuda_disconnect(void *data, Collectives **devices) {
  (void)data;
  World *w = ((Peer *)devices[0])->world;
  for (int dev = 0; dev < w->ndevices; dev++)
    peer_close(&w->peers[dev], w->error != NULL);
  if (w->error)
    g_error_free(w->error);
  g_free(w->peers);
  g_free(w->views);
  g_free(w);
}

/* ------------------------------------------------------------- a rank */

gboolean cuda_rank_connect(const GpuProgram *gp, const Mesh *mesh, int device,
                           const NcclApi *api, const RankExchange *x,
                           GHashTable *comms, GError **error) {
  int ndevices = (int)mesh_devices(mesh);
  g_autofree NcclId *ids = g_new0(NcclId, (gsize)ndevices);
  g_autofree int *members = g_new(int, (gsize)ndevices);
  for (guint i = 0; i < gp->steps->len; i++) {
    const GpuStep *st = &g_array_index(gp->steps, GpuStep, i);
    if (st->kind != GPU_COLLECTIVE)
      continue;
    g_autofree char *key = axes_key(st->t);
    if (g_hash_table_contains(comms, key))
      continue;
    const AttrValue *axes = attrs_get(st->t->attrs, "axes");
    int position;
    /* device 0 makes every group's id, at its first member's number */
    memset(ids, 0, (gsize)ndevices * sizeof *ids);
    for (int dev = 0; device == 0 && dev < ndevices; dev++) {
      group_of(mesh, axes, dev, NULL, &position);
      if (position == 0 &&
          !api_ok(api, api->get_unique_id(&ids[dev]), "ncclGetUniqueId", error))
        return FALSE;
    }
    x->bcast(ids, (gsize)ndevices * sizeof *ids, x->user);
    int size = group_of(mesh, axes, device, members, &position);
    NcclComm comm = NULL;
    if (!api_ok(api, api->init_rank(&comm, size, ids[members[0]], position),
                "ncclCommInitRank", error))
      return FALSE;
    g_hash_table_insert(comms, g_steal_pointer(&key), comm);
  }
  return TRUE;
}

int cuda_rank_gpu(int local_rank, int gpus) {
  if (gpus == 1) /* the launcher gave each rank a GPU of its own */
    return 0;
  return local_rank < gpus ? local_rank : -1;
}

static gboolean has_collectives(const GpuProgram *gp) {
  for (guint i = 0; i < gp->steps->len; i++)
    if (g_array_index(gp->steps, GpuStep, i).kind == GPU_COLLECTIVE)
      return TRUE;
  return FALSE;
}

/* A rank's communicators, made once its GPU is current (NCCL binds a
 * communicator to the current device: the runtime API's, which is the
 * driver's current context); none for a device of one process
 * (cuda_connect made its). */
static gboolean rank_connect(Peer *peer, GError **error) {
  if (!peer || !peer->exchange || !has_collectives(peer->world->gp))
    return TRUE;
  return open_nccl(error) &&
         cuda_rank_connect(peer->world->gp, &peer->world->mesh, peer->device,
                           &nccl, peer->exchange, peer->comms, error);
}

/* ------------------------------------------------------------ a device */

typedef struct Device {
  const GpuProgram *gp;
  Peer *peer; /* NULL on one device */
  CUdevice dev;
  CUcontext ctx;
  CUmodule module;
  CUstream stream;
  CublasHandle blas;
  GHashTable *functions; /* kernel name -> CUfunction */
  CUdeviceptr arena, stage;
  CUdeviceptr *bufs;  /* per slot */
  CUdeviceptr *owned; /* per slot: a buffer of its own, freed at the end */
  int64_t ivs[PARTIR_MAX_REGIONS + 1];
} Device;

static CUfunction function_of(Device *d, const char *name, GError **error) {
  CUfunction f = g_hash_table_lookup(d->functions, name);
  if (!f && cu_ok(cu.module_function(&f, d->module, name), name, error))
    g_hash_table_insert(d->functions, (gpointer)name, f);
  return f;
}

/* The chunk index a launch passes, for member 'member' of a collective. */
static int64_t launch_index(const Device *d, const GpuStep *st,
                            const GpuLaunch *l, int member) {
  switch (l->index) {
  case GPU_INDEX_LOOP:
    return d->ivs[l->level];
  case GPU_INDEX_POSITION: {
    int position = 0;
    if (d->peer)
      group_of(&d->peer->world->mesh, attrs_get(st->t->attrs, "axes"),
               d->peer->device, NULL, &position);
    return position;
  }
  case GPU_INDEX_MEMBER:
    return member;
  default:
    return 0;
  }
}

/* Launches 'l' of step 'st'; its staging argument at 'stage'. */
static gboolean launch(Device *d, const GpuStep *st, const GpuLaunch *l,
                       CUdeviceptr stage, int member, GError **error) {
  CUfunction f = function_of(d, l->kernel, error);
  if (!f)
    return FALSE;
  g_autofree CUdeviceptr *ptrs = g_new(CUdeviceptr, (gsize)l->nargs);
  g_autofree void **params = g_new(void *, (gsize)l->nargs + 1);
  for (int a = 0; a < l->nargs; a++) {
    ptrs[a] = l->args[a] < 0 ? stage : d->bufs[l->args[a]];
    params[a] = &ptrs[a];
  }
  int64_t index = launch_index(d, st, l, member);
  params[l->nargs] = &index;
  return cu_ok(cu.launch(f, (unsigned)l->grid, 1, 1, (unsigned)l->block, 1, 1,
                         0, d->stream, params, NULL),
               l->kernel, error);
}

/* One cublasGemmStridedBatchedEx per index of the outer dimensions. */
static gboolean gemm(Device *d, const GpuGemm *g, GError **error) {
  if (g->m > G_MAXINT || g->n > G_MAXINT || g->k > G_MAXINT ||
      g->lda > G_MAXINT || g->ldb > G_MAXINT || g->ldc > G_MAXINT ||
      g->batch > G_MAXINT) {
    g_set_error(error, CUDA_ERROR, 0,
                "a matrix product too large for cublasGemmStridedBatchedEx");
    return FALSE;
  }
  int type = g->dtype == DT_F64    ? CUDA_R_64F
             : g->dtype == DT_F16  ? CUDA_R_16F
             : g->dtype == DT_BF16 ? CUDA_R_16BF
                                   : CUDA_R_32F;
  int compute = g->dtype == DT_F64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
  int64_t esize = dtype_storage_bytes(g->dtype);
  float one_f = 1, zero_f = 0;
  double one_d = 1, zero_d = 0;
  const void *alpha = g->dtype == DT_F64 ? (const void *)&one_d : &one_f;
  for (int64_t call = 0; call < gpu_gemm_calls(g); call++) {
    int64_t a, b, c;
    gboolean first = gpu_gemm_call(g, call, &a, &b, &c);
    const void *beta = g->dtype == DT_F64
                           ? (const void *)(first ? &zero_d : &one_d)
                           : (first ? &zero_f : &one_f);
    int r = cublas.gemm(
        d->blas, g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
        g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, (int)g->m, (int)g->n, (int)g->k,
        alpha, (const void *)(uintptr_t)(d->bufs[g->a] + a * esize), type,
        (int)g->lda, g->stride_a,
        (const void *)(uintptr_t)(d->bufs[g->b] + b * esize), type, (int)g->ldb,
        g->stride_b, beta, (void *)(uintptr_t)(d->bufs[g->c] + c * esize), type,
        (int)g->ldc, g->stride_c, (int)g->batch, compute, CUBLAS_GEMM_DEFAULT);
    if (!cublas_ok(r, "cublasGemmStridedBatchedEx", error))
      return FALSE;
  }
  return TRUE;
}

/* Launches 'l' once per member: chunk j of the staging buffer at
 * 'stage'. */
static gboolean per_member(Device *d, const GpuStep *st, const GpuLaunch *l,
                           CUdeviceptr stage, GError **error) {
  for (int j = 0; j < st->coll.members; j++)
    if (!launch(d, st, l, stage + (CUdeviceptr)(j * st->coll.chunk), j, error))
      return FALSE;
  return TRUE;
}

static gboolean collective(Device *d, const GpuStep *st, GError **error) {
  const GpuCollective *c = &st->coll;
  g_autofree char *key = axes_key(st->t);
  NcclComm comm = d->peer ? g_hash_table_lookup(d->peer->comms, key) : NULL;
  g_assert(comm); /* connect_groups made it, or failed the world */
  int type = gpu_nccl_type(st->t->type->dtype, NULL);
  CUdeviceptr in = d->bufs[c->in], out = d->bufs[c->out];
  void *inp = (void *)(uintptr_t)in, *outp = (void *)(uintptr_t)out;
  void *stage = (void *)(uintptr_t)d->stage;
  size_t esize = dtype_storage_bytes(st->t->type->dtype);
  size_t chunk = (size_t)c->chunk / esize;
  switch (st->t->op) {
  case OP_ALL_REDUCE:
    return nccl_ok(nccl.all_reduce(inp, outp, (size_t)type_numel(st->t->type),
                                   type, NCCL_SUM, comm, d->stream),
                   "ncclAllReduce", error);
  case OP_ALL_GATHER:
    return nccl_ok(nccl.all_gather(inp, c->unpack ? stage : outp, chunk, type,
                                   comm, d->stream),
                   "ncclAllGather", error) &&
           (!c->unpack || per_member(d, st, c->unpack, d->stage, error));
  case OP_REDUCE_SCATTER:
    return (!c->pack || per_member(d, st, c->pack, d->stage, error)) &&
           nccl_ok(nccl.reduce_scatter(c->pack ? stage : inp, outp, chunk, type,
                                       NCCL_SUM, comm, d->stream),
                   "ncclReduceScatter", error);
  default: { /* all_to_all: received chunks after the sent ones */
    CUdeviceptr recv =
        c->unpack ? d->stage + (CUdeviceptr)(c->chunk * c->members) : out;
    CUdeviceptr send = c->pack ? d->stage : in;
    if (c->pack && !per_member(d, st, c->pack, d->stage, error))
      return FALSE;
    int r = nccl.group_start();
    for (int j = 0; r == 0 && j < c->members; j++) {
      CUdeviceptr at = (CUdeviceptr)(j * c->chunk);
      r = nccl.send((void *)(uintptr_t)(send + at), chunk, type, j, comm,
                    d->stream);
      if (r == 0)
        r = nccl.recv((void *)(uintptr_t)(recv + at), chunk, type, j, comm,
                      d->stream);
    }
    int end = nccl.group_end();
    return nccl_ok(r ? r : end, "all_to_all (ncclSend/ncclRecv)", error) &&
           (!c->unpack || per_member(d, st, c->unpack, recv, error));
  }
  }
}

/* The index of the GPU_END of the loop at 'i'. */
static guint loop_end(const GpuProgram *gp, guint i) {
  int depth = 0;
  for (;; i++) {
    GpuStepKind k = g_array_index(gp->steps, GpuStep, i).kind;
    depth += k == GPU_LOOP ? 1 : k == GPU_END ? -1 : 0;
    if (depth == 0)
      return i;
  }
}

/* Queues steps [from, to) on the device's stream. */
static gboolean run_steps(Device *d, guint from, guint to, GError **error) {
  for (guint i = from; i < to; i++) {
    const GpuStep *st = &g_array_index(d->gp->steps, GpuStep, i);
    gboolean ok = TRUE;
    switch (st->kind) {
    case GPU_LOOP: {
      guint end = loop_end(d->gp, i);
      for (int64_t r = 0; ok && r < st->count; r++) {
        d->ivs[st->level] = r;
        ok = run_steps(d, i + 1, end, error);
      }
      i = end;
      break;
    }
    case GPU_KERNEL:
      ok = launch(d, st, &st->launch, d->stage, 0, error);
      break;
    case GPU_GEMM:
      ok = gemm(d, &st->gemm, error);
      break;
    case GPU_COLLECTIVE:
      ok = collective(d, st, error);
      break;
    case GPU_END:
      break;
    }
    if (!ok)
      return FALSE;
  }
  return TRUE;
}

/* Waits for the stream, polling: FALSE when it failed or another device
 * did (a collective it waits in would not complete). */
static gboolean finish(Device *d, GError **error) {
  for (;;) {
    CUresult r = cu.stream_query(d->stream);
    if (r != CUDA_ERROR_NOT_READY)
      return cu_ok(r, "running the kernels", error);
    if (d->peer && !peer_check(&d->peer->ops, error))
      return FALSE;
    g_usleep(50);
  }
}

static gboolean alloc(CUdeviceptr *p, int64_t bytes, GError **error) {
  *p = 0;
  return bytes <= 0 ||
         cu_ok(cu.mem_alloc(p, (size_t)bytes), "cuMemAlloc", error);
}

/* Every slot's buffer: the arena's, its own (constants and arguments
 * copied in), or none (fused). */
static gboolean place_slots(Device *d, Tensor *const *args, GError **error) {
  const Plan *p = d->gp->plan;
  if (!alloc(&d->arena, p->arena_bytes, error) ||
      !alloc(&d->stage, d->gp->stage_bytes, error))
    return FALSE;
  for (guint s = 0; s < p->slots->len; s++) {
    const Slot *slot = &g_array_index(p->slots, Slot, s);
    if (slot->fused)
      continue;
    if (slot->offset >= 0 && !slot->value) {
      d->bufs[s] = d->arena + (CUdeviceptr)slot->offset;
      continue;
    }
    const Tensor *from = slot->value      ? slot->value
                         : slot->arg >= 0 ? args[slot->arg]
                                          : NULL;
    int64_t bytes = tensor_type_bytes(from ? from->type : slot->type);
    if (!alloc(&d->owned[s], bytes, error))
      return FALSE;
    d->bufs[s] = d->owned[s];
    if (from && bytes > 0 &&
        !cu_ok(cu.copy_in(d->owned[s], from->data, (size_t)bytes),
               "copying an input to the GPU", error))
      return FALSE;
  }
  return TRUE;
}

static GPtrArray *copy_results(Device *d, GError **error) {
  const Plan *p = d->gp->plan;
  GPtrArray *results =
      g_ptr_array_new_with_free_func((GDestroyNotify)tensor_unref);
  for (int i = 0; i < p->nresults; i++) {
    const Slot *slot = &g_array_index(p->slots, Slot, p->results[i]);
    Tensor *r = tensor_new(slot->type);
    g_ptr_array_add(results, r);
    size_t bytes = tensor_type_bytes(slot->type);
    if (slot->value && !slot->splat)
      memcpy(r->data, slot->value->data, bytes);
    else if (slot->value) /* one number, every element */
      for (size_t at = 0; at < bytes;
           at += dtype_storage_bytes(slot->type->dtype))
        memcpy((char *)r->data + at, slot->value->data,
               dtype_storage_bytes(slot->type->dtype));
    else if (bytes > 0 &&
             !cu_ok(cu.copy_out(r->data, d->bufs[p->results[i]], bytes),
                    "copying a result from the GPU", error)) {
      g_ptr_array_unref(results);
      return NULL;
    }
  }
  return results;
}

static void device_clear(Device *d) {
  const Plan *p = d->gp->plan;
  for (guint s = 0; d->owned && s < p->slots->len; s++)
    if (d->owned[s])
      cu.mem_free(d->owned[s]);
  if (d->arena)
    cu.mem_free(d->arena);
  if (d->stage)
    cu.mem_free(d->stage);
  if (d->blas)
    cublas.destroy(d->blas);
  if (d->stream)
    cu.stream_destroy(d->stream);
  if (d->module)
    cu.module_unload(d->module);
  if (d->ctx)
    cu.primary_release(d->dev);
  if (d->functions)
    g_hash_table_unref(d->functions);
  g_free(d->bufs);
  g_free(d->owned);
}

/* GPU 'gpu' made ready: its context current, the PTX loaded (the
 * driver's log in the error when it refuses it), a stream, cuBLAS. */
static gboolean device_open(Device *d, int gpu, GError **error) {
  int major = 0;
  if (!cu_ok(cu.device_get(&d->dev, gpu), "cuDeviceGet", error) ||
      !cu_ok(cu.device_attribute(&major, CU_ATTR_CC_MAJOR, d->dev),
             "cuDeviceGetAttribute", error))
    return FALSE;
  int arch = atoi(d->gp->arch + 3) / 10;
  if (major < arch) {
    g_set_error(error, CUDA_ERROR, 0,
                "GPU %d has compute capability %d.x: the kernels are "
                "compiled for %s (--arch)",
                gpu, major, d->gp->arch);
    return FALSE;
  }
  if (!cu_ok(cu.primary_retain(&d->ctx, d->dev), "cuDevicePrimaryCtxRetain",
             error) ||
      !cu_ok(cu.ctx_set_current(d->ctx), "cuCtxSetCurrent", error))
    return FALSE;
  char log[4096] = "";
  int options[2] = {CU_JIT_ERROR_LOG_BUFFER,
                    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[2] = {log, (void *)(uintptr_t)sizeof log};
  if (!cu_ok(cu.module_load(&d->module, d->gp->ptx, 2, options, values),
             "loading the PTX", error)) {
    if (log[0])
      g_prefix_error(error, "%s: ", log);
    return FALSE;
  }
  gboolean gemms = FALSE;
  for (guint i = 0; i < d->gp->steps->len; i++)
    gemms |= g_array_index(d->gp->steps, GpuStep, i).kind == GPU_GEMM;
  return cu_ok(cu.stream_create(&d->stream, 0), "cuStreamCreate", error) &&
         (!gemms ||
          (open_cublas(error) &&
           cublas_ok(cublas.create(&d->blas), "cublasCreate", error) &&
           cublas_ok(cublas.set_stream(d->blas, d->stream), "cublasSetStream",
                     error)));
}

/* The program on GPU 'gpu' with this device's inputs: its results. */
static GPtrArray *device_run(const GpuProgram *gp, Peer *peer, int gpu,
                             Tensor *const *inputs, GError **error) {
  const Plan *p = gp->plan;
  Device d = {.gp = gp, .peer = peer};
  d.functions = g_hash_table_new(g_str_hash, g_str_equal);
  d.bufs = g_new0(CUdeviceptr, MAX(p->slots->len, 1));
  d.owned = g_new0(CUdeviceptr, MAX(p->slots->len, 1));
  GPtrArray *results = NULL;
  if (device_open(&d, gpu, error) && rank_connect(peer, error) &&
      place_slots(&d, inputs, error) &&
      run_steps(&d, 0, gp->steps->len, error) && finish(&d, error))
    results = copy_results(&d, error);
  device_clear(&d);
  return results;
}

/* spmd_run's hook: device 'kernel_comm' names, on its thread. */
static GPtrArray *spmd_device(void *data, const Func *f, Tensor *const *inputs,
                              GError **error) {
  (void)f;
  Peer *peer = (Peer *)kernel_comm;
  if (!peer_check(&peer->ops, error)) /* connecting failed */
    return NULL;
  return device_run(data, peer, peer->device, inputs, error);
}

GPtrArray *cuda_rank_run(const GpuProgram *gp, const Mesh *mesh, int device,
                         int gpu, const RankExchange *x, Tensor *const *inputs,
                         GError **error) {
  if (!mesh)
    return device_run(gp, NULL, gpu, inputs, error);
  World w = {.mesh = *mesh, .ndevices = (int)mesh_devices(mesh), .gp = gp};
  Peer p = {.ops = {.fail = peer_fail, .check = peer_check},
            .world = &w,
            .device = device,
            .exchange = x};
  p.comms = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  GPtrArray *results = device_run(gp, &p, gpu, inputs, error);
  peer_close(&p, results == NULL);
  if (w.error)
    g_error_free(w.error);
  return results;
}

GPtrArray *codegen_cuda_run(Compiled *c, const Func *f,
                            Tensor *const *global_inputs, Diag *diag,
                            GError **error) {
  const GpuProgram *gp = codegen_gpu(c);
  g_assert(gp);
  int count;
  if (!cuda_gpu_count(&count, error))
    return NULL;
  if (!f->spmd)
    return device_run(gp, NULL, 0, global_inputs, error);
  int64_t need = mesh_devices(&f->spmd->mesh);
  if (need > count) {
    g_set_error(error, CUDA_ERROR, 0,
                "the mesh has %" G_GINT64_FORMAT
                " devices and this machine %d GPU%s: --runtime cuda runs "
                "one device a GPU",
                need, count, count == 1 ? "" : "s");
    return NULL;
  }
  SpmdRuntime rt = {.run = spmd_device,
                    .run_data = (void *)gp,
                    .connect = cuda_connect,
                    .disconnect = cuda_disconnect,
                    .comm_data = (void *)gp};
  return spmd_run(f, global_inputs, &rt, diag, error);
}
