/* rewrite.h — the rewrite layer: rules, matching, propagation, states.
 *
 * Above core and eval (docs/architecture.md).  Rule files declare
 * operator tiling specifications and written rules; the engine derives
 * the operator rules, matches and applies them at locations of immutable
 * program states, and runs the fixed-point passes and the command
 * language.  One section per file:
 *
 *   spec.c       the tiling specification of an operator application
 *   rule.c       rule files: parsing, derived rules, load-time checks
 *   match.c      matching a written rule and building its right side
 *   apply.c      applying any rule at a value; where a rule applies
 *   lookup.c     an embedding lookup split along the table's rows
 *   replace.c    replacing a value everywhere in a program
 *   propagate.c  propagate, fuse, simplify (fixed points)
 *   conflict.c   two splits over one axis meeting at an operator
 *   resolve.c    propagate --resolve: a conflict's sides priced, one kept
 *   dedup.c      one computation, one region (after propagate)
 *   inputs.c     which arguments are data, not parameters
 *   command.c    the command language: arg-tile, tile, sum, apply ...
 *   layouts.c    the layouts an imported program asks for, as commands
 *   state.c      program states and locations
 */
#ifndef PARTIR_REWRITE_H
#define PARTIR_REWRITE_H

#include "core/core.h"

#define SPEC_MAX_OPERANDS 16
#define RULE_MAX_VARS 24

/* ----------------------------------------------------------------- spec.c */

/* How one operator application tiles: for every result dimension, the
 * operand dimension that carries it (-1: that operand is not sliced); for
 * every reduction index, the operand dimensions it runs over.  A carrying
 * dimension may have another size (a reshape's): tiles of the two carry
 * as the same number of parts (spec_width_for_parts). */
typedef struct TileSpec {
  int nout;
  gboolean out_ok[PARTIR_MAX_RANK]; /* result dim d can be tiled */
  int out[PARTIR_MAX_RANK][SPEC_MAX_OPERANDS];
  int nred;
  int red[PARTIR_MAX_RANK][SPEC_MAX_OPERANDS];
  /* reduction k's parts are not the operator on the operands' parts: a
   * lookup whose table is split along its rows (lookup.c) sums masked
   * lookups, which the sum rule builds; the lowering gathers such a
   * split where it meets the operator itself */
  gboolean red_masked[PARTIR_MAX_RANK];
} TileSpec;

typedef enum {
  SPEC_ELEMENTWISE, /* op(x[*], y[*]) -> [*] */
  SPEC_INDEXED,     /* op(x[i,k], y[k,j]) -> [i,j] */
  SPEC_BUILTIN,     /* op(x) -> builtin KIND: computed from attributes */
} SpecKind;

/* An 'op' declaration of a rule file. */
typedef struct OpSpec {
  SpecKind kind;
  int nargs;
  int arg_rank[SPEC_MAX_OPERANDS];
  int arg_index[SPEC_MAX_OPERANDS][PARTIR_MAX_RANK]; /* index ids */
  int out_rank;
  int out_index[PARTIR_MAX_RANK];
  int nindices;
  char *builtin; /* SPEC_BUILTIN */
  char *origin;  /* file:line */
} OpSpec;

typedef struct RuleSet RuleSet;

/* Fills 'spec' for operator application 't'; FALSE when the operator has
 * no tiling specification (or t is not an operator). */
gboolean spec_of(const RuleSet *rs, const Term *t, TileSpec *spec);
/* The width of a tile of result dimension 'd' of 't' in as many parts as
 * 'range' has (an operand's tile, along the dimension that carries d);
 * 0 when they do not divide it. */
int64_t spec_width_for_parts(const Term *t, int d, const Type *range);
/* Checks that builtin kind 'kind' exists and serves operator 'op' (the
 * list lives in spec.c); FALSE with the reason in 'why'. */
gboolean spec_builtin_known(const char *kind, Op op, Diag *why);

/* ----------------------------------------------------------------- rule.c */

typedef struct IntRef {
  gboolean present;
  const char *var; /* interned variable name, or NULL for a literal */
  int64_t value;
} IntRef;

