/* import.h — the import layer: StableHLO text to partir Modules.
 *
 * Layer 1, on core alone (docs/architecture.md): what JAX and
 * PyTorch/XLA print ('jax.jit(f).lower(*args).as_text()') becomes a
 * Module of type-checked terms, as if the .pir parser had read it.
 * The text is read whole into records first (an HloFile: functions,
 * operations, attributes, types, locations), in either of MLIR's two
 * forms; then every operation is judged, and only a file whose every
 * operation partir can express is lowered to terms.  One section per
 * file, in the order a file goes through them:
 *
 *   records.c  the records: operations, regions, functions, a file
 *   syntax.c   the pieces of MLIR text: types, attributes, locations,
 *              operands; reading past an unknown operation
 *   pretty.c   the pretty forms of the stablehlo/func/arith operations
 *              -> the same records the generic form gives
 *   reader.c   a whole file: modules, functions, regions, MLIR's
 *              generic operation form, location aliases
 *   support.c  which operations partir can express; one error that
 *              lists every one it cannot, each with file:line:col
 *   dense.c    dense<...> element lists, splats and hex blobs -> the
 *              value of a partir 'constant'
 *   lower.c    HloFile -> Module: each operation to terms, calls
 *              inlined, the source's value names and locations kept
 *   import.c   the entry points, and telling StableHLO from .pir text
 */
#ifndef PARTIR_IMPORT_H
#define PARTIR_IMPORT_H

#include "core/core.h"

/* Nesting of regions, attributes and locations the reader follows; past
 * it the input is refused with a message (no input can exhaust the
 * stack). */
#define HLO_MAX_DEPTH 64

/* --------------------------------------------------------------- records.c */

/* A type as written.  'type' is the partir type when the text is a
 * ranked tensor of static shape and an element type partir has;
 * otherwise NULL, and 'text' says what was written. */
typedef struct HloType {
  const Type *type;
  char *text; /* as written: "tensor<4x?xf32>", "!stablehlo.token" */
  char *why;  /* when 'type' is NULL: the reason ("element type f16") */
  Loc loc;
} HloType;

typedef enum {
  HA_INT,      /* 3, 3 : i32, true/false (1/0, 'boolean' set) */
  HA_FLOAT,    /* 1.5 : f32 */
  HA_STRING,   /* "text" */
  HA_WORD,     /* DEFAULT, GT, unit (a bare word) */
  HA_SYMREF,   /* @callee */
  HA_LIST,     /* [a, b], array<i64: 1, 2> */
  HA_DICT,     /* {k = v}, #stablehlo.dot<k = v> ('s': the dialect name) */
  HA_DENSE,    /* dense<...> : type ('items' the elements, or 's' a hex blob) */
  HA_TYPE,     /* a type ('type') */
  HA_FUNCTYPE, /* (T, ...) -> R: 'items' two HA_LISTs of HA_TYPEs */
  HA_OPAQUE,   /* anything else, read past: 's' holds its start as text */
} HloAttrKind;

typedef struct HloAttr HloAttr;
struct HloAttr {
  HloAttrKind kind;
  Loc loc;
  int64_t i;
  double f;
  gboolean boolean; /* HA_INT written true/false */
  char *s;          /* STRING, WORD, SYMREF; DICT's and OPAQUE's name */
  GPtrArray *items; /* LIST, DENSE: HloAttr*; DICT: values */
  GPtrArray *keys;  /* DICT: char* */
  HloType *type;    /* ': type' after a number or a dense, or HA_TYPE */
  gboolean hex;     /* INT written in hexadecimal (a bit pattern) */
};

/* A location: loc(...) or an alias of one (#loc3), resolved once the
 * whole file (and the aliases at its end) is read. */
typedef enum {
  HL_UNKNOWN,
  HL_NAME,     /* "name"(child) */
  HL_FILE,     /* "file":line:col */
  HL_CALLSITE, /* callsite(callee at caller) */
  HL_FUSED,    /* fused[a, b] */
  HL_ALIAS,    /* #loc3 */
} HloLocKind;

typedef struct HloLoc HloLoc;
struct HloLoc {
  HloLocKind kind;
  char *s; /* NAME: the name; FILE: the file; ALIAS: the alias */
  int line, col;
  GPtrArray *children; /* NAME: [child]; CALLSITE: [callee, caller]; FUSED */
};

/* A use of a value: %name, or %name#k for result k of a group. */
typedef struct HloUse {
  char *name;
  int index; /* -1: none written */
  Loc loc;
} HloUse;

