-- megatron.lua: Megatron-style model parallelism.
--
-- Walks the program in order and classifies each weight (an argument
-- contracted with an activation by matmul or dot_general, directly or
-- converted or transposed first: the right operand, or the left one when
-- the right is no argument, as JAX's einsums put q, k and v projections):
--   column-parallel when its input activation is replicated: split its
--     first output (free) dimension; the activation it produces is split;
--   row-parallel when its input activation is split: split its first
--     contracting dimension; the contraction becomes a sum over the axis
--     (one all-reduce) and its result is replicated again.
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
-- fewer rows than parts (BERT's two token types) stays whole.  A table
-- used again as the output layer (tied embeddings: h @ wte.T) gives
-- logits split by vocabulary, as a column-parallel layer's.
--
-- options: axis    the mesh axis (default "model")
--          inputs  comma-separated arguments that are data, never weights
--                  (default: the first argument; a training step
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
  -- a weight converted or transposed first (a mixed-precision model's
  -- bf16 copy of its f32 parameter, JAX's x @ w.T, a language model's
  -- output layer on its tied embedding table) is still the weight: the
  -- split is the argument's, along the argument's dimension that the
  -- value's dimension is
  local through = {} -- value name -> {arg, dims}: dims[i + 1] is the
  --                    argument's dimension that the value's i is
  local function weight(name)
    return args[name] or (through[name] and through[name].arg)
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
  local split = {} -- value name -> true when it carries a split activation
  local origin = {} -- value name -> the column-parallel weight it follows
  local column = {} -- the column-parallel weights
  local closed = {} -- column-parallel weight -> a row-parallel one follows
  -- a tile or sum (a program partitioned already) carries what its body
  -- yields; regions are listed before their bodies, so it is looked up
  -- when used
  local yields = {}
  local function is_split(name)
    if yields[name] then
      return is_split(yields[name])
    end
    return split[name] or false
  end
  local function origin_of(name)
    if yields[name] then
      return origin_of(yields[name])
    end
    return origin[name]
  end
  local tables = {} -- the embedding tables split by rows
  local plan, order = {}, {}
  local values = s:values() -- listed once: each listing walks the program
  for _, v in ipairs(values) do
    local ops = v.operands or {}
    local any = false
    for _, o in ipairs(ops) do
      any = any or is_split(o)
      origin[v.name] = origin[v.name] or origin_of(o)
    end
    if v.yield then
      yields[v.name] = v.yield
    end
    if v.kind == "op" and (v.op == "convert" or v.op == "transpose") and
        weight(ops[1]) then
      local dims = {}
      for i = 0, #v.shape - 1 do
        local from = v.op == "transpose" and v.attrs.permutation[i + 1] or i
        dims[i + 1] = arg_dim(ops[1], from)
      end
      through[v.name] = { arg = weight(ops[1]), dims = dims }
    end
    local side = is_contraction(v) and weight_side(v, weight) or nil
    local other = side and ops[3 - side]
    local vocab = lookup_dim(v)
    local table_arg = vocab and weight(ops[1])
    local rows = table_arg and table_arg.shape[arg_dim(ops[1], vocab) + 1]
    if table_arg and not plan[table_arg.name] and rows < parts then
      split[v.name] = false -- a table of fewer rows than parts stays whole
    elseif table_arg and not plan[table_arg.name] then
      plan[table_arg.name] = arg_dim(ops[1], vocab) -- vocabulary-parallel:
      order[#order + 1] = table_arg.name -- summed, replicated after
      tables[table_arg.name] = true
      split[v.name] = false
    elseif side and not plan[weight(ops[side]).name] then
      local w = weight(ops[side])
      local row = is_split(other)
      local dim = weight_dim(v, #w.shape, row, side)
      if dim then
        dim = arg_dim(ops[side], dim)
        plan[w.name] = dim
        order[#order + 1] = w.name
        split[v.name] = not row
        if row and origin_of(other) then
          closed[origin_of(other)] = true
        end
        origin[v.name] = not row and w.name or nil
        column[w.name] = not row or nil
      end
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
    end
  end
  if #order == 0 then
    error("megatron: no weight (an argument contracted as a right operand, or an embedding table) found", 0)
  end
  -- one script: the engine splits all the weights in one pass
  local script = {}
  for _, name in ipairs(order) do
    local dim = plan[name]
    local size = args[name].shape[dim + 1]
    local w = C.width(size, parts, "%" .. name .. "'s dimension " .. dim)
    script[#script + 1] = string.format("arg-tile %%%s %d %d %s", name, dim, w, axis)
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
  local t = exec(s, table.concat(script, "; "))
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
