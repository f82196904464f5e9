/* threads.c — collectives between device threads, in shared memory.
 *
 * Every device of a run is a thread of this process (spmd_run starts
 * them); a collective's operands and results are the devices' own
 * buffers, which the members of a group read and write in place:
 *
 *   1. post     the device publishes its operand and result buffers in
 *               its Peer (one per device: a device is in one collective
 *               at a time) and waits at its group's barrier;
 *   2. work     each member reads the group's operands directly:
 *               all_reduce   small: every member sums the whole buffer
 *                            into its own result; large (at least
 *                            THREADS_SPLIT_BYTES): member g sums slice g
 *                            (1/N of the elements) and writes it into
 *                            every member's result (a reduce-scatter and
 *                            an all-gather in one pass);
 *               reduce_scatter  each sums its own chunk;
 *               all_gather, all_to_all  each copies its chunks in;
 *   3. release  a second barrier: no member leaves (and overwrites its
 *               operand, or frees it) while another still reads it.
 * shard exchanges nothing: a device copies its chunk.
 *
 * Semantics are the simulator's (src/spmd/simulate.c): groups are the
 * devices agreeing on every other mesh axis, ordered row-major over the
 * collective's axes as it lists them; sums start from zero, accumulate
 * in double (wrapping int64 for integers) in group order and round once
 * to the dtype.  Whoever sums an element sums it in that order, so the
 * split and unsplit paths give the same bits as the simulator.
 *
 * Barriers: one per group (an axis subset and the coordinates off it),
 * made on first use and cached by each device.  Its state is one 64-bit
 * word, generation << 32 | arrived, changed only by compare-and-swap, so
 * that arriving, completing a generation and leaving early are each one
 * atomic step.  A waiter spins briefly, then yields, then sleeps on the
 * barrier's condition (woken by whoever completes the generation, and
 * polling 'partir_interrupt' and the world's failure flag).
 *
 * Failure: a device that fails (its run, or an interrupt seen while
 * waiting) records the first error and sets 'failed'.  Waiters at a
 * first barrier leave it (the compare-and-swap decides whether they left
 * or the generation completed first); later collectives return zeros at
 * once; 'check' then gives every device that error.  A second barrier is
 * never left early: its members are all past the first one and reach it
 * without waiting on anyone.  So nothing hangs, and no buffer is read
 * after its owner has moved on.
 */
#include "codegen/threads.h"
#include "spmd/spmd.h"

#include <stdatomic.h>

#define SPIN_POLLS 1000  /* busy polls of a barrier before yielding */
#define YIELD_POLLS 50   /* then polls with a yield between */
#define SLEEP_USEC 10000 /* then sleeps of this long, at most */
#define REDUCE_BLOCK 512 /* elements summed at once, in doubles */
#define ALL_AXES_MASKS (1 << MESH_MAX_AXES)

/* A group's meeting point: 'state' is generation << 32 | arrived. */
typedef struct Barrier {
  _Atomic guint64 state;
  guint32 count;        /* the group's members */
  _Atomic int sleepers; /* waiters in g_cond_wait: a completer wakes them */
  GMutex lock;          /* with 'cond', for sleepers only */
  GCond cond;
} Barrier;

typedef struct World World;

/* One device: its Collectives and what it posts for its collective. */
typedef struct Peer {
  Collectives ops; /* first: the device's Collectives */
  World *world;
  int device;                      /* row-major index on the mesh */
  int64_t coords[MESH_MAX_AXES];   /* coordinate on each mesh axis */
  const void *in;                  /* posted: operand of the current one */
  void *out;                       /* posted: its result buffer */
  Barrier *groups[ALL_AXES_MASKS]; /* by axis mask: this device's group */
  int capacity;                    /* of the scratch arrays below */
  int *members;                    /* scratch: the group's devices */
  const void **ins;                /* scratch: their operands */
  void **outs;                     /* scratch: their results */
} Peer;

struct World {
  Mesh mesh;
  int ndevices;
  Peer *peers;
  Collectives **views; /* &peers[i].ops, what threads_connect returns */
  _Atomic int failed;  /* a device failed: no more exchanges */
  GMutex lock;         /* guards the fields below */
  GHashTable *groups;  /* mask * ndevices + first member -> Barrier */
  GError *error;       /* the first failure */
};

