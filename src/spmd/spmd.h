/* spmd.h — the SPMD layer: lowering, redistribution, simulation, cost.
 *
 * Above rewrite (docs/architecture.md).  A partitioned program lowers to
 * the program every device runs, with collectives on named mesh axes;
 * simulated devices run it against the interpreter; the cost model says
 * what one step costs each device on a described machine.
 *
 *   lower.c        a partitioned program to the per-device program
 *   memo.c         what lowering and fusion remember between calls
 *   redistribute.c the pass after lowering: [spmd] rules, sharded inputs
 *   narrow.c       a device builds its own chunk of a constant, gathers
 *                  a broadcast's operand
 *   simulate.c     running an SPMD program on simulated devices
 *   show.c         collective statistics and the Graphviz graph
 *   hardware.c     hardware descriptions (hw/NAME.hw)
 *   fusion.c       which values are computed inside their users' loops
 *   cost.c         per-device FLOPs, memory, communication and time
 *   sharding.c     layouts as JAX and XLA write them (Shardy, GSPMD) and
 *                  the device groups of a collective
 *   export.c       the program, or a device's program, as StableHLO
 */
#ifndef PARTIR_SPMD_H
#define PARTIR_SPMD_H

#include "eval/eval.h"
#include "rewrite/rewrite.h"

/* ---------------------------------------------------------------- lower.c */

/* The SPMD program of 'g' (a partitioned function) on 'mesh': one local
 * program for every device, with collectives, each device's chunk of a
 * value taken literally (spmd_fuse fuses them); NULL with the reason in
 * 'why' (an axis the mesh lacks, a range whose parts do not match its
 * axis, an axis bound twice in a nest, a lowering more than
 * PARTIR_MAX_HEIGHT deep).  When 'm' (the module of 'g') and 'names' are
 * given, 'names' gets the user's names of 'm' for the local values that
 * stand for named global values (either may be NULL).
 * requires: g's height is at most PARTIR_MAX_HEIGHT (pipeline_lower
 * checks it) and the caller runs on the deep stack
 * (partir_call_with_stack): the lowering recurses once per level. */
Func *spmd_lower(const RuleSet *rs, const Module *m, const Func *g,
                 const Mesh *mesh, Module *names, Diag *why);

/* ----------------------------------------------------------------- memo.c */

#define SPMD_SWAP_ROUNDS 4 /* rounds of shard_inputs a SpmdMemo keeps */

/* What lowering and redistribution fusion remember between calls on one
 * mesh (spmd_lower_memo, spmd_fuse_memo).  Each of their passes gives a
 * term a result that depends on the term alone (with the rule set and
 * the mesh), so a program that shares most of its values with one
 * lowered before (the agent protocol's states, an action apart) is
 * lowered and fused for what is new in it only.  It holds terms by
 * pointer, which a collection of the store frees: spmd_memo_check
 * empties it when the store has been collected since it was filled.
 * Its lowerings make no names (the cost needs none). */
typedef struct SpmdMemo {
  const RuleSet *rs;
  Mesh mesh;
  size_t collected;  /* collect_freed() when it was last emptied */
  GHashTable *lower; /* global closed Term -> its local value (lower.c) */
  /* the binders a region's values are lowered under (lower.c's key) ->
   * that region's table like 'lower': a value inside a region lowers
   * the same way under the same binders */
  GHashTable *regions;
  GHashTable *fixpoint; /* local Term -> its [spmd] rules' fixed point */
  GHashTable *narrow;   /* local Term -> spmd_narrow's result */
  GHashTable *regather; /* local Term -> it with its gathers of chunks
                           regathered (redistribute.c) */
  /* by round of redistribute.c's shard_inputs (a chunk of a chunk is
   * received in a second round, with a map of its own): */
  GHashTable *swap_map[SPMD_SWAP_ROUNDS]; /* shard -> argument: the
                                             round's last map */
  GHashTable *swap[SPMD_SWAP_ROUNDS];     /* Term -> its result under the map */
} SpmdMemo;

SpmdMemo *spmd_memo_new(const RuleSet *rs, const Mesh *mesh);
void spmd_memo_free(SpmdMemo *m);
/* Whether 'm' was made for rule set 'rs' and 'mesh'. */
gboolean spmd_memo_fits(const SpmdMemo *m, const RuleSet *rs, const Mesh *mesh);
/* Empties 'm' when the store has been collected since it was filled. */
void spmd_memo_check(SpmdMemo *m);

