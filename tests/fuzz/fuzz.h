/* fuzz.h — what the fuzz harnesses (tests/fuzz/fuzz-NAME.c) share.
 *
 * Each harness defines LLVMFuzzerTestOneInput and nothing else global.
 * It is linked two ways (tests/fuzz/README): with clang's libFuzzer by
 * 'make fuzz' (tests/fuzz/run.sh), and with tests/fuzz/replay.c in the
 * normal build, where 'make check' replays the committed corpora.
 *
 * A harness hands its work to fuzz_run, which runs it and then resets
 * the process-wide state an input may leave behind: the interrupt flag,
 * and every term no live module holds (collect_now).  Term traversals
 * recurse, so the front ends run on a deep stack; here the drivers give
 * one: replay.c runs on partir_call_with_stack's thread, and run.sh
 * raises the stack limit before it starts libFuzzer (a thread per input
 * would cost more than most inputs do).
 * What harnesses keep between inputs (the shipped rules, the loaded
 * example) is made once here and never changes.
 *
 * An oracle that fails calls fuzz_fail, which aborts: libFuzzer and the
 * replay both count that as a crash.  User-input errors (a Diag) are
 * never crashes; a failure that leaves no diagnostic is.
 *
 * Harnesses write only under $TMPDIR (fuzz_temp_file), and stdout goes
 * to /dev/null (the REPL and the protocol print their replies there).
 */
#ifndef PARTIR_FUZZ_H
#define PARTIR_FUZZ_H

#include "bind/bind.h"

#include <stddef.h>
#include <stdint.h>

/* libFuzzer's entry point, one per harness. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Runs 'fn' on the input, then resets the global state (above).
 * Returns 0, as libFuzzer wants. */
typedef void (*FuzzFn)(const uint8_t *data, size_t size);
int fuzz_run(FuzzFn fn, const uint8_t *data, size_t size);

/* An oracle failed: prints the message and aborts. */
void fuzz_fail(const char *fmt, ...) G_GNUC_PRINTF(1, 2) G_GNUC_NORETURN;

/* 'rel' under the source tree (g_free): the shipped rules, hardware
 * and examples.  fuzz.c is built with -DFUZZ_SRCDIR naming the tree. */
char *fuzz_srcpath(const char *rel);
/* The shipped rule files (every .rules file in rules/), NULL-ended. */
const char *const *fuzz_rule_paths(void);
/* The shipped rules, loaded once (through pipeline_load_rules). */
RuleSet *fuzz_rules(void);
/* examples/mlp.pir as a state, loaded once; a new reference. */
State *fuzz_mlp(void);

/* The input as a NUL-terminated string (g_free); a NUL inside ends it. */
char *fuzz_text(const uint8_t *data, size_t size);
/* Writes the input to a new file under $TMPDIR; its path (g_free after
 * fuzz_temp_remove), or NULL when it cannot be written. */
char *fuzz_temp_file(const uint8_t *data, size_t size);
void fuzz_temp_remove(const char *path);
/* TRUE when the input might name a device or kernel file ("/dev",
 * "proc/", ...): harnesses whose input names files to read skip it, so
 * that no input reads /dev/zero or a FIFO forever. */
gboolean fuzz_names_special_file(const uint8_t *data, size_t size);

/* print(load(print(hw))) must be print(hw): the hardware harnesses'
 * oracle (the file goes under $TMPDIR). */
void fuzz_check_hw_roundtrip(const Hardware *hw);
/* Parses the print 'once' back (named 'name' in diagnostics) and checks
 * that printing the result gives 'once' again (the whole module when
 * 'whole', else its entry); returns the module parsed back. */
Module *fuzz_reparse(const char *name, const GString *once, gboolean whole);

#endif
