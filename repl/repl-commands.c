/* repl-commands.c — the command table, and running one command.
 *
 * A command takes the session, the text of the command as typed and its
 * words (argv[0] is the command's name); it returns FALSE when it failed,
 * after saying why with repl_report_error.  Its table entry says how many
 * words may follow the name: repl_run_command checks that, printing
 * "usage: ..." with the entry's usage, before the command runs, so a
 * command checks only what its words say.  Commands that rewrite the
 * program push the new state on the session's stack through repl_adopt,
 * which drops a rewrite that changed nothing.
 *
 * What changed is shown once a line's rewrites are done (a summary,
 * repl_describe_change, or with 'set show full' the whole program): at
 * the end of the line (repl-input.c), or before a command that prints
 * something else ("arg-tile 0 0 8; run"): a table entry whose 'changes'
 * is FALSE.
 *
 * 'lua CODE' is no ordinary command: its code is the rest of the line,
 * not words.  'source FILE' runs a file through the session's 'run_file',
 * which the layer that reads input provides (repl.h).
 */
#include "repl.h"

#include <string.h>

#define SOURCE_MAX_DEPTH 16

/* "usage: ..." for the command named 'name', from its table entry; FALSE
 * for the command to return. */
static gboolean usage_error(Session *s, const char *name) {
  repl_report_error(s, "usage: %s", repl_find_command(name)->usage);
  return FALSE;
}

/* ------------------------------------------------------------ commands */

/* Loads the program in 'path' as a new state: 'load', and the FILE.pir
 * given on the command line.  The path is remembered even when the file
 * does not parse, so that a plain 'load' reads it again once fixed.  The
 * commands a StableHLO file's shardings become follow as steps of their
 * own, so 'undo' goes back through them and 'history' lists them after
 * 'load FILE --shardings ignore', which replays them as written.  The
 * file's mesh becomes the session's, unless the user set one: then the
 * file's must be the same. */
gboolean repl_cmd_load_path(Session *s, const char *path,
                            gboolean ignore_shardings) {
  if (path != s->load_path) {
    g_free(s->load_path);
    s->load_path = g_strdup(path);
  }
  s->ignore_shardings = ignore_shardings;
  LoadOptions lo = {.ignore_shardings = ignore_shardings,
                    .mesh = s->mesh_of_file ? NULL : &s->mesh,
                    .rs = s->rs};
  GError *error = NULL;
  g_autoptr(Diag) diags = diag_new(NULL);
  g_auto(Program) p = {0};
  if (!pipeline_open_program(path, &lo, &p, diags, &error)) {
    if (error) {
      repl_report_error(s, "load: %s", error->message);
      g_error_free(error);
    } else {
      repl_report_diagnostics(diag_text(diags));
    }
    return FALSE;
  }
  g_autofree char *quoted =
      strpbrk(path, " \t'\"\\;#") ? g_shell_quote(path) : g_strdup(path);
  g_autofree char *command = g_strdup_printf(
      "load %s%s", quoted,
      p.steps->len > 0 || ignore_shardings ? " --shardings ignore" : "");
  repl_push_state(s, state_ref(p.initial), command, TRUE);
  for (guint i = 0; i < p.steps->len; i++) {
    const LayoutStep *st = g_ptr_array_index(p.steps, i);
    repl_push_state(s, state_ref(st->state), st->command, FALSE);
  }
  if (p.mesh_in_file) {
    s->mesh = p.mesh;
    s->mesh_of_file = TRUE;
  } else if (s->mesh_of_file) { /* the last file's mesh goes with it */
    s->mesh = (Mesh){0};
    s->mesh_of_file = FALSE;
  }
  return TRUE;
}

static gboolean cmd_load(Session *s, const char *text, int argc, char **argv) {
  const char *path = NULL;
  gboolean ignore = FALSE, given = FALSE;
  g_autoptr(Diag) why = diag_new(NULL);
  for (int i = 1; i < argc; i++) {
    const char *value = NULL;
    if (strcmp(argv[i], "--shardings") == 0 && i + 1 < argc)
      value = argv[++i];
    else if (g_str_has_prefix(argv[i], "--shardings="))
      value = argv[i] + strlen("--shardings=");
    else if (argv[i][0] != '-' && !path)
      path = argv[i];
    else
      return usage_error(s, "load");
    if (value && !pipeline_shardings_option(value, &ignore, why)) {
      repl_report_error(s, "load: %s", diag_text(why));
      return FALSE;
    }
    given |= value != NULL;
  }
  /* a plain 'load' reads the file again as it was read */
  if (!path && !given)
    ignore = s->ignore_shardings;
  if (!path && !s->load_path) {
    repl_report_error(s, "load: no file loaded yet (use 'load FILE')");
    return FALSE;
  }
  return repl_cmd_load_path(s, path ? path : s->load_path, ignore);
}

/* The expression form of one closed value: the entry function reduced to
 * returning that value. */
static void append_value_expr(GString *out, const State *st, const Term *t) {
  const Type *type = t->type;
  Func f = st->func;
  f.body = term_tuple(1, &t);
  f.nresults = 1;
  f.result_types = &type;
  print_func_expr(out, st->module, &f);
}

static gboolean cmd_show(Session *s, const char *text, int argc, char **argv) {
  gboolean expr = FALSE;
  const char *value = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--expr") == 0) {
      expr = TRUE;
    } else if (argv[i][0] == '-' || value) {
      return usage_error(s, "show");
    } else {
      value = argv[i];
    }
  }
  State *cur = repl_need_program(s, "show");
  if (!cur)
    return FALSE;
  g_autoptr(GString) out = g_string_new(NULL);
  if (!value) {
    state_print(out, cur, expr);
    repl_put_string(out);
    return TRUE;
  }
  g_autoptr(GPtrArray) locs = state_locations(cur);
  const Location *l = state_find_location(locs, value);
  if (!l) {
    repl_report_error(s, "show: no value '%s'", value);
    return FALSE;
  }
  if (expr) {
    if (!term_is_closed(l->term)) {
      repl_report_error(
          s,
          "show: %%%s uses the range of an enclosing tile or sum; "
          "--expr shows values outside regions",
          l->name);
      return FALSE;
    }
    append_value_expr(out, cur, l->term);
  } else if (l->term->kind == TM_ARG) {
    g_autofree char *type = type_to_string(l->term->type);
    g_string_append_printf(out, "%%%s: %s (argument %d)\n", l->name, type,
                           l->term->index);
  } else {
    g_auto(GStrv) lines = repl_program_lines(cur);
    repl_append_definition(out, lines, l->name);
  }
  repl_put_string(out);
  return TRUE;
}

/* The names of the locations, NULL-terminated (for "did you mean"). */
static GPtrArray *value_names(GPtrArray *locs) {
  GPtrArray *names = g_ptr_array_new();
  for (guint i = 0; i < locs->len; i++)
    g_ptr_array_add(names, ((Location *)locs->pdata[i])->name);
  g_ptr_array_add(names, NULL);
  return names;
}

