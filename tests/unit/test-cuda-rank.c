/* test-cuda-rank — how the ranks of --runtime cuda-mpi make their NCCL
 * communicators (cuda_rank_connect, codegen/cuda.c) and choose their
 * GPU (cuda_rank_gpu), on the CPU, with a fake NCCL.
 *
 * The fake records what each rank asks of NCCL: the ids rank 0 makes
 * (ncclGetUniqueId), what each rank broadcasts or receives (MPI_Bcast's
 * part, RankExchange), and which id, group size and rank each joins
 * (ncclCommInitRank).  The ranks run one after another: rank 0 first,
 * its broadcasts kept, which the later ranks receive in order.
 *
 * Expected values are worked out by hand from the mesh: batch=2,model=2
 * numbers its devices row-major (device 1 is batch 0, model 1), a
 * group over axes [a, b] is the devices that agree on the other axes,
 * and a device's rank in it is its position row-major over a, b as
 * listed (docs/runtime.md).
 */
#include "codegen/internal.h"
#include "tests/unit/collective-term.h"

#include <string.h>

/* One ncclCommInitRank call. */
typedef struct Join {
  int device;
  char id[16]; /* the id's text ("id 3"), as the fake made it */
  int nranks, rank;
} Join;

static struct {
  int device;         /* the rank that calls */
  int ids_made;       /* ncclGetUniqueId calls */
  int ids_made_by;    /* ...and the last device to make one */
  GArray *joins;      /* Join */
  GPtrArray *sent;    /* rank 0's broadcasts, in order (GBytes) */
  guint received;     /* how many of them this rank has received */
  int inits, fail_at; /* ncclCommInitRank calls; the one that fails */
} fake;

#define FAKE_INVALID_USAGE 5 /* ncclInvalidUsage */

static int fake_get_unique_id(NcclId *id) {
  memset(id, 0, sizeof *id);
  g_snprintf(id->bytes, sizeof id->bytes, "id %d", fake.ids_made++);
  fake.ids_made_by = fake.device;
  return 0;
}

static int fake_init_rank(NcclComm *comm, int nranks, NcclId id, int rank) {
  if (fake.inits++ == fake.fail_at)
    return FAKE_INVALID_USAGE;
  Join j = {.device = fake.device, .nranks = nranks, .rank = rank};
  g_strlcpy(j.id, id.bytes, sizeof j.id);
  g_array_append_val(fake.joins, j);
  *comm = (NcclComm)(uintptr_t)fake.joins->len; /* distinct, not NULL */
  return 0;
}

static const char *fake_error_string(int r) {
  return r == FAKE_INVALID_USAGE ? "invalid usage (fake)" : "unknown";
}

static const NcclApi fake_api = {.get_unique_id = fake_get_unique_id,
                                 .init_rank = fake_init_rank,
                                 .error_string = fake_error_string};

static void fake_bcast(void *data, gsize bytes, void *user) {
  (void)user;
  if (fake.device == 0) {
    g_ptr_array_add(fake.sent, g_bytes_new(data, bytes));
    return;
  }
  g_assert_cmpuint(fake.received, <, fake.sent->len);
  GBytes *b = g_ptr_array_index(fake.sent, fake.received++);
  g_assert_cmpuint(g_bytes_get_size(b), ==, bytes);
  memcpy(data, g_bytes_get_data(b, NULL), bytes);
}

static const RankExchange fake_exchange = {.bcast = fake_bcast};

static void fake_reset(int fail_at) {
  if (fake.joins)
    g_array_unref(fake.joins);
  if (fake.sent)
    g_ptr_array_unref(fake.sent);
  memset(&fake, 0, sizeof fake);
  fake.joins = g_array_new(FALSE, TRUE, sizeof(Join));
  fake.sent = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
  fake.fail_at = fail_at;
}

/* A GPU program whose steps are all_reduces over each of 'axes' (a
 * NULL-terminated list of comma-separated axis lists) on 'mesh'. */
