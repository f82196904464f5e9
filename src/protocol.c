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
 * function of the requests alone, so equal requests give equal bytes.
 *
 * Bad input never ends the process or changes a state: every failure is
 * an error reply.  No Lua runs here, and programs are read only from the
 * directories named with --allow (or given inline).
 *
 * Error codes: -32700 malformed JSON, -32600 not a request, -32601
 * unknown method, -32602 bad parameters, 1 unknown state, 2 illegal
 * action, 3 bad program, 4 file not allowed, 5 lowering or costing
 * failed.
 */
#include "cost.h"
#include "rule.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#define PROTOCOL_VERSION "partir-agent/1"
#define MAX_LINE ((gsize)16 << 20)

enum {
  E_PARSE = -32700,
  E_REQUEST = -32600,
  E_METHOD = -32601,
  E_PARAMS = -32602,
  E_STATE = 1,
  E_ACTION = 2,
  E_PROGRAM = 3,
  E_FILE = 4,
  E_COST = 5,
};

typedef struct Episode {
  Mesh mesh;
  Hardware hw;
  double root_time; /* NAN when the root cannot be costed */
} Episode;

typedef struct Entry {
  State *state;
  gint64 parent; /* 0: a root */
  char *action;  /* what made it from the parent */
  Episode *ep;
  gboolean costed;
  gboolean cost_ok;
  CostReport cost;
} Entry;

typedef struct Proto {
  RuleSet *rs;
  GHashTable *entries; /* gint64* id -> Entry* */
  gint64 next_id;
  char **allowed;
  GPtrArray *episodes;
  gboolean quit;
} Proto;

typedef struct Fail {
  int code;
  GString *message;
} Fail;

static gboolean failf(Fail *f, int code, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);
static gboolean failf(Fail *f, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  f->code = code;
  g_string_vprintf(f->message, fmt, ap);
  va_end(ap);
  return FALSE;
}

static void entry_free(Entry *e) {
  state_unref(e->state);
  g_free(e->action);
  cost_report_clear(&e->cost);
  g_free(e);
}

/* ------------------------------------------------------------ params */

static JsonObject *params_of(JsonObject *req) {
  JsonNode *p = json_object_get_member(req, "params");
  return p && JSON_NODE_HOLDS_OBJECT(p) ? json_node_get_object(p) : NULL;
}

static gboolean get_string(JsonObject *p, const char *key, gboolean required,
                           const char **out, Fail *f) {
  JsonNode *n = p ? json_object_get_member(p, key) : NULL;
  *out = NULL;
  if (!n)
    return !required || failf(f, E_PARAMS, "missing parameter '%s'", key);
  if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING)
    return failf(f, E_PARAMS, "parameter '%s' must be a string", key);
  *out = json_node_get_string(n);
  return TRUE;
}

static gboolean get_int(JsonObject *p, const char *key, gboolean required,
                        gint64 *out, Fail *f) {
  JsonNode *n = p ? json_object_get_member(p, key) : NULL;
  if (!n)
    return !required || failf(f, E_PARAMS, "missing parameter '%s'", key);
  if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_INT64)
    return failf(f, E_PARAMS, "parameter '%s' must be an integer", key);
  *out = json_node_get_int(n);
  return TRUE;
}

static gboolean get_bool(JsonObject *p, const char *key, gboolean *out,
                         Fail *f) {
  JsonNode *n = p ? json_object_get_member(p, key) : NULL;
  if (!n)
    return TRUE;
  if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_BOOLEAN)
    return failf(f, E_PARAMS, "parameter '%s' must be true or false", key);
  *out = json_node_get_boolean(n);
  return TRUE;
}

/* An optional array parameter (NULL when absent). */
static gboolean get_array(JsonObject *p, const char *key, JsonArray **out,
                          Fail *f) {
  JsonNode *n = p ? json_object_get_member(p, key) : NULL;
  *out = NULL;
  if (!n)
    return TRUE;
  if (!JSON_NODE_HOLDS_ARRAY(n))
    return failf(f, E_PARAMS, "parameter '%s' must be an array", key);
  *out = json_node_get_array(n);
  return TRUE;
}

static Entry *get_state(Proto *pr, JsonObject *p, gint64 *id, Fail *f) {
  if (!get_int(p, "state", TRUE, id, f))
    return NULL;
  Entry *e = g_hash_table_lookup(pr->entries, id);
  if (!e)
    failf(f, E_STATE, "no state %" G_GINT64_FORMAT " (never made, or dropped)",
          *id);
  return e;
}

static gint64 add_entry(Proto *pr, Entry *e) {
  gint64 *key = g_new(gint64, 1);
  *key = ++pr->next_id;
  g_hash_table_insert(pr->entries, key, e);
  return *key;
}

/* ------------------------------------------------------------ costing */

