/* fuzz-protocol — a whole agent-protocol session (bind/protocol.c,
 * protocol_json.c; through them the engine's commands, lowering and the
 * cost model).
 *
 * Input: the requests, one JSON object a line, as an agent would send
 * them to 'partir-repl --json --allow examples'.  proto_run reads its
 * lines with read(2) from a file descriptor, so the input goes to a file
 * under $TMPDIR (a memory stream has no descriptor); the replies go to
 * stdout, which is /dev/null here.  Every session starts from nothing:
 * proto_run keeps its states in its own frame.  Inputs that might name
 * a device file (a 'hw' path) are skipped (fuzz.h).
 */
#include "fuzz.h"

static void fuzz_protocol(const uint8_t *data, size_t size) {
  if (fuzz_names_special_file(data, size))
    return;
  g_autofree char *path = fuzz_temp_file(data, size);
  if (!path)
    return;
  FILE *in = fopen(path, "r");
  fuzz_temp_remove(path);
  if (!in)
    return;
  g_autofree char *examples = fuzz_srcpath("examples");
  char *allowed[] = {"examples", examples, NULL};
  proto_run(fuzz_rules(), allowed, in);
  fclose(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fuzz_run(fuzz_protocol, data, size);
}
