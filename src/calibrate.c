/* calibrate.c — the figures of a hardware description, measured on this
 * machine by running compiled programs (partir calibrate).
 *
 * Each figure comes from a program that one figure dominates, compiled
 * (stage 6) and timed (stage 7) on 'devices' threads at once, every
 * device running the same program: a device's share of the machine
 * when all of them work, which is what a step of an SPMD program gets
 * (on these VMs two threads may give little more than one).  The figure
 * is then solved from the cost model itself: the model's time for the
 * program is a + b / F for a throughput F (FLOP/s, bytes/s) and a + b F
 * for an overhead F (seconds), with a and b read off the model with F
 * at its limits, so the model, priced with the figure, predicts the
 * time measured for the program it came from.  In order, each solved
 * with the ones before it in place:
 *
 *   step_overhead            a step that computes one number: the
 *                            devices started and waited for (first:
 *                            every later probe's step pays it once, and
 *                            the one-number all_reduce that gives
 *                            link_latency would count it per ring step)
 *   mem_bw                   an elementwise chain over 64 MiB
 *   cache_bw                 the same chain over a quarter of cache_bytes
 *                            (a core's L2, read from the C library: the
 *                            cache each device's thread has to itself),
 *                            repeated steps finding it there
 *   peak_flops_f32/f64/bf16  a 1024^3 matrix product in the dtype
 *   product_overhead         64 matrix products of 8 x 8 x 8 (a batched
 *                            dot_general)
 *   kernel_overhead          16 blocks of a small product and a softmax,
 *                            each block of its own widths: 80 kernels
 *                            of four kinds, each its own code
 *   link_latency             an all_reduce of one number over the devices
 *   link_bw                  an all_reduce of 64 MiB over the devices (1 GiB
 *                            over all of them at most)
 *
 * One device has no links to measure: a shared-memory collective is a
 * copy, so link_bw is half of mem_bw (read and write) and link_latency
 * the kernel overhead.  memory_bytes is the physical memory shared by
 * the devices, and gemm_mr and gemm_nr the generated matrix kernel's
 * register block for f32 (codegen_gemm_block), set first: the matmul
 * that gives the peak is priced in whole blocks too.
 */
#include "pipeline.h"

#include <math.h>
#include <stddef.h>
#include <unistd.h>

/* The probes of one pass, at most. */
#define MAX_PROBES 16

typedef struct Calibration {
  const RuleSet *rules;
  const CalibrateOptions *o;
  Mesh mesh; /* d=N, or no axes for one device */
  Hardware hw;
  GString *log;
  double seconds[MAX_PROBES]; /* each probe's median step, in order */
  int nprobes;
} Calibration;

/* One measured program: its compiled code and its median step time. */
typedef struct Probe {
  Module *m;
  Executable e;
  double seconds; /* the median step */
  int runs;       /* of so many */
} Probe;

static void probe_clear(Probe *p) {
  pipeline_executable_clear(&p->e);
  if (p->m)
    module_free(p->m);
  *p = (Probe){0};
}

/* Compiles program 'text' for the calibration's devices and times it. */
static gboolean probe_run(Calibration *c, const char *text, Probe *p,
                          Diag *why) {
  *p = (Probe){0};
  g_autoptr(Diag) parse = diag_new(NULL);
  p->m = pipeline_read_program("calibrate.pir", text, strlen(text), parse);
  if (!p->m) { /* the programs are ours: a bug, said plainly */
    diag_reason(why, "a calibration program does not parse: %s",
                diag_text(parse));
    return FALSE;
  }
  const Func *g = module_entry(p->m);
  CodegenOptions fast = {0};
  if (!pipeline_compile(c->rules, p->m, g, &c->mesh, &fast, &p->e, why)) {
    probe_clear(p);
    return FALSE;
  }
  g_autoptr(GPtrArray) inputs = pipeline_random_inputs(g, 1);
  StepTime t;
  GError *error = NULL;
  gboolean ok = pipeline_time(&p->e, (Tensor *const *)inputs->pdata, c->o->runs,
                              &t, why, &error);
  /* again, with as many steps as fill about 0.2 s (at most 2000): a few
   * steps of microseconds are mostly the first ones' page faults and the
   * threads' start, and a shared machine's moments come and go */
  int more = ok ? (int)MIN(2000.0, 0.2 / MAX(t.median, 1e-7)) : 0;
  if (more > c->o->runs)
    ok = pipeline_time(&p->e, (Tensor *const *)inputs->pdata, more, &t, why,
                       &error);
  if (!ok) {
    if (error)
      diag_reason(why, "%s", error->message);
    g_clear_error(&error);
    probe_clear(p);
    return FALSE;
  }
  p->seconds = t.median;
  p->runs = t.runs;
  return TRUE;
}

