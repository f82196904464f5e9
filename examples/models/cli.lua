-- cli.lua — the command line of the model generators in this folder.
--
--   package.path = (arg[0]:match("^(.*)/") or ".") .. "/?.lua;" .. package.path
--   local cli = require "cli"
--   local o, fail = cli.options("mlp.lua", USAGE, arg, { layers = 2 })
--
-- Every option is '--key N' with N a positive integer, '--key WORD'
-- where its default is a string (passed on as written), or a flag
-- '--some-key' (its default is false; written, it is true, as
-- opts.some_key); 'opts' names the options and their defaults.  --help
-- prints USAGE; anything else wrong prints the reason and USAGE to stderr
-- and exits 1.
--
-- A generator that offers --train adds cli.TRAIN_OPTIONS to its options
-- and prints its program with cli.print(o, text): the program itself, or
-- with --train the training step 'partir grad' builds from it (the
-- parameters are every argument but the first; docs/grad.md).  partir is
-- $PARTIR, else repl/partir of the tree this script is in, else the
-- 'partir' on the PATH.

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
    if type(opts[key]) == "string" then
      opts[key] = value
      i = i + 2
      goto next
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

-- The options of --train, with their defaults (those of 'partir grad',
-- and the mean squared error against a target of the output's shape).
cli.TRAIN_OPTIONS = { train = false, loss = "mse", optimizer = "sgd", lr = "0.01" }
cli.TRAIN_USAGE = [[
  --train       print the training step of the program instead: the
                step 'partir grad' builds (parameters, optimizer state,
                input, target) -> (new parameters and state, loss)
  --loss L      with --train: sum, mse or xent (default mse)
  --optimizer O with --train: sgd, momentum or adam (default sgd)
  --lr R        with --train: the learning rate (default 0.01)]]

-- 'partir' next to this script's tree (examples/models/ -> repl/partir),
-- when it was built there.
local function partir_command()
  local env = os.getenv("PARTIR")
  if env and env ~= "" then
    return env
  end
  local dir = arg and arg[0] and arg[0]:match("^(.*)/") or "."
  local built = dir .. "/../../repl/partir"
  local f = io.open(built, "r")
  if f then
    f:close()
    return built
  end
  return "partir"
end

local function quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- Prints TEXT, the program, or with o.train its training step: TEXT in a
-- temporary file given to 'partir grad', whose output (or diagnostics,
-- and exit status) are the script's own.  ('partir' reads only regular
-- files, so the program cannot go to it through a pipe.)
function cli.print(o, text)
  if not o.train then
    io.write(text)
    return
  end
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
  local ok, _, code = os.execute(string.format(
    "%s grad %s --loss %s --optimizer %s --lr %s", quote(partir_command()),
    quote(path), quote(o.loss), quote(o.optimizer), quote(o.lr)))
  os.remove(path)
  if not ok then
    -- partir's diagnostics name the temporary file: say what it was
    io.stderr:write((arg and arg[0] or "?"):match("[^/]*$"),
      ": 'partir grad' of the generated program (", path, ") failed\n")
    os.exit(code or 1)
  end
end

return cli
