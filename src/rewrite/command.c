/* command.c — the engine's command language.
 *
 * A command names a location by its printed SSA name and runs one
 * engine verb there: 'arg-tile ARG DIM WIDTH [AXIS]', 'tile VALUE DIM
 * WIDTH [AXIS]', 'sum VALUE WIDTH [AXIS] [REDUCTION]', 'apply RULE [at
 * VALUE] [K=V...]', 'fission VALUE DIM REGION', 'lift [--cheaper] VALUE...
 * AXIS', 'propagate [--resolve]', 'push', 'fuse', 'simplify'.  A script is
 * commands separated by ';', newlines or a '.' ending a word (the talk's
 * syntax).  Applying a rule at a location replaces that value everywhere
 * in the program (replace.c), so every use sees the rewrite.
 */
#include "rewrite/rewrite.h"

#include <stdlib.h>
#include <string.h>

static gboolean parse_int64(const char *s, int64_t *out) {
  return g_ascii_string_to_signed(s, 10, G_MININT64, G_MAXINT64, out, NULL);
}

static gboolean need_args(int have, int min, int max, const char *usage,
                          Diag *why) {
  if (have < min || have > max) {
    diag_reason(why, "usage: %s", usage);
    return FALSE;
  }
  return TRUE;
}

/* An axis name given in a command, with the reason when it is not one. */
static gboolean axis_name_ok(const char *axis, Diag *why) {
  gboolean ok = mesh_axis_name_ok(axis);
  if (!ok)
    diag_reason(why, "'%s' is not an axis name (letters, digits, '_')", axis);
  return ok;
}

/* The 'arg-tile' rule's replacement for the value at 'loc', with d, w
 * and an optional axis from the words 'w'. */
static const Term *tile_replacement(const RuleSet *rs, const Location *loc,
                                    char **w, int nw, Diag *why) {
  const Rule *rule = ruleset_find(rs, "arg-tile");
  if (!rule) {
    diag_reason(why, "no 'arg-tile' rule is loaded");
    return NULL;
  }
  RuleArg args[3] = {{g_intern_string("d"), FALSE, 0, NULL},
                     {g_intern_string("w"), FALSE, 0, NULL},
                     {g_intern_string("a"), TRUE, 0, NULL}};
  if (!parse_int64(w[0], &args[0].value) ||
      !parse_int64(w[1], &args[1].value)) {
    diag_reason(why, "DIM and WIDTH must be integers");
    return NULL;
  }
  int nargs = 2;
  if (nw > 2) {
    if (!axis_name_ok(w[2], why))
      return NULL;
    args[2].axis = g_intern_string(w[2]);
    nargs = 3;
  }
  return rw_apply_at(rs, rule, loc, args, nargs, why);
}

/* tile/arg-tile at 'loc': the replacement, applied everywhere. */
static State *cmd_tile(const RuleSet *rs, State *in, const Location *loc,
                       char **w, int nw, Diag *why) {
  const Term *to = tile_replacement(rs, loc, w, nw, why);
  return to ? rw_with_replacement(in, loc, to, NULL, why) : NULL;
}

/* The argument named by 'word' (an index, "x" or "%x"), or -1 with the
 * reason.  'by_name' (may be NULL) maps the arguments' names to their
 * index + 1, the first of a name, as the scan finds them. */
static int resolve_arg(const State *in, GHashTable *by_name, const char *word,
                       Diag *why) {
  int64_t index = -1;
  if (parse_int64(word, &index)) {
    if (index < 0 || index >= in->func.nargs) {
      diag_reason(why,
                  "arg-tile: there is no argument %s (the function "
                  "has %d)",
                  word, in->func.nargs);
      return -1;
    }
    return (int)index;
  }
  const char *name = word[0] == '%' ? word + 1 : word;
  if (by_name) {
    int found = GPOINTER_TO_INT(g_hash_table_lookup(by_name, name));
    if (found > 0)
      return found - 1;
  } else
    for (int i = 0; i < in->func.nargs; i++)
      if (strcmp(in->func.arg_names[i], name) == 0)
        return i;
  diag_reason(why, "arg-tile: no argument '%s'", word);
  return -1;
}

