/* bench-codegen.c — compiled execution timed (issue 13, Performance 2 to 6).
 *
 *   bench-codegen [--runs N] [--seed N] [--mesh MESH [--scaling]]
 *                 [--save DIR] [--memcpy] [--compile-only] PROGRAM.pir
 *
 * Parses the program, compiles it with codegen_compile (default options:
 * fast arithmetic, the generated matmul), makes its arguments with
 * interp_random_input (the seeds 'partir exec --seed' uses) and times
 * what it is asked for, each after one untimed round (the warm-up) and
 * then N rounds (default 5), printing one line per measure:
 *
 *   NAME MEDIAN_MS MIN_MS
 *
 *   compile  codegen_compile of the program (after one untimed compile:
 *            LLVM fills its own tables on the first);
 *   run      codegen_run on one device (the calling thread), or with
 *            --mesh codegen_run_spmd of the program lowered on MESH
 *            (pipeline_lower, as 'partir exec --mesh' does: a thread per
 *            device, global inputs scattered and results gathered);
 *   one      (--scaling) the same program compiled for one device (its
 *            tiles and sums as loops), on the calling thread;
 *   pair     (--scaling) two copies of that one-device program, each
 *            compiled apart and on its own arguments, at once on two
 *            threads: the wall time until both finish.  Against 'one' it
 *            is the scaling the machine itself allows two threads (on
 *            some VMs two threads get little more memory bandwidth or FMA
 *            throughput than one).  'run', 'one' and 'pair' take turns
 *            within each round, so that a machine shared with other work
 *            disturbs the three alike;
 *   memcpy   (--memcpy) memcpy of as many bytes as the first argument
 *            holds, between two buffers written beforehand: the
 *            bandwidth a memory-bound kernel is set against.
 *
 * compile, run and memcpy are followed by 'NAME_cpu MEDIAN_MS MIN_MS',
 * the process's CPU time per run (which a machine shared with other work
 * disturbs far less than the wall time), and 'NAME_load R', all CPU time
 * over all wall time: about 1 for one thread left alone, less when the
 * machine gave the CPU to others.  'bytes B' is the first argument's
 * size.  With
 * --save DIR the arguments are written as DIR/argI.npy and the results
 * of the last run as DIR/resI.npy, for tests/bench/codegen_peers.py to
 * compute the same function with NumPy and JAX and compare.  Times are
 * wall clock (CLOCK_MONOTONIC, as the peers' time.perf_counter); nothing
 * here fails on timing (tests/bench/README).  Exit status: 0, or 1 when
 * the program cannot be read, lowered, compiled or run, 2 for a usage
 * error.
 */
#include "bench-stats.h"
#include "codegen/codegen.h"
#include "pipeline.h"

#include <stdlib.h>
#include <string.h>

typedef struct Options {
  int runs;
  gint64 seed;
  char *mesh;       /* lower on this mesh and run a thread per device */
  char *save;       /* write the arguments and results as .npy here */
  gboolean scaling; /* also one device and two copies, taking turns */
  gboolean copy;    /* also memcpy of the first argument's bytes */
  gboolean compile_only;
  char **files; /* exactly one program */
} Options;

/* What is timed: the program and, with --mesh, its lowering. */
typedef struct Bench {
  const Options *o;
  Module *m;
  RuleSet *rs;         /* with --mesh */
  Lowered lowered;     /* with --mesh */
  const Func *global;  /* the function whose arguments are made */
  const Func *device;  /* what is compiled: 'global' or its SPMD program */
  const Func *alone;   /* the program itself, for one device */
  const Module *names; /* the names 'device' is compiled with */
} Bench;

/* ------------------------------------------------------------- timing */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Prints 'name', the median and the minimum of t[0..n) (sorts t). */
static void report(const char *name, double *t, int n) {
  double median = bench_median(t, n);
  printf("%s %.4f %.4f\n", name, median, t[0]);
  fflush(stdout);
}

/* The wall and CPU times of N timed runs (the untimed one is run -1). */
typedef struct Samples {
  int n;
  double *wall, *cpu; /* ms per run */
  double wall0, cpu0; /* when the current run started */
} Samples;

static Samples *samples_new(int n) {
  Samples *s = g_new0(Samples, 1);
  s->n = n;
  s->wall = g_new0(double, (gsize)n);
  s->cpu = g_new0(double, (gsize)n);
  return s;
}

static void samples_free(Samples *s) {
  g_free(s->wall);
  g_free(s->cpu);
  g_free(s);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Samples, samples_free)

