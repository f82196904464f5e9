/* partir.h — the public face of libpartir.
 *
 * partir partitions tensor programs by term rewriting.  The library's
 * internals live in one header per layer (core/core.h and up; see
 * docs/architecture.md); this header carries what a program linking
 * libpartir may rely on across versions.
 */
#ifndef PARTIR_H
#define PARTIR_H

#define PARTIR_VERSION_MAJOR 0
#define PARTIR_VERSION_MINOR 1

/* The library version as "MAJOR.MINOR.PATCH". */
const char *partir_version(void);

#endif
