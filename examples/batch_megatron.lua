-- Data parallelism, then Megatron, on one mesh (README): the tactics
-- compose as functions; 'tolerate' is not given, so a report fails it.
local C = require "combinators"
return C.seq(require "batch", require "megatron")
