/* pretty.c — the pretty forms of the operations partir can express.
 *
 * MLIR lets each operation print itself: JAX writes
 *
 *   %2 = stablehlo.maximum %0, %1 : tensor<4x8xf32>
 *   %3 = stablehlo.dot_general %2, %w, batching_dims = [0] x [0],
 *        contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT]
 *        : (tensor<2x4x8xf32>, tensor<2x8x3xf32>) -> tensor<2x4x3xf32>
 *   %4 = stablehlo.reduce(%3 init: %c) applies stablehlo.add
 *        across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> ...
 *
 * Most of these share one shape, read by read_common: operands, then
 * 'keyword = value' items, an attribute dictionary, ':' and the types
 * (one type for all, a list, or a function type).  The others (compare,
 * constant, reduce, convolution, top_k, get_tuple_element, call,
 * custom_call, return; Shardy's
 * mesh and sharding constraint; the checks of StableHLO's tests) have readers
 * of their own.  Each fills the HloOp the generic form would give: the generic
 * attribute names (broadcast_dimensions, lhs_contracting_dimensions, ...)
 * and a type per operand and result.  An operation whose pretty form is
 * not known here is read past (op->opaque), to be listed by support.c.
 */
#include "import/import.h"

#include <string.h>

#define TOK (&r->c.tok)

static HloAttr *int_list(Loc at) {
  HloAttr *a = hlo_attr_new(HA_LIST, at);
  a->items = g_ptr_array_new_with_free_func((GDestroyNotify)hlo_attr_free);
  return a;
}

static void list_add_int(HloAttr *list, int64_t v, Loc at) {
  HloAttr *x = hlo_attr_new(HA_INT, at);
  x->i = v;
  g_ptr_array_add(list->items, x);
}

/* Renames attribute 'from' of 'op' to 'to' (a pretty keyword to the
 * generic form's name). */
static void rename_attr(HloOp *op, const char *from, const char *to) {
  for (guint i = 0; i < op->attr_keys->len; i++)
    if (strcmp(g_ptr_array_index(op->attr_keys, i), from) == 0) {
      g_free(op->attr_keys->pdata[i]);
      op->attr_keys->pdata[i] = g_strdup(to);
    }
}

/* '[0:2, 1:5:2]' after slice's operand: start, limit, strides. */
static gboolean read_slice_ranges(HloReader *r, HloOp *op) {
  Loc at = TOK->loc;
  hlo_next(r); /* '[' */
  HloAttr *lists[3] = {int_list(at), int_list(at), int_list(at)};
  hlo_op_add_attr(op, "start_indices", lists[0]);
  hlo_op_add_attr(op, "limit_indices", lists[1]);
  hlo_op_add_attr(op, "strides", lists[2]);
  if (hlo_accept(r, ']'))
    return TRUE;
  do {
    int64_t v[3] = {0, 0, 1};
    for (int k = 0; k < 3; k++) {
      if (k == 2 && !hlo_is_punct(r, ':'))
        break;
      if (k > 0 && !cursor_punct(&r->c, ':'))
        return FALSE;
      if (TOK->kind != TK_INT)
        return cursor_expected(&r->c, "an index");
      v[k] = TOK->i;
      hlo_next(r);
    }
    for (int k = 0; k < 3; k++)
      list_add_int(lists[k], v[k], at);
  } while (hlo_accept(r, ','));
  return cursor_punct(&r->c, ']');
}

/* 'key = value' items after the operands, until ':' or '{'.  A list
 * followed by 'x' and another list ('contracting_dims = [1] x [0]')
 * gives the generic form's lhs_ and rhs_ pair. */
