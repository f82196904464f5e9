/* partir.c — the batch command-line interface, one subcommand a job.
 *
 *   partir check FILE                  parse and type-check
 *   partir fmt FILE [--expr]           canonical print (or expression form)
 *   partir import FILE.mlir [-o OUT]   StableHLO (JAX, PyTorch/XLA) as .pir,
 *                                      its shardings applied (every command
 *                                      that loads one: --shardings
 *                                      apply|ignore)
 *   partir run FILE [--input NAME=FILE.npy]... [--seed N] [--output DIR]
 *   partir exec FILE [--mesh MESH] [run's options] [--exact] [--blas B]
 *               [--repeat N] [--profile]   compiled (LLVM): one device, or
 *               [--runtime threads|mpi|cuda|cuda-mpi]  a thread per
 *                                          device, a rank, a GPU, a GPU
 *                                          per rank
 *   partir compile FILE [--mesh MESH] [--emit llvm|asm|obj|fusion] [-o OUT]
 *               [--target nvptx [--arch sm_90] --emit ptx|gpu-plan]
 *   partir rewrite FILE --do 'arg-tile 0 0 8; propagate' [-o OUT] [--expr]
 *               [--hw HW] [--set K=V]  (what propagate --resolve prices on)
 *   partir tactic SCRIPT.lua FILE [--mesh batch=2,model=4] [--set K=V] [-o OUT]
 *               [--hw HW]
 *   partir lower FILE --mesh MESH [--emit spmd|dot] [--stats] [--simulate]
 *   partir cost FILE --mesh MESH [--hw HW] [--set K=V]
 *   partir export FILE --mesh MESH [--tactic T.lua [--set K=V]] [--do CMDS]
 *               [--emit stablehlo|stablehlo-gspmd|stablehlo-spmd] [-o OUT]
 *   partir search FILE --mesh MESH [--hw HW] [--algo mcts|beam]
 *               [--budget STATES | --time SECONDS] [--seed N] [-o OUT.pir]
 *               [--emit-tactic OUT.lua]   the best partitioning found
 *   partir calibrate [--devices N] [--runs N] [--passes N] [-o OUT.hw]
 *                                      this machine's figures, measured
 *   partir rules                       every rule and where it comes from
 *   partir check-rules [FILES]         every rule against the interpreter
 *                                    (the FILEs, as --rules FILE)
 *   partir walk FILE                   random rewrites keep the meaning
 *
 * Options are declared once.  The ones several subcommands share live in
 * option groups — rules (--rules), mesh (--mesh), hardware (--hw), its
 * what-ifs (--set), output (-o OUT), expr (--expr) and how a program
 * loads (--shardings: a StableHLO file's own shardings) — each one static
 * GOptionEntry table writing into the one 'Options' of the job.  A
 * subcommand is a row of 'commands': its name, its positional
 * arguments and how many there must be, the groups it takes, the entries
 * that are its own, and its handler.  'command_parse' builds the
 * subcommand's option context from that row and checks the positional
 * count, so a handler starts with its options parsed and its FILEs in
 * hand.  Two subcommands may give one option name different meanings
 * ('--set' is a tactic option for tactic, a hardware what-if for cost)
 * as long as no subcommand takes both.
 *
 * Diagnostics go to stderr as file:line:col with the source line and a
 * caret; the exit status is 2 for a usage error and 1 for any other
 * failure.  Outputs are written only once everything has been computed,
 * each file atomically, and files written before a failure are removed:
 * nothing is half-written.  Jobs run on a thread with a deep stack (term
 * traversals recurse).
 */
#include "bind/bind.h"
#include "codegen/codegen.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <locale.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *to) {
  fputs("usage: partir COMMAND [OPTIONS] FILE\n"
        "\n"
        "commands:\n"
        "  check FILE            parse and type-check a program\n"
        "  fmt FILE [--expr]     print the canonical text (or the expression "
        "form)\n"
        "  import FILE.mlir [-o OUT.pir]\n"
        "                        StableHLO text (from JAX or PyTorch/XLA) "
        "as a\n"
        "                        .pir program; every command that takes a\n"
        "                        FILE takes .mlir too (docs/stablehlo.md)\n"
        "  grad FILE --loss sum|mse|xent [--wrt w1,w2|--params-from-arg N]\n"
        "       [--optimizer sgd|momentum|adam] [--lr 0.01] [-o TRAIN.pir]\n"
        "                        the model's training step: (parameters,\n"
        "                        optimizer state, batch) -> (new ones, loss)\n"
        "                        (docs/grad.md)\n"
        "  run FILE [--input NAME=FILE.npy]... [--seed N] [--output DIR]\n"
        "                        run the reference interpreter\n"
        "  exec FILE [--mesh batch=2,model=2] [--input NAME=FILE.npy]...\n"
        "       [--seed N] [--output DIR] [--exact] [--blas none|openblas]\n"
        "       [--repeat N] [--profile]\n"
        "       [--runtime threads|mpi|cuda|cuda-mpi]\n"
        "                        run it compiled for this CPU: on one\n"
        "                        device, or lowered on the mesh, a thread\n"
        "                        a device (mpi: a rank a device; cuda: a\n"
        "                        GPU a device; cuda-mpi: a rank and its\n"
        "                        GPU a device)\n"
        "  compile FILE [--mesh M] [--emit llvm|asm|obj|fusion] [-o OUT]\n"
        "                        the code 'exec' runs: optimized LLVM IR,\n"
        "                        the host's assembly, an object, or the\n"
        "                        kernels and what each fuses; with\n"
        "                        --target nvptx [--arch sm_80|sm_90],\n"
        "                        --emit ptx|gpu-plan: GPU kernels and the\n"
        "                        launch plan (docs/gpu.md)\n"
        "  rewrite FILE --do 'CMD; CMD...' [-o OUT] [--expr] [--hw HW]\n"
        "                        partition: arg-tile ARG DIM WIDTH [AXIS],\n"
        "                        tile VALUE DIM WIDTH [AXIS], sum VALUE WIDTH\n"
        "                        [AXIS], apply RULE [at VALUE] [K=V...],\n"
        "                        propagate [--resolve], push, fuse, simplify\n"
        "  tactic SCRIPT.lua FILE [--mesh batch=2,model=4] [--set K=V]... "
        "[-o OUT]\n"
        "         [--hw HW]      run a Lua tactic on a program\n"
        "  lower FILE --mesh batch=2,model=4 [--emit spmd|dot] [--stats]\n"
        "        [--simulate]    the SPMD program every device runs\n"
        "  cost FILE --mesh MESH [--hw cpu2|h100x8|tpuv4|FILE.hw] [--set "
        "K=V]\n"
        "                        FLOPs, memory, communication and time per "
        "device\n"
        "  export FILE --mesh MESH [--tactic T.lua] [--do 'CMD; ...']\n"
        "         [--emit stablehlo|stablehlo-gspmd|stablehlo-spmd] [-o OUT]\n"
        "                        StableHLO for JAX/XLA: the program with the\n"
        "                        shardings of its partitioning, or each\n"
        "                        device's program with collectives\n"
        "  search FILE --mesh M [--hw HW] [--algo mcts|beam] [--budget N]\n"
        "         [--time S] [--seed N] [-o OUT.pir] [--emit-tactic OUT.lua]\n"
        "                        find a partitioning: a search scored by\n"
        "                        the cost model (docs/search.md)\n"
        "  calibrate [--devices N] [--runs N] [--passes N] [-o OUT.hw]\n"
        "                        measure this machine for the cost model: a\n"
        "                        hardware description, each figure from a\n"
        "                        compiled program, N devices at once\n"
        "  rules                 list every rule and where it comes from\n"
        "  check-rules [FILES] [--seed N] [--tries N]\n"
        "                        check every rule against the interpreter\n"
        "  walk FILE [--walks N] [--steps N] [--seed N]\n"
        "                        random rewrite sequences must keep the "
        "meaning\n"
        "  (rule files: --rules FILE, else $PARTIR_RULES, else the installed "
        "ones)\n"
        "  (a StableHLO file's mesh and shardings: applied, or left with\n"
        "   --shardings ignore; a --mesh must be the file's; "
        "docs/stablehlo.md)\n"
        "  help                  this text\n"
        "  --version             the version\n",
        to);
}

static void print_error(const char *what, GError *error) {
  g_printerr("partir: %s%s%s\n", what ? what : "", what ? ": " : "",
             error->message);
}

