/* resolve.c — 'propagate --resolve': each conflict decided by the cost
 * model.
 *
 * A conflict (conflict.c) has one side per operand split over its axis;
 * keeping a side redistributes the others where the operator reads them
 * (an all_to_all into the kept dimension, or an all_gather when they
 * have none).  Which is cheaper depends on the sizes, the mesh and the
 * hardware, and on what follows: the kept split propagates on to the
 * operator's users.  So each side is tried as a whole program and priced.
 *
 * Greedy, in the order the pass meets the conflicts (deterministic):
 *
 *   run propagate with the decisions so far (Conflicts.prefer);
 *   take the first conflict no decision settles; for each of its sides,
 *   the pass with that side kept (the side the pass kept is the run just
 *   made), priced by env->pricer (the pipeline lowers it on the mesh its
 *   regions imply and estimates its step time on the session's
 *   hardware);
 *   decide for the fastest (a tie keeps the pass's own choice, the first
 *   operand's split) and say so in env->choices; repeat.
 *
 * A candidate whose later conflicts are not yet decided is priced as the
 * lowering makes it, each later conflict keeping its first operand's
 * split; those are decided in their turn.  A decision is found again by
 * its operator term (conflict.c), so a round costs one pass per side
 * that the pass did not keep, and one pricing per side.
 */
#include "rewrite/rewrite.h"

#include <string.h>

/* Conflicts one command decides, at most. */
#define RESOLVE_MAX_CONFLICTS 256

void price_clear(Price *p) {
  g_free(p->summary);
  *p = (Price){0};
}

/* One propagation with the decisions in 'prefer'. */
typedef struct Run {
  gboolean made;    /* cx and report are set */
  const Term *body; /* NULL: the pass failed */
  Conflicts cx;
  GString *report; /* NULL when the caller takes none: the pass then fails
                      on an axis bound twice instead of noting it */
} Run;

static void run_clear(Run *r) {
  if (r->made) {
    conflicts_clear(&r->cx);
    if (r->report)
      g_string_free(r->report, TRUE);
  }
  *r = (Run){0};
}

static gboolean run_pass(const RuleSet *rs, State *in, GHashTable *prefer,
                         gboolean report, Run *out, Diag *why) {
  out->made = TRUE;
  conflicts_init(&out->cx, in, prefer);
  out->report = report ? g_string_new(NULL) : NULL;
  out->body = rw_propagate_conflicts(rs, in->func.body, in->module->names,
                                     &out->cx, out->report, why);
  return out->body != NULL;
}

/* 'body' in the state of 'in', priced; FALSE with the reason. */
static gboolean price_body(Pricer *pricer, State *in, const Term *body,
                           Price *out, Diag *why) {
  g_autoptr(State) s = state_with_body(in, body);
  return pricer->price(pricer, s, out, why);
}

/* One side of a conflict as a candidate: its program and its price. */
typedef struct Candidate {
  Run run;
  Price price;
  gboolean priced;
  char *why_not; /* the pass or the pricing failed */
} Candidate;

/* The line of env->choices for conflict 'c' decided for side 'best'. */
static void say_choice(GString *choices, const Conflict *c,
                       const Candidate *cand, int best) {
  if (!choices)
    return;
  g_autofree char *moves = conflict_moves(c, best);
  g_string_append_printf(
      choices, "axis \"%s\" at %s: chose %s (keeping %s): %s", c->axis, c->name,
      moves, c->sides[best].origin, cand[best].price.summary);
  gboolean tie = FALSE;
  for (int i = 0; i < c->nsides; i++) {
    if (i == best)
      continue;
    g_autofree char *other = conflict_moves(c, i);
    g_string_append_printf(choices, "; over %s (keeping %s): ", other,
                           c->sides[i].origin);
    if (cand[i].priced)
      g_string_append(choices, cand[i].price.summary);
    else
      g_string_append_printf(choices, "not priced: %s", cand[i].why_not);
    tie |= cand[i].priced && cand[i].price.seconds == cand[best].price.seconds;
  }
  if (tie)
    g_string_append(choices, " (as fast: the first operand's split stays)");
  g_string_append_c(choices, '\n');
}

/* Decides conflict 'c', met by run 'cur' (taken over: it is the side the
 * pass kept), into 'prefer'; '*next' is the run of the side decided
 * for.  FALSE with the reason when no side can be priced. */
