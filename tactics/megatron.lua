-- megatron.lua: Megatron-style model parallelism.
--
-- Walks the program in order and classifies each weight (an argument
-- used as the right operand of matmul or dot_general):
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
-- options: axis  the mesh axis (default "model")
--
-- What propagate could not resolve (its report) fails the tactic with
-- the report: a weight whose split does not reach its block is not
-- Megatron, so it is not tolerated.
local C = require "combinators"

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
-- its first contracting dimension (row).
local function weight_dim(v, rank, row)
  if v.op == "matmul" then
    return row and 0 or 1
  end
  local a = v.attrs
  if row then
    return a.rhs_contract[1]
  end
  for d = 0, rank - 1 do
    if not contains(a.rhs_contract, d) and not contains(a.rhs_batch, d) then
      return d
    end
  end
  return nil
end

return function(s, mesh, opts)
  opts = opts or {}
  local axis = opts.axis or "model"
  local parts = C.axis_size(mesh, axis)
  local args = {}
  for _, a in ipairs(s:args()) do
    args[a.name] = a
  end
  local split = {} -- value name -> true when it carries a split activation
  local plan, order = {}, {}
  for _, v in ipairs(s:values()) do
    local ops = v.operands or {}
    local any = false
    for _, o in ipairs(ops) do
      any = any or split[o] or false
    end
    if is_contraction(v) and args[ops[2]] and not plan[ops[2]] then
      local w = args[ops[2]]
      local row = split[ops[1]] or false
      local dim = weight_dim(v, #w.shape, row)
      if dim then
        plan[w.name] = dim
        order[#order + 1] = w.name
        split[v.name] = not row
      end
    elseif is_contraction(v) and args[ops[2]] then
      split[v.name] = not split[ops[1]] -- a weight used again: same role
    else
      split[v.name] = any
    end
  end
  if #order == 0 then
    error("megatron: no weight (an argument contracted as a right operand) found", 0)
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
  return (s:exec(table.concat(script, "; ")))
end
