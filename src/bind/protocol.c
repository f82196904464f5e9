/* protocol.c — the agent protocol: JSON-RPC 2.0 over lines of stdin and
 * stdout (partir-repl --json), for search and RL agents.
 *
 * Every request is one JSON object on one line; every reply echoes its
 * id with a result or an error {code, message, data}.  States are the
 * engine's immutable States under integer ids: a step makes a new id and
 * leaves its parent as it was, so agents fork and backtrack freely; drop
 * releases ids.  Each id remembers its parent and the action that made
 * it (trace) and its episode (the program's mesh and hardware, and the
 * root's cost, for rewards).  The order of everything printed is a
 * function of the requests alone, so equal requests give equal bytes:
 * all but the one observation that is a measurement, 'measured' (the
 * compiled step time, given only when asked for by name).
 *
 * Bad input never ends the process or changes a state: every failure is
 * an error reply (but a notification, a request without an id, is never
 * answered).  No Lua runs here, and files (programs, hardware
 * descriptions) are read only from the directories named with --allow,
 * only when regular; programs can be given inline and hardware by the
 * name of a shipped description.  No reply quotes a hardware file.
 *
 * Error codes: -32700 malformed JSON, -32600 not a request, -32601
 * unknown method, -32602 bad parameters, 1 unknown state, 2 illegal
 * action, 3 bad program, 4 file not allowed, not found or not readable
 * (a state that cannot be lowered or costed has a null cost, not an
 * error).  Parsing, parameters, JSON writing and input lines are in
 * protocol_json.c; this file holds the states, the actions and the
 * methods.
 */
#include "bind/bind.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PROTOCOL_VERSION "partir-agent/1"

typedef struct Episode {
  Mesh mesh;
  Hardware hw;
  double root_time;  /* NAN when the root cannot be costed */
  gint64 max_steps;  /* 'truncated' from this many actions on; 0: never */
  int args_legal;    /* some arg-tile applies: -1 not known yet, 0, 1 (it
                        depends on the signature and the mesh alone) */
  GArray *arg_legal; /* Legal: the arg-tile actions; NULL: not listed */
  GHashTable *memo;  /* the mesh's memo of legal rules (Proto.memos) */
  SpmdMemo *lowered; /* the mesh's memo of lowerings (Proto.lowered) */
} Episode;

/* The actions from the root, shared by an entry and its descendants, so
 * that a trace outlives the ids of the ancestors (drop does not cut it). */
typedef struct Trace {
  int refcount;
  struct Trace *up; /* NULL: the first step from the root */
  char action[];
} Trace;

typedef struct Entry {
  gint64 id;    /* the key of Proto.entries points here */
  gint64 steps; /* actions from the root */
  State *state;
  Trace *trace; /* NULL: a root */
  Episode *ep;
  gboolean costed;
  gboolean cost_ok;
  CostReport cost;
  gboolean measured;        /* 'measured_time' or 'measured_why' is set */
  double measured_time;     /* seconds: the compiled step time, or NAN */
  char *measured_why;       /* why it could not be measured, or NULL */
  struct ActionList *legal; /* the legal actions, once listed (may go) */
} Entry;

typedef struct Proto {
  RuleSet *rs;
  size_t collected0;   /* terms collected before the first request */
  GHashTable *entries; /* &Entry.id -> Entry* */
  gint64 next_id;
  char **allowed;
  GPtrArray *episodes;
  GHashTable *memos;   /* mesh text -> its memo: content -> TermLegal* */
  GHashTable *lowered; /* mesh text -> its SpmdMemo (the costs' lowerings) */
  GHashTable *pending; /* rw_propagate_pending's memo */
  GQueue *listed;      /* ids whose entries keep an action list, oldest first */
  size_t collected;    /* collect_freed() when 'pending' was last emptied */
  gboolean quit;
} Proto;

static void trace_unref(Trace *t) {
  while (t && --t->refcount == 0) {
    Trace *up = t->up;
    g_free(t);
    t = up;
  }
}

static void action_list_free(struct ActionList *l);

static void entry_free(Entry *e) {
  action_list_free(e->legal);
  state_unref(e->state);
  trace_unref(e->trace);
  cost_report_clear(&e->cost);
  g_free(e->measured_why);
  g_free(e);
}

static void episode_free(Episode *ep) {
  if (ep->arg_legal)
    g_array_unref(ep->arg_legal);
  g_free(ep);
}

/* ------------------------------------------------------------ params */

static Entry *get_state(Proto *pr, J *p, Fail *f) {
  gint64 id;
  if (!proto_get_int(p, "state", TRUE, &id, f))
    return NULL;
  Entry *e = g_hash_table_lookup(pr->entries, &id);
  if (!e)
    proto_fail(f, E_STATE,
               "no state %" G_GINT64_FORMAT " (never made, or dropped)", id);
  return e;
}

static gint64 add_entry(Proto *pr, Entry *e) {
  e->id = ++pr->next_id;
  g_hash_table_insert(pr->entries, &e->id, e);
  return e->id;
}

/* ------------------------------------------------------------ costing */

/* Whether the entry can be lowered on its episode's mesh and costed on
 * its hardware; the cost is computed once.  A state that cannot (an axis
 * bound twice in a nest) observes a null cost and gives a null reward. */
static gboolean entry_cost(Proto *pr, Entry *e) {
  if (!e->costed) {
    e->costed = TRUE;
    g_autoptr(Diag) why = diag_new(NULL);
    e->cost_ok = pipeline_cost_state(pr->rs, e->state, &e->ep->mesh, &e->ep->hw,
                                     e->ep->lowered, &e->cost, why);
  }
  return e->cost_ok;
}

/* --------------------------------------------------------- measuring */

/* The runs a 'measured' observation takes the median of. */
#define MEASURE_RUNS 3

/* Whether the entry's program, compiled for this CPU (the default
 * arithmetic) and run a thread a device on its episode's mesh, could be
 * timed: the median of MEASURE_RUNS steps on the inputs of 'run --seed
 * 0', measured once per entry.  FALSE with the reason in
 * 'measured_why' (a program the code generator refuses, one too large,
 * one that cannot be lowered): an observation, not an error. */
static gboolean entry_measure(Proto *pr, Entry *e) {
  if (e->measured)
    return e->measured_why == NULL;
  e->measured = TRUE;
  e->measured_time = NAN;
  g_autoptr(Diag) why = diag_new(NULL);
  g_auto(Executable) x = {0};
  GError *error = NULL;
  StepTime t;
  if (pipeline_compile(pr->rs, e->state->module, &e->state->func, &e->ep->mesh,
                       NULL, &x, why)) {
    g_autoptr(GPtrArray) inputs = pipeline_random_inputs(x.global, 0);
    if (pipeline_time(&x, (Tensor *const *)inputs->pdata, MEASURE_RUNS, &t, why,
                      &error))
      e->measured_time = t.median;
  }
  if (error) {
    diag_reason(why, "%s", error->message);
    g_error_free(error);
  }
  if (isnan(e->measured_time))
    e->measured_why =
        g_strdup(*diag_text(why) ? diag_text(why) : "it could not be timed");
  return e->measured_why == NULL;
}

/* ------------------------------------------------------------ actions */

/* The legal actions of a state are its argument splits, the derived
 * tiling rules of its operator values, and propagate; the first two are
 * legal where their rule applies (rw_apply_here: the matcher or the
 * operator's tiling spec, at one value), propagate where its step
 * applies somewhere (rw_propagate_pending).  No pass runs over the whole
 * program per action.  Whether a tiling rule applies at an operator
 * value depends on what apply.c reads of it: its operator, attributes
 * and type, and its operands' types, loose binders and nesting (the new
 * region's limit), not on the operands themselves.  A rewrite rebuilds
 * every value downstream of the one it changes, but most keep that
 * signature, so the answers are kept by signature (per mesh: the widths
 * come from the axes' sizes): a 12-layer transformer has a few dozen.
 * The memos hold no term, so collections leave them valid; they are
 * emptied when they grow past MEMO_MAX.  A state's list is kept with its
 * entry (the LIST_CACHE entries listed last), so that a step by index
 * takes its action from it.  The step applies the rule again, which
 * checks it in full: an action listed in error would be refused with
 * the rule's reason, the state unchanged, never misapplied. */

#define LIST_CACHE 32  /* states whose action lists are kept */
#define MEMO_MAX 65536 /* terms a memo answers for before it is emptied */

/* A legal action. */
typedef struct Legal {
  const Rule *rule; /* NULL: propagate */
  gint64 w;
  const char *axis; /* interned, the mesh's */
  int dim;          /* arg-tile's dimension */
  int arg;          /* arg-tile's argument; -1: a value's rule */
  guint loc;        /* the value: its SchedName.index (ActionList) */
} Legal;

