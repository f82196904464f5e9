/* ops.c — operator names and arities, generated from ops.def. */
#include "core/core.h"

#include <string.h>

static const struct {
  const char *name;
  int arity;
} op_info[OP_COUNT_] = {
#define X(e, name, arity, tr, k, fl) [e] = {name, arity},
#include "core/ops.def"
#undef X
};

const char *op_name(Op op) { return op_info[op].name; }
int op_arity(Op op) { return op_info[op].arity; }

gboolean op_from_name(const char *s, gsize len, Op *out) {
  for (int i = 0; i < OP_COUNT_; i++)
    if (strlen(op_info[i].name) == len &&
        memcmp(op_info[i].name, s, len) == 0) {
      *out = (Op)i;
      return TRUE;
    }
  return FALSE;
}

const char *partir_version(void) { return PACKAGE_VERSION; }
