/* fuzz.c — the helpers every fuzz harness links (fuzz.h).
 *
 * The first input sets the process up: GLib criticals and warnings
 * become fatal (they are bugs); stdout goes to /dev/null (unless
 * $FUZZ_VERBOSE is set: then the REPL's and the protocol's replies
 * show); and the search paths point into the source tree, so the
 * harnesses find the shipped rules, tactics and hardware wherever they
 * run.  The shipped rules and examples/mlp.pir are loaded once and
 * shared by every input; they are never changed (rule sets are
 * read-only, states immutable).
 */
#include "fuzz.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#ifndef FUZZ_SRCDIR
#error "FUZZ_SRCDIR must name the source tree"
#endif

static GPtrArray *rule_paths; /* char*, NULL-ended */
static RuleSet *shipped_rules;
static State *mlp_state;

char *fuzz_srcpath(const char *rel) {
  return g_build_filename(FUZZ_SRCDIR, rel, NULL);
}

static void fuzz_init(void) {
  static gboolean done;
  if (done)
    return;
  done = TRUE;
  g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL |
                         G_LOG_LEVEL_WARNING);
  if (!g_getenv("FUZZ_VERBOSE") && !freopen("/dev/null", "w", stdout))
    fuzz_fail("cannot send stdout to /dev/null: %s", g_strerror(errno));
  const char *env[][2] = {
      {"PARTIR_RULES", "rules"},
      {"PARTIR_TACTICS", "tactics"},
      {"PARTIR_HW", "hw"},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(env); i++) {
    g_autofree char *dir = fuzz_srcpath(env[i][1]);
    g_setenv(env[i][0], dir, TRUE);
  }
}

void fuzz_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("fuzz: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  fflush(stderr);
  abort();
}

/* Orders a GPtrArray of strings (g_ptr_array_sort passes pointers to
 * the elements). */
