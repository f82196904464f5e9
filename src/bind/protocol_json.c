/* protocol_json.c — the agent protocol's JSON and its input lines.
 *
 * Requests are parsed by cJSON, after the checks cJSON does not make
 * (UTF-8, escaped NULs, nothing after the value); parameters are read
 * with the types JSON-RPC methods expect; replies are written by cJSON,
 * or as text around cJSON-written values (protocol.c's step replies).
 * Lines are read with read(2), so the loop can tell whether another
 * request is already waiting before it flushes its replies.
 */
#include "bind/bind.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

gboolean proto_fail(Fail *f, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  f->code = code;
  g_string_vprintf(f->message, fmt, ap);
  va_end(ap);
  return FALSE;
}

/* ------------------------------------------------------------ params */

J *proto_member(J *p, const char *key) {
  return cJSON_IsObject(p) ? cJSON_GetObjectItemCaseSensitive(p, key) : NULL;
}

/* JSON numbers are doubles here: an integer is one with no fraction
 * that a double holds exactly (|x| <= 2^53). */
gboolean proto_is_int(const J *n) {
  return cJSON_IsNumber(n) && n->valuedouble == floor(n->valuedouble) &&
         fabs(n->valuedouble) <= 9007199254740992.0;
}

/* A proto_member that is present but null reads as absent: the field names of
 * JSON-RPC make no difference between the two. */
static gboolean get_member(J *p, const char *key, gboolean required,
                           cJSON_bool (*is)(const J *), const char *what,
                           J **out, Fail *f) {
  *out = proto_member(p, key);
  if (!*out || cJSON_IsNull(*out)) {
    *out = NULL;
    return !required || proto_fail(f, E_PARAMS, "missing parameter '%s'", key);
  }
  if (!is(*out))
    return proto_fail(f, E_PARAMS, "parameter '%s' must be %s", key, what);
  return TRUE;
}

static cJSON_bool is_int_item(const J *n) { return proto_is_int(n); }

gboolean proto_get_string(J *p, const char *key, gboolean required,
                          const char **out, Fail *f) {
  J *n;
  *out = NULL;
  if (!get_member(p, key, required, cJSON_IsString, "a string", &n, f))
    return FALSE;
  *out = n ? n->valuestring : NULL;
  return TRUE;
}

gboolean proto_get_int(J *p, const char *key, gboolean required, gint64 *out,
                       Fail *f) {
  J *n;
  if (!get_member(p, key, required, is_int_item, "an integer", &n, f))
    return FALSE;
  if (n)
    *out = (gint64)n->valuedouble;
  return TRUE;
}

gboolean proto_get_bool(J *p, const char *key, gboolean *out, Fail *f) {
  J *n;
  if (!get_member(p, key, FALSE, cJSON_IsBool, "true or false", &n, f))
    return FALSE;
  if (n)
    *out = cJSON_IsTrue(n);
  return TRUE;
}

/* An optional array parameter (NULL when absent). */
gboolean proto_get_array(J *p, const char *key, J **out, Fail *f) {
  return get_member(p, key, FALSE, cJSON_IsArray, "an array", out, f);
}

/* Reply values.  Keys are literals, so objects need not copy them. */
J *proto_jint(gint64 v) { return cJSON_CreateNumber((double)v); }

void proto_put(J *o, const char *key, J *v) {
  cJSON_AddItemToObjectCS(o, key, v ? v : cJSON_CreateNull());
}

/* ------------------------------------------------------------ writing */

/* Appends 'v' as cJSON writes it ('null' for NULL). */
void proto_write_json(GString *out, const J *v) {
  if (cJSON_IsRaw(v)) { /* already JSON text */
    g_string_append(out, v->valuestring);
    return;
  }
  if (proto_is_int(v)) { /* ids and counts: no double formatting */
    g_string_append_printf(out, "%" G_GINT64_FORMAT, (gint64)v->valuedouble);
    return;
  }
  char small[256]; /* most values: no allocation */
  if (v && cJSON_PrintPreallocated((J *)v, small, sizeof small, FALSE)) {
    g_string_append(out, small);
    return;
  }
  char *text = v ? cJSON_PrintUnformatted(v) : NULL;
  g_string_append(out, text ? text : "null");
  cJSON_free(text);
}

/* The same, and releases 'v'. */
void proto_append_json(GString *out, J *v) {
  proto_write_json(out, v);
  cJSON_Delete(v);
}

void proto_append_json_string(GString *out, const char *s) {
  g_string_append_c(out, '"');
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    /* what needs no escape goes in one piece: a listing writes thousands */
    const unsigned char *run = p;
    while (*p >= 32 && *p != '"' && *p != '\\')
      p++;
    g_string_append_len(out, (const char *)run, p - run);
    if (!*p)
      break;
    const char *esc = NULL;
    switch (*p) {
    case '"':
      esc = "\\\"";
      break;
    case '\\':
      esc = "\\\\";
      break;
    case '\b':
      esc = "\\b";
      break;
    case '\f':
      esc = "\\f";
      break;
    case '\n':
      esc = "\\n";
      break;
    case '\r':
      esc = "\\r";
      break;
    case '\t':
      esc = "\\t";
      break;
    default:
      if (*p < 32)
        g_string_append_printf(out, "\\u%04x", *p);
      else
        g_string_append_c(out, (char)*p);
      continue;
    }
    g_string_append(out, esc);
  }
  g_string_append_c(out, '"');
}

/* A value whose JSON text is 'text' as it stands (taken: GLib and cJSON
 * both allocate with malloc, so cJSON_Delete frees the buffer). */
