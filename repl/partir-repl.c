/* partir-repl.c — the interactive front end: a readline session over the
 * rewrite engine.
 *
 *   partir-repl [FILE.pir] [--rules FILE]... [--mesh SPEC] [--batch FILE]
 *               [--echo]
 *
 * The session holds a rule set, a device mesh, the Lua state (made on
 * first use) and a stack of program states.  States are immutable and
 * refcounted (rule.h), so the stack is the whole undo/redo machinery:
 * 'steps[0..top]' are the states that led to the current one, each with
 * the command that produced it, and 'steps[top+1..]' is the redo branch;
 * undo and redo move 'top', a new state drops the redo branch.  A command
 * that fails leaves the stack as it was, and so does a rewrite that gives
 * back the same program ("no change").
 *
 * Input is read as logical lines: a line ending with '\' continues on
 * the next, and so does 'lua' code that Lua's parser finds unfinished (an
 * unclosed '{', a 'function' without its 'end').  A logical line holds
 * commands separated by ';', or ended by a '.' followed by whitespace or
 * the end (the talk's "arg-tile 0 0 8." "propagate."); '#' starts a
 * comment; 'lua' takes the rest of the line verbatim.  The commands of one
 * line run in order and stop at the first failure; the program is shown
 * once its rewrites are done: at the end of the line, or before a command
 * that prints something else ("arg-tile 0 0 8; run").
 *
 * With a terminal on stdin the session uses readline (history in
 * ~/.partir_history or $PARTIR_HISTORY, completion of commands, rule
 * names, value names and files) through its callback interface, so that
 * Ctrl-C can clear the line at the prompt; during a command Ctrl-C sets
 * 'partir_interrupt' (and interrupts Lua), which stops the interpreter,
 * engine scripts and Lua chunks, and the session goes on.  Without a
 * terminal (or with --batch FILE) commands are read without prompts or
 * colour, and the exit status is 1 if any command failed.
 *
 * Everything runs on one thread with a deep stack (partir_call_with_stack):
 * term traversals recurse.  Results go to stdout, errors to stderr as
 * "error: ..." (after "FILE:LINE: " when read from a file), with stdout
 * flushed first so that a transcript of both streams stays in order.
 */
#include "partir-int.h"
#include "plua.h"
#include "rule.h"

#include <errno.h>
#include <lauxlib.h>
#include <pthread.h>
#include <readline/history.h>
#include <readline/readline.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <unistd.h>

#define PROMPT "partir> "
#define PROMPT_MORE "   ...> "
#define HISTORY_MAX 1000
#define SOURCE_MAX_DEPTH 16

/* ------------------------------------------------------------- session */

/* One entry of the undo stack. */
typedef struct Step {
  State *state;
  char *command;    /* the command that produced it, as typed */
  gboolean is_load; /* a 'load': history starts here */
} Step;

typedef struct Session {
  RuleSet *rs;
  GArray *steps;        /* Step: the undo stack and the redo branch */
  int top;              /* the current step, -1 before any program */
  lua_State *lua;       /* the 'partir' Lua state, made on first use */
  lua_State *syntax;    /* a bare Lua state that only parses (continuation) */
  Mesh mesh;            /* for tactics and Lua */
  gboolean show;        /* print the program after it changes */
  gboolean interactive; /* readline, prompts, colour */
  gboolean echo;        /* batch: print each line after a prompt */
  gboolean color;       /* errors in colour (stderr is a terminal) */
  gboolean quit;
  gboolean failed; /* some command failed (the batch exit status) */
  /* the line being run */
  gboolean changed;   /* the current state changed */
  gboolean unchanged; /* a rewrite succeeded but changed nothing */
  const char *where;  /* file being read, or NULL (the terminal) */
  int lineno;
  int depth; /* 'source' nesting */
} Session;

/* For readline's callbacks, which take no user data. */
static Session *the_session;

/* Set by the SIGINT handler; the interactive loop and run_line read it. */
static volatile sig_atomic_t got_sigint;
/* The Lua state running a chunk, for the SIGINT handler. */
static lua_State *volatile running_lua;
/* A command of the interactive session is running (the terminal is in
 * its normal mode, which echoes "^C"). */
static volatile sig_atomic_t in_command;

static void on_sigint(int sig) {
  (void)sig;
  got_sigint = 1;
  partir_interrupt = 1;
  lua_State *L = running_lua;
  if (L)
    plua_interrupt(L);
  if (in_command) /* end the echoed "^C" line before the error */
    (void)!write(STDERR_FILENO, "\n", 1);
}

static State *current(const Session *s) {
  return s->top >= 0 ? g_array_index(s->steps, Step, s->top).state : NULL;
}

static void step_clear(gpointer p) {
  Step *st = p;
  state_unref(st->state);
  g_free(st->command);
}

/* Makes 'next' (a reference the session takes) the current state, the
 * effect of 'command'; the redo branch is dropped. */
static void push_state(Session *s, State *next, const char *command,
                       gboolean is_load) {
  g_array_set_size(s->steps, (guint)(s->top + 1));
  Step st = {next, g_strdup(command), is_load};
  g_array_append_val(s->steps, st);
  s->top++;
  s->changed = TRUE;
}

/* Takes 'next', the result of a rewrite of the current state: a new undo
 * step unless it is the same program. */
static void adopt(Session *s, State *next, const char *command) {
  State *cur = current(s);
  if (cur && next->module == cur->module && next->func.body == cur->func.body) {
    state_unref(next);
    s->unchanged = TRUE;
    return;
  }
  push_state(s, next, command, FALSE);
}

/* -------------------------------------------------------------- output */

static void put(const char *text, gsize len) { fwrite(text, 1, len, stdout); }

static void put_string(const GString *text) { put(text->str, text->len); }

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

