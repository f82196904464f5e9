/* output.c — writing output files without half-written results.
 *
 * A regular file (or a new one) is written to a temporary name and
 * renamed into place, so a reader never sees part of it and a failure
 * leaves the old contents.  Anything else that already exists — a
 * terminal, a pipe, /dev/null — is written in place: renaming over it
 * would replace the device with a file.
 */
#include "core/core.h"

#include <errno.h>
#include <glib/gstdio.h>

gboolean partir_write_file(const char *path, const char *data, gsize len,
                           GError **error) {
  GStatBuf st;
  if (g_stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
    FILE *f = fopen(path, "w");
    gboolean ok = f && fwrite(data, 1, len, f) == len;
    int e = errno;
    if (f && fclose(f) != 0 && ok) {
      ok = FALSE;
      e = errno;
    }
    if (!ok)
      g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_IO, "%s: %s", path,
                  g_strerror(e));
    return ok;
  }
  return g_file_set_contents(path, data, (gssize)len, error);
}
