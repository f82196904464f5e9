/* partir-repl.c — the interactive front end: a readline session over the
 * rewrite engine.
 *
 *   partir-repl [FILE.pir] [--rules FILE]... [--mesh SPEC] [--batch FILE]
 *               [--shardings apply|ignore]
 *               [--echo]
 *
 * This file reads the options, makes the session (repl-session.c), loads
 * the program and runs the commands: from a terminal, from --batch FILE
 * or from stdin (repl-input.c); the commands are in repl-commands.c.  It
 * is the top of the REPL's files (repl.h): nothing calls into it.
 *
 * With a terminal on stdin the session uses readline (history and
 * completion: repl-complete.c) through its callback interface, so that
 * Ctrl-C can clear the line at the prompt; during a command Ctrl-C sets
 * 'partir_interrupt' (and interrupts Lua), which stops the interpreter,
 * engine scripts and Lua chunks, and the session goes on.  Without a
 * terminal (or with --batch FILE) commands are read without prompts or
 * colour, and the exit status is 1 if any command failed.  A FILE.pir
 * that does not load is reported, and the session starts without a
 * program (a failure for the exit status).
 *
 * Everything runs on one thread with a deep stack (partir_call_with_stack):
 * term traversals recurse.  Results go to stdout, errors to stderr as
 * "error: ..." (after "FILE:LINE: " when read from a file), with stdout
 * flushed first so that a transcript of both streams stays in order.
 */
#include "repl.h"

#include <errno.h>
#include <locale.h>
#include <pthread.h>
#include <readline/readline.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <unistd.h>

/* ------------------------------------------------------------- signals */

/* A command of the interactive session is running (the terminal is in
 * its normal mode, which echoes "^C"). */
static volatile sig_atomic_t in_command;

/* The thread that reads the terminal: the one thread SIGINT may wake. */
static pthread_t main_thread;

/* The SIGINT handler: sets the session's flags (repl-session.c) and
 * 'partir_interrupt', and stops a running Lua chunk.  A signal that
 * lands on another thread (the libraries' pools: OpenBLAS starts its
 * own when it is loaded; a compiled program's device threads) is sent
 * on to the main thread, whose pselect it must interrupt. */
static void on_sigint(int sig) {
  if (!pthread_equal(pthread_self(), main_thread)) {
    pthread_kill(main_thread, sig);
    return;
  }
  repl_got_sigint = 1;
  partir_interrupt = 1;
  lua_State *L = repl_running_lua;
  if (L)
    plua_interrupt(L);
  if (in_command) /* end the echoed "^C" line before the error */
    (void)!write(STDERR_FILENO, "\n", 1);
}

/* ---------------------------------------------------------- interactive */

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
  if (!repl_got_sigint) {
    fd_set fds;
    FD_ZERO(&fds);
    FD_SET(fileno(rl_instream), &fds);
    ready = pselect(fileno(rl_instream) + 1, &fds, NULL, NULL, NULL, &old);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return ready > 0;
}

/* The session at a terminal: reads logical lines with readline and runs
 * them until 'quit' or Ctrl-D. */
