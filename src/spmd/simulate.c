/* simulate.c — the SPMD simulator: an SPMD program run on simulated
 * devices, one thread each, exchanging through shared memory.
 *
 * An SPMD program (a Func with 'spmd' set) is written for one device:
 * its arguments, results and values have LOCAL shapes, and collectives
 * (all_reduce, all_gather, reduce_scatter, all_to_all, shard) name the
 * mesh axes they act over.  spmd_simulate() gives it the GLOBAL inputs:
 *
 *   1. scatter  each device gets, for every argument, the chunk its mesh
 *               coordinates select (Dist: a dimension split over axes
 *               [a, b] is cut into |a|*|b| chunks, chunk number
 *               coord(a)*|b| + coord(b)); other axes replicate it;
 *   2. run      every device runs the reference interpreter (interp_run)
 *               on its own thread, with 'kernel_comm' naming its Comm;
 *               the kernels of the collectives call comm_collective();
 *               or, through spmd_run, a runtime's: its compiled program
 *               (a higher layer's runner) and its own Collectives;
 *   3. gather   each global result is assembled from the local ones by
 *               its Dist: split dimensions are placed by coordinates,
 *               partial axes are summed, and replicated axes are CHECKED
 *               (every replica must agree with the one at coordinate 0;
 *               a disagreement is a wrong program, reported by axis).
 *
 * Devices are the mesh coordinates in row-major order (mesh.names[0]
 * major).  The group of a device for a collective over 'axes' is the
 * devices that agree with it on every other mesh axis; its index in the
 * group is the row-major linearisation of its coordinates on 'axes' in
 * the order the attribute lists them.
 *
 * Exchange: every device evaluates the same terms in the same order (the
 * interpreter's order is a function of the term alone, and local shapes
 * are equal on all devices), so all devices meet every collective in
 * the same sequence.  A collective posts a reference to its operand in
 * the device's slot, waits at a barrier over all devices, reads the
 * group's slots, and waits at a second barrier before the slot may be
 * reused.  Sums accumulate in double (int64 for integers) in group order
 * and are rounded once, as the interpreter's partir.sum does, so a
 * lowered all_reduce computes bit for bit what the sum it came from did.
 *
 * Failure: a device whose run fails (only "interrupted": sizes and
 * collectives are checked before any thread starts) breaks the world:
 * waiting devices are released, later collectives return zeros at once,
 * and the simulation fails with that device's error.  So an interrupt
 * (partir_interrupt) stops the simulation without deadlock, even when
 * devices see it at different points.
 *
 * Threads: the shared term and type stores are not locked, so device
 * threads only read them (kernels allocate with the term's own type);
 * every type this file interns is made on the calling thread.  Devices
 * share no tensor but the posted operands, whose data other devices read
 * between the two barriers of a collective and whose references only
 * the poster takes and drops.
 */
#include "spmd/spmd.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#define SIM_MAX_DEVICES 1024                /* one thread per device */
#define SIM_MAX_ELEMS ((int64_t)1 << 29)    /* as the interpreter's limit */
#define SIM_STACK_BYTES ((size_t)256 << 20) /* term traversals recurse */

typedef struct World World;

/* One simulated device, as the collectives see it. */
typedef struct Comm {
  Collectives ops; /* first: the interpreter's view of this device */
  World *world;
  int device;                    /* row-major index on the mesh */
  int64_t coords[MESH_MAX_AXES]; /* coordinate on each mesh axis */
} Comm;

/* The devices of one simulation and their meeting point. */
struct World {
  const Mesh *mesh;
  int ndevices;
  Comm *comms;          /* per device */
  Collectives **views;  /* per device: &comms[i].ops, for spmd_run */
  Tensor **slots;       /* per device: a reference to its posted operand */
  pthread_mutex_t lock; /* guards the fields below and 'slots' */
  pthread_cond_t cond;
  int arrived;        /* devices waiting at the current barrier */
  guint64 generation; /* barriers completed */
  gboolean broken;    /* a device stopped early: no more exchanges */
};

/* A device's thread: its inputs and what its run gave. */
/* Where the devices of a timed run (SpmdRuntime.steps) meet between
 * steps: a counting barrier that spins, yielding after a while (a step
 * can be a few microseconds, and a sleeping barrier costs tens of them
 * in a VM), and that a failed device opens for good. */
typedef struct Steps {
  int ndevices;
  int count;            /* steps to run */
  atomic_int arrived;   /* at the current barrier */
  atomic_int passed;    /* barriers completed */
  atomic_bool failed;   /* a device failed: nobody waits any more */
  int64_t *stamps;      /* per barrier: when its last device arrived (ns) */
  pthread_mutex_t lock; /* guards 'error' */
  GError *error;        /* the first failure's, for the devices it stops */
} Steps;

typedef struct Device {
  Collectives *comm;             /* the simulator's Comm, or a runtime's */
  int64_t coords[MESH_MAX_AXES]; /* coordinate on each mesh axis */
  const Func *f;
  SpmdDeviceRun run; /* how the device runs its program */
  SpmdBuffer buffer; /* where its copied chunks go (NULL: new tensors) */
  void *run_data;
  Tensor *const *global_inputs; /* the run's */
  Tensor **inputs;    /* local, one per argument: scattered by the device's
                         own thread (the devices copy their chunks at once) */
  GPtrArray *results; /* local, from interp_run; NULL on failure */
  GError *error;
  pthread_t thread;
  gboolean started;
  Steps *steps; /* a timed run's, or NULL: run once */
} Device;

/* The role of a mesh axis for one Dist. */
typedef enum {
  ROLE_REPLICATED,
  ROLE_SPLIT,
  ROLE_PARTIAL,
} AxisRole;

