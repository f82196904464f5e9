/* bench-gpt3.c — partitioning a GPT-3-shaped transformer, end to end.
 *
 *   bench-gpt3 [--runs N] [--mesh M] [--hw H]
 *              --strategy NAME=TACTIC.lua... NAME-L.pir...
 *
 * For every strategy (a Lua tactic file) and every program (a transformer
 * of L layers, the number at the end of its file name: run.sh generates
 * gpt3-12.pir ... gpt3-96.pir with examples/models/transformer.lua), it
 * runs the pipeline from the program file to the cost estimate:
 *
 *   parse   pipeline_load_program
 *   tactic  a Lua state (plua_new) and the tactic (pipeline_tactic)
 *   lower   pipeline_lower (lowering and redistribution fusion)
 *   cost    pipeline_cost on the hardware (default h100x8)
 *
 * Each run is a child process forked from this one after the rules and
 * the hardware are loaded and before any program is, so every run builds
 * its terms in the hash-consed store itself (the store never shrinks: a
 * second run in one process would find its terms made) and its peak
 * resident set (wait4's ru_maxrss) is that of one configuration, as the
 * CLI's would be.  The child reports the CPU time of each phase (its
 * CLOCK_PROCESS_CPUTIME_ID: steadier than the clock on a shared machine)
 * and the wall time, and the collectives of the lowered program from the
 * cost report (CostComm: per operator and axes, evaluations per device).
 * Times are the median of N runs, phase by phase; the peak RSS is the
 * largest of the runs.
 *
 * Targets (the issue, "Partitioning at GPT-3 scale"): end to end under
 * 500 ms at 96 layers on one core; for every phase t(96)/t(12) <= 9 (the
 * layers grow 8 times: linear time with 12% to spare); peak RSS under
 * 200 MB; exactly 2 all-reduces per layer over 'model' and none over
 * 'batch' (the programs are a forward pass).  The baseline measured in
 * the same run is parsing the unpartitioned program: each phase is also
 * printed as a multiple of it.  Timings are printed next to their
 * targets and never fail the run; a wrong count of all-reduces (a count
 * is not a timing) makes the exit status 1.  Everything runs on a deep
 * stack (partir_call_with_stack), as repl/partir does.
 */
#include "bench-stats.h"
#include "bind/bind.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TARGET_TOTAL_MS 500.0 /* end to end at the largest program */
#define TARGET_GROWTH 9.0     /* per phase, for 8 times the layers */
#define TARGET_RSS_MB 200.0
#define MODEL_REDUCES_PER_LAYER 2

/* The phases in pipeline order; arrays of times end with the total. */
enum { PHASE_PARSE, PHASE_TACTIC, PHASE_LOWER, PHASE_COST, NPHASES };

typedef struct Options {
  int runs;
  char *mesh;
  char *hw;
  char **strategies; /* NAME=TACTIC.lua */
  char **files;      /* the programs, NAME-L.pir */
} Options;

/* What one child sends back through its pipe: plain data, no pointers. */
typedef struct RunResult {
  gboolean ok;
  double cpu_ms[NPHASES + 1]; /* the phases, then the total */
  double wall_ms[NPHASES + 1];
  double reduce_model; /* all_reduce over exactly 'model' */
  double reduce_batch; /* all_reduce over axes that include 'batch' */
  char others[256];    /* the other collectives: "144 all_gather over batch" */
} RunResult;

/* One (strategy, program): the medians of its runs. */
typedef struct Sample {
  const char *strategy;
  int layers;
  double cpu_ms[NPHASES + 1];
  double wall_ms[NPHASES + 1];
  double rss_mb; /* largest peak resident set of the runs */
  double reduce_model, reduce_batch;
  char others[256];
  gboolean counts_ok;
} Sample;

/* What every child shares: loaded once, before the first fork. */
typedef struct Bench {
  const Options *o;
  RuleSet *rs;
  Mesh mesh;
  Hardware hw;
} Bench;

