/* plua.h — the Lua 5.4 module 'partir' and the front ends' bridge to it.
 *
 *   lua.c    the 'partir' module (state userdata, engine verbs) and the
 *            helpers front ends use to run tactics and Lua chunks
 */
#ifndef PARTIR_PLUA_H
#define PARTIR_PLUA_H

#include "rule.h"

#include <lua.h>



/* A Lua state with the standard libraries and the 'partir' module
 * (require "partir", also the global 'partir'), using rule set 'rs'
 * (borrowed: it must outlive the Lua state).  package.path also searches
 * the tactics directories ($PARTIR_TACTICS, the installed ones). */
lua_State *plua_new(const RuleSet *rs);
void plua_close(lua_State *L);

/* Runs the tactic file 'path': a chunk that returns a function(state,
 * mesh, options) -> state.  'options' maps option names to strings
 * (--set KEY=VALUE).  Returns the new state, or NULL with the Lua error
 * and its traceback in 'why'. */
/* The tactic directories: $PARTIR_TACTICS (':'-separated), then the
 * installed ones. */
char **plua_tactic_dirs(void);
State *plua_run_tactic(lua_State *L, const char *path, State *in,
                       const Mesh *mesh, GHashTable *options, GString *why);

/* Runs a chunk of Lua with the global 's' set to 'in' (nil when 'in' is
 * NULL) and 'mesh'.  If the chunk returns a state, that is the result;
 * otherwise the result is 'in' (a new reference), and the returned values
 * are printed into 'out'.  NULL with the error and traceback in 'why' on
 * failure; NULL with an empty 'why' when 'in' is NULL and the chunk
 * returned no state. */
State *plua_run_chunk(lua_State *L, const char *code, const char *chunkname,
                      State *in, const Mesh *mesh, GString *out, GString *why);

/* Asks a running chunk to stop at its next hook (Ctrl-C); safe to call
 * from a signal handler. */
void plua_interrupt(lua_State *L);

#endif