/* One collective as a device sees it. */
typedef struct Exchange {
  const Term *t;
  const Type *x; /* the operand's type */
  const Type *r; /* the result's type */
  unsigned mask; /* the mesh axes it acts over */
  int size;      /* devices in the group */
  int position;  /* this device's place in the group */
} Exchange;

static const int64_t zero_offsets[PARTIR_MAX_RANK];

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* ------------------------------------------------------------- failure */

/* Records the first failure and releases every waiter. */
static void world_fail(World *w, const GError *error) {
  g_mutex_lock(&w->lock);
  if (!w->error)
    w->error =
        error ? g_error_copy(error)
              : g_error_new(PARTIR_ERROR, PARTIR_ERROR_IO, "a device failed");
  atomic_store(&w->failed, 1);
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init(&it, w->groups);
  while (g_hash_table_iter_next(&it, &key, &value)) {
    Barrier *b = value;
    g_mutex_lock(&b->lock);
    g_cond_broadcast(&b->cond);
    g_mutex_unlock(&b->lock);
  }
  g_mutex_unlock(&w->lock);
}

/* TRUE when the run is failing: a device failed, or an interrupt was
 * asked for (which fails the run, "interrupted", as the interpreter
 * does). */
static gboolean world_stopping(World *w) {
  if (atomic_load(&w->failed))
    return TRUE;
  if (!partir_interrupt)
    return FALSE;
  GError *e =
      g_error_new(PARTIR_ERROR, PARTIR_ERROR_INTERRUPTED, "interrupted");
  world_fail(w, e);
  g_error_free(e);
  return TRUE;
}

/* ------------------------------------------------------------ barriers */

static Barrier *barrier_new(guint32 count) {
  Barrier *b = g_new0(Barrier, 1);
  b->count = count;
  g_mutex_init(&b->lock);
  g_cond_init(&b->cond);
  return b;
}

static void barrier_free(gpointer p) {
  Barrier *b = p;
  g_mutex_clear(&b->lock);
  g_cond_clear(&b->cond);
  g_free(b);
}

/* Arrives at 'b'; returns the generation waited for, having completed it
 * (and woken the sleepers) when this was the last arrival. */
static guint32 barrier_arrive(Barrier *b) {
  guint64 s = atomic_load(&b->state), next;
  do {
    guint32 arrived = (guint32)s + 1;
    next = arrived == b->count ? ((s >> 32) + 1) << 32 : s + 1;
  } while (!atomic_compare_exchange_weak(&b->state, &s, next));
  if ((guint32)(next >> 32) != (guint32)(s >> 32) &&
      atomic_load(&b->sleepers) > 0) {
    g_mutex_lock(&b->lock);
    g_cond_broadcast(&b->cond);
    g_mutex_unlock(&b->lock);
  }
  return (guint32)(s >> 32);
}

/* Sleeps until generation 'gen' of 'b' completes, the run fails (when
 * 'may_leave'), or a while has passed. */
static void barrier_sleep(Barrier *b, World *w, guint32 gen,
                          gboolean may_leave) {
  g_mutex_lock(&b->lock);
  atomic_fetch_add(&b->sleepers, 1);
  gint64 until = g_get_monotonic_time() + SLEEP_USEC;
  while ((guint32)(atomic_load(&b->state) >> 32) == gen &&
         !(may_leave && (atomic_load(&w->failed) || partir_interrupt)))
    if (!g_cond_wait_until(&b->cond, &b->lock, until))
      break;
  atomic_fetch_sub(&b->sleepers, 1);
  g_mutex_unlock(&b->lock);
}

/* Waits at 'b' until every member has arrived: TRUE.  When 'may_leave'
 * and the run fails first, takes back its arrival and returns FALSE,
 * unless the generation completed meanwhile (then TRUE: the others
 * count on this device to finish the collective). */
static gboolean barrier_wait(Barrier *b, World *w, gboolean may_leave) {
  guint32 gen = barrier_arrive(b);
  for (int polls = 0;; polls++) {
    guint64 s = atomic_load(&b->state);
    if ((guint32)(s >> 32) != gen)
      return TRUE;
    if (may_leave && world_stopping(w)) {
      if (atomic_compare_exchange_strong(&b->state, &s, s - 1))
        return FALSE;
      continue; /* someone arrived or completed it: look again */
    }
    if (polls < SPIN_POLLS)
      cpu_relax();
    else if (polls < SPIN_POLLS + YIELD_POLLS)
      g_thread_yield();
    else
      barrier_sleep(b, w, gen, may_leave);
  }
}

