-- batch-megatron.lua: data parallelism over 'batch', then Megatron over
-- 'model' (tests/bench/bench-gpt3.c, strategy "batch+megatron").
local batch, megatron = require "batch", require "megatron"

return function(s, mesh, _)
  s = batch(s, mesh, {})
  return megatron(s, mesh, {})
end
