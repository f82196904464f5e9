/* search.c — automatic partitioning: a search over the engine's actions,
 * scored by the cost model (docs/search.md).
 *
 * A node is an immutable State (children share every untouched term with
 * their parent) with its score: the modelled step time on the hardware,
 * times a penalty when its peak memory exceeds the device's.  An action
 * splits one dimension of a *group* of arguments over one mesh axis
 * ('arg-tile' of each member), then propagates ('propagate'; when that
 * meets a conflict, 'propagate --resolve', which keeps the split the cost
 * model prices fastest).  A group is the arguments whose uses look the
 * same: same shape, used by the same operators at the same operand
 * positions with operands made by the same operators.  The layers of a
 * stack give one group per kind of weight, however many layers there
 * are, so the number of actions does not grow with depth, and one
 * decision partitions every layer alike.
 *
 * Each group splits a dimension at most once and an axis at most once
 * (a device has one index along an axis).  The data arguments (the
 * first, unless told) split only over the batch axes: the other axes
 * hold the model's partitions, as the tactics read a mesh's axis names.
 *
 * Nodes live in a transposition table keyed by the program's content
 * hash (the same 64-bit hash as the protocol's), so two orders of the
 * same actions that build one program share a node and are costed once.
 * Costing goes through one SpmdMemo: a child's lowering redoes only what
 * its action changed.  Before each action the term store may be
 * collected (collect_maybe): only the nodes' states hold terms then, and
 * the memo empties itself after a collection.  A node remembers the action that
 * first reached it and its parent, which is the trace replayed as a tactic.
 *
 * Two algorithms share this: UCT Monte-Carlo tree search (selection by
 * the best reward seen below a child plus an exploration term, expansion
 * of one untried action in a seeded random order, a short random
 * rollout, backup of the rollout's best reward) and beam search (every
 * action of every state in the beam, the best 'width' new states kept
 * each round).  Every costed state is a candidate; the best is the
 * result.  Randomness comes from one GRand seeded by the caller, and no
 * choice depends on time or addresses, so a seed gives one result; only
 * the time limit and an interrupt (partir_interrupt) cut a search short.
 */
#include "pipeline.h"

#include <math.h>
#include <string.h>

enum {
  SEARCH_DEFAULT_BUDGET = 1000, /* states costed */
  SEARCH_DEFAULT_WIDTH = 4,     /* beam width */
  ROLLOUT_DEPTH = 2,            /* random actions after an expansion */
  MAX_DEPTH = 64,               /* actions from the root, a guard */
  IDLE_LIMIT = 2000,            /* MCTS rounds that cost nothing: done */
};
/* A state that does not fit in memory scores its time times this, times
 * how many times over the memory its peak is. */
#define MEMORY_PENALTY 10.0
/* UCT's exploration constant (rewards are normalized to the best). */
#define EXPLORATION 0.7

/* ------------------------------------------------------- action groups */

typedef struct Group {
  GArray *args;  /* int: argument indices, in order */
  gboolean data; /* splits only over the batch axes */
} Group;

/* What one use of an argument looks like: the operator, the operand
 * position, the result's shape, the kinds of the other operands. */
static void describe_use(GString *out, const Term *user, int pos) {
  g_string_append_printf(
      out, "%s/%d/", user->kind == TM_OP ? op_name(user->op) : "region", pos);
  for (int d = 0; d < user->type->rank; d++)
    g_string_append_printf(out, "%" G_GINT64_FORMAT "x", user->type->dims[d]);
  for (int i = 0; i < user->nargs; i++) {
    const Term *o = user->args[i];
    g_string_append_c(out, i == pos ? '*' : ',');
    if (i != pos)
      g_string_append(out, o->kind == TM_OP    ? op_name(o->op)
                           : o->kind == TM_ARG ? "arg"
                                               : "other");
  }
}

static void collect_uses(const Term *t, GHashTable *seen, GPtrArray **uses) {
  if (!g_hash_table_add(seen, (gpointer)t))
    return;
  for (int i = 0; i < t->nargs; i++) {
    const Term *a = t->args[i];
    if (a->kind == TM_ARG && t->kind != TM_TUPLE) {
      GString *d = g_string_new(NULL);
      describe_use(d, t, i);
      g_ptr_array_add(uses[a->index], g_string_free(d, FALSE));
    }
    collect_uses(a, seen, uses);
  }
}