/* The entry's cost on its episode's mesh and hardware (cached). */
static gboolean entry_cost(Proto *pr, Entry *e, Fail *f) {
  if (!e->costed) {
    e->costed = TRUE;
    g_autoptr(GString) why = g_string_new(NULL);
    Func *spmd = spmd_lower(pr->rs, &e->state->func, &e->ep->mesh, why);
    GError *error = NULL;
    g_autoptr(Module) empty = module_new();
    e->cost_ok = spmd && cost_estimate_module(empty, spmd, &e->ep->hw,
                                              &e->cost, &error);
    if (!spmd)
      g_string_prepend(why, "cannot lower: ");
    else if (!e->cost_ok) {
      g_string_assign(why, error->message);
      g_error_free(error);
    }
    func_free(spmd);
    if (!e->cost_ok)
      g_string_assign(f->message, why->str);
  }
  if (!e->cost_ok && f->message->len == 0)
    g_string_assign(f->message, "this state cannot be lowered or costed");
  if (!e->cost_ok)
    f->code = E_COST;
  return e->cost_ok;
}

/* ------------------------------------------------------------ actions */

typedef struct Action {
  char *text; /* the REPL command */
  char *rule;
  char *location;
  gint64 w;
  const char *axis;
  const Term *placed; /* where the rule applies (not for propagate) */
  int dim;            /* arg-tile's dimension */
} Action;

static void action_free(gpointer p) {
  Action *a = p;
  g_free(a->text);
  g_free(a->rule);
  g_free(a->location);
  g_free(a);
}

static Action *add_candidate(GPtrArray *out, char *text, const char *rule,
                             const char *loc, gint64 w, const char *axis) {
  Action *a = g_new0(Action, 1);
  a->text = text;
  a->rule = g_strdup(rule);
  a->location = g_strdup(loc);
  a->w = w;
  a->axis = axis;
  g_ptr_array_add(out, a);
  return a;
}

/* Every candidate action, in a stable order: split each argument's
 * dimensions over each mesh axis that divides them, tile or split each
 * operator's result or reduction over each such axis, propagate. */
static GPtrArray *candidates(Proto *pr, const Entry *e, gboolean args_only) {
  GPtrArray *out = g_ptr_array_new_with_free_func(action_free);
  const Mesh *mesh = &e->ep->mesh;
  const Func *f = &e->state->func;
  for (int i = 0; i < f->nargs; i++)
    for (int d = 0; d < f->arg_types[i]->rank; d++)
      for (int k = 0; k < mesh->naxes; k++) {
        int64_t n = f->arg_types[i]->dims[d], size = mesh->sizes[k];
        if (n % size != 0 || n / size < 1)
          continue;
        Action *a = add_candidate(
            out,
            g_strdup_printf("arg-tile %%%s %d %" G_GINT64_FORMAT " %s",
                            f->arg_names[i], d, n / size, mesh->names[k]),
            "arg-tile", f->arg_names[i], n / size, mesh->names[k]);
        a->placed = term_arg(i, f->arg_types[i]);
        a->dim = d;
      }
  if (args_only)
    return out;
  g_autoptr(GPtrArray) locs = state_locations(e->state);
  for (guint l = 0; l < locs->len; l++) {
    const Location *loc = g_ptr_array_index(locs, l);
    TileSpec spec;
    if (loc->term->kind != TM_OP || !spec_of(pr->rs, loc->term, &spec))
      continue;
    const char *opn = op_name(loc->term->op);
    for (int kind = 0; kind < 2; kind++) {
      int count = kind == 0 ? spec.nout : spec.nred;
      for (int d = 0; d < count; d++) {
        int64_t n = -1;
        if (kind == 0 && spec.out_ok[d])
          n = loc->term->type->dims[d];
        for (int a = 0; kind == 1 && a < loc->term->nargs; a++)
          if (spec.red[d][a] >= 0)
            n = loc->term->args[a]->type->dims[spec.red[d][a]];
        if (n < 0)
          continue;
        g_autofree char *rule =
            kind == 0 ? g_strdup_printf("%s-tile-%d", opn, d)
            : d       ? g_strdup_printf("%s-sum-%d", opn, d)
                      : g_strdup_printf("%s-sum", opn);
        for (int k = 0; k < mesh->naxes; k++) {
          int64_t size = mesh->sizes[k];
          if (n % size != 0)
            continue;
          Action *a = add_candidate(
              out,
              g_strdup_printf("apply %s at %%%s w=%" G_GINT64_FORMAT " a=%s",
                              rule, loc->name, n / size, mesh->names[k]),
              rule, loc->name, n / size, mesh->names[k]);
          a->placed = loc->term;
        }
      }
    }
  }
  add_candidate(out, g_strdup("propagate"), "propagate", NULL, 0, NULL);
  return out;
}

/* Runs one action; NULL with the reason when it does not apply. */
static State *run_action(Proto *pr, State *s, const char *text, GString *why) {
  g_autoptr(GString) report = g_string_new(NULL);
  return engine_script(pr->rs, s, text, why, report);
}

static GPtrArray *legal_among(Proto *pr, const Entry *e, GPtrArray *all,
                              const char *filter, gint64 limit);

/* The legal actions: the candidates that apply and change the program. */
static GPtrArray *legal_actions(Proto *pr, const Entry *e, const char *filter,
                                gint64 limit) {
  /* the argument actions come first and need no walk of the program: when
   * one of them is enough (terminated asks for one), stop there */
  if (limit == 1 && !filter) {
    g_autoptr(GPtrArray) first = legal_among(pr, e, candidates(pr, e, TRUE), NULL, 1);
    if (first->len == 1)
      return g_steal_pointer(&first);
  }
  return legal_among(pr, e, candidates(pr, e, FALSE), filter, limit);
}

