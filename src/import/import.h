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
 *   argminmax.c the two-input reduce of jnp.argmax and jnp.argmin
 *              recognized by the structure of its body
 *   dense.c    dense<...> element lists, splats and hex blobs -> the
 *              value of a partir 'constant'
 *   sharding.c shardings as Shardy and GSPMD write them, read into one
 *              representation (a Sharding: mesh axes per dimension),
 *              and written back; meshes ('sdy.mesh')
 *   lower.c    HloFile -> Module: each operation to terms, calls
 *              inlined, the source's value names and locations kept;
 *              the sharding annotations and check operations noted
 *   annotate.c the noted annotations judged: the program's mesh, each
 *              sharding on it, with file:line:col when one is wrong
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
  char *text;       /* as written: "tensor<4x?xf32>", "!stablehlo.token" */
  char *why;        /* when 'type' is NULL: the reason ("element type f16") */
  GPtrArray *elems; /* a tuple<...>'s element types (HloType*), or NULL */
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
  HA_OPAQUE,   /* anything else, read past: 's' holds its start as text,
                  'end' where it ends ('#sdy.sharding<...>' is read
                  again from there, sharding.c) */
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
  gsize end;        /* OPAQUE: the offset just past its text */
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
  GPtrArray *meshes;   /* HloOp*: the module's 'sdy.mesh' operations */
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
/* The value of 'key' in dictionary 'dict' (HA_DICT; may be NULL). */
const HloAttr *hlo_dict_get(const HloAttr *dict, const char *key);
/* What a dense<...> of one item holds (a list, or a splat's number);
 * any other attribute itself. */
const HloAttr *hlo_dense_body(const HloAttr *a);
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

/* argminmax.c: 1 when 'reduce' is jnp.argmax's reduce of (values,
 * indices) with their two init values, -1 when it is jnp.argmin's, 0
 * otherwise; 'floats': the values are floats (the body then also keeps
 * a NaN). */
int hlo_argminmax(const HloOp *reduce, gboolean floats);
/* Whether scatter 'op''s region returns its update (x.at[i].set's). */
gboolean hlo_scatter_sets(const HloOp *op);

/* Why partir cannot import 'op' (a new string), or NULL when it can. */
char *hlo_unsupported(const HloOp *op);
/* Judges every operation of every function (and every function's
 * signature): FALSE with one diagnostic that lists each operation partir
 * cannot express, file:line:col, the reason and the source line. */
gboolean hlo_check_support(const HloFile *f, Diag *diag);
/* The operation a custom call to 'target' is (PyTorch/XLA calls
 * @mhlo.erf, @mhlo.tan ... where JAX writes chlo.erf, stablehlo.tan),
 * its name as hlo_ops.def lists it; NULL when it is none of them. */
const char *hlo_custom_call_op(const char *target);

/* ----------------------------------------------------------------- dense.c */

/* The 'value' attribute of a partir 'constant' of type 't' for the
 * elements of 'dense' (HA_DENSE): a scalar for a splat, else the flat
 * list.  FALSE with the reason in 'why'. */
gboolean hlo_dense_value(const HloAttr *dense, const Type *t, AttrValue *out,
                         Diag *why);

/* -------------------------------------------------------------- sharding.c */

/* The one representation of a sharding, whichever way it was written.
 * Shardy writes it by mesh axes ('#sdy.sharding<@mesh, [{"x"}, {"y",
 * "z"}, {}]>'); a GSPMD string ('{devices=[2,4]<=[8]}') by a grid of
 * device ids, which sharding_from_gspmd maps onto the axes of a mesh.
 * Either way a value of rank R is split along dimension d over the
 * axes dims[d].axes, major first: the first axis takes the biggest
 * steps (device coordinate i on it holds chunk i of n/size), the next
 * splits that chunk again.  Axes no dimension names replicate the value.
 * Axis names are interned, so they compare with ==. */