/* A mistyped value: the names are compared without their '%'. */
static gboolean cmd_info(Session *s, const char *text, int argc, char **argv) {
  State *cur = repl_need_program(s, "info");
  if (!cur)
    return FALSE;
  g_autoptr(GString) out = g_string_new(NULL);
  if (!repl_info(out, s, cur, argv[1])) {
    g_autoptr(GPtrArray) locs = state_locations(cur);
    g_autoptr(GPtrArray) names = value_names(locs);
    const char *word = argv[1] + (argv[1][0] == '%');
    const char *near = diag_nearest(word, (const char *const *)names->pdata);
    if (near)
      repl_report_error(s, "info: no value '%s' (did you mean '%%%s'?)",
                        argv[1], near);
    else
      repl_report_error(s, "info: no value '%s'", argv[1]);
    return FALSE;
  }
  repl_put_string(out);
  return TRUE;
}

static gboolean cmd_args(Session *s, const char *text, int argc, char **argv) {
  State *cur = repl_need_program(s, "args");
  if (!cur)
    return FALSE;
  g_autoptr(GString) out = g_string_new(NULL);
  for (int i = 0; i < cur->func.nargs; i++) {
    g_autofree char *type = type_to_string(cur->func.arg_types[i]);
    g_string_append_printf(out, "%d  %%%s: %s\n", i, cur->func.arg_names[i],
                           type);
  }
  repl_put_string(out);
  return TRUE;
}

static gboolean cmd_rules(Session *s, const char *text, int argc, char **argv) {
  const char *pattern = argc == 2 ? argv[1] : NULL;
  if (pattern && !g_utf8_validate(pattern, -1, NULL)) {
    /* GLib's glob matching requires UTF-8 (and asserts otherwise) */
    repl_report_error(s, "rules: the pattern is not valid UTF-8");
    return FALSE;
  }
  gboolean glob = pattern && strpbrk(pattern, "*?") != NULL;
  g_autoptr(GString) out = g_string_new(NULL);
  int shown = 0;
  for (guint i = 0; i < s->rs->rules->len; i++) {
    const Rule *r = g_ptr_array_index(s->rs->rules, i);
    if (pattern && !(glob ? g_pattern_match_simple(pattern, r->name)
                          : strstr(r->name, pattern) != NULL))
      continue;
    g_string_append_printf(out, "%-22s %s\n", r->name, r->text);
    shown++;
  }
  if (!shown)
    g_string_append_printf(out, "no rule matches '%s'\n", pattern);
  repl_put_string(out);
  return TRUE;
}

static gboolean cmd_matches(Session *s, const char *text, int argc,
                            char **argv) {
  State *cur = repl_need_program(s, "matches");
  if (!cur)
    return FALSE;
  const Rule *rule = ruleset_find(s->rs, argv[1]);
  if (!rule) {
    g_autofree char *hint = ruleset_did_you_mean(s->rs, argv[1]);
    repl_report_error(s, "matches: no rule '%s'%s", argv[1],
                      *hint ? hint : " (see 'rules')");
    return FALSE;
  }
  g_autoptr(GPtrArray) locs = rw_matches(s->rs, cur, rule);
  g_auto(GStrv) lines = repl_program_lines(cur);
  g_autoptr(GString) out = g_string_new(NULL);
  for (guint i = 0; i < locs->len; i++) {
    const Location *l = g_ptr_array_index(locs, i);
    repl_append_statement(out, lines, l->name, l->term);
    g_string_append_c(out, '\n');
  }
  if (!locs->len)
    g_string_append_printf(out, "'%s' applies nowhere\n", rule->name);
  repl_put_string(out);
  return TRUE;
}

/* arg-tile, tile, sum, apply, propagate, push, fuse, simplify: one engine
 * command on the current state.  What a pass could not resolve is a
 * warning; what 'propagate --resolve' chose (priced on the session's
 * hardware) a note; a conflict fails the command, and the state stays. */
static gboolean cmd_engine(Session *s, const char *text, int argc,
                           char **argv) {
  State *cur = repl_need_program(s, argv[0]);
  if (!cur)
    return FALSE;
  g_autoptr(Diag) why = diag_new(NULL);
  g_autoptr(GString) report = g_string_new(NULL);
  g_autoptr(GString) choices = g_string_new(NULL);
  RewriteContext cx = {.hw_name = s->hw, .report = report, .choices = choices};
  State *next = pipeline_command(s->rs, cur, text, &cx, why);
  if (report->len) {
    g_auto(GStrv) lines = g_strsplit(report->str, "\n", -1);
    for (char **l = lines; *l; l++)
      if (**l)
        repl_report_warning(s, "%s: %s", argv[0], *l);
  }
  if (choices->len) {
    g_auto(GStrv) lines = g_strsplit(choices->str, "\n", -1);
    for (char **l = lines; *l; l++)
      if (**l)
        repl_report_note(s, "%s --resolve: %s", argv[0], *l);
  }
  if (!next) {
    repl_report_error(s, "'%s': %s", text, diag_text(why));
    return FALSE;
  }
  repl_adopt(s, next, text);
  return TRUE;
}

/* 'undo [N]', 'redo [N]': N steps, 1 without N; none at all when there
 * are fewer than N. */
static gboolean cmd_undo(Session *s, const char *text, int argc, char **argv) {
  gboolean undo = strcmp(argv[0], "undo") == 0;
  gint64 n = 1;
  if (argc == 2 &&
      !g_ascii_string_to_signed(argv[1], 10, 1, G_MAXINT, &n, NULL))
    return usage_error(s, argv[0]);
  int can = undo ? repl_undo_steps(s) : repl_redo_steps(s);
  if (undo ? repl_undo(s, (int)n) : repl_redo(s, (int)n))
    return TRUE;
  if (can == 0)
    repl_report_error(s, "%s: nothing to %s", argv[0], argv[0]);
  else
    repl_report_error(s, "%s: only %d step%s to %s", argv[0], can,
                      can == 1 ? "" : "s", argv[0]);
  return FALSE;
}

/* Prints the commands that produced the current state, from its 'load',
 * as a script 'source' can replay. */
static gboolean cmd_history(Session *s, const char *text, int argc,
                            char **argv) {
  int from = s->top;
  while (from > 0 && !g_array_index(s->steps, Step, from).is_load)
    from--;
  g_autoptr(GString) out = g_string_new(NULL);
  for (int i = MAX(from, 0); i <= s->top; i++) {
    g_auto(GStrv) lines =
        g_strsplit(g_array_index(s->steps, Step, i).command, "\n", -1);
    for (char **l = lines; *l; l++)
      g_string_append_printf(out, "%s%s\n", *l, l[1] ? " \\" : "");
  }
  repl_put_string(out);
  return TRUE;
}

/* The options of run, exec and bench: "--NAME VALUE" or "--NAME=VALUE"
 * for those with a value, "--NAME" for a flag. */
typedef struct RunOptions {
  gint64 seed;      /* --seed N (default 0) */
  gint64 repeat;    /* --repeat N (default 5) */
  const char *mesh; /* --mesh M, or NULL: the session's */
  gboolean exact;   /* --exact */
} RunOptions;

/* Reads the words after the command's name into 'o': only the options
 * 'allowed' names ("seed mesh"); FALSE (after the usage) on any other
 * word or a bad number. */
