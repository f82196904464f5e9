/* fuzz-stablehlo — the StableHLO importer (src/import/, core/lex.c's
 * MLIR mode).
 *
 * Input: StableHLO text.  A file the importer refuses must say why (a
 * diagnostic: a syntax error, the list of unsupported operations, a
 * type error).  A file it imports must print as .pir that parses back
 * to the very same terms, with the locations as comments and without
 * them, and print the same again.  Its shardings applied (on no mesh,
 * and on x=2,y=2 for GSPMD strings) are refused only with a diagnostic,
 * and the program they make prints as .pir that parses back to it.
 */
#include "fuzz.h"

#include <string.h>

/* Every function of 'a' and 'b' has the very same body (hash-consing
 * makes that a pointer comparison). */
static void same_terms(const Module *a, const Module *b, const GString *text) {
  if (a->funcs->len != b->funcs->len)
    fuzz_fail("%u functions parse back as %u", a->funcs->len, b->funcs->len);
  for (guint i = 0; i < a->funcs->len; i++) {
    const Func *f = g_ptr_array_index(a->funcs, i);
    const Func *g = g_ptr_array_index(b->funcs, i);
    if (f->body != g->body)
      fuzz_fail("function @%s parses back to another term:\n%s", f->name,
                text->str);
  }
}

/* The shardings of the file applied, with 'mesh' given. */
static void fuzz_shardings(const uint8_t *data, size_t size, const char *spec) {
  Mesh mesh;
  g_autoptr(Diag) errors = diag_new(NULL);
  g_assert(mesh_parse(spec, &mesh, errors));
  LoadOptions lo = {.mesh = &mesh, .rs = fuzz_rules()};
  g_auto(Program) p = {0};
  if (!pipeline_open_text("input.mlir", (const char *)data, size, &lo, &p,
                          errors)) {
    if (!diag_any(errors))
      fuzz_fail("the shardings are refused without a diagnostic");
    return;
  }
  const State *s = pipeline_program_state(&p);
  g_autoptr(GString) once = g_string_new(NULL);
  state_print(once, s, FALSE);
  g_autoptr(Module) back =
      pipeline_read_program("sharded.pir", once->str, once->len, errors);
  if (!back || module_entry(back)->body != s->func.body)
    fuzz_fail("the sharded program does not parse back to itself:\n%s\n%s",
              diag_text(errors), once->str);
}

static void fuzz_stablehlo(const uint8_t *data, size_t size) {
  g_autoptr(Diag) errors = diag_new(NULL);
  g_autoptr(Module) m =
      pipeline_read_program("input.mlir", (const char *)data, size, errors);
  if (!m) {
    if (!diag_any(errors))
      fuzz_fail("the file is refused without a diagnostic");
    return;
  }
  /* with the operations' locations as comments: the comments are read
   * past */
  g_autoptr(GString) noted = g_string_new(NULL);
  print_module(noted, m);
  g_autoptr(Diag) again_errors = diag_new(NULL);
  g_autoptr(Module) noted_back =
      pipeline_read_program("noted.pir", noted->str, noted->len, again_errors);
  if (!noted_back)
    fuzz_fail("the import does not parse back:\n%s\nprint:\n%s",
              diag_text(again_errors), noted->str);
  same_terms(m, noted_back, noted);
  /* without them, the print is stable */
  g_hash_table_remove_all(m->notes);
  g_autoptr(GString) once = g_string_new(NULL);
  print_module(once, m);
  g_autoptr(Module) back = fuzz_reparse("print.pir", once, TRUE);
  same_terms(m, back, once);
  fuzz_shardings(data, size, "");
  fuzz_shardings(data, size, "x=2,y=2");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fuzz_run(fuzz_stablehlo, data, size);
}