/* Reports why a command failed; the caller returns FALSE. */
static void report_error(Session *s, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void report_error(Session *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  say(s, "error", "1;31", fmt, ap);
  va_end(ap);
}

static void report_warning(Session *s, const char *fmt, ...)
    G_GNUC_PRINTF(2, 3);
static void report_warning(Session *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  say(s, "warning", "1;35", fmt, ap);
  va_end(ap);
}

/* Diagnostics that already carry their location (file:line:col). */
static void report_text(const char *text) {
  fflush(stdout);
  fputs(text, stderr);
}

/* The current state, or NULL with an error naming 'cmd'. */
static State *need_program(Session *s, const char *cmd) {
  State *cur = current(s);
  if (!cur)
    report_error(s, "%s: no program loaded (use 'load FILE')", cmd);
  return cur;
}

/* --------------------------------------------------- the printed program */

/* The canonical print of 's' as lines (no newlines). */
static GStrv program_lines(const State *s) {
  g_autoptr(GString) text = g_string_new(NULL);
  state_print(text, s, FALSE);
  return g_strsplit(text->str, "\n", -1);
}

static int indent_of(const char *line) {
  int i = 0;
  while (line[i] == ' ')
    i++;
  return i;
}

/* The line of 'lines' that defines value 'name' ("%name = ..."), or -1. */
static int definition_line(GStrv lines, const char *name) {
  g_autofree char *head = g_strdup_printf("%%%s = ", name);
  for (int i = 0; lines[i]; i++)
    if (g_str_has_prefix(lines[i] + indent_of(lines[i]), head))
      return i;
  return -1;
}

/* Appends the statement defining 'name', and for a tile or sum its whole
 * region, de-indented. */
static gboolean append_definition(GString *out, GStrv lines, const char *name) {
  int i = definition_line(lines, name);
  if (i < 0)
    return FALSE;
  int indent = indent_of(lines[i]);
  gboolean region = g_str_has_suffix(lines[i], "{");
  for (int k = i; lines[k]; k++) {
    g_string_append_printf(out, "%s\n",
                           lines[k] + MIN(indent, indent_of(lines[k])));
    if (!region ||
        (k > i && indent_of(lines[k]) == indent && lines[k][indent] == '}'))
      break;
  }
  return TRUE;
}

/* One line describing a location: "%x: TYPE" for an argument, else its
 * statement ("%0 = matmul(%x, %w)"; a region's header ends in "{ ... }"). */
static void append_location_line(GString *out, GStrv lines, const Location *l) {
  if (l->is_arg) {
    g_autofree char *type = type_to_string(l->term->type);
    g_string_append_printf(out, "%%%s: %s\n", l->name, type);
    return;
  }
  int i = definition_line(lines, l->name);
  if (i < 0) {
    g_string_append_printf(out, "%%%s\n", l->name);
    return;
  }
  const char *text = lines[i] + indent_of(lines[i]);
  g_string_append_printf(out, "%s%s\n", text,
                         g_str_has_suffix(text, "{") ? " ... }" : "");
}



/* ------------------------------------------------------------ commands */

typedef gboolean (*CommandFn)(Session *s, const char *text, int argc,
                              char **argv);

/* What a command's arguments complete to. */
typedef enum {
  COMPLETE_NONE,
  COMPLETE_FILE,    /* a path */
  COMPLETE_TACTIC,  /* a tactic name or a path */
  COMPLETE_RULE,    /* a rule name (then, for apply, 'at' VALUE K=) */
  COMPLETE_VALUE,   /* %name of the current state */
  COMPLETE_ARG,     /* %name of an argument */
  COMPLETE_COMMAND, /* a command name */
  COMPLETE_SETTING, /* set's names and values */
} CompleteKind;

typedef struct Command {
  const char *name;
  CommandFn run;
  gboolean changes; /* may change the current state */
  CompleteKind complete;
  const char *usage;
  const char *summary;
  const char *help; /* more, for 'help NAME' (or NULL) */
} Command;

static const Command *find_command(const char *name);
static gboolean run_file(Session *s, const char *path, gboolean stop_on_error);

static gboolean cmd_load_path(Session *s, const char *path) {
  GError *error = NULL;
  g_autoptr(Source) src = NULL;
  if (!source_load(path, &src, &error)) {
    report_error(s, "load: %s", error->message);
    g_error_free(error);
    return FALSE;
  }
  Diag diag;
  diag_init(&diag, src);
  g_autoptr(Module) m = parse_module(src, &diag);
  if (!m)
    report_text(diag.text->str);
  diag_clear(&diag);
  if (!m)
    return FALSE;
  g_autofree char *quoted =
      strpbrk(path, " \t'\"\\;#") ? g_shell_quote(path) : g_strdup(path);
  g_autofree char *command = g_strdup_printf("load %s", quoted);
  push_state(s, state_new(m), command, TRUE);
  return TRUE;
}

static gboolean cmd_load(Session *s, const char *text, int argc, char **argv) {
  if (argc != 2) {
    report_error(s, "usage: load FILE");
    return FALSE;
  }
  return cmd_load_path(s, argv[1]);
}

/* The expression form of one closed value: the entry function reduced to
 * returning that value. */
static void append_value_expr(GString *out, const State *st, const Term *t) {
  const Type *type = t->type;
  Func f = st->func;
  f.body = term_tuple(1, &t);
  f.nresults = 1;
  f.result_types = &type;
  Module m = *st->module;
  GPtrArray *one = g_ptr_array_new();
  g_ptr_array_add(one, &f);
  m.funcs = one;
  print_module_expr(out, &m);
  g_ptr_array_unref(one);
}

static gboolean cmd_show(Session *s, const char *text, int argc, char **argv) {
  gboolean expr = FALSE;
  const char *value = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--expr") == 0) {
      expr = TRUE;
    } else if (argv[i][0] == '-' || value) {
      report_error(s, "usage: show [VALUE] [--expr]");
      return FALSE;
    } else {
      value = argv[i];
    }
  }
  State *cur = need_program(s, "show");
  if (!cur)
    return FALSE;
  g_autoptr(GString) out = g_string_new(NULL);
  if (!value) {
    state_print(out, cur, expr);
    put_string(out);
    return TRUE;
  }
  g_autoptr(GPtrArray) locs = state_locations(cur);
  const Location *l = state_find_location(locs, value);
  if (!l) {
    report_error(s, "show: no value '%s'", value);
    return FALSE;
  }
  if (expr) {
    if (!term_is_closed(l->term)) {
      report_error(s,
                   "show: %%%s uses the range of an enclosing tile or sum; "
                   "--expr shows values outside regions",
                   l->name);
      return FALSE;
    }
    append_value_expr(out, cur, l->term);
  } else if (l->is_arg) {
    g_autofree char *type = type_to_string(l->term->type);
    g_string_append_printf(out, "%%%s: %s (argument %d)\n", l->name, type,
                           l->term->index);
  } else {
    g_auto(GStrv) lines = program_lines(cur);
    append_definition(out, lines, l->name);
  }
  put_string(out);
  return TRUE;
}

