-- batch-megatron-zero.lua: data parallelism over 'batch', Megatron over
-- 'model', then ZeRO-3 parameter sharding over 'batch' (zero's own
-- default axis is "data") (tests/bench/bench-gpt3.c, strategy
-- "batch+megatron+zero").
local batch, megatron, zero = require "batch", require "megatron", require "zero"

return function(s, mesh, _)
  s = batch(s, mesh, {})
  s = megatron(s, mesh, {})
  return zero(s, mesh, { axis = "batch" })
end
