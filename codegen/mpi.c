/* mpi.c — the MPI runtime: a process (an MPI rank) per device.
 *
 * Every rank runs the same partir command: it loads, lowers and compiles
 * the same program, so every rank holds the same device program.  Rank r
 * is device r of the mesh, its coordinates row-major (mesh.names[0]
 * major), as the threaded runtime and the simulator number devices
 * (docs/runtime.md).  codegen_run_mpi is spmd_run spread over ranks:
 *
 *   1. scatter  rank 0 checks the global inputs (spmd_check_inputs),
 *               cuts each device's chunks (spmd_scatter) and sends them;
 *               the others receive theirs;
 *   2. run      each rank runs the compiled program, its collectives
 *               through this file's Collectives (kernel_comm), or its
 *               GPU does (cuda_mpi.c: codegen_mpi_spread takes the run);
 *   3. gather   each rank sends its results to rank 0, which assembles
 *               the global ones (spmd_gather: replicas checked, partial
 *               sums added) exactly as spmd_run does.
 *
 * Communicators: a collective over axes [a, b] acts in the group of the
 * devices that agree on every other axis, ordered row-major over [a, b]
 * as listed.  Before the run every rank walks the program and makes one
 * communicator per distinct axis list with MPI_Comm_split (colour: the
 * coordinates on the other axes, row-major; key: the position in the
 * group), in the same order on every rank, so the collective call
 * sequence matches.
 *
 * Collectives (same semantics as codegen/threads.c):
 *   all_reduce      MPI_Allreduce
 *   reduce_scatter  MPI_Reduce_scatter_block, the operand packed a
 *                   member's chunk after another
 *   all_gather      MPI_Allgather, then the chunks placed along 'dim'
 *   all_to_all      MPI_Alltoall, the chunks packed along split_dim and
 *                   placed along concat_dim
 *   shard           no exchange: this device's chunk.
 * Sums are the simulator's: from zero, in double for floats (int64,
 * wrapping, for integers), rounded once to the dtype.  So the operand is
 * widened to MPI_DOUBLE (MPI_UINT64_T: unsigned addition wraps) and
 * summed with MPI_SUM.  That also covers bf16 and f16, which MPI has no
 * type for, without a user-defined MPI_Op: an op summing bf16 pairwise
 * would round after every addition, which the threaded runtime does not.
 * Equal bits: integer sums always; float sums whenever the group's sum
 * is exact in double, which two members always are (0 + a + b rounds
 * once) and f32/bf16/f16 operands nearly always are (MPI may associate
 * a group of more than two differently).  Moves (gather, all-to-all)
 * are bytes, any dtype.
 *
 * Failure: MPI's errors are fatal (MPI_ERRORS_ARE_FATAL ends every
 * rank).  A rank whose run fails otherwise returns the error to its
 * front end, which prints it and calls codegen_mpi_stop with a non-zero
 * status: MPI_Abort ends every rank, so none waits for it in a
 * collective or a receive.
 */
#include "codegen/internal.h"

#include <mpi.h>

/* 'n' rounded up to a multiple of 8: where doubles may follow bytes in
 * one scratch buffer. */
#define ALIGN8(n) (((n) + 7) & ~(gsize)7)

/* Largest message: MPI counts are ints, so big tensors go in pieces. */
#define MPI_PIECE_BYTES ((gsize)1 << 30)

/* One communicator: the group of a collective's axis list. */
typedef struct Group {
  MPI_Comm comm;
  int size;
} Group;

/* This rank's device: its Collectives and the communicators it uses. */
typedef struct MpiDevice {
  Collectives ops; /* first: what kernel_comm points to */
  const Mesh *mesh;
  int64_t coords[MESH_MAX_AXES];
  GHashTable *groups; /* axis list ("0,1": mesh axis indices) -> Group */
  gsize scratch_bytes[3];
  /* packing and widening buffers, and an uneven split's padded operand,
   * grown as needed */
  void *scratch[3];
} MpiDevice;

static int world_rank(void) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

/* -------------------------------------------------------- start, stop */

gboolean codegen_mpi_start(int *rank, int *ranks, GError **error) {
  int started = 0;
  MPI_Initialized(&started);
  if (!started) {
    int provided;
    /* compiled code may use threads (OpenBLAS); only this one calls MPI */
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) !=
        MPI_SUCCESS) {
      g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_IO, "MPI_Init failed");
      return FALSE;
    }
  }
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, ranks);
  return TRUE;
}

