/* repl.h — what the files of partir-repl share, one section per file,
 * lowest layer first:
 *
 *   repl-session.c   the session: its state stack (undo/redo), output and
 *                    error reports, the Lua state, the compiled program,
 *                    the Ctrl-C flags
 *   repl-describe.c  telling about a state: a value's statement, 'info'
 *   repl-commands.c  the command table, and running one command
 *   repl-input.c     logical lines, splitting them into commands, running
 *                    a line, a stream or a file ('source')
 *   repl-complete.c  readline completion and the history file
 *   partir-repl.c    options, start-up, the interactive loop and Ctrl-C
 *
 * A file calls only the files above it in this list.  The one service a
 * lower file needs from a higher one, running a file of commands for
 * 'source', is the session's 'run_file', which repl-input.c sets.
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

/* -------------------------------------------------------- repl-session.c */

/* One entry of the undo stack. */
typedef struct Step {
  State *state;
  char *command;    /* the command that produced it, as typed */
  gboolean is_load; /* a 'load': history starts here */
} Step;

typedef struct Session Session;

/* What the session prints after a line changes the program. */
typedef enum {
  SHOW_OFF,     /* nothing */
  SHOW_SUMMARY, /* what changed (repl_describe_change) */
  SHOW_FULL,    /* the whole program */
} ShowMode;

/* Runs the commands in file 'path' (repl_run_file): the service 'source'
 * needs from the layer that reads input. */
typedef gboolean (*RunFileFn)(Session *s, const char *path,
                              gboolean stop_on_error);

struct Session {
  RuleSet *rs;
  GArray *steps;         /* Step: the undo stack and the redo branch */
  int top;               /* the current step, -1 before any program */
  lua_State *lua;        /* the 'partir' Lua state, made on first use */
  lua_State *syntax;     /* a bare Lua state that only parses (continuation) */
  Mesh mesh;             /* for tactics and Lua */
  gboolean mesh_of_file; /* 'mesh' came with the loaded file (its sdy.mesh):
                            the next file brings its own; one set by the
                            user a file must agree with */
  gboolean ignore_shardings; /* 'load --shardings ignore', kept for a
                                plain 'load' again */
  ShowMode show;             /* what to print after the program changes */
  State *shown;              /* the state last shown (a reference), or NULL */
  gboolean cost;             /* print the cost after it changes */
  char *hw;                  /* hardware for 'cost' (a name or a .hw file) */
  char *load_path;      /* the file 'load' last named: plain 'load' again */
  gboolean interactive; /* readline, prompts, colour */
  gboolean echo;        /* batch: print each line after a prompt */
  gboolean color;       /* errors in colour (stderr is a terminal) */
  gboolean quit;
  gboolean failed;    /* some command failed (the batch exit status) */
  RunFileFn run_file; /* set by repl_input_init */
  /* the current state compiled ('exec', 'bench'), once per state: for
   * 'compiled_state' on mesh 'compiled_mesh' with 'compiled_options' */
  Executable compiled;
  State *compiled_state; /* a reference; NULL: nothing compiled */
  char *compiled_mesh;
  CodegenOptions compiled_options;
  /* the line being run */
  gboolean changed;   /* the current state changed */
  gboolean unchanged; /* a rewrite succeeded but changed nothing */
  const char *where;  /* file being read, or NULL (the terminal) */
  int lineno;
  int depth; /* 'source' nesting */
};

/* Set by the SIGINT handler; repl_run_line and the interactive loop read
 * it. */
extern volatile sig_atomic_t repl_got_sigint;
/* The Lua state running a chunk, for the SIGINT handler. */
extern lua_State *volatile repl_running_lua;

/* Gives session 's' (its other fields set) an empty state stack. */
void repl_session_init(Session *s);
/* Frees what the session holds: states, Lua, settings and rules. */
void repl_session_free(Session *s);
/* The current state compiled on 'mesh' (no axes: one device) with
 * options 'o': compiled once and kept until the state, the mesh or the
 * options change, or the session ends.  NULL with the reason in 'why'
 * (which also says when there is no program). */
const Executable *repl_compiled(Session *s, const Mesh *mesh,
                                const CodegenOptions *o, Diag *why);
/* Frees the compiled program, if any. */
void repl_drop_compiled(Session *s);
/* The current state, or NULL before any program. */
State *repl_current(const Session *s);
/* The current state, or NULL with an error naming command 'cmd'. */
State *repl_need_program(Session *s, const char *cmd);
/* Makes 'next' the current state, the effect of 'command'. */
void repl_push_state(Session *s, State *next, const char *command,
                     gboolean is_load);
/* Takes 'next', a rewrite of the current state: a new step unless it is
 * the same program. */
void repl_adopt(Session *s, State *next, const char *command);
/* How many steps undo (redo) can go. */
int repl_undo_steps(const Session *s);
int repl_redo_steps(const Session *s);
/* Moves back (forward) 'n' steps; FALSE, and no move, when there are
 * fewer. */
