-- megatron-batch.lua: Megatron over 'model', then data parallelism over
-- 'batch' (tests/bench/bench-gpt3.c, strategy "megatron+batch").
local batch, megatron = require "batch", require "megatron"

return function(s, mesh, _)
  s = megatron(s, mesh, {})
  return batch(s, mesh, {})
end