void codegen_mpi_stop(int status) {
  int started = 0, stopped = 0;
  MPI_Initialized(&started);
  MPI_Finalized(&stopped);
  if (!started || stopped) /* MPI_Init failed: nothing to leave */
    return;
  if (status != 0) /* the others may wait for this rank: end them all */
    MPI_Abort(MPI_COMM_WORLD, status);
  /* every rank has said what it had to before any exits: mpirun ends
   * the others as soon as one exits with a non-zero status */
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
}

/* ------------------------------------------------------- communicators */

/* The mesh axis indices of collective 't', as listed. */
static int collective_axes(const Mesh *m, const Term *t, int *axes) {
  const AttrValue *list = attrs_get(t->attrs, "axes");
  g_assert(list && list->kind == AV_LIST);
  for (int k = 0; k < list->count; k++) {
    axes[k] = mesh_axis_index(m, list->items[k].sym);
    g_assert(axes[k] >= 0); /* spmd_check_inputs checked them */
  }
  return list->count;
}

static char *axes_key(const int *axes, int naxes) {
  GString *s = g_string_new(NULL);
  for (int k = 0; k < naxes; k++)
    g_string_append_printf(s, "%s%d", k ? "," : "", axes[k]);
  return g_string_free(s, FALSE);
}

/* The group of 'dev' over 'axes' (as listed): colour from the other
 * axes' coordinates, key the position in the group. */
static Group *group_new(const MpiDevice *dev, const int *axes, int naxes) {
  const Mesh *m = dev->mesh;
  gboolean in[MESH_MAX_AXES] = {FALSE};
  int key = 0, size = 1;
  for (int k = 0; k < naxes; k++) {
    in[axes[k]] = TRUE;
    key = key * (int)m->sizes[axes[k]] + (int)dev->coords[axes[k]];
    size *= (int)m->sizes[axes[k]];
  }
  int colour = 0;
  for (int a = 0; a < m->naxes; a++)
    if (!in[a])
      colour = colour * (int)m->sizes[a] + (int)dev->coords[a];
  Group *g = g_new0(Group, 1);
  MPI_Comm_split(MPI_COMM_WORLD, colour, key, &g->comm);
  g->size = size;
  return g;
}

static void group_free(gpointer p) {
  Group *g = p;
  MPI_Comm_free(&g->comm);
  g_free(g);
}

static gint compare_keys(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Makes the communicator of every axis list the collectives under
 * 'roots' use, in the order of their keys: the same calls on every
 * rank. */
static void connect_groups(MpiDevice *dev, const Term *const *roots,
                           int nroots) {
  g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
  g_autoptr(GPtrArray) todo = g_ptr_array_new();
  g_autoptr(GPtrArray) keys = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GHashTable) lists = g_hash_table_new(g_str_hash, g_str_equal);
  for (int i = 0; i < nroots; i++)
    g_ptr_array_add(todo, (gpointer)roots[i]);
  while (todo->len > 0) {
    const Term *t = g_ptr_array_steal_index_fast(todo, todo->len - 1);
    if (!g_hash_table_add(seen, (gpointer)t))
      continue;
    if (t->kind == TM_OP && op_is_collective(t->op) && t->op != OP_SHARD) {
      int axes[MESH_MAX_AXES];
      char *key = axes_key(axes, collective_axes(dev->mesh, t, axes));
      if (g_hash_table_contains(lists, key)) {
        g_free(key);
      } else {
        g_hash_table_add(lists, key);
        g_ptr_array_add(keys, key);
      }
    }
    for (int i = 0; i < t->nargs; i++)
      g_ptr_array_add(todo, (gpointer)t->args[i]);
  }
  g_ptr_array_sort(keys, compare_keys);
  for (guint k = 0; k < keys->len; k++) {
    const char *key = g_ptr_array_index(keys, k);
    g_auto(GStrv) names = g_strsplit(key, ",", -1);
    int axes[MESH_MAX_AXES], naxes = 0;
    for (int j = 0; *key && names[j]; j++)
      axes[naxes++] = (int)g_ascii_strtoll(names[j], NULL, 10);
    g_hash_table_insert(dev->groups, g_strdup(key),
                        group_new(dev, axes, naxes));
  }
}