static void samples_start(Samples *s) {
  s->cpu0 = bench_cpu_ms(CLOCK_PROCESS_CPUTIME_ID);
  s->wall0 = now_ms();
}

/* Ends run 'r' (nothing is kept of run -1, the warm-up). */
static void samples_stop(Samples *s, int r) {
  double wall = now_ms(), cpu = bench_cpu_ms(CLOCK_PROCESS_CPUTIME_ID);
  if (r < 0)
    return;
  s->wall[r] = wall - s->wall0;
  s->cpu[r] = cpu - s->cpu0;
}

/* Prints 'name' (wall ms), 'name_cpu' (the process's CPU ms per run) and
 * 'name_load', all CPU time over all wall time: about 1 when one thread
 * worked undisturbed, less when the machine gave its CPU to others. */
static void samples_report(const char *name, Samples *s) {
  double wall = 0, cpu = 0;
  for (int r = 0; r < s->n; r++) {
    wall += s->wall[r];
    cpu += s->cpu[r];
  }
  report(name, s->wall, s->n);
  g_autofree char *cpu_name = g_strconcat(name, "_cpu", NULL);
  report(cpu_name, s->cpu, s->n);
  printf("%s_load %.2f\n", name, wall > 0 ? cpu / wall : 0);
}

/* ---------------------------------------------------------- arguments */

/* The seeded arguments of 'f' (a NULL-ended array the caller frees with
 * free_args). */
static Tensor **make_args(const Func *f, gint64 seed) {
  Tensor **args = g_new0(Tensor *, (gsize)f->nargs + 1);
  for (int i = 0; i < f->nargs; i++)
    args[i] = interp_random_input(f, i, seed);
  return args;
}

static void free_args(Tensor **args) {
  for (Tensor **a = args; a && *a; a++)
    tensor_unref(*a);
  g_free(args);
}

/* Writes 't' as DIR/PREFIXI.npy; FALSE with a message when it cannot. */
static gboolean save_npy(const char *dir, const char *prefix, int i,
                         const Tensor *t) {
  g_autofree char *name = g_strdup_printf("%s%d.npy", prefix, i);
  g_autofree char *path = g_build_filename(dir, name, NULL);
  g_autoptr(GBytes) bytes = npy_encode(t);
  gsize len = 0;
  const char *data = g_bytes_get_data(bytes, &len);
  GError *error = NULL;
  if (!g_file_set_contents(path, data, (gssize)len, &error)) {
    g_printerr("bench-codegen: %s\n", error->message);
    g_error_free(error);
    return FALSE;
  }
  return TRUE;
}

static gboolean save_all(const char *dir, const char *prefix, Tensor **ts,
                         int n) {
  if (g_mkdir_with_parents(dir, 0755) != 0) {
    g_printerr("bench-codegen: cannot make %s\n", dir);
    return FALSE;
  }
  for (int i = 0; i < n; i++)
    if (!save_npy(dir, prefix, i, ts[i]))
      return FALSE;
  return TRUE;
}

/* ------------------------------------------------------------ loading */

/* Parses the program and, with --mesh, lowers it; FALSE after saying
 * why. */
static gboolean load(Bench *b, const char *path) {
  g_autoptr(Diag) diags = diag_new(NULL);
  GError *error = NULL;
  b->m = pipeline_load_program(path, diags, &error);
  if (!b->m) {
    /* both name the file */
    g_printerr("bench-codegen: %s\n",
               error ? error->message : diag_text(diags));
    g_clear_error(&error);
    return FALSE;
  }
  b->global = b->device = b->alone = module_entry(b->m);
  b->names = b->m;
  if (!b->global) {
    g_printerr("bench-codegen: %s: no entry function\n", path);
    return FALSE;
  }
  if (!b->o->mesh)
    return TRUE;
  Mesh mesh;
  if (!mesh_parse(b->o->mesh, &mesh, diags)) {
    g_printerr("bench-codegen: --mesh %s: %s\n", b->o->mesh, diag_text(diags));
    return FALSE;
  }
  b->rs = pipeline_load_rules(NULL, NULL, diags);
  if (!b->rs) {
    g_printerr("bench-codegen: loading the rules ($PARTIR_RULES):\n%s",
               diag_text(diags));
    return FALSE;
  }
  if (!pipeline_lower(b->rs, b->m, b->global, &mesh, &b->lowered, diags)) {
    g_printerr("bench-codegen: %s: cannot lower on %s: %s\n", path, b->o->mesh,
               diag_text(diags));
    return FALSE;
  }
  b->global = b->lowered.global;
  b->device = b->lowered.spmd;
  b->names = b->lowered.names;
  return TRUE;
}

