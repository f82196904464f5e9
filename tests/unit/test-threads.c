/* test-threads — the threaded runtime's collectives (codegen/threads.c)
 * against the SPMD simulator's, bit for bit, and its failures.
 *
 * Each case is an SPMD program of one collective whose argument and
 * result are split on dimension 0 over every mesh axis, so the global
 * result holds every device's local result.  spmd_simulate (the
 * simulator's Collectives, whose values test-spmd-sim works out by hand)
 * gives the expected bytes; spmd_run on threads_connect gives the ones
 * tested, with the interpreter and with compiled code on the devices.
 * Cases cover meshes 1, 2, 4, 2x2 and 2x3, every ordered subset of
 * their axes, every collective, every dtype, and sizes on both sides of
 * THREADS_SPLIT_BYTES that the group does not divide.
 *
 * Failures run under a watchdog that fails the test rather than hang.
 */
#include "codegen/codegen.h"
#include "codegen/threads.h"
#include "spmd/spmd.h"
#include "tests/unit/collective-term.h"

#include <string.h>

/* ------------------------------------------------------------- builders */

/* A collective over comma-separated 'axes' of 'size' devices with up to
 * two integer attributes (NULL key: absent); NULL when its type rule
 * refuses it (all_reduce of i1). */
static const Term *coll(Op op, const Term *x, const char *axes, int64_t size,
                        const char *k1, int64_t v1, const char *k2,
                        int64_t v2) {
  g_autoptr(Diag) err = diag_new(NULL);
  return collective_term(op, x, axes, size, k1, v1, k2, v2, err);
}

/* Dimension 0 split over every axis of 'm', the others whole. */
static Dist split_rows(const Mesh *m, int rank) {
  Dist d = {.rank = rank};
  for (int a = 0; a < m->naxes; a++)
    d.axes[0][d.naxes[0]++] = m->names[a];
  return d;
}

/* An SPMD program on 'mesh_spec' of argument 'x' of local type 'local',
 * argument 'id' (i32[1], unused: the device's number, for capture_run)
 * and the given results, each split on dimension 0 over every axis.
 * Free with func_free. */
static Func *spmd_func(const char *mesh_spec, const Type *local, int nresults,
                       const Term *const *results) {
  Func *f = g_new0(Func, 1);
  f->name = g_strdup("main");
  f->nargs = 2;
  f->arg_names = g_new0(char *, 3);
  f->arg_names[0] = g_strdup("x");
  f->arg_names[1] = g_strdup("id");
  f->arg_types = g_new0(const Type *, 3);
  f->arg_types[0] = local;
  f->arg_types[1] = type_tensor(DT_I32, 1, (int64_t[]){1});
  f->nresults = nresults;
  f->result_types = g_new0(const Type *, (gsize)nresults + 1);
  f->body = term_tuple(nresults, results);
  f->spmd = g_new0(SpmdInfo, 1);
  g_autoptr(Diag) err = diag_new(NULL);
  g_assert_true(mesh_parse(mesh_spec, &f->spmd->mesh, err));
  f->spmd->arg_dists = g_new0(Dist, 3);
  f->spmd->arg_dists[0] = split_rows(&f->spmd->mesh, local->rank);
  f->spmd->arg_dists[1] = split_rows(&f->spmd->mesh, 1);
  f->spmd->result_dists = g_new0(Dist, (gsize)nresults + 1);
  for (int i = 0; i < nresults; i++) {
    f->result_types[i] = results[i]->type;
    f->spmd->result_dists[i] =
        split_rows(&f->spmd->mesh, results[i]->type->rank);
  }
  return f;
}

/* Random values that make the order of a sum show: floats of magnitudes
 * 2^-20 to 2^20 with either sign, some -0.0; integers over the whole
 * range of their dtype, so that sums wrap. */