static const int64_t zero_offsets[PARTIR_MAX_RANK];

/* ------------------------------------------------------------ the mesh */

static int device_index(const Mesh *m, const int64_t *coords) {
  int64_t d = 0;
  for (int a = 0; a < m->naxes; a++)
    d = d * m->sizes[a] + coords[a];
  return (int)d;
}

static void device_coords(const Mesh *m, int device, int64_t *coords) {
  int64_t d = device;
  for (int a = m->naxes - 1; a >= 0; a--) {
    coords[a] = d % m->sizes[a];
    d /= m->sizes[a];
  }
}

/* "(batch=0, model=1)", for messages. */
static char *device_name(const Mesh *m, const int64_t *coords) {
  GString *s = g_string_new("(");
  for (int a = 0; a < m->naxes; a++)
    g_string_append_printf(s, "%s%s=%" G_GINT64_FORMAT, a ? ", " : "",
                           m->names[a], coords[a]);
  g_string_append_c(s, ')');
  return g_string_free(s, FALSE);
}

/* ---------------------------------------------------------- tensor boxes */

/* Copies the box of shape 'box' at 'src_off' in 'src' to the box at
 * 'dst_off' in 'dst'; both have dst's rank and dtype.  When 'add', 'dst'
 * is an accumulator for src's type instead (tensor_new_acc), and the box
 * is added to it (the caller rounds once, tensor_from_acc). */
static void box_transfer(Tensor *dst, const int64_t *dst_off, const Tensor *src,
                         const int64_t *src_off, const int64_t *box,
                         gboolean add) {
  int rank = dst->type->rank;
  g_assert(src->type->rank == rank &&
           (add || src->type->dtype == dst->type->dtype));
  for (int k = 0; k < rank; k++)
    if (box[k] == 0)
      return;
  int64_t dst_strides[PARTIR_MAX_RANK], src_strides[PARTIR_MAX_RANK];
  tensor_strides(dst->type, dst_strides);
  tensor_strides(src->type, src_strides);
  int64_t run = rank > 0 ? box[rank - 1] : 1;
  int64_t idx[PARTIR_MAX_RANK] = {0}; /* odometer over all but the last dim */
  for (;;) {
    int64_t di = 0, si = 0;
    for (int k = 0; k < rank; k++) {
      int64_t at = k < rank - 1 ? idx[k] : 0;
      di += (dst_off[k] + at) * dst_strides[k];
      si += (src_off[k] + at) * src_strides[k];
    }
    if (add) {
      for (int64_t j = 0; j < run; j++)
        tensor_acc_add(dst, di + j, src, si + j);
    } else {
      gsize width = dtype_storage_bytes(dst->type->dtype);
      memcpy((char *)dst->data + di * (int64_t)width,
             (const char *)src->data + si * (int64_t)width, (gsize)run * width);
    }
    int k = rank - 2;
    while (k >= 0 && ++idx[k] == box[k])
      idx[k--] = 0;
    if (k < 0)
      return;
  }
}

gboolean spmd_clip_box(int64_t *box, const int64_t *off, const int64_t *dims,
                       int rank) {
  gboolean clipped = FALSE;
  for (int k = 0; k < rank; k++) {
    int64_t b = CLAMP(dims[k] - off[k], 0, box[k]);
    clipped |= b != box[k];
    box[k] = b;
  }
  return clipped;
}

/* ---------------------------------------------------------- collectives */

/* The mesh axes of collective 't' (major first) and the group size they
 * make; FALSE with the reason in 'err' (if not NULL) when an axis is not
 * a mesh axis, is named twice, or 'size' disagrees with the mesh. */
static gboolean collective_axes(const Mesh *m, const Term *t, int *axes,
                                int *naxes, int64_t *size, Diag *err) {
  const AttrValue *list = attrs_get(t->attrs, "axes");
  const AttrValue *written = attrs_get(t->attrs, "size");
  g_assert(list && list->kind == AV_LIST && written); /* tr_collective */
  *naxes = list->count;
  *size = 1;
  for (int k = 0; k < list->count; k++) {
    const char *name = list->items[k].sym;
    int a = mesh_axis_index(m, name);
    if (a < 0 && !err)
      return FALSE;
    if (a < 0) {
      g_autofree char *mesh = mesh_to_string(m);
      diag_reason(err,
                  "'%s' over axis '%s', which is not an axis of the "
                  "mesh '%s'",
                  op_name(t->op), name, mesh);
      return FALSE;
    }
    for (int j = 0; j < k; j++)
      if (axes[j] == a) {
        if (err)
          diag_reason(err, "'%s' names axis '%s' twice", op_name(t->op), name);
        return FALSE;
      }
    axes[k] = a;
    *size *= m->sizes[a];
  }
  if (*size != written->i) {
    if (err)
      diag_reason(err,
                  "'%s' has size = %" G_GINT64_FORMAT " but its axes "
                  "have %" G_GINT64_FORMAT " devices",
                  op_name(t->op), written->i, *size);
    return FALSE;
  }
  return TRUE;
}

/* The device at position 'j' of the group of 'c' over 'axes'. */
static int comm_member(const Comm *c, const int *axes, int naxes, int64_t j) {
  const Mesh *m = c->world->mesh;
  int64_t coords[MESH_MAX_AXES];
  memcpy(coords, c->coords, sizeof coords);
  for (int k = naxes - 1; k >= 0; k--) {
    coords[axes[k]] = j % m->sizes[axes[k]];
    j /= m->sizes[axes[k]];
  }
  return device_index(m, coords);
}

/* Waits until every device has arrived; TRUE when they all did, FALSE
 * when the world broke first.  Called with the lock held. */