static int compare_strings(gconstpointer a, gconstpointer b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

const char *const *fuzz_rule_paths(void) {
  if (rule_paths)
    return (const char *const *)rule_paths->pdata;
  rule_paths = g_ptr_array_new();
  g_autofree char *dir = fuzz_srcpath("rules");
  GError *error = NULL;
  GDir *d = g_dir_open(dir, 0, &error);
  if (!d)
    fuzz_fail("%s", error->message);
  const char *name;
  while ((name = g_dir_read_name(d)))
    if (g_str_has_suffix(name, ".rules"))
      g_ptr_array_add(rule_paths, g_build_filename(dir, name, NULL));
  g_dir_close(d);
  g_ptr_array_sort(rule_paths, compare_strings);
  g_ptr_array_add(rule_paths, NULL);
  return (const char *const *)rule_paths->pdata;
}

RuleSet *fuzz_rules(void) {
  if (!shipped_rules) {
    g_autoptr(Diag) errors = diag_new(NULL);
    shipped_rules = pipeline_load_rules(fuzz_rule_paths(), NULL, errors);
    if (!shipped_rules)
      fuzz_fail("the shipped rules do not load:\n%s", diag_text(errors));
  }
  return shipped_rules;
}

State *fuzz_mlp(void) {
  if (!mlp_state) {
    g_autofree char *path = fuzz_srcpath("examples/mlp.pir");
    g_autoptr(Diag) diags = diag_new(NULL);
    GError *error = NULL;
    g_autoptr(Module) m = pipeline_load_program(path, diags, &error);
    if (!m)
      fuzz_fail("%s: %s", path, error ? error->message : diag_text(diags));
    mlp_state = state_new(m);
  }
  return state_ref(mlp_state);
}

/* --------------------------------------------------- interned strings */

/* partir interns names (g_intern_string) and never frees them, by
 * design.  GLib keeps them in a quark table, and when the table grows it
 * drops the old array unreferenced (lock-free readers may still hold
 * it), which LeakSanitizer reports once a run has interned 2048 names.
 * Under AddressSanitizer the library's calls to intern reach these
 * instead: a table of its own, which keeps every string reachable.  The
 * library compares interned names only with each other.
 *
 * The strings are carved out of 64 KiB blocks, not allocated one by
 * one: libFuzzer runs a whole leak check (seconds of heap scanning per
 * thousand inputs) after every input that allocated more than it freed,
 * and an input that interns one new name would otherwise be one.  Each
 * string is followed by at least 8 poisoned bytes, so reading past it is
 * still an AddressSanitizer error. */
#if defined(__SANITIZE_ADDRESS__)
#define FUZZ_OWN_INTERN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_OWN_INTERN 1
#endif
#endif

#ifdef FUZZ_OWN_INTERN
#include <sanitizer/asan_interface.h>

#define INTERN_BLOCK 65536 /* bytes (a longer string gets its own block) */
#define INTERN_ALIGN 8     /* AddressSanitizer's granule */

static GMutex intern_lock;   /* simulated devices intern axis names too */
static GHashTable *interned; /* string -> itself */
static char *intern_block;   /* where the next string goes; blocks are
                                never freed (the table points into them) */
static gsize intern_left;    /* bytes left in intern_block */

/* A copy of 'string' in the current block (a new one when it is full),
 * poisoned all around. */
static char *intern_copy(const char *string) {
  gsize len = strlen(string) + 1;
  gsize need = (len + INTERN_ALIGN - 1) / INTERN_ALIGN * INTERN_ALIGN +
               INTERN_ALIGN; /* the string and its redzone */
  if (need > intern_left) {
    gsize size = MAX(need, INTERN_BLOCK);
    intern_block = g_malloc(size);
    intern_left = size;
    ASAN_POISON_MEMORY_REGION(intern_block, size);
  }
  char *copy = intern_block;
  ASAN_UNPOISON_MEMORY_REGION(copy, len);
  memcpy(copy, string, len);
  intern_block += need;
  intern_left -= need;
  return copy;
}

static const gchar *intern(const gchar *string, gboolean is_static) {
  if (!string)
    return NULL;
  g_mutex_lock(&intern_lock);
  if (!interned)
    interned = g_hash_table_new(g_str_hash, g_str_equal);
  gchar *found = g_hash_table_lookup(interned, string);
  if (!found) {
    found = is_static ? (gchar *)string : intern_copy(string);
    g_hash_table_add(interned, found);
  }
  g_mutex_unlock(&intern_lock);
  return found;
}

const gchar *g_intern_string(const gchar *string) {
  return intern(string, FALSE);
}

const gchar *g_intern_static_string(const gchar *string) {
  return intern(string, TRUE);
}
#endif

/* ----------------------------------------------------------- running */

int fuzz_run(FuzzFn fn, const uint8_t *data, size_t size) {
  fuzz_init();
  fn(data, size);
  partir_interrupt = 0;
  collect_now();
  return 0;
}

/* ------------------------------------------------------------- input */

char *fuzz_text(const uint8_t *data, size_t size) {
  return g_strndup((const char *)data, size);
}

char *fuzz_temp_file(const uint8_t *data, size_t size) {
  char *path = NULL;
  GError *error = NULL;
  int fd = g_file_open_tmp("partir-fuzz-XXXXXX", &path, &error);
  if (fd < 0) {
    g_error_free(error);
    return NULL;
  }
  gsize done = 0;
  while (done < size) {
    ssize_t n = write(fd, data + done, size - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    done += (gsize)n;
  }
  close(fd);
  if (done < size) {
    fuzz_temp_remove(path);
    g_free(path);
    return NULL;
  }
  return path;
}

void fuzz_temp_remove(const char *path) {
  if (path)
    g_unlink(path);
}

gboolean fuzz_names_special_file(const uint8_t *data, size_t size) {
  static const char *const words[] = {"/dev", "dev/", "/proc", "proc/",
                                      "/sys", "sys/", "fd/"};
  for (gsize i = 0; i < G_N_ELEMENTS(words); i++) {
    gsize n = strlen(words[i]);
    for (gsize at = 0; at + n <= size; at++)
      if (data[at] == (uint8_t)words[i][0] && /* memcmp is intercepted */
          memcmp(data + at, words[i], n) == 0)
        return TRUE;
  }
  return FALSE;
}

/* ---------------------------------------------------------- hardware */

void fuzz_check_hw_roundtrip(const Hardware *hw) {
  g_autoptr(GString) once = g_string_new(NULL);
  hw_print(once, hw);
  g_autofree char *path = fuzz_temp_file((const uint8_t *)once->str, once->len);
  if (!path)
    return; /* $TMPDIR is full: not the code's fault */
  Hardware again;
  GError *error = NULL;
  gboolean loaded = hw_load(path, &again, &error);
  fuzz_temp_remove(path);
  if (!loaded)
    fuzz_fail("the printed hardware does not load: %s\n%s", error->message,
              once->str);
  g_autoptr(GString) twice = g_string_new(NULL);
  hw_print(twice, &again);
  if (strcmp(once->str, twice->str) != 0)
    fuzz_fail("the printed hardware loads as something else:\n%s\nthen:\n%s",
              once->str, twice->str);
}

Module *fuzz_reparse(const char *name, const GString *once, gboolean whole) {
  g_autoptr(Diag) errors = diag_new(NULL);
  Module *m = pipeline_read_program(name, once->str, once->len, errors);
  if (!m)
    fuzz_fail("%s: the print does not parse back:\n%s\nprint:\n%s", name,
              diag_text(errors), once->str);
  g_autoptr(GString) twice = g_string_new(NULL);
  if (whole)
    print_module(twice, m);
  else
    print_func(twice, m, module_entry(m));
  if (strcmp(once->str, twice->str) != 0)
    fuzz_fail("%s: the print is not stable:\n%s\nthen:\n%s", name, once->str,
              twice->str);
  return m;
}
