/* pipeline.c — the stages of partir, in order.
 *
 *   0. rules     rule files -> RuleSet (rewrite/rule.c), then the
 *                load-time check that no rule changes a type
 *                (check/rulecheck.c).
 *                requires: nothing.
 *   1. parse     text -> Module, types checked as terms are built
 *                (core/parse.c), or StableHLO text imported
 *                (import/: *.mlir, or text that starts as MLIR does);
 *                then what the program asks for itself: its mesh, its
 *                shardings as stage-2 commands (rewrite/layouts.c), its
 *                checks, compared after a run (eval/expect.c).
 *                requires: nothing (bad text is a Diag).
 *   2. rewrite   engine commands (rewrite/command.c) or a tactic (the
 *                Tactic interface; Lua in bind/lua.c), propagation
 *                included.
 *                requires: a RuleSet from 0; a State of a Module from 1.
 *   3. lower     a partitioned function -> the per-device SPMD program,
 *                each device's chunk taken literally (spmd/lower.c).
 *                requires: a well-typed function (any stored term);
 *                its height at most PARTIR_MAX_HEIGHT (checked here);
 *                the caller on the deep stack (partir_call_with_stack).
 *   4. fuse      redistribution fusion: the [spmd] rules, then arguments
 *                received sharded (spmd/redistribute.c).
 *                requires: an SPMD program from 3.
 *   5. cost      per-device FLOPs, memory, communication, time
 *                (spmd/cost.c).
 *                requires: an SPMD program from 4 (or SPMD text from 1)
 *                and a Hardware (spmd/hardware.c).
 *      export    StableHLO text (spmd/export.c): the program a state was
 *                rewritten from with the layouts of its lowering from
 *                3-4 as shardings, or the lowering itself.
 *                requires: a State from 2; for the former, one whose
 *                program is no device's (SPMD text).
 *   6. compile   a program -> native code for the host (codegen/): on
 *                a mesh, its lowering from 3-4, a device's program run a
 *                thread a device; without one, the program on one device.
 *                requires: a program from 1-2 (not SPMD text); the
 *                requirements of 3 on a mesh.
 *   7. execute   inputs -> results (codegen_run, codegen_run_spmd, or on
 *                the other runtimes codegen_run_mpi, codegen_cuda_run,
 *                codegen_run_cuda_mpi: 'runtimes' below), or
 *                the step time of N runs (min and median).
 *                requires: an Executable from 6; inputs of its program's
 *                argument types.
 *
 * Each stage requires what the one before it gives: a stage never
 * re-checks its input.  Front ends call these functions and print.
 */
#include "pipeline.h"
#include "import/import.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

RuleSet *pipeline_load_rules(const char *const *paths, const Source *extra,
                             Diag *errors) {
  RuleSet *rs = extra ? ruleset_load_with(paths, extra, errors)
                      : ruleset_load(paths, errors);
  if (rs && (!check_rule_types(rs, errors) || !check_vjp_types(rs, errors))) {
    ruleset_free(rs);
    return NULL;
  }
  return rs;
}

Module *pipeline_load_program(const char *path, Diag *diags, GError **error) {
  g_autoptr(Source) src = NULL;
  if (!source_load(path, &src, error))
    return NULL;
  return pipeline_read_program(path, src->text, src->len, diags);
}

/* StableHLO joins here: a name ending in .mlir is imported, one ending
 * in .pir parsed; any other name is imported when its text starts as
 * only MLIR does ('module', 'func.func', '#loc'). */
Module *pipeline_read_program(const char *name, const char *text, gsize len,
                              Diag *diags) {
  gboolean mlir =
      g_str_has_suffix(name, ".mlir") ||
      (!g_str_has_suffix(name, ".pir") && import_is_mlir(text, len));
  if (mlir)
    return import_text(name, text, len, diags);
  return parse_text(name, text, len, diags);
}

gboolean pipeline_check_rules(const RuleSet *rs, guint32 seed, int tries,
                              GString *out) {
  gboolean vjps = FALSE;
  for (int op = 0; op < OP_COUNT_; op++)
    vjps |= rs->vjps[op] != NULL;
  gboolean ok = TRUE;
  if (rs->rules->len > 0 || !vjps) /* grad.rules alone has none */
    ok = check_rules(rs, seed, tries, out);
  if (vjps)
    ok = check_vjps(rs, seed, tries, out) && ok;
  return ok;
}