/* The same for the reason a Diag holds (user input without a file). */
static void print_reason(const char *what, const Diag *diag) {
  g_printerr("partir: %s%s%s\n", what ? what : "", what ? ": " : "",
             diag_text(diag));
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

/* Loads and parses FILE as written; diagnostics go to stderr. */
static Module *load_module(const char *path) {
  GError *error = NULL;
  g_autoptr(Diag) diags = diag_new(NULL);
  Module *m = pipeline_load_program(path, diags, &error);
  if (error) {
    print_error(NULL, error);
    g_error_free(error);
  } else if (!m) {
    fputs(diag_text(diags), stderr);
  }
  return m;
}

/* Every option of every subcommand; a job parses one subcommand's. */
typedef struct Options {
  char **rule_files;  /* --rules FILE... (group rules) */
  char *mesh;         /* --mesh MESH (group mesh) */
  char *hw;           /* --hw HW (group hardware) */
  char **hw_sets;     /* --set KEY=VALUE... what-ifs (group hardware) */
  char *output;       /* -o OUT (group output) */
  gboolean expr;      /* --expr (group expr) */
  char **inputs;      /* run --input NAME=FILE.npy... */
  char *output_dir;   /* run --output DIR */
  gint64 input_seed;  /* run and lower --seed: the random inputs */
  char *script;       /* rewrite --do */
  char *matches;      /* rewrite --matches RULE */
  char **tactic_sets; /* tactic --set KEY=VALUE... */
  char *emit;         /* lower, compile and export --emit */
  char *tactic;       /* export --tactic SCRIPT.lua */
  gboolean stats;     /* lower --stats */
  gboolean simulate;  /* lower --simulate */
  gint64 check_seed;  /* check-rules and walk --seed */
  gint64 tries;       /* check-rules --tries */
  gint64 walks;       /* walk --walks */
  gint64 steps;       /* walk --steps */
  gboolean exact;     /* exec and compile --exact */
  char *blas;         /* exec and compile --blas */
  char *target;       /* exec and compile --target */
  char *arch;         /* exec and compile --arch */
  gint64 repeat;      /* exec --repeat */
  gboolean profile;   /* exec --profile */
  char *runtime;      /* exec --runtime */
  gint64 devices;     /* calibrate --devices (G_MININT64: the CPUs) */
  gint64 runs;        /* calibrate --runs */
  gint64 passes;      /* calibrate --passes */
  char *shardings;    /* --shardings apply|ignore (group load) */
  char *loss;         /* grad --loss */
  char *wrt;          /* grad --wrt a,b */
  gint64 params_from; /* grad --params-from-arg (G_MININT64: not given) */
  char *optimizer;    /* grad --optimizer */
  double lr;          /* grad --lr */
} Options;

/* The job's options, at their defaults until a subcommand parses them
 * (static because the entry tables below point into it). */
static Options opt = {.check_seed = 1,
                      .tries = 12,
                      .walks = 100,
                      .steps = 8,
                      .devices = G_MININT64, /* unset: a device a CPU */
                      .runs = 5,
                      .passes = 3,
                      .params_from = G_MININT64, /* not given */
                      .lr = 0.01};

static void options_clear(Options *o) {
  g_strfreev(o->rule_files);
  g_free(o->mesh);
  g_free(o->hw);
  g_strfreev(o->hw_sets);
  g_free(o->output);
  g_strfreev(o->inputs);
  g_free(o->output_dir);
  g_free(o->script);
  g_free(o->matches);
  g_strfreev(o->tactic_sets);
  g_free(o->emit);
  g_free(o->tactic);
  g_free(o->blas);
  g_free(o->target);
  g_free(o->arch);
  g_free(o->runtime);
  g_free(o->shardings);
  g_free(o->loss);
  g_free(o->wrt);
  g_free(o->optimizer);
}

/* The option groups several subcommands share, each declared here once. */
typedef enum OptionGroup {
  GROUP_MESH = 1 << 0,     /* --mesh */
  GROUP_HARDWARE = 1 << 1, /* --hw */
  GROUP_OUTPUT = 1 << 2,   /* -o OUT */
  GROUP_RULES = 1 << 3,    /* --rules */
  GROUP_EXPR = 1 << 4,     /* --expr */
  GROUP_CODEGEN = 1 << 5,  /* --exact, --blas, --target, --arch */
  GROUP_EXEC = 1 << 6,     /* --repeat, --profile, --runtime */
  GROUP_WHAT_IF = 1 << 7,  /* --set what-ifs (tactic's --set is its own) */
  GROUP_LOAD = 1 << 8,     /* --shardings */
} OptionGroup;

static const GOptionEntry mesh_entries[] = {
    {"mesh", 'm', 0, G_OPTION_ARG_STRING, &opt.mesh,
     "the device mesh, e.g. batch=2,model=4", "MESH"},
    G_OPTION_ENTRY_NULL};

static const GOptionEntry load_entries[] = {
    {"shardings", 0, 0, G_OPTION_ARG_STRING, &opt.shardings,
     "a StableHLO file's shardings: apply them (the default: its mesh, "
     "then arg-tile and tile commands and propagate) or ignore them",
     "apply|ignore"},
    G_OPTION_ENTRY_NULL};

static const GOptionEntry hardware_entries[] = {
    {"hw", 0, 0, G_OPTION_ARG_STRING, &opt.hw,
     "hardware description: a name (cpu2, cpu2-mpi, h100x8, tpuv4) or a .hw "
     "file (default cpu2)",
     "HW"},
    G_OPTION_ENTRY_NULL};

static const GOptionEntry what_if_entries[] = {
    {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt.hw_sets,
     "what if: change a hardware figure (link_bw=2x, memory_bytes=80e9)",
     "KEY=VALUE"},
    G_OPTION_ENTRY_NULL};

static const GOptionEntry output_entries[] = {
    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &opt.output,
     "write the result to OUT (else stdout)", "OUT"},
    G_OPTION_ENTRY_NULL};

static const GOptionEntry rules_entries[] = {
    {"rules", 'r', 0, G_OPTION_ARG_FILENAME_ARRAY, &opt.rule_files,
     "load these rule files", "FILE"},
    G_OPTION_ENTRY_NULL};

static const GOptionEntry expr_entries[] = {
    {"expr", 0, 0, G_OPTION_ARG_NONE, &opt.expr,
     "print the compact expression form", NULL},
    G_OPTION_ENTRY_NULL};

static const GOptionEntry codegen_entries[] = {
    {"exact", 0, 0, G_OPTION_ARG_NONE, &opt.exact,
     "the interpreter's arithmetic, bit for bit (else each value in its "
     "own type, with polynomial transcendentals)",
     NULL},
    {"blas", 0, 0, G_OPTION_ARG_STRING, &opt.blas,
     "matrix products: none (the generated kernel, the default) or openblas",
     "none|openblas"},
    {"target", 0, 0, G_OPTION_ARG_STRING, &opt.target,
     "what the code runs on: host (this CPU, the default) or nvptx (NVIDIA "
     "GPUs: PTX kernels, cuBLAS, NCCL)",
     "host|nvptx"},
    {"arch", 0, 0, G_OPTION_ARG_STRING, &opt.arch,
     "the GPU architecture of --target nvptx: sm_80 (the default) or sm_90",
     "sm_80|sm_90"},
    G_OPTION_ENTRY_NULL};

static const GOptionEntry exec_entries[] = {
    {"repeat", 0, 0, G_OPTION_ARG_INT64, &opt.repeat,
     "then run N more steps and report their min and median time", "N"},
    {"profile", 0, 0, G_OPTION_ARG_NONE, &opt.profile,
     "report the time of each kernel and collective", NULL},
    {"runtime", 0, 0, G_OPTION_ARG_STRING, &opt.runtime,
     "where the devices run: threads (the default: one per device), mpi "
     "(under mpirun: one rank per device, docs/runtime.md), cuda (a GPU "
     "per device, NCCL between them, docs/gpu.md) or cuda-mpi (under "
     "mpirun: one rank per device, each driving a GPU, docs/gpu.md)",
     "threads|mpi|cuda|cuda-mpi"},
    G_OPTION_ENTRY_NULL};

/* In the order --help lists them, after a subcommand's own entries. */
static const struct {
  OptionGroup group;
  const GOptionEntry *entries;
} option_groups[] = {
    {GROUP_MESH, mesh_entries},       {GROUP_HARDWARE, hardware_entries},
    {GROUP_WHAT_IF, what_if_entries}, {GROUP_OUTPUT, output_entries},
    {GROUP_RULES, rules_entries},     {GROUP_EXPR, expr_entries},
    {GROUP_CODEGEN, codegen_entries}, {GROUP_EXEC, exec_entries},
    {GROUP_LOAD, load_entries},
};

/* One subcommand: what it takes and what runs it. */
typedef struct Command {
  const char *name;
  const char *params;      /* its positional arguments, for --help */
  int nfiles;              /* how many there must be; -1: any number */
  const char *wrong_count; /* what to say when there are not 'nfiles' */
  unsigned groups;         /* the OptionGroups it takes */
  const GOptionEntry *own; /* the options only it takes, or NULL */
  int (*run)(const Options *o, char **files);
} Command;

/* Parses the options of subcommand 'c' (its own, then the shared groups
 * it takes) out of argc/argv, leaving the positional arguments; FALSE
 * (with a message) when they are wrong or there are not 'c->nfiles'. */
static gboolean command_parse(const Command *c, int *argc, char ***argv) {
  g_autofree char *param =
      g_strjoin(*c->params ? " " : "", c->name, c->params, NULL);
  g_autoptr(GOptionContext) ctx = g_option_context_new(param);
  if (c->own)
    g_option_context_add_main_entries(ctx, c->own, NULL);
  for (gsize i = 0; i < G_N_ELEMENTS(option_groups); i++)
    if (c->groups & option_groups[i].group)
      g_option_context_add_main_entries(ctx, option_groups[i].entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(ctx, argc, argv, &error)) {
    print_error(c->name, error);
    g_error_free(error);
    return FALSE;
  }
  if (c->nfiles >= 0 && *argc - 1 != c->nfiles) {
    g_printerr("partir: %s %s\n", c->name, c->wrong_count);
    return FALSE;
  }
  gboolean ignore;
  g_autoptr(Diag) why = diag_new(NULL);
  if (opt.shardings &&
      !pipeline_shardings_option(opt.shardings, &ignore, why)) {
    print_reason(c->name, why);
    return FALSE;
  }
  return TRUE;
}

/* The --mesh of the job into 'mesh' (no axes when not given); FALSE
 * (with a message) when it is malformed. */