static gboolean read_keywords(HloReader *r, HloOp *op) {
  while (!hlo_failed(r) && TOK->kind == TK_IDENT) {
    g_autofree char *key = token_name(TOK);
    hlo_next(r);
    if (!cursor_punct(&r->c, '='))
      return FALSE;
    r->bare_numbers = TRUE;
    HloAttr *v = hlo_read_attr(r);
    r->bare_numbers = FALSE;
    if (!v)
      return FALSE;
    if (token_is(TOK, "x")) {
      hlo_next(r);
      HloAttr *rhs = hlo_read_attr(r);
      if (!rhs) {
        hlo_attr_free(v);
        return FALSE;
      }
      /* batching_dims -> lhs/rhs_batching_dimensions */
      const char *what = strcmp(key, "batching_dims") == 0      ? "batching"
                         : strcmp(key, "contracting_dims") == 0 ? "contracting"
                                                                : key;
      g_autofree char *l = g_strdup_printf("lhs_%s_dimensions", what);
      g_autofree char *rr = g_strdup_printf("rhs_%s_dimensions", what);
      hlo_op_add_attr(op, l, v);
      hlo_op_add_attr(op, rr, rhs);
    } else {
      hlo_op_add_attr(op, key, v);
    }
    if (!hlo_accept(r, ','))
      break;
  }
  return !hlo_failed(r);
}

/* ':' and the types: a function type, or a list of types (one type for
 * every operand and the result; 'select' writes the predicate's and the
 * others'; 'return' and 'optimization_barrier' one per operand). */
static gboolean read_types(HloReader *r, HloOp *op, gboolean results_only) {
  if (!cursor_punct(&r->c, ':'))
    return FALSE;
  if (hlo_is_punct(r, '('))
    return hlo_read_function_type(r, op);
  g_autoptr(GPtrArray) types =
      g_ptr_array_new_with_free_func((GDestroyNotify)hlo_type_free);
  do {
    HloType *t = hlo_read_type(r);
    if (!t)
      return FALSE;
    g_ptr_array_add(types, t);
  } while (hlo_accept(r, ','));
  guint nuses = op->uses->len;
  Loc at = ((HloType *)g_ptr_array_index(types, 0))->loc;
  if (results_only) {
    for (guint i = 0; i < types->len; i++)
      g_ptr_array_add(op->result_types,
                      hlo_type_copy(g_ptr_array_index(types, i)));
    return TRUE;
  }
  gboolean per_operand =
      strcmp(op->name, "func.return") == 0 ||
      strcmp(op->name, "stablehlo.return") == 0 ||
      strcmp(op->name, "stablehlo.optimization_barrier") == 0;
  if (per_operand) {
    if (types->len != nuses)
      return cursor_fail(&r->c, at, "%u operands but %u types", nuses,
                         types->len);
    for (guint i = 0; i < nuses; i++) {
      g_ptr_array_add(op->operand_types,
                      hlo_type_copy(g_ptr_array_index(types, i)));
      if (strcmp(op->name, "stablehlo.optimization_barrier") == 0)
        g_ptr_array_add(op->result_types,
                        hlo_type_copy(g_ptr_array_index(types, i)));
    }
    return TRUE;
  }
  if (TOK->kind == TK_ARROW) { /* chlo's 'T, ... -> R' or '-> (R, ...)' */
    if (types->len != nuses)
      return cursor_fail(&r->c, at, "%u operands but %u types", nuses,
                         types->len);
    for (guint i = 0; i < nuses; i++)
      g_ptr_array_add(op->operand_types,
                      hlo_type_copy(g_ptr_array_index(types, i)));
    hlo_next(r);
    gboolean many = hlo_accept(r, '('); /* '-> (R, ...)' */
    do {
      HloType *result = hlo_read_type(r);
      if (!result)
        return FALSE;
      g_ptr_array_add(op->result_types, result);
    } while (many && hlo_accept(r, ','));
    return !many || cursor_punct(&r->c, ')');
  }
  if (strcmp(op->name, "stablehlo.select") == 0 && types->len == 2 &&
      nuses == 3) {
    const HloType *pred = g_ptr_array_index(types, 0);
    const HloType *val = g_ptr_array_index(types, 1);
    g_ptr_array_add(op->operand_types, hlo_type_copy(pred));
    g_ptr_array_add(op->operand_types, hlo_type_copy(val));
    g_ptr_array_add(op->operand_types, hlo_type_copy(val));
    g_ptr_array_add(op->result_types, hlo_type_copy(val));
    return TRUE;
  }
  if (types->len != 1)
    return cursor_fail(&r->c, at,
                       "expected one type for the operands and the result, "
                       "or a function type '(...) -> ...'");
  const HloType *t = g_ptr_array_index(types, 0);
  for (guint i = 0; i < nuses; i++)
    g_ptr_array_add(op->operand_types, hlo_type_copy(t));
  g_ptr_array_add(op->result_types, hlo_type_copy(t));
  return TRUE;
}