static gboolean barrier_locked(World *w) {
  guint64 gen = w->generation;
  if (++w->arrived == w->ndevices) {
    w->arrived = 0;
    w->generation++;
    pthread_cond_broadcast(&w->cond);
    return TRUE;
  }
  while (gen == w->generation && !w->broken)
    pthread_cond_wait(&w->cond, &w->lock);
  return gen != w->generation;
}

/* Posts 'x' as this device's operand and waits for the others'. */
static gboolean world_post(World *w, int device, Tensor *x) {
  pthread_mutex_lock(&w->lock);
  gboolean ok = !w->broken;
  if (ok) {
    g_assert(w->slots[device] == NULL);
    w->slots[device] = tensor_ref(x);
    ok = barrier_locked(w);
  }
  pthread_mutex_unlock(&w->lock);
  return ok;
}

/* Waits until every device has read the slots, then frees this one's.
 * A broken world keeps its slots (a reader may still hold them) until
 * world_clear. */
static void world_release(World *w, int device) {
  pthread_mutex_lock(&w->lock);
  if (!w->broken && barrier_locked(w)) {
    tensor_unref(w->slots[device]);
    w->slots[device] = NULL;
  }
  pthread_mutex_unlock(&w->lock);
}

static void world_break(World *w) {
  pthread_mutex_lock(&w->lock);
  w->broken = TRUE;
  pthread_cond_broadcast(&w->cond);
  pthread_mutex_unlock(&w->lock);
}

/* A device failed: the simulation fails with its error (run_devices
 * reports it), the others need only be released. */
static void comm_fail(Collectives *self, const GError *error) {
  (void)error;
  world_break(((Comm *)self)->world);
}

/* Evaluates collective 't' on this device's operand 'x' (borrowed);
 * returns its result (a new reference).  In a broken world the result
 * is zeros: the run is failing and its values are discarded. */
static Tensor *comm_collective(Collectives *self, const Term *t, Tensor *x) {
  Comm *c = (Comm *)self;
  World *w = c->world;
  int axes[MESH_MAX_AXES], naxes;
  int64_t size;
  gboolean axes_ok = collective_axes(w->mesh, t, axes, &naxes, &size, NULL);
  g_assert(axes_ok); /* spmd_simulate checked every collective */
  int64_t g = 0;     /* this device's position in its group */
  for (int k = 0; k < naxes; k++)
    g = g * w->mesh->sizes[axes[k]] + c->coords[axes[k]];

  gboolean reduces = t->op == OP_ALL_REDUCE || t->op == OP_REDUCE_SCATTER;
  Tensor *out = reduces ? tensor_new_acc(t->type) : tensor_new(t->type);
  int64_t box[PARTIR_MAX_RANK], src_off[PARTIR_MAX_RANK] = {0},
                                dst_off[PARTIR_MAX_RANK] = {0};
  memcpy(box, t->type->dims, sizeof box);
  int rank = t->type->rank;
  if (t->op == OP_SHARD) { /* no exchange: this device's chunk, padded */
    int d = (int)attrs_get_int(t->attrs, "dim");
    src_off[d] = g * box[d];
    spmd_clip_box(box, src_off, x->type->dims, rank);
    box_transfer(out, zero_offsets, x, src_off, box, FALSE);
    return out;
  }
  if (!world_post(w, c->device, x)) {
    tensor_unref(out);
    return tensor_new(t->type);
  }
  for (int64_t j = 0; j < size; j++) {
    const Tensor *from = w->slots[comm_member(c, axes, naxes, j)];
    g_assert(from && from->type == x->type);
    switch (t->op) {
    case OP_ALL_REDUCE:
      box_transfer(out, zero_offsets, from, zero_offsets, box, TRUE);
      break;
    case OP_REDUCE_SCATTER: {
      int d = (int)attrs_get_int(t->attrs, "dim");
      int64_t part[PARTIR_MAX_RANK];
      memcpy(part, box, sizeof part);
      src_off[d] = g * box[d];
      spmd_clip_box(part, src_off, x->type->dims, rank);
      box_transfer(out, zero_offsets, from, src_off, part, TRUE);
      break;
    }
    case OP_ALL_GATHER: { /* a 'length' drops the padding */
      int d = (int)attrs_get_int(t->attrs, "dim");
      int64_t part[PARTIR_MAX_RANK];
      memcpy(part, x->type->dims, sizeof part);
      dst_off[d] = j * x->type->dims[d];
      spmd_clip_box(part, dst_off, t->type->dims, rank);
      box_transfer(out, dst_off, from, zero_offsets, part, FALSE);
      break;
    }
    case OP_ALL_TO_ALL: {
      /* member j sent us chunk g of its operand along split_dim */
      int s = (int)attrs_get_int(t->attrs, "split_dim"),
          cd = (int)attrs_get_int(t->attrs, "concat_dim");
      int64_t chunk[PARTIR_MAX_RANK];
      memcpy(chunk, x->type->dims, sizeof chunk);
      chunk[s] /= size;
      src_off[s] = g * chunk[s];
      dst_off[cd] = j * chunk[cd];
      box_transfer(out, dst_off, from, src_off, chunk, FALSE);
      break;
    }
    default:
      g_assert_not_reached();
    }
  }
  world_release(w, c->device);
  if (reduces) {
    Tensor *acc = out;
    out = tensor_from_acc(acc, t->type);
    tensor_unref(acc);
  }
  return out;
}

/* ------------------------------------------------------------ checking */

/* What value 'i' of a function is called in messages. */
static char *value_name(const Func *f, gboolean is_arg, int i) {
  if (is_arg && f->arg_names && f->arg_names[i])
    return g_strdup_printf("argument '%s'", f->arg_names[i]);
  return g_strdup_printf("%s %d", is_arg ? "argument" : "result", i);
}