/* ------------------------------------------------------------- helpers */

static double wall_ms(void) { return (double)g_get_monotonic_time() / 1000.0; }

/* The number of layers: the digits that end the file's base name before
 * '.pir' ("gpt3-96.pir" -> 96); 0 when there are none. */
static int layers_of(const char *path) {
  g_autofree char *base = g_path_get_basename(path);
  if (g_str_has_suffix(base, ".pir"))
    base[strlen(base) - 4] = '\0';
  const char *end = base + strlen(base), *p = end;
  while (p > base && g_ascii_isdigit(p[-1]))
    p--;
  return p < end ? atoi(p) : 0;
}

/* Whether the comma-separated 'axes' include 'axis'. */
static gboolean axes_include(const char *axes, const char *axis) {
  g_auto(GStrv) list = g_strsplit(axes, ",", -1);
  return g_strv_contains((const char *const *)list, axis);
}

/* ------------------------------------------------------------ one run */

/* A mark between phases: CPU and wall clock now. */
typedef struct Mark {
  double cpu, wall;
} Mark;

static Mark mark_now(void) {
  return (Mark){bench_cpu_ms(CLOCK_PROCESS_CPUTIME_ID), wall_ms()};
}

static void record(RunResult *r, int phase, Mark *from) {
  Mark now = mark_now();
  r->cpu_ms[phase] = now.cpu - from->cpu;
  r->wall_ms[phase] = now.wall - from->wall;
  *from = now;
}

/* The collectives of the cost report into 'r'. */
static void count_collectives(const CostReport *cr, RunResult *r) {
  g_autoptr(GString) others = g_string_new(NULL);
  for (guint i = 0; cr->comms && i < cr->comms->len; i++) {
    const CostComm *c = &g_array_index(cr->comms, CostComm, i);
    if (c->op == OP_ALL_REDUCE && strcmp(c->axes, "model") == 0)
      r->reduce_model += c->count;
    else if (c->op == OP_ALL_REDUCE && axes_include(c->axes, "batch"))
      r->reduce_batch += c->count;
    if (c->op == OP_ALL_REDUCE && strcmp(c->axes, "model") == 0)
      continue;
    g_string_append_printf(others, "%s%.0f %s over %s", others->len ? ", " : "",
                           c->count, op_name(c->op), c->axes);
  }
  g_strlcpy(r->others, others->len ? others->str : "-", sizeof r->others);
}

/* The pipeline on one program with one tactic, in this (child) process:
 * FALSE, with the reason printed, when a stage fails. */
static gboolean run_once(const Bench *b, const char *tactic, const char *path,
                         RunResult *r) {
  g_autoptr(Diag) why = diag_new(NULL);
  GError *error = NULL;
  Mark start = mark_now(), at = start;

  g_autoptr(Module) m = pipeline_load_program(path, why, &error);
  record(r, PHASE_PARSE, &at);
  if (!m || !module_entry(m)) {
    g_printerr("bench-gpt3: %s: %s", path,
               error ? error->message
               : m   ? "no entry function (@main)\n"
                     : diag_text(why));
    g_clear_error(&error);
    return FALSE;
  }

  g_autoptr(State) s0 = state_new(m);
  lua_State *L = plua_new(b->rs);
  if (!L) {
    g_printerr("bench-gpt3: cannot create a Lua state\n");
    return FALSE;
  }
  g_autoptr(GHashTable) options = g_hash_table_new(g_str_hash, g_str_equal);
  LuaTactic lt;
  plua_tactic_init(&lt, L, tactic, options);
  g_autoptr(State) s = pipeline_tactic(&lt.base, s0, &b->mesh, why);
  record(r, PHASE_TACTIC, &at);
  if (!s) {
    g_printerr("bench-gpt3: tactic %s on %s: %s\n", tactic, path,
               diag_text(why));
    plua_close(L);
    return FALSE;
  }

  g_auto(Lowered) l = {0};
  gboolean lowered =
      pipeline_lower(b->rs, s->module, &s->func, &b->mesh, &l, why);
  record(r, PHASE_LOWER, &at);
  if (!lowered) {
    g_printerr("bench-gpt3: %s: cannot lower on mesh %s: %s\n", path,
               b->o->mesh, diag_text(why));
    plua_close(L);
    return FALSE;
  }

  g_auto(CostReport) cr = {0};
  gboolean costed = pipeline_cost(&l, &b->hw, &cr, why);
  record(r, PHASE_COST, &at);
  r->cpu_ms[NPHASES] = at.cpu - start.cpu;
  r->wall_ms[NPHASES] = at.wall - start.wall;
  plua_close(L);
  if (!costed) {
    g_printerr("bench-gpt3: %s: cost: %s\n", path, diag_text(why));
    return FALSE;
  }
  count_collectives(&cr, r);
  return TRUE;
}

