/* protocol.h — what protocol.c and protocol_json.c share. */
#ifndef PARTIR_PROTOCOL_H
#define PARTIR_PROTOCOL_H

#include "rule.h"

#include <cjson/cJSON.h>

typedef cJSON J;

#define MAX_LINE ((gsize)16 << 20) /* longest request line */

/* Error codes (docs/protocol.md). */
enum {
  E_PARSE = -32700,
  E_REQUEST = -32600,
  E_METHOD = -32601,
  E_PARAMS = -32602,
  E_STATE = 1,
  E_ACTION = 2,
  E_PROGRAM = 3,
  E_FILE = 4,
};

/* Why a method failed: its error code and message. */
typedef struct Fail {
  int code;
  GString *message;
} Fail;

/* Sets 'f' and returns FALSE. */
gboolean failf(Fail *f, int code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

/* Parameters.  A member that is null reads as absent.  Each getter
 * returns FALSE after failf (E_PARAMS) for a missing required member or
 * one of the wrong type; optional absent members leave '*out' as it was
 * (strings and arrays: NULL). */
J *member(J *p, const char *key);
/* An integer: a number without a fraction that a double holds exactly. */
gboolean is_int(const J *n);
gboolean get_string(J *p, const char *key, gboolean required, const char **out,
                    Fail *f);
gboolean get_int(J *p, const char *key, gboolean required, gint64 *out,
                 Fail *f);
gboolean get_bool(J *p, const char *key, gboolean *out, Fail *f);
gboolean get_array(J *p, const char *key, J **out, Fail *f);

/* Replies.  put adds 'v' (NULL: null) under a literal key. */
J *jint(gint64 v);
void put(J *o, const char *key, J *v);
/* Appends 'v' as JSON text ('null' for NULL); append_json releases it. */
void write_json(GString *out, const J *v);
void append_json(GString *out, J *v);
/* A value whose JSON text is 'text' as it stands (taken). */
J *raw_json(GString *text);

/* The request on 'line', or NULL with the reason in 'why' (E_PARSE). */
J *request_parse(const char *line, gsize len, GString *why);

/* Input lines. */
typedef struct Reader {
  int fd;
  char *buf;
  gsize start, len, cap; /* unread bytes are buf[start, len) */
  gboolean eof;
} Reader;

/* Whether a whole line is already buffered. */
gboolean reader_line_waiting(const Reader *r);
/* The next line, without its end, NUL-terminated in place; NULL at the
 * end of the input.  '*too_long' says the line was over MAX_LINE and was
 * skipped (without being kept in memory). */
char *reader_next_line(Reader *r, gsize *n, gboolean *too_long);

#endif
