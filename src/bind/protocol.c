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
  double root_time; /* NAN when the root cannot be costed */
  gint64 max_steps; /* 'truncated' from this many actions on; 0: never */
  int args_legal;   /* some arg-tile applies: -1 not known yet, 0, 1 (it
                       depends on the signature and the mesh alone) */
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
} Entry;

typedef struct Proto {
  RuleSet *rs;
  size_t collected0;   /* terms collected before the first request */
  GHashTable *entries; /* &Entry.id -> Entry* */
  gint64 next_id;
  char **allowed;
  GPtrArray *episodes;
  gboolean quit;
} Proto;

static void trace_unref(Trace *t) {
  while (t && --t->refcount == 0) {
    Trace *up = t->up;
    g_free(t);
    t = up;
  }
}

static void entry_free(Entry *e) {
  state_unref(e->state);
  trace_unref(e->trace);
  cost_report_clear(&e->cost);
  g_free(e);
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
                                     &e->cost, why);
  }
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

/* The width that splits dimension 'd' of argument 'i' over mesh axis
 * 'k', or 0 when the axis does not divide it. */
static int64_t arg_split_width(const Func *f, int i, int d, const Mesh *mesh,
                               int k) {
  int64_t n = f->arg_types[i]->dims[d], size = mesh->sizes[k];
  return n % size == 0 ? n / size : 0;
}

/* Every candidate action, in a stable order: split each argument's
 * dimensions over each mesh axis that divides them, tile or split each
 * operator's result or reduction over each such axis, propagate. */
