/* fuzz-rules — the rule-file parser and the load-time checks
 * (rewrite/rule.c, spec.c; check/rulecheck.c's type check), then the
 * matcher (rewrite/match.c, apply.c) with the rules the input wrote.
 *
 * Input: one more rule file, loaded after rules/ops.rules (the operator
 * specifications every rule file relies on) as pipeline_load_rules does
 * with an extra file, load-time type check included.  The other shipped
 * files are left out: the type check walks every rule, and with them
 * each input would cost six times as much.  A file that is refused must
 * say why.  Every rule it adds is then matched against
 * examples/mlp.pir (rw_matches) and applied where it first matches:
 * what a rule cannot do there is a diagnostic, never a crash.  Inputs
 * that might include a device file are skipped (fuzz.h).
 */
#include "fuzz.h"

#define INPUT_NAME "input.rules"

/* Matches and applies the rules of the input on examples/mlp.pir. */
static void try_rules(const RuleSet *rs) {
  g_autoptr(State) mlp = fuzz_mlp();
  for (guint i = 0; i < rs->rules->len; i++) {
    const Rule *r = g_ptr_array_index(rs->rules, i);
    if (!r->src || g_strcmp0(r->src->name, INPUT_NAME) != 0)
      continue;
    g_autoptr(GPtrArray) at = rw_matches(rs, mlp, r);
    if (at->len == 0)
      continue;
    RuleArg args[2] = {{g_intern_string("w"), FALSE, 1, NULL},
                       {g_intern_string("d"), FALSE, 0, NULL}};
    g_autoptr(Diag) why = diag_new(NULL);
    State *next = rw_apply(rs, mlp, r, g_ptr_array_index(at, 0), args,
                           r->nparams ? 2 : 0, why);
    if (next)
      state_unref(next);
    else if (!diag_any(why))
      fuzz_fail("rule %s fails where it matches without a reason", r->name);
  }
}

static void fuzz_rules_file(const uint8_t *data, size_t size) {
  if (fuzz_names_special_file(data, size))
    return;
  g_autoptr(Source) extra =
      source_new(INPUT_NAME, (const char *)data, (gsize)size);
  g_autoptr(Diag) errors = diag_new(NULL);
  g_autofree char *ops = fuzz_srcpath("rules/ops.rules");
  const char *paths[] = {ops, NULL};
  g_autoptr(RuleSet) rs = pipeline_load_rules(paths, extra, errors);
  if (!rs) {
    if (!diag_any(errors))
      fuzz_fail("the rule file is refused without a diagnostic");
    return;
  }
  try_rules(rs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fuzz_run(fuzz_rules_file, data, size);
}