/* op(x) {axes, size, dim / split_dim, concat_dim[, length]}, a
 * collective over 'axes' of 'mesh': 'length' (when not 0) is the size an
 * all_gather keeps of padded chunks.  NULL with the reason in 'err' when
 * it is ill-typed. */
const Term *spmd_collective(const Mesh *mesh, Op op, const Term *x,
                            const char *const *axes, int naxes, int dim,
                            int dim2, int64_t length, Diag *err);

/* Whether every tile and sum of 'g' bound to a mesh axis can be bound
 * on 'mesh': the axis is the mesh's, and its devices are the region's
 * parts (the checks lowering makes of each region, without lowering);
 * FALSE with the reason. */
gboolean spmd_fits_mesh(const Func *g, const Mesh *mesh, Diag *why);
/* spmd_lower for 'memo's rule set and mesh, without names, with the
 * lowerings of the closed values 'memo' holds and adding the new ones. */
Func *spmd_lower_memo(const Func *g, SpmdMemo *memo, Diag *why);
/* spmd_fuse without names, with the results 'memo' holds. */
gboolean spmd_fuse_memo(Func *f, SpmdMemo *memo, Diag *why);

/* --------------------------------------------------------- redistribute.c */

/* Fuses the redistributions of lowered program 'f' in place: the [spmd]
 * rules of 'rs' to a fixed point, then arguments used only through one
 * 'shard' are received sharded, and a result that updates an argument
 * (Func.result_updates) is returned in the argument's layout.  Rebuilt values
 * keep their names in 'names' (may be NULL).  FALSE with the reason in 'why',
 * and 'f' unchanged, when the [spmd] rules loop. */
gboolean spmd_fuse(const RuleSet *rs, Func *f, Module *names, Diag *why);

/* --------------------------------------------------------------- narrow.c */

/* 'body' with every shard of a value a device can build alone (a splat
 * constant, an iota across its counting dimension, a broadcast) built at
 * the chunk's shape, and every all_gather of a broadcast made a gather
 * of its operand; 'changed' says whether anything was.  Names in 'names'
 * (may be NULL) carry over to rebuilt values. */
const Term *spmd_narrow(const Term *body, GHashTable *names, gboolean *changed);
/* The same with the results of earlier calls in 'memo' (Term -> result),
 * without names; 'body' itself when nothing changes. */
const Term *spmd_narrow_memo(const Term *body, GHashTable *memo);

/* ------------------------------------------------------------- simulate.c */

/* Runs SPMD program 'f' on one thread per device of its mesh: scatters
 * the global inputs by their layouts, gathers the global results
 * (replicas must agree, partial results are summed).  NULL with the
 * reason in 'diag' when the program or its inputs are wrong (layouts,
 * collectives, replicas that disagree), or with 'error' set when a
 * device's run fails (interrupted) or its thread cannot start. */
GPtrArray *spmd_simulate(const Func *f, Tensor *const *global_inputs,
                         Diag *diag, GError **error);
/* How a runtime runs the devices instead of the simulator: each device
 * runs its program through 'run' (on the device's thread, 'kernel_comm'
 * set: its collectives go through it), NULL for the interpreter; its
 * collectives are those 'connect' makes, NULL for the simulator's. */
typedef GPtrArray *(*SpmdDeviceRun)(void *data, const Func *f,
                                    Tensor *const *inputs, GError **error);
/* A tensor of 'type' for a device's chunk of an argument, its elements
 * about to be overwritten: called on the device's thread, with
 * 'run_data'; spmd_run drops its reference when the run ends. */
typedef Tensor *(*SpmdBuffer)(void *data, const Type *type);
typedef struct SpmdRuntime {
  SpmdDeviceRun run;
  void *run_data;
  /* Where the chunks of arguments that are copied go (NULL: new
   * tensors): a runtime that keeps them between runs spares a step its
   * allocation and page faults.  Chunks that are contiguous parts of
   * the global argument are views of it and need none. */
  SpmdBuffer buffer;
  /* The collectives of the 'ndevices' devices of 'mesh' (row-major), one
   * each: called once the program and its inputs are checked, before any
   * device starts.  Each implements 'fail'. */
  Collectives **(*connect)(void *data, const Mesh *mesh, int ndevices);
  /* Frees what 'connect' made, once every device has stopped. */
  void (*disconnect)(void *data, Collectives **devices);
  void *comm_data;
  /* A timed run: with 'steps' > 1 each device runs its program that many
   * times on the inputs it holds (scattered once; the results gathered
   * are the last step's), and the devices meet at a barrier before each
   * step and after the last.  'step_seconds' (may be NULL) gets each
   * step's time, from the barrier that starts it to the one that ends
   * it: the devices' programs alone, not the scatter and gather. */
  int steps;
  double *step_seconds;
} SpmdRuntime;
/* spmd_simulate on the runtime 'rt' (NULL: the simulator's own).  A
 * device whose run fails tells its collectives ('fail'), and one whose
 * collectives report a failure ('check') fails with it. */
