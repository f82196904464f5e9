/* import.c — StableHLO text in: the import layer's entry points.
 *
 * Three stages, each refusing with positioned diagnostics: read the
 * whole file into records (syntax.c, pretty.c: the first syntax error
 * stops it), judge every operation (support.c: one error lists all that
 * partir cannot express), lower to terms (lower.c: the first type error
 * stops it).  The pipeline (src/pipeline.c) calls
 * import_text for a file named *.mlir or whose text import_is_mlir
 * recognizes, so every command that loads a program takes StableHLO.
 */
#include "import/import.h"

#include <string.h>

gboolean import_is_mlir(const char *text, gsize len) {
  gsize i = 0;
  for (;;) {
    while (i < len && g_ascii_isspace(text[i]))
      i++;
    if (i + 1 < len && text[i] == '/' && text[i + 1] == '/') {
      while (i < len && text[i] != '\n')
        i++;
      continue;
    }
    break;
  }
  if (i >= len)
    return FALSE;
  if (text[i] == '#' || text[i] == '"')
    return TRUE;
  static const char *const words[] = {"module", "func.func"};
  for (gsize k = 0; k < G_N_ELEMENTS(words); k++) {
    gsize n = strlen(words[k]);
    if (len - i > n && memcmp(text + i, words[k], n) == 0 &&
        (g_ascii_isspace(text[i + n]) || text[i + n] == '@' ||
         text[i + n] == '{'))
      return TRUE;
  }
  return FALSE;
}

Module *import_module(const Source *src, Diag *diag) {
  g_autoptr(HloFile) f = hlo_read(src, diag);
  if (!f || !hlo_check_support(f, diag))
    return NULL;
  return hlo_lower(f, diag);
}

Module *import_text(const char *name, const char *text, gsize len,
                    Diag *errors) {
  g_autoptr(Source) src = source_new(name, text, len);
  return read_module_source(import_module, src, errors);
}