/* The cost model's time for the probe's program with figure 'field' of
 * the calibration's hardware set to 'x'. */
static double model_time(const Calibration *c, const Probe *p, size_t field,
                         double x) {
  Hardware hw = c->hw;
  *(double *)((char *)&hw + field) = x;
  g_auto(CostReport) r = {0};
  g_autoptr(Diag) diag = diag_new(NULL);
  gboolean ok = cost_estimate(NULL, p->e.device, &hw, &r, diag);
  g_assert(ok); /* a program that compiled is one the model prices */
  return r.total_time;
}

/* Three significant digits: a figure measured on a noisy machine. */
static double rounded(double x) {
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  return g_ascii_strtod(g_ascii_formatd(buf, sizeof buf, "%.3g", x), NULL);
}

/* The figure the model needs to predict 'seconds' for probe 'p'
 * ('throughput': the model's time is a + b / F; else a + b F); 0 when
 * none does (for a throughput, a program no slower than the model
 * without it). */
static double solved(const Calibration *c, const Probe *p, size_t field,
                     gboolean throughput, double seconds, double *a_out) {
  double a, b;
  if (throughput) {
    a = model_time(c, p, field, HUGE_VAL);
    b = model_time(c, p, field, 1.0) - a;
    *a_out = a;
    return seconds > a && b > 0 ? b / (seconds - a) : 0;
  }
  a = model_time(c, p, field, 0.0);
  b = model_time(c, p, field, 1.0) - a;
  *a_out = a;
  return b > 0 ? MAX(seconds - a, 0) / b : 0;
}

/* Measures program 'text' and solves figure 'field' ('throughput': the
 * model's time is a + b / F; else a + b F) from its time; says so in
 * the log, 'what' describing the program.  A throughput that cannot be
 * solved (the program ran no slower than the model without it) is
 * measured once more before the calibration fails: a shared machine's
 * busy moment spoils one measurement, rarely two. */
static gboolean solve(Calibration *c, const char *key, size_t field,
                      gboolean throughput, const char *what, const char *text,
                      Diag *why) {
  Probe p = {0};
  double x = 0, a = 0, seconds = 0;
  for (int attempt = 0; attempt < 2 && !(x > 0 && isfinite(x)); attempt++) {
    probe_clear(&p);
    if (!probe_run(c, text, &p, why))
      return FALSE;
    seconds = p.seconds;
    x = solved(c, &p, field, throughput, seconds, &a);
    if (!throughput)
      break; /* an overhead of 0 is an answer */
  }
  if (throughput && !(x > 0 && isfinite(x))) {
    diag_reason(why,
                "%s: %s ran in %.3g s, no slower than the model's %.3g s "
                "without it, twice: nothing to solve for",
                key, what, seconds, a);
    probe_clear(&p);
    return FALSE;
  }
  x = rounded(x);
  *(double *)((char *)&c->hw + field) = x;
  g_assert(c->nprobes < MAX_PROBES);
  c->seconds[c->nprobes++] = p.seconds;
  g_string_append_printf(c->log, "# %s: %s: %.4g ms a step (median of %d)", key,
                         what, p.seconds * 1e3, p.runs);
  g_string_append_printf(c->log, " -> %.3g\n", x);
  probe_clear(&p);
  return TRUE;
}

/* ------------------------------------------------------------ programs */

static char *matmul_program(const char *dtype, int n) {
  return g_strdup_printf(
      "func @peak(%%a: tensor<%dx%dx%s>, %%b: tensor<%dx%dx%s>)"
      " -> tensor<%dx%dx%s> {\n"
      "  %%0 = matmul(%%a, %%b)\n"
      "  return %%0\n}\n",
      n, n, dtype, n, n, dtype, n, n, dtype);
}

/* One kernel over 'rows' rows of 1024 f32 (4 KiB each): x * x +
 * x, then relu. */
static char *stream_program(int64_t rows) {
  g_autofree char *t =
      g_strdup_printf("tensor<%" G_GINT64_FORMAT "x1024xf32>", rows);
  return g_strdup_printf("func @stream(%%x: %s) -> %s {\n"
                         "  %%0 = mul(%%x, %%x)\n"
                         "  %%1 = add(%%0, %%x)\n"
                         "  %%2 = relu(%%1)\n"
                         "  return %%2\n}\n",
                         t, t);
}

