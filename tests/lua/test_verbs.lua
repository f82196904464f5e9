-- The verbs: arg_tile, tile, sum, propagate (and its report), fuse,
-- simplify, exec, apply; their errors; argument type errors; a failed
-- verb leaves its input as it was.  Expected programs are written out by
-- hand (the partitioned MLPs of the talk) and compared with '=='.
local tap = require "tap"

local HEAD = "func @mlp(%x: tensor<16x256xf32>, %w: tensor<256x256xf32>, "
  .. "%u: tensor<256x256xf32>) -> tensor<16x256xf32> {\n"

-- Megatron's MLP: w split by columns, u by rows, one sum.
local MEGATRON = HEAD .. [[
  %0 = partir.sum (%r : !partir.range<256,128> @"model") {
    %1 = partir.slice 1 %w[%r]
    %2 = matmul(%x, %1)
    %3 = partir.slice 0 %u[%r]
    %4 = matmul(%2, %3)
    partir.yield %4
  }
  return %0
}
]]

-- The first matmul's contraction split: x by columns, w by rows.
local SUM0 = HEAD .. [[
  %0 = partir.sum (%r : !partir.range<256,128> @"model") {
    %1 = partir.slice 1 %x[%r]
    %2 = partir.slice 0 %w[%r]
    %3 = matmul(%1, %2)
    partir.yield %3
  }
  %4 = matmul(%0, %u)
  return %4
}
]]

-- The result tiled by columns: only u's columns are needed per tile.
local COLS = HEAD .. [[
  %0 = matmul(%x, %w)
  %1 = partir.tile 1 (%r : !partir.range<256,128> @"model") {
    %2 = partir.slice 1 %u[%r]
    %3 = matmul(%0, %2)
    partir.yield %3
  }
  return %1
}
]]

-- The first matmul tiled by rows of x, fused.
local ROWS0 = HEAD .. [[
  %0 = partir.tile 0 (%r : !partir.range<16,8>) {
    %1 = partir.slice 0 %x[%r]
    %2 = matmul(%1, %w)
    partir.yield %2
  }
  %3 = matmul(%0, %u)
  return %3
}
]]

-- x by rows and, inside, w by columns, both over "a": an axis bound twice
-- in one nest, which only a program written so has (propagate does not
-- make it).
local NESTED = HEAD .. [[
  %0 = partir.tile 0 (%r : !partir.range<16,8> @"a") {
    %1 = partir.slice 0 %x[%r]
    %2 = partir.tile 1 (%r1 : !partir.range<256,128> @"a") {
      %3 = partir.slice 1 %w[%r1]
      %4 = matmul(%1, %3)
      partir.yield %4
    }
    %5 = matmul(%2, %u)
    partir.yield %5
  }
  return %0
}
]]
-- x by rows and w by columns over "a", propagated: the first matmul
-- cannot follow both (one axis splits one dimension of its result).
local CONFLICT = 'conflicting splits: axis "a" at \'matmul\': operand 1 split along '
  .. 'dimension 0 (from %x dimension 0), operand 2 along dimension 1 (from %w dimension 1)'

-- ...resolved: keeping w's columns gathers x (8 KiB of rows) and sums the
-- second matmul over "a" (16 KiB all-reduced), 24576 B; keeping x's rows
-- gathers w (128 KiB): Megatron's MLP with x gathered wins.
local RESOLVED = HEAD .. [[
  %0 = partir.tile 0 (%r : !partir.range<16,8> @"a") {
    %1 = partir.slice 0 %x[%r]
    partir.yield %1
  }
  %2 = partir.sum (%r1 : !partir.range<256,128> @"a") {
    %3 = partir.slice 1 %w[%r1]
    %4 = matmul(%0, %3)
    %5 = partir.slice 0 %u[%r1]
    %6 = matmul(%4, %5)
    partir.yield %6
  }
  return %2
}
]]