/* operands ['[' slice ranges ']'] [keyword items] [{attrs}] ':' types */
static gboolean read_common(HloReader *r, HloOp *op) {
  if (TOK->kind == TK_VALUE && !hlo_read_uses(r, op, FALSE))
    return FALSE;
  if (hlo_is_punct(r, '[') && !read_slice_ranges(r, op))
    return FALSE;
  if (!read_keywords(r, op))
    return FALSE;
  if (hlo_is_punct(r, '{') && !hlo_read_attr_dict(r, op))
    return FALSE;
  gboolean sources = strcmp(op->name, "stablehlo.iota") == 0 ||
                     strcmp(op->name, "stablehlo.tuple") == 0;
  if (!read_types(r, op, sources))
    return FALSE;
  /* the generic form's names for the pretty keywords */
  if (strcmp(op->name, "stablehlo.broadcast_in_dim") == 0)
    rename_attr(op, "dims", "broadcast_dimensions");
  else if (strcmp(op->name, "stablehlo.transpose") == 0)
    rename_attr(op, "dims", "permutation");
  else if (strcmp(op->name, "stablehlo.reverse") == 0)
    rename_attr(op, "dims", "dimensions");
  else if (strcmp(op->name, "stablehlo.concatenate") == 0)
    rename_attr(op, "dim", "dimension");
  else if (strcmp(op->name, "stablehlo.iota") == 0)
    rename_attr(op, "dim", "iota_dimension");
  else if (strcmp(op->name, "stablehlo.dynamic_slice") == 0)
    rename_attr(op, "sizes", "slice_sizes");
  else if (strcmp(op->name, "stablehlo.pad") == 0) {
    rename_attr(op, "low", "edge_padding_low");
    rename_attr(op, "high", "edge_padding_high");
    rename_attr(op, "interior", "interior_padding");
  } else if (strcmp(op->name, "stablehlo.dot_general") == 0 ||
             strcmp(op->name, "stablehlo.dot") == 0)
    rename_attr(op, "precision", "precision_config");
  return TRUE;
}

/* 'GT, %a, %b[, FLOAT]' then the types. */
static gboolean read_compare(HloReader *r, HloOp *op) {
  if (TOK->kind != TK_IDENT)
    return cursor_expected(&r->c, "a comparison direction (EQ, NE, LT, ...)");
  HloAttr *dir = hlo_attr_new(HA_WORD, TOK->loc);
  dir->s = token_name(TOK);
  hlo_op_add_attr(op, "comparison_direction", dir);
  hlo_next(r);
  if (!cursor_punct(&r->c, ',') || !hlo_read_uses(r, op, FALSE))
    return FALSE;
  if (TOK->kind == TK_IDENT) { /* the comma before it is read */
    HloAttr *type = hlo_attr_new(HA_WORD, TOK->loc);
    type->s = token_name(TOK);
    hlo_op_add_attr(op, "compare_type", type);
    hlo_next(r);
  }
  if (hlo_is_punct(r, '{') && !hlo_read_attr_dict(r, op))
    return FALSE;
  return read_types(r, op, FALSE);
}

/* '[{attrs}] dense<...> : T' (stablehlo, arith and sdy constants). */
static gboolean read_constant(HloReader *r, HloOp *op) {
  if (hlo_is_punct(r, '{') && !hlo_read_attr_dict(r, op))
    return FALSE;
  HloAttr *v = hlo_read_attr(r);
  if (!v)
    return FALSE;
  hlo_op_add_attr(op, "value", v);
  if (!v->type)
    return cursor_fail(&r->c, v->loc, "a constant needs its type");
  g_ptr_array_add(op->result_types, hlo_type_copy(v->type));
  return TRUE;
}

