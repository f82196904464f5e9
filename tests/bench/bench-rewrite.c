/* bench-rewrite.c — how the rewrite engine scales with the program.
 *
 *   bench-rewrite [--runs N] [--script S] PROGRAM.pir...
 *                 [--one-file MLP.pir --one 'apply RULE at %V w=8'...]
 *
 * For every PROGRAM (tests/bench/run.sh generates them with
 * examples/models/mlp.lua and transformer.lua) it parses the file, then
 * times the script (default 'arg-tile 0 0 8; propagate') through
 * rw_script:
 *
 *   - 'ms' is the median of N runs, each in a forked copy of this process
 *     made before any run, so every run starts from the same store and
 *     builds its result terms itself (the store is hash-consed and never
 *     shrinks: a second run in one process finds its terms already made);
 *     'cpu ms' is the median CPU time of the same runs (steadier than the
 *     clock on a loaded machine);
 *   - 'warm ms' is the median of N runs in this process after a first one,
 *     which find every result term in the store: the traversal alone;
 *   - 'nodes' counts the distinct nodes reachable from the entry's body
 *     (the program's size), 'nodes out' the same for the result;
 *   - 'growth' compares a program with the previous one of the same
 *     function: (ms ratio) / (nodes ratio), so linear growth reads ~1.0
 *     and quadratic growth reads ~ the size ratio.
 *
 * With --one-file, each --one command is applied once to that program
 * and the store's growth is set against the path the rewrite changed: a
 * rewrite should rebuild the nodes from the root down to the location
 * (those of the old body that the new body no longer reaches) and add
 * little else.
 *
 * Targets (the issue): linear growth, and under 100 ms for the
 * 1000-layer MLP on one core.  They are printed next to the figures;
 * nothing here fails on timing.  Rule files come from $PARTIR_RULES
 * (pipeline_load_rules with no paths).  Everything runs on a deep stack
 * (partir_call_with_stack), as repl/partir does.
 */
#include "bench-stats.h"
#include "pipeline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TARGET_MLP_LAYERS 1000
#define TARGET_MLP_MS 100.0

typedef struct Options {
  int runs;
  char *script;
  char **files;    /* the programs to time */
  char *one_file;  /* the program for --one */
  char **one_cmds; /* single rewrites measured on one_file */
} Options;

/* One timed program. */
typedef struct Sample {
  char *label;      /* file name without directory and .pir */
  const char *func; /* the entry's name: programs of one series share it */
  gsize nodes, nodes_out;
  double ms, cpu_ms, warm_ms;
  gsize store_bytes; /* what the first run added to the store */
  char *report;      /* what propagate left unresolved */
} Sample;

/* ------------------------------------------------------------- helpers */

static void count_rec(const Term *t, GHashTable *seen) {
  if (!g_hash_table_add(seen, (gpointer)t))
    return;
  for (int i = 0; i < t->nargs; i++)
    count_rec(t->args[i], seen);
}

/* The distinct nodes reachable from 't' (a set the caller unrefs). */
static GHashTable *reachable(const Term *t) {
  GHashTable *seen = g_hash_table_new(NULL, NULL);
  count_rec(t, seen);
  return seen;
}

static gsize count_nodes(const Term *t) {
  g_autoptr(GHashTable) seen = reachable(t);
  return g_hash_table_size(seen);
}

/* Elements of 'a' that are not in 'b'. */
static gsize count_missing(GHashTable *a, GHashTable *b) {
  GHashTableIter it;
  gpointer key;
  gsize n = 0;
  g_hash_table_iter_init(&it, a);
  while (g_hash_table_iter_next(&it, &key, NULL))
    n += !g_hash_table_contains(b, key);
  return n;
}

static char *label_of(const char *path) {
  char *base = g_path_get_basename(path);
  if (g_str_has_suffix(base, ".pir"))
    base[strlen(base) - 4] = '\0';
  return base;
}

