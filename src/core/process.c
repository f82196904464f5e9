/* process.c — process-wide services: interrupts and a deep stack.
 *
 * 'partir_interrupt' is the one flag a SIGINT handler may set; the
 * interpreter, the simulator and engine scripts poll it and stop.
 * Term traversals recurse on the structure of terms (up to
 * PARTIR_MAX_HEIGHT), so front ends run their jobs on a thread whose
 * stack is reserved deep enough (virtual memory only).
 */
#include "core/core.h"

#include <pthread.h>

volatile sig_atomic_t partir_interrupt;

static void *stack_trampoline(void *p) {
  void **frame = p;
  int (*fn)(void *) = (int (*)(void *))frame[0];
  frame[2] = GINT_TO_POINTER(fn(frame[1]));
  return NULL;
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
