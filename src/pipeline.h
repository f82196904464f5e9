/* pipeline.h — the stages of partir in order, for every front end.
 *
 * Above check, below bind and the front ends (docs/architecture.md).
 * The CLI, the REPL, the Lua module and the agent protocol call these
 * functions instead of wiring the stages themselves, so a stage added
 * here (compile, execute) reaches all four at once.
 *
 *   pipeline.c   rules -> parse -> rewrite or tactic -> lower ->
 *                redistribution fusion -> cost -> compile -> execute
 *   calibrate.c  the cost model's figures, measured on this machine
 *   search.c     automatic partitioning: a search over the engine's
 *                actions, scored by the cost model
 *
 * Compiling (codegen/) links LLVM into every program that links the
 * library: libpartir.a holds the code generator's objects too.
 */
#ifndef PARTIR_PIPELINE_H
#define PARTIR_PIPELINE_H

#include "check/check.h"
#include "codegen/codegen.h"

/* ------------------------------------------------------------ pipeline.c */

/* Stage 0, rules.  Loads rule files (every *.rules of the first
 * directory on the search path when 'paths' is NULL; then 'extra' when
 * given), derives the operator rules and refuses a rule that changes the
 * type of what it rewrites.  NULL with diagnostics in 'errors'. */
RuleSet *pipeline_load_rules(const char *const *paths, const Source *extra,
                             Diag *errors);

/* Stage 1, parse and check: a program file or text, its types checked as
 * its terms are built: .pir, or StableHLO imported by src/import/ (a
 * name ending in .mlir; a name that ends neither in .mlir nor in .pir
 * and text that starts as MLIR does).  NULL with the
 * diagnostics in 'diags', or (files) with 'error' set when it cannot be
 * read. */
Module *pipeline_load_program(const char *path, Diag *diags, GError **error);
Module *pipeline_read_program(const char *name, const char *text, gsize len,
                              Diag *diags);

/* Stage 1 with what the program itself asks for.  A StableHLO program
 * may name its mesh ('sdy.mesh') and the shardings of its values
 * (docs/stablehlo.md): the mesh becomes the program's (one the caller
 * gives must be the same), and the shardings become the engine commands
 * that make them ('arg-tile', 'tile', then 'propagate': stage 2, through
 * rewrite/layouts.c), each kept with its state, so that a front end
 * records them as it records the user's (undo, history, trace).  It may
 * also check its own values (StableHLO's check operations): what they
 * compare are results of the program, and pipeline_check_results
 * compares them after a run. */
typedef struct LoadOptions {
  gboolean ignore_shardings; /* leave meshes and shardings as they are */
  const Mesh *mesh;          /* the mesh the caller names, or NULL */
  const RuleSet *rs; /* the rules for the commands; NULL: the default rule
                        files, loaded when a program has shardings */
} LoadOptions;

typedef struct Program {
  Module *module;        /* the program as written */
  State *initial;        /* its state */
  GPtrArray *steps;      /* LayoutStep*: the commands its shardings became */
  gboolean has_mesh;     /* 'mesh' is the program's: the file's or given */
  gboolean mesh_in_file; /* ... declared by the file */
  Mesh mesh;
  GArray *checks; /* HloCheck: the checks of its results (may be empty) */
  Source *src;    /* its text, when it has checks (their reports quote it) */
} Program;

gboolean pipeline_open_program(const char *path, const LoadOptions *o,
                               Program *out, Diag *diags, GError **error);
gboolean pipeline_open_text(const char *name, const char *text, gsize len,
                            const LoadOptions *o, Program *out, Diag *diags);
/* The program after its commands (borrowed). */
State *pipeline_program_state(const Program *p);
void pipeline_program_clear(Program *p);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Program, pipeline_program_clear)
/* "--shardings" as its words say: "apply" (FALSE) or "ignore" (TRUE);
 * FALSE return with the reason for any other word. */
gboolean pipeline_shardings_option(const char *word, gboolean *ignore,
                                   Diag *why);
/* Whether 'results' of a run of 'p' pass its checks: a line for each
 * check that passes appended to 'passed' ("f.mlir:9:3: check.expect_eq:
 * ok"), a positioned error with the source line for each that fails to
 * 'failed'. */
gboolean pipeline_check_results(const Program *p, GPtrArray *results,
                                GString *passed, GString *failed);

