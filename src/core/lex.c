/* lex.c — tokens of the partir language.
 *
 * Identifiers may contain '.' (partir.tile, partir.range).  Numbers may
 * carry a sign so that attribute values read naturally ([-1, 2.5e-3]);
 * 'inf', '-inf' and 'nan' are float literals.  Tensor shapes
 * (16x256xf32) are not tokens: the parser hands 'tensor<' to
 * lex_tensor_shape(), which reads the raw characters.  Any byte that
 * starts no token is reported with its position; the lexer never reads
 * past the end of the source.
 *
 * With 'mlir' set the lexer reads MLIR's text as well (the StableHLO
 * importer, src/import/): attribute aliases and result numbers
 * ('#loc3', '%0#1'), block labels ('^bb0'), names with '-', hexadecimal
 * integers (the bit patterns of 'dense<0xFF800000>'), MLIR's string
 * escapes, the '{-# ... #-}' metadata at the end of a file (skipped: it
 * holds resources, which the importer refuses where they are used), and
 * any other printable byte as punctuation, so that an operation the
 * importer does not know can still be read past token by token.
 */
#include "core/core.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void lex_init(Lexer *lx, const Source *src, Diag *diag) {
  lx->src = src;
  lx->diag = diag;
  lx->pos = 0;
  lx->line = 1;
  lx->line_start = 0;
  lx->rules = FALSE;
  lx->mlir = FALSE;
}

Loc lex_loc(const Lexer *lx) {
  return (Loc){.line = lx->line,
               .col = (int)(lx->pos - lx->line_start) + 1,
               .offset = lx->pos};
}

static int peek(const Lexer *lx, gsize ahead) {
  gsize p = lx->pos + ahead;
  return p < lx->src->len ? (unsigned char)lx->src->text[p] : -1;
}

static void advance(Lexer *lx) {
  if (lx->src->text[lx->pos] == '\n') {
    lx->line++;
    lx->line_start = lx->pos + 1;
  }
  lx->pos++;
}

/* In MLIR text, '{-#' opens file metadata that runs to '#-}' (or the
 * end of the input). */
static void skip_metadata(Lexer *lx) {
  while (peek(lx, 0) != -1 &&
         !(peek(lx, 0) == '#' && peek(lx, 1) == '-' && peek(lx, 2) == '}'))
    advance(lx);
  for (int i = 0; i < 3 && peek(lx, 0) != -1; i++)
    advance(lx);
}

static void skip_space(Lexer *lx) {
  for (;;) {
    int c = peek(lx, 0);
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      advance(lx);
    } else if (lx->mlir && c == '{' && peek(lx, 1) == '-' &&
               peek(lx, 2) == '#') {
      skip_metadata(lx);
    } else if ((c == '/' && peek(lx, 1) == '/') || (c == '#' && lx->rules)) {
      while (peek(lx, 0) != -1 && peek(lx, 0) != '\n')
        advance(lx);
    } else {
      return;
    }
  }
}

void token_clear(Token *tok) {
  g_free(tok->text);
  memset(tok, 0, sizeof *tok);
}

static gboolean is_name_char(int c) {
  return c >= 0 && (g_ascii_isalnum(c) || c == '_' || c == '.' || c == '$');
}

/* MLIR's suffix identifiers (%foo-bar, #loc-1) also allow '-'. */
static gboolean is_sigil_name_char(const Lexer *lx, int c) {
  return is_name_char(c) || (lx->mlir && c == '-');
}

static void lex_error(Lexer *lx, Token *tok, Loc loc, const char *msg) {
  diag_error(lx->diag, loc, "%s", msg);
  tok->kind = TK_ERROR;
}

/* MLIR: '0x' and hexadecimal digits at the cursor, as the bits of a
 * 64-bit integer (0xFF800000 is the bit pattern of -inf in f32). */