/* '@callee(%a, ...) [{attrs}] : (T, ...) -> R' (call and custom_call). */
static gboolean read_call(HloReader *r, HloOp *op) {
  if (TOK->kind != TK_SYMBOL)
    return cursor_expected(&r->c, "the callee ('@name')");
  HloAttr *callee = hlo_attr_new(HA_SYMREF, TOK->loc);
  callee->s = token_name(TOK);
  hlo_op_add_attr(
      op, strcmp(op->name, "func.call") == 0 ? "callee" : "call_target_name",
      callee);
  hlo_next(r);
  if (!hlo_read_uses(r, op, TRUE))
    return FALSE;
  return hlo_read_signature(r, op);
}

/* '"name" %a, ... {attrs} : (T, ...) -> R' (composite: the name as
 * the generic form's 'name' attribute). */
static gboolean read_composite(HloReader *r, HloOp *op) {
  if (TOK->kind != TK_STRING)
    return cursor_expected(&r->c, "the composite's name (\"...\")");
  HloAttr *name = hlo_attr_new(HA_STRING, TOK->loc);
  name->s = g_strdup(TOK->text);
  hlo_op_add_attr(op, "name", name);
  hlo_next(r);
  if (TOK->kind == TK_VALUE && !hlo_read_uses(r, op, FALSE))
    return FALSE;
  return hlo_read_signature(r, op);
}

/* convolution: '(%x, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b,
 * 0, 1, f], window = {stride = [..], pad = [[..], ..], lhs_dilate =
 * [..], rhs_dilate = [..], reverse = [..]} {attrs} : (T, T) -> R'.  The
 * dimension numbers are kept as their text, an HA_OPAQUE spanning them
 * (what the generic form's #stablehlo.conv<...> gives); the window as
 * the dictionary 'window'. */
static gboolean read_convolution(HloReader *r, HloOp *op) {
  if (!hlo_read_uses(r, op, TRUE) || !cursor_word(&r->c, "dim_numbers") ||
      !cursor_punct(&r->c, '='))
    return FALSE;
  HloAttr *dims = hlo_attr_new(HA_OPAQUE, TOK->loc);
  dims->s = g_strdup("dim_numbers");
  hlo_op_add_attr(op, "dimension_numbers", dims);
  int depth = 0;
  while (!hlo_failed(r) && TOK->kind != TK_EOF &&
         !(depth == 0 && (hlo_is_punct(r, ',') || hlo_is_punct(r, '{') ||
                          hlo_is_punct(r, ':')))) {
    depth += hlo_is_punct(r, '[') - hlo_is_punct(r, ']');
    dims->end = TOK->loc.offset + TOK->len;
    hlo_next(r);
  }
  if (hlo_accept(r, ',')) {
    if (!cursor_word(&r->c, "window") || !cursor_punct(&r->c, '='))
      return FALSE;
    HloAttr *w = hlo_read_attr(r);
    if (!w)
      return FALSE;
    hlo_op_add_attr(op, "window", w);
  }
  if (hlo_is_punct(r, '{') && !hlo_read_attr_dict(r, op))
    return FALSE;
  return read_types(r, op, FALSE);
}

/* An integer (what the error calls 'what'), as attribute 'key'. */
static gboolean read_int_attr(HloReader *r, HloOp *op, const char *key,
                              const char *what) {
  if (TOK->kind != TK_INT)
    return cursor_expected(&r->c, what);
  HloAttr *v = hlo_attr_new(HA_INT, TOK->loc);
  v->i = TOK->i;
  hlo_op_add_attr(op, key, v);
  hlo_next(r);
  return TRUE;
}

/* get_tuple_element: '%t[N] [{attrs}] : (tuple<...>) -> T'. */
static gboolean read_get_tuple_element(HloReader *r, HloOp *op) {
  HloUse u;
  if (!hlo_read_use(r, &u))
    return FALSE;
  g_array_append_val(op->uses, u);
  if (!cursor_punct(&r->c, '['))
    return FALSE;
  if (!read_int_attr(r, op, "index", "the element's index") ||
      !cursor_punct(&r->c, ']'))
    return FALSE;
  if (hlo_is_punct(r, '{') && !hlo_read_attr_dict(r, op))
    return FALSE;
  return read_types(r, op, FALSE);
}

