/* lua.c — the Lua 5.4 module 'partir'.
 *
 * Program states are userdata of metatable "partir.State" holding a
 * State reference; like the engine's states they are immutable, and every
 * verb returns a new state (a failed verb raises an error and leaves its
 * input as it was).  The verbs are the engine's commands (rewrite/command.c),
 * so Lua, the REPL and the CLI mean the same thing by "arg-tile 0 0 8".
 *
 *   partir.parse(text [, name [, opts]]) / partir.load(path [, opts])
 *       -> state, {mesh, actions, written}
 *       (opts: shardings = "apply"|"ignore", mesh = "batch=2,...": a
 *       StableHLO program's own mesh and the commands its shardings
 *       became; 'written' is the state before them)
 *   partir.rules([substring])                         -> {{name, origin, text}}
 *   s:print([expr]) s:check() s:args() s:values() s:regions()
 *   s:matches(rule) s:apply(rule [, at [, params]])
 *   s:arg_tile(arg, dim, width [, axis]) s:tile(value, dim, width [, axis])
 *   s:sum(value, width [, axis [, reduction]])
 *   s:propagate([opts]) -> state, {report lines}, {choices}
 *   s:fuse() s:simplify()
 *   s:exec("cmd; cmd" [, opts]) -> state, {report lines}, {choices}
 *   s:run([seed]) -> {{type, shape, values}}
 *   s:exec{mesh =, seed =, inputs =, exact =} -> {{type, shape, values}}
 *   s:bench{mesh =, runs =, seed =, inputs =, exact =} -> {min, median, runs}
 *   s:lower(mesh [, "dot"]) s:stats(mesh) -> text
 *   s:export(mesh [, "stablehlo"|"stablehlo-gspmd"|"stablehlo-spmd"]) -> text
 *   s:search{mesh =, hw =, algo =, budget =, time =, seed =, ...}
 *   partir.search{state = s, mesh =, ...} -> best state, {time, trace,
 *       tactic, ...}: automatic partitioning (docs/search.md)
 *
 * s:exec with a table runs the program compiled (pipeline stages 6 and
 * 7) instead of the interpreter: a string is a script of engine
 * commands, a table the options of a compiled run.
 *
 * What a pass could not resolve (its report) fails the verb, so a tactic
 * fails loudly instead of returning a degraded program; a tactic that
 * expects it passes {tolerate = true} as the pass verb's options, and
 * gets the report lines back instead.  A conflict (two splits over one
 * axis that an operator cannot both follow) fails propagate whatever the
 * options: {resolve = true} runs 'propagate --resolve', which decides it
 * by the cost model (on the hardware the front end names,
 * plua_set_hardware) and returns its choices.
 *
 * Error discipline (STYLE.md): arguments are checked first with
 * luaL_check*, the work runs in helpers that return a result or fill a
 * GString, and the Lua error is raised last, after C resources are freed,
 * because lua_error longjmps past any cleanup.
 */
#include "bind/bind.h"

#include <lauxlib.h>
#include <lualib.h>
#include <string.h>

#define STATE_MT "partir.State"
#define RULES_KEY "partir.rules"
#define HW_KEY "partir.hw" /* the hardware --resolve prices on (a name) */

static const RuleSet *rules_of(lua_State *L) {
  lua_getfield(L, LUA_REGISTRYINDEX, RULES_KEY);
  const RuleSet *rs = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return rs;
}

/* Pushes a new userdata owning one reference to 's'. */
static void push_state(lua_State *L, State *s) {
  State **box = lua_newuserdatauv(L, sizeof(State *), 0);
  *box = s;
  luaL_setmetatable(L, STATE_MT);
}

static State *check_state(lua_State *L, int i) {
  State **box = luaL_checkudata(L, i, STATE_MT);
  if (!*box) /* revived by a finalizer after its __gc ran */
    luaL_argerror(L, i, "the state has been collected");
  return *box;
}

/* Raises the reason 'why' holds as a Lua error after freeing it. */
static int raise_error(lua_State *L, Diag *why) {
  lua_pushstring(L, diag_text(why));
  diag_free(why);
  return lua_error(L);
}

/* ------------------------------------------------------ making states */

/* The options table at 'i' of load and parse (may be absent): 'mesh' into
 * 'mesh' (its words checked), 'shardings' into 'o'.  Raises on a bad
 * one, before anything is allocated. */
static void check_load_options(lua_State *L, int i, LoadOptions *o,
                               Mesh *mesh) {
  *o = (LoadOptions){.rs = rules_of(L)};
  *mesh = (Mesh){0};
  if (lua_isnoneornil(L, i))
    return;
  luaL_checktype(L, i, LUA_TTABLE);
  Diag why;
  diag_init(&why, NULL);
  lua_getfield(L, i, "shardings");
  const char *shardings = lua_tostring(L, -1);
  gboolean ok = lua_isnil(L, -1) ||
                (shardings && pipeline_shardings_option(
                                  shardings, &o->ignore_shardings, &why));
  lua_pop(L, 1);
  lua_getfield(L, i, "mesh");
  const char *spec = lua_tostring(L, -1);
  if (ok && !lua_isnil(L, -1))
    ok = spec && mesh_parse(spec, mesh, &why);
  lua_pop(L, 1);
  if (ok) {
    diag_clear(&why);
    o->mesh = mesh;
    return;
  }
  lua_pushfstring(L, "options: %s",
                  diag_any(&why) ? diag_text(&why)
                                 : "'shardings' and 'mesh' are strings");
  diag_clear(&why);
  lua_error(L);
}

/* Pushes the program's state after its own commands, and a table: its
 * 'mesh' (nil: none), the 'actions' its shardings became, and the state
 * as 'written'.  Takes 'p'. */
static int push_program(lua_State *L, Program *p) {
  push_state(L, state_ref(pipeline_program_state(p)));
  lua_createtable(L, 0, 3);
  if (p->has_mesh) {
    g_autofree char *m = mesh_to_string(&p->mesh);
    lua_pushstring(L, m);
    lua_setfield(L, -2, "mesh");
  }
  lua_createtable(L, (int)p->steps->len, 0);
  for (guint k = 0; k < p->steps->len; k++) {
    lua_pushstring(L, ((const LayoutStep *)p->steps->pdata[k])->command);
    lua_rawseti(L, -2, (lua_Integer)k + 1);
  }
  lua_setfield(L, -2, "actions");
  push_state(L, state_ref(p->initial));
  lua_setfield(L, -2, "written");
  pipeline_program_clear(p);
  return 2;
}

static int l_parse(lua_State *L) {
  size_t len;
  const char *text = luaL_checklstring(L, 1, &len);
  const char *name = luaL_optstring(L, 2, "(lua)");
  LoadOptions o;
  Mesh mesh;
  check_load_options(L, 3, &o, &mesh);
  Diag *why = diag_new(NULL);
  Program p;
  if (!pipeline_open_text(name, text, len, &o, &p, why))
    return raise_error(L, why);
  diag_free(why);
  return push_program(L, &p);
}

static int l_load(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  LoadOptions o;
  Mesh mesh;
  check_load_options(L, 2, &o, &mesh);
  Diag *why = diag_new(NULL);
  GError *error = NULL;
  Program p;
  if (!pipeline_open_program(path, &o, &p, why, &error)) {
    if (error) {
      diag_reason(why, "%s", error->message);
      g_error_free(error);
    }
    return raise_error(L, why);
  }
  diag_free(why);
  return push_program(L, &p);
}

static int l_rules(lua_State *L) {
  const char *filter = luaL_optstring(L, 1, "");
  const RuleSet *rs = rules_of(L);
  lua_newtable(L);
  int n = 0;
  for (guint i = 0; i < rs->rules->len; i++) {
    const Rule *r = g_ptr_array_index(rs->rules, i);
    if (!strstr(r->name, filter))
      continue;
    lua_createtable(L, 0, 3);
    lua_pushstring(L, r->name);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, r->origin);
    lua_setfield(L, -2, "origin");
    lua_pushstring(L, r->text);
    lua_setfield(L, -2, "text");
    lua_rawseti(L, -2, ++n);
  }
  return 1;
}

/* ----------------------------------------------------------- reading */

static int l_print(lua_State *L) {
  State *s = check_state(L, 1);
  gboolean expr = lua_toboolean(L, 2);
  GString *out = g_string_new(NULL);
  state_print(out, s, expr);
  lua_pushlstring(L, out->str, out->len);
  g_string_free(out, TRUE);
  return 1;
}

static int l_tostring(lua_State *L) {
  lua_settop(L, 1);
  return l_print(L);
}

/* The same program: the same body under the same signature. */
static gboolean same_program(const State *a, const State *b) {
  const Func *f = &a->func, *g = &b->func;
  if (f->body != g->body || f->nargs != g->nargs ||
      strcmp(f->name, g->name) != 0)
    return FALSE;
  for (int i = 0; i < f->nargs; i++)
    if (f->arg_types[i] != g->arg_types[i] ||
        strcmp(f->arg_names[i], g->arg_names[i]) != 0)
      return FALSE;
  return TRUE;
}