/* The names an operation defines: '%0:2 = ' is one group of 2; '%a, %b
 * = ' two groups of 1. */
typedef struct HloDef {
  char *name;
  int count;
  Loc loc;
} HloDef;

typedef struct HloRegion HloRegion;

/* One operation, however it was written: the pretty forms (pretty.c)
 * fill the same fields the generic form does, with the generic form's
 * attribute names (dot_general's 'contracting_dims = [1] x [0]' becomes
 * lhs/rhs_contracting_dimensions), so the rest of the import sees one
 * shape per operation. */
typedef struct HloOp {
  char *name;               /* "stablehlo.add", "func.call" */
  Loc loc;                  /* the operation's name */
  Loc start;                /* the statement's first token */
  GArray *defs;             /* HloDef */
  GArray *uses;             /* HloUse: the operands */
  GPtrArray *attr_keys;     /* char*: properties and attributes */
  GPtrArray *attr_values;   /* HloAttr* */
  GPtrArray *operand_types; /* HloType*, one per operand (when known) */
  GPtrArray *result_types;  /* HloType*, one per result */
  GPtrArray *regions;       /* HloRegion* */
  HloLoc *where;            /* loc(...), or NULL */
  gboolean opaque; /* a pretty form the reader does not know: read past,
                      only the name, the position and the defs are kept */
} HloOp;

/* A block argument or function argument. */
typedef struct HloArg {
  char *name;
  HloType *type;
  HloAttr *attrs; /* HA_DICT or NULL */
  HloLoc *where;
  Loc loc;
} HloArg;

/* A region of one block (StableHLO regions have one). */
struct HloRegion {
  Loc loc;
  GPtrArray *args; /* HloArg* */
  GPtrArray *ops;  /* HloOp*, the terminator last */
  int blocks;      /* how many blocks were written (more than 1: refused) */
};

typedef struct HloFunc {
  char *name;
  gboolean private_;
  Loc loc;
  GPtrArray *args;         /* HloArg* */
  GPtrArray *result_types; /* HloType* */
  GPtrArray *result_attrs; /* HloAttr* (HA_DICT) or NULL, per result */
  HloRegion *body;
} HloFunc;

typedef struct HloFile {
  const Source *src;
  char *module_name;   /* module @name, or NULL */
  GPtrArray *funcs;    /* HloFunc* */
  GHashTable *aliases; /* "loc3" -> HloLoc* (owned) */
  GPtrArray *locs;     /* every HloLoc made (owned) */
} HloFile;

HloAttr *hlo_attr_new(HloAttrKind kind, Loc loc);
void hlo_attr_free(HloAttr *a);
void hlo_type_free(HloType *t);
HloType *hlo_type_copy(const HloType *t);
GPtrArray *hlo_attr_array(void); /* of HloAttr*, owning */
GPtrArray *hlo_type_array(void); /* of HloType*, owning */
HloOp *hlo_op_new(const char *name, Loc loc);
void hlo_op_free(HloOp *op);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HloOp, hlo_op_free)
void hlo_op_add_attr(HloOp *op, const char *key, HloAttr *value);
const HloAttr *hlo_op_attr(const HloOp *op, const char *key);
HloRegion *hlo_region_new(Loc loc);
void hlo_region_free(HloRegion *g);
HloFunc *hlo_func_new(Loc loc);
void hlo_func_free(HloFunc *f);
void hlo_loc_free(HloLoc *l);
HloFile *hlo_file_new(const Source *src);
void hlo_file_free(HloFile *f);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HloFile, hlo_file_free)

/* ---------------------------------------------------------------- syntax.c */

/* A read position in MLIR text: a Cursor in the lexer's MLIR mode, the
 * file being built, and the nesting so far. */
typedef struct HloReader HloReader;
struct HloReader {
  Cursor c;
  HloFile *file;
  int depth;
  /* a number's ': type' belongs to the operation here ('dim = 0 :
   * tensor<4xi32>'), not to the number */
  gboolean bare_numbers;
  /* reads a region '{ [^bb0(...):] ops }' (reader.c; pretty.c reads the
   * regions of the operations it reads through it) */
  HloRegion *(*read_region)(HloReader *r);
};

static inline gboolean hlo_failed(HloReader *r) { return r->c.failed; }
static inline void hlo_next(HloReader *r) { cursor_next(&r->c); }
static inline gboolean hlo_is_punct(HloReader *r, char ch) {
  return token_punct(&r->c.tok, ch);
}
static inline gboolean hlo_is_word(HloReader *r, const char *w) {
  return token_is(&r->c.tok, w);
}
/* Consumes punctuation 'ch' when it is the current token. */
static inline gboolean hlo_accept(HloReader *r, char ch) {
  if (!hlo_is_punct(r, ch) || hlo_failed(r))
    return FALSE;
  hlo_next(r);
  return TRUE;
}
/* The current token starts where the last one ended ('%0#1',
 * 'tensor<': nothing between). */