/* 'f' compiled, or NULL after saying why. */
static Compiled *compile(const Bench *b, const Func *f) {
  g_autoptr(Diag) why = diag_new(NULL);
  Compiled *c = codegen_compile(f == b->device ? b->names : b->m, f, NULL, why);
  if (!c)
    g_printerr("bench-codegen: %s: cannot compile: %s\n", b->o->files[0],
               diag_text(why));
  return c;
}

/* ----------------------------------------------------------- measures */

/* Times codegen_compile; FALSE when it fails. */
static gboolean time_compile(const Bench *b) {
  g_autoptr(Samples) s = samples_new(b->o->runs);
  for (int r = -1; r < b->o->runs; r++) {
    samples_start(s);
    Compiled *c = compile(b, b->device);
    if (!c)
      return FALSE;
    samples_stop(s, r);
    codegen_free(c);
  }
  samples_report("compile", s);
  return TRUE;
}

/* One run of 'c' on 'args', on one device or on a thread per device;
 * its results, or NULL after saying why. */
static GPtrArray *run_once(const Bench *b, Compiled *c, Tensor **args) {
  if (!b->device->spmd)
    return codegen_run(c, args);
  g_autoptr(Diag) diag = diag_new(NULL);
  GError *error = NULL;
  GPtrArray *out = codegen_run_spmd(c, b->device, args, 0, NULL, diag, &error);
  if (!out) {
    g_printerr("bench-codegen: %s: %s\n", b->o->files[0],
               error ? error->message : diag_text(diag));
    g_clear_error(&error);
  }
  return out;
}

/* Times runs of 'c'; the last run's results (saved with --save), or
 * NULL when a run fails. */
static GPtrArray *time_run(const Bench *b, Compiled *c, Tensor **args) {
  g_autoptr(Samples) s = samples_new(b->o->runs);
  GPtrArray *out = NULL;
  for (int r = -1; r < b->o->runs; r++) {
    if (out)
      g_ptr_array_unref(out);
    samples_start(s);
    out = run_once(b, c, args);
    if (!out)
      return NULL;
    samples_stop(s, r);
  }
  samples_report("run", s);
  return out;
}

/* A copy of the one-device program with its own arguments. */
typedef struct Copy {
  Compiled *code;
  Tensor **args;
} Copy;

static gpointer run_copy(gpointer data) {
  Copy *copy = data;
  g_ptr_array_unref(codegen_run(copy->code, copy->args));
  return NULL;
}

/* The wall time of both copies run at once, a thread each. */
static double pair_ms(Copy *copies) {
  double start = now_ms();
  GThread *th[2];
  for (int i = 0; i < 2; i++)
    th[i] = g_thread_new("bench-copy", run_copy, &copies[i]);
  for (int i = 0; i < 2; i++)
    g_thread_join(th[i]);
  return now_ms() - start;
}

/* --scaling: in each round the SPMD program ('c' on 'args'), the
 * program on one device, and two copies of it at once, in turn. */
static gboolean time_scaling(const Bench *b, Compiled *c, Tensor **args) {
  int n = b->o->runs;
  g_autofree double *spmd = g_new0(double, (gsize)n);
  g_autofree double *one = g_new0(double, (gsize)n);
  g_autofree double *two = g_new0(double, (gsize)n);
  Copy copies[2] = {{0}};
  gboolean ok = TRUE;
  for (int i = 0; i < 2 && ok; i++) {
    copies[i].code = compile(b, b->alone);
    copies[i].args = make_args(b->alone, b->o->seed);
    ok = copies[i].code != NULL;
  }
  for (int r = -1; r < n && ok; r++) {
    double start = now_ms();
    GPtrArray *out = run_once(b, c, args);
    double mid = now_ms();
    ok = out != NULL;
    if (out)
      g_ptr_array_unref(out);
    run_copy(&copies[0]);
    double end = now_ms();
    double both = pair_ms(copies);
    if (r >= 0) {
      spmd[r] = mid - start;
      one[r] = end - mid;
      two[r] = both;
    }
  }
  for (int i = 0; i < 2; i++) {
    if (copies[i].code)
      codegen_free(copies[i].code);
    free_args(copies[i].args);
  }
  if (ok) {
    report("spmd", spmd, n);
    report("one", one, n);
    report("pair", two, n);
  }
  return ok;
}

/* Times memcpy of 'bytes' between two buffers written beforehand, so
 * that page faults are not counted. */
