/* partir.c — the batch command-line interface, one subcommand a job.
 *
 *   partir check FILE                  parse and type-check
 *   partir fmt FILE [--expr]           canonical print (or expression form)
 *   partir run FILE [--input NAME=FILE.npy]... [--seed N] [--output DIR]
 *   partir rewrite FILE --do 'arg-tile 0 0 8; propagate' [-o OUT] [--expr]
 *   partir tactic SCRIPT.lua FILE [--mesh batch=2,model=4] [--set K=V] [-o OUT]
 *   partir rules                       every rule and where it comes from
 *
 * Diagnostics go to stderr as file:line:col with the source line and a
 * caret; the exit status is non-zero on any failure.  Outputs are written
 * only once everything has been computed, each file atomically, and
 * files written before a failure are removed: nothing is half-written.
 * Jobs run on a thread with a deep stack (term traversals recurse).
 */
#include "bind/bind.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>

typedef struct Job {
  int argc;
  char **argv;
} Job;

static void usage(FILE *to) {
  fputs("usage: partir COMMAND [OPTIONS] FILE\n"
        "\n"
        "commands:\n"
        "  check FILE            parse and type-check a program\n"
        "  fmt FILE [--expr]     print the canonical text (or the expression "
        "form)\n"
        "  run FILE [--input NAME=FILE.npy]... [--seed N] [--output DIR]\n"
        "                        run the reference interpreter\n"
        "  rewrite FILE --do 'CMD; CMD...' [-o OUT] [--expr]\n"
        "                        partition: arg-tile ARG DIM WIDTH [AXIS],\n"
        "                        tile VALUE DIM WIDTH [AXIS], sum VALUE WIDTH\n"
        "                        [AXIS], apply RULE [at VALUE] [K=V...],\n"
        "                        propagate, fuse, simplify\n"
        "  tactic SCRIPT.lua FILE [--mesh batch=2,model=4] [--set K=V]... "
        "[-o OUT]\n"
        "                        run a Lua tactic on a program\n"
        "  lower FILE --mesh batch=2,model=4 [--emit spmd|dot] [--stats]\n"
        "        [--simulate]    the SPMD program every device runs\n"
        "  cost FILE --mesh MESH [--hw cpu2|h100x8|tpuv4|FILE.hw] [--set "
        "K=V]\n"
        "                        FLOPs, memory, communication and time per "
        "device\n"
        "  rules                 list every rule and where it comes from\n"
        "  check-rules [FILES] [--seed N] [--tries N]\n"
        "                        check every rule against the interpreter\n"
        "  walk FILE [--walks N] [--steps N] [--seed N]\n"
        "                        random rewrite sequences must keep the "
        "meaning\n"
        "  (rule files: --rules FILE, else $PARTIR_RULES, else the installed "
        "ones)\n"
        "  help                  this text\n"
        "  --version             the version\n",
        to);
}

static void print_error(const char *what, GError *error) {
  g_printerr("partir: %s%s%s\n", what ? what : "", what ? ": " : "",
             error->message);
}

/* Writes 'out' to the -o file (whole or not at all), or to stdout
 * without -o; the exit status. */
static int write_result(const char *output, const GString *out) {
  if (!output) {
    fwrite(out->str, 1, out->len, stdout);
    return 0;
  }
  GError *error = NULL;
  if (partir_write_file(output, out->str, out->len, &error))
    return 0;
  print_error(NULL, error);
  g_error_free(error);
  return 1;
}

/* Loads and parses FILE; diagnostics go to stderr. */
static Module *load_module(const char *path) {
  GError *error = NULL;
  g_autoptr(GString) diags = g_string_new(NULL);
  Module *m = pipeline_load_program(path, diags, &error);
  if (error) {
    print_error(NULL, error);
    g_error_free(error);
  } else if (!m) {
    fputs(diags->str, stderr);
  }
  return m;
}

/* Parses the options of one subcommand; FALSE (with a message) when they
 * are wrong or when not exactly one FILE is left. */