static void lex_hex(Lexer *lx, Token *tok) {
  advance(lx);
  advance(lx);
  guint64 v = 0;
  int digits = 0;
  while (peek(lx, 0) >= 0 && g_ascii_isxdigit(peek(lx, 0))) {
    v = v << 4 | (guint64)g_ascii_xdigit_value((char)peek(lx, 0));
    digits++;
    advance(lx);
  }
  tok->len = (gsize)(lx->src->text + lx->pos - tok->start);
  if (digits > 16) {
    lex_error(lx, tok, tok->loc, "hexadecimal literal wider than 64 bits");
    return;
  }
  tok->kind = TK_INT;
  tok->i = (int64_t)v;
}

/* Reads a number at the cursor (an optional '-' already checked). */
static void lex_number(Lexer *lx, Token *tok) {
  gsize start = lx->pos;
  if (lx->mlir && peek(lx, 0) == '0' && (peek(lx, 1) == 'x') &&
      peek(lx, 2) >= 0 && g_ascii_isxdigit(peek(lx, 2))) {
    lex_hex(lx, tok);
    return;
  }
  if (peek(lx, 0) == '-' || peek(lx, 0) == '+')
    advance(lx);
  gboolean is_float = FALSE;
  while (peek(lx, 0) >= 0 && g_ascii_isdigit(peek(lx, 0)))
    advance(lx);
  if (peek(lx, 0) == '.' && peek(lx, 1) >= 0 && g_ascii_isdigit(peek(lx, 1))) {
    is_float = TRUE;
    advance(lx);
    while (peek(lx, 0) >= 0 && g_ascii_isdigit(peek(lx, 0)))
      advance(lx);
  }
  if (peek(lx, 0) == 'e' || peek(lx, 0) == 'E') {
    gsize save = lx->pos;
    advance(lx);
    if (peek(lx, 0) == '-' || peek(lx, 0) == '+')
      advance(lx);
    if (peek(lx, 0) >= 0 && g_ascii_isdigit(peek(lx, 0))) {
      is_float = TRUE;
      while (peek(lx, 0) >= 0 && g_ascii_isdigit(peek(lx, 0)))
        advance(lx);
    } else {
      lx->pos = save; /* no line change possible inside a number */
    }
  }
  gsize len = lx->pos - start;
  tok->start = lx->src->text + start;
  tok->len = len;
  g_autofree char *text = g_strndup(tok->start, len);
  if (is_float) {
    tok->kind = TK_FLOAT;
    tok->f = g_ascii_strtod(text, NULL);
    return;
  }
  errno = 0;
  char *end;
  long long v = strtoll(text, &end, 10);
  if (errno == ERANGE) {
    lex_error(lx, tok, tok->loc, "integer literal out of range");
    return;
  }
  tok->kind = TK_INT;
  tok->i = v;
}

void lex_append_string(GString *out, const char *s) {
  g_string_append_c(out, '"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      g_string_append_c(out, '\\');
    if (*s == '\n')
      g_string_append(out, "\\n");
    else
      g_string_append_c(out, *s);
  }
  g_string_append_c(out, '"');
}

static void lex_string(Lexer *lx, Token *tok) {
  advance(lx); /* opening quote */
  GString *s = g_string_new(NULL);
  for (;;) {
    int c = peek(lx, 0);
    if (c == -1 || c == '\n') {
      g_string_free(s, TRUE);
      lex_error(lx, tok, tok->loc, "unterminated string");
      return;
    }
    advance(lx);
    if (c == '"')
      break;
    if (c == '\\') {
      int e = peek(lx, 0);
      if (e == '"' || e == '\\') {
        g_string_append_c(s, (char)e);
        advance(lx);
        continue;
      }
      if (e == 'n') {
        g_string_append_c(s, '\n');
        advance(lx);
        continue;
      }
      if (lx->mlir && e == 't') {
        g_string_append_c(s, '\t');
        advance(lx);
        continue;
      }
      if (lx->mlir && e >= 0 && g_ascii_isxdigit(e) && peek(lx, 1) >= 0 &&
          g_ascii_isxdigit(peek(lx, 1))) { /* \22: a byte in hexadecimal */
        int byte = g_ascii_xdigit_value((char)e) * 16 +
                   g_ascii_xdigit_value((char)peek(lx, 1));
        advance(lx);
        advance(lx);
        if (byte != 0) {
          g_string_append_c(s, (char)byte);
          continue;
        }
        g_string_free(s, TRUE);
        lex_error(lx, tok, tok->loc, "NUL byte in string");
        return;
      }
      g_string_free(s, TRUE);
      lex_error(lx, tok, lex_loc(lx), "unknown escape in string");
      return;
    }
    if (c == 0) {
      g_string_free(s, TRUE);
      lex_error(lx, tok, tok->loc, "NUL byte in string");
      return;
    }
    g_string_append_c(s, (char)c);
  }
  tok->kind = TK_STRING;
  tok->text = g_string_free(s, FALSE);
  tok->len = (gsize)(lx->src->text + lx->pos - tok->start);
}

