/* fuzz-npy — reading NumPy .npy files (eval/npy.c).
 *
 * Input: the bytes of a .npy file, written to a file under $TMPDIR for
 * npy_read (which takes a path).  A file that is refused must say why.
 * A file that is read must encode (npy_encode), read back to the same
 * type (f32 for bf16, which is read from '<V2' and written as '<f4'),
 * and encode again to the very same bytes: the writer's output is a
 * fixed point of reading.
 */
#include "fuzz.h"

#include <string.h>

/* Reads .npy bytes through a file; NULL with 'error' set. */
static Tensor *read_bytes(const uint8_t *data, size_t size, GError **error) {
  g_autofree char *path = fuzz_temp_file(data, size);
  if (!path) {
    g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_IO, "cannot write $TMPDIR");
    return NULL;
  }
  Tensor *t = NULL;
  gboolean ok = npy_read(path, &t, error);
  fuzz_temp_remove(path);
  if (ok && !t)
    fuzz_fail("npy_read succeeds without a tensor");
  return ok ? t : NULL;
}

static void fuzz_npy(const uint8_t *data, size_t size) {
  GError *error = NULL;
  g_autoptr(Tensor) t = read_bytes(data, size, &error);
  if (!t) {
    if (!error || !error->message[0])
      fuzz_fail("the file is refused without a reason");
    g_error_free(error);
    return;
  }
  g_autoptr(GBytes) once = npy_encode(t);
  gsize n1;
  const uint8_t *b1 = g_bytes_get_data(once, &n1);
  g_autoptr(Tensor) back = read_bytes(b1, n1, &error);
  if (!back)
    fuzz_fail("the encoded tensor does not read back: %s",
              error ? error->message : "(no reason)");
  DType written = t->type->dtype == DT_BF16 ? DT_F32 : t->type->dtype;
  if (back->type != type_with_dtype(t->type, written))
    fuzz_fail("the encoded tensor reads back with another type");
  g_autoptr(GBytes) twice = npy_encode(back);
  if (!g_bytes_equal(once, twice))
    fuzz_fail("encoding what was read back gives other bytes");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fuzz_run(fuzz_npy, data, size);
}