/* Checks a Dist against the value's local type and the mesh, and gives
 * each mesh axis its role. */
static gboolean dist_check(const Func *f, gboolean is_arg, int i, const Dist *d,
                           const Type *local, AxisRole *roles, Diag *diag) {
  const Mesh *m = &f->spmd->mesh;
  g_autofree char *what = value_name(f, is_arg, i);
  if (d->rank != local->rank) {
    diag_reason(diag, "%s has rank %d but its layout has %d dimensions", what,
                local->rank, d->rank);
    return FALSE;
  }
  for (int a = 0; a < MESH_MAX_AXES; a++)
    roles[a] = ROLE_REPLICATED;
  gboolean used[MESH_MAX_AXES] = {FALSE};
  for (int k = 0; k <= d->rank; k++) { /* k == rank: the partial axes */
    int n = k < d->rank ? d->naxes[k] : d->npartial;
    for (int j = 0; j < n; j++) {
      const char *name = k < d->rank ? d->axes[k][j] : d->partial[j];
      int a = mesh_axis_index(m, name);
      if (a < 0) {
        g_autofree char *mesh = mesh_to_string(m);
        diag_reason(diag,
                    "%s: layout axis '%s' is not an axis of the mesh '%s'",
                    what, name, mesh);
        return FALSE;
      }
      if (used[a]) {
        diag_reason(diag, "%s: layout names axis '%s' twice", what, name);
        return FALSE;
      }
      used[a] = TRUE;
      roles[a] = k < d->rank ? ROLE_SPLIT : ROLE_PARTIAL;
    }
  }
  if (is_arg && d->npartial > 0) {
    diag_reason(diag,
                "%s is a partial sum over '%s': the simulator takes whole "
                "arguments",
                what, d->partial[0]);
    return FALSE;
  }
  for (int k = 0; k < d->rank; k++) {
    int64_t parts = dist_parts(d, m, k);
    if (d->global[k] &&
        (d->naxes[k] != 1 ||
         dist_local_size(d->global[k], parts) != local->dims[k] ||
         d->global[k] == local->dims[k] * parts)) {
      diag_reason(diag,
                  "%s: dimension %d of size %" G_GINT64_FORMAT " a device "
                  "is no padded chunk of global size %" G_GINT64_FORMAT
                  " split over one axis",
                  what, k, local->dims[k], d->global[k]);
      return FALSE;
    }
  }
  return TRUE;
}

/* The global type of a value with local type 'local' and Dist 'd'; NULL
 * when it would have more than SIM_MAX_ELEMS elements. */
static const Type *global_type(const Mesh *m, const Dist *d,
                               const Type *local) {
  int64_t dims[PARTIR_MAX_RANK], numel = 1;
  for (int k = 0; k < local->rank; k++) {
    if (__builtin_mul_overflow(local->dims[k], dist_parts(d, m, k), &dims[k]))
      return NULL;
    if (d->global[k]) /* padded chunks */
      dims[k] = d->global[k];
    if (__builtin_mul_overflow(numel, dims[k], &numel) || numel > SIM_MAX_ELEMS)
      return NULL;
  }
  return type_tensor(local->dtype, local->rank, dims);
}

/* Refuses collectives whose axes are not the mesh's; interns the types
 * their kernels need. */
static gboolean check_collectives(const Func *f, Diag *diag) {
  g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
  g_autoptr(GPtrArray) todo = g_ptr_array_new();
  g_autoptr(Diag) err = diag_new(NULL);
  g_ptr_array_add(todo, (gpointer)f->body);
  while (todo->len > 0) {
    const Term *t = g_ptr_array_steal_index_fast(todo, todo->len - 1);
    if (!g_hash_table_add(seen, (gpointer)t))
      continue;
    int axes[MESH_MAX_AXES], naxes;
    int64_t size;
    if (t->kind == TM_OP && op_is_collective(t->op) &&
        !collective_axes(&f->spmd->mesh, t, axes, &naxes, &size, err)) {
      diag_reason(diag, "%s: %s", f->name, diag_text(err));
      return FALSE;
    }
    /* the accumulator type comm_collective sums in, interned here: device
     * threads only read the type store */
    if (t->kind == TM_OP &&
        (t->op == OP_ALL_REDUCE || t->op == OP_REDUCE_SCATTER))
      (void)type_with_dtype(t->type,
                            dtype_is_float(t->type->dtype) ? DT_F64 : DT_I64);
    for (int i = 0; i < t->nargs; i++)
      g_ptr_array_add(todo, (gpointer)t->args[i]);
  }
  return TRUE;
}

/* The offset of a device's chunk of a value with Dist 'd': per dimension,
 * the chunk number its coordinates on the dimension's axes give (row-major,
 * major first) times the local size. */
static void chunk_offsets(const Mesh *m, const Dist *d, const Type *local,
                          const int64_t *coords, int64_t *off) {
  for (int k = 0; k < d->rank; k++) {
    int64_t chunk = 0;
    for (int j = 0; j < d->naxes[k]; j++) {
      int a = mesh_axis_index(m, d->axes[k][j]);
      chunk = chunk * m->sizes[a] + coords[a];
    }
    off[k] = chunk * local->dims[k];
  }
}

/* TRUE when 'other' agrees with replica 'ref'; else the first element
 * that does not in '*at'.  Floats: |a - b| <= 1e-5 |a| + 1e-6 max|ref|,
 * NaN agrees with NaN, infinities must be equal; integers exactly. */