/* Runs 'run_once' in a child forked now; FALSE when it could not run or
 * failed.  'rss_kb' is the child's peak resident set. */
static gboolean run_child(const Bench *b, const char *tactic, const char *path,
                          RunResult *r, long *rss_kb) {
  int fd[2];
  if (pipe(fd) != 0) {
    g_printerr("bench-gpt3: pipe: %s\n", g_strerror(errno));
    return FALSE;
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    g_printerr("bench-gpt3: fork: %s\n", g_strerror(errno));
    close(fd[0]);
    close(fd[1]);
    return FALSE;
  }
  if (pid == 0) {
    close(fd[0]);
    RunResult mine = {0};
    mine.ok = run_once(b, tactic, path, &mine);
    ssize_t n = write(fd[1], &mine, sizeof mine);
    _exit(n == (ssize_t)sizeof mine ? 0 : 1);
  }
  close(fd[1]);
  memset(r, 0, sizeof *r);
  ssize_t n = read(fd[0], r, sizeof *r);
  close(fd[0]);
  struct rusage ru;
  int status = 0;
  while (wait4(pid, &status, 0, &ru) < 0)
    if (errno != EINTR) {
      g_printerr("bench-gpt3: wait4: %s\n", g_strerror(errno));
      return FALSE;
    }
  *rss_kb = ru.ru_maxrss; /* kilobytes on Linux */
  return n == (ssize_t)sizeof *r && r->ok;
}

/* Measures one (strategy, program): 'runs' children, medians. */
static gboolean measure(const Bench *b, const char *strategy,
                        const char *tactic, const char *path, Sample *out) {
  int runs = b->o->runs;
  double *cpu[NPHASES + 1], *wall[NPHASES + 1];
  for (int p = 0; p <= NPHASES; p++) {
    cpu[p] = g_new(double, (gsize)runs);
    wall[p] = g_new(double, (gsize)runs);
  }
  out->strategy = strategy;
  out->layers = layers_of(path);
  out->counts_ok = TRUE;
  gboolean ok = TRUE;
  long rss_max = 0;
  for (int i = 0; i < runs && ok; i++) {
    RunResult r;
    long rss_kb = 0;
    ok = run_child(b, tactic, path, &r, &rss_kb);
    if (!ok) {
      g_printerr("bench-gpt3: run %d of %s on %s failed\n", i + 1, strategy,
                 path);
      break;
    }
    for (int p = 0; p <= NPHASES; p++) {
      cpu[p][i] = r.cpu_ms[p];
      wall[p][i] = r.wall_ms[p];
    }
    rss_max = MAX(rss_max, rss_kb);
    /* the counts are the program's: every run must give the same */
    if (i > 0 && (r.reduce_model != out->reduce_model ||
                  r.reduce_batch != out->reduce_batch ||
                  strcmp(r.others, out->others) != 0))
      g_error("bench-gpt3: %s on %s: runs disagree on the collectives",
              strategy, path);
    out->reduce_model = r.reduce_model;
    out->reduce_batch = r.reduce_batch;
    memcpy(out->others, r.others, sizeof out->others);
  }
  if (ok) {
    for (int p = 0; p <= NPHASES; p++) {
      out->cpu_ms[p] = bench_median(cpu[p], runs);
      out->wall_ms[p] = bench_median(wall[p], runs);
    }
    out->rss_mb = (double)rss_max / 1024.0;
    out->counts_ok =
        out->reduce_model == (double)(MODEL_REDUCES_PER_LAYER * out->layers) &&
        out->reduce_batch == 0;
  }
  for (int p = 0; p <= NPHASES; p++) {
    g_free(cpu[p]);
    g_free(wall[p]);
  }
  return ok;
}

