-- Making and reading states: partir.parse / partir.load (and their
-- diagnostics), print, tostring, check, args, values, regions, matches,
-- partir.rules, and the mesh and options a tactic is given.
local tap = require "tap"

local MLP = [[
func @mlp(%x: tensor<16x256xf32>, %w: tensor<256x256xf32>, %u: tensor<256x256xf32>) -> tensor<16x256xf32> {
  %0 = matmul(%x, %w)
  %1 = matmul(%0, %u)
  return %1
}
]]

local function read(path)
  local f = assert(io.open(path))
  local text = f:read("a")
  f:close()
  return text
end

local function names(list, field)
  local out = {}
  for i, v in ipairs(list) do
    out[i] = v[field or "name"]
  end
  return out
end

local function find(values, name)
  for _, v in ipairs(values) do
    if v.name == name then
      return v
    end
  end
end

return function(s, mesh, opts)
  local t = tap.new(opts)

  -- the tactic's arguments (lua.sh: --mesh batch=2,model=4 --set pair=a=b)
  t:is(#mesh, 2, "the mesh lists two axes")
  t:same_list({ mesh[1], mesh[2] }, { "batch", "model" }, "...in the order given")
  t:ok(mesh.batch == 2 and mesh.model == 4, "...with their sizes as numbers")
  t:is(opts.pair, "a=b", "--set KEY=VALUE splits at the first '='")
  t:is(type(partir.version), "string", "partir.version is a string")

  -- printing
  t:is(s:print(), MLP, "s:print() is the canonical text of mlp.pir")
  t:is(tostring(s), MLP, "tostring(s) is the same text")
  t:is(s:text(), MLP, "s:text() is the same text")
  t:is(s:print(true), "mlp(x, w, u) =\n  matmul(matmul(x, w), u)\n",
    "s:print(true) is the expression form")
  local tiled = partir.load(t:src("examples/mlp_tiled.pir"))
  t:has(tiled:print(true), "tile 0 (\\r:range<16,8> -> matmul(matmul(slice 0 x[r], w), u))",
    "the expression form of mlp_tiled.pir shows the tile")

  -- parse and load: good input
  local p = partir.parse(MLP)
  t:ok(p == s, "parsing the printed text gives the same state")
  t:is(p:print(), MLP, "...which prints the same")
  local l = partir.load(t:src("examples/mlp.pir"))
  t:ok(l == s, "partir.load of mlp.pir gives the state the tactic was given")
  local spaced = partir.parse(read(t:src("examples/mlp.pir")), "mlp.pir")
  t:ok(spaced == s, "partir.parse of the file's text (comments, line breaks) too")

  -- parse and load: bad input gives the file:line:col diagnostic
  local bad = "func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n  return %b\n}\n"
  local err = t:fails("bad.pir:2:10: error: use of undefined value '%b'",
    "parse: an undefined value is reported at file:line:col", partir.parse, bad, "bad.pir")
  t:has(err, "\n    return %b\n           ^", "...with the source line and a caret under '%b'")
  t:fails("(lua):1:1: error: expected 'func'", "parse: empty text, default name '(lua)'",
    partir.parse, "")
  err = t:fails("(lua):3:1: error: '}' expected",
    "parse: an unclosed body is reported at the end",
    partir.parse, "func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n  return %a\n")
  t:has(err, "(to close '{' at line 1)", "...saying where it opened")
  local path = opts.tmp .. "/read-bad.pir"
  local f = assert(io.open(path, "w"))
  f:write("func @g(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = neg(%c)\n  return %0\n}\n")
  f:close()
  t:fails(path .. ":2:12: error: use of undefined value '%c'",
    "load: a bad file is reported as path:line:col", partir.load, path)
  t:fails(opts.tmp .. "/no-such.pir", "load: a missing file names the path",
    partir.load, opts.tmp .. "/no-such.pir")
  t:fails("string expected, got nil", "parse(nil) is an argument error", partir.parse, nil)
  t:fails("string expected, got no value", "load() is an argument error", partir.load)
  local ok = pcall(partir.parse, "junk")
  t:ok(not ok and s:print() == MLP, "a failed parse leaves existing states alone")

  -- check
  t:is(s:check(), true, "s:check() is true for mlp.pir")
  t:is(tiled:check(), true, "...and for mlp_tiled.pir")
  local tf = partir.load(t:src("examples/transformer_layer.pir"))
  t:is(tf:check(), true, "...and for transformer_layer.pir")
  t:is(s:arg_tile(0, 0, 8):propagate():check(), true, "...and for a rewritten state")

  -- args
  local args = s:args()
  t:same_list(names(args), { "x", "w", "u" }, "args: names in order")
  t:same_list(names(args, "index"), { 0, 1, 2 }, "args: indices from 0")
  t:same_list(names(args, "type"), { "tensor<16x256xf32>", "tensor<256x256xf32>",
    "tensor<256x256xf32>" }, "args: types")
  t:same_list(args[1].shape, { 16, 256 }, "args: shape of x")
  t:same_list(args[3].shape, { 256, 256 }, "args: shape of u")
  local targs = tf:args()
  t:same_list(names(targs), { "x", "ln1_g", "ln1_b", "wq", "wk", "wv", "wo", "ln2_g",
    "ln2_b", "w1", "b1", "w2", "b2" }, "args: the transformer's thirteen names")
  t:same_list(targs[4].shape, { 32, 4, 8 }, "args: wq is 32x4x8")
  t:same_list(targs[2].shape, { 32 }, "args: ln1_g is a vector of 32")

  -- values
  local vs = s:values()
  t:same_list(names(vs), { "x", "w", "u", "0", "1" }, "values: arguments, then %0, %1")
  t:same_list(names(vs, "kind"), { "arg", "arg", "arg", "op", "op" }, "values: kinds")
  t:is(vs[4].op, "matmul", "values: %0 is a matmul")
  t:same_list(vs[4].operands, { "x", "w" }, "values: %0's operands are x, w")
  t:same_list(vs[5].operands, { "0", "u" }, "values: %1's operands are %0, u")
  t:is(next(vs[4].attrs), nil, "values: matmul has no attributes")
  t:same_list(vs[5].shape, { 16, 256 }, "values: %1's shape")
  t:is(vs[5].type, "tensor<16x256xf32>", "values: %1's type")
  t:is(vs[1].op, nil, "values: an argument has no op")

  local tvs = tiled:values()
  t:same_list(names(tvs), { "x", "w", "u", "0", "1", "2", "3" }, "values of mlp_tiled: in print order")
  t:same_list(names(tvs, "kind"), { "arg", "arg", "arg", "tile", "slice", "op", "op" },
    "values of mlp_tiled: kinds")
  t:ok(tvs[4].dim == 0 and tvs[4].range.n == 16 and tvs[4].range.w == 8 and tvs[4].axis == nil,
    "values: the tile is along dim 0, range<16,8>, no axis")
  t:ok(tvs[5].dim == 0 and tvs[5].operands[1] == "x" and #tvs[5].operands == 1,
    "values: the slice is of x along dim 0 (the binder is not an operand)")
  t:same_list(tvs[5].shape, { 8, 256 }, "values: the slice is 8x256")
  t:same_list(tvs[6].operands, { "1", "w" }, "values: the inner matmul uses the slice")
  t:is(tvs[4].yield, "3", "values: the tile's yield is what its body returns, %3")
  t:is(tvs[6].yield, nil, "values: an operator has no yield")

  -- results
  local rs = s:results()
  t:is(#rs, 1, "results: mlp.pir returns one value")
  t:ok(rs[1].name == "1" and rs[1].index == 0 and rs[1].type == "tensor<16x256xf32>",
    "results: %1, index 0, tensor<16x256xf32>")
  t:same_list(rs[1].shape, { 16, 256 }, "results: its shape")
  t:is(tiled:results()[1].name, "0", "results: mlp_tiled.pir returns its tile, %0")
  t:ok(vs[5].result == 0 and vs[4].result == nil,
    "values: %1 is result 0, %0 is no result")

  local tfv = tf:values()
  local statements = 0
  for line in read(t:src("examples/transformer_layer.pir")):gmatch("[^\n]+") do
    if line:match("^%s*%%[%w_]+ = ") then
      statements = statements + 1
    end
  end
  t:is(#tfv, 13 + statements, "values of the transformer: one per argument and statement")
  local q = find(tfv, "q_heads")
  t:ok(q and q.op == "dot_general", "values: user names are kept (q_heads is a dot_general)")
  t:same_list(q and q.operands or {}, { "h1", "wq" }, "values: q_heads' operands")
  t:same_list(q and q.attrs.lhs_contract or {}, { 2 }, "attrs: lhs_contract = [2]")
  t:same_list(q and q.attrs.rhs_contract or {}, { 0 }, "attrs: rhs_contract = [0]")
  t:same_list(q and q.shape or {}, { 2, 8, 4, 8 }, "values: q_heads is 2x8x4x8")
  local sr = find(tfv, "scores_raw")
  t:same_list(sr and sr.attrs.lhs_batch or {}, { 0, 1 }, "attrs: scores_raw's lhs_batch = [0, 1]")
  t:same_list(sr and sr.attrs.rhs_contract or {}, { 3 }, "attrs: scores_raw's rhs_contract = [3]")
  local qt = find(tfv, "qt")
  t:same_list(qt and qt.attrs.permutation or {}, { 0, 2, 1, 3 }, "attrs: transpose permutation")
  local ls = find(tfv, "ln1_sum")
  t:same_list(ls and ls.attrs.dims or {}, { 2 }, "attrs: reduce_sum dims = [2]")
  local inv = find(tfv, "inv_d")
  t:ok(inv and inv.op == "constant" and next(inv.attrs) == nil and #inv.operands == 0,
    "values: a constant has no operands, and its value is left out")

  -- regions
  t:is(#s:regions(), 0, "regions: mlp.pir has none")
  local rs = tiled:regions()
  t:ok(#rs == 1 and rs[1].kind == "tile" and rs[1].name == "0", "regions: mlp_tiled has the tile %0")
  local mt = s:arg_tile("w", 1, 128, "model"):arg_tile("u", 0, 128, "model"):propagate()
  rs = mt:regions()
  t:ok(#rs == 1 and rs[1].kind == "sum" and rs[1].axis == "model"
    and rs[1].range.n == 256 and rs[1].range.w == 128,
    "regions: Megatron's MLP has one sum over model, range<256,128>")
  local bm = mt:arg_tile("x", 0, 8, "batch"):propagate()
  rs = bm:regions()
  t:same_list(names(rs, "kind"), { "sum", "tile" },
    "regions: batch after Megatron: the sum outside, then the tile")
  t:same_list(names(rs, "axis"), { "model", "batch" }, "regions: ...over model and batch")
  local bv = bm:values()
  t:same_list(names(bv), { "x", "w", "u", "0", "1", "2", "3", "4", "5", "6" },
    "values of a nest: in print order")
  t:same_list(find(bv, "5").operands, { "4", "1" },
    "values: an operand from the enclosing region keeps its name there")
  t:same_list(find(bv, "6").operands, { "5", "2" }, "values: ...for both matmuls")
  t:ok(find(bv, "0").kind == "sum" and find(bv, "0").dim == nil, "values: a sum has no dim")

  -- matches
  t:same_list(s:matches("matmul-sum"), { "0", "1" }, "matches: matmul-sum at both matmuls")
  t:same_list(s:matches("fuse"), {}, "matches: fuse nowhere in mlp.pir")
  t:same_list(s:arg_tile(0, 0, 8):matches("tile-slice"), { "0" },
    "matches: tile-slice at the dumb tile of x")
  t:same_list(tiled:matches("matmul-sum"), { "2", "3" }, "matches: inside regions too")
  t:fails("no rule 'frobnicate'", "matches: an unknown rule is an error", s.matches, s, "frobnicate")

  -- rules: every rule in rules/partir.rules, with its file and line
  local line_no = 0
  local listed, found = 0, 0
  for line in read(t:src("rules/partir.rules")):gmatch("([^\n]*)\n") do
    line_no = line_no + 1
    local name = line:match("^rule ([%w%-]+)")
    if name then
      listed = listed + 1
      for _, r in ipairs(partir.rules(name)) do
        if r.name == name and r.origin:find("partir.rules:" .. line_no, 1, true) then
          found = found + 1
        end
      end
    end
  end
  t:ok(listed >= 5 and found == listed,
    string.format("rules: the %d rules of partir.rules, each with its line", listed),
    string.format("found %d of %d", found, listed))
  local fuse = partir.rules("fuse")
  local fr
  for _, r in ipairs(fuse) do
    if r.name == "fuse" then
      fr = r
    end
  end
  t:has(fr and fr.text, "slice d (tile d (\\r:range<n,w> -> e))[s:range<m,v>]",
    "rules: fuse's text is the rule as written")
  local ms = partir.rules("matmul-sum")
  t:ok(#ms >= 1 and ms[1].name == "matmul-sum" and ms[1].origin:find("derived from op matmul", 1, true),
    "rules: matmul-sum is derived from op matmul")
  local all, some = partir.rules(), partir.rules("tile")
  local all_have = #some > 0
  for _, r in ipairs(some) do
    all_have = all_have and r.name:find("tile", 1, true) ~= nil
  end
  t:ok(all_have and #all > #some, "rules(substring): only names containing it, fewer than all")
  t:is(#partir.rules("no-such-rule-anywhere"), 0, "rules: no match gives an empty list")

  t:done()
  return s
end