typedef struct ShardingDim {
  int naxes;
  const char *axes[MESH_MAX_AXES]; /* major first */
  gboolean open;                   /* '{..., ?}': propagation may split it
                                      further; closed otherwise */
  int priority;                    /* '{...}p1': 1; -1 when none written */
} ShardingDim;

typedef struct Sharding {
  int rank;
  ShardingDim dims[PARTIR_MAX_RANK];
  int nreplicated; /* 'replicated={"x"}': axes said explicitly to replicate */
  const char *replicated[MESH_MAX_AXES];
} Sharding;

/* Where a Shardy sharding finds its mesh: a name ('@mesh') or the mesh
 * written inline ('mesh<["x"=2]>'). */
typedef struct ShardingMeshRef {
  char *name; /* the symbol, or NULL for an inline mesh */
  Mesh mesh;  /* the inline mesh */
} ShardingMeshRef;

/* Text to read a sharding or a mesh from: 'len' bytes at 'text', which
 * begin at 'at' in 'src' ('exact': the bytes are the source's own, so an
 * error can point inside them; else every error points at 'at', as for
 * a string with escapes).  Errors go to 'diag' (a Diag on 'src'). */
typedef struct ShardingText {
  const Source *src;
  const char *text;
  gsize len;
  Loc at;
  gboolean exact;
  Diag *diag;
} ShardingText;

/* The text of attribute 'a' (an '#sdy...<>' or '<...>' read past as
 * HA_OPAQUE, or a string) for the readers below. */
ShardingText sharding_text_of(const Source *src, const HloAttr *a, Diag *diag);

/* Reads a Shardy sharding: '#sdy.sharding<MESH, [DIMS] [, replicated=
 * {...}]>' or the same without '#sdy.sharding' (sharding_constraint's
 * '<@mesh, [...]>').  MESH is '@name' or 'mesh<...>'; a dimension is
 * '{"x", "y"}', '{}', '{?}', '{"x", ?}', each with a priority 'p1' after
 * it.  Refused with the position: sub-axes ('"x":(1)2'), 'unreduced=',
 * an axis name partir cannot spell.  FALSE after an error. */
gboolean sharding_read_sdy(const ShardingText *t, Sharding *out,
                           ShardingMeshRef *mesh);
void sharding_mesh_ref_clear(ShardingMeshRef *m);
/* Reads a Shardy mesh: '<["x"=2, "y"=4]>' or '#sdy.mesh<...>', maybe
 * with 'device_ids=[...]'.  partir numbers a mesh's devices in order,
 * row-major over its axes: '*reordered' says when the ids list them in
 * another order (at '*reordered_at'), which the caller refuses if it
 * uses the mesh.  FALSE after an error. */
gboolean sharding_read_mesh(const ShardingText *t, Mesh *out,
                            gboolean *reordered, Loc *reordered_at);

/* A GSPMD sharding string as XLA writes it. */
typedef enum {
  GSPMD_REPLICATED, /* {replicated} */
  GSPMD_MAXIMAL,    /* {maximal device=N}: one device holds it all */
  GSPMD_MANUAL,     /* {manual}: the program handles it per device */
  GSPMD_TILED,      /* {devices=[...]...} */
} GspmdKind;

typedef struct Gspmd {
  GspmdKind kind;
  int ntile;                         /* dims of the tile grid */
  int64_t tile[PARTIR_MAX_RANK + 1]; /* devices=[a,b,...] */
  gboolean last_replicated;          /* last_tile_dim_replicate */
  int64_t *devices; /* the device of each tile, row-major over 'tile'
                       (the explicit list, or the iota expanded) */
  int64_t ndevices;
  int64_t device; /* MAXIMAL */
} Gspmd;

/* Reads a GSPMD string ('{devices=[2,1]<=[2]}', '{devices=[2,1]0,1}',
 * '{devices=[4,2]<=[2,4]T(1,0)}', '{replicated}', ...).  Tuples
 * ('{{...}, {...}}') and other forms are refused with the position.
 * FALSE after an error; gspmd_clear frees what it read. */