static gboolean parse_run_options(Session *s, int argc, char **argv,
                                  const char *allowed, RunOptions *o) {
  *o = (RunOptions){.repeat = 5};
  g_auto(GStrv) names = g_strsplit(allowed, " ", -1);
  for (int i = 1; i < argc; i++) {
    const char *name = NULL, *v = NULL;
    for (char **n = names; *n && !name; n++) {
      g_autofree char *flag = g_strconcat("--", *n, NULL);
      gsize len = strlen(flag);
      if (strcmp(argv[i], flag) == 0) {
        name = *n;
        if (strcmp(name, "exact") != 0)
          v = i + 1 < argc ? argv[++i] : NULL;
      } else if (strncmp(argv[i], flag, len) == 0 && argv[i][len] == '=') {
        name = *n;
        v = argv[i] + len + 1;
      }
    }
    gint64 n = 0;
    gboolean number =
        v && g_ascii_string_to_signed(v, 10, G_MININT64, G_MAXINT64, &n, NULL);
    if (name && strcmp(name, "exact") == 0 && !v)
      o->exact = TRUE;
    else if (name && strcmp(name, "mesh") == 0 && v)
      o->mesh = v;
    else if (name && strcmp(name, "seed") == 0 && number)
      o->seed = n;
    else if (name && strcmp(name, "repeat") == 0 && number && n >= 1 &&
             n <= 10000)
      o->repeat = n;
    else
      return usage_error(s, argv[0]);
  }
  return TRUE;
}

/* Prints each result under the returned value's user name when it has
 * one of its own, else "resultI" (as 'partir run' does). */
static void print_results(const State *cur, GPtrArray *results) {
  g_autoptr(GString) out = g_string_new(NULL);
  for (guint i = 0; i < results->len; i++) {
    g_autofree char *name = func_result_name(cur->module, &cur->func, (int)i);
    g_string_append_printf(out, "%s = ", name);
    tensor_print(out, g_ptr_array_index(results, i), 64);
    if (out->str[out->len - 1] != '\n')
      g_string_append_c(out, '\n');
  }
  repl_put_string(out);
}

/* Runs the interpreter on arguments drawn from the seed. */
static gboolean cmd_run(Session *s, const char *text, int argc, char **argv) {
  RunOptions o;
  if (!parse_run_options(s, argc, argv, "seed", &o))
    return FALSE;
  State *cur = repl_need_program(s, "run");
  if (!cur)
    return FALSE;
  const Func *f = &cur->func;
  g_autoptr(Diag) diag = diag_new(NULL);
  if (!interp_check(f, diag)) {
    repl_report_error(s, "run: %s", diag_text(diag));
    return FALSE;
  }
  GError *error = NULL;
  GPtrArray *results = interp_run_seeded(f, o.seed, &error);
  if (!results) {
    repl_report_error(s, "run: %s", error->message);
    g_error_free(error);
    return FALSE;
  }
  print_results(cur, results);
  g_ptr_array_unref(results);
  return TRUE;
}

/* The mesh of exec and bench: --mesh (none: one device), or the
 * session's.  FALSE after saying why. */
static gboolean run_mesh(Session *s, const char *cmd, const RunOptions *o,
                         Mesh *out) {
  *out = s->mesh;
  if (!o->mesh)
    return TRUE;
  g_autoptr(Diag) diag = diag_new(NULL);
  if (mesh_parse(strcmp(o->mesh, "none") == 0 ? "" : o->mesh, out, diag))
    return TRUE;
  repl_report_error(s, "%s: %s", cmd, diag_text(diag));
  return FALSE;
}

/* The current program compiled on the mesh 'o' names (the session's
 * when none), once per state; NULL after saying why. */
static const Executable *compiled_for(Session *s, const char *cmd,
                                      const RunOptions *o) {
  Mesh mesh;
  if (!repl_need_program(s, cmd) || !run_mesh(s, cmd, o, &mesh))
    return NULL;
  CodegenOptions co = {0};
  co.exact = o->exact;
  g_autoptr(Diag) why = diag_new(NULL);
  const Executable *e = repl_compiled(s, &mesh, &co, why);
  if (!e)
    repl_report_error(s, "%s: %s", cmd, diag_text(why));
  return e;
}

/* Runs the compiled program on the arguments 'run' draws from the
 * seed, and prints its results as 'run' does. */
static gboolean cmd_exec(Session *s, const char *text, int argc, char **argv) {
  RunOptions o;
  if (!parse_run_options(s, argc, argv, "mesh seed exact", &o))
    return FALSE;
  const Executable *e = compiled_for(s, "exec", &o);
  if (!e)
    return FALSE;
  g_autoptr(GPtrArray) inputs = pipeline_random_inputs(e->global, o.seed);
  g_autoptr(Diag) why = diag_new(NULL);
  GError *error = NULL;
  GPtrArray *results =
      pipeline_execute(e, (Tensor *const *)inputs->pdata, why, &error);
  if (!results) {
    repl_report_error(s, "exec: %s", error ? error->message : diag_text(why));
    g_clear_error(&error);
    return FALSE;
  }
  print_results(repl_current(s), results);
  g_ptr_array_unref(results);
  return TRUE;
}

/* A time in seconds, in the unit that reads best. */
static void append_seconds(GString *out, double t) {
  if (t >= 1)
    g_string_append_printf(out, "%.3f s", t);
  else if (t >= 1e-3)
    g_string_append_printf(out, "%.3f ms", t * 1e3);
  else
    g_string_append_printf(out, "%.3f us", t * 1e6);
}

/* The interpreter's time for one run of 'f' on 'inputs', in seconds;
 * a negative number when it cannot run it. */
static double interpreter_seconds(const Func *f, GPtrArray *inputs) {
  g_autoptr(Diag) diag = diag_new(NULL);
  if (!interp_check(f, diag))
    return -1;
  gint64 start = g_get_monotonic_time();
  GError *error = NULL;
  GPtrArray *results = interp_run(f, (Tensor *const *)inputs->pdata, &error);
  double t = (double)(g_get_monotonic_time() - start) * 1e-6;
  if (!results) {
    g_error_free(error);
    return -1;
  }
  g_ptr_array_unref(results);
  return t;
}

/* The cost model's step time for the current program on 'mesh' and the
 * session's hardware; a negative number, with the reason in 'why', when
 * it cannot say. */
static double predicted_seconds(Session *s, const Mesh *mesh, Diag *why) {
  Hardware hw;
  GError *error = NULL;
  g_auto(CostReport) r = {0};
  if (!hw_load(s->hw ? s->hw : "cpu2", &hw, &error)) {
    diag_reason(why, "%s", error->message);
    g_error_free(error);
    return -1;
  }
  if (!pipeline_cost_state(s->rs, repl_current(s), mesh, &hw, NULL, &r, why))
    return -1;
  return r.total_time;
}

/* The compiled program's step time (--repeat runs, min and median)
 * beside the interpreter's for one run and the cost model's. */