static GpuProgram *program_of(const Mesh *mesh, const char *const *axes) {
  GpuProgram *gp = g_new0(GpuProgram, 1);
  gp->steps = g_array_new(FALSE, TRUE, sizeof(GpuStep));
  const Type *f32 = type_tensor(DT_F32, 1, (int64_t[]){8});
  for (int i = 0; axes[i]; i++) {
    g_auto(GStrv) names = g_strsplit(axes[i], ",", -1);
    int64_t size = 1;
    for (int k = 0; names[k]; k++)
      size *= mesh->sizes[mesh_axis_index(mesh, names[k])];
    g_autoptr(Diag) err = diag_new(NULL);
    GpuStep st = {.kind = GPU_COLLECTIVE,
                  .t = collective_term(OP_ALL_REDUCE, term_arg(0, f32), axes[i],
                                       size, NULL, 0, NULL, 0, err)};
    g_assert_nonnull(st.t);
    g_array_append_val(gp->steps, st);
    /* a kernel between collectives changes nothing */
    GpuStep k = {.kind = GPU_KERNEL, .t = st.t};
    g_array_append_val(gp->steps, k);
  }
  return gp;
}

static void program_free(GpuProgram *gp) {
  g_array_unref(gp->steps);
  g_free(gp);
}

/* Every device of 'mesh' connects in turn, rank 0 first, each
 * succeeding; each device's communicators counted into 'ncomms'. */
static void connect_all(const GpuProgram *gp, const Mesh *mesh, int *ncomms) {
  for (int dev = 0; dev < mesh_devices(mesh); dev++) {
    fake.device = dev;
    fake.received = 0;
    g_autoptr(GHashTable) comms =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    GError *error = NULL;
    g_assert_true(cuda_rank_connect(gp, mesh, dev, &fake_api, &fake_exchange,
                                    comms, &error));
    g_assert_no_error(error);
    /* every rank receives every broadcast rank 0 made */
    if (dev > 0)
      g_assert_cmpuint(fake.received, ==, fake.sent->len);
    ncomms[dev] = (int)g_hash_table_size(comms);
  }
}

/* batch=2,model=2, collectives over [model], [batch], [model] again,
 * [batch, model] and [model, batch]. */
static void test_groups(void) {
  g_autoptr(Diag) err = diag_new(NULL);
  Mesh m;
  g_assert_true(mesh_parse("batch=2,model=2", &m, err));
  const char *axes[] = {"model",       "batch",       "model",
                        "batch,model", "model,batch", NULL};
  GpuProgram *gp = program_of(&m, axes);
  fake_reset(-1);
  int ncomms[4];
  connect_all(gp, &m, ncomms);

  /* rank 0 made the ids, one a group: 2 + 2 + 1 + 1 */
  g_assert_cmpint(fake.ids_made, ==, 6);
  g_assert_cmpint(fake.ids_made_by, ==, 0);
  /* one broadcast an axis list (the repeated [model] none), each of
   * 4 ids: one at each device's number, zero where it leads no group */
  g_assert_cmpuint(fake.sent->len, ==, 4);
  for (guint k = 0; k < fake.sent->len; k++)
    g_assert_cmpuint(g_bytes_get_size(g_ptr_array_index(fake.sent, k)), ==,
                     4 * NCCL_ID_BYTES);
  for (int dev = 0; dev < 4; dev++)
    g_assert_cmpint(ncomms[dev], ==, 4);

  /* device, id, group size, rank in the group: in the order the steps
   * first use the axis lists */
  static const Join expect[] = {
      /* [model]: {0, 1} (id 0, made at device 0), {2, 3} (id 1) */
      {0, "id 0", 2, 0},
      /* [batch]: {0, 2} (id 2), {1, 3} (id 3) */
      {0, "id 2", 2, 0},
      /* [batch, model]: every device, rank = device */
      {0, "id 4", 4, 0},
      /* [model, batch]: rank = model * 2 + batch */
      {0, "id 5", 4, 0},
      {1, "id 0", 2, 1},
      {1, "id 3", 2, 0},
      {1, "id 4", 4, 1},
      {1, "id 5", 4, 2}, /* batch 0, model 1 */
      {2, "id 1", 2, 0},
      {2, "id 2", 2, 1},
      {2, "id 4", 4, 2},
      {2, "id 5", 4, 1}, /* batch 1, model 0 */
      {3, "id 1", 2, 1},
      {3, "id 3", 2, 1},
      {3, "id 4", 4, 3},
      {3, "id 5", 4, 3},
  };
  g_assert_cmpuint(fake.joins->len, ==, G_N_ELEMENTS(expect));
  for (guint i = 0; i < G_N_ELEMENTS(expect); i++) {
    const Join *j = &g_array_index(fake.joins, Join, i);
    g_assert_cmpint(j->device, ==, expect[i].device);
    g_assert_cmpstr(j->id, ==, expect[i].id);
    g_assert_cmpint(j->nranks, ==, expect[i].nranks);
    g_assert_cmpint(j->rank, ==, expect[i].rank);
  }
  program_free(gp);
}