static GPtrArray *candidates(Proto *pr, const Entry *e) {
  GPtrArray *out = g_ptr_array_new_with_free_func(action_free);
  const Mesh *mesh = &e->ep->mesh;
  const Func *f = &e->state->func;
  for (int i = 0; i < f->nargs; i++)
    for (int d = 0; d < f->arg_types[i]->rank; d++)
      for (int k = 0; k < mesh->naxes; k++) {
        int64_t w = arg_split_width(f, i, d, mesh, k);
        if (w < 1)
          continue;
        Action *a = add_candidate(
            out,
            g_strdup_printf("arg-tile %%%s %d %" G_GINT64_FORMAT " %s",
                            f->arg_names[i], d, w, mesh->names[k]),
            "arg-tile", f->arg_names[i], w, mesh->names[k]);
        a->placed = term_arg(i, f->arg_types[i]);
        a->dim = d;
      }
  g_autoptr(GPtrArray) locs = state_locations(e->state);
  for (guint l = 0; l < locs->len; l++) {
    const Location *loc = g_ptr_array_index(locs, l);
    TileSpec spec;
    if (loc->term->kind != TM_OP || !spec_of(pr->rs, loc->term, &spec))
      continue;
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
        const Rule *derived = ruleset_derived(
            pr->rs, kind == 0 ? RULE_OP_TILE : RULE_OP_SUM, loc->term->op, d);
        if (!derived)
          continue;
        const char *rule = derived->name;
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

/* Runs one action; NULL with the reason when it does not apply.  No
 * report: what propagate could not resolve is not part of a reply, and
 * asking for it costs a walk of the program. */
static State *run_action(Proto *pr, State *s, const char *text, Diag *why) {
  return pipeline_rewrite(pr->rs, s, text, why, NULL);
}

static GPtrArray *legal_among(Proto *pr, const Entry *e, GPtrArray *all,
                              const char *filter, gint64 limit);

/* The legal actions: the candidates that apply and change the program. */
static GPtrArray *legal_actions(Proto *pr, const Entry *e, const char *filter,
                                gint64 limit) {
  return legal_among(pr, e, candidates(pr, e), filter, limit);
}

/* Whether rule 'r' applies at value 'at' with width 'w' over 'axis'
 * (interned) and, for arg-tile, dimension 'd'.  A rule at one value
 * changes the program exactly when it applies there, so there is no need
 * to rebuild the program. */
static gboolean applies_at(Proto *pr, const Rule *r, const Term *at, int64_t w,
                           const char *axis, int d, Diag *why) {
  static const char *w_key, *a_key, *d_key;
  if (!w_key) {
    w_key = g_intern_static_string("w");
    a_key = g_intern_static_string("a");
    d_key = g_intern_static_string("d");
  }
  RuleArg args[3] = {
      {w_key, FALSE, w, NULL}, {a_key, TRUE, 0, axis}, {d_key, FALSE, d, NULL}};
  int nargs = r && strcmp(r->name, "arg-tile") == 0 ? 3 : 2;
  return r && rw_apply_here(pr->rs, r, at, args, nargs, why) != NULL;
}

/* Whether any action is legal ('terminated' is its negation), found
 * without listing them: the argument actions come first and need no walk
 * of the program, and usually one of them applies. */
static gboolean any_legal_action(Proto *pr, const Entry *e) {
  const Mesh *mesh = &e->ep->mesh;
  const Func *f = &e->state->func;
  for (int i = 0; i < f->nargs && e->ep->args_legal < 0; i++)
    for (int d = 0; d < f->arg_types[i]->rank && e->ep->args_legal < 0; d++)
      for (int k = 0; k < mesh->naxes; k++) {
        int64_t w = arg_split_width(f, i, d, mesh, k);
        g_autoptr(Diag) why = diag_new(NULL);
        if (w >= 1 && applies_at(pr, ruleset_find(pr->rs, "arg-tile"),
                                 term_arg(i, f->arg_types[i]), w,
                                 mesh->names[k], d, why)) {
          e->ep->args_legal = 1;
          break;
        }
      }
  if (e->ep->args_legal < 0)
    e->ep->args_legal = 0;
  if (e->ep->args_legal)
    return TRUE;
  g_autoptr(GPtrArray) legal = legal_actions(pr, e, NULL, 1);
  return legal->len > 0;
}

/* The actions of 'all' (taken) that apply and change the program. */
static GPtrArray *legal_among(Proto *pr, const Entry *e, GPtrArray *all,
                              const char *filter, gint64 limit) {
  GPtrArray *out = g_ptr_array_new_with_free_func(action_free);
  g_autoptr(Diag) why = diag_new(NULL);
  for (guint i = 0; i < all->len && (limit < 0 || out->len < (guint)limit);
       i++) {
    Action *a = g_ptr_array_index(all, i);
    if (filter && !strstr(a->text, filter))
      continue;
    gboolean changes;
    if (a->placed) {
      changes = applies_at(pr, ruleset_find(pr->rs, a->rule), a->placed, a->w,
                           a->axis, a->dim, why);
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

static J *action_json(guint index, const Action *a) {
  J *o = cJSON_CreateObject();
  proto_put(o, "index", proto_jint(index));
  proto_put(o, "action", cJSON_CreateString(a->text));
  proto_put(o, "rule", cJSON_CreateString(a->rule));
  proto_put(o, "location",
            a->location ? cJSON_CreateString(a->location) : NULL);
  J *args = cJSON_CreateObject();
  if (strcmp(a->rule, "arg-tile") == 0)
    proto_put(args, "d", proto_jint(a->dim));
  if (a->axis) {
    proto_put(args, "w", proto_jint(a->w));
    proto_put(args, "axis", cJSON_CreateString(a->axis));
  }
  proto_put(o, "args", args);
  return o;
}

/* -------------------------------------------------------- observations */

/* The program's content hash: the body's and the signature's, without
 * printing (the same in every run; names are not part of it). */
static void state_hash(const State *s, char out[17]) {
  guint64 h = s->func.body->content;
  for (int i = 0; i < s->func.nargs; i++)
    h = h * G_GUINT64_CONSTANT(1099511628211) ^
        g_str_hash(s->func.arg_names[i]);
  g_snprintf(out, 17, "%016" G_GINT64_MODIFIER "x", h);
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
static J *features_json(Entry *e, gboolean ok) {
  g_autoptr(GPtrArray) locs = state_locations(e->state);
  int tiles = 0, sums = 0;
  for (guint k = 0; k < locs->len; k++) {
    const Term *t = ((Location *)g_ptr_array_index(locs, k))->term;
    tiles += t->kind == TM_TILE;
    sums += t->kind == TM_SUM;
  }
  double v[] = {(double)locs->len,
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
        proto_put(o, "features", features_json(e, ok));
    } else if (strcmp(w, "graph") == 0) {
      proto_put(o, "graph", graph_json(e));
    } else if (strcmp(w, "legal") == 0) {
      g_autoptr(GPtrArray) legal = legal_actions(pr, e, NULL, -1);
      proto_put(o, "legal", proto_jint(legal->len));
    } else {
      cJSON_Delete(o);
      proto_fail(f, E_PARAMS,
                 "cannot observe '%s' (program, cost, features, "
                 "graph, legal)",
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

/* Makes a root entry from reset/replay parameters. */
static Entry *new_root(Proto *pr, J *p, Fail *f) {
  const char *program, *path, *mesh_spec, *hw_name;
  if (!proto_get_string(p, "program", FALSE, &program, f) ||
      !proto_get_string(p, "path", FALSE, &path, f) ||
      !proto_get_string(p, "mesh", FALSE, &mesh_spec, f) ||
      !proto_get_string(p, "hw", FALSE, &hw_name, f))
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
  if (!mesh_parse(mesh_spec, &ep.mesh, why)) {
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
  Module *m =
      pipeline_read_program(path ? path : "(program)", path ? text : program,
                            path ? len : strlen(program), errors);
  if (!m) {
    proto_fail(f, E_PROGRAM, "%s", diag_text(errors));
    return NULL;
  }
  Entry *e = g_new0(Entry, 1);
  e->state = state_new(m);
  module_free(m);
  e->ep = g_memdup2(&ep, sizeof ep);
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

/* An action given as a string, or as an index into the legal actions. */
static char *action_text(Proto *pr, Entry *e, J *n, GPtrArray **legal,
                         Fail *f) {
  if (cJSON_IsString(n))
    return g_strdup(n->valuestring);
  if (proto_is_int(n)) {
    if (!*legal)
      *legal = legal_actions(pr, e, NULL, -1);
    gint64 i = (gint64)n->valuedouble;
    if (i < 0 || i >= (gint64)(*legal)->len) {
      proto_fail(f, E_ACTION,
                 "no legal action %" G_GINT64_FORMAT " (there are %u)", i,
                 (*legal)->len);
      return NULL;
    }
    return g_strdup(((Action *)g_ptr_array_index(*legal, i))->text);
  }
  proto_fail(f, E_PARAMS, "an action is a command string or an index");
  return NULL;
}

/* Applies the actions (a JSON array, or the one string 'text') to entry
 * 'e'; the new entry, or NULL.  An action that names an axis the mesh
 * lacks is illegal. */
static Entry *do_step(Proto *pr, Entry *e, J *actions, const char *text1,
                      gboolean *no_effect, Fail *f) {
  State *s = state_ref(e->state);
  g_autoptr(GString) trace = g_string_new(NULL);
  g_autoptr(Diag) why = diag_new(NULL);
  J *item = actions ? actions->child : NULL;
  gint64 taken = 0;
  for (gboolean first = TRUE; actions ? item != NULL : first;
       first = FALSE, item = item ? item->next : NULL, taken++) {
    GPtrArray *legal = NULL;
    Entry tmp = *e;
    tmp.state = s;
    char *text =
        actions ? action_text(pr, &tmp, item, &legal, f) : g_strdup(text1);
    if (legal)
      g_ptr_array_unref(legal);
    /* commands take any axis name, but a state bound to an axis the
     * episode's mesh lacks could never be lowered or costed */
    g_autofree char *axis =
        text ? rw_script_axis_off_mesh(text, &e->ep->mesh) : NULL;
    if (axis) {
      g_autofree char *mesh = mesh_to_string(&e->ep->mesh);
      proto_fail(f, E_ACTION, "'%s': axis '%s' is not an axis of the mesh (%s)",
                 text, axis, *mesh ? mesh : "no axes");
    }
    State *next = text && !axis ? run_action(pr, s, text, why) : NULL;
    if (text && !axis && !next)
      proto_fail(f, E_ACTION, "%s", diag_text(why));
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
 * for a child of expand (index >= 0).  This is the hot path of search
 * agents, so it is written as text around what cJSON writes (the
 * observation, the reward, the action string): the other fields are
 * integers, booleans and hex digits.  A JSON object per reply cost as
 * much as a small step. */
static J *step_json(Proto *pr, Entry *parent, Entry *c, gint64 cid,
                    gint64 index, const char *action,
                    const char *const *observe, gboolean reward,
                    gboolean no_effect, Fail *f) {
  J *obs = observe ? observation_json(pr, c, observe, f) : NULL;
  if (observe && !obs)
    return NULL;
  char hash[17];
  state_hash(c->state, hash);
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
                  no_effect ? ",\"no_effect\":true}" : ",\"no_effect\":false}");
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
  proto_put(o, "observations",
            string_array((const char *const[]){"program", "cost", "features",
                                               "graph", "legal", NULL}));
  proto_put(o, "rewards",
            string_array((const char *const[]){"delta", "normalized", NULL}));
  J *caps = cJSON_CreateObject();
  for (const char *const *c =
           (const char *const[]){"step", "expand", "trace", "replay", "drop",
                                 "stats", NULL};
       *c; c++)
    proto_put(caps, *c, cJSON_CreateBool(TRUE));
  proto_put(o, "capabilities", caps);
  return o;
}

static J *m_reset(Proto *pr, J *p, Fail *f) {
  Entry *e = new_root(pr, p, f);
  if (!e)
    return NULL;
  gint64 id = add_entry(pr, e);
  J *obs = observation_json(pr, e,
                            (const char *const[]){"program", "cost", NULL}, f);
  char hash[17];
  state_hash(e->state, hash);
  J *o = cJSON_CreateObject();
  proto_put(o, "state", proto_jint(id));
  proto_put(o, "hash", cJSON_CreateString(hash));
  proto_put(o, "observation", obs);
  return o;
}

static J *m_actions(Proto *pr, J *p, Fail *f) {
  gint64 limit = -1;
  const char *filter;
  Entry *e = get_state(pr, p, f);
  if (!e || !proto_get_int(p, "limit", FALSE, &limit, f) ||
      !proto_get_string(p, "filter", FALSE, &filter, f))
    return NULL;
  g_autoptr(GPtrArray) legal = legal_actions(pr, e, filter, limit);
  J *list = cJSON_CreateArray();
  for (guint i = 0; i < legal->len; i++)
    cJSON_AddItemToArray(list, action_json(i, g_ptr_array_index(legal, i)));
  J *o = cJSON_CreateObject();
  proto_put(o, "actions", list);
  proto_put(o, "count", proto_jint(legal->len));
  return o;
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
  Entry *c = do_step(pr, e, actions, NULL, &no_effect, f);
  if (!c)
    return NULL;
  g_autofree const char **names = observe_names(observe);
  return step_json(pr, e, c, add_entry(pr, c), -1, NULL, names, reward,
                   no_effect, f);
}

static J *m_expand(Proto *pr, J *p, Fail *f) {
  J *observe;
  gboolean reward = TRUE;
  Entry *e = get_state(pr, p, f);
  if (!e || !proto_get_array(p, "observe", &observe, f) ||
      !proto_get_bool(p, "reward", &reward, f))
    return NULL;
  g_autofree const char **names = observe_names(observe);
  g_autoptr(GPtrArray) legal = legal_actions(pr, e, NULL, -1);
  J *children = cJSON_CreateArray();
  for (guint i = 0; i < legal->len; i++) {
    const Action *a = g_ptr_array_index(legal, i);
    Fail cf = {0, g_string_new(NULL)};
    gboolean no_effect = FALSE;
    Entry *c = do_step(pr, e, NULL, a->text, &no_effect, &cf);
    J *o = NULL;
    if (c) {
      o = step_json(pr, e, c, add_entry(pr, c), i, a->text, names, reward,
                    no_effect, &cf);
    } else {
      o = cJSON_CreateObject();
      proto_put(o, "index", proto_jint(i));
      proto_put(o, "action", cJSON_CreateString(a->text));
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
  Entry *root = new_root(pr, p, f);
  if (!root)
    return NULL;
  add_entry(pr, root);
  gboolean no_effect;
  Entry *c = do_step(pr, root, trace, NULL, &no_effect, f);
  if (!c)
    return NULL;
  return step_json(pr, root, c, add_entry(pr, c), -1, NULL, NULL, TRUE,
                   no_effect, f);
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
  pr.episodes = g_ptr_array_new_with_free_func(g_free);
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
    if (io.out->len > 0 &&
        (!proto_reader_line_waiting(&r) || io.out->len > (1u << 20)))
      flush_out(&io);
  }
  flush_out(&io);
  g_free(r.buf);
  g_string_free(io.out, TRUE);
  g_hash_table_unref(pr.entries);
  g_ptr_array_unref(pr.episodes);
  return 0;
}