/* The actions of 'all' (taken) that apply and change the program. */
static GPtrArray *legal_among(Proto *pr, const Entry *e, GPtrArray *all,
                              const char *filter, gint64 limit) {
  GPtrArray *out = g_ptr_array_new_with_free_func(action_free);
  g_autoptr(GString) why = g_string_new(NULL);
  for (guint i = 0; i < all->len && (limit < 0 || out->len < (guint)limit); i++) {
    Action *a = g_ptr_array_index(all, i);
    if (filter && !strstr(a->text, filter))
      continue;
    gboolean changes;
    if (a->placed) {
      /* a rule at one value: it changes the program exactly when it
       * applies there, so there is no need to rebuild the program */
      RuleArg args[3] = {{g_intern_string("w"), FALSE, a->w, NULL},
                         {g_intern_string("a"), TRUE, 0, g_intern_string(a->axis)},
                         {g_intern_string("d"), FALSE, a->dim, NULL}};
      const Rule *r = ruleset_find(pr->rs, a->rule);
      changes = r && rule_apply_here(pr->rs, r, a->placed, args,
                                     strcmp(a->rule, "arg-tile") == 0 ? 3 : 2,
                                     why) != NULL;
    } else {
      State *next = run_action(pr, e->state, a->text, why);
      changes = next && next->func.body != e->state->func.body;
      if (next)
        state_unref(next);
    }
    if (changes) {
      all->pdata[i] = NULL;
      g_ptr_array_add(out, a);
    }
  }
  g_ptr_array_set_free_func(all, NULL);
  for (guint i = 0; i < all->len; i++)
    if (all->pdata[i])
      action_free(all->pdata[i]);
  g_ptr_array_unref(all);
  return out;
}

static void build_action(JsonBuilder *b, guint index, const Action *a) {
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "index");
  json_builder_add_int_value(b, index);
  json_builder_set_member_name(b, "action");
  json_builder_add_string_value(b, a->text);
  json_builder_set_member_name(b, "rule");
  json_builder_add_string_value(b, a->rule);
  json_builder_set_member_name(b, "location");
  if (a->location)
    json_builder_add_string_value(b, a->location);
  else
    json_builder_add_null_value(b);
  json_builder_set_member_name(b, "args");
  json_builder_begin_object(b);
  if (a->axis) {
    json_builder_set_member_name(b, "w");
    json_builder_add_int_value(b, a->w);
    json_builder_set_member_name(b, "axis");
    json_builder_add_string_value(b, a->axis);
  }
  json_builder_end_object(b);
  json_builder_end_object(b);
}

/* -------------------------------------------------------- observations */

/* The program's content hash: the body's and the signature's, without
 * printing (the same in every run; names are not part of it). */
static char *state_hash(const State *s) {
  guint64 h = s->func.body->content;
  for (int i = 0; i < s->func.nargs; i++)
    h = h * G_GUINT64_CONSTANT(1099511628211) ^
        g_str_hash(s->func.arg_names[i]);
  return g_strdup_printf("%016" G_GINT64_MODIFIER "x", h);
}

static void build_cost(JsonBuilder *b, const CostReport *r) {
  json_builder_begin_object(b);
  const struct {
    const char *name;
    double v;
  } fields[] = {{"flops", r->flops},
                {"peak_bytes", (double)r->peak_bytes},
                {"compute_time", r->compute_time},
                {"comm_time", r->comm_time},
                {"total_time", r->total_time}};
  for (gsize i = 0; i < G_N_ELEMENTS(fields); i++) {
    json_builder_set_member_name(b, fields[i].name);
    json_builder_add_double_value(b, fields[i].v);
  }
  double comm_bytes = 0;
  for (guint i = 0; r->comms && i < r->comms->len; i++)
    comm_bytes += (double)g_array_index(r->comms, CostComm, i).bytes;
  json_builder_set_member_name(b, "comm_bytes");
  json_builder_add_double_value(b, comm_bytes);
  json_builder_set_member_name(b, "fits");
  json_builder_add_boolean_value(b, r->fits);
  json_builder_end_object(b);
}

typedef struct GraphCtx {
  JsonBuilder *b;
  GHashTable *ids; /* placed Term -> index+1 */
  GArray *edges;   /* pairs */
  int n;
} GraphCtx;