static void run_interactive(Session *s) {
  main_thread = pthread_self();
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, NULL);

  g_autofree char *history = repl_history_open();
  rl_readline_name = "partir";
  rl_catch_signals = 0; /* SIGINT is ours: see wait_for_input */
  rl_attempted_completion_function = repl_complete;
  rl_instream = stdin;
  rl_outstream = stdout;

  g_autoptr(GString) buf = g_string_new(NULL);
  while (!s->quit) {
    line_ready = FALSE;
    repl_got_sigint = 0;
    rl_callback_handler_install(buf->len ? PROMPT_MORE : PROMPT, on_line);
    while (!line_ready) {
      if (wait_for_input()) {
        rl_callback_read_char();
      } else if (repl_got_sigint) { /* Ctrl-C at the prompt: a fresh line */
        repl_got_sigint = 0;
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
    gboolean complete_line = repl_input_add(s, buf, line);
    free(line);
    if (!complete_line)
      continue;
    repl_history_add(history, buf->str);
    s->lineno++;
    in_command = 1;
    repl_run_line(s, buf->str);
    in_command = 0;
    g_string_truncate(buf, 0);
  }
  repl_history_close(history);
  signal(SIGINT, SIG_DFL);
}

/* ----------------------------------------------------------------- main */

typedef struct Options {
  char *program;   /* FILE.pir to load first, or NULL */
  char **rules;    /* --rules */
  char *mesh;      /* --mesh */
  char *batch;     /* --batch FILE */
  gboolean echo;   /* --echo */
  gboolean json;   /* --json: the agent protocol on stdin/stdout */
  char **allow;    /* --allow DIR: where --json may read programs */
  char *shardings; /* --shardings apply|ignore: FILE's own shardings */
} Options;

static int run_session(void *data) {
  Options *o = data;
  /* this thread takes SIGINT (main() blocked it for the others) */
  sigset_t sigint;
  sigemptyset(&sigint);
  sigaddset(&sigint, SIGINT);
  pthread_sigmask(SIG_UNBLOCK, &sigint, NULL);

  Session session = {.top = -1, .show = SHOW_SUMMARY};
  Session *s = &session;
  s->interactive = !o->batch && isatty(STDIN_FILENO);
  s->echo = o->echo;
  s->color = s->interactive && isatty(STDERR_FILENO) && !g_getenv("NO_COLOR");
  g_autoptr(Diag) diag = diag_new(NULL);
  if (o->mesh && !mesh_parse(o->mesh, &s->mesh, diag)) {
    g_printerr("partir-repl: --mesh: %s\n", diag_text(diag));
    return 2;
  }
  g_autoptr(Diag) errors = diag_new(NULL);
  s->rs = pipeline_load_rules((const char *const *)o->rules, NULL, errors);
  if (!s->rs) {
    fputs(diag_text(errors), stderr);
    return 1;
  }
  if (o->json) { /* no Lua, no readline: the protocol only */
    /* a directory that is not there allows nothing: said now, rather
     * than as every request's refusal */
    for (char **a = o->allow; a && *a; a++)
      if (!g_file_test(*a, G_FILE_TEST_IS_DIR)) {
        g_printerr("partir-repl: --allow %s: not a directory\n", *a);
        repl_session_free(s);
        return 2;
      }
    int status = proto_run(s->rs, o->allow, stdin);
    repl_session_free(s);
    return status;
  }
  repl_session_init(s);
  repl_input_init(s);
  repl_complete_init(s);
  if (s->interactive)
    printf("partir %s: 'help' lists the commands, Ctrl-D ends.\n",
           partir_version());
  /* a program that does not load leaves the session without one (as
   * 'python -i' and ghci do): fix the file and 'load' it again; without a
   * terminal the exit status still says it failed */
  if (o->program) {
    s->changed = FALSE;
    gboolean ignore = FALSE;
    if (o->shardings &&
        !pipeline_shardings_option(o->shardings, &ignore, diag)) {
      g_printerr("partir-repl: %s\n", diag_text(diag));
      repl_session_free(s);
      return 2;
    }
    if (repl_cmd_load_path(s, o->program, ignore)) {
      repl_show_changes(s);
    } else {
      s->failed = TRUE;
      repl_report_note(s,
                       "no program loaded; fix %s and type 'load' to "
                       "read it again",
                       o->program);
    }
    s->changed = FALSE;
  }
  if (s->interactive) {
    run_interactive(s);
  } else if (o->batch) {
    repl_run_file(s, o->batch, FALSE);
  } else {
    repl_run_stream(s, stdin, "<stdin>", FALSE);
  }
  int status = s->failed && !s->interactive ? 1 : 0;
  repl_session_free(s);
  repl_complete_free();
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
  if (!g_getenv("PARTIR_HW")) {
    g_autofree char *hw = g_canonicalize_filename("../hw", dir);
    g_autofree char *probe = g_build_filename(hw, "cpu2.hw", NULL);
    if (g_file_test(probe, G_FILE_TEST_EXISTS))
      g_setenv("PARTIR_HW", hw, TRUE);
  }
}

int main(int argc, char **argv) {
  /* the user's character set (file names, UTF-8 in arguments, readline);
   * numbers keep the C format, so that programs, cost tables, Lua's
   * numbers and JSON read the same in every locale */
  setlocale(LC_ALL, "");
  setlocale(LC_NUMERIC, "C");
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
      {"json", 0, 0, G_OPTION_ARG_NONE, &o.json,
       "speak the agent protocol (JSON lines) on stdin/stdout", NULL},
      {"allow", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o.allow,
       "with --json: a directory programs may be read from", "DIR"},
      {"shardings", 0, 0, G_OPTION_ARG_STRING, &o.shardings,
       "FILE's own shardings (StableHLO): apply them (the default) or ignore "
       "them",
       "apply|ignore"},
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
  g_free(o.shardings);
  g_free(o.batch);
  g_strfreev(o.allow);
  return status;
}