/* --------------------------------------------------------------- groups */

/* Fills in the group of 'p' for collective 't': its axes, size, the
 * device's position and the members in group order. */
static void exchange_init(Peer *p, const Term *t, Exchange *x) {
  const Mesh *m = &p->world->mesh;
  const AttrValue *list = attrs_get(t->attrs, "axes");
  g_assert(list && list->kind == AV_LIST);
  int axes[MESH_MAX_AXES];
  *x = (Exchange){.t = t, .x = t->args[0]->type, .r = t->type, .size = 1};
  for (int k = 0; k < list->count; k++) {
    axes[k] = mesh_axis_index(m, list->items[k].sym);
    g_assert(axes[k] >= 0); /* spmd_run checked every collective */
    x->mask |= 1u << axes[k];
    x->size *= (int)m->sizes[axes[k]];
    x->position =
        x->position * (int)m->sizes[axes[k]] + (int)p->coords[axes[k]];
  }
  if (x->size > p->capacity) { /* the largest group this device meets */
    p->capacity = x->size;
    p->members = g_renew(int, p->members, (gsize)x->size);
    p->ins = g_renew(const void *, p->ins, (gsize)x->size);
    p->outs = g_renew(void *, p->outs, (gsize)x->size);
  }
  for (int j = 0; j < x->size; j++) {
    int64_t coords[MESH_MAX_AXES];
    memcpy(coords, p->coords, sizeof coords);
    int rest = j;
    for (int k = list->count - 1; k >= 0; k--) {
      coords[axes[k]] = rest % m->sizes[axes[k]];
      rest /= (int)m->sizes[axes[k]];
    }
    int64_t d = 0;
    for (int a = 0; a < m->naxes; a++)
      d = d * m->sizes[a] + coords[a];
    p->members[j] = (int)d;
  }
}

/* The barrier of the group of 'p' over the axes in 'x->mask'. */
static Barrier *group_barrier(Peer *p, const Exchange *x) {
  if (p->groups[x->mask])
    return p->groups[x->mask];
  World *w = p->world;
  int first = p->members[0];
  for (int j = 1; j < x->size; j++)
    first = MIN(first, p->members[j]);
  guint64 key = (guint64)x->mask * (guint64)w->ndevices + (guint64)first;
  g_mutex_lock(&w->lock);
  Barrier *b = g_hash_table_lookup(w->groups, &key);
  if (!b) {
    b = barrier_new((guint32)x->size);
    g_hash_table_insert(w->groups, g_memdup2(&key, sizeof key), b);
  }
  g_mutex_unlock(&w->lock);
  p->groups[x->mask] = b;
  return b;
}

/* ---------------------------------------------------------------- boxes */

/* What is done to each run of elements of a box: 'n' elements from
 * element 'src' of the source(s) to element 'dst' of the destination(s). */
typedef void (*RunFn)(void *ctx, int64_t dst, int64_t src, int64_t n);

/* Walks the box 'box' at 'src_off' of a row-major tensor of 'src_dims'
 * and at 'dst_off' of one of 'dst_dims' (both of rank 'rank') in runs of
 * contiguous elements: trailing dimensions the box covers whole in both
 * are merged into one run. */
static void box_walk(int rank, const int64_t *dst_dims, const int64_t *dst_off,
                     const int64_t *src_dims, const int64_t *src_off,
                     const int64_t *box, RunFn fn, void *ctx) {
  int64_t ds[PARTIR_MAX_RANK], ss[PARTIR_MAX_RANK], dst = 0, src = 0;
  int64_t dstride = 1, sstride = 1;
  for (int k = rank - 1; k >= 0; k--) {
    if (box[k] == 0)
      return;
    ds[k] = dstride;
    ss[k] = sstride;
    dstride *= dst_dims[k];
    sstride *= src_dims[k];
    dst += dst_off[k] * ds[k];
    src += src_off[k] * ss[k];
  }
  int outer = rank; /* dimensions walked one index at a time */
  int64_t run = 1;
  while (outer > 0 && box[outer - 1] == dst_dims[outer - 1] &&
         box[outer - 1] == src_dims[outer - 1])
    run *= box[--outer];
  if (outer > 0)
    run *= box[--outer];
  int64_t idx[PARTIR_MAX_RANK] = {0};
  for (;;) {
    int64_t d = dst, s = src;
    for (int k = 0; k < outer; k++) {
      d += idx[k] * ds[k];
      s += idx[k] * ss[k];
    }
    fn(ctx, d, s, run);
    int k = outer - 1;
    while (k >= 0 && ++idx[k] == box[k])
      idx[k--] = 0;
    if (k < 0)
      return;
  }
}