/* What a tiling rule reads of an operand. */
typedef struct OperandSig {
  const Type *type; /* interned */
  guint64 loose;    /* the levels it uses: where a new region would sit */
} OperandSig;

/* The rules that apply at operator values of one signature (a memo's
 * keys and values). */
typedef struct TermLegal {
  Op op;
  const Attrs *attrs; /* interned */
  const Type *type;   /* interned */
  int nargs;
  OperandSig *args;
  guint n;
  Legal *at;
} TermLegal;

static void term_legal_free(TermLegal *tl) {
  g_free(tl->args);
  g_free(tl->at);
  g_free(tl);
}

static guint term_legal_hash(gconstpointer p) {
  const TermLegal *k = p;
  guint64 h = (guint64)k->op * 1000003u ^ (guint64)(gsize)k->attrs ^
              (guint64)(gsize)k->type * 31u;
  for (int i = 0; i < k->nargs; i++)
    h = h * G_GUINT64_CONSTANT(1099511628211) ^
        (guint64)(gsize)k->args[i].type ^ k->args[i].loose * 7u;
  return (guint)(h ^ h >> 32);
}

static gboolean term_legal_equal(gconstpointer pa, gconstpointer pb) {
  const TermLegal *a = pa, *b = pb;
  if (a->op != b->op || a->attrs != b->attrs || a->type != b->type ||
      a->nargs != b->nargs)
    return FALSE;
  for (int i = 0; i < a->nargs; i++)
    if (a->args[i].type != b->args[i].type ||
        a->args[i].loose != b->args[i].loose)
      return FALSE;
  return TRUE;
}

/* A state's legal actions, in the order 'actions' lists them, and its
 * values (the arguments, then the statements in print order: those of
 * state_locations), read off its schedule: no Location is made for
 * each, and the values are named only as far as a name is needed (a
 * step's trace names up to its value, a listing all), each once. */
typedef struct ActionList {
  Legal *items; /* NULL: not listed yet */
  guint nitems;
  Schedule *sc;            /* the state's */
  int nargs;               /* values below are statements */
  const SchedStmt **stmts; /* by SchedName.index (NULL: an argument) */
  int *up; /* by index: the tile or sum whose region holds it, or -1 */
} ActionList;

static void action_list_free(ActionList *l) {
  if (!l)
    return;
  g_free(l->items);
  schedule_free(l->sc);
  g_free(l->stmts);
  g_free(l->up);
  g_free(l);
}

static void values_of_region(ActionList *l, const SchedRegion *r, int up) {
  for (guint i = 0; i < r->stmts->len; i++) {
    const SchedStmt *st = g_ptr_array_index(r->stmts, i);
    l->stmts[st->n.index] = st;
    l->up[st->n.index] = up;
    if (st->child)
      values_of_region(l, st->child, st->n.index);
  }
}

/* The values of 's', unnamed, without a list of actions yet. */
static ActionList *action_list_new(const State *s) {
  ActionList *l = g_new0(ActionList, 1);
  l->sc = schedule_order(&s->func);
  l->nargs = s->func.nargs;
  l->stmts = g_new0(const SchedStmt *, (gsize)MAX(l->sc->nvalues, 1));
  l->up = g_new(int, (gsize)MAX(l->sc->nvalues, 1));
  for (int i = 0; i < l->nargs; i++)
    l->up[i] = -1;
  values_of_region(l, l->sc->top, -1);
  return l;
}

/* The term of value 'i' of 's' (its placed form, as in a Location). */
static const Term *value_term(const State *s, const ActionList *l, int i) {
  return i < l->nargs ? term_arg(i, s->func.arg_types[i]) : l->stmts[i]->t;
}

/* The printed name of value 'i' of 's', without its '%'. */
static const char *value_name(const State *s, ActionList *l, int i) {
  /* named up to it: a step's trace needs its value's name alone */
  schedule_name_upto(l->sc, s->module, &s->func, i);
  return i < l->nargs ? l->sc->args[i].name : l->stmts[i]->n.name;
}

/* Whether a region over 'axis' is around value 'i' (location_inside_axis). */
static gboolean value_inside_axis(const ActionList *l, int i,
                                  const char *axis) {
  for (int r = l->up[i]; axis && r >= 0; r = l->up[r])
    if (l->stmts[r]->t->axis == axis)
      return TRUE;
  return FALSE;
}

/* The width that splits dimension 'd' of argument 'i' over mesh axis
 * 'k', or 0 when the axis does not divide it. */
static int64_t arg_split_width(const Func *f, int i, int d, const Mesh *mesh,
                               int k) {
  int64_t n = f->arg_types[i]->dims[d], size = mesh->sizes[k];
  return n % size == 0 ? n / size : 0;
}

/* What rule 'r' makes of 't' with width 'w' over 'axis' and, for
 * arg-tile, dimension 'd'; NULL when it does not apply.  A rule at one
 * value changes the program exactly when it applies there. */
static const Term *apply_with(Proto *pr, const Rule *r, const Term *t,
                              int64_t w, const char *axis, int d, Diag *why) {
  static const char *w_key, *a_key, *d_key;
  if (!w_key) {
    w_key = g_intern_static_string("w");
    a_key = g_intern_static_string("a");
    d_key = g_intern_static_string("d");
  }
  RuleArg args[3] = {
      {w_key, FALSE, w, NULL}, {a_key, TRUE, 0, axis}, {d_key, FALSE, d, NULL}};
  int nargs = r && strcmp(r->name, "arg-tile") == 0 ? 3 : 2;
  return r ? rw_apply_here(pr->rs, r, t, args, nargs, why) : NULL;
}

/* The argument splits that apply: each argument's dimensions over each
 * mesh axis that divides them.  They depend on the signature and the
 * mesh alone, so they are found once per episode. */
static GArray *arg_legal(Proto *pr, Episode *ep, const Func *f) {
  if (ep->arg_legal)
    return ep->arg_legal;
  ep->arg_legal = g_array_new(FALSE, FALSE, sizeof(Legal));
  const Rule *rule = ruleset_find(pr->rs, "arg-tile");
  g_autoptr(Diag) why = diag_new_quiet();
  for (int i = 0; i < f->nargs; i++)
    for (int d = 0; d < f->arg_types[i]->rank; d++)
      for (int k = 0; k < ep->mesh.naxes; k++) {
        int64_t w = arg_split_width(f, i, d, &ep->mesh, k);
        const char *axis = ep->mesh.names[k];
        if (w >= 1 && apply_with(pr, rule, term_arg(i, f->arg_types[i]), w,
                                 axis, d, why)) {
          Legal a = {rule, w, axis, d, i, 0};
          g_array_append_val(ep->arg_legal, a);
        }
      }
  ep->args_legal = ep->arg_legal->len > 0;
  return ep->arg_legal;
}

/* The rules that apply at operator value 't': each tiling rule
 * of the operator (OP-tile-D, OP-sum[-K]) over each axis that divides
 * the size it splits; kept by signature in the mesh's memo. */
static const TermLegal *term_legal(Proto *pr, Episode *ep, const Term *t) {
  static const TermLegal none = {0};
  TileSpec spec;
  if (t->kind != TM_OP || t->nargs > SPEC_MAX_OPERANDS)
    return &none; /* no spec takes more operands */
  OperandSig args[SPEC_MAX_OPERANDS];
  TermLegal key = {.op = t->op,
                   .attrs = t->attrs,
                   .type = t->type,
                   .nargs = t->nargs,
                   .args = args};
  for (int i = 0; i < t->nargs; i++)
    args[i] = (OperandSig){t->args[i]->type, t->args[i]->loose};
  const TermLegal *known = g_hash_table_lookup(ep->memo, &key);
  if (known)
    return known;
  g_autoptr(GArray) found = g_array_new(FALSE, FALSE, sizeof(Legal));
  g_autoptr(Diag) why = diag_new_quiet();
  const Mesh *mesh = &ep->mesh;
  gboolean tiles = spec_of(pr->rs, t, &spec);
  for (int kind = 0; tiles && kind < 2; kind++) {
    int count = kind == 0 ? spec.nout : spec.nred;
    for (int d = 0; d < count; d++) {
      int64_t n = -1;
      if (kind == 0 && spec.out_ok[d])
        n = t->type->dims[d];
      for (int a = 0; kind == 1 && a < t->nargs; a++)
        if (spec.red[d][a] >= 0)
          n = t->args[a]->type->dims[spec.red[d][a]];
      const Rule *rule =
          n < 0 ? NULL
                : ruleset_derived(
                      pr->rs, kind == 0 ? RULE_OP_TILE : RULE_OP_SUM, t->op, d);
      for (int k = 0; rule && k < mesh->naxes; k++) {
        if (n % mesh->sizes[k] != 0)
          continue;
        int64_t w = n / mesh->sizes[k];
        if (apply_with(pr, rule, t, w, mesh->names[k], 0, why)) {
          Legal a = {rule, w, mesh->names[k], 0, -1, 0};
          g_array_append_val(found, a);
        }
      }
    }
  }
  TermLegal *tl = g_memdup2(&key, sizeof key);
  tl->args = g_memdup2(args, (gsize)t->nargs * sizeof *args);
  tl->n = found->len;
  tl->at = g_memdup2(found->data, found->len * sizeof(Legal));
  g_hash_table_add(ep->memo, tl);
  return tl;
}