gboolean sharding_read_gspmd(const ShardingText *t, Gspmd *out);
void gspmd_clear(Gspmd *g);
/* The sharding 'g' means for a value of rank 'rank' on 'mesh' (devices
 * numbered row-major over its axes): for each tile dimension the mesh
 * axes whose coordinates step through it.  FALSE with the reason in
 * 'why' (a new string) when it is no split over mesh axes (the tiles
 * visit the devices in an order no choice of axes gives), when it uses
 * another number of devices than the mesh has, or when it is not tiled
 * (maximal, manual). */
gboolean sharding_from_gspmd(const Gspmd *g, const Mesh *mesh, int rank,
                             Sharding *out, char **why);

/* Writes 's' as Shardy does: '#sdy.sharding<@NAME, [{"x"}, {}]>'. */
void sharding_print_sdy(GString *out, const Sharding *s, const char *mesh);
/* Writes 's' on 'mesh' as a GSPMD string in XLA's canonical form: the
 * device grid as an iota of the mesh's axes, transposed
 * ('{devices=[4,2]<=[2,4]T(1,0)}'); the axes no dimension uses as a
 * last, replicated grid dimension; '{replicated}' when nothing is
 * split. */
void sharding_print_gspmd(GString *out, const Sharding *s, const Mesh *mesh);
/* Writes a mesh as Shardy does: '<["x"=2, "y"=4]>'. */
void sharding_print_mesh(GString *out, const Mesh *mesh);

/* ----------------------------------------------------------------- lower.c */

/* Where a sharding annotation is written. */
typedef enum {
  HLO_ON_ARG,    /* an argument of the program ('sdy.sharding' on it) */
  HLO_ON_RESULT, /* a result of the program */
  HLO_ON_VALUE,  /* any other value: a sharding_constraint, a @Sharding
                    custom call, an argument or result of a function
                    inlined */
} HloNoteSite;

/* A sharding annotation as the lowering meets it, for annotate.c. */
typedef struct HloNote {
  HloNoteSite site;
  int index;           /* ARG, RESULT: which */
  const Term *value;   /* the value it is on (ARG: the argument) */
  const HloAttr *attr; /* the sharding as written (the file's) */
  gboolean gspmd;      /* a GSPMD string ('mhlo.sharding'), else Shardy's */
  Loc loc;             /* where it is written */
} HloNote;

typedef enum {
  HLO_CHECK_EQ,        /* every element equal (floats by ==) */
  HLO_CHECK_ALMOST_EQ, /* |a - b| <= tolerance, signs and NaN alike */
  HLO_CHECK_CLOSE,     /* min_ulp <= the distance in ulps <= max_ulp */
} HloCheckKind;

/* A check of StableHLO's tests ('check.expect_eq %a, %b', 'custom_call
 * @check.expect_close(%a, %b)'): the two values it compares become
 * results of the program, 'actual' and 'expected'. */
typedef struct HloCheck {
  HloCheckKind kind;
  const char *name; /* as written: "check.expect_close" (static) */
  double tolerance;
  uint64_t min_ulp, max_ulp;
  int actual, expected;
  Loc loc;
} HloCheck;

/* What the lowering gives. */
typedef struct HloLowered {
  Module *module;
  GPtrArray *notes; /* HloNote*, in the order met */
  GArray *checks;   /* HloCheck */
} HloLowered;

/* The Module a checked file means: the public function (@main, or the
 * only public one) with the private functions it calls inlined; the
 * sharding annotations met; the checks, whose values follow the
 * function's own results.  FALSE with a positioned diagnostic when a
 * term does not type-check. */
gboolean hlo_lower(const HloFile *f, HloLowered *out, Diag *diag);
void hlo_lowered_clear(HloLowered *l);