/* ---------------------------------------------------------- elements */

/* The MPI type that moves elements of 'width' bytes. */
static MPI_Datatype element_type(gsize width) {
  switch (width) {
  case 1:
    return MPI_UINT8_T;
  case 2:
    return MPI_UINT16_T;
  case 4:
    return MPI_UINT32_T;
  default:
    g_assert(width == 8);
    return MPI_UINT64_T;
  }
}

/* 'n' elements of dtype 'dt' at 'p' as doubles (floats) or wrapping
 * 64-bit integers in 'acc': the threaded runtime's accumulators.  A
 * float starts from 0.0, as its sums do (0.0 + -0.0 is 0.0). */
static void widen(void *acc, const void *p, DType dt, int64_t n) {
  double *f = acc;
  guint64 *u = acc;
  switch (dt) {
  case DT_F32:
    for (int64_t e = 0; e < n; e++)
      f[e] = 0.0 + ((const float *)p)[e];
    break;
  case DT_F64:
    for (int64_t e = 0; e < n; e++)
      f[e] = 0.0 + ((const double *)p)[e];
    break;
  case DT_BF16:
    for (int64_t e = 0; e < n; e++)
      f[e] = 0.0 + tensor_bf16_to_f32(((const uint16_t *)p)[e]);
    break;
  case DT_F16:
    for (int64_t e = 0; e < n; e++)
      f[e] = 0.0 + dtype_f16_to_f32(((const uint16_t *)p)[e]);
    break;
  case DT_I32:
    for (int64_t e = 0; e < n; e++)
      u[e] = (guint64)(int64_t)((const int32_t *)p)[e];
    break;
  case DT_I64:
    memcpy(u, p, (gsize)n * sizeof *u);
    break;
  case DT_I1:
  case DT_UI8:
    for (int64_t e = 0; e < n; e++)
      u[e] = ((const uint8_t *)p)[e];
    break;
  case DT_I8:
    for (int64_t e = 0; e < n; e++)
      u[e] = (guint64)(int64_t)((const int8_t *)p)[e];
    break;
  case DT_I16:
    for (int64_t e = 0; e < n; e++)
      u[e] = (guint64)(int64_t)((const int16_t *)p)[e];
    break;
  case DT_UI16:
    for (int64_t e = 0; e < n; e++)
      u[e] = ((const uint16_t *)p)[e];
    break;
  case DT_UI32:
    for (int64_t e = 0; e < n; e++)
      u[e] = ((const uint32_t *)p)[e];
    break;
  default:
    g_assert_not_reached();
  }
}

/* Sums in 'acc' rounded (floats) or wrapped (integers) to dtype 'dt' at
 * 'p', as the threaded runtime stores them. */
static void narrow(void *p, DType dt, const void *acc, int64_t n) {
  const double *f = acc;
  const guint64 *u = acc;
  switch (dt) {
  case DT_F32:
    for (int64_t e = 0; e < n; e++)
      ((float *)p)[e] = (float)f[e];
    break;
  case DT_F64:
    memcpy(p, f, (gsize)n * sizeof *f);
    break;
  case DT_BF16:
    for (int64_t e = 0; e < n; e++)
      ((uint16_t *)p)[e] = tensor_bf16_from_f32((float)f[e]);
    break;
  case DT_F16:
    for (int64_t e = 0; e < n; e++)
      ((uint16_t *)p)[e] = dtype_f16_from_f64(f[e]);
    break;
  case DT_I32:
    for (int64_t e = 0; e < n; e++)
      ((int32_t *)p)[e] = (int32_t)(uint32_t)u[e];
    break;
  case DT_I64:
    memcpy(p, u, (gsize)n * sizeof *u);
    break;
  case DT_I1:
    for (int64_t e = 0; e < n; e++)
      ((uint8_t *)p)[e] = u[e] != 0;
    break;
  case DT_I8:
  case DT_UI8:
    for (int64_t e = 0; e < n; e++)
      ((uint8_t *)p)[e] = (uint8_t)u[e];
    break;
  case DT_I16:
  case DT_UI16:
    for (int64_t e = 0; e < n; e++)
      ((uint16_t *)p)[e] = (uint16_t)u[e];
    break;
  case DT_UI32:
    for (int64_t e = 0; e < n; e++)
      ((uint32_t *)p)[e] = (uint32_t)u[e];
    break;
  default:
    g_assert_not_reached();
  }
}