static int l_eq(lua_State *L) {
  State **a = luaL_testudata(L, 1, STATE_MT),
        **b = luaL_testudata(L, 2, STATE_MT);
  lua_pushboolean(L, a && b && *a && *b && same_program(*a, *b));
  return 1;
}

static int l_gc(lua_State *L) {
  State **box = luaL_checkudata(L, 1, STATE_MT);
  if (*box)
    state_unref(*box);
  *box = NULL;
  return 0;
}

/* Re-parses the canonical print: the state type-checks and round-trips. */
static int l_check(lua_State *L) {
  State *s = check_state(L, 1);
  GString *text = g_string_new(NULL);
  state_print(text, s, FALSE);
  Diag *why = diag_new(NULL);
  Module *m = pipeline_read_program("(state)", text->str, text->len, why);
  gboolean same = m && module_entry(m)->body == s->func.body;
  if (m)
    module_free(m);
  g_string_free(text, TRUE);
  if (!same) {
    if (!diag_any(why))
      diag_reason(why, "%s", "the state does not parse back to itself");
    return raise_error(L, why);
  }
  diag_free(why);
  lua_pushboolean(L, 1);
  return 1;
}

static void push_type(lua_State *L, const Type *t) {
  g_autofree char *ty = type_to_string(t);
  lua_pushstring(L, ty);
}

static void push_shape(lua_State *L, const Type *t) {
  lua_createtable(L, t->rank, 0);
  for (int i = 0; i < t->rank; i++) {
    lua_pushinteger(L, t->dims[i]);
    lua_rawseti(L, -2, i + 1);
  }
}

/* {name, index, type, shape}: an argument or a result, at list[at]
 * of the table on top of the stack. */
static void push_named_at(lua_State *L, const char *name, int i,
                          const Type *type, int at) {
  lua_createtable(L, 0, 4);
  lua_pushstring(L, name);
  lua_setfield(L, -2, "name");
  lua_pushinteger(L, i);
  lua_setfield(L, -2, "index");
  push_type(L, type);
  lua_setfield(L, -2, "type");
  push_shape(L, type);
  lua_setfield(L, -2, "shape");
  lua_rawseti(L, -2, at);
}

/* The same at list[i + 1]. */
static void push_named(lua_State *L, const char *name, int i,
                       const Type *type) {
  push_named_at(L, name, i, type, i + 1);
}

static int l_args(lua_State *L) {
  State *s = check_state(L, 1);
  lua_createtable(L, s->func.nargs, 0);
  for (int i = 0; i < s->func.nargs; i++)
    push_named(L, s->func.arg_names[i], i, s->func.arg_types[i]);
  return 1;
}

/* s:data_args([dim]): the arguments that are data, not parameters
 * (rw_data_args), as s:args() lists them. */
static int l_data_args(lua_State *L) {
  State *s = check_state(L, 1);
  lua_Integer dim = luaL_optinteger(L, 2, 0);
  luaL_argcheck(L, dim >= 0 && dim < PARTIR_MAX_RANK, 2,
                "a dimension from 0 to 7");
  gboolean *is_data = g_new0(gboolean, (gsize)s->func.nargs + 1);
  rw_data_args(rules_of(L), &s->func, (int)dim, is_data);
  lua_newtable(L);
  int n = 0;
  for (int i = 0; i < s->func.nargs; i++)
    if (is_data[i])
      push_named_at(L, s->func.arg_names[i], i, s->func.arg_types[i], ++n);
  g_free(is_data);
  return 1;
}

typedef struct ValuesCtx {
  lua_State *L;
  int n;
  GHashTable *names;   /* placed Term -> printed name (this region's view) */
  GHashTable *yields;  /* a region's body Term -> the region's list index */
  GHashTable *results; /* a returned Term -> 1 + its first result index */
  gboolean regions_only;
  gboolean keep_names; /* 'names' owns copies, kept after the walk */
  int types;           /* stack index of a table: Type* -> its text */
} ValuesCtx;

static const char *kind_name(TermKind k) {
  switch (k) {
  case TM_ARG:
    return "arg";
  case TM_OP:
    return "op";
  case TM_SLICE:
    return "slice";
  case TM_TILE:
    return "tile";
  case TM_SUM:
    return "sum";
  default:
    return "other";
  }
}

static void push_attr_value(lua_State *L, const AttrValue *v) {
  switch (v->kind) {
  case AV_INT:
    lua_pushinteger(L, v->i);
    return;
  case AV_FLOAT:
    lua_pushnumber(L, v->f);
    return;
  case AV_SYMBOL:
    lua_pushstring(L, v->sym);
    return;
  case AV_LIST:
    lua_createtable(L, v->count, 0);
    for (int i = 0; i < v->count; i++) {
      push_attr_value(L, &v->items[i]);
      lua_rawseti(L, -2, i + 1);
    }
    return;
  }
}

/* An operator's attributes as a table (a constant's values are left out:
 * they can be large and tactics do not need them). */
static void push_attrs(lua_State *L, const Term *t) {
  lua_createtable(L, 0, t->attrs->count);
  for (int i = 0; i < t->attrs->count; i++) {
    if (t->op == OP_CONSTANT)
      continue;
    push_attr_value(L, &t->attrs->values[i]);
    lua_setfield(L, -2, t->attrs->keys[i]);
  }
}

/* One table per value, in print order: name, kind, op, type, shape,
 * attrs, operands (names of operand values; binders are not values), dim,
 * range {n, w}, axis and yield (the body's value) for tiles and sums,
 * result (the first result that returns it, from 0), and around: the mesh axes
 * of the regions the value is computed in, outermost first. */
static void visit_value(void *ud, const char *name, const Term *t,
                        const char *const *around, int naround) {
  ValuesCtx *c = ud;
  lua_State *L = c->L;
  /* the walk's names live as long as it does */
  g_hash_table_insert(c->names, (gpointer)t,
                      c->keep_names ? g_strdup(name) : (gpointer)name);
  /* a region is listed before its body: its 'yield' is named here */
  gpointer region = g_hash_table_lookup(c->yields, t);
  if (region) {
    lua_rawgeti(L, -1, GPOINTER_TO_INT(region));
    lua_pushstring(L, name);
    lua_setfield(L, -2, "yield");
    lua_pop(L, 1);
    g_hash_table_remove(c->yields, t);
  }
  if (c->regions_only && t->kind != TM_TILE && t->kind != TM_SUM)
    return;
  lua_createtable(L, 0, 8);
  lua_pushstring(L, name);
  lua_setfield(L, -2, "name");
  lua_pushstring(L, kind_name(t->kind));
  lua_setfield(L, -2, "kind");
  if (t->kind == TM_OP) {
    lua_pushstring(L, op_name(t->op));
    lua_setfield(L, -2, "op");
    push_attrs(L, t);
    lua_setfield(L, -2, "attrs");
  }
  /* a type's text made once a walk: types are interned, and a model
   * has few (printing them was 40 % of the walk) */
  if (lua_rawgetp(L, c->types, t->type) == LUA_TNIL) {
    lua_pop(L, 1);
    push_type(L, t->type);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, c->types, t->type);
  }
  lua_setfield(L, -2, "type");
  push_shape(L, t->type);
  lua_setfield(L, -2, "shape");
  if (t->kind == TM_SLICE || t->kind == TM_TILE) {
    lua_pushinteger(L, t->index);
    lua_setfield(L, -2, "dim");
  }
  if (t->kind == TM_TILE || t->kind == TM_SUM) {
    lua_createtable(L, 0, 2);
    lua_pushinteger(L, t->range->n);
    lua_setfield(L, -2, "n");
    lua_pushinteger(L, t->range->w);
    lua_setfield(L, -2, "w");
    lua_setfield(L, -2, "range");
    if (t->axis) {
      lua_pushstring(L, t->axis);
      lua_setfield(L, -2, "axis");
    }
  }
  if (t->kind == TM_OP || t->kind == TM_SLICE) {
    lua_createtable(L, t->nargs, 0);
    int k = 0;
    for (int i = 0; i < t->nargs; i++) {
      const Term *a = t->args[i];
      if (a->kind == TM_BVAR)
        continue;
      const char *an = g_hash_table_lookup(c->names, a);
      lua_pushstring(L, an ? an : "?");
      lua_rawseti(L, -2, ++k);
    }
    lua_setfield(L, -2, "operands");
  }
  lua_createtable(L, naround, 0);
  for (int i = 0, k = 0; i < naround; i++)
    if (around[i]) {
      lua_pushstring(L, around[i]);
      lua_rawseti(L, -2, ++k);
    }
  lua_setfield(L, -2, "around");
  gpointer result = naround ? NULL : g_hash_table_lookup(c->results, t);
  if (result) { /* returned values are computed at the top */
    lua_pushinteger(L, GPOINTER_TO_INT(result) - 1);
    lua_setfield(L, -2, "result");
  }
  lua_rawseti(L, -2, ++c->n);
  if (t->kind == TM_TILE || t->kind == TM_SUM) {
    const char *body = g_hash_table_lookup(c->names, t->args[0]);
    if (body) { /* the body is a value named before (an argument) */
      lua_rawgeti(L, -1, c->n);
      lua_pushstring(L, body);
      lua_setfield(L, -2, "yield");
      lua_pop(L, 1);
    } else {
      g_hash_table_insert(c->yields, (gpointer)t->args[0],
                          GINT_TO_POINTER(c->n));
    }
  }
}

