/* process.c — process-wide services: interrupts, a deep stack and the
 * memory available.
 *
 * 'partir_interrupt' is the one flag a SIGINT handler may set; the
 * interpreter, the simulator and engine scripts poll it and stop.
 * Term traversals recurse on the structure of terms (up to
 * PARTIR_MAX_HEIGHT), so front ends run their jobs on a thread whose
 * stack is reserved deep enough (virtual memory only).  The interpreter
 * refuses a program whose values would not fit in the memory available
 * (partir_memory_available) instead of growing until the OOM killer
 * ends the process.  Tensors and arenas come from partir_buffer_new.
 */
#include "core/core.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

volatile sig_atomic_t partir_interrupt;

static void *stack_trampoline(void *p) {
  void **frame = p;
  int (*fn)(void *) = (int (*)(void *))frame[0];
  frame[2] = GINT_TO_POINTER(fn(frame[1]));
  return NULL;
}

#define HUGE_PAGE ((size_t)2 << 20)

void *partir_buffer_new(size_t bytes) {
  size_t align = bytes >= HUGE_PAGE ? HUGE_PAGE : 64;
  void *p = NULL;
  if (posix_memalign(&p, align, MAX(bytes, 1)))
    return NULL;
#ifdef MADV_HUGEPAGE
  /* before the first touch, so that the pages are huge from the start;
   * where the kernel has no huge pages this is refused, harmlessly */
  if (align == HUGE_PAGE)
    (void)madvise(p, bytes / HUGE_PAGE * HUGE_PAGE, MADV_HUGEPAGE);
#endif
  memset(p, 0, MAX(bytes, 1));
  return p;
}

void partir_buffer_free(void *p) { free(p); }

int64_t partir_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void partir_sort_doubles(double *v, gsize n) {
  qsort(v, n, sizeof *v, compare_doubles);
}

int partir_call_with_stack(int (*fn)(void *), void *data) {
  /* Virtual reservation only: pages are touched as recursion reaches them. */
  const size_t stack_bytes = (size_t)1 << 30;
  void *frame[3] = {(void *)fn, data, NULL};
  pthread_attr_t attr;
  pthread_t thread;
  if (pthread_attr_init(&attr) != 0 ||
      pthread_attr_setstacksize(&attr, stack_bytes) != 0 ||
      pthread_create(&thread, &attr, stack_trampoline, frame) != 0)
    return fn(data); /* no big stack available: run here */
  pthread_attr_destroy(&attr);
  pthread_join(thread, NULL);
  return GPOINTER_TO_INT(frame[2]);
}

/* The number after 'key' in /proc/meminfo-style 'text', times 'unit';
 * 0 when absent. */
static guint64 field_after(const char *text, const char *key, guint64 unit) {
  const char *at = text ? strstr(text, key) : NULL;
  if (!at)
    return 0;
  return g_ascii_strtoull(at + strlen(key), NULL, 10) * unit;
}

/* The room left under the memory limit of this process's cgroup (v2),
 * or 0 when it has none or it cannot be read. */
static guint64 cgroup_room(void) {
  g_autofree char *self = NULL;
  if (!g_file_get_contents("/proc/self/cgroup", &self, NULL, NULL))
    return 0;
  const char *path = strstr(self, "0::"); /* the unified hierarchy */
  if (!path)
    return 0;
  path += 3;
  g_autofree char *dir = g_strndup(path, strcspn(path, "\n"));
  g_autofree char *max_file =
      g_build_filename("/sys/fs/cgroup", dir, "memory.max", NULL);
  g_autofree char *cur_file =
      g_build_filename("/sys/fs/cgroup", dir, "memory.current", NULL);
  g_autofree char *max = NULL, *cur = NULL;
  if (!g_file_get_contents(max_file, &max, NULL, NULL) ||
      !g_file_get_contents(cur_file, &cur, NULL, NULL) ||
      g_str_has_prefix(max, "max"))
    return 0;
  guint64 limit = g_ascii_strtoull(max, NULL, 10);
  guint64 used = g_ascii_strtoull(cur, NULL, 10);
  return limit > used ? limit - used : 1;
}

guint64 partir_memory_available(void) {
  g_autofree char *meminfo = NULL;
  (void)g_file_get_contents("/proc/meminfo", &meminfo, NULL, NULL);
  guint64 avail = field_after(meminfo, "MemAvailable:", 1024);
  if (avail == 0) { /* no /proc: all of the physical memory */
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    if (pages > 0 && size > 0)
      avail = (guint64)pages * (guint64)size;
  }
  guint64 room = cgroup_room();
  if (room && (avail == 0 || room < avail))
    avail = room;
  return avail;
}