typedef struct Copy {
  char *dst;
  const char *src;
  gsize width; /* bytes per element */
} Copy;

static void copy_run(void *ctx, int64_t dst, int64_t src, int64_t n) {
  Copy *c = ctx;
  memcpy(c->dst + dst * (int64_t)c->width, c->src + src * (int64_t)c->width,
         (gsize)n * c->width);
}

/* Copies the box at 'src_off' of 'src' (of type 'st') to 'dst_off' of
 * 'dst' (of type 'dt'). */
static void box_copy(void *dst, const Type *dt, const int64_t *dst_off,
                     const void *src, const Type *st, const int64_t *src_off,
                     const int64_t *box) {
  Copy c = {dst, src, dtype_storage_bytes(dt->dtype)};
  box_walk(dt->rank, dt->dims, dst_off, st->dims, src_off, box, copy_run, &c);
}

/* ----------------------------------------------------------------- sums */

/* The sum over the group of runs of elements, written to 'nouts'
 * destinations. */
typedef struct Reduce {
  DType dtype;
  int n;
  const void *const *ins; /* the group's operands, in group order */
  int nouts;
  void *const *outs;
} Reduce;

/* acc[e] += the first 'n' elements at 'p' (a floating dtype). */
static inline __attribute__((always_inline)) void
add_floats(double *acc, const void *p, DType dt, int64_t n) {
  switch (dt) {
  case DT_F32:
    for (int64_t e = 0; e < n; e++)
      acc[e] += ((const float *)p)[e];
    break;
  case DT_F64:
    for (int64_t e = 0; e < n; e++)
      acc[e] += ((const double *)p)[e];
    break;
  case DT_BF16:
    for (int64_t e = 0; e < n; e++)
      acc[e] += tensor_bf16_to_f32(((const uint16_t *)p)[e]);
    break;
  case DT_F16:
    for (int64_t e = 0; e < n; e++)
      acc[e] += dtype_f16_to_f32(((const uint16_t *)p)[e]);
    break;
  default:
    g_assert_not_reached();
  }
}

/* acc[e] += the first 'n' elements at 'p' (an integer dtype), wrapping. */
static inline __attribute__((always_inline)) void
add_ints(guint64 *acc, const void *p, DType dt, int64_t n) {
  switch (dt) {
  case DT_I32:
    for (int64_t e = 0; e < n; e++)
      acc[e] += (guint64)(int64_t)((const int32_t *)p)[e];
    break;
  case DT_I64:
    for (int64_t e = 0; e < n; e++)
      acc[e] += (guint64)((const int64_t *)p)[e];
    break;
  case DT_I1:
  case DT_UI8:
    for (int64_t e = 0; e < n; e++)
      acc[e] += ((const uint8_t *)p)[e];
    break;
  case DT_I8:
    for (int64_t e = 0; e < n; e++)
      acc[e] += (guint64)(int64_t)((const int8_t *)p)[e];
    break;
  case DT_I16:
    for (int64_t e = 0; e < n; e++)
      acc[e] += (guint64)(int64_t)((const int16_t *)p)[e];
    break;
  case DT_UI16:
    for (int64_t e = 0; e < n; e++)
      acc[e] += ((const uint16_t *)p)[e];
    break;
  case DT_UI32:
    for (int64_t e = 0; e < n; e++)
      acc[e] += ((const uint32_t *)p)[e];
    break;
  default:
    g_assert_not_reached();
  }
}