static int values_common(lua_State *L, gboolean regions_only) {
  State *s = check_state(L, 1);
  lua_newtable(L); /* the types' texts, below the list */
  int types = lua_gettop(L);
  lua_newtable(L);
  ValuesCtx c = {L,
                 0,
                 g_hash_table_new(NULL, NULL),
                 g_hash_table_new(NULL, NULL),
                 g_hash_table_new(NULL, NULL),
                 regions_only,
                 FALSE,
                 types};
  const Term *body = s->func.body;
  for (int i = body->nargs - 1; i >= 0; i--) /* the first index wins */
    g_hash_table_insert(c.results, (gpointer)body->args[i],
                        GINT_TO_POINTER(i + 1));
  /* schedule_walk does not call Lua functions that can raise */
  schedule_walk_around(s->module, &s->func, visit_value, &c);
  g_hash_table_unref(c.names);
  g_hash_table_unref(c.yields);
  g_hash_table_unref(c.results);
  return 1;
}

static int l_values(lua_State *L) { return values_common(L, FALSE); }
static int l_regions(lua_State *L) { return values_common(L, TRUE); }

/* The results, as s:args gives the arguments: {name, index, type,
 * shape}, 'name' the value returned (as s:values names it). */
static int l_results(lua_State *L) {
  State *s = check_state(L, 1);
  lua_newtable(L); /* the types' texts and the walk's list, dropped */
  int types = lua_gettop(L);
  lua_newtable(L);
  ValuesCtx c = {L,
                 0,
                 g_hash_table_new_full(NULL, NULL, NULL, g_free),
                 g_hash_table_new(NULL, NULL),
                 g_hash_table_new(NULL, NULL),
                 TRUE,
                 TRUE,
                 types};
  schedule_walk_around(s->module, &s->func, visit_value, &c);
  lua_pop(L, 2);
  const Term *body = s->func.body;
  lua_createtable(L, body->nargs, 0);
  const int *updates = s->func.result_updates;
  for (int i = 0; i < body->nargs; i++) {
    push_named(L, g_hash_table_lookup(c.names, body->args[i]), i,
               body->args[i]->type);
    if (updates && updates[i] >= 0) { /* the entry just set */
      lua_rawgeti(L, -1, i + 1);
      lua_pushstring(L, s->func.arg_names[updates[i]]);
      lua_setfield(L, -2, "updates");
      lua_pop(L, 1);
    }
  }
  g_hash_table_unref(c.names);
  g_hash_table_unref(c.yields);
  g_hash_table_unref(c.results);
  return 1;
}

static int l_matches(lua_State *L) {
  State *s = check_state(L, 1);
  const char *name = luaL_checkstring(L, 2);
  const Rule *rule = ruleset_find(rules_of(L), name);
  if (!rule) { /* no g_autofree across lua_error */
    char *hint = ruleset_did_you_mean(rules_of(L), name);
    luaL_where(L, 1);
    lua_pushfstring(L, "no rule '%s'%s", name, hint);
    g_free(hint);
    lua_concat(L, 2);
    return lua_error(L);
  }
  GPtrArray *locs = rw_matches(rules_of(L), s, rule);
  lua_createtable(L, (int)locs->len, 0);
  for (guint i = 0; i < locs->len; i++) {
    lua_pushstring(L, ((Location *)g_ptr_array_index(locs, i))->name);
    lua_rawseti(L, -2, (int)i + 1);
  }
  g_ptr_array_unref(locs);
  return 1;
}

/* ---------------------------------------------------------- rewriting */

/* What a verb does with what its passes could not resolve (propagate's
 * report: a tiling it cannot carry, conflicting tilings, an axis bound
 * twice, regions nested past the store's limit, ...). */
typedef enum ReportMode {
  REPORT_NONE,     /* the verb runs no pass: nothing to collect */
  REPORT_FAIL,     /* a report is an error: the tactic fails loudly */
  REPORT_TOLERATE, /* {tolerate = true}: the report is returned */
} ReportMode;

/* Whether the options table at index 'i' (a table) sets 'key'. */
static gboolean opt_flag(lua_State *L, int i, const char *key) {
  lua_getfield(L, i, key);
  gboolean on = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return on;
}

/* The report mode of a pass verb from its options table at index 'i'
 * (absent or nil: fail on a report; {tolerate = true}: return it), and
 * for propagate ('resolve' not NULL) whether {resolve = true} asks for
 * 'propagate --resolve'.  Raises on anything else, before any C resource
 * is held. */
static ReportMode check_report_opts(lua_State *L, int i, gboolean *resolve) {
  if (resolve)
    *resolve = FALSE;
  if (lua_isnoneornil(L, i))
    return REPORT_FAIL;
  luaL_checktype(L, i, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, i)) {
    const char *key =
        lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
    gboolean known = key && (strcmp(key, "tolerate") == 0 ||
                             (resolve && strcmp(key, "resolve") == 0));
    if (!known)
      luaL_argerror(L, i,
                    resolve ? "the options are 'tolerate' and 'resolve'"
                            : "the only option is 'tolerate'");
    lua_pop(L, 1);
  }
  if (resolve)
    *resolve = opt_flag(L, i, "resolve");
  return opt_flag(L, i, "tolerate") ? REPORT_TOLERATE : REPORT_FAIL;
}

/* At most this many lines of a report go into the error it raises. */
#define REPORT_LINES_SHOWN 5

/* The error for the report 'lines' of 'verb' ('n' lines that are not
 * empty): the lines themselves, and how a tactic that expects them
 * accepts them ('tolerant'). */
static char *report_error(const char *verb, const char *tolerant, char **lines,
                          int n) {
  GString *msg = g_string_new(NULL);
  if (strcmp(verb, "exec") == 0)
    g_string_assign(msg, "exec: its passes did not resolve: ");
  else
    g_string_printf(msg, "%s did not resolve: ", verb);
  int shown = 0;
  for (char **l = lines; *l; l++) {
    if (!**l)
      continue;
    if (shown == REPORT_LINES_SHOWN) {
      g_string_append_printf(msg, "; and %d more", n - shown);
      break;
    }
    g_string_append_printf(msg, "%s%s", shown++ > 0 ? "; " : "", *l);
  }
  g_string_append_printf(msg, " (%s accepts it and returns the report)",
                         tolerant);
  return g_string_free(msg, FALSE);
}

/* The way to tolerate a report, as the error about it says. */
static const char *tolerant_form(const char *verb) {
  if (strcmp(verb, "exec") == 0)
    return "s:exec(script, {tolerate = true})";
  if (strcmp(verb, "propagate") == 0)
    return "s:propagate{tolerate = true}";
  if (strcmp(verb, "fuse") == 0)
    return "s:fuse{tolerate = true}";
  return "s:simplify{tolerate = true}";
}

/* Pushes the non-empty strings of 'lines' as a list. */
static void push_lines(lua_State *L, char **lines) {
  lua_newtable(L);
  int n = 0;
  for (char **l = lines; *l; l++)
    if (**l) {
      lua_pushstring(L, *l);
      lua_rawseti(L, -2, ++n);
    }
}

/* Runs engine commands on 's' for the Lua verb 'verb'.  Pushes the new
 * state, then (when 'nret' is 2 or 3) a table of the report lines: empty
 * unless the report is tolerated, then (when 'nret' is 3) the choices
 * of 'propagate --resolve'.  A report that is not tolerated raises it,
 * so that a tactic never goes on with a program its passes left
 * unresolved; so does a command that fails (a conflict fails
 * propagate). */
static int run_commands(lua_State *L, State *s, const char *verb,
                        const char *script, ReportMode mode, int nret) {
  collect_maybe(); /* a safe point: states hold every term in use */
  lua_getfield(L, LUA_REGISTRYINDEX, HW_KEY);
  const char *hw = lua_tostring(L, -1); /* the registry keeps it alive */
  lua_pop(L, 1);
  Diag *why = diag_new(NULL);
  /* no pass to report on: propagate would skip the walk that checks axes */
  GString *report = mode != REPORT_NONE ? g_string_new(NULL) : NULL;
  GString *choices = g_string_new(NULL);
  RewriteContext cx = {.hw_name = hw, .report = report, .choices = choices};
  State *next = pipeline_rewrite(rules_of(L), s, script, &cx, why);
  if (!next) {
    if (report)
      g_string_free(report, TRUE);
    g_string_free(choices, TRUE);
    return raise_error(L, why);
  }
  diag_free(why);
  char **lines = g_strsplit(report ? report->str : "", "\n", -1);
  if (report)
    g_string_free(report, TRUE);
  char **chosen = g_strsplit(choices->str, "\n", -1);
  g_string_free(choices, TRUE);
  int n = 0;
  for (char **l = lines; *l; l++)
    n += **l != 0;
  if (n > 0 && mode == REPORT_FAIL) {
    state_unref(next);
    g_strfreev(chosen);
    char *msg = report_error(verb, tolerant_form(verb), lines, n);
    g_strfreev(lines);
    lua_pushstring(L, msg);
    g_free(msg);
    return lua_error(L);
  }
  push_state(L, next);
  if (nret >= 2)
    push_lines(L, lines);
  if (nret >= 3)
    push_lines(L, chosen);
  g_strfreev(lines);
  g_strfreev(chosen);
  return nret;
}

