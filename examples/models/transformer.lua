-- transformer.lua — prints a stack of pre-LN transformer layers as a
-- partir program.
--
--   lua5.4 examples/models/transformer.lua --layers 96 --batch 1 --seq 2048 \
--     --d_model 12288 --heads 96 --d_ff 49152 > gpt3.pir
--
-- Every layer is examples/transformer_layer.pir, operation for operation:
--   h   = x + Attention(LayerNorm1(x))
--   out = h + MLP(LayerNorm2(h))
-- (layer norm with learned gamma/beta, epsilon 1e-5, biased variance;
-- attention without a mask, scores scaled by 1/sqrt(head size); a ReLU
-- MLP with biases).  Layer i's weights are %l{i}_wq, %l{i}_ln1_g, ... and
-- its values %l{i}_q, %l{i}_res1, ...; the constants are defined once.
-- Checking the GPT-3 shape only parses and type-checks; do not run it.
--
-- With --heads-by-reshape, attention is written the way JAX and PyTorch
-- export it: the projections are [D, D] matrices, and the heads are split
-- off by reshape [B,S,D] -> [B,S,H,D/H] (then transposed to
-- [B,H,S,D/H]) and merged back by transpose and reshape [B,S,H,D/H] ->
-- [B,S,D] before the output projection.  It computes the same as the
-- default form, whose weights keep the heads as a dimension
-- ([D, H, D/H] and [H, D/H, D]) so that no reshape is needed.
--
-- With --embed V, the program starts from token ids instead of
-- activations: %ids [B,S] (i32) looks up rows of an embedding table
-- %embed [V, D] (a gather, as JAX exports table[ids]); the ids are then
-- the first argument (the data of batch.lua and megatron.lua) and the
-- table a weight (Megatron splits its V rows: one all-reduce).
--
-- With --train it prints the training step of the stack instead, built
-- by 'partir grad' (cli.lua says which partir): every weight is a
-- parameter, %x and a %target the batch; --loss, --optimizer and --lr
-- are partir grad's.  E.g. two layers under Adam:
--   lua5.4 examples/models/transformer.lua --layers 2 --train \
--     --optimizer adam > transformer_train.pir

package.path = (arg[0]:match("^(.*)/") or ".") .. "/?.lua;" .. package.path
local cli = require "cli"

local USAGE = [[
usage: lua5.4 transformer.lua [--layers N] [--batch N] [--seq N]
                              [--d_model N] [--heads N] [--d_ff N]
                              [--heads-by-reshape] [--embed V]
                              [--dtype f32|bf16|f16]
                              [--train] [--loss L] [--optimizer O] [--lr R]
  --layers N    transformer layers (default 1)
  --batch N     batch size (default 2)
  --seq N       sequence length (default 8)
  --d_model N   model width (default 32)
  --heads N     attention heads; must divide d_model (default 4)
  --d_ff N      MLP hidden width (default 64)
  --heads-by-reshape
                split the heads off [D, D] projections with reshape and
                transpose (as JAX and PyTorch export attention)
  --embed V     start from token ids [batch, seq] looked up in an
                embedding table of V rows (a gather)
  --dtype T     the element type of the weights and activations: f32
                (default), bf16 or f16 (as mixed-precision training
                stores them)
]] .. cli.TRAIN_USAGE .. [[

Prints the program to stdout.]]

local options = {
  layers = 1, batch = 2, seq = 8, d_model = 32, heads = 4, d_ff = 64,
  heads_by_reshape = false, embed = 0, dtype = "f32",
}
for k, v in pairs(cli.TRAIN_OPTIONS) do
  options[k] = v
end
local o, fail = cli.options("transformer.lua", USAGE, arg, options)
if o.d_model % o.heads ~= 0 then
  fail(string.format("--heads %d does not divide --d_model %d", o.heads,
    o.d_model))
end

if o.dtype ~= "f32" and o.dtype ~= "bf16" and o.dtype ~= "f16" then
  fail(string.format("--dtype is f32, bf16 or f16, not '%s'", o.dtype))
end
local B, S, D, H, F = o.batch, o.seq, o.d_model, o.heads, o.d_ff
local HD = D // H -- head size

local function tensor(...)
  return "tensor<" .. table.concat({ ... }, "x") .. "x" .. o.dtype .. ">"
end

-- Shortest text that reads back as the same double.
local function float(v)
  for digits = 1, 17 do
    local s = string.format("%." .. digits .. "g", v)
    if tonumber(s) == v then
      if not s:find("[.e]") then s = s .. ".0" end
      return s
    end
  end
  return string.format("%.17g", v)
end

