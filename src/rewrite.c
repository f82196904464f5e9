/* rewrite.c — applying rules, and the engine's command language.
 *
 * rule_apply_here() applies one rule to one term: written rules through
 * match.c, derived operator rules from the operator's TileSpec:
 *
 *   OP-tile-D   op(a, b)  ~~>  tile D (\r:range<n,w> -> op(a', b'))
 *   OP-sum[-K]  op(a, b)  ~~>  sum (\r:range<n,w> -> op(a', b'))
 *   slice-OP-D  slice D (op(a, b))[s]  ~~>  op(a'', b'')
 *   OP-tile-D-rev, OP-sum[-K]-rev   the first two backwards
 *
 * where a' slices each operand along the dimension that carries result
 * dimension D (or reduction K) by the new binder, and a'' by s.  Every
 * replacement must have the type of what it replaces.
 *
 * A command names a location by its printed SSA name; applying a rule
 * there replaces that value everywhere in the program
 * (replace_everywhere), so every use sees the rewrite.
 */
#include "rule.h"

#include <stdlib.h>
#include <string.h>

static int64_t arg_int(const RuleArg *args, int nargs, const char *name,
                       gboolean *found) {
  for (int i = 0; i < nargs; i++)
    if (!args[i].is_axis && strcmp(args[i].name, name) == 0) {
      *found = TRUE;
      return args[i].value;
    }
  *found = FALSE;
  return 0;
}

static const char *arg_axis(const RuleArg *args, int nargs) {
  for (int i = 0; i < nargs; i++)
    if (args[i].is_axis)
      return args[i].axis;
  return NULL;
}

/* A static slice's attributes when its operand changes type from 'from'
 * to 'to' along dimensions the slice takes whole (the only ones its spec
 * lets a rule split or join): those limits follow the operand's size. */
const Attrs *slice_attrs_follow(const Attrs *a, const Type *from,
                                const Type *to) {
  const AttrValue *start = attrs_get(a, "start");
  const char **keys = g_new(const char *, (gsize)a->count);
  AttrValue *vals = g_new0(AttrValue, (gsize)a->count);
  for (int i = 0; i < a->count; i++) {
    keys[i] = a->keys[i];
    vals[i] = attr_value_copy(&a->values[i]);
    if (strcmp(keys[i], "limit") == 0 && vals[i].kind == AV_LIST)
      for (int d = 0; d < vals[i].count && d < from->rank; d++)
        if (start->items[d].i == 0 && vals[i].items[d].i == from->dims[d])
          vals[i].items[d].i = to->dims[d];
  }
  return attrs_intern(a->count, keys, vals);
}

/* op(operands, each sliced along dims[i] (>= 0) by range value 'r');
 * 'lift' shifts the operands under one new binder first. */
static const Term *sliced_op(const Term *t, const int *dims, const Term *r,
                             gboolean lift, const Type *written,
                             GString *why) {
  const Term *args[SPEC_MAX_OPERANDS];
  for (int i = 0; i < t->nargs; i++) {
    const Term *a = lift ? term_shift(t->args[i], 1, 0) : t->args[i];
    if (dims[i] >= 0 && !(a = term_slice(dims[i], a, r, why)))
      return NULL;
    args[i] = a;
  }
  const Attrs *attrs =
      t->op == OP_SLICE
          ? slice_attrs_follow(t->attrs, t->args[0]->type, args[0]->type)
          : t->attrs;
  return term_op(t->op, t->nargs, args, attrs,
                 op_takes_written_type(t->op) ? written : NULL, why);
}

/* OP-tile-D-rev and OP-sum[-K]-rev: a region whose body is the operator
 * on operands sliced by the region's binder along the dimensions that
 * carry D (or K), the other operands independent of the binder, is the
 * operator on the whole operands. */
