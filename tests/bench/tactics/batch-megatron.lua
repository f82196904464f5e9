-- batch-megatron.lua: data parallelism over 'batch', then Megatron over
-- 'model' (tests/bench/bench-gpt3.c, strategy "batch+megatron";
-- tests/referee/referee.py).  '--set inputs=x,y' names the data
-- (default: the data, s:data_args), for both.
local batch, megatron = require "batch", require "megatron"

return function(s, mesh, opts)
  local inputs = opts and opts.inputs
  s = batch(s, mesh, { inputs = inputs })
  return megatron(s, mesh, { inputs = inputs })
end