static gboolean cmd_bench(Session *s, const char *text, int argc, char **argv) {
  RunOptions o;
  Mesh mesh;
  if (!parse_run_options(s, argc, argv, "mesh repeat", &o) ||
      !run_mesh(s, "bench", &o, &mesh))
    return FALSE;
  const Executable *e = compiled_for(s, "bench", &o);
  if (!e)
    return FALSE;
  g_autoptr(GPtrArray) inputs = pipeline_random_inputs(e->global, 0);
  g_autoptr(Diag) why = diag_new(NULL);
  GError *error = NULL;
  StepTime t;
  if (!pipeline_time(e, (Tensor *const *)inputs->pdata, (int)o.repeat, &t, why,
                     &error)) {
    repl_report_error(s, "bench: %s", error ? error->message : diag_text(why));
    g_clear_error(&error);
    return FALSE;
  }
  g_autofree char *where = mesh_to_string(&mesh);
  g_autoptr(GString) out = g_string_new("compiled     median ");
  append_seconds(out, t.median);
  g_string_append(out, ", min ");
  append_seconds(out, t.min);
  g_string_append_printf(out, " (%d run%s, %s%s)\n", t.runs,
                         t.runs == 1 ? "" : "s", *where ? "mesh " : "",
                         *where ? where : "one device");
  double interp = interpreter_seconds(e->global, inputs);
  g_string_append(out, "interpreter  ");
  if (interp >= 0)
    append_seconds(out, interp);
  else
    g_string_append(out, "cannot run it");
  g_string_append(out, " (one run)\n");
  g_autoptr(Diag) cost_why = diag_new(NULL);
  double predicted = predicted_seconds(s, &mesh, cost_why);
  g_string_append(out, "predicted    ");
  if (predicted >= 0)
    append_seconds(out, predicted);
  else
    g_string_append_printf(out, "cannot say: %s", diag_text(cost_why));
  g_string_append_printf(out, " (cost model, hw %s)\n", s->hw ? s->hw : "cpu2");
  repl_put_string(out);
  return TRUE;
}

/* The current program lowered on the session's mesh (set mesh ...). */
static gboolean lower_current(Session *s, const char *cmd, Lowered *out) {
  State *cur = repl_need_program(s, cmd);
  if (!cur)
    return FALSE;
  g_autoptr(Diag) why = diag_new(NULL);
  if (pipeline_lower(s->rs, cur->module, &cur->func, &s->mesh, out, why))
    return TRUE;
  repl_report_error(s, "%s: %s", cmd, diag_text(why));
  return FALSE;
}

static gboolean cmd_lower(Session *s, const char *text, int argc, char **argv) {
  gboolean dot = argc == 2 && strcmp(argv[1], "--dot") == 0;
  if (argc == 2 && !dot)
    return usage_error(s, "lower");
  g_auto(Lowered) l = {0};
  if (!lower_current(s, "lower", &l))
    return FALSE;
  g_autoptr(GString) out = g_string_new(NULL);
  if (dot)
    spmd_print_dot(out, l.names, l.spmd);
  else
    print_func(out, l.names, l.spmd);
  repl_put_string(out);
  return TRUE;
}

/* 'export [--emit FORM] [FILE]': the current program as StableHLO on the
 * session's mesh (pipeline_export), printed or written to FILE. */
static gboolean cmd_export(Session *s, const char *text, int argc,
                           char **argv) {
  ExportForm form = EXPORT_SDY;
  const char *file = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--emit") == 0 && i + 1 < argc) {
      if (!export_form_parse(argv[++i], &form)) {
        repl_report_error(s,
                          "export: --emit takes stablehlo, stablehlo-gspmd "
                          "or stablehlo-spmd, not '%s'",
                          argv[i]);
        return FALSE;
      }
    } else if (!file && argv[i][0] != '-') {
      file = argv[i];
    } else {
      return usage_error(s, "export");
    }
  }
  State *cur = repl_need_program(s, "export");
  if (!cur)
    return FALSE;
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(Diag) why = diag_new(NULL);
  if (!pipeline_export(s->rs, cur, &s->mesh, form, out, why)) {
    repl_report_error(s, "export: %s", diag_text(why));
    return FALSE;
  }
  if (!file) {
    repl_put_string(out);
    return TRUE;
  }
  GError *error = NULL;
  if (!partir_write_file(file, out->str, out->len, &error)) {
    repl_report_error(s, "export: %s", error->message);
    g_error_free(error);
    return FALSE;
  }
  printf("wrote %s\n", file);
  return TRUE;
}

/* 'grad --loss L [--wrt a,b] [--params-from-arg N] [--optimizer O]
 * [--lr R]': the current program's training step becomes the current
 * program (undo goes back to the model). */
static gboolean cmd_grad(Session *s, const char *text, int argc, char **argv) {
  TrainOptions to = {.lr = 0.01, .params_from = 1};
  const char *loss = NULL, *optimizer = NULL, *wrt = NULL;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    char *end = NULL;
    if (!v)
      return usage_error(s, "grad");
    if (strcmp(argv[i], "--loss") == 0)
      loss = v;
    else if (strcmp(argv[i], "--optimizer") == 0)
      optimizer = v;
    else if (strcmp(argv[i], "--wrt") == 0)
      wrt = v;
    else if (strcmp(argv[i], "--lr") == 0 &&
             (to.lr = g_ascii_strtod(v, &end), *end == 0))
      ;
    else if (strcmp(argv[i], "--params-from-arg") == 0 &&
             (to.params_from = (int)g_ascii_strtoll(v, &end, 10),
              *end == 0 && to.params_from >= 0))
      ;
    else
      return usage_error(s, "grad");
    i++;
  }
  g_autoptr(Diag) why = diag_new(NULL);
  if (!loss || !train_options_words(loss, optimizer, &to, why)) {
    if (!loss)
      return usage_error(s, "grad");
    repl_report_error(s, "%s", diag_text(why));
    return FALSE;
  }
  State *cur = repl_need_program(s, "grad");
  if (!cur)
    return FALSE;
  g_auto(GStrv) names = wrt ? g_strsplit(wrt, ",", -1) : NULL;
  to.params = (const char *const *)names;
  g_autoptr(Module) m = pipeline_train_step(s->rs, cur, &to, why);
  if (!m) {
    repl_report_error(s, "%s", diag_text(why));
    return FALSE;
  }
  repl_adopt(s, state_new(m), text);
  return TRUE;
}

static gboolean cmd_stats(Session *s, const char *text, int argc, char **argv) {
  g_auto(Lowered) l = {0};
  if (!lower_current(s, "stats", &l))
    return FALSE;
  g_autoptr(GString) out = g_string_new(NULL);
  spmd_print_stats(out, l.spmd);
  repl_put_string(out);
  return TRUE;
}

/* Prints the cost of the current program lowered on the session's mesh
 * and hardware; FALSE with an error printed when it cannot. */
static gboolean print_cost(Session *s) {
  g_auto(Lowered) l = {0};
  if (!lower_current(s, "cost", &l))
    return FALSE;
  Hardware hw;
  GError *error = NULL;
  g_autoptr(Diag) diag = diag_new(NULL);
  g_auto(CostReport) r = {0};
  if (!hw_load(s->hw ? s->hw : "cpu2", &hw, &error)) {
    repl_report_error(s, "cost: %s", error->message);
    g_error_free(error);
    return FALSE;
  }
  gboolean ok = pipeline_cost(&l, &hw, &r, diag);
  if (ok) {
    g_autoptr(GString) out = g_string_new(NULL);
    cost_print(out, &r, &hw, &s->mesh);
    repl_put_string(out);
  } else {
    repl_report_error(s, "cost: %s", diag_text(diag));
  }
  return ok;
}

static gboolean cmd_cost(Session *s, const char *text, int argc, char **argv) {
  return print_cost(s);
}

