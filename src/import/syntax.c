/* syntax.c — the pieces of MLIR text: types, attributes, locations,
 * operands, and reading past an operation that is not known.
 *
 * Tokens come from the partir lexer (core/lex.c) in its MLIR mode.
 * Types are not tokens: 'tensor<' hands the raw text up to its '>' to
 * read_tensor_body.  Nothing is judged here: a type partir does not have
 * is recorded as written, with the reason (HloType.why), so that
 * support.c can list every one at once.  Attributes are read whatever
 * their dialect: the ones the import reads ('#stablehlo.dot<k = v>',
 * '#stablehlo<comparison_direction GT>', 'dense<...>', 'array<i64: 1>')
 * into their shape, any other ('#sdy.sharding<...>', 'dense_resource<>')
 * read past as opaque, its extent kept (sharding.c reads Shardy's
 * attributes again from there, only when they are used).  Attributes and
 * locations nest at most HLO_MAX_DEPTH deep; reading past an unknown operation
 * keeps its brackets on a heap stack, not the C stack.
 */
#include "import/import.h"

#include <string.h>

#define TOK (&r->c.tok)

gboolean hlo_enter(HloReader *r, Loc at, const char *what) {
  if (++r->depth > HLO_MAX_DEPTH)
    return cursor_fail(&r->c, at, "%s nest deeper than %d", what,
                       HLO_MAX_DEPTH);
  return TRUE;
}

/* --------------------------------------------------------------- types */

/* The inside of 'tensor<...>': 'body' (NUL-terminated) at 'at'.  Fills
 * 't->type' when it is a ranked, static tensor of a partir element type,
 * else 't->why'. */
static void read_tensor_body(HloType *t, const char *body) {
  int rank = 0;
  int64_t dims[PARTIR_MAX_RANK];
  const char *p = body;
  int64_t numel = 1;
  for (;;) {
    if (*p == '?' || *p == '*') {
      t->why =
          g_strdup(*p == '?' ? "a dynamic dimension" : "an unranked tensor");
      return;
    }
    if (!g_ascii_isdigit(*p))
      break;
    int64_t v = 0;
    while (g_ascii_isdigit(*p)) {
      if (v > (G_MAXINT64 - 9) / 10) {
        t->why = g_strdup("a dimension too large");
        return;
      }
      v = v * 10 + (*p++ - '0');
    }
    if (*p != 'x') {
      t->why = g_strdup("a malformed shape");
      return;
    }
    p++;
    if (rank == PARTIR_MAX_RANK) {
      t->why = g_strdup_printf("rank above %d", PARTIR_MAX_RANK);
      return;
    }
    if (v == 0) {
      t->why = g_strdup("a dimension of size 0");
      return;
    }
    if (v > PARTIR_MAX_ELEMS / numel) {
      t->why = g_strdup("more than 2^48 elements");
      return;
    }
    numel *= v;
    dims[rank++] = v;
  }
  const char *et = p;
  while (g_ascii_isalnum(*p) || *p == '_')
    p++;
  DType dt;
  if (p == et) {
    t->why = g_strdup("a malformed element type");
    return;
  }
  if (!dtype_from_name(et, (gsize)(p - et), &dt)) {
    t->why = g_strdup_printf("element type %.*s (partir has %s)", (int)(p - et),
                             et, dtype_all_names());
    return;
  }
  while (*p == ' ')
    p++;
  if (*p == ',') {
    t->why = g_strdup("a tensor encoding");
    return;
  }
  if (*p) {
    t->why = g_strdup("a malformed tensor type");
    return;
  }
  t->type = type_tensor(dt, rank, dims);
}

/* After an identifier that may take '<...>' (tensor, complex, tuple,
 * !dialect.type): its angle body, raw, when one follows at once. */
static gboolean read_angle(HloReader *r, GString *text) {
  if (!hlo_is_punct(r, '<') || !hlo_adjacent(r))
    return TRUE;
  g_string_append_c(text, '<');
  gsize start, len;
  if (!lex_angle_body(&r->c.lx, &start, &len)) {
    r->c.failed = TRUE;
    return FALSE;
  }
  g_string_append_len(text, r->c.lx.src->text + start, (gssize)len);
  g_string_append_c(text, '>');
  hlo_next(r);
  return !hlo_failed(r);
}

