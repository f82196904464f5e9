/* repl-complete.c — readline's completion for the session, and the
 * history file.
 *
 * Tab completes the word at the cursor in the command the cursor is in:
 * a command name first, then what the command's table entry says its
 * arguments are (CompleteKind: rule names, value names of the current
 * state, tactics, files, settings); nothing inside 'lua' code or a
 * comment.  The history lives in ~/.partir_history or $PARTIR_HISTORY
 * ("" for none); each line is appended as it is entered, so that a
 * session that dies keeps what it typed.
 */
#include "repl.h"

#include <readline/history.h>
#include <readline/readline.h>
#include <string.h>

#define HISTORY_MAX 1000

/* ----------------------------------------------------------- completion */

/* For readline's callbacks, which take no user data. */
static Session *the_session;

static GPtrArray *candidates; /* char*: what the word may complete to */
static guint candidate_next;
static gboolean candidate_files; /* then file names */
static gboolean candidate_paths; /* then file names, for a word with '/' */
static int file_state;

/* Completion works on session 's' from now on. */
void repl_complete_init(Session *s) {
  the_session = s;
  candidates = g_ptr_array_new_with_free_func(g_free);
}

/* Frees what repl_complete_init made. */
void repl_complete_free(void) { g_ptr_array_unref(candidates); }

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
  gboolean files = candidate_files || (candidate_paths && strchr(text, '/'));
  return files ? rl_filename_completion_function(text, file_state++) : NULL;
}

static void add_candidate(const char *c) {
  g_ptr_array_add(candidates, g_strdup(c));
}

static void add_values(Session *s, gboolean args_only) {
  State *cur = repl_current(s);
  if (!cur)
    return;
  g_autoptr(GPtrArray) locs = state_locations(cur);
  for (guint i = 0; i < locs->len; i++) {
    const Location *l = g_ptr_array_index(locs, i);
    if (!args_only || l->term->kind == TM_ARG)
      g_ptr_array_add(candidates, g_strdup_printf("%%%s", l->name));
  }
}

static void add_rules(Session *s) {
  for (guint i = 0; i < s->rs->rules->len; i++)
    add_candidate(((const Rule *)g_ptr_array_index(s->rs->rules, i))->name);
}

/* The shipped and $PARTIR_TACTICS tactics, not their helper modules. */
static void add_tactics(void) {
  g_auto(GStrv) names = plua_tactic_names();
  for (char **n = names; *n; n++)
    add_candidate(*n);
}

/* The hardware names: NAME.hw in the hardware directories. */
static void add_hardware(void) {
  g_auto(GStrv) dirs = hw_search_path();
  for (char **d = dirs; *d; d++) {
    g_autoptr(GDir) dir = g_dir_open(*d, 0, NULL);
    const char *name;
    while (dir && (name = g_dir_read_name(dir)))
      if (g_str_has_suffix(name, ".hw") && name[0] != '.')
        g_ptr_array_add(candidates,
                        g_strndup(name, strlen(name) - strlen(".hw")));
  }
}

/* The options of command 'c', read off its usage ("[--mesh M]"), or
 * after '--mesh' the meshes: none, and the session's. */