static gboolean decide(const RuleSet *rs, State *in, const RewriteEnv *env,
                       GHashTable *prefer, Run *cur, const Conflict *c,
                       Run *next, Diag *why) {
  Candidate cand[SPEC_MAX_OPERANDS];
  memset(cand, 0, sizeof cand);
  int best = -1;
  for (int k = 0; k < c->nsides; k++) {
    /* the pass's own choice first: a tie keeps it */
    int i = k == 0 ? c->kept : k <= c->kept ? k - 1 : k;
    Candidate *d = &cand[i];
    g_autoptr(Diag) err = diag_new(NULL);
    g_hash_table_insert(prefer, (gpointer)c->at,
                        GINT_TO_POINTER(c->sides[i].operand + 1));
    if (i == c->kept) {
      d->run = *cur;
      *cur = (Run){0};
    } else if (!run_pass(rs, in, prefer, env->report != NULL, &d->run, err)) {
      d->why_not = g_strdup(diag_text(err));
      continue;
    }
    d->priced = price_body(env->pricer, in, d->run.body, &d->price, err);
    if (!d->priced) {
      d->why_not = g_strdup(diag_text(err));
      continue;
    }
    if (best < 0 || d->price.seconds < cand[best].price.seconds)
      best = i;
  }
  if (best >= 0) {
    g_hash_table_insert(prefer, (gpointer)c->at,
                        GINT_TO_POINTER(c->sides[best].operand + 1));
    say_choice(env->choices, c, cand, best);
    *next = cand[best].run;
    cand[best].run = (Run){0};
  } else {
    g_autofree char *text = conflict_text(c);
    diag_reason(why,
                "propagate --resolve: no side of the conflict on %s "
                "can be priced: %s",
                text, cand[c->kept].why_not);
  }
  /* 'c' lives in the kept side's run: freed last */
  for (int i = 0; i < c->nsides; i++)
    if (i != c->kept) {
      run_clear(&cand[i].run);
      price_clear(&cand[i].price);
      g_free(cand[i].why_not);
    }
  price_clear(&cand[c->kept].price);
  g_free(cand[c->kept].why_not);
  run_clear(&cand[c->kept].run);
  return best >= 0;
}

State *rw_resolve(const RuleSet *rs, State *in, const RewriteEnv *env,
                  Diag *why) {
  if (!env || !env->pricer) {
    diag_reason(why, "propagate --resolve: no cost model here to price "
                     "the sides of a conflict");
    return NULL;
  }
  g_autoptr(GHashTable) prefer = g_hash_table_new(NULL, NULL);
  Run cur = {0};
  State *result = NULL;
  gboolean ok = run_pass(rs, in, prefer, env->report != NULL, &cur, why);
  for (int round = 0; ok; round++) {
    g_autoptr(GPtrArray) open = conflicts_open(&cur.cx);
    if (open->len == 0) {
      result = state_with_body(in, cur.body);
      if (env->report)
        g_string_append(env->report, cur.report->str);
      break;
    }
    if (round == RESOLVE_MAX_CONFLICTS) {
      diag_reason(why,
                  "propagate --resolve: more than %d conflicts; split "
                  "fewer values over one axis",
                  RESOLVE_MAX_CONFLICTS);
      break;
    }
    Run next = {0};
    ok = decide(rs, in, env, prefer, &cur, g_ptr_array_index(open, 0), &next,
                why);
    run_clear(&cur);
    cur = next;
  }
  run_clear(&cur);
  return result;
}

gboolean rw_implied_mesh(const Term *body, Mesh *out, Diag *why) {
  *out = (Mesh){0};
  g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
  g_autoptr(GPtrArray) todo = g_ptr_array_new();
  g_ptr_array_add(todo, (gpointer)body);
  while (todo->len > 0) {
    const Term *t = g_ptr_array_steal_index(todo, todo->len - 1);
    if (!g_hash_table_add(seen, (gpointer)t))
      continue;
    if ((t->kind == TM_TILE || t->kind == TM_SUM) && t->axis) {
      int64_t parts = type_range_parts(t->range);
      int k = mesh_axis_index(out, t->axis);
      if (k >= 0 && out->sizes[k] != parts) {
        diag_reason(why,
                    "axis \"%s\" is bound to ranges of %" G_GINT64_FORMAT
                    " and of %" G_GINT64_FORMAT " parts",
                    t->axis, out->sizes[k], parts);
        return FALSE;
      }
      if (k < 0 && out->naxes == MESH_MAX_AXES) {
        diag_reason(why, "the program binds more than %d axes", MESH_MAX_AXES);
        return FALSE;
      }
      if (k < 0) {
        out->names[out->naxes] = t->axis;
        out->sizes[out->naxes++] = parts;
      }
    }
    for (int i = t->nargs - 1; i >= 0; i--) /* operand order */
      g_ptr_array_add(todo, (gpointer)t->args[i]);
  }
  return TRUE;
}