static void graph_visit(void *ud, const char *name, const Term *t) {
  GraphCtx *g = ud;
  g_hash_table_insert(g->ids, (gpointer)t, GINT_TO_POINTER(++g->n));
  JsonBuilder *b = g->b;
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "id");
  json_builder_add_int_value(b, g->n - 1);
  json_builder_set_member_name(b, "name");
  json_builder_add_string_value(b, name);
  json_builder_set_member_name(b, "kind");
  json_builder_add_string_value(b, t->kind == TM_ARG     ? "arg"
                                   : t->kind == TM_OP    ? op_name(t->op)
                                   : t->kind == TM_SLICE ? "slice"
                                   : t->kind == TM_TILE  ? "tile"
                                                         : "sum");
  json_builder_set_member_name(b, "shape");
  json_builder_begin_array(b);
  for (int i = 0; i < t->type->rank; i++)
    json_builder_add_int_value(b, t->type->dims[i]);
  json_builder_end_array(b);
  if (t->axis) {
    json_builder_set_member_name(b, "axis");
    json_builder_add_string_value(b, t->axis);
  }
  json_builder_end_object(b);
  for (int i = 0; i < t->nargs; i++) {
    int from = GPOINTER_TO_INT(g_hash_table_lookup(g->ids, term_placed(t->args[i])));
    if (from) {
      int pair[2] = {from - 1, g->n - 1};
      g_array_append_vals(g->edges, pair, 2);
    }
  }
}

static gboolean build_observation(Proto *pr, JsonBuilder *b, Entry *e,
                                  JsonArray *what, Fail *f) {
  json_builder_begin_object(b);
  for (guint i = 0; what && i < json_array_get_length(what); i++) {
    JsonNode *n = json_array_get_element(what, i);
    const char *w = JSON_NODE_HOLDS_VALUE(n) &&
                            json_node_get_value_type(n) == G_TYPE_STRING
                        ? json_node_get_string(n)
                        : "";
    if (strcmp(w, "program") == 0) {
      g_autoptr(GString) text = g_string_new(NULL);
      state_print(text, e->state, FALSE);
      json_builder_set_member_name(b, "program");
      json_builder_add_string_value(b, text->str);
    } else if (strcmp(w, "cost") == 0 || strcmp(w, "features") == 0) {
      Fail cf = {0, g_string_new(NULL)};
      gboolean ok = entry_cost(pr, e, &cf);
      json_builder_set_member_name(b, w);
      if (strcmp(w, "cost") == 0) {
        if (ok)
          build_cost(b, &e->cost);
        else
          json_builder_add_null_value(b);
      } else {
        /* features: documented in docs/protocol.md */
        g_autoptr(GPtrArray) locs = state_locations(e->state);
        int tiles = 0, sums = 0;
        for (guint k = 0; k < locs->len; k++) {
          const Term *t = ((Location *)g_ptr_array_index(locs, k))->term;
          tiles += t->kind == TM_TILE;
          sums += t->kind == TM_SUM;
        }
        double comm_bytes = 0;
        for (guint k = 0; ok && e->cost.comms && k < e->cost.comms->len; k++)
          comm_bytes += (double)g_array_index(e->cost.comms, CostComm, k).bytes;
        double v[] = {(double)locs->len, tiles, sums,
                      ok ? e->cost.flops : -1,
                      ok ? (double)e->cost.peak_bytes : -1,
                      ok ? comm_bytes : -1,
                      ok ? e->cost.total_time : -1,
                      ok ? (double)e->cost.fits : -1};
        json_builder_begin_array(b);
        for (gsize k = 0; k < G_N_ELEMENTS(v); k++)
          json_builder_add_double_value(b, v[k]);
        json_builder_end_array(b);
      }
      g_string_free(cf.message, TRUE);
    } else if (strcmp(w, "graph") == 0) {
      json_builder_set_member_name(b, "graph");
      json_builder_begin_object(b);
      json_builder_set_member_name(b, "nodes");
      json_builder_begin_array(b);
      GraphCtx g = {b, g_hash_table_new(NULL, NULL),
                    g_array_new(FALSE, FALSE, sizeof(int)), 0};
      print_walk(e->state->module, &e->state->func, graph_visit, &g);
      json_builder_end_array(b);
      json_builder_set_member_name(b, "edges");
      json_builder_begin_array(b);
      for (guint k = 0; k + 1 < g.edges->len; k += 2) {
        json_builder_begin_array(b);
        json_builder_add_int_value(b, g_array_index(g.edges, int, k));
        json_builder_add_int_value(b, g_array_index(g.edges, int, k + 1));
        json_builder_end_array(b);
      }
      json_builder_end_array(b);
      json_builder_end_object(b);
      g_hash_table_unref(g.ids);
      g_array_unref(g.edges);
    } else if (strcmp(w, "legal") == 0) {
      g_autoptr(GPtrArray) legal = legal_actions(pr, e, NULL, -1);
      json_builder_set_member_name(b, "legal");
      json_builder_add_int_value(b, legal->len);
    } else {
      json_builder_end_object(b);
      return failf(f, E_PARAMS, "cannot observe '%s' (program, cost, "
                                "features, graph, legal)",
                   w);
    }
  }
  json_builder_end_object(b);
  return TRUE;
}

/* ------------------------------------------------------------ methods */

static gboolean read_allowed(Proto *pr, const char *path, char **text,
                             gsize *len, Fail *f) {
  g_autofree char *real = realpath(path, NULL);
  gboolean ok = FALSE;
  for (char **d = pr->allowed; real && d && *d && !ok; d++) {
    g_autofree char *dir = realpath(*d, NULL);
    ok = dir && g_str_has_prefix(real, dir) &&
         (real[strlen(dir)] == '/' || real[strlen(dir)] == '\0');
  }
  if (!ok)
    return failf(f, E_FILE, "'%s' is not in a directory allowed with --allow",
                 path);
  GError *error = NULL;
  if (!g_file_get_contents(real, text, len, &error)) {
    failf(f, E_FILE, "%s", error->message);
    g_error_free(error);
    return FALSE;
  }
  return TRUE;
}