GPtrArray *spmd_run(const Func *f, Tensor *const *global_inputs,
                    const SpmdRuntime *rt, Diag *diag, GError **error);

/* spmd_run in pieces, for a runtime whose devices are other processes
 * (codegen/mpi.c): one process checks the global inputs, cuts each
 * device's chunks, and assembles the results; each device runs its
 * program where it is. */
/* spmd_run's checks of 'f' and 'global_inputs', made before any device
 * starts: FALSE with the reason. */
gboolean spmd_check_inputs(const Func *f, Tensor *const *global_inputs,
                           Diag *diag);
/* 'box' (at 'off') cut to what lies inside 'dims': a padded chunk's
 * box past the end of a dimension the devices do not divide; whether it
 * was cut. */
gboolean spmd_clip_box(int64_t *box, const int64_t *off, const int64_t *dims,
                       int rank);
/* The local inputs of device 'device' (row-major): new references, one
 * per argument, padding zeroed; read-only (a replicated one is the global
 * one, a contiguous chunk a view of it).  requires: spmd_check_inputs
 * passed. */
Tensor **spmd_scatter(const Func *f, Tensor *const *global_inputs, int device);
/* The global results from every device's local ones (one array a device,
 * row-major), as spmd_run gathers them: NULL with the reason when
 * replicas disagree or a result is too large. */
GPtrArray *spmd_gather(const Func *f, GPtrArray *const *device_results,
                       Diag *diag);

/* ----------------------------------------------------------------- show.c */

/* The collectives of an SPMD program per kind and axes (counts and local
 * bytes). */
void spmd_print_stats(GString *out, const Func *f);
/* The same on one line: "2 all_reduce over model, 1 all_gather over
 * batch" (or "no collectives"). */
void spmd_print_collectives(GString *out, const Func *f);
/* The program as a Graphviz graph, its values named as print_func names
 * them with 'm' (may be NULL): arguments and results with their layouts,
 * each tile or sum loop a cluster. */
void spmd_print_dot(GString *out, const Module *m, const Func *f);

/* --------------------------------------------------------------- fusion.c */

/* Which values of a function are computed inside their users' loops (a
 * fused value has no buffer), decided once on its schedule: the code
 * generator's kernels and the cost model's memory traffic. */
typedef struct Fusion Fusion;
/* The decision for 'f', whose schedule is 'sc'. */
Fusion *fusion_new(const Schedule *sc, const Func *f);
void fusion_free(Fusion *fu);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Fusion, fusion_free)
/* Whether 't' is computed inside its users' loops. */
gboolean fusion_fused(const Fusion *fu, const Term *t);
/* Whether some user of 't' reads it as a whole buffer (a contraction, a
 * collective, a region, a result) rather than element by element. */
gboolean fusion_read_whole(const Fusion *fu, const Term *t);
/* Whether 't' may be fused; whether its kernel reads fused operands
 * (reductions and concatenate too). */
gboolean fusion_fusible(const Term *t);
gboolean fusion_absorbs(const Term *t);

/* ------------------------------------------------------------- hardware.c */

#define HW_MAX_AXES 16 /* per-axis link overrides in one description */

/* The link of one mesh axis, where it differs from the default. */
typedef struct HwAxis {
  const char *name;    /* interned mesh axis name */
  double link_bw;      /* bytes/s a device sends along the axis */
  double link_latency; /* seconds per collective step */
} HwAxis;

/* The what-ifs one description records (hw_set refuses more): held in
 * the value itself, so copies need no allocation and none outlives it. */
#define HW_CHANGES_MAX 512

/* One device of a machine and the links between devices.  A plain value:
 * copy it to ask "what if" (hw_set) and keep the original. */
