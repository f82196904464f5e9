/* bind.h — the binding layer: the Lua module and the agent protocol.
 *
 * Above the pipeline (docs/architecture.md): both expose the engine to
 * programs — Lua tactics and scripts, and search/RL agents speaking JSON
 * lines — and both call the pipeline's stages.
 *
 *   lua.c            the Lua 5.4 module 'partir' (state userdata, engine
 *                    verbs) and the helpers front ends use to run tactics
 *                    and chunks
 *   protocol.c       the agent protocol's methods
 *   protocol_json.c  its JSON values, parameters and input lines
 */
#ifndef PARTIR_BIND_H
#define PARTIR_BIND_H

#include "pipeline.h"

#include <cjson/cJSON.h>
#include <lua.h>

/* ------------------------------------------------------------------ lua.c */

/* A Lua state with the standard libraries and the 'partir' module
 * (require "partir", also the global 'partir'), using rule set 'rs'
 * (borrowed: it must outlive the Lua state).  package.path also searches
 * the tactics directories ($PARTIR_TACTICS, the installed ones). */
lua_State *plua_new(const RuleSet *rs);
void plua_close(lua_State *L);
/* How the front end sets a mesh axis, for tactics' errors ('partir.
 * mesh_hint', '%s' the axis): "--mesh %s=N" unless a front end says
 * otherwise (the REPL: "set mesh %s=N"). */
void plua_set_mesh_hint(lua_State *L, const char *hint);
/* The hardware that 'propagate --resolve' prices its choices on in
 * this Lua state: a name or a .hw file (hw_load); NULL: cpu2. */
void plua_set_hardware(lua_State *L, const char *hw);

/* The tactic directories: $PARTIR_TACTICS (':'-separated), then the
 * installed ones. */
char **plua_tactic_dirs(void);
/* The tactics there by name (NAME for NAME.lua, sorted, the first of a
 * name only): files whose top-level 'return' gives a function, not
 * helper modules such as 'combinators', nor dot-files. */
char **plua_tactic_names(void);
/* Runs the tactic file 'path': a chunk that returns a function(state,
 * mesh, options) -> state.  'options' maps option names to strings
 * (--set KEY=VALUE).  Returns the new state, or NULL with the Lua error
 * and its traceback in 'why'. */
State *plua_run_tactic(lua_State *L, const char *path, State *in,
                       const Mesh *mesh, GHashTable *options, Diag *why);

/* A tactic file as the pipeline's Tactic (pipeline_tactic): runs
 * plua_run_tactic with the mesh the pipeline gives. */
typedef struct LuaTactic {
  Tactic base;
  lua_State *L;
  const char *path;
  GHashTable *options;
} LuaTactic;
void plua_tactic_init(LuaTactic *t, lua_State *L, const char *path,
                      GHashTable *options);

/* Runs a chunk of Lua with the global 's' set to 'in' (nil when 'in' is
 * NULL) and 'mesh'.  If the chunk returns a state, that is the result;
 * otherwise the result is 'in' (a new reference), and the returned values
 * are printed into 'out'.  NULL with the error and traceback in 'why' on
 * failure; NULL with an empty 'why' when 'in' is NULL and the chunk
 * returned no state. */
State *plua_run_chunk(lua_State *L, const char *code, const char *chunkname,
                      State *in, const Mesh *mesh, GString *out, Diag *why);

/* Asks a running chunk to stop at its next hook (Ctrl-C); safe to call
 * from a signal handler. */
void plua_interrupt(lua_State *L);

/* ------------------------------------------------------------- protocol.c */

/* Answers the agent protocol's requests, one JSON object a line, from
 * 'in' on stdout until shutdown or end of input; programs are read only
 * from the directories 'allowed'. */
int proto_run(RuleSet *rs, char **allowed, FILE *in);

/* -------------------------------------------------------- protocol_json.c */

typedef cJSON J;

#define MAX_LINE ((gsize)16 << 20) /* longest request line */

/* Error codes (docs/protocol.md). */
enum {
  E_PARSE = -32700,
  E_REQUEST = -32600,
  E_METHOD = -32601,
  E_PARAMS = -32602,
  E_STATE = 1,
  E_ACTION = 2,
  E_PROGRAM = 3,
  E_FILE = 4,
};

/* Why a method failed: its error code and message. */
typedef struct Fail {
  int code;
  GString *message;
} Fail;

/* Sets 'f' and returns FALSE. */
gboolean proto_fail(Fail *f, int code, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

/* Parameters.  A member that is null reads as absent.  Each getter
 * returns FALSE after failf (E_PARAMS) for a missing required member or
 * one of the wrong type; optional absent members leave '*out' as it was
 * (strings and arrays: NULL). */
J *proto_member(J *p, const char *key);
/* An integer: a number without a fraction that a double holds exactly. */
gboolean proto_is_int(const J *n);
gboolean proto_get_string(J *p, const char *key, gboolean required,
                          const char **out, Fail *f);
gboolean proto_get_int(J *p, const char *key, gboolean required, gint64 *out,
                       Fail *f);
gboolean proto_get_bool(J *p, const char *key, gboolean *out, Fail *f);
gboolean proto_get_array(J *p, const char *key, J **out, Fail *f);

/* Replies.  proto_put adds 'v' (NULL: null) under a literal key. */
J *proto_jint(gint64 v);
void proto_put(J *o, const char *key, J *v);
/* Appends 'v' as JSON text ('null' for NULL); proto_append_json releases it. */
void proto_write_json(GString *out, const J *v);
void proto_append_json(GString *out, J *v);
/* Appends the JSON string for 's', escaped as cJSON escapes it. */
void proto_append_json_string(GString *out, const char *s);
/* A value whose JSON text is 'text' as it stands (taken). */
J *proto_raw_json(GString *text);

/* The request on 'line', or NULL with the reason in 'why' (E_PARSE). */
J *proto_request_parse(const char *line, gsize len, Diag *why);
/* A key that one object in 'v' (at any depth) has twice, or NULL. */
const char *proto_duplicate_key(const J *v);

/* Input lines. */
typedef struct Reader {
  int fd;
  char *buf;
  gsize start, len, cap; /* unread bytes are buf[start, len) */
  gboolean eof;
} Reader;

/* Whether a whole line is already buffered. */
gboolean proto_reader_line_waiting(const Reader *r);
/* The next line, without its end, NUL-terminated in place; NULL at the
 * end of the input.  '*too_long' says the line was over MAX_LINE and was
 * skipped (without being kept in memory). */
char *proto_reader_next_line(Reader *r, gsize *n, gboolean *too_long);

#endif