static Location arg_location(const State *in, int index) {
  return (Location){.name = in->func.arg_names[index],
                    .term = term_arg(index, in->func.arg_types[index])};
}

/* 'arg-tile ARG DIM WIDTH [AXIS]': arguments are found by name or index,
 * so a script need not name every value. */
static State *run_arg_tile(const RuleSet *rs, State *in, char **w, int nw,
                           Diag *why) {
  if (!need_args(nw, 4, 5, "arg-tile ARG DIM WIDTH [AXIS]", why))
    return NULL;
  int index = resolve_arg(in, NULL, w[1], why);
  if (index < 0)
    return NULL;
  Location arg = arg_location(in, index);
  return cmd_tile(rs, in, &arg, w + 2, nw - 2, why);
}

/* 'tile VALUE DIM WIDTH [AXIS]': arg-tile's rule at a named value. */
static State *run_tile(const RuleSet *rs, State *in, GPtrArray *locs, char **w,
                       int nw, Diag *why) {
  if (!need_args(nw, 4, 5, "tile VALUE DIM WIDTH [AXIS]", why))
    return NULL;
  const Location *loc = state_find_location(locs, w[1]);
  if (!loc) {
    diag_reason(why, "tile: no value '%s'", w[1]);
    return NULL;
  }
  return cmd_tile(rs, in, loc, w + 2, nw - 2, why);
}

/* 'sum VALUE WIDTH [AXIS] [REDUCTION]': the operator's derived OP-sum[-K]
 * rule at a named value; '-' for AXIS leaves it unnamed. */
static State *run_sum(const RuleSet *rs, State *in, GPtrArray *locs, char **w,
                      int nw, Diag *why) {
  if (!need_args(nw, 3, 5, "sum VALUE WIDTH [AXIS] [REDUCTION]", why))
    return NULL;
  const Location *loc = state_find_location(locs, w[1]);
  if (!loc || loc->term->kind != TM_OP) {
    diag_reason(why, "sum: no operator value '%s'", w[1]);
    return NULL;
  }
  int64_t width, k = 0;
  if (!parse_int64(w[2], &width) || (nw > 4 && !parse_int64(w[4], &k))) {
    diag_reason(why, "sum: WIDTH and REDUCTION must be integers");
    return NULL;
  }
  if (k < 0 || k >= PARTIR_MAX_RANK) {
    diag_reason(why, "sum: REDUCTION must be between 0 and %d",
                PARTIR_MAX_RANK - 1);
    return NULL;
  }
  const Rule *rule = ruleset_derived(rs, RULE_OP_SUM, loc->term->op, (int)k);
  if (!rule) {
    g_autofree char *name =
        k ? g_strdup_printf("%s-sum-%d", op_name(loc->term->op), (int)k)
          : g_strdup_printf("%s-sum", op_name(loc->term->op));
    diag_reason(why,
                "sum: '%s' has no reduction to split (no rule "
                "'%s')",
                op_name(loc->term->op), name);
    return NULL;
  }
  gboolean has_axis = nw > 3 && strcmp(w[3], "-") != 0;
  if (has_axis && !axis_name_ok(w[3], why))
    return NULL;
  RuleArg args[2] = {
      {g_intern_string("w"), FALSE, width, NULL},
      {g_intern_string("a"), TRUE, 0, has_axis ? g_intern_string(w[3]) : NULL}};
  return rw_apply(rs, in, rule, loc, args, args[1].axis ? 2 : 1, why);
}

/* "its parameters: w, a" or "it takes none": what 'rule' takes. */
static char *rule_params_text(const Rule *rule) {
  if (rule->nparams == 0)
    return g_strdup("it takes none");
  GString *s = g_string_new("its parameters: ");
  for (int i = 0; i < rule->nparams; i++)
    g_string_append_printf(s, "%s%s", i ? ", " : "", rule->params[i]);
  return g_string_free(s, FALSE);
}

