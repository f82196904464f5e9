-- zero.lua: ZeRO-3 / FSDP parameter sharding.  Every parameter (every
-- argument but the inputs) is stored split over a mesh axis along its
-- first dimension that the axis divides, and gathered whole where it is
-- used: the tiles are not propagated into the computation.  Run it after
-- tactics that propagate (batch, megatron), whose propagation would
-- otherwise turn the gathers into partitioned computation.
--
-- options: axis    the mesh axis (default "data")
--          inputs  comma-separated arguments that are not parameters
--                  (default: the first argument)
--          whole   comma-separated parameters to keep whole on every
--                  device; any other parameter that no dimension of
--                  splits evenly over the axis is an error, naming it
--                  (uneven splits are not supported)
--
-- It runs no pass, so it has no report to fail on (docs/lua.md).
local C = require "combinators"

return function(s, mesh, opts)
  opts = opts or {}
  local axis = opts.axis or "data"
  local parts = C.axis_size(mesh, axis)
  local inputs = {}
  local listed = C.split(opts.inputs)
  if #listed == 0 then
    listed = { s:args()[1].name }
  end
  for _, name in ipairs(listed) do
    inputs[C.arg(s, name).name] = true
  end
  local whole = {}
  for _, name in ipairs(C.split(opts.whole)) do
    whole[C.arg(s, name).name] = true
  end
  local script, unsplit = {}, {}
  for _, a in ipairs(s:args()) do
    if not inputs[a.name] and not whole[a.name] then
      local split = false
      for d, size in ipairs(a.shape) do
        if size % parts == 0 and size >= parts then
          script[#script + 1] =
            string.format("arg-tile %%%s %d %d %s", a.name, d - 1, size // parts, axis)
          split = true
          break
        end
      end
      if not split then
        unsplit[#unsplit + 1] = string.format("%%%s (%s)", a.name,
          #a.shape > 0 and table.concat(a.shape, "x") or "a scalar")
      end
    end
  end
  if #unsplit > 0 then
    error(string.format("zero: %d devices on '%s' split no dimension of %s evenly: "
      .. "list them in --set whole=... to keep them whole", parts, axis,
      table.concat(unsplit, ", ")), 0)
  end
  if #script == 0 then
    error(string.format("zero: no parameter has a dimension that %d devices split", parts), 0)
  end
  -- one script: the engine splits all the parameters in one pass
  return (s:exec(table.concat(script, "; ")))
end
