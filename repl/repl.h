/* repl.h — what the files of partir-repl share: the session, the command
 * table and the functions one file calls in another.
 *
 *   partir-repl.c    options, start-up, the interactive loop and Ctrl-C
 *   repl-commands.c  the session's state stack, output and the commands
 *   repl-input.c     logical lines, splitting them into commands, running
 *                    a line, a stream or a file
 *   repl-complete.c  readline completion and the history file
 *
 * The session holds a rule set, a device mesh, the Lua state (made on
 * first use) and a stack of program states.  States are immutable and
 * refcounted (rule.h), so the stack is the whole undo/redo machinery:
 * 'steps[0..top]' are the states that led to the current one, each with
 * the command that produced it, and 'steps[top+1..]' is the redo branch;
 * undo and redo move 'top', a new state drops the redo branch.  A command
 * that fails leaves the stack as it was, and so does a rewrite that gives
 * back the same program ("no change").
 */
#ifndef PARTIR_REPL_H
#define PARTIR_REPL_H

#include "bind/bind.h"

#include <signal.h>

#define PROMPT "partir> "
#define PROMPT_MORE "   ...> "

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
  gboolean cost;        /* print the cost after it changes */
  char *hw;             /* hardware for 'cost' (a name or a .hw file) */
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

/* Prints the cost of the current program lowered on the session's mesh
 * (repl-commands.c); FALSE with an error printed when it cannot. */
gboolean repl_print_cost(Session *s);

/* Set by the SIGINT handler; the interactive loop and repl_run_line read
 * it (partir-repl.c). */
extern volatile sig_atomic_t repl_got_sigint;
/* The Lua state running a chunk, for the SIGINT handler. */
extern lua_State *volatile repl_running_lua;

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

/* repl-commands.c */
extern const Command repl_commands[];
extern const gsize repl_ncommands;
const Command *repl_find_command(const char *name);
State *repl_current(const Session *s);
void repl_step_clear(gpointer p);
void repl_put_string(const GString *text);
void repl_report_error(Session *s, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
gboolean repl_cmd_load_path(Session *s, const char *path);
gboolean repl_cmd_lua(Session *s, const char *text, const char *code);

/* repl-input.c */
gboolean repl_is_lua_command(const char *p);
const char *repl_command_end(const char *p, const char **next);
gboolean repl_input_add(Session *s, GString *buf, const char *line);
void repl_show_changes(Session *s);
gboolean repl_run_line(Session *s, const char *line);
gboolean repl_run_stream(Session *s, FILE *f, const char *name,
                         gboolean stop_on_error);
gboolean repl_run_file(Session *s, const char *path, gboolean stop_on_error);

/* repl-complete.c */
void repl_complete_init(Session *s);
void repl_complete_free(void);
char **repl_complete(const char *text, int start, int end);
char *repl_history_open(void);
void repl_history_add(const char *history, const char *line);
void repl_history_close(const char *history);

#endif