/* The NAME=VALUE words of 'apply' into 'args' (each NAME one of the
 * parameters of 'rule', once, so at most RULE_MAX_VARS; a VALUE that is
 * no integer is an axis name); their count, or -1 with the reason. */
static int parse_rule_args(const Rule *rule, char **w, int nw, RuleArg *args,
                           Diag *why) {
  int nargs = 0;
  for (int i = 0; i < nw; i++) {
    const char *eq = strchr(w[i], '=');
    if (!eq) {
      diag_reason(why, "apply: expected NAME=VALUE, got '%s'", w[i]);
      return -1;
    }
    g_autofree char *key = g_strndup(w[i], (gsize)(eq - w[i]));
    const char *name = g_intern_string(key);
    gboolean known = FALSE, repeated = FALSE;
    for (int k = 0; k < rule->nparams; k++)
      known |= rule->params[k] == name;
    for (int k = 0; k < nargs; k++)
      repeated |= args[k].name == name;
    if (!known || repeated) {
      g_autofree char *params = rule_params_text(rule);
      if (!known)
        diag_reason(why, "apply: '%s' has no parameter '%s' (%s)", rule->name,
                    key, params);
      else
        diag_reason(why, "apply: parameter '%s' of '%s' is given twice (%s)",
                    key, rule->name, params);
      return -1;
    }
    g_assert(nargs < RULE_MAX_VARS); /* distinct parameters of the rule */
    RuleArg *a = &args[nargs++];
    a->name = name;
    a->is_axis = !parse_int64(eq + 1, &a->value);
    if (a->is_axis && !axis_name_ok(eq + 1, why))
      return -1;
    a->axis = a->is_axis ? g_intern_string(eq + 1) : NULL;
  }
  return nargs;
}

/* Orders locations last first; 'at' (the user data) maps each to its
 * place in print order, plus one. */
static gint later_first(gconstpointer a, gconstpointer b, gpointer at) {
  guint i = GPOINTER_TO_UINT(g_hash_table_lookup(at, *(gpointer const *)a));
  guint j = GPOINTER_TO_UINT(g_hash_table_lookup(at, *(gpointer const *)b));
  return i < j ? 1 : i > j ? -1 : 0;
}

/* 'apply RULE [at VALUE[,VALUE...]] [NAME=VALUE ...]': the rule at the
 * named values, one after the other, or else at the first location (in
 * 'locs' order) where it matches. */
static State *run_apply(const RuleSet *rs, State *in, GPtrArray *locs, char **w,
                        int nw, Diag *why) {
  if (nw < 2) {
    diag_reason(why,
                "usage: apply RULE [at VALUE[,VALUE...]] [NAME=VALUE ...]");
    return NULL;
  }
  const Rule *rule = ruleset_find(rs, w[1]);
  if (!rule) {
    g_autofree char *hint = ruleset_did_you_mean(rs, w[1]);
    diag_reason(why, "apply: no rule '%s'%s", w[1], hint);
    return NULL;
  }
  int i = 2;
  g_autoptr(GPtrArray) at = g_ptr_array_new(); /* const Location* */
  if (i < nw && strcmp(w[i], "at") == 0) {
    if (i + 1 >= nw) {
      diag_reason(why, "apply: 'at' needs a value");
      return NULL;
    }
    g_auto(GStrv) names = g_strsplit(w[i + 1], ",", -1);
    for (int k = 0; names[k]; k++) {
      const Location *loc = state_find_location(locs, names[k]);
      if (!loc) {
        diag_reason(why, "apply: no value '%s'", names[k]);
        return NULL;
      }
      g_ptr_array_add(at, (gpointer)loc);
    }
    i += 2;
  }
  RuleArg args[RULE_MAX_VARS];
  int nargs = parse_rule_args(rule, w + i, nw - i, args, why);
  if (nargs < 0)
    return NULL;
  if (at->len > 0) {
    /* several values, each named in the program as it was: a rewrite
     * renumbers the unnamed values after it, and changes the terms of the
     * values computed from it, never of those it is computed from; so
     * the values are rewritten last first (print order is an order of
     * operands before their users), each found by its term */
    g_autoptr(GHashTable) place = g_hash_table_new(NULL, NULL);
    for (guint k = 0; at->len > 1 && k < locs->len; k++)
      g_hash_table_insert(place, g_ptr_array_index(locs, k),
                          GUINT_TO_POINTER(k + 1));
    g_ptr_array_sort_with_data(at, later_first, place);
    State *cur = state_ref(in);
    g_autoptr(GHashTable) done = g_hash_table_new(NULL, NULL);
    for (guint k = 0; k < at->len && cur; k++) {
      const Location *loc = g_ptr_array_index(at, k);
      /* one term, one rewrite: a value of one region and its twin in a
       * sibling region (the same term) were both rewritten by the first */
      if (!g_hash_table_add(done, (gpointer)loc->term))
        continue;
      State *next = rw_apply(rs, cur, rule, loc, args, nargs, why);
      if (next && next->func.body == cur->func.body && k > 0) {
        diag_reason(why,
                    "apply %s at %%%s: an earlier value's rewrite changed "
                    "it",
                    rule->name, loc->name);
        g_clear_pointer(&next, state_unref);
      }
      state_unref(cur);
      cur = next;
    }
    return cur;
  }
  for (guint k = 0; k < locs->len; k++) { /* the first place it applies */
    const Location *l = g_ptr_array_index(locs, k);
    g_autoptr(Diag) ignore = diag_new(NULL);
    const Term *to = rw_apply_here(rs, rule, l->term, args, nargs, ignore);
    if (to)
      return rw_with_replacement(in, l, to, rule, why);
  }
  diag_reason(why, "apply: '%s' applies nowhere", rule->name);
  return NULL;
}