J *proto_raw_json(GString *text) {
  J *v = cJSON_CreateRaw("");
  cJSON_free(v->valuestring);
  v->valuestring = g_string_free(text, FALSE);
  return v;
}

/* ------------------------------------------------------------ reading */

/* The column of the first escaped NUL ("\u0000", not "\\u0000") in
 * 'line', or 0: cJSON's strings end at a NUL, so one would cut a string
 * short without a word. */
static gsize escaped_nul(const char *line, gsize len) {
  for (const char *p = line; (p = memchr(p, 'u', len - (gsize)(p - line)));
       p++) {
    gsize slashes = 0;
    while (p - slashes > line && p[-1 - (gssize)slashes] == '\\')
      slashes++;
    if (slashes % 2 == 1 && (gsize)(p - line) + 5 <= len &&
        memcmp(p + 1, "0000", 4) == 0)
      return (gsize)(p - line);
  }
  return 0;
}

J *proto_request_parse(const char *line, gsize len, Diag *why) {
  const char *bad;
  if (!g_utf8_validate(line, (gssize)len, &bad)) {
    diag_reason(why, "column %" G_GSIZE_FORMAT ": not UTF-8",
                (gsize)(bad - line) + 1);
    return NULL;
  }
  gsize nul = escaped_nul(line, len);
  if (nul) {
    diag_reason(
        why, "column %" G_GSIZE_FORMAT ": \\u0000 in a string is not supported",
        nul);
    return NULL;
  }
  const char *end = NULL;
  J *req = cJSON_ParseWithLengthOpts(line, len, &end, FALSE);
  gsize at = end ? (gsize)(end - line) : 0;
  if (req) { /* only white space may follow the value */
    while (at < len && g_ascii_isspace(line[at]))
      at++;
    if (at < len) {
      cJSON_Delete(req);
      diag_reason(why, "column %" G_GSIZE_FORMAT ": more after the JSON value",
                  at + 1);
      return NULL;
    }
    return req;
  }
  if (at >= len)
    diag_reason(why, "%s", "the JSON value is incomplete");
  else
    diag_reason(why, "column %" G_GSIZE_FORMAT ": not JSON", at + 1);
  return NULL;
}

/* Whether member 'm' repeats a key: one of the members after it has
 * 'key', or (with 'seen', the keys of the members before it) one before. */
static gboolean key_after(const J *m, const char *key, GHashTable *seen) {
  if (seen)
    return !g_hash_table_add(seen, (gpointer)key);
  for (const J *c = m->next; c; c = c->next)
    if (strcmp(c->string, key) == 0)
      return TRUE;
  return FALSE;
}

/* cJSON keeps every member of an object, and a lookup finds the first:
 * a request with a key given twice would mean one thing here and perhaps
 * another to the client's own JSON reader, so it is refused.  Objects of
 * a few members are compared pairwise, larger ones through a set.  The
 * recursion is as deep as cJSON nests (CJSON_NESTING_LIMIT). */
const char *proto_duplicate_key(const J *v) {
  if (!v || !(cJSON_IsObject(v) || cJSON_IsArray(v)))
    return NULL;
  if (cJSON_IsObject(v)) {
    int n = cJSON_GetArraySize(v);
    g_autoptr(GHashTable) seen =
        n > 8 ? g_hash_table_new(g_str_hash, g_str_equal) : NULL;
    for (const J *m = v->child; m; m = m->next)
      if (key_after(m, m->string, seen))
        return m->string;
  }
  for (const J *m = v->child; m; m = m->next) {
    const char *key = m->child ? proto_duplicate_key(m) : NULL;
    if (key)
      return key;
  }
  return NULL;
}

gboolean proto_reader_line_waiting(const Reader *r) {
  return memchr(r->buf + r->start, '\n', r->len - r->start) != NULL;
}

/* The next line, without its end, NUL-terminated in place; NULL at the
 * end of the input.  '*too_long' says the line was skipped. */
char *proto_reader_next_line(Reader *r, gsize *n, gboolean *too_long) {
  *too_long = FALSE;
  gsize scanned = r->start;
  for (;;) {
    char *nl = memchr(r->buf + scanned, '\n', r->len - scanned);
    if (nl || (r->eof && r->len > r->start)) {
      char *line = r->buf + r->start;
      gsize end = nl ? (gsize)(nl - r->buf) : r->len;
      r->start = nl ? end + 1 : r->len;
      if (*too_long) {
        *n = 0;
        return line;
      }
      r->buf[end] = '\0'; /* the newline, or the spare byte kept below */
      *n = end - (gsize)(line - r->buf);
      return line;
    }
    if (r->eof && *too_long) {
      *n = 0;
      return r->buf;
    }
    if (r->eof)
      return NULL;
    if (r->len - r->start > MAX_LINE) { /* drop what is kept of it */
      *too_long = TRUE;
      r->start = r->len = 0;
    }
    if (r->start > 0) { /* move the partial line to the front */
      memmove(r->buf, r->buf + r->start, r->len - r->start);
      r->len -= r->start;
      r->start = 0;
    }
    scanned = r->len;
    if (r->cap - r->len < 65536 + 1) {
      r->cap = MAX(r->cap * 2, r->len + 65536 + 1);
      r->buf = g_realloc(r->buf, r->cap);
    }
    ssize_t got = read(r->fd, r->buf + r->len, r->cap - r->len - 1);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      r->eof = TRUE;
    else
      r->len += (gsize)got;
  }
}