static inline gboolean hlo_adjacent(HloReader *r) {
  return r->c.tok.loc.offset == r->c.prev_end;
}
/* One level deeper, or an error past HLO_MAX_DEPTH (the caller steps
 * back out: r->depth--). */
gboolean hlo_enter(HloReader *r, Loc at, const char *what);

HloType *hlo_read_type(HloReader *r);
HloAttr *hlo_read_attr(HloReader *r);
/* Reads '{k = v, ...}' into the operation's attributes. */
gboolean hlo_read_attr_dict(HloReader *r, HloOp *op);
/* ': (T, ...) -> R' or '-> (R, ...)', after the ':', into the
 * operation's operand and result types. */
gboolean hlo_read_function_type(HloReader *r, HloOp *op);
/* An operation's tail: '{attributes}' when one comes next, then ':' and
 * its function type. */
gboolean hlo_read_signature(HloReader *r, HloOp *op);
/* 'loc(...)' when one comes next (*out NULL otherwise). */
gboolean hlo_read_loc(HloReader *r, HloLoc **out);
/* %name or %name#k. */
gboolean hlo_read_use(HloReader *r, HloUse *out);
/* '(%a, %b)' or a bare '%a, %b' list ('parens' says which); a bare list
 * ends at the first token after a comma that is no value (the comma is
 * read: 'dims = ...' comes next). */
gboolean hlo_read_uses(HloReader *r, HloOp *op, gboolean parens);
/* Reads past tokens up to the end of an operation whose form is not
 * known, brackets balanced: to the next statement at the start of a
 * line, its 'loc(...)', or the '}' closing the region. */
gboolean hlo_skip_op(HloReader *r);

/* ---------------------------------------------------------------- pretty.c */

/* Reads the rest of an operation written in its pretty form, the
 * cursor just after the name in 'op'.  An operation whose pretty form
 * is not known here is read past (op->opaque); support.c refuses it.
 * FALSE after a syntax error. */
gboolean hlo_read_pretty(HloReader *r, HloOp *op);

/* ---------------------------------------------------------------- reader.c */

/* Reads a whole file into records; NULL with one positioned diagnostic
 * in 'diag' at the first syntax error (nothing is judged here:
 * operations partir lacks are read as well as those it has). */
HloFile *hlo_read(const Source *src, Diag *diag);

/* --------------------------------------------------------------- support.c */

/* Why partir cannot import 'op' (a new string), or NULL when it can. */
char *hlo_unsupported(const HloOp *op);
/* Judges every operation of every function (and every function's
 * signature): FALSE with one diagnostic that lists each operation partir
 * cannot express, file:line:col, the reason and the source line. */
gboolean hlo_check_support(const HloFile *f, Diag *diag);

/* ----------------------------------------------------------------- dense.c */

/* The 'value' attribute of a partir 'constant' of type 't' for the
 * elements of 'dense' (HA_DENSE): a scalar for a splat, else the flat
 * list.  FALSE with the reason in 'why'. */
gboolean hlo_dense_value(const HloAttr *dense, const Type *t, AttrValue *out,
                         Diag *why);

/* ----------------------------------------------------------------- lower.c */

/* The Module a checked file means: the public function (@main, or the
 * only public one) with the private functions it calls inlined.  NULL
 * with a positioned diagnostic when a term does not type-check. */
Module *hlo_lower(const HloFile *f, Diag *diag);
/* "name (file:line:col)" for a location: the innermost name and the
 * first file position under it; NULL when it says neither. */
char *hlo_loc_describe(const HloFile *f, const HloLoc *l);

/* ---------------------------------------------------------------- import.c */

/* TRUE when 'text' is StableHLO (MLIR) rather than .pir: its first
 * token, after spaces and '//' comments, is one a .pir file cannot start
 * with ('module', 'func.func', '#loc', a quoted operation name). */
gboolean import_is_mlir(const char *text, gsize len);
/* Reads, checks and lowers StableHLO text; NULL with the diagnostics
 * in 'diag' (a Diag on 'src'). */
Module *import_module(const Source *src, Diag *diag);
/* The same for text named 'name', as parse_text. */
Module *import_text(const char *name, const char *text, gsize len,
                    Diag *errors);

#endif