static gboolean job_mesh(const Options *o, Mesh *mesh) {
  g_autoptr(Diag) diag = diag_new(NULL);
  if (mesh_parse(o->mesh, mesh, diag))
    return TRUE;
  print_reason(NULL, diag);
  return FALSE;
}

/* FILE as the job's options load it (--shardings; 'mesh', the --mesh
 * given, or none; the rules 'rs', NULL: the default ones when a file's
 * shardings need them), into 'p'; FALSE after saying why. */
static gboolean open_program(const char *path, const Options *o,
                             const Mesh *mesh, const RuleSet *rs, Program *p) {
  LoadOptions lo = {.mesh = mesh, .rs = rs};
  if (o->shardings)
    lo.ignore_shardings = strcmp(o->shardings, "ignore") == 0;
  GError *error = NULL;
  g_autoptr(Diag) diags = diag_new(NULL);
  if (pipeline_open_program(path, &lo, p, diags, &error))
    return TRUE;
  if (error) {
    print_error(NULL, error);
    g_error_free(error);
  } else {
    fputs(diag_text(diags), stderr);
  }
  return FALSE;
}

/* Loads the rule files named by --rules, or the default ones. */
static RuleSet *load_rules(char **files) {
  g_autoptr(Diag) errors = diag_new(NULL);
  RuleSet *rs = pipeline_load_rules((const char *const *)files, NULL, errors);
  if (!rs)
    fputs(diag_text(errors), stderr);
  return rs;
}

/* What a command runs on, in the order it reports failures: the mesh
 * (--mesh, else the file's; 2 when it is bad), the rules when 'rs' is
 * given (1), then FILE with its shardings (1).  0 when all are there. */
static int open_job(const char *path, const Options *o, RuleSet **rs,
                    Program *p) {
  Mesh mesh;
  if (!job_mesh(o, &mesh))
    return 2;
  if (rs && !(*rs = load_rules(o->rule_files)))
    return 1;
  return open_program(path, o, &mesh, rs ? *rs : NULL, p) ? 0 : 1;
}

static int cmd_check(const Options *o, char **files) {
  g_auto(Program) p = {0};
  int status = open_job(files[0], o, NULL, &p);
  if (status)
    return status;
  g_print("%s: ok\n", files[0]);
  return 0;
}

/* The program's text: the whole module as written, or, after the
 * commands its shardings became, the program they made. */
static void print_program(GString *out, const Program *p, gboolean expr) {
  if (p->steps->len > 0)
    state_print(out, pipeline_program_state(p), expr);
  else if (expr)
    print_module_expr(out, p->module);
  else
    print_module(out, p->module);
}

static int cmd_fmt(const Options *o, char **files) {
  g_auto(Program) p = {0};
  int status = open_job(files[0], o, NULL, &p);
  if (status)
    return status;
  g_autoptr(GString) out = g_string_new(NULL);
  print_program(out, &p, o->expr);
  fwrite(out->str, 1, out->len, stdout);
  return 0;
}

/* The .pir text of a program, StableHLO included: what 'fmt' prints,
 * to the -o file when given. */
static int cmd_import(const Options *o, char **files) {
  g_auto(Program) p = {0};
  int status = open_job(files[0], o, NULL, &p);
  if (status)
    return status;
  g_autoptr(GString) out = g_string_new(NULL);
  print_program(out, &p, FALSE);
  return write_result(o->output, out);
}

/* Reads one --input NAME=PATH into the argument slot it names. */
static gboolean load_input(const Func *f, const char *spec, Tensor **inputs,
                           Diag *diag, GError **error) {
  const char *eq = strchr(spec, '=');
  if (!eq || eq == spec) {
    diag_reason(diag, "--input '%s': expected NAME=FILE.npy", spec);
    return FALSE;
  }
  g_autofree char *name = g_strndup(spec, (gsize)(eq - spec));
  const char *bare = name[0] == '%' ? name + 1 : name;
  int index = -1;
  for (int i = 0; i < f->nargs; i++)
    if (strcmp(f->arg_names[i], bare) == 0)
      index = i;
  if (index < 0) {
    diag_reason(diag, "--input %s: '@%s' has no argument '%%%s'", spec, f->name,
                bare);
    return FALSE;
  }
  if (inputs[index]) {
    diag_reason(diag, "--input %s: argument '%%%s' given twice", spec, bare);
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
      tensor_set_float(b, i, tensor_get_float(t, i));
    tensor_unref(t);
    t = b;
  }
  if (t->type != want) {
    g_autofree char *got = type_to_string(t->type);
    g_autofree char *exp = type_to_string(want);
    diag_reason(diag, "--input %s: the file holds %s but '%%%s' is %s", spec,
                got, bare, exp);
    tensor_unref(t);
    return FALSE;
  }
  inputs[index] = t;
  return TRUE;
}

/* Writes every result as DIR/NAME.npy, or none of them: the files that
 * were there stay as they were, and a directory made for them goes. */
static gboolean write_outputs(const char *dir, const Module *m, const Func *f,
                              GPtrArray *results, GError **error) {
  gboolean made = !g_file_test(dir, G_FILE_TEST_EXISTS);
  if (g_mkdir_with_parents(dir, 0777) != 0) {
    int e = errno;
    g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_IO, "%s: %s", dir,
                g_strerror(e));
    return FALSE;
  }
  guint n = results->len;
  g_autoptr(GPtrArray) paths = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) encoded =
      g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
  g_autofree const char **data = g_new(const char *, n + 1);
  g_autofree gsize *lens = g_new(gsize, n + 1);
  g_autoptr(GHashTable) used =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; i < n; i++) {
    char *name = func_result_name(m, f, (int)i);
    /* two results must not write one file (a user's %result0 and an
     * anonymous first result): number the later one */
    for (int k = 1; g_hash_table_contains(used, name); k++) {
      g_free(name);
      name = g_strdup_printf("result%u_%d", i, k);
    }
    g_hash_table_add(used, name);
    g_autofree char *file = g_strdup_printf("%s.npy", name);
    g_ptr_array_add(paths, g_build_filename(dir, file, NULL));
    GBytes *bytes = npy_encode(g_ptr_array_index(results, i));
    g_ptr_array_add(encoded, bytes);
    data[i] = g_bytes_get_data(bytes, &lens[i]);
  }
  if (partir_write_files((int)n, (const char *const *)paths->pdata, data, lens,
                         error))
    return TRUE;
  if (made)
    g_rmdir(dir); /* made for the results: empty again */
  return FALSE;
}

/* Fills every argument slot of 'f': from the --input files, the rest at
 * random from 'seed'. */
static gboolean run_gather_inputs(const Func *f, char **specs, gint64 seed,
                                  Tensor **inputs, Diag *diag, GError **error) {
  if (!interp_check(f, diag))
    return FALSE;
  for (char **s = specs; s && *s; s++)
    if (!load_input(f, *s, inputs, diag, error))
      return FALSE;
  for (int i = 0; i < f->nargs; i++) {
    if (!inputs[i])
      inputs[i] = interp_random_input(f, i, seed);
  }
  return TRUE;
}

/* Prints each result as NAME = TENSOR. */
static void run_print_results(const Module *m, const Func *f,
                              GPtrArray *results) {
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

static const GOptionEntry run_entries[] = {
    {"input", 'i', 0, G_OPTION_ARG_STRING_ARRAY, &opt.inputs,
     "argument NAME from a NumPy file", "NAME=FILE.npy"},
    {"seed", 's', 0, G_OPTION_ARG_INT64, &opt.input_seed,
     "seed for the random arguments (default 0)", "N"},
    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &opt.output_dir,
     "write each result to DIR/NAME.npy", "DIR"},
    G_OPTION_ENTRY_NULL};

typedef struct Loaded {
  RuleSet *rs;
  Program p;
  State *s;  /* the program after its own commands (p's) */
  Lowered l; /* the file's own when it is SPMD text, else its lowering */
} Loaded;

static void loaded_clear(Loaded *ld) {
  pipeline_lowered_clear(&ld->l);
  pipeline_program_clear(&ld->p);
  ruleset_free(ld->rs);
}

/* The rules and FILE: FALSE (after saying why) when one fails; the
 * status to return is in *status. */
static gboolean load_rules_program(const char *path, const Options *o,
                                   Loaded *ld, int *status) {
  memset(ld, 0, sizeof *ld);
  if ((*status = open_job(path, o, &ld->rs, &ld->p)))
    return FALSE;
  *status = 1; /* what fails after loading */
  ld->s = pipeline_program_state(&ld->p);
  return TRUE;
}

/* The program's lowering on its mesh (--mesh, else its own): FALSE
 * after saying why. */
static gboolean lower_loaded(const char *path, Loaded *ld) {
  g_autoptr(Diag) why = diag_new(NULL);
  if (pipeline_lower(ld->rs, ld->s->module, &ld->s->func, &ld->p.mesh, &ld->l,
                     why))
    return TRUE;
  g_autofree char *m = mesh_to_string(&ld->p.mesh);
  g_printerr("partir: %s: cannot lower on mesh %s: %s\n", path,
             *m ? m : "(none)", diag_text(why));
  return FALSE;
}

/* The rules, FILE and its lowering: FALSE (after saying why) when one
 * fails; the status to return is in *status. */
static gboolean load_lowered(const char *path, const Options *o, Loaded *ld,
                             int *status) {
  return load_rules_program(path, o, ld, status) && lower_loaded(path, ld);
}

/* The code generator's options from --exact, --blas, --target and
 * --arch: FALSE (with a message) when they are wrong. */
