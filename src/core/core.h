/* core.h — the core layer: text, types, terms, checking, meshes.
 *
 * The bottom of libpartir (docs/architecture.md): everything that gives a
 * program its meaning as text and as hash-consed terms, and nothing that
 * evaluates, rewrites or distributes it.  One section per file, in the
 * order a program goes through them:
 *
 *   diag.c       sources and user-input diagnostics
 *   type.c       element and tensor/range types (interned)
 *   ops.c        the operator list (ops.def) and its name table
 *   flops.c      FLOPs of one operator application
 *   gather.c     the dimension numbers of gather, scatter_add, dynamic_slice
 *   attr.c       attribute dictionaries (interned)
 *   term.c       the hash-consed term store
 *   typerule.c   the type rule of every operator
 *   collect.c    reclaiming terms no module or state holds
 *   process.c    interrupts, the deep-stack thread, memory available
 *   lex.c        tokens and the parsers' read position
 *   mesh.c       device meshes and value layouts
 *   program.c    modules and functions
 *   parse.c      text -> Module (types checked as terms are built)
 *   schedule.c   the statement order and names of a function's values
 *   print.c      canonical text
 *   print_expr.c the compact expression form
 *   paths.c      search paths of data files
 *   input.c      input files read whole: regular files only, up to a size
 *   output.c     output files written whole or not at all
 *   error.c      the GError domain (environment errors)
 */
#ifndef PARTIR_CORE_H
#define PARTIR_CORE_H

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <glib.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "partir.h"

#define PARTIR_MAX_RANK 8     /* tensor rank limit; checked by the parser */
#define PARTIR_MAX_DEPTH 200  /* list / expression nesting limit in parsers */
#define PARTIR_MAX_REGIONS 60 /* tile/sum nesting limit (level bit masks) */
/* Term height limit: traversals recurse on term structure, and front ends
 * run them on a thread with a large stack (partir_call_with_stack). */
#define PARTIR_MAX_HEIGHT 1000000
/* Element-count limit of every type in the store, far from int64
 * overflow in any size computation (type_numel, byte counts). */
#define PARTIR_MAX_ELEMS ((int64_t)1 << 48)

/* ----------------------------------------------------------------- diag.c */

/* A source buffer with its name, for diagnostics. */
typedef struct Source {
  char *name;
  char *text;
  gsize len;
} Source;

Source *source_new(const char *name, const char *text, gsize len);
/* Reads a regular file of at most PARTIR_MAX_INPUT_BYTES (input.c). */
gboolean source_load(const char *path, Source **out, GError **error);
void source_free(Source *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Source, source_free)

/* A position in a Source. */
typedef struct Loc {
  int line, col; /* 1-based */
  gsize offset;
} Loc;

/* The one carrier of user-input errors (programs, rule files, commands,
 * mesh strings, requests): collected diagnostics, printed by the front
 * end.  A diagnostic about a place in a Source reads "file:line:col:
 * error: message", then the source line and a caret under the column.
 * One about input without a file (a command, a mesh string, a program as
 * a whole) is its message alone: the reason (diag_reason), which callers
 * may put in context (diag_prefix: "RULE at %v: " + the reason).
 * Environment errors are GErrors; bugs are assertions. */
typedef struct Diag {
  const Source *src; /* what spans point into, or NULL */
  GString *text;     /* what was reported; NULL until something is */
  gboolean quiet;    /* keeps that something was reported, not what */
} Diag;

void diag_init(Diag *d, const Source *src);
void diag_clear(Diag *d);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Diag, diag_clear)
/* A Diag on the heap (for a reason passed down a call chain). */
Diag *diag_new(const Source *src);
/* One that keeps only that a reason was given (diag_any), not the reason
 * (diag_text is DIAG_QUIET_TEXT): for trials whose reasons nobody reads,
 * a rule matched at every value of a program, whose formatting would
 * cost more than the matching. */