/* 'tuple<T, ...>' (the word read next): its element types in 'elems',
 * its text rebuilt from theirs. */
static HloType *read_tuple_type(HloReader *r, Loc at) {
  hlo_next(r);
  if (!cursor_punct(&r->c, '<'))
    return NULL;
  HloType *t = g_new0(HloType, 1);
  t->loc = at;
  t->elems = g_ptr_array_new_with_free_func((GDestroyNotify)hlo_type_free);
  t->why = g_strdup("a tuple");
  g_autoptr(GString) text = g_string_new("tuple<");
  if (!hlo_is_punct(r, '>'))
    do {
      HloType *e = hlo_read_type(r);
      if (!e) {
        hlo_type_free(t);
        return NULL;
      }
      g_string_append_printf(text, "%s%s", t->elems->len ? ", " : "", e->text);
      g_ptr_array_add(t->elems, e);
    } while (hlo_accept(r, ','));
  g_string_append_c(text, '>');
  t->text = g_strdup(text->str);
  if (!cursor_punct(&r->c, '>')) {
    hlo_type_free(t);
    return NULL;
  }
  return t;
}

HloType *hlo_read_type(HloReader *r) {
  if (hlo_failed(r))
    return NULL;
  Loc at = TOK->loc;
  g_autoptr(GString) text = g_string_new(NULL);
  gboolean bang = FALSE;
  if (hlo_is_punct(r, '!')) {
    bang = TRUE;
    g_string_append_c(text, '!');
    hlo_next(r);
  }
  if (TOK->kind != TK_IDENT) {
    cursor_expected(&r->c, "a type");
    return NULL;
  }
  if (!bang && hlo_is_word(r, "tuple")) /* tuple<T, ...>: torch-xla's results */
    return read_tuple_type(r, at);
  gboolean tensor = !bang && hlo_is_word(r, "tensor");
  g_string_append_len(text, TOK->start, (gssize)TOK->len);
  hlo_next(r);
  gsize body_from = text->len + 1;
  if (!read_angle(r, text))
    return NULL;
  HloType *t = g_new0(HloType, 1);
  t->loc = at;
  t->text = g_strdup(text->str);
  if (tensor && text->len > body_from) {
    g_autofree char *body =
        g_strndup(text->str + body_from, text->len - body_from - 1);
    read_tensor_body(t, body);
  } else if (tensor) {
    t->why = g_strdup("a tensor type without a shape");
  } else {
    t->why = g_strdup("not a tensor");
  }
  return t;
}

/* '(T, ...)' or a single type: into 'out'. */
static gboolean read_type_list(HloReader *r, GPtrArray *out, gboolean parens) {
  if (parens && !cursor_punct(&r->c, '('))
    return FALSE;
  if (parens && hlo_accept(r, ')'))
    return TRUE;
  do {
    HloType *t = hlo_read_type(r);
    if (!t)
      return FALSE;
    g_ptr_array_add(out, t);
    /* result types in a signature carry attribute dictionaries; a
     * function type in an operation does not */
  } while (parens && hlo_accept(r, ','));
  return !parens || cursor_punct(&r->c, ')');
}

gboolean hlo_read_signature(HloReader *r, HloOp *op) {
  if (hlo_is_punct(r, '{') && !hlo_read_attr_dict(r, op))
    return FALSE;
  return cursor_punct(&r->c, ':') && hlo_read_function_type(r, op);
}

gboolean hlo_read_function_type(HloReader *r, HloOp *op) {
  if (!read_type_list(r, op->operand_types, TRUE))
    return FALSE;
  if (TOK->kind != TK_ARROW)
    return cursor_expected(&r->c, "'->' and the result types");
  hlo_next(r);
  return read_type_list(r, op->result_types, hlo_is_punct(r, '('));
}

/* ----------------------------------------------------------- locations */

