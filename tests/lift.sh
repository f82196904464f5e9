#!/bin/sh
# ZeRO: the weight or the activations (issue 14, the referee's relu_mlp
# case).  'fission' cuts a region at a value, 'lift' takes an operator
# out of a tile over an axis so that a ZeRO part's split enters it, and
# tactics/zero.lua lifts a parameter's use where the cost model prices
# that faster (docs/spmd.md, "ZeRO: the weight or the activations").
#
# The model: examples/models/mlp.lua --layers 4 --batch 16 --width 64,
# x 16x64 and w0..w3 64x64 f32, h = relu(x w0) w1 ..., under batch
# (batch=2), Megatron (model=4: w0, w2 by columns, w1, w3 by rows) and
# ZeRO over batch: each device stores half of its 64x16 (or 16x64)
# Megatron chunk of every weight, 2048 B.  Bytes sent per device as
# 'partir cost' counts them: an all_gather or a reduce_scatter over 2
# sends half the whole buffer, an all_reduce over 4 sends 2 * 3/4 of it,
# an all_to_all over 2 half of it.
#
#   gathered (zero lift=no): each chunk is gathered where the batch half
#     uses it, 4 all_gathers over batch of 2048 B = 8192 B; each Megatron
#     pair sums its 8x64 batch half over model, 2 all_reduces of 2048 B
#     local: 2 * 3072 = 6144 B.  14336 B.
#   lifted (zero lift=yes): w1 and w2 are used in place.  The first
#     layer's 8x16 output a0 is gathered over batch instead (16x16: 512
#     B), multiplied by w1's stored 16x32 (its columns split over batch),
#     and summed over model (16x32, 2048 B local: 3072 B).  a1 16x32
#     (columns split over batch) times w2's stored 32x16 (rows split
#     over batch) is a 16x16 sum over batch, which the last layer's
#     batch half takes by rows: a reduce_scatter of 1024 B, 512 B.  w0
#     and w3 are gathered as before (2 * 2048 B), and the last pair's
#     sum over model is 3072 B.  all_gather 3 4608 B, all_reduce over
#     model 2 6144 B, reduce_scatter 1 512 B: 11264 B (Shardy, given the
#     same layouts, 11776 B: an all_reduce over batch of 1024 B where
#     partir has the reduce_scatter).
#   w1 lifted alone: w1's layer as above, then a1 is split along its
#     columns where w2's gathered chunk needs its rows: an all_to_all of
#     16x32 (1024 B); the gathers of w0, a0, w2, w3: 6656 B.  13824 B.
. "$top_srcdir/tests/tap.sh"
. "$top_srcdir/tests/strategies.sh"
top=$(cd "$top_srcdir" && pwd)
if ! command -v lua5.4 >/dev/null 2>&1; then
  echo "1..0 # SKIP no lua5.4 to generate the model"
  exit 0
fi
lua5.4 "$top/examples/models/mlp.lua" --layers 4 --batch 16 --width 64 \
  >"$tmp/relu.pir"
mesh=batch=2,model=4

cat >"$tmp/gathered.lua" <<'EOF'
local batch, megatron, zero = require "batch", require "megatron", require "zero"
return function(s, mesh)
  s = megatron(batch(s, mesh), mesh)
  return zero(s, mesh, { axis = "batch", lift = "no" })
end
EOF
expect_strategy gathered "$tmp/relu.pir" $mesh "$tmp/gathered.lua" \
  "all_gather batch 4 8192
all_reduce model 2 6144"
expect_strategy lifted "$tmp/relu.pir" $mesh \
  "$top/tests/bench/tactics/batch-megatron-zero.lua" \
  "all_gather batch 3 4608
all_reduce model 2 6144
reduce_scatter batch 1 512" --set lift=yes
expect_compiled lifted "$tmp/lifted.pir" $mesh