static gboolean cmd_args(Session *s, const char *text, int argc, char **argv) {
  if (argc != 1) {
    report_error(s, "usage: args");
    return FALSE;
  }
  State *cur = need_program(s, "args");
  if (!cur)
    return FALSE;
  g_autoptr(GString) out = g_string_new(NULL);
  for (int i = 0; i < cur->func.nargs; i++) {
    g_autofree char *type = type_to_string(cur->func.arg_types[i]);
    g_string_append_printf(out, "%d  %%%s: %s\n", i, cur->func.arg_names[i],
                           type);
  }
  put_string(out);
  return TRUE;
}

static gboolean cmd_rules(Session *s, const char *text, int argc, char **argv) {
  if (argc > 2) {
    report_error(s, "usage: rules [PATTERN]");
    return FALSE;
  }
  const char *pattern = argc == 2 ? argv[1] : NULL;
  gboolean glob = pattern && strpbrk(pattern, "*?") != NULL;
  g_autoptr(GString) out = g_string_new(NULL);
  int shown = 0;
  for (guint i = 0; i < s->rs->rules->len; i++) {
    const Rule *r = g_ptr_array_index(s->rs->rules, i);
    if (pattern && !(glob ? g_pattern_match_simple(pattern, r->name)
                          : strstr(r->name, pattern) != NULL))
      continue;
    g_string_append_printf(out, "%-22s %s\n", r->name, r->text);
    shown++;
  }
  if (!shown)
    g_string_append_printf(out, "no rule matches '%s'\n", pattern);
  put_string(out);
  return TRUE;
}

static gboolean cmd_matches(Session *s, const char *text, int argc,
                            char **argv) {
  if (argc != 2) {
    report_error(s, "usage: matches RULE");
    return FALSE;
  }
  State *cur = need_program(s, "matches");
  if (!cur)
    return FALSE;
  const Rule *rule = ruleset_find(s->rs, argv[1]);
  if (!rule) {
    report_error(s, "matches: no rule '%s' (see 'rules')", argv[1]);
    return FALSE;
  }
  g_autoptr(GPtrArray) locs = engine_matches(s->rs, cur, rule);
  g_auto(GStrv) lines = program_lines(cur);
  g_autoptr(GString) out = g_string_new(NULL);
  for (guint i = 0; i < locs->len; i++)
    append_location_line(out, lines, g_ptr_array_index(locs, i));
  if (!locs->len)
    g_string_append_printf(out, "'%s' applies nowhere\n", rule->name);
  put_string(out);
  return TRUE;
}

/* arg-tile, tile, sum, apply, propagate, fuse, simplify: one engine
 * command on the current state. */
static gboolean cmd_engine(Session *s, const char *text, int argc,
                           char **argv) {
  State *cur = need_program(s, argv[0]);
  if (!cur)
    return FALSE;
  g_autoptr(GString) why = g_string_new(NULL);
  g_autoptr(GString) report = g_string_new(NULL);
  State *next = engine_command(s->rs, cur, text, why, report);
  if (report->len) {
    g_auto(GStrv) lines = g_strsplit(report->str, "\n", -1);
    for (char **l = lines; *l; l++)
      if (**l)
        report_warning(s, "%s: %s", argv[0], *l);
  }
  if (!next) {
    report_error(s, "'%s': %s", text, why->str);
    return FALSE;
  }
  adopt(s, next, text);
  return TRUE;
}

static gboolean cmd_undo(Session *s, const char *text, int argc, char **argv) {
  if (argc != 1) {
    report_error(s, "usage: undo");
    return FALSE;
  }
  if (s->top <= 0) {
    report_error(s, "undo: nothing to undo");
    return FALSE;
  }
  s->top--;
  s->changed = TRUE;
  return TRUE;
}

static gboolean cmd_redo(Session *s, const char *text, int argc, char **argv) {
  if (argc != 1) {
    report_error(s, "usage: redo");
    return FALSE;
  }
  if (s->top + 1 >= (int)s->steps->len) {
    report_error(s, "redo: nothing to redo");
    return FALSE;
  }
  s->top++;
  s->changed = TRUE;
  return TRUE;
}

/* Prints the commands that produced the current state, from its 'load',
 * as a script 'source' can replay. */
static gboolean cmd_history(Session *s, const char *text, int argc,
                            char **argv) {
  if (argc != 1) {
    report_error(s, "usage: history");
    return FALSE;
  }
  int from = s->top;
  while (from > 0 && !g_array_index(s->steps, Step, from).is_load)
    from--;
  g_autoptr(GString) out = g_string_new(NULL);
  for (int i = MAX(from, 0); i <= s->top; i++) {
    g_auto(GStrv) lines =
        g_strsplit(g_array_index(s->steps, Step, i).command, "\n", -1);
    for (char **l = lines; *l; l++)
      g_string_append_printf(out, "%s%s\n", *l, l[1] ? " \\" : "");
  }
  put_string(out);
  return TRUE;
}

/* The name a result is printed under: the returned value's user name when
 * it has one of its own, else "resultI" (as 'partir run' does). */
static gboolean cmd_run(Session *s, const char *text, int argc, char **argv) {
  gint64 seed = 0;
  for (int i = 1; i < argc; i++) {
    const char *v = NULL;
    if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
      v = argv[++i];
    else if (g_str_has_prefix(argv[i], "--seed="))
      v = argv[i] + strlen("--seed=");
    char *end = NULL;
    if (v)
      seed = g_ascii_strtoll(v, &end, 10);
    if (!v || !*v || *end) {
      report_error(s, "usage: run [--seed N]");
      return FALSE;
    }
  }
  State *cur = need_program(s, "run");
  if (!cur)
    return FALSE;
  const Func *f = &cur->func;
  GError *error = NULL;
  GPtrArray *results = interp_run_seeded(f, seed, &error);
  if (!results) {
    report_error(s, "run: %s", error->message);
    g_error_free(error);
    return FALSE;
  }
  g_autoptr(GString) out = g_string_new(NULL);
  for (guint i = 0; i < results->len; i++) {
    g_autofree char *name = func_result_name(cur->module, &cur->func, (int)i);
    g_string_append_printf(out, "%s = ", name);
    tensor_print(out, g_ptr_array_index(results, i), 64);
    if (out->str[out->len - 1] != '\n')
      g_string_append_c(out, '\n');
  }
  g_ptr_array_unref(results);
  put_string(out);
  return TRUE;
}