static gboolean parse_options(const char *cmd, GOptionEntry *entries, int *argc,
                              char ***argv) {
  g_autofree char *param = g_strdup_printf("%s FILE", cmd);
  g_autoptr(GOptionContext) ctx = g_option_context_new(param);
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_set_help_enabled(ctx, TRUE);
  GError *error = NULL;
  if (!g_option_context_parse(ctx, argc, argv, &error)) {
    print_error(cmd, error);
    g_error_free(error);
    return FALSE;
  }
  if (*argc != 2) {
    g_printerr("partir: %s needs exactly one FILE (see 'partir help')\n", cmd);
    return FALSE;
  }
  return TRUE;
}

static int cmd_check(int argc, char **argv) {
  GOptionEntry entries[] = {{NULL}};
  if (!parse_options("check", entries, &argc, &argv))
    return 2;
  g_autoptr(Module) m = load_module(argv[1]);
  if (!m)
    return 1;
  g_print("%s: ok\n", argv[1]);
  return 0;
}

static int cmd_fmt(int argc, char **argv) {
  gboolean expr = FALSE;
  GOptionEntry entries[] = {
      {"expr", 0, 0, G_OPTION_ARG_NONE, &expr,
       "print the compact expression form", NULL},
      {NULL}};
  if (!parse_options("fmt", entries, &argc, &argv))
    return 2;
  g_autoptr(Module) m = load_module(argv[1]);
  if (!m)
    return 1;
  g_autoptr(GString) out = g_string_new(NULL);
  if (expr)
    print_module_expr(out, m);
  else
    print_module(out, m);
  fwrite(out->str, 1, out->len, stdout);
  return 0;
}

/* Reads one --input NAME=PATH into the argument slot it names. */
static gboolean load_input(const Func *f, const char *spec, Tensor **inputs,
                           GError **error) {
  const char *eq = strchr(spec, '=');
  if (!eq || eq == spec) {
    g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_INPUT,
                "--input '%s': expected NAME=FILE.npy", spec);
    return FALSE;
  }
  g_autofree char *name = g_strndup(spec, (gsize)(eq - spec));
  const char *bare = name[0] == '%' ? name + 1 : name;
  int index = -1;
  for (int i = 0; i < f->nargs; i++)
    if (strcmp(f->arg_names[i], bare) == 0)
      index = i;
  if (index < 0) {
    g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_INPUT,
                "--input %s: '@%s' has no argument '%%%s'", spec, f->name,
                bare);
    return FALSE;
  }
  if (inputs[index]) {
    g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_INPUT,
                "--input %s: argument '%%%s' given twice", spec, bare);
    return FALSE;
  }
  Tensor *t;
  if (!npy_read(eq + 1, &t, error))
    return FALSE;
  const Type *want = f->arg_types[index];
  /* bf16 arguments take f32 files (NumPy has no bf16), rounded on load */
  if (want->dtype == DT_BF16 && t->type->dtype == DT_F32 &&
      type_with_dtype(t->type, DT_BF16) == want) {
    Tensor *b = tensor_new(want);
    for (int64_t i = 0; i < type_numel(want); i++)
      b->f[i] = tensor_round_value(DT_BF16, t->f[i]);
    tensor_unref(t);
    t = b;
  }
  if (t->type != want) {
    g_autofree char *got = type_to_string(t->type);
    g_autofree char *exp = type_to_string(want);
    g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_INPUT,
                "--input %s: the file holds %s but '%%%s' is %s", spec, got,
                bare, exp);
    tensor_unref(t);
    return FALSE;
  }
  inputs[index] = t;
  return TRUE;
}