/* chlo.top_k: '(%x, k = K) : T -> (R, I)'. */
static gboolean read_top_k(HloReader *r, HloOp *op) {
  if (!cursor_punct(&r->c, '('))
    return FALSE;
  HloUse u;
  if (!hlo_read_use(r, &u))
    return FALSE;
  g_array_append_val(op->uses, u);
  if (!cursor_punct(&r->c, ',') || !cursor_word(&r->c, "k") ||
      !cursor_punct(&r->c, '='))
    return FALSE;
  if (!read_int_attr(r, op, "k", "k's value") || !cursor_punct(&r->c, ')'))
    return FALSE;
  if (hlo_is_punct(r, '{') && !hlo_read_attr_dict(r, op))
    return FALSE;
  return read_types(r, op, FALSE);
}

/* '[%a, ... : T, ...]' */
static gboolean read_return(HloReader *r, HloOp *op) {
  if (TOK->kind != TK_VALUE)
    return TRUE;
  if (!hlo_read_uses(r, op, FALSE))
    return FALSE;
  return read_types(r, op, FALSE);
}

/* reduce: '(%x init: %c), ...' then 'applies OP across dimensions = [..]'
 * and the types, or 'across dimensions = [..]', the types and
 * 'reducer(%a: T, %b: T) ... { body }'. */
static gboolean read_reduce(HloReader *r, HloOp *op) {
  /* the generic form's operands: every input, then every init value */
  g_autoptr(HloOp) inits = hlo_op_new("", TOK->loc);
  do {
    HloUse x, init;
    if (!cursor_punct(&r->c, '(') || !hlo_read_use(r, &x))
      return FALSE;
    g_array_append_val(op->uses, x);
    if (!cursor_word(&r->c, "init") || !cursor_punct(&r->c, ':') ||
        !hlo_read_use(r, &init))
      return FALSE;
    g_array_append_val(inits->uses, init);
    if (!cursor_punct(&r->c, ')'))
      return FALSE;
  } while (hlo_accept(r, ','));
  g_array_append_vals(op->uses, inits->uses->data, inits->uses->len);
  g_array_set_size(inits->uses, 0); /* the names moved to op->uses */
  if (token_is(TOK, "applies")) {
    hlo_next(r);
    if (TOK->kind != TK_IDENT)
      return cursor_expected(&r->c, "the reducing operation");
    HloAttr *body = hlo_attr_new(HA_WORD, TOK->loc);
    body->s = token_name(TOK);
    hlo_op_add_attr(op, "applies", body);
    hlo_next(r);
  }
  if (!cursor_word(&r->c, "across") || !cursor_word(&r->c, "dimensions") ||
      !cursor_punct(&r->c, '='))
    return FALSE;
  HloAttr *dims = hlo_read_attr(r);
  if (!dims)
    return FALSE;
  hlo_op_add_attr(op, "dimensions", dims);
  if (!hlo_read_signature(r, op))
    return FALSE;
  if (hlo_op_attr(op, "applies"))
    return TRUE;
  /* reducer(%lhs0: T [loc(..)], %rhs0: T) (%lhs1: T, %rhs1: T) { ... }:
   * the block takes every lhs, then every rhs (JAX writes each
   * argument's location when exporting with debug information) */
  if (!cursor_word(&r->c, "reducer"))
    return FALSE;
  g_autoptr(GPtrArray) lhs = g_ptr_array_new();
  g_autoptr(GPtrArray) rhs = g_ptr_array_new();
  g_autoptr(HloOp) holder = hlo_op_new("", TOK->loc);
  g_autoptr(GPtrArray) wheres = g_ptr_array_new(); /* the file owns them */
  while (hlo_is_punct(r, '(')) {
    hlo_next(r);
    for (int k = 0; k < 2; k++) {
      if (k && !cursor_punct(&r->c, ','))
        return FALSE;
      if (TOK->kind != TK_VALUE)
        return cursor_expected(&r->c, "a reducer argument ('%name: type')");
      HloUse u = {.name = token_name(TOK), .loc = TOK->loc, .index = -1};
      g_array_append_val(holder->uses, u);
      hlo_next(r);
      HloType *t = NULL;
      if (!cursor_punct(&r->c, ':') || !(t = hlo_read_type(r)))
        return FALSE;
      g_ptr_array_add(holder->operand_types, t);
      HloLoc *where = NULL;
      if (!hlo_read_loc(r, &where))
        return FALSE;
      g_ptr_array_add(wheres, where);
      g_ptr_array_add(k ? rhs : lhs, GUINT_TO_POINTER(holder->uses->len - 1));
    }
    if (!cursor_punct(&r->c, ')'))
      return FALSE;
  }
  HloRegion *body = r->read_region(r);
  if (!body)
    return FALSE;
  g_ptr_array_add(op->regions, body);
  for (int k = 0; k < 2; k++) {
    GPtrArray *side = k ? rhs : lhs;
    for (guint i = 0; i < side->len; i++) {
      guint at = GPOINTER_TO_UINT(g_ptr_array_index(side, i));
      HloUse *u = &g_array_index(holder->uses, HloUse, at);
      HloArg *a = g_new0(HloArg, 1);
      a->name = g_steal_pointer(&u->name);
      a->loc = u->loc;
      a->where = g_ptr_array_index(wheres, at);
      a->type = hlo_type_copy(g_ptr_array_index(holder->operand_types, at));
      g_ptr_array_add(body->args, a);
    }
  }
  return TRUE;
}

