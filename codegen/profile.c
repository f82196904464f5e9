/* profile.c — the time of each kernel, when compiled with 'profile'.
 *
 * The entry calls codegen_rt_clock_start before each kernel (or
 * collective) and codegen_rt_clock_stop(slot) after it; the time goes
 * to the counters of the program the thread is running (set by
 * codegen_run), summed over devices with atomic adds, so a device's
 * share is the sum over the runs.
 */
#include "codegen/internal.h"

#include <stdatomic.h>

/* The counters of the program this thread runs (nanoseconds per slot),
 * or NULL when it is not profiled. */
static _Thread_local _Atomic int64_t *clock_sink;
static _Thread_local int64_t clock_started;

void codegen_rt_clock_start(void) { clock_started = partir_now_ns(); }

void codegen_rt_clock_stop(int64_t slot) {
  if (clock_sink)
    atomic_fetch_add(&clock_sink[slot], partir_now_ns() - clock_started);
}

struct Profile {
  int nslots;
  _Atomic int64_t *ns;  /* per slot */
  _Atomic int64_t runs; /* codegen_run calls: one per device and step */
};

Profile *profile_new(int nslots) {
  Profile *pr = g_new0(Profile, 1);
  pr->nslots = nslots;
  pr->ns = g_new0(_Atomic int64_t, (gsize)MAX(nslots, 1));
  return pr;
}

void profile_free(Profile *pr) {
  if (!pr)
    return;
  g_free((gpointer)pr->ns);
  g_free(pr);
}

void profile_enter(Profile *pr) {
  clock_sink = pr ? pr->ns : NULL;
  if (pr)
    atomic_fetch_add(&pr->runs, 1);
}

void profile_leave(void) { clock_sink = NULL; }

typedef struct Row {
  int slot;
  int64_t ns;
} Row;

static int by_time(const void *a, const void *b) {
  int64_t x = ((const Row *)a)->ns, y = ((const Row *)b)->ns;
  return (x < y) - (x > y);
}

/* At most this many kernels are listed; the rest are summed. */
#define PROFILE_ROWS 25

void profile_report(const Profile *pr, const Plan *p, GString *out) {
  int64_t runs = atomic_load(&((Profile *)pr)->runs);
  if (runs == 0) {
    g_string_append(out, "profile: nothing ran\n");
    return;
  }
  g_autofree Row *rows = g_new(Row, (gsize)MAX(pr->nslots, 1));
  int n = 0;
  int64_t total = 0;
  for (int s = 0; s < pr->nslots; s++) {
    int64_t ns = atomic_load(&pr->ns[s]);
    if (ns > 0) {
      rows[n++] = (Row){s, ns};
      total += ns;
    }
  }
  qsort(rows, (size_t)n, sizeof *rows, by_time);
  g_string_append_printf(out,
                         "profile: %.3f ms per device step in %d kernels "
                         "(%" G_GINT64_FORMAT " device runs)\n",
                         (double)total / (double)runs / 1e6, n, runs);
  g_string_append_printf(out,
                         "profile: the computed values share %.1f MiB "
                         "(arena per device)\n",
                         (double)p->arena_bytes / 1048576.0);
  g_string_append(out, "      ms      %  value  kernel\n");
  int64_t rest = 0;
  for (int i = 0; i < n; i++) {
    if (i >= PROFILE_ROWS) {
      rest += rows[i].ns;
      continue;
    }
    const Slot *slot = &g_array_index(p->slots, Slot, rows[i].slot);
    const Term *t = slot->t;
    const char *what = t->kind == TM_OP ? op_name(t->op) : "slice";
    g_string_append_printf(
        out, "%8.3f  %5.1f  %s  %s%s\n",
        (double)rows[i].ns / (double)runs / 1e6,
        100.0 * (double)rows[i].ns / (double)total, slot->name, what,
        t->kind == TM_OP && op_is_collective(t->op) ? " (collective)" : "");
  }
  if (rest)
    g_string_append_printf(
        out, "%8.3f  %5.1f  (%d more)\n", (double)rest / (double)runs / 1e6,
        100.0 * (double)rest / (double)total, n - PROFILE_ROWS);
}