static gboolean cmd_save(Session *s, const char *text, int argc, char **argv) {
  if (argc != 2) {
    report_error(s, "usage: save FILE");
    return FALSE;
  }
  State *cur = need_program(s, "save");
  if (!cur)
    return FALSE;
  g_autofree char *dir = g_path_get_dirname(argv[1]);
  if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
    report_error(s, "save: no directory '%s'", dir);
    return FALSE;
  }
  g_autoptr(GString) out = g_string_new(NULL);
  state_print(out, cur, FALSE);
  GError *error = NULL;
  /* atomic: a temporary file renamed over FILE */
  if (!partir_write_file(argv[1], out->str, out->len, &error)) {
    report_error(s, "save: %s", error->message);
    g_error_free(error);
    return FALSE;
  }
  printf("wrote %s\n", argv[1]);
  return TRUE;
}

static lua_State *session_lua(Session *s) {
  if (!s->lua)
    s->lua = plua_new(s->rs);
  return s->lua;
}

/* Runs a Lua call that Ctrl-C may interrupt: a hook left by a Ctrl-C that
 * came between chunks is cleared first. */
static void lua_begin(lua_State *L) {
  lua_sethook(L, NULL, 0, 0);
  running_lua = L;
}

static void lua_end(void) { running_lua = NULL; }

static gboolean cmd_lua(Session *s, const char *text, const char *code) {
  State *cur = need_program(s, "lua");
  if (!cur)
    return FALSE;
  lua_State *L = session_lua(s);
  if (!L) {
    report_error(s, "lua: cannot create a Lua state (out of memory)");
    return FALSE;
  }
  g_autoptr(GString) out = g_string_new(NULL);
  g_autoptr(GString) why = g_string_new(NULL);
  lua_begin(L);
  State *next = plua_run_chunk(L, code, "=lua", cur, &s->mesh, out, why);
  lua_end();
  put_string(out);
  if (!next) {
    report_error(s, "lua: %s", why->str);
    return FALSE;
  }
  if (next == cur) { /* the chunk returned no state (or 's' itself) */
    state_unref(next);
    return TRUE;
  }
  adopt(s, next, text);
  return TRUE;
}

static gboolean cmd_source(Session *s, const char *text, int argc,
                           char **argv) {
  if (argc != 2) {
    report_error(s, "usage: source FILE");
    return FALSE;
  }
  if (s->depth >= SOURCE_MAX_DEPTH) {
    report_error(s, "source: files nested more than %d deep", SOURCE_MAX_DEPTH);
    return FALSE;
  }
  s->depth++;
  gboolean ok = run_file(s, argv[1], TRUE);
  s->depth--;
  return ok;
}

/* The directories holding tactics: $PARTIR_TACTICS, then the installed. */
static GStrv tactic_dirs(void) {
  GPtrArray *dirs = g_ptr_array_new();
  const char *env = g_getenv("PARTIR_TACTICS");
  if (env && *env) {
    g_auto(GStrv) parts = g_strsplit(env, ":", -1);
    for (char **p = parts; *p; p++)
      if (**p)
        g_ptr_array_add(dirs, g_strdup(*p));
  }
#ifdef PARTIR_TACTICS_DIR
  g_ptr_array_add(dirs, g_strdup(PARTIR_TACTICS_DIR));
#endif
  g_ptr_array_add(dirs, NULL);
  return (GStrv)g_ptr_array_free(dirs, FALSE);
}

/* A tactic by path, or by name in the tactic directories (NAME.lua). */
static char *find_tactic(const char *name) {
  if (g_file_test(name, G_FILE_TEST_IS_REGULAR))
    return g_strdup(name);
  if (strchr(name, '/'))
    return NULL;
  g_auto(GStrv) dirs = tactic_dirs();
  for (char **d = dirs; *d; d++) {
    g_autofree char *file = g_strconcat(name, ".lua", NULL);
    char *path = g_build_filename(*d, file, NULL);
    if (g_file_test(path, G_FILE_TEST_IS_REGULAR))
      return path;
    g_free(path);
  }
  return NULL;
}

static gboolean cmd_tactic(Session *s, const char *text, int argc,
                           char **argv) {
  if (argc < 2) {
    report_error(s, "usage: tactic SCRIPT [KEY=VALUE...]");
    return FALSE;
  }
  g_autoptr(GHashTable) options =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  for (int i = 2; i < argc; i++) {
    const char *eq = strchr(argv[i], '=');
    if (!eq || eq == argv[i]) {
      report_error(s, "tactic: expected KEY=VALUE, got '%s'", argv[i]);
      return FALSE;
    }
    g_hash_table_insert(options, g_strndup(argv[i], (gsize)(eq - argv[i])),
                        g_strdup(eq + 1));
  }
  g_autofree char *path = find_tactic(argv[1]);
  if (!path) {
    report_error(s,
                 "tactic: no tactic '%s' (a file, or NAME for NAME.lua in "
                 "$PARTIR_TACTICS or the installed tactics)",
                 argv[1]);
    return FALSE;
  }
  State *cur = need_program(s, "tactic");
  if (!cur)
    return FALSE;
  lua_State *L = session_lua(s);
  if (!L) {
    report_error(s, "tactic: cannot create a Lua state (out of memory)");
    return FALSE;
  }
  g_autoptr(GString) why = g_string_new(NULL);
  lua_begin(L);
  State *next = plua_run_tactic(L, path, cur, &s->mesh, options, why);
  lua_end();
  if (!next) {
    report_error(s, "tactic %s: %s", argv[1], why->str);
    return FALSE;
  }
  adopt(s, next, text);
  return TRUE;
}

static void append_settings(GString *out, const Session *s) {
  g_autofree char *mesh = mesh_to_string(&s->mesh);
  g_string_append_printf(out, "mesh = %s\n", *mesh ? mesh : "none");
  g_string_append_printf(out, "show = %s\n", s->show ? "on" : "off");
}

static gboolean cmd_set(Session *s, const char *text, int argc, char **argv) {
  g_autoptr(GString) out = g_string_new(NULL);
  if (argc == 1) {
    append_settings(out, s);
    put_string(out);
    return TRUE;
  }
  if (strcmp(argv[1], "mesh") == 0 && argc >= 3) {
    /* "batch=2,model=4", also written "batch=2, model=4" */
    g_autofree char *spec = g_strjoinv("", argv + 2);
    Mesh mesh;
    GError *error = NULL;
    if (!mesh_parse(strcmp(spec, "none") == 0 ? "" : spec, &mesh, &error)) {
      report_error(s, "set: %s", error->message);
      g_error_free(error);
      return FALSE;
    }
    s->mesh = mesh;
    return TRUE;
  }
  if (strcmp(argv[1], "show") == 0 && argc == 3 &&
      (strcmp(argv[2], "on") == 0 || strcmp(argv[2], "off") == 0)) {
    s->show = strcmp(argv[2], "on") == 0;
    return TRUE;
  }
  report_error(s, "usage: set [mesh AXIS=SIZE,... | mesh none | show on|off]");
  return FALSE;
}