/* The legal actions of 's' in episode 'ep', in a stable order: the
 * argument splits, then each value's rules in print order, then
 * propagate when it would rewrite something. */
static ActionList *list_actions(Proto *pr, Episode *ep, State *s,
                                ActionList *l) {
  if (!l)
    l = action_list_new(s);
  /* appended to directly: a state has thousands of actions */
  const GArray *args = arg_legal(pr, ep, &s->func);
  gsize cap = args->len + (gsize)l->sc->nvalues + 1;
  l->items = g_new(Legal, cap);
  l->nitems = args->len;
  if (args->len) /* no axis: no split, and no data to copy */
    memcpy(l->items, args->data, args->len * sizeof(Legal));
  for (int i = l->nargs; i < l->sc->nvalues; i++) { /* no rule takes an arg */
    const TermLegal *tl = term_legal(pr, ep, l->stmts[i]->t);
    for (guint k = 0; k < tl->n; k++) {
      Legal a = tl->at[k];
      if (value_inside_axis(l, i, a.axis))
        continue; /* the axis would be bound twice in one nest */
      a.loc = (guint)i;
      if (l->nitems + 1 >= cap) /* room for propagate stays */
        l->items = g_renew(Legal, l->items, cap *= 2);
      l->items[l->nitems++] = a;
    }
  }
  if (rw_propagate_pending(pr->rs, s->func.body, pr->pending))
    l->items[l->nitems++] = (Legal){.arg = -1};
  return l;
}

/* The values of entry 'e', kept with its action list while it is among
 * the LIST_CACHE entries listed last: 'features' and the listing of the
 * actions that follows read them once. */
static ActionList *entry_values(Proto *pr, Entry *e) {
  if (e->legal)
    return e->legal;
  e->legal = action_list_new(e->state);
  g_queue_push_tail(pr->listed, GSIZE_TO_POINTER((gsize)e->id));
  while (g_queue_get_length(pr->listed) > LIST_CACHE) {
    gint64 id = (gint64)GPOINTER_TO_SIZE(g_queue_pop_head(pr->listed));
    Entry *old = g_hash_table_lookup(pr->entries, &id);
    if (old && old != e) {
      action_list_free(old->legal);
      old->legal = NULL;
    }
  }
  return e->legal;
}

/* The legal actions of entry 'e', listed once and kept with its values. */
static ActionList *entry_actions(Proto *pr, Entry *e) {
  ActionList *l = entry_values(pr, e);
  return l->items ? l : list_actions(pr, e->ep, e->state, l);
}

/* Empties the memos that have grown past MEMO_MAX, and propagate's after
 * each collection (it answers for terms, many of them now gone), so that
 * a long session runs in flat memory. */
static void memos_trim(Proto *pr) {
  GHashTableIter it;
  gpointer memo;
  g_hash_table_iter_init(&it, pr->memos);
  while (g_hash_table_iter_next(&it, NULL, &memo))
    if (g_hash_table_size(memo) > MEMO_MAX)
      g_hash_table_remove_all(memo);
  if (g_hash_table_size(pr->pending) > MEMO_MAX ||
      pr->collected != collect_freed()) {
    g_hash_table_remove_all(pr->pending);
    pr->collected = collect_freed();
  }
}

/* Appends the decimal digits of 'v': a listing writes thousands of
 * numbers, and printf was most of its time. */
static void append_int(GString *out, gint64 v) {
  char digits[24];
  int n = 0;
  guint64 u = v < 0 ? -(guint64)v : (guint64)v;
  do
    digits[n++] = (char)('0' + u % 10);
  while ((u /= 10) > 0);
  if (v < 0)
    g_string_append_c(out, '-');
  while (n > 0)
    g_string_append_c(out, digits[--n]);
}

/* The printed name of the value action 'a' is at. */
static const char *legal_at(const State *s, ActionList *l, const Legal *a) {
  return a->arg >= 0 ? s->func.arg_names[a->arg]
                     : value_name(s, l, (int)a->loc);
}

/* The action's command, as a step by string would give it:
 * "arg-tile %x D W AXIS", "apply RULE at %v w=W a=AXIS" or "propagate". */
static void legal_text(GString *out, const State *s, ActionList *l,
                       const Legal *a) {
  if (!a->rule) {
    g_string_append(out, "propagate");
    return;
  }
  g_string_append(out, a->arg >= 0 ? "arg-tile %" : "apply ");
  if (a->arg < 0) {
    g_string_append(out, a->rule->name);
    g_string_append(out, " at %");
  }
  g_string_append(out, legal_at(s, l, a));
  if (a->arg >= 0) {
    g_string_append_c(out, ' ');
    append_int(out, a->dim);
    g_string_append_c(out, ' ');
  } else {
    g_string_append(out, " w=");
  }
  append_int(out, a->w);
  g_string_append(out, a->arg >= 0 ? " " : " a=");
  g_string_append(out, a->axis);
}

/* Appends {index, action, rule, location, args} for the action whose
 * command is 'text' (as cJSON would write the object). */
static void legal_json(GString *out, const State *s, ActionList *l, guint index,
                       const Legal *a, const char *text) {
  g_string_append(out, "{\"index\":");
  append_int(out, index);
  g_string_append(out, ",\"action\":");
  proto_append_json_string(out, text);
  g_string_append(out, ",\"rule\":");
  if (!a->rule) {
    g_string_append(out, "\"propagate\",\"location\":null,\"args\":{}}");
    return;
  }
  proto_append_json_string(out, a->rule->name);
  g_string_append(out, ",\"location\":");
  proto_append_json_string(out, legal_at(s, l, a));
  g_string_append(out, ",\"args\":{");
  if (a->arg >= 0) {
    g_string_append(out, "\"d\":");
    append_int(out, a->dim);
    g_string_append_c(out, ',');
  }
  g_string_append(out, "\"w\":");
  append_int(out, a->w);
  g_string_append(out, ",\"axis\":");
  proto_append_json_string(out, a->axis);
  g_string_append(out, "}}");
}

/* Runs one command; NULL with the reason when it does not apply (a
 * conflict fails propagate).  No report: what propagate could not
 * resolve is not part of a reply, and asking for it costs a walk of the
 * program.  'propagate --resolve' prices on the episode's hardware and
 * says what it chose in 'choices' (may be NULL). */
static State *run_action(Proto *pr, const Hardware *hw, State *s,
                         const char *text, GString *choices, Diag *why) {
  RewriteContext cx = {.hw = hw, .choices = choices};
  return pipeline_rewrite(pr->rs, s, text, &cx, why);
}

/* Runs legal action 'a' of 's' (listed in 'l'), whose command is 'text',
 * as the command would: the rule at the value, checked in full, then the
 * replacement everywhere; failing as the command fails ("'TEXT': RULE at
 * %v: why"), without finding the value by its name. */
static State *run_legal(Proto *pr, const Hardware *hw, State *s, ActionList *l,
                        const Legal *a, const char *text, Diag *why) {
  if (!a->rule)
    return run_action(pr, hw, s, text, NULL, why);
  Location at = {0};
  at.name = (char *)legal_at(s, l, a);
  at.term = a->arg >= 0 ? term_arg(a->arg, s->func.arg_types[a->arg])
                        : value_term(s, l, (int)a->loc);
  const Location *loc = &at;
  const Term *to =
      apply_with(pr, a->rule, loc->term, a->w, a->axis, a->dim, why);
  if (!to) {
    g_autofree char *reason = g_strdup(diag_text(why));
    diag_reason(why, "%s at %%%s: %s", a->rule->name, loc->name, reason);
  }
  State *next =
      to ? rw_with_replacement(s, loc, to, a->arg >= 0 ? NULL : a->rule, why)
         : NULL;
  if (!next) {
    g_autofree char *reason = g_strdup(diag_text(why));
    diag_reason(why, "'%s': %s", text, reason);
  }
  return next;
}

/* Whether any action is legal ('terminated' is its negation), found
 * without listing them when an argument split applies (it depends on
 * the signature and the mesh alone). */
static gboolean any_legal_action(Proto *pr, Entry *e) {
  if (e->legal && e->legal->items)
    return e->legal->nitems > 0;
  if (e->ep->args_legal < 0)
    arg_legal(pr, e->ep, &e->state->func);
  return e->ep->args_legal || entry_actions(pr, e)->nitems > 0;
}

/* -------------------------------------------------------- observations */