static void fill(Tensor *t, GRand *rng) {
  DType dt = t->type->dtype;
  for (int64_t k = 0; k < type_numel(t->type); k++) {
    if (dtype_is_float(dt)) {
      double v = g_rand_double_range(rng, -1, 1) *
                 ldexp(1.0, g_rand_int_range(rng, -20, 21));
      tensor_set_float(t, k, g_rand_int_range(rng, 0, 16) == 0 ? -0.0 : v);
    } else if (dt == DT_I1) {
      tensor_set_int(t, k, g_rand_int_range(rng, 0, 2));
    } else {
      tensor_set_int(
          t, k, (int64_t)((guint64)g_rand_int(rng) << 32 | g_rand_int(rng)));
    }
  }
}

/* ---------------------------------------------------------- the runtime */

/* Each device's own results, before spmd_run assembles them (which
 * would hide a -0.0: partial sums are added to +0.0). */
typedef struct Capture {
  Compiled *code;     /* NULL: the interpreter */
  GPtrArray **locals; /* per device (its 'id' argument): its results */
} Capture;

static GPtrArray *capture_run(void *data, const Func *f, Tensor *const *inputs,
                              GError **error) {
  Capture *c = data;
  GPtrArray *r =
      c->code ? codegen_run(c->code, inputs) : interp_run(f, inputs, error);
  if (r)
    c->locals[((const int32_t *)inputs[1]->data)[0]] = g_ptr_array_ref(r);
  return r;
}

/* Runs 'f' on 'args' through capture_run: on the simulator's collectives
 * ('threads' FALSE) or the threaded runtime's, interpreted or compiled
 * ('code').  Returns the global results; 'locals' gets each device's. */
static GPtrArray *run_captured(const Func *f, Tensor *const *args,
                               gboolean threads, Compiled *code,
                               GPtrArray **locals) {
  Capture cap = {.code = code, .locals = locals};
  SpmdRuntime rt = {.run = capture_run, .run_data = &cap};
  if (threads) {
    rt.connect = threads_connect;
    rt.disconnect = threads_disconnect;
  }
  g_autoptr(Diag) diag = diag_new(NULL);
  g_autoptr(GError) error = NULL;
  GPtrArray *out = spmd_run(f, args, &rt, diag, &error);
  g_assert_no_error(error);
  if (!out)
    g_error("%s", diag_text(diag));
  return out;
}

/* The results 'a' and 'b' have the same types and bytes. */
static void assert_same_bytes(GPtrArray *a, GPtrArray *b, const char *what,
                              int device) {
  g_assert_cmpuint(a->len, ==, b->len);
  for (guint i = 0; i < a->len; i++) {
    const Tensor *x = g_ptr_array_index(a, i), *y = g_ptr_array_index(b, i);
    g_assert_true(x->type == y->type);
    if (memcmp(x->data, y->data, tensor_type_bytes(x->type)) != 0)
      g_error("%s: result %u of device %d differs from the simulator's", what,
              i, device);
  }
}

/* Runs 'f' on the threads ('code' as capture_run) and checks every
 * device's results and the global ones against the simulator's. */
static void check_against(const Func *f, Tensor *const *args, GPtrArray *want,
                          GPtrArray **want_locals, Compiled *code,
                          const char *what) {
  int n = (int)mesh_devices(&f->spmd->mesh);
  g_autofree GPtrArray **locals = g_new0(GPtrArray *, (gsize)n);
  g_autoptr(GPtrArray) got = run_captured(f, args, TRUE, code, locals);
  assert_same_bytes(want, got, what, -1);
  for (int d = 0; d < n; d++) {
    assert_same_bytes(want_locals[d], locals[d], what, d);
    g_ptr_array_unref(locals[d]);
  }
}

/* Checks program 'f' on a random global input: the threaded runtime
 * (interpreted, and compiled when 'compile') equals the simulator, on
 * every device. */