static HloLoc *loc_new(HloReader *r, HloLocKind kind) {
  HloLoc *l = g_new0(HloLoc, 1);
  l->kind = kind;
  l->children = g_ptr_array_new();
  g_ptr_array_add(r->file->locs, l);
  return l;
}

static HloLoc *read_loc_inner(HloReader *r);

/* The inside of 'loc(...)' or of a nested location. */
static HloLoc *read_loc_inner(HloReader *r) {
  if (hlo_failed(r) || !hlo_enter(r, TOK->loc, "locations"))
    return NULL;
  HloLoc *l = NULL;
  if (TOK->kind == TK_HASH) {
    l = loc_new(r, HL_ALIAS);
    l->s = token_name(TOK);
    hlo_next(r);
  } else if (hlo_is_word(r, "unknown")) {
    l = loc_new(r, HL_UNKNOWN);
    hlo_next(r);
  } else if (hlo_is_word(r, "callsite")) {
    hlo_next(r);
    l = loc_new(r, HL_CALLSITE);
    HloLoc *callee = NULL, *caller = NULL;
    if (cursor_punct(&r->c, '(') && (callee = read_loc_inner(r)) &&
        cursor_word(&r->c, "at") && (caller = read_loc_inner(r)) &&
        cursor_punct(&r->c, ')')) {
      g_ptr_array_add(l->children, callee);
      g_ptr_array_add(l->children, caller);
    }
  } else if (hlo_is_word(r, "fused")) {
    hlo_next(r);
    l = loc_new(r, HL_FUSED);
    if (hlo_is_punct(r, '<')) { /* fused<metadata>[...] */
      hlo_next(r);
      hlo_attr_free(hlo_read_attr(r));
      cursor_punct(&r->c, '>');
    }
    if (cursor_punct(&r->c, '[') && !hlo_accept(r, ']')) {
      do {
        HloLoc *c = read_loc_inner(r);
        if (c)
          g_ptr_array_add(l->children, c);
      } while (!hlo_failed(r) && hlo_accept(r, ','));
      cursor_punct(&r->c, ']');
    }
  } else if (TOK->kind == TK_STRING) {
    char *s = g_strdup(TOK->text);
    hlo_next(r);
    if (hlo_is_punct(r, ':')) { /* "file":line:col [to [line]:col] */
      l = loc_new(r, HL_FILE);
      l->s = s;
      hlo_next(r);
      if (TOK->kind != TK_INT) {
        cursor_expected(&r->c, "a line number");
      } else {
        l->line = (int)CLAMP(TOK->i, 0, G_MAXINT);
        hlo_next(r);
        if (cursor_punct(&r->c, ':')) {
          if (TOK->kind != TK_INT)
            cursor_expected(&r->c, "a column number");
          l->col = (int)CLAMP(TOK->i, 0, G_MAXINT);
          hlo_next(r);
        }
      }
      if (!hlo_failed(r) && hlo_is_word(r, "to")) {
        hlo_next(r);
        if (TOK->kind == TK_INT)
          hlo_next(r);
        if (cursor_punct(&r->c, ':') && TOK->kind == TK_INT)
          hlo_next(r);
      }
    } else {
      l = loc_new(r, HL_NAME);
      l->s = s;
      if (hlo_accept(r, '(')) {
        HloLoc *c = read_loc_inner(r);
        if (c)
          g_ptr_array_add(l->children, c);
        cursor_punct(&r->c, ')');
      }
    }
  } else {
    cursor_expected(&r->c, "a location");
  }
  r->depth--;
  return hlo_failed(r) ? NULL : l;
}

/* 'loc(...)' after an operation or an argument, when there is one. */
gboolean hlo_read_loc(HloReader *r, HloLoc **out) {
  *out = NULL;
  if (!hlo_is_word(r, "loc"))
    return !hlo_failed(r);
  hlo_next(r);
  if (!cursor_punct(&r->c, '('))
    return FALSE;
  *out = read_loc_inner(r);
  return *out && cursor_punct(&r->c, ')');
}

/* ---------------------------------------------------------- attributes */

static HloAttr *read_attr_at(HloReader *r);