/* 'partir check-rules': the rewrite rules (check_rules) when any are
 * loaded, then the vjp rules (check_vjps) when any are; a line each into
 * 'out'. */
gboolean pipeline_check_rules(const RuleSet *rs, guint32 seed, int tries,
                              GString *out);

/* Stage 2 also derives: the training step of state 's' (docs/grad.md),
 * a new module, or NULL with the reason in 'why'. */
Module *pipeline_train_step(const RuleSet *rs, const State *s,
                            const TrainOptions *o, Diag *why);

/* Stage 2, rewrite: engine commands ("arg-tile 0 0 8; propagate"), or a
 * tactic.  A tactic is a service of a higher layer (the Lua binding
 * implements it): a function from state to state.
 *
 * What the commands report, and the hardware 'propagate --resolve'
 * prices its candidates on (stages 3 to 5, on the mesh the candidate's
 * regions imply: the axes it binds are the only ones that change its
 * cost).  Every field may be NULL. */
typedef struct RewriteContext {
  const Hardware *hw;  /* the hardware; else ... */
  const char *hw_name; /* ... the one this names (hw_load); else cpu2 */
  GString *report;     /* what a pass could not resolve, a line each */
  GString *choices;    /* what propagate --resolve chose, a line each */
} RewriteContext;
State *pipeline_rewrite(const RuleSet *rs, State *in, const char *script,
                        const RewriteContext *cx, Diag *why);
/* One command of a script, as the REPL reads them a line at a time. */
State *pipeline_command(const RuleSet *rs, State *in, const char *command,
                        const RewriteContext *cx, Diag *why);
typedef struct Tactic Tactic;
struct Tactic {
  /* The state after the tactic, or NULL with the reason in 'why'. */
  State *(*run)(Tactic *self, State *in, const Mesh *mesh, Diag *why);
};
State *pipeline_tactic(Tactic *tactic, State *in, const Mesh *mesh, Diag *why);

/* Stages 3 and 4, lower and fuse redistributions: the SPMD program a
 * function runs as on 'mesh' — the function itself when it is SPMD
 * text.  'm' is the module of 'g' (may be NULL): its user's names carry
 * over to the values of the lowering that stand for them. */
typedef struct Lowered {
  const Func *global;  /* the program given */
  Func *owned;         /* its lowering, when made here */
  const Func *spmd;    /* 'global' when it is SPMD text, else 'owned' */
  const Module *names; /* the names to print 'spmd' with (may be NULL) */
  Module *owned_names; /* the names of 'owned' */
} Lowered;
gboolean pipeline_lower(const RuleSet *rs, const Module *m, const Func *g,
                        const Mesh *mesh, Lowered *out, Diag *why);
void pipeline_lowered_clear(Lowered *l);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Lowered, pipeline_lowered_clear)

/* Stage 5, cost: the estimate of a lowered program on 'hw', naming
 * statements as the SPMD program prints (its 'names'). */
gboolean pipeline_cost(const Lowered *l, const Hardware *hw, CostReport *out,
                       Diag *diag);
/* Stages 3 to 5 at once for a state (the REPL's and the protocol's
 * reward): FALSE with the reason in 'why' when it cannot be lowered
 * or costed.  With 'memo' (may be NULL; made for 'rs' and 'mesh') the
 * lowering reuses what earlier calls lowered (the protocol's states,
 * which share most of their values), and the statements of the cost
 * are not named (no 'peak_at'). */
gboolean pipeline_cost_state(const RuleSet *rs, const State *s,
                             const Mesh *mesh, const Hardware *hw,
                             SpmdMemo *memo, CostReport *out, Diag *why);

/* Export, after stages 3 and 4: state 's' as StableHLO text
 * (spmd/export.c), lowered on 'mesh'.  EXPORT_SDY and EXPORT_GSPMD write
 * the program 's' was rewritten from (its module's entry as loaded; its
 * tiles and sums unrolled), each argument and result annotated with the
 * layout the lowering of 's' gives it: the shardings to jit it with.
 * EXPORT_DEVICE writes the program each device runs.  FALSE with the
 * reason, and nothing appended to 'out', when it cannot be lowered or
 * written. */
gboolean pipeline_export(const RuleSet *rs, const State *s, const Mesh *mesh,
                         ExportForm form, GString *out, Diag *why);