static gboolean cmd_help(Session *s, const char *text, int argc, char **argv);

static gboolean cmd_quit(Session *s, const char *text, int argc, char **argv) {
  s->quit = TRUE;
  return TRUE;
}

static const Command commands[] = {
    {"load", cmd_load, TRUE, COMPLETE_FILE, "load FILE",
     "load a program (.pir); it becomes the current state", NULL},
    {"show", cmd_show, FALSE, COMPLETE_VALUE, "show [VALUE] [--expr]",
     "print the program, or the statement defining VALUE",
     "--expr prints the compact expression form (of the program, or of a\n"
     "value that is not inside a tile or sum)."},
    {"args", cmd_args, FALSE, COMPLETE_NONE, "args",
     "list the function's arguments", NULL},
    {"rules", cmd_rules, FALSE, COMPLETE_RULE, "rules [PATTERN]",
     "list the rules (names containing PATTERN, or matching a glob)", NULL},
    {"matches", cmd_matches, FALSE, COMPLETE_RULE, "matches RULE",
     "list the values where RULE applies", NULL},
    {"apply", cmd_engine, TRUE, COMPLETE_RULE,
     "apply RULE [at VALUE] [NAME=V...]",
     "apply a rule (without 'at': where it first applies)",
     "NAME=V gives the rule's parameters: widths (w=8), dimensions (d=0),\n"
     "axes (a=batch)."},
    {"arg-tile", cmd_engine, TRUE, COMPLETE_ARG,
     "arg-tile ARG DIM WIDTH [AXIS]",
     "tile argument ARG (index or %name) along DIM in pieces of WIDTH", NULL},
    {"tile", cmd_engine, TRUE, COMPLETE_VALUE, "tile VALUE DIM WIDTH [AXIS]",
     "tile any value along DIM in pieces of WIDTH", NULL},
    {"sum", cmd_engine, TRUE, COMPLETE_VALUE, "sum VALUE WIDTH [AXIS|-] [K]",
     "split reduction K of an operator into a sum of pieces of WIDTH", NULL},
    {"propagate", cmd_engine, TRUE, COMPLETE_NONE, "propagate",
     "push slices in, pull tiles out and fuse, to a fixed point",
     "What it cannot resolve (conflicting tilings, an axis bound twice) is\n"
     "left in place and reported as a warning."},
    {"fuse", cmd_engine, TRUE, COMPLETE_NONE, "fuse",
     "the [fuse] rules to a fixed point", NULL},
    {"simplify", cmd_engine, TRUE, COMPLETE_NONE, "simplify",
     "the [simplify] rules to a fixed point", NULL},
    {"undo", cmd_undo, TRUE, COMPLETE_NONE, "undo", "go back one state", NULL},
    {"redo", cmd_redo, TRUE, COMPLETE_NONE, "redo", "go forward one state",
     NULL},
    {"history", cmd_history, FALSE, COMPLETE_NONE, "history",
     "the commands that produced the current state (a script for 'source')",
     NULL},
    {"run", cmd_run, FALSE, COMPLETE_NONE, "run [--seed N]",
     "run the interpreter on random arguments (as 'partir run --seed N')",
     NULL},
    {"save", cmd_save, FALSE, COMPLETE_FILE, "save FILE",
     "write the program's canonical text to FILE (atomically)", NULL},
    {"lua", NULL, TRUE, COMPLETE_NONE, "lua CODE",
     "run Lua with 's' the current state and 'mesh' the mesh",
     "CODE is the rest of the line ('{' or 'function' left open continue it\n"
     "on the next lines).  If it returns a state, that becomes the current\n"
     "state (undo goes back); other results are printed.\n"
     "  lua s:arg_tile(0, 0, 8):propagate()\n"
     "  lua #s:matches('fuse')"},
    {"source", cmd_source, TRUE, COMPLETE_FILE, "source FILE",
     "run the commands in FILE (stops at the first failure)", NULL},
    {"tactic", cmd_tactic, TRUE, COMPLETE_TACTIC,
     "tactic SCRIPT [KEY=VALUE...]",
     "run a Lua tactic (a file, or NAME for a shipped one) with the mesh",
     "The script returns a function(state, mesh, options); KEY=VALUE pairs\n"
     "are its options."},
    {"set", cmd_set, FALSE, COMPLETE_SETTING, "set [NAME VALUE]",
     "show the settings, or set one",
     "  set mesh batch=2,model=4   the mesh tactics and Lua see ('none': no "
     "mesh)\n"
     "  set show on|off            print the program after it changes"},
    {"help", cmd_help, FALSE, COMPLETE_COMMAND, "help [COMMAND]",
     "list the commands, or describe one", NULL},
    {"quit", cmd_quit, FALSE, COMPLETE_NONE, "quit",
     "end the session (also Ctrl-D)", NULL},
    {"exit", cmd_quit, FALSE, COMPLETE_NONE, "exit", "end the session", NULL},
};

static const Command *find_command(const char *name) {
  for (gsize i = 0; i < G_N_ELEMENTS(commands); i++)
    if (strcmp(commands[i].name, name) == 0)
      return &commands[i];
  return NULL;
}

static gboolean cmd_help(Session *s, const char *text, int argc, char **argv) {
  g_autoptr(GString) out = g_string_new(NULL);
  if (argc == 2) {
    const Command *c = find_command(argv[1]);
    if (!c) {
      report_error(s, "help: no command '%s'", argv[1]);
      return FALSE;
    }
    g_string_append_printf(out, "%s\n  %s\n", c->usage, c->summary);
    if (c->help) {
      g_auto(GStrv) lines = g_strsplit(c->help, "\n", -1);
      for (char **l = lines; *l; l++)
        g_string_append_printf(out, "  %s\n", *l);
    }
    put_string(out);
    return TRUE;
  }
  if (argc > 2) {
    report_error(s, "usage: help [COMMAND]");
    return FALSE;
  }
  g_string_append(out, "Commands end at a newline, at ';', or at a '.' "
                       "followed by a space:\n"
                       "  arg-tile 0 0 8. propagate.\n\n");
  for (gsize i = 0; i < G_N_ELEMENTS(commands); i++)
    g_string_append_printf(out, "  %-34s %s\n", commands[i].usage,
                           commands[i].summary);
  g_string_append(out, "\nA line ending with '\\' continues on the next; "
                       "'#' starts a comment.\n"
                       "Values are named as the program prints them (%0, "
                       "%x); 'help COMMAND' says more.\n");
  put_string(out);
  return TRUE;
}