typedef enum {
  PT_VAR,   /* x: any term */
  PT_BIND,  /* r: a binder of the rule in scope */
  PT_OP,    /* add(p, q) */
  PT_SLICE, /* slice d p[idx]; args[1] is the index (PT_VAR or PT_BIND) */
  PT_TILE,  /* tile d (\r:range<n,w> @a -> p) */
  PT_SUM,   /* sum (\r:range<n,w> @a -> p) */
  PT_SUBST, /* e{s/r}: args[0] = e, args[1] = s, name = r */
} PatKind;

typedef struct Pat Pat;
struct Pat {
  PatKind kind;
  Loc loc;
  const char *name; /* VAR, BIND: the name; TILE/SUM: binder; SUBST: r */
  Op op;
  int nargs;
  Pat **args;
  IntRef dim;       /* SLICE, TILE */
  IntRef n, w;      /* TILE/SUM binder range; SLICE index range */
  const char *axis; /* TILE/SUM: axis variable (interned) or NULL */
  /* OP: attributes written as {key = v, ...} (sorted by key): each v is
   * an integer literal or a variable.  A variable matches any value (an
   * integer one is also an integer variable: 'when d != e' can test it);
   * unwritten keys match anything on the left and are absent on the
   * right. */
  int nattrs;
  const char **attr_keys; /* interned */
  IntRef *attr_vals;
};

typedef enum { IE_LIT, IE_VAR, IE_DIM, IE_RANK } IntExprKind;
typedef struct IntExpr {
  IntExprKind kind;
  int64_t value;
  const char *var;    /* IE_VAR: the int variable; IE_DIM/IE_RANK: term var */
  IntRef dim;         /* IE_DIM */
  char arith;         /* '*' or '/': this times or over 'by'; 0: alone */
  struct IntExpr *by; /* owned; an atom (its own 'arith' is 0) */
} IntExpr;

typedef struct Cond {
  IntExpr a, b;
  char op[3]; /* == != < <= > >=, or "dj": disjoint(a, b), two attribute
                 lists with no element in common (a.var, b.var) */
  Loc loc;
  char text[64]; /* as written, for messages */
} Cond;

typedef enum {
  RULE_PATTERN,     /* written in a rule file */
  RULE_OP_TILE,     /* OP-tile-D: op(..) ~~> tile D (\r -> op(slices)) */
  RULE_OP_SUM,      /* OP-sum[-K]: op(..) ~~> sum (\r -> op(slices)) */
  RULE_SLICE_OP,    /* slice-OP-D: slice D op(..)[s] ~~> op(slices) */
  RULE_OP_TILE_REV, /* OP-tile-D-rev: tile D (\r -> op(slices)) ~~> op(..) */
  RULE_OP_SUM_REV,  /* OP-sum[-K]-rev: sum (\r -> op(slices)) ~~> op(..) */
  RULE_SINK_SLICE,  /* sink-slice-OP: slice(op(..)) ~~> op(static slices) */
} RuleKind;

enum {
  RULE_TAG_PROPAGATE = 1 << 0,
  RULE_TAG_SIMPLIFY = 1 << 1,
  RULE_TAG_FUSE = 1 << 2,
  RULE_TAG_SPMD = 1 << 3, /* redistribution fusion over SPMD programs */
};

typedef struct Rule {
  char *name;
  RuleKind kind;
  char *origin; /* "rules/partir.rules:12" or "derived from op matmul (…)" */
  char *text;   /* the rule as it reads: "lhs ~~> rhs" */
  const Source *src; /* written rules: the file (the RuleSet's) ... */
  Loc loc;           /* ... and the position of the name, for errors */
  guint tags;
  /* RULE_PATTERN */
  Pat *lhs, *rhs;
  gboolean borrowed; /* a reverse rule: lhs/rhs belong to the forward one */
  int nconds;
  Cond *conds;
  /* derived */
  Op op;
  int index; /* result dim (TILE, SLICE_OP) or reduction index (SUM);
                0 for SINK_SLICE (every dim the slice narrows) */
  /* parameters the caller supplies (width, axis, dim ...) */
  int nparams;
  const char *params[RULE_MAX_VARS]; /* interned */
  guint axis_params; /* bit i: params[i] is an axis (optional) */
} Rule;