/* The program's content hash (state_hash) in 16 hex digits. */
static void state_hash_hex(const State *s, char out[17]) {
  g_snprintf(out, 17, "%016" G_GINT64_MODIFIER "x", state_hash(s));
}

static J *cost_json(const CostReport *r) {
  J *o = cJSON_CreateObject();
  const struct {
    const char *name;
    double v;
  } fields[] = {{"flops", r->flops},
                {"peak_bytes", (double)r->peak_bytes},
                {"compute_time", r->compute_time},
                {"comm_time", r->comm_time},
                {"total_time", r->total_time}};
  for (gsize i = 0; i < G_N_ELEMENTS(fields); i++)
    proto_put(o, fields[i].name, cJSON_CreateNumber(fields[i].v));
  proto_put(o, "comm_bytes", cJSON_CreateNumber(cost_comm_bytes(r)));
  proto_put(o, "fits", cJSON_CreateBool(r->fits));
  return o;
}

/* features: documented in docs/protocol.md */
static J *features_json(Proto *pr, Entry *e, gboolean ok) {
  const ActionList *l = entry_values(pr, e);
  int tiles = 0, sums = 0;
  for (int k = l->nargs; k < l->sc->nvalues; k++) {
    const Term *t = l->stmts[k]->t;
    tiles += t->kind == TM_TILE;
    sums += t->kind == TM_SUM;
  }
  double v[] = {(double)l->sc->nvalues,
                tiles,
                sums,
                ok ? e->cost.flops : -1,
                ok ? (double)e->cost.peak_bytes : -1,
                ok ? cost_comm_bytes(&e->cost) : -1,
                ok ? e->cost.total_time : -1,
                ok ? (double)e->cost.fits : -1};
  J *a = cJSON_CreateArray();
  for (gsize k = 0; k < G_N_ELEMENTS(v); k++)
    cJSON_AddItemToArray(a, cJSON_CreateNumber(v[k]));
  return a;
}

/* The graph observation, read off the schedule: a node per argument and
 * statement in print order and one per result; an edge from each operand
 * to its user, from each region's yielded value to its tile or sum, and
 * from each returned value to its result.  Binders have no node. */
typedef struct Graph {
  J *nodes, *edges;
  GHashTable *ids; /* SchedName* -> node id + 1 */
  int n;
} Graph;

static int graph_node(Graph *g, const SchedName *n, const char *name,
                      const char *kind, const Type *type, const char *axis) {
  J *o = cJSON_CreateObject();
  proto_put(o, "id", proto_jint(g->n));
  proto_put(o, "name", cJSON_CreateString(name));
  proto_put(o, "kind", cJSON_CreateString(kind));
  J *shape = cJSON_CreateArray();
  for (int i = 0; i < type->rank; i++)
    cJSON_AddItemToArray(shape, proto_jint(type->dims[i]));
  proto_put(o, "shape", shape);
  if (axis)
    proto_put(o, "axis", cJSON_CreateString(axis));
  cJSON_AddItemToArray(g->nodes, o);
  if (n)
    g_hash_table_insert(g->ids, (gpointer)n, GINT_TO_POINTER(g->n + 1));
  return g->n++;
}

/* An edge from the node of 'from' (none for a binder) to node 'to'. */
static void graph_edge(Graph *g, const SchedName *from, int to) {
  int id = GPOINTER_TO_INT(g_hash_table_lookup(g->ids, from));
  if (!id)
    return;
  J *pair = cJSON_CreateArray();
  cJSON_AddItemToArray(pair, proto_jint(id - 1));
  cJSON_AddItemToArray(pair, proto_jint(to));
  cJSON_AddItemToArray(g->edges, pair);
}

static void graph_region(Graph *g, const SchedRegion *r) {
  for (guint i = 0; i < r->stmts->len; i++) {
    const SchedStmt *s = g_ptr_array_index(r->stmts, i);
    const Term *t = s->t;
    int id = graph_node(g, &s->n, s->n.name,
                        t->kind == TM_OP      ? op_name(t->op)
                        : t->kind == TM_SLICE ? "slice"
                        : t->kind == TM_TILE  ? "tile"
                                              : "sum",
                        t->type, t->axis);
    for (int k = 0; k < s->nops; k++)
      graph_edge(g, s->ops[k], id);
    if (s->child) {
      graph_region(g, s->child);
      graph_edge(g, s->child->yield, id);
    }
  }
}

static J *graph_json(Entry *e) {
  const Func *f = &e->state->func;
  g_autoptr(Schedule) sc = schedule_new(e->state->module, f);
  Graph g = {cJSON_CreateArray(), cJSON_CreateArray(),
             g_hash_table_new(NULL, NULL), 0};
  for (int i = 0; i < f->nargs; i++)
    graph_node(&g, &sc->args[i], sc->args[i].name, "arg", f->arg_types[i],
               NULL);
  graph_region(&g, sc->top);
  for (int i = 0; i < f->nresults; i++) {
    g_autofree char *name = g_strdup_printf("result%d", i);
    int id = graph_node(&g, NULL, name, "result", f->body->args[i]->type, NULL);
    graph_edge(&g, sc->results[i], id);
  }
  J *o = cJSON_CreateObject();
  proto_put(o, "nodes", g.nodes);
  proto_put(o, "edges", g.edges);
  g_hash_table_unref(g.ids);
  return o;
}

/* The observation of 'e' named by the strings of 'what' (NULL: none);
 * NULL after proto_fail for an unknown name. */
static J *observation_json(Proto *pr, Entry *e, const char *const *what,
                           Fail *f) {
  J *o = cJSON_CreateObject();
  for (; what && *what; what++) {
    const char *w = *what;
    if (cJSON_HasObjectItem(o, w))
      continue; /* named twice */
    if (strcmp(w, "program") == 0) {
      g_autoptr(GString) text = g_string_new(NULL);
      state_print(text, e->state, FALSE);
      proto_put(o, "program", cJSON_CreateString(text->str));
    } else if (strcmp(w, "cost") == 0 || strcmp(w, "features") == 0) {
      gboolean ok = entry_cost(pr, e);
      if (strcmp(w, "cost") == 0)
        proto_put(o, "cost", ok ? cost_json(&e->cost) : NULL);
      else
        proto_put(o, "features", features_json(pr, e, ok));
    } else if (strcmp(w, "measured") == 0) {
      gboolean ok = entry_measure(pr, e);
      proto_put(o, "measured",
                ok ? cJSON_CreateNumber(e->measured_time) : NULL);
      if (!ok)
        proto_put(o, "measured_reason", cJSON_CreateString(e->measured_why));
    } else if (strcmp(w, "graph") == 0) {
      proto_put(o, "graph", graph_json(e));
    } else if (strcmp(w, "legal") == 0) {
      proto_put(o, "legal", proto_jint(entry_actions(pr, e)->nitems));
    } else {
      cJSON_Delete(o);
      proto_fail(f, E_PARAMS,
                 "cannot observe '%s' (program, cost, features, "
                 "graph, legal, measured)",
                 w);
      return NULL;
    }
  }
  return o;
}

/* The 'observe' parameter as a NULL-terminated list of names (the
 * strings stay the request's); non-strings read as "". */
static const char **observe_names(J *what) {
  if (!what)
    return NULL;
  const char **names =
      g_new0(const char *, (gsize)cJSON_GetArraySize(what) + 1);
  int i = 0;
  const J *x;
  cJSON_ArrayForEach(x, what) names[i++] =
      cJSON_IsString(x) ? x->valuestring : "";
  return names;
}

/* ------------------------------------------------------------ methods */

/* Whether the canonical path 'real' is in an --allow directory. */
static gboolean under_allowed(Proto *pr, const char *real) {
  for (char **d = pr->allowed; d && *d; d++) {
    g_autofree char *dir = realpath(*d, NULL);
    gsize n = dir ? strlen(dir) : 0;
    if (dir && strncmp(real, dir, n) == 0 &&
        (real[n] == '/' || real[n] == '\0' || strcmp(dir, "/") == 0))
      return TRUE;
  }
  return FALSE;
}

/* Where 'path', which does not exist, would be: the canonical path of its
 * deepest existing directory and the missing names after it; NULL when a
 * missing name is '.' or '..' (they cannot be resolved) or is a link to
 * nothing. */
static char *missing_path(const char *path) {
  g_autofree char *head = g_strdup(path);
  g_autofree char *tail = NULL;
  for (;;) {
    while (strlen(head) > 1 && g_str_has_suffix(head, "/"))
      head[strlen(head) - 1] = '\0';
    char *real = realpath(head, NULL);
    if (real) {
      char *where = g_build_filename(real, tail, NULL);
      free(real);
      return where;
    }
    struct stat st;
    if (errno != ENOENT || lstat(head, &st) == 0)
      return NULL;
    g_autofree char *base = g_path_get_basename(head);
    if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0 ||
        strcmp(base, "/") == 0)
      return NULL;
    char *longer = tail ? g_build_filename(base, tail, NULL) : g_strdup(base);
    g_free(tail);
    tail = longer;
    char *up = g_path_get_dirname(head);
    g_free(head);
    head = up;
  }
}