/* unmerge.c: 'body' with every reshape that merges dimensions
 * ([seq, batch, heads * hd] -> [seq, batch * heads, hd], [seq, batch,
 * d] -> [seq * batch, d]) taken apart: the values computed from it at
 * the common refinement of the two shapes, where their operators take
 * its groups whole, so a split of an inner factor (the heads, the
 * batch) crosses it.  The same elements everywhere; 'names' (Term ->
 * name) given to the values that replace named ones.  'body' itself
 * where no reshape merges. */
const Term *hlo_unmerge(const Term *body, GHashTable *names);
/* batched.c: the indices of a gather or scatter of 'operand' with
 * dimension numbers 'g', each component that is an iota along an
 * indices dimension (torch.gather's position, concatenated with its
 * indices along index_vector_dim) made a batching dimension in 'g' and
 * dropped from them; 'indices' itself where none is; NULL with the
 * reason in 'err' where a term does not build. */
const Term *hlo_batch_iota_indices(const Type *operand, const Term *indices,
                                   GatherDims *g, Diag *err);
/* "name (file:line:col)" for a location: the innermost name and the
 * first file position under it; NULL when it says neither. */
char *hlo_loc_describe(const HloFile *f, const HloLoc *l);

/* --------------------------------------------------------------- annotate.c */

/* How to import. */
typedef struct ImportOptions {
  gboolean shardings; /* read the sharding annotations and meshes (else
                         they are left as they are: no mesh, no shardings) */
  const Mesh *mesh;   /* the mesh the caller names, or NULL: the file's
                         must be the same, and GSPMD strings map onto it */
} ImportOptions;

/* A sharding of the imported program: on which value, and how. */
typedef struct ImportedSharding {
  HloNoteSite site;
  int index;         /* ARG, RESULT */
  const Term *value; /* a term of the entry's body (ARG: the argument) */
  Sharding sharding; /* its axes in the program's mesh (size-1 axes left
                        out: they split nothing) */
  char *origin;      /* what and where, for messages: "%x (argument 0,
                        f.mlir:3:40)", "result 0 (f.mlir:3:70)", "the value
                        at f.mlir:7:10" */
} ImportedSharding;

/* A StableHLO program as imported. */
typedef struct Imported {
  Module *module;
  gboolean has_mesh;     /* 'mesh' is the program's: the file's or the one
                            given */
  gboolean mesh_in_file; /* ... and the file declares it */
  Mesh mesh;
  char *mesh_name;      /* the file's name for it ("mesh"), or NULL */
  GPtrArray *shardings; /* ImportedSharding*, in the order written */
  GArray *checks;       /* HloCheck */
} Imported;

void imported_free(Imported *im);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Imported, imported_free)

/* Judges the annotations the lowering noted ('l', of 'f'): the program's
 * mesh ('sdy.mesh', the one the shardings name; the one given must be
 * the same), each sharding read and mapped onto that mesh, its axes
 * dividing the value's dimensions.  Fills the mesh and shardings of
 * 'out'; FALSE with a positioned diagnostic at the first that partir
 * cannot express. */
gboolean hlo_annotate(const HloFile *f, const HloLowered *l,
                      const ImportOptions *o, Imported *out, Diag *diag);

/* ---------------------------------------------------------------- import.c */

/* TRUE when 'text' is StableHLO (MLIR) rather than .pir: its first
 * token, after spaces and '//' comments, is one a .pir file cannot start
 * with ('module', 'func.func', 'sdy.mesh', '#loc', a quoted operation
 * name). */
gboolean import_is_mlir(const char *text, gsize len);
/* Reads, checks, lowers StableHLO text and judges its annotations as
 * 'o' says; NULL with the diagnostics in 'diag' (a Diag on 'src'). */
Imported *import_program(const Source *src, const ImportOptions *o, Diag *diag);
/* The program alone, its shardings left as they are (a ModuleReader). */
Module *import_module(const Source *src, Diag *diag);
/* The same for text named 'name', as parse_text. */
Module *import_text(const char *name, const char *text, gsize len,
                    Diag *errors);

#endif