/* 'fuse' or 'simplify' ('pass'): that pass over the whole program, run
 * to a fixpoint; NULL with the reason when it finds none. */
static State *run_pass(const RuleSet *rs, State *in, const char *pass, int nw,
                       Diag *why, GString *report) {
  if (!need_args(nw, 1, 1, pass, why))
    return NULL;
  guint tag = strcmp(pass, "fuse") == 0 ? RULE_TAG_FUSE : RULE_TAG_SIMPLIFY;
  const Term *body =
      rw_fixpoint(rs, in->func.body, tag, in->module->names, report, why);
  return body ? state_with_body(in, body) : NULL;
}

/* 'push': slices in, no tile pulled out (rw_push). */
static State *run_push(const RuleSet *rs, State *in, int nw,
                       const RewriteEnv *env, Diag *why) {
  if (!need_args(nw, 1, 1, "push", why))
    return NULL;
  const Term *body = rw_push(rs, in->func.body, in->module->names,
                             env ? env->report : NULL, why);
  return body ? state_with_body(in, body) : NULL;
}

/* 'propagate [--resolve]': the pass to a fixpoint.  A conflict it meets
 * (two splits over one axis that an operator cannot both follow) fails
 * the command, naming both sides; with --resolve, resolve.c keeps the
 * side the cost model prices fastest. */
static State *run_propagate(const RuleSet *rs, State *in, char **w, int nw,
                            const RewriteEnv *env, Diag *why) {
  gboolean resolve = nw == 2 && strcmp(w[1], "--resolve") == 0;
  if (nw > 2 || (nw == 2 && !resolve)) {
    diag_reason(why, "usage: propagate [--resolve]");
    return NULL;
  }
  if (resolve)
    return rw_resolve(rs, in, env, why);
  Conflicts cx;
  conflicts_init(&cx, in, NULL);
  const Term *body = rw_propagate_conflicts(
      rs, in->func.body, in->module->names, &cx, env ? env->report : NULL, why);
  if (body && cx.found->len > 0) {
    g_autoptr(GPtrArray) open = conflicts_open(&cx);
    conflicts_error(open, why);
    body = NULL;
  }
  conflicts_clear(&cx);
  return body ? state_with_body(in, body) : NULL;
}