/* ------------------------------------------------------------ report */

static const char *verdict(gboolean met) { return met ? "met" : "NOT met"; }

static void print_table(const Options *o, const Sample *v, int n) {
  g_print("GPT-3-shaped transformers on mesh %s, hardware %s: CPU ms of "
          "each phase in one process,\nmedian of %d runs (a fresh process "
          "each), wall ms of the whole, largest peak RSS\n",
          o->mesh, o->hw, o->runs);
  g_print("targets: total < %.0f ms at the largest program, t(largest)/"
          "t(smallest) <= %.0f per phase\nfor 8 times the layers, peak RSS "
          "< %.0f MB, all_reduce over model = %d per layer, over batch 0\n\n",
          TARGET_TOTAL_MS, TARGET_GROWTH, TARGET_RSS_MB,
          MODEL_REDUCES_PER_LAYER);
  g_print("%-20s %6s %7s %7s %7s %7s %8s %8s %7s %8s %8s  %s\n", "strategy",
          "layers", "parse", "tactic", "lower", "cost", "total", "wall",
          "RSS MB", "AR model", "AR batch", "other collectives");
  for (int i = 0; i < n; i++) {
    const Sample *s = &v[i];
    g_print("%-20s %6d %7.1f %7.1f %7.1f %7.1f %8.1f %8.1f %7.1f %8.0f %8.0f"
            "  %s%s\n",
            s->strategy, s->layers, s->cpu_ms[PHASE_PARSE],
            s->cpu_ms[PHASE_TACTIC], s->cpu_ms[PHASE_LOWER],
            s->cpu_ms[PHASE_COST], s->cpu_ms[NPHASES], s->wall_ms[NPHASES],
            s->rss_mb, s->reduce_model, s->reduce_batch, s->others,
            s->counts_ok ? "" : "  (WRONG COUNT)");
  }
}

/* The baseline of the same run: each phase as a multiple of parsing the
 * unpartitioned program. */
static void print_baseline(const Sample *v, int n) {
  g_print("\nagainst the baseline, parsing the unpartitioned program (same "
          "run): each phase / parse\n\n");
  g_print("%-20s %6s %9s %7s %7s %7s %7s\n", "strategy", "layers", "parse ms",
          "tactic", "lower", "cost", "total");
  for (int i = 0; i < n; i++) {
    const Sample *s = &v[i];
    double base = s->cpu_ms[PHASE_PARSE] > 0 ? s->cpu_ms[PHASE_PARSE] : 1;
    g_print("%-20s %6d %9.1f %6.1fx %6.1fx %6.1fx %6.1fx\n", s->strategy,
            s->layers, s->cpu_ms[PHASE_PARSE], s->cpu_ms[PHASE_TACTIC] / base,
            s->cpu_ms[PHASE_LOWER] / base, s->cpu_ms[PHASE_COST] / base,
            s->cpu_ms[NPHASES] / base);
  }
}

/* Per strategy: the growth of each phase from its smallest program to its
 * largest, and the absolute targets at the largest. */