struct RuleSet {
  GPtrArray *rules;    /* Rule*, in load order, derived after written */
  GHashTable *by_name; /* name -> Rule* */
  /* the derived rules by kind, operator and index (NULL: none) */
  const Rule *derived[RULE_SINK_SLICE + 1][OP_COUNT_][PARTIR_MAX_RANK];
  OpSpec *specs[OP_COUNT_];
  struct Vjp *vjps[OP_COUNT_]; /* the vjp of each operator, or NULL */
  GPtrArray *files;            /* loaded paths */
  GPtrArray *sources; /* Source*: the loaded texts, which rules point into */
};

/* Loads rule files (every *.rules of the first directory on the search
 * path when 'paths' is NULL) and derives the operator rules.  On error
 * returns NULL with diagnostics in 'errors' (file:line:col + caret).
 * The meaning of the rules is not checked here: the pipeline runs the
 * load-time checks (pipeline_load_rules). */
RuleSet *ruleset_load(const char *const *paths, Diag *errors);
/* The same, then one more rule file given as text (tests). */
RuleSet *ruleset_load_with(const char *const *paths, const Source *extra,
                           Diag *errors);
void ruleset_free(RuleSet *rs);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RuleSet, ruleset_free)
const Rule *ruleset_find(const RuleSet *rs, const char *name);
/* " (did you mean 'RULE'?)" for a rule name near the mistyped 'name'
 * (diag_nearest), or "". */
char *ruleset_did_you_mean(const RuleSet *rs, const char *name);
/* The derived rule of 'kind' for 'op' and result dim or reduction
 * 'index' (OP-tile-D, OP-sum[-K], slice-OP-D, their -rev), or NULL. */
const Rule *ruleset_derived(const RuleSet *rs, RuleKind kind, Op op, int index);

/* A parameter value given to a rule: an integer or an axis name. */
typedef struct RuleArg {
  const char *name; /* interned */
  gboolean is_axis;
  int64_t value;
  const char *axis; /* interned */
} RuleArg;

/* ------------------------------------------------------------------ vjp.c */

/* A vector-Jacobian product rule (rules/grad.rules, docs/grad.md): how
 * the cotangent of an operator's result becomes its operands'.
 *
 *   vjp mul(x, y) -> z, dz: x = mul(dz, y), y = mul(dz, x)
 *   vjp dot_general -> builtin dot
 *   vjp compare -> zero
 *
 * A written rule names the operands, the result and its cotangent; each
 * operand it lists gets the expression's value (an operator call with
 * attributes as a program writes them, a name, or a number: a constant
 * of the type of the operands beside it).  An operand it does not list
 * gets no cotangent.  'builtin KIND' is computed from the attributes by
 * the engine (vjp_builtin.c); 'zero' gives no operand a cotangent (the
 * result is piecewise constant, or not a number). */
typedef enum { VX_NAME, VX_NUMBER, VX_OP } VjpExprKind;

typedef struct VjpExpr {
  VjpExprKind kind;
  Loc loc;
  int name;     /* VX_NAME: operand index; nargs: the result; nargs + 1: dz */
  double value; /* VX_NUMBER */
  Op op;        /* VX_OP */
  int nargs;
  struct VjpExpr **args;
  const Attrs *attrs;
} VjpExpr;

typedef enum { VJP_WRITTEN, VJP_BUILTIN, VJP_ZERO } VjpKind;

typedef struct Vjp {
  VjpKind kind;
  Op op;
  int nargs;
  const char *names[SPEC_MAX_OPERANDS + 2]; /* operands, result, cotangent */
  VjpExpr *ct[SPEC_MAX_OPERANDS];           /* per operand, or NULL: none */
  char *builtin;                            /* VJP_BUILTIN */
  const Source *src;                        /* where it was written */
  Loc loc;
} Vjp;

/* 'vjp ...' at the cursor (on the word 'vjp', at 'at'): adds the rule
 * to 'rs'; FALSE after a diagnostic. */
gboolean vjp_parse(Cursor *c, RuleSet *rs, const Source *src, Loc at);
void vjp_free(Vjp *v);
/* The cotangent of operand 'i' of operator application 't' when its
 * result's is 'dz' (of t's type): a term of the operand's type.  NULL
 * without an error when the operand gets none (the rule lists it not,
 * or it is not a floating-point value); NULL + 'err' when the operator
 * has no vjp or its rule cannot be applied here. */
const Term *vjp_cotangent(const RuleSet *rs, const Term *t, int i,
                          const Term *dz, Diag *err);