/* Makes a root entry from reset/replay parameters. */
static Entry *new_root(Proto *pr, JsonObject *p, Fail *f) {
  const char *program, *path, *mesh_spec, *hw_name;
  if (!get_string(p, "program", FALSE, &program, f) ||
      !get_string(p, "path", FALSE, &path, f) ||
      !get_string(p, "mesh", FALSE, &mesh_spec, f) ||
      !get_string(p, "hw", FALSE, &hw_name, f))
    return NULL;
  if (!program == !path) {
    failf(f, E_PARAMS, "give exactly one of 'program' and 'path'");
    return NULL;
  }
  Episode ep = {0};
  GError *error = NULL;
  if (!mesh_parse(mesh_spec, &ep.mesh, &error) ||
      !hw_load(hw_name ? hw_name : "cpu2", &ep.hw, &error)) {
    failf(f, E_PARAMS, "%s", error->message);
    g_error_free(error);
    return NULL;
  }
  g_autofree char *text = NULL;
  gsize len = 0;
  if (path && !read_allowed(pr, path, &text, &len, f))
    return NULL;
  g_autoptr(GString) errors = g_string_new(NULL);
  Module *m = parse_text(path ? path : "(program)", path ? text : program,
                         path ? len : strlen(program), errors);
  if (!m) {
    failf(f, E_PROGRAM, "%s", errors->str);
    return NULL;
  }
  Entry *e = g_new0(Entry, 1);
  e->state = state_new(m);
  module_free(m);
  e->ep = g_memdup2(&ep, sizeof ep);
  g_ptr_array_add(pr->episodes, e->ep);
  Fail cf = {0, g_string_new(NULL)};
  e->ep->root_time = entry_cost(pr, e, &cf) ? e->cost.total_time : NAN;
  g_string_free(cf.message, TRUE);
  return e;
}

static void build_reward(JsonBuilder *b, Proto *pr, Entry *parent, Entry *child) {
  Fail cf = {0, g_string_new(NULL)};
  gboolean ok = entry_cost(pr, parent, &cf) && entry_cost(pr, child, &cf);
  json_builder_set_member_name(b, "reward");
  if (!ok) {
    json_builder_add_null_value(b);
  } else {
    double delta = parent->cost.total_time - child->cost.total_time;
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "delta");
    json_builder_add_double_value(b, delta);
    json_builder_set_member_name(b, "normalized");
    json_builder_add_double_value(
        b, isfinite(parent->ep->root_time) && parent->ep->root_time > 0
               ? delta / parent->ep->root_time
               : 0);
    json_builder_end_object(b);
  }
  g_string_free(cf.message, TRUE);
}

/* An action given as a string, or as an index into the legal actions. */
static char *action_text(Proto *pr, Entry *e, JsonNode *n, GPtrArray **legal,
                         Fail *f) {
  if (JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING)
    return g_strdup(json_node_get_string(n));
  if (JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_INT64) {
    if (!*legal)
      *legal = legal_actions(pr, e, NULL, -1);
    gint64 i = json_node_get_int(n);
    if (i < 0 || i >= (gint64)(*legal)->len) {
      failf(f, E_ACTION, "no legal action %" G_GINT64_FORMAT " (there are %u)",
            i, (*legal)->len);
      return NULL;
    }
    return g_strdup(((Action *)g_ptr_array_index(*legal, i))->text);
  }
  failf(f, E_PARAMS, "an action is a command string or an index");
  return NULL;
}

/* Applies 'actions' to entry 'id'; the new entry, or NULL. */
static Entry *do_step(Proto *pr, gint64 id, Entry *e, JsonArray *actions,
                      gboolean *no_effect, Fail *f) {
  State *s = state_ref(e->state);
  g_autoptr(GString) trace = g_string_new(NULL);
  g_autoptr(GString) why = g_string_new(NULL);
  for (guint i = 0; i < json_array_get_length(actions); i++) {
    GPtrArray *legal = NULL;
    Entry tmp = *e;
    tmp.state = s;
    char *text = action_text(pr, &tmp, json_array_get_element(actions, i),
                             &legal, f);
    if (legal)
      g_ptr_array_unref(legal);
    State *next = text ? run_action(pr, s, text, why) : NULL;
    if (text && !next)
      failf(f, E_ACTION, "%s", why->str);
    if (!next) {
      g_free(text);
      state_unref(s);
      return NULL;
    }
    g_string_append_printf(trace, "%s%s", trace->len ? "; " : "", text);
    g_free(text);
    state_unref(s);
    s = next;
  }
  *no_effect = s->func.body == e->state->func.body;
  Entry *c = g_new0(Entry, 1);
  c->state = s;
  c->parent = id;
  c->action = g_string_free(g_steal_pointer(&trace), FALSE);
  c->ep = e->ep;
  return c;
}