static gboolean codegen_options(const Options *o, CodegenOptions *co) {
  *co = (CodegenOptions){.exact = o->exact, .profile = o->profile};
  if (o->target && strcmp(o->target, "nvptx") == 0) {
    co->target = CODEGEN_TARGET_NVPTX;
  } else if (o->target && strcmp(o->target, "host") != 0) {
    g_printerr("partir: --target must be host or nvptx, not '%s'\n", o->target);
    return FALSE;
  }
  if (o->arch &&
      (co->target != CODEGEN_TARGET_NVPTX ||
       (strcmp(o->arch, "sm_80") != 0 && strcmp(o->arch, "sm_90") != 0))) {
    g_printerr("partir: --arch takes " CODEGEN_NVPTX_ARCHS
               ", with --target nvptx\n");
    return FALSE;
  }
  co->arch = o->arch;
  if (!o->blas || strcmp(o->blas, "none") == 0)
    return TRUE;
  if (strcmp(o->blas, "openblas") != 0) {
    g_printerr("partir: --blas must be none or openblas, not '%s'\n", o->blas);
    return FALSE;
  }
#ifndef HAVE_OPENBLAS
  g_printerr("partir: --blas openblas: this partir was built without "
             "OpenBLAS (configure --with-blas=openblas)\n");
  return FALSE;
#endif
  co->blas = CODEGEN_BLAS_OPENBLAS;
  return TRUE;
}

/* exec's options: FALSE (with a message) when they are wrong. */
static gboolean exec_options(const Options *o, CodegenOptions *co,
                             PipelineRuntime *rt) {
  g_autoptr(Diag) why = diag_new(NULL);
  *rt = PIPELINE_RUNTIME_THREADS;
  if (o->runtime && !pipeline_runtime_find(o->runtime, rt, why)) {
    g_printerr("partir: %s\n", diag_text(why));
    return FALSE;
  }
  /* each runtime runs code for its own target */
  const char *target = pipeline_runtime_gpu(*rt) ? "nvptx" : "host";
  if (o->target && strcmp(o->target, target) != 0) {
    g_printerr("partir: --runtime %s runs --target %s, not '%s'\n",
               o->runtime ? o->runtime : "threads", target, o->target);
    return FALSE;
  }
  Options with_target = *o; /* borrowed strings: not cleared */
  with_target.target = (char *)target;
  if (!codegen_options(&with_target, co))
    return FALSE;
  if (co->target == CODEGEN_TARGET_NVPTX && (o->repeat || o->profile)) {
    g_printerr("partir: --repeat and --profile are the CPU runtimes'\n");
    return FALSE;
  }
  if (o->repeat < 0 || o->repeat > G_MAXINT) {
    g_printerr("partir: --repeat must be 0 or more, not %" G_GINT64_FORMAT "\n",
               o->repeat);
    return FALSE;
  }
  return TRUE;
}

/* The program of 'path' (and on a mesh, --mesh or its own, its
 * lowering): FALSE after saying why, the status to return in *status. */
static gboolean load_program(const char *path, const Options *o, Loaded *ld,
                             int *status) {
  return load_rules_program(path, o, ld, status) &&
         (ld->p.mesh.naxes == 0 || lower_loaded(path, ld));
}

/* Writes or prints 'results' of 'f' (from 'm'), then says what went
 * wrong, if anything, and how the checks of 'p' went: the exit status. */
static int report_results(const Options *o, const char *file, const Program *p,
                          const Module *m, const Func *f, GPtrArray *results,
                          Diag *diag, GError *error) {
  if (results && o->output_dir)
    write_outputs(o->output_dir, m, f, results, &error);
  if (error || diag_any(diag)) {
    if (error)
      print_error(file, error);
    else
      print_reason(file, diag);
    g_clear_error(&error);
    return 1;
  }
  run_print_results(m, f, results);
  if (p->checks->len == 0)
    return 0;
  g_autoptr(GString) passed = g_string_new(NULL);
  g_autoptr(GString) failed = g_string_new(NULL);
  gboolean ok = pipeline_check_results(p, results, passed, failed);
  fputs(passed->str, stderr);
  fputs(failed->str, stderr);
  return ok ? 0 : 1;
}

static void free_inputs(const Func *f, Tensor **inputs) {
  for (int i = 0; i < f->nargs; i++)
    if (inputs[i])
      tensor_unref(inputs[i]);
  g_free(inputs);
}

/* run: the interpreter's results, and the program's checks of them. */
static int cmd_run(const Options *o, char **files) {
  g_auto(Program) p = {0};
  int status = open_job(files[0], o, NULL, &p);
  if (status)
    return status;
  const State *st = pipeline_program_state(&p);
  const Func *f = &st->func;
  g_autoptr(Diag) diag = diag_new(NULL);
  Tensor **inputs = g_new0(Tensor *, (gsize)f->nargs + 1);
  GError *error = NULL;
  GPtrArray *results = NULL;
  if (run_gather_inputs(f, o->inputs, o->input_seed, inputs, diag, &error))
    results = interp_run(f, inputs, &error);
  status = report_results(o, files[0], &p, st->module, f, results, diag, error);
  if (results)
    g_ptr_array_unref(results);
  free_inputs(f, inputs);
  return status;
}

/* --repeat N: N more steps on the same inputs; their min and median on
 * stderr (stdout keeps the results). */
static void exec_repeat(const Executable *ex, Tensor *const *inputs, int n,
                        gboolean say, Diag *diag, GError **error) {
  StepTime st;
  if (pipeline_time(ex, inputs, n, &st, diag, error) && say)
    g_printerr("partir: %d steps: min %.4g ms, median %.4g ms\n", st.runs,
               st.min * 1e3, st.median * 1e3);
}

/* exec on this process, rank 'rank' of 'ranks' of runtime 'rt' (0 of 1
 * for threads): every rank loads and compiles the program; rank 0 reads
 * the inputs, gets the results and reports them.  '*alike' stays TRUE
 * when every rank fails the same way or none waits for this one (its
 * status needs no MPI_Abort). */
static int exec_rank(const Options *o, const char *file,
                     const CodegenOptions *co, PipelineRuntime rt, int rank,
                     int ranks, gboolean *alike) {
  g_auto(Program) p = {0};
  g_autoptr(RuleSet) rs = NULL;
  int status = open_job(file, o, &rs, &p);
  if (status)
    return status;
  if (pipeline_runtime_ranks(rt) && ranks != mesh_devices(&p.mesh)) {
    g_autofree char *m = mesh_to_string(&p.mesh);
    if (rank == 0)
      g_printerr("partir: %s: --runtime %s runs a rank per device, and "
                 "mesh '%s' has %" G_GINT64_FORMAT " devices, but mpirun "
                 "started %d ranks (mpirun -np %" G_GINT64_FORMAT ")\n",
                 file, o->runtime, m, mesh_devices(&p.mesh), ranks,
                 mesh_devices(&p.mesh));
    return 2;
  }
  const State *st = pipeline_program_state(&p);
  const Func *f = &st->func;
  g_autoptr(Diag) diag = diag_new(NULL);
  g_auto(Executable) ex = {0};
  Tensor **inputs = g_new0(Tensor *, (gsize)f->nargs + 1);
  GError *error = NULL;
  GPtrArray *results = NULL;
  /* compile first: a program the code generator or the runtime refuses
   * is refused before any input is read (by every rank alike) */
  gboolean runs = pipeline_compile(rs, st->module, f, &p.mesh, co, &ex, diag);
  if (runs) {
    ex.runtime = rt;
    runs = pipeline_runtime_runs(&ex, diag);
  }
  if (runs) {
    *alike = FALSE; /* from here on, the other ranks wait for this one */
    if (rank != 0 ||
        run_gather_inputs(f, o->inputs, o->input_seed, inputs, diag, &error))
      results = pipeline_execute(&ex, rank == 0 ? inputs : NULL, diag, &error);
    if (results && o->repeat > 0)
      exec_repeat(&ex, inputs, (int)o->repeat, rank == 0, diag, &error);
  } else if (rank != 0) {
    free_inputs(f, inputs);
    return 1; /* rank 0 says why */
  }
  if (rank != 0 && results) { /* rank 0 reports */
    g_ptr_array_unref(results);
    free_inputs(f, inputs);
    return 0;
  }
  *alike |= results != NULL; /* a run the others finished */
  status = report_results(o, file, &p, st->module, f, results, diag, error);
  if (status == 0 && o->profile) {
    g_autoptr(GString) out = g_string_new(NULL);
    codegen_profile_report(ex.code, out);
    fputs(out->str, stderr);
  }
  if (results)
    g_ptr_array_unref(results);
  free_inputs(f, inputs);
  return status;
}

/* How many processes the MPI launcher that started this one started
 * (OpenMPI's mpirun, or a PMI launcher: MPICH's, Slurm's srun), from
 * the environment they give each; 1 when none did. */
static int64_t launched_processes(void) {
  const char *names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
  for (gsize k = 0; k < G_N_ELEMENTS(names); k++) {
    const char *v = g_getenv(names[k]);
    if (v && g_ascii_strtoll(v, NULL, 10) > 1)
      return g_ascii_strtoll(v, NULL, 10);
  }
  return 1;
}

/* exec: the compiled code's results (the pipeline's stages 6 and 7);
 * with --mesh, the program lowered on the mesh, each device's program
 * compiled and run on its own thread, or with --runtime mpi on its own
 * rank of an mpirun (cuda: on its own GPU; cuda-mpi: a rank and its
 * GPU). */
