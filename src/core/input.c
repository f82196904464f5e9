/* input.c — reading input files whole: programs, rule files, hardware
 * descriptions and .npy data.
 *
 * Only regular files are read.  A FIFO blocks its reader until someone
 * writes to it (the agent protocol would stop answering), and a device
 * such as /dev/zero never ends.  So the file is opened once, without
 * blocking, and its descriptor is fstat'ed: nothing is stat'ed by name
 * before the open, where the name could change in between.  Reading stops
 * at a size limit the caller gives, so a file that grows while it is read
 * cannot exhaust memory either.
 */
#include "core/core.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a file that is not regular is, for the message. */
static const char *file_kind(mode_t mode) {
  return S_ISDIR(mode)    ? "a directory"
         : S_ISFIFO(mode) ? "a FIFO"
         : S_ISCHR(mode)  ? "a character device"
         : S_ISBLK(mode)  ? "a block device"
         : S_ISSOCK(mode) ? "a socket"
                          : "not a plain file";
}

static gboolean too_large(const char *path, gsize max, GError **error) {
  if (max % ((gsize)1 << 20) == 0)
    g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_IO,
                "%s: larger than %" G_GSIZE_FORMAT
                " MiB, the most read from one file",
                path, max >> 20);
  else
    g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_IO,
                "%s: larger than %" G_GSIZE_FORMAT
                " bytes, the most read from one file",
                path, max);
  return FALSE;
}

/* Reads from 'fd' to its end, into a buffer with room for a NUL; FALSE
 * when more than 'max' bytes come ('*len' is then max + 1) or a read
 * fails (errno says why).  'hint' is the size fstat gave. */
static gboolean read_all(int fd, gsize hint, gsize max, char **text,
                         gsize *len) {
  gsize cap = MIN(hint, max) + 1, used = 0;
  char *buf = g_try_malloc(cap);
  if (!buf) {
    errno = ENOMEM;
    return FALSE;
  }
  for (;;) {
    if (used == cap - 1) { /* full but for the NUL */
      if (used > max)
        break;
      gsize bigger = MIN(MAX(cap * 2, (gsize)65536), max + 2);
      char *grown = g_try_realloc(buf, bigger);
      if (!grown) {
        g_free(buf);
        errno = ENOMEM;
        return FALSE;
      }
      buf = grown;
      cap = bigger;
    }
    ssize_t got = read(fd, buf + used, cap - 1 - used);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      int saved = errno;
      g_free(buf);
      errno = saved;
      return FALSE;
    }
    if (got == 0)
      break;
    used += (gsize)got;
  }
  buf[used] = '\0';
  *text = buf;
  *len = used;
  return used <= max;
}

gboolean partir_read_file(const char *path, gsize max, char **text, gsize *len,
                          GError **error) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    int saved = errno;
    g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_IO, "%s: %s", path,
                g_strerror(saved));
    return FALSE;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int saved = errno;
    close(fd);
    g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_IO, "%s: %s", path,
                g_strerror(saved));
    return FALSE;
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_IO,
                "%s: not a regular file (%s); only regular files are read",
                path, file_kind(st.st_mode));
    return FALSE;
  }
  if ((guint64)st.st_size > (guint64)max) {
    close(fd);
    return too_large(path, max, error);
  }
  char *buf = NULL;
  gsize used = 0;
  gboolean ok = read_all(fd, (gsize)st.st_size, max, &buf, &used);
  int saved = errno;
  close(fd);
  if (!ok && buf) { /* it grew past 'max' while being read */
    g_free(buf);
    return too_large(path, max, error);
  }
  if (!ok) {
    g_set_error(error, PARTIR_ERROR, PARTIR_ERROR_IO, "%s: %s", path,
                g_strerror(saved));
    return FALSE;
  }
  *text = buf;
  *len = used;
  return TRUE;
}