/* TRUE for a word the command language takes as one token: letters,
 * digits and _ . % - (value, rule and axis names, numbers). */
static gboolean plain_word(const char *s, size_t len) {
  if (len == 0 || len > 4096)
    return FALSE;
  for (size_t i = 0; i < len; i++)
    if (!g_ascii_isalnum(s[i]) && !strchr("_.%-", s[i]))
      return FALSE;
  return TRUE;
}

/* A value reference, pushed as "%name": a name ("%3", "x") or an integer
 * N, which is the value %N, or for arg_tile ('index_bare') the argument
 * of index N, kept bare. */
static const char *check_ref(lua_State *L, int i, gboolean index_bare) {
  if (lua_isinteger(L, i))
    return lua_pushfstring(L, index_bare ? "%I" : "%%%I",
                           (LUAI_UACINT)lua_tointeger(L, i));
  size_t len;
  const char *name = luaL_checklstring(L, i, &len);
  if (!plain_word(name, len))
    luaL_argerror(L, i, "not a value name");
  return name[0] == '%' ? name : lua_pushfstring(L, "%%%s", name);
}

/* An axis name (letters, digits, '_'), or NULL when absent. */
static const char *opt_axis(lua_State *L, int i) {
  if (lua_isnoneornil(L, i))
    return NULL;
  size_t len;
  const char *axis = luaL_checklstring(L, i, &len);
  gboolean ok = len > 0 && len <= 4096;
  for (size_t k = 0; k < len && ok; k++)
    ok = g_ascii_isalnum(axis[k]) || axis[k] == '_';
  if (!ok)
    luaL_argerror(L, i, "not an axis name (letters, digits, '_')");
  return axis;
}

static lua_Integer check_int(lua_State *L, int i) {
  return luaL_checkinteger(L, i); /* 8.0 is accepted, 8.5 is not */
}

static int l_arg_tile(lua_State *L) {
  check_int(L, 4);
  lua_settop(L, 5); /* pushed strings go above the arguments */
  State *s = check_state(L, 1);
  const char *arg = check_ref(L, 2, TRUE);
  lua_Integer dim = check_int(L, 3), width = check_int(L, 4);
  const char *axis = opt_axis(L, 5);
  /* an integer stays bare: arg-tile reads it as the argument's index */
  const char *cmd =
      lua_pushfstring(L, "arg-tile %s %I %I %s", arg, (LUAI_UACINT)dim,
                      (LUAI_UACINT)width, axis ? axis : "");
  return run_commands(L, s, "", cmd, REPORT_NONE, 1);
}

static int l_tile(lua_State *L) {
  check_int(L, 4);
  lua_settop(L, 5);
  State *s = check_state(L, 1);
  const char *v = check_ref(L, 2, FALSE);
  lua_Integer dim = check_int(L, 3), width = check_int(L, 4);
  const char *axis = opt_axis(L, 5);
  const char *cmd = lua_pushfstring(L, "tile %s %I %I %s", v, (LUAI_UACINT)dim,
                                    (LUAI_UACINT)width, axis ? axis : "");
  return run_commands(L, s, "", cmd, REPORT_NONE, 1);
}

static int l_sum(lua_State *L) {
  check_int(L, 3);
  lua_settop(L, 5);
  State *s = check_state(L, 1);
  const char *v = check_ref(L, 2, FALSE);
  lua_Integer width = check_int(L, 3);
  const char *axis = opt_axis(L, 4);
  lua_Integer k = luaL_optinteger(L, 5, 0);
  const char *cmd = lua_pushfstring(L, "sum %s %I %s %I", v, (LUAI_UACINT)width,
                                    axis ? axis : "-", (LUAI_UACINT)k);
  return run_commands(L, s, "", cmd, REPORT_NONE, 1);
}

static int l_apply(lua_State *L) {
  State *s = check_state(L, 1);
  size_t len;
  const char *rule = luaL_checklstring(L, 2, &len);
  lua_settop(L, 4); /* pushed strings go above the arguments */
  if (!plain_word(rule, len))
    luaL_argerror(L, 2, "not a rule name");
  const char *at = lua_isnil(L, 3) ? NULL : check_ref(L, 3, FALSE);
  if (!lua_isnil(L, 4))
    luaL_checktype(L, 4, LUA_TTABLE);
  /* nothing below raises until the GString is handed over */
  GString *cmd = g_string_new(NULL);
  g_string_printf(cmd, "apply %s%s%s", rule, at ? " at " : "", at ? at : "");
  const char *bad = NULL;
  if (lua_istable(L, 4)) {
    lua_pushnil(L);
    while (lua_next(L, 4)) {
      size_t klen = 0, vlen = 0;
      const char *k =
          lua_type(L, -2) == LUA_TSTRING ? lua_tolstring(L, -2, &klen) : NULL;
      lua_Integer iv = 0;
      int is_int = 0;
      if (lua_type(L, -1) == LUA_TNUMBER)
        iv = lua_tointegerx(L, -1, &is_int);
      const char *v =
          lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &vlen) : NULL;
      if (!k || !plain_word(k, klen) ||
          (!is_int && (!v || !plain_word(v, vlen)))) {
        bad = "apply: parameters are NAME = number or axis name";
        lua_pop(L, 2);
        break;
      }
      if (is_int)
        g_string_append_printf(cmd, " %s=%lld", k, (long long)iv);
      else
        g_string_append_printf(cmd, " %s=%s", k, v);
      lua_pop(L, 1);
    }
  }
  if (bad) {
    g_string_free(cmd, TRUE);
    Diag *why = diag_new(NULL);
    diag_reason(why, "%s", bad);
    return raise_error(L, why);
  }
  lua_pushlstring(L, cmd->str, cmd->len);
  g_string_free(cmd, TRUE);
  return run_commands(L, s, "", lua_tostring(L, -1), REPORT_NONE, 1);
}

/* s:propagate([opts]) -> state, {report}, {choices}: a report fails the
 * verb unless opts.tolerate (then the report is the second result); a
 * conflict fails it unless opts.resolve (then the choices are the
 * third). */
static int l_propagate(lua_State *L) {
  State *s = check_state(L, 1);
  gboolean resolve;
  ReportMode mode = check_report_opts(L, 2, &resolve);
  return run_commands(L, s, "propagate",
                      resolve ? "propagate --resolve" : "propagate", mode, 3);
}

/* s:fuse([opts]), s:simplify([opts]) -> state (and the report when
 * tolerated): these passes report only the store's limits and axes bound
 * twice. */
static int pass_common(lua_State *L, const char *pass) {
  State *s = check_state(L, 1);
  ReportMode mode = check_report_opts(L, 2, NULL);
  return run_commands(L, s, pass, pass, mode, mode == REPORT_TOLERATE ? 2 : 1);
}

static int l_fuse(lua_State *L) { return pass_common(L, "fuse"); }
static int l_simplify(lua_State *L) { return pass_common(L, "simplify"); }

/* Pushes a list of tensors as s:run returns them: {type, shape,
 * values} each, the values flat in row-major order. */
static void push_results(lua_State *L, GPtrArray *results) {
  lua_createtable(L, (int)results->len, 0);
  for (guint r = 0; r < results->len; r++) {
    const Tensor *t = g_ptr_array_index(results, r);
    lua_createtable(L, 0, 3);
    push_type(L, t->type);
    lua_setfield(L, -2, "type");
    push_shape(L, t->type);
    lua_setfield(L, -2, "shape");
    int64_t n = type_numel(t->type);
    lua_createtable(L, (int)MIN(n, G_MAXINT), 0);
    for (int64_t i = 0; i < n; i++) {
      if (dtype_is_float(t->type->dtype))
        lua_pushnumber(L, tensor_get_float(t, i));
      else
        lua_pushinteger(L, tensor_get_int(t, i));
      lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "values");
    lua_rawseti(L, -2, (int)r + 1);
  }
}

/* Runs the interpreter on seeded random inputs. */
static int l_run(lua_State *L) {
  State *s = check_state(L, 1);
  lua_Integer seed = luaL_optinteger(L, 2, 0);
  Diag *why = diag_new(NULL);
  if (!interp_check(&s->func, why))
    return raise_error(L, why);
  GError *error = NULL;
  GPtrArray *results = interp_run_seeded(&s->func, seed, &error);
  if (!results) {
    diag_reason(why, "%s", error->message);
    g_error_free(error);
    return raise_error(L, why);
  }
  diag_free(why);
  push_results(L, results);
  g_ptr_array_unref(results);
  return 1;
}

/* ------------------------------------------------- compiled execution */