/* 'remat VALUE...': the backward pass recomputes them (remat.c). */
static State *run_remat(State *in, GPtrArray *locs, char **w, int nw,
                        Diag *why) {
  if (nw < 2) {
    diag_reason(why, "usage: remat VALUE...");
    return NULL;
  }
  g_autofree const Term **vs = g_new(const Term *, (gsize)nw);
  for (int i = 1; i < nw; i++) {
    const Location *loc = state_find_location(locs, w[i]);
    if (!loc) {
      diag_reason(why, "remat: no value '%s'", w[i]);
      return NULL;
    }
    vs[i - 1] = loc->term;
  }
  const Term *body =
      rw_remat(in->func.body, vs, nw - 1, in->module->names, why);
  return body ? state_with_body(in, body) : NULL;
}

/* 'fission VALUE DIM REGION': the tile or sum REGION cut in two at
 * VALUE, a value computed inside it (fission.c). */
static State *run_fission(State *in, GPtrArray *locs, char **w, int nw,
                          Diag *why) {
  if (!need_args(nw, 4, 4, "fission VALUE DIM REGION", why))
    return NULL;
  const Location *value = state_find_location(locs, w[1]);
  if (!value) {
    diag_reason(why, "fission: no value '%s'", w[1]);
    return NULL;
  }
  int64_t dim;
  if (!parse_int64(w[2], &dim) || dim < 0 || dim >= PARTIR_MAX_RANK) {
    diag_reason(why, "fission: DIM must be an integer between 0 and %d",
                PARTIR_MAX_RANK - 1);
    return NULL;
  }
  const Location *region = state_find_location(locs, w[3]);
  if (!region) {
    diag_reason(why, "fission: no value '%s'", w[3]);
    return NULL;
  }
  return rw_fission(in, value, region, (int)dim, why);
}

/* 'lift [--cheaper] VALUE... AXIS': each operator VALUE computed outside
 * the tiles over AXIS around it (lift.c), in order, each named as the
 * program prints after the lifts before it; an argument names the first
 * operator that uses its part split over AXIS.  With --cheaper the lifts
 * are kept only where env's pricer prices the result faster than 'in',
 * a line to env->choices either way. */
static State *run_lift(const RuleSet *rs, State *in, char **w, int nw,
                       const RewriteEnv *env, Diag *why) {
  gboolean cheaper = nw > 1 && strcmp(w[1], "--cheaper") == 0;
  if (nw - cheaper < 3) {
    diag_reason(why, "usage: lift [--cheaper] VALUE... AXIS");
    return NULL;
  }
  const char *axis = w[nw - 1];
  if (!axis_name_ok(axis, why))
    return NULL;
  g_autoptr(State) out = state_ref(in);
  g_autoptr(GString) names = g_string_new(NULL);
  for (int i = 1 + cheaper; i < nw - 1; i++) {
    g_autoptr(GPtrArray) locs = state_locations(out);
    const Location *value = state_find_location(locs, w[i]);
    if (value && value->term->kind == TM_ARG) {
      value = rw_lift_use(locs, value->term, axis);
      if (!value) {
        diag_reason(why,
                    "lift: no operator in a tile over '%s' uses a part "
                    "of '%s' split over it",
                    axis, w[i]);
        return NULL;
      }
    } else if (!value) {
      diag_reason(why, "lift: no value '%s'", w[i]);
      return NULL;
    }
    g_string_append_printf(names, "%s%s", names->len ? ", " : "", w[i]);
    State *next = rw_lift(rs, out, value, axis, why);
    if (!next)
      return NULL;
    state_unref(out);
    out = next;
  }
  if (!cheaper)
    return g_steal_pointer(&out);
  if (!env || !env->pricer) {
    diag_reason(why, "lift --cheaper: no cost model to price with");
    return NULL;
  }
  Price before = {0}, after = {0};
  gboolean ok = env->pricer->price(env->pricer, in, &before, why) &&
                env->pricer->price(env->pricer, out, &after, why);
  gboolean keep = ok && after.seconds < before.seconds;
  if (ok && env->choices)
    g_string_append_printf(
        env->choices, "lift %s out of '%s': %s (lifted: %s; as it was: %s)\n",
        names->str, axis, keep ? "lifted" : "kept", after.summary,
        before.summary);
  price_clear(&before);
  price_clear(&after);
  if (!ok)
    return NULL;
  return keep ? g_steal_pointer(&out) : state_ref(in);
}