static void add_options(Session *s, const Command *c, const char *prev) {
  if (strcmp(prev, "--mesh") == 0) {
    g_autofree char *mesh = mesh_to_string(&s->mesh);
    add_candidate("none");
    if (*mesh)
      add_candidate(mesh);
    return;
  }
  if (strcmp(prev, "--emit") == 0) { /* export's forms */
    for (ExportForm f = EXPORT_SDY; f <= EXPORT_DEVICE; f++)
      add_candidate(export_form_name(f));
    return;
  }
  if (strcmp(prev, "--loss") == 0 || strcmp(prev, "--optimizer") == 0) {
    static const char *const words[][4] = {{"sum", "mse", "xent", NULL},
                                           {"sgd", "momentum", "adam", NULL}};
    for (const char *const *w = words[prev[2] == 'o']; *w; w++)
      add_candidate(*w);
    return;
  }
  if (strcmp(prev, "--algo") == 0) { /* search's algorithms */
    for (SearchAlgo a = SEARCH_MCTS; a <= SEARCH_BEAM; a++)
      add_candidate(search_algo_name(a));
    return;
  }
  if (strcmp(prev, "--emit-tactic") == 0) { /* search's tactic file */
    candidate_files = TRUE;
    return;
  }
  g_auto(GStrv) words = g_strsplit_set(c->usage, " []|", -1);
  for (char **w = words; *w; w++)
    if (g_str_has_prefix(*w, "--"))
      add_candidate(*w);
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
    const char *end = repl_command_end(p, &next);
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
    for (gsize i = 0; i < repl_ncommands; i++)
      add_candidate(repl_commands[i].name);
    return;
  }
  const Command *c = repl_find_command(words[0]);
  if (!c)
    return;
  const char *prev = words[nwords - 1];
  switch (c->complete) {
  case COMPLETE_NONE:
    break;
  case COMPLETE_OPTIONS:
    add_options(s, c, prev);
    break;
  case COMPLETE_FILE:
    if (nwords == 1)
      candidate_files = TRUE;
    break;
  case COMPLETE_TACTIC:
    if (nwords == 1) { /* a name, or a path once the word has a '/' */
      add_tactics();
      candidate_paths = TRUE;
    }
    break;
  case COMPLETE_COMMAND:
    if (nwords == 1)
      for (gsize i = 0; i < repl_ncommands; i++)
        add_candidate(repl_commands[i].name);
    break;
  case COMPLETE_SETTING:
    if (nwords == 1) {
      add_candidate("mesh");
      add_candidate("show");
      add_candidate("cost");
      add_candidate("hw");
    } else if (nwords == 2 &&
               (strcmp(prev, "show") == 0 || strcmp(prev, "cost") == 0)) {
      add_candidate("on");
      add_candidate("off");
      if (strcmp(prev, "show") == 0)
        add_candidate("full");
    } else if (nwords == 2 && strcmp(prev, "hw") == 0) {
      add_hardware();
    } else if (nwords == 2 && strcmp(prev, "mesh") == 0) {
      add_candidate("none");
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

/* Readline's attempted completion function. */
char **repl_complete(const char *text, int start, int end) {
  Session *s = the_session;
  rl_attempted_completion_over = 1; /* no file names unless asked */
  g_autofree char *prefix = g_strndup(rl_line_buffer, (gsize)start);
  int from = current_command_start(prefix);
  if (from < 0 || repl_is_lua_command(prefix + from))
    return NULL;
  g_auto(GStrv) split = g_strsplit_set(prefix + from, " \t", -1);
  GPtrArray *words = g_ptr_array_new();
  for (char **w = split; *w; w++)
    if (**w)
      g_ptr_array_add(words, *w);
  g_ptr_array_set_size(candidates, 0);
  candidate_files = candidate_paths = FALSE;
  collect_candidates(s, (char **)words->pdata, (int)words->len);
  g_ptr_array_free(words, TRUE);
  if (!candidates->len && !candidate_files && !candidate_paths)
    return NULL;
  return rl_completion_matches(text, complete_candidate);
}

/* --------------------------------------------------------------- history */

static char *history_file(void) {
  const char *env = g_getenv("PARTIR_HISTORY");
  if (env)
    return *env ? g_strdup(env) : NULL;
  return g_build_filename(g_get_home_dir(), ".partir_history", NULL);
}

/* Starts readline's history with the file's: returns the file's name, or
 * NULL for none. */
char *repl_history_open(void) {
  char *history = history_file();
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
  return history;
}

/* Keeps the last HISTORY_MAX entries of the file (if any). */
void repl_history_close(const char *history) {
  if (history)
    history_truncate_file(history, HISTORY_MAX);
}

/* Adds an entered (logical) line to the history, and to the file
 * 'history' unless it is NULL. */
void repl_history_add(const char *history, const char *line) {
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