/* Writes every result as DIR/NAME.npy, or none of them. */
static gboolean write_outputs(const char *dir, const Module *m, const Func *f,
                              GPtrArray *results, GError **error) {
  if (g_mkdir_with_parents(dir, 0777) != 0) {
    int e = errno;
    g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_IO, "%s: %s", dir,
                g_strerror(e));
    return FALSE;
  }
  g_autoptr(GPtrArray) written = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GHashTable) used =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; i < results->len; i++) {
    char *name = func_result_name(m, f, (int)i);
    /* two results must not write one file (a user's %result0 and an
     * anonymous first result): number the later one */
    for (int k = 1; g_hash_table_contains(used, name); k++) {
      g_free(name);
      name = g_strdup_printf("result%u_%d", i, k);
    }
    g_hash_table_add(used, name);
    g_autofree char *file = g_strdup_printf("%s.npy", name);
    char *path = g_build_filename(dir, file, NULL);
    g_autoptr(GBytes) bytes = npy_encode(g_ptr_array_index(results, i));
    gsize len;
    const char *data = g_bytes_get_data(bytes, &len);
    if (!partir_write_file(path, data, len, error)) {
      g_free(path);
      for (guint k = 0; k < written->len; k++)
        g_unlink(g_ptr_array_index(written, k));
      return FALSE;
    }
    g_ptr_array_add(written, path);
  }
  return TRUE;
}

static int cmd_run(int argc, char **argv) {
  g_auto(GStrv) input_specs = NULL;
  gint64 seed = 0;
  g_autofree char *output = NULL;
  GOptionEntry entries[] = {
      {"input", 'i', 0, G_OPTION_ARG_STRING_ARRAY, &input_specs,
       "argument NAME from a NumPy file", "NAME=FILE.npy"},
      {"seed", 's', 0, G_OPTION_ARG_INT64, &seed,
       "seed for the random arguments (default 0)", "N"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
       "write each result to DIR/NAME.npy", "DIR"},
      {NULL}};
  if (!parse_options("run", entries, &argc, &argv))
    return 2;
  g_autoptr(Module) m = load_module(argv[1]);
  if (!m)
    return 1;
  Func *f = module_entry(m);
  Tensor **inputs = g_new0(Tensor *, (gsize)f->nargs + 1);
  GError *error = NULL;
  int status = 0;
  interp_check(f, &error);
  for (char **s = input_specs; s && *s && !error; s++)
    load_input(f, *s, inputs, &error);
  for (int i = 0; i < f->nargs && !error; i++) {
    if (!inputs[i])
      inputs[i] = interp_random_input(f, i, seed);
  }
  GPtrArray *results = error ? NULL : interp_run(f, inputs, &error);
  if (results && output)
    write_outputs(output, m, f, results, &error);
  if (error) {
    print_error(argv[1], error);
    g_error_free(error);
    status = 1;
  } else {
    g_autoptr(GString) out = g_string_new(NULL);
    for (guint i = 0; i < results->len; i++) {
      g_autofree char *name = func_result_name(m, f, (int)i);
      g_string_append_printf(out, "%s = ", name);
      tensor_print(out, g_ptr_array_index(results, i), 64);
      if (out->str[out->len - 1] != '\n')
        g_string_append_c(out, '\n');
    }
    fwrite(out->str, 1, out->len, stdout);
  }
  if (results)
    g_ptr_array_unref(results);
  for (int i = 0; i < f->nargs; i++)
    if (inputs[i])
      tensor_unref(inputs[i]);
  g_free(inputs);
  return status;
}

/* Loads the rule files named by --rules, or the default ones. */
static RuleSet *load_rules(char **files) {
  g_autoptr(GString) errors = g_string_new(NULL);
  RuleSet *rs = pipeline_load_rules((const char *const *)files, NULL, errors);
  if (!rs)
    fputs(errors->str, stderr);
  return rs;
}

