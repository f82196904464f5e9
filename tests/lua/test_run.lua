-- s:run(seed): results by hand on small programs, the seeded inputs, and
-- every partitioned form of the MLP and the transformer layer computing
-- what the original computes (elementwise, within a tolerance).
local tap = require "tap"
local C = require "combinators"

local RTOL, ATOL = 1e-4, 1e-5

return function(s, mesh, opts)
  local t = tap.new(opts)

  -- results computed by hand
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
  local kr = k:run()
  t:is(#kr, 2, "run: one table per result")
  t:is(kr[1].type, "tensor<2x2xf32>", "run: the result's type")
  t:same_list(kr[1].shape, { 2, 2 }, "run: the result's shape")
  t:same_list(kr[1].values, { 19.0, 22.0, 43.0, 50.0 }, "run: [[1,2],[3,4]] x [[5,6],[7,8]], row-major")
  t:same_list(kr[2].values, { 3, 0, -7 }, "run: neg of an i32 constant")
  t:is(math.type(kr[2].values[1]), "integer", "run: i32 values are Lua integers")
  t:is(math.type(kr[1].values[1]), "float", "run: f32 values are Lua floats")

  -- seeded random arguments
  local g = partir.parse([[
func @g(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> (tensor<2x3xf32>, tensor<3x4xf32>, tensor<2x4xf32>) {
  %c = matmul(%a, %b)
  return %a, %b, %c
}
]])
  local r1, r1b, r2, r0 = g:run(1), g:run(1), g:run(2), g:run()
  t:same_list(r1[1].values, r1b[1].values, "run: the same seed gives the same inputs")
  t:same_list(r0[1].values, g:run(0)[1].values, "run: the default seed is 0")
  local differ = false
  for i, v in ipairs(r1[1].values) do
    differ = differ or v ~= r2[1].values[i]
  end
  t:ok(differ, "run: another seed gives other inputs")
  local a_b_differ = r1[1].values[1] ~= r1[2].values[1] or r1[1].values[2] ~= r1[2].values[2]
  t:ok(a_b_differ, "run: each argument gets its own random stream")
  local want = {}
  local av, bv = r1[1].values, r1[2].values
  for i = 0, 1 do
    for j = 0, 3 do
      local sum = 0.0
      for kk = 0, 2 do
        sum = sum + av[i * 3 + kk + 1] * bv[kk * 4 + j + 1]
      end
      want[#want + 1] = sum
    end
  end
  t:close({ r1[3] }, { { type = "tensor<2x4xf32>", values = want } }, 1e-6, 1e-6,
    "run: the matmul of the returned random inputs, computed in Lua")
  local in_range = true
  for _, v in ipairs(r1[1].values) do
    in_range = in_range and v == v and math.abs(v) < 1e6
  end
  t:ok(in_range, "run: the random inputs are finite numbers")
  local gt = g:tile("%c", 1, 2):propagate()
  t:close(gt:run(1), r1, 0, 0, "run: the small program tiled computes exactly the same")

  -- the MLP's partitioned forms compute what it computes
  local tiled = partir.load(t:src("examples/mlp_tiled.pir"))
  local forms = {
    { "mlp_tiled.pir", tiled },
    { "batch (arg-tile x 0 8; propagate)", s:arg_tile(0, 0, 8, "batch"):propagate() },
    { "a dumb tiling of x", s:arg_tile(0, 0, 4) },
    { "Megatron (w by columns, u by rows)",
      s:arg_tile("%w", 1, 128, "model"):arg_tile("%u", 0, 128, "model"):propagate() },
    { "the first contraction as a sum", s:sum("%0", 64, "model") },
    { "both contractions as sums", s:sum("%1", 32):sum("%0", 64):propagate() },
    { "the result by columns", s:tile("%1", 1, 64):propagate() },
    { "ZeRO (w and u stored by rows)", s:arg_tile("%w", 0, 64, "data"):arg_tile("%u", 0, 64, "data") },
    { "batch then Megatron", s:arg_tile(0, 0, 8, "batch"):propagate()
      :arg_tile("%w", 1, 128, "model"):arg_tile("%u", 0, 128, "model"):propagate() },
    { "a conflicting tiling left in place", s:arg_tile("%x", 1, 128):arg_tile("%w", 0, 64):propagate { tolerate = true } },
  }
  for seed = 1, 2 do
    local want_r = s:run(seed)
    for _, f in ipairs(forms) do
      t:close(f[2]:run(seed), want_r, RTOL, ATOL, string.format("mlp, seed %d: %s", seed, f[1]))
    end
  end
  t:ok(forms[4][2]:run(3)[1].values[1] ~= s:run(4)[1].values[1], "...(and different seeds differ)")

  -- the transformer layer
  local tf = partir.load(t:src("examples/transformer_layer.pir"))
  local want_tf = tf:run(7)
  t:is(#want_tf[1].values, 2 * 8 * 32, "transformer: 2x8x32 outputs")
  local megatron = require "megatron"
  local batch = require "batch"
  local tf_forms = {
    { "batch over 2", batch(tf, { batch = 2 }, {}) },
    { "Megatron over 2", megatron(tf, { model = 2 }, {}) },
    { "Megatron over 4", megatron(tf, { model = 4 }, {}) },
    { "batch then Megatron", C.seq(batch, megatron)(tf, { batch = 2, model = 4 }, {}) },
    { "the sequence split by 4 (reduce_max cannot carry it: tolerated)",
      tf:arg_tile("%x", 1, 2, "seq"):propagate { tolerate = true } },
  }
  for _, f in ipairs(tf_forms) do
    t:ok(f[2] ~= tf, "transformer: " .. f[1] .. " changes the program")
    t:close(f[2]:run(7), want_tf, RTOL, ATOL, "transformer, seed 7: " .. f[1])
  end

  t:done()
  return s
end