return function(s, mesh, opts)
  local t = tap.new(opts)
  local before = s:print()
  local tiled = partir.load(t:src("examples/mlp_tiled.pir"))

  -- arg_tile
  local a = s:arg_tile(0, 0, 8)
  t:ok(a ~= s, "arg_tile returns a new, different state")
  local r = a:regions()
  t:ok(#r == 1 and r[1].kind == "tile" and r[1].dim == 0 and r[1].range.n == 16
    and r[1].range.w == 8 and r[1].axis == nil, "arg_tile(0, 0, 8): a tile of x, range<16,8>, no axis")
  t:ok(a == s:arg_tile("%x", 0, 8), "arg_tile by index and by '%x' agree")
  t:is(s:arg_tile("%x", 0, 8, "batch"):regions()[1].axis, "batch", "arg_tile with an axis binds it")
  t:ok(a:propagate() == tiled, "arg_tile(0, 0, 8); propagate gives mlp_tiled.pir")
  t:fails("width 17 is not between 1 and the size 16", "arg_tile: a width larger than the size",
    s.arg_tile, s, 0, 0, 17)
  t:fails("there is no argument 3 (the function has 3)", "arg_tile: an index out of range",
    s.arg_tile, s, 3, 0, 8)
  t:fails("no argument '%nope'", "arg_tile: an unknown name", s.arg_tile, s, "nope", 0, 8)
  t:fails("dimension 2 out of range for rank 2", "arg_tile: a dimension x does not have",
    s.arg_tile, s, 0, 2, 8)
  t:fails("dimension -1 out of range for rank 2", "arg_tile: a negative dimension",
    s.arg_tile, s, 0, -1, 8)
  t:fails("width 0 is not between 1 and the size 16", "arg_tile: width 0", s.arg_tile, s, 0, 0, 0)

  -- tile, sum
  local c = s:tile("%1", 1, 128, "model")
  t:ok(c:propagate() == partir.parse(COLS), "tile %1 along dim 1; propagate: only u is split")
  t:fails("tile: no value '%9'", "tile: an unknown value", s.tile, s, "%9", 0, 8)
  t:fails("width 17 is not between 1 and the size 16", "tile: a width larger than the size",
    s.tile, s, "%0", 0, 17)
  local s0 = s:sum("%0", 128, "model")
  t:ok(s0 == partir.parse(SUM0), "sum %0 128 model splits the first contraction")
  t:is(s:sum("%0", 128):regions()[1].axis, nil, "sum without an axis binds none")
  t:fails("sum: no operator value '%x'", "sum: an argument is not an operator",
    s.sum, s, "%x", 128)
  t:fails("no rule 'matmul-sum-1'", "sum: a reduction the operator lacks",
    s.sum, s, "%0", 128, "model", 1)
  t:fails("width 300 is not between 1 and the size 256", "sum: a width larger than the size",
    s.sum, s, "%0", 300)

  -- propagate and its report
  local m, report = s:arg_tile("%w", 1, 128, "model"):arg_tile("%u", 0, 128, "model"):propagate()
  t:ok(m == partir.parse(MEGATRON), "w by columns, u by rows, propagate: Megatron's MLP")
  t:ok(type(report) == "table" and #report == 0, "...with an empty report")
  local same, rep0 = s:propagate()
  t:ok(same == s and #rep0 == 0, "propagate with nothing tiled changes nothing")
  local conflict = s:arg_tile("%x", 1, 128):arg_tile("%w", 0, 64)
  local c1, rep1 = conflict:propagate({ tolerate = true })
  t:same_list(rep1, { "conflicting tilings of dimension 0: a slice of width 128 of a tile of width 64" },
    "propagate{tolerate = true} reports two tilings of w's rows with different widths")
  t:ok(getmetatable(c1) == getmetatable(s) and c1 ~= conflict, "...and returns the state it reached")
  t:fails("propagate did not resolve: conflicting tilings of dimension 0: a slice of width 128 "
    .. "of a tile of width 64 (s:propagate{tolerate = true} accepts it and returns the report)",
    "propagate fails with its report when not told to tolerate it", conflict.propagate, conflict)
  t:fails("propagate did not resolve: conflicting", "...and so with {tolerate = false}",
    conflict.propagate, conflict, { tolerate = false })
  t:fails("the options are 'tolerate' and 'resolve'", "propagate: an unknown option",
    conflict.propagate, conflict, { tolerant = true })
  t:fails("table expected, got boolean", "propagate: options that are not a table",
    conflict.propagate, conflict, true)
  -- rows of x and columns of w both over "a": a conflict fails propagate,
  -- naming both splits, whether or not it tolerates a report
  local split = s:arg_tile("%x", 0, 8, "a"):arg_tile("%w", 1, 128, "a")
  t:fails(CONFLICT, "propagate fails on a conflict, naming both splits", split.propagate, split)
  t:fails(CONFLICT, "...and so with {tolerate = true}: a conflict is no report",
    split.propagate, split, { tolerate = true })
  t:fails(CONFLICT, "...and so does exec", split.exec, split, "propagate")
  local resolved, rep2, chose = split:propagate { resolve = true }
  t:ok(resolved == partir.parse(RESOLVED), "propagate{resolve = true} keeps w's columns, gathers x")
  t:ok(#rep2 == 0 and #chose == 1 and chose[1]:find(
    "chose all_gather of %x along dimension 0 (keeping %w dimension 1)", 1, true) ~= nil,
    "...with an empty report, and says what it chose", chose[1])
  local again, _, none = resolved:propagate()
  t:ok(again == resolved and #none == 0, "...and a later propagate leaves the resolved program")
  local _, _, by_exec = split:exec("propagate --resolve")
  t:same_list(by_exec, chose, "s:exec('propagate --resolve') chooses the same")
  t:fails("the only option is 'tolerate'", "fuse takes no 'resolve'", split.fuse, split,
    { resolve = true })
  local both = partir.parse(NESTED) -- the axis bound twice, as written
  local fused, frep = both:fuse { tolerate = true }
  t:same_list(frep, { 'axis "a" is bound by two nested regions' }, "fuse{tolerate = true} returns its report")
  t:ok(fused == both, "...and the state (nothing to fuse)")
  t:fails('fuse did not resolve: axis "a" is bound by two nested regions (s:fuse{tolerate = true}',
    "fuse fails with its report when not told to tolerate it", both.fuse, both)
  t:fails('simplify did not resolve: axis "a"', "...and so does simplify", both.simplify, both)
  t:is(select("#", both:simplify { tolerate = true }), 2, "simplify{tolerate = true} returns two values")
  t:is(select("#", s:simplify()), 1, "simplify with nothing to report returns one value")

  -- fuse, simplify
  local u = a:apply("matmul-tile-0", "%2", { w = 8 })
  t:same_list(u:matches("fuse"), { "3" }, "tiling the matmul of a tile makes a slice of a tile")
  local f = u:fuse()
  t:is(select("#", u:fuse()), 1, "fuse returns one value")
  t:ok(f == partir.parse(ROWS0), "fuse turns the slice of the tile into the tile's body")
  t:same_list(f:matches("fuse"), {}, "...leaving nothing to fuse")
  t:ok(s:fuse() == s, "fuse on mlp.pir changes nothing")
  t:ok(a:simplify() == s, "simplify removes the dumb tiling of x")
  t:ok(a:arg_tile(1, 0, 128):simplify() == s, "...and of w too")
  t:ok(tiled:simplify() == tiled, "simplify leaves mlp_tiled.pir alone")

  -- exec
  local e, erep = s:exec("arg-tile 0 0 8; propagate")
  t:ok(e == tiled and type(erep) == "table" and #erep == 0,
    "exec 'arg-tile 0 0 8; propagate' gives mlp_tiled.pir and a report")
  t:ok(s:exec("arg-tile 0 0 8. propagate.") == tiled, "exec takes the talk's 'CMD. CMD.'")
  t:ok(s:exec("arg-tile 1 1 128 model\narg-tile 2 0 128 model\npropagate") == m,
    "exec takes one command a line")
  t:ok(s:exec("") == s, "exec of nothing is the input")
  local widths = "conflicting tilings of dimension 0: a slice of width 128 of a tile of width 64"
  local _, xrep = s:exec("arg-tile 0 1 128; arg-tile 1 0 64; propagate", { tolerate = true })
  t:same_list(xrep, { widths },
    "exec(script, {tolerate = true}) returns propagate's report")
  t:fails("exec: its passes did not resolve: " .. widths .. " "
    .. "(s:exec(script, {tolerate = true}) accepts it and returns the report)",
    "exec fails with propagate's report when not told to tolerate it",
    s.exec, s, "arg-tile 0 1 128; arg-tile 1 0 64; propagate")
  t:ok(s:exec("arg-tile 0 0 8 a; arg-tile 1 1 128 a") ~= nil,
    "...a script with no pass has nothing to report")
  t:fails("the only option is 'tolerate'", "exec: an unknown option", s.exec, s, "propagate", { x = 1 })
  t:fails("'frob': unknown command 'frob'", "exec: an unknown command", s.exec, s, "frob")
  local err = t:fails("'arg-tile 0 0 17'", "exec: the failing command is named",
    s.exec, s, "propagate; arg-tile 0 0 17; propagate")
  t:has(err, "width 17 is not between 1 and the size 16", "...with the reason")
  t:fails("usage: arg-tile ARG DIM WIDTH [AXIS]", "exec: a command with too few words",
    s.exec, s, "arg-tile 0 0")

  -- apply
  t:ok(a:apply("tile-slice", "%0") == s, "apply tile-slice at %0 undoes arg_tile")
  t:ok(a:apply("tile-slice") == s, "apply without 'at' applies at the first place it can")
  local ap = s:apply("matmul-tile-0", "%0", { w = 8, a = "batch" })
  r = ap:regions()
  t:ok(#r == 1 and r[1].kind == "tile" and r[1].range.w == 8 and r[1].axis == "batch",
    "apply matmul-tile-0 at %0 with w = 8, a = batch")
  t:ok(ap:propagate():fuse() == ap:propagate(), "...propagates to a fixed point")
  t:ok(s:apply("matmul-tile-1", nil, { w = 128 }) == s:apply("matmul-tile-1", "%0", { w = 128 }),
    "apply without 'at' picks %0, the first matmul")
  t:ok(s:apply("matmul-sum", "%0", { w = 128, a = "model" }) == s0, "apply matmul-sum is the sum verb")
  t:fails("apply: no rule 'frobnicate'", "apply: an unknown rule", s.apply, s, "frobnicate")
  t:fails("apply: no value '%9'", "apply: a location that does not exist",
    s.apply, s, "matmul-tile-0", "%9", { w = 8 })
  t:fails("rule 'matmul-tile-0' needs parameter 'w' (the width)", "apply: a missing parameter",
    s.apply, s, "matmul-tile-0", "%0")
  t:fails("width 17 is not between 1 and the size 16", "apply: a width larger than the size",
    s.apply, s, "matmul-tile-0", "%0", { w = 17 })
  t:fails("'matmul-tile-0' applies to 'matmul'", "apply: a location where the rule cannot apply",
    s.apply, s, "matmul-tile-0", "%x", { w = 8 })
  t:fails("apply: 'fuse' applies nowhere", "apply: a rule that applies nowhere", s.apply, s, "fuse")
  t:fails("parameters are NAME = number or axis name", "apply: a parameter without a name",
    s.apply, s, "matmul-tile-0", "%0", { 8 })
  t:fails("table expected, got string", "apply: parameters that are not a table",
    s.apply, s, "matmul-tile-0", "%0", "w=8")

  -- argument type errors are Lua errors with a message
  t:fails("bad argument #2 to 'arg_tile' (number expected, got string)",
    "arg_tile(\"x\", \"zero\", 8)", function() return s:arg_tile("x", "zero", 8) end)
  t:fails("string expected, got table", "arg_tile({}, 0, 8)",
    function() return s:arg_tile({}, 0, 8) end)
  t:fails("not an axis name", "arg_tile with an empty axis", function() return s:arg_tile(0, 0, 8, "") end)
  t:fails("not an axis name", "arg_tile with an axis with a space",
    function() return s:arg_tile(0, 0, 8, "a b") end)
  t:fails("not an axis name", "arg_tile with an axis with a ';'",
    function() return s:arg_tile(0, 0, 8, "a;propagate") end)
  t:fails("not a value name", "tile of a name with a space", function() return s:tile("%0 x", 0, 8) end)
  t:fails("not a value name", "tile of a name with a ';'", function() return s:tile("%0;propagate", 0, 8) end)
  t:fails("number has no integer representation", "tile with dim 0.5",
    function() return s:tile("%0", 0.5, 8) end)
  t:fails("number expected, got string", "sum with width 'wide'", function() return s:sum("%0", "wide") end)
  t:fails("number expected, got string", "sum with reduction 'first'",
    function() return s:sum("%0", 128, "model", "first") end)
  t:fails("string expected, got no value", "apply()", function() return s:apply() end)
  t:fails("string expected, got no value", "matches()", function() return s:matches() end)
  -- (a table is the compiled run's options: test_exec.lua)
  t:fails("string expected, got boolean", "exec(true)", function() return s:exec(true) end)
  t:fails("string expected, got no value", "exec()", function() return s:exec() end)
  t:fails("number expected, got string", "run(\"x\")", function() return s:run("x") end)
  t:fails("partir.State expected, got number", "s.print(42)", s.print, 42)
  t:fails("partir.State expected, got table", "s.args({})", s.args, {})
  t:fails("partir.State expected, got string", "s.propagate(\"x\")", s.propagate, "x")
  t:fails("partir.State expected, got no value", "s.values()", s.values)

  -- a failed verb leaves its input as it was
  t:is(s:print(), before, "after all these failures, s prints as before")
  t:ok(s == partir.parse(before), "...and is the same state")
  local a_text = a:print()
  pcall(a.exec, a, "propagate; arg-tile 0 0 5")
  pcall(a.apply, a, "matmul-tile-0", "%2", { w = 5 })
  t:is(a:print(), a_text, "a failed exec or apply on a derived state leaves it as it was")

  -- a name without '%' is the same value (it must not shift the optional
  -- axis or parameter table: the verbs push strings above their args)
  local bx = s:arg_tile("x", 0, 8)
  t:ok(bx == s:arg_tile("%x", 0, 8), "arg_tile(\"x\", 0, 8) is arg_tile(\"%x\", 0, 8)",
    "axis: " .. tostring(bx:regions()[1].axis))
  t:is(s:tile("0", 0, 8):regions()[1].axis, nil, "tile(\"0\", 0, 8) binds no axis")
  t:is(s:sum("0", 128):regions()[1].axis, nil, "sum(\"0\", 128) binds no axis")
  local ok, res = pcall(a.apply, a, "tile-slice", "0")
  t:ok(ok and res == s, "apply(\"tile-slice\", \"0\") is apply at %0", tostring(res))

  -- a ';' in a rule name or parameter must not run a second command
  ok, res = pcall(s.apply, s, "matmul-tile-0", "%0", { w = "8; propagate" })
  t:ok(not ok, "apply refuses a parameter value with ';' in it",
    ok and ("it ran:\n" .. res:print()) or nil)
  ok, res = pcall(a.apply, a, "tile-slice; arg-tile 1 0 128")
  t:ok(not ok, "apply refuses a rule name with ';' in it", ok and ("it ran:\n" .. res:print()) or nil)

  -- long names and axes are kept whole (no fixed-size command buffer)
  local long = string.rep("v", 250)
  local lp = partir.parse("func @f(%" .. long .. ": tensor<16x4xf32>) -> tensor<16x4xf32> {\n  %0 = neg(%"
    .. long .. ")\n  return %0\n}\n")
  ok, res = pcall(lp.arg_tile, lp, long, 0, 8, "model")
  t:ok(ok, "arg_tile of an argument with a 250-character name", res)
  local axis = string.rep("a", 300)
  ok, res = pcall(s.arg_tile, s, 0, 0, 8, axis)
  t:ok(not ok or res:regions()[1].axis == axis, "a 300-character axis is kept whole or refused",
    ok and ("axis kept: " .. #res:regions()[1].axis .. " characters") or nil)

  -- an integral float is an integer parameter, in apply as in arg_tile
  t:ok(s:arg_tile(0, 0, 8.0) == a, "arg_tile takes the width 8.0 as 8")
  ok, res = pcall(s.apply, s, "matmul-tile-0", "%0", { w = 8.0 })
  t:ok(ok and res == s:apply("matmul-tile-0", "%0", { w = 8 }), "apply takes w = 8.0 as 8", res)

  -- an axis with a control character is refused (the program would not
  -- parse back, or the axis would be cut at a NUL byte)
  ok, res = pcall(s.arg_tile, s, 0, 0, 8, "a\rb")
  t:ok(not ok or pcall(res.check, res), "an axis with a carriage return is refused or round-trips",
    ok and select(2, pcall(res.check, res)) or nil)
  ok, res = pcall(s.arg_tile, s, 0, 0, 8, "a\0b")
  t:ok(not ok or res:regions()[1].axis == "a\0b", "an axis with a NUL byte is refused or kept whole")

  t:done()
  return s
end