/* The same, by a builtin kind (vjp_builtin.c). */
const Term *vjp_builtin(const char *kind, const Term *t, int i, const Term *dz,
                        Diag *err);
gboolean vjp_builtin_known(const char *kind, Op op, Diag *why);

/* ------------------------------------------------------------ vjp_index.c */

/* The builtin vjps 'gather', 'scatter_add', 'dynamic_slice' and
 * 'dynamic_update_slice' (vjp_builtin dispatches to it): the cotangent
 * of operand 'i' of 't', NULL for one that gets none. */
const Term *vjp_indexing(const char *kind, const Term *t, int i, const Term *dz,
                         Diag *err);

/* ----------------------------------------------------------------- grad.c */

/* Reverse mode: given cotangents 'dys' (NULL: none) of the closed values
 * 'ys', the cotangent of each of the function's 'nargs' arguments
 * (out[i], of argument i's type; NULL when none reaches it).  Works on
 * partitioned terms too: tiles, slices and sums have their own rules.
 * The values in 'stop' (NULL: none) pass no cotangent on, as JAX's
 * stop_gradient.  FALSE + 'err' when an operator has no vjp. */
gboolean grad_backward(const RuleSet *rs, int n, const Term *const *ys,
                       const Term *const *dys, int nargs, const Term **out,
                       GHashTable *stop, Diag *err);

/* ---------------------------------------------------------------- train.c */

typedef enum { LOSS_SUM, LOSS_MSE, LOSS_XENT } TrainLoss;
typedef enum { OPT_SGD, OPT_MOMENTUM, OPT_ADAM } TrainOptimizer;

typedef struct TrainOptions {
  TrainLoss loss;
  TrainOptimizer optimizer;
  double lr;
  const char *const *params; /* NULL-terminated names, or NULL: ... */
  int params_from;           /* ... every argument from this one on */
} TrainOptions;

/* The training step of model 'f' (its first result the prediction;
 * its values named in 'names', or NULL), a new module: (parameters, optimizer
 * state, batch[, target]) -> (new parameters, new optimizer state, loss).  NULL
 * + 'err' on bad options or an operator without a vjp. */
Module *grad_train_step(const RuleSet *rs, const Func *f, GHashTable *names,
                        const TrainOptions *o, Diag *err);
/* --loss and --optimizer by name (either may be NULL: unchanged). */
gboolean train_options_words(const char *loss, const char *optimizer,
                             TrainOptions *o, Diag *why);

/* ---------------------------------------------------------------- remat.c */

/* Training step 'body' (its last result the loss) with its backward pass
 * recomputing 'values' (operators of the forward pass, outside regions)
 * from what they read, instead of keeping them; NULL with the reason.
 * The rebuilt results keep their names in 'names'. */
const Term *rw_remat(const Term *body, const Term *const *values, int n,
                     GHashTable *names, Diag *why);

/* ---------------------------------------------------------------- match.c */

/* FALSE when the left side of RULE_PATTERN 'rule' cannot match 't' by its
 * head alone (a cheap filter before match_apply). */
gboolean match_head_may_match(const Rule *rule, const Term *t);
/* Applies RULE_PATTERN 'rule' to 't': the right side, or NULL with the
 * reason in 'why'. */
const Term *match_apply(const Rule *rule, const Term *t, const RuleArg *args,
                        int nargs, Diag *why);

/* ----------------------------------------------------------------- state.c */

/* A program state: a function body plus the names of the module it came
 * from.  States are immutable and share everything they can; a rewrite
 * returns a new state and leaves the old one valid. */
typedef struct State {
  int refcount;
  Module *module; /* shared, for names and the signature */
  Func func;      /* the entry's signature with this state's body */
} State;

