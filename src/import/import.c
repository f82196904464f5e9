/* import.c — StableHLO text in: the import layer's entry points.
 *
 * Four stages, each refusing with positioned diagnostics: read the
 * whole file into records (syntax.c, pretty.c: the first syntax error
 * stops it), judge every operation (support.c: one error lists all that
 * partir cannot express), lower to terms (lower.c: the first type error
 * stops it), judge the sharding annotations (annotate.c: the first that
 * partir cannot express stops it; only when asked).  The pipeline
 * (src/pipeline.c) calls import_text for a file named *.mlir or whose text
 * import_is_mlir recognizes, so every command that loads a program takes
 * StableHLO.
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
  static const char *const words[] = {"module", "func.func", "sdy.mesh"};
  for (gsize k = 0; k < G_N_ELEMENTS(words); k++) {
    gsize n = strlen(words[k]);
    if (len - i > n && memcmp(text + i, words[k], n) == 0 &&
        (g_ascii_isspace(text[i + n]) || text[i + n] == '@' ||
         text[i + n] == '{'))
      return TRUE;
  }
  return FALSE;
}

void imported_free(Imported *im) {
  if (!im)
    return;
  module_free(im->module);
  g_free(im->mesh_name);
  if (im->shardings)
    g_ptr_array_unref(im->shardings);
  if (im->checks)
    g_array_unref(im->checks);
  g_free(im);
}

Imported *import_program(const Source *src, const ImportOptions *o,
                         Diag *diag) {
  g_autoptr(HloFile) f = hlo_read(src, diag);
  if (!f || !hlo_check_support(f, diag))
    return NULL;
  HloLowered l;
  if (!hlo_lower(f, &l, diag))
    return NULL;
  g_autoptr(Imported) im = g_new0(Imported, 1);
  gboolean ok = hlo_annotate(f, &l, o, im, diag);
  im->module = g_steal_pointer(&l.module);
  im->checks = g_steal_pointer(&l.checks);
  hlo_lowered_clear(&l);
  return ok ? g_steal_pointer(&im) : NULL;
}

Module *import_module(const Source *src, Diag *diag) {
  ImportOptions o = {0};
  g_autoptr(Imported) im = import_program(src, &o, diag);
  return im ? module_ref(im->module) : NULL;
}

Module *import_text(const char *name, const char *text, gsize len,
                    Diag *errors) {
  g_autoptr(Source) src = source_new(name, text, len);
  return read_module_source(import_module, src, errors);
}