/* '{k = v, k2, ...}' into parallel 'keys' and 'values' (a key alone is a
 * unit attribute). */
static gboolean read_dict_into(HloReader *r, GPtrArray *keys, GPtrArray *values,
                               char close) {
  guint from = keys->len; /* a dictionary may add to what is there */
  while (!hlo_failed(r) && !hlo_is_punct(r, close)) {
    if (keys->len > from && !cursor_punct(&r->c, ','))
      return FALSE;
    if (TOK->kind != TK_IDENT && TOK->kind != TK_STRING)
      return cursor_expected(&r->c, "an attribute name");
    Loc at = TOK->loc;
    char *key = token_name(TOK);
    hlo_next(r);
    HloAttr *v;
    if (hlo_accept(r, '=')) {
      v = hlo_read_attr(r);
      if (!v) {
        g_free(key);
        return FALSE;
      }
    } else {
      v = hlo_attr_new(HA_WORD, at);
      v->s = g_strdup("unit");
    }
    g_ptr_array_add(keys, key);
    g_ptr_array_add(values, v);
  }
  return cursor_punct(&r->c, close);
}

/* Follows the current token's brackets in 'stack' (the open ones, on
 * the heap: nesting does not use the C stack): an opening one is pushed,
 * a closing one pops its match; FALSE (with the error) for one that
 * closes nothing or the wrong bracket. */
static gboolean nest(HloReader *r, GString *stack) {
  if (TOK->kind != TK_PUNCT)
    return TRUE;
  char ch = TOK->punct;
  if (strchr("(<[{", ch)) {
    g_string_append_c(stack, ch);
    return TRUE;
  }
  if (!strchr(")>]}", ch))
    return TRUE;
  if (stack->len == 0)
    return cursor_fail(&r->c, TOK->loc, "unbalanced '%c'", ch);
  char open = stack->str[stack->len - 1];
  char want = open == '(' ? ')' : open == '<' ? '>' : open == '[' ? ']' : '}';
  if (ch != want)
    return cursor_fail(&r->c, TOK->loc, "'%c' expected, got '%c'", want, ch);
  g_string_truncate(stack, stack->len - 1);
  return TRUE;
}

/* Reads past tokens up to the '>' closing an '<' already read (at
 * 'a->loc'), brackets balanced. */
static gboolean skip_to_angle_close(HloReader *r, HloAttr *a) {
  g_autoptr(GString) stack = g_string_new("<");
  while (!hlo_failed(r)) {
    if (TOK->kind == TK_EOF)
      return cursor_fail(&r->c, a->loc,
                         "'>' expected (to close '<' at line %d)", a->loc.line);
    if (!nest(r, stack))
      return FALSE;
    if (stack->len == 0) {
      a->end = TOK->loc.offset + TOK->len;
      hlo_next(r);
      return !hlo_failed(r);
    }
    hlo_next(r);
  }
  return FALSE;
}

/* After '#name': '<' ... '>' as a dictionary (#stablehlo.dot<k = v>), a
 * word (#stablehlo<comparison_direction GT> is the word GT), or read
 * past (any other); no '<': a reference to an alias. */