State *state_new(Module *m);
State *state_with_body(const State *parent, const Term *body);
State *state_ref(State *s);
void state_unref(State *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(State, state_unref)
void state_print(GString *out, const State *s, gboolean expr);
/* The program's 64-bit content hash: the body's and the argument names'
 * (the same in every run; other names are not part of it).  The agent
 * protocol's state hash and partir search's transposition key. */
guint64 state_hash(const State *s);

/* A location: a value of the printed program. */
typedef struct Location {
  char *name;          /* printed SSA name without '%' */
  const Term *term;    /* placed form */
  const char **around; /* axes of the regions around it (interned) */
  int naround;
} Location;

/* Every value (arguments first, then statements in print order). */
GPtrArray *state_locations(const State *s); /* Location* */
void location_free(Location *l);
/* The location printed as 'name' ("%3" or "3"), or NULL. */
const Location *state_find_location(GPtrArray *locs, const char *name);
/* Whether a region over 'axis' is around the value at 'l': a tile or sum
 * over that axis there would bind the axis twice in one nest, which no
 * device program can run (each device has one index along an axis). */
gboolean location_inside_axis(const Location *l, const char *axis);

/* ---------------------------------------------------------------- apply.c */

/* Applies 'rule' to the term 't' (in its own context: t's loose indices
 * refer to binders outside t).  Returns the replacement, or NULL with the
 * reason in 'why'. */
const Term *rw_apply_here(const RuleSet *rs, const Rule *rule, const Term *t,
                          const RuleArg *args, int nargs, Diag *why);
/* The same at location 'loc'; the reason reads "RULE at %v: why". */
const Term *rw_apply_at(const RuleSet *rs, const Rule *rule,
                        const Location *loc, const RuleArg *args, int nargs,
                        Diag *why);
/* The state where the value at 'loc' is 'to' everywhere; NULL with the
 * reason (after "RULE at %v: " when 'rule' is given) when the store
 * refuses the rebuilt program. */
State *rw_with_replacement(State *in, const Location *loc, const Term *to,
                           const Rule *rule, Diag *why);
/* Applies 'rule' at 'loc' (a placed term) and rewrites every use. */
State *rw_apply(const RuleSet *rs, State *in, const Rule *rule,
                const Location *loc, const RuleArg *args, int nargs, Diag *why);
/* Every place 'rule' applies in 's' (Location*, print order). */
GPtrArray *rw_matches(const RuleSet *rs, const State *s, const Rule *rule);
/* A static slice's attributes when its operand's type goes from 'from'
 * to 'to' along dimensions the slice takes whole (limits equal to the
 * size follow it). */
const Attrs *rw_slice_attrs_follow(const Attrs *a, const Type *from,
                                   const Type *to);
/* 'x' (a slice along 'dim' by range value 'r', or what propagation made
 * of one) with the padding of an uneven range's last part set to zero:
 * select(broadcast_in_dim(compare(slice 0 iota[r], n, LT)), x, 0), the
 * mask OP-sum puts on the operands it sums over an uneven range. */
const Term *rw_mask_padding(const Term *x, int dim, const Term *r, Diag *why);

/* The attributes of operator 't' on operands 'args' of other sizes
 * along the dimensions its spec splits: a static slice's limits, a
 * gather's or dynamic_slice's slice sizes that took a whole dimension
 * follow it; other operators keep theirs. */
const Attrs *rw_attrs_follow(const Term *t, const Term *const *args);

/* -------------------------------------------------------------- fission.c */

/* 'value' (a placed term inside 'region', a tile or sum) as the slice by
 * the region's range value of the tile of its parts along 'dim': the
 * region cut in two at 'value'.  NULL with the reason when 'value' does
 * not depend on the region or its dimension 'dim' is not the region's
 * width. */
const Term *rw_fission_term(const Term *value, const Term *region, int dim,
                            Diag *why);
/* The state where the value at 'value' is rw_fission_term's everywhere. */
State *rw_fission(State *in, const Location *value, const Location *region,
                  int dim, Diag *why);

/* ----------------------------------------------------------------- lift.c */

/* The operator at 'value', inside a tile over 'axis', computed outside
 * the outermost such tile on its whole operands, and an operand's split
 * over that axis moved into it (a ZeRO weight used in place).  NULL with
 * the reason when the nest around it cannot be cut or commuted. */
State *rw_lift(const RuleSet *rs, State *in, const Location *value,
               const char *axis, Diag *why);
/* The first operator (in 'locs' order) inside a tile over 'axis' that
 * uses a part of argument 'arg' split over 'axis' (ZeRO's tile of it, or
 * a slice of that tile), or NULL. */
const Location *rw_lift_use(GPtrArray *locs, const Term *arg, const char *axis);

/* --------------------------------------------------------------- lookup.c */

/* The table dimension (vocabulary) of a lookup: gather 't' reading one
 * row per index (start_index_map = [v], slice size 1 along v, no
 * batching dims, v of size 2 or more, every row number a value of the
 * ids' type); -1 when 't' is no lookup. */
int lookup_dim(const Term *t);
/* The body of gather-sum at range value 'r': lookup 't' on part r of
 * the table's rows, zero where an index is not in that part. */
const Term *lookup_part(const Term *t, const Term *r, Diag *why);
/* The lookup whose gather-sum is 'sum', or NULL with the reason. */
const Term *lookup_whole(const Term *sum, Diag *why);

/* -------------------------------------------------------------- replace.c */

/* Replaces every occurrence of 'from' (a placed term) by 'to' (placed the
 * same way) in the body: the whole program sees the rewrite.  When
 * 'names' (a module's value names) is given, rebuilt values keep the
 * names of the values they replace.  NULL with the reason in 'err' when
 * the result would break a limit of the store (regions nested too
 * deeply). */
const Term *replace_everywhere(const Term *body, const Term *from,
                               const Term *to, GHashTable *names, Diag *err);
/* Replaces every argument i with to[i] (when not NULL) in one pass. */
const Term *replace_args(const Term *body, const Term *const *to, int nargs,
                         GHashTable *names, Diag *err);
/* Gives 'to' the user's name of 'from' when 'to' has none (closed terms:
 * the name tables key them as they are). */
void replace_inherit_name(GHashTable *names, const Term *from, const Term *to);

/* ------------------------------------------------------------ propagate.c */

typedef struct Conflicts Conflicts;

/* Pushes slices in, pulls tiles out and fuses, to a fixed point; what it
 * could not resolve goes to 'report' (may be NULL).  NULL with the reason
 * in 'why', naming the pass, when the rules loop (no fixed point). */
const Term *rw_propagate(const RuleSet *rs, const Term *body, GHashTable *names,
                         GString *report, Diag *why);
/* The same, and where two splits over one axis meet at an operator goes
 * to 'cx' (conflict.c): propagation keeps the split cx->prefer names, or
 * else the first operand's.  What follows from keeping it (the other
 * side's tile left whole or sliced across, inside a region over its
 * axis) is the conflict's to say, not the report's; so is a
 * redistribution that 'body' already has (an earlier --resolve's, or
 * one written by a command). */
const Term *rw_propagate_conflicts(const RuleSet *rs, const Term *body,
                                   GHashTable *names, Conflicts *cx,
                                   GString *report, Diag *why);
/* Pushes slices in and fuses, to a fixed point, pulling no tile out: a
 * split written on a value (a result) goes back into what computes it,
 * and the splits of its operands stay where they are.  As rw_propagate
 * otherwise. */
const Term *rw_push(const RuleSet *rs, const Term *body, GHashTable *names,
                    GString *report, Diag *why);
/* Applies the rules tagged 'tag' (RULE_TAG_FUSE, _SIMPLIFY or _SPMD) to a
 * fixed point; NULL with the reason in 'why' as rw_propagate. */
const Term *rw_fixpoint(const RuleSet *rs, const Term *body, guint tag,
                        GHashTable *names, GString *report, Diag *why);
/* The [spmd] rules' fixed point (a device's program: no axes around a
 * value) without names or report, with the results of earlier calls in
 * 'memo' (Term -> its fixed point, the caller's) and adding this call's.
 * A pass that stops without a fixed point empties 'memo' (what it holds
 * then is not one). */
const Term *rw_fixpoint_memo(const RuleSet *rs, const Term *body,
                             GHashTable *memo, Diag *why);

/* ------------------------------------------------------------- conflict.c */

/* One operand split over the conflict's axis. */
typedef struct ConflictSide {
  int operand;  /* 0-based */
  int dim;      /* its dimension split over the axis */
  char *origin; /* where that split comes from: "%x dimension 0" */
  char *value;  /* what is redistributed when another side is kept: "%x" */
} ConflictSide;

/* Two operands of one operator split over the same mesh axis along
 * dimensions that its tiling spec does not match (rows of one, columns
 * of the other).  A device has one index along an axis, so the operator
 * can follow one split only: the other operand is redistributed, by an
 * all_to_all into the kept dimension or, when it has none, by an
 * all_gather of the whole value. */
typedef struct Conflict {
  const Term *at;   /* the operator, its operands as propagation met them */
  const char *axis; /* interned */
  char *name;       /* "%s (add)" or "'add'": the value, as the user knows it */
  TileSpec spec;
  int nsides;
  ConflictSide sides[SPEC_MAX_OPERANDS]; /* in operand order */
  int kept; /* the side whose split propagation kept */
} Conflict;

/* What one propagation met, and the decisions it follows. */
struct Conflicts {
  GHashTable *prefer; /* Conflict.at -> operand + 1 to keep (may be NULL) */
  GPtrArray *found;   /* Conflict*, one per operator, in the order met */
  GHashTable *seen;   /* Conflict.at -> its Conflict */
  char **arg_names;   /* the function's (borrowed), for origins */
  int nargs;
};
void conflicts_init(Conflicts *cx, const State *s, GHashTable *prefer);
void conflicts_clear(Conflicts *cx);
/* The conflicts of 'cx' that no decision in cx->prefer settles, in the
 * order met (borrowed Conflict*). */
GPtrArray *conflicts_open(const Conflicts *cx);
/* Records the conflict at operator 't' whose operand 'kept' has its
 * tile pulled out: other operands split over that tile's axis along
 * dimensions the spec does not match.  Not those that would be gathered
 * whole anyway: 'gathered' says which tiles propagation keeps whole by
 * design (propagate.c: tiles whose bodies compute).  'name' is the
 * user's name of the value (may be NULL), 'names' the module's value
 * names.  TRUE when there is a conflict. */
gboolean conflicts_note(Conflicts *cx, const Term *t, const TileSpec *spec,
                        int kept, const char *name, GHashTable *names,
                        gboolean (*gathered)(const Term *tile));
/* 'axis "model" at %s (add): operand 1 split along dimension 0 (from %x
 * dimension 0), operand 2 along dimension 1 (from %y dimension 1)' */
char *conflict_text(const Conflict *c);
/* How the other sides move when side 'kept' is kept: 'all_to_all of %y
 * from dimension 1 to 0', 'all_gather of %w along dimension 1'. */
char *conflict_moves(const Conflict *c, int kept);
/* The error for the conflicts 'open' (at least one). */
void conflicts_error(GPtrArray *open, Diag *why);
/* The redistributions 'body' has already, so that a propagation over it
 * does not take them for its own: a tile over an axis sliced along
 * another dimension, or used whole by an operator inside regions. */
GHashTable *conflicts_written(const Term *body);
gboolean conflicts_written_has(GHashTable *written, const Term *tile, int dim);

/* ------------------------------------------------------------- resolve.c */

/* A candidate of 'propagate --resolve', priced. */
typedef struct Price {
  double seconds; /* the modelled step time */
  char *summary;  /* "1.01 us a step: 1 all_to_all over model, 64 B sent" */
} Price;
void price_clear(Price *p);

/* The cost model, a service of a higher layer (the pipeline lowers and
 * prices a state on a hardware description). */
typedef struct Pricer Pricer;
struct Pricer {
  /* Prices 's'; FALSE with the reason when it cannot be lowered or
   * priced. */
  gboolean (*price)(Pricer *self, const State *s, Price *out, Diag *why);
};

/* What the commands report, and the cost model 'propagate --resolve'
 * prices with.  Every field may be NULL. */
typedef struct RewriteEnv {
  GString *report;  /* what a pass could not resolve, a line each */
  GString *choices; /* what 'propagate --resolve' chose, a line each */
  Pricer *pricer;   /* NULL: 'propagate --resolve' is refused */
} RewriteEnv;

/* 'propagate --resolve' on 'in': propagation where each conflict keeps
 * the side whose program env->pricer prices fastest; a line per choice
 * to env->choices.  NULL with the reason when a candidate cannot be
 * priced, or the pass fails. */
State *rw_resolve(const RuleSet *rs, State *in, const RewriteEnv *env,
                  Diag *why);
/* The mesh the regions of 'body' bind: each axis, in the order met, with
 * as many devices as its ranges have parts.  FALSE with the reason when
 * one axis binds ranges of different counts. */
gboolean rw_implied_mesh(const Term *body, Mesh *out, Diag *why);

/* ----------------------------------------------------------------- nest.c */

/* The first axis that 'body' binds in two nested regions, or NULL; every
 * such place's axis is added to 'found' (may be NULL). */
const char *rw_axes_bound_twice(const Term *body, GPtrArray *found);

/* --------------------------------------------------------------- inputs.c */

/* Sets is_data[a] (f->nargs entries) for each argument of 'f' that is
 * data, not a parameter: its dimension 'dim' is the results' dimension
 * 'dim' (walked back through the operators' tiling specifications); in
 * a training step of scalar results, every argument no result updates;
 * where every result is a scalar, the arguments whose dimension 'dim' a
 * reduction of one operand takes away (the loss's mean over the batch).
 * An argument a result updates is never data.  Returns how many. */
int rw_data_args(const RuleSet *rs, const Func *f, int dim, gboolean *is_data);

/* ---------------------------------------------------------------- dedup.c */

/* 'body' where no value is computed by two different regions: each such
 * value is computed once, in a tile of its own over the regions' range,
 * and the regions read its chunks (the inverse of fusion).  Rebuilt
 * values keep the user's 'names' (may be NULL). */
const Term *rw_dedup(const Term *body, GHashTable *names);

/* -------------------------------------------------------------- command.c */

/* Runs one command ("arg-tile 0 0 8", "propagate", "apply fuse at %3",
 * ...) on 'in'.  Returns the new state, or NULL with the reason in 'why'.
 * 'env' (may be NULL) collects what propagate could not resolve and what
 * 'propagate --resolve' chose, and prices its candidates. */
State *rw_command(const RuleSet *rs, State *in, const char *command,
                  const RewriteEnv *env, Diag *why);
/* Runs a script of commands separated by ';', newlines or '.'. */
State *rw_script(const RuleSet *rs, State *in, const char *script,
                 const RewriteEnv *env, Diag *why);
/* Whether the 'propagate' command would rewrite anything in 'body':
 * whether its step applies at some value (propagate.c), decided by the
 * rules alone, without running the pass.  When none applies, propagate
 * returns the program as it was; when one does, it changes the program
 * (unless later rewrites build it back, or the pass fails for want of a
 * fixed point).  A rewrite depends on a term and the axes of the regions
 * around it (none nests a region in one over its own axis), so 'memo'
 * (may be NULL; g_hash_table_new (NULL, NULL)) can be kept across states:
 * it answers by the terms' content hashes mixed with those axes (as
 * pointer-sized keys), holds no term and outlives collections; a new
 * state costs the values it made.  Two keys that collide share an
 * answer. */
gboolean rw_propagate_pending(const RuleSet *rs, const Term *body,
                              GHashTable *memo);
/* The first axis that a command of 'script' names and 'mesh' lacks (a
 * new string), or NULL.  Commands name axes in arg-tile's and tile's
 * AXIS, sum's AXIS and apply's NAME=AXIS; rules bind axes only from these
 * and from what they match, so a script that passes brings no axis
 * outside the mesh into a program. */
char *rw_script_axis_off_mesh(const char *script, const Mesh *mesh);

/* -------------------------------------------------------------- layouts.c */

/* The layout a program's annotations ask of one of its values (an
 * imported StableHLO program's shardings): for each dimension the mesh
 * axes that split it, major first. */
typedef struct ValueLayout {
  const Term *value; /* as the program was loaded (no region around it) */
  int rank;
  int naxes[PARTIR_MAX_RANK];
  const char *axes[PARTIR_MAX_RANK][MESH_MAX_AXES]; /* interned */
  const char *origin; /* what and where, for messages */
} ValueLayout;

/* One command and the state it made. */
typedef struct LayoutStep {
  char *command;
  State *state; /* a reference */
} LayoutStep;
void layout_step_free(LayoutStep *s);

/* Gives the values of 'in' their 'n' layouts on 'mesh': an 'arg-tile' or
 * 'tile' command for each axis of each dimension, then 'propagate'; each
 * command and its state appended to 'steps' (LayoutStep*).  The last
 * state (a new reference; 'in' itself when nothing is split), or NULL
 * with the reason: two layouts of one value differ, or a command or the
 * propagation fails (a conflict). */
State *rw_apply_layouts(const RuleSet *rs, State *in,
                        const ValueLayout *layouts, int n, const Mesh *mesh,
                        const RewriteEnv *env, GPtrArray *steps, Diag *why);

#endif