gboolean repl_undo(Session *s, int n);
gboolean repl_redo(Session *s, int n);
/* Prints 'text' to stdout. */
void repl_put_string(const GString *text);
/* Prints "error: ..." (the caller returns FALSE), "warning: ..." or
 * "note: ...". */
void repl_report_error(Session *s, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
void repl_report_warning(Session *s, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
void repl_report_note(Session *s, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* Prints diagnostics that carry their own location. */
void repl_report_diagnostics(const char *text);
/* The session's 'partir' Lua state, made on first use (NULL: no memory). */
lua_State *repl_session_lua(Session *s);
/* Bracket a Lua call that Ctrl-C may interrupt. */
void repl_lua_begin(lua_State *L);
void repl_lua_end(void);

/* ------------------------------------------------------- repl-describe.c */

/* The canonical print of 's' as lines (no newlines). */
GStrv repl_program_lines(const State *s);
/* Appends the statement defining 'name' from 'lines' and, for a tile or
 * sum, its whole region, de-indented; FALSE when there is none. */
gboolean repl_append_definition(GString *out, GStrv lines, const char *name);
/* Appends one line (no newline) for value 'name', term 'placed': "%x:
 * TYPE" for an argument, else its statement ("%0 = matmul(%x, %w)"; a
 * region's header ends in "{ ... }"). */
void repl_append_statement(GString *out, GStrv lines, const char *name,
                           const Term *placed);
/* 'info': the statement of value 'name' of 'cur' (the session's current
 * state), its type, where it came from, the regions around it and its
 * layout on the session's mesh; FALSE when there is no such value. */
gboolean repl_info(GString *out, const Session *s, const State *cur,
                   const char *name);
/* A few lines on how 'after' differs from 'before' (NULL: no program
 * before): values rewritten, new and gone, new tiles and sums, and on
 * the session's mesh the collectives it lowers to. */
void repl_describe_change(GString *out, const Session *s, const State *before,
                          const State *after);

/* ------------------------------------------------------- repl-commands.c */

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
  COMPLETE_OPTIONS, /* the --options its usage names (then a mesh) */
} CompleteKind;

#define ARGS_ANY (-1) /* Command.max_args: no limit */

typedef struct Command {
  const char *name;
  CommandFn run;
  int min_args, max_args; /* words after the name, checked before 'run' */
  gboolean changes;       /* may change the current state */
  CompleteKind complete;
  const char *usage; /* printed by 'help', and after "usage: " */
  const char *summary;
  const char *help; /* more, for 'help NAME' (or NULL) */
} Command;

extern const Command repl_commands[];
extern const gsize repl_ncommands;
/* The table entry named 'name', or NULL. */
const Command *repl_find_command(const char *name);
/* 'p' starts a 'lua' command, which takes the rest of the line. */
gboolean repl_is_lua_command(const char *p);
/* Runs one command (stripped text, not empty); FALSE if it failed. */
gboolean repl_run_command(Session *s, const char *text);
/* Shows the program (and its cost) if it changed since the last time. */
void repl_show_changes(Session *s);
/* Loads the program in 'path' as a new state ('load', FILE.pir), then
 * the commands a StableHLO file's shardings become, each a step of its
 * own (unless 'ignore_shardings'). */
gboolean repl_cmd_load_path(Session *s, const char *path,
                            gboolean ignore_shardings);

/* ---------------------------------------------------------- repl-input.c */

/* The commands of a logical line, stripped, empty ones left out. */
GPtrArray *repl_split_line(const char *line);

/* Makes 'source' in session 's' run files through repl_run_file. */
void repl_input_init(Session *s);
/* Where the command at 'p' ends; '*next' is where the next may start. */
const char *repl_command_end(const char *p, const char **next);
/* Adds a physical line to logical line 'buf'; TRUE when it is complete. */
gboolean repl_input_add(Session *s, GString *buf, const char *line);
/* Runs the commands of a logical line; FALSE if one failed. */
gboolean repl_run_line(Session *s, const char *line);
/* Runs the commands of a stream or a file; FALSE if one failed. */
gboolean repl_run_stream(Session *s, FILE *f, const char *name,
                         gboolean stop_on_error);
gboolean repl_run_file(Session *s, const char *path, gboolean stop_on_error);

/* ------------------------------------------------------- repl-complete.c */

/* Completion works on 's' until repl_complete_free. */
void repl_complete_init(Session *s);
void repl_complete_free(void);
/* Readline's attempted completion function. */
char **repl_complete(const char *text, int start, int end);
/* The history file: opened (its name, or NULL), added to, truncated. */
char *repl_history_open(void);
void repl_history_add(const char *history, const char *line);
void repl_history_close(const char *history);

#endif