static gboolean reply_step(Proto *pr, JsonBuilder *b, Entry *parent, Entry *c,
                           gint64 cid, JsonArray *observe, gboolean reward,
                           gboolean no_effect, Fail *f) {
  json_builder_set_member_name(b, "state");
  json_builder_add_int_value(b, cid);
  g_autofree char *hash = state_hash(c->state);
  json_builder_set_member_name(b, "hash");
  json_builder_add_string_value(b, hash);
  json_builder_set_member_name(b, "observation");
  if (!build_observation(pr, b, c, observe, f))
    return FALSE;
  if (reward)
    build_reward(b, pr, parent, c);
  g_autoptr(GPtrArray) legal = legal_actions(pr, c, NULL, 1);
  json_builder_set_member_name(b, "terminated");
  json_builder_add_boolean_value(b, legal->len == 0);
  json_builder_set_member_name(b, "truncated");
  json_builder_add_boolean_value(b, FALSE);
  json_builder_set_member_name(b, "no_effect");
  json_builder_add_boolean_value(b, no_effect);
  return TRUE;
}

static gboolean m_initialize(Proto *pr, JsonObject *p, JsonBuilder *b, Fail *f) {
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "protocol");
  json_builder_add_string_value(b, PROTOCOL_VERSION);
  json_builder_set_member_name(b, "engine");
  json_builder_add_string_value(b, partir_version());
  json_builder_set_member_name(b, "rules");
  json_builder_begin_array(b);
  for (guint i = 0; i < pr->rs->files->len; i++) {
    const char *path = g_ptr_array_index(pr->rs->files, i);
    g_autofree char *text = NULL;
    gsize len = 0;
    g_file_get_contents(path, &text, &len, NULL);
    g_autofree char *sum = g_compute_checksum_for_data(
        G_CHECKSUM_SHA256, (const guchar *)(text ? text : ""), len);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "path");
    json_builder_add_string_value(b, path);
    json_builder_set_member_name(b, "sha256");
    json_builder_add_string_value(b, sum);
    json_builder_end_object(b);
  }
  json_builder_end_array(b);
  json_builder_set_member_name(b, "cost_model");
  json_builder_add_string_value(b, "per-device FLOPs, peak bytes, ring "
                                   "collectives; time = compute + "
                                   "communication (docs/cost.md)");
  json_builder_set_member_name(b, "observations");
  json_builder_begin_array(b);
  for (const char *const *o = (const char *const[]){"program", "cost", "features",
                                                    "graph", "legal", NULL};
       *o; o++)
    json_builder_add_string_value(b, *o);
  json_builder_end_array(b);
  json_builder_set_member_name(b, "rewards");
  json_builder_begin_array(b);
  json_builder_add_string_value(b, "delta");
  json_builder_add_string_value(b, "normalized");
  json_builder_end_array(b);
  json_builder_set_member_name(b, "capabilities");
  json_builder_begin_object(b);
  for (const char *const *c = (const char *const[]){"step", "expand", "trace",
                                                    "replay", "drop", NULL};
       *c; c++) {
    json_builder_set_member_name(b, *c);
    json_builder_add_boolean_value(b, TRUE);
  }
  json_builder_end_object(b);
  json_builder_end_object(b);
  return TRUE;
}

static gboolean m_reset(Proto *pr, JsonObject *p, JsonBuilder *b, Fail *f) {
  Entry *e = new_root(pr, p, f);
  if (!e)
    return FALSE;
  gint64 id = add_entry(pr, e);
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "state");
  json_builder_add_int_value(b, id);
  g_autofree char *hash = state_hash(e->state);
  json_builder_set_member_name(b, "hash");
  json_builder_add_string_value(b, hash);
  json_builder_set_member_name(b, "observation");
  JsonArray *what = json_array_new();
  json_array_add_string_element(what, "program");
  json_array_add_string_element(what, "cost");
  gboolean ok = build_observation(pr, b, e, what, f);
  json_array_unref(what);
  json_builder_end_object(b);
  return ok;
}

static gboolean m_actions(Proto *pr, JsonObject *p, JsonBuilder *b, Fail *f) {
  gint64 id, limit = -1;
  const char *filter;
  Entry *e = get_state(pr, p, &id, f);
  if (!e || !get_int(p, "limit", FALSE, &limit, f) ||
      !get_string(p, "filter", FALSE, &filter, f))
    return FALSE;
  g_autoptr(GPtrArray) legal = legal_actions(pr, e, filter, limit);
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "actions");
  json_builder_begin_array(b);
  for (guint i = 0; i < legal->len; i++)
    build_action(b, i, g_ptr_array_index(legal, i));
  json_builder_end_array(b);
  json_builder_set_member_name(b, "count");
  json_builder_add_int_value(b, legal->len);
  json_builder_end_object(b);
  return TRUE;
}