/* while: '(%iter = %init, ...) : T, ... cond { ... } do { ... }': the
 * generic form's operands (the initial values), types and two regions,
 * the condition and the body, each taking the loop's values as its
 * block's arguments under the names written before the '='. */
static gboolean read_while(HloReader *r, HloOp *op) {
  g_autoptr(HloOp) names = hlo_op_new("", TOK->loc);
  if (!cursor_punct(&r->c, '('))
    return FALSE;
  if (!hlo_is_punct(r, ')')) {
    do {
      if (TOK->kind != TK_VALUE)
        return cursor_expected(&r->c, "a loop value ('%iter = %init')");
      HloUse name = {.name = token_name(TOK), .loc = TOK->loc, .index = -1};
      g_array_append_val(names->uses, name);
      hlo_next(r);
      HloUse init;
      if (!cursor_punct(&r->c, '=') || !hlo_read_use(r, &init))
        return FALSE;
      g_array_append_val(op->uses, init);
    } while (hlo_accept(r, ','));
  }
  if (!cursor_punct(&r->c, ')'))
    return FALSE;
  if (op->uses->len > 0) {
    if (!cursor_punct(&r->c, ':'))
      return FALSE;
    do {
      HloType *t = hlo_read_type(r);
      if (!t)
        return FALSE;
      g_ptr_array_add(op->operand_types, t);
      g_ptr_array_add(op->result_types, hlo_type_copy(t));
    } while (hlo_accept(r, ','));
  }
  if (op->operand_types->len != op->uses->len)
    return cursor_fail(&r->c, op->loc, "'%s' has %u loop values but %u types",
                       op->name, op->uses->len, op->operand_types->len);
  if (hlo_is_word(r, "attributes")) {
    hlo_next(r);
    if (!hlo_read_attr_dict(r, op))
      return FALSE;
  }
  for (int k = 0; k < 2; k++) {
    if (!cursor_word(&r->c, k ? "do" : "cond"))
      return FALSE;
    HloRegion *g = r->read_region(r);
    if (!g)
      return FALSE;
    g_ptr_array_add(op->regions, g);
    for (guint i = 0; i < names->uses->len; i++) {
      const HloUse *n = &g_array_index(names->uses, HloUse, i);
      HloArg *a = g_new0(HloArg, 1);
      a->name = g_strdup(n->name);
      a->loc = n->loc;
      a->type = hlo_type_copy(g_ptr_array_index(op->operand_types, i));
      g_ptr_array_add(g->args, a);
    }
  }
  return TRUE;
}

