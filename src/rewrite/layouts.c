/* layouts.c — the layouts a program's annotations ask for, as engine
 * commands.
 *
 * An imported program may say how its values lie on the mesh (StableHLO's
 * shardings, import/annotate.c): for each dimension of a value, the mesh
 * axes that split it, major first.  partir has the actions for that, the
 * ones a user types: 'arg-tile ARG DIM WIDTH AXIS' splits an argument,
 * 'tile VALUE DIM WIDTH AXIS' any other value; a dimension split over a
 * second axis is the first split's chunk ('slice DIM v[r]', inside the
 * tile) tiled again, which lowers to a dimension split over both axes,
 * the first major.  Then 'propagate'.  Each command runs on the state
 * the one before made, and is kept with it (a LayoutStep), so the front
 * ends record them as the user's own: the REPL's undo steps back through
 * them and the protocol's trace lists them.
 *
 * Order.  A command that tiles a value rebuilds every value that uses it,
 * but none that it uses; so values are tiled from the results back
 * (reverse print order) and each is found again by its term in the state
 * at hand, where its printed name may have changed.  Arguments come last,
 * by name.
 *
 * requires: 'in' a state of the program as loaded (no regions yet);
 * layouts whose axes are the mesh's and divide the dimensions they split
 * (the importer checks both).
 */
#include "rewrite/rewrite.h"

#include <string.h>

void layout_step_free(LayoutStep *s) {
  if (!s)
    return;
  g_free(s->command);
  state_unref(s->state);
  g_free(s);
}

/* Whether 'a' and 'b' split every dimension over the same axes. */
static gboolean same_split(const ValueLayout *a, const ValueLayout *b) {
  if (a->rank != b->rank)
    return FALSE;
  for (int d = 0; d < a->rank; d++) {
    if (a->naxes[d] != b->naxes[d])
      return FALSE;
    for (int i = 0; i < a->naxes[d]; i++)
      if (a->axes[d][i] != b->axes[d][i])
        return FALSE;
  }
  return TRUE;
}

static gboolean splits_any(const ValueLayout *l) {
  for (int d = 0; d < l->rank; d++)
    if (l->naxes[d] > 0)
      return TRUE;
  return FALSE;
}

/* "x" or "{x, y}" for dimension 'd' of 'l'. */
static char *axes_text(const ValueLayout *l, int d) {
  if (l->naxes[d] == 0)
    return g_strdup("whole");
  GString *s = g_string_new("over ");
  for (int i = 0; i < l->naxes[d]; i++)
    g_string_append_printf(s, "%s\"%s\"", i ? ", " : "", l->axes[d][i]);
  return g_string_free(s, FALSE);
}

/* Runs 'command' on '*s', keeping the step; FALSE with the reason. */
static gboolean step(const RuleSet *rs, State **s, const char *command,
                     const RewriteEnv *env, GPtrArray *steps, Diag *why) {
  State *next = rw_command(rs, *s, command, env, why);
  if (!next) {
    g_autofree char *reason = g_strdup(diag_text(why));
    diag_reason(why, "'%s': %s", command, reason);
    return FALSE;
  }
  LayoutStep *st = g_new0(LayoutStep, 1);
  st->command = g_strdup(command);
  st->state = state_ref(next);
  g_ptr_array_add(steps, st);
  state_unref(*s);
  *s = next;
  return TRUE;
}

/* The printed name of the value 't' in 's', or NULL. */
static char *name_of(const State *s, const Term *t) {
  g_autoptr(GPtrArray) locs = state_locations(s);
  for (guint i = 0; i < locs->len; i++) {
    const Location *l = g_ptr_array_index(locs, i);
    if (l->term == t)
      return g_strdup(l->name);
  }
  return NULL;
}

/* The chunk 'slice DIM v[r]' that tiling 'v' along 'dim' made in 's'. */
static const Term *chunk_of(const State *s, const Term *v, int dim) {
  g_autoptr(GPtrArray) locs = state_locations(s);
  for (guint i = 0; i < locs->len; i++) {
    const Term *t = ((const Location *)g_ptr_array_index(locs, i))->term;
    if (t->kind == TM_SLICE && t->index == dim && t->args[0] == v)
      return t;
  }
  return NULL;
}