/* Copies 'nparts' chunks of 'dims' along dimension 'd' (each 'part'
 * long there) between a tensor of 'dims' ('whole') and the chunks one
 * after another ('packed'): packing when 'pack', else placing. */
static void chunks_move(void *whole, void *packed, const int64_t *dims,
                        int rank, int d, int64_t part, int nparts, gsize width,
                        gboolean pack) {
  int64_t outer = 1, inner = (int64_t)width;
  for (int k = 0; k < d; k++)
    outer *= dims[k];
  for (int k = d + 1; k < rank; k++)
    inner *= dims[k];
  gsize row = (gsize)(part * inner); /* one chunk's run per outer index */
  for (int j = 0; j < nparts; j++)
    for (int64_t o = 0; o < outer; o++) {
      char *w = (char *)whole + (o * dims[d] + j * part) * inner;
      char *c = (char *)packed + ((gsize)j * (gsize)outer + (gsize)o) * row;
      if (pack)
        memcpy(c, w, row);
      else
        memcpy(w, c, row);
    }
}

/* Along dimension 'd' of a row-major tensor of 'dims' (element 'width'
 * bytes): rows [from, from + n) of 'src', whose dimension d has
 * 'src_rows', to the first n rows of 'dst', whose dimension d has
 * 'dst_rows', for every index of the dimensions before d. */
static void copy_rows(void *dst, int64_t dst_rows, const void *src,
                      int64_t src_rows, int64_t from, int64_t n,
                      const int64_t *dims, int rank, int d, gsize width) {
  int64_t outer = 1;
  gsize inner = width;
  for (int k = 0; k < d; k++)
    outer *= dims[k];
  for (int k = d + 1; k < rank; k++)
    inner *= (gsize)dims[k];
  for (int64_t o = 0; o < outer && n > 0; o++)
    memcpy((char *)dst + (gsize)(o * dst_rows) * inner,
           (const char *)src + (gsize)(o * src_rows + from) * inner,
           (gsize)n * inner);
}

/* Scratch buffer 'k' (0 to 2) of at least 'bytes': its contents are not
 * kept when it grows. */
static void *scratch(MpiDevice *dev, int k, gsize bytes) {
  if (bytes > dev->scratch_bytes[k]) {
    g_free(dev->scratch[k]);
    dev->scratch[k] = g_malloc(bytes);
    dev->scratch_bytes[k] = bytes;
  }
  return dev->scratch[k];
}

/* -------------------------------------------------------- collectives */

static Group *device_group(MpiDevice *dev, const Term *t) {
  int axes[MESH_MAX_AXES];
  g_autofree char *key = axes_key(axes, collective_axes(dev->mesh, t, axes));
  Group *g = g_hash_table_lookup(dev->groups, key);
  g_assert(g); /* connect_groups made every one */
  return g;
}

/* This device's position in its group over the axes of 't'. */
static int64_t group_position(const MpiDevice *dev, const Term *t) {
  int axes[MESH_MAX_AXES];
  int naxes = collective_axes(dev->mesh, t, axes);
  int64_t position = 0;
  for (int k = 0; k < naxes; k++)
    position = position * dev->mesh->sizes[axes[k]] + dev->coords[axes[k]];
  return position;
}

/* Whether a sum over 'g' goes through MPI's reductions: integers (their
 * wrapping sums do not depend on the order) and groups of two (0 + a + b
 * in double rounds once, in either order).  Floats over more members are
 * summed here in group order, from the chunks MPI_Alltoall brings: the
 * threaded runtime's bits, whatever association MPI's reduction would
 * choose, with the traffic of a reduce-scatter. */
static gboolean mpi_sums(const Group *g, DType dt) {
  return !dtype_is_float(dt) || g->size <= 2;
}

/* The sum of 'parts' runs of 'n' elements of dtype 'dt', one after
 * another at 'in', in that order from zero, rounded once to 'out'. */