static gboolean replicas_agree(const Tensor *ref, const Tensor *other,
                               int64_t *at) {
  /* the same bits (what the threaded runtime's collectives give) agree */
  if (memcmp(ref->data, other->data, tensor_type_bytes(ref->type)) == 0)
    return TRUE;
  int64_t n = type_numel(ref->type);
  double scale = 0;
  gboolean is_float = dtype_is_float(ref->type->dtype);
  for (int64_t j = 0; is_float && j < n; j++)
    if (isfinite(tensor_get_float(ref, j)))
      scale = MAX(scale, fabs(tensor_get_float(ref, j)));
  for (int64_t j = 0; j < n; j++) {
    gboolean ok;
    if (is_float) {
      double a = tensor_get_float(ref, j), b = tensor_get_float(other, j);
      ok = a == b || (isnan(a) && isnan(b)) ||
           (isfinite(a) && isfinite(b) &&
            fabs(a - b) <= 1e-5 * fabs(a) + 1e-6 * scale);
    } else {
      ok = tensor_get_int(ref, j) == tensor_get_int(other, j);
    }
    if (!ok) {
      *at = j;
      return FALSE;
    }
  }
  return TRUE;
}

static void print_element(GString *out, const Tensor *t, int64_t j) {
  if (dtype_is_float(t->type->dtype))
    g_string_append_printf(out, "%.9g", tensor_get_float(t, j));
  else
    g_string_append_printf(out, "%" G_GINT64_FORMAT, tensor_get_int(t, j));
}

/* "[1, 0]": the index of element 'j' of a tensor of type 't'. */
static void print_index(GString *out, const Type *t, int64_t j) {
  int64_t strides[PARTIR_MAX_RANK];
  tensor_strides(t, strides);
  g_string_append_c(out, '[');
  for (int k = 0; k < t->rank; k++) {
    g_string_append_printf(out, "%s%" G_GINT64_FORMAT, k ? ", " : "",
                           j / strides[k]);
    j %= strides[k];
  }
  g_string_append_c(out, ']');
}

/* --------------------------------------------------------- the devices */

static Tensor **scatter_inputs(const Func *f, Tensor *const *global_inputs,
                               const int64_t *coords, SpmdBuffer buffer,
                               void *buffer_data);

/* Waits until every device has reached barrier 'k' of 's' (the last
 * one to arrive stamps it); FALSE when a device has failed. */
static gboolean steps_meet(Steps *s, int k) {
  if (atomic_fetch_add(&s->arrived, 1) + 1 == s->ndevices) {
    s->stamps[k] = partir_now_ns();
    atomic_store(&s->arrived, 0);
    atomic_store(&s->passed, k + 1);
    return !atomic_load(&s->failed);
  }
  for (unsigned spins = 0; atomic_load(&s->passed) <= k; spins++) {
    if (atomic_load(&s->failed))
      return FALSE;
    if (spins >= 1000)
      sched_yield();
  }
  return !atomic_load(&s->failed);
}

/* The device's program once, or, in a timed run, once per step between
 * the barriers (the last step's results kept).  A device stopped at a
 * barrier by another's failure fails with that one's error. */
static GPtrArray *device_steps(Device *d) {
  Steps *s = d->steps;
  if (!s)
    return d->run ? d->run(d->run_data, d->f, d->inputs, &d->error)
                  : interp_run(d->f, d->inputs, &d->error);
  GPtrArray *results = NULL;
  for (int k = 0; k <= s->count; k++) {
    if (!steps_meet(s, k)) {
      if (results)
        g_ptr_array_unref(results);
      pthread_mutex_lock(&s->lock);
      d->error = g_error_copy(s->error);
      pthread_mutex_unlock(&s->lock);
      return NULL;
    }
    if (k == s->count)
      break;
    if (results)
      g_ptr_array_unref(results);
    results = d->run ? d->run(d->run_data, d->f, d->inputs, &d->error)
                     : interp_run(d->f, d->inputs, &d->error);
    if (!results)
      return NULL;
  }
  return results;
}

/* Device 'd' failed: a timed run's other devices stop at their next
 * barrier with its error (the first one's). */
static void steps_fail(Device *d) {
  Steps *s = d->steps;
  pthread_mutex_lock(&s->lock);
  if (!s->error)
    s->error = g_error_copy(d->error);
  atomic_store(&s->failed, TRUE);
  pthread_mutex_unlock(&s->lock);
}

static void *device_main(void *p) {
  Device *d = p;
  d->inputs =
      scatter_inputs(d->f, d->global_inputs, d->coords, d->buffer, d->run_data);
  kernel_comm = d->comm;
  d->results = device_steps(d);
  kernel_comm = NULL;
  if (d->results && d->comm->check && !d->comm->check(d->comm, &d->error)) {
    g_ptr_array_unref(d->results);
    d->results = NULL;
  }
  if (!d->results) {
    if (d->steps)
      steps_fail(d);
    d->comm->fail(d->comm, d->error);
  }
  return NULL;
}

/* The byte offset of the box 'box' at 'off' of a row-major tensor of
 * type 't' when the box is one contiguous run of its elements (ones
 * before some dimension, whole dimensions after it), else -1. */
static int64_t contiguous_box(const Type *t, const int64_t *off,
                              const int64_t *box) {
  int k = t->rank - 1;
  while (k >= 0 && box[k] == t->dims[k])
    k--;
  for (int j = 0; j < k; j++)
    if (box[j] != 1)
      return -1;
  int64_t strides[PARTIR_MAX_RANK];
  tensor_strides(t, strides);
  int64_t at = 0;
  for (int j = 0; j < t->rank; j++)
    at += off[j] * strides[j];
  return at * (int64_t)dtype_storage_bytes(t->dtype);
}