/* One command, its words in 'w': the new state, or NULL with the reason
 * in 'why'.  Passes append what they did to env->report. */
static State *run_command(const RuleSet *rs, State *in, char **w, int nw,
                          const RewriteEnv *env, Diag *why) {
  GString *report = env ? env->report : NULL;
  const char *cmd = w[0];
  if (strcmp(cmd, "arg-tile") == 0)
    return run_arg_tile(rs, in, w, nw, why);
  g_autoptr(GPtrArray) locs = state_locations(in);
  if (strcmp(cmd, "tile") == 0)
    return run_tile(rs, in, locs, w, nw, why);
  if (strcmp(cmd, "sum") == 0)
    return run_sum(rs, in, locs, w, nw, why);
  if (strcmp(cmd, "apply") == 0)
    return run_apply(rs, in, locs, w, nw, why);
  if (strcmp(cmd, "fission") == 0)
    return run_fission(in, locs, w, nw, why);
  if (strcmp(cmd, "lift") == 0)
    return run_lift(rs, in, w, nw, env, why);
  if (strcmp(cmd, "propagate") == 0)
    return run_propagate(rs, in, w, nw, env, why);
  if (strcmp(cmd, "push") == 0)
    return run_push(rs, in, nw, env, why);
  if (strcmp(cmd, "fuse") == 0 || strcmp(cmd, "simplify") == 0)
    return run_pass(rs, in, cmd, nw, why, report);
  if (strcmp(cmd, "remat") == 0)
    return run_remat(in, locs, w, nw, why);
  static const char *const commands[] = {
      "arg-tile",  "tile", "sum",  "apply",    "fission", "lift",
      "propagate", "push", "fuse", "simplify", "remat",   NULL};
  g_autofree char *hint = diag_did_you_mean(cmd, commands);
  diag_reason(why, "unknown command '%s'%s", cmd, hint);
  return NULL;
}

/* The most words a command takes: far past any a person writes, and a
 * tactic's 'remat' names every gathered parameter of a model. */
#define MAX_WORDS 65536

/* Splits a command into its words: '*words' (the caller frees it) holds
 * them, empty ones dropped; how many, or -1 with the reason when there
 * are more than MAX_WORDS. */
static int command_words(const char *command, GStrv *words, Diag *why) {
  *words = g_strsplit_set(command, " \t\n", -1);
  int nw = 0;
  for (char **p = *words; *p; p++) {
    if (!**p) {
      g_free(*p);
      continue;
    }
    if (nw == MAX_WORDS) {
      diag_reason(why, "too many words in '%.40s...' (at most %d)", command,
                  MAX_WORDS);
      for (char **q = p; *q; q++)
        g_free(*q);
      (*words)[nw] = NULL;
      return -1;
    }
    (*words)[nw++] = *p;
  }
  (*words)[nw] = NULL;
  return nw;
}

State *rw_command(const RuleSet *rs, State *in, const char *command,
                  const RewriteEnv *env, Diag *why) {
  g_auto(GStrv) words = NULL;
  int nw = command_words(command, &words, why);
  if (nw <= 0)
    return nw < 0 ? NULL : state_ref(in);
  return run_command(rs, in, words, nw, env, why);
}

/* The argument that the arg-tile command 'text' splits, when it is one
 * that can join a run (arg_tile_run); -1 otherwise.  'words' and 'w' as
 * command_words leaves them. */
static int run_member(const State *in, GHashTable *by_name, const char *text,
                      GStrv *words, int *nw) {
  g_autoptr(Diag) ignore = diag_new(NULL);
  *nw = command_words(text, words, ignore);
  if (*nw < 4 || *nw > 5 || strcmp((*words)[0], "arg-tile") != 0)
    return -1;
  return resolve_arg(in, by_name, (*words)[1], ignore);
}

