/* fuzz-hwset — hardware "what if" assignments (hw_set, spmd/hardware.c).
 *
 * Input: lines of KEY=VALUE ("link_bw=2x", "axis.model.link_bw=1e9"),
 * applied in order to hw/cpu2.hw as 'partir cost --set' applies them.
 * One that is refused must say why and leave the description as it was;
 * the description after them must print to text that loads back and
 * prints the same.
 */
#include "fuzz.h"

#include <string.h>

static void fuzz_hwset(const uint8_t *data, size_t size) {
  static Hardware cpu2;
  static gboolean loaded;
  if (!loaded) {
    g_autofree char *path = fuzz_srcpath("hw/cpu2.hw");
    GError *error = NULL;
    if (!hw_load(path, &cpu2, &error))
      fuzz_fail("%s", error->message);
    loaded = TRUE;
  }
  Hardware hw = cpu2;
  g_autofree char *text = fuzz_text(data, size);
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  for (char **line = lines; *line; line++) {
    g_autoptr(GString) before = g_string_new(NULL);
    hw_print(before, &hw);
    char changes[HW_CHANGES_MAX];
    g_strlcpy(changes, hw.changes, sizeof changes);
    g_autoptr(Diag) why = diag_new(NULL);
    if (hw_set(&hw, *line, why))
      continue;
    if (!diag_any(why))
      fuzz_fail("'%s' is refused without a reason", *line);
    g_autoptr(GString) after = g_string_new(NULL);
    hw_print(after, &hw);
    if (strcmp(before->str, after->str) != 0 ||
        strcmp(hw.changes, changes) != 0)
      fuzz_fail("'%s' is refused but changed the description", *line);
  }
  fuzz_check_hw_roundtrip(&hw);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fuzz_run(fuzz_hwset, data, size);
}