static void check_program(Func *f, gboolean compile, guint32 seed,
                          const char *what) {
  const Mesh *m = &f->spmd->mesh;
  int n = (int)mesh_devices(m);
  int64_t dims[PARTIR_MAX_RANK];
  const Type *local = f->arg_types[0];
  memcpy(dims, local->dims, sizeof dims);
  dims[0] *= n;
  g_autoptr(Tensor) in =
      tensor_new(type_tensor(local->dtype, local->rank, dims));
  g_autoptr(Tensor) id = tensor_new(type_tensor(DT_I32, 1, (int64_t[]){n}));
  for (int d = 0; d < n; d++)
    ((int32_t *)id->data)[d] = d;
  g_autoptr(GRand) rng = g_rand_new_with_seed(seed);
  fill(in, rng);
  Tensor *args[] = {in, id};
  g_autofree GPtrArray **want_locals = g_new0(GPtrArray *, (gsize)n);
  g_autoptr(GPtrArray) want = run_captured(f, args, FALSE, NULL, want_locals);
  check_against(f, args, want, want_locals, NULL, what);
  if (compile) {
    CodegenOptions o = {.exact = TRUE};
    g_autoptr(Diag) diag = diag_new(NULL);
    g_autoptr(Compiled) c = codegen_compile(NULL, f, &o, diag);
    if (!c)
      g_error("%s: %s", what, diag_text(diag));
    check_against(f, args, want, want_locals, c, what);
    /* and through the public entry, again (the barriers are reused) */
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) code =
        codegen_run_spmd(c, f, args, 0, NULL, diag, &error);
    g_assert_no_error(error);
    assert_same_bytes(want, code, what, -1);
    /* timed: each device runs 3 steps on what it holds, the results the
     * last step's, each step's time measured */
    double seconds[3] = {-1, -1, -1};
    g_autoptr(GPtrArray) timed =
        codegen_run_spmd(c, f, args, 3, seconds, diag, &error);
    g_assert_no_error(error);
    assert_same_bytes(want, timed, what, -1);
    for (int k = 0; k < 3; k++)
      g_assert_cmpfloat(seconds[k], >, 0);
  }
  for (int d = 0; d < n; d++)
    g_ptr_array_unref(want_locals[d]);
}

/* --------------------------------------------------------- the matrix */

/* Whether the test runs under valgrind, where threads run one at a time
 * and a run is a hundred times slower: then the matrix is a sample. */
static gboolean under_valgrind(void) {
  g_autofree char *maps = NULL;
  return g_file_get_contents("/proc/self/maps", &maps, NULL, NULL) &&
         strstr(maps, "vgpreload") != NULL;
}

static const char *const meshes[] = {"a=1", "a=2", "a=4", "a=2,b=2", "a=2,b=3"};
/* the ordered subsets of a mesh's axes */
static const char *const subsets_one[] = {"a", NULL};
static const char *const subsets_two[] = {"a", "b", "a,b", "b,a", NULL};

static const DType dtypes[] = {DT_F32, DT_F64,  DT_BF16, DT_F16,
                               DT_I32, DT_I64,  DT_I16,  DT_I8,
                               DT_UI8, DT_UI16, DT_UI32, DT_I1};

/* The group size of 'axes' on 'm'. */
static int64_t group_size(const Mesh *m, const char *axes) {
  g_auto(GStrv) names = g_strsplit(axes, ",", -1);
  int64_t n = 1;
  for (char **a = names; *a; a++)
    n *= mesh_axis_size(m, *a);
  return n;
}

/* Local operand shapes: a small one, and rows of 'cols' elements whose
 * total straddles THREADS_SPLIT_BYTES for dtype 'dt' (just under, and
 * over with a count the group does not divide).  Dimension 1 is always
 * a multiple of 'n' (for the dims that must split). */
static const Type *shape(DType dt, int which, int64_t n) {
  int64_t elems = (int64_t)(THREADS_SPLIT_BYTES / dtype_storage_bytes(dt));
  int64_t cols = 4 * n, rows;
  switch (which) {
  case 0:
    rows = 3;
    break;
  case 1:
    rows = elems / cols - 1; /* under the threshold */
    break;
  default:
    rows = elems / cols + 7; /* over it, odd */
    break;
  }
  int64_t dims[2] = {rows, cols};
  return type_tensor(dt, 2, dims);
}