static HloAttr *read_hash_attr(HloReader *r, Loc at) {
  char *name = token_name(TOK);
  gsize name_end = TOK->loc.offset + TOK->len;
  hlo_next(r);
  if (!hlo_is_punct(r, '<') || !hlo_adjacent(r)) {
    HloAttr *a = hlo_attr_new(HA_OPAQUE, at);
    a->s = name;
    a->end = name_end;
    return a;
  }
  hlo_next(r);
  HloAttr *a = hlo_attr_new(HA_OPAQUE, at);
  a->s = name;
  if (TOK->kind == TK_IDENT) {
    Loc word_at = TOK->loc;
    char *first = token_name(TOK);
    hlo_next(r);
    if (hlo_is_punct(r, '=')) {
      a->kind = HA_DICT;
      a->keys = g_ptr_array_new_with_free_func(g_free);
      a->items = hlo_attr_array();
      hlo_next(r);
      HloAttr *v = hlo_read_attr(r);
      if (!v) {
        g_free(first);
        hlo_attr_free(a);
        return NULL;
      }
      g_ptr_array_add(a->keys, first);
      g_ptr_array_add(a->items, v);
      if (hlo_accept(r, ',') ? !read_dict_into(r, a->keys, a->items, '>')
                             : !cursor_punct(&r->c, '>')) {
        hlo_attr_free(a);
        return NULL;
      }
      return a;
    }
    if (TOK->kind == TK_IDENT) {
      HloAttr *w = hlo_attr_new(HA_WORD, word_at);
      w->s = token_name(TOK);
      hlo_next(r);
      g_free(first);
      hlo_attr_free(a);
      if (!cursor_punct(&r->c, '>')) {
        hlo_attr_free(w);
        return NULL;
      }
      return w;
    }
    g_free(first);
    if (hlo_is_punct(r, '>')) {
      a->end = TOK->loc.offset + TOK->len;
      hlo_next(r);
      return a;
    }
  }
  if (!skip_to_angle_close(r, a)) {
    hlo_attr_free(a);
    return NULL;
  }
  return a;
}

/* The ': type' that may follow a number or must follow a dense. */
static gboolean read_attr_type(HloReader *r, HloAttr *a, gboolean required) {
  if (!hlo_is_punct(r, ':') || (!required && r->bare_numbers)) {
    if (required)
      return cursor_expected(&r->c, "':' and the type");
    return TRUE;
  }
  hlo_next(r);
  a->type = hlo_read_type(r);
  return a->type != NULL;
}

/* dense<...> : type (the '<' next). */
static HloAttr *read_dense(HloReader *r, Loc at) {
  HloAttr *a = hlo_attr_new(HA_DENSE, at);
  a->items = hlo_attr_array();
  if (!cursor_punct(&r->c, '<')) {
    hlo_attr_free(a);
    return NULL;
  }
  if (TOK->kind == TK_STRING) {
    a->s = g_strdup(TOK->text); /* a hex blob */
    hlo_next(r);
  } else if (!hlo_is_punct(r, '>')) {
    HloAttr *v = hlo_read_attr(r);
    if (v)
      g_ptr_array_add(a->items, v);
  }
  if (!cursor_punct(&r->c, '>') || !read_attr_type(r, a, TRUE)) {
    hlo_attr_free(a);
    return NULL;
  }
  return a;
}

/* array<i64: 1, 2> or array<i64> (the '<' next): a list. */
static HloAttr *read_array(HloReader *r, Loc at) {
  HloAttr *a = hlo_attr_new(HA_LIST, at);
  a->items = hlo_attr_array();
  if (!cursor_punct(&r->c, '<')) {
    hlo_attr_free(a);
    return NULL;
  }
  HloType *et = hlo_read_type(r);
  hlo_type_free(et);
  if (!hlo_failed(r) && hlo_accept(r, ':')) {
    do {
      HloAttr *v = hlo_read_attr(r);
      if (!v)
        break;
      g_ptr_array_add(a->items, v);
    } while (hlo_accept(r, ','));
  }
  if (!cursor_punct(&r->c, '>')) {
    hlo_attr_free(a);
    return NULL;
  }
  return a;
}

