/* reader.c — a whole StableHLO file into records (an HloFile).
 *
 * The structure around the operations: 'module @name attributes {...}
 * { ... }' (or '"builtin.module"'), 'func.func' in either form
 * (arguments, results and their attribute dictionaries, visibility),
 * regions of one block ('^bb0(%a: T):'), result names ('%0:2 ='), and
 * '#loc3 = loc(...)' alias definitions anywhere at the top level (JAX
 * writes them before and after the module).  An operation in the
 * generic form is read here whatever it is; one in its pretty form is
 * handed to pretty.c, which reads the regions it has through
 * HloReader.read_region (this file's reader).  A syntax error stops the
 * read with one positioned diagnostic.
 */
#include "import/import.h"

#include <string.h>

#define TOK (&r->c.tok)

static HloOp *read_op(HloReader *r);
static gboolean read_func_pretty(HloReader *r, Loc at);
static gboolean read_module_pretty(HloReader *r, Loc at);
static gboolean func_from_generic(HloReader *r, HloOp *op);
static gboolean module_ops(HloReader *r, HloRegion *g);

/* Arguments after their '(' up to its ')': '%a: T loc(..), ...' into
 * 'into'; each with an attribute dictionary after its type when
 * 'attrs' (a function's, not a block's).  'what' names one in errors. */
static gboolean read_args(HloReader *r, GPtrArray *into, gboolean attrs,
                          const char *what) {
  do {
    if (TOK->kind != TK_VALUE)
      return cursor_expected(&r->c, what);
    HloArg *a = g_new0(HloArg, 1);
    a->name = token_name(TOK);
    a->loc = TOK->loc;
    g_ptr_array_add(into, a);
    hlo_next(r);
    if (!cursor_punct(&r->c, ':') || !(a->type = hlo_read_type(r)))
      return FALSE;
    if (attrs && hlo_is_punct(r, '{') && !(a->attrs = hlo_read_attr(r)))
      return FALSE;
    if (!hlo_read_loc(r, &a->where))
      return FALSE;
  } while (hlo_accept(r, ','));
  return cursor_punct(&r->c, ')');
}

/* A block label and its arguments: '^bb0(%a: T loc(..), ...):'. */
static gboolean read_block_label(HloReader *r, HloRegion *g) {
  hlo_next(r); /* ^bb0 */
  if (hlo_accept(r, '(') && !hlo_accept(r, ')') &&
      !read_args(r, g->args, FALSE, "a block argument ('%name: type')"))
    return FALSE;
  return cursor_punct(&r->c, ':');
}

static HloRegion *read_region(HloReader *r) {
  Loc open = TOK->loc;
  if (!cursor_punct(&r->c, '{'))
    return NULL;
  if (!hlo_enter(r, open, "regions"))
    return NULL;
  HloRegion *g = hlo_region_new(open);
  if (TOK->kind == TK_CARET && !read_block_label(r, g)) {
    r->depth--;
    hlo_region_free(g);
    return NULL;
  }
  while (!hlo_failed(r) && !hlo_is_punct(r, '}')) {
    if (TOK->kind == TK_EOF) {
      cursor_fail(
          &r->c, TOK->loc,
          "unexpected end of input: '}' expected (to close '{' at line %d)",
          open.line);
      break;
    }
    if (TOK->kind == TK_CARET) { /* another block: refused later */
      g->blocks++;
      HloRegion *extra = hlo_region_new(TOK->loc);
      gboolean ok = read_block_label(r, extra);
      hlo_region_free(extra);
      if (!ok)
        break;
      continue;
    }
    HloOp *op = read_op(r);
    if (op)
      g_ptr_array_add(g->ops, op);
  }
  r->depth--;
  if (hlo_failed(r) || !cursor_punct(&r->c, '}')) {
    hlo_region_free(g);
    return NULL;
  }
  return g;
}

/* The generic form after the quoted name: '(%a, ...)' ['[^bb]']
 * ['<{props}>'] ['({region}, ...)'] ['{attrs}'] ':' function type. */
static gboolean read_generic(HloReader *r, HloOp *op) {
  if (!hlo_read_uses(r, op, TRUE))
    return FALSE;
  if (hlo_is_punct(r, '[')) { /* successors: branches, which partir lacks */
    op->opaque = TRUE;
    if (!hlo_skip_op(r))
      return FALSE;
    return TRUE;
  }
  if (hlo_is_punct(r, '<')) {
    hlo_next(r);
    if (!hlo_read_attr_dict(r, op) || !cursor_punct(&r->c, '>'))
      return FALSE;
  }
  if (hlo_accept(r, '(')) {
    do {
      HloRegion *g = read_region(r);
      if (!g)
        return FALSE;
      g_ptr_array_add(op->regions, g);
    } while (hlo_accept(r, ','));
    if (!cursor_punct(&r->c, ')'))
      return FALSE;
  }
  return hlo_read_signature(r, op);
}