static gboolean m_step(Proto *pr, JsonObject *p, JsonBuilder *b, Fail *f) {
  gint64 id;
  JsonArray *actions, *observe;
  gboolean reward = TRUE, no_effect = FALSE;
  Entry *e = get_state(pr, p, &id, f);
  if (!e || !get_array(p, "actions", &actions, f) ||
      !get_array(p, "observe", &observe, f) || !get_bool(p, "reward", &reward, f))
    return FALSE;
  if (!actions)
    return failf(f, E_PARAMS, "missing parameter 'actions'");
  Entry *c = do_step(pr, id, e, actions, &no_effect, f);
  if (!c)
    return FALSE;
  gint64 cid = add_entry(pr, c);
  json_builder_begin_object(b);
  gboolean ok = reply_step(pr, b, e, c, cid, observe, reward, no_effect, f);
  json_builder_end_object(b);
  return ok;
}

static gboolean m_expand(Proto *pr, JsonObject *p, JsonBuilder *b, Fail *f) {
  gint64 id;
  JsonArray *observe;
  gboolean reward = TRUE;
  Entry *e = get_state(pr, p, &id, f);
  if (!e || !get_array(p, "observe", &observe, f) ||
      !get_bool(p, "reward", &reward, f))
    return FALSE;
  g_autoptr(GPtrArray) legal = legal_actions(pr, e, NULL, -1);
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "children");
  json_builder_begin_array(b);
  for (guint i = 0; i < legal->len; i++) {
    const Action *a = g_ptr_array_index(legal, i);
    JsonArray *one = json_array_new();
    json_array_add_string_element(one, a->text);
    Fail cf = {0, g_string_new(NULL)};
    gboolean no_effect = FALSE;
    Entry *c = do_step(pr, id, e, one, &no_effect, &cf);
    json_array_unref(one);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "index");
    json_builder_add_int_value(b, i);
    json_builder_set_member_name(b, "action");
    json_builder_add_string_value(b, a->text);
    if (c) {
      gint64 cid = add_entry(pr, c);
      if (!reply_step(pr, b, e, c, cid, observe, reward, no_effect, &cf)) {
        json_builder_end_object(b);
        json_builder_end_array(b);
        json_builder_end_object(b);
        f->code = cf.code;
        g_string_assign(f->message, cf.message->str);
        g_string_free(cf.message, TRUE);
        return FALSE;
      }
    } else {
      json_builder_set_member_name(b, "error");
      json_builder_begin_object(b);
      json_builder_set_member_name(b, "code");
      json_builder_add_int_value(b, cf.code);
      json_builder_set_member_name(b, "message");
      json_builder_add_string_value(b, cf.message->str);
      json_builder_end_object(b);
    }
    json_builder_end_object(b);
    g_string_free(cf.message, TRUE);
  }
  json_builder_end_array(b);
  json_builder_end_object(b);
  return TRUE;
}

static gboolean m_observe(Proto *pr, JsonObject *p, JsonBuilder *b, Fail *f) {
  gint64 id;
  JsonArray *what;
  Entry *e = get_state(pr, p, &id, f);
  if (!e || !get_array(p, "what", &what, f))
    return FALSE;
  if (!what)
    return failf(f, E_PARAMS, "missing parameter 'what'");
  return build_observation(pr, b, e, what, f);
}

static gboolean m_trace(Proto *pr, JsonObject *p, JsonBuilder *b, Fail *f) {
  gint64 id;
  Entry *e = get_state(pr, p, &id, f);
  if (!e)
    return FALSE;
  g_autoptr(GPtrArray) steps = g_ptr_array_new();
  for (Entry *x = e; x && x->parent;) {
    g_ptr_array_add(steps, x->action);
    x = g_hash_table_lookup(pr->entries, &x->parent);
    if (!x)
      return failf(f, E_STATE, "an ancestor of state %" G_GINT64_FORMAT
                               " was dropped: its trace is gone",
                   id);
  }
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "actions");
  json_builder_begin_array(b);
  for (guint i = steps->len; i > 0; i--)
    json_builder_add_string_value(b, g_ptr_array_index(steps, i - 1));
  json_builder_end_array(b);
  json_builder_end_object(b);
  return TRUE;
}

static gboolean m_replay(Proto *pr, JsonObject *p, JsonBuilder *b, Fail *f) {
  JsonArray *trace;
  if (!get_array(p, "trace", &trace, f))
    return FALSE;
  if (!trace)
    return failf(f, E_PARAMS, "missing parameter 'trace'");
  Entry *root = new_root(pr, p, f);
  if (!root)
    return FALSE;
  gint64 rid = add_entry(pr, root);
  gboolean no_effect;
  Entry *c = do_step(pr, rid, root, trace, &no_effect, f);
  if (!c)
    return FALSE;
  gint64 cid = add_entry(pr, c);
  json_builder_begin_object(b);
  gboolean ok = reply_step(pr, b, root, c, cid, NULL, TRUE, no_effect, f);
  json_builder_end_object(b);
  return ok;
}

static gboolean m_drop(Proto *pr, JsonObject *p, JsonBuilder *b, Fail *f) {
  JsonArray *states;
  if (!get_array(p, "states", &states, f))
    return FALSE;
  if (!states)
    return failf(f, E_PARAMS, "missing parameter 'states'");
  int dropped = 0;
  for (guint i = 0; i < json_array_get_length(states); i++) {
    JsonNode *n = json_array_get_element(states, i);
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_INT64)
      return failf(f, E_PARAMS, "'states' must be integers");
    gint64 id = json_node_get_int(n);
    dropped += g_hash_table_remove(pr->entries, &id);
  }
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "dropped");
  json_builder_add_int_value(b, dropped);
  json_builder_end_object(b);
  return TRUE;
}