/* ------------------------------------------------------ splitting lines */

/* 'p' starts a 'lua' command (which takes the rest of the line). */
static gboolean is_lua_command(const char *p) {
  return strncmp(p, "lua", 3) == 0 && (p[3] == '\0' || g_ascii_isspace(p[3]));
}

/* Where the command starting at 'p' (not a space) ends: at ';', a
 * newline, a '.' followed by whitespace or the end, or a '#' comment; a
 * 'lua' command runs to the end.  '*next' is where the next one may
 * start. */
static const char *command_end(const char *p, const char **next) {
  const char *q = p;
  if (is_lua_command(p)) {
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

/* The commands of a logical line, stripped, empty ones left out. */
static GPtrArray *split_line(const char *line) {
  GPtrArray *cmds = g_ptr_array_new_with_free_func(g_free);
  const char *p = line;
  while (*p) {
    while (g_ascii_isspace(*p))
      p++;
    if (!*p)
      break;
    const char *next;
    const char *end = command_end(p, &next);
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
    command_end(p, &next);
    last = p;
    p = next;
  }
  if (!last || !is_lua_command(last))
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
static gboolean input_add(Session *s, GString *buf, const char *line) {
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

/* Shows the program if it changed since the last time (at the top
 * level: inside 'source', the 'source' line shows the result). */
static void show_changes(Session *s) {
  State *cur = current(s);
  if (s->depth > 0)
    return;
  if (s->show && s->changed && cur) {
    g_autoptr(GString) out = g_string_new(NULL);
    state_print(out, cur, FALSE);
    put_string(out);
  } else if (s->show && s->unchanged) {
    puts("no change");
  }
  s->changed = s->unchanged = FALSE;
}

/* Runs one command (stripped text, not empty). */
static gboolean run_command(Session *s, const char *text) {
  if (is_lua_command(text)) {
    const char *code = text + 3;
    while (g_ascii_isspace(*code))
      code++;
    show_changes(s); /* the program, before what the chunk prints */
    return cmd_lua(s, text, code);
  }
  int argc;
  g_auto(GStrv) argv = NULL;
  GError *error = NULL;
  if (!g_shell_parse_argv(text, &argc, &argv, &error)) {
    report_error(s, "'%s': %s", text, error->message);
    g_error_free(error);
    return FALSE;
  }
  const Command *c = find_command(argv[0]);
  if (!c) {
    report_error(s, "unknown command '%s' (try 'help')", argv[0]);
    return FALSE;
  }
  if (!c->changes)
    show_changes(s); /* the program, before what this command prints */
  return c->run(s, text, argc, argv);
}

/* Runs the commands of one logical line, stopping at the first failure
 * (or at Ctrl-C); shows the program if it changed (a sourced file's
 * lines leave that to the 'source' command).  FALSE on failure. */
static gboolean run_line(Session *s, const char *line) {
  g_autoptr(GPtrArray) cmds = split_line(line);
  if (s->depth == 0) {
    s->changed = s->unchanged = FALSE;
    got_sigint = 0;
  }
  gboolean ok = TRUE;
  for (guint i = 0; i < cmds->len && ok && !s->quit; i++) {
    const char *text = g_ptr_array_index(cmds, i);
    if (got_sigint) {
      report_error(s, "interrupted before '%s'", text);
      ok = FALSE;
      break;
    }
    partir_interrupt = 0;
    ok = run_command(s, text);
  }
  show_changes(s);
  fflush(stdout);
  if (!ok)
    s->failed = TRUE;
  return ok;
}

/* Reads and runs the commands of 'f' (named 'name' in messages) until
 * its end or 'quit'.  FALSE if a command failed; with 'stop_on_error'
 * the rest of the file is skipped then. */
static gboolean run_stream(Session *s, FILE *f, const char *name,
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
      if (!input_add(s, buf, line))
        continue;
    }
    s->lineno = first;
    if (!run_line(s, buf->str)) {
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

static gboolean run_file(Session *s, const char *path, gboolean stop_on_error) {
  FILE *f = fopen(path, "r");
  if (!f) {
    report_error(s, "source: %s: %s", path, g_strerror(errno));
    return FALSE;
  }
  gboolean ok = run_stream(s, f, path, stop_on_error);
  fclose(f);
  return ok;
}

/* ----------------------------------------------------------- completion */

static GPtrArray *candidates; /* char*: what the word may complete to */
static guint candidate_next;
static gboolean candidate_files; /* then file names */
static int file_state;

static char *complete_candidate(const char *text, int state) {
  if (state == 0) {
    candidate_next = 0;
    file_state = 0;
  }
  size_t n = strlen(text);
  while (candidate_next < candidates->len) {
    const char *c = g_ptr_array_index(candidates, candidate_next++);
    if (strncmp(c, text, n) == 0)
      return strdup(c);
  }
  return candidate_files ? rl_filename_completion_function(text, file_state++)
                         : NULL;
}

static void add_candidate(const char *c) {
  g_ptr_array_add(candidates, g_strdup(c));
}

static void add_values(Session *s, gboolean args_only) {
  State *cur = current(s);
  if (!cur)
    return;
  g_autoptr(GPtrArray) locs = state_locations(cur);
  for (guint i = 0; i < locs->len; i++) {
    const Location *l = g_ptr_array_index(locs, i);
    if (!args_only || l->is_arg)
      g_ptr_array_add(candidates, g_strdup_printf("%%%s", l->name));
  }
}

static void add_rules(Session *s) {
  for (guint i = 0; i < s->rs->rules->len; i++)
    add_candidate(((const Rule *)g_ptr_array_index(s->rs->rules, i))->name);
}

static void add_tactics(void) {
  g_auto(GStrv) dirs = tactic_dirs();
  for (char **d = dirs; *d; d++) {
    g_autoptr(GDir) dir = g_dir_open(*d, 0, NULL);
    const char *name;
    while (dir && (name = g_dir_read_name(dir)))
      if (g_str_has_suffix(name, ".lua"))
        g_ptr_array_add(candidates,
                        g_strndup(name, strlen(name) - strlen(".lua")));
  }
}

/* Where the command the cursor is in starts in 'prefix' (the line up to
 * the cursor), or -1 inside a comment.  A '.' right before the cursor
 * does not end the command: it may be part of a file name. */
static int current_command_start(const char *prefix) {
  const char *p = prefix;
  for (;;) {
    while (g_ascii_isspace(*p))
      p++;
    if (!*p)
      return (int)(p - prefix);
    const char *next;
    const char *end = command_end(p, &next);
    if (!*end || (*end == '.' && !end[1]))
      return (int)(p - prefix);
    if (*end == '#' && !*next && next[-1] != '\n')
      return -1;
    p = next;
  }
}

/* The candidates for word 'nwords' (0: the command) after 'words'. */
static void collect_candidates(Session *s, char **words, int nwords) {
  if (nwords == 0) {
    for (gsize i = 0; i < G_N_ELEMENTS(commands); i++)
      add_candidate(commands[i].name);
    return;
  }
  const Command *c = find_command(words[0]);
  if (!c)
    return;
  const char *prev = words[nwords - 1];
  switch (c->complete) {
  case COMPLETE_NONE:
    if (strcmp(c->name, "run") == 0)
      add_candidate("--seed");
    break;
  case COMPLETE_FILE:
    if (nwords == 1)
      candidate_files = TRUE;
    break;
  case COMPLETE_TACTIC:
    if (nwords == 1) {
      add_tactics();
      candidate_files = TRUE;
    }
    break;
  case COMPLETE_COMMAND:
    if (nwords == 1)
      for (gsize i = 0; i < G_N_ELEMENTS(commands); i++)
        add_candidate(commands[i].name);
    break;
  case COMPLETE_SETTING:
    if (nwords == 1) {
      add_candidate("mesh");
      add_candidate("show");
    } else if (nwords == 2 && strcmp(prev, "show") == 0) {
      add_candidate("on");
      add_candidate("off");
    }
    break;
  case COMPLETE_ARG:
    if (nwords == 1)
      add_values(s, TRUE);
    break;
  case COMPLETE_VALUE:
    if (nwords == 1 || strcmp(c->name, "show") == 0)
      add_values(s, FALSE);
    if (strcmp(c->name, "show") == 0)
      add_candidate("--expr");
    break;
  case COMPLETE_RULE:
    if (nwords == 1) {
      add_rules(s);
    } else if (strcmp(c->name, "apply") == 0) {
      const Rule *rule = ruleset_find(s->rs, words[1]);
      if (strcmp(prev, "at") == 0) {
        add_values(s, FALSE);
        break;
      }
      if (nwords == 2)
        add_candidate("at");
      for (int i = 0; rule && i < rule->nparams; i++)
        g_ptr_array_add(candidates, g_strdup_printf("%s=", rule->params[i]));
      rl_completion_suppress_append = 1; /* no space after "w=" */
    }
    break;
  }
}

static char **complete(const char *text, int start, int end) {
  Session *s = the_session;
  rl_attempted_completion_over = 1; /* no file names unless asked */
  g_autofree char *prefix = g_strndup(rl_line_buffer, (gsize)start);
  int from = current_command_start(prefix);
  if (from < 0 || is_lua_command(prefix + from))
    return NULL;
  g_auto(GStrv) split = g_strsplit_set(prefix + from, " \t", -1);
  GPtrArray *words = g_ptr_array_new();
  for (char **w = split; *w; w++)
    if (**w)
      g_ptr_array_add(words, *w);
  g_ptr_array_set_size(candidates, 0);
  candidate_files = FALSE;
  collect_candidates(s, (char **)words->pdata, (int)words->len);
  g_ptr_array_free(words, TRUE);
  if (!candidates->len && !candidate_files)
    return NULL;
  return rl_completion_matches(text, complete_candidate);
}

/* ---------------------------------------------------------- interactive */

static char *history_file(void) {
  const char *env = g_getenv("PARTIR_HISTORY");
  if (env)
    return *env ? g_strdup(env) : NULL;
  return g_build_filename(g_get_home_dir(), ".partir_history", NULL);
}

static void history_add(const char *history, const char *line) {
  if (!line[strspn(line, " \t\n")])
    return;
  HIST_ENTRY *last =
      history_length ? history_get(history_base + history_length - 1) : NULL;
  if (last && strcmp(last->line, line) == 0)
    return;
  add_history(line);
  if (!history)
    return;
  /* append now, so a session that dies keeps what it typed */
  if (!g_file_test(history, G_FILE_TEST_EXISTS))
    g_file_set_contents(history, "", 0, NULL);
  append_history(1, history);
}

static char *pending_line;
static gboolean line_ready;

static void on_line(char *line) {
  rl_callback_handler_remove(); /* back to a cooked terminal */
  pending_line = line;
  line_ready = TRUE;
}

/* Waits for input on stdin or for SIGINT; TRUE when there is input. */
static gboolean wait_for_input(void) {
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  int ready = 0;
  if (!got_sigint) {
    fd_set fds;
    FD_ZERO(&fds);
    FD_SET(fileno(rl_instream), &fds);
    ready = pselect(fileno(rl_instream) + 1, &fds, NULL, NULL, NULL, &old);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return ready > 0;
}

static void run_interactive(Session *s) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, NULL);

  g_autofree char *history = history_file();
  using_history();
  stifle_history(HISTORY_MAX);
#if RL_READLINE_VERSION >= 0x0802
  /* 'lua' code over several lines stays one entry in the file */
  history_comment_char = '#';
  history_write_timestamps = 1;
  history_multiline_entries = 1;
#endif
  if (history)
    read_history(history);
  rl_readline_name = "partir";
  rl_catch_signals = 0; /* SIGINT is ours: see wait_for_input */
  rl_attempted_completion_function = complete;
  rl_instream = stdin;
  rl_outstream = stdout;

  g_autoptr(GString) buf = g_string_new(NULL);
  while (!s->quit) {
    line_ready = FALSE;
    got_sigint = 0;
    rl_callback_handler_install(buf->len ? PROMPT_MORE : PROMPT, on_line);
    while (!line_ready) {
      if (wait_for_input()) {
        rl_callback_read_char();
      } else if (got_sigint) { /* Ctrl-C at the prompt: a fresh line */
        got_sigint = 0;
        partir_interrupt = 0;
        g_string_truncate(buf, 0);
        /* before the terminal is restored, which returns the cursor to
         * the start of the line */
        rl_point = rl_end;
        rl_redisplay();
        fputs("^C\n", rl_outstream);
        fflush(rl_outstream);
        rl_free_line_state();
        rl_callback_sigcleanup();
        rl_callback_handler_remove();
        rl_callback_handler_install(PROMPT, on_line);
      } else if (errno != EINTR) {
        rl_callback_handler_remove();
        pending_line = NULL; /* stdin broke: as at its end */
        line_ready = TRUE;
      }
    }
    char *line = pending_line;
    pending_line = NULL;
    if (!line) { /* Ctrl-D */
      putchar('\n');
      break;
    }
    gboolean complete_line = input_add(s, buf, line);
    free(line);
    if (!complete_line)
      continue;
    history_add(history, buf->str);
    s->lineno++;
    in_command = 1;
    run_line(s, buf->str);
    in_command = 0;
    g_string_truncate(buf, 0);
  }
  if (history)
    history_truncate_file(history, HISTORY_MAX);
  signal(SIGINT, SIG_DFL);
}

/* ----------------------------------------------------------------- main */

typedef struct Options {
  char *program; /* FILE.pir to load first, or NULL */
  char **rules;  /* --rules */
  char *mesh;    /* --mesh */
  char *batch;   /* --batch FILE */
  gboolean echo; /* --echo */
} Options;

static int run_session(void *data) {
  Options *o = data;
  /* this thread takes SIGINT (main() blocked it for the others) */
  sigset_t sigint;
  sigemptyset(&sigint);
  sigaddset(&sigint, SIGINT);
  pthread_sigmask(SIG_UNBLOCK, &sigint, NULL);

  Session session = {.top = -1, .show = TRUE};
  Session *s = &session;
  the_session = s;
  s->interactive = !o->batch && isatty(STDIN_FILENO);
  s->echo = o->echo;
  s->color = s->interactive && isatty(STDERR_FILENO) && !g_getenv("NO_COLOR");
  GError *error = NULL;
  if (o->mesh && !mesh_parse(o->mesh, &s->mesh, &error)) {
    g_printerr("partir-repl: --mesh: %s\n", error->message);
    g_error_free(error);
    return 2;
  }
  g_autoptr(GString) errors = g_string_new(NULL);
  s->rs = ruleset_load((const char *const *)o->rules, errors);
  if (!s->rs) {
    fputs(errors->str, stderr);
    return 1;
  }
  s->steps = g_array_new(FALSE, TRUE, sizeof(Step));
  g_array_set_clear_func(s->steps, step_clear);
  candidates = g_ptr_array_new_with_free_func(g_free);
  int status = 0;
  if (s->interactive)
    printf("partir %s: 'help' lists the commands, Ctrl-D ends.\n",
           partir_version());
  if (o->program) {
    s->changed = FALSE;
    if (cmd_load_path(s, o->program))
      show_changes(s);
    else
      status = 1;
    s->changed = FALSE;
  }
  if (status == 0) {
    if (s->interactive) {
      run_interactive(s);
    } else if (o->batch) {
      run_file(s, o->batch, FALSE);
    } else {
      run_stream(s, stdin, "<stdin>", FALSE);
    }
    status = s->failed && !s->interactive ? 1 : 0;
  }
  g_array_unref(s->steps);
  plua_close(s->lua);
  if (s->syntax)
    lua_close(s->syntax);
  ruleset_free(s->rs);
  g_ptr_array_unref(candidates);
  return status;
}

/* When run from the build tree and nothing is configured, use the tree's
 * rules/ and tactics/ (as repl/partir does). */
static void use_build_tree(const char *argv0) {
  g_autofree char *exe = g_file_read_link("/proc/self/exe", NULL);
  if (!exe)
    exe = g_canonicalize_filename(argv0, NULL);
  g_autofree char *dir = g_path_get_dirname(exe);
  if (!g_getenv("PARTIR_RULES")) {
    g_autofree char *rules = g_canonicalize_filename("../rules", dir);
    g_autofree char *ops = g_build_filename(rules, "ops.rules", NULL);
    if (g_file_test(ops, G_FILE_TEST_EXISTS))
      g_setenv("PARTIR_RULES", rules, TRUE);
  }
  if (!g_getenv("PARTIR_TACTICS")) {
    g_autofree char *tactics = g_canonicalize_filename("../tactics", dir);
    if (g_file_test(tactics, G_FILE_TEST_IS_DIR))
      g_setenv("PARTIR_TACTICS", tactics, TRUE);
  }
}

int main(int argc, char **argv) {
  Options o = {0};
  gboolean version = FALSE;
  GOptionEntry entries[] = {
      {"rules", 'r', 0, G_OPTION_ARG_FILENAME_ARRAY, &o.rules,
       "load these rule files (else $PARTIR_RULES, else the installed ones)",
       "FILE"},
      {"mesh", 'm', 0, G_OPTION_ARG_STRING, &o.mesh,
       "the device mesh for tactics and Lua", "AXIS=SIZE,..."},
      {"batch", 'b', 0, G_OPTION_ARG_FILENAME, &o.batch,
       "read commands from FILE (no prompts); exit 1 if one fails", "FILE"},
      {"echo", 'e', 0, G_OPTION_ARG_NONE, &o.echo,
       "without a terminal: print each input line after a prompt", NULL},
      {"version", 0, 0, G_OPTION_ARG_NONE, &version, "print the version", NULL},
      {NULL}};
  g_autoptr(GOptionContext) ctx = g_option_context_new("[FILE.pir]");
  g_option_context_set_summary(
      ctx, "Partition a program interactively: commands such as 'arg-tile 0 "
           "0 8.' and 'propagate.';\n'help' in the session lists them.  "
           "Without a terminal, commands are read from stdin.");
  g_option_context_add_main_entries(ctx, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
    g_printerr("partir-repl: %s\n", error->message);
    g_error_free(error);
    return 2;
  }
  if (version) {
    g_print("partir-repl %s\n", partir_version());
    return 0;
  }
  if (argc > 2) {
    g_printerr("partir-repl: at most one FILE.pir (see --help)\n");
    return 2;
  }
  o.program = argc == 2 ? argv[1] : NULL;
  use_build_tree(argv[0]);

  /* only the session's thread takes SIGINT: it unblocks it */
  sigset_t sigint;
  sigemptyset(&sigint);
  sigaddset(&sigint, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigint, NULL);
  int status = partir_call_with_stack(run_session, &o);
  if (fflush(stdout) != 0) {
    g_printerr("partir-repl: writing output: %s\n", g_strerror(errno));
    status = 1;
  }
  g_strfreev(o.rules);
  g_free(o.mesh);
  g_free(o.batch);
  return status;
}
