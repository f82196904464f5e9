/* partir-int.h — libpartir's internal header, one section per module.
 *
 * The pipeline for a program file (see repl/partir.c):
 *   diag   source text and diagnostics (file:line:col + line + caret)
 *   lex    tokens
 *   parse  text -> Module of Funcs whose bodies are hash-consed Terms;
 *          types are checked as terms are built (typerule.c), so every
 *          Term in the store is well typed
 *   print  canonical text (print.c) and the compact expression form
 *          (print_expr.c)
 *   interp the reference interpreter over Tensors (kernels.c per operator)
 */
#ifndef PARTIR_INT_H
#define PARTIR_INT_H

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <glib.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "partir.h"

#define PARTIR_MAX_RANK 8     /* tensor rank limit; checked by the parser */
#define PARTIR_MAX_DEPTH 200  /* list / expression nesting limit in parsers */
#define PARTIR_MAX_REGIONS 60 /* tile/sum nesting limit (loose-index masks) */
/* Term height limit: traversals recurse on term structure, and front ends
 * run them on a thread with a large stack (partir_call_with_stack). */
#define PARTIR_MAX_HEIGHT 1000000
/* Element-count limit of every type in the store, far from int64
 * overflow in any size computation (type_numel, byte counts). */
#define PARTIR_MAX_ELEMS ((int64_t)1 << 48)

/* ---------------------------------------------------------------- types */

typedef enum {
  DT_F32,
  DT_F64,
  DT_BF16,
  DT_I32,
  DT_I64,
  DT_I1,
  DT_COUNT_
} DType;

typedef enum {
  TY_TENSOR,
  TY_RANGE,
} TypeKind;

/* Types are interned: equal types are the same pointer. */
typedef struct Type {
  TypeKind kind;
  DType dtype;                   /* TY_TENSOR */
  int rank;                      /* TY_TENSOR */
  int64_t dims[PARTIR_MAX_RANK]; /* TY_TENSOR */
  int64_t n, w;                  /* TY_RANGE: intervals of width w over [0,n) */
} Type;

const Type *type_tensor(DType dt, int rank, const int64_t *dims);
const Type *type_range(int64_t n, int64_t w);
const Type *type_with_dim(const Type *t, int d, int64_t size);
const Type *type_with_dtype(const Type *t, DType dt);
int64_t type_numel(const Type *t); /* saturates at INT64_MAX */
/* FALSE when the type has more than PARTIR_MAX_ELEMS elements. */
gboolean type_size_ok(const Type *t);
void type_print(GString *out, const Type *t);
char *type_to_string(const Type *t);
const char *dtype_name(DType dt);
gboolean dtype_from_name(const char *s, gsize len, DType *out);
gboolean dtype_is_float(DType dt);
gsize dtype_storage_bytes(DType dt); /* bytes per element in memory / .npy */

/* ------------------------------------------------------------ operators */

typedef enum {
#define X(e, name, arity, tr, k, fl) e,
#include "ops.def"
#undef X
  OP_COUNT_
} Op;

const char *op_name(Op op);
int op_arity(Op op);
gboolean op_from_name(const char *s, gsize len, Op *out);
/* TRUE for operators whose result type is the written one (typerule.c). */
gboolean op_takes_written_type(Op op);
/* TRUE for operators that cannot be built without attributes. */
gboolean op_needs_attrs(Op op);

/* ----------------------------------------------------------- attributes */

typedef enum {
  AV_INT,    /* 3 */
  AV_FLOAT,  /* 1.5 */
  AV_SYMBOL, /* GT, "text" */
  AV_LIST,   /* [a, b, ...] (may nest) */
} AttrValueKind;

typedef struct AttrValue AttrValue;
struct AttrValue {
  AttrValueKind kind;
  int64_t i;
  double f;
  const char *sym; /* interned */
  int count;       /* AV_LIST */
  AttrValue *items;
};

/* An attribute dictionary, sorted by key; interned so equal dictionaries
 * are the same pointer and Terms can compare them with ==. */
typedef struct Attrs {
  int count;
  const char **keys; /* interned strings */
  AttrValue *values;
  guint hash;
} Attrs;