/* The local inputs of the device at 'coords': a whole one (replicated)
 * is shared and a chunk that is a contiguous part of the global one
 * (split along leading dimensions, no padding) is a view of it, both
 * read-only (devices never write their inputs, and reference counts are
 * atomic): a step of a data-parallel program does not copy its weights,
 * nor a Megatron one the weights it splits by rows.  Any other chunk is
 * copied into a buffer from 'buffer' (a runtime's kept one; NULL:
 * tensor_new), padding zeroed. */
static Tensor **scatter_inputs(const Func *f, Tensor *const *global_inputs,
                               const int64_t *coords, SpmdBuffer buffer,
                               void *buffer_data) {
  const Mesh *m = &f->spmd->mesh;
  Tensor **in = g_new0(Tensor *, (gsize)f->nargs + 1);
  for (int i = 0; i < f->nargs; i++) {
    Tensor *g = global_inputs[i];
    const Type *local = f->arg_types[i];
    if (g->type == local) {
      in[i] = tensor_ref(g);
      continue;
    }
    int64_t off[PARTIR_MAX_RANK], box[PARTIR_MAX_RANK];
    chunk_offsets(m, &f->spmd->arg_dists[i], local, coords, off);
    memcpy(box, local->dims, sizeof box);
    spmd_clip_box(box, off, g->type->dims, g->type->rank);
    gboolean padded =
        memcmp(box, local->dims, (size_t)local->rank * sizeof *box) != 0;
    int64_t at = padded ? -1 : contiguous_box(g->type, off, box);
    if (at >= 0) {
      in[i] = tensor_view(g, local, (guint64)at);
      continue;
    }
    in[i] = buffer ? buffer(buffer_data, local) : tensor_new(local);
    if (buffer && padded) /* a kept buffer holds the last run's values */
      memset(in[i]->data, 0, tensor_type_bytes(local));
    box_transfer(in[i], zero_offsets, g, off, box, FALSE);
  }
  return in;
}

/* Global result 'i' from the devices' local ones: partial axes summed,
 * split dimensions placed, replicas checked against coordinate 0. */
static Tensor *gather_result(const Func *f, GPtrArray *const *results,
                             int ndevices, int i, const Type *global,
                             const AxisRole *roles, Diag *diag) {
  const Mesh *m = &f->spmd->mesh;
  const Dist *d = &f->spmd->result_dists[i];
  for (int a = 0; a < m->naxes; a++) {
    if (roles[a] != ROLE_REPLICATED)
      continue;
    for (int dev = 0; dev < ndevices; dev++) {
      int64_t dev_coords[MESH_MAX_AXES], ref_coords[MESH_MAX_AXES];
      device_coords(m, dev, dev_coords);
      if (dev_coords[a] == 0)
        continue;
      memcpy(ref_coords, dev_coords, sizeof ref_coords);
      ref_coords[a] = 0;
      const Tensor *ref =
          g_ptr_array_index(results[device_index(m, ref_coords)], i);
      const Tensor *other = g_ptr_array_index(results[dev], i);
      int64_t at;
      if (!replicas_agree(ref, other, &at)) {
        g_autofree char *who = device_name(m, dev_coords);
        g_autofree char *whom = device_name(m, ref_coords);
        g_autoptr(GString) msg = g_string_new(NULL);
        g_string_printf(msg,
                        "result %d is replicated over mesh axis '%s', "
                        "but device %s has ",
                        i, m->names[a], who);
        print_element(msg, other, at);
        g_string_append(msg, " at ");
        print_index(msg, other->type, at);
        g_string_append_printf(msg, " where device %s has ", whom);
        print_element(msg, ref, at);
        diag_reason(diag, "%s", msg->str);
        return NULL;
      }
    }
  }
  const Type *local = f->result_types[i];
  gboolean partial = FALSE, split = FALSE;
  for (int a = 0; a < m->naxes; a++) {
    partial |= roles[a] == ROLE_PARTIAL;
    split |= roles[a] == ROLE_SPLIT;
  }
  if (!partial && !split && local == global) /* device 0's, shared */
    return tensor_ref(g_ptr_array_index(results[0], i));
  Tensor *out = tensor_new(global);
  for (int dev = 0; dev < ndevices; dev++) {
    int64_t coords[MESH_MAX_AXES];
    device_coords(m, dev, coords);
    gboolean representative = TRUE;
    for (int a = 0; a < m->naxes; a++)
      representative &= roles[a] == ROLE_SPLIT || coords[a] == 0;
    if (!representative)
      continue;
    int64_t off[PARTIR_MAX_RANK], box[PARTIR_MAX_RANK];
    chunk_offsets(m, d, local, coords, off);
    memcpy(box, local->dims, sizeof box); /* without the padding */
    spmd_clip_box(box, off, global->dims, global->rank);
    if (!partial) { /* this device's part alone: copied, not summed */
      box_transfer(out, off, g_ptr_array_index(results[dev], i), zero_offsets,
                   box, FALSE);
      continue;
    }
    g_autoptr(Tensor) acc = tensor_new_acc(local);
    for (int other = 0; other < ndevices; other++) {
      int64_t at[MESH_MAX_AXES];
      device_coords(m, other, at);
      gboolean same_part = TRUE; /* differs only on partial axes */
      for (int a = 0; a < m->naxes; a++)
        same_part &= roles[a] != ROLE_SPLIT || at[a] == coords[a];
      gboolean replica_zero = TRUE;
      for (int a = 0; a < m->naxes; a++)
        replica_zero &= roles[a] != ROLE_REPLICATED || at[a] == 0;
      if (same_part && replica_zero)
        box_transfer(acc, zero_offsets, g_ptr_array_index(results[other], i),
                     zero_offsets, local->dims, TRUE);
    }
    g_autoptr(Tensor) sum = tensor_from_acc(acc, local);
    box_transfer(out, off, sum, zero_offsets, box, FALSE);
  }
  return out;
}