/* '%name' or '@name' (MLIR: also '#name', '^name'), the sigil 'c' at the
 * cursor: a value, a symbol, an alias or a block (without the sigil). */
static void lex_sigil_name(Lexer *lx, Token *tok, int c) {
  advance(lx);
  gsize start = lx->pos;
  while (is_sigil_name_char(lx, peek(lx, 0)))
    advance(lx);
  if (lx->pos == start) {
    g_autofree char *msg = g_strdup_printf("expected a name after '%c'", c);
    lex_error(lx, tok, tok->loc,
              c == '%' ? "expected a value name after '%'" : msg);
    return;
  }
  tok->kind = c == '%'   ? TK_VALUE
              : c == '@' ? TK_SYMBOL
              : c == '#' ? TK_HASH
                         : TK_CARET;
  tok->start = lx->src->text + start;
  tok->len = lx->pos - start;
}

/* The operators and punctuation only rule files have ('<~~>', '~~>',
 * comparisons, '\', '/', '*', ';'), 'c' at the cursor: whether one was
 * lexed into 'tok'. */
static gboolean lex_rule_op(Lexer *lx, Token *tok, int c) {
  static const char *const ops[] = {"<~~>", "~~>", "==", "!=", "<=", ">="};
  for (gsize k = 0; k < G_N_ELEMENTS(ops); k++) {
    gsize n = strlen(ops[k]);
    if (lx->src->len - lx->pos >= n &&
        memcmp(lx->src->text + lx->pos, ops[k], n) == 0) {
      for (gsize j = 0; j < n; j++)
        advance(lx);
      tok->kind = TK_OP;
      tok->len = n;
      return TRUE;
    }
  }
  if (c != 0 && strchr("\\/*;", c)) {
    advance(lx);
    tok->kind = TK_PUNCT;
    tok->punct = (char)c;
    tok->len = 1;
    return TRUE;
  }
  return FALSE;
}

/* The next token at the cursor into 'tok' (cleared first): TK_EOF at the
 * end, TK_ERROR after a diagnostic. */
void lex_next(Lexer *lx, Token *tok) {
  token_clear(tok);
  skip_space(lx);
  tok->loc = lex_loc(lx);
  tok->start = lx->src->text + lx->pos;
  int c = peek(lx, 0);
  if (c == -1) {
    tok->kind = TK_EOF;
    return;
  }
  if (c == '@' && peek(lx, 1) == '"') { /* @"axis name" */
    advance(lx);
    lex_string(lx, tok);
    if (tok->kind == TK_STRING)
      tok->kind = TK_SYMBOL;
    return;
  }
  if (c == '%' || c == '@' || (lx->mlir && (c == '#' || c == '^'))) {
    lex_sigil_name(lx, tok, c);
    return;
  }
  if (g_ascii_isdigit(c) || ((c == '-' || c == '+') && peek(lx, 1) >= 0 &&
                             g_ascii_isdigit(peek(lx, 1)))) {
    lex_number(lx, tok);
    return;
  }
  if (c == '-' && peek(lx, 1) == '>') {
    advance(lx);
    advance(lx);
    tok->kind = TK_ARROW;
    tok->len = 2;
    return;
  }
  if (c == '-' && peek(lx, 1) == 'i' && peek(lx, 2) == 'n' &&
      peek(lx, 3) == 'f' && !is_name_char(peek(lx, 4))) {
    for (int i = 0; i < 4; i++)
      advance(lx);
    tok->kind = TK_FLOAT;
    tok->f = -INFINITY;
    tok->len = 4;
    return;
  }
  if (g_ascii_isalpha(c) || c == '_') {
    while (is_name_char(peek(lx, 0)))
      advance(lx);
    tok->kind = TK_IDENT;
    tok->len = (gsize)(lx->src->text + lx->pos - tok->start);
    if (token_is(tok, "inf") || token_is(tok, "nan")) {
      tok->f = token_is(tok, "inf") ? INFINITY : NAN;
      tok->kind = TK_FLOAT;
    }
    return;
  }
  if (c == '"') {
    lex_string(lx, tok);
    return;
  }
  if (lx->rules && lex_rule_op(lx, tok, c))
    return;
  if ((strchr("(){}[],:=<>!", c) && c != 0) ||
      (lx->mlir && c > 0x20 && c < 0x7f)) {
    advance(lx);
    tok->kind = TK_PUNCT;
    tok->punct = (char)c;
    tok->len = 1;
    return;
  }
  if (c >= 0x20 && c < 0x7f)
    diag_error(lx->diag, tok->loc, "unexpected character '%c'", c);
  else
    diag_error(lx->diag, tok->loc, "unexpected byte 0x%02x", (unsigned)c);
  tok->kind = TK_ERROR;
}

