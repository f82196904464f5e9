/* fuzz-hw — hardware description files (spmd/hardware.c).
 *
 * Input: the text of a .hw file, written to a file under $TMPDIR for
 * hw_load (which takes a name or a path).  A file that is refused must
 * say why; a file that loads must print (hw_print) to text that loads
 * back and prints the same.
 */
#include "fuzz.h"

static void fuzz_hw(const uint8_t *data, size_t size) {
  g_autofree char *path = fuzz_temp_file(data, size);
  if (!path)
    return;
  Hardware hw;
  GError *error = NULL;
  gboolean loaded = hw_load(path, &hw, &error);
  fuzz_temp_remove(path);
  if (!loaded) {
    if (!error || !error->message[0])
      fuzz_fail("the file is refused without a reason");
    g_error_free(error);
    return;
  }
  fuzz_check_hw_roundtrip(&hw);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fuzz_run(fuzz_hw, data, size);
}
