-- s:exec{...} and s:bench{...}: the program compiled for this CPU (one
-- device, or lowered on a mesh and run a thread a device).  With
-- exact = true the compiled code computes the interpreter's arithmetic,
-- so its results equal s:run's on the same state bit for bit; by default
-- each value is computed in its own type (compared within a tolerance).
-- Results computed by hand and in Lua are the independent checks.
local tap = require "tap"

local RTOL, ATOL = 1e-4, 1e-5

-- The default arithmetic sums f32 products in f32: its error is relative
-- to the size of the terms, not of the result (a result near 0 made of
-- terms near 100 is off by about 1e-5), so it is compared within 1e-5 of
-- the largest result.
local function loose(want)
  local big = 0
  for _, r in ipairs(want) do
    for _, v in ipairs(r.values) do
      big = math.max(big, math.abs(v))
    end
  end
  return RTOL, 1e-5 * big
end

return function(s, mesh, opts)
  local t = tap.new(opts)
  local light = opts.light == "1"

  -- results computed by hand, on one device
  local k = partir.parse([==[
func @main() -> (tensor<2x2xf32>, tensor<3xi32>) {
  %a = constant() {value = [[1.0, 2.0], [3.0, 4.0]]} : tensor<2x2xf32>
  %b = constant() {value = [[5.0, 6.0], [7.0, 8.0]]} : tensor<2x2xf32>
  %c = matmul(%a, %b)
  %i = constant() {value = [-3, 0, 7]} : tensor<3xi32>
  %n = neg(%i)
  return %c, %n
}
]==], "consts.pir")
  local kr = k:exec { exact = true }
  t:is(#kr, 2, "exec: one table per result")
  t:is(kr[1].type, "tensor<2x2xf32>", "exec: the result's type")
  t:same_list(kr[1].shape, { 2, 2 }, "exec: the result's shape")
  t:same_list(kr[1].values, { 19.0, 22.0, 43.0, 50.0 }, "exec: [[1,2],[3,4]] x [[5,6],[7,8]]")
  t:same_list(kr[2].values, { 3, 0, -7 }, "exec: neg of an i32 constant")
  t:is(math.type(kr[2].values[1]), "integer", "exec: i32 values are Lua integers")
  t:close(k:exec {}, kr, 0, 0, "exec: small integers in f32 are exact in any arithmetic")

  -- the seeded inputs are run's; inputs given as lists, or as run's tables
  local g = partir.parse([[
func @g(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> (tensor<2x3xf32>, tensor<3x4xf32>, tensor<2x4xf32>) {
  %c = matmul(%a, %b)
  return %a, %b, %c
}
]])
  local r1 = g:run(1)
  t:close(g:exec { seed = 1, exact = true }, r1, 0, 0, "exec{seed = 1}: run(1)'s inputs and results")
  local rtol1, atol1 = loose(r1)
  t:close(g:exec { seed = 1 }, r1, rtol1, atol1, "...and in its own arithmetic, within a tolerance")
  t:close(g:exec { exact = true }, g:run(), 0, 0, "exec: the default seed is 0")
  local a = { 1, 2, 3, 4, 5, 6 }
  local b = { 1, 0, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1 }
  local want = {}
  for i = 0, 1 do
    for j = 0, 3 do
      local sum = 0
      for kk = 0, 2 do
        sum = sum + a[i * 3 + kk + 1] * b[kk * 4 + j + 1]
      end
      want[#want + 1] = sum
    end
  end
  local gr = g:exec { inputs = { a, b }, exact = true }
  t:same_list(gr[1].values, a, "exec{inputs}: the first input comes back")
  t:same_list(gr[3].values, want, "exec{inputs}: the matmul, computed in Lua")
  t:close(g:exec { inputs = { r1[1], r1[2] }, exact = true }, r1, 0, 0,
    "exec{inputs}: run's result tables as inputs")
  local n = partir.parse([[
func @n(%i: tensor<4xi32>, %p: tensor<4xi1>) -> (tensor<4xi32>, tensor<4xi1>) {
  %m = neg(%i)
  return %m, %p
}
]])
  local nr = n:exec { inputs = { { -5, 0, 2147483647, 9 }, { true, false, 1, 0 } } }
  t:same_list(nr[1].values, { 5, 0, -2147483647, -9 }, "exec{inputs}: i32 inputs, negated")
  t:same_list(nr[2].values, { 1, 0, 1, 0 }, "exec{inputs}: i1 inputs as booleans or 0/1")

  -- bad options and inputs raise, naming what is wrong
  t:fails("options are mesh", "exec{frob}: an unknown option", function() return g:exec { frob = 1 } end)
  t:fails("options are mesh", "exec{seed = 1.5}: not an integer", function() return g:exec { seed = 1.5 } end)
  t:fails("a=0", "exec{mesh = 'a=0'}: a bad mesh", function() return g:exec { mesh = "a=0" } end)
  t:fails("inputs: 1 given, the program takes 2", "exec{inputs}: too few",
    function() return g:exec { inputs = { a } } end)
  t:fails("input 2 (%b: tensor<3x4xf32>) needs 12 values, not 6", "exec{inputs}: a wrong size",
    function() return g:exec { inputs = { a, a } } end)
  t:fails("input 1: value 2 is not a number", "exec{inputs}: not a number",
    function() return g:exec { inputs = { { 1, "x", 3, 4, 5, 6 }, b } } end)
  t:fails("value 1 is not an integer", "exec{inputs}: a fraction for i32",
    function() return n:exec { inputs = { { 0.5, 0, 0, 0 }, { 0, 0, 0, 0 } } } end)
  local text = s:arg_tile(0, 0, 8, "batch"):propagate():lower("batch=2")
  t:fails("a device's program", "exec: SPMD text is refused (its arguments are a device's)",
    function() return partir.parse(text):exec {} end)

  -- the string form is still a script of engine commands
  local tiled, report = s:exec("arg-tile 0 0 8 batch; propagate")
  t:ok(getmetatable(tiled) == getmetatable(s) and #report == 0, "exec(script) still rewrites")

  -- the MLP's partitioned forms, on their meshes: the interpreter's
  -- results on the same state, and within a tolerance the original's
  local forms = {
    { "batch on batch=2", tiled, "batch=2" },
    { "batch on one device (its tile a loop)", tiled, nil },
    { "Megatron on model=2",
      s:arg_tile("%w", 1, 128, "model"):arg_tile("%u", 0, 128, "model"):propagate(), "model=2" },
    { "batch then Megatron on batch=2,model=2", tiled
      :arg_tile("%w", 1, 128, "model"):arg_tile("%u", 0, 128, "model"):propagate(), "batch=2,model=2" },
    { "the first contraction as a sum on model=4", s:sum("%0", 64, "model"), "model=4" },
  }
  local want_r = s:run(2)
  for _, f in ipairs(forms) do
    local got = f[2]:exec { mesh = f[3], seed = 2, exact = true }
    t:close(got, f[2]:run(2), 0, 0, "mlp, seed 2, exact: " .. f[1] .. ", as the interpreter")
    t:close(got, want_r, RTOL, ATOL, "...and the original's, within a tolerance")
    if not light then
      local rtol, atol = loose(want_r)
      t:close(f[2]:exec { mesh = f[3], seed = 2 }, want_r, rtol, atol,
        "...and in its own arithmetic too")
    end
  end

  -- the transformer layer, Megatron on 2 and 4 threads
  if not light then
    local tf = partir.load(t:src("examples/transformer_layer.pir"))
    local megatron = require "megatron"
    local want_tf = tf:run(7)
    for _, m in ipairs { 2, 4 } do
      local mt = megatron(tf, { model = m }, {})
      local got = mt:exec { mesh = "model=" .. m, seed = 7, exact = true }
      t:close(got, mt:run(7), 0, 0, "transformer, Megatron on model=" .. m .. ": the interpreter's results")
      local rtol, atol = loose(want_tf)
      t:close(mt:exec { mesh = "model=" .. m, seed = 7 }, want_tf, rtol, atol,
        "...and in its own arithmetic the original's, within a tolerance")
    end
  end

  -- bench: the step time of the compiled program, in seconds
  local bt = t:lives("bench{mesh, runs}", function()
    return tiled:bench { mesh = "batch=2", runs = 3 }
  end)
  if bt then
    t:ok(type(bt.min) == "number" and bt.min > 0, "bench: min is a positive number")
    t:ok(type(bt.median) == "number" and bt.median >= bt.min, "bench: median >= min")
    t:is(bt.runs, 3, "bench: runs = 3 timed runs")
  end
  t:is(g:bench { ["repeat"] = 2 }.runs, 2, "bench{[\"repeat\"] = 2}: 'repeat' (a Lua keyword) also names it")
  t:is(g:bench().runs, 5, "bench(): 5 runs on one device by default")
  t:fails("options are mesh", "bench{runs = 0}: refused", function() return g:bench { runs = 0 } end)
  t:fails("options are mesh", "exec{runs}: only bench takes runs", function() return g:exec { runs = 2 } end)

  t:done()
  return s
end