/* The collectives of one case: each op over 'axes', on dims 0 and 1
 * where it takes one (dimension 1 split where it must split). */
static void check_case(const char *mesh_spec, const char *axes, DType dt,
                       int which, guint32 seed) {
  Mesh m;
  g_autoptr(Diag) err = diag_new(NULL);
  g_assert_true(mesh_parse(mesh_spec, &m, err));
  int64_t n = group_size(&m, axes);
  const Type *local = shape(dt, which, n);
  const Term *x = term_arg(0, local);
  const Term *terms[] = {
      coll(OP_ALL_REDUCE, x, axes, n, NULL, 0, NULL, 0),
      coll(OP_REDUCE_SCATTER, x, axes, n, "dim", 1, NULL, 0),
      coll(OP_ALL_GATHER, x, axes, n, "dim", 0, NULL, 0),
      coll(OP_ALL_GATHER, x, axes, n, "dim", 1, NULL, 0),
      coll(OP_ALL_TO_ALL, x, axes, n, "split_dim", 1, "concat_dim", 0),
      coll(OP_ALL_TO_ALL, x, axes, n, "split_dim", 1, "concat_dim", 1),
      coll(OP_SHARD, x, axes, n, "dim", 1, NULL, 0),
  };
  for (guint k = 0; k < G_N_ELEMENTS(terms); k++) {
    if (!terms[k]) /* all_reduce of i1 */
      continue;
    /* only all_reduce has a path per size: the others, large, in f32
     * (not under valgrind) */
    if (which > 0 && k > 0 && (dt != DT_F32 || under_valgrind()))
      continue;
    Func *f = spmd_func(mesh_spec, local, 1, &terms[k]);
    g_autofree char *what =
        g_strdup_printf("%s over %s on %s, %s, shape %d", op_name(terms[k]->op),
                        axes, mesh_spec, dtype_name(dt), which);
    check_program(f, FALSE, seed + k, what);
    func_free(f);
  }
}

/* Every mesh, subset, dtype and size, interpreted. */
static void test_matrix(void) {
  if (under_valgrind()) { /* a sample: f32 over 'b,a' of 2x3 */
    check_case("a=2,b=3", "b,a", DT_F32, 0, 1);
    check_case("a=2,b=3", "b,a", DT_F32, 2, 2);
    return;
  }
  guint32 seed = 1;
  for (guint i = 0; i < G_N_ELEMENTS(meshes); i++) {
    gboolean two = strchr(meshes[i], ',') != NULL;
    for (const char *const *axes = two ? subsets_two : subsets_one; *axes;
         axes++)
      for (guint d = 0; d < G_N_ELEMENTS(dtypes); d++)
        for (int which = 0; which < 3; which++)
          check_case(meshes[i], *axes, dtypes[d], which, seed += 16);
  }
}

/* Compiled code calls the buffer entry: a chain of collectives (an
 * all_reduce over the threshold, then smaller ones) on 2x2 and 2x3. */
static void test_compiled(void) {
  const char *const specs[] = {"a=2,b=2", "a=2,b=3"};
  for (guint i = under_valgrind(); i < G_N_ELEMENTS(specs); i++) {
    Mesh m;
    g_autoptr(Diag) err = diag_new(NULL);
    g_assert_true(mesh_parse(specs[i], &m, err));
    int64_t na = m.sizes[0], nb = m.sizes[1];
    for (int d = 0; d < (under_valgrind() ? 1 : 3); d++) {
      const Type *local = shape(dtypes[d], 2, na * nb);
      const Term *x = term_arg(0, local);
      const Term *r = coll(OP_ALL_REDUCE, x, "b,a", na * nb, NULL, 0, NULL, 0);
      const Term *s = coll(OP_REDUCE_SCATTER, r, "a", na, "dim", 1, NULL, 0);
      const Term *g = coll(OP_ALL_GATHER, s, "b", nb, "dim", 0, NULL, 0);
      const Term *t = coll(OP_ALL_TO_ALL, g, "a,b", na * nb, "split_dim", 1,
                           "concat_dim", 0);
      const Term *results[] = {r, t};
      Func *f = spmd_func(specs[i], local, 2, results);
      g_autofree char *what = g_strdup_printf("compiled chain on %s, %s",
                                              specs[i], dtype_name(dtypes[d]));
      check_program(f, TRUE, 1000 + (guint32)d, what);
      func_free(f);
    }
  }
}

