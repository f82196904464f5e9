-- combinators.lua: tactics are functions (state, mesh, options) -> state;
-- these build bigger ones from smaller ones.
--
--   seq(t1, t2, ...)   t1, then t2 on its result, ...
--   try(t)             t, or the input unchanged if t fails
--   first(t1, t2, ...) the first that succeeds (fails if none does)
--   rep(t, cap)        t again and again until it fails or changes
--                      nothing, at most 'cap' times (default 100)
--
-- and helpers shared by the tactics in this directory.
local M = {}

function M.seq(...)
  local ts = { ... }
  return function(s, mesh, opts)
    for _, t in ipairs(ts) do
      s = t(s, mesh, opts)
    end
    return s
  end
end

function M.try(t)
  return function(s, mesh, opts)
    local ok, r = pcall(t, s, mesh, opts)
    if ok then
      return r
    end
    return s
  end
end

function M.first(...)
  local ts = { ... }
  return function(s, mesh, opts)
    local why = {}
    for _, t in ipairs(ts) do
      local ok, r = pcall(t, s, mesh, opts)
      if ok then
        return r
      end
      why[#why + 1] = tostring(r)
    end
    error("first: no tactic applied:\n  " .. table.concat(why, "\n  "), 2)
  end
end

function M.rep(t, cap)
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

-- The width that splits 'size' over 'parts' devices, or an error.
function M.width(size, parts, what)
  if size % parts ~= 0 then
    error(string.format("%s has size %d, which %d devices cannot split evenly",
      what, size, parts), 0)
  end
  return size // parts
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

return M