const Attrs *attrs_empty(void);
/* Interns a dictionary built by the parser; takes ownership of 'values'. */
const Attrs *attrs_intern(int count, const char **keys, AttrValue *values);
const AttrValue *attrs_get(const Attrs *a, const char *key);
/* An integer attribute the operator's type rule requires. */
int64_t attrs_get_int(const Attrs *a, const char *key);
/* Frees what a value owns and leaves it an empty integer. */
void attr_value_clear(AttrValue *v);
/* The shortest %.Ng text that reads back to 'f' (finite). */
void append_shortest_double(GString *out, double f);
gboolean attr_value_equal(const AttrValue *a, const AttrValue *b);
/* A deep copy (attrs_intern takes ownership of the values it is given). */
AttrValue attr_value_copy(const AttrValue *v);
void attrs_print(GString *out, const Attrs *a);
void attr_value_print(GString *out, const AttrValue *v);
/* Flattens a (possibly nested) numeric list into 'out'; FALSE if a
 * non-number is found. */
gboolean attr_value_numbers(const AttrValue *v, GArray *out_doubles);

/* ---------------------------------------------------------------- terms */

typedef enum {
  TM_ARG,   /* function argument 'index' */
  TM_OP,    /* base operator 'op' applied to args[] with 'attrs' */
  TM_BVAR,  /* a range binder, de Bruijn index 'index' */
  TM_SLICE, /* partir.slice index(dim) args[0][args[1]] */
  TM_TILE,  /* partir.tile index(dim) over 'range' binding args[0] */
  TM_SUM,   /* partir.sum over 'range' binding args[0] */
  TM_TUPLE, /* the results of a function */
} TermKind;

/* A node of the term store.  Terms are immutable and hash-consed: two
 * structurally equal terms are the same pointer.  Binders are locally
 * nameless: a range variable is a de Bruijn index counting the tile/sum
 * binders between the occurrence and its binder, so alpha-equivalent
 * terms are also the same pointer. 'loose' has bit i set when index i
 * occurs loose (not under its binder) in the term. */
typedef struct Term Term;
struct Term {
  TermKind kind;
  Op op;              /* TM_OP */
  int index;          /* TM_ARG: arg no; TM_BVAR: de Bruijn; SLICE/TILE: dim */
  int nargs;
  const Type *type;   /* result type (TY_RANGE for TM_BVAR) */
  const Type *range;  /* TM_TILE, TM_SUM: the binder's range type */
  const char *axis;   /* TM_TILE, TM_SUM: interned mesh axis or NULL */
  const Attrs *attrs; /* TM_OP */
  guint64 loose;      /* bit i: de Bruijn index i occurs loose */
  guint32 height;     /* longest path to a leaf; bounds recursion depth */
  guint64 content;    /* a hash of the term's content alone (no addresses):
                         the same in every run, for agents' state hashes */
  guint16 nest;       /* tiles/sums nested where the term is computed
                         (closed operands are computed outside), at
                         most PARTIR_MAX_REGIONS */
  guint8 marked;      /* term_store_collect's mark (clear between runs) */
  guint hash;
  const Term *args[];
};

static inline gboolean term_is_closed(const Term *t) { return t->loose == 0; }
/* The innermost binder the term refers to (its smallest loose index). */
static inline int term_lo(const Term *t) { return __builtin_ctzll(t->loose); }
/* The region depth where 't', seen at 'depth', is computed: the region
 * of the innermost binder it uses (0, the top, for closed terms). */
static inline int term_home_depth(const Term *t, int depth) {
  return term_is_closed(t) ? 0 : depth - term_lo(t);
}

const Term *term_arg(int index, const Type *type);
const Term *term_bvar(int index, const Type *range);
/* Builds an operator node, type-checking it.  'written' is the result
 * type written in the source, or NULL.  On a type error returns NULL and
 * sets 'err' to the message (no location; the caller adds it). */
const Term *term_op(Op op, int nargs, const Term *const *args,
                    const Attrs *attrs, const Type *written, GString *err);