/* Result names: '%a, %b:2 ='. */
static gboolean read_defs(HloReader *r, HloOp *op) {
  do {
    if (TOK->kind != TK_VALUE)
      return cursor_expected(&r->c, "a result name ('%name')");
    HloDef d = {.name = token_name(TOK), .count = 1, .loc = TOK->loc};
    g_array_append_val(op->defs, d);
    hlo_next(r);
    if (hlo_accept(r, ':')) {
      if (TOK->kind != TK_INT || TOK->i < 1 || TOK->i > 4096)
        return cursor_expected(&r->c, "a result count");
      g_array_index(op->defs, HloDef, op->defs->len - 1).count = (int)TOK->i;
      hlo_next(r);
    }
  } while (hlo_accept(r, ','));
  return cursor_punct(&r->c, '=');
}

/* One statement of a region.  'func.func' and 'module' inside are read
 * into the file's functions; NULL then (and after an error). */
static HloOp *read_op(HloReader *r) {
  Loc start = TOK->loc;
  HloOp *op = hlo_op_new("", start);
  if (TOK->kind == TK_VALUE && !read_defs(r, op))
    goto fail;
  if (TOK->kind != TK_STRING && TOK->kind != TK_IDENT) {
    cursor_expected(&r->c, "an operation");
    goto fail;
  }
  gboolean generic = TOK->kind == TK_STRING;
  g_free(op->name);
  op->name = token_name(TOK);
  op->loc = TOK->loc;
  op->start = start;
  if (!generic && op->defs->len == 0 &&
      (strcmp(op->name, "func.func") == 0 || strcmp(op->name, "module") == 0)) {
    gboolean ok = strcmp(op->name, "module") == 0
                      ? read_module_pretty(r, op->loc)
                      : read_func_pretty(r, op->loc);
    hlo_op_free(op);
    (void)ok;
    return NULL;
  }
  hlo_next(r);
  if (generic ? !read_generic(r, op) : !hlo_read_pretty(r, op))
    goto fail;
  if (!hlo_read_loc(r, &op->where))
    goto fail;
  if (generic && (strcmp(op->name, "func.func") == 0 ||
                  strcmp(op->name, "builtin.module") == 0)) {
    func_from_generic(r, op);
    hlo_op_free(op);
    return NULL;
  }
  return op;
fail:
  hlo_op_free(op);
  return NULL;
}

/* ----------------------------------------------------------- functions */

/* The operations of a module's region besides its functions (which were
 * read into the file): its meshes are kept ('sdy.mesh'), the rest of
 * Shardy's declarations left; anything else is refused. */
static gboolean module_ops(HloReader *r, HloRegion *g) {
  for (guint i = 0; i < g->ops->len; i++) {
    HloOp *op = g_ptr_array_index(g->ops, i);
    if (strncmp(op->name, "sdy.", 4) != 0)
      return cursor_fail(&r->c, op->loc, "a module holds functions, not '%s'",
                         op->name);
    if (strcmp(op->name, "sdy.mesh") == 0) {
      g_ptr_array_add(r->file->meshes, op);
      g->ops->pdata[i] = NULL; /* the file owns it now */
    }
  }
  return TRUE;
}

/* Moves item 'i' of 'list' (an HA_LIST of attribute dictionaries, the
 * generic form's arg_attrs or res_attrs; may be NULL) out of it. */
static HloAttr *take_attrs(const HloAttr *list, guint i) {
  if (!list || list->kind != HA_LIST || i >= list->items->len)
    return NULL;
  HloAttr *a = g_ptr_array_index(list->items, i);
  list->items->pdata[i] = NULL;
  return a;
}

/* A generic 'func.func' or 'builtin.module': the module's functions were
 * read into the file as its region was read; a function becomes one. */

/* Result type 't' (taken) with its attributes of function 'f': a
 * tuple<...> (torch-xla's xm.get_stablehlo returns one) as one result
 * per element, as its 'stablehlo.tuple' is lowered. */