/* ------------------------------------------------------------ failures */

/* Runs 'fn(data)' on a thread; fails the test if it has not returned
 * after a minute (a hang), instead of hanging the test run. */
typedef struct Watchdog {
  GMutex lock;
  GCond cond;
  gboolean done;
  GThreadFunc fn;
  gpointer data;
} Watchdog;

static gpointer watched(gpointer p) {
  Watchdog *w = p;
  w->fn(w->data);
  g_mutex_lock(&w->lock);
  w->done = TRUE;
  g_cond_signal(&w->cond);
  g_mutex_unlock(&w->lock);
  return NULL;
}

static void with_watchdog(GThreadFunc fn, gpointer data) {
  Watchdog w = {.fn = fn, .data = data};
  g_mutex_init(&w.lock);
  g_cond_init(&w.cond);
  GThread *t = g_thread_new("watched", watched, &w);
  gint64 until = g_get_monotonic_time() + 120 * G_TIME_SPAN_SECOND;
  g_mutex_lock(&w.lock);
  while (!w.done)
    if (!g_cond_wait_until(&w.cond, &w.lock, until))
      g_error("the collectives hang after a device failed");
  g_mutex_unlock(&w.lock);
  g_thread_join(t);
  g_mutex_clear(&w.lock);
  g_cond_clear(&w.cond);
}

/* Direct use of the Collectives: devices 0..2 of a=4 run three
 * all_reduces (large, so that the split path is in play), device 3 fails
 * before its first.  Every device returns, and each one's 'check' gives
 * device 3's error. */
typedef struct Direct {
  Collectives **devices;
  const Term *t;
  int device;
  GError *error; /* what 'check' said */
} Direct;

static gpointer direct_device(gpointer p) {
  Direct *d = p;
  Collectives *c = d->devices[d->device];
  if (d->device == 3) {
    GError *e = g_error_new(PARTIR_ERROR, PARTIR_ERROR_IO, "device 3 broke");
    c->fail(c, e);
    g_error_free(e);
  } else {
    gsize bytes = tensor_type_bytes(d->t->type);
    g_autofree float *in = g_malloc(bytes), *out = g_malloc(bytes);
    for (gsize k = 0; k < bytes / sizeof *in; k++)
      in[k] = 1.0f;
    for (int i = 0; i < 3; i++) {
      c->collective_into(c, d->t, in, out);
      for (gsize k = 0; k < bytes / sizeof *out; k++)
        g_assert_cmpfloat(out[k], ==, 0.0f); /* never all four arrived */
    }
  }
  g_assert_false(c->check(c, &d->error));
  return NULL;
}

static gpointer direct_run(gpointer data) {
  (void)data;
  Mesh m;
  g_autoptr(Diag) err = diag_new(NULL);
  g_assert_true(mesh_parse("a=4", &m, err));
  const Type *type = shape(DT_F32, 2, 4);
  const Term *t =
      coll(OP_ALL_REDUCE, term_arg(0, type), "a", 4, NULL, 0, NULL, 0);
  int rounds = under_valgrind() ? 2 : 20;
  for (int round = 0; round < rounds; round++) { /* other interleavings */
    Collectives **devices = threads_connect(NULL, &m, 4);
    Direct d[4];
    GThread *threads[4];
    for (int k = 0; k < 4; k++) {
      d[k] = (Direct){.devices = devices, .t = t, .device = k};
      threads[k] = g_thread_new("device", direct_device, &d[k]);
    }
    for (int k = 0; k < 4; k++) {
      g_thread_join(threads[k]);
      g_assert_error(d[k].error, PARTIR_ERROR, PARTIR_ERROR_IO);
      g_assert_cmpstr(d[k].error->message, ==, "device 3 broke");
      g_clear_error(&d[k].error);
    }
    threads_disconnect(NULL, devices);
  }
  return NULL;
}