/* The commands that give 'l->value' its layout, on '*s' ('arg': the
 * argument it is, or -1). */
static gboolean give_layout(const RuleSet *rs, State **s, const ValueLayout *l,
                            int arg, const Mesh *mesh, const RewriteEnv *env,
                            GPtrArray *steps, Diag *why) {
  for (int d = 0; d < l->rank; d++) {
    const Term *target = l->value;
    int64_t width = l->value->type->dims[d];
    for (int i = 0; i < l->naxes[d]; i++) {
      int64_t size = mesh_axis_size(mesh, l->axes[d][i]);
      g_assert(size > 0); /* the importer checked: even, or uneven over */
      width = (width + size - 1) / size; /* one axis, the last part padded */
      g_autofree char *command = NULL;
      if (i == 0 && arg >= 0) {
        command =
            g_strdup_printf("arg-tile %s %d %" G_GINT64_FORMAT " %s",
                            (*s)->func.arg_names[arg], d, width, l->axes[d][i]);
      } else {
        g_autofree char *name = name_of(*s, target);
        if (!name) {
          diag_reason(why, "%s: the value is no longer in the program",
                      l->origin);
          return FALSE;
        }
        command = g_strdup_printf("tile %%%s %d %" G_GINT64_FORMAT " %s", name,
                                  d, width, l->axes[d][i]);
      }
      if (!step(rs, s, command, env, steps, why))
        return FALSE;
      if (i + 1 < l->naxes[d] && !(target = chunk_of(*s, target, d))) {
        diag_reason(why, "%s: '%s' made no chunk to split again", l->origin,
                    command);
        return FALSE;
      }
    }
  }
  return TRUE;
}

State *rw_apply_layouts(const RuleSet *rs, State *in,
                        const ValueLayout *layouts, int n, const Mesh *mesh,
                        const RewriteEnv *env, GPtrArray *steps, Diag *why) {
  /* one layout a value: two that differ are refused */
  g_autoptr(GHashTable) by_value = g_hash_table_new(NULL, NULL);
  for (int k = 0; k < n; k++) {
    const ValueLayout *l = &layouts[k];
    const ValueLayout *seen = g_hash_table_lookup(by_value, l->value);
    if (!seen) {
      g_hash_table_insert(by_value, (gpointer)l->value, (gpointer)l);
      continue;
    }
    if (same_split(seen, l))
      continue;
    for (int d = 0; d < l->rank; d++) {
      g_autofree char *a = axes_text(seen, d), *b = axes_text(l, d);
      if (strcmp(a, b) != 0) {
        diag_reason(why,
                    "%s and %s are one value and ask for different "
                    "layouts: dimension %d %s, and %s",
                    seen->origin, l->origin, d, a, b);
        return NULL;
      }
    }
  }
  /* values from the results back, then the arguments */
  State *s = state_ref(in);
  g_autoptr(GPtrArray) locs = state_locations(in);
  guint before = steps->len;
  gboolean ok = TRUE;
  for (guint i = locs->len; ok && i > 0; i--) {
    const Location *at = g_ptr_array_index(locs, i - 1);
    const ValueLayout *l = g_hash_table_lookup(by_value, at->term);
    if (l && splits_any(l) && at->term->kind != TM_ARG)
      ok = give_layout(rs, &s, l, -1, mesh, env, steps, why);
  }
  for (int a = 0; ok && a < in->func.nargs; a++) {
    const ValueLayout *l =
        g_hash_table_lookup(by_value, term_arg(a, in->func.arg_types[a]));
    if (l && splits_any(l))
      ok = give_layout(rs, &s, l, a, mesh, env, steps, why);
  }
  if (ok && steps->len > before)
    ok = step(rs, &s, "propagate", env, steps, why);
  if (!ok) {
    state_unref(s);
    return NULL;
  }
  return s;
}