static void add_result(HloFunc *f, HloType *t, HloAttr *attrs) {
  if (!t->elems) {
    g_ptr_array_add(f->result_types, t);
    g_ptr_array_add(f->result_attrs, attrs);
    return;
  }
  for (guint i = 0; i < t->elems->len; i++) {
    g_ptr_array_add(f->result_types,
                    hlo_type_copy(g_ptr_array_index(t->elems, i)));
    g_ptr_array_add(f->result_attrs, NULL);
  }
  hlo_attr_free(attrs);
  hlo_type_free(t);
}

static gboolean func_from_generic(HloReader *r, HloOp *op) {
  if (strcmp(op->name, "builtin.module") == 0) {
    for (guint i = 0; i < op->regions->len; i++)
      if (!module_ops(r, g_ptr_array_index(op->regions, i)))
        return FALSE;
    return TRUE;
  }
  const HloAttr *name = hlo_op_attr(op, "sym_name");
  const HloAttr *type = hlo_op_attr(op, "function_type");
  if (!name || name->kind != HA_STRING || !type || type->kind != HA_FUNCTYPE ||
      op->regions->len > 1)
    return cursor_fail(
        &r->c, op->loc,
        "a generic 'func.func' needs 'sym_name', 'function_type' "
        "and at most one region");
  HloFunc *f = hlo_func_new(op->loc);
  f->name = g_strdup(name->s);
  const HloAttr *vis = hlo_op_attr(op, "sym_visibility");
  f->private_ = vis && vis->kind == HA_STRING && strcmp(vis->s, "private") == 0;
  const HloAttr *ins = g_ptr_array_index(type->items, 0);
  const HloAttr *outs = g_ptr_array_index(type->items, 1);
  const HloAttr *arg_attrs = hlo_op_attr(op, "arg_attrs");
  const HloAttr *res_attrs = hlo_op_attr(op, "res_attrs");
  for (guint i = 0; i < outs->items->len; i++) {
    const HloAttr *t = g_ptr_array_index(outs->items, i);
    add_result(f, hlo_type_copy(t->type), take_attrs(res_attrs, i));
  }
  if (op->regions->len == 1) {
    f->body = g_ptr_array_steal_index(op->regions, 0);
    GPtrArray *bargs = f->body->args;
    if (bargs->len != ins->items->len) {
      cursor_fail(&r->c, op->loc,
                  "'@%s' has %u block arguments but its function type has %u "
                  "inputs",
                  f->name, bargs->len, ins->items->len);
      hlo_func_free(f);
      return FALSE;
    }
    /* the block's arguments are the function's */
    while (bargs->len > 0)
      g_ptr_array_add(f->args, g_ptr_array_steal_index(bargs, 0));
    for (guint i = 0; i < f->args->len; i++) {
      HloArg *a = g_ptr_array_index(f->args, i);
      const HloAttr *t = ((const HloAttr *)g_ptr_array_index(ins->items, i));
      if (a->type && t->type && g_strcmp0(a->type->text, t->type->text) != 0) {
        cursor_fail(&r->c, a->loc,
                    "argument %%%s has type %s but the function type says %s",
                    a->name, a->type->text, t->type->text);
        hlo_func_free(f);
        return FALSE;
      }
      a->attrs = take_attrs(arg_attrs, i);
    }
  } else {
    for (guint i = 0; i < ins->items->len; i++) {
      HloArg *a = g_new0(HloArg, 1);
      a->name = g_strdup_printf("arg%u", i);
      a->type = hlo_type_copy(
          ((const HloAttr *)g_ptr_array_index(ins->items, i))->type);
      a->loc = op->loc;
      g_ptr_array_add(f->args, a);
    }
  }
  g_ptr_array_add(r->file->funcs, f);
  return TRUE;
}

/* 'func.func [public|private] @name(%a: T {attrs} loc(..), ...) [-> R |
 * -> (R {attrs}, ...)] [attributes {...}] [{ body }] [loc(..)]'. */