static void test_fail_direct(void) { with_watchdog(direct_run, NULL); }

/* Through spmd_run: device 'bad' fails before its program runs, or
 * interrupts; the others run two collectives on the interpreter. */
typedef struct Failing {
  Collectives **devices; /* what threads_connect gave */
  int bad;
  gboolean interrupt; /* 'bad' sets partir_interrupt, then runs */
  int fail_at;        /* the step of a timed run 'bad' fails at */
  int calls;          /* 'bad''s runs so far */
} Failing;

static Failing failing;

static Collectives **failing_connect(void *data, const Mesh *mesh,
                                     int ndevices) {
  failing.devices = threads_connect(data, mesh, ndevices);
  return failing.devices;
}

static GPtrArray *failing_device(void *data, const Func *f,
                                 Tensor *const *inputs, GError **error) {
  (void)data;
  if (kernel_comm == failing.devices[failing.bad] &&
      failing.calls++ == failing.fail_at) {
    if (!failing.interrupt) {
      g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_IO,
                  "device %d failed on purpose", failing.bad);
      return NULL;
    }
    partir_interrupt = 1;
  }
  return interp_run(f, inputs, error);
}

static gpointer spmd_failing_run(gpointer data) {
  (void)data;
  const Type *local = shape(DT_F32, 0, 6);
  const Term *x = term_arg(0, local);
  const Term *r = coll(OP_ALL_REDUCE, x, "a,b", 6, NULL, 0, NULL, 0);
  const Term *g = coll(OP_ALL_GATHER, r, "b", 3, "dim", 0, NULL, 0);
  Func *f = spmd_func("a=2,b=3", local, 1, &g);
  int64_t dims[2] = {local->dims[0] * 6, local->dims[1]};
  g_autoptr(Tensor) in = tensor_new(type_tensor(DT_F32, 2, dims));
  g_autoptr(Tensor) id = tensor_new(type_tensor(DT_I32, 1, (int64_t[]){6}));
  SpmdRuntime rt = {.run = failing_device,
                    .connect = failing_connect,
                    .disconnect = threads_disconnect};
  int step = under_valgrind() ? 5 : 1; /* devices 0 and 5 */
  /* then timed runs of 4 steps, 'bad' failing at its third: the others
   * are in a collective or at the barrier between steps */
  for (int round = 0; round < 24; round += step) {
    failing.bad = round % 6;
    failing.interrupt = round % 12 >= 6;
    failing.calls = 0;
    failing.fail_at = round >= 12 ? 2 : 0;
    rt.steps = round >= 12 ? 4 : 0;
    g_autoptr(Diag) diag = diag_new(NULL);
    g_autoptr(GError) error = NULL;
    GPtrArray *out = spmd_run(f, (Tensor *[]){in, id}, &rt, diag, &error);
    partir_interrupt = 0;
    g_assert_null(out);
    g_assert_false(diag_any(diag));
    if (failing.interrupt) {
      g_assert_error(error, PARTIR_ERROR, PARTIR_ERROR_INTERRUPTED);
      g_assert_cmpstr(error->message, ==, "interrupted");
    } else {
      g_autofree char *want =
          g_strdup_printf("device %d failed on purpose", failing.bad);
      g_assert_error(error, PARTIR_ERROR, PARTIR_ERROR_IO);
      g_assert_cmpstr(error->message, ==, want);
    }
  }
  func_free(f);
  return NULL;
}

static void test_fail_spmd(void) { with_watchdog(spmd_failing_run, NULL); }

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/threads/matrix", test_matrix);
  g_test_add_func("/threads/compiled", test_compiled);
  g_test_add_func("/threads/fail-direct", test_fail_direct);
  g_test_add_func("/threads/fail-spmd", test_fail_spmd);
  return g_test_run();
}