/* 'sdy.mesh @name = <["x"=2]> [{attrs}]' (in a module): the generic
 * form's 'sym_name' and 'mesh'. */
static gboolean read_sdy_mesh(HloReader *r, HloOp *op) {
  if (TOK->kind != TK_SYMBOL)
    return cursor_expected(&r->c, "the mesh's name ('@mesh')");
  HloAttr *name = hlo_attr_new(HA_STRING, TOK->loc);
  name->s = token_name(TOK);
  hlo_op_add_attr(op, "sym_name", name);
  hlo_next(r);
  if (!cursor_punct(&r->c, '='))
    return FALSE;
  HloAttr *mesh = hlo_read_attr(r);
  if (!mesh)
    return FALSE;
  hlo_op_add_attr(op, "mesh", mesh);
  return !hlo_is_punct(r, '{') || hlo_read_attr_dict(r, op);
}

/* 'sdy.sharding_constraint %x <@mesh, [...]> [{attrs}] : T' (and
 * sdy.reshard): the sharding as the generic form's 'sharding'. */
static gboolean read_sdy_sharding(HloReader *r, HloOp *op) {
  if (!hlo_read_uses(r, op, FALSE))
    return FALSE;
  if (!hlo_is_punct(r, '<'))
    return cursor_expected(&r->c, "a sharding ('<@mesh, [...]>')");
  HloAttr *sharding = hlo_read_attr(r);
  if (!sharding)
    return FALSE;
  hlo_op_add_attr(op, "sharding", sharding);
  if (hlo_is_punct(r, '{') && !hlo_read_attr_dict(r, op))
    return FALSE;
  return read_types(r, op, FALSE);
}

/* The check dialect of StableHLO's interpreter tests:
 *   check.expect_eq %a, %b : T          check.expect_eq_const %a, dense<..> : T
 *   check.expect_almost_eq %a, %b, tolerance = 1.0e-3 : T
 *   check.expect_almost_eq_const %a, dense<..> : T, tolerance = 1.0e-3
 *   check.expect_close %a, %b, max_ulp_difference = 3 : T, T
 * the constant as 'value', the numbers as attributes; no results. */
static gboolean read_check(HloReader *r, HloOp *op) {
  if (!hlo_read_uses(r, op, FALSE))
    return FALSE;
  gboolean constant = g_str_has_suffix(op->name, "_const");
  if (constant) {
    HloAttr *v = hlo_read_attr(r);
    if (!v)
      return FALSE;
    hlo_op_add_attr(op, "value", v);
    if (hlo_accept(r, ',') && !read_keywords(r, op))
      return FALSE;
  } else if (!read_keywords(r, op)) {
    return FALSE;
  }
  if (hlo_is_punct(r, '{') && !hlo_read_attr_dict(r, op))
    return FALSE;
  /* ': f64' after a tolerance is the number's; ': T[, T]' the operands' */
  while (hlo_accept(r, ':')) {
    HloType *t = hlo_read_type(r);
    if (!t)
      return FALSE;
    if (constant || !g_str_has_prefix(t->text, "tensor")) {
      hlo_type_free(t);
      continue;
    }
    g_ptr_array_add(op->operand_types, t);
    while (hlo_accept(r, ',')) {
      if (!(t = hlo_read_type(r)))
        return FALSE;
      g_ptr_array_add(op->operand_types, t);
    }
    break;
  }
  /* one type written for two operands */
  if (op->operand_types->len == 1 && op->uses->len == 2)
    g_ptr_array_add(op->operand_types,
                    hlo_type_copy(g_ptr_array_index(op->operand_types, 0)));
  return TRUE;
}

