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
-- After another tactic (Megatron), a parameter that a region slices (a
-- device's tensor-parallel chunk) has that chunk split instead, along the
-- dimension it was cut from: each device stores its part of its own
-- chunk, and the gather over 'axis' rebuilds that chunk, not the whole
-- parameter (ZeRO-3 with tensor parallelism, as Megatron-DeepSpeed
-- partitions the tensor-parallel shard).
--
-- It runs no pass, so it has no report to fail on (docs/lua.md).
local C = require "combinators"

return function(s, mesh, opts)
  opts = opts or {}
  local axis = opts.axis or "data"
  local parts = C.axis_size(mesh, axis)
  local inputs = {}
  for _, a in ipairs(C.inputs(s, opts)) do
    inputs[a.name] = true
  end
  local whole = C.arg_set(s, opts.whole)
  -- the parameters, and the values a region slices out of them (a
  -- Megatron chunk), in print order
  local params = {}
  for _, a in ipairs(s:args()) do
    if not inputs[a.name] and not whole[a.name] then
      params[a.name] = a
    end
  end
  -- a chunk inside a region over 'axis' (after data parallelism on it)
  -- cannot be split over it again: its parameter is split whole, along a
  -- dimension no region slices where it has one
  local slices, inside = {}, {}
  for _, v in ipairs(s:values()) do
    if v.kind == "slice" and params[v.operands[1]] then
      slices[#slices + 1] = v
      for _, a in ipairs(v.around) do
        inside[v.operands[1]] = inside[v.operands[1]] or a == axis
      end
    end
  end
  local chunks, chunked, sliced = {}, {}, {}
  for _, v in ipairs(slices) do
    local p = v.operands[1]
    if inside[p] then
      sliced[p] = sliced[p] or {}
      sliced[p][v.dim + 1] = true
    else
      chunks[#chunks + 1] = v
      chunked[p] = true
    end
  end
  -- the first dimension of 'shape' that 'parts' split evenly: 'prefer'
  -- first (1-based), then one not in 'avoid', then any; or nil
  local function dimension(shape, prefer, avoid)
    local function fits(d)
      return shape[d] % parts == 0 and shape[d] >= parts
    end
    if prefer and fits(prefer) then
      return prefer
    end
    for pass = 1, 2 do
      for d = 1, #shape do
        if fits(d) and (pass == 2 or not (avoid and avoid[d])) then
          return d
        end
      end
    end
  end
  local script, unsplit = {}, {}
  local function cannot(name, shape)
    unsplit[#unsplit + 1] = string.format("%%%s (%s)", name,
      #shape > 0 and table.concat(shape, "x") or "a scalar")
  end
  -- a chunk is split along the dimension it was cut from: the device's
  -- part of its chunk.  Last first: a tile inserted after a value leaves
  -- the numbers of the values printed before it as they were.
  for i = #chunks, 1, -1 do
    local v = chunks[i]
    local d = dimension(v.shape, v.dim + 1)
    if d then
      script[#script + 1] = string.format("tile %%%s %d %d %s", v.name, d - 1,
        v.shape[d] // parts, axis)
    else
      cannot(v.name .. " of %" .. v.operands[1], v.shape)
    end
  end
  for _, a in ipairs(s:args()) do
    if params[a.name] and not chunked[a.name] then
      local d = dimension(a.shape, nil, sliced[a.name])
      if d then
        script[#script + 1] = string.format("arg-tile %%%s %d %d %s", a.name,
          d - 1, a.shape[d] // parts, axis)
      else
        cannot(a.name, a.shape)
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
