/* diag.c — source buffers and diagnostics.
 *
 * A diagnostic reads "file:line:col: error: message", then the source line
 * and a caret under the column.  Very long lines are shown as a window
 * around the column; control bytes and bytes that are not a printable
 * UTF-8 character are shown as '?', so junk input cannot garble a
 * terminal.  Input without a file (a command, a mesh string) gets a
 * diagnostic without a span: its reason alone.
 * Diagnostics are collected in a Diag and printed by the front end.
 */
#include "core/core.h"

#include <stdarg.h>
#include <string.h>

#define DIAG_WINDOW 100 /* characters of a long line shown each side */

Source *source_new(const char *name, const char *text, gsize len) {
  Source *s = g_new0(Source, 1);
  s->name = g_strdup(name);
  s->text = g_malloc(len + 1);
  memcpy(s->text, text, len);
  s->text[len] = '\0';
  s->len = len;
  return s;
}

gboolean source_load(const char *path, Source **out, GError **error) {
  char *text;
  gsize len;
  if (!partir_read_file(path, PARTIR_MAX_INPUT_BYTES, &text, &len, error))
    return FALSE;
  Source *s = g_new0(Source, 1);
  s->name = g_strdup(path);
  s->text = text; /* NUL-terminated, as source_new makes it */
  s->len = len;
  *out = s;
  return TRUE;
}

void source_free(Source *s) {
  if (!s)
    return;
  g_free(s->name);
  g_free(s->text);
  g_free(s);
}

void diag_init(Diag *d, const Source *src) {
  d->src = src;
  d->text = g_string_new(NULL);
  d->quiet = FALSE;
}

Diag *diag_new(const Source *src) {
  Diag *d = g_new0(Diag, 1);
  d->src = src;
  return d;
}

Diag *diag_new_quiet(void) {
  Diag *d = g_new0(Diag, 1);
  d->quiet = TRUE;
  return d;
}

void diag_free(Diag *d) {
  if (!d)
    return;
  diag_clear(d);
  g_free(d);
}

void diag_clear(Diag *d) {
  if (d->text)
    g_string_free(d->text, TRUE);
  d->text = NULL;
}

/* Appends the line holding 'loc' and a caret under its column. */
static void show_line(Diag *d, Loc loc) {
  const Source *s = d->src;
  if (!s || loc.offset > s->len)
    return;
  gsize start = loc.offset, end = loc.offset;
  while (start > 0 && s->text[start - 1] != '\n')
    start--;
  while (end < s->len && s->text[end] != '\n')
    end++;
  if (start == end)
    return; /* an empty line (or the end of input) shows nothing */
  gsize from = start, to = end;
  gboolean cut_left = FALSE, cut_right = FALSE;
  if (loc.offset - from > DIAG_WINDOW) {
    from = loc.offset - DIAG_WINDOW;
    cut_left = TRUE;
  }
  if (to - loc.offset > DIAG_WINDOW) {
    to = loc.offset + DIAG_WINDOW;
    cut_right = TRUE;
  }
  GString *line = d->text, *caret = g_string_new(NULL);
  g_string_append(line, "  ");
  g_string_append(caret, "  ");
  if (cut_left) {
    g_string_append(line, "...");
    g_string_append(caret, "   ");
  }
  for (gsize i = from; i < to;) {
    unsigned char c = (unsigned char)s->text[i];
    gsize n = 1;     /* bytes taken */
    int columns = 1; /* columns they take on a terminal */
    if (c == '\t' || (c >= 0x20 && c < 0x7f)) {
      g_string_append_c(line, (char)c);
    } else {
      /* a printable UTF-8 character shows as itself; control bytes and
       * other non-ASCII bytes (junk, or half a character cut by the
       * window) print as '?' */
      gunichar u = g_utf8_get_char_validated(s->text + i, (gssize)(to - i));
      if (c >= 0x80 && u != (gunichar)-1 && u != (gunichar)-2 &&
          g_unichar_isprint(u) && !g_unichar_iszerowidth(u)) {
        n = (gsize)(g_utf8_next_char(s->text + i) - (s->text + i));
        columns = g_unichar_iswide(u) ? 2 : 1;
        g_string_append_len(line, s->text + i, (gssize)n);
      } else {
        g_string_append_c(line, '?');
      }
    }
    if (i < loc.offset)
      g_string_append(caret, c == '\t' ? "\t" : columns == 2 ? "  " : " ");
    i += n;
  }
  if (cut_right)
    g_string_append(line, "...");
  g_string_append_printf(line, "\n%s^\n", caret->str);
  g_string_free(caret, TRUE);
}