/* Applies the run of arg-tile commands starting at cmds[*i] that split
 * different arguments in one pass over the program (an arg-tile's
 * replacement depends only on its argument), so a tactic that splits
 * every weight of a deep model stays linear.  Returns NULL with nothing
 * in 'why' when fewer than two commands form such a run, before building
 * any tile: the command then runs alone, and builds its tile once; *i is
 * left on the last command used. */
static State *arg_tile_run(const RuleSet *rs, State *in, GPtrArray *cmds,
                           guint *i, Diag *why, gboolean *failed) {
  g_autofree const Term **to = g_new0(const Term *, (gsize)in->func.nargs + 1);
  g_autofree gboolean *taken = g_new0(gboolean, (gsize)in->func.nargs + 1);
  /* the arguments by name, made once a run has a second arg-tile (a lone
   * one, the protocol's step, looks its argument up by scanning): a run
   * that splits every weight of a deep model looks each up in constant
   * time */
  g_autoptr(GHashTable) by_name = NULL;
  guint k = *i;
  for (; k < cmds->len; k++) { /* how long the run is */
    if (k == *i + 1) {
      by_name = g_hash_table_new(g_str_hash, g_str_equal);
      for (int a = in->func.nargs - 1; a >= 0; a--) /* the first wins */
        g_hash_table_insert(by_name, (gpointer)in->func.arg_names[a],
                            GINT_TO_POINTER(a + 1));
    }
    g_auto(GStrv) words = NULL;
    int nw;
    int index =
        run_member(in, by_name, g_ptr_array_index(cmds, k), &words, &nw);
    if (index < 0 || taken[index])
      break; /* a second split of one argument sees the first */
    taken[index] = TRUE;
  }
  diag_reset(why);
  if (k - *i < 2)
    return NULL;
  for (guint c = *i; c < k; c++) {
    const char *text = g_ptr_array_index(cmds, c);
    g_auto(GStrv) words = NULL;
    int nw;
    int index = run_member(in, by_name, text, &words, &nw);
    Location arg = arg_location(in, index);
    to[index] = tile_replacement(rs, &arg, words + 2, nw - 2, why);
    if (!to[index]) {
      g_autofree char *reason = g_strdup(diag_text(why));
      diag_reason(why, "'%s': %s", text, reason);
      *failed = TRUE;
      return NULL;
    }
  }
  const Term *body =
      replace_args(in->func.body, to, in->func.nargs, in->module->names, why);
  if (!body) {
    g_autofree char *reason = g_strdup(diag_text(why));
    diag_reason(why, "'%s': %s", (char *)g_ptr_array_index(cmds, *i), reason);
    *failed = TRUE;
    return NULL;
  }
  *i = k - 1;
  return state_with_body(in, body);
}

/* Splits a script into commands: at ';', at newlines, and at a '.'
 * followed by whitespace or the end (the talk's "arg-tile 0 0 8."). */
static GPtrArray *split_commands(const char *script) {
  GPtrArray *cmds = g_ptr_array_new_with_free_func(g_free);
  GString *cur = g_string_new(NULL);
  for (const char *p = script;; p++) {
    gboolean end =
        *p == '\0' || *p == ';' || *p == '\n' ||
        (*p == '.' && (p[1] == '\0' || p[1] == ';' || g_ascii_isspace(p[1])));
    if (!end) {
      g_string_append_c(cur, *p);
      continue;
    }
    g_strstrip(cur->str);
    if (cur->str[0])
      g_ptr_array_add(cmds, g_strdup(cur->str));
    g_string_truncate(cur, 0);
    if (*p == '\0')
      break;
  }
  g_string_free(cur, TRUE);
  return cmds;
}

/* Whether a command ends at 'p' (as split_commands cuts a script). */
static gboolean at_command_end(const char *p) {
  return *p == '\0' || *p == ';' || *p == '\n' ||
         (*p == '.' && (p[1] == '\0' || p[1] == ';' || g_ascii_isspace(p[1])));
}

/* Whether the 'n' bytes at 'word' name an axis that 'mesh' lacks; a word
 * that is no axis name is left to the command to refuse. */