static const Term *apply_unregion(const RuleSet *rs, const Rule *rule,
                                  const Term *t, GString *why) {
  gboolean tile = rule->kind == RULE_OP_TILE_REV;
  int k = rule->index;
  const Term *b = t->nargs == 1 ? t->args[0] : NULL;
  if (t->kind != (tile ? TM_TILE : TM_SUM) || (tile && t->index != k) ||
      b->kind != TM_OP || b->op != rule->op) {
    if (tile)
      g_string_printf(why, "'%s' applies to a partir.tile along dimension %d "
                           "of a '%s'",
                      rule->name, k, op_name(rule->op));
    else
      g_string_printf(why, "'%s' applies to a partir.sum of a '%s'",
                      rule->name, op_name(rule->op));
    return NULL;
  }
  TileSpec spec;
  if (!spec_of(rs, b, &spec) || (tile ? k >= spec.nout || !spec.out_ok[k]
                                      : k >= spec.nred)) {
    g_string_printf(why, "'%s' does not split this '%s' that way", rule->name,
                    op_name(b->op));
    return NULL;
  }
  const Term *r = term_bvar(0, t->range);
  const Term *args[SPEC_MAX_OPERANDS];
  for (int i = 0; i < b->nargs; i++) {
    int c = tile ? spec.out[k][i] : spec.red[k][i];
    const Term *a = b->args[i];
    if (c >= 0) {
      if (a->kind != TM_SLICE || a->index != c || a->args[1] != r) {
        g_string_printf(why, "operand %d is not sliced along dimension %d by "
                             "the region's binder",
                        i + 1, c);
        return NULL;
      }
      a = a->args[0];
    }
    if (a->loose & 1) {
      g_string_printf(why, "operand %d depends on the region's binder", i + 1);
      return NULL;
    }
    args[i] = term_shift(a, -1, 0);
  }
  const Attrs *attrs =
      b->op == OP_SLICE
          ? slice_attrs_follow(b->attrs, b->args[0]->type, args[0]->type)
          : b->attrs;
  return term_op(b->op, b->nargs, args, attrs,
                 op_takes_written_type(b->op) ? t->type : NULL, why);
}

static const Term *apply_derived(const RuleSet *rs, const Rule *rule,
                                 const Term *t, const RuleArg *args, int nargs,
                                 GString *why) {
  if (rule->kind == RULE_OP_TILE_REV || rule->kind == RULE_OP_SUM_REV)
    return apply_unregion(rs, rule, t, why);
  TileSpec spec;
  const Term *opt = rule->kind == RULE_SLICE_OP && t->kind == TM_SLICE
                        ? t->args[0]
                        : t;
  if (opt->kind != TM_OP || opt->op != rule->op ||
      (rule->kind == RULE_SLICE_OP && t->kind != TM_SLICE)) {
    g_string_printf(why, "'%s' applies to %s'%s'", rule->name,
                    rule->kind == RULE_SLICE_OP ? "a slice of " : "",
                    op_name(rule->op));
    return NULL;
  }
  if (!spec_of(rs, opt, &spec))
    return NULL;
  int k = rule->index;
  if (rule->kind == RULE_SLICE_OP) {
    if (t->index != k || k >= spec.nout || !spec.out_ok[k]) {
      g_string_printf(why, "'%s' does not apply: the slice is along "
                           "dimension %d",
                      rule->name, t->index);
      return NULL;
    }
    int dims[SPEC_MAX_OPERANDS];
    for (int i = 0; i < opt->nargs; i++)
      dims[i] = spec.out[k][i];
    return sliced_op(opt, dims, t->args[1], FALSE, t->type, why);
  }
  gboolean have_w;
  int64_t w = arg_int(args, nargs, "w", &have_w);
  if (!have_w) {
    g_string_printf(why, "rule '%s' needs parameter 'w' (the width)",
                    rule->name);
    return NULL;
  }
  const char *axis = arg_axis(args, nargs);
  int dims[SPEC_MAX_OPERANDS];
  int64_t n = -1;
  if (rule->kind == RULE_OP_TILE) {
    if (k >= spec.nout || !spec.out_ok[k]) {
      g_string_printf(why, "result dimension %d of this '%s' cannot be tiled",
                      k, op_name(rule->op));
      return NULL;
    }
    n = t->type->dims[k];
    for (int i = 0; i < t->nargs; i++)
      dims[i] = spec.out[k][i];
  } else {
    if (k >= spec.nred) {
      g_string_printf(why, "this '%s' has no reduction %d", op_name(rule->op),
                      k);
      return NULL;
    }
    for (int i = 0; i < t->nargs; i++) {
      dims[i] = spec.red[k][i];
      if (dims[i] >= 0)
        n = t->args[i]->type->dims[dims[i]];
    }
  }
  if (w < 1 || n % w != 0) {
    g_string_printf(why, "width %" G_GINT64_FORMAT " does not divide size "
                         "%" G_GINT64_FORMAT,
                    w, n);
    return NULL;
  }
  const Type *range = type_range(n, w);
  const Term *r = term_bvar(0, range);
  const Type *written = rule->kind == RULE_OP_TILE
                            ? type_with_dim(t->type, k, w)
                            : t->type;
  const Term *body = sliced_op(t, dims, r, TRUE, written, why);
  if (!body)
    return NULL;
  return rule->kind == RULE_OP_TILE ? term_tile(k, range, axis, body, why)
                                    : term_sum(range, axis, body, why);
}