gboolean lex_tensor_shape(Lexer *lx, int *rank, int64_t *dims, DType *dt) {
  *rank = 0;
  for (;;) {
    Loc at = lex_loc(lx);
    int c = peek(lx, 0);
    if (c >= 0 && g_ascii_isdigit(c)) {
      int64_t v = 0;
      while (peek(lx, 0) >= 0 && g_ascii_isdigit(peek(lx, 0))) {
        if (v > (G_MAXINT64 - 9) / 10) {
          diag_error(lx->diag, at, "dimension size too large");
          return FALSE;
        }
        v = v * 10 + (peek(lx, 0) - '0');
        advance(lx);
      }
      if (peek(lx, 0) != 'x') {
        diag_error(lx->diag, lex_loc(lx),
                   "expected 'x' after a dimension size in a tensor type");
        return FALSE;
      }
      advance(lx);
      if (*rank == PARTIR_MAX_RANK) {
        diag_error(lx->diag, at, "tensor rank exceeds %d", PARTIR_MAX_RANK);
        return FALSE;
      }
      if (v < 1) {
        diag_error(lx->diag, at, "dimension sizes must be positive");
        return FALSE;
      }
      dims[(*rank)++] = v;
      continue;
    }
    gsize start = lx->pos;
    while (peek(lx, 0) >= 0 && g_ascii_isalnum(peek(lx, 0)))
      advance(lx);
    if (!dtype_from_name(lx->src->text + start, lx->pos - start, dt)) {
      diag_error(lx->diag, at, "expected an element type (%s)",
                 dtype_all_names());
      return FALSE;
    }
    if (peek(lx, 0) != '>') {
      diag_error(lx->diag, lex_loc(lx),
                 "expected '>' to close the tensor type");
      return FALSE;
    }
    advance(lx);
    return TRUE;
  }
}

gboolean lex_angle_body(Lexer *lx, gsize *start, gsize *len) {
  Loc open = lex_loc(lx);
  *start = lx->pos;
  int depth = 1;
  for (;;) {
    int c = peek(lx, 0);
    if (c == -1 || c == '\n') {
      diag_error(lx->diag, open, "'>' expected before the end of the %s",
                 c == -1 ? "input" : "line");
      return FALSE;
    }
    if (c == '<') {
      depth++;
    } else if (c == '>' && --depth == 0) {
      *len = lx->pos - *start;
      advance(lx);
      return TRUE;
    }
    advance(lx);
  }
}

char *token_name(const Token *tok) {
  return tok->text ? g_strdup(tok->text) : g_strndup(tok->start, tok->len);
}

gboolean token_is(const Token *tok, const char *ident) {
  return tok->kind == TK_IDENT && strlen(ident) == tok->len &&
         memcmp(tok->start, ident, tok->len) == 0;
}