static gboolean m_shutdown(Proto *pr, JsonObject *p, JsonBuilder *b, Fail *f) {
  pr->quit = TRUE;
  json_builder_begin_object(b);
  json_builder_end_object(b);
  return TRUE;
}

static const struct {
  const char *name;
  gboolean (*run)(Proto *, JsonObject *, JsonBuilder *, Fail *);
} methods[] = {
    {"initialize", m_initialize}, {"reset", m_reset},   {"actions", m_actions},
    {"step", m_step},             {"expand", m_expand}, {"observe", m_observe},
    {"trace", m_trace},           {"replay", m_replay}, {"drop", m_drop},
    {"shutdown", m_shutdown},
};

/* ------------------------------------------------------------- the loop */

static void emit(JsonNode *reply) {
  g_autoptr(JsonGenerator) gen = json_generator_new();
  json_generator_set_root(gen, reply);
  g_autofree char *text = json_generator_to_data(gen, NULL);
  fputs(text, stdout);
  fputc('\n', stdout);
  fflush(stdout);
}

/* {"jsonrpc": "2.0", "id": ID, — the start of every reply */
static void begin_reply(JsonBuilder *b, JsonNode *id) {
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "jsonrpc");
  json_builder_add_string_value(b, "2.0");
  json_builder_set_member_name(b, "id");
  if (id)
    json_builder_add_value(b, json_node_copy(id));
  else
    json_builder_add_null_value(b);
}

static void reply_error(JsonNode *id, int code, const char *message) {
  g_autoptr(JsonBuilder) b = json_builder_new();
  begin_reply(b, id);
  json_builder_set_member_name(b, "error");
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "code");
  json_builder_add_int_value(b, code);
  json_builder_set_member_name(b, "message");
  json_builder_add_string_value(b, message);
  json_builder_end_object(b);
  json_builder_end_object(b);
  g_autoptr(JsonNode) root = json_builder_get_root(b);
  emit(root);
}

static void handle(Proto *pr, const char *line, gsize len) {
  g_autoptr(JsonParser) parser = json_parser_new();
  GError *error = NULL;
  if (!json_parser_load_from_data(parser, line, (gssize)len, &error)) {
    reply_error(NULL, E_PARSE, error->message);
    g_error_free(error);
    return;
  }
  JsonNode *root = json_parser_get_root(parser);
  if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
    reply_error(NULL, E_REQUEST, "a request is a JSON object");
    return;
  }
  JsonObject *req = json_node_get_object(root);
  JsonNode *id = json_object_get_member(req, "id");
  if (id && !JSON_NODE_HOLDS_VALUE(id) && !JSON_NODE_HOLDS_NULL(id)) {
    reply_error(NULL, E_REQUEST, "'id' must be a number or a string");
    return;
  }
  JsonNode *m = json_object_get_member(req, "method");
  if (!m || !JSON_NODE_HOLDS_VALUE(m) ||
      json_node_get_value_type(m) != G_TYPE_STRING) {
    reply_error(id, E_REQUEST, "a request needs a 'method' string");
    return;
  }
  JsonNode *params = json_object_get_member(req, "params");
  if (params && !JSON_NODE_HOLDS_OBJECT(params)) {
    reply_error(id, E_PARAMS, "'params' must be an object");
    return;
  }
  const char *name = json_node_get_string(m);
  for (gsize i = 0; i < G_N_ELEMENTS(methods); i++) {
    if (strcmp(name, methods[i].name) != 0)
      continue;
    g_autoptr(JsonBuilder) b = json_builder_new();
    begin_reply(b, id);
    json_builder_set_member_name(b, "result");
    Fail f = {0, g_string_new(NULL)};
    partir_interrupt = 0;
    gboolean ok = methods[i].run(pr, params_of(req), b, &f);
    if (ok) {
      json_builder_end_object(b);
      g_autoptr(JsonNode) reply = json_builder_get_root(b);
      emit(reply);
    } else {
      reply_error(id, f.code ? f.code : E_PARAMS, f.message->str);
    }
    g_string_free(f.message, TRUE);
    return;
  }
  g_autofree char *msg = g_strdup_printf("unknown method '%s'", name);
  reply_error(id, E_METHOD, msg);
}

int protocol_run(RuleSet *rs, char **allowed, FILE *in) {
  Proto pr = {.rs = rs, .allowed = allowed};
  pr.entries = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
                                     (GDestroyNotify)entry_free);
  pr.episodes = g_ptr_array_new_with_free_func(g_free);
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  while (!pr.quit && (n = getline(&line, &cap, in)) >= 0) {
    if ((gsize)n > MAX_LINE) {
      reply_error(NULL, E_REQUEST, "request line longer than 16 MiB");
      continue;
    }
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
      line[--n] = '\0';
    if (n == 0)
      continue;
    handle(&pr, line, (gsize)n);
  }
  free(line);
  g_hash_table_unref(pr.entries);
  g_ptr_array_unref(pr.episodes);
  return 0;
}
