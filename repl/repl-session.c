/* repl-session.c — the session every command works on: its stack of
 * program states, its output and error reports, its Lua state, the
 * current state compiled, and the flags Ctrl-C sets.
 *
 * This is the bottom of the REPL's files (repl.h): it calls no other.
 * The stack ('steps', 'top') holds refcounted, immutable states; a new
 * state drops the redo branch, undo and redo only move 'top', and a
 * rewrite that gives back the same program is no step at all ("no
 * change").  'changed' and 'unchanged' record what the line being run
 * did, for repl_show_changes.
 *
 * Results go to stdout, errors to stderr as "error: ..." (after
 * "FILE:LINE: " when read from a file, in colour at a terminal), with
 * stdout flushed first so that a transcript of both streams stays in
 * order.
 *
 * The compiled program ('exec', 'bench') is the current state's: it
 * is freed as soon as the current state changes (a new state, undo,
 * redo), so that the JIT holds one program at most.
 *
 * Ctrl-C: the SIGINT handler (partir-repl.c) sets 'repl_got_sigint',
 * which stops the rest of a line, and interrupts 'repl_running_lua', the
 * Lua state between repl_lua_begin and repl_lua_end.
 */
#include "repl.h"

#include <string.h>

volatile sig_atomic_t repl_got_sigint;
lua_State *volatile repl_running_lua;

/* ---------------------------------------------------------- the session */

/* The clear function of the session's 'steps'. */
static void step_clear(gpointer p) {
  Step *st = p;
  state_unref(st->state);
  g_free(st->command);
}

void repl_session_init(Session *s) {
  s->steps = g_array_new(FALSE, TRUE, sizeof(Step));
  g_array_set_clear_func(s->steps, step_clear);
  s->top = -1;
}

/* The states go before the Lua state, and the Lua state before the rules
 * it was made with. */
void repl_session_free(Session *s) {
  repl_drop_compiled(s);
  if (s->shown)
    state_unref(s->shown);
  if (s->steps)
    g_array_unref(s->steps);
  g_free(s->hw);
  g_free(s->load_path);
  plua_close(s->lua);
  if (s->syntax)
    lua_close(s->syntax);
  ruleset_free(s->rs);
}

/* ------------------------------------------------------ the state stack */

State *repl_current(const Session *s) {
  return s->top >= 0 ? g_array_index(s->steps, Step, s->top).state : NULL;
}

State *repl_need_program(Session *s, const char *cmd) {
  State *cur = repl_current(s);
  if (!cur)
    repl_report_error(s, "%s: no program loaded (use 'load FILE')", cmd);
  return cur;
}

/* 'next' is a reference the session takes; the redo branch is dropped. */
void repl_push_state(Session *s, State *next, const char *command,
                     gboolean is_load) {
  g_array_set_size(s->steps, (guint)(s->top + 1));
  Step st = {next, g_strdup(command), is_load};
  g_array_append_val(s->steps, st);
  s->top++;
  s->changed = TRUE;
  repl_drop_compiled(s);
}

/* The same program is the same module and body (terms are hash-consed);
 * then 'next' is dropped and the line reports "no change". */
void repl_adopt(Session *s, State *next, const char *command) {
  State *cur = repl_current(s);
  if (cur && next->module == cur->module && next->func.body == cur->func.body) {
    state_unref(next);
    s->unchanged = TRUE;
    return;
  }
  repl_push_state(s, next, command, FALSE);
}

/* The first state (a 'load') cannot be undone: there is no program
 * before it. */
int repl_undo_steps(const Session *s) { return MAX(s->top, 0); }

int repl_redo_steps(const Session *s) {
  return (int)s->steps->len - 1 - s->top;
}

gboolean repl_undo(Session *s, int n) {
  if (n < 1 || n > repl_undo_steps(s))
    return FALSE;
  s->top -= n;
  s->changed = TRUE;
  repl_drop_compiled(s);
  return TRUE;
}

gboolean repl_redo(Session *s, int n) {
  if (n < 1 || n > repl_redo_steps(s))
    return FALSE;
  s->top += n;
  s->changed = TRUE;
  repl_drop_compiled(s);
  return TRUE;
}

/* ------------------------------------------------- the compiled program */

void repl_drop_compiled(Session *s) {
  if (!s->compiled_state)
    return;
  pipeline_executable_clear(&s->compiled);
  state_unref(s->compiled_state);
  s->compiled_state = NULL;
  g_clear_pointer(&s->compiled_mesh, g_free);
}

/* The key is the state itself (held, so that its address is not reused),
 * the mesh as text and the options. */
const Executable *repl_compiled(Session *s, const Mesh *mesh,
                                const CodegenOptions *o, Diag *why) {
  State *cur = repl_current(s);
  if (!cur) {
    diag_reason(why, "no program loaded (use 'load FILE')");
    return NULL;
  }
  g_autofree char *spec = mesh_to_string(mesh);
  if (s->compiled_state == cur && strcmp(s->compiled_mesh, spec) == 0 &&
      memcmp(&s->compiled_options, o, sizeof *o) == 0)
    return &s->compiled;
  repl_drop_compiled(s);
  if (!pipeline_compile(s->rs, cur->module, &cur->func, mesh, o, &s->compiled,
                        why))
    return NULL;
  s->compiled_state = state_ref(cur);
  s->compiled_mesh = g_steal_pointer(&spec);
  s->compiled_options = *o;
  return &s->compiled;
}

/* -------------------------------------------------------------- output */

void repl_put_string(const GString *text) {
  fwrite(text->str, 1, text->len, stdout);
}

/* Prints "KIND: MESSAGE" to stderr, after the location of the line when
 * it was read from a file. */
static void say(Session *s, const char *kind, const char *color,
                const char *fmt, va_list ap) {
  fflush(stdout);
  if (s->where)
    fprintf(stderr, "%s:%d: ", s->where, s->lineno);
  if (s->color)
    fprintf(stderr, "\033[%sm%s:\033[0m ", color, kind);
  else
    fprintf(stderr, "%s: ", kind);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}

void repl_report_error(Session *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  say(s, "error", "1;31", fmt, ap);
  va_end(ap);
}

void repl_report_warning(Session *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  say(s, "warning", "1;35", fmt, ap);
  va_end(ap);
}

void repl_report_note(Session *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  say(s, "note", "1;36", fmt, ap);
  va_end(ap);
}

/* Diagnostics already say "file:line:col:" and show the source line. */
void repl_report_diagnostics(const char *text) {
  fflush(stdout);
  fputs(text, stderr);
}

/* ----------------------------------------------------------------- Lua */

/* Tactics that miss a mesh axis say how to set one here: 'set mesh'.
 * Their 'propagate --resolve' prices on the session's hardware ('set
 * hw', as it is now). */
lua_State *repl_session_lua(Session *s) {
  if (!s->lua) {
    s->lua = plua_new(s->rs);
    if (s->lua)
      plua_set_mesh_hint(s->lua, "set mesh %s=N");
  }
  if (s->lua)
    plua_set_hardware(s->lua, s->hw);
  return s->lua;
}

/* A hook left by a Ctrl-C that came between chunks is cleared first, so
 * that it does not stop this call. */
void repl_lua_begin(lua_State *L) {
  lua_sethook(L, NULL, 0, 0);
  repl_running_lua = L;
}

void repl_lua_end(void) { repl_running_lua = NULL; }