/* Loads and parses a program; diagnostics go to stderr. */
static Module *load_program(const char *path) {
  GError *error = NULL;
  g_autoptr(Diag) diags = diag_new(NULL);
  Module *m = parse_file(path, diags, &error);
  if (error) {
    g_printerr("bench-rewrite: %s\n", error->message);
    g_error_free(error);
    return NULL;
  }
  if (!m)
    fputs(diag_text(diags), stderr);
  if (m && !module_entry(m)) {
    g_printerr("bench-rewrite: %s: no entry function (@main)\n", path);
    module_free(m);
    return NULL;
  }
  return m;
}

/* Runs the script once on a fresh state; the result (NULL on failure,
 * with the reason printed) and the milliseconds it took ('cpu_ms' may
 * be NULL). */
static State *run_script(const RuleSet *rs, Module *m, const char *script,
                         double *ms, double *cpu_ms, GString *report) {
  g_autoptr(State) s0 = state_new(m);
  g_autoptr(Diag) why = diag_new(NULL);
  g_string_truncate(report, 0);
  double c0 = bench_cpu_ms(CLOCK_THREAD_CPUTIME_ID);
  gint64 t0 = g_get_monotonic_time();
  RewriteEnv env = {.report = report};
  State *s = rw_script(rs, s0, script, &env, why);
  *ms = (double)(g_get_monotonic_time() - t0) / 1000.0;
  if (cpu_ms)
    *cpu_ms = bench_cpu_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
  if (!s)
    g_printerr("bench-rewrite: %s\n", diag_text(why));
  return s;
}

/* ------------------------------------------------------------- timing */

/* Times 'runs' runs of the script, each in a child process forked now,
 * so that every one starts from the store as it is.  FALSE when a run
 * fails. */
static gboolean time_cold(const RuleSet *rs, Module *m, const Options *o,
                          double *ms_out, double *cpu_out) {
  double *ms = g_new(double, (gsize)o->runs);
  double *cpu = g_new(double, (gsize)o->runs);
  gboolean ok = TRUE;
  for (int i = 0; i < o->runs && ok; i++) {
    int fd[2];
    if (pipe(fd) != 0) {
      g_printerr("bench-rewrite: pipe: %s\n", g_strerror(errno));
      ok = FALSE;
      break;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
      g_printerr("bench-rewrite: fork: %s\n", g_strerror(errno));
      close(fd[0]);
      close(fd[1]);
      ok = FALSE;
      break;
    }
    if (pid == 0) {
      close(fd[0]);
      double t[2] = {-1, -1};
      GString *report = g_string_new(NULL);
      State *s = run_script(rs, m, o->script, &t[0], &t[1], report);
      if (!s)
        t[0] = -1;
      state_unref(s);
      g_string_free(report, TRUE);
      ssize_t n = write(fd[1], t, sizeof t);
      _exit(n == (ssize_t)sizeof t ? 0 : 1);
    }
    close(fd[1]);
    double t[2] = {-1, -1};
    ssize_t n = read(fd[0], t, sizeof t);
    close(fd[0]);
    /* the result is what the child wrote; its exit status says no more
     * (under valgrind it counts the parent's blocks it cannot see) */
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
      ;
    if (n != (ssize_t)sizeof t || t[0] < 0) {
      g_printerr("bench-rewrite: run %d of '%s' failed\n", i + 1, o->script);
      ok = FALSE;
    }
    ms[i] = t[0];
    cpu[i] = t[1];
  }
  if (ok) {
    *ms_out = bench_median(ms, o->runs);
    *cpu_out = bench_median(cpu, o->runs);
  }
  g_free(ms);
  g_free(cpu);
  return ok;
}

/* Measures one program: cold runs, then a first run here (for the result
 * and what it adds to the store), then warm runs. */