static int cmd_rewrite(int argc, char **argv) {
  g_autofree char *script = NULL;
  g_autofree char *output = NULL;
  g_autofree char *matches = NULL;
  g_auto(GStrv) rule_files = NULL;
  gboolean expr = FALSE;
  GOptionEntry entries[] = {
      {"matches", 'm', 0, G_OPTION_ARG_STRING, &matches,
       "after the commands, list the values where RULE applies", "RULE"},
      {"do", 'd', 0, G_OPTION_ARG_STRING, &script,
       "the commands, separated by ';'", "SCRIPT"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
       "write the result to OUT (else stdout)", "OUT"},
      {"rules", 'r', 0, G_OPTION_ARG_FILENAME_ARRAY, &rule_files,
       "load these rule files", "FILE"},
      {"expr", 0, 0, G_OPTION_ARG_NONE, &expr,
       "print the compact expression form", NULL},
      {NULL}};
  if (!parse_options("rewrite", entries, &argc, &argv))
    return 2;
  if (!script && !matches) {
    g_printerr("partir: rewrite needs --do 'COMMANDS' (or --matches RULE)\n");
    return 2;
  }
  g_autoptr(RuleSet) rs = load_rules(rule_files);
  if (!rs)
    return 1;
  g_autoptr(Module) m = load_module(argv[1]);
  if (!m)
    return 1;
  g_autoptr(State) s0 = state_new(m);
  g_autoptr(GString) why = g_string_new(NULL);
  g_autoptr(GString) report = g_string_new(NULL);
  g_autoptr(State) s =
      pipeline_rewrite(rs, s0, script ? script : "", why, report);
  if (report->len) {
    g_auto(GStrv) lines = g_strsplit(report->str, "\n", -1);
    for (char **l = lines; *l; l++)
      if (**l)
        g_printerr("partir: propagate: %s\n", *l);
  }
  if (!s) {
    g_printerr("partir: %s: %s\n", argv[1], why->str);
    return 1;
  }
  g_autoptr(GString) out = g_string_new(NULL);
  if (matches) {
    const Rule *rule = ruleset_find(rs, matches);
    if (!rule) {
      g_printerr("partir: no rule '%s'\n", matches);
      return 1;
    }
    g_autoptr(GPtrArray) locs = rw_matches(rs, s, rule);
    for (guint i = 0; i < locs->len; i++)
      g_string_append_printf(out, "%%%s\n",
                             ((Location *)g_ptr_array_index(locs, i))->name);
  } else {
    state_print(out, s, expr);
  }
  return write_result(output, out);
}

static int cmd_rules(int argc, char **argv) {
  g_auto(GStrv) rule_files = NULL;
  GOptionEntry entries[] = {{"rules", 'r', 0, G_OPTION_ARG_FILENAME_ARRAY,
                             &rule_files, "load these rule files", "FILE"},
                            {NULL}};
  g_autoptr(GOptionContext) ctx = g_option_context_new("");
  g_option_context_add_main_entries(ctx, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &error) || argc != 1) {
    if (error) {
      print_error("rules", error);
      g_error_free(error);
    } else {
      g_printerr("partir: rules takes no FILE (use --rules FILE)\n");
    }
    return 2;
  }
  g_autoptr(RuleSet) rs = load_rules(rule_files);
  if (!rs)
    return 1;
  for (guint i = 0; i < rs->rules->len; i++) {
    const Rule *r = g_ptr_array_index(rs->rules, i);
    g_print("%-24s %s\n%-24s   %s\n", r->name, r->origin, "", r->text);
  }
  return 0;
}

static int cmd_check_rules(int argc, char **argv) {
  gint64 seed = 1, tries = 12;
  GOptionEntry entries[] = {
      {"seed", 's', 0, G_OPTION_ARG_INT64, &seed, "random seed (default 1)",
       "N"},
      {"tries", 't', 0, G_OPTION_ARG_INT64, &tries,
       "random programs per operator (default 12)", "N"},
      {NULL}};
  g_autoptr(GOptionContext) ctx = g_option_context_new("[RULE-FILES...]");
  g_option_context_add_main_entries(ctx, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
    print_error("check-rules", error);
    g_error_free(error);
    return 2;
  }
  g_autoptr(RuleSet) rs = load_rules(argc > 1 ? argv + 1 : NULL);
  if (!rs)
    return 1;
  g_autoptr(GString) out = g_string_new(NULL);
  gboolean ok = check_rules(rs, (guint32)seed, (int)CLAMP(tries, 1, 10000), out);
  fwrite(out->str, 1, out->len, stdout);
  return ok ? 0 : 1;
}