const Term *rule_apply_here(const RuleSet *rs, const Rule *rule, const Term *t,
                            const RuleArg *args, int nargs, GString *why) {
  g_string_truncate(why, 0);
  const Term *r = rule->kind == RULE_PATTERN
                      ? pattern_apply(rule, t, args, nargs, why)
                      : apply_derived(rs, rule, t, args, nargs, why);
  if (r && r->type != t->type) {
    g_autofree char *a = type_to_string(t->type);
    g_autofree char *b = type_to_string(r->type);
    g_string_printf(why, "rule '%s' would change the type from %s to %s",
                    rule->name, a, b);
    return NULL;
  }
  if (!r && why->len == 0)
    g_string_printf(why, "'%s' does not apply here", rule->name);
  return r;
}

/* ------------------------------------------------------------ commands */

const Location *state_find_location(GPtrArray *locs, const char *name) {
  if (name[0] == '%')
    name++;
  for (guint i = 0; i < locs->len; i++) {
    const Location *l = g_ptr_array_index(locs, i);
    if (strcmp(l->name, name) == 0)
      return l;
  }
  return NULL;
}

static gboolean parse_int64(const char *s, int64_t *out) {
  return g_ascii_string_to_signed(s, 10, G_MININT64, G_MAXINT64, out, NULL);
}

/* The replacement for the value at 'loc' by 'rule', or NULL with the
 * reason ("RULE at %v: why"). */
static const Term *apply_here_at(const RuleSet *rs, const Rule *rule,
                                 const Location *loc, const RuleArg *args,
                                 int nargs, GString *why) {
  const Term *to = rule_apply_here(rs, rule, loc->term, args, nargs, why);
  if (!to) {
    g_autofree char *reason = g_strdup(why->str);
    g_string_printf(why, "%s at %%%s: %s", rule->name, loc->name, reason);
  }
  return to;
}

/* The state where the value at 'loc' is 'to' everywhere; NULL with the
 * reason (after "RULE at %v: " when 'rule' is given) when the store
 * refuses the rebuilt program. */
static State *with_replacement(State *in, const Location *loc, const Term *to,
                               const Rule *rule, GString *why) {
  const Term *body =
      replace_everywhere(in->func.body, loc->term, to, in->module->names, why);
  if (!body && rule) {
    g_autofree char *reason = g_strdup(why->str);
    g_string_printf(why, "%s at %%%s: %s", rule->name, loc->name, reason);
  }
  return body ? state_with_body(in, body) : NULL;
}

State *engine_apply(const RuleSet *rs, State *in, const Rule *rule,
                    const Location *loc, const RuleArg *args, int nargs,
                    GString *why) {
  const Term *to = apply_here_at(rs, rule, loc, args, nargs, why);
  return to ? with_replacement(in, loc, to, rule, why) : NULL;
}

static gboolean need_args(int have, int min, int max, const char *usage,
                          GString *why) {
  if (have < min || have > max) {
    g_string_printf(why, "usage: %s", usage);
    return FALSE;
  }
  return TRUE;
}


/* An axis name given in a command, with the reason when it is not one. */
static gboolean axis_name_ok(const char *axis, GString *why) {
  gboolean ok = mesh_axis_name_ok(axis);
  if (!ok)
    g_string_printf(why, "'%s' is not an axis name (letters, digits, '_')",
                    axis);
  return ok;
}

/* The 'arg-tile' rule's replacement for the value at 'loc', with d, w
 * and an optional axis from the words 'w'. */
