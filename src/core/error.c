/* error.c — the GError domain for libpartir's environment errors.
 *
 * User-input diagnostics go through diag.c; this domain carries the
 * second kind of error in STYLE.md: I/O and file formats (PARTIR_ERROR_IO,
 * PARTIR_ERROR_FORMAT) and bad command input (PARTIR_ERROR_INPUT), each
 * with a message of the form "PATH: what is wrong".
 */
#include "core/core.h"

/* clang-format off */
G_DEFINE_QUARK(partir-error-quark, partir_error)
/* clang-format on */