/* A mesh of 3 devices on one axis, and a program without collectives:
 * no id, no broadcast. */
static void test_one_axis(void) {
  g_autoptr(Diag) err = diag_new(NULL);
  Mesh m;
  g_assert_true(mesh_parse("data=3", &m, err));
  const char *axes[] = {"data", NULL};
  GpuProgram *gp = program_of(&m, axes);
  fake_reset(-1);
  int ncomms[3];
  connect_all(gp, &m, ncomms);
  g_assert_cmpint(fake.ids_made, ==, 1);
  g_assert_cmpuint(fake.joins->len, ==, 3);
  for (int dev = 0; dev < 3; dev++) {
    const Join *j = &g_array_index(fake.joins, Join, dev);
    g_assert_cmpstr(j->id, ==, "id 0");
    g_assert_cmpint(j->nranks, ==, 3);
    g_assert_cmpint(j->rank, ==, dev);
  }
  program_free(gp);

  const char *none[] = {NULL};
  gp = program_of(&m, none);
  fake_reset(-1);
  connect_all(gp, &m, ncomms);
  g_assert_cmpint(fake.ids_made, ==, 0);
  g_assert_cmpuint(fake.sent->len, ==, 0);
  g_assert_cmpint(ncomms[0], ==, 0);
  program_free(gp);
}

/* A failing ncclCommInitRank: FALSE with NCCL's message, the
 * communicators made before it left for the caller to abort. */
static void test_failure(void) {
  g_autoptr(Diag) err = diag_new(NULL);
  Mesh m;
  g_assert_true(mesh_parse("batch=2,model=2", &m, err));
  const char *axes[] = {"model", "batch", NULL};
  GpuProgram *gp = program_of(&m, axes);
  fake_reset(1);
  g_autoptr(GHashTable) comms =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  GError *error = NULL;
  g_assert_false(
      cuda_rank_connect(gp, &m, 0, &fake_api, &fake_exchange, comms, &error));
  g_assert_nonnull(error);
  g_assert_cmpstr(error->message, ==,
                  "ncclCommInitRank: NCCL: invalid usage (fake)");
  g_error_free(error);
  g_assert_cmpuint(g_hash_table_size(comms), ==, 1);
  g_assert_true(g_hash_table_contains(comms, "model"));
  program_free(gp);
}

/* A rank's GPU: its local rank, or the one GPU it sees. */
static void test_gpu(void) {
  g_assert_cmpint(cuda_rank_gpu(0, 8), ==, 0);
  g_assert_cmpint(cuda_rank_gpu(7, 8), ==, 7);
  g_assert_cmpint(cuda_rank_gpu(8, 8), ==, -1);
  g_assert_cmpint(cuda_rank_gpu(2, 2), ==, -1);
  g_assert_cmpint(cuda_rank_gpu(0, 1), ==, 0);
  g_assert_cmpint(cuda_rank_gpu(3, 1), ==, 0);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/cuda-rank/groups", test_groups);
  g_test_add_func("/cuda-rank/one-axis", test_one_axis);
  g_test_add_func("/cuda-rank/failure", test_failure);
  g_test_add_func("/cuda-rank/gpu", test_gpu);
  int status = g_test_run();
  fake_reset(-1);
  g_array_unref(fake.joins);
  g_ptr_array_unref(fake.sent);
  return status;
}
