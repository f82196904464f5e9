/* export.c — programs out, as StableHLO text (docs/stablehlo.md).
 *
 * Two programs can go out.  The global program (what a JAX user jits),
 * each argument and result annotated with the layout the lowering gives
 * it: Shardy's sdy.sharding with the mesh declared once, or GSPMD's
 * mhlo.sharding strings (sharding.c writes both).  Or the program one
 * device runs (spmd_lower's), its collectives StableHLO's: all_reduce and
 * reduce_scatter with their sum as a region, all_gather, all_to_all,
 * each over replica groups of device ids numbered row-major over the
 * mesh, and a device's chunk of a value it holds whole (partir's 'shard')
 * as a dynamic_slice at an offset computed from partition_id.
 *
 * The text is MLIR that mlir-opt parses without the StableHLO and Shardy
 * dialects (--allow-unregistered-dialect), and that JAX's own parser
 * verifies: a module with 'func.func public @main' in the pretty form
 * and every other operation in the generic form
 * ('"stablehlo.add"(%0, %1) : (tensor<4xf32>, tensor<4xf32>) ->
 * tensor<4xf32>'), properties in '<{...}>' sorted by name as MLIR
 * prints them.
 *
 * Statements come from the schedule (schedule.c), as the printer takes
 * them, so the exported values keep the names 'partir fmt' shows
 * (anonymous ones are numbered afresh).  StableHLO has no loops: a tile
 * or sum is unrolled, its body written once per part (a slice of a
 * part is a stablehlo.slice at that part's offset; the parts of a tile
 * are concatenated, those of a sum added in order), up to
 * EXPORT_MAX_OPS operations in all.  Each operator maps to what the
 * importer maps back to it (hlo_ops.def names the operations, one for
 * each operator it imports one to one; relu, matmul and the reductions
 * are written as JAX writes them), and where the importer would drop an
 * operation (a conversion to the same type, an identity transpose or
 * broadcast, a reduction over no dimension) nothing is written: so an
 * import of an export exports to the same text.  An operator without a
 * StableHLO form is refused, naming it.
 *
 * Constants keep partir's meaning exactly: each element is the value
 * the interpreter gives it (rounded to its type), written as the
 * shortest decimal that reads back to it; NaN and infinities as their
 * bits (a splat 'dense<0xFF800000>', else the whole constant as one hex
 * blob); constants of more than EXPORT_HEX_ELEMS elements as a hex blob
 * (little-endian, as MLIR reads it).
 */
#include "spmd/spmd.h"

#include <math.h>
#include <string.h>

#define EXPORT_MAX_OPS 1000000   /* operations one export writes */
#define EXPORT_HEX_ELEMS 64      /* larger constants are hex blobs */
#define EXPORT_MAX_DEVICES 65536 /* devices a replica group lists */

/* The StableHLO operation of each operator the importer maps one to one
 * (the first one hlo_ops.def lists for it), or NULL. */
static const char *hlo_names[OP_COUNT_];

static void hlo_names_init(void) {
  static gsize done = 0;
  if (!g_once_init_enter(&done))
    return;
  static const struct {
    const char *name;
    Op op;
  } table[] = {
#define X(name, lowering, op, arity) {name, op},
#include "import/hlo_ops.def"
#undef X
  };
  for (gsize i = 0; i < G_N_ELEMENTS(table); i++)
    if (table[i].op != OP_COUNT_ && !hlo_names[table[i].op])
      hlo_names[table[i].op] = table[i].name;
  g_once_init_leave(&done, 1);
}

static const char *const form_names[] = {"stablehlo", "stablehlo-gspmd",
                                         "stablehlo-spmd"};

const char *export_form_name(ExportForm f) { return form_names[f]; }

gboolean export_form_parse(const char *name, ExportForm *out) {
  for (int i = 0; i < (int)G_N_ELEMENTS(form_names); i++)
    if (g_strcmp0(name, form_names[i]) == 0) {
      *out = (ExportForm)i;
      return TRUE;
    }
  return FALSE;
}

/* ------------------------------------------------------------ the writer */

typedef struct Emit {
  GString *out;
  Diag *why;
  gboolean failed;
  const Mesh *mesh;  /* a device program's mesh (its collectives) */
  GHashTable *taken; /* the SSA names given (owned; values point here) */
  GHashTable *types; /* SSA name -> the text of its type (interned) */
  GHashTable *bound; /* SchedName* -> its SSA name in the current part */
  GHashTable *part;  /* binder SchedName* -> the part being written */
  GHashTable *made;  /* text -> SSA name: constants and device positions
                        written once and used again */
  int next;          /* the next number tried for an anonymous value */
  int64_t ops;       /* operations written */
  int channel;       /* the last channel handle given */
} Emit;