static gboolean cmd_save(Session *s, const char *text, int argc, char **argv) {
  State *cur = repl_need_program(s, "save");
  if (!cur)
    return FALSE;
  g_autofree char *dir = g_path_get_dirname(argv[1]);
  if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
    repl_report_error(s, "save: no directory '%s'", dir);
    return FALSE;
  }
  g_autoptr(GString) out = g_string_new(NULL);
  state_print(out, cur, FALSE);
  GError *error = NULL;
  /* atomic: a temporary file renamed over FILE */
  if (!partir_write_file(argv[1], out->str, out->len, &error)) {
    repl_report_error(s, "save: %s", error->message);
    g_error_free(error);
    return FALSE;
  }
  printf("wrote %s\n", argv[1]);
  return TRUE;
}

/* The session's Lua state for command 'cmd', or NULL after saying why. */
static lua_State *lua_for(Session *s, const char *cmd) {
  lua_State *L = repl_session_lua(s);
  if (!L)
    repl_report_error(s, "%s: cannot create a Lua state (out of memory)", cmd);
  return L;
}

/* 'lua CODE' ('text' is the whole command): runs the chunk with 's' the
 * current state; a state it returns becomes the current one. */
static gboolean run_lua(Session *s, const char *text, const char *code) {
  State *cur = repl_need_program(s, "lua");
  if (!cur)
    return FALSE;
  lua_State *L = lua_for(s, "lua");
  if (!L)
    return FALSE;
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(Diag) why = diag_new(NULL);
  repl_lua_begin(L);
  State *next = plua_run_chunk(L, code, "=lua", cur, &s->mesh, out, why);
  repl_lua_end();
  repl_put_string(out);
  if (!next) {
    repl_report_error(s, "lua: %s", diag_text(why));
    return FALSE;
  }
  if (next == cur) { /* the chunk returned no state (or 's' itself) */
    state_unref(next);
    return TRUE;
  }
  repl_adopt(s, next, text);
  return TRUE;
}

static gboolean cmd_source(Session *s, const char *text, int argc,
                           char **argv) {
  if (s->depth >= SOURCE_MAX_DEPTH) {
    repl_report_error(s, "source: files nested more than %d deep",
                      SOURCE_MAX_DEPTH);
    return FALSE;
  }
  s->depth++;
  gboolean ok = s->run_file(s, argv[1], TRUE);
  s->depth--;
  return ok;
}

/* A tactic by path, or by name in the tactic directories (NAME.lua). */
static char *find_tactic(const char *name) {
  if (g_file_test(name, G_FILE_TEST_IS_REGULAR))
    return g_strdup(name);
  if (strchr(name, '/'))
    return NULL;
  g_auto(GStrv) dirs = plua_tactic_dirs();
  for (char **d = dirs; *d; d++) {
    g_autofree char *file = g_strconcat(name, ".lua", NULL);
    char *path = g_build_filename(*d, file, NULL);
    if (g_file_test(path, G_FILE_TEST_IS_REGULAR))
      return path;
    g_free(path);
  }
  return NULL;
}

static gboolean cmd_tactic(Session *s, const char *text, int argc,
                           char **argv) {
  g_autoptr(GHashTable) options =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  for (int i = 2; i < argc; i++) {
    const char *eq = strchr(argv[i], '=');
    if (!eq || eq == argv[i]) {
      repl_report_error(s, "tactic: expected KEY=VALUE, got '%s'", argv[i]);
      return FALSE;
    }
    g_hash_table_insert(options, g_strndup(argv[i], (gsize)(eq - argv[i])),
                        g_strdup(eq + 1));
  }
  g_autofree char *path = find_tactic(argv[1]);
  if (!path) {
    g_auto(GStrv) names = plua_tactic_names();
    const char *near = diag_nearest(argv[1], (const char *const *)names);
    if (near)
      repl_report_error(s, "tactic: no tactic '%s' (did you mean '%s'?)",
                        argv[1], near);
    else
      repl_report_error(s,
                        "tactic: no tactic '%s' (a file, or NAME for NAME.lua "
                        "in $PARTIR_TACTICS or the installed tactics)",
                        argv[1]);
    return FALSE;
  }
  State *cur = repl_need_program(s, "tactic");
  if (!cur)
    return FALSE;
  lua_State *L = lua_for(s, "tactic");
  if (!L)
    return FALSE;
  g_autoptr(Diag) why = diag_new(NULL);
  repl_lua_begin(L);
  State *next = plua_run_tactic(L, path, cur, &s->mesh, options, why);
  repl_lua_end();
  if (!next) {
    repl_report_error(s, "tactic %s: %s", argv[1], diag_text(why));
    return FALSE;
  }
  repl_adopt(s, next, text);
  return TRUE;
}

/* 'search [--algo A] [--budget N] [--time S] [--seed N] [--width N]
 * [--emit-tactic FILE]': the best partitioning the cost model finds on
 * the session's mesh and hardware (docs/search.md) becomes the current
 * state, as one step (undo goes back); Ctrl-C stops it with the best so
 * far. */
static gboolean cmd_search(Session *s, const char *text, int argc,
                           char **argv) {
  SearchOptions so = {.seed = 1};
  const char *tactic_file = NULL;
  for (int i = 1; i < argc; i += 2) {
    const char *flag = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
    gint64 n = 0;
    double x = 0;
    gboolean ok = value != NULL;
    if (ok && strcmp(flag, "--algo") == 0)
      ok = search_algo_parse(value, &so.algo);
    else if (ok && strcmp(flag, "--emit-tactic") == 0)
      tactic_file = value;
    else if (ok && strcmp(flag, "--time") == 0) {
      char *end = NULL;
      x = g_ascii_strtod(value, &end);
      ok = end && *end == '\0' && end != value && x > 0 && x < 1e9;
      so.seconds = x;
    } else if (ok &&
               (strcmp(flag, "--budget") == 0 || strcmp(flag, "--seed") == 0 ||
                strcmp(flag, "--width") == 0)) {
      ok = g_ascii_string_to_signed(value, 10, 0, G_MAXINT32, &n, NULL);
      if (flag[2] == 'b')
        so.budget = n;
      else if (flag[2] == 's')
        so.seed = (guint64)n;
      else
        so.beam_width = (int)n;
    } else
      ok = FALSE;
    if (!ok)
      return usage_error(s, "search");
  }
  State *cur = repl_need_program(s, "search");
  if (!cur)
    return FALSE;
  if (s->mesh.naxes == 0) {
    repl_report_error(s, "search: no mesh (set mesh batch=2,model=4)");
    return FALSE;
  }
  Hardware hw;
  GError *error = NULL;
  if (!hw_load(s->hw ? s->hw : "cpu2", &hw, &error)) {
    repl_report_error(s, "search: %s", error->message);
    g_error_free(error);
    return FALSE;
  }
  g_auto(SearchResult) r = {0};
  g_autoptr(Diag) why = diag_new(NULL);
  if (!search_run(s->rs, cur, &s->mesh, &hw, &so, &r, why)) {
    repl_report_error(s, "search: %s", diag_text(why));
    return FALSE;
  }
  g_autoptr(GString) out = g_string_new(NULL);
  g_string_append_printf(
      out, "search %s: %" G_GINT64_FORMAT " states costed in %.2f s%s\n",
      search_algo_name(so.algo), r.explored, r.seconds,
      r.interrupted ? " (interrupted: the best so far)" : "");
  search_print(out, &r, &hw);
  if (tactic_file) {
    g_autoptr(GString) tactic = g_string_new(NULL);
    search_tactic(tactic, &r, "-- Found by the REPL's 'search'.\n");
    if (!partir_write_file(tactic_file, tactic->str, tactic->len, &error)) {
      repl_report_error(s, "search: %s", error->message);
      g_error_free(error);
      return FALSE;
    }
    g_string_append_printf(out, "wrote %s\n", tactic_file);
  }
  repl_put_string(out);
  repl_adopt(s, state_ref(r.best), text);
  return TRUE;
}