static const Term *tile_replacement(const RuleSet *rs, const Location *loc,
                                    char **w, int nw, GString *why) {
  const Rule *rule = ruleset_find(rs, "arg-tile");
  if (!rule) {
    g_string_printf(why, "no 'arg-tile' rule is loaded");
    return NULL;
  }
  RuleArg args[3] = {{g_intern_string("d"), FALSE, 0, NULL},
                     {g_intern_string("w"), FALSE, 0, NULL},
                     {g_intern_string("a"), TRUE, 0, NULL}};
  if (!parse_int64(w[0], &args[0].value) || !parse_int64(w[1], &args[1].value)) {
    g_string_printf(why, "DIM and WIDTH must be integers");
    return NULL;
  }
  int nargs = 2;
  if (nw > 2) {
    if (!axis_name_ok(w[2], why))
      return NULL;
    args[2].axis = g_intern_string(w[2]);
    nargs = 3;
  }
  return apply_here_at(rs, rule, loc, args, nargs, why);
}

/* tile/arg-tile at 'loc': the replacement, applied everywhere. */
static State *cmd_tile(const RuleSet *rs, State *in, const Location *loc,
                       char **w, int nw, GString *why) {
  const Term *to = tile_replacement(rs, loc, w, nw, why);
  return to ? with_replacement(in, loc, to, NULL, why) : NULL;
}

/* The argument named by 'word' (an index, "x" or "%x"), or -1 with the
 * reason. */
static int resolve_arg(const State *in, const char *word, GString *why) {
  int64_t index = -1;
  if (parse_int64(word, &index)) {
    if (index < 0 || index >= in->func.nargs) {
      g_string_printf(why, "arg-tile: there is no argument %s (the function "
                           "has %d)",
                      word, in->func.nargs);
      return -1;
    }
    return (int)index;
  }
  const char *name = word[0] == '%' ? word + 1 : word;
  for (int i = 0; i < in->func.nargs; i++)
    if (strcmp(in->func.arg_names[i], name) == 0)
      return i;
  g_string_printf(why, "arg-tile: no argument '%s'", word);
  return -1;
}

static Location arg_location(const State *in, int index) {
  return (Location){.name = in->func.arg_names[index],
                    .term = term_arg(index, in->func.arg_types[index])};
}

