/* lex.h — the tokenizer and the read position shared by the program
 * parser (parse.c) and the rule parser (rule.c). */
#ifndef PARTIR_LEX_H
#define PARTIR_LEX_H

#include "partir-int.h"

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
} Lexer;

void lex_init(Lexer *lx, const Source *src, Diag *diag);
/* Reads the next token into 'tok' (freeing what it held). */
void lex_next(Lexer *lx, Token *tok);
void token_clear(Token *tok);
/* Reads the inside of 'tensor<...>' after '<' up to and including '>':
 * dims 'x'-separated, then the element type. */
gboolean lex_tensor_shape(Lexer *lx, int *rank, int64_t *dims, DType *dt);
Loc lex_loc(const Lexer *lx);
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

#endif
