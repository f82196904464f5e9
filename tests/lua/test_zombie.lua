-- A state reached again after it was finalized must raise a Lua error,
-- not crash.  Lua 5.4 runs finalizers in the reverse order of marking, so
-- a table's finalizer can still see a state collected in the same cycle.
--
-- (__gc clears the state's box; a method on the revived state must see
-- that and raise, where it once dereferenced NULL.)
local tap = require "tap"

return function(s, mesh, opts)
  local t = tap.new(opts)
  do
    local holder = setmetatable({}, { __gc = function(h) ZOMBIE = h.state end })
    holder.state = partir.parse("func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n  return %a\n}\n")
  end
  collectgarbage()
  collectgarbage()
  t:is(type(ZOMBIE), "userdata", "a finalizer resurrected a collected state")
  local ok, err = pcall(function() return ZOMBIE:print() end)
  t:ok(not ok and type(err) == "string", "printing it raises an error", err)
  ok = pcall(function() return ZOMBIE == s end)
  t:ok(true, "comparing it does not crash")
  ok = pcall(function() return ZOMBIE:arg_tile(0, 0, 1) end)
  t:ok(not ok, "a verb on it raises an error")
  ZOMBIE = nil
  collectgarbage()
  t:ok(s:propagate() == s, "the module still works")
  t:done()
  return s
end