static void append_settings(GString *out, const Session *s) {
  g_autofree char *mesh = mesh_to_string(&s->mesh);
  g_string_append_printf(out, "mesh = %s\n", *mesh ? mesh : "none");
  static const char *const show[] = {"off", "on", "full"};
  g_string_append_printf(out, "show = %s\n", show[s->show]);
  g_string_append_printf(out, "cost = %s\n", s->cost ? "on" : "off");
  g_string_append_printf(out, "hw = %s\n", s->hw ? s->hw : "cpu2");
}

static gboolean cmd_set(Session *s, const char *text, int argc, char **argv) {
  g_autoptr(GString) out = g_string_new(NULL);
  if (argc == 1) {
    append_settings(out, s);
    repl_put_string(out);
    return TRUE;
  }
  if (strcmp(argv[1], "mesh") == 0 && argc == 2) {
    g_autofree char *mesh = mesh_to_string(&s->mesh);
    printf("mesh = %s\n", *mesh ? mesh : "none");
    return TRUE;
  }
  if (strcmp(argv[1], "mesh") == 0 && argc >= 3) {
    /* "batch=2,model=4", also written "batch=2, model=4" */
    g_autofree char *spec = g_strjoinv("", argv + 2);
    Mesh mesh;
    g_autoptr(Diag) diag = diag_new(NULL);
    if (!mesh_parse(strcmp(spec, "none") == 0 ? "" : spec, &mesh, diag)) {
      repl_report_error(s, "set: %s", diag_text(diag));
      return FALSE;
    }
    s->mesh = mesh;
    s->mesh_of_file = FALSE;
    return TRUE;
  }
  if (strcmp(argv[1], "show") == 0 && argc == 3 &&
      (strcmp(argv[2], "on") == 0 || strcmp(argv[2], "off") == 0 ||
       strcmp(argv[2], "full") == 0)) {
    s->show = argv[2][0] == 'f'   ? SHOW_FULL
              : argv[2][1] == 'n' ? SHOW_SUMMARY
                                  : SHOW_OFF;
    return TRUE;
  }
  if (strcmp(argv[1], "cost") == 0 && argc == 3 &&
      (strcmp(argv[2], "on") == 0 || strcmp(argv[2], "off") == 0)) {
    s->cost = strcmp(argv[2], "on") == 0;
    return TRUE;
  }
  if (strcmp(argv[1], "hw") == 0 && argc == 3) {
    Hardware hw;
    GError *error = NULL;
    if (!hw_load(argv[2], &hw, &error)) {
      repl_report_error(s, "set: %s", error->message);
      g_error_free(error);
      return FALSE;
    }
    g_free(s->hw);
    s->hw = g_strdup(argv[2]);
    return TRUE;
  }
  repl_report_error(
      s, "usage: set [mesh AXIS=SIZE,... | mesh none | show on|full|off | "
         "cost on|off | hw NAME]");
  return FALSE;
}

static gboolean cmd_help(Session *s, const char *text, int argc, char **argv);

static gboolean cmd_quit(Session *s, const char *text, int argc, char **argv) {
  s->quit = TRUE;
  return TRUE;
}

/* The commands, in the order 'help' lists them.  The counts are of the
 * words after the name; 'lua' has no function: repl_run_command runs it,
 * as its code is the rest of the line. */
