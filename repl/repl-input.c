/* repl-input.c — reading commands: logical lines, splitting them into
 * commands, and running a line, a stream or a file.
 *
 * Input is read as logical lines: a line ending with '\' continues on
 * the next, and so does 'lua' code that Lua's parser finds unfinished (an
 * unclosed '{', a 'function' without its 'end').  A logical line holds
 * commands separated by ';', or ended by a '.' followed by whitespace or
 * the end (the talk's "arg-tile 0 0 8." "propagate."); '#' starts a
 * comment; 'lua' takes the rest of the line verbatim.  The commands of one
 * line run in order and stop at the first failure; what changed is shown
 * once its rewrites are done: at the end of the line, or before a command
 * that prints something else ("arg-tile 0 0 8; run").
 *
 * This file runs each command through repl-commands.c, and gives the
 * session the one service that 'source' needs from it: running a file
 * (repl_input_init sets the session's 'run_file').
 */
#include "repl.h"

#include <errno.h>
#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------ splitting lines */

/* Where the command starting at 'p' (not a space) ends: at ';', a
 * newline, a '.' followed by whitespace or the end, or a '#' comment; a
 * 'lua' command runs to the end.  '*next' is where the next one may
 * start. */
const char *repl_command_end(const char *p, const char **next) {
  const char *q = p;
  if (repl_is_lua_command(p)) {
    q = p + strlen(p);
    *next = q;
    return q;
  }
  for (; *q; q++) {
    if (*q == ';' || *q == '\n' ||
        (*q == '.' && (q[1] == '\0' || g_ascii_isspace(q[1])))) {
      *next = q + 1;
      return q;
    }
    if (*q == '#' && (q == p || g_ascii_isspace(q[-1]))) {
      const char *nl = strchr(q, '\n');
      *next = nl ? nl + 1 : q + strlen(q);
      return q;
    }
  }
  *next = q;
  return q;
}

GPtrArray *repl_split_line(const char *line) {
  GPtrArray *cmds = g_ptr_array_new_with_free_func(g_free);
  const char *p = line;
  while (*p) {
    while (g_ascii_isspace(*p))
      p++;
    if (!*p)
      break;
    const char *next;
    const char *end = repl_command_end(p, &next);
    char *cmd = g_strstrip(g_strndup(p, (gsize)(end - p)));
    if (*cmd)
      g_ptr_array_add(cmds, cmd);
    else
      g_free(cmd);
    p = next;
  }
  return cmds;
}

/* The code of the line's last command if it is 'lua', else NULL. */
static const char *trailing_lua(const char *line) {
  const char *p = line, *last = NULL;
  while (*p) {
    while (g_ascii_isspace(*p))
      p++;
    if (!*p)
      break;
    const char *next;
    repl_command_end(p, &next);
    last = p;
    p = next;
  }
  if (!last || !repl_is_lua_command(last))
    return NULL;
  return last + 3;
}

/* Lua's parser stops at the end of 'code' expecting more (as lua.c asks
 * before it prints its continuation prompt). */
static gboolean lua_unfinished(Session *s, const char *code) {
  if (!s->syntax)
    s->syntax = luaL_newstate();
  lua_State *L = s->syntax;
  if (!L)
    return FALSE;
  g_autofree char *expr = g_strconcat("return ", code, NULL);
  if (luaL_loadbuffer(L, expr, strlen(expr), "=lua") == LUA_OK) {
    lua_pop(L, 1);
    return FALSE;
  }
  lua_pop(L, 1);
  int status = luaL_loadbuffer(L, code, strlen(code), "=lua");
  const char *msg = lua_tostring(L, -1);
  gboolean more =
      status == LUA_ERRSYNTAX && msg && g_str_has_suffix(msg, "<eof>");
  lua_pop(L, 1);
  return more;
}

/* Adds a physical line to the logical line 'buf'; TRUE when 'buf' is
 * complete. */
gboolean repl_input_add(Session *s, GString *buf, const char *line) {
  gsize len = strlen(line);
  if (len && line[len - 1] == '\n')
    len--;
  gboolean more = len && line[len - 1] == '\\';
  g_string_append_len(buf, line, (gssize)(more ? len - 1 : len));
  const char *code = trailing_lua(buf->str);
  if (more) { /* Lua code keeps its lines; commands are one line */
    g_string_append_c(buf, code ? '\n' : ' ');
    return FALSE;
  }
  if (code && lua_unfinished(s, code)) {
    g_string_append_c(buf, '\n');
    return FALSE;
  }
  return TRUE;
}

/* -------------------------------------------------------------- running */

/* Runs the commands of one logical line, stopping at the first failure
 * (or at Ctrl-C); shows what changed (a sourced file's lines leave that
 * to the 'source' command).  FALSE on failure. */
gboolean repl_run_line(Session *s, const char *line) {
  g_autoptr(GPtrArray) cmds = repl_split_line(line);
  if (s->depth == 0) {
    s->changed = s->unchanged = FALSE;
    repl_got_sigint = 0;
  }
  gboolean ok = TRUE;
  for (guint i = 0; i < cmds->len && ok && !s->quit; i++) {
    const char *text = g_ptr_array_index(cmds, i);
    if (repl_got_sigint) {
      repl_report_error(s, "interrupted before '%s'", text);
      ok = FALSE;
      break;
    }
    partir_interrupt = 0;
    ok = repl_run_command(s, text);
  }
  repl_show_changes(s);
  fflush(stdout);
  if (!ok)
    s->failed = TRUE;
  collect_maybe(); /* a safe point: states hold every term in use */
  return ok;
}

/* Reads and runs the commands of 'f' (named 'name' in messages) until
 * its end or 'quit'.  FALSE if a command failed; with 'stop_on_error'
 * the rest of the file is skipped then. */
gboolean repl_run_stream(Session *s, FILE *f, const char *name,
                         gboolean stop_on_error) {
  const char *outer_where = s->where;
  int outer_lineno = s->lineno;
  s->where = name;
  g_autoptr(GString) buf = g_string_new(NULL);
  char *line = NULL;
  size_t cap = 0;
  int lineno = 0, first = 0;
  gboolean ok = TRUE;
  while (!s->quit) {
    ssize_t got = getline(&line, &cap, f);
    if (got < 0 && !buf->len)
      break;
    if (got >= 0) {
      lineno++;
      if (!buf->len)
        first = lineno;
      if (s->echo && s->depth == 0 &&
          (buf->len || line[strspn(line, " \t\r\n")]))
        printf("%s%s%s", buf->len ? PROMPT_MORE : PROMPT, line,
               line[got - 1] == '\n' ? "" : "\n");
      if (!repl_input_add(s, buf, line))
        continue;
    }
    s->lineno = first;
    if (!repl_run_line(s, buf->str)) {
      ok = FALSE;
      if (stop_on_error)
        break;
    }
    g_string_truncate(buf, 0);
    if (got < 0)
      break;
  }
  free(line);
  s->where = outer_where;
  s->lineno = outer_lineno;
  return ok;
}

/* Runs the commands in file 'path', as repl_run_stream; an unreadable
 * file is reported as 'source' failing. */
gboolean repl_run_file(Session *s, const char *path, gboolean stop_on_error) {
  FILE *f = fopen(path, "r");
  if (!f) {
    repl_report_error(s, "source: %s: %s", path, g_strerror(errno));
    return FALSE;
  }
  gboolean ok = repl_run_stream(s, f, path, stop_on_error);
  fclose(f);
  return ok;
}

void repl_input_init(Session *s) { s->run_file = repl_run_file; }