/* The text to report into (made on first use: a Diag may start as {0}). */
static GString *text_of(Diag *d) {
  if (!d->text)
    d->text = g_string_new(NULL);
  return d->text;
}

/* For a quiet Diag: records that a reason was given; TRUE when the
 * caller is to skip formatting it. */
static gboolean quieted(Diag *d) {
  if (!d->quiet)
    return FALSE;
  g_string_assign(text_of(d), DIAG_QUIET_TEXT);
  return TRUE;
}

static void diag_add(Diag *d, Loc loc, const char *kind, const char *fmt,
                     va_list ap) {
  if (quieted(d))
    return;
  g_string_append_printf(text_of(d), "%s:%d:%d: %s",
                         d->src ? d->src->name : "?", loc.line, loc.col, kind);
  g_string_append_vprintf(d->text, fmt, ap);
  g_string_append_c(d->text, '\n');
  show_line(d, loc);
}

void diag_error(Diag *d, Loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_add(d, loc, "error: ", fmt, ap);
  va_end(ap);
}

void diag_verror(Diag *d, Loc loc, const char *fmt, va_list ap) {
  diag_add(d, loc, "error: ", fmt, ap);
}

void diag_note(Diag *d, Loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_add(d, loc, "note: ", fmt, ap);
  va_end(ap);
}

void diag_vreason(Diag *d, const char *fmt, va_list ap) {
  if (!quieted(d))
    g_string_vprintf(text_of(d), fmt, ap);
}

void diag_reason(Diag *d, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_vreason(d, fmt, ap);
  va_end(ap);
}

void diag_append_reason(Diag *d, const char *fmt, ...) {
  if (quieted(d))
    return;
  va_list ap;
  va_start(ap, fmt);
  g_string_append_vprintf(text_of(d), fmt, ap);
  va_end(ap);
}

void diag_prefix(Diag *d, const char *fmt, ...) {
  if (quieted(d))
    return;
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *prefix = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_string_prepend(text_of(d), prefix);
}

void diag_append(Diag *d, const Diag *from) {
  if (diag_any(from) && !quieted(d))
    g_string_append(text_of(d), from->text->str);
}

void diag_reset(Diag *d) {
  if (d->text)
    g_string_truncate(d->text, 0);
}

const char *diag_text(const Diag *d) { return d->text ? d->text->str : ""; }

gboolean diag_any(const Diag *d) { return d->text && d->text->len > 0; }

/* ------------------------------------------------------- did you mean */

#define NEAREST_MAX 2 /* edits a suggestion may be away */

/* The Levenshtein distance of 'a' and 'b' (characters), or a number
 * past 'cap' once it must be.  Two rows. */
static glong edit_distance(const gunichar *a, glong na, const gunichar *b,
                           glong nb, glong cap) {
  if (ABS(na - nb) > cap)
    return cap + 1;
  g_autofree glong *prev = g_new(glong, nb + 1);
  g_autofree glong *cur = g_new(glong, nb + 1);
  for (glong j = 0; j <= nb; j++)
    prev[j] = j;
  for (glong i = 1; i <= na; i++) {
    cur[0] = i;
    glong row_min = cur[0];
    for (glong j = 1; j <= nb; j++) {
      glong sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
      cur[j] = MIN(sub, MIN(prev[j] + 1, cur[j - 1] + 1));
      row_min = MIN(row_min, cur[j]);
    }
    if (row_min > cap)
      return cap + 1;
    glong *t = prev;
    prev = cur;
    cur = t;
  }
  return prev[nb];
}

const char *diag_nearest(const char *word, const char *const *names) {
  glong nw;
  g_autofree gunichar *w = g_utf8_to_ucs4(word, -1, NULL, &nw, NULL);
  if (!w)
    return NULL;
  /* a one-letter word is near everything short: no suggestion */
  glong cap = MIN(NEAREST_MAX, nw - 1);
  const char *best = NULL;
  glong best_d = cap + 1;
  for (const char *const *n = names; n && *n; n++) {
    glong nn;
    g_autofree gunichar *c = g_utf8_to_ucs4(*n, -1, NULL, &nn, NULL);
    if (!c)
      continue;
    glong d = edit_distance(w, nw, c, nn, best_d - 1);
    if (d < best_d && d > 0) {
      best = *n;
      best_d = d;
    }
  }
  return best;
}

char *diag_did_you_mean(const char *word, const char *const *names) {
  const char *near = diag_nearest(word, names);
  return near ? g_strdup_printf(" (did you mean '%s'?)", near) : g_strdup("");
}