const Command repl_commands[] = {
    {"load", cmd_load, 0, 3, TRUE, COMPLETE_FILE,
     "load [FILE] [--shardings apply|ignore]",
     "load a program (.pir or StableHLO .mlir); it becomes the current state",
     "Without FILE, the file last named (on the command line or by 'load')\n"
     "is read again: fix a program that did not parse, then 'load'.\n"
     "A StableHLO file's mesh becomes the session's (one set with 'set mesh'\n"
     "must be the same), and its shardings become arg-tile and tile commands\n"
     "and a propagate, each a step 'undo' goes back through; with\n"
     "--shardings ignore they are left as they are."},
    {"show", cmd_show, 0, ARGS_ANY, FALSE, COMPLETE_VALUE,
     "show [VALUE] [--expr]",
     "print the program, or the statement defining VALUE",
     "--expr prints the compact expression form (of the program, or of a\n"
     "value that is not inside a tile or sum)."},
    {"args", cmd_args, 0, 0, FALSE, COMPLETE_NONE, "args",
     "list the function's arguments", NULL},
    {"rules", cmd_rules, 0, 1, FALSE, COMPLETE_RULE, "rules [PATTERN]",
     "list the rules (names containing PATTERN, or matching a glob)", NULL},
    {"matches", cmd_matches, 1, 1, FALSE, COMPLETE_RULE, "matches RULE",
     "list the values where RULE applies", NULL},
    {"apply", cmd_engine, 0, ARGS_ANY, TRUE, COMPLETE_RULE,
     "apply RULE [at VALUE[,VALUE...]] [NAME=V...]",
     "apply a rule (without 'at': where it first applies)",
     "NAME=V gives the rule's parameters: widths (w=8), dimensions (d=0),\n"
     "axes (a=batch).  Several values are named as the program is now, and\n"
     "rewritten one after the other."},
    {"arg-tile", cmd_engine, 0, ARGS_ANY, TRUE, COMPLETE_ARG,
     "arg-tile ARG DIM WIDTH [AXIS]",
     "tile argument ARG (index or %name) along DIM in pieces of WIDTH", NULL},
    {"tile", cmd_engine, 0, ARGS_ANY, TRUE, COMPLETE_VALUE,
     "tile VALUE DIM WIDTH [AXIS]",
     "tile any value along DIM in pieces of WIDTH", NULL},
    {"sum", cmd_engine, 0, ARGS_ANY, TRUE, COMPLETE_VALUE,
     "sum VALUE WIDTH [AXIS|-] [K]",
     "split reduction K of an operator into a sum of pieces of WIDTH", NULL},
    {"propagate", cmd_engine, 0, ARGS_ANY, TRUE, COMPLETE_NONE,
     "propagate [--resolve]",
     "push slices in, pull tiles out and fuse, to a fixed point",
     "What it cannot carry (tilings of different widths, an axis bound\n"
     "twice) is left in place and reported as a warning.  Two splits over\n"
     "one axis that an operator cannot both follow (rows of one operand,\n"
     "columns of the other) are a conflict: propagate fails, naming both\n"
     "and where each came from, and the program stays.  --resolve keeps,\n"
     "for each conflict, the split whose program the cost model prices\n"
     "fastest on the session's hardware ('set hw'), redistributing the\n"
     "other (all_to_all or all_gather), and says what it chose."},
    {"push", cmd_engine, 0, ARGS_ANY, TRUE, COMPLETE_NONE, "push",
     "push slices in and fuse, to a fixed point, pulling no tile out",
     "A split written on a value ('tile' of a result) reaches back into\n"
     "what computes it; the splits of its operands stay where they are,\n"
     "and the lowering gathers them where they are used whole."},
    {"remat", cmd_engine, 1, ARGS_ANY, TRUE, COMPLETE_VALUE, "remat %v...",
     "a training step's backward pass recomputes the values instead of "
     "keeping them",
     "The forward pass is what the step's last result (its loss) reads;\n"
     "each value named must be one of its operators.  The backward pass\n"
     "gets its own copy of each, computed from what it reads (kept, or\n"
     "recomputed too), through a convert to their own type that keeps the\n"
     "copy apart from the forward's value.  'cost' shows the FLOPs added\n"
     "(docs/grad.md)."},
    {"fission", cmd_engine, 0, ARGS_ANY, TRUE, COMPLETE_VALUE,
     "fission VALUE DIM REGION",
     "cut the tile or sum REGION in two at VALUE, a value inside it",
     "VALUE's parts become a tile of their own over REGION's range (and\n"
     "axis), along DIM, which must have the range's width; REGION reads\n"
     "its part of that tile.  What the program computes and sends stays."},
    {"lift", cmd_engine, 0, ARGS_ANY, TRUE, COMPLETE_VALUE,
     "lift [--cheaper] VALUE... AXIS",
     "compute an operator outside the tiles over AXIS around it",
     "Its operands are gathered, and an operand split over AXIS (a ZeRO\n"
     "part) enters it: the part is used in place.  An argument names the\n"
     "first operator that uses its part split over AXIS.  --cheaper keeps\n"
     "the lifts only where the cost model prices the program faster on\n"
     "the session's hardware ('set hw'), and says what it chose."},
    {"fuse", cmd_engine, 0, ARGS_ANY, TRUE, COMPLETE_NONE, "fuse",
     "the [fuse] rules to a fixed point", NULL},
    {"simplify", cmd_engine, 0, ARGS_ANY, TRUE, COMPLETE_NONE, "simplify",
     "the [simplify] rules to a fixed point", NULL},
    {"info", cmd_info, 1, 1, FALSE, COMPLETE_VALUE, "info VALUE",
     "a value's type, where it came from, and how it lies on the mesh",
     "Where it came from: the command that made it, or its operator in the\n"
     "program as loaded.  The tiles and sums around it, with the mesh axes\n"
     "they are bound to; for an argument or a result, its layout in the\n"
     "program lowered on the session's mesh."},
    {"undo", cmd_undo, 0, 1, TRUE, COMPLETE_NONE, "undo [N]",
     "go back one state (N states)", NULL},
    {"redo", cmd_undo, 0, 1, TRUE, COMPLETE_NONE, "redo [N]",
     "go forward one state (N states)", NULL},
    {"history", cmd_history, 0, 0, FALSE, COMPLETE_NONE, "history",
     "the commands that produced the current state (a script for 'source')",
     NULL},
    {"run", cmd_run, 0, ARGS_ANY, FALSE, COMPLETE_OPTIONS, "run [--seed N]",
     "run the interpreter on random arguments (as 'partir run --seed N')",
     NULL},
    {"exec", cmd_exec, 0, ARGS_ANY, FALSE, COMPLETE_OPTIONS,
     "exec [--mesh M] [--seed N] [--exact]",
     "run the program compiled for this CPU (as 'partir exec')",
     "On a mesh (--mesh, else the session's: set mesh) the program is\n"
     "lowered there and each device's program runs on a thread of its own;\n"
     "with no mesh ('--mesh none'), it runs on one device.  The arguments\n"
     "are those 'run --seed N' draws, the results printed as 'run' prints\n"
     "them.  --exact compiles the interpreter's arithmetic (bit for bit);\n"
     "by default each value is computed in its own type.  The program is\n"
     "compiled once per state, mesh and --exact."},
    {"bench", cmd_bench, 0, ARGS_ANY, FALSE, COMPLETE_OPTIONS,
     "bench [--mesh M] [--repeat N]",
     "the compiled step time, beside the interpreter's and the cost model's",
     "The compiled program (as 'exec' compiles it) runs N times (default\n"
     "5, at most 10000) on the arguments of 'run --seed 0': the median and\n"
     "the fastest.\n"
     "Then the interpreter's time for one run, and the time the cost model\n"
     "predicts on the mesh and the session's hardware (set hw)."},
    {"lower", cmd_lower, 0, 1, FALSE, COMPLETE_NONE, "lower [--dot]",
     "the SPMD program on the session's mesh (set mesh ...)", NULL},
    {"cost", cmd_cost, 0, 0, FALSE, COMPLETE_NONE, "cost",
     "FLOPs, memory, communication and time per device on the session's "
     "mesh and hardware (set mesh, set hw, set cost on)",
     NULL},
    {"stats", cmd_stats, 0, 0, FALSE, COMPLETE_NONE, "stats",
     "the collectives of the SPMD program, per kind and axis", NULL},
    {"export", cmd_export, 0, 3, FALSE, COMPLETE_OPTIONS,
     "export [--emit stablehlo|stablehlo-gspmd|stablehlo-spmd] [FILE]",
     "the program as StableHLO for JAX/XLA, on the session's mesh",
     "stablehlo (the default): the program as loaded, each argument and\n"
     "result with the Shardy sharding (sdy.sharding) the current state's\n"
     "lowering gives it: what jax.jit's in_shardings and out_shardings\n"
     "take.  stablehlo-gspmd: the same with GSPMD's mhlo.sharding strings.\n"
     "stablehlo-spmd: the program each device runs ('lower'), with\n"
     "StableHLO's collectives.  Printed, or written to FILE (atomically);\n"
     "docs/stablehlo.md, 'Export'."},
    {"grad", cmd_grad, 2, 10, TRUE, COMPLETE_OPTIONS,
     "grad --loss sum|mse|xent [--wrt w1,w2] [--params-from-arg N] "
     "[--optimizer sgd|momentum|adam] [--lr R]",
     "the program's training step becomes the program (docs/grad.md)",
     "(parameters, optimizer state, batch[, target]) -> (new parameters,\n"
     "new optimizer state, loss), differentiated by the vjp rules of\n"
     "rules/grad.rules.  The parameters: those named by --wrt, else every\n"
     "argument from --params-from-arg N on (default 1: all but the\n"
     "first).  A partitioned program is differentiated as it is; undo\n"
     "goes back to the model."},
    {"save", cmd_save, 1, 1, FALSE, COMPLETE_FILE, "save FILE",
     "write the program's canonical text to FILE (atomically)", NULL},
    {"lua", NULL, 0, ARGS_ANY, TRUE, COMPLETE_NONE, "lua CODE",
     "run Lua with 's' the current state and 'mesh' the mesh",
     "CODE is the rest of the line ('{' or 'function' left open continue it\n"
     "on the next lines).  If it returns a state, that becomes the current\n"
     "state (undo goes back); other results are printed.\n"
     "  lua s:arg_tile(0, 0, 8):propagate()\n"
     "  lua #s:matches('fuse')"},
    {"source", cmd_source, 1, 1, TRUE, COMPLETE_FILE, "source FILE",
     "run the commands in FILE (stops at the first failure)", NULL},
    {"tactic", cmd_tactic, 1, ARGS_ANY, TRUE, COMPLETE_TACTIC,
     "tactic SCRIPT [KEY=VALUE...]",
     "run a Lua tactic (a file, or NAME for a shipped one) with the mesh",
     "The script returns a function(state, mesh, options); KEY=VALUE pairs\n"
     "are its options.  What propagate could not resolve fails the tactic\n"
     "(unless it passes {tolerate = true}), and the program stays as it was."},
    {"search", cmd_search, 0, ARGS_ANY, TRUE, COMPLETE_OPTIONS,
     "search [--algo mcts|beam] [--budget N] [--time S] [--seed N] "
     "[--width N] [--emit-tactic FILE]",
     "find a partitioning: a search scored by the cost model",
     "Searches from the current program on the session's mesh and hardware\n"
     "(set mesh, set hw) as 'partir search' does (docs/search.md): actions\n"
     "split a group of alike arguments (the same weight of every layer)\n"
     "over a mesh axis and propagate; the data (the arguments whose first\n"
     "dimension the results carry) split only over an axis named batch.  The "
     "best state found becomes the\n"
     "current one ('undo' goes back); its cost is shown beside the\n"
     "program's, then the actions.  --emit-tactic writes them as a Lua\n"
     "tactic that 'tactic FILE' replays.  Ctrl-C stops the search and\n"
     "keeps the best so far."},
    {"set", cmd_set, 0, ARGS_ANY, FALSE, COMPLETE_SETTING, "set [NAME VALUE]",
     "show the settings, or set one",
     "  set mesh batch=2,model=4   the mesh tactics, Lua, lower, cost, exec\n"
     "                             and bench see\n"
     "                             ('none': no mesh; 'set mesh' alone shows "
     "it)\n"
     "  set show on|full|off       after a change, print what changed (on),\n"
     "                             the whole program (full) or nothing\n"
     "  set cost on|off            print the cost after it changes\n"
     "  set hw NAME                the hardware for 'cost' (cpu2, cpu2-mpi,\n"
     "                             h100x8, tpuv4, or a FILE.hw)"},
    {"help", cmd_help, 0, 1, FALSE, COMPLETE_COMMAND, "help [COMMAND]",
     "list the commands, or describe one", NULL},
    {"quit", cmd_quit, 0, ARGS_ANY, FALSE, COMPLETE_NONE, "quit",
     "end the session (also Ctrl-D)", NULL},
    {"exit", cmd_quit, 0, ARGS_ANY, FALSE, COMPLETE_NONE, "exit",
     "end the session", NULL},
};
const gsize repl_ncommands = G_N_ELEMENTS(repl_commands);