/* Every global result (NULL with the reason when one fails). */
static GPtrArray *gather_results(const Func *f, GPtrArray *const *results,
                                 int ndevices, const Type **globals,
                                 AxisRole (*roles)[MESH_MAX_AXES], Diag *diag) {
  GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)tensor_unref);
  for (int i = 0; i < f->nresults; i++) {
    Tensor *r =
        gather_result(f, results, ndevices, i, globals[i], roles[i], diag);
    if (!r) {
      g_ptr_array_unref(out);
      return NULL;
    }
    g_ptr_array_add(out, r);
  }
  return out;
}

/* Runs every device to completion; FALSE with the first error. */
static gboolean run_devices(Device *devs, int ndevices, GError **error) {
  pthread_attr_t attr;
  gboolean attr_ok = pthread_attr_init(&attr) == 0 &&
                     pthread_attr_setstacksize(&attr, SIM_STACK_BYTES) == 0;
  int failed_start = -1, start_errno = 0;
  for (int dev = 0; dev < ndevices && attr_ok; dev++) {
    start_errno =
        pthread_create(&devs[dev].thread, &attr, device_main, &devs[dev]);
    if (start_errno != 0) {
      failed_start = dev;
      break;
    }
    devs[dev].started = TRUE;
  }
  pthread_attr_destroy(&attr);
  GError *start_error = NULL;
  if (!attr_ok || failed_start >= 0) {
    start_error =
        g_error_new(PARTIR_ERROR, PARTIR_ERROR_IO,
                    "cannot start the thread of simulated device %d of %d: %s",
                    MAX(failed_start, 0), ndevices,
                    attr_ok ? g_strerror(start_errno) : "no thread attributes");
    /* the started ones would wait for it forever */
    devs[0].comm->fail(devs[0].comm, start_error);
  }
  for (int dev = 0; dev < ndevices; dev++)
    if (devs[dev].started)
      pthread_join(devs[dev].thread, NULL);
  if (start_error) {
    g_propagate_error(error, start_error);
    return FALSE;
  }
  for (int dev = 0; dev < ndevices; dev++)
    if (!devs[dev].results) {
      g_propagate_error(error, devs[dev].error);
      devs[dev].error = NULL;
      return FALSE;
    }
  return TRUE;
}

/* Gives each result its global type and axis roles: FALSE with the
 * reason when a layout is wrong or a result too large. */
static gboolean result_layouts(const Func *f, const Type **result_globals,
                               AxisRole (*result_roles)[MESH_MAX_AXES],
                               Diag *diag) {
  const Mesh *m = &f->spmd->mesh;
  for (int i = 0; i < f->nresults; i++) {
    const Dist *d = &f->spmd->result_dists[i];
    if (!dist_check(f, FALSE, i, d, f->result_types[i], result_roles[i], diag))
      return FALSE;
    result_globals[i] = global_type(m, d, f->result_types[i]);
    if (!result_globals[i]) {
      diag_reason(diag,
                  "result %d is too large to assemble (limit %" G_GINT64_FORMAT
                  " elements)",
                  i, SIM_MAX_ELEMS);
      return FALSE;
    }
  }
  return TRUE;
}

/* Checks program, layouts and inputs, and gives each result its global
 * type and axis roles. */
static gboolean check_program(const Func *f, Tensor *const *global_inputs,
                              const Type **result_globals,
                              AxisRole (*result_roles)[MESH_MAX_AXES],
                              Diag *diag) {
  const Mesh *m = &f->spmd->mesh;
  for (int i = 0; i < f->nargs; i++) {
    AxisRole roles[MESH_MAX_AXES];
    const Dist *d = &f->spmd->arg_dists[i];
    if (!dist_check(f, TRUE, i, d, f->arg_types[i], roles, diag))
      return FALSE;
    const Type *want = global_type(m, d, f->arg_types[i]);
    const Type *got = global_inputs[i]->type;
    if (want != got) {
      g_autofree char *what = value_name(f, TRUE, i);
      g_autofree char *want_s = want ? type_to_string(want) : NULL;
      g_autofree char *got_s = type_to_string(got);
      diag_reason(diag, "%s: the program takes %s globally, got %s", what,
                  want_s ? want_s : "a value too large to simulate", got_s);
      return FALSE;
    }
  }
  if (!result_layouts(f, result_globals, result_roles, diag))
    return FALSE;
  if (!check_collectives(f, diag))
    return FALSE;
  /* interp_check refuses collectives outside a simulated device */
  Comm probe = {0};
  Collectives *saved = kernel_comm;
  kernel_comm = &probe.ops;
  gboolean ok = interp_check(f, diag);
  kernel_comm = saved;
  return ok;
}

/* The simulator's collectives for spmd_run: a World and its Comms. */
static Collectives **sim_connect(void *data, const Mesh *m, int ndevices) {
  (void)data;
  World *w = g_new0(World, 1);
  w->mesh = m;
  w->ndevices = ndevices;
  pthread_mutex_init(&w->lock, NULL);
  pthread_cond_init(&w->cond, NULL);
  w->slots = g_new0(Tensor *, (gsize)ndevices);
  w->comms = g_new0(Comm, (gsize)ndevices);
  w->views = g_new0(Collectives *, (gsize)ndevices);
  for (int dev = 0; dev < ndevices; dev++) {
    Comm *c = &w->comms[dev];
    c->ops.collective = comm_collective;
    c->ops.fail = comm_fail;
    c->world = w;
    c->device = dev;
    device_coords(m, dev, c->coords);
    w->views[dev] = &c->ops;
  }
  return w->views;
}