Diag *diag_new_quiet(void);
#define DIAG_QUIET_TEXT "(the reason was not kept)"
void diag_free(Diag *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Diag, diag_free)
void diag_error(Diag *d, Loc loc, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
/* diag_error for the helpers that take a format and their own
 * arguments. */
void diag_verror(Diag *d, Loc loc, const char *fmt, va_list ap)
    G_GNUC_PRINTF(3, 0);
void diag_note(Diag *d, Loc loc, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
/* A diagnostic without a span: the reason, replacing what 'd' held. */
void diag_reason(Diag *d, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
void diag_vreason(Diag *d, const char *fmt, va_list ap) G_GNUC_PRINTF(2, 0);
/* Appends a diagnostic without a span (a line ending in '\n'). */
void diag_append_reason(Diag *d, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* Puts the formatted text before what 'd' holds. */
void diag_prefix(Diag *d, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* Appends what 'from' holds to what 'd' holds. */
void diag_append(Diag *d, const Diag *from);
/* Forgets what was reported. */
void diag_reset(Diag *d);
/* What was reported ("" when nothing), and whether anything was. */
const char *diag_text(const Diag *d);
gboolean diag_any(const Diag *d);
/* For "did you mean 'X'?": the name of 'names' (NULL-terminated) nearest
 * to the mistyped 'word', in edits of one character (insert, delete,
 * replace), if at most 2 and fewer than the word's length; else NULL.
 * The first of equally near names wins. */
const char *diag_nearest(const char *word, const char *const *names);
/* " (did you mean 'X'?)" for the nearest name, or "". */
char *diag_did_you_mean(const char *word, const char *const *names);

/* ---------------------------------------------------------------- type.c */

typedef enum {
  DT_F32,
  DT_F64,
  DT_BF16,
  DT_I32,
  DT_I64,
  DT_I1,
  /* the narrower types of StableHLO exports (issue 15) */
  DT_F16,
  DT_I8,
  DT_I16,
  DT_UI8,
  DT_UI16,
  DT_UI32,
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
/* The number of parts of range<n,w>: ceil(n/w).  Of an uneven range
 * (w not dividing n) the last part covers [(P-1)w, n) and is padded to
 * width w; the one place this count is computed. */
int64_t type_range_parts(const Type *range);
/* Whether w divides n: every part is whole, none padded. */
gboolean type_range_even(const Type *range);
/* The width of part r of a dimension of 'size' cut by 'range', or 0
 * when the range cannot cut it: w when size is the range's n (padded
 * when uneven), else size/P where the P parts divide size. */
int64_t type_range_cut(const Type *range, int64_t size);
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
/* ui8 ui16 ui32 (i1 is neither signed nor unsigned: 0 or 1). */
gboolean dtype_is_unsigned(DType dt);
gsize dtype_storage_bytes(DType dt); /* bytes per element in memory / .npy */
/* The least and greatest value of an integer type (i1: 0 and 1). */
int64_t dtype_int_min(DType dt);
int64_t dtype_int_max(DType dt);
/* "f32, f64, ...": every element type, for messages. */
const char *dtype_all_names(void);

/* f16 is IEEE binary16 (1 sign, 5 exponent, 10 fraction bits).
 * 'dtype_f16_from_f32' rounds to nearest even: past the largest finite
 * value (65504) it gives infinity, below half the least subnormal
 * (2^-25) zero; NaN stays a quiet NaN with the top of its payload. */
static inline uint16_t dtype_f16_from_f32(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  uint32_t sign = bits >> 16 & 0x8000u, mag = bits & 0x7fffffffu;
  if (mag > 0x7f800000u) /* NaN */
    return (uint16_t)(sign | 0x7e00u | (mag >> 13 & 0x3ffu));
  if (mag >= 0x47800000u) /* 2^16 and above, infinity */
    return (uint16_t)(sign | 0x7c00u);
  uint32_t h, rest, half;
  if (mag >= 0x38800000u) {        /* 2^-14 and above: a normal f16 */
    h = (mag - 0x38000000u) >> 13; /* the exponent rebiased, 10 bits kept */
    rest = mag & 0x1fffu;
    half = 0x1000u;
  } else { /* a subnormal f16, in units of 2^-24: m * 2^(e - 126) */
    int shift = 126 - (int)(mag >> 23);
    if (shift > 24) /* below 2^-25 */
      return (uint16_t)sign;
    uint32_t m = (mag & 0x7fffffu) | 0x800000u;
    h = m >> shift;
    rest = m & ((1u << shift) - 1);
    half = 1u << (shift - 1);
  }
  /* a carry moves into the exponent: up to the next binade, or infinity */
  h += rest > half || (rest == half && (h & 1u));
  return (uint16_t)(sign | h);
}

static inline float dtype_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = h >> 10 & 0x1fu, frac = h & 0x3ffu, bits;
  if (exp == 0) { /* zero or subnormal: frac * 2^-24, exactly */
    float f = (float)frac * 0x1p-24f;
    return sign ? -f : f;
  }
  bits = sign | (exp == 31 ? 0x7f800000u : (exp + 112) << 23) | frac << 13;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* f16 from a double, rounded once to nearest even: the double rounded to
 * odd in f32 first (toward zero, then the last bit set when inexact),
 * which f32's 13 spare bits make exact for the second rounding. */
static inline uint16_t dtype_f16_from_f64(double d) {
  float f = (float)d;
  if ((double)f != d && !isnan(d)) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if (fabs((double)f) > fabs(d))
      bits--; /* toward zero (infinity becomes the largest float) */
    bits |= 1u;
    memcpy(&f, &bits, sizeof f);
  }
  return dtype_f16_from_f32(f);
}

/* ----------------------------------------------------------------- ops.c */

typedef enum {
#define X(e, name, arity, tr, k, fl) e,
#include "core/ops.def"
#undef X
  OP_COUNT_
} Op;

const char *op_name(Op op);
int op_arity(Op op);
gboolean op_from_name(const char *s, gsize len, Op *out);

/* ----------------------------------------------------------------- attr.c */

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
void attr_append_shortest_double(GString *out, double f);
gboolean attr_value_equal(const AttrValue *a, const AttrValue *b);
/* A deep copy (attrs_intern takes ownership of the values it is given). */
AttrValue attr_value_copy(const AttrValue *v);
void attrs_print(GString *out, const Attrs *a);
void attr_value_print(GString *out, const AttrValue *v);
/* Flattens a (possibly nested) numeric list into 'out'; FALSE if a
 * non-number is found. */
gboolean attr_value_numbers(const AttrValue *v, GArray *out_doubles);
/* 'a' with 'key' set to a copy of 'v' (added when absent). */
const Attrs *attrs_with(const Attrs *a, const char *key, AttrValue v);
/* Values and dictionaries built in code (a rewrite's new operators). */
AttrValue attr_new_int(int64_t i);
AttrValue attr_new_float(double f);
AttrValue attr_new_symbol(const char *s);
AttrValue attr_new_ints(int n, const int64_t *v);
/* {keys[i] = values[i]}: the keys in any order, the values taken. */
const Attrs *attrs_build(int n, const char *const *keys, AttrValue *values);
/* {key = [v[0], ..., v[n-1]]}: the one-list dictionary most rewrites
 * write (dims, permutation, slice_sizes). */
const Attrs *attrs_ints(const char *key, int n, const int64_t *v);

/* ----------------------------------------------------------------- term.c */

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
 * structurally equal terms are the same pointer.  Binders use de Bruijn
 * *levels*: a range variable is the number of region binders enclosing
 * its own binder, so a value means the same term however deep the region
 * that uses it (docs/architecture.md, "Binders").  A region is always
 * built at its home: its binder's level is one more than the highest
 * level its body uses from outside (0 when it uses none), so each
 * computation has exactly one term.  'loose' has bit l set when level l
 * occurs free in the term. */
typedef struct Term Term;
struct Term {
  TermKind kind;
  Op op;     /* TM_OP */
  int index; /* TM_ARG: arg no; TM_BVAR: level; SLICE/TILE: dim */
  int nargs;
  const Type *type;   /* result type (TY_RANGE for TM_BVAR) */
  const Type *range;  /* TM_TILE, TM_SUM: the binder's range type */
  const char *axis;   /* TM_TILE, TM_SUM: interned mesh axis or NULL */
  int binder;         /* TM_TILE, TM_SUM: the level of the region's binder
                         (its home, term_home) */
  const Attrs *attrs; /* TM_OP */
  guint64 loose;      /* bit l: level l occurs free */
  guint32 height;     /* longest path to a leaf; bounds recursion depth */
  guint64 content;    /* a hash of the term's content alone (no addresses):
                         the same in every run, for agents' state hashes */
  guint8 marked;      /* term_store_collect's mark (clear between runs) */
  guint hash;
  const Term *args[];
};

static inline gboolean term_is_closed(const Term *t) { return t->loose == 0; }
/* The region depth where 't' is computed: one more than the highest level
 * it uses (0, the top, for closed terms).  For a tile or sum it is also
 * the level of the region's own binder. */
static inline int term_home(const Term *t) {
  return t->loose ? 64 - __builtin_clzll(t->loose) : 0;
}
static inline gboolean term_uses(const Term *t, int level) {
  return (t->loose >> level) & 1;
}

const Term *term_arg(int index, const Type *type);
const Term *term_bvar(int level, const Type *range);
/* constant() {value = v} of type 't' (a float value for a float type,
 * else its integer part): the splat a rewrite writes. */
const Term *term_splat(double v, const Type *t, Diag *err);
/* Builds an operator node, type-checking it.  'written' is the result
 * type written in the source, or NULL.  On a type error returns NULL and
 * sets 'err' to the message (no location; the caller adds it). */
const Term *term_op(Op op, int nargs, const Term *const *args,
                    const Attrs *attrs, const Type *written, Diag *err);
/* op(x, y) with attributes 'a' (NULL: none) and the inferred type; NULL
 * when x or y is, so a chain of builders reports its first failure. */
const Term *term_op2(Op op, const Term *x, const Term *y, const Attrs *a,
                     Diag *err);
/* partir.slice dim x[r]: part r of 'x' cut along 'dim' into as many
 * parts as r's range has (the range's size is usually dim(x, dim); any
 * size its parts divide will do).  NULL + err when they do not divide. */
const Term *term_slice(int dim, const Term *x, const Term *r, Diag *err);
/* A region whose body refers to its binder as level 'level' (any level
 * above the others the body uses: the constructor moves the binder to
 * the region's home, term_region_level).  NULL + err when the range or
 * the body's type does not fit, or regions would nest deeper than
 * PARTIR_MAX_REGIONS. */
const Term *term_tile(int dim, const Type *range, const char *axis,
                      const Term *body, int level, Diag *err);
const Term *term_sum(const Type *range, const char *axis, const Term *body,
                     int level, Diag *err);
/* The level a region's binder takes at its home, for a body that uses it
 * as 'level': one more than the highest other level the body uses. */
int term_region_level(const Term *body, int level);
const Term *term_tuple(int n, const Term *const *args);
/* Adds to the set 'seen' every term 'root' reaches (root included). */
void term_reach(const Term *root, GHashTable *seen);
/* Rebuilds 't' with new operands (same kind/op/attrs); NULL + err when the
 * new operands do not type-check. */
const Term *term_with_args(const Term *t, const Term *const *args, Diag *err);
/* 't' with each operand a replaced by fn(ud, a): 't' itself when none
 * changes; NULL + err when the store refuses the rebuilt term. */
typedef const Term *(*TermMapFn)(void *ud, const Term *arg);
const Term *term_map_args(const Term *t, TermMapFn fn, void *ud, Diag *err);
/* Renaming free levels.  Levels mapped by relevel_map are replaced by
 * the level given (the binder of the same range); regions inside whose
 * outside levels change move to their new home.  One Relevel keeps its
 * results, so applying it to many terms of one body costs the body once.
 * relevel_apply returns NULL + err only when a region would nest deeper
 * than PARTIR_MAX_REGIONS. */
typedef struct Relevel Relevel;
Relevel *relevel_new(void);
void relevel_map(Relevel *rl, int from, int to);
/* The same, where the binder at 'to' has another range than the one at
 * 'from' with as many parts (a substitution e{s/r} across a reshape):
 * the variables of 'from' become variables of 'to' of type 'range'. */
void relevel_map_range(Relevel *rl, int from, int to, const Type *range);
const Term *relevel_apply(Relevel *rl, const Term *t, Diag *err);
void relevel_free(Relevel *rl);
/* While 'names' (a module's value names, Term -> name) is set, a term
 * that relevel rebuilds takes the name of the term it renames, when it
 * has none: renaming levels does not change what a value computes.  The
 * rewrite passes set it for their duration; NULL stops it. */
void term_carry_names(GHashTable *names);
/* 't' with level 'from' renamed 'to' (one relevel_apply). */
const Term *term_rename_level(const Term *t, int from, int to, Diag *err);

size_t term_store_size(void); /* nodes in the store */
/* A ceiling on the store's size while a rewrite pass runs ('max' nodes;
 * 0: none); returns the one before.  Renaming levels (relevel) fails once
 * the store is past it, and the passes check it between rewrites: a rule
 * set or a program that would blow up stops with a message instead of
 * filling the memory. */
size_t term_store_ceiling(size_t max);

gboolean term_store_past_ceiling(void);
size_t term_store_bytes(void); /* bytes of those nodes (not the index) */
/* Frees every term that no root reaches, and removes from 'tables'
 * (hash tables keyed by terms: the modules' name tables) the entries
 * whose key is freed.  A term stays when a root reaches it.  Returns the
 * number of terms freed.
 * requires: no other pointer to a term is held anywhere (the caller owns
 * every live term through 'roots': no pass is running). */
size_t term_store_collect(const Term *const *roots, gsize nroots,
                          GHashTable *const *tables, gsize ntables);

/* Checks an operator application, returns its result type or NULL with
 * the reason in 'err' (typerule.c). */
const Type *typerule_infer(Op op, int nargs, const Term *const *args,
                           const Attrs *attrs, const Type *written, Diag *err);

/* ------------------------------------------------------------- typerule.c */

/* Checks an operator application, returns its result type or NULL with
 * the reason in 'err'. */
const Type *typerule_infer(Op op, int nargs, const Term *const *args,
                           const Attrs *attrs, const Type *written, Diag *err);
/* TRUE for operators whose result type is the written one. */
gboolean op_takes_written_type(Op op);
/* TRUE for operators that cannot be built without attributes. */
gboolean op_needs_attrs(Op op);
/* TRUE for the collectives of SPMD programs (all_reduce, ...). */
gboolean op_is_collective(Op op);
/* TRUE for reduce_sum, reduce_max and the other reductions over 'dims'. */
gboolean op_is_reduction(Op op);

/* ---------------------------------------------------------------- flops.c */

/* Floating-point operations for one evaluation of base operator 't'. */
double op_flops(const Term *t);
/* TRUE for the operators whose result element is computed from the
 * operands' elements at its own index alone, of operands of its shape
 * (the flops column's fl_elementwise: add ... compare). */
gboolean op_is_elementwise(Op op);
/* Whether a contraction whose contracted dimensions do not merge into
 * one stride ([B, H, S, D] x [H, D, E] over H, D) is better computed by
 * first copying 'copied' elements (the operands whose contracted
 * dimensions do not follow each other) into a layout where they do,
 * then as one product K deep, than as 'groups' products added into a
 * result of 'result' elements: the copy is one pass over those operands,
 * each product after the first a pass over the result (written apart,
 * then added).  Code generation (dot.c) does what this says and the cost
 * model prices it. */
gboolean contraction_relayout_pays(double copied, double result, double groups);

/* --------------------------------------------------------------- gather.c */

/* A gather's attributes (StableHLO's dimension numbers), read. */
typedef struct GatherDims {
  int64_t offset_dims[PARTIR_MAX_RANK]; /* result dims over a slice */
  int noffset;
  int64_t collapsed[PARTIR_MAX_RANK]; /* collapsed_slice_dims */
  int ncollapsed;
  int64_t operand_batching[PARTIR_MAX_RANK]; /* paired with ... */
  int64_t indices_batching[PARTIR_MAX_RANK]; /* ... these indices dims */
  int nbatching, nbatching_indices;
  int64_t start_index_map[PARTIR_MAX_RANK]; /* operand dim of component i */
  int nstart;
  int64_t index_vector_dim;
  int64_t slice_sizes[PARTIR_MAX_RANK]; /* one per operand dim */
  int nslice;
  gboolean sorted; /* indices_are_sorted */
  int rank;        /* the result's */
} GatherDims;

/* Reads the attributes of a gather of 'operand' at 'indices' and checks
 * them (StableHLO's constraints); FALSE with the reason in 'err'. */
gboolean gather_dims_read(const Attrs *a, const Type *operand,
                          const Type *indices, GatherDims *g, Diag *err);
/* The same for scatter_add(operand, indices, updates): its dimension
 * numbers as those of the gather that reads 'updates' back from the
 * result (slice sizes from the update window), and 'updates' of that
 * gather's result type. */
gboolean scatter_dims_read(const Attrs *a, const Type *operand,
                           const Type *indices, const Type *updates,
                           GatherDims *g, Diag *err);
/* The same for a gather or scatter_add that type-checked (it cannot
 * fail). */
void gather_dims_of(const Term *t, GatherDims *g);
/* What carries result dimension d of a gather: a batch dim is the
 * indices dim 'indices' (and, for a batching dim, the operand dim
 * 'operand'); an offset dim runs over the slice of operand dim
 * 'operand'.  -1 where none. */
typedef struct GatherDim {
  gboolean offset;
  int indices, operand;
} GatherDim;
GatherDim gather_result_dim(const GatherDims *g, int d);
const Type *gather_result_type(const GatherDims *g, const Type *operand,
                               const Type *indices);
/* The attributes that 'g' reads back as (empty batching lists and a
 * false indices_are_sorted left out). */
const Attrs *gather_attrs(const GatherDims *g);
/* The same under scatter_add's names (no slice sizes). */
const Attrs *scatter_attrs(const GatherDims *g);
/* The attributes of gather or dynamic_slice 't' when its operand (the
 * first) has type 'operand' instead: slice sizes that took a whole
 * dimension take the new size (the only dimensions a tiling splits). */
const Attrs *gather_sizes_follow(const Term *t, const Type *operand);

/* -------------------------------------------------------------- collect.c */

/* Reclaiming terms.  Modules and the functions of program states register
 * themselves (program.c, and the rewrite layer's states);
 * collect_now frees every term that no live module's function and no
 * live registered function reaches, and returns how many.  Call it only
 * where every term in use belongs to a module or a registered function
 * (no rewrite or pass in progress).  collect_maybe collects when the
 * store has doubled since the last collection. */
typedef struct Module Module;
typedef struct Func Func;
void collect_track_module(Module *m, gboolean alive);
void collect_track_func(const Func *f, gboolean alive);
size_t collect_now(void);
void collect_maybe(void);
size_t collect_freed(void); /* terms freed so far */

/* -------------------------------------------------------------- process.c */

/* Set (e.g. by a SIGINT handler) to ask long operations to stop: the
 * interpreter fails with "interrupted", engine scripts stop between
 * commands.  Front ends clear it before each command. */
extern volatile sig_atomic_t partir_interrupt;

/* The monotonic clock in nanoseconds (intervals, not dates). */
int64_t partir_now_ns(void);
/* Sorts 'n' numbers in ascending order (measured times and figures,
 * for their minimum and median). */
void partir_sort_doubles(double *v, gsize n);

/* Runs 'fn(data)' on a thread whose stack is deep enough for terms of
 * PARTIR_MAX_HEIGHT; returns fn's result. */
int partir_call_with_stack(int (*fn)(void *), void *data);

/* A zero-filled block of 'bytes' for a tensor or an arena, on a cache
 * line, or NULL when there is no memory; freed with partir_buffer_free.
 * A block of megabytes starts on a 2 MiB boundary and asks the kernel
 * for huge pages (madvise), as a kernel streaming it misses the TLB on
 * every 4 KiB page otherwise. */
void *partir_buffer_new(size_t bytes);
void partir_buffer_free(void *p);

/* Bytes of memory this process can still allocate: MemAvailable of
 * /proc/meminfo (else the physical memory), less where the process's
 * cgroup has a lower limit; 0 when unknown. */
guint64 partir_memory_available(void);

/* ------------------------------------------------------------------ lex.c */

typedef enum {
  TK_EOF,
  TK_ERROR,  /* the lexer has reported a diagnostic */
  TK_IDENT,  /* func, matmul, partir.tile, GT */
  TK_VALUE,  /* %name (text excludes '%') */
  TK_SYMBOL, /* @name or @"name" (name excludes '@'; see token_name) */
  TK_INT,
  TK_FLOAT,
  TK_STRING, /* "..." (text is the unescaped contents) */
  TK_ARROW,  /* -> */
  TK_PUNCT,  /* one of ( ) { } [ ] , : = < > ! (rules: also \ / * . ; ) */
  TK_OP,     /* rules only: ~~> <~~> == != <= >= (text in start/len) */
  TK_HASH,   /* MLIR only: #name (an attribute alias, or '#1' after a value:
                a result number); the name excludes '#' */
  TK_CARET,  /* MLIR only: ^name (a block label) */
} TokenKind;

typedef struct Token {
  TokenKind kind;
  Loc loc;
  const char *start; /* raw text in the source */
  gsize len;
  char *text; /* TK_STRING: unescaped; else NULL */
  int64_t i;  /* TK_INT */
  double f;   /* TK_FLOAT */
  char punct; /* TK_PUNCT */
} Token;

typedef struct Lexer {
  const Source *src;
  Diag *diag;
  gsize pos;
  int line;
  gsize line_start;
  gboolean rules; /* rule-file syntax: '#' comments, rule operators */
  /* MLIR syntax (StableHLO import): '#' and '^' sigils, '-' in sigil
   * names, hexadecimal integers (their bits in 'i'), the escapes \t and
   * \XX in strings, '{-# ... #-}' metadata skipped as space, and every
   * other printable byte a one-character TK_PUNCT */
  gboolean mlir;
} Lexer;

void lex_init(Lexer *lx, const Source *src, Diag *diag);
/* Reads the next token into 'tok' (freeing what it held). */
void lex_next(Lexer *lx, Token *tok);
void token_clear(Token *tok);
/* Reads the inside of 'tensor<...>' after '<' up to and including '>':
 * dims 'x'-separated, then the element type. */
gboolean lex_tensor_shape(Lexer *lx, int *rank, int64_t *dims, DType *dt);
Loc lex_loc(const Lexer *lx);
/* Reads the raw text up to the '>' that closes an '<' just read (nested
 * '<' '>' counted; not across a line end): its offset and length in the
 * source, the lexer left after the '>'.  FALSE with a diagnostic when
 * the line or the input ends first.  MLIR types (tensor<4x?xf32, #enc>)
 * are read this way: their insides are not tokens. */
gboolean lex_angle_body(Lexer *lx, gsize *start, gsize *len);
/* Reads a name that may contain '-' (rule names: matmul-tile-0) as a
 * TK_IDENT token. */
gboolean lex_raw_name(Lexer *lx, Token *tok);
gboolean token_is(const Token *tok, const char *ident);
/* The name a TK_VALUE, TK_SYMBOL or TK_IDENT token spells (newly allocated). */
char *token_name(const Token *tok);
gboolean token_punct(const Token *tok, char c);
gboolean token_op(const Token *tok, const char *op);
/* A short printable description of a token for "expected X, got Y". */
char *token_describe(const Token *tok);
/* Appends 's' as a string literal: in quotes, with the escapes the lexer
 * reads back ('\"', '\\', '\n'); every other byte as it is. */
void lex_append_string(GString *out, const char *s);

/* A parser's read position: the current token, where the last consumed
 * token ended, and whether a diagnostic has been reported (the parser
 * then unwinds without reporting more). */
typedef struct Cursor {
  Lexer lx;
  Token tok;
  gsize prev_end; /* offset just past the last consumed token */
  gboolean failed;
} Cursor;

/* Before the first token: set lexer options, then cursor_next. */
void cursor_init(Cursor *c, const Source *src, Diag *diag);
/* Consumes the current token. */
void cursor_next(Cursor *c);
/* Reports an error at 'loc' unless one was reported; FALSE. */
gboolean cursor_fail(Cursor *c, Loc loc, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);
gboolean cursor_vfail(Cursor *c, Loc loc, const char *fmt, va_list ap)
    G_GNUC_PRINTF(3, 0);
/* "expected WHAT, got ..." at the current token; FALSE. */
gboolean cursor_expected(Cursor *c, const char *what);
/* Consumes punctuation 'ch' or the identifier 'word', or fails. */
gboolean cursor_punct(Cursor *c, char ch);
gboolean cursor_word(Cursor *c, const char *word);
/* Consumes an identifier and returns its name, interned; NULL after
 * "expected WHAT" when the token is no identifier. */
const char *cursor_name(Cursor *c, const char *what);
/* Whether the token after the current one is punctuation 'ch' (the
 * cursor does not move): an operator's name is a call only before '('. */
gboolean cursor_peek_punct(Cursor *c, char ch);

/* ----------------------------------------------------------------- mesh.c */

#define MESH_MAX_AXES 8
#define MESH_MAX_AXIS_SIZE (1 << 20)        /* devices along one axis, 2^20 */
#define MESH_MAX_DEVICES ((int64_t)1 << 31) /* devices in a mesh, 2^31 */

/* A device mesh: axis names (interned) and sizes, in the order given. */
typedef struct Mesh {
  int naxes;
  const char *names[MESH_MAX_AXES];
  int64_t sizes[MESH_MAX_AXES];
} Mesh;

/* Parses "batch=2,model=4" (an empty string is the empty mesh); FALSE
 * with the reason when it is malformed or past the limits above. */
gboolean mesh_parse(const char *spec, Mesh *out, Diag *diag);
/* FALSE with the reason when the axes of 'm' multiply to more than
 * MESH_MAX_DEVICES devices. */
gboolean mesh_devices_ok(const Mesh *m, Diag *diag);
int64_t mesh_axis_size(const Mesh *m, const char *axis); /* 0 if absent */
int mesh_axis_index(const Mesh *m, const char *axis);    /* -1 if absent */
/* The number of devices (the product of the sizes; G_MAXINT64 when that
 * overflows; 1 for NULL or no axes). */
int64_t mesh_devices(const Mesh *m);
/* Axis names are letters, digits and '_', at least one. */
gboolean mesh_axis_name_ok(const char *name);
char *mesh_to_string(const Mesh *m);
/* The same axes, in the same order, of the same sizes. */
gboolean mesh_equal(const Mesh *a, const Mesh *b);

/* How a value of an SPMD program lies on the mesh: for each dimension
 * the axes that split it (major first); the axes over which each device
 * holds a partial sum; every other axis replicates it. */
typedef struct Dist {
  int rank;
  int naxes[PARTIR_MAX_RANK];
  const char *axes[PARTIR_MAX_RANK][MESH_MAX_AXES]; /* interned */
  int npartial;
  const char *partial[MESH_MAX_AXES];
  /* the global size of a dimension split unevenly (its chunks padded);
   * 0: the local size times the parts */
  int64_t global[PARTIR_MAX_RANK];
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
/* Whether 'a' splits its dimension 'da' over the axes 'b' splits 'db'
 * over, in the same order. */
gboolean dist_same_axes(const Dist *a, int da, const Dist *b, int db);
/* The number of parts a dist splits dimension 'dim' into. */
int64_t dist_parts(const Dist *d, const Mesh *m, int dim);
/* A device's size of a dimension of 'size' in 'parts': rounded up, the
 * last chunks padded when the parts do not divide it (as GSPMD pads). */
int64_t dist_local_size(int64_t size, int64_t parts);
/* The global size of dimension 'dim' of a value of local type 'local'. */
int64_t dist_global_size(const Dist *d, const Mesh *m, const Type *local,
                         int dim);
/* Records in 'd' the dimensions of 'global' that 'local' pads. */
void dist_set_global(Dist *d, const Mesh *m, const Type *local,
                     const Type *global);

/* -------------------------------------------------------------- program.c */

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
  SpmdInfo *spmd; /* SPMD programs only, else NULL */
  /* Per result, the argument it is the new value of (a training step's
   * updated parameter, '{updates = %w}'), or -1; NULL: none.  Lowering
   * returns such a result in its argument's layout, so the next step can
   * take it as it is (JAX's donated arguments with out_shardings equal to
   * in_shardings). */
  int *result_updates;
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
  GHashTable *notes;        /* const Term* -> char*: a comment the printer puts
                               after the value's statement (an imported
                               operation's source location) */
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

/* ---------------------------------------------------------------- parse.c */

/* Parses and type-checks a whole file.  On error returns NULL and leaves
 * the diagnostics in 'diag'. */
Module *parse_module(const Source *src, Diag *diag);
/* An attribute dictionary '{key = value, ...}' at the cursor, as a
 * program writes one (an empty one when no '{' follows): numbers, names,
 * strings and nested lists.  The rule files' vjp items read theirs with
 * it too.  FALSE after a diagnostic. */
gboolean cursor_attrs(Cursor *c, const Attrs **out);
/* A reader of one language (parse_module; the StableHLO importer's). */
typedef Module *(*ModuleReader)(const Source *src, Diag *diag);
/* 'read' on 'src'; on error returns NULL with its diagnostics gathered
 * into 'errors' (when not NULL) as one text. */
Module *read_module_source(ModuleReader read, const Source *src, Diag *errors);
/* parse_module for text named 'name' in diagnostics; on error returns
 * NULL with the diagnostics in 'errors' (when not NULL). */
Module *parse_text(const char *name, const char *text, gsize len, Diag *errors);
/* The same for a file: NULL with 'error' set when it cannot be read, or
 * NULL with the diagnostics in 'errors'. */
Module *parse_file(const char *path, Diag *errors, GError **error);

/* paths.c: the directories of $ENV (':'-separated, empty entries
 * skipped), then 'installed' (may be NULL); NULL-terminated. */
char **partir_search_path(const char *env, const char *installed);

/* ------------------------------------------------------------- schedule.c */

/* A function as SSA statements: operands before users, each value in the
 * region (tile or sum body) of the innermost binder it uses, each with
 * its printed name. */
typedef struct SchedName {
  const char *user; /* the name from the module's tables, or NULL */
  char *name;       /* the name it prints as */
  int index;        /* its place in text order: the arguments 0, 1, ...,
                       then the statements; -1 for a binder */
} SchedName;

typedef struct SchedRegion SchedRegion;

typedef struct SchedStmt {
  SchedName n;
  const Term *t;
  int nops;
  SchedName **ops;    /* operands (TM_OP, TM_SLICE) */
  SchedRegion *child; /* TM_TILE, TM_SUM */
} SchedStmt;

struct SchedRegion {
  SchedName binder;
  GPtrArray *stmts; /* SchedStmt*, in order */
  GHashTable *memo; /* Term -> SchedStmt* (while scheduling) */
  SchedName *yield;
};

typedef struct Schedule {
  SchedRegion *top;
  int nvalues; /* arguments and statements */
  int nargs;
  SchedName *args;      /* per argument */
  SchedName **results;  /* per result */
  GPtrArray *blocks;    /* the statements' memory (schedule.c) */
  struct Namer *namer;  /* a naming begun and not finished (schedule.c) */
  int named_upto;       /* the values up to this index have names */
  SchedStmt **by_index; /* the statements by SchedName.index (below
                           nargs: NULL) */
} Schedule;

/* The schedule of 'f'; 'm' gives the user's names (NULL: none). */
Schedule *schedule_new(const Module *m, const Func *f);
/* The schedule of 'f' without names (every 'name' NULL, 'user' NULL),
 * and its naming, once, as schedule_new names it. */
Schedule *schedule_order(const Func *f);
void schedule_name(Schedule *sc, const Module *m, const Func *f);
/* The names of the values of index up to 'index' (the arguments, then
 * the statements in text order), as schedule_name gives them: a
 * naming in text order stops there, and a later call (or
 * schedule_name) goes on from it.  The agent protocol names a step's
 * value this way, for its trace; no value after it needs a name. */
void schedule_name_upto(Schedule *sc, const Module *m, const Func *f,
                        int index);
/* schedule_order for less memory: the results from the last, each
 * operator's operands the tallest first (schedule.c).  The cost model's
 * liveness sweep follows it: the order a memory-aware compiler runs, not
 * the order the printer shows. */
Schedule *schedule_for_memory(const Func *f);
void schedule_free(Schedule *sc);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Schedule, schedule_free)
/* Visits every value as the printer names it, in text order: arguments
 * first, then each statement's name and placed term. */
typedef void (*ScheduleVisit)(void *ud, const char *name, const Term *placed);
void schedule_walk(const Module *m, const Func *f, ScheduleVisit visit,
                   void *ud);
/* The same walk, also telling the axes of the regions around each value,
 * outermost first (NULL for a region over no axis). */
/* schedule_walk on a schedule already made ('sc', of 'f'). */
void schedule_visit(const Schedule *sc, const Func *f, ScheduleVisit visit,
                    void *ud);
typedef void (*ScheduleVisitAround)(void *ud, const char *name,
                                    const Term *placed,
                                    const char *const *around, int naround);
void schedule_walk_around(const Module *m, const Func *f,
                          ScheduleVisitAround visit, void *ud);

/* ---------------------------------------------------------------- print.c */

/* The canonical text; 'm' gives the user's names (NULL: none). */
void print_module(GString *out, const Module *m);
void print_func(GString *out, const Module *m, const Func *f);

/* ----------------------------------------------------------- print_expr.c */

void print_module_expr(GString *out, const Module *m);
/* The expression form of one function ('m' gives names; NULL: none). */
void print_func_expr(GString *out, const Module *m, const Func *f);

/* ---------------------------------------------------------------- paths.c */

/* The directories of $ENV (':'-separated, empty entries skipped), then
 * 'installed' (may be NULL); NULL-terminated. */
char **partir_search_path(const char *env, const char *installed);

/* ---------------------------------------------------------------- input.c */

/* The most read from a program, rule file or hardware description. */
#define PARTIR_MAX_INPUT_BYTES ((gsize)256 << 20)

/* Reads the regular file 'path' whole, at most 'max' bytes, into a new
 * NUL-terminated buffer.  A FIFO, a device or a directory is refused
 * without waiting on it; so is a larger file.  Errors are
 * PARTIR_ERROR_IO, with messages that name the file and the reason,
 * never what the file holds. */
gboolean partir_read_file(const char *path, gsize max, char **text, gsize *len,
                          GError **error);

/* --------------------------------------------------------------- output.c */

/* Writes an output file whole or not at all; devices and pipes
 * (/dev/null, /dev/stdout) are written in place, a directory refused. */
gboolean partir_write_file(const char *path, const char *data, gsize len,
                           GError **error);
/* Writes 'n' output files together: all of them, or on failure none
 * (every target as it was), the error naming the target. */
gboolean partir_write_files(int n, const char *const *paths,
                            const char *const *data, const gsize *lens,
                            GError **error);

/* ---------------------------------------------------------------- error.c */

/* The GError domain of environment errors (STYLE.md's second kind). */
#define PARTIR_ERROR (partir_error_quark())
GQuark partir_error_quark(void);
typedef enum {
  PARTIR_ERROR_IO,          /* a file could not be read or written */
  PARTIR_ERROR_FORMAT,      /* a data file (.npy, .hw) is malformed */
  PARTIR_ERROR_INTERRUPTED, /* stopped by partir_interrupt (Ctrl-C) */
} PartirErrorCode;

#endif