typedef struct Hardware {
  const char *name;             /* interned */
  const char *source;           /* interned file it was loaded from, or NULL */
  char changes[HW_CHANGES_MAX]; /* "link_bw=2x, ..." from hw_set, or "" */
  double peak_flops_f32;        /* FLOP/s; also i32, i64, i1 */
  double peak_flops_bf16;
  double peak_flops_f64;
  double memory_bytes; /* capacity of one device */
  double link_bw;      /* default bytes/s per device per direction */
  double link_latency; /* default seconds per collective step */
  /* Optional (0: not modelled, every operator priced by its FLOPs
   * alone).  With either, the cost model prices the code generator's
   * kernels (fusion.c): each takes the longer of its FLOPs at peak and
   * the bytes it reads and writes at mem_bw, plus kernel_overhead. */
  double mem_bw;          /* bytes/s a device's kernels read and write */
  double kernel_overhead; /* seconds per kernel run (its loop set-up) */
  /* Optional, with the kernels priced: a matrix product is computed in
   * whole register blocks of gemm_mr rows by gemm_nr columns (0: 1), and
   * each product (one per batch element) costs product_overhead more
   * (its packing and edge set-up). */
  double gemm_mr, gemm_nr;
  double product_overhead; /* seconds per matrix product */
  /* Optional, with the kernels priced: a step whose data fits in a
   * device's own cache (its peak bytes at most cache_bytes) finds them
   * there when it runs again, and its kernels read and write at cache_bw
   * instead of mem_bw (0: always mem_bw). */
  double cache_bytes; /* a device's own cache (a core's L2 on a CPU) */
  double cache_bw;    /* bytes/s a device's kernels read and write there */
  /* Optional: what a step costs beyond its kernels and collectives, the
   * devices started and the last one waited for (0: not modelled).  A
   * per-collective figure measured on a step that does nothing else
   * would take it in, and a program of many collectives pay it many
   * times. */
  double step_overhead; /* seconds per step */
  int naxes;
  HwAxis axes[HW_MAX_AXES];
} Hardware;

/* Loads a description: 'name_or_path' is a path when hw_is_path says so,
 * else NAME.hw is looked up in the ':'-separated dirs of $PARTIR_HW and
 * then in PARTIR_DATADIR "/hw".  Only regular files are read (input.c).
 * PARTIR_ERROR_IO: not found or not readable, a message that names the
 * file and the reason and never quotes it; PARTIR_ERROR_FORMAT: not a
 * valid description, a message that names the file, the group and the
 * key, and may quote the line. */
gboolean hw_load(const char *name_or_path, Hardware *out, GError **error);
/* Whether hw_load takes 'name_or_path' as a path: it contains '/' or ends
 * in ".hw". */
gboolean hw_is_path(const char *name_or_path);
/* Applies "KEY=VALUE": VALUE is a number, or "Nx" to multiply the current
 * value by N.  KEY is one of the [hardware] keys, "peak_flops" (every
 * dtype), or "axis.NAME.link_bw" / "axis.NAME.link_latency".  "link_bw" and
 * "link_latency" change the default and every per-axis link.  FALSE with
 * the reason, and 'hw' unchanged, when a figure would not be finite and
 * positive (latencies: non-negative), as a factor can make it. */
gboolean hw_set(Hardware *hw, const char *assignment, Diag *diag);
/* Peak FLOP/s for operations computing in 'dt'. */
double hw_peak_flops(const Hardware *hw, DType dt);
/* The link of mesh axis 'axis' (interned or not). */
void hw_link(const Hardware *hw, const char *axis, double *bw, double *latency);
/* The description in the file format (hw_load reads it back). */
void hw_print(GString *out, const Hardware *hw);
/* The directories searched for NAME.hw, in order (g_strfreev). */
char **hw_search_path(void);

/* ----------------------------------------------------------------- cost.c */

/* The collectives of one kind over one list of axes. */
typedef struct CostComm {
  Op op;            /* OP_ALL_REDUCE, OP_ALL_GATHER, ... OP_SHARD */
  const char *axes; /* interned "model" or "batch,model" (attribute order) */
  int64_t size;     /* devices in each group ('size' attribute) */
  double count;     /* evaluations per device (loop iterations included) */
  double bytes;     /* bytes each device sends, all evaluations */
  double time;      /* seconds, all evaluations */
} CostComm;

/* The estimate for one step of an SPMD program.  Every device runs the
 * same program on same-shaped data, so per-device figures hold for all. */
