/* fuzz-pir — the .pir parser (core/parse.c, lex.c, typerule.c, print.c).
 *
 * Input: program text.  A program that parses must print, parse back
 * and print again to the same text, and every function must parse back
 * to the very same body (hash-consing makes that a pointer comparison),
 * as 'l_check' (bind/lua.c) and the fixture runner's round trip ask.  A
 * program that does not parse must say why (a diagnostic).  The compact
 * expression form is printed too, for the printer's sake.
 */
#include "fuzz.h"

#include <string.h>

static void fuzz_pir(const uint8_t *data, size_t size) {
  g_autoptr(Diag) errors = diag_new(NULL);
  g_autoptr(Module) m =
      pipeline_read_program("input.pir", (const char *)data, size, errors);
  if (!m) {
    if (!diag_any(errors))
      fuzz_fail("the program is refused without a diagnostic");
    return;
  }
  g_autoptr(GString) once = g_string_new(NULL);
  print_module(once, m);
  g_autoptr(Module) again = fuzz_reparse("print.pir", once, TRUE);
  if (m->funcs->len != again->funcs->len)
    fuzz_fail("%u functions parse back as %u", m->funcs->len,
              again->funcs->len);
  for (guint i = 0; i < m->funcs->len; i++) {
    const Func *a = g_ptr_array_index(m->funcs, i);
    const Func *b = g_ptr_array_index(again->funcs, i);
    if (a->body != b->body)
      fuzz_fail("function @%s parses back to another term:\n%s", a->name,
                once->str);
  }
  g_autoptr(GString) expr = g_string_new(NULL);
  print_module_expr(expr, m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fuzz_run(fuzz_pir, data, size);
}