static gint compare_strings(gconstpointer a, gconstpointer b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Per argument, whether it is data: named by 'inputs', else as the
 * tactics find it (rw_data_args), else the first argument. */
static gboolean *data_args(const RuleSet *rs, const Func *f,
                           const char *const *inputs) {
  gboolean *data = g_new0(gboolean, (gsize)f->nargs + 1);
  if (!inputs) {
    if (rw_data_args(rs, f, 0, data) == 0 && f->nargs > 0)
      data[0] = TRUE;
    return data;
  }
  for (int i = 0; i < f->nargs; i++)
    for (const char *const *in = inputs; *in; in++)
      data[i] |= strcmp(*in, f->arg_names[i]) == 0;
  return data;
}

/* The groups of 'f': arguments with one signature (their type and the
 * sorted set of their uses' descriptions) in order of their first
 * member.  An argument returned as it is, or not used, forms no group. */
static GPtrArray *find_groups(const RuleSet *rs, const Func *f,
                              const char *const *inputs) {
  g_autofree gboolean *is_data = data_args(rs, f, inputs);
  GPtrArray **uses = g_new(GPtrArray *, (gsize)f->nargs);
  for (int i = 0; i < f->nargs; i++)
    uses[i] = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
  collect_uses(f->body, seen, uses);
  g_autoptr(GHashTable) by_sig =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  GPtrArray *groups = g_ptr_array_new();
  for (int i = 0; i < f->nargs; i++) {
    if (uses[i]->len == 0)
      continue;
    g_ptr_array_sort(uses[i], compare_strings);
    gboolean data = is_data[i];
    GString *sig = g_string_new(data ? "data:" : "");
    for (int d = 0; d < f->arg_types[i]->rank; d++)
      g_string_append_printf(sig, "%" G_GINT64_FORMAT "x",
                             f->arg_types[i]->dims[d]);
    g_string_append_printf(sig, "%d", (int)f->arg_types[i]->dtype);
    for (guint k = 0; k < uses[i]->len; k++)
      if (k == 0 || strcmp(uses[i]->pdata[k], uses[i]->pdata[k - 1]) != 0)
        g_string_append_printf(sig, "|%s", (char *)uses[i]->pdata[k]);
    Group *g = g_hash_table_lookup(by_sig, sig->str);
    if (!g) {
      g = g_new0(Group, 1);
      g->args = g_array_new(FALSE, FALSE, sizeof(int));
      g->data = data;
      g_ptr_array_add(groups, g);
      g_hash_table_insert(by_sig, g_string_free(sig, FALSE), g);
    } else {
      g_string_free(sig, TRUE);
    }
    g_array_append_val(g->args, i);
  }
  for (int i = 0; i < f->nargs; i++)
    g_ptr_array_unref(uses[i]);
  g_free(uses);
  return groups;
}

static void group_free(Group *g) {
  g_array_unref(g->args);
  g_free(g);
}

/* ------------------------------------------------------------- nodes */

typedef struct Node Node;

/* An action: group 'group' split along 'dim' over mesh axis 'axis'. */
typedef struct Edge {
  int group, dim, axis;
  Node *child;   /* NULL until taken */
  gboolean dead; /* the action fails here, or changes nothing */
} Edge;

struct Node {
  State *state;
  guint64 key;
  double score;       /* lower is better; INFINITY: cannot be costed */
  gboolean candidate; /* its results are whole along the model axes */
  guint32 *axes;      /* per group: the mesh axes it is split over (bits) */
  guint32 *dims;      /* per group: the dimensions split (bits) */
  Node *parent;       /* how it was first reached ... */
  char *script;       /* ... and by what commands (NULL for the root) */
  int depth;
  GArray *edges; /* Edge; NULL until listed */
  guint untried; /* edges[untried..] are not yet expanded (MCTS) */
  double visits, best_reward;
  guint round; /* beam: the round it was made in */
};

typedef struct Search {
  const RuleSet *rs;
  const Mesh *mesh;
  const Hardware *hw;
  const SearchOptions *o;
  GPtrArray *groups; /* Group* */
  const char *const *batch_axes;
  SpmdMemo *memo;
  GHashTable *table; /* guint64 key -> Node*: the transposition table */
  GPtrArray *nodes;  /* Node*, in the order made (owns them) */
  GRand *rng;
  Node *root, *best;
  gint64 budget, explored, transpositions;
  gint64 best_at; /* 'explored' when 'best' was costed */
  gint64 start_ns, last_progress_ns;
  gboolean stopped, interrupted;
  guint round;
} Search;

static double score_of(const CostReport *r, const Hardware *hw) {
  if (r->fits || hw->memory_bytes <= 0)
    return r->total_time;
  return r->total_time * MEMORY_PENALTY * (r->peak_bytes / hw->memory_bytes);
}

static gboolean is_batch_axis(const Search *se, const char *axis) {
  for (const char *const *b = se->batch_axes; *b; b++)
    if (strcmp(*b, axis) == 0)
      return TRUE;
  return FALSE;
}

/* Whether the results of 's' are whole along every axis but the batch
 * axes: the program as given returns each result whole, and a result
 * split over a model axis is a partial answer that someone must still
 * gather (the cost model prices the step, not what follows it).  A
 * result is split when it is a tile over such an axis, or one nested
 * directly in tiles over others. */
static gboolean results_whole(const Search *se, const State *s) {
  const Term *tuple = s->func.body;
  for (int i = 0; i < tuple->nargs; i++)
    for (const Term *t = tuple->args[i]; t->kind == TM_TILE; t = t->args[0])
      if (t->axis && !is_batch_axis(se, t->axis))
        return FALSE;
  return TRUE;
}

static double elapsed(const Search *se) {
  return (double)(partir_now_ns() - se->start_ns) / 1e9;
}

/* Whether the search must stop: budget, time or an interrupt. */
static gboolean must_stop(Search *se) {
  if (partir_interrupt)
    se->interrupted = TRUE;
  if (se->explored >= se->budget ||
      (se->o->seconds > 0 && elapsed(se) >= se->o->seconds))
    se->stopped = TRUE;
  return se->stopped || se->interrupted;
}

static void report_progress(Search *se, gboolean force) {
  if (!se->o->progress || !se->root)
    return; /* nothing to say while the root is costed */
  gint64 now = partir_now_ns();
  if (!force && now - se->last_progress_ns < 200000000)
    return;
  se->last_progress_ns = now;
  SearchProgress p = {.explored = se->explored,
                      .elapsed = elapsed(se),
                      .best_score = se->best->score,
                      .root_score = se->root->score};
  se->o->progress(se->o->progress_data, &p);
}

/* A new node for 's' (taken), costed; it joins the table. */
static Node *node_new(Search *se, State *s, guint64 key, Node *parent,
                      char *script) {
  Node *n = g_new0(Node, 1);
  n->state = s;
  n->key = key;
  n->parent = parent;
  n->script = script;
  n->depth = parent ? parent->depth + 1 : 0;
  n->round = se->round;
  gsize ng = MAX(se->groups->len, 1);
  n->axes = g_new0(guint32, ng);
  n->dims = g_new0(guint32, ng);
  if (parent) {
    memcpy(n->axes, parent->axes, ng * sizeof(guint32));
    memcpy(n->dims, parent->dims, ng * sizeof(guint32));
  }
  g_auto(CostReport) r = {0};
  g_autoptr(Diag) why = diag_new_quiet();
  n->score = pipeline_cost_state(se->rs, s, se->mesh, se->hw, se->memo, &r, why)
                 ? score_of(&r, se->hw)
                 : INFINITY;
  n->candidate = isfinite(n->score) && results_whole(se, s);
  se->explored++;
  g_hash_table_insert(se->table, &n->key, n);
  g_ptr_array_add(se->nodes, n);
  if (!se->best || (n->candidate && n->score < se->best->score)) {
    se->best = n;
    se->best_at = se->explored;
  }
  report_progress(se, FALSE);
  return n;
}

static void node_free(Node *n) {
  state_unref(n->state);
  g_free(n->axes);
  g_free(n->dims);
  g_free(n->script);
  if (n->edges)
    g_array_unref(n->edges);
  g_free(n);
}

static gboolean axis_allowed(const Search *se, const Group *g, int k) {
  return !g->data || is_batch_axis(se, se->mesh->names[k]);
}

/* The actions of 'n' in a stable order (group, axis, dimension), then
 * shuffled by the search's generator for MCTS's expansion order. */
static GArray *node_edges(Search *se, Node *n) {
  if (n->edges)
    return n->edges;
  n->edges = g_array_new(FALSE, FALSE, sizeof(Edge));
  const Func *f = &se->root->state->func;
  for (guint gi = 0; gi < se->groups->len; gi++) {
    const Group *g = se->groups->pdata[gi];
    const Type *t = f->arg_types[g_array_index(g->args, int, 0)];
    for (int k = 0; k < se->mesh->naxes; k++) {
      if ((n->axes[gi] >> k & 1) || !axis_allowed(se, g, k))
        continue;
      for (int d = 0; d < t->rank; d++)
        if (!(n->dims[gi] >> d & 1) && t->dims[d] % se->mesh->sizes[k] == 0 &&
            t->dims[d] >= se->mesh->sizes[k]) {
          Edge e = {(int)gi, d, k, NULL, FALSE};
          g_array_append_val(n->edges, e);
        }
    }
  }
  if (se->o->algo == SEARCH_MCTS)
    for (guint i = n->edges->len; i > 1; i--) {
      guint j = (guint)g_rand_int_range(se->rng, 0, (gint32)i);
      Edge tmp = g_array_index(n->edges, Edge, i - 1);
      g_array_index(n->edges, Edge, i - 1) = g_array_index(n->edges, Edge, j);
      g_array_index(n->edges, Edge, j) = tmp;
    }
  return n->edges;
}

/* The commands of action 'e' (without the propagate). */
static char *edge_script(const Search *se, const Edge *e) {
  const Group *g = se->groups->pdata[e->group];
  const Func *f = &se->root->state->func;
  GString *out = g_string_new(NULL);
  for (guint i = 0; i < g->args->len; i++) {
    int a = g_array_index(g->args, int, i);
    g_string_append_printf(out, "%sarg-tile %%%s %d %" G_GINT64_FORMAT " %s",
                           i ? "; " : "", f->arg_names[a], e->dim,
                           f->arg_types[a]->dims[e->dim] /
                               se->mesh->sizes[e->axis],
                           se->mesh->names[e->axis]);
  }
  return g_string_free(out, FALSE);
}

/* Takes action 'e' of 'n': the child, found in the table or made and
 * costed; NULL when the action fails or changes nothing (the edge is
 * then dead) or the search was interrupted. */
static Node *take(Search *se, Node *n, Edge *e) {
  if (e->child || e->dead)
    return e->child;
  /* a safe point: the nodes' states hold every term the search uses (the
   * memo empties itself after a collection), and the rewrites that
   * failed or led to known states left garbage */
  collect_maybe();
  g_autofree char *splits = edge_script(se, e);
  RewriteContext cx = {.hw = se->hw};
  g_autoptr(Diag) why = diag_new_quiet();
  char *script = g_strdup_printf("%s; propagate", splits);
  State *s = pipeline_rewrite(se->rs, n->state, script, &cx, why);
  if (!s && !partir_interrupt) {
    /* a conflict: let the cost model choose between its sides */
    g_free(script);
    script = g_strdup_printf("%s; propagate --resolve", splits);
    s = pipeline_rewrite(se->rs, n->state, script, &cx, why);
  }
  if (!s) {
    g_free(script);
    e->dead = !partir_interrupt;
    return NULL;
  }
  guint64 key = state_hash(s);
  Node *known = g_hash_table_lookup(se->table, &key);
  if (known) {
    state_unref(s);
    g_free(script);
    e->dead = known == n;
    e->child = known == n ? NULL : known;
    se->transpositions += known != n;
    return e->child;
  }
  Node *c = node_new(se, s, key, n, script);
  c->axes[e->group] |= 1u << e->axis;
  c->dims[e->group] |= 1u << e->dim;
  e->child = c;
  return c;
}

/* --------------------------------------------------------------- MCTS */

/* The reward of a node: the speed-up over the program as given; 0 for
 * one that is no candidate. */
static double reward(const Search *se, const Node *n) {
  return n->candidate && n->score > 0 ? se->root->score / n->score : 0;
}

/* UCT's choice among the children of 'n' made so far: the best reward
 * seen below each, normalized by the best of all, plus exploration. */
static Node *select_child(Search *se, Node *n) {
  double norm = MAX(reward(se, se->best), 1e-300);
  Node *pick = NULL;
  double best = -INFINITY;
  GArray *edges = n->edges;
  for (guint i = 0; i < edges->len; i++) {
    Edge *e = &g_array_index(edges, Edge, i);
    if (!e->child || e->child->depth <= n->depth)
      continue; /* a transposition back up the tree is no way down */
    double v = e->child->best_reward / norm +
               EXPLORATION * sqrt(log(n->visits + 1) / (e->child->visits + 1));
    if (v > best) {
      best = v;
      pick = e->child;
    }
  }
  return pick;
}

/* Random actions from 'n', up to ROLLOUT_DEPTH: the best reward met. */
static double rollout(Search *se, Node *n) {
  double r = reward(se, n);
  for (int step = 0; step < ROLLOUT_DEPTH && !must_stop(se); step++) {
    GArray *edges = node_edges(se, n);
    guint live = 0;
    for (guint i = 0; i < edges->len; i++)
      live += !g_array_index(edges, Edge, i).dead;
    if (live == 0)
      break;
    guint pick = (guint)g_rand_int_range(se->rng, 0, (gint32)live);
    Edge *e = NULL;
    for (guint i = 0; i < edges->len; i++)
      if (!g_array_index(edges, Edge, i).dead && pick-- == 0)
        e = &g_array_index(edges, Edge, i);
    Node *c = take(se, n, e);
    if (!c)
      continue;
    r = MAX(r, reward(se, c));
    n = c;
  }
  return r;
}

static void run_mcts(Search *se) {
  gint64 idle = 0;
  GPtrArray *path = g_ptr_array_new();
  while (!must_stop(se) && idle < IDLE_LIMIT) {
    gint64 before = se->explored;
    g_ptr_array_set_size(path, 0);
    Node *n = se->root, *leaf = NULL;
    g_ptr_array_add(path, n);
    while (!leaf && !must_stop(se) && n->depth < MAX_DEPTH) {
      GArray *edges = node_edges(se, n);
      while (n->untried < edges->len && !leaf && !must_stop(se)) {
        Edge *e = &g_array_index(edges, Edge, n->untried++);
        leaf = take(se, n, e);
      }
      if (leaf)
        break;
      Node *next = select_child(se, n);
      if (!next)
        break;
      n = next;
      g_ptr_array_add(path, n);
    }
    double r = leaf ? rollout(se, leaf) : reward(se, n);
    if (leaf)
      g_ptr_array_add(path, leaf);
    for (guint i = 0; i < path->len; i++) {
      Node *p = path->pdata[i];
      p->visits += 1;
      p->best_reward = MAX(p->best_reward, r);
    }
    idle = se->explored == before ? idle + 1 : 0;
  }
  g_ptr_array_unref(path);
}

/* --------------------------------------------------------------- beam */

static gint compare_nodes(gconstpointer a, gconstpointer b) {
  const Node *x = *(Node *const *)a, *y = *(Node *const *)b;
  if (x->score != y->score)
    return x->score < y->score ? -1 : 1;
  return 0; /* g_ptr_array_sort is stable: the order they were made */
}

static void run_beam(Search *se) {
  int width = se->o->beam_width > 0 ? se->o->beam_width : SEARCH_DEFAULT_WIDTH;
  g_autoptr(GPtrArray) beam = g_ptr_array_new();
  g_ptr_array_add(beam, se->root);
  while (beam->len > 0 && !must_stop(se)) {
    se->round++;
    g_autoptr(GPtrArray) next = g_ptr_array_new();
    for (guint b = 0; b < beam->len && !must_stop(se); b++) {
      Node *n = beam->pdata[b];
      GArray *edges = node_edges(se, n);
      for (guint i = 0; i < edges->len && !must_stop(se); i++) {
        Node *c = take(se, n, &g_array_index(edges, Edge, i));
        if (c && c->round == se->round && isfinite(c->score)) {
          c->round = G_MAXUINT; /* listed once */
          g_ptr_array_add(next, c);
        }
      }
    }
    g_ptr_array_sort(next, compare_nodes);
    if (next->len > (guint)width)
      g_ptr_array_set_size(next, (guint)width);
    g_ptr_array_set_size(beam, 0);
    for (guint i = 0; i < next->len; i++)
      g_ptr_array_add(beam, next->pdata[i]);
  }
}

/* ------------------------------------------------------------- result */

static void describe_groups(Search *se, SearchResult *out) {
  const Func *f = &se->root->state->func;
  out->groups = g_ptr_array_new_with_free_func(g_free);
  for (guint gi = 0; gi < se->groups->len; gi++) {
    const Group *g = se->groups->pdata[gi];
    GString *d = g_string_new(NULL);
    for (guint i = 0; i < g->args->len; i++)
      g_string_append_printf(d, "%s%%%s", i ? " " : "",
                             f->arg_names[g_array_index(g->args, int, i)]);
    g_ptr_array_add(out->groups, g_string_free(d, FALSE));
  }
}

gboolean search_run(const RuleSet *rs, State *root, const Mesh *mesh,
                    const Hardware *hw, const SearchOptions *o,
                    SearchResult *out, Diag *why) {
  memset(out, 0, sizeof *out);
  static const char *const default_batch[] = {"batch", NULL};
  Search se = {.rs = rs,
               .mesh = mesh,
               .hw = hw,
               .o = o,
               .batch_axes = o->batch_axes ? o->batch_axes : default_batch,
               .budget = o->budget > 0 ? o->budget : SEARCH_DEFAULT_BUDGET,
               .start_ns = partir_now_ns()};
  if (mesh->naxes == 0) {
    diag_reason(why, "search needs a mesh with axes (--mesh batch=2,model=4)");
    return FALSE;
  }
  for (const char *const *in = o->inputs; in && *in; in++) {
    gboolean found = FALSE;
    for (int i = 0; i < root->func.nargs; i++)
      found = found || strcmp(root->func.arg_names[i], *in) == 0;
    if (!found) {
      diag_reason(why, "the program has no argument %%%s (inputs)", *in);
      return FALSE;
    }
  }
  if (!pipeline_cost_state(rs, root, mesh, hw, NULL, &out->base, why)) {
    g_autofree char *reason = g_strdup(diag_text(why));
    diag_reason(why, "the program as given cannot be costed: %s", reason);
    return FALSE;
  }
  se.groups = find_groups(rs, &root->func, o->inputs);
  se.memo = spmd_memo_new(rs, mesh);
  se.table = g_hash_table_new(g_int64_hash, g_int64_equal);
  se.nodes = g_ptr_array_new_with_free_func((GDestroyNotify)node_free);
  se.rng = g_rand_new_with_seed((guint32)(o->seed ^ (o->seed >> 32)));
  se.root = node_new(&se, state_ref(root), state_hash(root), NULL, NULL);
  se.explored = se.best_at = 0; /* the root is not a state searched */
  if (o->algo == SEARCH_BEAM)
    run_beam(&se);
  else
    run_mcts(&se);
  report_progress(&se, TRUE);

  out->best = state_ref(se.best->state);
  GPtrArray *trace = g_ptr_array_new_with_free_func(g_free);
  for (Node *n = se.best; n->parent; n = n->parent)
    g_ptr_array_insert(trace, 0, g_strdup(n->script));
  out->trace = trace;
  out->explored = se.explored;
  out->best_at = se.best_at;
  out->transpositions = se.transpositions;
  out->seconds = elapsed(&se);
  out->interrupted = se.interrupted;
  describe_groups(&se, out);
  out->root_actions = (int)node_edges(&se, se.root)->len;
  gboolean ok =
      pipeline_cost_state(rs, out->best, mesh, hw, NULL, &out->cost, why);
  g_ptr_array_unref(se.nodes);
  g_hash_table_unref(se.table);
  spmd_memo_free(se.memo);
  for (guint i = 0; i < se.groups->len; i++)
    group_free(se.groups->pdata[i]);
  g_ptr_array_unref(se.groups);
  g_rand_free(se.rng);
  if (!ok)
    search_result_clear(out);
  return ok;
}

void search_result_clear(SearchResult *r) {
  if (r->best)
    state_unref(r->best);
  if (r->trace)
    g_ptr_array_unref(r->trace);
  if (r->groups)
    g_ptr_array_unref(r->groups);
  cost_report_clear(&r->cost);
  cost_report_clear(&r->base);
  memset(r, 0, sizeof *r);
}

const char *search_algo_name(SearchAlgo a) {
  return a == SEARCH_BEAM ? "beam" : "mcts";
}

gboolean search_algo_parse(const char *word, SearchAlgo *out) {
  if (strcmp(word, "mcts") == 0)
    *out = SEARCH_MCTS;
  else if (strcmp(word, "beam") == 0)
    *out = SEARCH_BEAM;
  else
    return FALSE;
  return TRUE;
}

void search_script(GString *out, const SearchResult *r) {
  for (guint i = 0; i < r->trace->len; i++)
    g_string_append_printf(out, "%s%s", i ? "; " : "",
                           (char *)r->trace->pdata[i]);
}

void search_tactic(GString *out, const SearchResult *r, const char *header) {
  g_string_append_printf(out, "%s", header ? header : "");
  g_string_append(out, "return function(s, mesh, opts)\n");
  for (guint i = 0; i < r->trace->len; i++)
    g_string_append_printf(out, "  s = s:exec(\"%s\", { tolerate = true })\n",
                           (char *)r->trace->pdata[i]);
  g_string_append(out, "  return s\nend\n");
}

static void append_bytes(GString *out, double b) {
  g_autofree char *s = g_format_size_full((guint64)b, G_FORMAT_SIZE_IEC_UNITS);
  g_string_append(out, s);
}

void search_print(GString *out, const SearchResult *r, const Hardware *hw) {
  const CostReport *c[2] = {&r->base, &r->cost};
  g_string_append_printf(out, "%-16s %-22s %s\n", "", "as given", "found");
  for (int row = 0; row < 7; row++) {
    static const char *const names[] = {
        "FLOPs/device", "peak memory",   "fits", "bytes sent",
        "compute",      "communication", "total"};
    g_string_append_printf(out, "%-16s", names[row]);
    for (int k = 0; k < 2; k++) {
      GString *cell = g_string_new(" ");
      switch (row) {
      case 0:
        g_string_append_printf(cell, "%.4g", c[k]->flops);
        break;
      case 1:
        append_bytes(cell, c[k]->peak_bytes);
        break;
      case 2:
        g_string_append(cell, c[k]->fits ? "yes" : "no");
        g_string_append_printf(cell, " (%.3g%% of %s)",
                               100 * c[k]->peak_bytes / hw->memory_bytes,
                               hw->name);
        break;
      case 3:
        append_bytes(cell, cost_comm_bytes(c[k]));
        break;
      case 4:
        cost_append_time(cell, c[k]->compute_time);
        break;
      case 5:
        cost_append_time(cell, c[k]->comm_time);
        break;
      default:
        cost_append_time(cell, c[k]->total_time);
        if (k == 1 && r->cost.total_time > 0)
          g_string_append_printf(cell, " (%.3gx faster)",
                                 r->base.total_time / r->cost.total_time);
      }
      g_string_append_printf(out, k == 0 ? "%-23s" : "%s", cell->str);
      g_string_free(cell, TRUE);
    }
    g_string_append_c(out, '\n');
  }
  for (guint i = 0; r->cost.comms && i < r->cost.comms->len; i++) {
    const CostComm *cc = &g_array_index(r->cost.comms, CostComm, i);
    g_string_append_printf(out, "  %s over %s: %g per step\n", op_name(cc->op),
                           cc->axes, cc->count);
  }
  g_string_append_printf(out, "actions (%u):\n", r->trace->len);
  for (guint i = 0; i < r->trace->len; i++)
    g_string_append_printf(out, "  %s\n", (char *)r->trace->pdata[i]);
}
