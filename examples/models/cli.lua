-- cli.lua — the command line of the model generators in this folder.
--
--   package.path = (arg[0]:match("^(.*)/") or ".") .. "/?.lua;" .. package.path
--   local cli = require "cli"
--   local o, fail = cli.options("mlp.lua", USAGE, arg, { layers = 2 })
--
-- Every option is '--key N' with N a positive integer, or a flag
-- '--some-key' (its default is false; written, it is true, as
-- opts.some_key); 'opts' names the options and their defaults.  --help
-- prints USAGE; anything else wrong prints the reason and USAGE to stderr
-- and exits 1.

local cli = {}

function cli.options(name, usage, argv, opts)
  local function fail(msg)
    io.stderr:write(name, ": ", msg, "\n", usage, "\n")
    os.exit(1)
  end
  local i = 1
  while i <= #argv do
    local key = argv[i]:match("^%-%-([%w_%-]+)$")
    key = key and key:gsub("%-", "_")
    if argv[i] == "--help" or argv[i] == "-h" then
      print(usage)
      os.exit(0)
    end
    if not key or opts[key] == nil then
      fail("unknown option '" .. argv[i] .. "'")
    end
    if opts[key] == false then -- a flag: no value
      opts[key] = true
      i = i + 1
      goto next
    end
    local value = argv[i + 1]
    if value == nil then
      fail("option --" .. key .. " needs a value")
    end
    local n = value:match("^%d+$") and math.tointeger(tonumber(value))
    if not n or n < 1 then
      fail("--" .. key .. " must be a positive integer, got '" .. value .. "'")
    end
    opts[key] = n
    i = i + 2
    ::next::
  end
  return opts, fail
end

return cli