local out = {}
local function emit(fmt, ...)
  out[#out + 1] = string.format(fmt, ...)
end

local BSD, BS = tensor(B, S, D), tensor(B, S)
local BSHd, BHSd = tensor(B, S, H, HD), tensor(B, H, S, HD)
local BHSS, BHS = tensor(B, H, S, S), tensor(B, H, S)
local BSF = tensor(B, S, F)

-- The weights of one layer, in the order of transformer_layer.pir.
local function layer_params(i)
  local p = "%l" .. i .. "_"
  local wqkv, wo = tensor(D, H, D // H), tensor(H, D // H, D)
  if o.heads_by_reshape then
    wqkv, wo = tensor(D, D), tensor(D, D)
  end
  return {
    p .. "ln1_g: " .. tensor(D), p .. "ln1_b: " .. tensor(D),
    p .. "wq: " .. wqkv, p .. "wk: " .. wqkv, p .. "wv: " .. wqkv,
    p .. "wo: " .. wo,
    p .. "ln2_g: " .. tensor(D), p .. "ln2_b: " .. tensor(D),
    p .. "w1: " .. tensor(D, F), p .. "b1: " .. tensor(F),
    p .. "w2: " .. tensor(F, D), p .. "b2: " .. tensor(D),
  }
end

-- Layer norm 'ln' of value 'x' with layer i's gamma/beta; returns the
-- name of the normalised value.
local function layer_norm(p, ln, x, out_name)
  local n = p .. ln
  emit("  %s_sum = reduce_sum(%s) {dims = [2]} : %s", n, x, BS)
  emit("  %s_mean = mul(%s_sum, %%inv_d) : %s", n, n, BS)
  emit("  %s_mean_b = broadcast_in_dim(%s_mean) {dims = [0, 1]} : %s", n, n, BSD)
  emit("  %s_xc = sub(%s, %s_mean_b) : %s", n, x, n, BSD)
  emit("  %s_sq = mul(%s_xc, %s_xc) : %s", n, n, n, BSD)
  emit("  %s_sqsum = reduce_sum(%s_sq) {dims = [2]} : %s", n, n, BS)
  emit("  %s_var = mul(%s_sqsum, %%inv_d) : %s", n, n, BS)
  emit("  %s_var_eps = add(%s_var, %%eps) : %s", n, n, BS)
  emit("  %s_rstd = rsqrt(%s_var_eps) : %s", n, n, BS)
  emit("  %s_rstd_b = broadcast_in_dim(%s_rstd) {dims = [0, 1]} : %s", n, n, BSD)
  emit("  %s_xn = mul(%s_xc, %s_rstd_b) : %s", n, n, n, BSD)
  emit("  %s_g_b = broadcast_in_dim(%s_g) {dims = [2]} : %s", n, n, BSD)
  emit("  %s_b_b = broadcast_in_dim(%s_b) {dims = [2]} : %s", n, n, BSD)
  emit("  %s_scaled = mul(%s_xn, %s_g_b) : %s", n, n, n, BSD)
  emit("  %s = add(%s_scaled, %s_b_b) : %s", out_name, n, n, BSD)
end

-- Emits layer i reading value 'x'; returns the name of its output.
local function layer(i, x)
  local p = "%l" .. i .. "_"
  local proj = "{lhs_contract = [2], rhs_contract = [0]}"
  emit("  // ---- layer %d: layer norm 1", i)
  layer_norm(p, "ln1", x, p .. "h1")
  emit("  // ---- layer %d: self-attention", i)
  for _, v in ipairs({ "q", "k", "v" }) do
    if o.heads_by_reshape then -- [B,S,D] -> [B,S,H,D/H]
      emit("  %s%s = dot_general(%sh1, %sw%s) %s : %s", p, v, p, p, v, proj, BSD)
      emit("  %s%s_heads = reshape(%s%s) : %s", p, v, p, v, BSHd)
    else -- projections keep heads as a dimension (w [D, H, D/H])
      emit("  %s%s_heads = dot_general(%sh1, %sw%s) %s : %s", p, v, p, p, v,
        proj, BSHd)
    end
  end
  for _, v in ipairs({ "q", "k", "v" }) do
    emit("  %s%st = transpose(%s%s_heads) {permutation = [0, 2, 1, 3]} : %s",
      p, v, p, v, BHSd)
  end
  emit("  %sscores_raw = dot_general(%sqt, %skt) {lhs_batch = [0, 1], "
    .. "rhs_batch = [0, 1], lhs_contract = [3], rhs_contract = [3]} : %s",
    p, p, p, BHSS)
  emit("  %sscores = mul(%sscores_raw, %%scale) : %s", p, p, BHSS)
  emit("  %sscores_max = reduce_max(%sscores) {dims = [3]} : %s", p, p, BHS)
  emit("  %sscores_max_b = broadcast_in_dim(%sscores_max) {dims = [0, 1, 2]} "
    .. ": %s", p, p, BHSS)
  emit("  %sshifted = sub(%sscores, %sscores_max_b) : %s", p, p, p, BHSS)
  emit("  %sexps = exp(%sshifted) : %s", p, p, BHSS)
  emit("  %sexps_sum = reduce_sum(%sexps) {dims = [3]} : %s", p, p, BHS)
  emit("  %sexps_sum_b = broadcast_in_dim(%sexps_sum) {dims = [0, 1, 2]} : %s",
    p, p, BHSS)
  emit("  %sprobs = div(%sexps, %sexps_sum_b) : %s", p, p, p, BHSS)
  emit("  %sctx = dot_general(%sprobs, %svt) {lhs_batch = [0, 1], "
    .. "rhs_batch = [0, 1], lhs_contract = [3], rhs_contract = [2]} : %s",
    p, p, p, BHSd)
  if o.heads_by_reshape then -- [B,H,S,D/H] -> [B,S,H,D/H] -> [B,S,D]
    emit("  %sctx_t = transpose(%sctx) {permutation = [0, 2, 1, 3]} : %s", p,
      p, BSHd)
    emit("  %sctx_flat = reshape(%sctx_t) : %s", p, p, BSD)
    emit("  %sattn = dot_general(%sctx_flat, %swo) %s : %s", p, p, p, proj, BSD)
  else -- contract head and head_dim with wo [H, D/H, D]
    emit("  %sattn = dot_general(%sctx, %swo) {lhs_contract = [1, 3], "
      .. "rhs_contract = [0, 1]} : %s", p, p, p, BSD)
  end
  emit("  %sres1 = add(%s, %sattn) : %s", p, x, p, BSD)
  emit("  // ---- layer %d: layer norm 2", i)
  layer_norm(p, "ln2", p .. "res1", p .. "h2")
  emit("  // ---- layer %d: MLP", i)
  emit("  %smlp_in = dot_general(%sh2, %sw1) %s : %s", p, p, p, proj, BSF)
  emit("  %sb1_b = broadcast_in_dim(%sb1) {dims = [2]} : %s", p, p, BSF)
  emit("  %smlp_pre = add(%smlp_in, %sb1_b) : %s", p, p, p, BSF)
  emit("  %smlp_act = relu(%smlp_pre) : %s", p, p, BSF)
  emit("  %smlp_out = dot_general(%smlp_act, %sw2) %s : %s", p, p, p, proj, BSD)
  emit("  %sb2_b = broadcast_in_dim(%sb2) {dims = [2]} : %s", p, p, BSD)
  emit("  %smlp = add(%smlp_out, %sb2_b) : %s", p, p, p, BSD)
  emit("  %sout = add(%sres1, %smlp) : %s", p, p, p, BSD)
  return p .. "out"
end

emit("// pre-LN transformer, %d layers (generated by "
  .. "examples/models/transformer.lua --layers %d --batch %d --seq %d "
  .. "--d_model %d --heads %d --d_ff %d%s%s)", o.layers, o.layers, B, S, D, H,
  F, o.heads_by_reshape and " --heads-by-reshape" or "",
  o.embed > 0 and " --embed " .. o.embed or "")
local params = { "%x: " .. BSD }
if o.embed > 0 then -- token ids and the table their rows come from
  params = { "%ids: tensor<" .. B .. "x" .. S .. "xi32>",
    "%embed: " .. tensor(o.embed, D) }
end
for i = 0, o.layers - 1 do
  table.move(layer_params(i), 1, 12, #params + 1, params)
end
emit("func @transformer(%s)\n    -> %s {",
  table.concat(params, ",\n                 "), BSD)
emit("  %%inv_d = constant() {value = %s} : %s", float(1 / D), BS)
emit("  %%eps = constant() {value = 0.00001} : %s", BS)
emit("  %%scale = constant() {value = %s} : %s", float(1 / math.sqrt(HD)), BHSS)
local x = "%x"
if o.embed > 0 then -- x = embed[ids]: one row of D per id
  emit("  %%x = gather(%%embed, %%ids) {offset_dims = [2], "
    .. "collapsed_slice_dims = [0], start_index_map = [0], "
    .. "index_vector_dim = 2, slice_sizes = [1, %d]} : %s", D, BSD)
end
for i = 0, o.layers - 1 do
  x = layer(i, x)
end
emit("  return %s", x)
emit("}")
cli.print(o, table.concat(out, "\n") .. "\n")
