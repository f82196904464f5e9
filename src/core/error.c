/* error.c — the GError domain for libpartir's environment errors.
 *
 * STYLE.md's three kinds of error, one carrier each: user input
 * (programs, rule files, commands, mesh strings) is a diagnostic in a
 * Diag (diag.c); the environment is a GError in this domain: I/O and data
 * file formats (PARTIR_ERROR_IO, PARTIR_ERROR_FORMAT, with a message of
 * the form "PATH: what is wrong") and interrupts (PARTIR_ERROR_INTERRUPTED);
 * bugs are assertions.
 */
#include "core/core.h"

/* clang-format off */
G_DEFINE_QUARK(partir-error-quark, partir_error)
/* clang-format on */