static int cmd_walk(int argc, char **argv) {
  gint64 seed = 1, walks = 100, steps = 8;
  g_auto(GStrv) rule_files = NULL;
  GOptionEntry entries[] = {
      {"seed", 's', 0, G_OPTION_ARG_INT64, &seed, "random seed (default 1)",
       "N"},
      {"walks", 'n', 0, G_OPTION_ARG_INT64, &walks,
       "random rewrite sequences (default 100)", "N"},
      {"steps", 'k', 0, G_OPTION_ARG_INT64, &steps,
       "steps per sequence (default 8)", "N"},
      {"rules", 'r', 0, G_OPTION_ARG_FILENAME_ARRAY, &rule_files,
       "load these rule files", "FILE"},
      {NULL}};
  if (!parse_options("walk", entries, &argc, &argv))
    return 2;
  g_autoptr(RuleSet) rs = load_rules(rule_files);
  if (!rs)
    return 1;
  g_autoptr(Module) m = load_module(argv[1]);
  if (!m)
    return 1;
  g_autoptr(GString) out = g_string_new(NULL);
  gboolean ok = check_walks(rs, m, (guint32)seed, (int)CLAMP(walks, 1, 1000000),
                             (int)CLAMP(steps, 1, 10000), out);
  fwrite(out->str, 1, out->len, stdout);
  if (ok)
    g_print("%s: %" G_GINT64_FORMAT " random rewrite sequences of %" G_GINT64_FORMAT
            " steps preserve the meaning\n",
            argv[1], walks, steps);
  return ok ? 0 : 1;
}

static int cmd_tactic(int argc, char **argv) {
  g_autofree char *mesh_spec = NULL;
  g_autofree char *output = NULL;
  g_auto(GStrv) sets = NULL;
  g_auto(GStrv) rule_files = NULL;
  gboolean expr = FALSE;
  GOptionEntry entries[] = {
      {"mesh", 'm', 0, G_OPTION_ARG_STRING, &mesh_spec,
       "the device mesh, e.g. batch=2,model=4", "MESH"},
      {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &sets,
       "an option for the tactic", "KEY=VALUE"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
       "write the result to OUT (else stdout)", "OUT"},
      {"rules", 'r', 0, G_OPTION_ARG_FILENAME_ARRAY, &rule_files,
       "load these rule files", "FILE"},
      {"expr", 0, 0, G_OPTION_ARG_NONE, &expr,
       "print the compact expression form", NULL},
      {NULL}};
  g_autoptr(GOptionContext) ctx = g_option_context_new("SCRIPT.lua FILE");
  g_option_context_add_main_entries(ctx, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
    print_error("tactic", error);
    g_error_free(error);
    return 2;
  }
  if (argc != 3) {
    g_printerr("partir: tactic needs SCRIPT.lua and FILE (see 'partir help')\n");
    return 2;
  }
  Mesh mesh;
  if (!mesh_parse(mesh_spec, &mesh, &error)) {
    print_error(NULL, error);
    g_error_free(error);
    return 2;
  }
  g_autoptr(GHashTable) options =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  for (char **kv = sets; kv && *kv; kv++) {
    const char *eq = strchr(*kv, '=');
    if (!eq || eq == *kv) {
      g_printerr("partir: --set %s: expected KEY=VALUE\n", *kv);
      return 2;
    }
    g_hash_table_insert(options, g_strndup(*kv, (gsize)(eq - *kv)),
                        g_strdup(eq + 1));
  }
  g_autoptr(RuleSet) rs = load_rules(rule_files);
  if (!rs)
    return 1;
  g_autoptr(Module) m = load_module(argv[2]);
  if (!m)
    return 1;
  g_autoptr(State) s0 = state_new(m);
  g_autoptr(GString) why = g_string_new(NULL);
  lua_State *L = plua_new(rs);
  LuaTactic tactic;
  if (L)
    plua_tactic_init(&tactic, L, argv[1], options);
  State *s = L ? pipeline_tactic(&tactic.base, s0, &mesh, why) : NULL;
  if (!L)
    g_string_assign(why, "cannot create a Lua state");
  if (!s) {
    g_printerr("partir: tactic %s: %s\n", argv[1], why->str);
    plua_close(L);
    return 1;
  }
  g_autoptr(GString) out = g_string_new(NULL);
  state_print(out, s, expr);
  state_unref(s);
  plua_close(L);
  return write_result(output, out);
}

