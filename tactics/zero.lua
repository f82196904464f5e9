-- zero.lua: ZeRO-3 / FSDP parameter sharding.  Every parameter (every
-- argument but the inputs) is stored split over a mesh axis along its
-- first dimension that the axis divides, and gathered whole where it is
-- used: the tiles are not propagated into the computation.  Run it after
-- tactics that propagate (batch, megatron), whose propagation would
-- otherwise turn the gathers into partitioned computation.
--
-- options: axis    the mesh axis (default "data")
--          inputs  comma-separated arguments that are not parameters
--                  (default: the data, C.inputs)
--          whole   comma-separated parameters to keep whole on every
--                  device; any other parameter that no dimension of
--                  splits evenly over the axis is an error, naming it
--                  (uneven splits are not supported)
--          stage   3 (the default): parameters and optimizer state stored
--                  split; 2 (ZeRO-2): on a training step, the parameters
--                  stay whole and only what the optimizer alone reads
--                  (its state: arguments used by elementwise operators
--                  only) is stored split; each device updates its part
--                  of every parameter, from its part of the gradient (a
--                  reduce_scatter), and the new parameters are gathered
--                  whole (an all_gather)
--          reshard "yes" (the default on a training step, stage 3): each
--                  parameter is gathered again where the backward pass
--                  reads it, instead of kept whole between the passes
--                  (FSDP's reshard_after_forward, DeepSpeed ZeRO-3's
--                  release after use): one all_gather per parameter in
--                  each pass, and less memory at the peak; "no": one
--                  gather serves both passes
--          lift    "yes": where the cost model prices it faster, use a
--                  part in place and move the activations instead of
--                  gathering it (below); "no" (the default): gather
--                  every part where it is used
--
-- After another tactic (Megatron), a parameter that a region slices (a
-- device's tensor-parallel chunk) has that chunk split instead, along the
-- dimension it was cut from: each device stores its part of its own
-- chunk, and the gather over 'axis' rebuilds that chunk, not the whole
-- parameter (ZeRO-3 with tensor parallelism, as Megatron-DeepSpeed
-- partitions the tensor-parallel shard).
--
-- A training step's updated parameters (and optimizer state) come back
-- split as their parameters are: each device updates its own part, and
-- the gradient's sum over the axis becomes a reduce_scatter.  'push'
-- carries that split back through the update; it pulls no tile out, so
-- the parameters stay gathered where they are used.
--
-- Gathering a part is one way to use it; the other is in place, moving
-- the activations instead ('lift', src/rewrite/lift.c): the operator
-- that uses the part is taken out of the region over 'axis' (its input
-- gathered), the part's split enters it, and the region slices the
-- result back (a reduce_scatter where the split was contracted).  With
-- lift=yes each parameter, in argument order, is lifted where the cost
-- model prices the program faster (each try prices the whole program,
-- so the choice costs time in proportion to parameters times program:
-- seconds on a dozen layers, minutes on GPT-3's 96, hence opt-in); a Megatron pair is also tried together, since the
-- first of it alone leaves the activations split along the features and
-- only the second contracts that split.  A parameter whose lift fails
-- (no operator to lift, a nest that does not commute) stays gathered.
local C = require "combinators"

-- operators that compute each element from the same element of their
-- operands (an optimizer's update is built from them)
local ELEMENTWISE = {}
for op in ([[add sub mul div max min pow neg abs relu exp log tanh logistic
  sqrt rsqrt compare select convert]]):gmatch("%S+") do
  ELEMENTWISE[op] = true
end

return function(s, mesh, opts)
  opts = opts or {}
  local axis = opts.axis or "data"
  local stage = tonumber(opts.stage or 3)
  if stage ~= 2 and stage ~= 3 then
    error(string.format("zero: stage is 2 or 3, not '%s'", opts.stage), 0)
  end
  local parts = C.axis_size(mesh, axis)
  if opts.lift and opts.lift ~= "yes" and opts.lift ~= "no" then
    error(string.format("zero: lift=%s: expected yes or no", opts.lift), 0)
  end
  local lift_parts = opts.lift == "yes"
  if opts.reshard and opts.reshard ~= "yes" and opts.reshard ~= "no" then
    error(string.format("zero: reshard=%s: expected yes or no", opts.reshard), 0)
  end
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
  -- dimension no region slices where it has one (where it has none, a
  -- bias, the lowering stores it split over both axes and gathers only
  -- the chunk: docs/spmd.md)
  local slices, inside = {}, {}
  local values, position = s:values(), {}
  for i, v in ipairs(values) do
    position[v.name] = i
  end
  for _, v in ipairs(values) do
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
  local script, tiles, unsplit = {}, {}, {}
  local function cannot(name, shape)
    unsplit[#unsplit + 1] = string.format("%%%s (%s)", name,
      #shape > 0 and table.concat(shape, "x") or "a scalar")
  end
  local split_dim = {} -- parameter or chunk -> the dimension split (1-based)
  local function tile(v, d)
    tiles[#tiles + 1] = {at = position[v.name], text = string.format(
      "tile %%%s %d %d %s", v.name, d - 1, v.shape[d] // parts, axis)}
  end
  -- a chunk is split along the dimension it was cut from: the device's
  -- part of its chunk
  for _, v in ipairs(chunks) do
    local d = dimension(v.shape, v.dim + 1)
    if d then
      tile(v, d)
      split_dim[v.name] = d
    else
      cannot(v.name .. " of %" .. v.operands[1], v.shape)
    end
  end
  -- ZeRO-2 keeps the parameters whole: what an operator other than an
  -- elementwise one reads (a matmul's weight) is one; an argument read
  -- by elementwise operators only is optimizer state
  local model_reads = {}
  for _, v in ipairs(values) do
    if v.kind ~= "op" or not ELEMENTWISE[v.op] then
      for _, o in ipairs(v.operands or {}) do
        model_reads[o] = true
      end
    end
  end
  for _, a in ipairs(s:args()) do
    if params[a.name] and not chunked[a.name] then
      local d = dimension(a.shape, nil, sliced[a.name])
      if d and stage == 2 and model_reads[a.name] then
        split_dim[a.name] = d -- kept whole; its update is split
      elseif d then
        script[#script + 1] = string.format("arg-tile %%%s %d %d %s", a.name,
          d - 1, a.shape[d] // parts, axis)
        split_dim[a.name] = d
      else
        cannot(a.name, a.shape)
      end
    end
  end
  -- A training step returns each parameter updated (p - lr * g; an
  -- optimizer's state likewise): that value is split as its parameter
  -- is, and 'push' carries the split back into the update (slices only:
  -- the parameters' splits stay gathered where they are used).  Each
  -- device updates its own part, and the gradient's sum over the axis
  -- becomes a reduce_scatter (ZeRO-2/3, FSDP), where a whole result
  -- would all-reduce the gradient and update the parameter everywhere.
  local byname = {}
  for _, v in ipairs(values) do
    byname[v.name] = v
  end
  local function same_shape(a, b)
    return table.concat(a, "x") == table.concat(b, "x")
  end
  -- the split dimension of the parameter 'name' is computed from
  -- elementwise, shape for shape, or nil
  local seen = {}
  local function update_of(name)
    if split_dim[name] then
      return split_dim[name]
    end
    local v = byname[name]
    if v and v.kind == "slice" then -- a Megatron chunk of a split parameter
      local d = split_dim[v.operands[1]]
      return d ~= v.dim + 1 and d or nil
    end
    if not v or seen[name] or v.kind ~= "op" or not ELEMENTWISE[v.op] then
      return nil
    end
    seen[name] = true
    for _, o in ipairs(v.operands) do
      local u = byname[o]
      local d = u and same_shape(u.shape, v.shape) and update_of(o)
      if d then
        return d
      end
    end
  end
  local updated, nupdated = {}, 0
  for _, returned in ipairs(values) do
    local v = returned.result and returned
    -- after Megatron, a chunk's update is the body of a tile over the
    -- model axis
    while v and v.kind == "tile" and v.yield do
      v = byname[v.yield]
    end
    local d = v and not updated[v.name] and update_of(v.name)
    if d then
      updated[v.name] = true
      nupdated = nupdated + 1
      tile(v, d)
    end
  end
  -- last first: a tile inserted after a value leaves the numbers of the
  -- values printed before it as they were
  table.sort(tiles, function(a, b) return a.at > b.at end)
  for i, t in ipairs(tiles) do
    table.insert(script, i, t.text)
  end
  if nupdated > 0 then
    script[#script + 1] = "push"
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
  s = s:exec(table.concat(script, "; "))
  -- On a training step (results that update arguments, and last the
  -- loss: a scalar that updates none, as 'partir grad' returns them),
  -- ZeRO-3 gathers each parameter again for the backward pass: the tiles
  -- that gather a part of an argument over 'axis' are rematerialized
  -- (docs/grad.md).  A program that only donates a buffer (an inference
  -- step's cache) has no backward pass to regather for.
  local results, updates = s:results(), false
  for _, r in ipairs(results) do
    updates = updates or r.updates ~= nil
  end
  local last = results[#results]
  local training = updates and #results > 1 and last.updates == nil and
      #last.shape == 0
  if stage == 3 and training and opts.reshard ~= "no" and not lift_parts then
    local is_arg, part_of = {}, {}
    for _, a in ipairs(s:args()) do
      is_arg[a.name] = true
    end
    local gathered, all = {}, s:values()
    for _, v in ipairs(all) do
      if v.kind == "slice" and is_arg[v.operands[1]] then
        part_of[v.name] = true
      end
    end
    -- (a region is listed before its body)
    for _, v in ipairs(all) do
      if v.kind == "tile" and v.axis == axis and #v.around == 0 and
          part_of[v.yield] and not v.result then
        gathered[#gathered + 1] = "%" .. v.name
      end
    end
    if #gathered > 0 then
      s = s:exec("remat " .. table.concat(gathered, " "))
    end
  end
  -- each part gathered, or in place ('lift --cheaper' keeps the lift
  -- only where the cost model prices it faster; docs/spmd.md, "ZeRO: the
  -- weight or the activations")
  if not lift_parts then
    return s
  end
  local order = {}
  for _, a in ipairs(s:args()) do
    if params[a.name] then
      order[#order + 1] = a.name
    end
  end
  local function lift(names)
    local ok, t = pcall(s.exec, s, string.format("lift --cheaper %%%s %s",
      table.concat(names, " %"), axis))
    if ok and t ~= s then
      s = t
      return true
    end
    return false
  end
  local i = 1
  while i <= #order do
    if lift { order[i] } then
      i = i + 1
    elseif order[i + 1] and lift { order[i], order[i + 1] } then
      i = i + 2
    else
      i = i + 1
    end
  end
  return s
end