/* A linear search: the table is short and 'help' keeps its order. */
const Command *repl_find_command(const char *name) {
  for (gsize i = 0; i < repl_ncommands; i++)
    if (strcmp(repl_commands[i].name, name) == 0)
      return &repl_commands[i];
  return NULL;
}

/* " (did you mean 'NAME'?)" for a command name near 'word', or "". */
static char *command_did_you_mean(const char *word) {
  const char *names[G_N_ELEMENTS(repl_commands) + 1];
  for (gsize i = 0; i < repl_ncommands; i++)
    names[i] = repl_commands[i].name;
  names[repl_ncommands] = NULL;
  return diag_did_you_mean(word, names);
}

static gboolean cmd_help(Session *s, const char *text, int argc, char **argv) {
  g_autoptr(GString) out = g_string_new(NULL);
  if (argc == 2) {
    const Command *c = repl_find_command(argv[1]);
    if (!c) {
      g_autofree char *hint = command_did_you_mean(argv[1]);
      repl_report_error(s, "help: no command '%s'%s", argv[1], hint);
      return FALSE;
    }
    g_string_append_printf(out, "%s\n  %s\n", c->usage, c->summary);
    if (c->help) {
      g_auto(GStrv) lines = g_strsplit(c->help, "\n", -1);
      for (char **l = lines; *l; l++)
        g_string_append_printf(out, "  %s\n", *l);
    }
    repl_put_string(out);
    return TRUE;
  }
  g_string_append(out, "Commands end at a newline, at ';', or at a '.' "
                       "followed by a space:\n"
                       "  arg-tile 0 0 8. propagate.\n\n");
  for (gsize i = 0; i < repl_ncommands; i++)
    g_string_append_printf(out, "  %-34s %s\n", repl_commands[i].usage,
                           repl_commands[i].summary);
  g_string_append(out, "\nA line ending with '\\' continues on the next; "
                       "'#' starts a comment.\n"
                       "Values are named as the program prints them (%0, "
                       "%x); 'help COMMAND' says more.\n");
  repl_put_string(out);
  return TRUE;
}

/* ----------------------------------------------------- running a command */

gboolean repl_is_lua_command(const char *p) {
  return strncmp(p, "lua", 3) == 0 && (p[3] == '\0' || g_ascii_isspace(p[3]));
}

/* At the top level only: inside 'source', the 'source' line shows the
 * result.  What changed since the state last shown (or the whole
 * program, with 'set show full').  A failure to print the cost is
 * reported; the command that changed the program stands. */
void repl_show_changes(Session *s) {
  State *cur = repl_current(s);
  if (s->depth > 0)
    return;
  if (s->show != SHOW_OFF && s->changed && cur) {
    g_autoptr(GString) out = g_string_new(NULL);
    if (s->show == SHOW_FULL)
      state_print(out, cur, FALSE);
    else
      repl_describe_change(out, s, s->shown, cur);
    repl_put_string(out);
  } else if (s->show != SHOW_OFF && s->unchanged) {
    puts("no change");
  }
  if (s->cost && s->changed && cur)
    print_cost(s);
  if (s->changed) {
    if (s->shown)
      state_unref(s->shown);
    s->shown = cur ? state_ref(cur) : NULL;
  }
  s->changed = s->unchanged = FALSE;
}

/* 'lua CODE': what changed is shown before what the chunk prints. */
static gboolean run_lua_command(Session *s, const char *text) {
  const char *code = text + 3;
  while (g_ascii_isspace(*code))
    code++;
  repl_show_changes(s);
  return run_lua(s, text, code);
}

/* 'argc' words (the name and its arguments) are what 'c' takes; else
 * "usage: ..." and FALSE. */
static gboolean arguments_fit(Session *s, const Command *c, int argc) {
  int n = argc - 1;
  if (n >= c->min_args && (c->max_args == ARGS_ANY || n <= c->max_args))
    return TRUE;
  return usage_error(s, c->name);
}

/* The words are split as a shell would ('quotes', \ escapes).  A command
 * that only prints shows what the line changed first, so that the output
 * reads in order. */
gboolean repl_run_command(Session *s, const char *text) {
  if (repl_is_lua_command(text))
    return run_lua_command(s, text);
  int argc;
  g_auto(GStrv) argv = NULL;
  GError *error = NULL;
  if (!g_shell_parse_argv(text, &argc, &argv, &error)) {
    repl_report_error(s, "'%s': %s", text, error->message);
    g_error_free(error);
    return FALSE;
  }
  const Command *c = repl_find_command(argv[0]);
  if (!c) {
    g_autofree char *hint = command_did_you_mean(argv[0]);
    repl_report_error(s, "unknown command '%s'%s", argv[0],
                      *hint ? hint : " (try 'help')");
    return FALSE;
  }
  if (!c->changes)
    repl_show_changes(s);
  /* 'lua' runs only from the raw line (repl_is_lua_command): written
   * quoted, it reaches here and has nothing to run */
  if (!c->run)
    return usage_error(s, c->name);
  if (!arguments_fit(s, c, argc))
    return FALSE;
  return c->run(s, text, argc, argv);
}