/* The operations read by read_common. */
static const char *const common_forms[] = {"stablehlo.add",
                                           "stablehlo.subtract",
                                           "stablehlo.multiply",
                                           "stablehlo.divide",
                                           "stablehlo.maximum",
                                           "stablehlo.minimum",
                                           "stablehlo.power",
                                           "stablehlo.remainder",
                                           "stablehlo.and",
                                           "stablehlo.or",
                                           "stablehlo.xor",
                                           "stablehlo.not",
                                           "stablehlo.shift_left",
                                           "stablehlo.shift_right_arithmetic",
                                           "stablehlo.shift_right_logical",
                                           "stablehlo.popcnt",
                                           "stablehlo.count_leading_zeros",
                                           "stablehlo.negate",
                                           "stablehlo.abs",
                                           "stablehlo.exponential",
                                           "stablehlo.log",
                                           "stablehlo.tanh",
                                           "stablehlo.logistic",
                                           "stablehlo.sqrt",
                                           "stablehlo.rsqrt",
                                           "stablehlo.sign",
                                           "stablehlo.floor",
                                           "stablehlo.ceil",
                                           "stablehlo.round_nearest_even",
                                           "stablehlo.round_nearest_afz",
                                           "stablehlo.log_plus_one",
                                           "chlo.erf",
                                           "chlo.erfc",
                                           "chlo.erf_inv",
                                           "chlo.square",
                                           "stablehlo.exponential_minus_one",
                                           "stablehlo.cbrt",
                                           "stablehlo.sine",
                                           "stablehlo.cosine",
                                           "stablehlo.tan",
                                           "stablehlo.atan2",
                                           "stablehlo.is_finite",
                                           "stablehlo.clamp",
                                           "stablehlo.select",
                                           "stablehlo.convert",
                                           "stablehlo.bitcast_convert",
                                           "stablehlo.reshape",
                                           "stablehlo.broadcast_in_dim",
                                           "stablehlo.transpose",
                                           "stablehlo.slice",
                                           "stablehlo.concatenate",
                                           "stablehlo.pad",
                                           "stablehlo.iota",
                                           "stablehlo.dot_general",
                                           "stablehlo.dot",
                                           "stablehlo.reverse",
                                           "stablehlo.dynamic_slice",
                                           "stablehlo.dynamic_update_slice",
                                           "stablehlo.optimization_barrier",
                                           "stablehlo.tuple",
                                           NULL};

gboolean hlo_read_pretty(HloReader *r, HloOp *op) {
  /* the func dialect is the default inside a function */
  if (strcmp(op->name, "call") == 0 || strcmp(op->name, "return") == 0) {
    char *full = g_strconcat("func.", op->name, NULL);
    g_free(op->name);
    op->name = full;
  }
  const char *n = op->name;
  if (strcmp(n, "stablehlo.compare") == 0)
    return read_compare(r, op);
  if (strcmp(n, "stablehlo.constant") == 0 ||
      strcmp(n, "arith.constant") == 0 || strcmp(n, "sdy.constant") == 0)
    return read_constant(r, op);
  if (strcmp(n, "stablehlo.reduce") == 0)
    return read_reduce(r, op);
  if (strcmp(n, "stablehlo.while") == 0)
    return read_while(r, op);
  if (strcmp(n, "func.call") == 0 || strcmp(n, "stablehlo.custom_call") == 0)
    return read_call(r, op);
  if (strcmp(n, "func.return") == 0 || strcmp(n, "stablehlo.return") == 0)
    return read_return(r, op);
  if (strcmp(n, "stablehlo.composite") == 0)
    return read_composite(r, op);
  if (strcmp(n, "stablehlo.convolution") == 0)
    return read_convolution(r, op);
  if (strcmp(n, "chlo.top_k") == 0)
    return read_top_k(r, op);
  if (strcmp(n, "stablehlo.get_tuple_element") == 0)
    return read_get_tuple_element(r, op);
  if (g_strv_contains(common_forms, n))
    return read_common(r, op);
  if (strcmp(n, "sdy.mesh") == 0)
    return read_sdy_mesh(r, op);
  if (strcmp(n, "sdy.sharding_constraint") == 0 ||
      strcmp(n, "sdy.reshard") == 0)
    return read_sdy_sharding(r, op);
  if (g_str_has_prefix(n, "check.expect_"))
    return read_check(r, op);
  op->opaque = TRUE;
  return hlo_skip_op(r);
}