static void sum_in_order(void *out, const void *in, int parts, int64_t n,
                         DType dt, double *acc, double *one) {
  gsize width = dtype_storage_bytes(dt);
  for (int64_t e = 0; e < n; e++)
    acc[e] = 0.0;
  for (int j = 0; j < parts; j++) {
    widen(one, (const char *)in + (gsize)j * (gsize)n * width, dt, n);
    for (int64_t e = 0; e < n; e++)
      acc[e] += one[e];
  }
  narrow(out, dt, acc, n);
}

static void all_reduce(MpiDevice *dev, const Term *t, const void *in,
                       void *out) {
  Group *g = device_group(dev, t);
  DType dt = t->type->dtype;
  int64_t n = type_numel(t->type);
  if (mpi_sums(g, dt)) {
    void *acc = scratch(dev, 0, (gsize)n * 8);
    widen(acc, in, dt, n);
    MPI_Allreduce(MPI_IN_PLACE, acc, (int)n,
                  dtype_is_float(dt) ? MPI_DOUBLE : MPI_UINT64_T, MPI_SUM,
                  g->comm);
    narrow(out, dt, acc, n);
    return;
  }
  /* member j sums slice j (elements n*j/size up to n*(j+1)/size) of
   * every operand, then every member gathers the sums */
  int size = g->size;
  int64_t position = group_position(dev, t);
  gsize width = dtype_storage_bytes(dt);
  MPI_Datatype type = element_type(width);
  g_autofree int *counts = g_new(int, (gsize)size);
  g_autofree int *offsets = g_new(int, (gsize)size);
  g_autofree int *mine = g_new(int, (gsize)size);
  g_autofree int *mine_at = g_new(int, (gsize)size);
  for (int j = 0; j < size; j++) {
    offsets[j] = (int)(n * j / size);
    counts[j] = (int)(n * (j + 1) / size) - offsets[j];
  }
  int64_t slice = counts[position];
  for (int j = 0; j < size; j++) {
    mine[j] = (int)slice;
    mine_at[j] = (int)(j * slice);
  }
  gsize parts_bytes = ALIGN8((gsize)(slice * size) * width);
  char *parts = scratch(dev, 0, parts_bytes + 8 * (gsize)n);
  double *acc = (double *)(parts + parts_bytes);
  double *one = scratch(dev, 1, 8 * (gsize)n + 8);
  /* alltoallv: slice j of this operand to member j; member j's slice
   * 'position' back, in group order */
  MPI_Alltoallv(in, counts, offsets, type, parts, mine, mine_at, type, g->comm);
  char *sum = (char *)out + (gsize)offsets[position] * width;
  sum_in_order(sum, parts, size, slice, dt, acc, one);
  MPI_Allgatherv(MPI_IN_PLACE, 0, type, out, counts, offsets, type, g->comm);
}

/* 'in' (of type 'x') padded with zeros at the end of dimension 'd' to
 * 'whole' there, in scratch buffer 'k': an uneven split's operand made
 * whole chunks (docs/spmd.md, "Uneven sizes").  The padded type in
 * '*padded'. */
static const void *padded_operand(MpiDevice *dev, int k, const void *in,
                                  const Type *x, int d, int64_t whole,
                                  const Type **padded) {
  int64_t dims[PARTIR_MAX_RANK];
  memcpy(dims, x->dims, sizeof(int64_t) * (gsize)x->rank);
  dims[d] = whole;
  *padded = type_tensor(x->dtype, x->rank, dims);
  char *buf = scratch(dev, k, tensor_type_bytes(*padded));
  memset(buf, 0, tensor_type_bytes(*padded));
  copy_rows(buf, whole, in, x->dims[d], 0, x->dims[d], x->dims, x->rank, d,
            dtype_storage_bytes(x->dtype));
  return buf;
}