/* Rounds sums to the dtype as tensor_set_float does (bf16 through f32). */
static inline __attribute__((always_inline)) void
store_floats(void *p, DType dt, const double *acc, int64_t n) {
  switch (dt) {
  case DT_F32:
    for (int64_t e = 0; e < n; e++)
      ((float *)p)[e] = (float)acc[e];
    break;
  case DT_F64:
    memcpy(p, acc, (gsize)n * sizeof *acc);
    break;
  case DT_BF16:
    for (int64_t e = 0; e < n; e++)
      ((uint16_t *)p)[e] = tensor_bf16_from_f32((float)acc[e]);
    break;
  case DT_F16:
    for (int64_t e = 0; e < n; e++)
      ((uint16_t *)p)[e] = dtype_f16_from_f64(acc[e]);
    break;
  default:
    g_assert_not_reached();
  }
}

/* Wraps sums to the dtype as tensor_set_int does. */
static inline __attribute__((always_inline)) void
store_ints(void *p, DType dt, const guint64 *acc, int64_t n) {
  switch (dt) {
  case DT_I32:
    for (int64_t e = 0; e < n; e++)
      ((int32_t *)p)[e] = (int32_t)(uint32_t)acc[e];
    break;
  case DT_I64:
    memcpy(p, acc, (gsize)n * sizeof *acc);
    break;
  case DT_I1:
    for (int64_t e = 0; e < n; e++)
      ((uint8_t *)p)[e] = acc[e] != 0;
    break;
  case DT_I8:
  case DT_UI8:
    for (int64_t e = 0; e < n; e++)
      ((uint8_t *)p)[e] = (uint8_t)acc[e];
    break;
  case DT_I16:
  case DT_UI16:
    for (int64_t e = 0; e < n; e++)
      ((uint16_t *)p)[e] = (uint16_t)acc[e];
    break;
  case DT_UI32:
    for (int64_t e = 0; e < n; e++)
      ((uint32_t *)p)[e] = (uint32_t)acc[e];
    break;
  default:
    g_assert_not_reached();
  }
}

/* Sums 'len' elements from 'from' bytes into the operands to 'to' bytes
 * into the first destination: from zero over the operands in group
 * order, rounded once.  Inlined, so that full blocks (a constant 'len')
 * get vectorized loops. */
static inline __attribute__((always_inline)) void
reduce_block(const Reduce *r, gsize from, gsize to, int64_t len) {
  union {
    double f[REDUCE_BLOCK];
    guint64 i[REDUCE_BLOCK];
  } acc;
  char *first = (char *)r->outs[0] + to;
  if (dtype_is_float(r->dtype)) {
    for (int64_t e = 0; e < len; e++)
      acc.f[e] = 0.0; /* 0.0 + -0.0 is 0.0, as the simulator has it */
    for (int j = 0; j < r->n; j++)
      add_floats(acc.f, (const char *)r->ins[j] + from, r->dtype, len);
    store_floats(first, r->dtype, acc.f, len);
  } else {
    for (int64_t e = 0; e < len; e++)
      acc.i[e] = 0;
    for (int j = 0; j < r->n; j++)
      add_ints(acc.i, (const char *)r->ins[j] + from, r->dtype, len);
    store_ints(first, r->dtype, acc.i, len);
  }
}

/* reduce_block for the common case, f32 over two devices, in one pass
 * that writes every destination (one or two); the same arithmetic. */
static inline __attribute__((always_inline)) void
reduce_pair_f32(const Reduce *r, gsize from, gsize to, int64_t len) {
  const float *a = (const float *)((const char *)r->ins[0] + from),
              *b = (const float *)((const char *)r->ins[1] + from);
  float *o0 = (float *)((char *)r->outs[0] + to),
        *o1 = (float *)((char *)r->outs[r->nouts - 1] + to);
  for (int64_t e = 0; e < len; e++)
    o0[e] = o1[e] = (float)((0.0 + (double)a[e]) + (double)b[e]);
}

/* Sums a run a block at a time, each block then copied to the other
 * destinations while it is in cache.  A block of constant length gets
 * vectorized loops. */