static void time_memcpy(const Bench *b, gsize bytes) {
  g_autoptr(Samples) s = samples_new(b->o->runs);
  char *src = g_malloc(bytes), *dst = g_malloc(bytes);
  for (gsize i = 0; i < bytes; i++)
    src[i] = (char)i;
  memset(dst, 0, bytes);
  for (int r = -1; r < b->o->runs; r++) {
    samples_start(s);
    memcpy(dst, src, bytes);
    samples_stop(s, r);
    gsize at = (gsize)(r + 1);
    src[at % bytes] ^= dst[at * 7 % bytes]; /* the copy is used */
  }
  g_free(src);
  g_free(dst);
  samples_report("memcpy", s);
}

/* --------------------------------------------------------------- main */

static gboolean measure(Bench *b) {
  const Options *o = b->o;
  if (!time_compile(b))
    return FALSE;
  if (b->global->nargs > 0)
    printf("bytes %" G_GUINT64_FORMAT "\n",
           tensor_type_bytes(b->global->arg_types[0]));
  if (o->compile_only)
    return TRUE;
  Tensor **args = make_args(b->global, o->seed);
  Compiled *c = compile(b, b->device);
  GPtrArray *out = c ? time_run(b, c, args) : NULL;
  gboolean ok = out != NULL;
  if (ok && o->save)
    ok = save_all(o->save, "arg", args, b->global->nargs) &&
         save_all(o->save, "res", (Tensor **)out->pdata, (int)out->len);
  if (out)
    g_ptr_array_unref(out);
  if (ok && o->scaling)
    ok = time_scaling(b, c, args);
  if (c)
    codegen_free(c);
  free_args(args);
  if (ok && o->copy && b->global->nargs > 0 &&
      tensor_type_bytes(b->global->arg_types[0]) > 0)
    time_memcpy(b, tensor_type_bytes(b->global->arg_types[0]));
  return ok;
}

static int bench_main(void *data) {
  Bench b = {.o = data};
  gboolean ok = load(&b, b.o->files[0]) && measure(&b);
  pipeline_lowered_clear(&b.lowered);
  if (b.rs)
    ruleset_free(b.rs);
  if (b.m)
    module_free(b.m);
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  Options o = {.runs = 5};
  GOptionEntry entries[] = {
      {"runs", 'n', 0, G_OPTION_ARG_INT, &o.runs,
       "timed runs after the warm-up (default 5)", "N"},
      {"seed", 's', 0, G_OPTION_ARG_INT64, &o.seed,
       "seed of the random arguments (default 0)", "N"},
      {"mesh", 'm', 0, G_OPTION_ARG_STRING, &o.mesh,
       "lower on this mesh and run a thread per device", "MESH"},
      {"save", 0, 0, G_OPTION_ARG_FILENAME, &o.save,
       "write the arguments and results as DIR/argI.npy, DIR/resI.npy", "DIR"},
      {"scaling", 0, 0, G_OPTION_ARG_NONE, &o.scaling,
       "with --mesh, also the program on one device and two copies of it "
       "at once, in turn",
       NULL},
      {"memcpy", 0, 0, G_OPTION_ARG_NONE, &o.copy,
       "also time memcpy of the first argument's bytes", NULL},
      {"compile-only", 0, 0, G_OPTION_ARG_NONE, &o.compile_only,
       "time the compile alone", NULL},
      {G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o.files, NULL,
       NULL},
      {NULL}};
  GOptionContext *ctx = g_option_context_new("PROGRAM.pir");
  g_option_context_set_summary(
      ctx, "Times the compile and the compiled runs of a program "
           "(tests/bench/README); prints NAME MEDIAN_MS MIN_MS lines.");
  g_option_context_add_main_entries(ctx, entries, NULL);
  GError *error = NULL;
  gboolean parsed = g_option_context_parse(ctx, &argc, &argv, &error);
  g_option_context_free(ctx);
  int status = 2;
  if (!parsed) {
    g_printerr("bench-codegen: %s\n", error->message);
    g_error_free(error);
  } else if (o.runs < 1) {
    g_printerr("bench-codegen: --runs must be at least 1\n");
  } else if (!o.files || g_strv_length(o.files) != 1) {
    g_printerr("bench-codegen: needs exactly one program (see --help)\n");
  } else if (o.scaling && !o.mesh) {
    g_printerr("bench-codegen: --scaling compares a --mesh with one "
               "device: give the mesh\n");
  } else {
    status = partir_call_with_stack(bench_main, &o);
  }
  g_free(o.mesh);
  g_free(o.save);
  g_strfreev(o.files);
  return status;
}