static void reduce_scatter(MpiDevice *dev, const Term *t, const void *in,
                           void *out) {
  Group *g = device_group(dev, t);
  const Type *x = t->args[0]->type;
  DType dt = t->type->dtype;
  int d = (int)attrs_get_int(t->attrs, "dim");
  if (t->type->dims[d] * g->size != x->dims[d]) { /* padded chunks */
    const void *whole =
        padded_operand(dev, 2, in, x, d, t->type->dims[d] * g->size, &x);
    in = whole;
  }
  int64_t n = type_numel(x), block = type_numel(t->type);
  if (mpi_sums(g, dt)) {
    void *wide = scratch(dev, 0, (gsize)n * 8);
    void *packed = scratch(dev, 1, (gsize)n * 8);
    widen(wide, in, dt, n);
    chunks_move(wide, packed, x->dims, x->rank, d, t->type->dims[d], g->size, 8,
                TRUE);
    MPI_Reduce_scatter_block(MPI_IN_PLACE, packed, (int)block,
                             dtype_is_float(dt) ? MPI_DOUBLE : MPI_UINT64_T,
                             MPI_SUM, g->comm);
    narrow(out, dt, packed, block);
    return;
  }
  /* chunk j of every operand to member j, summed there in group order */
  gsize width = dtype_storage_bytes(dt), bytes = ALIGN8((gsize)n * width);
  char *packed = scratch(dev, 0, 2 * bytes + 16 * (gsize)block);
  char *parts = packed + bytes;
  double *acc = (double *)(parts + bytes), *one = acc + block;
  chunks_move((void *)in, packed, x->dims, x->rank, d, t->type->dims[d],
              g->size, width, TRUE);
  MPI_Alltoall(packed, (int)block, element_type(width), parts, (int)block,
               element_type(width), g->comm);
  sum_in_order(out, parts, g->size, block, dt, acc, one);
}

static void all_gather(MpiDevice *dev, const Term *t, const void *in,
                       void *out) {
  Group *g = device_group(dev, t);
  const Type *x = t->args[0]->type;
  int d = (int)attrs_get_int(t->attrs, "dim");
  gsize width = dtype_storage_bytes(x->dtype);
  int64_t n = type_numel(x);
  /* padded chunks (a 'length'): gathered whole, then the first 'length'
   * along 'dim' kept */
  int64_t dims[PARTIR_MAX_RANK];
  memcpy(dims, t->type->dims, sizeof(int64_t) * (gsize)t->type->rank);
  dims[d] = x->dims[d] * g->size;
  gboolean padded = dims[d] != t->type->dims[d];
  gboolean contiguous = !padded; /* chunks along 'dim' are whole blocks */
  for (int k = 0; k < d; k++)
    contiguous &= x->dims[k] == 1;
  gsize bytes = (gsize)(n * g->size) * width;
  void *packed = contiguous ? out : scratch(dev, 0, bytes);
  MPI_Allgather(in, (int)n, element_type(width), packed, (int)n,
                element_type(width), g->comm);
  if (contiguous)
    return;
  char *whole = padded ? scratch(dev, 1, bytes) : out;
  chunks_move(whole, packed, dims, t->type->rank, d, x->dims[d], g->size, width,
              FALSE);
  if (padded)
    copy_rows(out, t->type->dims[d], whole, dims[d], 0, t->type->dims[d], dims,
              t->type->rank, d, width);
}

static void all_to_all(MpiDevice *dev, const Term *t, const void *in,
                       void *out) {
  Group *g = device_group(dev, t);
  const Type *x = t->args[0]->type;
  int s = (int)attrs_get_int(t->attrs, "split_dim");
  int cd = (int)attrs_get_int(t->attrs, "concat_dim");
  gsize width = dtype_storage_bytes(x->dtype);
  gsize bytes = tensor_type_bytes(x);
  int64_t chunk = type_numel(x) / g->size;
  void *send = scratch(dev, 0, bytes), *recv = scratch(dev, 1, bytes);
  chunks_move((void *)in, send, x->dims, x->rank, s, x->dims[s] / g->size,
              g->size, width, TRUE);
  MPI_Alltoall(send, (int)chunk, element_type(width), recv, (int)chunk,
               element_type(width), g->comm);
  chunks_move(out, recv, t->type->dims, t->type->rank, cd,
              t->type->dims[cd] / g->size, g->size, width, FALSE);
}

/* shard: this device's chunk along 'dim', no exchange; past the end of
 * a dimension the devices do not divide, zeros (padding). */
static void shard(MpiDevice *dev, const Term *t, const void *in, void *out) {
  const Type *x = t->args[0]->type;
  int d = (int)attrs_get_int(t->attrs, "dim");
  int64_t part = t->type->dims[d], from = group_position(dev, t) * part;
  int64_t have = CLAMP(x->dims[d] - from, 0, part);
  if (have < part)
    memset(out, 0, tensor_type_bytes(t->type));
  copy_rows(out, part, in, x->dims[d], from, have, x->dims, x->rank, d,
            dtype_storage_bytes(x->dtype));
}

