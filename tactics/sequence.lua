-- sequence.lua: sequence parallelism.  Splits the inputs' sequence
-- dimension over a mesh axis and propagates.
--
-- Alone, over an axis of its own, it is sequence (context) parallelism:
-- every position-wise computation (projections, layer norms, the MLP)
-- runs on the device's part of the sequence, and attention gathers the
-- keys and values, which every query needs whole.
--
-- After megatron.lua, over Megatron's axis (the default, "model"), it is
-- Megatron-SP: what lies between the tensor-parallel blocks (residual
-- adds, layer norms, elementwise regions) is split along the sequence
-- instead of repeated on every device.  Each block's input is gathered
-- (all_gather) where its column-parallel weights need the whole
-- sequence, and its output's partial sums are reduce-scattered along the
-- sequence (a slice of a sum over the same axis) instead of
-- all-reduced: the same bytes, and the activations between blocks take
-- 1/N of the memory.
--
-- options: axis    the mesh axis (default "model")
--          dim     the sequence dimension of the inputs (default 1)
--          inputs  comma-separated argument names (default: the data,
--                  C.inputs)
--
-- What propagate could not resolve fails the tactic with the report.
local batch = require "batch"

return function(s, mesh, opts)
  opts = opts or {}
  return batch(s, mesh, {
    axis = opts.axis or "model",
    dim = opts.dim or 1,
    inputs = opts.inputs,
  })
end