static int cmd_exec(const Options *o, char **files) {
  CodegenOptions co;
  PipelineRuntime rt;
  if (!exec_options(o, &co, &rt))
    return 2;
  int rank, ranks;
  GError *error = NULL;
  /* one process drives every GPU: N copies would each drive them all */
  if (rt == PIPELINE_RUNTIME_CUDA && launched_processes() > 1) {
    g_printerr("partir: --runtime cuda drives every GPU from one process, "
               "but mpirun started %" G_GINT64_FORMAT " processes: run "
               "--runtime cuda-mpi under mpirun (a rank per GPU), or "
               "--runtime cuda without it\n",
               launched_processes());
    return 2;
  }
  if (rt == PIPELINE_RUNTIME_CUDA && !codegen_cuda_available(&error)) {
    g_printerr("partir: --runtime cuda: %s\n", error->message);
    g_error_free(error);
    return 1;
  }
  if (!pipeline_runtime_start(rt, &rank, &ranks, &error)) {
    g_autofree char *what =
        g_strdup_printf("--runtime %s", o->runtime ? o->runtime : "threads");
    print_error(what, error);
    g_clear_error(&error);
    pipeline_runtime_stop(rt, 0); /* every rank failed to start alike */
    return 1;
  }
  gboolean alike = TRUE;
  int status = exec_rank(o, files[0], &co, rt, rank, ranks, &alike);
  pipeline_runtime_stop(rt, alike ? 0 : status);
  return status;
}

static const GOptionEntry compile_entries[] = {
    {"emit", 'e', 0, G_OPTION_ARG_STRING, &opt.emit,
     "what to show: llvm (optimized IR, the default), asm, obj (an ELF "
     "object) or fusion (the kernels and what each fuses); with --target "
     "nvptx, ptx (the kernels' module) or gpu-plan (launches, cuBLAS calls "
     "and collectives in order)",
     "llvm|asm|obj|fusion|ptx|gpu-plan"},
    G_OPTION_ENTRY_NULL};

static int cmd_compile(const Options *o, char **files) {
  static const char *const names[] = {"llvm",   "asm", "obj",
                                      "fusion", "ptx", "gpu-plan"};
  static const CodegenEmit kinds[] = {EMIT_LLVM,   EMIT_ASM, EMIT_OBJ,
                                      EMIT_FUSION, EMIT_PTX, EMIT_GPU_PLAN};
  const char *emit = o->emit ? o->emit : "llvm";
  int at = -1;
  for (guint i = 0; i < G_N_ELEMENTS(names); i++)
    if (strcmp(emit, names[i]) == 0)
      at = (int)i;
  CodegenOptions co;
  if (at < 0) {
    g_printerr("partir: --emit must be llvm, asm, obj or fusion (or ptx "
               "or gpu-plan with --target nvptx), not '%s'\n",
               emit);
    return 2;
  }
  if (!codegen_options(o, &co))
    return 2;
  if ((kinds[at] == EMIT_PTX || kinds[at] == EMIT_GPU_PLAN) !=
          (co.target == CODEGEN_TARGET_NVPTX) &&
      kinds[at] != EMIT_LLVM && kinds[at] != EMIT_FUSION) {
    g_printerr("partir: --target %s emits %s\n",
               co.target == CODEGEN_TARGET_NVPTX ? "nvptx" : "host",
               co.target == CODEGEN_TARGET_NVPTX
                   ? "ptx, gpu-plan, llvm or fusion"
                   : "llvm, asm, obj or fusion");
    return 2;
  }
  Loaded ld = {0};
  int status = 1;
  if (!load_program(files[0], o, &ld, &status)) {
    loaded_clear(&ld);
    return status;
  }
  gboolean lowered = ld.p.mesh.naxes > 0;
  const Func *f = lowered ? ld.l.spmd : &ld.s->func;
  g_autoptr(Diag) diag = diag_new(NULL);
  gsize len = 0;
  char *text = codegen_text(lowered ? ld.l.names : ld.s->module, f, &co,
                            kinds[at], &len, diag);
  if (!text) {
    print_reason(files[0], diag);
    loaded_clear(&ld);
    return 1;
  }
  g_autoptr(GString) out = g_string_new_len(text, (gssize)len);
  g_free(text);
  loaded_clear(&ld);
  return write_result(o->output, out);
}

/* Says what the passes of a script on 'file' reported, a line at a time
 * (a script may run several passes: the lines say what they are about),
 * each after 'what' (may be ""). */
static void print_report(const char *file, const char *what,
                         const GString *report) {
  if (!report->len)
    return;
  g_auto(GStrv) lines = g_strsplit(report->str, "\n", -1);
  for (char **l = lines; *l; l++)
    if (**l)
      g_printerr("partir: %s: %s%s\n", file, what, *l);
}

static gboolean cost_hardware(const Options *o, Hardware *hw);

/* Appends the values of 's' where rule 'name' applies; FALSE (with a
 * message) when there is no such rule. */
static gboolean list_matches(const RuleSet *rs, State *s, const char *name,
                             GString *out) {
  const Rule *rule = ruleset_find(rs, name);
  if (!rule) {
    g_autofree char *hint = ruleset_did_you_mean(rs, name);
    g_printerr("partir: no rule '%s'%s\n", name, hint);
    return FALSE;
  }
  g_autoptr(GPtrArray) locs = rw_matches(rs, s, rule);
  for (guint i = 0; i < locs->len; i++)
    g_string_append_printf(out, "%%%s\n",
                           ((Location *)g_ptr_array_index(locs, i))->name);
  return TRUE;
}

static const GOptionEntry rewrite_entries[] = {
    {"matches", 'm', 0, G_OPTION_ARG_STRING, &opt.matches,
     "after the commands, list the values where RULE applies", "RULE"},
    {"do", 'd', 0, G_OPTION_ARG_STRING, &opt.script,
     "the commands, separated by ';'", "SCRIPT"},
    G_OPTION_ENTRY_NULL};

static int cmd_rewrite(const Options *o, char **files) {
  if (!o->script && !o->matches) {
    g_printerr("partir: rewrite needs --do 'COMMANDS' (or --matches RULE)\n");
    return 2;
  }
  g_auto(Program) p = {0};
  g_autoptr(RuleSet) rs = NULL;
  int status = open_job(files[0], o, &rs, &p);
  if (status)
    return status;
  /* 'propagate --resolve' prices on it: given, or cpu2 when needed */
  Hardware hw;
  if ((o->hw || o->hw_sets) && !cost_hardware(o, &hw))
    return 2;
  State *s0 = pipeline_program_state(&p);
  g_autoptr(Diag) why = diag_new(NULL);
  g_autoptr(GString) report = g_string_new(NULL);
  g_autoptr(GString) choices = g_string_new(NULL);
  RewriteContext cx = {.hw = o->hw || o->hw_sets ? &hw : NULL,
                       .report = report,
                       .choices = choices};
  g_autoptr(State) s =
      pipeline_rewrite(rs, s0, o->script ? o->script : "", &cx, why);
  print_report(files[0], "", report);
  print_report(files[0], "propagate --resolve: ", choices);
  if (!s) {
    g_printerr("partir: %s: %s\n", files[0], diag_text(why));
    return 1;
  }
  g_autoptr(GString) out = g_string_new(NULL);
  if (!o->matches)
    state_print(out, s, o->expr);
  else if (!list_matches(rs, s, o->matches, out))
    return 1;
  return write_result(o->output, out);
}

static const GOptionEntry grad_entries[] = {
    {"loss", 0, 0, G_OPTION_ARG_STRING, &opt.loss,
     "the loss on the model's first result: sum (of it), mse or xent "
     "(softmax cross-entropy over its last dimension) against a target",
     "sum|mse|xent"},
    {"wrt", 0, 0, G_OPTION_ARG_STRING, &opt.wrt,
     "the parameters, by name (default: every argument but the first)",
     "w1,w2"},
    {"params-from-arg", 0, 0, G_OPTION_ARG_INT64, &opt.params_from,
     "the parameters are the arguments from this one on (0-based)", "N"},
    {"optimizer", 0, 0, G_OPTION_ARG_STRING, &opt.optimizer,
     "the update: sgd (the default), momentum or adam", "sgd|momentum|adam"},
    {"lr", 0, 0, G_OPTION_ARG_DOUBLE, &opt.lr,
     "the learning rate (default 0.01)", "RATE"},
    G_OPTION_ENTRY_NULL};

/* The training step of a model (docs/grad.md): a program every other
 * command takes. */
static int cmd_grad(const Options *o, char **files) {
  if (!o->loss) {
    g_printerr("partir: grad needs --loss sum|mse|xent\n");
    return 2;
  }
  gboolean from_given = o->params_from != G_MININT64;
  if (o->wrt && from_given) {
    g_printerr("partir: grad takes --wrt or --params-from-arg, not both\n");
    return 2;
  }
  if (from_given && (o->params_from < 0 || o->params_from > G_MAXINT)) {
    g_printerr("partir: grad --params-from-arg takes an argument's index, 0 "
               "or more, not %" G_GINT64_FORMAT "\n",
               o->params_from);
    return 2;
  }
  TrainOptions to = {.lr = o->lr, .params_from = 1};
  g_autoptr(Diag) why = diag_new(NULL);
  if (!train_options_words(o->loss, o->optimizer, &to, why)) {
    g_printerr("partir: %s\n", diag_text(why));
    return 2;
  }
  g_auto(GStrv) wrt = o->wrt ? g_strsplit(o->wrt, ",", -1) : NULL;
  to.params = (const char *const *)wrt;
  if (from_given)
    to.params_from = (int)o->params_from;
  g_auto(Program) p = {0};
  g_autoptr(RuleSet) rs = NULL;
  int status = open_job(files[0], o, &rs, &p);
  if (status)
    return status;
  g_autoptr(Module) m =
      pipeline_train_step(rs, pipeline_program_state(&p), &to, why);
  if (!m) {
    g_printerr("partir: %s: %s\n", files[0], diag_text(why));
    return 1;
  }
  g_autoptr(GString) out = g_string_new(NULL);
  print_module(out, m);
  return write_result(o->output, out);
}