# the commands themselves, on the gathered program
lifted_by() { # NAME SCRIPT EXPECTED
  if "$PARTIR" rewrite "$tmp/gathered.pir" --do "$2" -o "$tmp/$1.pir" \
    2>"$tmp/err"; then
    printf '%s\n' "$3" | sort >"$tmp/want"
    collectives "$tmp/$1.pir" $mesh >"$tmp/got"
    if cmp -s "$tmp/want" "$tmp/got"; then
      ok "$2: $(tr '\n' ',' <"$tmp/want" | sed 's/,$//')"
    else
      not_ok "$2: the collectives counted by hand"
      diff "$tmp/want" "$tmp/got" >"$tmp/diff"
      show "$tmp/diff"
    fi
    check "$2: simulated on $mesh, the interpreter's results" \
      quiet "$PARTIR" lower "$tmp/$1.pir" --mesh $mesh --simulate --seed 4
  else
    not_ok "$2 runs"
    show "$tmp/err"
  fi
}
lifted_by pair "lift w1 w2 batch" "all_gather batch 3 4608
all_reduce model 2 6144
reduce_scatter batch 1 512"
lifted_by one "lift w1 batch" "all_gather batch 4 6656
all_reduce model 2 6144
all_to_all batch 1 1024"
# the pair is the program zero.lua chose
# (binder names aside: they come from each program's history)
sed 's/%r[0-9]*/%r/g' "$tmp/pair.pir" >"$tmp/a"
sed 's/%r[0-9]*/%r/g' "$tmp/lifted.pir" >"$tmp/b"
check "lift w1 w2 is what zero.lua chose" cmp -s "$tmp/a" "$tmp/b"

# --cheaper keeps w1 alone gathered (13824 B is cheaper in bytes, but one
# collective more costs more time on cpu2 than 512 B) and lifts the pair
"$PARTIR" rewrite "$tmp/gathered.pir" --do "lift --cheaper w1 batch" \
  -o "$tmp/kept.pir" 2>"$tmp/chose"
check "lift --cheaper w1 alone keeps the program" \
  cmp -s "$tmp/kept.pir" "$tmp/gathered.pir"
check "lift --cheaper says what it kept and why" \
  grep -q "lift w1 out of 'batch': kept (lifted: .*13824 B sent; as it was: .*14336 B sent)" "$tmp/chose"

# A fission is the identity on what the program computes, and on what
# the devices send: the value's parts are a tile over the same axis,
# sliced back by the device's own part.  %9 is the first Megatron sum
# inside the batch tile %h3 (the first layer pair).
"$PARTIR" rewrite "$tmp/gathered.pir" --do "fission %9 0 %h3" \
  -o "$tmp/fission.pir" 2>"$tmp/err" || show "$tmp/err"
check "fission %9 0 %h3: the sum is a tile of its own over batch" \
  grep -q 'partir.tile 0 (%r[0-9]* : !partir.range<16,8> @"batch") {' \
  "$tmp/fission.pir"
collectives "$tmp/gathered.pir" $mesh >"$tmp/a"
collectives "$tmp/fission.pir" $mesh >"$tmp/b"
check "fission: the same collectives as before" cmp -s "$tmp/a" "$tmp/b"
check "fission: simulated on $mesh, the interpreter's results" \
  quiet "$PARTIR" lower "$tmp/fission.pir" --mesh $mesh --simulate --seed 4

# errors
fails() { # DESCRIPTION SCRIPT MESSAGE
  if "$PARTIR" rewrite "$tmp/gathered.pir" --do "$2" >/dev/null \
    2>"$tmp/err"; then
    not_ok "$1: refused"
  elif grep -qF -- "$3" "$tmp/err"; then
    ok "$1: $3"
  else
    not_ok "$1: says '$3'"
    show "$tmp/err"
  fi
}
fails "lift of an input" "lift x batch" \
  "lift: no operator in a tile over 'batch' uses a part of 'x' split over it"
fails "lift over an axis no tile binds" "lift w1 model" \
  "lift: no operator in a tile over 'model' uses a part of 'w1' split over it"
fails "lift of a value outside any batch tile" "lift %1 batch" \
  "lift: %1 is not an operator"
fails "lift usage" "lift w1" "usage: lift [--cheaper] VALUE... AXIS"
fails "lift of an unknown value" "lift %nope batch" "lift: no value '%nope'"
fails "fission of a value outside the region" "fission %1 0 %h3" \
  "fission: the value does not depend on the region's range value"
fails "fission along a dimension of another width" "fission %9 1 %h3" \
  "fission: dimension 1 of the value has size 64, not the region's width 8"
fails "fission at no region" "fission %9 0 %9x" "fission: no value '%9x'"
fails "fission over a value that is no region" "fission %9 0 %1" \
  "fission: the region must be a partir.tile or partir.sum"