static void mpi_collective_into(Collectives *self, const Term *t,
                                const void *in, void *out) {
  MpiDevice *dev = (MpiDevice *)self;
  switch (t->op) {
  case OP_ALL_REDUCE:
    all_reduce(dev, t, in, out);
    break;
  case OP_REDUCE_SCATTER:
    reduce_scatter(dev, t, in, out);
    break;
  case OP_ALL_GATHER:
    all_gather(dev, t, in, out);
    break;
  case OP_ALL_TO_ALL:
    all_to_all(dev, t, in, out);
    break;
  case OP_SHARD:
    shard(dev, t, in, out);
    break;
  default:
    g_assert_not_reached();
  }
}

static Tensor *mpi_collective(Collectives *self, const Term *t, Tensor *x) {
  Tensor *out = tensor_new(t->type);
  mpi_collective_into(self, t, x->data, out->data);
  return out;
}

/* A device that fails mid-run would leave the others in a collective:
 * every rank ends, with its message. */
static void mpi_fail(Collectives *self, const GError *error) {
  (void)self;
  g_printerr("partir: rank %d: %s\n", world_rank(),
             error ? error->message : "a device failed");
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static gboolean mpi_check(Collectives *self, GError **error) {
  (void)self;
  (void)error; /* MPI's own failures end every rank */
  return TRUE;
}

/* ---------------------------------------------------------- the device */

Collectives *codegen_mpi_connect(const Mesh *m, const Term *const *roots,
                                 int nroots) {
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MpiDevice *dev = g_new0(MpiDevice, 1);
  dev->ops = (Collectives){.collective = mpi_collective,
                           .collective_into = mpi_collective_into,
                           .fail = mpi_fail,
                           .check = mpi_check};
  dev->mesh = m;
  int64_t rest = rank;
  for (int a = m->naxes - 1; a >= 0; a--) {
    dev->coords[a] = rest % m->sizes[a];
    rest /= m->sizes[a];
  }
  dev->groups =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, group_free);
  connect_groups(dev, roots, nroots);
  return &dev->ops;
}

void codegen_mpi_disconnect(Collectives *c) {
  MpiDevice *dev = (MpiDevice *)c;
  g_hash_table_unref(dev->groups);
  for (gsize k = 0; k < G_N_ELEMENTS(dev->scratch); k++)
    g_free(dev->scratch[k]);
  g_free(dev);
}

/* ----------------------------------------------------- scatter, gather */

static void send_bytes(const void *p, gsize n, int to, int tag) {
  for (gsize at = 0; at < n; at += MPI_PIECE_BYTES)
    MPI_Send((const char *)p + at, (int)MIN(MPI_PIECE_BYTES, n - at), MPI_BYTE,
             to, tag, MPI_COMM_WORLD);
}