static void sim_disconnect(void *data, Collectives **devices) {
  (void)data;
  World *w = ((Comm *)devices[0])->world;
  for (int dev = 0; dev < w->ndevices; dev++)
    tensor_unref(w->slots[dev]); /* a broken world keeps them */
  g_free(w->slots);
  g_free(w->comms);
  g_free(w->views);
  pthread_mutex_destroy(&w->lock);
  pthread_cond_destroy(&w->cond);
  g_free(w);
}

/* FALSE with the reason when mesh 'm' has too many devices to run. */
static gboolean check_devices(const Mesh *m, Diag *diag) {
  if (mesh_devices(m) <= SIM_MAX_DEVICES)
    return TRUE;
  g_autofree char *mesh = mesh_to_string(m);
  diag_reason(diag, "mesh '%s' has more than %d devices, too many to simulate",
              mesh, SIM_MAX_DEVICES);
  return FALSE;
}

static const SpmdRuntime simulator = {
    .connect = sim_connect,
    .disconnect = sim_disconnect,
};

GPtrArray *spmd_simulate(const Func *f, Tensor *const *global_inputs,
                         Diag *diag, GError **error) {
  return spmd_run(f, global_inputs, NULL, diag, error);
}

GPtrArray *spmd_run(const Func *f, Tensor *const *global_inputs,
                    const SpmdRuntime *rt, Diag *diag, GError **error) {
  if (!f->spmd) {
    diag_reason(diag,
                "'%s' is not an SPMD program (it has no mesh and layouts)",
                f->name);
    return NULL;
  }
  const Mesh *m = &f->spmd->mesh;
  int64_t ndevices = mesh_devices(m);
  if (!check_devices(m, diag))
    return NULL;
  g_autofree const Type **globals =
      g_new0(const Type *, (gsize)f->nresults + 1);
  g_autofree AxisRole(*roles)[MESH_MAX_AXES] =
      g_malloc0_n((gsize)f->nresults + 1, sizeof *roles);
  if (!check_program(f, global_inputs, globals, roles, diag))
    return NULL;

  const SpmdRuntime *comms = rt && rt->connect ? rt : &simulator;
  Collectives **views = comms->connect(comms->comm_data, m, (int)ndevices);
  Device *devs = g_new0(Device, (gsize)ndevices);
  int count = rt ? rt->steps : 0;
  Steps steps = {.ndevices = (int)ndevices, .count = count};
  g_autofree int64_t *stamps = NULL;
  if (count > 1) {
    stamps = g_new0(int64_t, (gsize)count + 1);
    steps.stamps = stamps;
    pthread_mutex_init(&steps.lock, NULL);
  }
  for (int dev = 0; dev < ndevices; dev++) {
    devs[dev].comm = views[dev];
    device_coords(m, dev, devs[dev].coords);
    devs[dev].f = f;
    devs[dev].run = rt ? rt->run : NULL;
    devs[dev].buffer = rt ? rt->buffer : NULL;
    devs[dev].run_data = rt ? rt->run_data : NULL;
    devs[dev].global_inputs = global_inputs;
    devs[dev].steps = stamps ? &steps : NULL;
  }

  GPtrArray *out = NULL;
  if (run_devices(devs, (int)ndevices, error)) {
    for (int k = 0; stamps && rt->step_seconds && k < count; k++)
      rt->step_seconds[k] = (double)(stamps[k + 1] - stamps[k]) * 1e-9;
    g_autofree GPtrArray **results = g_new0(GPtrArray *, (gsize)ndevices);
    for (int dev = 0; dev < ndevices; dev++)
      results[dev] = devs[dev].results;
    out = gather_results(f, results, (int)ndevices, globals, roles, diag);
  }

  for (int dev = 0; dev < ndevices; dev++) {
    for (int i = 0; devs[dev].inputs && i < f->nargs; i++)
      tensor_unref(devs[dev].inputs[i]);
    g_free(devs[dev].inputs);
    if (devs[dev].results)
      g_ptr_array_unref(devs[dev].results);
    g_clear_error(&devs[dev].error);
  }
  g_free(devs);
  comms->disconnect(comms->comm_data, views);
  if (stamps) {
    pthread_mutex_destroy(&steps.lock);
    g_clear_error(&steps.error);
  }
  return out;
}

/* ------------------------------------------- devices in other processes */

gboolean spmd_check_inputs(const Func *f, Tensor *const *global_inputs,
                           Diag *diag) {
  if (!f->spmd) {
    diag_reason(diag,
                "'%s' is not an SPMD program (it has no mesh and layouts)",
                f->name);
    return FALSE;
  }
  if (!check_devices(&f->spmd->mesh, diag))
    return FALSE;
  g_autofree const Type **globals =
      g_new0(const Type *, (gsize)f->nresults + 1);
  g_autofree AxisRole(*roles)[MESH_MAX_AXES] =
      g_malloc0_n((gsize)f->nresults + 1, sizeof *roles);
  return check_program(f, global_inputs, globals, roles, diag);
}

Tensor **spmd_scatter(const Func *f, Tensor *const *global_inputs, int device) {
  int64_t coords[MESH_MAX_AXES];
  device_coords(&f->spmd->mesh, device, coords);
  return scatter_inputs(f, global_inputs, coords, NULL, NULL);
}

GPtrArray *spmd_gather(const Func *f, GPtrArray *const *device_results,
                       Diag *diag) {
  g_autofree const Type **globals =
      g_new0(const Type *, (gsize)f->nresults + 1);
  g_autofree AxisRole(*roles)[MESH_MAX_AXES] =
      g_malloc0_n((gsize)f->nresults + 1, sizeof *roles);
  if (!result_layouts(f, globals, roles, diag))
    return NULL;
  return gather_results(f, device_results, (int)mesh_devices(&f->spmd->mesh),
                        globals, roles, diag);
}