static State *run_command(const RuleSet *rs, State *in, char **w, int nw,
                          GString *why, GString *report) {
  const char *cmd = w[0];
  if (strcmp(cmd, "arg-tile") == 0) {
    /* arguments are found by name or index: no need to name every value */
    if (!need_args(nw, 4, 5, "arg-tile ARG DIM WIDTH [AXIS]", why))
      return NULL;
    int index = resolve_arg(in, w[1], why);
    if (index < 0)
      return NULL;
    Location arg = arg_location(in, index);
    return cmd_tile(rs, in, &arg, w + 2, nw - 2, why);
  }
  g_autoptr(GPtrArray) locs = state_locations(in);
  if (strcmp(cmd, "tile") == 0) {
    if (!need_args(nw, 4, 5, "tile VALUE DIM WIDTH [AXIS]", why))
      return NULL;
    const Location *loc = state_find_location(locs, w[1]);
    if (!loc) {
      g_string_printf(why, "tile: no value '%s'", w[1]);
      return NULL;
    }
    return cmd_tile(rs, in, loc, w + 2, nw - 2, why);
  }
  if (strcmp(cmd, "sum") == 0) {
    if (!need_args(nw, 3, 5, "sum VALUE WIDTH [AXIS] [REDUCTION]", why))
      return NULL;
    const Location *loc = state_find_location(locs, w[1]);
    if (!loc || loc->term->kind != TM_OP) {
      g_string_printf(why, "sum: no operator value '%s'", w[1]);
      return NULL;
    }
    int64_t width, k = 0;
    if (!parse_int64(w[2], &width) || (nw > 4 && !parse_int64(w[4], &k))) {
      g_string_printf(why, "sum: WIDTH and REDUCTION must be integers");
      return NULL;
    }
    if (k < 0 || k >= PARTIR_MAX_RANK) {
      g_string_printf(why, "sum: REDUCTION must be between 0 and %d",
                      PARTIR_MAX_RANK - 1);
      return NULL;
    }
    g_autofree char *name =
        k ? g_strdup_printf("%s-sum-%d", op_name(loc->term->op), (int)k)
          : g_strdup_printf("%s-sum", op_name(loc->term->op));
    const Rule *rule = ruleset_find(rs, name);
    if (!rule) {
      g_string_printf(why, "sum: '%s' has no reduction to split (no rule "
                           "'%s')",
                      op_name(loc->term->op), name);
      return NULL;
    }
    gboolean has_axis = nw > 3 && strcmp(w[3], "-") != 0;
    if (has_axis && !axis_name_ok(w[3], why))
      return NULL;
    RuleArg args[2] = {{g_intern_string("w"), FALSE, width, NULL},
                       {g_intern_string("a"), TRUE, 0,
                        has_axis ? g_intern_string(w[3]) : NULL}};
    return engine_apply(rs, in, rule, loc, args, args[1].axis ? 2 : 1, why);
  }
  if (strcmp(cmd, "apply") == 0) {
    if (nw < 2) {
      g_string_printf(why, "usage: apply RULE [at VALUE] [NAME=VALUE ...]");
      return NULL;
    }
    const Rule *rule = ruleset_find(rs, w[1]);
    if (!rule) {
      g_string_printf(why, "apply: no rule '%s'", w[1]);
      return NULL;
    }
    int i = 2;
    const Location *loc = NULL;
    if (i < nw && strcmp(w[i], "at") == 0) {
      if (i + 1 >= nw) {
        g_string_printf(why, "apply: 'at' needs a value");
        return NULL;
      }
      loc = state_find_location(locs, w[i + 1]);
      if (!loc) {
        g_string_printf(why, "apply: no value '%s'", w[i + 1]);
        return NULL;
      }
      i += 2;
    }
    RuleArg args[RULE_MAX_VARS];
    int nargs = 0;
    for (; i < nw && nargs < RULE_MAX_VARS; i++) {
      const char *eq = strchr(w[i], '=');
      if (!eq) {
        g_string_printf(why, "apply: expected NAME=VALUE, got '%s'", w[i]);
        return NULL;
      }
      g_autofree char *key = g_strndup(w[i], (gsize)(eq - w[i]));
      RuleArg *a = &args[nargs++];
      a->name = g_intern_string(key);
      a->is_axis = !parse_int64(eq + 1, &a->value);
      if (a->is_axis && !axis_name_ok(eq + 1, why))
        return NULL;
      a->axis = a->is_axis ? g_intern_string(eq + 1) : NULL;
    }
    if (loc)
      return engine_apply(rs, in, rule, loc, args, nargs, why);
    for (guint k = 0; k < locs->len; k++) { /* the first place it applies */
      const Location *l = g_ptr_array_index(locs, k);
      g_autoptr(GString) ignore = g_string_new(NULL);
      const Term *to = rule_apply_here(rs, rule, l->term, args, nargs, ignore);
      if (to)
        return with_replacement(in, l, to, rule, why);
    }
    g_string_printf(why, "apply: '%s' applies nowhere", rule->name);
    return NULL;
  }
  if (strcmp(cmd, "propagate") == 0 || strcmp(cmd, "fuse") == 0 ||
      strcmp(cmd, "simplify") == 0) {
    if (!need_args(nw, 1, 1, cmd, why))
      return NULL;
    const Term *body =
        strcmp(cmd, "propagate") == 0
            ? propagate(rs, in->func.body, in->module->names, report)
        : strcmp(cmd, "fuse") == 0
            ? rewrite_fixpoint(rs, in->func.body, RULE_TAG_FUSE,
                               in->module->names, report)
            : rewrite_fixpoint(rs, in->func.body, RULE_TAG_SIMPLIFY,
                               in->module->names, report);
    return state_with_body(in, body);
  }
  g_string_printf(why, "unknown command '%s'", cmd);
  return NULL;
}

#define MAX_WORDS 16

/* Splits a command into at most MAX_WORDS words (pointing into 'words',
 * which the caller frees); -1 with the reason when there are more. */
static int command_words(const char *command, GStrv *words, char **w,
                         GString *why) {
  *words = g_strsplit_set(command, " \t\n", -1);
  int nw = 0;
  for (char **p = *words; *p; p++)
    if (**p) {
      if (nw == MAX_WORDS) {
        g_string_printf(why, "too many words in '%s'", command);
        return -1;
      }
      w[nw++] = *p;
    }
  return nw;
}