static gboolean efail(Emit *e, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static gboolean efail(Emit *e, const char *fmt, ...) {
  if (!e->failed) {
    va_list ap;
    va_start(ap, fmt);
    diag_vreason(e->why, fmt, ap);
    va_end(ap);
  }
  e->failed = TRUE;
  return FALSE;
}

static void emit_init(Emit *e, GString *out, const Mesh *mesh, Diag *why) {
  *e = (Emit){.out = out, .why = why, .mesh = mesh};
  e->taken = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  e->types = g_hash_table_new(g_str_hash, g_str_equal);
  e->bound = g_hash_table_new(NULL, NULL);
  e->part = g_hash_table_new(NULL, NULL);
  e->made = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
}

static void emit_clear(Emit *e) {
  g_hash_table_unref(e->made);
  g_hash_table_unref(e->part);
  g_hash_table_unref(e->bound);
  g_hash_table_unref(e->types);
  g_hash_table_unref(e->taken);
}

static const char *type_text(const Type *t) {
  g_autofree char *s = type_to_string(t);
  return g_intern_string(s);
}

/* Whether MLIR reads 'name' after '%' as a name: a letter or one of
 * "$._-" first (all digits would be a number). */
static gboolean ssa_name_ok(const char *name) {
  if (!name || !(g_ascii_isalpha(name[0]) || strchr("$._-", name[0])))
    return FALSE;
  for (const char *p = name; *p; p++)
    if (!g_ascii_isalnum(*p) && !strchr("$._-", *p))
      return FALSE;
  return TRUE;
}

/* A new SSA name of type 'type': 'base' (then base_1, base_2, ...) when
 * it is a name MLIR reads, else the next free number. */
static const char *fresh(Emit *e, const char *base, const char *type) {
  char *name = NULL;
  if (ssa_name_ok(base)) {
    name = g_strdup(base);
    for (int k = 1; g_hash_table_contains(e->taken, name); k++) {
      g_free(name);
      name = g_strdup_printf("%s_%d", base, k);
    }
  }
  while (!name) {
    name = g_strdup_printf("%d", e->next++);
    if (g_hash_table_contains(e->taken, name))
      g_clear_pointer(&name, g_free);
  }
  g_hash_table_add(e->taken, name);
  g_hash_table_insert(e->types, name, (gpointer)type);
  return name;
}

/* Writes one operation, its result named 'r' (from fresh):
 * '%r = "NAME"(operands) <{props}> (region) : (types) -> type' ('props'
 * and 'region' may be NULL).  Returns 'r', or NULL past the limit. */
static const char *emit_named(Emit *e, const char *r, const char *name, int n,
                              const char *const *operands, const char *props,
                              const char *region) {
  if (e->failed)
    return NULL;
  if (++e->ops > EXPORT_MAX_OPS) {
    efail(e,
          "the export would write more than %d operations (a tile or sum "
          "that is no mesh axis's is unrolled, its body written once per "
          "part)",
          EXPORT_MAX_OPS);
    return NULL;
  }
  g_string_append_printf(e->out, "    %%%s = \"%s\"(", r, name);
  for (int i = 0; i < n; i++)
    g_string_append_printf(e->out, "%s%%%s", i ? ", " : "", operands[i]);
  g_string_append_c(e->out, ')');
  if (props)
    g_string_append_printf(e->out, " <{%s}>", props);
  if (region)
    g_string_append_printf(e->out, " (%s)", region);
  g_string_append(e->out, " : (");
  for (int i = 0; i < n; i++)
    g_string_append_printf(
        e->out, "%s%s", i ? ", " : "",
        (const char *)g_hash_table_lookup(e->types, operands[i]));
  g_string_append_printf(e->out, ") -> %s\n",
                         (const char *)g_hash_table_lookup(e->types, r));
  return r;
}

/* emit_named with a new result of type 'type' named after 'base' (may be
 * NULL: a number). */
static const char *emit_op(Emit *e, const char *base, const char *name, int n,
                           const char *const *operands, const char *props,
                           const char *region, const char *type) {
  if (e->failed)
    return NULL;
  return emit_named(e, fresh(e, base, type), name, n, operands, props, region);
}

/* ------------------------------------------------------------- constants */

/* The bits of element 'k' as stored (dtype_storage_bytes of them). */
static guint64 element_bits(const Tensor *t, int64_t k) {
  gsize w = dtype_storage_bytes(t->type->dtype);
  const guint8 *p = (const guint8 *)t->data + (gsize)k * w;
  guint8 b8;
  guint16 b16;
  guint32 b32;
  guint64 b64;
  switch (w) {
  case 1:
    memcpy(&b8, p, 1);
    return b8;
  case 2:
    memcpy(&b16, p, 2);
    return b16;
  case 4:
    memcpy(&b32, p, 4);
    return b32;
  default:
    memcpy(&b64, p, 8);
    return b64;
  }
}

static gboolean element_finite(const Tensor *t, int64_t k) {
  return !dtype_is_float(t->type->dtype) || isfinite(tensor_get_float(t, k));
}

/* Element 'k' as MLIR writes it in a dense list: a decimal that reads
 * back to it exactly, true/false, or (NaN, infinities) its bits. */
static void append_element(GString *out, const Tensor *t, int64_t k) {
  DType dt = t->type->dtype;
  if (dt == DT_I1) {
    g_string_append(out, tensor_get_int(t, k) ? "true" : "false");
  } else if (!dtype_is_float(dt)) {
    g_string_append_printf(out, "%" G_GINT64_FORMAT, tensor_get_int(t, k));
  } else if (!element_finite(t, k)) {
    int digits = (int)dtype_storage_bytes(dt) * 2;
    g_string_append_printf(out, "0x%0*" G_GINT64_MODIFIER "X", digits,
                           element_bits(t, k));
  } else {
    /* MLIR's float literals have a '.': 2 -> 2.0, 1e+300 -> 1.0e+300 */
    g_autoptr(GString) digits = g_string_new(NULL);
    attr_append_shortest_double(digits, tensor_get_float(t, k));
    if (!strchr(digits->str, '.')) {
      const char *exp = strpbrk(digits->str, "eE");
      g_string_insert(digits, exp ? exp - digits->str : (gssize)digits->len,
                      ".0");
    }
    g_string_append_len(out, digits->str, (gssize)digits->len);
  }
}

/* The nested list of dimensions 'dim' onward, from element '*k'. */
static void append_nested(GString *out, const Tensor *t, int dim, int64_t *k) {
  if (dim == t->type->rank) {
    append_element(out, t, (*k)++);
    return;
  }
  g_string_append_c(out, '[');
  for (int64_t i = 0; i < t->type->dims[dim]; i++) {
    if (i)
      g_string_append(out, ", ");
    append_nested(out, t, dim + 1, k);
  }
  g_string_append_c(out, ']');
}

/* 'dense<...> : TYPE' for the elements of 't' (one element: a splat of
 * 'type', whatever the shape of 't'). */
static void append_dense(GString *out, const Tensor *t, const Type *type) {
  int64_t n = type_numel(t->type);
  g_string_append(out, "dense<");
  gboolean finite = TRUE;
  for (int64_t k = 0; k < n; k++)
    finite &= element_finite(t, k);
  if (n == 1) { /* types have no dimension of size 0: n >= 1 */
    append_element(out, t, 0);
  } else if (t->type->dtype != DT_I1 && (!finite || n > EXPORT_HEX_ELEMS)) {
    gsize w = dtype_storage_bytes(t->type->dtype);
    g_string_append(out, "\"0x");
    for (int64_t k = 0; k < n; k++) {
      guint64 bits = element_bits(t, k);
      for (gsize b = 0; b < w; b++) /* little-endian */
        g_string_append_printf(out, "%02X", (unsigned)(bits >> (8 * b)) & 0xFF);
    }
    g_string_append_c(out, '"');
  } else {
    int64_t k = 0;
    append_nested(out, t, 0, &k);
  }
  g_string_append(out, "> : ");
  type_print(out, type);
}

/* A constant of 'type' holding the elements of 't', written once. */
static const char *emit_constant(Emit *e, const char *base, const Tensor *t,
                                 const Type *type) {
  GString *props = g_string_new("value = ");
  append_dense(props, t, type);
  const char *done = base ? NULL : g_hash_table_lookup(e->made, props->str);
  if (done) {
    g_string_free(props, TRUE);
    return done;
  }
  const char *r = emit_op(e, base, "stablehlo.constant", 0, NULL, props->str,
                          NULL, type_text(type));
  if (r && !base)
    g_hash_table_insert(e->made, g_string_free(props, FALSE), (gpointer)r);
  else
    g_string_free(props, TRUE);
  return r;
}

/* A scalar of element type 'dt': 'f' (floats) or 'i' (integers). */
static const char *emit_scalar(Emit *e, DType dt, double f, int64_t i) {
  const Type *type = type_tensor(dt, 0, NULL);
  g_autoptr(Tensor) one = tensor_new(type);
  if (dtype_is_float(dt))
    tensor_set_float(one, 0, f);
  else
    tensor_set_int(one, 0, i);
  return emit_constant(e, NULL, one, type);
}

/* A ui32 scalar (device positions; no partir type has it). */
static const char *emit_u32(Emit *e, int64_t v) {
  g_autofree char *props =
      g_strdup_printf("value = dense<%" G_GINT64_FORMAT "> : tensor<ui32>", v);
  const char *done = g_hash_table_lookup(e->made, props);
  if (done)
    return done;
  const char *r = emit_op(e, NULL, "stablehlo.constant", 0, NULL, props, NULL,
                          "tensor<ui32>");
  if (r)
    g_hash_table_insert(e->made, g_strdup(props), (gpointer)r);
  return r;
}

/* ------------------------------------------------------------ operators */

/* Appends the integers of list attribute 'key' of 't' ("1, 0"); with
 * 'fill' >= 0, that many of 'fill' when it is absent. */
static void append_ints(GString *out, const Term *t, const char *key,
                        int fill) {
  const AttrValue *v = attrs_get(t->attrs, key);
  for (int i = 0; v && i < v->count; i++)
    g_string_append_printf(out, "%s%" G_GINT64_FORMAT, i ? ", " : "",
                           v->items[i].i);
  for (int i = 0; !v && i < fill; i++)
    g_string_append_printf(out, "%s1", i ? ", " : "");
}

/* ", KEY = array<i64: V...>" (no comma first in an empty 'out'). */
static void append_array(GString *out, const char *key, const int64_t *v,
                         int n) {
  g_string_append_printf(out, "%s%s = array<i64", out->len ? ", " : "", key);
  for (int i = 0; i < n; i++)
    g_string_append_printf(out, "%s%" G_GINT64_FORMAT, i ? ", " : ": ", v[i]);
  g_string_append_c(out, '>');
}

static int list_count(const Term *t, const char *key) {
  const AttrValue *v = attrs_get(t->attrs, key);
  return v ? v->count : 0;
}

/* The region of a reduction: '{ ^bb0(a, b): c = OP(a, b); return c }'
 * on scalars of 'dt' (a new string). */
static char *reduction_region(Emit *e, DType dt, const char *op) {
  const char *scalar = type_text(type_tensor(dt, 0, NULL));
  const char *a = fresh(e, NULL, scalar), *b = fresh(e, NULL, scalar),
             *c = fresh(e, NULL, scalar);
  return g_strdup_printf("{\n    ^bb0(%%%s: %s, %%%s: %s):\n"
                         "      %%%s = \"%s\"(%%%s, %%%s) : (%s, %s) -> %s\n"
                         "      \"stablehlo.return\"(%%%s) : (%s) -> ()\n"
                         "    }",
                         a, scalar, b, scalar, c, op, a, b, scalar, scalar,
                         scalar, c, scalar);
}

/* A reduction: stablehlo.reduce from its identity (what the
 * interpreter starts from: 0, 1, -inf or the least integer, every bit
 * set), its body the operation the importer reads back as it, as JAX
 * writes them. */
static const char *emit_reduce(Emit *e, const char *base, const Term *t,
                               const char *x) {
  static const struct {
    Op op;
    const char *body;
  } bodies[] = {
      {OP_REDUCE_SUM, "stablehlo.add"},
      {OP_REDUCE_MAX, "stablehlo.maximum"},
      {OP_REDUCE_MIN, "stablehlo.minimum"},
      {OP_REDUCE_PROD, "stablehlo.multiply"},
      {OP_REDUCE_AND, "stablehlo.and"},
      {OP_REDUCE_OR, "stablehlo.or"},
  };
  gsize k = 0;
  while (bodies[k].op != t->op)
    k++;
  DType dt = t->type->dtype;
  const char *init =
      dtype_is_float(dt)
          ? emit_scalar(e, dt, kernel_reduce_identity_float(t->op), 0)
          : emit_scalar(e, dt, 0, kernel_reduce_identity_int(t->op, dt));
  if (!init)
    return NULL;
  g_autoptr(GString) props = g_string_new("dimensions = array<i64: ");
  append_ints(props, t, "dims", 0);
  g_string_append_c(props, '>');
  const char *r = fresh(e, base, type_text(t->type)); /* before its region's */
  g_autofree char *region = reduction_region(e, dt, bodies[k].body);
  const char *ops[2] = {x, init};
  return emit_named(e, r, "stablehlo.reduce", 2, ops, props->str, region);
}

/* The dimension numbers of gather or scatter_add 't' as StableHLO's
 * nested attribute '#stablehlo.KIND<k = [..], ..., index_vector_dim =
 * n>' (empty lists left out, as MLIR prints them): the attributes carry
 * StableHLO's names already (core/gather.c). */
static void append_dimension_numbers(GString *p, const Term *t,
                                     const char *kind) {
  static const char *const keys[] = {"offset_dims",
                                     "collapsed_slice_dims",
                                     "operand_batching_dims",
                                     "start_indices_batching_dims",
                                     "start_index_map",
                                     "update_window_dims",
                                     "inserted_window_dims",
                                     "input_batching_dims",
                                     "scatter_indices_batching_dims",
                                     "scatter_dims_to_operand_dims"};
  g_string_append_printf(p, "#stablehlo.%s<", kind);
  for (gsize k = 0; k < G_N_ELEMENTS(keys); k++) {
    if (list_count(t, keys[k]) == 0)
      continue;
    g_string_append_printf(p, "%s = [", keys[k]);
    append_ints(p, t, keys[k], 0);
    g_string_append(p, "], ");
  }
  g_string_append_printf(p, "index_vector_dim = %" G_GINT64_FORMAT ">",
                         attrs_get_int(t->attrs, "index_vector_dim"));
}

static const char *bool_attr(const Term *t, const char *key) {
  const AttrValue *v = attrs_get(t->attrs, key);
  return v && v->kind == AV_SYMBOL && strcmp(v->sym, "true") == 0 ? "true"
                                                                  : "false";
}

/* gather and scatter_add, their properties as JAX writes them; scatter's
 * region the add it applies. */
static const char *emit_indexing(Emit *e, const char *base, const Term *t,
                                 const char *const *x) {
  g_autoptr(GString) p = g_string_new(NULL);
  if (t->op == OP_GATHER) {
    g_string_append(p, "dimension_numbers = ");
    append_dimension_numbers(p, t, "gather");
    g_string_append_printf(p,
                           ", indices_are_sorted = %s, slice_sizes = "
                           "array<i64",
                           bool_attr(t, "indices_are_sorted"));
    if (t->args[0]->type->rank > 0)
      g_string_append(p, ": ");
    append_ints(p, t, "slice_sizes", 0);
    g_string_append_c(p, '>');
    return emit_op(e, base, "stablehlo.gather", 2, x, p->str, NULL,
                   type_text(t->type));
  }
  g_string_printf(p, "indices_are_sorted = %s, scatter_dimension_numbers = ",
                  bool_attr(t, "indices_are_sorted"));
  append_dimension_numbers(p, t, "scatter");
  g_string_append_printf(p, ", unique_indices = %s",
                         bool_attr(t, "unique_indices"));
  const char *r = fresh(e, base, type_text(t->type)); /* before its region's */
  g_autofree char *region =
      reduction_region(e, t->type->dtype, "stablehlo.add");
  return emit_named(e, r, "stablehlo.scatter", 3, x, p->str, region);
}

/* relu(x) = max(x, 0): -0 gives +0 and NaN stays NaN, as partir's relu. */
static const char *emit_relu(Emit *e, const char *base, const Term *t,
                             const char *x) {
  const char *zero = emit_scalar(e, t->type->dtype, 0, 0);
  if (zero && t->type->rank > 0)
    zero =
        emit_op(e, NULL, "stablehlo.broadcast_in_dim", 1, &zero,
                "broadcast_dimensions = array<i64>", NULL, type_text(t->type));
  if (!zero)
    return NULL;
  const char *ops[2] = {x, zero};
  return emit_op(e, base, "stablehlo.maximum", 2, ops, NULL, NULL,
                 type_text(t->type));
}

static const char *emit_dot(Emit *e, const char *base, const Term *t,
                            const char *const *x) {
  g_autoptr(GString) p =
      g_string_new("dot_dimension_numbers = #stablehlo.dot<");
  static const char *const keys[][2] = {
      {"lhs_batch", "lhs_batching_dimensions"},
      {"rhs_batch", "rhs_batching_dimensions"},
      {"lhs_contract", "lhs_contracting_dimensions"},
      {"rhs_contract", "rhs_contracting_dimensions"}};
  gboolean first = TRUE;
  for (gsize k = 0; k < G_N_ELEMENTS(keys); k++) {
    if (t->op == OP_MATMUL) { /* [m,k] x [k,n] */
      if (k >= 2)
        g_string_append_printf(p, "%s%s = [%d]", first ? "" : ", ", keys[k][1],
                               k == 2 ? 1 : 0);
      first &= k < 2;
      continue;
    }
    if (list_count(t, keys[k][0]) == 0)
      continue;
    g_string_append_printf(p, "%s%s = [", first ? "" : ", ", keys[k][1]);
    append_ints(p, t, keys[k][0], 0);
    g_string_append_c(p, ']');
    first = FALSE;
  }
  g_string_append_c(p, '>');
  return emit_op(e, base, "stablehlo.dot_general", 2, x, p->str, NULL,
                 type_text(t->type));
}

static const char *emit_compare(Emit *e, const char *base, const Term *t,
                                const char *const *x) {
  DType dt = t->args[0]->type->dtype;
  /* XLA's verifier wants the type's own kind: ui8, ui32 (torch-xla's
   * masks, a lookup's indices) compare UNSIGNED */
  const char *kind = dtype_is_float(dt)                     ? "FLOAT"
                     : dt == DT_I1 || dtype_is_unsigned(dt) ? "UNSIGNED"
                                                            : "SIGNED";
  g_autofree char *props = g_strdup_printf(
      "compare_type = #stablehlo<comparison_type %s>, comparison_direction = "
      "#stablehlo<comparison_direction %s>",
      kind, attrs_get(t->attrs, "direction")->sym);
  return emit_op(e, base, "stablehlo.compare", 2, x, props, NULL,
                 type_text(t->type));
}

/* Whether transpose or broadcast_in_dim 't' leaves its operand as it is
 * (the importer reads those as the operand itself). */
static gboolean is_identity(const Term *t, const char *key) {
  if (t->type != t->args[0]->type)
    return FALSE;
  const AttrValue *v = attrs_get(t->attrs, key);
  for (int i = 0; v && i < v->count; i++)
    if (v->items[i].i != i)
      return FALSE;
  return TRUE;
}

/* ------------------------------------------------------------ collectives */

/* The axes attribute of collective 't'. */
static int collective_axes(const Term *t, const char **axes) {
  const AttrValue *v = attrs_get(t->attrs, "axes");
  for (int i = 0; i < v->count; i++)
    axes[i] = v->items[i].sym;
  return v->count;
}

/* 'channel_handle = ...' (a new channel for each collective). */
static void append_channel(Emit *e, GString *p) {
  g_string_append_printf(
      p, "channel_handle = #stablehlo.channel_handle<handle = %d, type = 1>",
      ++e->channel);
}

/* 'replica_groups = ...' of collective 't'. */
static gboolean append_groups(Emit *e, GString *p, const Term *t) {
  const char *axes[MESH_MAX_AXES];
  int n = collective_axes(t, axes);
  g_string_append(p, "replica_groups = ");
  if (!e->mesh || !sharding_replica_groups(p, e->mesh, axes, n))
    return efail(e, "'%s' is over an axis the program's mesh lacks",
                 op_name(t->op));
  return TRUE;
}

/* This device's position among the devices of 'axes' (row-major in
 * their order), from stablehlo.partition_id: the device id is row-major
 * over the mesh. */
static const char *device_position(Emit *e, const char *const *axes, int n) {
  GString *key = g_string_new("position");
  for (int k = 0; k < n; k++)
    g_string_append_printf(key, " %s", axes[k]);
  const char *done = g_hash_table_lookup(e->made, key->str);
  if (done) {
    g_string_free(key, TRUE);
    return done;
  }
  const char *u32 = "tensor<ui32>";
  const char *pid = g_hash_table_lookup(e->made, "partition_id");
  if (!pid) {
    pid = emit_op(e, NULL, "stablehlo.partition_id", 0, NULL, NULL, NULL, u32);
    if (pid)
      g_hash_table_insert(e->made, g_strdup("partition_id"), (gpointer)pid);
  }
  const char *pos = NULL;
  for (int k = 0; k < n && pid; k++) {
    int a = mesh_axis_index(e->mesh, axes[k]);
    int64_t stride = 1;
    for (int b = a + 1; b < e->mesh->naxes; b++)
      stride *= e->mesh->sizes[b];
    int64_t size = e->mesh->sizes[a];
    const char *q[2] = {pid, emit_u32(e, stride)};
    const char *r[2] = {
        emit_op(e, NULL, "stablehlo.divide", 2, q, NULL, NULL, u32),
        emit_u32(e, size)};
    const char *coord =
        emit_op(e, NULL, "stablehlo.remainder", 2, r, NULL, NULL, u32);
    if (pos) {
      const char *m[2] = {pos, r[1]};
      const char *s[2] = {
          emit_op(e, NULL, "stablehlo.multiply", 2, m, NULL, NULL, u32), coord};
      coord = emit_op(e, NULL, "stablehlo.add", 2, s, NULL, NULL, u32);
    }
    pos = coord;
  }
  if (pos)
    g_hash_table_insert(e->made, g_string_free(key, FALSE), (gpointer)pos);
  else
    g_string_free(key, TRUE);
  return pos;
}

/* shard: this device's chunk along 'dim' of a value it holds whole. */
static const char *emit_shard(Emit *e, const char *base, const Term *t,
                              const char *x) {
  const char *axes[MESH_MAX_AXES];
  int n = collective_axes(t, axes);
  for (int k = 0; k < n; k++)
    if (!e->mesh || mesh_axis_index(e->mesh, axes[k]) < 0) {
      efail(e, "'shard' is over an axis the program's mesh lacks");
      return NULL;
    }
  int dim = (int)attrs_get_int(t->attrs, "dim");
  const char *pos = device_position(e, axes, n);
  const char *m[2] = {pos, emit_u32(e, t->type->dims[dim])};
  const char *offset = pos ? emit_op(e, NULL, "stablehlo.multiply", 2, m, NULL,
                                     NULL, "tensor<ui32>")
                           : NULL;
  const char *zero = emit_u32(e, 0);
  if (!offset || !zero)
    return NULL;
  const char *ops[PARTIR_MAX_RANK + 1] = {x};
  g_autoptr(GString) p = g_string_new("slice_sizes = array<i64: ");
  for (int i = 0; i < t->type->rank; i++) {
    ops[i + 1] = i == dim ? offset : zero;
    g_string_append_printf(p, "%s%" G_GINT64_FORMAT, i ? ", " : "",
                           t->type->dims[i]);
  }
  g_string_append_c(p, '>');
  return emit_op(e, base, "stablehlo.dynamic_slice", t->type->rank + 1, ops,
                 p->str, NULL, type_text(t->type));
}

/* A collective, its properties in the order MLIR sorts them. */
static const char *emit_collective(Emit *e, const char *base, const Term *t,
                                   const char *x) {
  g_autoptr(GString) p = g_string_new(NULL);
  const char *name = NULL;
  const char *r = fresh(e, base, type_text(t->type)); /* before its region's */
  g_autofree char *region = NULL;
  switch (t->op) {
  case OP_ALL_REDUCE:
    name = "stablehlo.all_reduce";
    append_channel(e, p);
    g_string_append(p, ", ");
    append_groups(e, p, t);
    g_string_append(p, ", use_global_device_ids");
    region = reduction_region(e, t->type->dtype, "stablehlo.add");
    break;
  case OP_REDUCE_SCATTER:
    name = "stablehlo.reduce_scatter";
    append_channel(e, p);
    g_string_append(p, ", ");
    append_groups(e, p, t);
    g_string_append_printf(p,
                           ", scatter_dimension = %" G_GINT64_FORMAT
                           " : i64, use_global_device_ids",
                           attrs_get_int(t->attrs, "dim"));
    region = reduction_region(e, t->type->dtype, "stablehlo.add");
    break;
  case OP_ALL_GATHER:
    name = "stablehlo.all_gather";
    g_string_append_printf(p, "all_gather_dim = %" G_GINT64_FORMAT " : i64, ",
                           attrs_get_int(t->attrs, "dim"));
    append_channel(e, p);
    g_string_append(p, ", ");
    append_groups(e, p, t);
    g_string_append(p, ", use_global_device_ids");
    break;
  case OP_ALL_TO_ALL:
    name = "stablehlo.all_to_all";
    append_channel(e, p);
    g_string_append_printf(p,
                           ", concat_dimension = %" G_GINT64_FORMAT " : i64, ",
                           attrs_get_int(t->attrs, "concat_dim"));
    append_groups(e, p, t);
    g_string_append_printf(
        p,
        ", split_count = %" G_GINT64_FORMAT
        " : i64, split_dimension = %" G_GINT64_FORMAT " : i64",
        attrs_get_int(t->attrs, "size"), attrs_get_int(t->attrs, "split_dim"));
    break;
  default:
    g_assert_not_reached();
  }
  return emit_named(e, r, name, 1, &x, p->str, region);
}

/* stablehlo.slice of 'x' (of type 'xt') from 'start' to 'limit', stride 1,
 * to 'type'. */
static const char *emit_slice(Emit *e, const char *base, const char *x,
                              const Type *xt, const int64_t *start,
                              const int64_t *limit, const Type *type) {
  int64_t ones[PARTIR_MAX_RANK];
  for (int i = 0; i < xt->rank; i++)
    ones[i] = 1;
  g_autoptr(GString) p = g_string_new(NULL);
  append_array(p, "limit_indices", limit, xt->rank);
  append_array(p, "start_indices", start, xt->rank);
  append_array(p, "strides", ones, xt->rank);
  return emit_op(e, base, "stablehlo.slice", 1, &x, p->str, NULL,
                 type_text(type));
}

/* A collective or shard of padded chunks (docs/spmd.md, "Uneven
 * sizes"), which StableHLO's collectives do not pad: a shard or
 * reduce_scatter of a dimension the devices do not divide takes its
 * operand padded with zeros to whole chunks, and an all_gather with a
 * 'length' gathers the padded chunks and keeps the first 'length'.
 * Others as they are. */
static const char *emit_padded(Emit *e, const char *base, const Term *t,
                               const char *x) {
  const Term *in = t->args[0];
  if (t->op == OP_ALL_REDUCE || t->op == OP_ALL_TO_ALL)
    return emit_collective(e, base, t, x);
  int d = (int)attrs_get_int(t->attrs, "dim");
  int64_t size = attrs_get_int(t->attrs, "size");
  g_autoptr(Diag) err = diag_new(NULL);
  if (t->op == OP_ALL_GATHER) {
    const AttrValue *written = attrs_get(t->attrs, "length");
    int64_t length = written ? written->i : 0;
    if (length <= 0 || length == in->type->dims[d] * size)
      return emit_collective(e, base, t, x);
    /* the gather of the padded chunks, then its first 'length' */
    const char *axes[MESH_MAX_AXES];
    int n = collective_axes(t, axes);
    const Term *whole = e->mesh ? spmd_collective(e->mesh, OP_ALL_GATHER, in,
                                                  axes, n, d, 0, 0, err)
                                : NULL;
    const char *g = whole ? emit_collective(e, NULL, whole, x) : NULL;
    if (!g)
      return efail(e, "an all_gather of padded chunks: %s", diag_text(err)),
             NULL;
    int64_t start[PARTIR_MAX_RANK] = {0};
    return emit_slice(e, base, g, whole->type, start, t->type->dims, t->type);
  }
  int64_t high = t->type->dims[d] * size - in->type->dims[d]; /* chunks */
  if (high <= 0)
    return t->op == OP_SHARD ? emit_shard(e, base, t, x)
                             : emit_collective(e, base, t, x);
  /* the operand padded with zeros at the end of 'd' to whole chunks */
  int64_t dims[PARTIR_MAX_RANK];
  memcpy(dims, in->type->dims, sizeof(int64_t) * (gsize)in->type->rank);
  dims[d] += high;
  const Type *padded_type = type_tensor(in->type->dtype, in->type->rank, dims);
  int64_t high_at[PARTIR_MAX_RANK] = {0}, zeros[PARTIR_MAX_RANK] = {0};
  high_at[d] = high;
  g_autoptr(GString) p = g_string_new(NULL);
  append_array(p, "edge_padding_high", high_at, in->type->rank);
  append_array(p, "edge_padding_low", zeros, in->type->rank);
  append_array(p, "interior_padding", zeros, in->type->rank);
  const char *ops[2] = {x, emit_scalar(e, in->type->dtype, 0, 0)};
  const char *padded = ops[1] ? emit_op(e, NULL, "stablehlo.pad", 2, ops,
                                        p->str, NULL, type_text(padded_type))
                              : NULL;
  /* the same collective of the padded operand: the same result type */
  const Term *arg = term_arg(0, padded_type);
  const Term *again =
      padded ? term_op(t->op, 1, &arg, t->attrs, NULL, err) : NULL;
  if (!again || again->type != t->type)
    return efail(e, "'%s' of padded chunks: %s", op_name(t->op),
                 *diag_text(err) ? diag_text(err) : "its type differs"),
           NULL;
  return t->op == OP_SHARD ? emit_shard(e, base, again, padded)
                           : emit_collective(e, base, again, padded);
}

/* --------------------------------------------------------------- values */

/* Operator application 't' on operands 'x': its StableHLO operations;
 * the value's name, or NULL after failing. */
static const char *emit_operator(Emit *e, const char *base, const Term *t,
                                 const char *const *x) {
  const char *type = type_text(t->type);
  g_autoptr(GString) p = g_string_new(NULL);
  switch (t->op) {
  case OP_RELU:
    return emit_relu(e, base, t, x[0]);
  case OP_COMPARE:
    return emit_compare(e, base, t, x);
  case OP_MATMUL:
  case OP_DOT_GENERAL:
    return emit_dot(e, base, t, x);
  case OP_REDUCE_SUM:
  case OP_REDUCE_MAX:
  case OP_REDUCE_MIN:
  case OP_REDUCE_PROD:
  case OP_REDUCE_AND:
  case OP_REDUCE_OR:
    if (list_count(t, "dims") == 0) /* nothing reduced */
      return x[0];
    return emit_reduce(e, base, t, x[0]);
  case OP_CONSTANT: {
    g_autoptr(Tensor) value = kernel_constant_splat(t);
    if (!value)
      value = kernel_eval(t, NULL);
    return emit_constant(e, base, value, t->type);
  }
  case OP_GATHER:
  case OP_SCATTER_ADD:
    return emit_indexing(e, base, t, x);
  case OP_DYNAMIC_SLICE:
    g_string_append(p, "slice_sizes = array<i64");
    if (t->type->rank > 0)
      g_string_append(p, ": ");
    append_ints(p, t, "slice_sizes", 0);
    g_string_append_c(p, '>');
    break;
  case OP_IOTA:
    g_string_printf(p, "iota_dimension = %" G_GINT64_FORMAT " : i64",
                    attrs_get_int(t->attrs, "dim"));
    break;
  case OP_CONVERT:
  case OP_RESHAPE:
    if (t->type == t->args[0]->type)
      return x[0];
    break;
  case OP_BROADCAST_IN_DIM:
    if (is_identity(t, "dims"))
      return x[0];
    g_string_append(p, "broadcast_dimensions = array<i64");
    if (t->args[0]->type->rank > 0)
      g_string_append(p, ": ");
    append_ints(p, t, "dims", 0);
    g_string_append_c(p, '>');
    break;
  case OP_TRANSPOSE:
    if (is_identity(t, "permutation"))
      return x[0];
    g_string_append(p, "permutation = array<i64: ");
    append_ints(p, t, "permutation", 0);
    g_string_append_c(p, '>');
    break;
  case OP_CONCATENATE:
    g_string_printf(p, "dimension = %" G_GINT64_FORMAT " : i64",
                    attrs_get_int(t->attrs, "dim"));
    break;
  case OP_SLICE: {
    int rank = t->args[0]->type->rank;
    g_string_append(p, "limit_indices = array<i64: ");
    append_ints(p, t, "limit", 0);
    g_string_append(p, ">, start_indices = array<i64: ");
    append_ints(p, t, "start", 0);
    g_string_append(p, ">, strides = array<i64: ");
    append_ints(p, t, "strides", rank);
    g_string_append_c(p, '>');
    break;
  }
  case OP_PAD: {
    int rank = t->type->rank;
    if (rank == 0) /* nothing to pad */
      return x[0];
    g_string_append(p, "edge_padding_high = array<i64: ");
    append_ints(p, t, "high", 0);
    g_string_append(p, ">, edge_padding_low = array<i64: ");
    append_ints(p, t, "low", 0);
    g_string_append(p, ">, interior_padding = array<i64: ");
    if (attrs_get(t->attrs, "interior"))
      append_ints(p, t, "interior", 0);
    else /* none written: none */
      for (int i = 0; i < rank; i++)
        g_string_append(p, i ? ", 0" : "0");
    g_string_append_c(p, '>');
    break;
  }
  case OP_ALL_REDUCE:
  case OP_ALL_GATHER:
  case OP_REDUCE_SCATTER:
  case OP_ALL_TO_ALL:
  case OP_SHARD:
    return emit_padded(e, base, t, x[0]);
  default:
    break;
  }
  const char *name = hlo_names[t->op];
  /* an operator with attributes this file does not know cannot be
   * written as the bare operation */
  if (!name || (p->len == 0 && t->attrs->count > 0)) {
    efail(e, "'%s' has no StableHLO form partir can write", op_name(t->op));
    return NULL;
  }
  return emit_op(e, base, name, t->nargs, x, p->len ? p->str : NULL, NULL,
                 type);
}

/* slice d x[r]: part r of 'x' along d, r a part of a loop being unrolled. */
static const char *emit_part(Emit *e, const char *base, const Term *t,
                             const char *x, int64_t part) {
  const Type *xt = t->args[0]->type;
  int d = t->index;
  int64_t width = t->type->dims[d];
  int64_t start[PARTIR_MAX_RANK] = {0}, limit[PARTIR_MAX_RANK];
  memcpy(limit, xt->dims, sizeof(int64_t) * (gsize)xt->rank);
  start[d] = part * width;
  limit[d] = (part + 1) * width;
  return emit_slice(e, base, x, xt, start, limit, t->type);
}

static void emit_region(Emit *e, const SchedRegion *r);

/* A tile or sum, unrolled: its body once per part, the parts
 * concatenated along the tile's dimension or added in order. */
static const char *emit_loop(Emit *e, const char *base, const SchedStmt *s) {
  const Term *t = s->t;
  int64_t parts = type_range_parts(t->range);
  if (!type_range_even(t->range)) {
    efail(e,
          "a loop over the uneven range<%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
          ">: not exported yet",
          t->range->n, t->range->w);
    return NULL;
  }
  if (parts > EXPORT_MAX_OPS) {
    efail(e,
          "a loop of %" G_GINT64_FORMAT " parts: more than the %d "
          "operations an export writes",
          parts, EXPORT_MAX_OPS);
    return NULL;
  }
  g_autofree const char **values = g_new0(const char *, (gsize)parts);
  for (int64_t k = 0; k < parts && !e->failed; k++) {
    g_hash_table_insert(e->part, (gpointer)&s->child->binder,
                        GINT_TO_POINTER((int)k));
    emit_region(e, s->child);
    values[k] = g_hash_table_lookup(e->bound, s->child->yield);
  }
  if (e->failed)
    return NULL;
  const char *type = type_text(t->type);
  if (t->kind == TM_TILE) {
    if (parts == 1)
      return values[0];
    g_autofree char *p = g_strdup_printf("dimension = %d : i64", t->index);
    return emit_op(e, base, "stablehlo.concatenate", (int)parts, values, p,
                   NULL, type);
  }
  const char *acc = values[0];
  for (int64_t k = 1; k < parts && acc; k++) {
    const char *pair[2] = {acc, values[k]};
    acc = emit_op(e, k + 1 == parts ? base : NULL, "stablehlo.add", 2, pair,
                  NULL, NULL, type);
  }
  return acc;
}

static void emit_stmt(Emit *e, const SchedStmt *s) {
  const Term *t = s->t;
  const char *base = s->n.user;
  g_autofree const char **ops = g_new(const char *, (gsize)MAX(s->nops, 1));
  for (int i = 0; i < s->nops; i++)
    ops[i] = g_hash_table_lookup(e->bound, s->ops[i]);
  const char *v = NULL;
  switch (t->kind) {
  case TM_OP:
    v = emit_operator(e, base, t, ops);
    break;
  case TM_SLICE:
    v = emit_part(e, base, t, ops[0],
                  GPOINTER_TO_INT(g_hash_table_lookup(e->part, s->ops[1])));
    break;
  case TM_TILE:
  case TM_SUM:
    v = emit_loop(e, base, s);
    break;
  default:
    g_assert_not_reached();
  }
  if (v)
    g_hash_table_insert(e->bound, (gpointer)&s->n, (gpointer)v);
}

static void emit_region(Emit *e, const SchedRegion *r) {
  for (guint i = 0; i < r->stmts->len && !e->failed; i++)
    emit_stmt(e, g_ptr_array_index(r->stmts, i));
}

/* ------------------------------------------------------------ functions */

/* What each argument or result carries: a global program's the sharding
 * its layout gives it; a device program's "{manual}", so that XLA, which
 * partitions a program of several partitions, leaves it as it is. */
typedef struct Annotate {
  ExportForm form;
  const SpmdInfo *layouts; /* global programs: the lowering's layouts */
} Annotate;

/* The annotation of argument 'i' (or, 'result' set, result 'i'); an
 * argument that result 'alias' (>= 0) updates is donated to it, as jit
 * writes a donated argument ('tf.aliasing_output', Func.result_updates). */
static gboolean append_annotation(Emit *e, const Annotate *an, gboolean result,
                                  int i, int alias) {
  g_string_append(e->out, " {");
  if (alias >= 0)
    g_string_append_printf(e->out, "tf.aliasing_output = %d : i32, ", alias);
  if (an->form == EXPORT_DEVICE) {
    g_string_append(e->out, "mhlo.sharding = \"{manual}\"}");
    return TRUE;
  }
  const Dist *d =
      result ? &an->layouts->result_dists[i] : &an->layouts->arg_dists[i];
  if (an->form == EXPORT_SDY) {
    g_string_append(e->out, "sdy.sharding = ");
    sharding_sdy(e->out, d, "mesh");
    g_string_append_c(e->out, '}');
    return TRUE;
  }
  g_string_append(e->out, "mhlo.sharding = \"");
  if (!sharding_gspmd(e->out, d, &an->layouts->mesh))
    return efail(e, "a layout names an axis the mesh lacks");
  g_string_append(e->out, "\"}");
  return TRUE;
}

/* The result that updates argument 'i' of 'f', or -1. */
static int result_updating(const Func *f, int i) {
  for (int r = 0; f->result_updates && r < f->nresults; r++)
    if (f->result_updates[r] == i)
      return r;
  return -1;
}

/* 'func.func public @main' of 'f' (names from 'm'), its body unrolled. */
static gboolean emit_func(Emit *e, const Module *m, const Func *f,
                          const Annotate *an) {
  g_autoptr(Schedule) sc = schedule_new(m, f);
  g_string_append(e->out, "  func.func public @main(");
  for (int i = 0; i < f->nargs; i++) {
    const char *type = type_text(f->arg_types[i]);
    g_autofree char *arg = g_strdup_printf("arg%d", i); /* for a number */
    const char *name =
        fresh(e, ssa_name_ok(f->arg_names[i]) ? f->arg_names[i] : arg, type);
    g_hash_table_insert(e->bound, &sc->args[i], (gpointer)name);
    g_string_append_printf(e->out, "%s%%%s: %s", i ? ", " : "", name, type);
    if (!append_annotation(e, an, FALSE, i, result_updating(f, i)))
      return FALSE;
  }
  g_string_append(e->out, ") -> (");
  for (int i = 0; i < f->nresults; i++) {
    g_string_append_printf(e->out, "%s%s", i ? ", " : "",
                           type_text(f->result_types[i]));
    if (!append_annotation(e, an, TRUE, i, -1))
      return FALSE;
  }
  g_string_append(e->out, ") {\n");
  emit_region(e, sc->top);
  if (e->failed)
    return FALSE;
  g_string_append(e->out, "    \"func.return\"(");
  for (int i = 0; i < f->nresults; i++)
    g_string_append_printf(
        e->out, "%s%%%s", i ? ", " : "",
        (const char *)g_hash_table_lookup(e->bound, sc->results[i]));
  g_string_append(e->out, ") : (");
  for (int i = 0; i < f->nresults; i++)
    g_string_append_printf(e->out, "%s%s", i ? ", " : "",
                           type_text(f->result_types[i]));
  g_string_append(e->out, ") -> ()\n  }\n");
  return TRUE;
}

/* Ends the module being written into 'text' (taken) by 'e' and, when
 * everything before went well ('ok'), appends it to 'out': an export
 * that fails writes nothing. */
static gboolean close_module(GString *out, GString *text, Emit *e,
                             gboolean ok) {
  emit_clear(e);
  if (ok) {
    g_string_append(text, "}\n");
    g_string_append_len(out, text->str, (gssize)text->len);
  }
  g_string_free(text, TRUE);
  return ok;
}

/* 'module attributes {...} {': the devices XLA partitions over. */
static gboolean module_open(GString *out, const Mesh *mesh, Diag *why) {
  int64_t n = mesh_devices(mesh);
  if (n > G_MAXINT32) {
    diag_reason(why,
                "a mesh of %" G_GINT64_FORMAT " devices: XLA counts "
                "partitions in 32 bits",
                n);
    return FALSE;
  }
  g_string_append_printf(out,
                         "module attributes {mhlo.num_partitions = "
                         "%" G_GINT64_FORMAT
                         " : i32, mhlo.num_replicas = 1 : i32} {\n",
                         n);
  return TRUE;
}

gboolean export_global(GString *out, const Module *m, const Func *g,
                       const Func *spmd, ExportForm form, Diag *why) {
  g_assert(form != EXPORT_DEVICE && spmd->spmd && !g->spmd);
  g_assert(g->nargs == spmd->nargs && g->nresults == spmd->nresults);
  hlo_names_init();
  const Mesh *mesh = &spmd->spmd->mesh;
  GString *text = g_string_new(NULL);
  Emit e;
  emit_init(&e, text, NULL, why);
  gboolean ok = module_open(text, mesh, why);
  if (ok && form == EXPORT_SDY) {
    g_string_append(text, "  \"sdy.mesh\"() <{mesh = ");
    sharding_sdy_mesh(text, mesh);
    g_string_append(text, ", sym_name = \"mesh\"}> : () -> ()\n");
  }
  Annotate an = {form, spmd->spmd};
  return close_module(out, text, &e, ok && emit_func(&e, m, g, &an));
}

/* A comment per argument and result of device program 'f': the global
 * value it is part of and how it lies on the mesh. */
static void device_comments(GString *out, const Func *f) {
  const SpmdInfo *sp = f->spmd;
  g_autofree char *mesh = mesh_to_string(&sp->mesh);
  g_string_append_printf(out,
                         "  // The program each device of the mesh %s runs; "
                         "device ids are row-major\n"
                         "  // over the mesh.  Each argument and result is "
                         "the device's part of:\n",
                         *mesh ? mesh : "(none)");
  for (int k = 0; k < f->nargs + f->nresults; k++) {
    gboolean arg = k < f->nargs;
    int i = arg ? k : k - f->nargs;
    const Dist *d = arg ? &sp->arg_dists[i] : &sp->result_dists[i];
    const Type *local = arg ? f->arg_types[i] : f->result_types[i];
    const Type *global = local;
    for (int j = 0; j < d->rank; j++)
      global = type_with_dim(global, j,
                             global->dims[j] * dist_parts(d, &sp->mesh, j));
    if (arg)
      g_string_append_printf(out, "  //   %%%s: ", f->arg_names[i]);
    else
      g_string_append_printf(out, "  //   result %d: ", i);
    type_print(out, global);
    g_string_append_c(out, ' ');
    sharding_sdy(out, d, "mesh");
    g_string_append_c(out, '\n');
  }
}

gboolean export_device(GString *out, const Module *m, const Func *spmd,
                       Diag *why) {
  g_assert(spmd->spmd);
  hlo_names_init();
  const Mesh *mesh = &spmd->spmd->mesh;
  if (mesh_devices(mesh) > EXPORT_MAX_DEVICES) {
    diag_reason(why,
                "a mesh of %" G_GINT64_FORMAT " devices: a device program "
                "lists its collectives' devices, at most %d",
                mesh_devices(mesh), EXPORT_MAX_DEVICES);
    return FALSE;
  }
  GString *text = g_string_new(NULL);
  Emit e;
  emit_init(&e, text, mesh, why);
  gboolean ok = module_open(text, mesh, why);
  if (ok)
    device_comments(text, spmd);
  Annotate an = {EXPORT_DEVICE, NULL};
  return close_module(out, text, &e, ok && emit_func(&e, m, spmd, &an));
}