/* The options of s:exec{...} and s:bench{...}. */
typedef struct CompiledOpts {
  const char *mesh; /* NULL: one device */
  lua_Integer seed; /* of the random inputs */
  lua_Integer runs; /* bench: how many timed runs */
  gboolean exact;   /* the interpreter's arithmetic, bit for bit */
  int inputs;       /* stack index of the inputs table; 0: seeded */
} CompiledOpts;

/* Reads the options table at index 2 (absent: the defaults) into 'o';
 * raises on an unknown key or a value of the wrong type, before any C
 * resource is held.  'runs' (also ["repeat"]: 'repeat' is a keyword)
 * only for bench. */
static void check_compiled_opts(lua_State *L, gboolean bench, CompiledOpts *o) {
  *o = (CompiledOpts){.runs = 5};
  if (lua_isnoneornil(L, 2))
    return;
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, 2)) {
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
    int t = lua_type(L, -1);
    if (strcmp(k, "mesh") == 0 && t == LUA_TSTRING) {
      o->mesh = lua_tostring(L, -1);
    } else if (strcmp(k, "seed") == 0 && lua_isinteger(L, -1)) {
      o->seed = lua_tointeger(L, -1);
    } else if (strcmp(k, "exact") == 0 && t == LUA_TBOOLEAN) {
      o->exact = lua_toboolean(L, -1);
    } else if (strcmp(k, "inputs") == 0 && t == LUA_TTABLE) {
      o->inputs = 2; /* read from the table when the program is known */
    } else if (bench && (strcmp(k, "runs") == 0 || strcmp(k, "repeat") == 0) &&
               lua_isinteger(L, -1) && lua_tointeger(L, -1) >= 1 &&
               lua_tointeger(L, -1) <= 10000) {
      o->runs = lua_tointeger(L, -1);
    } else {
      luaL_argerror(L, 2,
                    bench ? "options are mesh (a string), runs (1 to "
                            "10000), seed (an integer), inputs (a table), "
                            "exact (a boolean)"
                          : "options are mesh (a string), seed (an integer), "
                            "inputs (a table), exact (a boolean)");
    }
    lua_pop(L, 1);
  }
}

/* Element 'k' of list 'list' (a stack index) into element k - 1 of 't':
 * a number (an integer for an integer type), or a boolean for i1. */
static gboolean input_value(lua_State *L, int list, lua_Integer k, Tensor *t) {
  lua_rawgeti(L, list, k);
  int isnum = 0;
  gboolean ok = TRUE;
  if (dtype_is_float(t->type->dtype)) {
    double v = lua_tonumberx(L, -1, &isnum);
    ok = isnum && lua_type(L, -1) == LUA_TNUMBER;
    if (ok)
      tensor_set_float(t, k - 1, v);
  } else if (lua_isboolean(L, -1) && t->type->dtype == DT_I1) {
    tensor_set_int(t, k - 1, lua_toboolean(L, -1));
  } else {
    lua_Integer v = lua_tointegerx(L, -1, &isnum);
    ok = isnum && lua_type(L, -1) == LUA_TNUMBER;
    if (ok)
      tensor_set_int(t, k - 1, v);
  }
  lua_pop(L, 1);
  return ok;
}

/* Argument 'i' of 'f' from the value on top of the stack: a list of its
 * values (row-major), or a table holding that list as 'values' (what
 * s:run returns).  NULL with the reason.  Raw access only: nothing here
 * raises but for memory. */
static Tensor *input_from_lua(lua_State *L, const Func *f, int i, Diag *why) {
  if (lua_type(L, -1) != LUA_TTABLE) {
    diag_reason(why, "input %d is not a table of values", i + 1);
    return NULL;
  }
  lua_pushliteral(L, "values");
  if (lua_rawget(L, -2) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_pushvalue(L, -1); /* the list itself */
  }
  const Type *type = f->arg_types[i];
  int64_t n = type_numel(type);
  Tensor *t = NULL;
  if ((int64_t)lua_rawlen(L, -1) != n) {
    g_autofree char *ty = type_to_string(type);
    diag_reason(why,
                "input %d (%%%s: %s) needs %" G_GINT64_FORMAT
                " values, not %" G_GINT64_FORMAT,
                i + 1, f->arg_names[i], ty, n, (gint64)lua_rawlen(L, -1));
  } else {
    t = tensor_new(type);
    for (int64_t k = 1; k <= n && t; k++)
      if (!input_value(L, -1, k, t)) {
        diag_reason(why, "input %d: value %" G_GINT64_FORMAT " is not %s",
                    i + 1, (gint64)k,
                    dtype_is_float(type->dtype) ? "a number" : "an integer");
        g_clear_pointer(&t, tensor_unref);
      }
  }
  lua_pop(L, 1);
  return t;
}

/* The inputs of 'f': from the table at stack index 'o->inputs', one per
 * argument, or seeded random ones.  NULL with the reason. */
static GPtrArray *compiled_inputs(lua_State *L, const Func *f,
                                  const CompiledOpts *o, Diag *why) {
  if (!o->inputs)
    return pipeline_random_inputs(f, o->seed);
  lua_pushliteral(L, "inputs");
  lua_rawget(L, o->inputs);
  int list = lua_gettop(L);
  if ((int64_t)lua_rawlen(L, list) != f->nargs) {
    diag_reason(why, "inputs: %d given, the program takes %d",
                (int)lua_rawlen(L, list), f->nargs);
    lua_pop(L, 1);
    return NULL;
  }
  GPtrArray *inputs =
      g_ptr_array_new_with_free_func((GDestroyNotify)tensor_unref);
  for (int i = 0; i < f->nargs && inputs; i++) {
    lua_rawgeti(L, list, i + 1);
    Tensor *t = input_from_lua(L, f, i, why);
    lua_pop(L, 1);
    if (t)
      g_ptr_array_add(inputs, t);
    else
      g_clear_pointer(&inputs, g_ptr_array_unref);
  }
  lua_pop(L, 1);
  return inputs;
}

/* s:exec{...} and s:bench{...}: 's' compiled as 'o' says and run once
 * into '*results' (when 'results' is not NULL) or 'o->runs' times into
 * '*time'.  FALSE with the reason. */
/* The programs s:exec and s:bench compiled last, kept (a training loop
 * runs one or two steps many times): each with the state (a reference),
 * the mesh and the arithmetic it was compiled for.  The registry holds
 * the cache as a userdata; its __gc frees it when Lua closes. */
#define EXEC_CACHE_KEY "partir.compiled"
#define EXEC_CACHE_SLOTS 4

typedef struct CachedExe {
  State *state; /* NULL: free */
  char *mesh;
  gboolean exact;
  guint64 used;
  Executable e;
} CachedExe;

typedef struct ExecCache {
  CachedExe slot[EXEC_CACHE_SLOTS];
  guint64 clock;
} ExecCache;

static void cached_clear(CachedExe *c) {
  if (!c->state)
    return;
  pipeline_executable_clear(&c->e);
  state_unref(c->state);
  g_free(c->mesh);
  memset(c, 0, sizeof *c);
}

static int exec_cache_gc(lua_State *L) {
  ExecCache *c = lua_touserdata(L, 1);
  for (int i = 0; i < EXEC_CACHE_SLOTS; i++)
    cached_clear(&c->slot[i]);
  return 0;
}

static ExecCache *exec_cache(lua_State *L) {
  lua_getfield(L, LUA_REGISTRYINDEX, EXEC_CACHE_KEY);
  ExecCache *c = lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (c)
    return c;
  c = lua_newuserdatauv(L, sizeof *c, 0);
  memset(c, 0, sizeof *c);
  lua_newtable(L);
  lua_pushcfunction(L, exec_cache_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, EXEC_CACHE_KEY);
  return c;
}

/* 's' compiled for 'o', from the cache or compiled into its least
 * recently used slot; NULL with the reason. */
static const Executable *compiled_for(lua_State *L, State *s,
                                      const CompiledOpts *o, Diag *why) {
  ExecCache *c = exec_cache(L);
  const char *spec = o->mesh ? o->mesh : "";
  CachedExe *slot = &c->slot[0];
  for (int i = 0; i < EXEC_CACHE_SLOTS; i++) {
    CachedExe *k = &c->slot[i];
    if (k->state == s && k->exact == o->exact && strcmp(k->mesh, spec) == 0) {
      k->used = ++c->clock;
      return &k->e;
    }
    if (!k->state || (slot->state && k->used < slot->used))
      slot = k;
  }
  Mesh mesh = {0};
  if (o->mesh && !mesh_parse(o->mesh, &mesh, why))
    return NULL;
  CodegenOptions co = {0};
  co.exact = o->exact;
  Executable e = {0};
  if (!pipeline_compile(rules_of(L), s->module, &s->func, &mesh, &co, &e,
                        why)) {
    pipeline_executable_clear(&e);
    return NULL;
  }
  cached_clear(slot);
  slot->e = e;
  slot->state = state_ref(s);
  slot->mesh = g_strdup(spec);
  slot->exact = o->exact;
  slot->used = ++c->clock;
  return &slot->e;
}