/* The canonical path of 'path' when it is in an --allow directory, or
 * NULL after proto_fail (E_FILE).  A path outside them is refused alike
 * whether it exists or not, so that no reply says what exists there; a
 * path inside them that does not exist is "not found". */
static char *allowed_path(Proto *pr, const char *path, Fail *f) {
  char *real = realpath(path, NULL);
  int saved = errno;
  if (real && under_allowed(pr, real))
    return real;
  free(real);
  if (!real && saved == ENOENT) {
    g_autofree char *where = missing_path(path);
    if (where && under_allowed(pr, where)) {
      proto_fail(f, E_FILE, "'%s' not found", path);
      return NULL;
    }
  }
  proto_fail(f, E_FILE, "'%s' is not in a directory allowed with --allow",
             path);
  return NULL;
}

/* Reads a program from the --allow directories: a regular file of at
 * most PARTIR_MAX_INPUT_BYTES (input.c; a FIFO would stop the server). */
static gboolean read_allowed(Proto *pr, const char *path, char **text,
                             gsize *len, Fail *f) {
  g_autofree char *real = allowed_path(pr, path, f);
  if (!real)
    return FALSE;
  GError *error = NULL;
  if (!partir_read_file(real, PARTIR_MAX_INPUT_BYTES, text, len, &error)) {
    proto_fail(f, E_FILE, "%s", error->message);
    g_error_free(error);
    return FALSE;
  }
  return TRUE;
}

/* The hardware 'hw' names: a shipped description by NAME, or a file in
 * the --allow directories (hw_is_path).  No reply quotes a file: an agent
 * could otherwise read any file through GKeyFile's messages, so a file
 * that does not parse is only "not a valid hardware description". */
static gboolean load_hw(Proto *pr, const char *hw, Hardware *out, Fail *f) {
  g_autofree char *real = NULL;
  if (hw_is_path(hw) && !(real = allowed_path(pr, hw, f)))
    return FALSE;
  GError *error = NULL;
  if (hw_load(real ? real : hw, out, &error))
    return TRUE;
  if (error->code == PARTIR_ERROR_IO) /* names the file, never quotes it */
    proto_fail(f, real ? E_FILE : E_PARAMS, "%s", error->message);
  else
    proto_fail(f, E_PARAMS, "'%s' is not a valid hardware description", hw);
  g_error_free(error);
  return FALSE;
}

/* The trace of the commands a program's shardings became: the actions
 * of a reset's root. */
static Trace *steps_trace(GPtrArray *steps) {
  Trace *t = NULL;
  for (guint i = 0; i < steps->len; i++) {
    const char *command = ((const LayoutStep *)steps->pdata[i])->command;
    gsize n = strlen(command);
    Trace *next = g_malloc(sizeof(Trace) + n + 1);
    next->refcount = 1;
    next->up = t;
    memcpy(next->action, command, n + 1);
    t = next;
  }
  return t;
}

/* Makes a root entry from reset/replay parameters: the program after
 * the commands its shardings became ('sharded', reset: they are its
 * trace), or as written (replay: a trace starts there). */
static Entry *new_root(Proto *pr, J *p, gboolean sharded, Fail *f) {
  const char *program, *path, *mesh_spec, *hw_name, *shardings;
  if (!proto_get_string(p, "program", FALSE, &program, f) ||
      !proto_get_string(p, "path", FALSE, &path, f) ||
      !proto_get_string(p, "mesh", FALSE, &mesh_spec, f) ||
      !proto_get_string(p, "hw", FALSE, &hw_name, f) ||
      !proto_get_string(p, "shardings", FALSE, &shardings, f))
    return NULL;
  /* nothing in an episode is random; a seed is accepted (agents pass one
   * to every environment) and must be an integer */
  gint64 seed = 0, max_steps = 0;
  if (!proto_get_int(p, "seed", FALSE, &seed, f) ||
      !proto_get_int(p, "max_steps", FALSE, &max_steps, f))
    return NULL;
  if (max_steps < 0) {
    proto_fail(f, E_PARAMS, "'max_steps' must be 0 (no budget) or more");
    return NULL;
  }
  if (!program == !path) {
    proto_fail(f, E_PARAMS, "give exactly one of 'program' and 'path'");
    return NULL;
  }
  Episode ep = {.args_legal = -1, .max_steps = max_steps};
  g_autoptr(Diag) why = diag_new(NULL);
  LoadOptions lo = {.mesh = &ep.mesh, .rs = pr->rs};
  if (!mesh_parse(mesh_spec, &ep.mesh, why) ||
      (shardings &&
       !pipeline_shardings_option(shardings, &lo.ignore_shardings, why))) {
    proto_fail(f, E_PARAMS, "%s", diag_text(why));
    return NULL;
  }
  if (!load_hw(pr, hw_name ? hw_name : "cpu2", &ep.hw, f))
    return NULL;
  g_autofree char *text = NULL;
  gsize len = 0;
  if (path && !read_allowed(pr, path, &text, &len, f))
    return NULL;
  g_autoptr(Diag) errors = diag_new(NULL);
  g_auto(Program) prog = {0};
  if (!pipeline_open_text(path ? path : "(program)", path ? text : program,
                          path ? len : strlen(program), &lo, &prog, errors)) {
    proto_fail(f, E_PROGRAM, "%s", diag_text(errors));
    return NULL;
  }
  ep.mesh = prog.mesh; /* the file's, when it names one */
  Entry *e = g_new0(Entry, 1);
  e->state = state_ref(sharded ? pipeline_program_state(&prog) : prog.initial);
  if (sharded)
    e->trace = steps_trace(prog.steps);
  e->ep = g_memdup2(&ep, sizeof ep);
  g_autofree char *mesh = mesh_to_string(&ep.mesh);
  e->ep->memo = g_hash_table_lookup(pr->memos, mesh);
  if (!e->ep->memo) {
    e->ep->memo = g_hash_table_new_full(term_legal_hash, term_legal_equal,
                                        (GDestroyNotify)term_legal_free, NULL);
    g_hash_table_insert(pr->memos, g_strdup(mesh), e->ep->memo);
  }
  e->ep->lowered = g_hash_table_lookup(pr->lowered, mesh);
  if (!e->ep->lowered) {
    e->ep->lowered = spmd_memo_new(pr->rs, &ep.mesh);
    g_hash_table_insert(pr->lowered, g_steal_pointer(&mesh), e->ep->lowered);
  }
  g_ptr_array_add(pr->episodes, e->ep);
  e->ep->root_time = entry_cost(pr, e) ? e->cost.total_time : NAN;
  return e;
}

static J *reward_json(Proto *pr, Entry *parent, Entry *child) {
  if (!entry_cost(pr, parent) || !entry_cost(pr, child))
    return NULL;
  double delta = parent->cost.total_time - child->cost.total_time;
  double root = parent->ep->root_time;
  J *o = cJSON_CreateObject();
  proto_put(o, "delta", cJSON_CreateNumber(delta));
  proto_put(o, "normalized",
            cJSON_CreateNumber(isfinite(root) && root > 0 ? delta / root : 0));
  return o;
}

/* Runs one action of a step on 's', a state of entry 'e' (the entry's
 * own, or one a step's earlier actions made): 'n' is a command string or
 * an index into the state's legal actions ('index' when 'n' is NULL, as
 * expand gives them).  The new state with the command appended to
 * 'trace', or NULL after proto_fail.  A command that names an axis the
 * mesh lacks is illegal: commands take any axis name, but a state bound
 * to an axis the episode's mesh lacks could never be lowered or costed. */
static State *step_one(Proto *pr, Entry *e, State *s, J *n, gint64 index,
                       GString *trace, GString *choices, Fail *f) {
  g_autoptr(Diag) why = diag_new(NULL);
  gsize start = trace->len;
  if (trace->len)
    g_string_append(trace, "; ");
  if (n && cJSON_IsString(n)) {
    const char *text = n->valuestring;
    g_autofree char *axis = rw_script_axis_off_mesh(text, &e->ep->mesh);
    if (axis) {
      g_autofree char *mesh = mesh_to_string(&e->ep->mesh);
      proto_fail(f, E_ACTION, "'%s': axis '%s' is not an axis of the mesh (%s)",
                 text, axis, *mesh ? mesh : "no axes");
      return NULL;
    }
    State *next = run_action(pr, &e->ep->hw, s, text, choices, why);
    if (!next)
      proto_fail(f, E_ACTION, "%s", diag_text(why));
    g_string_append(trace, text);
    return next;
  }
  if (n && !proto_is_int(n)) {
    proto_fail(f, E_PARAMS, "an action is a command string or an index");
    return NULL;
  }
  if (n)
    index = (gint64)n->valuedouble;
  /* the entry's list is kept; a state between two actions of one step
   * has no entry, and its list is made for this action alone */
  ActionList *own = s == e->state ? NULL : list_actions(pr, e->ep, s, NULL);
  ActionList *l = own ? own : entry_actions(pr, e);
  State *next = NULL;
  if (index < 0 || index >= (gint64)l->nitems) {
    proto_fail(f, E_ACTION,
               "no legal action %" G_GINT64_FORMAT " (there are %u)", index,
               l->nitems);
  } else {
    const Legal *a = &l->items[index];
    legal_text(trace, s, l, a);
    next = run_legal(pr, &e->ep->hw, s, l, a,
                     trace->str + start + (start ? 2 : 0), why);
    if (!next)
      proto_fail(f, E_ACTION, "%s", diag_text(why));
  }
  action_list_free(own);
  if (!next)
    g_string_truncate(trace, start);
  return next;
}