const Term *term_slice(int dim, const Term *x, const Term *r, GString *err);
const Term *term_tile(int dim, const Type *range, const char *axis,
                      const Term *body, GString *err);
const Term *term_sum(const Type *range, const char *axis, const Term *body,
                     GString *err);
const Term *term_tuple(int n, const Term *const *args);
/* Rebuilds 't' with new operands (same kind/op/attrs); NULL + err when the
 * new operands do not type-check. */
const Term *term_with_args(const Term *t, const Term *const *args,
                           GString *err);
/* 't' with each operand a replaced by fn(ud, a): 't' itself when none
 * changes; NULL + err when the store refuses the rebuilt term. */
typedef const Term *(*TermMapFn)(void *ud, const Term *arg);
const Term *term_map_args(const Term *t, TermMapFn fn, void *ud, GString *err);
/* Adds 'by' to every loose index >= 'cutoff' (by may be negative when the
 * caller knows no index below -by is loose). */
const Term *term_shift(const Term *t, int by, int cutoff);
size_t term_store_size(void);  /* nodes in the store */
size_t term_store_bytes(void); /* bytes of those nodes (not the index) */
/* Frees every term that no root reaches, and removes from 'tables'
 * (hash tables keyed by terms: the modules' name tables) the entries
 * whose key is freed.  A term stays when a root reaches it or its placed
 * form (term_placed), under which the name tables know values.  Returns
 * the number of terms freed.
 * requires: no other pointer to a term is held anywhere (the caller owns
 * every live term through 'roots': no pass is running). */
size_t term_store_collect(const Term *const *roots, gsize nroots,
                          GHashTable *const *tables, gsize ntables);

/* Checks an operator application, returns its result type or NULL with
 * the reason in 'err' (typerule.c). */
const Type *typerule_infer(Op op, int nargs, const Term *const *args,
                           const Attrs *attrs, const Type *written,
                           GString *err);


/* Set (e.g. by a SIGINT handler) to ask long operations to stop: the
 * interpreter fails with "interrupted", engine scripts stop between
 * commands.  Front ends clear it before each command. */
extern volatile sig_atomic_t partir_interrupt;

/* Runs 'fn(data)' on a thread whose stack is deep enough for terms of
 * PARTIR_MAX_HEIGHT; returns fn's result. */
int partir_call_with_stack(int (*fn)(void *), void *data);

/* --------------------------------------------------------------- source */

/* A source buffer with its name, for diagnostics. */
typedef struct Source {
  char *name;
  char *text;
  gsize len;
} Source;

Source *source_new(const char *name, const char *text, gsize len);
gboolean source_load(const char *path, Source **out, GError **error);
void source_free(Source *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Source, source_free)

/* A position in a Source. */
typedef struct Loc {
  int line, col; /* 1-based */
  gsize offset;
} Loc;

/* Collected diagnostics: each is "file:line:col: message\n line\n caret". */
typedef struct Diag {
  const Source *src;
  GString *text;
} Diag;