static gboolean measure(const RuleSet *rs, const char *path, const Options *o,
                        Sample *out) {
  g_autoptr(Module) m = load_program(path);
  if (!m)
    return FALSE;
  const Func *f = module_entry(m);
  out->label = label_of(path);
  out->func = g_intern_string(f->name);
  out->nodes = count_nodes(f->body);
  if (!time_cold(rs, m, o, &out->ms, &out->cpu_ms))
    return FALSE;

  g_autoptr(GString) report = g_string_new(NULL);
  gsize bytes0 = term_store_bytes();
  double first_ms;
  g_autoptr(State) s = run_script(rs, m, o->script, &first_ms, NULL, report);
  if (!s)
    return FALSE;
  out->store_bytes = term_store_bytes() - bytes0;
  out->nodes_out = count_nodes(s->func.body);
  out->report = g_strdup(report->str);

  double *ms = g_new(double, (gsize)o->runs);
  for (int i = 0; i < o->runs; i++) {
    State *again = run_script(rs, m, o->script, &ms[i], NULL, report);
    g_assert(again && again->func.body == s->func.body); /* deterministic */
    state_unref(again);
  }
  out->warm_ms = bench_median(ms, o->runs);
  g_free(ms);
  return TRUE;
}

static void print_table(GPtrArray *samples, const Options *o) {
  g_print("rewrite benchmark: '%s', median of %d runs\n", o->script, o->runs);
  g_print("target: linear growth (growth ~1.0); the %d-layer MLP under "
          "%.0f ms on one core\n\n",
          TARGET_MLP_LAYERS, TARGET_MLP_MS);
  g_print("%-16s %8s %9s %9s %9s %9s %7s %11s\n", "program", "nodes",
          "nodes out", "ms", "cpu ms", "warm ms", "growth", "store +KiB");
  const Sample *prev = NULL;
  for (guint i = 0; i < samples->len; i++) {
    const Sample *s = g_ptr_array_index(samples, i);
    char growth[32] = "-";
    if (prev && prev->func == s->func && prev->ms > 0 && prev->nodes > 0)
      g_snprintf(growth, sizeof growth, "%.2f",
                 (s->ms / prev->ms) / ((double)s->nodes / (double)prev->nodes));
    g_print("%-16s %8" G_GSIZE_FORMAT " %9" G_GSIZE_FORMAT
            " %9.2f %9.2f %9.2f %7s %11.1f\n",
            s->label, s->nodes, s->nodes_out, s->ms, s->cpu_ms, s->warm_ms,
            growth, (double)s->store_bytes / 1024.0);
    prev = s;
  }
  /* notes under the table: the absolute target, what propagate left */
  const char *sep = "\n";
  for (guint i = 0; i < samples->len; i++) {
    const Sample *s = g_ptr_array_index(samples, i);
    g_autofree char *want = g_strdup_printf("mlp-%d", TARGET_MLP_LAYERS);
    if (strcmp(s->label, want) == 0) {
      g_print("%s%s: %.2f ms against the target of %.0f ms: %s\n", sep,
              s->label, s->ms, TARGET_MLP_MS,
              s->ms <= TARGET_MLP_MS ? "met" : "NOT met");
      sep = "";
    }
    g_auto(GStrv) lines = g_strsplit(s->report ? s->report : "", "\n", -1);
    for (char **l = lines; *l; l++)
      if (**l) {
        g_print("%s%s: propagate left: %s\n", sep, s->label, *l);
        sep = "";
      }
  }
}

/* ------------------------------------------------------ one rewrite */

/* Applies each --one command once to the state of 'path' and sets what
 * it adds to the store against the path it changed. */
static gboolean measure_one(const RuleSet *rs, const Options *o) {
  g_autoptr(Module) m = load_program(o->one_file);
  if (!m)
    return FALSE;
  g_autoptr(State) s0 = state_new(m);
  const Term *old = s0->func.body;
  g_autoptr(GHashTable) old_nodes = reachable(old);
  g_autofree char *label = label_of(o->one_file);
  g_print("\none rewrite on %s (%u nodes, body height %u, %.1f KiB of "
          "nodes in the store)\n",
          label, g_hash_table_size(old_nodes), old->height,
          (double)term_store_bytes() / 1024.0);
  g_print("target: the store grows in proportion to the path changed (the "
          "nodes from the root down to the location), not the program\n\n");
  g_print("%-36s %9s %9s %9s %10s %14s\n", "command", "+nodes", "+bytes",
          "path", "+nodes/path", "+bytes/node");
  for (char **c = o->one_cmds; c && *c; c++) {
    g_autoptr(Diag) why = diag_new(NULL);
    gsize nodes0 = term_store_size(), bytes0 = term_store_bytes();
    g_autoptr(State) s1 = rw_script(rs, s0, *c, NULL, why);
    gsize added = term_store_size() - nodes0;
    gsize bytes = term_store_bytes() - bytes0;
    if (!s1) {
      g_printerr("bench-rewrite: %s: %s\n", o->one_file, diag_text(why));
      return FALSE;
    }
    g_autoptr(GHashTable) new_nodes = reachable(s1->func.body);
    /* the rebuilt path: old nodes the new body no longer reaches */
    gsize path = count_missing(old_nodes, new_nodes);
    g_print("%-36s %9" G_GSIZE_FORMAT " %9" G_GSIZE_FORMAT " %9" G_GSIZE_FORMAT
            " %10.2f %14.1f\n",
            *c, added, bytes, path, path ? (double)added / (double)path : 0.0,
            added ? (double)bytes / (double)added : 0.0);
  }
  return TRUE;
}

