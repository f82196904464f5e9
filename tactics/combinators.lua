-- combinators.lua: tactics are functions (state, mesh, options) -> state;
-- these build bigger ones from smaller ones.  Each takes exactly the
-- tactics it is given and refuses anything else, naming the argument;
-- the one exception is the value 'require' returns after a module it
-- loads (is_loader_data), so C.seq(require "batch", require "megatron")
-- works.
--
--   seq(t1, t2, ...)   t1, then t2 on its result, ...
--   try(t)             t, or the input unchanged if t fails
--   first(t1, t2, ...) the first that succeeds (fails if none does)
--   rep(t, cap)        t again and again until it fails or changes
--                      nothing, at most 'cap' times (default 100)
--
-- and helpers shared by the tactics in this directory (propagate_after:
-- a propagation that fails only on what it adds to the input's report).
local M = {}

-- Whether 'data' is what 'require' returned after the module 't': Lua
-- 5.4's require returns the loader data (the file the module came from)
-- as a second value when it loads the module, though not when the
-- module was already loaded.  So C.seq(require "batch", require
-- "megatron") passes the path of megatron.lua after the last tactic the
-- first time it runs and not the second; a tactic module cannot return
-- one value only.  The combinators drop that one trailing value, and
-- only when it is exactly the file (or ":preload:") that 'require' gave
-- for a module whose value is 't': any other extra value stays an error.
local function is_loader_data(t, data)
  if type(data) ~= "string" then
    return false
  end
  for name, value in pairs(package.loaded) do
    if rawequal(value, t) and type(name) == "string" then
      if data == ":preload:" and package.preload[name] ~= nil then
        return true
      end
      if package.searchpath(name, package.path) == data or
          package.searchpath(name, package.cpath) == data then
        return true
      end
    end
  end
  return false
end

-- The 'n' arguments of combinator 'name', 'args' (a table.pack), with
-- require's loader data after the last one dropped; the count.
local function drop_loader_data(args)
  local n = args.n
  if n >= 2 and is_loader_data(args[n - 1], args[n]) then
    args[n], n = nil, n - 1
  end
  return n
end

-- Raises unless argument 'i' of combinator 'name' is a tactic (a
-- function), at 'level' (the caller of the combinator).
local function check_tactic(name, i, t, level)
  if type(t) ~= "function" then
    error(string.format("%s: argument %d is a %s, not a tactic (a function(state, mesh, options))",
      name, i, type(t)), level + 1)
  end
end

-- The tactics given to combinator 'name': every argument must be one.
local function tactics(name, ...)
  local args = table.pack(...)
  local n = drop_loader_data(args)
  for i = 1, n do
    check_tactic(name, i, args[i], 3)
  end
  return args, n
end

function M.seq(...)
  local ts, n = tactics("seq", ...)
  return function(s, mesh, opts)
    for i = 1, n do
      s = ts[i](s, mesh, opts)
    end
    return s
  end
end

function M.try(...)
  local ts, n = tactics("try", ...)
  if n ~= 1 then
    error(string.format("try: takes one tactic, got %d arguments", n), 2)
  end
  local t = ts[1]
  return function(s, mesh, opts)
    local ok, r = pcall(t, s, mesh, opts)
    if ok then
      return r
    end
    return s
  end
end

function M.first(...)
  local ts, n = tactics("first", ...)
  return function(s, mesh, opts)
    local why = {}
    for i = 1, n do
      local ok, r = pcall(ts[i], s, mesh, opts)
      if ok then
        return r
      end
      why[#why + 1] = tostring(r)
    end
    error("first: no tactic applied:\n  " .. table.concat(why, "\n  "), 2)
  end
end

function M.rep(...)
  local args = table.pack(...)
  local n = drop_loader_data(args)
  if n < 1 or n > 2 then
    error(string.format("rep: takes a tactic and a cap, got %d arguments", n), 2)
  end
  local t, cap = args[1], args[2]
  check_tactic("rep", 1, t, 2)
  if cap ~= nil and type(cap) ~= "number" then
    error(string.format("rep: argument 2 (the cap) is a %s, not a number", type(cap)), 2)
  end
  cap = cap or 100
  return function(s, mesh, opts)
    for _ = 1, cap do
      local ok, r = pcall(t, s, mesh, opts)
      if not ok or r == s then
        return s
      end
      s = r
    end
    return s
  end
end

-- The size of mesh axis 'axis', or an error naming the mesh's axes and
-- saying how to add one in the front end running the tactic
-- (partir.mesh_hint: "--mesh %s=N" on the command line, "set mesh %s=N"
-- in the REPL).
function M.axis_size(mesh, axis)
  local n = mesh and mesh[axis]
  if type(n) ~= "number" then
    local names = {}
    for _, a in ipairs(mesh or {}) do
      names[#names + 1] = a .. "=" .. mesh[a]
    end
    local P = package.loaded.partir
    local hint = type(P) == "table" and type(P.mesh_hint) == "string"
      and P.mesh_hint or "--mesh %s=N"
    error(string.format("the mesh has no axis '%s' (mesh: %s; use %s)",
      axis, #names > 0 and table.concat(names, ",") or "empty",
      (hint:gsub("%%s", axis))), 0)
  end
  return n
end

-- The width that splits 'size' over 'parts' devices, or an error.  An
-- uneven size gets ceil(size / parts), the last device's chunk padded,
-- where that width gives as many parts as devices (10 over 4: 3, 3, 3, 1).
function M.width(size, parts, what)
  local w = (size + parts - 1) // parts
  if size < parts or (size + w - 1) // w ~= parts then
    error(string.format("%s has size %d, which %d devices cannot split " ..
      "evenly, nor padded (a width of %d gives %d parts)", what, size, parts,
      w, (size + w - 1) // w), 0)
  end
  return w
end

-- "a,b" -> {"a", "b"}
function M.split(list)
  local out = {}
  for item in string.gmatch(list or "", "[^,%s]+") do
    out[#out + 1] = item
  end
  return out
end

-- The argument named 'name' (or at index 'name' when a number).
function M.arg(s, name)
  for _, a in ipairs(s:args()) do
    if a.name == name or a.index == tonumber(name) then
      return a
    end
  end
  error(string.format("the program has no argument '%s'", name), 0)
end

-- The program's inputs (data, not parameters) as 'opts.inputs' lists
-- them ("x,y"): a list of arguments.  By default, those whose dimension
-- 'dim' (0) the results carry at theirs (s:data_args: an exporter lists
-- the parameters first, and says nothing of which is which), else the
-- first argument.
function M.inputs(s, opts, dim)
  local names = M.split(opts.inputs)
  if #names == 0 then
    local found = s:data_args(dim or 0)
    if #found > 0 then
      return found
    end
    names = { s:args()[1].name }
  end
  local out = {}
  for _, name in ipairs(names) do
    out[#out + 1] = M.arg(s, name)
  end
  return out
end

-- The arguments that 's' splits along dimension 'dim' over 'axis'
-- already (a set of names): those a slice along 'dim' in a region over
-- 'axis' reads, as the shardings of a JAX export give them when it
-- loads.  A program without regions is listed no further.
function M.split_over(s, axis, dim)
  local found = {}
  if #s:regions() == 0 then
    return found
  end
  local args = {}
  for _, a in ipairs(s:args()) do
    args[a.name] = true
  end
  for _, v in ipairs(s:values()) do
    local o = v.operands and v.operands[1]
    if v.kind == "slice" and v.dim == dim and args[o] then
      for _, ax in ipairs(v.around or {}) do
        if ax == axis then
          found[o] = true
        end
      end
    end
  end
  return found
end

-- Option 'key' of 'opts', a whole number ('default' when absent): an
-- error naming the option for anything else ("dim=abc").
function M.int_option(opts, key, default)
  local v = opts[key]
  if v == nil then
    return default
  end
  local n = tonumber(v)
  local i = n and math.tointeger(n)
  if not i then
    error(string.format("%s=%s: expected a whole number", key, tostring(v)), 0)
  end
  return i
end

-- A report line without the value it names ("%h: cannot propagate ..."):
-- what it says, whatever the value is called in one state or another.
local function report_text(line)
  return (line:gsub("^%%[^%s:]+: ", ""))
end

-- 't' (the tilings a tactic made on state 's') propagated, failing with
-- what its report says that propagating 's' itself says no more of: a
-- tactic run after one that tolerated a report (Megatron gathering a
-- last column-parallel layer's output) meets that report again, and
-- neither fails on it nor hides its own.
function M.propagate_after(s, t)
  local _, before = s:propagate { tolerate = true }
  local out, after = t:propagate { tolerate = true }
  local known = {}
  for _, line in ipairs(before or {}) do
    local k = report_text(line)
    known[k] = (known[k] or 0) + 1
  end
  local new = {}
  for _, line in ipairs(after or {}) do
    local k = report_text(line)
    if (known[k] or 0) > 0 then
      known[k] = known[k] - 1
    else
      new[#new + 1] = line
    end
  end
  if #new > 0 then
    error("propagate did not resolve: " .. table.concat(new, "; "), 0)
  end
  return out
end

-- The names of the arguments in 'list' (comma-separated), as a set.
function M.arg_set(s, list)
  local set = {}
  for _, name in ipairs(M.split(list)) do
    set[M.arg(s, name).name] = true
  end
  return set
end

return M