Module *pipeline_train_step(const RuleSet *rs, const State *s,
                            const TrainOptions *o, Diag *why) {
  return grad_train_step(rs, &s->func, s->module->names, o, why);
}

gboolean pipeline_shardings_option(const char *word, gboolean *ignore,
                                   Diag *why) {
  if (g_strcmp0(word, "apply") == 0 || g_strcmp0(word, "ignore") == 0) {
    *ignore = strcmp(word, "ignore") == 0;
    return TRUE;
  }
  diag_reason(why, "shardings: 'apply' or 'ignore', not '%s'",
              word ? word : "");
  return FALSE;
}

static void program_empty(Program *out, const LoadOptions *o) {
  *out = (Program){0};
  out->steps = g_ptr_array_new_with_free_func((GDestroyNotify)layout_step_free);
  out->checks = g_array_new(FALSE, TRUE, sizeof(HloCheck));
  if (o->mesh && o->mesh->naxes > 0) {
    out->has_mesh = TRUE;
    out->mesh = *o->mesh;
  }
}

/* The layouts an import's shardings ask for. */
static ValueLayout *layouts_of(const Imported *im) {
  ValueLayout *ls = g_new0(ValueLayout, MAX(im->shardings->len, 1));
  for (guint i = 0; i < im->shardings->len; i++) {
    const ImportedSharding *is = g_ptr_array_index(im->shardings, i);
    ValueLayout *l = &ls[i];
    l->value = is->value;
    l->rank = is->sharding.rank;
    l->origin = is->origin;
    for (int d = 0; d < l->rank; d++) {
      const ShardingDim *dim = &is->sharding.dims[d];
      l->naxes[d] = dim->naxes;
      memcpy(l->axes[d], dim->axes, sizeof dim->axes);
    }
  }
  return ls;
}

/* The commands an import's shardings become, from 'out->initial'. */
/* A result whose sharding closes a dimension whole ('{}': replicated)
 * must come out whole there.  partir has no action that keeps a value
 * whole, so a partitioning that splits it is refused, naming the
 * result, the dimension and the axes (docs/stablehlo.md). */