/* The cache a device's thread has to itself: a core's L2, as the C
 * library reads it from the CPU (0 where it does not say). */
static double own_cache_bytes(void) {
#ifdef _SC_LEVEL2_CACHE_SIZE
  long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return l2 > 0 ? (double)l2 : 0;
#else
  return 0;
#endif
}

/* One number computed on every device: a step with no work in it. */
static const char step_program[] = "func @step(%x: tensor<1xf32>) -> "
                                   "tensor<1xf32> {\n"
                                   "  %0 = relu(%x)\n"
                                   "  return %0\n}\n";

/* 'n' softmax blocks in a row over 8 rows, block i a matrix product by
 * a weight of its own (8 x w(i-1) by w(i-1) x w(i), w(i) = 32 + 4i) and
 * a softmax of the product's rows: five kernels of four kinds (product,
 * two reductions, two elementwise), each its own code, as a model's many
 * small kernels of many shapes are.  The data stays in the cache and the
 * FLOPs are few: what is left is the kernels' fixed cost in a program of
 * many different ones (their code fetched, their loops and register
 * blocks set up for small sizes), which one kernel repeated, or blocks
 * of one shape (whose kernels are compiled once), do not show: blocks
 * of one shape gave 0.12 to 0.17 us a kernel on an EPYC (Zen 4) guest,
 * and the transformers of examples/models at their default widths were
 * predicted at 0.58 to 0.72 of their step; blocks of their own shapes
 * give 0.25 to 0.40 us, and 0.95 to 1.1 (docs/cost.md). */
static int64_t overhead_width(int i) { return 32 + 4 * (int64_t)i; }

static char *overhead_program(int n) {
  GString *s = g_string_new(NULL);
  g_string_append_printf(
      s, "func @overhead(%%x: tensor<8x%" G_GINT64_FORMAT "xf32>",
      overhead_width(0));
  for (int i = 1; i <= n; i++)
    g_string_append_printf(
        s, ", %%w%d: tensor<%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "xf32>", i,
        overhead_width(i - 1), overhead_width(i));
  g_string_append_printf(s,
                         ") -> tensor<8x%" G_GINT64_FORMAT "xf32> {\n"
                         "  %%h0 = relu(%%x)\n",
                         overhead_width(n));
  for (int i = 1; i <= n; i++) {
    int64_t w = overhead_width(i);
    g_string_append_printf(s,
                           "  %%p%d = matmul(%%h%d, %%w%d)\n"
                           "  %%m%d = reduce_max(%%p%d) {dims = [1]}\n"
                           "  %%mb%d = broadcast_in_dim(%%m%d) {dims = [0]} : "
                           "tensor<8x%" G_GINT64_FORMAT "xf32>\n"
                           "  %%d%d = sub(%%p%d, %%mb%d)\n"
                           "  %%e%d = exp(%%d%d)\n"
                           "  %%s%d = reduce_sum(%%e%d) {dims = [1]}\n"
                           "  %%sb%d = broadcast_in_dim(%%s%d) {dims = [0]} : "
                           "tensor<8x%" G_GINT64_FORMAT "xf32>\n"
                           "  %%h%d = div(%%e%d, %%sb%d)\n",
                           i, i - 1, i, i, i, i, i, w, i, i, i, i, i, i, i, i,
                           i, w, i, i, i);
  }
  g_string_append_printf(s, "  return %%h%d\n}\n", n);
  return g_string_free(s, FALSE);
}

/* 'n' matrix products of 8 x 8 x 8, one dot_general batched over n: the
 * products' fixed cost, their FLOPs a few register blocks. */
static char *products_program(int n) {
  return g_strdup_printf(
      "func @products(%%a: tensor<%dx8x8xf32>, %%b: tensor<%dx8x8xf32>)"
      " -> tensor<%dx8x8xf32> {\n"
      "  %%0 = dot_general(%%a, %%b) {lhs_batch = [0], lhs_contract = [2],"
      " rhs_batch = [0], rhs_contract = [1]}\n"
      "  return %%0\n}\n",
      n, n, n);
}

/* An all_reduce of 'n' f32 over the devices: each holds a row of x and
 * the rows are summed, with no local work around the collective: its
 * time is the link's alone, not also a copy priced with the figures
 * before it (a reduction of each row did that, and a mem_bw measured in
 * a busy moment then priced the copy above the whole program's time). */