static int cmd_rules(const Options *o, char **files) {
  (void)files;
  g_autoptr(RuleSet) rs = load_rules(o->rule_files);
  if (!rs)
    return 1;
  for (guint i = 0; i < rs->rules->len; i++) {
    const Rule *r = g_ptr_array_index(rs->rules, i);
    g_print("%-24s %s\n%-24s   %s\n", r->name, r->origin, "", r->text);
  }
  return 0;
}

static const GOptionEntry check_rules_entries[] = {
    {"seed", 's', 0, G_OPTION_ARG_INT64, &opt.check_seed,
     "random seed (default 1)", "N"},
    {"tries", 't', 0, G_OPTION_ARG_INT64, &opt.tries,
     "random programs per operator (default 12)", "N"},
    G_OPTION_ENTRY_NULL};

/* FALSE (with a usage message) when count option 'name' is not in
 * [1, max]. */
static gboolean count_ok(const char *name, gint64 n, gint64 max) {
  if (n >= 1 && n <= max)
    return TRUE;
  g_printerr("partir: --%s takes a count from 1 to %" G_GINT64_FORMAT
             ", not %" G_GINT64_FORMAT "\n",
             name, max, n);
  return FALSE;
}

/* The FILEs are rule files, as --rules FILE; none means the default
 * ones. */
static int cmd_check_rules(const Options *o, char **files) {
  if (!count_ok("tries", o->tries, 10000))
    return 2;
  g_autoptr(GPtrArray) paths = g_ptr_array_new();
  for (char **f = o->rule_files; f && *f; f++)
    g_ptr_array_add(paths, *f);
  for (char **f = files; *f; f++)
    g_ptr_array_add(paths, *f);
  g_ptr_array_add(paths, NULL);
  g_autoptr(RuleSet) rs =
      load_rules(paths->len > 1 ? (char **)paths->pdata : NULL);
  if (!rs)
    return 1;
  g_autoptr(GString) out = g_string_new(NULL);
  gboolean ok =
      pipeline_check_rules(rs, (guint32)o->check_seed, (int)o->tries, out);
  fwrite(out->str, 1, out->len, stdout);
  return ok ? 0 : 1;
}

static const GOptionEntry walk_entries[] = {
    {"seed", 's', 0, G_OPTION_ARG_INT64, &opt.check_seed,
     "random seed (default 1)", "N"},
    {"walks", 'n', 0, G_OPTION_ARG_INT64, &opt.walks,
     "random rewrite sequences (default 100)", "N"},
    {"steps", 'k', 0, G_OPTION_ARG_INT64, &opt.steps,
     "steps per sequence (default 8)", "N"},
    G_OPTION_ENTRY_NULL};

static int cmd_walk(const Options *o, char **files) {
  if (!count_ok("walks", o->walks, 1000000) ||
      !count_ok("steps", o->steps, 10000))
    return 2;
  g_autoptr(RuleSet) rs = load_rules(o->rule_files);
  if (!rs)
    return 1;
  /* random rewrites from the program as written (its shardings are
   * rewrites like any other) */
  g_autoptr(Module) m = load_module(files[0]);
  if (!m)
    return 1;
  g_autoptr(GString) out = g_string_new(NULL);
  gboolean ok = check_walks(rs, m, (guint32)o->check_seed, (int)o->walks,
                            (int)o->steps, out);
  fwrite(out->str, 1, out->len, stdout);
  if (ok)
    g_print("%s: %" G_GINT64_FORMAT " random rewrite sequences of "
            "%" G_GINT64_FORMAT " steps preserve the meaning\n",
            files[0], o->walks, o->steps);
  return ok ? 0 : 1;
}

/* The tactic's --set KEY=VALUE options as a table, or NULL (with a
 * message) when one has no KEY=. */
static GHashTable *tactic_options(char **sets) {
  GHashTable *options =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  for (char **kv = sets; kv && *kv; kv++) {
    const char *eq = strchr(*kv, '=');
    if (!eq || eq == *kv) {
      g_printerr("partir: --set %s: expected KEY=VALUE\n", *kv);
      g_hash_table_unref(options);
      return NULL;
    }
    g_hash_table_insert(options, g_strndup(*kv, (gsize)(eq - *kv)),
                        g_strdup(eq + 1));
  }
  return options;
}

/* Runs tactic 'script' on 's0': the new state, or NULL (with a
 * message).  'hw' (a name or a .hw file; NULL: cpu2) prices the choices
 * of its 'propagate --resolve'. */
static State *tactic_state(const RuleSet *rs, State *s0, const char *script,
                           GHashTable *options, const Mesh *mesh,
                           const char *hw) {
  g_autoptr(Diag) why = diag_new(NULL);
  lua_State *L = plua_new(rs);
  LuaTactic tactic;
  if (L) {
    plua_set_hardware(L, hw);
    plua_tactic_init(&tactic, L, script, options);
  }
  State *s = L ? pipeline_tactic(&tactic.base, s0, mesh, why) : NULL;
  if (!L)
    diag_reason(why, "%s", "cannot create a Lua state");
  if (!s)
    g_printerr("partir: tactic %s: %s\n", script, diag_text(why));
  plua_close(L);
  return s;
}

/* Runs tactic 'script' on 's0' and prints the result into 'out'; FALSE
 * (with a message) when it fails. */
static gboolean tactic_apply(const RuleSet *rs, State *s0, const char *script,
                             GHashTable *options, const Mesh *mesh,
                             const char *hw, gboolean expr, GString *out) {
  g_autoptr(State) s = tactic_state(rs, s0, script, options, mesh, hw);
  if (!s)
    return FALSE;
  state_print(out, s, expr);
  return TRUE;
}

static const GOptionEntry tactic_entries[] = {
    {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt.tactic_sets,
     "an option for the tactic", "KEY=VALUE"},
    G_OPTION_ENTRY_NULL};

/* What a tactic runs on: the mesh (--mesh, else the file's), its --set
 * options, the rules and the program at 'path' with its shardings.  0,
 * or the exit status (2: bad options, 1: files). */
static int open_tactic_job(const Options *o, const char *path, Program *p,
                           RuleSet **rs, GHashTable **options) {
  if (!(*options = tactic_options(o->tactic_sets)))
    return 2;
  return open_job(path, o, rs, p);
}

/* files[0] is the tactic script, files[1] the program. */
static int cmd_tactic(const Options *o, char **files) {
  g_autoptr(GHashTable) options = NULL;
  g_autoptr(RuleSet) rs = NULL;
  g_auto(Program) p = {0};
  int status = open_tactic_job(o, files[1], &p, &rs, &options);
  if (status)
    return status;
  g_autoptr(GString) out = g_string_new(NULL);
  if (!tactic_apply(rs, pipeline_program_state(&p), files[0], options, &p.mesh,
                    o->hw, o->expr, out))
    return 1;
  return write_result(o->output, out);
}

/* A program file and the SPMD program it runs as on a mesh. */
static const GOptionEntry lower_entries[] = {
    {"emit", 'e', 0, G_OPTION_ARG_STRING, &opt.emit,
     "what to print: spmd (default) or dot", "spmd|dot"},
    {"stats", 0, 0, G_OPTION_ARG_NONE, &opt.stats,
     "print the collectives per kind and axis", NULL},
    {"simulate", 0, 0, G_OPTION_ARG_NONE, &opt.simulate,
     "run it on simulated devices and compare with the interpreter", NULL},
    {"seed", 's', 0, G_OPTION_ARG_INT64, &opt.input_seed,
     "seed of the random inputs for --simulate (default 0)", "N"},
    G_OPTION_ENTRY_NULL};

static int cmd_lower(const Options *o, char **files) {
  const char *emit = o->emit;
  if (emit && strcmp(emit, "spmd") != 0 && strcmp(emit, "dot") != 0) {
    g_printerr("partir: lower --emit takes spmd or dot, not '%s'\n", emit);
    return 2;
  }
  Loaded ld;
  int status;
  if (!load_lowered(files[0], o, &ld, &status)) {
    loaded_clear(&ld);
    return status;
  }
  const Lowered *l = &ld.l;
  GError *error = NULL;
  g_autoptr(GString) out = g_string_new(NULL);
  if (emit && strcmp(emit, "dot") == 0)
    spmd_print_dot(out, l->names, l->spmd);
  else
    print_func(out, l->names, l->spmd);
  if (o->stats)
    spmd_print_stats(out, l->spmd);
  status = 0;
  g_autoptr(Diag) diag = diag_new(NULL);
  if (o->simulate &&
      !check_lowering(l->global, l->spmd, o->input_seed, out, diag, &error)) {
    if (error)
      print_error(files[0], error);
    else
      print_reason(files[0], diag);
    g_clear_error(&error);
    status = 1;
  }
  if (status == 0)
    status = write_result(o->output, out);
  loaded_clear(&ld);
  return status;
}

/* The --hw description with the --set what-ifs applied; FALSE (with a
 * message) when either is wrong. */