/* A program file and the SPMD program it runs as on a mesh. */
typedef struct Loaded {
  RuleSet *rs;
  Module *m;
  Lowered l; /* the file's own when it is SPMD text, else its lowering */
} Loaded;

static void loaded_clear(Loaded *ld) {
  pipeline_lowered_clear(&ld->l);
  module_free(ld->m);
  ruleset_free(ld->rs);
}

/* FALSE (after saying why) when the mesh, the rules, the file or the
 * lowering fail; the status to return is in *status. */
static gboolean load_lowered(const char *path, const char *mesh_spec,
                             char **rule_files, Loaded *ld, int *status) {
  memset(ld, 0, sizeof *ld);
  Mesh mesh;
  GError *error = NULL;
  if (!mesh_parse(mesh_spec, &mesh, &error)) {
    print_error(NULL, error);
    g_error_free(error);
    *status = 2;
    return FALSE;
  }
  *status = 1;
  if (!(ld->rs = load_rules(rule_files)) || !(ld->m = load_module(path)))
    return FALSE;
  g_autoptr(GString) why = g_string_new(NULL);
  if (!pipeline_lower(ld->rs, module_entry(ld->m), &mesh, &ld->l, why)) {
    g_printerr("partir: %s: cannot lower on mesh %s: %s\n", path,
               mesh_spec ? mesh_spec : "(none)", why->str);
    return FALSE;
  }
  return TRUE;
}

static int cmd_lower(int argc, char **argv) {
  g_autofree char *mesh_spec = NULL;
  g_autofree char *emit = NULL;
  g_autofree char *output = NULL;
  g_auto(GStrv) rule_files = NULL;
  gboolean stats = FALSE, simulate = FALSE;
  gint64 seed = 0;
  GOptionEntry entries[] = {
      {"mesh", 'm', 0, G_OPTION_ARG_STRING, &mesh_spec,
       "the device mesh, e.g. batch=2,model=4", "MESH"},
      {"emit", 'e', 0, G_OPTION_ARG_STRING, &emit,
       "what to print: spmd (default) or dot", "spmd|dot"},
      {"stats", 0, 0, G_OPTION_ARG_NONE, &stats,
       "print the collectives per kind and axis", NULL},
      {"simulate", 0, 0, G_OPTION_ARG_NONE, &simulate,
       "run it on simulated devices and compare with the interpreter", NULL},
      {"seed", 's', 0, G_OPTION_ARG_INT64, &seed,
       "seed of the random inputs for --simulate (default 0)", "N"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
       "write the program to OUT (else stdout)", "OUT"},
      {"rules", 'r', 0, G_OPTION_ARG_FILENAME_ARRAY, &rule_files,
       "load these rule files", "FILE"},
      {NULL}};
  if (!parse_options("lower", entries, &argc, &argv))
    return 2;
  if (emit && strcmp(emit, "spmd") != 0 && strcmp(emit, "dot") != 0) {
    g_printerr("partir: lower --emit takes spmd or dot, not '%s'\n", emit);
    return 2;
  }
  Loaded ld;
  int status;
  if (!load_lowered(argv[1], mesh_spec, rule_files, &ld, &status)) {
    loaded_clear(&ld);
    return status;
  }
  const Lowered *l = &ld.l;
  GError *error = NULL;
  g_autoptr(GString) out = g_string_new(NULL);
  if (emit && strcmp(emit, "dot") == 0)
    spmd_print_dot(out, l->spmd);
  else
    print_func(out, l->owned ? NULL : ld.m, l->spmd);
  if (stats)
    spmd_print_stats(out, l->spmd);
  status = 0;
  if (simulate && !check_lowering(l->global, l->spmd, seed, out, &error)) {
    print_error(argv[1], error);
    g_error_free(error);
    status = 1;
  }
  if (status == 0)
    status = write_result(output, out);
  loaded_clear(&ld);
  return status;
}