static gboolean run_compiled(lua_State *L, State *s, const CompiledOpts *o,
                             GPtrArray **results, StepTime *time, Diag *why) {
  const Executable *ep = compiled_for(L, s, o, why);
  if (!ep)
    return FALSE;
  const Executable e = *ep;
  g_autoptr(GPtrArray) inputs = compiled_inputs(L, e.global, o, why);
  if (!inputs)
    return FALSE;
  Tensor *const *args = (Tensor *const *)inputs->pdata;
  GError *error = NULL;
  gboolean ok;
  if (results)
    ok = (*results = pipeline_execute(&e, args, why, &error)) != NULL;
  else
    ok = pipeline_time(&e, args, (int)o->runs, time, why, &error);
  if (error) {
    diag_reason(why, "%s", error->message);
    g_error_free(error);
  }
  return ok;
}

/* s:exec{mesh =, seed =, inputs =, exact =}: the compiled program's
 * results, as s:run gives the interpreter's. */
static int exec_compiled(lua_State *L) {
  State *s = check_state(L, 1);
  CompiledOpts o;
  check_compiled_opts(L, FALSE, &o);
  collect_maybe(); /* a safe point, before the Executable holds terms */
  Diag *why = diag_new(NULL);
  GPtrArray *results = NULL;
  if (!run_compiled(L, s, &o, &results, NULL, why))
    return raise_error(L, why);
  diag_free(why);
  push_results(L, results);
  g_ptr_array_unref(results);
  return 1;
}

/* s:exec(script [, opts]) -> state, {report}: as s:propagate; with a
 * table, the compiled run (exec_compiled). */
static int l_exec(lua_State *L) {
  if (lua_istable(L, 2))
    return exec_compiled(L);
  State *s = check_state(L, 1);
  const char *script = luaL_checkstring(L, 2);
  ReportMode mode = check_report_opts(L, 3, NULL);
  return run_commands(L, s, "exec", script, mode, 3);
}

/* s:bench{mesh =, runs =, seed =, inputs =, exact =} -> {min, median,
 * runs}: the compiled step time in seconds. */
static int l_bench(lua_State *L) {
  State *s = check_state(L, 1);
  CompiledOpts o;
  check_compiled_opts(L, TRUE, &o);
  collect_maybe();
  Diag *why = diag_new(NULL);
  StepTime t;
  if (!run_compiled(L, s, &o, NULL, &t, why))
    return raise_error(L, why);
  diag_free(why);
  lua_createtable(L, 0, 3);
  lua_pushnumber(L, t.min);
  lua_setfield(L, -2, "min");
  lua_pushnumber(L, t.median);
  lua_setfield(L, -2, "median");
  lua_pushinteger(L, t.runs);
  lua_setfield(L, -2, "runs");
  return 1;
}

/* s:lower("batch=2,model=4" [, "dot"]) -> text; s:stats(mesh) -> text */
static int lower_common(lua_State *L, gboolean stats) {
  State *s = check_state(L, 1);
  const char *spec = luaL_checkstring(L, 2);
  const char *emit = luaL_optstring(L, 3, "spmd");
  Diag *why = diag_new(NULL);
  Mesh mesh;
  if (!mesh_parse(spec, &mesh, why))
    return raise_error(L, why);
  Lowered low;
  if (!pipeline_lower(rules_of(L), s->module, &s->func, &mesh, &low, why))
    return raise_error(L, why);
  diag_free(why);
  GString *text = g_string_new(NULL);
  if (stats)
    spmd_print_stats(text, low.spmd);
  else if (strcmp(emit, "dot") == 0)
    spmd_print_dot(text, low.names, low.spmd);
  else
    print_func(text, low.names, low.spmd);
  pipeline_lowered_clear(&low);
  lua_pushlstring(L, text->str, text->len);
  g_string_free(text, TRUE);
  return 1;
}

/* s:export("batch=2,model=4" [, "stablehlo"|"stablehlo-gspmd"|
 * "stablehlo-spmd"]) -> text: pipeline_export on the mesh. */
static int l_export(lua_State *L) {
  State *s = check_state(L, 1);
  const char *spec = luaL_checkstring(L, 2);
  const char *emit = luaL_optstring(L, 3, "stablehlo");
  ExportForm form;
  if (!export_form_parse(emit, &form))
    return luaL_argerror(L, 3, "stablehlo, stablehlo-gspmd or stablehlo-spmd");
  Diag *why = diag_new(NULL);
  Mesh mesh;
  GString *text = g_string_new(NULL);
  if (!mesh_parse(spec, &mesh, why) ||
      !pipeline_export(rules_of(L), s, &mesh, form, text, why)) {
    g_string_free(text, TRUE);
    return raise_error(L, why);
  }
  diag_free(why);
  lua_pushlstring(L, text->str, text->len);
  g_string_free(text, TRUE);
  return 1;
}

/* A string field of the options table at 'i', or NULL when absent;
 * raises when it is not a string. */
static const char *opt_string(lua_State *L, int i, const char *key) {
  lua_getfield(L, i, key);
  const char *v = NULL;
  if (!lua_isnil(L, -1)) {
    if (lua_type(L, -1) != LUA_TSTRING)
      luaL_error(L, "grad: '%s' must be a string", key);
    v = lua_tostring(L, -1); /* the table keeps it alive */
  }
  lua_pop(L, 1);
  return v;
}

/* s:grad{loss = "mse", wrt = {"w1", "w2"} or "w1,w2", params_from = 1,
 * optimizer = "sgd", lr = 0.01}: the training step of the state's
 * program, a new state (docs/grad.md). */
