-- tap.lua — TAP output for the Lua test scripts in this directory.
--
-- A test script is a tactic (it returns a function(state, mesh, options))
-- that tests/lua.sh runs with 'partir tactic ... --set tap=FILE'; since
-- the CLI prints the resulting program on stdout, the TAP lines go to
-- FILE, which tests/lua.sh renumbers into its own output.
--
--   local tap = require "tap"
--   return function(s, mesh, opts)
--     local t = tap.new(opts)
--     t:is(#s:args(), 3, "three arguments")
--     t:done()
--     return s
--   end
local M = {}
M.__index = M

function M.new(opts)
  assert(opts and opts.tap, "run with --set tap=FILE")
  local f = assert(io.open(opts.tap, "a"))
  f:setvbuf("line") -- a crash loses no line already written
  return setmetatable({ f = f, n = 0, opts = opts }, M)
end

local function show(v)
  if type(v) == "string" then
    return string.format("%q", v)
  end
  return tostring(v)
end

-- Writes one '# ' line per line of 'text'.
function M:diag(text)
  for line in (tostring(text) .. "\n"):gmatch("(.-)\n") do
    line = line:gsub("[%c]", function(c) return string.format("\\%03d", c:byte()) end)
    self.f:write("#   ", line, "\n")
  end
end

function M:ok(cond, desc, why)
  self.n = self.n + 1
  desc = desc:gsub("\n", " ")
  self.f:write(cond and "ok " or "not ok ", self.n, " - ", desc, "\n")
  if not cond and why then
    self:diag(why)
  end
  return cond
end

function M:is(got, want, desc)
  return self:ok(got == want, desc, "got:  " .. show(got) .. "\nwant: " .. show(want))
end

-- 'text' contains 'needle' (a plain string, not a pattern).
function M:has(text, needle, desc)
  local found = type(text) == "string" and text:find(needle, 1, true) ~= nil
  return self:ok(found, desc, "text: " .. show(text) .. "\nwant: " .. show(needle))
end

-- fn(...) raises an error whose message contains 'needle'; returns the
-- message.
function M:fails(needle, desc, fn, ...)
  local ok, err = pcall(fn, ...)
  if ok then
    self:ok(false, desc, "no error was raised")
    return nil
  end
  if type(err) ~= "string" then
    self:ok(false, desc, "the error is a " .. type(err) .. ", not a message")
    return nil
  end
  self:has(err, needle, desc)
  return err
end

-- fn(...) succeeds; returns its results (nil on failure).
function M:lives(desc, fn, ...)
  local r = table.pack(pcall(fn, ...))
  self:ok(r[1], desc, r[2])
  if r[1] then
    return table.unpack(r, 2, r.n)
  end
end

-- Two lists are equal element by element ('==').
function M:same_list(got, want, desc)
  local why
  if type(got) ~= "table" then
    why = "got a " .. type(got)
  elseif #got ~= #want then
    why = string.format("got %d items, want %d", #got, #want)
  else
    for i = 1, #want do
      if got[i] ~= want[i] then
        why = string.format("item %d: got %s, want %s", i, show(got[i]), show(want[i]))
        break
      end
    end
  end
  return self:ok(why == nil, desc, why)
end

-- Two s:run() results agree: same types and shapes, and every value
-- within atol + rtol * |want|.
function M:close(got, want, rtol, atol, desc)
  local why
  if #got ~= #want then
    why = string.format("%d results, want %d", #got, #want)
  end
  for r = 1, #want do
    if why then
      break
    end
    local g, w = got[r], want[r]
    if g.type ~= w.type then
      why = string.format("result %d is %s, want %s", r, g.type, w.type)
    elseif #g.values ~= #w.values then
      why = string.format("result %d has %d values, want %d", r, #g.values, #w.values)
    else
      for i = 1, #w.values do
        local a, b = g.values[i], w.values[i]
        if not (math.abs(a - b) <= atol + rtol * math.abs(b)) then
          why = string.format("result %d, value %d: %.9g, want %.9g", r, i, a, b)
          break
        end
      end
    end
  end
  return self:ok(why == nil, desc, why)
end

-- Marks the end: tests/lua.sh checks that a script got this far.
function M:done()
  self.f:write("# done: ", self.n, " tests\n")
  self.f:close()
end

-- A path under the source tree (--set top=DIR).
function M:src(path)
  return self.opts.top .. "/" .. path
end

return M
