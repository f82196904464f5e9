-- batch-megatron-zero.lua: data parallelism over 'batch', Megatron over
-- 'model', then ZeRO-3 parameter sharding over 'batch' (zero's own
-- default axis is "data") (tests/bench/bench-gpt3.c, strategy
-- "batch+megatron+zero"; tests/train.sh).  '--set inputs=x,y' names the
-- data (default: the data, s:data_args), for each of the three.
local batch, megatron, zero = require "batch", require "megatron", require "zero"

return function(s, mesh, opts)
  local inputs = opts and opts.inputs
  s = batch(s, mesh, { inputs = inputs })
  s = megatron(s, mesh, { inputs = inputs })
  return zero(s, mesh, { axis = "batch", inputs = inputs,
    lift = opts and opts.lift })
end