gboolean lex_raw_name(Lexer *lx, Token *tok) {
  token_clear(tok);
  skip_space(lx);
  tok->loc = lex_loc(lx);
  tok->start = lx->src->text + lx->pos;
  while (peek(lx, 0) >= 0 &&
         (g_ascii_isalnum(peek(lx, 0)) || strchr("_.-", peek(lx, 0))))
    advance(lx);
  tok->len = (gsize)(lx->src->text + lx->pos - tok->start);
  tok->kind = tok->len ? TK_IDENT : TK_ERROR;
  if (!tok->len)
    diag_error(lx->diag, tok->loc, "expected a name");
  return tok->len > 0;
}

gboolean token_op(const Token *tok, const char *op) {
  return tok->kind == TK_OP && strlen(op) == tok->len &&
         memcmp(tok->start, op, tok->len) == 0;
}

gboolean token_punct(const Token *tok, char c) {
  return tok->kind == TK_PUNCT && tok->punct == c;
}

char *token_describe(const Token *tok) {
  switch (tok->kind) {
  case TK_EOF:
    return g_strdup("end of input");
  case TK_ERROR:
    return g_strdup("an invalid token");
  case TK_STRING:
    return g_strdup("a string");
  default: {
    gsize n = MIN(tok->len, 40);
    g_autofree char *raw = g_strndup(tok->start, n);
    for (char *p = raw; *p; p++)
      if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
        *p = '?';
    const char *prefix = tok->kind == TK_VALUE    ? "%"
                         : tok->kind == TK_SYMBOL ? "@"
                         : tok->kind == TK_HASH   ? "#"
                         : tok->kind == TK_CARET  ? "^"
                                                  : "";
    return g_strdup_printf("'%s%s%s'", prefix, raw, tok->len > n ? "..." : "");
  }
  }
}

/* ------------------------------------------------------------- cursor */

void cursor_init(Cursor *c, const Source *src, Diag *diag) {
  memset(c, 0, sizeof *c);
  lex_init(&c->lx, src, diag);
}

void cursor_next(Cursor *c) {
  if (c->tok.start)
    c->prev_end = (gsize)(c->tok.start - c->lx.src->text) + c->tok.len;
  lex_next(&c->lx, &c->tok);
  if (c->tok.kind == TK_ERROR)
    c->failed = TRUE;
}

gboolean cursor_vfail(Cursor *c, Loc loc, const char *fmt, va_list ap) {
  if (!c->failed) {
    diag_verror(c->lx.diag, loc, fmt, ap);
  }
  c->failed = TRUE;
  return FALSE;
}

gboolean cursor_fail(Cursor *c, Loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cursor_vfail(c, loc, fmt, ap);
  va_end(ap);
  return FALSE;
}

gboolean cursor_expected(Cursor *c, const char *what) {
  g_autofree char *got = token_describe(&c->tok);
  return cursor_fail(c, c->tok.loc, "expected %s, got %s", what, got);
}

gboolean cursor_punct(Cursor *c, char ch) {
  if (c->failed)
    return FALSE;
  if (!token_punct(&c->tok, ch)) {
    char what[4] = {'\'', ch, '\'', 0};
    return cursor_expected(c, what);
  }
  cursor_next(c);
  return !c->failed;
}

gboolean cursor_word(Cursor *c, const char *word) {
  if (c->failed)
    return FALSE;
  if (!token_is(&c->tok, word)) {
    g_autofree char *what = g_strdup_printf("'%s'", word);
    return cursor_expected(c, what);
  }
  cursor_next(c);
  return !c->failed;
}

const char *cursor_name(Cursor *c, const char *what) {
  if (c->failed)
    return NULL;
  if (c->tok.kind != TK_IDENT) {
    cursor_expected(c, what);
    return NULL;
  }
  g_autofree char *n = token_name(&c->tok);
  cursor_next(c);
  return g_intern_string(n);
}

gboolean cursor_peek_punct(Cursor *c, char ch) {
  Lexer save = c->lx;
  Token peeked = {0};
  lex_next(&c->lx, &peeked);
  gboolean is = token_punct(&peeked, ch);
  token_clear(&peeked);
  c->lx = save;
  return is;
}
