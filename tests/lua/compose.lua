-- compose.lua: the shipped tactics named by --set order=a,b,... run one
-- after the other with combinators.seq (tests/tactics.sh composes batch
-- and Megatron with it, in both orders).
local C = require "combinators"

return function(s, mesh, opts)
  local tactics = {}
  for _, name in ipairs(C.split(opts.order)) do
    tactics[#tactics + 1] = require(name)
  end
  if #tactics == 0 then
    error("compose: name the tactics with --set order=a,b", 0)
  end
  return C.seq(table.unpack(tactics))(s, mesh, opts)
end
