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
  t:ok(C.try(function(st) return st:arg_tile(0, 0, 5) end)(s) == s,
    "try of a failing verb gives the input")
  t:ok(C.try(tile_x)(s) == s:arg_tile(0, 0, 8), "try of a working tactic gives its result")
  t:ok(C.seq(C.try(failing("x")), tile_x, propagate)(s) == tiled, "try lets a seq go on")

  -- first
  log = {}
  r = C.first(logged(log, "f1", failing("one")), logged(log, "f2", tile_x), logged(log, "f3", propagate))(s)
  t:ok(r == s:arg_tile(0, 0, 8), "first picks the first tactic that works")
  t:same_list(log, { "f1", "f2" }, "...and runs none after it")
  local err = t:fails("first: no tactic applied", "first fails when no tactic works",
    C.first(failing("reason one"), function(st) return st:arg_tile(0, 0, 5) end, failing("reason three")), s)
  t:has(err, "reason one", "...listing the first reason")
  t:has(err, "width 5 does not divide size 16", "...the second (an engine error)")
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

  -- helpers
  t:is(C.axis_size({ "batch", batch = 2 }, "batch"), 2, "axis_size of a mesh axis")
  t:fails("the mesh has no axis 'model' (mesh: batch=2; use --mesh model=N)",
    "axis_size of a missing axis names it and the mesh", C.axis_size, { "batch", batch = 2 }, "model")
  t:fails("(mesh: empty; use --mesh model=N)", "axis_size on the empty mesh", C.axis_size, {}, "model")
  t:is(C.width(256, 4, "w"), 64, "width 256 / 4")
  t:fails("%w's dimension 1 has size 256, which 3 devices cannot split evenly",
    "width that does not divide", C.width, 256, 3, "%w's dimension 1")
  t:same_list(C.split("a, b,,c "), { "a", "b", "c" }, "split takes commas and spaces")
  t:same_list(C.split(nil), {}, "split(nil) is empty")
  t:is(C.arg(s, "w").index, 1, "arg by name")
  t:is(C.arg(s, 2).name, "u", "arg by index")
  t:is(C.arg(s, "0").name, "x", "arg by an index in a string (from --set)")
  t:fails("the program has no argument 'q'", "arg of an unknown name", C.arg, s, "q")

  t:done()
  return s
end