static HloAttr *read_attr_at(HloReader *r) {
  if (hlo_failed(r) || !hlo_enter(r, TOK->loc, "attributes"))
    return NULL;
  HloAttr *a = NULL;
  Loc at = TOK->loc;
  switch (TOK->kind) {
  case TK_INT:
    a = hlo_attr_new(HA_INT, at);
    a->i = TOK->i;
    a->hex = TOK->len > 2 && TOK->start[0] == '0' && TOK->start[1] == 'x';
    hlo_next(r);
    if (!read_attr_type(r, a, FALSE))
      g_clear_pointer(&a, hlo_attr_free);
    break;
  case TK_FLOAT:
    a = hlo_attr_new(HA_FLOAT, at);
    a->f = TOK->f;
    hlo_next(r);
    if (!read_attr_type(r, a, FALSE))
      g_clear_pointer(&a, hlo_attr_free);
    break;
  case TK_STRING:
    a = hlo_attr_new(HA_STRING, at);
    a->s = g_strdup(TOK->text);
    hlo_next(r);
    break;
  case TK_SYMBOL:
    a = hlo_attr_new(HA_SYMREF, at);
    a->s = token_name(TOK);
    hlo_next(r);
    break;
  case TK_HASH:
    a = read_hash_attr(r, at);
    break;
  case TK_IDENT:
    if (hlo_is_word(r, "true") || hlo_is_word(r, "false")) {
      a = hlo_attr_new(HA_INT, at);
      a->i = hlo_is_word(r, "true");
      a->boolean = TRUE;
      hlo_next(r);
      if (!read_attr_type(r, a, FALSE))
        g_clear_pointer(&a, hlo_attr_free);
    } else if (hlo_is_word(r, "dense")) {
      hlo_next(r);
      a = read_dense(r, at);
    } else if (hlo_is_word(r, "array")) {
      hlo_next(r);
      a = read_array(r, at);
    } else if (hlo_is_word(r, "tensor")) {
      a = hlo_attr_new(HA_TYPE, at);
      if (!(a->type = hlo_read_type(r)))
        g_clear_pointer(&a, hlo_attr_free);
    } else {
      /* a word (DEFAULT, unit), or a dialect attribute written
       * 'dense_resource<...>', 'affine_map<...>': read past */
      char *word = token_name(TOK);
      hlo_next(r);
      if (hlo_is_punct(r, '<') && hlo_adjacent(r)) {
        a = hlo_attr_new(HA_OPAQUE, at);
        a->s = word;
        hlo_next(r);
        if (!skip_to_angle_close(r, a))
          g_clear_pointer(&a, hlo_attr_free);
        break;
      }
      a = hlo_attr_new(HA_WORD, at);
      a->s = word;
      if (!read_attr_type(r, a, FALSE))
        g_clear_pointer(&a, hlo_attr_free);
    }
    break;
  case TK_PUNCT:
    if (TOK->punct == '[') {
      hlo_next(r);
      a = hlo_attr_new(HA_LIST, at);
      a->items = hlo_attr_array();
      while (!hlo_failed(r) && !hlo_is_punct(r, ']')) {
        if (a->items->len > 0 && !cursor_punct(&r->c, ','))
          break;
        HloAttr *v = hlo_read_attr(r);
        if (!v)
          break;
        g_ptr_array_add(a->items, v);
      }
      if (!cursor_punct(&r->c, ']'))
        g_clear_pointer(&a, hlo_attr_free);
    } else if (TOK->punct == '{') {
      hlo_next(r);
      a = hlo_attr_new(HA_DICT, at);
      a->keys = g_ptr_array_new_with_free_func(g_free);
      a->items = hlo_attr_array();
      if (!read_dict_into(r, a->keys, a->items, '}'))
        g_clear_pointer(&a, hlo_attr_free);
    } else if (TOK->punct == '(') { /* a function type */
      a = hlo_attr_new(HA_FUNCTYPE, at);
      a->items = hlo_attr_array();
      HloOp *tmp = hlo_op_new("", at);
      if (hlo_read_function_type(r, tmp)) {
        for (int k = 0; k < 2; k++) {
          GPtrArray *from = k ? tmp->result_types : tmp->operand_types;
          HloAttr *list = hlo_attr_new(HA_LIST, at);
          list->items = hlo_attr_array();
          for (guint i = 0; i < from->len; i++) {
            HloAttr *t = hlo_attr_new(HA_TYPE, at);
            t->type = hlo_type_copy(g_ptr_array_index(from, i));
            g_ptr_array_add(list->items, t);
          }
          g_ptr_array_add(a->items, list);
        }
      } else {
        g_clear_pointer(&a, hlo_attr_free);
      }
      hlo_op_free(tmp);
    } else if (TOK->punct == '<') { /* algorithm = <...>: read past */
      hlo_next(r);
      a = hlo_attr_new(HA_OPAQUE, at);
      if (!skip_to_angle_close(r, a))
        g_clear_pointer(&a, hlo_attr_free);
    } else if (TOK->punct == '!') {
      a = hlo_attr_new(HA_TYPE, at);
      if (!(a->type = hlo_read_type(r)))
        g_clear_pointer(&a, hlo_attr_free);
    } else {
      cursor_expected(&r->c, "an attribute");
    }
    break;
  default:
    cursor_expected(&r->c, "an attribute");
    break;
  }
  r->depth--;
  if (hlo_failed(r))
    g_clear_pointer(&a, hlo_attr_free);
  return a;
}