static gboolean axis_off_mesh(const char *word, gsize n, const Mesh *mesh) {
  char small[64];
  g_autofree char *big = n < sizeof small ? NULL : g_strndup(word, n);
  const char *name = big;
  if (!big) {
    memcpy(small, word, n);
    small[n] = '\0';
    name = small;
  }
  if (!mesh_axis_name_ok(name))
    return FALSE;
  for (int k = 0; k < mesh->naxes; k++)
    if (strcmp(mesh->names[k], name) == 0)
      return FALSE;
  return TRUE;
}

/* Whether the 'n' bytes at 'word' are the word 'is'. */
static gboolean word_is(const char *word, gsize n, const char *is) {
  return n == strlen(is) && memcmp(word, is, n) == 0;
}

/* An integer, as parse_int64 reads one, in the 'n' bytes at 'word'. */
static gboolean is_int_word(const char *word, gsize n) {
  g_autofree char *copy = g_strndup(word, n);
  int64_t v;
  return parse_int64(copy, &v);
}

/* The words of a command rw_script_axis_off_mesh looks at: an axis is a
 * command's fifth word or a rule's parameter, one of its first few. */
#define SCAN_WORDS (2 + 2 * RULE_MAX_VARS)

char *rw_script_axis_off_mesh(const char *script, const Mesh *mesh) {
  /* the commands and words as rw_script cuts them, without copies: this
   * runs before every step of the agent protocol */
  for (const char *p = script; *p;) {
    const char *w[SCAN_WORDS];
    gsize len[SCAN_WORDS];
    int nw = 0;
    for (;;) {
      while (!at_command_end(p) && g_ascii_isspace(*p))
        p++;
      if (at_command_end(p))
        break;
      const char *start = p;
      while (!at_command_end(p) && !g_ascii_isspace(*p))
        p++;
      if (nw < SCAN_WORDS) {
        w[nw] = start;
        len[nw++] = (gsize)(p - start);
      }
    }
    if (*p)
      p++;
    int axis = -1; /* the word that names an axis, if any */
    if (nw == 5 &&
        (word_is(w[0], len[0], "arg-tile") || word_is(w[0], len[0], "tile")))
      axis = 4;
    else if (nw >= 4 && word_is(w[0], len[0], "sum") &&
             !word_is(w[3], len[3], "-"))
      axis = 3;
    if (axis >= 0 && axis_off_mesh(w[axis], len[axis], mesh))
      return g_strndup(w[axis], len[axis]);
    if (nw < 2 || !word_is(w[0], len[0], "apply"))
      continue;
    for (int k = 2; k < nw; k++) {
      const char *eq = memchr(w[k], '=', len[k]);
      if (k == 2 && word_is(w[k], len[k], "at")) {
        k++; /* the value's name */
        continue;
      }
      if (!eq)
        continue;
      gsize n = len[k] - (gsize)(eq + 1 - w[k]);
      if (!is_int_word(eq + 1, n) && axis_off_mesh(eq + 1, n, mesh))
        return g_strndup(eq + 1, n);
    }
  }
  return NULL;
}

State *rw_script(const RuleSet *rs, State *in, const char *script,
                 const RewriteEnv *env, Diag *why) {
  g_autoptr(GPtrArray) cmds = split_commands(script);
  State *s = state_ref(in);
  for (guint i = 0; i < cmds->len; i++) {
    const char *text = g_ptr_array_index(cmds, i);
    if (partir_interrupt) {
      state_unref(s);
      diag_reason(why, "interrupted before '%s'", text);
      return NULL;
    }
    gboolean failed = FALSE;
    State *next = arg_tile_run(rs, s, cmds, &i, why, &failed);
    if (failed) {
      state_unref(s);
      return NULL;
    }
    if (!next)
      next = rw_command(rs, s, text, env, why);
    state_unref(s);
    if (!next) {
      g_autofree char *reason = g_strdup(diag_text(why));
      diag_reason(why, "'%s': %s", text, reason);
      return NULL;
    }
    s = next;
  }
  return s;
}