static void reduce_run(void *ctx, int64_t dst, int64_t src, int64_t n) {
  const Reduce *r = ctx;
  gsize width = dtype_storage_bytes(r->dtype);
  gboolean pair = r->dtype == DT_F32 && r->n == 2 && r->nouts <= 2;
  for (int64_t k = 0; k < n; k += REDUCE_BLOCK) {
    int64_t len = MIN(REDUCE_BLOCK, n - k);
    gsize from = (gsize)(src + k) * width, to = (gsize)(dst + k) * width;
    if (pair && len == REDUCE_BLOCK) {
      reduce_pair_f32(r, from, to, REDUCE_BLOCK);
      continue;
    }
    if (pair) {
      reduce_pair_f32(r, from, to, len);
      continue;
    }
    if (len == REDUCE_BLOCK)
      reduce_block(r, from, to, REDUCE_BLOCK);
    else
      reduce_block(r, from, to, len);
    for (int o = 1; o < r->nouts; o++)
      memcpy((char *)r->outs[o] + to, (char *)r->outs[0] + to,
             (gsize)len * width);
  }
}

/* ---------------------------------------------------------- collectives */

/* all_reduce: the whole sum by this device, or its slice for everyone. */
static void all_reduce(Peer *p, const Exchange *x, void *out) {
  int64_t numel = type_numel(x->r);
  gboolean split =
      x->size > 1 && tensor_type_bytes(x->r) >= THREADS_SPLIT_BYTES;
  int64_t lo = split ? numel * x->position / x->size : 0;
  int64_t hi = split ? numel * (x->position + 1) / x->size : numel;
  Reduce r = {.dtype = x->r->dtype,
              .n = x->size,
              .ins = p->ins,
              .nouts = split ? x->size : 1,
              .outs = split ? p->outs : &out};
  if (hi > lo)
    reduce_run(&r, lo, lo, hi - lo);
}

/* reduce_scatter: this device's chunk along 'dim' of the sum; past the
 * end of a dimension the devices do not divide, padding (zeros, as
 * spmd/simulate.c has it). */
static void reduce_scatter(Peer *p, const Exchange *x, void *out) {
  int d = (int)attrs_get_int(x->t->attrs, "dim");
  int64_t src_off[PARTIR_MAX_RANK] = {0}, box[PARTIR_MAX_RANK];
  src_off[d] = x->position * x->r->dims[d];
  memcpy(box, x->r->dims, sizeof(int64_t) * (gsize)x->r->rank);
  if (spmd_clip_box(box, src_off, x->x->dims, x->r->rank))
    memset(out, 0, tensor_type_bytes(x->r));
  Reduce r = {.dtype = x->r->dtype,
              .n = x->size,
              .ins = p->ins,
              .nouts = 1,
              .outs = &out};
  box_walk(x->r->rank, x->r->dims, zero_offsets, x->x->dims, src_off, box,
           reduce_run, &r);
}

/* all_gather: member j's operand is chunk j along 'dim'; a 'length'
 * (the chunks padded) drops what lies past it. */
static void all_gather(Peer *p, const Exchange *x, void *out) {
  int d = (int)attrs_get_int(x->t->attrs, "dim");
  int64_t dst_off[PARTIR_MAX_RANK] = {0}, box[PARTIR_MAX_RANK];
  for (int j = 0; j < x->size; j++) {
    dst_off[d] = j * x->x->dims[d];
    memcpy(box, x->x->dims, sizeof(int64_t) * (gsize)x->x->rank);
    spmd_clip_box(box, dst_off, x->r->dims, x->r->rank);
    box_copy(out, x->r, dst_off, p->ins[j], x->x, zero_offsets, box);
  }
}

/* all_to_all: member j sends chunk 'position' of its operand along
 * split_dim, which lands as chunk j along concat_dim. */
static void all_to_all(Peer *p, const Exchange *x, void *out) {
  int s = (int)attrs_get_int(x->t->attrs, "split_dim");
  int cd = (int)attrs_get_int(x->t->attrs, "concat_dim");
  int64_t chunk[PARTIR_MAX_RANK], src_off[PARTIR_MAX_RANK] = {0},
                                  dst_off[PARTIR_MAX_RANK] = {0};
  memcpy(chunk, x->x->dims, sizeof chunk);
  chunk[s] /= x->size;
  src_off[s] = x->position * chunk[s];
  for (int j = 0; j < x->size; j++) {
    dst_off[cd] = j * chunk[cd];
    box_copy(out, x->r, dst_off, p->ins[j], x->x, src_off, chunk);
  }
}

/* shard: this device's chunk along 'dim', no exchange; padded with
 * zeros past the end of a dimension the devices do not divide. */