static gboolean read_func_pretty(HloReader *r, Loc at) {
  hlo_next(r); /* func.func */
  HloFunc *f = hlo_func_new(at);
  g_ptr_array_add(r->file->funcs, f); /* the file owns it from here */
  if (hlo_is_word(r, "public") || hlo_is_word(r, "private") ||
      hlo_is_word(r, "nested")) {
    f->private_ = hlo_is_word(r, "private");
    hlo_next(r);
  }
  if (TOK->kind != TK_SYMBOL)
    return cursor_expected(&r->c, "a function name ('@name')");
  f->name = token_name(TOK);
  hlo_next(r);
  if (!cursor_punct(&r->c, '('))
    return FALSE;
  if (!hlo_accept(r, ')') &&
      !read_args(r, f->args, TRUE, "an argument ('%name: type')"))
    return FALSE;
  if (TOK->kind == TK_ARROW) {
    hlo_next(r);
    gboolean parens = hlo_accept(r, '(');
    if (!parens || !hlo_is_punct(r, ')')) {
      do {
        HloType *t = hlo_read_type(r);
        if (!t)
          return FALSE;
        HloAttr *attrs = NULL;
        if (parens && hlo_is_punct(r, '{') && !(attrs = hlo_read_attr(r))) {
          hlo_type_free(t);
          return FALSE;
        }
        add_result(f, t, attrs);
        HloLoc *ignored;
        if (parens && !hlo_read_loc(r, &ignored))
          return FALSE;
      } while (parens && hlo_accept(r, ','));
    }
    if (parens && !cursor_punct(&r->c, ')'))
      return FALSE;
  }
  if (hlo_is_word(r, "attributes")) {
    hlo_next(r);
    HloAttr *d = hlo_read_attr(r);
    if (!d)
      return FALSE;
    hlo_attr_free(d);
  }
  if (hlo_is_punct(r, '{') && !(f->body = read_region(r)))
    return FALSE;
  HloLoc *where;
  return hlo_read_loc(r, &where);
}

/* 'module [@name] [attributes {...}] { ... } [loc(..)]'. */
static gboolean read_module_pretty(HloReader *r, Loc at) {
  hlo_next(r); /* module */
  if (TOK->kind == TK_SYMBOL) {
    if (!r->file->module_name)
      r->file->module_name = token_name(TOK);
    hlo_next(r);
  }
  if (hlo_is_word(r, "attributes")) {
    hlo_next(r);
    HloAttr *d = hlo_read_attr(r);
    if (!d)
      return FALSE;
    hlo_attr_free(d);
  }
  HloRegion *g = read_region(r);
  if (!g)
    return FALSE;
  gboolean ok = module_ops(r, g);
  hlo_region_free(g);
  HloLoc *where;
  (void)at;
  return ok && hlo_read_loc(r, &where);
}

/* '#loc3 = loc(...)' or '#alias = attribute' at the top level. */
static gboolean read_alias(HloReader *r) {
  char *name = token_name(TOK);
  hlo_next(r);
  if (!cursor_punct(&r->c, '=')) {
    g_free(name);
    return FALSE;
  }
  if (hlo_is_word(r, "loc")) {
    HloLoc *l = NULL;
    if (hlo_read_loc(r, &l)) {
      g_hash_table_replace(r->file->aliases, name, l);
      return TRUE;
    }
    g_free(name);
    return FALSE;
  }
  g_free(name);
  HloAttr *a = hlo_read_attr(r);
  hlo_attr_free(a);
  return a != NULL;
}

HloFile *hlo_read(const Source *src, Diag *diag) {
  HloReader rd = {0};
  HloReader *r = &rd;
  cursor_init(&r->c, src, diag);
  r->c.lx.mlir = TRUE;
  HloFile *f = hlo_file_new(src);
  r->file = f;
  r->read_region = read_region;
  hlo_next(r);
  while (!hlo_failed(r) && TOK->kind != TK_EOF) {
    if (TOK->kind == TK_HASH) {
      read_alias(r);
    } else if (hlo_is_word(r, "module")) {
      read_module_pretty(r, TOK->loc);
    } else if (hlo_is_word(r, "func.func")) {
      read_func_pretty(r, TOK->loc);
    } else if (hlo_is_word(r, "sdy.mesh")) { /* in the implicit module */
      HloOp *op = read_op(r);
      if (op)
        g_ptr_array_add(f->meshes, op);
    } else if (TOK->kind == TK_STRING) {
      HloOp *op = read_op(r);
      if (op) {
        cursor_fail(&r->c, op->loc, "expected a module or a function, got '%s'",
                    op->name);
        hlo_op_free(op);
      }
    } else {
      cursor_expected(&r->c, "'module' or 'func.func'");
    }
  }
  if (!hlo_failed(r) && f->funcs->len == 0)
    cursor_fail(&r->c, TOK->loc, "the file defines no function ('func.func')");
  token_clear(&r->c.tok);
  if (hlo_failed(r)) {
    hlo_file_free(f);
    return NULL;
  }
  return f;
}
