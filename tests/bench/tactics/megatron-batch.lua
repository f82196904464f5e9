-- megatron-batch.lua: Megatron over 'model', then data parallelism over
-- 'batch' (tests/bench/bench-gpt3.c, strategy "megatron+batch";
-- tests/referee/referee.py).  '--set inputs=x,y' names the data
-- (default: the data, s:data_args), for both.
local batch, megatron = require "batch", require "megatron"

return function(s, mesh, opts)
  local inputs = opts and opts.inputs
  s = megatron(s, mesh, { inputs = inputs })
  return batch(s, mesh, { inputs = inputs })
end