static char *allreduce_program(int devices, int64_t n) {
  return g_strdup_printf(
      "func @allreduce(%%x: tensor<%dx%" G_GINT64_FORMAT "xf32>)"
      " -> tensor<1x%" G_GINT64_FORMAT "xf32> {\n"
      "  %%0 = partir.sum (%%r : !partir.range<%d,1> @\"d\") {\n"
      "    %%1 = partir.slice 0 %%x[%%r]\n"
      "    partir.yield %%1\n"
      "  }\n"
      "  return %%0\n}\n",
      devices, n, n, devices);
}

/* --------------------------------------------------------------- main */

static gboolean calibrate(Calibration *c, Diag *why) {
  static const struct {
    const char *key, *dtype;
    size_t field;
  } peaks[] = {
      {"peak_flops_f32", "f32", offsetof(Hardware, peak_flops_f32)},
      {"peak_flops_f64", "f64", offsetof(Hardware, peak_flops_f64)},
      {"peak_flops_bf16", "bf16", offsetof(Hardware, peak_flops_bf16)},
  };
  int n = c->o->devices;
  g_autofree char *devices =
      g_strdup_printf("%d device%s at once", n, n == 1 ? "" : "s");
  int mr, nr;
  codegen_gemm_block(DT_F32, &mr, &nr);
  c->hw.gemm_mr = mr;
  c->hw.gemm_nr = nr;
  g_string_append_printf(c->log,
                         "# gemm_mr: the generated matrix kernel's register "
                         "block for f32, rows -> %d\n"
                         "# gemm_nr: its columns -> %d\n",
                         mr, nr);
  g_autofree char *step_what = g_strdup_printf("relu of one f32, %s", devices);
  if (!solve(c, "step_overhead", offsetof(Hardware, step_overhead), FALSE,
             step_what, step_program, why))
    return FALSE;
  g_autofree char *stream = stream_program(16384);
  g_autofree char *stream_what =
      g_strdup_printf("relu(x * x + x) over 64 MiB of f32, %s", devices);
  if (!solve(c, "mem_bw", offsetof(Hardware, mem_bw), TRUE, stream_what, stream,
             why))
    return FALSE;
  /* x and the result, half of the cache: 1 KiB rows of f32 */
  int64_t rows = (int64_t)(own_cache_bytes() / 4 / 4096);
  if (rows > 0) {
    c->hw.cache_bytes = (double)rows * 4096 * 4;
    g_string_append_printf(c->log,
                           "# cache_bytes: a core's L2 (sysconf), in whole "
                           "rows of the next program's -> %.0f\n",
                           c->hw.cache_bytes);
    g_autofree char *cached = stream_program(rows);
    g_autofree char *cached_what = g_strdup_printf(
        "relu(x * x + x) over %" G_GINT64_FORMAT " KiB of f32, %s", rows * 4,
        devices);
    if (!solve(c, "cache_bw", offsetof(Hardware, cache_bw), TRUE, cached_what,
               cached, why))
      return FALSE;
  } else {
    g_string_append(c->log,
                    "# cache_bytes: the C library does not say how large a "
                    "core's L2 is -> 0\n"
                    "# cache_bw: no cache to measure -> 0\n");
  }
  /* the matmuls' packing passes are priced at mem_bw: it comes first */
  for (gsize i = 0; i < G_N_ELEMENTS(peaks); i++) {
    g_autofree char *text = matmul_program(peaks[i].dtype, 1024);
    g_autofree char *what = g_strdup_printf("matmul 1024x1024x1024 %s, %s",
                                            peaks[i].dtype, devices);
    if (!solve(c, peaks[i].key, peaks[i].field, TRUE, what, text, why))
      return FALSE;
  }
  g_autofree char *products = products_program(64);
  g_autofree char *products_what =
      g_strdup_printf("64 matrix products of 8x8x8 f32, %s", devices);
  if (!solve(c, "product_overhead", offsetof(Hardware, product_overhead), FALSE,
             products_what, products, why))
    return FALSE;
  /* after product_overhead: the blocks' products are priced with it */
  g_autofree char *chain = overhead_program(16);
  g_autofree char *chain_what = g_strdup_printf(
      "16 blocks of a product (8 x 32+4i x 36+4i) and a softmax, 80 "
      "kernels of their own shapes, %s",
      devices);
  if (!solve(c, "kernel_overhead", offsetof(Hardware, kernel_overhead), FALSE,
             chain_what, chain, why))
    return FALSE;
  if (n == 1) {
    c->hw.link_bw = rounded(c->hw.mem_bw / 2);
    c->hw.link_latency = c->hw.kernel_overhead;
    g_string_append(c->log, "# link_bw, link_latency: one device has no "
                            "links: half of mem_bw, the kernel overhead\n");
    return TRUE;
  }
  g_autofree char *small = allreduce_program(n, 1);
  g_autofree char *small_what =
      g_strdup_printf("all_reduce of one f32 over %d devices", n);
  if (!solve(c, "link_latency", offsetof(Hardware, link_latency), FALSE,
             small_what, small, why))
    return FALSE;
  /* 64 MiB a device, beyond the caches; 1 GiB in all at most (the
   * global argument holds every device's row) */
  int64_t floats = MIN((int64_t)16 << 20, ((int64_t)256 << 20) / n);
  g_autofree char *big = allreduce_program(n, floats);
  g_autofree char *big_what =
      g_strdup_printf("all_reduce of %" G_GINT64_FORMAT " MiB of f32 over %d "
                      "devices",
                      floats >> 18, n);
  return solve(c, "link_bw", offsetof(Hardware, link_bw), TRUE, big_what, big,
               why);
}