static int cmd_cost(int argc, char **argv) {
  g_autofree char *mesh_spec = NULL;
  g_autofree char *hw_name = NULL;
  g_auto(GStrv) sets = NULL;
  g_auto(GStrv) rule_files = NULL;
  GOptionEntry entries[] = {
      {"mesh", 'm', 0, G_OPTION_ARG_STRING, &mesh_spec,
       "the device mesh, e.g. batch=2,model=4", "MESH"},
      {"hw", 0, 0, G_OPTION_ARG_STRING, &hw_name,
       "hardware description: a name (cpu2, h100x8, tpuv4) or a .hw file "
       "(default cpu2)",
       "HW"},
      {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &sets,
       "what if: change a hardware figure (link_bw=2x, memory_bytes=80e9)",
       "KEY=VALUE"},
      {"rules", 'r', 0, G_OPTION_ARG_FILENAME_ARRAY, &rule_files,
       "load these rule files", "FILE"},
      {NULL}};
  if (!parse_options("cost", entries, &argc, &argv))
    return 2;
  GError *error = NULL;
  Hardware hw;
  if (!hw_load(hw_name ? hw_name : "cpu2", &hw, &error)) {
    print_error(NULL, error);
    g_error_free(error);
    return 2;
  }
  for (char **kv = sets; kv && *kv; kv++)
    if (!hw_set(&hw, *kv, &error)) {
      print_error("--set", error);
      g_error_free(error);
      return 2;
    }
  Loaded ld;
  int status;
  if (!load_lowered(argv[1], mesh_spec, rule_files, &ld, &status)) {
    loaded_clear(&ld);
    return status;
  }
  g_auto(CostReport) r = {0};
  if (!pipeline_cost(ld.m, &ld.l, &hw, &r, &error)) {
    print_error(argv[1], error);
    g_error_free(error);
    loaded_clear(&ld);
    return 1;
  }
  g_autoptr(GString) out = g_string_new(NULL);
  cost_print(out, &r, &hw, &ld.l.spmd->spmd->mesh);
  fwrite(out->str, 1, out->len, stdout);
  loaded_clear(&ld);
  return 0;
}

static const struct {
  const char *name;
  int (*run)(int argc, char **argv);
} commands[] = {
    {"check", cmd_check},       {"fmt", cmd_fmt},
    {"run", cmd_run},           {"rewrite", cmd_rewrite},
    {"rules", cmd_rules},       {"check-rules", cmd_check_rules},
    {"walk", cmd_walk},         {"tactic", cmd_tactic},
    {"lower", cmd_lower},       {"cost", cmd_cost},
};

static int run_job(void *data) {
  Job *job = data;
  const char *cmd = job->argv[1];
  for (gsize i = 0; i < G_N_ELEMENTS(commands); i++)
    if (strcmp(cmd, commands[i].name) == 0)
      return commands[i].run(job->argc - 1, job->argv + 1);
  if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 ||
      strcmp(cmd, "-h") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(cmd, "--version") == 0) {
    g_print("partir %s\n", partir_version());
    return 0;
  }
  g_printerr("partir: unknown command '%s'\n", cmd);
  usage(stderr);
  return 2;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  /* run from the build tree: use its rules and tactics when none are
   * configured */
  const char *const trees[][2] = {{"PARTIR_RULES", "rules/ops.rules"},
                                  {"PARTIR_TACTICS", "tactics/batch.lua"},
                                  {"PARTIR_HW", "hw/cpu2.hw"}};
  for (gsize i = 0; i < G_N_ELEMENTS(trees); i++) {
    if (g_getenv(trees[i][0]))
      continue;
    g_autofree char *exe = g_file_read_link("/proc/self/exe", NULL);
    if (!exe)
      exe = g_canonicalize_filename(argv[0], NULL);
    g_autofree char *dir = g_path_get_dirname(exe);
    g_autofree char *rel = g_build_filename("..", trees[i][1], NULL);
    g_autofree char *probe = g_canonicalize_filename(rel, dir);
    if (g_file_test(probe, G_FILE_TEST_EXISTS)) {
      g_autofree char *found = g_path_get_dirname(probe);
      g_setenv(trees[i][0], found, TRUE);
    }
  }
  Job job = {argc, argv};
  int status = partir_call_with_stack(run_job, &job);
  if (fflush(stdout) != 0) {
    g_printerr("partir: writing output: %s\n", g_strerror(errno));
    return 1;
  }
  return status;
}