void diag_init(Diag *d, const Source *src);
void diag_clear(Diag *d);
void diag_error(Diag *d, Loc loc, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
void diag_note(Diag *d, Loc loc, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

/* ----------------------------------------------------------------- mesh */

#define MESH_MAX_AXES 8

/* A device mesh: axis names (interned) and sizes, in the order given. */
typedef struct Mesh {
  int naxes;
  const char *names[MESH_MAX_AXES];
  int64_t sizes[MESH_MAX_AXES];
} Mesh;

/* Parses "batch=2,model=4" (an empty string is the empty mesh). */
gboolean mesh_parse(const char *spec, Mesh *out, GError **error);
int64_t mesh_axis_size(const Mesh *m, const char *axis); /* 0 if absent */
int mesh_axis_index(const Mesh *m, const char *axis);    /* -1 if absent */
/* The number of devices (the product of the sizes; G_MAXINT64 when that
 * overflows; 1 for NULL or no axes). */
int64_t mesh_devices(const Mesh *m);
/* Axis names are letters, digits and '_', at least one. */
gboolean mesh_axis_name_ok(const char *name);
char *mesh_to_string(const Mesh *m);

/* How a value of an SPMD program lies on the mesh: for each dimension
 * the axes that split it (major first); the axes over which each device
 * holds a partial sum; every other axis replicates it. */
typedef struct Dist {
  int rank;
  int naxes[PARTIR_MAX_RANK];
  const char *axes[PARTIR_MAX_RANK][MESH_MAX_AXES]; /* interned */
  int npartial;
  const char *partial[MESH_MAX_AXES];
} Dist;

/* What makes a function an SPMD program: its mesh and the layouts of its
 * arguments and results (lower.c makes them; the parser reads them). */
typedef struct SpmdInfo {
  Mesh mesh;
  Dist *arg_dists;
  Dist *result_dists;
} SpmdInfo;

/* {dist = [...], partial = [...], replicated = [...]}: the mesh's axes
 * that neither split nor are partial are listed as replicated. */
void dist_print(GString *out, const Dist *d, const Mesh *m);
/* The axes of 'm' that 'd' replicates (mesh order) into 'out'; how many. */
int dist_replicated(const Dist *d, const Mesh *m, const char **out);
/* The number of parts a dist splits dimension 'dim' into. */
int64_t dist_parts(const Dist *d, const Mesh *m, int dim);

/* -------------------------------------------------------------- program */

/* One function: named arguments, a tuple of results. */
typedef struct Func {
  char *name;
  int nargs;
  char **arg_names;
  const Type **arg_types;
  int nresults;
  const Type **result_types;
  const Term *body; /* TM_TUPLE of the results */
  Loc loc;
  SpmdInfo *spmd;   /* SPMD programs only, else NULL */
} Func;

/* A parsed file: its functions and the names the user gave values.  The
 * name tables are keyed by a Term as seen from the region that places it
 * (print.c: a term is placed in the region of the innermost binder it
 * uses, with that binder as index 0). */
typedef struct Module {
  int refcount;             /* module_free drops one reference */
  GPtrArray *funcs;         /* Func* */
  GHashTable *names;        /* const Term* -> char*: value names */
  GHashTable *binder_names; /* tile/sum Term -> char*: its binder's name */
  GHashTable *reserved;     /* the distinct names above (print.c's cache) */
} Module;

Module *module_new(void);
void module_free(Module *m);
Module *module_ref(Module *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Module, module_free)
Func *module_entry(Module *m);
/* The name of result 'i' (for files and printing): the returned value's
 * user name when it has one, else "resultI". */
char *func_result_name(const Module *m, const Func *f, int i);
void func_free(Func *f);

/* ---------------------------------------------------------------- parse */

/* The form under which the printer and the name tables know 't': closed
 * terms as they are; others shifted so that the innermost binder they
 * use is index 0 (the binder of the region where 't' is printed). */
const Term *term_placed(const Term *t);

/* Parses and type-checks a whole file.  On error returns NULL and leaves
 * the diagnostics in 'diag'. */
Module *parse_module(const Source *src, Diag *diag);
/* The same for text named 'name' in diagnostics; on error returns NULL
 * with the diagnostics in 'errors' (when not NULL). */
Module *parse_text(const char *name, const char *text, gsize len,
                   GString *errors);
/* The same for a file: NULL with 'error' set when it cannot be read, or
 * NULL with the diagnostics in 'errors'. */
Module *parse_file(const char *path, GString *errors, GError **error);

/* paths.c: the directories of $ENV (':'-separated, empty entries
 * skipped), then 'installed' (may be NULL); NULL-terminated. */
char **partir_search_path(const char *env, const char *installed);

/* ---------------------------------------------------------------- print */

void print_module(GString *out, const Module *m);
void print_func(GString *out, const Module *m, const Func *f);
/* Visits every value as the printer names it, in text order: arguments
 * first, then each statement's name and placed term (print.c). */
typedef void (*PrintVisit)(void *ud, const char *name, const Term *placed);
void print_walk(const Module *m, const Func *f, PrintVisit visit, void *ud);
void print_module_expr(GString *out, const Module *m);
/* The expression form of one function (names from 'm'). */
void print_func_expr(GString *out, const Module *m, const Func *f);
/* spmd_show.c: collectives of an SPMD program per kind and axes (counts
 * and local bytes), and the program as a Graphviz graph. */
void spmd_print_stats(GString *out, const Func *f);
void spmd_print_dot(GString *out, const Func *f);

/* --------------------------------------------------------------- tensor */

/* A dense tensor value of the interpreter.  Floating types are held as
 * doubles rounded to their type after every operation (f32 through float,
 * bf16 to 8 significant bits, round to nearest even); integer types as
 * int64 wrapped to their width; i1 as 0/1. */
typedef struct Tensor {
  int refcount;
  const Type *type;
  double *f;  /* dtype_is_float */
  int64_t *i; /* otherwise */
} Tensor;

Tensor *tensor_new(const Type *type); /* zero-filled */
Tensor *tensor_ref(Tensor *t);
void tensor_unref(Tensor *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Tensor, tensor_unref)
double round_to_dtype(DType dt, double v);
int64_t wrap_to_dtype(DType dt, int64_t v);
/* Rounds (or wraps) every element to the tensor's dtype: the one rounding
 * after accumulating a sum in double (or in wrapping int64). */
void tensor_round(Tensor *t);
/* Row-major strides of a shape. */
void shape_strides(const Type *t, int64_t *strides);
/* Readable text: shape, dtype, the values, or a summary when large. */
void tensor_print(GString *out, const Tensor *t, int max_elems);
void tensor_fill_random(Tensor *t, GRand *rng);

/* ------------------------------------------------------------------ npy */

gboolean npy_read(const char *path, Tensor **out, GError **error);
/* Serialises to the .npy v1.0 format in memory; bf16 is written as f32. */
GBytes *npy_encode(const Tensor *t);

/* --------------------------------------------------------------- interp */

/* Evaluates 'f' on 'inputs' (one per argument); returns one Tensor per
 * result (caller unrefs).  Requires: f well typed (true of any stored
 * Term).  Fails only for tensors too large to hold. */
GPtrArray *interp_run(const Func *f, Tensor *const *inputs, GError **error);

/* The seeded random value of argument 'i' that 'partir run --seed' (and
 * the REPL's and Lua's run) use. */
Tensor *interp_random_input(const Func *f, int i, gint64 seed);
/* FALSE (with the reason) when an argument or value of 'f' is too large
 * for the interpreter: check before making inputs. */
gboolean interp_check(const Func *f, GError **error);
/* interp_run on the seeded random inputs. */
GPtrArray *interp_run_seeded(const Func *f, gint64 seed, GError **error);

/* The simulated device a thread runs an SPMD program as (spmd_sim.c);
 * the collective operators exchange through it.  NULL outside the
 * simulator, where interp_check refuses programs with collectives. */
typedef struct Comm Comm;
extern _Thread_local Comm *partir_comm;
Tensor *comm_collective(Comm *c, const Term *t, Tensor *x);
gboolean op_is_collective(Op op);
/* spmd_sim.c: runs SPMD program 'f' on one thread per device of its mesh:
 * scatters the global inputs by their layouts, gathers the global results
 * (replicas must agree, partial results are summed). */
GPtrArray *spmd_simulate(const Func *f, Tensor *const *global_inputs,
                         GError **error);

/* kernels.c: evaluates one base operator on evaluated operands. */
Tensor *kernel_eval(const Term *t, Tensor *const *args);
/* flops.c: floating-point operations for one evaluation of a base operator. */
double op_flops(const Term *t);

/* -------------------------------------------------------------- output */

/* Writes an output file whole or not at all (output.c); devices and pipes
 * (/dev/null, /dev/stdout) are written in place. */
gboolean partir_write_file(const char *path, const char *data, gsize len,
                           GError **error);

/* -------------------------------------------------------------- errors */

#define PARTIR_ERROR (partir_error_quark())
GQuark partir_error_quark(void);
typedef enum {
  PARTIR_ERROR_IO,
  PARTIR_ERROR_FORMAT,
  PARTIR_ERROR_INPUT,
} PartirErrorCode;

#endif
