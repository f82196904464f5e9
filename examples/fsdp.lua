-- fsdp.lua: fully sharded data parallelism, data parallelism over
-- 'batch' and then ZeRO-3 over the same axis (zero's own default axis is
-- "data") (README; tests/train.sh, tests/referee/referee.py).
-- '--set inputs=x,y' names the data (default: the data, s:data_args);
-- '--set stage=2' gives ZeRO-2 (docs/grad.md); '--set reshard=no' keeps
-- a training step's gathered parameters for its backward pass instead of
-- gathering them again; '--set lift=yes' lets zero move activations where
-- that is cheaper (docs/spmd.md).
local batch, zero = require "batch", require "zero"

return function(s, mesh, opts)
  local inputs = opts and opts.inputs
  s = batch(s, mesh, { inputs = inputs })
  return zero(s, mesh, { axis = "batch", inputs = inputs,
    stage = opts and opts.stage, reshard = opts and opts.reshard,
    lift = opts and opts.lift })
end