static gboolean cost_hardware(const Options *o, Hardware *hw) {
  GError *error = NULL;
  if (!hw_load(o->hw ? o->hw : "cpu2", hw, &error)) {
    print_error(NULL, error);
    g_error_free(error);
    return FALSE;
  }
  g_autoptr(Diag) diag = diag_new(NULL);
  for (char **kv = o->hw_sets; kv && *kv; kv++)
    if (!hw_set(hw, *kv, diag)) {
      print_reason("--set", diag);
      return FALSE;
    }
  return TRUE;
}

static int cmd_cost(const Options *o, char **files) {
  Hardware hw;
  if (!cost_hardware(o, &hw))
    return 2;
  Loaded ld;
  int status;
  if (!load_lowered(files[0], o, &ld, &status)) {
    loaded_clear(&ld);
    return status;
  }
  g_autoptr(Diag) diag = diag_new(NULL);
  g_auto(CostReport) r = {0};
  if (!pipeline_cost(&ld.l, &hw, &r, diag)) {
    print_reason(files[0], diag);
    loaded_clear(&ld);
    return 1;
  }
  g_autoptr(GString) out = g_string_new(NULL);
  cost_print(out, &r, &hw, &ld.l.spmd->spmd->mesh);
  fwrite(out->str, 1, out->len, stdout);
  loaded_clear(&ld);
  return 0;
}

/* The program a job exports: the file's, then the tactic's result, then
 * the --do commands'; NULL (with a message) when one fails. */
static State *export_state(const Options *o, const RuleSet *rs, State *s0,
                           GHashTable *options, const Mesh *mesh) {
  State *s = state_ref(s0);
  if (o->tactic) {
    State *next = tactic_state(rs, s, o->tactic, options, mesh, o->hw);
    state_unref(s);
    if (!next)
      return NULL;
    s = next;
  }
  if (o->script) {
    g_autoptr(Diag) why = diag_new(NULL);
    g_autoptr(GString) report = g_string_new(NULL);
    RewriteContext cx = {.hw_name = o->hw, .report = report};
    State *next = pipeline_rewrite(rs, s, o->script, &cx, why);
    print_report("--do", "", report);
    if (!next)
      g_printerr("partir: --do: %s\n", diag_text(why));
    state_unref(s);
    s = next;
  }
  return s;
}

static const GOptionEntry export_entries[] = {
    {"emit", 'e', 0, G_OPTION_ARG_STRING, &opt.emit,
     "stablehlo (the program with Shardy shardings, the default), "
     "stablehlo-gspmd (with GSPMD shardings) or stablehlo-spmd (a device's "
     "program with collectives)",
     "FORM"},
    {"tactic", 't', 0, G_OPTION_ARG_FILENAME, &opt.tactic,
     "partition with this Lua tactic first", "SCRIPT.lua"},
    {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt.tactic_sets,
     "an option for the tactic", "KEY=VALUE"},
    {"do", 'd', 0, G_OPTION_ARG_STRING, &opt.script,
     "then these commands, separated by ';'", "SCRIPT"},
    G_OPTION_ENTRY_NULL};

/* export: StableHLO, the shardings of the partitioned program on the
 * program as loaded, or the program each device runs. */
static int cmd_export(const Options *o, char **files) {
  ExportForm form = EXPORT_SDY;
  if (o->emit && !export_form_parse(o->emit, &form)) {
    g_printerr("partir: export --emit takes stablehlo, stablehlo-gspmd or "
               "stablehlo-spmd, not '%s'\n",
               o->emit);
    return 2;
  }
  if (o->tactic_sets && !o->tactic) {
    g_printerr("partir: export --set gives the --tactic options\n");
    return 2;
  }
  g_autoptr(GHashTable) options = NULL;
  g_autoptr(RuleSet) rs = NULL;
  g_auto(Program) p = {0};
  int status = open_tactic_job(o, files[0], &p, &rs, &options);
  if (status)
    return status;
  g_autoptr(State) s =
      export_state(o, rs, pipeline_program_state(&p), options, &p.mesh);
  if (!s)
    return 1;
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(Diag) diag = diag_new(NULL);
  if (!pipeline_export(rs, s, &p.mesh, form, out, diag)) {
    g_autofree char *ms = mesh_to_string(&p.mesh);
    g_printerr("partir: %s: cannot export on mesh %s: %s\n", files[0], ms,
               diag_text(diag));
    return 1;
  }
  return write_result(o->output, out);
}

static const GOptionEntry calibrate_entries[] = {
    {"devices", 'n', 0, G_OPTION_ARG_INT64, &opt.devices,
     "devices running at once, a thread each (default: the CPUs)", "N"},
    {"runs", 0, 0, G_OPTION_ARG_INT64, &opt.runs,
     "timed steps per program, the median taken (default 5)", "N"},
    {"passes", 0, 0, G_OPTION_ARG_INT64, &opt.passes,
     "calibrate so many times, each figure the median (default 3)", "N"},
    G_OPTION_ENTRY_NULL};

/* The description as a file: how it was measured, then the figures. */
static int cmd_calibrate(const Options *o, char **files) {
  (void)files;
  gint64 devices =
      o->devices == G_MININT64 ? MIN(g_get_num_processors(), 64) : o->devices;
  if (!count_ok("devices", devices, 64) || !count_ok("runs", o->runs, 1000) ||
      !count_ok("passes", o->passes, 99))
    return 2;
  g_autoptr(RuleSet) rs = load_rules(o->rule_files);
  if (!rs)
    return 1;
  g_autofree char *name = NULL;
  if (o->output) {
    name = g_path_get_basename(o->output);
    if (g_str_has_suffix(name, ".hw"))
      name[strlen(name) - 3] = '\0';
  }
  CalibrateOptions co = {.devices = (int)devices,
                         .runs = (int)o->runs,
                         .passes = (int)o->passes,
                         .name = name};
  g_autoptr(GString) out = g_string_new(NULL);
  g_string_append_printf(out,
                         "# Measured by 'partir calibrate --devices %d "
                         "--runs %d --passes %d' (partir %s;\n"
                         "# docs/cost.md): every figure solved from the time "
                         "of a compiled program it\n"
                         "# dominates, %d device%s (threads) running at "
                         "once.\n",
                         co.devices, co.runs, co.passes, partir_version(),
                         co.devices, co.devices == 1 ? "" : "s");
  g_autoptr(Diag) diag = diag_new(NULL);
  Hardware hw;
  if (!pipeline_calibrate(rs, &co, &hw, out, diag)) {
    print_reason("calibrate", diag);
    return 1;
  }
  hw_print(out, &hw);
  return write_result(o->output, out);
}

/* ------------------------------------------------------------- search */

/* search's own options, kept together (apart from 'Options') because
 * they are its alone. */
static struct {
  char *algo;       /* --algo mcts|beam */
  gint64 budget;    /* --budget STATES (0: the default) */
  double seconds;   /* --time SECONDS (0: none) */
  gint64 seed;      /* --seed N */
  gint64 width;     /* --width N (beam) */
  char *tactic_out; /* --emit-tactic OUT.lua */
  char *inputs;     /* --inputs x,y */
  char *batch_axes; /* --batch-axes batch,data */
} search_opt = {.seed = 1};

static const GOptionEntry search_entries[] = {
    {"algo", 0, 0, G_OPTION_ARG_STRING, &search_opt.algo,
     "mcts (Monte-Carlo tree search, the default) or beam", "mcts|beam"},
    {"budget", 0, 0, G_OPTION_ARG_INT64, &search_opt.budget,
     "cost at most this many states (default 1000)", "STATES"},
    {"time", 0, 0, G_OPTION_ARG_DOUBLE, &search_opt.seconds,
     "stop after this many seconds", "SECONDS"},
    {"seed", 's', 0, G_OPTION_ARG_INT64, &search_opt.seed,
     "seed of the search's random choices (default 1)", "N"},
    {"width", 0, 0, G_OPTION_ARG_INT64, &search_opt.width,
     "beam search keeps this many states a round (default 4)", "N"},
    {"emit-tactic", 0, 0, G_OPTION_ARG_FILENAME, &search_opt.tactic_out,
     "write the actions found as a Lua tactic", "OUT.lua"},
    {"inputs", 0, 0, G_OPTION_ARG_STRING, &search_opt.inputs,
     "the data arguments, split only over the batch axes (default: those "
     "whose first dimension the results carry, as the tactics find them)",
     "x,y"},
    {"batch-axes", 0, 0, G_OPTION_ARG_STRING, &search_opt.batch_axes,
     "the mesh axes data splits over (default: batch)", "AXES"},
    G_OPTION_ENTRY_NULL};

static void search_opt_clear(void) {
  g_free(search_opt.algo);
  g_free(search_opt.tactic_out);
  g_free(search_opt.inputs);
  g_free(search_opt.batch_axes);
  memset(&search_opt, 0, sizeof search_opt);
  search_opt.seed = 1;
}

static void search_on_sigint(int sig) {
  (void)sig;
  partir_interrupt = 1;
}

/* The progress line, redrawn in place on the terminal. */
static void search_progress(void *data, const SearchProgress *p) {
  (void)data;
  g_autoptr(GString) line = g_string_new("\r\033[Ksearch: ");
  g_string_append_printf(
      line, "%" G_GINT64_FORMAT " states, %.0f states/s, best ", p->explored,
      p->elapsed > 0 ? p->explored / p->elapsed : 0);
  cost_append_time(line, p->best_score);
  if (p->best_score > 0)
    g_string_append_printf(line, " (%.3gx)", p->root_score / p->best_score);
  g_string_append_printf(line, ", %.1f s", p->elapsed);
  fputs(line->str, stderr);
  fflush(stderr);
}

