/* paths.c — where data files are looked for: rules, tactics, hardware. */
#include "core/core.h"

char **partir_search_path(const char *env, const char *installed) {
  GPtrArray *dirs = g_ptr_array_new();
  const char *value = g_getenv(env);
  if (value && *value) {
    g_auto(GStrv) parts = g_strsplit(value, ":", -1);
    for (char **d = parts; *d; d++)
      if (**d)
        g_ptr_array_add(dirs, g_strdup(*d));
  }
  if (installed)
    g_ptr_array_add(dirs, g_strdup(installed));
  g_ptr_array_add(dirs, NULL);
  return (char **)g_ptr_array_free(dirs, FALSE);
}