static void print_growth(const Sample *v, int n) {
  g_print("\ngrowth per strategy, t(largest)/t(smallest) in CPU time "
          "(target <= %.0f for 8 times the layers)\n\n",
          TARGET_GROWTH);
  g_print("%-20s %9s %7s %7s %7s %7s %7s %7s  %s\n", "strategy", "layers",
          "parse", "tactic", "lower", "cost", "total", "wall", "growth target");
  for (int i = 0; i < n;) {
    int j = i;
    const Sample *lo = &v[i], *hi = &v[i];
    for (; j < n && v[j].strategy == v[i].strategy; j++) {
      if (v[j].layers < lo->layers)
        lo = &v[j];
      if (v[j].layers > hi->layers)
        hi = &v[j];
    }
    g_autofree char *span = g_strdup_printf("%d/%d", hi->layers, lo->layers);
    g_print("%-20s %9s", lo->strategy, span);
    /* the target scales with the layers: 9 for 8 times as many */
    double target = TARGET_GROWTH / 8.0 * hi->layers / MAX(lo->layers, 1);
    gboolean met = TRUE;
    for (int p = 0; p <= NPHASES; p++) {
      double r = lo->cpu_ms[p] > 0 ? hi->cpu_ms[p] / lo->cpu_ms[p] : 0;
      met = met && r <= target;
      g_print(" %7.2f", r);
    }
    g_print(" %7.2f  <= %.1f: %s\n",
            lo->wall_ms[NPHASES] > 0
                ? hi->wall_ms[NPHASES] / lo->wall_ms[NPHASES]
                : 0,
            target, verdict(met));
    i = j;
  }
  g_print("\nat the largest program of each strategy\n\n");
  for (int i = 0; i < n;) {
    int j = i;
    const Sample *hi = &v[i];
    for (; j < n && v[j].strategy == v[i].strategy; j++)
      if (v[j].layers > hi->layers)
        hi = &v[j];
    g_print("%s, %d layers: total %.1f ms (< %.0f: %s), peak RSS %.1f MB "
            "(< %.0f: %s), all_reduce over model %.0f (%d: %s), over batch "
            "%.0f (0: %s)\n",
            hi->strategy, hi->layers, hi->cpu_ms[NPHASES], TARGET_TOTAL_MS,
            verdict(hi->cpu_ms[NPHASES] < TARGET_TOTAL_MS), hi->rss_mb,
            TARGET_RSS_MB, verdict(hi->rss_mb < TARGET_RSS_MB),
            hi->reduce_model, MODEL_REDUCES_PER_LAYER * hi->layers,
            verdict(hi->reduce_model ==
                    (double)(MODEL_REDUCES_PER_LAYER * hi->layers)),
            hi->reduce_batch, verdict(hi->reduce_batch == 0));
    i = j;
  }
}

/* ------------------------------------------------------------- main */

static int bench_main(void *data) {
  const Options *o = data;
  Bench b = {.o = o};
  g_autoptr(Diag) errors = diag_new(NULL);
  if (!mesh_parse(o->mesh, &b.mesh, errors)) {
    g_printerr("bench-gpt3: --mesh %s: %s\n", o->mesh, diag_text(errors));
    return 2;
  }
  GError *error = NULL;
  if (!hw_load(o->hw, &b.hw, &error)) {
    g_printerr("bench-gpt3: %s\n", error->message);
    g_error_free(error);
    return 1;
  }
  b.rs = pipeline_load_rules(NULL, NULL, errors);
  if (!b.rs) {
    g_printerr("bench-gpt3: loading the rules ($PARTIR_RULES=%s):\n%s",
               g_getenv("PARTIR_RULES") ? g_getenv("PARTIR_RULES") : "",
               diag_text(errors));
    return 1;
  }
  int nstrategies = (int)g_strv_length(o->strategies);
  int nfiles = (int)g_strv_length(o->files);
  Sample *samples = g_new0(Sample, (gsize)(nstrategies * nfiles));
  int n = 0;
  gboolean ok = TRUE;
  for (int i = 0; i < nstrategies && ok; i++) {
    const char *eq = strchr(o->strategies[i], '=');
    g_autofree char *label =
        g_strndup(o->strategies[i], (gsize)(eq - o->strategies[i]));
    const char *name = g_intern_string(label);
    for (int j = 0; j < nfiles && ok; j++)
      ok = measure(&b, name, eq + 1, o->files[j], &samples[n++]);
  }
  gboolean counts_ok = TRUE;
  if (ok) {
    print_table(o, samples, n);
    print_baseline(samples, n);
    print_growth(samples, n);
    for (int i = 0; i < n; i++)
      if (!samples[i].counts_ok) {
        g_printerr("bench-gpt3: %s, %d layers: %.0f all_reduce over model "
                   "(expected %d) and %.0f over batch (expected 0)\n",
                   samples[i].strategy, samples[i].layers,
                   samples[i].reduce_model,
                   MODEL_REDUCES_PER_LAYER * samples[i].layers,
                   samples[i].reduce_batch);
        counts_ok = FALSE;
      }
  }
  g_free(samples);
  ruleset_free(b.rs);
  return ok && counts_ok ? 0 : 1;
}

