-- train_mlp.lua: a training loop.  The model's SGD step (s:grad, mean
-- squared error), partitioned by data parallelism and then Megatron,
-- compiled, and run for 'steps' steps on synthetic data on the mesh's
-- devices (threads), beside the same step unpartitioned on one device.
-- It prints the loss of both every tenth step and fails unless the loss
-- falls and the two runs agree (docs/grad.md).
--
--   partir tactic examples/train_mlp.lua examples/mlp_relu.pir \
--       --mesh batch=2,model=2 [--set steps=100] [--set lr=0.05]
--
-- The model: its first argument is the batch (x), the others are the
-- parameters; its result is the prediction.  The data: a fixed batch x
-- of normal values and a teacher's target, tanh(x . T) for a fixed
-- random T (so there is something to learn); the weights start normal,
-- scaled by 1/sqrt(fan-in).  Returns the partitioned step.
local batch, megatron = require "batch", require "megatron"

-- a seeded normal sample (Box-Muller over math.random)
local function normal()
  local u, v = math.random(), math.random()
  return math.sqrt(-2 * math.log(1 - u)) * math.cos(2 * math.pi * v)
end

local function filled(n, scale)
  local t = {}
  for i = 1, n do
    t[i] = normal() * scale
  end
  return t
end

local function numel(shape)
  local n = 1
  for _, d in ipairs(shape) do
    n = n * d
  end
  return n
end

return function(s, mesh, opts)
  opts = opts or {}
  local steps = tonumber(opts.steps or 100)
  local lr = tonumber(opts.lr or 0.05)
  local args = s:args()
  local x_arg, out = args[1], s:results()[1]
  if #x_arg.shape ~= 2 or #out.shape ~= 2 then
    error("train_mlp: the model takes x [batch, features] and predicts "
      .. "[batch, outputs]", 0)
  end
  local step = s:grad { loss = "mse", lr = lr }
  local data = string.format("%s,target", x_arg.name)
  local part = batch(step, mesh, { inputs = data })
  part = megatron(part, mesh, { inputs = data })
  local spec = {}
  for _, a in ipairs(mesh) do
    spec[#spec + 1] = a .. "=" .. mesh[a]
  end
  spec = table.concat(spec, ",")

  -- synthetic data and initial weights, seeded
  math.randomseed(7)
  local rows, feats, outs = x_arg.shape[1], x_arg.shape[2], out.shape[2]
  local x = filled(rows * feats, 1)
  local teacher = filled(feats * outs, 1 / math.sqrt(feats))
  local target = {}
  for i = 0, rows - 1 do
    for j = 0, outs - 1 do
      local acc = 0
      for k = 0, feats - 1 do
        acc = acc + x[i * feats + k + 1] * teacher[k * outs + j + 1]
      end
      target[i * outs + j + 1] = math.tanh(acc)
    end
  end
  -- the step's arguments: the parameters (in the model's order), x,
  -- target; its results: the new parameters, then the loss
  local params = {}
  for i = 2, #args do
    params[#params + 1] = filled(numel(args[i].shape),
      1 / math.sqrt(args[i].shape[1]))
  end
  local function inputs(ps)
    local t = {}
    for i, p in ipairs(ps) do
      t[i] = p
    end
    t[#t + 1] = x
    t[#t + 1] = target
    return t
  end

  local a, b = params, params -- partitioned, one device
  local first, last, worst
  io.write(string.format("%5s  %14s  %14s\n", "step", "loss " .. spec,
    "loss 1 device"))
  for k = 1, steps do
    local ra = part:exec { mesh = spec, inputs = inputs(a) }
    local rb = step:exec { inputs = inputs(b) }
    local la, lb = ra[#ra].values[1], rb[#rb].values[1]
    a, b = {}, {}
    for i = 1, #params do
      a[i], b[i] = ra[i].values, rb[i].values
    end
    local diff = math.abs(la - lb) / math.max(math.abs(lb), 1e-30)
    worst = math.max(worst or 0, diff)
    first, last = first or la, la
    if k == 1 or k % 10 == 0 then
      io.write(string.format("%5d  %14.8f  %14.8f\n", k, la, lb))
    end
  end
  io.write(string.format("loss %.6g -> %.6g; the runs differ by at most "
    .. "%.2g (relative)\n", first, last, worst))
  if not (last < first) then
    error("train_mlp: the loss did not fall", 0)
  end
  if worst > 1e-4 then
    error(string.format("train_mlp: the partitioned run differs from the "
      .. "one-device run by %.3g", worst), 0)
  end
  return part
end