/* Applies the actions (a JSON array, or the one legal action 'index') to
 * entry 'e'; the new entry, or NULL after proto_fail. */
static Entry *do_step(Proto *pr, Entry *e, J *actions, gint64 index,
                      gboolean *no_effect, GString *choices, Fail *f) {
  State *s = state_ref(e->state);
  g_autoptr(GString) trace = g_string_new(NULL);
  J *item = actions ? actions->child : NULL;
  gint64 taken = 0;
  for (gboolean first = TRUE; actions ? item != NULL : first;
       first = FALSE, item = item ? item->next : NULL, taken++) {
    State *next = step_one(pr, e, s, item, index, trace, choices, f);
    state_unref(s);
    if (!next)
      return NULL;
    s = next;
  }
  *no_effect = s->func.body == e->state->func.body;
  Entry *c = g_new0(Entry, 1);
  c->state = s;
  c->trace = g_malloc(sizeof(Trace) + trace->len + 1);
  c->trace->refcount = 1;
  c->trace->up = e->trace;
  memcpy(c->trace->action, trace->str, trace->len + 1);
  if (e->trace)
    e->trace->refcount++;
  c->ep = e->ep;
  c->steps = e->steps + taken;
  return c;
}

/* A step's reply: {"state", "hash", "observation", "reward",
 * "terminated", "truncated", "no_effect"}, after "index" and "action"
 * for a child of expand (index >= 0), and "choices" (the lines of what
 * 'propagate --resolve' chose) when 'choices' has any.  This is the hot path of
 * search agents, so it is written as text around what cJSON writes (the
 * observation, the reward, the action string): the other fields are
 * integers, booleans and hex digits.  A JSON object per reply cost as
 * much as a small step. */
static J *step_json(Proto *pr, Entry *parent, Entry *c, gint64 cid,
                    gint64 index, const char *action,
                    const char *const *observe, gboolean reward,
                    gboolean no_effect, const GString *choices, Fail *f) {
  J *obs = observe ? observation_json(pr, c, observe, f) : NULL;
  if (observe && !obs)
    return NULL;
  char hash[17];
  state_hash_hex(c->state, hash);
  GString *t = g_string_sized_new(192);
  g_string_append_c(t, '{');
  if (index >= 0) {
    g_string_append_printf(t,
                           "\"index\":%" G_GINT64_FORMAT ",\"action\":", index);
    proto_append_json(t, cJSON_CreateString(action));
    g_string_append_c(t, ',');
  }
  char head[96];
  int n = g_snprintf(head, sizeof head,
                     "\"state\":%" G_GINT64_FORMAT ",\"hash\":\"%s\","
                     "\"observation\":",
                     cid, hash);
  g_string_append_len(t, head, n);
  if (obs)
    proto_append_json(t, obs);
  else
    g_string_append(t, "{}");
  if (reward) {
    g_string_append(t, ",\"reward\":");
    proto_append_json(t, reward_json(pr, parent, c));
  }
  g_string_append(t, any_legal_action(pr, c) ? ",\"terminated\":false"
                                             : ",\"terminated\":true");
  gboolean truncated = c->ep->max_steps > 0 && c->steps >= c->ep->max_steps;
  g_string_append(t,
                  truncated ? ",\"truncated\":true" : ",\"truncated\":false");
  g_string_append(t,
                  no_effect ? ",\"no_effect\":true" : ",\"no_effect\":false");
  if (choices && choices->len) {
    J *lines = cJSON_CreateArray();
    g_auto(GStrv) split = g_strsplit(choices->str, "\n", -1);
    for (char **l = split; *l; l++)
      if (**l)
        cJSON_AddItemToArray(lines, cJSON_CreateString(*l));
    g_string_append(t, ",\"choices\":");
    proto_append_json(t, lines);
  }
  g_string_append_c(t, '}');
  return proto_raw_json(t);
}

static J *string_array(const char *const *xs) {
  J *a = cJSON_CreateArray();
  for (; *xs; xs++)
    cJSON_AddItemToArray(a, cJSON_CreateString(*xs));
  return a;
}

static J *m_initialize(Proto *pr, J *p, Fail *f) {
  J *o = cJSON_CreateObject();
  proto_put(o, "protocol", cJSON_CreateString(PROTOCOL_VERSION));
  proto_put(o, "engine", cJSON_CreateString(partir_version()));
  J *rules = cJSON_CreateArray();
  for (guint i = 0; i < pr->rs->files->len; i++) {
    const char *path = g_ptr_array_index(pr->rs->files, i);
    g_autofree char *text = NULL;
    gsize len = 0;
    partir_read_file(path, PARTIR_MAX_INPUT_BYTES, &text, &len, NULL);
    g_autofree char *sum = g_compute_checksum_for_data(
        G_CHECKSUM_SHA256, (const guchar *)(text ? text : ""), len);
    J *r = cJSON_CreateObject();
    proto_put(r, "path", cJSON_CreateString(path));
    proto_put(r, "sha256", cJSON_CreateString(sum));
    cJSON_AddItemToArray(rules, r);
  }
  proto_put(o, "rules", rules);
  proto_put(o, "cost_model",
            cJSON_CreateString("per-device FLOPs, peak bytes, ring "
                               "collectives; time = compute + communication "
                               "(docs/cost.md)"));
  proto_put(
      o, "observations",
      string_array((const char *const[]){"program", "cost", "features", "graph",
                                         "legal", "measured", NULL}));
  proto_put(o, "rewards",
            string_array((const char *const[]){"delta", "normalized", NULL}));
  J *caps = cJSON_CreateObject();
  for (const char *const *c =
           (const char *const[]){"step", "expand", "trace", "replay", "drop",
                                 "stats", "search", NULL};
       *c; c++)
    proto_put(caps, *c, cJSON_CreateBool(TRUE));
  proto_put(o, "capabilities", caps);
  return o;
}

static J *m_reset(Proto *pr, J *p, Fail *f) {
  Entry *e = new_root(pr, p, TRUE, f);
  if (!e)
    return NULL;
  gint64 id = add_entry(pr, e);
  J *obs = observation_json(pr, e,
                            (const char *const[]){"program", "cost", NULL}, f);
  char hash[17];
  state_hash_hex(e->state, hash);
  J *o = cJSON_CreateObject();
  proto_put(o, "state", proto_jint(id));
  proto_put(o, "hash", cJSON_CreateString(hash));
  proto_put(o, "observation", obs);
  return o;
}

/* The legal actions, each with its index in the whole list (the one a
 * step's index names; a filter or a limit does not renumber them), the
 * number listed and the number there are.  Written as text: a list can
 * hold thousands of actions. */
static J *m_actions(Proto *pr, J *p, Fail *f) {
  gint64 limit = -1;
  const char *filter;
  Entry *e = get_state(pr, p, f);
  if (!e || !proto_get_int(p, "limit", FALSE, &limit, f) ||
      !proto_get_string(p, "filter", FALSE, &filter, f))
    return NULL;
  if (cJSON_GetObjectItemCaseSensitive(p, "limit") && limit < 0) {
    proto_fail(f, E_PARAMS, "'limit' is a count: 0 or more");
    return NULL;
  }
  ActionList *l = entry_actions(pr, e);
  gsize listed = limit >= 0 ? MIN((gsize)limit, l->nitems) : l->nitems;
  GString *t = g_string_sized_new(64 + 128 * listed);
  g_autoptr(GString) text = g_string_new(NULL);
  g_string_append(t, "{\"actions\":[");
  gint64 count = 0;
  for (guint i = 0; i < l->nitems && (limit < 0 || count < limit); i++) {
    const Legal *a = &l->items[i];
    g_string_truncate(text, 0);
    legal_text(text, e->state, l, a);
    if (filter && !strstr(text->str, filter))
      continue;
    if (count++)
      g_string_append_c(t, ',');
    legal_json(t, e->state, l, i, a, text->str);
  }
  g_string_append_printf(t, "],\"count\":%" G_GINT64_FORMAT ",\"total\":%u}",
                         count, l->nitems);
  return proto_raw_json(t);
}