static int l_grad(lua_State *L) {
  State *s = check_state(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  static const char *const keys[] = {"loss",      "wrt", "params_from",
                                     "optimizer", "lr",  NULL};
  lua_pushnil(L);
  while (lua_next(L, 2)) {
    const char *key =
        lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
    gboolean known = FALSE;
    for (int k = 0; key && keys[k]; k++)
      known |= strcmp(key, keys[k]) == 0;
    if (!known)
      return luaL_error(L,
                        "grad: unknown option '%s' (loss, wrt, "
                        "params_from, optimizer, lr)",
                        key ? key : "?");
    lua_pop(L, 1);
  }
  TrainOptions to = {.lr = 0.01, .params_from = 1};
  const char *loss = opt_string(L, 2, "loss");
  const char *optimizer = opt_string(L, 2, "optimizer");
  if (!loss)
    return luaL_error(L, "grad: needs loss = \"sum\", \"mse\" or \"xent\"");
  lua_getfield(L, 2, "lr");
  if (!lua_isnil(L, -1))
    to.lr = luaL_checknumber(L, -1);
  lua_getfield(L, 2, "params_from");
  if (!lua_isnil(L, -1))
    to.params_from = (int)luaL_checkinteger(L, -1);
  lua_pop(L, 2);
  /* wrt: a list of names, or one string of them separated by commas */
  GPtrArray *wrt = NULL;
  lua_getfield(L, 2, "wrt");
  if (lua_type(L, -1) == LUA_TSTRING) {
    wrt = g_ptr_array_new_with_free_func(g_free);
    g_auto(GStrv) parts = g_strsplit(lua_tostring(L, -1), ",", -1);
    for (char **p = parts; *p; p++)
      g_ptr_array_add(wrt, g_strdup(*p));
  } else if (lua_type(L, -1) == LUA_TTABLE) {
    lua_Integer n = luaL_len(L, -1);
    for (lua_Integer k = 1; k <= n; k++) { /* raises before allocating */
      if (lua_geti(L, -1, k) != LUA_TSTRING)
        return luaL_error(L, "grad: 'wrt' lists names (strings)");
      lua_pop(L, 1);
    }
    wrt = g_ptr_array_new_with_free_func(g_free);
    for (lua_Integer k = 1; k <= n; k++) {
      lua_geti(L, -1, k);
      g_ptr_array_add(wrt, g_strdup(lua_tostring(L, -1)));
      lua_pop(L, 1);
    }
  } else if (!lua_isnil(L, -1)) {
    return luaL_error(L, "grad: 'wrt' is a list of names or a string");
  }
  lua_pop(L, 1);
  Diag *why = diag_new(NULL);
  if (wrt)
    g_ptr_array_add(wrt, NULL);
  to.params = wrt ? (const char *const *)wrt->pdata : NULL;
  Module *m = train_options_words(loss, optimizer, &to, why)
                  ? pipeline_train_step(rules_of(L), s, &to, why)
                  : NULL;
  if (wrt)
    g_ptr_array_unref(wrt);
  if (!m)
    return raise_error(L, why);
  diag_free(why);
  push_state(L, state_new(m));
  module_free(m);
  return 1;
}

static int l_lower(lua_State *L) { return lower_common(L, FALSE); }
static int l_stats(lua_State *L) { return lower_common(L, TRUE); }

/* ------------------------------------------------------------- search */

enum { SEARCH_MAX_NAMES = 64 };

/* The options of partir.search{...} / s:search{...}, read from the
 * table at 'opts' with every string borrowed from it (the table stays
 * on the stack during the search).  Raises on a bad option before any C
 * resource is held. */
typedef struct LuaSearchOpts {
  SearchOptions so;
  const char *mesh, *hw;
  const char *inputs[SEARCH_MAX_NAMES + 1];
  const char *axes[SEARCH_MAX_NAMES + 1];
} LuaSearchOpts;

/* A list of names: a table of strings (at most SEARCH_MAX_NAMES), or
 * one string. */
static void check_names(lua_State *L, int t, const char *key,
                        const char **out) {
  int n = 0;
  if (lua_type(L, t) == LUA_TTABLE) {
    for (lua_Integer i = 1; i <= (lua_Integer)lua_rawlen(L, t); i++) {
      if (lua_rawgeti(L, t, i) != LUA_TSTRING || n == SEARCH_MAX_NAMES)
        luaL_error(L, "search: '%s' takes a list of at most %d names", key,
                   SEARCH_MAX_NAMES);
      out[n++] = lua_tostring(L, -1);
      lua_pop(L, 1); /* the table keeps the string */
    }
  } else if (lua_type(L, t) == LUA_TSTRING) {
    out[n++] = lua_tostring(L, t);
  } else {
    luaL_error(L, "search: '%s' takes a list of names", key);
  }
  out[n] = NULL;
}

static void check_search_opts(lua_State *L, int opts, LuaSearchOpts *o) {
  memset(o, 0, sizeof *o);
  o->so.seed = 1;
  lua_getfield(L, LUA_REGISTRYINDEX, HW_KEY);
  o->hw = lua_tostring(L, -1); /* the registry keeps it alive */
  lua_pop(L, 1);
  luaL_checktype(L, opts, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, opts)) {
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
    int t = lua_type(L, -1);
    int top = lua_gettop(L);
    if (strcmp(k, "state") == 0 && t == LUA_TUSERDATA) {
      /* partir.search's state: read by the caller */
    } else if (strcmp(k, "mesh") == 0 && t == LUA_TSTRING) {
      o->mesh = lua_tostring(L, -1);
    } else if (strcmp(k, "hw") == 0 && t == LUA_TSTRING) {
      o->hw = lua_tostring(L, -1);
    } else if (strcmp(k, "algo") == 0 && t == LUA_TSTRING &&
               search_algo_parse(lua_tostring(L, -1), &o->so.algo)) {
    } else if (strcmp(k, "budget") == 0 && lua_isinteger(L, -1) &&
               lua_tointeger(L, -1) >= 1) {
      o->so.budget = lua_tointeger(L, -1);
    } else if (strcmp(k, "time") == 0 && t == LUA_TNUMBER &&
               lua_tonumber(L, -1) > 0) {
      o->so.seconds = lua_tonumber(L, -1);
    } else if (strcmp(k, "seed") == 0 && lua_isinteger(L, -1)) {
      o->so.seed = (guint64)lua_tointeger(L, -1);
    } else if (strcmp(k, "width") == 0 && lua_isinteger(L, -1) &&
               lua_tointeger(L, -1) >= 1 && lua_tointeger(L, -1) <= 1000) {
      o->so.beam_width = (int)lua_tointeger(L, -1);
    } else if (strcmp(k, "inputs") == 0) {
      check_names(L, top, k, o->inputs);
      o->so.inputs = o->inputs;
    } else if (strcmp(k, "batch_axes") == 0) {
      check_names(L, top, k, o->axes);
      o->so.batch_axes = o->axes;
    } else {
      luaL_error(L, "search: options are mesh (a string), hw (a name or "
                    "file), algo (\"mcts\" or \"beam\"), budget (a count), "
                    "time (seconds), seed (an integer), width (1 to 1000), "
                    "inputs and batch_axes (lists of names)");
    }
    lua_pop(L, 1);
  }
  if (!o->mesh)
    luaL_error(L, "search: give the mesh (mesh = \"batch=2,model=4\")");
}

/* Runs the search 'o' asks for from 's'; the result in 'out', FALSE with
 * the reason. */
static gboolean run_search(lua_State *L, State *s, const LuaSearchOpts *o,
                           SearchResult *out, Diag *why) {
  Mesh mesh;
  if (!mesh_parse(o->mesh, &mesh, why))
    return FALSE;
  Hardware hw;
  GError *error = NULL;
  if (!hw_load(o->hw ? o->hw : "cpu2", &hw, &error)) {
    diag_reason(why, "%s", error->message);
    g_error_free(error);
    return FALSE;
  }
  collect_maybe(); /* a safe point, before the search holds states */
  return search_run(rules_of(L), s, &mesh, &hw, &o->so, out, why);
}

/* Pushes the table partir.search returns beside the state. */
static void push_search_info(lua_State *L, const SearchResult *r) {
  lua_newtable(L);
  const struct {
    const char *key;
    double v;
  } numbers[] = {{"time", r->cost.total_time},
                 {"base_time", r->base.total_time},
                 {"peak_bytes", r->cost.peak_bytes},
                 {"comm_bytes", cost_comm_bytes(&r->cost)},
                 {"seconds", r->seconds}};
  for (gsize i = 0; i < G_N_ELEMENTS(numbers); i++) {
    lua_pushnumber(L, numbers[i].v);
    lua_setfield(L, -2, numbers[i].key);
  }
  lua_pushinteger(L, r->explored);
  lua_setfield(L, -2, "explored");
  lua_pushboolean(L, r->cost.fits);
  lua_setfield(L, -2, "fits");
  lua_pushboolean(L, r->interrupted);
  lua_setfield(L, -2, "interrupted");
  lua_newtable(L);
  for (guint i = 0; i < r->trace->len; i++) {
    lua_pushstring(L, r->trace->pdata[i]);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "trace");
  GString *text = g_string_new(NULL);
  search_script(text, r);
  lua_pushstring(L, text->str);
  lua_setfield(L, -2, "script");
  g_string_truncate(text, 0);
  search_tactic(text, r, "-- Found by partir.search.\n");
  lua_pushstring(L, text->str);
  g_string_free(text, TRUE);
  lua_setfield(L, -2, "tactic");
}

static int search_common(lua_State *L, State *s, int opts) {
  LuaSearchOpts o;
  check_search_opts(L, opts, &o);
  Diag *why = diag_new(NULL);
  SearchResult r;
  if (!run_search(L, s, &o, &r, why))
    return raise_error(L, why);
  diag_free(why);
  push_state(L, state_ref(r.best));
  push_search_info(L, &r);
  search_result_clear(&r);
  return 2;
}

/* s:search{mesh =, hw =, algo =, budget =, time =, seed =, ...} -> the
 * best state found, {time, base_time, fits, explored, trace, tactic,
 * ...} (docs/lua.md). */
static int l_search(lua_State *L) {
  State *s = check_state(L, 1);
  return search_common(L, s, 2);
}

/* partir.search{state = s, mesh =, ...}: the same as s:search{mesh =,
 * ...}. */
static int l_module_search(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_getfield(L, 1, "state");
  State *s = check_state(L, -1);
  lua_pop(L, 1); /* the table keeps the state */
  return search_common(L, s, 1);
}

static const luaL_Reg state_methods[] = {{"print", l_print},
                                         {"text", l_print},
                                         {"check", l_check},
                                         {"args", l_args},
                                         {"data_args", l_data_args},
                                         {"results", l_results},
                                         {"values", l_values},
                                         {"regions", l_regions},
                                         {"matches", l_matches},
                                         {"apply", l_apply},
                                         {"arg_tile", l_arg_tile},
                                         {"tile", l_tile},
                                         {"sum", l_sum},
                                         {"propagate", l_propagate},
                                         {"fuse", l_fuse},
                                         {"simplify", l_simplify},
                                         {"exec", l_exec},
                                         {"run", l_run},
                                         {"bench", l_bench},
                                         {"lower", l_lower},
                                         {"stats", l_stats},
                                         {"export", l_export},
                                         {"grad", l_grad},
                                         {"search", l_search},
                                         {NULL, NULL}};

static const luaL_Reg state_meta[] = {
    {"__gc", l_gc}, {"__tostring", l_tostring}, {"__eq", l_eq}, {NULL, NULL}};

static const luaL_Reg module_funcs[] = {{"parse", l_parse},
                                        {"load", l_load},
                                        {"rules", l_rules},
                                        {"search", l_module_search},
                                        {NULL, NULL}};