fails "fission usage" "fission %9 0" "usage: fission VALUE DIM REGION"

# Every lift computes what the program computed: each parameter, and each
# pair of consecutive parameters, lifted where it can be, on models whose
# tactics put ZeRO parts inside batch tiles, against the interpreter.
cat >"$tmp/every.lua" <<'EOF'
local batch, megatron, zero = require "batch", require "megatron", require "zero"
local function agree(a, b)
  for i, r in ipairs(a) do
    local big = 0
    for _, v in ipairs(r.values) do big = math.max(big, math.abs(v)) end
    for k, v in ipairs(r.values) do
      if math.abs(v - b[i].values[k]) > 1e-5 * big + 1e-6 then return false end
    end
  end
  return true
end
return function(s, mesh, opts)
  s = batch(s, mesh, { inputs = opts.inputs })
  if opts.megatron == "yes" then
    s = megatron(s, mesh, { inputs = opts.inputs })
  end
  s = zero(s, mesh, { axis = "batch", inputs = opts.inputs, lift = "no" })
  local spec = {}
  for _, a in ipairs(mesh) do spec[#spec + 1] = a .. "=" .. mesh[a] end
  spec = table.concat(spec, ",")
  local want, params = s:run(3), {}
  local data = {}
  for name in (opts.inputs or ""):gmatch("[^,]+") do data[name] = true end
  for i, a in ipairs(s:args()) do
    if i > 1 and not data[a.name] then params[#params + 1] = a.name end
  end
  local lifted, wrong = 0, {}
  local function try(names)
    local ok, t = pcall(s.exec, s, "lift %" .. table.concat(names, " %") .. " batch")
    if ok then
      lifted = lifted + 1
      if not agree(want, t:run(3)) or not pcall(t.lower, t, spec) then
        wrong[#wrong + 1] = table.concat(names, "+")
      end
    end
  end
  for i, p in ipairs(params) do
    try { p }
    if params[i + 1] then try { p, params[i + 1] } end
  end
  print(string.format("lifted %d, wrong: %s", lifted, table.concat(wrong, " ")))
  return s
end
EOF
every() { # NAME PROGRAM MESH MEGATRON INPUTS MIN
  "$PARTIR" tactic "$tmp/every.lua" "$2" --mesh "$3" --set "megatron=$4" \
    --set "inputs=$5" 2>"$tmp/err" | sed -n 's/^lifted //p' >"$tmp/every"
  count=$(cut -d, -f1 <"$tmp/every")
  if test -n "$count" && test "$count" -ge "$6" &&
    grep -q 'wrong: $' "$tmp/every"; then
    ok "$1: $count lifts compute what the program computed and lower"
  else
    not_ok "$1: every lift computes what the program computed"
    show "$tmp/every"
    show "$tmp/err"
  fi
}
lua5.4 "$top/examples/models/transformer.lua" --layers 1 >"$tmp/t1.pir"
every "relu_mlp, batch+megatron+zero" "$tmp/relu.pir" $mesh yes x 4
every "relu_mlp, fsdp" "$tmp/relu.pir" batch=2 no x 4
every "mlp, fsdp" "$top/examples/mlp.pir" batch=2 no x 2
every "mlp, batch+megatron+zero" "$top/examples/mlp.pir" $mesh yes x 2
every "transformer, batch+megatron+zero" "$tmp/t1.pir" $mesh yes x 2

# A training step's batch region is a sum (the gradients'), not a tile:
# nothing is lifted out of it, and zero.lua gathers the parts as before
# (tests/train.sh has its collectives).
"$PARTIR" tactic "$tmp/every.lua" "$top/examples/mlp_sgd.pir" \
  --mesh batch=2,model=2 --set megatron=yes --set inputs=x,y \
  -o "$tmp/sgd.pir" >/dev/null 2>&1
gathered="$tmp/sgd.pir"
if "$PARTIR" rewrite "$gathered" --do "lift w1 batch" >/dev/null 2>"$tmp/err"; then
  not_ok "mlp_sgd: lift w1 out of the gradients' batch sum is refused"
else
  check "mlp_sgd: lift w1 out of the gradients' batch sum is refused" \
    grep -q "lift: %[0-9]* is not computed in a tile over 'batch'" "$tmp/err"
fi

done_testing