typedef struct CostReport {
  int64_t ndevices;     /* product of the mesh sizes (1 without a mesh) */
  double flops;         /* per device */
  double peak_bytes;    /* peak live bytes per device */
  char *peak_at;        /* the statement (printed name) where it is reached */
  GArray *comms;        /* CostComm, ordered by operator then axes */
  double compute_time;  /* seconds: sum of flops / peak of each operator;
                           with kernels priced (Hardware.mem_bw,
                           kernel_overhead), the sum of the kernels' */
  double kernels;       /* kernel runs per step, when priced */
  double traffic_bytes; /* bytes the kernels read and write, when priced */
  gboolean in_cache;    /* priced at Hardware.cache_bw: peak_bytes fit */
  double comm_time;     /* seconds: sum of the collectives' times */
  double overhead_time; /* seconds: Hardware.step_overhead */
  double total_time;    /* compute + comm + overhead (no overlap) */
  gboolean fits;        /* peak_bytes <= memory_bytes */
} CostReport;

void cost_report_clear(CostReport *r);
/* Bytes each device sends in one step, all collectives together. */
double cost_comm_bytes(const CostReport *r);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(CostReport, cost_report_clear)

/* Estimates 'f' (an SPMD program when f->spmd is set, else a program run
 * on one device, every tile and sum a loop) on 'hw', naming statements
 * as module 'm' prints them ('m' may be NULL: %0, %1, ...).  Fails for a
 * collective over an axis the mesh lacks or of the wrong size, and for a
 * tile or sum bound to a mesh axis in an SPMD program.
 * requires: f well typed; f->arg_names set. */
gboolean cost_estimate(const Module *m, const Func *f, const Hardware *hw,
                       CostReport *out, Diag *diag);
/* The same without naming the statements: 'peak_at' is NULL. */
gboolean cost_estimate_unnamed(const Func *f, const Hardware *hw,
                               CostReport *out, Diag *diag);
/* cost_estimate_unnamed of a program spmd_lower made, which it does not
 * check again (a walk of the whole program: the agent protocol costs a
 * state per step).
 * requires: its collectives fit its mesh and no tile or sum is bound to
 * an axis (what lowering makes). */
gboolean cost_estimate_lowered(const Func *f, const Hardware *hw,
                               CostReport *out, Diag *diag);
/* "1.01 us": seconds as the table prints them. */
void cost_append_time(GString *out, double seconds);
/* A readable table: per device and over all devices.  'mesh' may be NULL. */
void cost_print(GString *out, const CostReport *r, const Hardware *hw,
                const Mesh *mesh);

/* ------------------------------------------------------------- sharding.c */

/* The mesh as Shardy declares it: #sdy.mesh<["batch"=2, "model"=2]>. */
void sharding_sdy_mesh(GString *out, const Mesh *m);
/* 'd' as a Shardy sharding on the mesh named 'mesh_name':
 * #sdy.sharding<@mesh, [{"model"}, {}]>. */
void sharding_sdy(GString *out, const Dist *d, const char *mesh_name);
/* 'd' on 'm' as a GSPMD sharding: {replicated}, or
 * {devices=[1,2,2]<=[4] last_tile_dim_replicate}, devices numbered
 * row-major over 'm'.  FALSE when 'd' names an axis 'm' lacks. */
gboolean sharding_gspmd(GString *out, const Dist *d, const Mesh *m);
/* The replica groups of a collective over 'axes' (major first) on 'm':
 * 'dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>'.  FALSE when an axis is
 * not the mesh's or given twice. */
gboolean sharding_replica_groups(GString *out, const Mesh *m,
                                 const char *const *axes, int naxes);

/* --------------------------------------------------------------- export.c */

/* What 'partir export --emit' writes: the global program with Shardy's
 * shardings (stablehlo), with GSPMD's (stablehlo-gspmd), or a device's
 * program with StableHLO's collectives (stablehlo-spmd). */
typedef enum ExportForm {
  EXPORT_SDY,
  EXPORT_GSPMD,
  EXPORT_DEVICE,
} ExportForm;

/* The form named "stablehlo", "stablehlo-gspmd" or "stablehlo-spmd";
 * FALSE for another name. */
gboolean export_form_parse(const char *name, ExportForm *out);
const char *export_form_name(ExportForm f);
/* Appends global program 'g' (names from 'm', may be NULL) as StableHLO,
 * each argument and result with the layout 'spmd' (its lowering) gives
 * it, as 'form' (EXPORT_SDY or EXPORT_GSPMD) writes it.  Tiles and sums
 * are unrolled.  FALSE with the reason, and nothing appended, when an
 * operator has no StableHLO form or the text would be too large. */
gboolean export_global(GString *out, const Module *m, const Func *g,
                       const Func *spmd, ExportForm form, Diag *why);
/* Appends device program 'spmd' (names from 'm') as StableHLO with
 * collectives over replica groups; as export_global otherwise. */
gboolean export_device(GString *out, const Module *m, const Func *spmd,
                       Diag *why);

#endif