static void shard(const Exchange *x, const void *in, void *out) {
  int d = (int)attrs_get_int(x->t->attrs, "dim");
  int64_t src_off[PARTIR_MAX_RANK] = {0}, box[PARTIR_MAX_RANK];
  src_off[d] = x->position * x->r->dims[d];
  memcpy(box, x->r->dims, sizeof(int64_t) * (gsize)x->r->rank);
  if (spmd_clip_box(box, src_off, x->x->dims, x->r->rank))
    memset(out, 0, tensor_type_bytes(x->r));
  box_copy(out, x->r, zero_offsets, in, x->x, src_off, box);
}

static void peer_collective_into(Collectives *self, const Term *t,
                                 const void *in, void *out) {
  Peer *p = (Peer *)self;
  World *w = p->world;
  if (world_stopping(w)) { /* its values are discarded */
    memset(out, 0, tensor_type_bytes(t->type));
    return;
  }
  Exchange x;
  exchange_init(p, t, &x);
  if (t->op == OP_SHARD) {
    shard(&x, in, out);
    return;
  }
  Barrier *b = group_barrier(p, &x);
  p->in = in;
  p->out = out;
  if (!barrier_wait(b, w, TRUE)) {
    memset(out, 0, tensor_type_bytes(t->type));
    return;
  }
  for (int j = 0; j < x.size; j++) {
    p->ins[j] = w->peers[p->members[j]].in;
    p->outs[j] = w->peers[p->members[j]].out;
  }
  switch (t->op) {
  case OP_ALL_REDUCE:
    all_reduce(p, &x, out);
    break;
  case OP_REDUCE_SCATTER:
    reduce_scatter(p, &x, out);
    break;
  case OP_ALL_GATHER:
    all_gather(p, &x, out);
    break;
  case OP_ALL_TO_ALL:
    all_to_all(p, &x, out);
    break;
  default:
    g_assert_not_reached();
  }
  barrier_wait(b, w, FALSE);
}

static Tensor *peer_collective(Collectives *self, const Term *t, Tensor *x) {
  Tensor *out = tensor_new(t->type);
  peer_collective_into(self, t, x->data, out->data);
  return out;
}

static void peer_fail(Collectives *self, const GError *error) {
  world_fail(((Peer *)self)->world, error);
}

static gboolean peer_check(Collectives *self, GError **error) {
  World *w = ((Peer *)self)->world;
  if (!atomic_load(&w->failed))
    return TRUE;
  g_mutex_lock(&w->lock);
  g_propagate_error(error, g_error_copy(w->error));
  g_mutex_unlock(&w->lock);
  return FALSE;
}

/* ----------------------------------------------------------- the world */

Collectives **threads_connect(void *data, const Mesh *mesh, int ndevices) {
  (void)data;
  g_assert(ndevices == mesh_devices(mesh));
  World *w = g_new0(World, 1);
  w->mesh = *mesh;
  w->ndevices = ndevices;
  g_mutex_init(&w->lock);
  w->groups =
      g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, barrier_free);
  w->peers = g_new0(Peer, (gsize)ndevices);
  w->views = g_new0(Collectives *, (gsize)ndevices);
  for (int dev = 0; dev < ndevices; dev++) {
    Peer *p = &w->peers[dev];
    p->ops = (Collectives){.collective = peer_collective,
                           .collective_into = peer_collective_into,
                           .fail = peer_fail,
                           .check = peer_check};
    p->world = w;
    p->device = dev;
    int64_t rest = dev;
    for (int a = mesh->naxes - 1; a >= 0; a--) {
      p->coords[a] = rest % mesh->sizes[a];
      rest /= mesh->sizes[a];
    }
    w->views[dev] = &p->ops;
  }
  return w->views;
}

void threads_disconnect(void *data, Collectives **devices) {
  (void)data;
  World *w = ((Peer *)devices[0])->world;
  for (int dev = 0; dev < w->ndevices; dev++) {
    g_free(w->peers[dev].members);
    g_free(w->peers[dev].ins);
    g_free(w->peers[dev].outs);
  }
  g_hash_table_unref(w->groups);
  g_clear_error(&w->error);
  g_mutex_clear(&w->lock);
  g_free(w->peers);
  g_free(w->views);
  g_free(w);
}
