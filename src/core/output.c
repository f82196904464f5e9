/* output.c — writing output files without half-written results.
 *
 * A regular file (or a new one) is written to a temporary name beside
 * it and renamed into place, so a reader never sees part of it and a
 * failure leaves the old contents.  Anything else that already exists —
 * a terminal, a pipe, /dev/null — is written in place: renaming over it
 * would replace the device with a file.  A directory is refused.
 *
 * Several files a command writes together (a program and its tactic, a
 * run's results) are all written or none is: every temporary file is
 * written and every device opened before any target changes, and only
 * then are the temporary files renamed into place.  So a failure of the
 * second output leaves the first as it was, instead of written and then
 * deleted (which lost a user's file of that name, or a device's node).
 */
#include "core/core.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct Pending {
  char *target; /* the regular file written: the path, or a link's file */
  char *temp;   /* the temporary file beside it, or NULL */
  FILE *inout;  /* an existing device or pipe, opened to be written */
} Pending;

static gboolean fail_io(GError **error, const char *path, int e) {
  g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_IO, "%s: %s", path,
              g_strerror(e));
  return FALSE;
}

/* Writes 'len' bytes of 'data' to a new temporary file beside 'path' (its
 * name in 'p->temp'), or opens an existing device or pipe at 'path'
 * ('p->inout'); FALSE with 'error' naming 'path'. */
static gboolean prepare(const char *path, const char *data, gsize len,
                        Pending *p, GError **error) {
  if (!*path) {
    g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_IO,
                "an output file's name is empty");
    return FALSE;
  }
  GStatBuf st;
  if (g_stat(path, &st) == 0 && S_ISDIR(st.st_mode))
    return fail_io(error, path, EISDIR);
  if (g_stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
    p->inout = fopen(path, "w");
    return p->inout ? TRUE : fail_io(error, path, errno);
  }
  /* a link to a file: the file is written, the link stays a link */
  g_autofree char *real =
      g_file_test(path, G_FILE_TEST_IS_SYMLINK) ? realpath(path, NULL) : NULL;
  p->target = g_strdup(real ? real : path);
  p->temp = g_strdup_printf("%s.XXXXXX", p->target);
  /* made as any new file is: 0666 less the umask */
  int fd = g_mkstemp_full(p->temp, O_WRONLY, 0666);
  if (fd < 0) {
    int e = errno;
    g_clear_pointer(&p->temp, g_free);
    return fail_io(error, path, e);
  }
  gboolean ok = TRUE;
  for (gsize done = 0; ok && done < len;) {
    ssize_t n = write(fd, data + done, len - done);
    if (n < 0 && errno == EINTR)
      continue;
    ok = n > 0;
    done += ok ? (gsize)n : 0;
  }
  int e = errno;
  if (close(fd) != 0 && ok) {
    ok = FALSE;
    e = errno;
  }
  return ok ? TRUE : fail_io(error, path, e ? e : EIO);
}

static void discard(Pending *p) {
  if (p->temp)
    g_unlink(p->temp);
  g_clear_pointer(&p->temp, g_free);
  g_clear_pointer(&p->target, g_free);
  if (p->inout)
    fclose(p->inout);
  p->inout = NULL;
}

gboolean partir_write_files(int n, const char *const *paths,
                            const char *const *data, const gsize *lens,
                            GError **error) {
  g_autofree Pending *p = g_new0(Pending, (gsize)MAX(n, 1));
  int ready = 0;
  for (; ready < n; ready++)
    if (!prepare(paths[ready], data[ready], lens[ready], &p[ready], error))
      break;
  gboolean ok = ready == n;
  /* every target is still as it was: now each takes its new contents */
  for (int i = 0; ok && i < n; i++)
    if (p[i].temp && g_rename(p[i].temp, p[i].target) != 0)
      ok = fail_io(error, paths[i], errno);
    else if (p[i].temp)
      g_clear_pointer(&p[i].temp, g_free);
  for (int i = 0; ok && i < n; i++) {
    if (!p[i].inout)
      continue;
    gboolean written = fwrite(data[i], 1, lens[i], p[i].inout) == lens[i];
    int e = errno;
    int closed = fclose(p[i].inout);
    p[i].inout = NULL;
    if (!written || closed != 0)
      ok = fail_io(error, paths[i], written ? errno : e);
  }
  for (int i = 0; i < n; i++)
    discard(&p[i]);
  return ok;
}

gboolean partir_write_file(const char *path, const char *data, gsize len,
                           GError **error) {
  return partir_write_files(1, &path, &data, &len, error);
}
