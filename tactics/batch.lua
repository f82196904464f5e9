-- batch.lua: data parallelism.  Splits the batch dimension of the
-- program's inputs over a mesh axis and propagates, so that every
-- activation computed from them is split the same way and parameters
-- are replicated.
--
-- options: axis   the mesh axis (default "batch")
--          inputs comma-separated argument names (default: the data,
--                 C.inputs)
--          dim    the batch dimension (default 0)
--
-- What propagate could not resolve (its report) fails the tactic with
-- the report: it does not tolerate a partly propagated program.  What
-- the input's own propagation reports already (after a tactic that
-- tolerated it) is the input's: not counted (C.propagate_after).  An
-- input the program splits along its batch dimension over the axis
-- already (a JAX export's shardings, applied when it loads) is left as
-- it is: split again, the axis would be bound twice.
local C = require "combinators"

return function(s, mesh, opts)
  local input = s
  opts = opts or {}
  local axis = opts.axis or "batch"
  local parts = C.axis_size(mesh, axis)
  local dim = C.int_option(opts, "dim", 0)
  local split = C.split_over(s, axis, dim)
  for _, a in ipairs(C.inputs(s, opts, dim)) do
    if dim < 0 or dim >= #a.shape then
      error(string.format("argument %%%s has rank %d: no batch dimension %d",
        a.name, #a.shape, dim), 0)
    end
    if not split[a.name] then
      local w = C.width(a.shape[dim + 1], parts, "%" .. a.name .. "'s dimension " .. dim)
      s = s:arg_tile(a.name, dim, w, axis)
    end
  end
  return C.propagate_after(input, s)
end