static void recv_bytes(void *p, gsize n, int from, int tag) {
  for (gsize at = 0; at < n; at += MPI_PIECE_BYTES)
    MPI_Recv((char *)p + at, (int)MIN(MPI_PIECE_BYTES, n - at), MPI_BYTE, from,
             tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* This rank's local inputs: on rank 0 cut from the global ones (each
 * other rank's sent to it), elsewhere received. */
static Tensor **scatter(const Func *f, Tensor *const *global_inputs, int rank,
                        int ranks) {
  if (rank != 0) {
    Tensor **in = g_new0(Tensor *, (gsize)f->nargs + 1);
    for (int i = 0; i < f->nargs; i++) {
      in[i] = tensor_new(f->arg_types[i]);
      recv_bytes(in[i]->data, tensor_type_bytes(in[i]->type), 0, i);
    }
    return in;
  }
  for (int r = 1; r < ranks; r++) {
    Tensor **in = spmd_scatter(f, global_inputs, r);
    for (int i = 0; i < f->nargs; i++) {
      send_bytes(in[i]->data, tensor_type_bytes(in[i]->type), r, i);
      tensor_unref(in[i]);
    }
    g_free(in);
  }
  return spmd_scatter(f, global_inputs, 0);
}

/* Rank 0: the global results from every rank's; elsewhere: this rank's
 * sent to rank 0, and an empty array. */
static GPtrArray *gather(const Func *f, GPtrArray *local, int rank, int ranks,
                         Diag *diag) {
  if (rank != 0) {
    for (int i = 0; i < f->nresults; i++) {
      const Tensor *r = g_ptr_array_index(local, i);
      send_bytes(r->data, tensor_type_bytes(r->type), 0, i);
    }
    return g_ptr_array_new_with_free_func((GDestroyNotify)tensor_unref);
  }
  GPtrArray **all = g_new0(GPtrArray *, (gsize)ranks);
  all[0] = g_ptr_array_ref(local);
  for (int r = 1; r < ranks; r++) {
    all[r] = g_ptr_array_new_with_free_func((GDestroyNotify)tensor_unref);
    for (int i = 0; i < f->nresults; i++) {
      Tensor *t = tensor_new(f->result_types[i]);
      recv_bytes(t->data, tensor_type_bytes(t->type), r, i);
      g_ptr_array_add(all[r], t);
    }
  }
  GPtrArray *out = spmd_gather(f, all, diag);
  for (int r = 0; r < ranks; r++)
    g_ptr_array_unref(all[r]);
  g_free(all);
  return out;
}

/* ------------------------------------------------------------- the run */

GPtrArray *codegen_mpi_spread(const Func *f, Tensor *const *global_inputs,
                              MpiRankRun run, void *data, Diag *diag,
                              GError **error) {
  g_assert(f->spmd);
  int rank, ranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  g_assert(ranks == mesh_devices(&f->spmd->mesh)); /* the front end checked */
  if (rank == 0 && !spmd_check_inputs(f, global_inputs, diag))
    return NULL; /* the caller ends every rank */
  Tensor **inputs = scatter(f, global_inputs, rank, ranks);
  GPtrArray *local = run(data, rank, inputs, error);
  for (int i = 0; i < f->nargs; i++)
    tensor_unref(inputs[i]);
  g_free(inputs);
  if (!local)
    return NULL; /* the caller ends every rank */
  GPtrArray *out = gather(f, local, rank, ranks, diag);
  g_ptr_array_unref(local);
  return out;
}

/* What a rank of codegen_run_mpi runs: the compiled code, 'steps' times
 * when timed. */
typedef struct CpuRank {
  Compiled *code;
  const Mesh *mesh;
  const Term *body;
  int steps;
  double *step_seconds;
} CpuRank;

/* A rank of codegen_run_mpi: its device connected, then the code run on
 * its inputs; the ranks meet before each timed step and after the
 * last. */
static GPtrArray *cpu_rank(void *data, int rank, Tensor *const *inputs,
                           GError **error) {
  (void)rank;
  (void)error; /* MPI's failures are fatal; a run does not fail */
  CpuRank *job = data;
  MpiDevice *dev = (MpiDevice *)codegen_mpi_connect(job->mesh, &job->body, 1);
  GPtrArray *local = NULL;
  Collectives *saved = kernel_comm;
  kernel_comm = &dev->ops;
  int count = MAX(job->steps, 1);
  double start = 0;
  for (int k = 0; k < count; k++) {
    if (job->steps > 1) {
      MPI_Barrier(MPI_COMM_WORLD);
      double now = MPI_Wtime();
      if (k > 0 && job->step_seconds)
        job->step_seconds[k - 1] = now - start;
      start = now;
    }
    if (local)
      g_ptr_array_unref(local);
    local = codegen_run(job->code, inputs);
  }
  if (job->steps > 1) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (job->step_seconds)
      job->step_seconds[count - 1] = MPI_Wtime() - start;
  }
  kernel_comm = saved;
  codegen_mpi_disconnect(&dev->ops);
  return local;
}

GPtrArray *codegen_run_mpi(Compiled *c, const Func *f,
                           Tensor *const *global_inputs, int steps,
                           double *step_seconds, Diag *diag, GError **error) {
  g_assert(f->spmd);
  CpuRank job = {.code = c,
                 .mesh = &f->spmd->mesh,
                 .body = f->body,
                 .steps = steps,
                 .step_seconds = step_seconds};
  return codegen_mpi_spread(f, global_inputs, cpu_rank, &job, diag, error);
}