static J *m_step(Proto *pr, J *p, Fail *f) {
  J *actions, *observe;
  gboolean reward = TRUE, no_effect = FALSE;
  Entry *e = get_state(pr, p, f);
  if (!e || !proto_get_array(p, "actions", &actions, f) ||
      !proto_get_array(p, "observe", &observe, f) ||
      !proto_get_bool(p, "reward", &reward, f))
    return NULL;
  if (!actions) {
    proto_fail(f, E_PARAMS, "missing parameter 'actions'");
    return NULL;
  }
  g_autoptr(GString) choices = g_string_new(NULL);
  Entry *c = do_step(pr, e, actions, -1, &no_effect, choices, f);
  if (!c)
    return NULL;
  g_autofree const char **names = observe_names(observe);
  return step_json(pr, e, c, add_entry(pr, c), -1, NULL, names, reward,
                   no_effect, choices, f);
}

static J *m_expand(Proto *pr, J *p, Fail *f) {
  J *observe;
  gboolean reward = TRUE;
  Entry *e = get_state(pr, p, f);
  if (!e || !proto_get_array(p, "observe", &observe, f) ||
      !proto_get_bool(p, "reward", &reward, f))
    return NULL;
  g_autofree const char **names = observe_names(observe);
  guint count = entry_actions(pr, e)->nitems;
  J *children = cJSON_CreateArray();
  g_autoptr(GString) text = g_string_new(NULL);
  for (guint i = 0; i < count; i++) {
    /* listed again if a child's listing pushed it out of the cache */
    ActionList *l = entry_actions(pr, e);
    g_string_truncate(text, 0);
    legal_text(text, e->state, l, &l->items[i]);
    Fail cf = {0, g_string_new(NULL)};
    gboolean no_effect = FALSE;
    Entry *c = do_step(pr, e, NULL, i, &no_effect, NULL, &cf);
    J *o = NULL;
    if (c) {
      o = step_json(pr, e, c, add_entry(pr, c), i, text->str, names, reward,
                    no_effect, NULL, &cf);
    } else {
      o = cJSON_CreateObject();
      proto_put(o, "index", proto_jint(i));
      proto_put(o, "action", cJSON_CreateString(text->str));
      J *err = cJSON_CreateObject();
      proto_put(err, "code", proto_jint(cf.code));
      proto_put(err, "message", cJSON_CreateString(cf.message->str));
      proto_put(o, "error", err);
    }
    if (!o) { /* a bad 'observe' fails the call, not one child */
      f->code = cf.code;
      g_string_assign(f->message, cf.message->str);
      g_string_free(cf.message, TRUE);
      cJSON_Delete(children);
      return NULL;
    }
    cJSON_AddItemToArray(children, o);
    g_string_free(cf.message, TRUE);
  }
  J *o = cJSON_CreateObject();
  proto_put(o, "children", children);
  return o;
}

static J *m_observe(Proto *pr, J *p, Fail *f) {
  J *what;
  Entry *e = get_state(pr, p, f);
  if (!e || !proto_get_array(p, "what", &what, f))
    return NULL;
  if (!what) {
    proto_fail(f, E_PARAMS, "missing parameter 'what'");
    return NULL;
  }
  g_autofree const char **names = observe_names(what);
  return observation_json(pr, e, names, f);
}

static J *m_trace(Proto *pr, J *p, Fail *f) {
  Entry *e = get_state(pr, p, f);
  if (!e)
    return NULL;
  g_autoptr(GPtrArray) steps = g_ptr_array_new();
  for (const Trace *t = e->trace; t; t = t->up)
    g_ptr_array_add(steps, (gpointer)t->action);
  J *list = cJSON_CreateArray();
  for (guint i = steps->len; i > 0; i--)
    cJSON_AddItemToArray(list,
                         cJSON_CreateString(g_ptr_array_index(steps, i - 1)));
  J *o = cJSON_CreateObject();
  proto_put(o, "actions", list);
  return o;
}

static J *m_replay(Proto *pr, J *p, Fail *f) {
  J *trace;
  if (!proto_get_array(p, "trace", &trace, f))
    return NULL;
  if (!trace) {
    proto_fail(f, E_PARAMS, "missing parameter 'trace'");
    return NULL;
  }
  Entry *root = new_root(pr, p, FALSE, f);
  if (!root)
    return NULL;
  add_entry(pr, root);
  gboolean no_effect;
  g_autoptr(GString) choices = g_string_new(NULL);
  Entry *c = do_step(pr, root, trace, -1, &no_effect, choices, f);
  if (!c)
    return NULL;
  return step_json(pr, root, c, add_entry(pr, c), -1, NULL, NULL, TRUE,
                   no_effect, choices, f);
}

static J *m_drop(Proto *pr, J *p, Fail *f) {
  J *states;
  if (!proto_get_array(p, "states", &states, f))
    return NULL;
  if (!states) {
    proto_fail(f, E_PARAMS, "missing parameter 'states'");
    return NULL;
  }
  const J *x;
  cJSON_ArrayForEach(x, states) if (!proto_is_int(x)) {
    proto_fail(f, E_PARAMS, "'states' must be integers");
    return NULL;
  }
  int dropped = 0;
  cJSON_ArrayForEach(x, states) {
    gint64 id = (gint64)x->valuedouble;
    dropped += g_hash_table_remove(pr->entries, &id);
  }
  J *o = cJSON_CreateObject();
  proto_put(o, "dropped", proto_jint(dropped));
  return o;
}

/* The names of array parameter 'key' (strings; at most 64), NULL-ended,
 * borrowed from the request, into 'out'; '*set' when it was given.
 * FALSE after proto_fail. */
static gboolean get_names(J *p, const char *key, const char **out,
                          const char *const **set, Fail *f) {
  J *a;
  if (!proto_get_array(p, key, &a, f))
    return FALSE;
  int n = 0;
  for (J *item = a ? a->child : NULL; item; item = item->next) {
    if (!cJSON_IsString(item) || n == 64)
      return proto_fail(f, E_PARAMS,
                        "parameter '%s' must be an array of at most 64 names",
                        key);
    out[n++] = item->valuestring;
  }
  out[n] = NULL;
  if (a)
    *set = out;
  return TRUE;
}

/* search: the built-in search (docs/search.md) from a state, on its
 * episode's mesh and hardware, within 'time' seconds (and 'budget'
 * states); the best state found is a new id, its reply a step's, with
 * what the search did. */
static J *m_search(Proto *pr, J *p, Fail *f) {
  const char *algo = NULL, *inputs[65], *axes[65];
  gint64 budget = 0, seed = 1, width = 0;
  SearchOptions so = {0};
  J *observe, *time = cJSON_GetObjectItemCaseSensitive(p, "time");
  Entry *e = get_state(pr, p, f);
  if (!e || !proto_get_string(p, "algo", FALSE, &algo, f) ||
      !proto_get_int(p, "budget", FALSE, &budget, f) ||
      !proto_get_int(p, "seed", FALSE, &seed, f) ||
      !proto_get_int(p, "width", FALSE, &width, f) ||
      !proto_get_array(p, "observe", &observe, f) ||
      !get_names(p, "inputs", inputs, &so.inputs, f) ||
      !get_names(p, "batch_axes", axes, &so.batch_axes, f))
    return NULL;
  if (!cJSON_IsNumber(time) || !(time->valuedouble > 0) ||
      time->valuedouble > 3600) {
    proto_fail(f, E_PARAMS,
               "parameter 'time' (seconds) must be a number above 0 and at "
               "most 3600");
    return NULL;
  }
  if (algo && !search_algo_parse(algo, &so.algo)) {
    proto_fail(f, E_PARAMS, "parameter 'algo' must be \"mcts\" or \"beam\"");
    return NULL;
  }
  if (budget < 0 || width < 0 || width > 1000) {
    proto_fail(f, E_PARAMS,
               "parameters 'budget' and 'width' must be "
               "positive ('width' at most 1000)");
    return NULL;
  }
  so.seconds = time->valuedouble;
  so.budget = budget;
  so.seed = (guint64)seed;
  so.beam_width = (int)width;
  g_auto(SearchResult) r = {0};
  g_autoptr(Diag) why = diag_new(NULL);
  if (!search_run(pr->rs, e->state, &e->ep->mesh, &e->ep->hw, &so, &r, why)) {
    proto_fail(f, E_PARAMS, "search: %s", diag_text(why));
    return NULL;
  }
  /* the best state is a step from 'e': each action of the trace one
   * step of its own in 'trace' */
  Entry *c = g_new0(Entry, 1);
  c->state = state_ref(r.best);
  c->trace = e->trace;
  if (e->trace)
    e->trace->refcount++;
  for (guint i = 0; i < r.trace->len; i++) {
    const char *action = r.trace->pdata[i];
    Trace *t = g_malloc(sizeof(Trace) + strlen(action) + 1);
    t->refcount = 1;
    t->up = c->trace;
    strcpy(t->action, action);
    c->trace = t;
  }
  c->ep = e->ep;
  c->steps = e->steps + r.trace->len;
  gint64 id = add_entry(pr, c);
  g_autofree const char **names = observe_names(observe);
  J *step = step_json(pr, e, c, id, -1, NULL, names, TRUE,
                      c->state->func.body == e->state->func.body, NULL, f);
  if (!step)
    return NULL;
  J *info = cJSON_CreateObject();
  proto_put(info, "algo", cJSON_CreateString(search_algo_name(so.algo)));
  proto_put(info, "explored", proto_jint(r.explored));
  proto_put(info, "transpositions", proto_jint(r.transpositions));
  proto_put(info, "groups", proto_jint(r.groups->len));
  proto_put(info, "interrupted", cJSON_CreateBool(r.interrupted));
  J *actions = cJSON_CreateArray();
  for (guint i = 0; i < r.trace->len; i++)
    cJSON_AddItemToArray(actions, cJSON_CreateString(r.trace->pdata[i]));
  proto_put(info, "actions", actions);
  /* the step's text, with "search" before its closing brace */
  GString *t = g_string_new(step->valuestring);
  cJSON_Delete(step);
  g_string_truncate(t, t->len - 1);
  g_string_append(t, ",\"search\":");
  proto_append_json(t, info);
  g_string_append_c(t, '}');
  return proto_raw_json(t);
}