static gboolean check_closed_results(const RuleSet *rs, const Imported *im,
                                     const Program *out, Diag *diags) {
  gboolean any = FALSE;
  for (guint i = 0; i < im->shardings->len; i++) {
    const ImportedSharding *s = g_ptr_array_index(im->shardings, i);
    for (int d = 0; s->site == HLO_ON_RESULT && d < s->sharding.rank; d++)
      any |= s->sharding.dims[d].naxes == 0 && !s->sharding.dims[d].open;
  }
  const State *st = pipeline_program_state(out);
  if (!any || st == out->initial)
    return TRUE;
  g_auto(Lowered) l = {0};
  g_autoptr(Diag) why = diag_new(NULL);
  if (!pipeline_lower(rs, st->module, &st->func, &out->mesh, &l, why))
    return TRUE; /* what cannot be lowered says so where it is lowered */
  for (guint i = 0; i < im->shardings->len; i++) {
    const ImportedSharding *s = g_ptr_array_index(im->shardings, i);
    if (s->site != HLO_ON_RESULT)
      continue;
    const Dist *got = &l.spmd->spmd->result_dists[s->index];
    for (int d = 0; d < s->sharding.rank && d < got->rank; d++) {
      const ShardingDim *want = &s->sharding.dims[d];
      if (want->naxes > 0 || want->open || got->naxes[d] == 0)
        continue;
      diag_reason(diags,
                  "%s: dimension %d is closed and whole ('{}'), but the "
                  "program's partitioning splits it over \"%s\" (partir "
                  "keeps no value whole: leave it open, '{?}', or give it "
                  "the split)\n",
                  s->origin, d, got->axes[d][0]);
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean apply_shardings(const Imported *im, const LoadOptions *o,
                                Program *out, const char *name, Diag *diags) {
  if (im->shardings->len == 0)
    return TRUE;
  g_autoptr(RuleSet) own = NULL;
  const RuleSet *rs = o->rs;
  if (!rs && !(rs = own = pipeline_load_rules(NULL, NULL, diags)))
    return FALSE;
  g_autofree ValueLayout *ls = layouts_of(im);
  g_autoptr(Diag) why = diag_new(NULL);
  State *last = rw_apply_layouts(rs, out->initial, ls, (int)im->shardings->len,
                                 &out->mesh, NULL, out->steps, why);
  if (!last) {
    /* nothing that loads takes 'propagate --resolve': how to go on */
    diag_reason(diags,
                "%s: its shardings cannot be applied: %s\n(load it with "
                "--shardings ignore, the REPL's 'load FILE --shardings "
                "ignore', Lua's {shardings = \"ignore\"}, and partition it "
                "with commands or a tactic)\n",
                name, diag_text(why));
    return FALSE;
  }
  state_unref(last);
  return check_closed_results(rs, im, out, diags);
}

/* Stage 1 on 'src' (taken), then the commands its shardings ask for. */
static gboolean open_source(Source *src, const LoadOptions *o, Program *out,
                            Diag *diags);

/* open_source, 'out' left empty when it fails. */
static gboolean open_or_clear(Source *src, const LoadOptions *o, Program *out,
                              Diag *diags) {
  if (open_source(src, o, out, diags))
    return TRUE;
  pipeline_program_clear(out);
  return FALSE;
}

static gboolean open_source(Source *src, const LoadOptions *o, Program *out,
                            Diag *diags) {
  program_empty(out, o);
  gboolean mlir = g_str_has_suffix(src->name, ".mlir") ||
                  (!g_str_has_suffix(src->name, ".pir") &&
                   import_is_mlir(src->text, src->len));
  if (!mlir) {
    out->module = read_module_source(parse_module, src, diags);
    source_free(src);
    if (!out->module)
      return FALSE;
    out->initial = state_new(out->module);
    return TRUE;
  }
  ImportOptions io = {.shardings = !o->ignore_shardings, .mesh = o->mesh};
  Diag d;
  diag_init(&d, src);
  g_autoptr(Imported) im = import_program(src, &io, &d);
  if (!im)
    diag_reason(diags, "%s", diag_text(&d));
  diag_clear(&d);
  if (!im) {
    source_free(src);
    return FALSE;
  }
  out->module = module_ref(im->module);
  out->initial = state_new(out->module);
  out->has_mesh = im->has_mesh;
  out->mesh_in_file = im->mesh_in_file;
  out->mesh = im->mesh;
  g_array_append_vals(out->checks, im->checks->data, im->checks->len);
  gboolean ok = apply_shardings(im, o, out, src->name, diags);
  if (ok && out->checks->len > 0)
    out->src = src;
  else
    source_free(src);
  return ok;
}

gboolean pipeline_open_program(const char *path, const LoadOptions *o,
                               Program *out, Diag *diags, GError **error) {
  Source *src = NULL;
  *out = (Program){0};
  if (!source_load(path, &src, error))
    return FALSE;
  return open_or_clear(src, o, out, diags);
}

gboolean pipeline_open_text(const char *name, const char *text, gsize len,
                            const LoadOptions *o, Program *out, Diag *diags) {
  return open_or_clear(source_new(name, text, len), o, out, diags);
}

State *pipeline_program_state(const Program *p) {
  if (p->steps->len == 0)
    return p->initial;
  return ((LayoutStep *)g_ptr_array_index(p->steps, p->steps->len - 1))->state;
}

void pipeline_program_clear(Program *p) {
  if (p->steps)
    g_ptr_array_unref(p->steps);
  if (p->checks)
    g_array_unref(p->checks);
  state_unref(p->initial);
  module_free(p->module);
  source_free(p->src);
  *p = (Program){0};
}

gboolean pipeline_check_results(const Program *p, GPtrArray *results,
                                GString *passed, GString *failed) {
  gboolean ok = TRUE;
  for (guint i = 0; i < p->checks->len; i++) {
    const HloCheck *c = &g_array_index(p->checks, HloCheck, i);
    static const ExpectKind kinds[] = {[HLO_CHECK_EQ] = EXPECT_EQ,
                                       [HLO_CHECK_ALMOST_EQ] = EXPECT_ALMOST_EQ,
                                       [HLO_CHECK_CLOSE] = EXPECT_CLOSE};
    Expect e = {.kind = kinds[c->kind],
                .tolerance = c->tolerance,
                .min_ulp = c->min_ulp,
                .max_ulp = c->max_ulp};
    g_autoptr(GString) why = g_string_new(NULL);
    if (tensor_expect(&e, g_ptr_array_index(results, c->actual),
                      g_ptr_array_index(results, c->expected), why)) {
      g_string_append_printf(passed, "%s:%d:%d: %s: ok\n", p->src->name,
                             c->loc.line, c->loc.col, c->name);
      continue;
    }
    ok = FALSE;
    Diag d;
    diag_init(&d, p->src);
    diag_error(&d, c->loc, "%s failed: %s", c->name, why->str);
    g_string_append(failed, diag_text(&d));
    diag_clear(&d);
  }
  return ok;
}

/* The cost model as the rewrite layer's Pricer (propagate --resolve):
 * a state lowered on the mesh its regions imply, its step time
 * estimated on the context's hardware, loaded when first needed. */
typedef struct StagePricer {
  Pricer base;
  const RuleSet *rs;
  const RewriteContext *cx;
  Hardware loaded;
  gboolean have;
} StagePricer;

static const Hardware *pricer_hardware(StagePricer *p, Diag *why) {
  if (p->cx && p->cx->hw)
    return p->cx->hw;
  if (p->have)
    return &p->loaded;
  const char *name = p->cx && p->cx->hw_name ? p->cx->hw_name : "cpu2";
  GError *error = NULL;
  if (!hw_load(name, &p->loaded, &error)) {
    diag_reason(why, "hardware '%s': %s", name, error->message);
    g_error_free(error);
    return NULL;
  }
  p->have = TRUE;
  return &p->loaded;
}

static gboolean stage_price(Pricer *self, const State *s, Price *out,
                            Diag *why) {
  StagePricer *p = (StagePricer *)self;
  const Hardware *hw = pricer_hardware(p, why);
  Mesh mesh;
  if (!hw || !rw_implied_mesh(s->func.body, &mesh, why))
    return FALSE;
  g_auto(Lowered) l = {0};
  g_auto(CostReport) r = {0};
  if (!pipeline_lower(p->rs, s->module, &s->func, &mesh, &l, why) ||
      !pipeline_cost(&l, hw, &r, why))
    return FALSE;
  GString *text = g_string_new(NULL);
  cost_append_time(text, r.total_time);
  g_string_append(text, " a step on ");
  g_string_append(text, hw->name);
  g_string_append(text, ", ");
  spmd_print_collectives(text, l.spmd);
  g_string_append_printf(text, ", %.0f B sent", cost_comm_bytes(&r));
  out->seconds = r.total_time;
  out->summary = g_string_free(text, FALSE);
  return TRUE;
}

/* Runs 'run' (rw_script or rw_command) on 'text' in context 'cx'. */
static State *rewrite_in(const RuleSet *rs, State *in, const char *text,
                         const RewriteContext *cx, Diag *why,
                         State *(*run)(const RuleSet *, State *, const char *,
                                       const RewriteEnv *, Diag *)) {
  StagePricer pricer = {.base = {stage_price}, .rs = rs, .cx = cx};
  RewriteEnv env = {.report = cx ? cx->report : NULL,
                    .choices = cx ? cx->choices : NULL,
                    .pricer = &pricer.base};
  return run(rs, in, text, &env, why);
}

State *pipeline_rewrite(const RuleSet *rs, State *in, const char *script,
                        const RewriteContext *cx, Diag *why) {
  return rewrite_in(rs, in, script, cx, why, rw_script);
}

State *pipeline_command(const RuleSet *rs, State *in, const char *command,
                        const RewriteContext *cx, Diag *why) {
  return rewrite_in(rs, in, command, cx, why, rw_command);
}

State *pipeline_tactic(Tactic *tactic, State *in, const Mesh *mesh, Diag *why) {
  State *out = tactic->run(tactic, in, mesh, why);
  /* a tactic run for a mesh gives a program that mesh can run: one that
   * binds an axis the mesh lacks, or splits in other parts than its
   * devices, fails here, as the agent protocol refuses such a step,
   * rather than when it is lowered */
  if (out && mesh && mesh->naxes > 0) {
    g_autoptr(Diag) fit = diag_new(NULL);
    if (!spmd_fits_mesh(&out->func, mesh, fit)) {
      g_autofree char *m = mesh_to_string(mesh);
      diag_reason(why, "the tactic's program does not fit mesh %s: %s", m,
                  diag_text(fit));
      state_unref(out);
      return NULL;
    }
  }
  return out;
}

/* pipeline_lower, with what 'memo' remembers when given (then 'm' and
 * the names are not used). */
static gboolean lower_with(const RuleSet *rs, const Module *m, const Func *g,
                           const Mesh *mesh, SpmdMemo *memo, Lowered *out,
                           Diag *why) {
  *out = (Lowered){.global = g};
  if (g->spmd) {
    out->spmd = g;
    out->names = m;
    return TRUE;
  }
  /* Lowering recurses once per level: refuse what the deep stack the
   * front ends run on (partir_call_with_stack) was not sized for. */
  guint32 height = 0;
  for (int i = 0; i < g->nresults; i++)
    height = MAX(height, g->body->args[i]->height);
  if (height > PARTIR_MAX_HEIGHT) {
    diag_reason(why, "the program is %u values deep; lowering takes at most %d",
                (unsigned)height, PARTIR_MAX_HEIGHT);
    return FALSE;
  }
  if (memo) {
    out->owned = spmd_lower_memo(g, memo, why);
    if (!out->owned || !spmd_fuse_memo(out->owned, memo, why)) {
      func_free(out->owned);
      out->owned = NULL;
      return FALSE;
    }
    out->spmd = out->owned;
    return TRUE;
  }
  out->owned_names = module_new();
  out->owned = spmd_lower(rs, m, g, mesh, out->owned_names, why);
  if (!out->owned || !spmd_fuse(rs, out->owned, out->owned_names, why)) {
    func_free(out->owned);
    out->owned = NULL;
    g_clear_pointer(&out->owned_names, module_free);
    return FALSE;
  }
  out->spmd = out->owned;
  out->names = out->owned_names;
  return TRUE;
}

gboolean pipeline_lower(const RuleSet *rs, const Module *m, const Func *g,
                        const Mesh *mesh, Lowered *out, Diag *why) {
  return lower_with(rs, m, g, mesh, NULL, out, why);
}

void pipeline_lowered_clear(Lowered *l) {
  func_free(l->owned);
  module_free(l->owned_names);
  *l = (Lowered){0};
}

gboolean pipeline_cost(const Lowered *l, const Hardware *hw, CostReport *out,
                       Diag *diag) {
  return cost_estimate(l->names, l->spmd, hw, out, diag);
}

gboolean pipeline_cost_state(const RuleSet *rs, const State *s,
                             const Mesh *mesh, const Hardware *hw,
                             SpmdMemo *memo, CostReport *out, Diag *why) {
  g_assert(!memo || spmd_memo_fits(memo, rs, mesh));
  g_auto(Lowered) l = {0};
  if (!lower_with(rs, s->module, &s->func, mesh, memo, &l, why))
    return FALSE;
  if (!memo)
    return pipeline_cost(&l, hw, out, why);
  return l.owned ? cost_estimate_lowered(l.spmd, hw, out, why)
                 : cost_estimate_unnamed(l.spmd, hw, out, why);
}

gboolean pipeline_export(const RuleSet *rs, const State *s, const Mesh *mesh,
                         ExportForm form, GString *out, Diag *why) {
  const Func *original = module_entry(s->module);
  if (form != EXPORT_DEVICE && (original->spmd || s->func.spmd)) {
    diag_reason(why, "this is a device's program (SPMD text): only "
                     "stablehlo-spmd exports it");
    return FALSE;
  }
  g_auto(Lowered) l = {0};
  if (!pipeline_lower(rs, s->module, &s->func, mesh, &l, why))
    return FALSE;
  if (form == EXPORT_DEVICE)
    return export_device(out, l.names, l.spmd, why);
  return export_global(out, s->module, original, l.spmd, form, why);
}

/* Whether 't' has a tile or sum over an uneven range (its last part
 * padded): its device program pads the last device's chunk, which the
 * CPU runtimes' collectives clip (as the simulator's do), and the GPU
 * code does not run yet. */
static gboolean has_uneven_range(const Term *t, GHashTable *seen) {
  if (!g_hash_table_add(seen, (gpointer)t))
    return FALSE;
  if ((t->kind == TM_TILE || t->kind == TM_SUM) && !type_range_even(t->range))
    return TRUE;
  for (int i = 0; i < t->nargs; i++)
    if (has_uneven_range(t->args[i], seen))
      return TRUE;
  return FALSE;
}

gboolean pipeline_compile(const RuleSet *rs, const Module *m, const Func *g,
                          const Mesh *mesh, const CodegenOptions *o,
                          Executable *out, Diag *why) {
  *out = (Executable){.global = g, .device = g};
  if (g->spmd) {
    diag_reason(why, "this is a device's program: compile the program "
                     "before lowering, on its mesh");
    return FALSE;
  }
  /* the global inputs are allocated from its types: refused when too
   * large before anything is (codegen checks the device's program) */
  if (!interp_check(g, why))
    return FALSE;
  g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
  out->uneven = has_uneven_range(g->body, seen);
  if (out->uneven && o && o->target == CODEGEN_TARGET_NVPTX) {
    diag_reason(why, "the GPU code does not run uneven splits (a range "
                     "whose width does not divide its size) yet: run it on "
                     "the CPU, on threads");
    return FALSE;
  }
  const Module *names = m;
  if (mesh && mesh->naxes > 0) {
    if (!pipeline_lower(rs, m, g, mesh, &out->lowered, why))
      return FALSE;
    out->device = out->lowered.spmd;
    names = out->lowered.names;
  }
  out->code = codegen_compile(names, out->device, o, why);
  if (!out->code) {
    pipeline_executable_clear(out);
    return FALSE;
  }
  return TRUE;
}

void pipeline_executable_clear(Executable *e) {
  codegen_free(e->code);
  pipeline_lowered_clear(&e->lowered);
  *e = (Executable){0};
}

#ifdef HAVE_MPI
#define MPI_BUILT TRUE, NULL
#else
#define MPI_BUILT                                                              \
  FALSE, "install OpenMPI (apt-get install libopenmpi-dev openmpi-bin) and "   \
         "configure again"
#endif

/* The runtimes, by name: --runtime's choices, in the order the usage
 * lists them.  'built' is FALSE for one this partir was configured
 * without.  (The driver, cuBLAS and NCCL are loaded when a GPU runtime
 * runs, with dlopen: they are always built.) */
static const struct {
  const char *name;
  PipelineRuntime kind;
  gboolean ranks; /* a process per device: the ranks of mpirun */
  gboolean gpu;   /* its devices are GPUs: code for NVPTX */
  gboolean built;
  const char *missing; /* how to get it, when not built */
} runtimes[] = {
    {"threads", PIPELINE_RUNTIME_THREADS, FALSE, FALSE, TRUE, NULL},
    {"mpi", PIPELINE_RUNTIME_MPI, TRUE, FALSE, MPI_BUILT},
    {"cuda", PIPELINE_RUNTIME_CUDA, FALSE, TRUE, TRUE, NULL},
    {"cuda-mpi", PIPELINE_RUNTIME_CUDA_MPI, TRUE, TRUE, MPI_BUILT},
};

/* The row of 'rt'. */
static gsize runtime_row(PipelineRuntime rt) {
  for (gsize k = 0; k < G_N_ELEMENTS(runtimes); k++)
    if (runtimes[k].kind == rt)
      return k;
  g_assert_not_reached();
}

gboolean pipeline_runtime_ranks(PipelineRuntime rt) {
  return runtimes[runtime_row(rt)].ranks;
}

gboolean pipeline_runtime_gpu(PipelineRuntime rt) {
  return runtimes[runtime_row(rt)].gpu;
}

gboolean pipeline_runtime_find(const char *name, PipelineRuntime *out,
                               Diag *why) {
  for (gsize k = 0; k < G_N_ELEMENTS(runtimes); k++) {
    if (strcmp(runtimes[k].name, name) != 0)
      continue;
    if (!runtimes[k].built) {
      diag_reason(why, "the %s runtime is not built into this partir: %s", name,
                  runtimes[k].missing);
      return FALSE;
    }
    *out = runtimes[k].kind;
    return TRUE;
  }
  g_autoptr(GString) names = g_string_new(NULL);
  for (gsize k = 0; k < G_N_ELEMENTS(runtimes); k++)
    g_string_append_printf(names, "%s%s", k ? " or " : "", runtimes[k].name);
  diag_reason(why, "--runtime must be %s, not '%s'", names->str, name);
  return FALSE;
}

gboolean pipeline_runtime_start(PipelineRuntime rt, int *rank, int *ranks,
                                GError **error) {
  *rank = 0;
  *ranks = 1;
#ifdef HAVE_MPI
  if (rt == PIPELINE_RUNTIME_MPI)
    return codegen_mpi_start(rank, ranks, error);
  if (rt == PIPELINE_RUNTIME_CUDA_MPI)
    return codegen_cuda_mpi_start(rank, ranks, error);
#endif
  (void)rt;
  (void)error;
  return TRUE;
}

void pipeline_runtime_stop(PipelineRuntime rt, int status) {
#ifdef HAVE_MPI
  if (pipeline_runtime_ranks(rt))
    codegen_mpi_stop(status);
#endif
  (void)rt;
  (void)status;
}

gboolean pipeline_runtime_runs(const Executable *e, Diag *why) {
  if (!e->uneven || !pipeline_runtime_gpu(e->runtime))
    return TRUE;
  diag_reason(why,
              "the %s runtime does not run uneven splits (a range "
              "whose width does not divide its size) yet: run it on the "
              "CPU (--runtime threads or mpi)",
              runtimes[runtime_row(e->runtime)].name);
  return FALSE;
}

/* A mesh's devices on the executable's runtime. */
static GPtrArray *run_devices(const Executable *e, Tensor *const *inputs,
                              int steps, double *step_seconds, Diag *why,
                              GError **error) {
  if (!pipeline_runtime_runs(e, why))
    return NULL;
#ifdef HAVE_MPI
  if (e->runtime == PIPELINE_RUNTIME_MPI)
    return codegen_run_mpi(e->code, e->device, inputs, steps, step_seconds, why,
                           error);
#endif
  return codegen_run_spmd(e->code, e->device, inputs, steps, step_seconds, why,
                          error);
}

GPtrArray *pipeline_execute(const Executable *e, Tensor *const *inputs,
                            Diag *why, GError **error) {
  if (!pipeline_runtime_runs(e, why))
    return NULL;
#ifdef HAVE_MPI
  if (e->runtime == PIPELINE_RUNTIME_CUDA_MPI)
    return codegen_run_cuda_mpi(e->code, e->device, inputs, why, error);
#endif
  if (codegen_on_gpu(e->code)) /* compiled for NVPTX: the CUDA runtime */
    return codegen_cuda_run(e->code, e->device, inputs, why, error);
  if (e->device->spmd)
    return run_devices(e, inputs, 0, NULL, why, error);
  return codegen_run(e->code, inputs);
}

GPtrArray *pipeline_random_inputs(const Func *f, gint64 seed) {
  GPtrArray *inputs =
      g_ptr_array_new_full((guint)f->nargs, (GDestroyNotify)tensor_unref);
  for (int i = 0; i < f->nargs; i++)
    g_ptr_array_add(inputs, interp_random_input(f, i, seed));
  return inputs;
}

/* Each run's results are dropped as it ends: a step holds only its own. */
gboolean pipeline_time(const Executable *e, Tensor *const *inputs, int runs,
                       StepTime *out, Diag *why, GError **error) {
  runs = MAX(runs, 1);
  g_autofree double *times = g_new(double, (gsize)runs + 1);
  if (e->device->spmd) { /* one warm-up step, then the timed ones */
    GPtrArray *results = run_devices(e, inputs, runs + 1, times, why, error);
    if (!results)
      return FALSE;
    g_ptr_array_unref(results);
    memmove(times, times + 1, (gsize)runs * sizeof *times);
  } else {
    for (int i = -1; i < runs; i++) {
      int64_t start = partir_now_ns();
      GPtrArray *results = codegen_run(e->code, inputs);
      if (i >= 0)
        times[i] = (double)(partir_now_ns() - start) * 1e-9;
      g_ptr_array_unref(results);
    }
  }
  partir_sort_doubles(times, (gsize)runs);
  out->runs = runs;
  out->min = times[0];
  out->median =
      runs % 2 ? times[runs / 2] : (times[runs / 2 - 1] + times[runs / 2]) / 2;
  return TRUE;
}
