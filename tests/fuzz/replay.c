/* replay.c — runs a harness on files, without a fuzzing engine.
 *
 *   fuzz-NAME FILE|DIR...
 *
 * Links with one harness (tests/fuzz/fuzz-NAME.c) in the normal build
 * and calls its LLVMFuzzerTestOneInput once on every file given, and on
 * every file of every directory given (sorted by name).  A crash or a
 * failed oracle aborts, so 'make check' (tests/fuzz.sh), replaying the
 * committed corpora, keeps a fixed crash fixed.  It runs on a deep stack,
 * as the front ends do.  Each input is passed in
 * a buffer of exactly its size, so reading past it is an ASan error as
 * it is under libFuzzer.
 */
#include "fuzz.h"

#include <string.h>

/* Runs the harness on 'path'; FALSE when it cannot be read. */
static gboolean replay_file(const char *path, int *count) {
  g_autofree char *text = NULL;
  gsize len = 0;
  GError *error = NULL;
  if (!g_file_get_contents(path, &text, &len, &error)) {
    fprintf(stderr, "replay: %s\n", error->message);
    g_error_free(error);
    return FALSE;
  }
  g_autofree uint8_t *data = g_malloc(len ? len : 1);
  memcpy(data, text, len);
  LLVMFuzzerTestOneInput(data, len);
  ++*count;
  return TRUE;
}

/* Orders a GPtrArray of strings (g_ptr_array_sort passes pointers to
 * the elements). */
static int compare_strings(gconstpointer a, gconstpointer b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs the harness on the files of directory 'path', sorted by name. */
static gboolean replay_dir(const char *path, int *count) {
  GError *error = NULL;
  GDir *d = g_dir_open(path, 0, &error);
  if (!d) {
    fprintf(stderr, "replay: %s\n", error->message);
    g_error_free(error);
    return FALSE;
  }
  g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(g_free);
  const char *name;
  while ((name = g_dir_read_name(d)))
    g_ptr_array_add(files, g_build_filename(path, name, NULL));
  g_dir_close(d);
  g_ptr_array_sort(files, compare_strings);
  gboolean ok = TRUE;
  for (guint i = 0; i < files->len; i++) {
    const char *file = g_ptr_array_index(files, i);
    if (!g_file_test(file, G_FILE_TEST_IS_DIR))
      ok = replay_file(file, count) && ok;
  }
  return ok;
}

typedef struct Args {
  int argc;
  char **argv;
} Args;

static int replay_all(void *data) {
  Args *a = data;
  gboolean ok = TRUE;
  int count = 0;
  for (int i = 1; i < a->argc; i++)
    ok = (g_file_test(a->argv[i], G_FILE_TEST_IS_DIR)
              ? replay_dir(a->argv[i], &count)
              : replay_file(a->argv[i], &count)) &&
         ok;
  fprintf(stderr, "replay: %d inputs\n", count);
  return ok ? 0 : 2;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
    return 2;
  }
  Args a = {argc, argv};
  /* the deep stack the front ends run on (fuzz.h) */
  return partir_call_with_stack(replay_all, &a);
}