State *engine_command(const RuleSet *rs, State *in, const char *command,
                      GString *why, GString *report) {
  g_auto(GStrv) words = NULL;
  char *w[MAX_WORDS];
  int nw = command_words(command, &words, w, why);
  if (nw <= 0)
    return nw < 0 ? NULL : state_ref(in);
  return run_command(rs, in, w, nw, why, report);
}

/* Applies the run of arg-tile commands starting at cmds[*i] that split
 * different arguments in one pass over the program (an arg-tile's
 * replacement depends only on its argument), so a tactic that splits
 * every weight of a deep model stays linear.  Returns NULL with nothing
 * in 'why' when fewer than two commands form such a run; *i is left on
 * the last command used. */
static State *arg_tile_run(const RuleSet *rs, State *in, GPtrArray *cmds,
                           guint *i, GString *why, gboolean *failed) {
  g_autofree const Term **to = g_new0(const Term *, (gsize)in->func.nargs + 1);
  guint k = *i;
  for (; k < cmds->len; k++) {
    const char *text = g_ptr_array_index(cmds, k);
    g_auto(GStrv) words = NULL;
    char *w[MAX_WORDS];
    int nw = command_words(text, &words, w, why);
    if (nw < 4 || nw > 5 || strcmp(w[0], "arg-tile") != 0)
      break;
    g_autoptr(GString) ignore = g_string_new(NULL);
    int index = resolve_arg(in, w[1], ignore);
    if (index < 0 || to[index])
      break; /* a second split of one argument sees the first */
    Location arg = arg_location(in, index);
    to[index] = tile_replacement(rs, &arg, w + 2, nw - 2, why);
    if (!to[index]) {
      g_autofree char *reason = g_strdup(why->str);
      g_string_printf(why, "'%s': %s", text, reason);
      *failed = TRUE;
      return NULL;
    }
  }
  g_string_truncate(why, 0);
  if (k - *i < 2)
    return NULL;
  const Term *body =
      replace_args(in->func.body, to, in->func.nargs, in->module->names, why);
  if (!body) {
    g_autofree char *reason = g_strdup(why->str);
    g_string_printf(why, "'%s': %s", (char *)g_ptr_array_index(cmds, *i),
                    reason);
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
    gboolean end = *p == '\0' || *p == ';' || *p == '\n' ||
                   (*p == '.' &&
                    (p[1] == '\0' || p[1] == ';' || g_ascii_isspace(p[1])));
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

State *engine_script(const RuleSet *rs, State *in, const char *script,
                     GString *why, GString *report) {
  g_autoptr(GPtrArray) cmds = split_commands(script);
  State *s = state_ref(in);
  for (guint i = 0; i < cmds->len; i++) {
    const char *text = g_ptr_array_index(cmds, i);
    if (partir_interrupt) {
      state_unref(s);
      g_string_printf(why, "interrupted before '%s'", text);
      return NULL;
    }
    gboolean failed = FALSE;
    State *next = arg_tile_run(rs, s, cmds, &i, why, &failed);
    if (failed) {
      state_unref(s);
      return NULL;
    }
    if (!next)
      next = engine_command(rs, s, text, why, report);
    state_unref(s);
    if (!next) {
      g_autofree char *reason = g_strdup(why->str);
      g_string_printf(why, "'%s': %s", text, reason);
      return NULL;
    }
    s = next;
  }
  return s;
}

GPtrArray *engine_matches(const RuleSet *rs, const State *s, const Rule *rule) {
  g_autoptr(GPtrArray) locs = state_locations(s);
  GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)location_free);
  g_autoptr(GString) why = g_string_new(NULL);
  for (guint i = 0; i < locs->len; i++) {
    Location *l = g_ptr_array_index(locs, i);
    /* parameters are the caller's: a rule that needs them matches where
     * its left side does; try it with a width of 1 */
    RuleArg args[2] = {{g_intern_string("w"), FALSE, 1, NULL},
                       {g_intern_string("d"), FALSE, 0, NULL}};
    if (rule_apply_here(rs, rule, l->term, args, rule->nparams ? 2 : 0, why)) {
      locs->pdata[i] = NULL;
      g_ptr_array_add(out, l);
    }
  }
  return out;
}