/* One pass: every probe once, in order. */
static gboolean calibrate_pass(const RuleSet *rs, const CalibrateOptions *o,
                               Calibration *out, GString *log, Diag *why) {
  Calibration c = {.rules = rs, .o = o, .log = log};
  if (o->devices > 1) {
    g_autofree char *mesh = g_strdup_printf("d=%d", o->devices);
    gboolean ok = mesh_parse(mesh, &c.mesh, why);
    g_assert(ok);
  }
  /* the figures not yet measured take no time */
  c.hw = (Hardware){
      .name = g_intern_string(o->name ? o->name : "calibrated"),
      .peak_flops_f32 = HUGE_VAL,
      .peak_flops_bf16 = HUGE_VAL,
      .peak_flops_f64 = HUGE_VAL,
      .link_bw = HUGE_VAL,
  };
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  c.hw.memory_bytes =
      pages > 0 && page > 0 ? (double)pages * (double)page / o->devices : 1e9;
  if (!calibrate(&c, why))
    return FALSE;
  *out = c;
  return TRUE;
}

/* With several passes, the figures are those of the pass the machine
 * slowed least: each pass's probes timed against the fastest time any
 * pass gave that probe, the pass whose ratios average lowest.  These
 * machines are shared, and a busy spell (a neighbour's job, the host
 * giving two vCPUs one core) only ever makes a probe slower: two
 * devices' matmul ran in 20 ms in one pass and 39 ms in the two around
 * it, whose median then priced every product at half the speed the
 * programs measured after it ran at.  One pass's figures, not each
 * figure's best: each is solved with the ones before it in its own pass
 * (link_latency over that pass's step_overhead). */
gboolean pipeline_calibrate(const RuleSet *rs, const CalibrateOptions *o,
                            Hardware *out, GString *log, Diag *why) {
  int passes = MAX(o->passes, 1);
  if (o->devices < 1 || o->devices > 64 || o->runs < 1 || passes > 99) {
    diag_reason(why, "calibrate: devices must be 1 to 64, runs at least 1 "
                     "and passes 1 to 99");
    return FALSE;
  }
  g_autofree Calibration *all = g_new0(Calibration, (gsize)passes);
  for (int k = 0; k < passes; k++) {
    if (passes > 1)
      g_string_append_printf(log, "# pass %d of %d\n", k + 1, passes);
    if (!calibrate_pass(rs, o, &all[k], log, why))
      return FALSE;
  }
  int n = all[0].nprobes, best = 0;
  double fastest[MAX_PROBES], slowed[99];
  for (int i = 0; i < n; i++) {
    fastest[i] = all[0].seconds[i];
    for (int k = 1; k < passes; k++)
      fastest[i] = MIN(fastest[i], all[k].seconds[i]);
  }
  for (int k = 0; k < passes; k++) {
    g_assert(all[k].nprobes == n); /* the same probes every pass */
    slowed[k] = 0;
    for (int i = 0; i < n; i++)
      slowed[k] +=
          fastest[i] > 0 ? all[k].seconds[i] / fastest[i] / n : 1.0 / n;
    if (slowed[k] < slowed[best])
      best = k;
  }
  if (passes > 1) {
    g_string_append(log, "# each pass's probes against the fastest time of "
                         "each, on average:");
    for (int k = 0; k < passes; k++)
      g_string_append_printf(log, " %.2fx", slowed[k]);
    g_string_append_printf(log,
                           "\n# the figures of pass %d, the least "
                           "slowed\n",
                           best + 1);
  }
  *out = all[best].hw;
  return TRUE;
}