/* Stage 6, compile: native code for the host CPU (codegen/), as 'o' says
 * (NULL: the defaults).  On a mesh with axes, 'g' is lowered there
 * (stages 3 and 4) and each device's program compiled, to run a thread a
 * device; without one ('mesh' NULL or no axes), 'g' itself runs on one
 * device, its tiles and sums as loops.  'g' is a program before lowering
 * (SPMD text is refused: its arguments are a device's).  'm' as for
 * pipeline_lower; 'm' and 'g' must outlive the executable. */
/* The runtimes a mesh's devices run on (docs/runtime.md). */
typedef enum {
  PIPELINE_RUNTIME_THREADS,  /* a thread per device, in this process */
  PIPELINE_RUNTIME_MPI,      /* a process per device: the ranks of mpirun */
  PIPELINE_RUNTIME_CUDA,     /* a GPU per device, in this process (gpu.md) */
  PIPELINE_RUNTIME_CUDA_MPI, /* a GPU per device, a rank of mpirun each */
} PipelineRuntime;
typedef struct Executable {
  Lowered lowered;    /* on a mesh, the lowering; else zero */
  const Func *global; /* the program: the inputs it takes, its results */
  const Func *device; /* what 'code' is: 'lowered.spmd', or 'global' */
  Compiled *code;
  PipelineRuntime runtime; /* what stage 7 runs a mesh's devices on */
  /* a split's last part padded (an uneven range): the CPU runtimes run
   * it, the GPU ones refuse it */
  gboolean uneven;
} Executable;
gboolean pipeline_compile(const RuleSet *rs, const Module *m, const Func *g,
                          const Mesh *mesh, const CodegenOptions *o,
                          Executable *out, Diag *why);
void pipeline_executable_clear(Executable *e);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Executable, pipeline_executable_clear)

/* Whether the executable's runtime runs its program: FALSE with the
 * reason for an uneven split on a GPU runtime (NCCL's collectives move
 * whole chunks).  Stage 7 checks it too. */
gboolean pipeline_runtime_runs(const Executable *e, Diag *why);
/* The runtime called 'name' ("threads", "mpi", "cuda", "cuda-mpi"): FALSE
 * with the reason when there is none by that name or this partir was
 * built without it. */
gboolean pipeline_runtime_find(const char *name, PipelineRuntime *out,
                               Diag *why);
/* Joins the runtime's processes, before a program is loaded: this
 * process's 'rank' among 'ranks' (0 of 1 for threads).  A runtime of
 * several processes needs one per device, and only rank 0 reads inputs
 * and gets results (pipeline_execute).  FALSE with the reason when it
 * cannot start, on every process alike (on cuda-mpi, when a rank has no
 * GPU, every rank fails): each says why, then calls
 * pipeline_runtime_stop(rt, 0). */
gboolean pipeline_runtime_start(PipelineRuntime rt, int *rank, int *ranks,
                                GError **error);
/* Leaves it, with the process's exit 'status': a non-zero status on a
 * runtime of several processes ends all of them at once (MPI_Abort), so
 * that none waits for this one. */
void pipeline_runtime_stop(PipelineRuntime rt, int status);
/* Whether 'rt' runs a process per device (mpi, cuda-mpi), and whether
 * its devices are GPUs (the code compiled for NVPTX). */
gboolean pipeline_runtime_ranks(PipelineRuntime rt);
gboolean pipeline_runtime_gpu(PipelineRuntime rt);

/* Stage 7, execute: the program's results (new tensors, in order) on
 * 'inputs' (one per argument of 'e->global', of its types), or NULL with
 * the reason (diag) or the error.  On the MPI runtime every rank calls
 * it; rank 0 passes the inputs and gets the results, the others pass
 * NULL and get an empty array. */
GPtrArray *pipeline_execute(const Executable *e, Tensor *const *inputs,
                            Diag *why, GError **error);
/* The seeded random inputs 'run' draws (interp_random_input), one per
 * argument of 'f'. */
GPtrArray *pipeline_random_inputs(const Func *f, gint64 seed);

/* The step time of a compiled program, in seconds. */
typedef struct StepTime {
  double min, median;
  int runs;
} StepTime;
/* Stage 7 timed: a warm-up step, then 'runs' steps (at least 1) on
 * 'inputs', each timed on the monotonic clock.  On a mesh the inputs are
 * scattered once and the devices run the steps on what they hold,
 * meeting before each (SpmdRuntime.steps): a step is the devices'
 * programs, as in a training loop, not the scatter and gather of
 * partir exec.  FALSE with the reason when one fails. */