static int luaopen_partir(lua_State *L) {
  luaL_newmetatable(L, STATE_MT);
  luaL_setfuncs(L, state_meta, 0);
  luaL_newlib(L, state_methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  luaL_newlib(L, module_funcs);
  lua_pushstring(L, partir_version());
  lua_setfield(L, -2, "version");
  lua_pushstring(L, "--mesh %s=N");
  lua_setfield(L, -2, "mesh_hint");
  return 1;
}

/* ------------------------------------------------------- front ends */

char **plua_tactic_dirs(void) {
  return partir_search_path("PARTIR_TACTICS", PARTIR_TACTICS_DIR);
}

/* Whether the Lua file 'path' looks like a tactic: its last top-level
 * 'return' (a line that starts with it) gives a function, written
 * 'return function' or built by a call ('return C.seq(a, b)'), and not a
 * module table ('return M', 'return { ... }').  A guess from the text:
 * running the file to see would run its code. */
static gboolean is_tactic_file(const char *path) {
  g_autofree char *text = NULL;
  gsize len;
  if (!g_file_get_contents(path, &text, &len, NULL) || len > (1u << 20))
    return FALSE;
  const char *last = NULL;
  for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
    if (strncmp(p, "return", 6) == 0 &&
        (p[6] == ' ' || p[6] == '\t' || p[6] == '('))
      last = p + 6;
  if (!last)
    return FALSE;
  while (*last == ' ' || *last == '\t')
    last++;
  if (strncmp(last, "function", 8) == 0)
    return TRUE;
  const char *eol = strchr(last, '\n');
  const char *paren = strchr(last, '(');
  return paren && (!eol || paren < eol) && *last != '{';
}

/* g_ptr_array_sort's order of char* elements. */
static gint compare_names(gconstpointer a, gconstpointer b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

char **plua_tactic_names(void) {
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
  g_auto(GStrv) dirs = plua_tactic_dirs();
  for (char **d = dirs; *d; d++) {
    g_autoptr(GDir) dir = g_dir_open(*d, 0, NULL);
    const char *file;
    while (dir && (file = g_dir_read_name(dir))) {
      if (file[0] == '.' || !g_str_has_suffix(file, ".lua"))
        continue;
      g_autofree char *path = g_build_filename(*d, file, NULL);
      g_autofree char *name = g_strndup(file, strlen(file) - strlen(".lua"));
      if (g_hash_table_contains(seen, name) ||
          !g_file_test(path, G_FILE_TEST_IS_REGULAR) || !is_tactic_file(path))
        continue;
      g_hash_table_add(seen, name);
      g_ptr_array_add(names, g_steal_pointer(&name));
    }
  }
  g_ptr_array_sort(names, compare_names);
  g_ptr_array_add(names, NULL);
  return (char **)g_ptr_array_free(g_steal_pointer(&names), FALSE);
}

static void add_tactics_path(lua_State *L) {
  GString *path = g_string_new(NULL);
  g_auto(GStrv) dirs = plua_tactic_dirs();
  for (char **d = dirs; *d; d++)
    g_string_append_printf(path, "%s/?.lua;", *d);
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "path");
  g_string_append(path, lua_tostring(L, -1));
  lua_pop(L, 1);
  lua_pushstring(L, path->str);
  lua_setfield(L, -2, "path");
  lua_pop(L, 1);
  g_string_free(path, TRUE);
}

lua_State *plua_new(const RuleSet *rs) {
  lua_State *L = luaL_newstate();
  if (!L)
    return NULL;
  luaL_openlibs(L);
  lua_pushlightuserdata(L, (void *)rs);
  lua_setfield(L, LUA_REGISTRYINDEX, RULES_KEY);
  luaL_requiref(L, "partir", luaopen_partir, 1);
  lua_pop(L, 1);
  add_tactics_path(L);
  return L;
}

void plua_set_hardware(lua_State *L, const char *hw) {
  lua_pushstring(L, hw); /* NULL pushes nil: cpu2 */
  lua_setfield(L, LUA_REGISTRYINDEX, HW_KEY);
}

void plua_set_mesh_hint(lua_State *L, const char *hint) {
  lua_getglobal(L, "partir");
  if (lua_istable(L, -1)) {
    lua_pushstring(L, hint);
    lua_setfield(L, -2, "mesh_hint");
  }
  lua_pop(L, 1);
}

void plua_close(lua_State *L) {
  if (L)
    lua_close(L);
}

static void interrupt_hook(lua_State *L, lua_Debug *ar) {
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "interrupted");
}

void plua_interrupt(lua_State *L) {
  lua_sethook(L, interrupt_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

static int traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (!msg)
    msg =
        lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  luaL_traceback(L, L, msg, 1);
  return 1;
}

static void push_mesh(lua_State *L, const Mesh *mesh) {
  lua_createtable(L, mesh ? mesh->naxes : 0, mesh ? mesh->naxes : 0);
  for (int i = 0; mesh && i < mesh->naxes; i++) {
    lua_pushinteger(L, mesh->sizes[i]);
    lua_setfield(L, -2, mesh->names[i]);
    lua_pushstring(L, mesh->names[i]);
    lua_rawseti(L, -2, i + 1);
  }
}

/* Takes the state at the top of the stack (if it is one). */
static State *take_state(lua_State *L, int i) {
  State **box = luaL_testudata(L, i, STATE_MT);
  return box && *box ? state_ref(*box) : NULL;
}

/* Calls the function below 'nargs' arguments with a traceback handler. */
static gboolean pcall_traced(lua_State *L, int nargs, int nresults, Diag *why) {
  int base = lua_gettop(L) - nargs;
  lua_pushcfunction(L, traceback);
  lua_insert(L, base);
  int status = lua_pcall(L, nargs, nresults, base);
  lua_remove(L, base);
  lua_sethook(L, NULL, 0, 0);
  if (status != LUA_OK) {
    diag_reason(why, "%s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "error");
    lua_pop(L, 1);
    return FALSE;
  }
  return TRUE;
}

State *plua_run_tactic(lua_State *L, const char *path, State *in,
                       const Mesh *mesh, GHashTable *options, Diag *why) {
  int top = lua_gettop(L);
  lua_sethook(L, NULL, 0, 0);
  if (luaL_loadfile(L, path) != LUA_OK) {
    diag_reason(why, "%s", lua_tostring(L, -1));
    lua_settop(L, top);
    return NULL;
  }
  if (!pcall_traced(L, 0, 1, why)) {
    lua_settop(L, top);
    return NULL;
  }
  if (!lua_isfunction(L, -1)) {
    diag_reason(why,
                "%s: the tactic must return a function(state, mesh, "
                "options), not a %s",
                path, luaL_typename(L, -1));
    lua_settop(L, top);
    return NULL;
  }
  push_state(L, state_ref(in));
  push_mesh(L, mesh);
  lua_newtable(L);
  if (options) {
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, options);
    while (g_hash_table_iter_next(&it, &k, &v)) {
      lua_pushstring(L, v);
      lua_setfield(L, -2, k);
    }
  }
  if (!pcall_traced(L, 3, 1, why)) {
    lua_settop(L, top);
    return NULL;
  }
  State *out = take_state(L, -1);
  if (!out)
    diag_reason(why, "%s: the tactic returned a %s, not a state", path,
                luaL_typename(L, -1));
  lua_settop(L, top);
  return out;
}

/* tostring(v) for the values a chunk returns; run protected, since a
 * __tostring metamethod may raise. */
static int tostring_all(lua_State *L) {
  int n = lua_gettop(L);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int i = 1; i <= n; i++) {
    if (i > 1)
      luaL_addchar(&b, '\t');
    luaL_tolstring(L, i, NULL);
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  return 1;
}

static State *lua_tactic_run(Tactic *self, State *in, const Mesh *mesh,
                             Diag *why) {
  LuaTactic *t = (LuaTactic *)self;
  return plua_run_tactic(t->L, t->path, in, mesh, t->options, why);
}

void plua_tactic_init(LuaTactic *t, lua_State *L, const char *path,
                      GHashTable *options) {
  *t = (LuaTactic){{lua_tactic_run}, L, path, options};
}

State *plua_run_chunk(lua_State *L, const char *code, const char *chunkname,
                      State *in, const Mesh *mesh, GString *out, Diag *why) {
  int top = lua_gettop(L);
  lua_sethook(L, NULL, 0, 0); /* an interrupt that came between chunks */
  if (in)
    push_state(L, state_ref(in));
  else
    lua_pushnil(L);
  lua_setglobal(L, "s");
  push_mesh(L, mesh);
  lua_setglobal(L, "mesh");
  /* an expression first ("s:args()"), then a statement list */
  char *expr = g_strconcat("return ", code, NULL);
  int loaded = luaL_loadbuffer(L, expr, strlen(expr), chunkname);
  g_free(expr);
  if (loaded != LUA_OK) {
    lua_pop(L, 1);
    if (luaL_loadbuffer(L, code, strlen(code), chunkname) != LUA_OK) {
      diag_reason(why, "%s", lua_tostring(L, -1));
      lua_settop(L, top);
      return NULL;
    }
  }
  if (!pcall_traced(L, 0, LUA_MULTRET, why)) {
    lua_settop(L, top);
    return NULL;
  }
  State *result = lua_gettop(L) > top ? take_state(L, top + 1) : NULL;
  if (!result) {
    int nresults = lua_gettop(L) - top;
    if (nresults > 0) {
      lua_pushcfunction(L, tostring_all);
      lua_insert(L, top + 1);
      if (!pcall_traced(L, nresults, 1, why)) {
        lua_settop(L, top);
        return NULL;
      }
      g_string_append_printf(out, "%s\n", lua_tostring(L, -1));
    }
    result = in ? state_ref(in) : NULL;
    if (!result)
      diag_reason(why, "%s", "");
  }
  lua_settop(L, top);
  return result;
}
