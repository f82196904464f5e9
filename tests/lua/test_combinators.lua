-- tactics/combinators.lua: seq, try, first, rep, and the helpers the
-- shipped tactics share (axis_size, width, split, arg).
local tap = require "tap"
local C = require "combinators"

-- A tactic that logs its name (and what it was given) and applies 'fn'.
local function logged(log, name, fn)
  return function(s, mesh, opts)
    log[#log + 1] = name
    log.mesh, log.opts = mesh, opts
    return fn and fn(s, mesh, opts) or s
  end
end

local function failing(msg)
  return function()
    error(msg, 0)
  end
end

return function(s, mesh, opts)
  local t = tap.new(opts)
  local tiled = partir.load(t:src("examples/mlp_tiled.pir"))
  local tile_x = function(st) return st:arg_tile(0, 0, 8) end
  local propagate = function(st) return (st:propagate()) end

  -- seq
  local log = {}
  local r = C.seq(logged(log, "a", tile_x), logged(log, "b", propagate), logged(log, "c"))(s, mesh, opts)
  t:same_list(log, { "a", "b", "c" }, "seq runs its tactics in order")
  t:ok(r == tiled, "seq(arg-tile, propagate) gives mlp_tiled.pir")
  t:ok(log.mesh == mesh and log.opts == opts, "seq passes the mesh and options on")
  t:ok(C.seq()(s, mesh, opts) == s, "seq() is the identity")
  t:ok(C.seq(propagate, tile_x)(s) ~= tiled, "seq's order matters")
  log = {}
  t:fails("middle failed", "seq stops at a failing tactic and raises its error",
    C.seq(logged(log, "a", tile_x), failing("middle failed"), logged(log, "c")), s, mesh, opts)
  t:same_list(log, { "a" }, "...without running the rest")

  -- try
  t:ok(C.try(failing("nope"))(s, mesh, opts) == s, "try of a failing tactic gives the input")
  t:ok(C.try(function(st) return st:arg_tile(0, 0, 17) end)(s) == s,
    "try of a failing verb gives the input")
  t:ok(C.try(tile_x)(s) == s:arg_tile(0, 0, 8), "try of a working tactic gives its result")
  t:ok(C.seq(C.try(failing("x")), tile_x, propagate)(s) == tiled, "try lets a seq go on")

  -- first
  log = {}
  r = C.first(logged(log, "f1", failing("one")), logged(log, "f2", tile_x), logged(log, "f3", propagate))(s)
  t:ok(r == s:arg_tile(0, 0, 8), "first picks the first tactic that works")
  t:same_list(log, { "f1", "f2" }, "...and runs none after it")
  local err = t:fails("first: no tactic applied", "first fails when no tactic works",
    C.first(failing("reason one"), function(st) return st:arg_tile(0, 0, 17) end, failing("reason three")), s)
  t:has(err, "reason one", "...listing the first reason")
  t:has(err, "width 17 is not between 1 and the size 16", "...the second (an engine error)")
  t:has(err, "reason three", "...and the third")
  t:fails("first: no tactic applied", "first() with no tactics fails", C.first(), s)

  -- rep
  local calls = 0
  local count = function(fn)
    return function(st, ...)
      calls = calls + 1
      return fn(st, ...)
    end
  end
  r = C.rep(count(tile_x), 3)(s)
  t:is(calls, 3, "rep(t, 3) of a tactic that always changes runs it 3 times")
  t:is(#r:regions(), 3, "...nesting three tilings of x")
  calls = 0
  r = C.rep(count(function(st) return st:simplify() end), 10)(s:arg_tile(0, 0, 8):arg_tile(1, 0, 128))
  t:is(calls, 2, "rep stops as soon as nothing changes (one change, one no-op)")
  t:ok(r == s, "...with the last state that changed")
  calls = 0
  r = C.rep(count(function(st)
    if calls > 2 then
      error("enough")
    end
    return st:arg_tile(0, 0, 8)
  end), 10)(s)
  t:is(calls, 3, "rep stops when the tactic fails")
  t:is(#r:regions(), 2, "...with the state before the failure")
  calls = 0
  local b = s:arg_tile(0, 0, 8)
  r = C.rep(count(function(st) return st == s and b or s end))(s)
  t:is(calls, 100, "rep's cap defaults to 100")
  t:ok(r == s, "...and returns the last state (here the input, after an even count)")
  calls = 0
  t:ok(C.rep(count(tile_x), 0)(s) == s and calls == 0, "rep(t, 0) runs nothing")

  -- exactly the tactics given: anything else is refused, naming its place
  t:fails("seq: argument 2 is a string, not a tactic (a function(state, mesh, options))",
    "seq refuses a string among its tactics", C.seq, tile_x, "/tmp/batch.lua")
  t:fails("seq: argument 2 is a nil", "seq refuses a nil between tactics", C.seq, tile_x, nil, propagate)
  t:fails("seq: argument 1 is a number", "...and a number", C.seq, 3)
  t:fails("seq: argument 3 is a table", "...and a table", C.seq, tile_x, propagate, {})
  t:fails("first: argument 2 is a string", "first refuses a string", C.first, tile_x, "x")
  t:fails("try: argument 1 is a nil", "try refuses nil", C.try, nil)
  t:fails("try: takes one tactic, got 2 arguments", "try refuses two tactics", C.try, tile_x, propagate)
  t:fails("rep: argument 1 is a string", "rep refuses a string for its tactic", C.rep, "t")
  t:fails("rep: argument 2 (the cap) is a string, not a number", "rep refuses a string cap",
    C.rep, tile_x, "3")
  t:fails("rep: takes a tactic and a cap, got 3 arguments", "rep refuses a third argument",
    C.rep, tile_x, 3, 4)
  local ok, where = pcall(function()
    local r = C.seq(tile_x, 42) -- not a tail call: this line is the caller
    return r
  end)
  t:ok(not ok and where:find("test_combinators.lua:%d+: seq:") ~= nil,
    "the error points at the line that called seq", where)
  -- ...except what 'require' returns after a module it loads (Lua 5.4):
  -- the file it came from, which ends the argument list here
  package.loaded.batch, package.loaded.megatron = nil, nil
  local n = select("#", require "megatron")
  t:is(n, 2, "require of a module not yet loaded returns two values")
  t:is(select("#", require "megatron"), 1, "...and one once it is loaded")
  package.loaded.megatron = nil
  local bm = t:lives("seq(require \"batch\", require \"megatron\") builds a tactic",
    function() return C.seq(require "batch", require "megatron") end)
  local bm2 = C.seq(require "batch", require "megatron") -- loaded: one value each
  local mesh2 = { "batch", "model", batch = 2, model = 2 }
  t:ok(bm and bm(s, mesh2, {}) == bm2(s, mesh2, {}) and bm2(s, mesh2, {}) ==
    C.seq(package.loaded.batch, package.loaded.megatron)(s, mesh2, {}),
    "...which runs batch then Megatron, as when the modules were loaded")
  package.loaded.batch = nil
  t:lives("try(require \"batch\") takes require's loader data too",
    function() return C.try(require "batch") end)
  package.loaded.batch = nil
  t:lives("rep(require \"batch\") takes it for its cap",
    function() return C.rep(require "batch") end)
  package.loaded.batch = nil
  t:lives("first(require \"batch\")", function() return C.first(require "batch") end)
  local path = package.searchpath("megatron", package.path)
  t:fails("seq: argument 2 is a string", "...but not the file of another module",
    C.seq, require "batch", path)
  t:fails("seq: argument 2 is a string", "...nor its own file when it is not the last argument",
    C.seq, require "megatron", path, propagate)

  -- helpers
  t:is(C.axis_size({ "batch", batch = 2 }, "batch"), 2, "axis_size of a mesh axis")
  t:fails("the mesh has no axis 'model' (mesh: batch=2; use --mesh model=N)",
    "axis_size of a missing axis names it and the mesh", C.axis_size, { "batch", batch = 2 }, "model")
  t:fails("(mesh: empty; use --mesh model=N)", "axis_size on the empty mesh", C.axis_size, {}, "model")
  t:is(C.width(256, 4, "w"), 64, "width 256 / 4")
  t:is(C.width(10, 4, "w"), 3, "width 10 / 4: 3, the last device's chunk padded")
  t:fails("%w's dimension 1 has size 10, which 6 devices cannot split evenly, nor padded (a width of 2 gives 5 parts)",
    "width that gives another number of parts", C.width, 10, 6, "%w's dimension 1")
  t:same_list(C.split("a, b,,c "), { "a", "b", "c" }, "split takes commas and spaces")
  t:same_list(C.split(nil), {}, "split(nil) is empty")
  t:is(C.arg(s, "w").index, 1, "arg by name")
  t:is(C.arg(s, 2).name, "u", "arg by index")
  t:is(C.arg(s, "0").name, "x", "arg by an index in a string (from --set)")
  t:fails("the program has no argument 'q'", "arg of an unknown name", C.arg, s, "q")

  t:done()
  return s
end
