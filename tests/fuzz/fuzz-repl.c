/* fuzz-repl — REPL command lines on a live session (repl/repl-input.c,
 * repl-commands.c, repl-session.c; through them rewrite/command.c, the
 * passes, lowering, the cost model, the interpreter and, for 'tactic',
 * the Lua binding).
 *
 * Input: lines, as typed at partir-repl's prompt after it loaded
 * examples/mlp.pir.  Each logical line (repl_input_add joins lines that
 * continue) runs through repl_run_line, the real command path: splitting
 * on ';' and '. ', argv parsing, the command table, undo and redo.
 * Commands that would touch files or run arbitrary code are skipped with
 * their whole line: load, save, source, lua, a tactic given as a path,
 * 'set hw' given a path, export to a file.  The session is made fresh for every
 * input over the shared rules and the loaded example, so inputs do not see each
 * other.
 */
#include "fuzz.h"

#include "../../repl/repl.h"

#include <string.h>

/* TRUE when command 'text' (stripped) may run here: it reads and writes
 * no file but the shipped ones, and runs no Lua but the shipped
 * tactics. */
static gboolean command_allowed(const char *text) {
  if (repl_is_lua_command(text))
    return FALSE;
  int argc;
  g_auto(GStrv) argv = NULL;
  if (!g_shell_parse_argv(text, &argc, &argv, NULL))
    return TRUE; /* the REPL refuses it too */
  /* exec and bench compile with LLVM (tens of milliseconds an input:
   * a campaign dropped from 600 to 80 inputs/s once its corpus learnt
   * them); compiled code is checked by tests/codegen.sh and the
   * codegen unit tests, its options by tests/repl.sh */
  static const char *const denied[] = {"load", "save", "source",
                                       "lua",  "exec", "bench"};
  for (gsize i = 0; i < G_N_ELEMENTS(denied); i++)
    if (strcmp(argv[0], denied[i]) == 0)
      return FALSE;
  if (strcmp(argv[0], "tactic") == 0 && argc >= 2)
    for (const char *p = argv[1]; *p; p++)
      if (!g_ascii_islower(*p))
        return FALSE; /* only NAME, a shipped tactic */
  /* export FILE writes the file: only 'export [--emit FORM]' prints */
  if (strcmp(argv[0], "export") == 0) {
    for (int i = 1; i < argc; i++) {
      if (strcmp(argv[i], "--emit") != 0)
        return FALSE;
      i++; /* its form */
    }
  }
  if (strcmp(argv[0], "set") == 0 && argc >= 3 && strcmp(argv[1], "hw") == 0)
    return !strchr(argv[2], '/') && !g_str_has_suffix(argv[2], ".hw");
  return TRUE;
}

/* TRUE when every command of logical line 'line' may run; the line is
 * split as repl-input.c splits it. */
static gboolean line_allowed(const char *line) {
  g_autoptr(GPtrArray) cmds = repl_split_line(line);
  for (guint i = 0; i < cmds->len; i++)
    if (!command_allowed(g_ptr_array_index(cmds, i)))
      return FALSE;
  return TRUE;
}

static void fuzz_repl(const uint8_t *data, size_t size) {
  if (fuzz_names_special_file(data, size))
    return;
  Session session = {.top = -1, .show = TRUE, .rs = fuzz_rules()};
  Session *s = &session;
  repl_session_init(s);
  repl_input_init(s);
  repl_push_state(s, fuzz_mlp(), "load examples/mlp.pir", TRUE);

  g_autofree char *text = fuzz_text(data, size);
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  g_autoptr(GString) buf = g_string_new(NULL);
  for (char **line = lines; *line && !s->quit; line++) {
    gboolean last = line[1] == NULL;
    if (!repl_input_add(s, buf, *line) && !last)
      continue;
    if (line_allowed(buf->str))
      repl_run_line(s, buf->str);
    g_string_truncate(buf, 0);
  }

  s->rs = NULL; /* shared: repl_session_free would free it */
  repl_session_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fuzz_run(fuzz_repl, data, size);
}