int main(int argc, char **argv) {
  Options o = {.runs = 3};
  GOptionEntry entries[] = {
      {"runs", 'n', 0, G_OPTION_ARG_INT, &o.runs,
       "runs per configuration, the median is reported (default 3)", "N"},
      {"mesh", 'm', 0, G_OPTION_ARG_STRING, &o.mesh,
       "the mesh (default batch=8,model=8)", "MESH"},
      {"hw", 0, 0, G_OPTION_ARG_STRING, &o.hw,
       "hardware to cost on (default h100x8)", "NAME|FILE.hw"},
      {"strategy", 's', 0, G_OPTION_ARG_STRING_ARRAY, &o.strategies,
       "a strategy: its name and tactic file (repeatable)", "NAME=TACTIC.lua"},
      {G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o.files, NULL,
       NULL},
      {NULL}};
  GOptionContext *ctx = g_option_context_new("NAME-LAYERS.pir...");
  g_option_context_set_summary(
      ctx, "Times parse, tactic, lower and cost of each strategy on each "
           "program, and checks its all-reduces: 2 per layer over model, "
           "none over batch.");
  g_option_context_add_main_entries(ctx, entries, NULL);
  GError *error = NULL;
  gboolean parsed = g_option_context_parse(ctx, &argc, &argv, &error);
  g_option_context_free(ctx);
  int status = 2;
  gboolean strategies_ok = o.strategies != NULL;
  for (char **s = o.strategies; s && *s; s++)
    if (!strchr(*s, '=') || **s == '=') {
      g_printerr("bench-gpt3: --strategy %s: expected NAME=TACTIC.lua\n", *s);
      strategies_ok = FALSE;
    }
  gboolean files_ok = o.files != NULL;
  for (char **f = o.files; f && *f; f++)
    if (layers_of(*f) <= 0) {
      g_printerr("bench-gpt3: %s: the file name does not end in its number "
                 "of layers (NAME-L.pir)\n",
                 *f);
      files_ok = FALSE;
    }
  if (!parsed) {
    g_printerr("bench-gpt3: %s\n", error->message);
    g_error_free(error);
  } else if (o.runs < 1) {
    g_printerr("bench-gpt3: --runs must be at least 1\n");
  } else if (!o.strategies || !o.files) {
    g_printerr("bench-gpt3: needs --strategy and programs (see --help)\n");
  } else if (strategies_ok && files_ok) {
    if (!o.mesh)
      o.mesh = g_strdup("batch=8,model=8");
    if (!o.hw)
      o.hw = g_strdup("h100x8");
    status = partir_call_with_stack(bench_main, &o);
  }
  g_free(o.mesh);
  g_free(o.hw);
  g_strfreev(o.strategies);
  g_strfreev(o.files);
  return status;
}
