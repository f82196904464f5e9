-- megatron.lua: Megatron-style model parallelism.
--
-- Walks the program in order and classifies each weight (an argument
-- contracted with an activation by matmul or dot_general, directly or
-- converted or transposed first, or one layer of a stacked weight
-- (lax.scan over layers): the right operand, or the left one when the
-- right is no argument, as JAX's einsums put q, k and v projections):
--   column-parallel when its input activation is replicated: split its
--     first output (free) dimension; the activation it produces is split;
--   row-parallel when its input activation is split: split its first
--     contracting dimension; the contraction becomes a sum over the axis
--     (one all-reduce) and its result is replicated again.
-- A column-parallel weight whose split meets a reduction over the split
-- features before a row-parallel layer (a ViT's patch embedding, then a
-- layer norm) is the first projection of a residual stream: it is left
-- whole and the plan made again.
-- An MLP block (w1 by columns, w2 by rows) and an attention block (the
-- q, k, v projections by heads, the output projection by heads) each end
-- in exactly one sum.  Elementwise operands such as biases are split by
-- propagation.
--
-- An embedding table (an argument a gather looks rows up in: one index
-- per row, table[ids]) is vocabulary-parallel: its rows are split, each
-- device looks up the ids in its own rows, zero elsewhere, and the
-- lookup is a sum over the axis (one all-reduce, gather-sum in
-- docs/spmd.md); the embeddings it produces are replicated.  A table of
-- fewer rows than parts (BERT's two token types) stays whole, and so
-- does one looked up at indices computed from no argument (GPT-2's
-- position table, at arange(seq): Megatron-LM keeps it whole).  A table
-- used again as the output layer (tied embeddings: h @ wte.T) gives
-- logits split by vocabulary, as a column-parallel layer's.
--
-- A weight split into parts by slices of its contraction (q, k and v
-- from one fused projection: x @ w_qkv, then jnp.split or chunk) is
-- first taken into the contraction (sink-slice: x @ w_qkv[:, 0:d] for q,
-- and so on), and each slice of the weight is then split by columns as
-- a weight is: each device computes its own heads of q, k and v.  The
-- fused weight itself stays whole, each device slicing its columns of
-- it: a split of the argument along its columns would give one device
-- all of q and half of k.  So it stays whole where a training step's
-- backward uses it whole too (x @ w.T's weight transposed, contracted
-- with the fused cotangent for the input's gradient).
--
-- options: axis    the mesh axis (default "model")
--          inputs  comma-separated arguments that are data, never weights
--                  (default: the data, C.inputs; a training step
--                  contracts its input in the backward pass)
--
-- What propagate could not resolve (its report) fails the tactic with
-- the report: a weight whose split does not reach its block is not
-- Megatron, so it is not tolerated.  The one exception is a last
-- column-parallel layer that no row-parallel one follows (an odd number
-- of layers, a classifier whose logits feed a loss's max): Megatron-LM
-- gathers such a layer's output (ColumnParallelLinear's gather_output),
-- and so does the tactic, where an operator cannot carry its split.
local C = require "combinators"

-- operators that compute each element from the same element of their
-- operands (an optimizer's update is built from them)
local ELEMENTWISE = {}
for op in ([[add sub mul div max min pow neg abs relu exp log tanh logistic
  sqrt rsqrt compare select convert]]):gmatch("%S+") do
  ELEMENTWISE[op] = true
end

-- reductions: a layer norm's mean and variance over the features
local REDUCE = { reduce_sum = true, reduce_max = true, reduce_min = true }

local function is_contraction(v)
  return v.kind == "op" and (v.op == "matmul" or v.op == "dot_general")
end

local function contains(list, x)
  for _, y in ipairs(list or {}) do
    if y == x then
      return true
    end
  end
  return false
end

-- The weight's dimension to split: its first free dimension (column) or
-- its first contracting dimension (row).  'side' is 2 for a right
-- operand, 1 for a left one.
local function weight_dim(v, rank, row, side)
  if v.op == "matmul" then -- x[i,k] w[k,j], or w[i,k] x[k,j]
    if side == 2 then
      return row and 0 or 1
    end
    return row and 1 or 0
  end
  local a = v.attrs
  local contract = side == 2 and a.rhs_contract or a.lhs_contract
  local batch = side == 2 and a.rhs_batch or a.lhs_batch
  if row then
    return contract[1]
  end
  for d = 0, rank - 1 do
    if not contains(contract, d) and not contains(batch, d) then
      return d
    end
  end
  return nil
end

-- Whether dimension 'd' of contraction 'v''s operand 'side' (2 right,
-- 1 left) is one of the result's: neither contracted nor batched.
local function free_dim(v, d, side)
  if v.op == "matmul" then -- x[i,k] w[k,j], or w[i,k] x[k,j]
    return d == (side == 2 and 1 or 0)
  end
  local a = v.attrs
  local contract = side == 2 and a.rhs_contract or a.lhs_contract
  local batch = side == 2 and a.rhs_batch or a.lhs_batch
  return not contains(contract, d) and not contains(batch, d)
end

-- The vocabulary dimension of lookup 'v' (a gather of one row per index:
-- one start_index_map entry, a slice of size 1 along it, no batching
-- dims), or nil.
local function lookup_dim(v)
  if v.kind ~= "op" or v.op ~= "gather" then
    return nil
  end
  local a = v.attrs
  local map = a.start_index_map or {}
  if #map ~= 1 or #(a.operand_batching_dims or {}) > 0 or
      a.slice_sizes[map[1] + 1] ~= 1 then
    return nil
  end
  return map[1]
end

-- Which operand of contraction 'v' is a weight: 2 (right), 1 (left, when
-- the right is no argument), or nil.  'weight' gives the argument an
-- operand is (or nil).
local function weight_side(v, weight)
  local ops = v.operands
  if weight(ops[2]) then
    return 2
  elseif weight(ops[1]) then
    return 1
  end
  return nil
end

-- The operand's dimension each dimension of 'v' is (-1: a dimension
-- of size 1 it adds), where 'v' views its operand of shape 'from' as a
-- weight: converted, transposed, a dynamic_slice of one layer of a
-- stacked weight (lax.scan over layers, w[l]: every dimension whole but
-- the layer's, of size 1), a slice of one window position of a
-- convolution's kernel (the importer's products over the window: every
-- dimension whole but the window's, of size 1), or a reshape that drops
-- or adds dimensions of size 1 (the layer's squeezed away); nil when it
-- is none of these.
local function view_dims(v, from)
  local dims = {}
  if v.op == "convert" or v.op == "transpose" then
    for i = 0, #v.shape - 1 do
      dims[i + 1] = v.op == "transpose" and v.attrs.permutation[i + 1] or i
    end
    return dims
  elseif (v.op == "dynamic_slice" or v.op == "slice") and from and
      #from == #v.shape then
    for i = 1, #v.shape do
      if v.shape[i] ~= from[i] and v.shape[i] ~= 1 then
        return nil
      end
      dims[i] = i - 1
    end
    return dims
  elseif v.op == "reshape" and from then
    local j = 1 -- the operand's next dimension
    for i = 1, #v.shape do
      while j <= #from and from[j] == 1 and v.shape[i] ~= 1 do
        j = j + 1 -- a dimension of size 1 dropped
      end
      if j <= #from and from[j] == v.shape[i] then
        dims[i] = j - 1
        j = j + 1
      elseif v.shape[i] == 1 then
        dims[i] = -1
      else
        return nil
      end
    end
    for k = j, #from do
      if from[k] ~= 1 then
        return nil
      end
    end
    return dims
  end
  return nil
end

-- The result dimensions of contraction 'v' that operand 'side' (2
-- right, 1 left) gives it: its free dimensions, as a set of result
-- dimensions (from 0).  'rank' gives a value's rank by name.
local function result_dims_of(v, side, rank)
  local out = {}
  if v.op == "matmul" then -- x[i,k] w[k,j] -> [i,j]
    out[side == 2 and 1 or 0] = true
    return out
  end
  local a = v.attrs
  local nb = #(a.lhs_batch or {})
  local lhs_free = rank(v.operands[1]) - nb - #(a.lhs_contract or {})
  local rhs_free = rank(v.operands[2]) - nb - #(a.rhs_contract or {})
  local first = side == 2 and nb + lhs_free or nb
  for d = first, first + (side == 2 and rhs_free or lhs_free) - 1 do
    out[d] = true
  end
  return out
end

-- The values of 's': the list, by name, and how many uses each has.
local function scan(s, listed)
  local values, byname, uses = listed or s:values(), {}, {}
  for _, v in ipairs(values) do
    byname[v.name] = v
    for _, o in ipairs(v.operands or {}) do
      uses[o] = (uses[o] or 0) + 1
    end
  end
  return values, byname, uses
end

-- Whether static slice 'v' of contraction 'p' (with a weight: 'weight'
-- says which names are) narrows some dimension, and only ones the
-- weight gives.
local function weight_slice(v, p, weight, rank)
  local side = v.kind == "op" and v.op == "slice" and p and
      is_contraction(p) and weight_side(p, weight)
  if not side then
    return false
  end
  local mine = result_dims_of(p, side, rank)
  local a = v.attrs
  local ok, narrows = true, false
  for d = 0, #p.shape - 1 do
    local whole = a.start[d + 1] == 0 and a.limit[d + 1] == p.shape[d + 1]
        and (a.strides == nil or a.strides[d + 1] == 1)
    narrows = narrows or not whole
    ok = ok and (whole or mine[d] == true)
  end
  return ok and narrows
end

-- operators a slice is taken through on its way to a weight's
-- contraction: a bias added (PyTorch's nn.Linear), a reshape back from
-- the flattened batch, a conversion
local CHAIN = { reshape = true, broadcast_in_dim = true, transpose = true }
for op in pairs(ELEMENTWISE) do
  CHAIN[op] = true
end
-- operators of an argument (a weight transposed, a bias broadcast) a
-- slice is taken through onto the argument itself
local OF_ARG = { broadcast_in_dim = true, transpose = true, convert = true }

-- Takes the slices that split a weight's contraction into parts (q, k
-- and v from one fused projection, a fused gate and up projection) into
-- the contraction (sink-slice): each part becomes a contraction with a
-- slice of the weight, which Megatron then splits as a weight.  The
-- slices are taken down one operator a round, through what lies
-- between (a bias added, a reshape), where every use of that operator is
-- such a slice (nothing computed twice), and on through a transpose or
-- conversion onto the weight argument.  In a program split already
-- (batch first, a training step) the contraction may be a tile of its
-- own whose parts the slices read: its body is first taken into each
-- (fuse).  Each 'apply' names its values in the program as it was (a
-- rewrite renumbers the unnamed values after it, JAX's %21 ...).
-- Returns the state and its values (the ones given when there is
-- nothing to sink: a listing walks the whole program).
local function sink_weight_slices(s, args, listed)
  local values, byname, uses = scan(s, listed)
  local function rank(name)
    return args[name] and #args[name].shape or #byname[name].shape
  end
  local function weight(n) -- an argument, or one transposed or converted
    local v = byname[n]
    return args[n] or (v and v.kind == "op" and OF_ARG[v.op] and
      v.op ~= "broadcast_in_dim" and args[v.operands[1]])
  end
  local function leads(name, depth) -- to a weight's contraction
    local v = byname[name]
    if not v or v.kind ~= "op" then
      return false
    elseif is_contraction(v) then
      return weight_side(v, weight) ~= nil
    end
    for _, o in ipairs(CHAIN[v.op] and depth > 0 and v.operands or {}) do
      if leads(o, depth - 1) then
        return true
      end
    end
    return false
  end
  -- a part of a contraction's tile, read by weight slices alone
  local parts, per_tile = {}, {}
  for _, v in ipairs(values) do
    local y = v.kind == "op" and v.op == "slice" and byname[v.operands[1]]
    local t = y and y.kind == "slice" and byname[y.operands[1]]
    if t and t.kind == "tile" and t.dim == y.dim and
        weight_slice(v, byname[t.yield], weight, rank) then
      parts[y.name] = (parts[y.name] or 0) + 1
      if parts[y.name] == uses[y.name] then
        per_tile[t.name] = per_tile[t.name] or {}
        table.insert(per_tile[t.name], "%" .. y.name)
      end
    end
  end
  local fuse = {}
  for _, t in ipairs(values) do -- in print order: the same script each run
    local list = per_tile[t.name]
    if list and #list == uses[t.name] then
      for _, y in ipairs(list) do
        fuse[#fuse + 1] = y
      end
    end
  end
  if #fuse > 0 then
    s = s:exec("apply fuse at " .. table.concat(fuse, ","))
    values, byname, uses = scan(s)
  end
  for _ = 1, 64 do -- a round an operator: a chain is a few long
    local applies = {} -- op -> names where its sink-slice rule applies
    local function applies_at(op, name)
      if not applies[op] then
        applies[op] = {}
        for _, n in ipairs(s:matches("sink-slice-" .. op)) do
          applies[op][n] = true
        end
      end
      return applies[op][name]
    end
    local slices = {} -- operator value -> the slices to take into it
    for _, v in ipairs(values) do
      local p = v.kind == "op" and v.op == "slice" and byname[v.operands[1]]
      local go = p and p.kind == "op" and
          ((is_contraction(p) and weight_slice(v, p, weight, rank)) or
            (CHAIN[p.op] and leads(p.name, 8)) or
            (OF_ARG[p.op] and args[p.operands[1]] ~= nil))
      if go and applies_at(p.op, v.name) then
        slices[p.name] = slices[p.name] or {}
        table.insert(slices[p.name], "%" .. v.name)
      end
    end
    local at, ops = {}, {} -- the values, by operator
    for _, v in ipairs(values) do
      local list = slices[v.name]
      -- every use a slice; or a view of an argument (a training step's
      -- backward uses the weight transposed whole too: the slices'
      -- views are views of the weight's slices, nothing computed twice)
      local view = OF_ARG[v.op] and args[v.operands[1]] ~= nil
      if list and (#list == uses[v.name] or view) then
        if not at[v.op] then
          at[v.op] = {}
          ops[#ops + 1] = v.op
        end
        for _, name in ipairs(list) do
          table.insert(at[v.op], name)
        end
      end
    end
    if #ops == 0 then
      break
    end
    -- one operator a round: the next one's values are named anew
    s = s:exec(string.format("apply sink-slice-%s at %s", ops[1],
      table.concat(at[ops[1]], ",")))
    values, byname, uses = scan(s)
  end
  return s, values
end

-- The rest of the tactic: the weights of 's' (its values 'values', the
-- arguments that may be weights 'args') classified and split over
-- 'axis' of 'parts' devices.  'views' says which views of an argument
-- are weights besides a conversion or transpose: 'slices', a slice that
-- narrows the dimension to split is a weight of its own (split as a
-- value, the argument whole); 'layers', one layer of a stacked weight.
local function split_weights(s, values, args, axis, parts, views)
  -- a weight converted or transposed first (a mixed-precision model's
  -- bf16 copy of its f32 parameter, JAX's x @ w.T, a language model's
  -- output layer on its tied embedding table) is still the weight: the
  -- split is the argument's, along the argument's dimension that the
  -- value's dimension is
  local through = {} -- value name -> {arg, dims}: dims[i + 1] is the
  --                    argument's dimension that the value's i is
  local sliced = {} -- value name -> a weight of its own: a slice of an
  --                    argument (fused q, k, v), split as a value
  local function weight(name)
    return args[name] or sliced[name] or (through[name] and through[name].arg)
  end
  local function arg_dim(name, d)
    return through[name] and through[name].dims[d + 1] or d
  end
  local function operand_dim(name, d)
    if not through[name] then
      return d
    end
    for i, x in ipairs(through[name].dims) do
      if x == d then
        return i - 1
      end
    end
    return nil
  end
  local shape_of = {} -- value name -> its shape
  for name, a in pairs(args) do
    shape_of[name] = a.shape
  end
  local last = {} -- value name -> its split is along its last dimension
  local stream = {} -- column-parallel weight -> a reduction met its split
  local split = {} -- value name -> true when it carries a split activation
  local origin = {} -- value name -> the column-parallel weight it follows
  local column = {} -- the column-parallel weights
  local closed = {} -- column-parallel weight -> a row-parallel one follows
  -- a tile or sum (a program partitioned already) carries what its body
  -- yields; regions are listed before their bodies, so it is looked up
  -- when used
  local yields = {}
  local function body(name) -- the value a region's name stands for
    while yields[name] do
      name = yields[name]
    end
    return name
  end
  local function is_split(name)
    return split[body(name)] or false
  end
  local function origin_of(name)
    return origin[body(name)]
  end
  local fed = {} -- value name -> computed from an argument
  local function fed_of(name)
    return fed[body(name)] or false
  end
  local tables = {} -- the embedding tables split by rows
  local plan, order = {}, {}
  -- arguments whose slices are planned as weights (q, k and v of a fused
  -- projection): the argument stays whole where it is used whole (a
  -- training step's backward contracts the whole transposed weight)
  local slices_planned, nslices = {}, 0
  for _, v in ipairs(values) do
    local ops = v.operands or {}
    local any = false
    fed[v.name] = v.kind == "arg"
    for _, o in ipairs(ops) do
      any = any or is_split(o)
      origin[v.name] = origin[v.name] or origin_of(o)
      fed[v.name] = fed[v.name] or fed_of(o)
    end
    if v.yield then
      yields[v.name] = v.yield
    end
    shape_of[v.name] = v.shape
    local view = v.kind == "op" and weight(ops[1]) and
        (views.layers or v.op == "convert" or v.op == "transpose") and
        view_dims(v, shape_of[ops[1]])
    if views.slices and v.kind == "op" and v.op == "slice" and args[ops[1]] then
      local narrowed = {}
      for d = 1, #v.shape do
        narrowed[d - 1] = v.shape[d] ~= args[ops[1]].shape[d]
      end
      sliced[v.name] = { name = v.name, shape = v.shape, value = true,
        arg = args[ops[1]], narrowed = narrowed }
    elseif view then
      local dims = {}
      for i = 0, #v.shape - 1 do
        dims[i + 1] = view[i + 1] >= 0 and arg_dim(ops[1], view[i + 1]) or -1
      end
      through[v.name] = { arg = weight(ops[1]), dims = dims }
    end
    local side = is_contraction(v) and weight_side(v, weight) or nil
    local other = side and ops[3 - side]
    local vocab = lookup_dim(v)
    local table_arg = vocab and weight(ops[1])
    local rows = table_arg and table_arg.shape[arg_dim(ops[1], vocab) + 1]
    if table_arg and not plan[table_arg.name] and
        (rows < parts or not fed_of(ops[2])) then
      -- a table of fewer rows than parts stays whole, and so does one
      -- looked up at indices no input gives (positions: an iota)
      split[v.name] = false
    elseif table_arg and not plan[table_arg.name] then
      plan[table_arg.name] = arg_dim(ops[1], vocab) -- vocabulary-parallel:
      order[#order + 1] = table_arg.name -- summed, replicated after
      tables[table_arg.name] = true
      split[v.name] = false
    elseif side and not plan[weight(ops[side]).name] and
        not slices_planned[weight(ops[side]).name] and
        not (weight(ops[side]).value and plan[weight(ops[side]).arg.name]) then
      local w = weight(ops[side])
      local row = is_split(other)
      local dim = weight_dim(v, #w.shape, row, side)
      -- a depthwise product (a convolution's feature groups, a batch
      -- dimension of the product, each group contracting one feature)
      -- has no contracted dimension to split: the weight is split along
      -- the batch dimension instead, and the activation stays split
      local depthwise = false
      local view = shape_of[ops[side]]
      if row and dim and view and view[dim + 1] < parts and
          v.op == "dot_general" then
        local batch = side == 2 and v.attrs.rhs_batch or v.attrs.lhs_batch
        for _, b in ipairs(batch or {}) do
          if not depthwise and view[b + 1] >= parts then
            dim, depthwise = b, true
          end
        end
      end
      dim = dim and arg_dim(ops[side], dim)
      if dim and dim >= 0 and w.value and not w.narrowed[dim] then
        w = w.arg -- a slice that keeps the split dimension whole: the
      end --         argument is split (a kernel at a window position)
      if dim and dim >= 0 and depthwise then
        plan[w.name] = dim
        order[#order + 1] = w.name
        split[v.name] = true
        origin[v.name] = origin_of(other)
      elseif dim and dim >= 0 then
        plan[w.name] = dim
        order[#order + 1] = w.name
        if w.value then
          slices_planned[w.arg.name] = true
          nslices = nslices + 1
        end
        split[v.name] = not row
        if row and origin_of(other) then
          closed[origin_of(other)] = true
        end
        origin[v.name] = not row and w.name or nil
        column[w.name] = not row or nil
        last[v.name] = not row and side == 2 or nil -- the result's last
      end --                                           dims are the weight's
    elseif side then
      split[v.name] = not is_split(other) -- a weight used again: same role
      -- used where its split dimension is one of the result's (a tied
      -- output layer on the vocabulary-parallel table), its result is
      -- split as a column-parallel layer's: gathered where no operator
      -- can carry it, unless a row-parallel layer follows
      local w = weight(ops[side])
      local d = operand_dim(ops[side], plan[w.name])
      if tables[w.name] and split[v.name] and d and free_dim(v, d, side) then
        origin[v.name] = w.name
        column[w.name] = true
      end
    else
      split[v.name] = any
      for _, o in ipairs(ops) do
        local o_rank = shape_of[o] and #shape_of[o]
        if last[o] and o_rank == #v.shape and (ELEMENTWISE[v.op] or
              (v.op == "concatenate" and v.attrs.dim ~= o_rank - 1) or
              (v.op == "transpose" and v.attrs.permutation[o_rank] == o_rank - 1)) then
          last[v.name] = true -- the split still along the last dimension
        elseif last[o] and REDUCE[v.op] and contains(v.attrs.dims, o_rank - 1) and
            origin_of(o) then
          stream[origin_of(o)] = true
        end
      end
    end
  end
  -- A column-parallel weight whose split a reduction over the split
  -- dimension meets before a row-parallel layer closes it is the first
  -- projection of a residual stream (a ViT's patch embedding, whose
  -- output a layer norm normalizes): split, every block after it is
  -- planned the other way round, and each of q, k and v ends in a sum.
  -- Such weights are left whole and the plan made again.
  local whole = {}
  for w in pairs(stream) do
    if closed[w] then
      whole[#whole + 1] = w
    end
  end
  if #whole > 0 then
    return nil, whole
  end
  if #order == 0 then
    -- weights split over the axis already (a JAX export's shardings,
    -- applied when it loads) are none to split: the program is given back
    for _, r in ipairs(s:regions()) do
      if r.axis == axis then
        return s
      end
    end
    error("megatron: no weight (an argument contracted as a right operand, or an embedding table) found", 0)
  end
  -- one script: the engine splits all the weights in one pass
  -- the weights that are values first, the last first: a tile renumbers
  -- the unnamed values after it (JAX's %21 ...), never those before
  local at = {}
  for i, v in ipairs(values) do
    at[v.name] = i
  end
  local script, tiles = {}, {}
  for _, name in ipairs(order) do
    local dim = plan[name]
    local wt = args[name] or sliced[name]
    local size = wt.shape[dim + 1]
    local w = C.width(size, parts, "%" .. name .. "'s dimension " .. dim)
    local cmd = string.format("%s %%%s %d %d %s",
      wt.value and "tile" or "arg-tile", name, dim, w, axis)
    if wt.value then
      tiles[#tiles + 1] = { at = at[name], cmd = cmd }
    else
      script[#script + 1] = cmd
    end
  end
  table.sort(tiles, function(x, y) return x.at > y.at end)
  for i, x in ipairs(tiles) do
    table.insert(script, i, x.cmd)
  end
  script[#script + 1] = "propagate"
  -- What may stay unresolved: the operators that a column-parallel layer
  -- no row-parallel one follows feeds (by kind, how many), whose split
  -- is gathered there; any other report fails the tactic.
  local gathered = {}
  for _, v in ipairs(values) do
    local o = origin_of(v.name)
    if v.kind == "op" and o and column[o] and not closed[o] then
      gathered[v.op] = (gathered[v.op] or 0) + 1
    end
  end
  -- a training step's cotangent of a weight slice's product (q's, split
  -- by heads) is padded back to the fused projection's width, whose
  -- gradient is the whole weight's: gathered there, a pad a slice
  if nslices > 0 then
    gathered.pad = (gathered.pad or 0) + nslices
  end
  local function exec(state, text)
    local out, report = state:exec(text, { tolerate = next(gathered) ~= nil })
    local left = {}
    for k, n in pairs(gathered) do
      left[k] = n
    end
    for _, line in ipairs(report or {}) do
      local op = line:match("of '([%w_]+)' along dimension %d+ %(the operator cannot carry it%)")
      if not op or (left[op] or 0) == 0 then
        error("megatron: its passes did not resolve: " .. line, 0)
      end
      left[op] = left[op] - 1
    end
    return out
  end
  local ok, t = pcall(exec, s, table.concat(script, "; "))
  if not ok then
    -- a last column-parallel layer whose split its consumers cannot
    -- take even gathered (a mixture of experts' router, whose logits a
    -- sort or top_k compares pairwise): left whole, the plan made again
    local last = {}
    for _, w in ipairs(order) do
      if column[w] and not closed[w] and not tables[w] then
        last[#last + 1] = w
      end
    end
    if #last > 0 then
      return nil, last
    end
    error(t, 0)
  end
  -- A parameter the partitioned program reads only in parts over the
  -- axis (every use a slice of it along one dimension, in a region over
  -- the axis: a bias of a column-parallel block), but for the update
  -- that a training step returns, is stored in those parts, as
  -- Megatron-LM stores it: each part is then updated where it is,
  -- instead of its gradient gathered.
  local uses, parts_of = {}, {}
  local t_values = t:values()
  for _, v in ipairs(t_values) do
    for _, o in ipairs(v.operands or {}) do
      if args[o] and not plan[o] then
        uses[o] = (uses[o] or 0) + 1
        local inside = false
        for _, a in ipairs(v.around or {}) do
          inside = inside or a == axis
        end
        if v.result and v.kind == "op" then
          uses[o] = uses[o] - 1 -- the update of a training step
        elseif v.kind == "slice" and inside and v.operands[1] == o then
          local p = parts_of[o]
          if not p then
            parts_of[o] = { dim = v.dim, n = 1 }
          elseif p.dim == v.dim then
            p.n = p.n + 1
          else
            p.n = -math.huge -- sliced along two dimensions
          end
        end
      end
    end
  end
  local more, stored = {}, {}
  for _, a in ipairs(t:args()) do
    local p = parts_of[a.name]
    if p and p.n == uses[a.name] and a.shape[p.dim + 1] % parts == 0 then
      more[#more + 1] = string.format("arg-tile %%%s %d %d %s", a.name, p.dim,
        a.shape[p.dim + 1] // parts, axis)
      stored[a.name] = true
    end
  end
  -- A training step's optimizer state follows its parameter, as
  -- Megatron-LM keeps a shard's optimizer state with the shard: an
  -- argument of the weight's shape that a result updates, and that the
  -- weight's update reads through elementwise operators (momentum,
  -- Adam's moments), is split as the weight is.
  local update_of, is_arg = {}, {}
  for _, r in ipairs(t:results()) do
    if r.updates then
      update_of[r.updates] = r.name
    end
  end
  for _, a in ipairs(t:args()) do
    is_arg[a.name] = a
  end
  local byname = {}
  for _, v in ipairs(t_values) do
    byname[v.name] = v
  end
  local function reads(name, found, seen)
    if seen[name] then
      return
    end
    seen[name] = true
    local v = byname[name]
    if not v or v.kind == "arg" then
      found[#found + 1] = is_arg[name]
    elseif v.kind == "tile" or v.kind == "sum" then
      reads(v.yield, found, seen)
    elseif v.kind == "slice" or (v.kind == "op" and ELEMENTWISE[v.op]) then
      for _, o in ipairs(v.operands) do
        reads(o, found, seen)
      end
    end
  end
  for _, w in ipairs(order) do
    local found = {}
    if update_of[w] then
      reads(update_of[w], found, {})
    end
    for _, a in ipairs(found) do
      if a.name ~= w and args[a.name] and not plan[a.name] and
          not stored[a.name] and update_of[a.name] and
          table.concat(a.shape, "x") == table.concat(args[w].shape, "x") then
        more[#more + 1] = string.format("arg-tile %%%s %d %d %s", a.name,
          plan[w], a.shape[plan[w] + 1] // parts, axis)
        stored[a.name] = true
      end
    end
  end
  if #more == 0 then
    return t
  end
  more[#more + 1] = "propagate"
  return exec(t, table.concat(more, "; "))
end

return function(s, mesh, opts)
  opts = opts or {}
  local axis = opts.axis or "model"
  local parts = C.axis_size(mesh, axis)
  local inputs = {}
  for _, a in ipairs(C.inputs(s, opts)) do
    inputs[a.name] = true
  end
  local args = {} -- the arguments that may be weights
  for _, a in ipairs(s:args()) do
    if not inputs[a.name] then
      args[a.name] = a
    end
  end
  local listed = s:values() -- listed once (each listing walks the
  --                            program), again where slices were sunk
  local sunk, sunk_values = sink_weight_slices(s, args, listed)
  -- A weight's slices are weights of their own: a fused projection's
  -- q, k and v, taken into their contraction above.  Where that plan
  -- does not resolve (gates that a recurrent cell combines across two
  -- fused weights, a convolution's kernel by window positions), the
  -- plan with each weight whole, as before, is tried before failing.
  -- The same for a layer of a stacked weight and its squeezed reshape:
  -- where a plan with them does not resolve, the one without them.
  local function plan(state, vals, views)
    local weights = args
    for _ = 1, 8 do -- each round leaves one stream's first weight whole
      local out, whole = split_weights(state, vals, weights, axis, parts,
        views)
      if out then
        return out
      end
      local fewer = {}
      for name, a in pairs(weights) do
        fewer[name] = a
      end
      for _, name in ipairs(whole) do
        fewer[name] = nil
      end
      weights = fewer
    end
    error("megatron: no plan without a residual stream split", 0)
  end
  local ok, out = pcall(plan, sunk, sunk_values, { slices = true, layers = true })
  if ok then
    return out
  end
  for _, less in ipairs({ { layers = true }, {} }) do
    local ok_less, fewer = pcall(plan, s, listed, less)
    if ok_less then
      return fewer
    end
  end
  error(out, 0)
end