gboolean pipeline_time(const Executable *e, Tensor *const *inputs, int runs,
                       StepTime *out, Diag *why, GError **error);

/* ----------------------------------------------------------- calibrate.c */

/* What partir calibrate measures on. */
typedef struct CalibrateOptions {
  int devices;      /* threads at once, one a device: a mesh d=N */
  int runs;         /* timed steps per program (the median is taken) */
  int passes;       /* the whole calibration so many times, each figure
                       the median of theirs (0: once) */
  const char *name; /* the description's name (NULL: "calibrated") */
} CalibrateOptions;

/* A hardware description of this machine: each figure solved from the
 * time of a compiled program that it dominates, run on 'devices'
 * threads at once (calibrate.c says which).  'log' gets a comment line
 * per figure: the program, its time, the figure.  FALSE with the reason
 * when a program cannot be compiled or run. */
gboolean pipeline_calibrate(const RuleSet *rs, const CalibrateOptions *o,
                            Hardware *out, GString *log, Diag *why);

/* -------------------------------------------------------------- search.c */

/* Automatic partitioning (docs/search.md): Monte-Carlo tree search or
 * beam search over actions that split a group of alike arguments (the
 * same weight of every layer) along a dimension over a mesh axis and
 * propagate, scored by the modelled step time (stage 5) with a penalty
 * when the peak memory exceeds the device's. */
typedef enum { SEARCH_MCTS, SEARCH_BEAM } SearchAlgo;

typedef struct SearchProgress {
  gint64 explored;   /* states costed so far */
  double elapsed;    /* seconds */
  double best_score; /* the best state's score (seconds) ... */
  double root_score; /* ... and the program's as given */
} SearchProgress;

typedef struct SearchOptions {
  SearchAlgo algo;
  gint64 budget;                 /* states costed at most (0: 1000) */
  double seconds;                /* stop after this long (0: no limit) */
  guint64 seed;                  /* the only source of randomness */
  int beam_width;                /* beam search's width (0: 4) */
  const char *const *inputs;     /* the data arguments (NULL: the first) */
  const char *const *batch_axes; /* the axes data splits over (NULL:
                                    "batch") */
  /* Called now and then (at most 5 times a second) and at the end; may be
   * NULL. */
  void (*progress)(void *data, const SearchProgress *p);
  void *progress_data;
} SearchOptions;

typedef struct SearchResult {
  State *best;           /* the best state found */
  CostReport cost;       /* its cost ... */
  CostReport base;       /* ... and the program's as given */
  GPtrArray *trace;      /* char*: the scripts from the root to 'best' */
  GPtrArray *groups;     /* char*: each action group's arguments ("%a %b") */
  int root_actions;      /* actions of the program as given */
  gint64 explored;       /* states costed */
  gint64 best_at;        /* ... when the best was costed (1: the first) */
  gint64 transpositions; /* actions that reached a state already costed */
  double seconds;
  gboolean interrupted; /* stopped by partir_interrupt: the best so far */
} SearchResult;

/* Searches from 'root' on 'mesh' and 'hw'.  FALSE with the reason when
 * the program as given cannot be costed or an option is wrong.  The
 * caller runs it on the deep stack (stage 3's requirement). */
gboolean search_run(const RuleSet *rs, State *root, const Mesh *mesh,
                    const Hardware *hw, const SearchOptions *o,
                    SearchResult *out, Diag *why);
void search_result_clear(SearchResult *r);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(SearchResult, search_result_clear)
const char *search_algo_name(SearchAlgo a);
gboolean search_algo_parse(const char *word, SearchAlgo *out);
/* The trace as one engine script ("arg-tile ...; propagate; ..."). */
void search_script(GString *out, const SearchResult *r);
/* The trace as a Lua tactic that 'partir tactic' replays to 'best',
 * after the comment 'header' (may be NULL). */
void search_tactic(GString *out, const SearchResult *r, const char *header);
/* The cost of 'best' beside the program's as given, its collectives and
 * the trace, as a table. */
void search_print(GString *out, const SearchResult *r, const Hardware *hw);

#endif