/* ------------------------------------------------------------- main */

static int bench_main(void *data) {
  const Options *o = data;
  g_autoptr(Diag) errors = diag_new(NULL);
  g_autoptr(RuleSet) rs = pipeline_load_rules(NULL, NULL, errors);
  if (!rs) {
    g_printerr("bench-rewrite: loading the rules ($PARTIR_RULES=%s):\n%s",
               g_getenv("PARTIR_RULES") ? g_getenv("PARTIR_RULES") : "",
               diag_text(errors));
    return 1;
  }
  GPtrArray *samples = g_ptr_array_new();
  gboolean ok = TRUE;
  for (char **f = o->files; f && *f && ok; f++) {
    Sample *s = g_new0(Sample, 1);
    g_ptr_array_add(samples, s);
    ok = measure(rs, *f, o, s);
  }
  if (ok && samples->len)
    print_table(samples, o);
  if (ok && o->one_file)
    ok = measure_one(rs, o);
  for (guint i = 0; i < samples->len; i++) {
    Sample *s = g_ptr_array_index(samples, i);
    g_free(s->label);
    g_free(s->report);
    g_free(s);
  }
  g_ptr_array_unref(samples);
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  Options o = {.runs = 5};
  GOptionEntry entries[] = {
      {"runs", 'n', 0, G_OPTION_ARG_INT, &o.runs,
       "runs per program (default 5)", "N"},
      {"script", 's', 0, G_OPTION_ARG_STRING, &o.script,
       "the commands to time (default 'arg-tile 0 0 8; propagate')", "S"},
      {"one-file", 0, 0, G_OPTION_ARG_FILENAME, &o.one_file,
       "program for the single-rewrite measurement", "FILE"},
      {"one", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o.one_cmds,
       "a single rewrite to measure on --one-file (repeatable)", "CMD"},
      {G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o.files, NULL,
       NULL},
      {NULL}};
  GOptionContext *ctx = g_option_context_new("PROGRAM.pir...");
  g_option_context_set_summary(
      ctx, "Times a rewrite script on each program and reports how the time "
           "grows with the program's size.");
  g_option_context_add_main_entries(ctx, entries, NULL);
  GError *error = NULL;
  gboolean parsed = g_option_context_parse(ctx, &argc, &argv, &error);
  g_option_context_free(ctx);
  int status = 2;
  if (!parsed) {
    g_printerr("bench-rewrite: %s\n", error->message);
    g_error_free(error);
  } else if (o.runs < 1) {
    g_printerr("bench-rewrite: --runs must be at least 1\n");
  } else if (!o.files && !o.one_file) {
    g_printerr("bench-rewrite: no programs (see --help)\n");
  } else if (!o.one_file != !o.one_cmds) {
    g_printerr("bench-rewrite: --one-file and --one go together\n");
  } else {
    if (!o.script)
      o.script = g_strdup("arg-tile 0 0 8; propagate");
    status = partir_call_with_stack(bench_main, &o);
  }
  g_free(o.script);
  g_strfreev(o.files);
  g_free(o.one_file);
  g_strfreev(o.one_cmds);
  return status;
}