HloAttr *hlo_read_attr(HloReader *r) { return read_attr_at(r); }

gboolean hlo_read_attr_dict(HloReader *r, HloOp *op) {
  if (!cursor_punct(&r->c, '{'))
    return FALSE;
  return read_dict_into(r, op->attr_keys, op->attr_values, '}');
}

/* ---------------------------------------------------------- operations */

gboolean hlo_read_use(HloReader *r, HloUse *out) {
  memset(out, 0, sizeof *out);
  if (hlo_failed(r))
    return FALSE;
  if (TOK->kind != TK_VALUE)
    return cursor_expected(&r->c, "a value ('%name')");
  out->name = token_name(TOK);
  out->loc = TOK->loc;
  out->index = -1;
  hlo_next(r);
  if (TOK->kind == TK_HASH && hlo_adjacent(r)) { /* %0#1 */
    g_autofree char *k = token_name(TOK);
    char *end;
    guint64 v = g_ascii_strtoull(k, &end, 10);
    if (*end || !*k || v > G_MAXINT) {
      cursor_fail(&r->c, TOK->loc, "expected a result number after '#'");
      g_clear_pointer(&out->name, g_free);
      return FALSE;
    }
    out->index = (int)v;
    hlo_next(r);
  }
  if (hlo_failed(r)) /* the token after it is bad: the caller drops 'out' */
    g_clear_pointer(&out->name, g_free);
  return out->name != NULL;
}

gboolean hlo_read_uses(HloReader *r, HloOp *op, gboolean parens) {
  if (parens) {
    if (!cursor_punct(&r->c, '('))
      return FALSE;
    if (hlo_accept(r, ')'))
      return TRUE;
  }
  do {
    HloUse u;
    if (!hlo_read_use(r, &u))
      return FALSE;
    g_array_append_val(op->uses, u);
  } while (hlo_accept(r, ',') && (parens || TOK->kind == TK_VALUE));
  return !parens || cursor_punct(&r->c, ')');
}

/* TRUE when the token at 'offset' is the first on its line. */
static gboolean first_on_line(const Source *src, gsize offset) {
  while (offset > 0 &&
         (src->text[offset - 1] == ' ' || src->text[offset - 1] == '\t'))
    offset--;
  return offset == 0 || src->text[offset - 1] == '\n';
}

/* Could the current token start the next operation (or close the
 * region) — at the start of its line: '%name', '"dialect.op"', a dotted
 * name, 'return', or '}'? */
static gboolean starts_statement(HloReader *r) {
  if (!first_on_line(r->c.lx.src, TOK->loc.offset))
    return FALSE;
  if (TOK->kind == TK_VALUE || TOK->kind == TK_STRING || hlo_is_punct(r, '}'))
    return TRUE;
  if (TOK->kind != TK_IDENT)
    return FALSE;
  return hlo_is_word(r, "return") || memchr(TOK->start, '.', TOK->len) != NULL;
}

gboolean hlo_skip_op(HloReader *r) {
  g_autoptr(GString) stack = g_string_new(NULL);
  Loc from = TOK->loc;
  while (!hlo_failed(r)) {
    if (TOK->kind == TK_EOF) {
      if (stack->len)
        return cursor_fail(&r->c, from,
                           "unexpected end of input: this operation's brackets "
                           "are not closed");
      return TRUE;
    }
    if (stack->len == 0 &&
        (starts_statement(r) || hlo_is_word(r, "loc") || hlo_is_punct(r, '}')))
      return TRUE;
    if (!nest(r, stack))
      return FALSE;
    hlo_next(r);
  }
  return FALSE;
}