static int search_job(const Options *o, const char *path) {
  SearchOptions so = {.budget = search_opt.budget,
                      .seconds = search_opt.seconds,
                      .seed = (guint64)search_opt.seed,
                      .beam_width = (int)search_opt.width};
  if (search_opt.algo && !search_algo_parse(search_opt.algo, &so.algo)) {
    g_printerr("partir: search --algo takes mcts or beam, not '%s'\n",
               search_opt.algo);
    return 2;
  }
  if (search_opt.budget < 0 || !(search_opt.seconds >= 0) ||
      !isfinite(search_opt.seconds) || search_opt.width < 0) {
    g_printerr("partir: search --budget, --time and --width take a "
               "positive number\n");
    return 2;
  }
  Hardware hw;
  if (!cost_hardware(o, &hw))
    return 2;
  g_auto(GStrv) inputs =
      search_opt.inputs ? g_strsplit(search_opt.inputs, ",", -1) : NULL;
  g_auto(GStrv) axes =
      search_opt.batch_axes ? g_strsplit(search_opt.batch_axes, ",", -1) : NULL;
  so.inputs = (const char *const *)inputs;
  so.batch_axes = (const char *const *)axes;
  g_autoptr(RuleSet) rs = NULL;
  g_auto(Program) p = {0};
  int status = open_job(path, o, &rs, &p);
  if (status)
    return status;
  gboolean tty = isatty(fileno(stderr));
  struct sigaction on_int = {0}, before;
  if (tty) {
    so.progress = search_progress;
    on_int.sa_handler = search_on_sigint;
    sigemptyset(&on_int.sa_mask);
    sigaction(SIGINT, &on_int, &before);
  }
  partir_interrupt = 0;
  g_auto(SearchResult) r = {0};
  g_autoptr(Diag) why = diag_new(NULL);
  gboolean ok =
      search_run(rs, pipeline_program_state(&p), &p.mesh, &hw, &so, &r, why);
  if (tty) {
    sigaction(SIGINT, &before, NULL);
    fputs("\n", stderr);
  }
  partir_interrupt = 0;
  if (!ok) {
    print_reason(path, why);
    return 1;
  }
  g_autofree char *ms = mesh_to_string(&p.mesh);
  g_autoptr(GString) report = g_string_new(NULL);
  g_string_append_printf(
      report,
      "search %s, seed %" G_GINT64_FORMAT
      ", on mesh %s, hardware %s: %" G_GINT64_FORMAT
      " states costed in %.2f s (%.0f states/s), %" G_GINT64_FORMAT
      " transpositions, the best at state %" G_GINT64_FORMAT
      "; %u action groups, %d actions at the root%s\n",
      search_algo_name(so.algo), search_opt.seed, ms, hw.name, r.explored,
      r.seconds, r.seconds > 0 ? r.explored / r.seconds : 0.0, r.transpositions,
      r.best_at, r.groups->len, r.root_actions,
      r.interrupted ? " (interrupted: the best so far)" : "");
  search_print(report, &r, &hw);
  g_autoptr(GString) program = g_string_new(NULL);
  state_print(program, r.best, o->expr);
  g_autoptr(GString) tactic = g_string_new(NULL);
  g_autofree char *header = g_strdup_printf(
      "-- Found by 'partir search %s --mesh %s --hw %s --algo %s --seed "
      "%" G_GINT64_FORMAT "' (%" G_GINT64_FORMAT
      " states): modelled step time\n"
      "-- %.6g s (as given: %.6g s).  'partir tactic' with the same mesh and\n"
      "-- hardware replays it to the program found.\n",
      path, ms, hw.name, search_algo_name(so.algo), search_opt.seed, r.explored,
      r.cost.total_time, r.base.total_time);
  search_tactic(tactic, &r, header);
  /* the program and its tactic together, or neither */
  const char *paths[2], *texts[2];
  gsize lens[2];
  int nout = 0;
  if (o->output) {
    paths[nout] = o->output;
    texts[nout] = program->str;
    lens[nout++] = program->len;
  }
  if (search_opt.tactic_out) {
    paths[nout] = search_opt.tactic_out;
    texts[nout] = tactic->str;
    lens[nout++] = tactic->len;
  }
  GError *error = NULL;
  if (nout && !partir_write_files(nout, paths, texts, lens, &error)) {
    print_error(NULL, error);
    g_error_free(error);
    return 1;
  }
  if (!o->output)
    fwrite(program->str, 1, program->len, stdout);
  fwrite(report->str, 1, report->len, stdout);
  return 0;
}

/* search: the best partitioning the cost model finds (docs/search.md). */
static int cmd_search(const Options *o, char **files) {
  int status = search_job(o, files[0]);
  search_opt_clear();
  return status;
}

static const char one_file[] = "needs exactly one FILE (see 'partir help')";

static const Command commands[] = {
    {"check", "FILE", 1, one_file, GROUP_MESH | GROUP_LOAD, NULL, cmd_check},
    {"fmt", "FILE", 1, one_file, GROUP_EXPR | GROUP_MESH | GROUP_LOAD, NULL,
     cmd_fmt},
    {"import", "FILE.mlir", 1, one_file, GROUP_OUTPUT | GROUP_MESH | GROUP_LOAD,
     NULL, cmd_import},
    {"run", "FILE", 1, one_file, GROUP_MESH | GROUP_LOAD, run_entries, cmd_run},
    {"exec", "FILE", 1, one_file,
     GROUP_MESH | GROUP_RULES | GROUP_CODEGEN | GROUP_EXEC | GROUP_LOAD,
     run_entries, cmd_exec},
    {"compile", "FILE", 1, one_file,
     GROUP_MESH | GROUP_OUTPUT | GROUP_RULES | GROUP_CODEGEN | GROUP_LOAD,
     compile_entries, cmd_compile},
    {"rewrite", "FILE", 1, one_file,
     GROUP_HARDWARE | GROUP_WHAT_IF | GROUP_OUTPUT | GROUP_RULES | GROUP_EXPR |
         GROUP_MESH | GROUP_LOAD,
     rewrite_entries, cmd_rewrite},
    {"grad", "FILE", 1, one_file,
     GROUP_OUTPUT | GROUP_MESH | GROUP_LOAD | GROUP_RULES, grad_entries,
     cmd_grad},
    {"rules", "", 0, "takes no FILE (use --rules FILE)", GROUP_RULES, NULL,
     cmd_rules},
    {"check-rules", "[RULE-FILES...]", -1, NULL, GROUP_RULES,
     check_rules_entries, cmd_check_rules},
    {"walk", "FILE", 1, one_file, GROUP_RULES, walk_entries, cmd_walk},
    {"tactic", "SCRIPT.lua FILE", 2,
     "needs SCRIPT.lua and FILE (see 'partir help')",
     GROUP_MESH | GROUP_HARDWARE | GROUP_OUTPUT | GROUP_RULES | GROUP_EXPR |
         GROUP_LOAD,
     tactic_entries, cmd_tactic},
    {"lower", "FILE", 1, one_file,
     GROUP_MESH | GROUP_OUTPUT | GROUP_RULES | GROUP_LOAD, lower_entries,
     cmd_lower},
    {"cost", "FILE", 1, one_file,
     GROUP_MESH | GROUP_HARDWARE | GROUP_WHAT_IF | GROUP_RULES | GROUP_LOAD,
     NULL, cmd_cost},
    {"export", "FILE", 1, one_file,
     GROUP_MESH | GROUP_HARDWARE | GROUP_OUTPUT | GROUP_RULES | GROUP_LOAD,
     export_entries, cmd_export},
    {"search", "FILE", 1, one_file,
     GROUP_MESH | GROUP_HARDWARE | GROUP_WHAT_IF | GROUP_OUTPUT | GROUP_RULES |
         GROUP_EXPR | GROUP_LOAD,
     search_entries, cmd_search},
    {"calibrate", "", 0, "takes no FILE (use -o OUT.hw)",
     GROUP_OUTPUT | GROUP_RULES, calibrate_entries, cmd_calibrate},
};

typedef struct Job {
  int argc;
  char **argv;
} Job;

/* Parses and runs subcommand 'c' on argv (argv[0] is its name). */
static int command_run(const Command *c, int argc, char **argv) {
  int status = 2;
  if (command_parse(c, &argc, &argv))
    status = c->run(&opt, argv + 1);
  options_clear(&opt);
  return status;
}

static int run_job(void *data) {
  Job *job = data;
  const char *cmd = job->argv[1];
  for (gsize i = 0; i < G_N_ELEMENTS(commands); i++)
    if (strcmp(cmd, commands[i].name) == 0)
      return command_run(&commands[i], job->argc - 1, job->argv + 1);
  if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 ||
      strcmp(cmd, "-h") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(cmd, "--version") == 0) {
    g_print("partir %s\n", partir_version());
    return 0;
  }
  g_autoptr(GPtrArray) names = g_ptr_array_new();
  for (gsize i = 0; i < G_N_ELEMENTS(commands); i++)
    g_ptr_array_add(names, (gpointer)commands[i].name);
  g_ptr_array_add(names, NULL);
  g_autofree char *hint =
      diag_did_you_mean(cmd, (const char *const *)names->pdata);
  g_printerr("partir: unknown command '%s'%s\n", cmd, hint);
  usage(stderr);
  return 2;
}

int main(int argc, char **argv) {
  /* the user's character set, for file names and UTF-8 in arguments and
   * messages; numbers keep the C format, so that printed programs, cost
   * tables and JSON read the same in every locale */
  setlocale(LC_ALL, "");
  setlocale(LC_NUMERIC, "C");
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