static J *m_stats(Proto *pr, J *p, Fail *f) {
  gboolean now = FALSE;
  if (!proto_get_bool(p, "collect", &now, f))
    return NULL;
  if (now)
    collect_now();
  J *o = cJSON_CreateObject();
  proto_put(o, "states", proto_jint(g_hash_table_size(pr->entries)));
  proto_put(o, "terms", proto_jint((gint64)term_store_size()));
  proto_put(o, "term_bytes", proto_jint((gint64)term_store_bytes()));
  proto_put(o, "collected",
            proto_jint((gint64)(collect_freed() - pr->collected0)));
  return o;
}

static J *m_shutdown(Proto *pr, J *p, Fail *f) {
  pr->quit = TRUE;
  return cJSON_CreateObject();
}

static const struct {
  const char *name;
  J *(*run)(Proto *, J *, Fail *);
} methods[] = {
    {"initialize", m_initialize},
    {"reset", m_reset},
    {"actions", m_actions},
    {"step", m_step},
    {"expand", m_expand},
    {"observe", m_observe},
    {"trace", m_trace},
    {"replay", m_replay},
    {"drop", m_drop},
    {"stats", m_stats},
    {"search", m_search},
    {"shutdown", m_shutdown},
};

/* ------------------------------------------------------------- the loop */

/* Replies collect in 'out' and go out when no further request is
 * already waiting, so a client that pipelines requests is not answered
 * one write at a time. */
typedef struct Io {
  GString *out;
} Io;

static void flush_out(Io *io) {
  fwrite(io->out->str, 1, io->out->len, stdout);
  fflush(stdout);
  g_string_truncate(io->out, 0);
}

/* {"jsonrpc":"2.0","id":ID,KEY:VALUE} and a newline; takes 'value' */
static void reply(Io *io, J *id, const char *key, J *value) {
  g_string_append(io->out, "{\"jsonrpc\":\"2.0\",\"id\":");
  proto_write_json(io->out, id);
  g_string_append(io->out, ",\"");
  g_string_append(io->out, key);
  g_string_append(io->out, "\":");
  proto_append_json(io->out, value);
  g_string_append(io->out, "}\n");
}

static void reply_error(Io *io, J *id, int code, const char *message) {
  J *e = cJSON_CreateObject();
  proto_put(e, "code", proto_jint(code));
  proto_put(e, "message", cJSON_CreateString(message));
  reply(io, id, "error", e);
}

/* Whether the request object gives "id" more than once. */
static gboolean id_twice(const J *req) {
  int n = 0;
  for (const J *m = req->child; m; m = m->next)
    n += strcmp(m->string, "id") == 0;
  return n > 1;
}

/* Answers one request line.  A request that is not a valid JSON-RPC 2.0
 * request gets an error reply (with a null id when its id cannot be
 * told); a valid one without "id" is a notification: it runs, and gets
 * no reply whatever its outcome. */
static void handle(Proto *pr, Io *io, const char *line, gsize len) {
  g_autoptr(Diag) why = diag_new(NULL);
  J *req = proto_request_parse(line, len, why);
  if (!req) {
    reply_error(io, NULL, E_PARSE, diag_text(why));
    return;
  }
  J *id = proto_member(req, "id");
  J *version = proto_member(req, "jsonrpc");
  J *m = proto_member(req, "method");
  J *params = proto_member(req, "params");
  const char *twice = NULL;
  if (!cJSON_IsObject(req))
    reply_error(io, NULL, E_REQUEST, "a request is a JSON object");
  else if (id && !(cJSON_IsNumber(id) && isfinite(id->valuedouble)) &&
           !cJSON_IsString(id) && !cJSON_IsNull(id))
    reply_error(io, NULL, E_REQUEST, "'id' must be a number or a string");
  else if ((twice = proto_duplicate_key(req))) {
    g_autofree char *msg =
        g_strdup_printf("the key '%s' is given twice in one object", twice);
    reply_error(io, id_twice(req) ? NULL : id, E_REQUEST, msg);
  } else if (!cJSON_IsString(version) ||
             strcmp(version->valuestring, "2.0") != 0)
    reply_error(io, id, E_REQUEST, "'jsonrpc' must be \"2.0\"");
  else if (!cJSON_IsString(m))
    reply_error(io, id, E_REQUEST, "a request needs a 'method' string");
  else if (params && !cJSON_IsObject(params)) {
    if (id)
      reply_error(io, id, E_PARAMS, "'params' must be an object");
  } else {
    const char *name = m->valuestring;
    gsize i = 0;
    while (i < G_N_ELEMENTS(methods) && strcmp(name, methods[i].name) != 0)
      i++;
    if (i == G_N_ELEMENTS(methods)) {
      g_autofree char *msg = g_strdup_printf("unknown method '%s'", name);
      if (id)
        reply_error(io, id, E_METHOD, msg);
    } else {
      Fail f = {0, g_string_new(NULL)};
      partir_interrupt = 0;
      J *result = methods[i].run(pr, params, &f);
      if (!id)
        cJSON_Delete(result);
      else if (result)
        reply(io, id, "result", result);
      else
        reply_error(io, id, f.code ? f.code : E_PARAMS, f.message->str);
      g_string_free(f.message, TRUE);
    }
  }
  cJSON_Delete(req);
}

int proto_run(RuleSet *rs, char **allowed, FILE *in) {
  /* what loading the rules left behind goes now: 'stats' counts from here */
  collect_now();
  Proto pr = {.rs = rs, .allowed = allowed, .collected0 = collect_freed()};
  pr.entries = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL,
                                     (GDestroyNotify)entry_free);
  pr.episodes = g_ptr_array_new_with_free_func((GDestroyNotify)episode_free);
  pr.memos = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                   (GDestroyNotify)g_hash_table_unref);
  pr.lowered = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                     (GDestroyNotify)spmd_memo_free);
  pr.pending = g_hash_table_new(NULL, NULL);
  pr.listed = g_queue_new();
  Io io = {g_string_new(NULL)};
  Reader r = {.fd = fileno(in), .cap = 65536 + 1};
  r.buf = g_malloc(r.cap); /* never NULL: memchr and memmove read it */
  char *line;
  gsize n;
  gboolean too_long;
  while (!pr.quit && (line = proto_reader_next_line(&r, &n, &too_long))) {
    if (too_long)
      reply_error(&io, NULL, E_REQUEST, "request line longer than 16 MiB");
    while (n > 0 && line[n - 1] == '\r')
      line[--n] = '\0';
    if (n > 0)
      handle(&pr, &io, line, n);
    collect_maybe(); /* a safe point: only entries hold terms */
    memos_trim(&pr);
    if (io.out->len > 0 &&
        (!proto_reader_line_waiting(&r) || io.out->len > (1u << 20)))
      flush_out(&io);
  }
  flush_out(&io);
  g_free(r.buf);
  g_string_free(io.out, TRUE);
  g_hash_table_unref(pr.entries);
  g_ptr_array_unref(pr.episodes);
  g_hash_table_unref(pr.memos);
  g_hash_table_unref(pr.lowered);
  g_hash_table_unref(pr.pending);
  g_queue_free(pr.listed);
  return 0;
}
