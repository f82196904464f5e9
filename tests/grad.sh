#!/bin/sh
# Differentiation (issue 16): the vjp rules (rules/grad.rules) checked
# and refused as rule files are, 'partir grad' against a backward pass
# derived by hand, differentiation after partitioning, the entry points
# (CLI, Lua, REPL), and the collectives of training under each strategy,
# counted by hand below.  Every partitioned step is simulated on its
# devices and compiled on threads against the interpreter.
#
# The model: examples/models/mlp.lua --layers 4 --batch 16 --width 64,
# relu(x . w0) . w1 ... four 64x64 f32 weights (16384 B each), trained
# on the mean squared error against 'target' with SGD (lr 0.05).  Bytes
# sent per device as 'partir cost' counts them: an all_reduce over 2
# devices sends its whole buffer, an all_gather or reduce_scatter half
# of the whole.
#
#   data parallel (x, target split over batch=2): each weight's gradient
#     is a sum over the batch: 4 all_reduces of 16384 B, and the loss's
#     (4 B).  Nothing in the forward pass.
#   Megatron (model=2): w0, w2 split by columns, w1, w3 by rows.  Forward:
#     one all_reduce per block of its [16, 64] output (4096 B), 2.
#     Backward: the gradient of the second block's input (the first
#     block's output) is a sum over the model axis, 4096 B; the first
#     block's input is x, whose gradient is not computed.  3 in all.
#   batch + Megatron (batch=2, model=2): the Megatron all_reduces on half
#     the batch (2048 B, 3) and over batch the 4 gradients of each
#     device's Megatron chunk (64x32: 8192 B) and the loss.
#   ZeRO-3 / FSDP (examples/fsdp.lua, batch=2): each weight stored split,
#     gathered for the forward pass (an all_gather of 16384 B, half
#     sent) and again where the backward pass reads it: w1, w2 and w3
#     (dx of a block's input needs its weight); w0 is read by the forward
#     pass only, since x's gradient is not computed: 4 + 3 all_gathers.
#     Each device keeps its half of each gradient (4 reduce_scatters)
#     and updates its half; the loss's all_reduce.  With reshard=no, one
#     gather serves both passes: 4 all_gathers.
#   ZeRO-2 (--set stage=2) on the momentum step: the weights whole, the
#     momentum stored split; the 4 gradients reduce-scattered, each
#     device updating its half of each weight (4 shards, no bytes: each
#     device's part) and of the momentum; the new weights gathered whole
#     again (4 all_gathers of 16384 B, half sent), as the step's results
#     that update whole arguments ('{updates = %w0}') return whole.
. "$top_srcdir/tests/tap.sh"
. "$top_srcdir/tests/strategies.sh"
top=$(cd "$top_srcdir" && pwd)
tactics=$top/tests/bench/tactics
export LUA_PATH="$top/tactics/?.lua;$tactics/?.lua;;"

# ---------------------------------------------------------- the rules

"$PARTIR" check-rules "$top/rules/grad.rules" >"$tmp/cr" 2>&1
check "check-rules: every vjp agrees with finite differences" \
  grep -q '^41 vjp rules, 0 failed$' "$tmp/cr"
sed 's/vjp exp(x) -> z, dz: x = mul(dz, z)/vjp exp(x) -> z, dz: x = mul(dz, x)/' \
  "$top/rules/grad.rules" >"$tmp/bad.rules"
if "$PARTIR" check-rules "$tmp/bad.rules" >"$tmp/cr" 2>&1; then
  not_ok "check-rules: a wrong vjp (exp's) fails"
else
  check "check-rules: a wrong vjp (exp's) fails on an instance" \
    grep -q '^FAIL  vjp exp .*finite differences give' "$tmp/cr"
fi

# refused at load, with the place: file:line:col and the source line
refuse() {
  printf '%s\n' "$2" >"$tmp/r.rules"
  if "$PARTIR" check-rules "$tmp/r.rules" >"$tmp/out" 2>&1; then
    not_ok "refused: $1"
  else
    check "refused: $1" grep -q "^$tmp/r.rules:1:$3: error: $4" "$tmp/out"
  fi
}
refuse "an unknown operand" 'vjp add(x, y) -> z, dz: x = dz, q = dz' 33 \
  "'q' is not an operand of 'add'"
refuse "an unbound name" 'vjp add(x, y) -> z, dz: x = foo' 29 \
  "'foo' is not an operand, the result or its cotangent"
refuse "a wrong operand count" 'vjp add(x) -> z, dz: x = dz' 8 \
  "'add' takes 2 operands, not 1"
refuse "a builtin of another operator" 'vjp add -> builtin dot' 12 \
  "builtin vjp 'dot' does not apply to 'add'"
refuse "an operand given twice" 'vjp neg(x) -> z, dz: x = dz, x = dz' 30 \
  "the cotangent of 'x' is given twice"
printf 'vjp neg(x) -> z, dz: x = dz\nvjp neg -> zero\n' >"$tmp/r.rules"
"$PARTIR" check-rules "$tmp/r.rules" >"$tmp/out" 2>&1
check "refused: a second vjp for one operator" \
  grep -q "r.rules:2:5: error: operator 'neg' already has a vjp" "$tmp/out"
# a type error, found when the rules load (matmul's dx contracting the
# wrong dimension of y)
mkdir -p "$tmp/rules"
cp "$top/rules/ops.rules" "$tmp/rules/"
sed 's/x = dot_general(dz, y) {lhs_contract = \[1\], rhs_contract = \[1\]}/x = dot_general(dz, y) {lhs_contract = [1], rhs_contract = [0]}/' \
  "$top/rules/grad.rules" >"$tmp/rules/grad.rules"
if "$PARTIR" grad "$top/examples/mlp.pir" --loss sum \
  --rules "$tmp/rules/grad.rules" --rules "$tmp/rules/ops.rules" \
  >"$tmp/out" 2>&1; then
  not_ok "a vjp of the wrong type is refused when the rules load"
else
  line=$(grep -n '^vjp matmul' "$top/rules/grad.rules" | cut -d: -f1)
  check "a vjp of the wrong type is refused when the rules load" \
    grep -q "grad.rules:$line:1: error: vjp 'matmul':.*contracting" "$tmp/out"
fi

# ------------------------------------------------- against a hand-derived step

# examples/mlp_sgd.pir writes the backward pass of relu(x . w1) . w2 by
# hand (tests/train.sh checks it against NumPy): partir grad on the model
# alone gives the same step, bit for bit (the same operations in the
# same order).
cat >"$tmp/mlp2.pir" <<'EOF'
func @mlp(%x: tensor<16x64xf32>, %w1: tensor<64x128xf32>,
          %w2: tensor<128x32xf32>) -> tensor<16x32xf32> {
  %h = matmul(%x, %w1)
  %a = relu(%h)
  %p = matmul(%a, %w2)
  return %p
}
EOF
"$PARTIR" grad "$tmp/mlp2.pir" --loss mse --lr 0.05 -o "$tmp/step2.pir"
check "grad --loss mse: the step's signature, each new weight naming the one it updates" grep -q \
  '^func @mlp_train(%w1: tensor<64x128xf32>, %w2: tensor<128x32xf32>, %x: tensor<16x64xf32>, %target: tensor<16x32xf32>) -> (tensor<64x128xf32> {updates = %w1}, tensor<128x32xf32> {updates = %w2}, tensor<f32>)' \
  "$tmp/step2.pir"
mkdir -p "$tmp/a" "$tmp/b"
"$PARTIR" run "$tmp/step2.pir" --seed 2 --output "$tmp/a" >/dev/null
"$PARTIR" exec "$tmp/step2.pir" --seed 2 --exact --output "$tmp/b" \
  >/dev/null 2>&1
same=yes
for f in w1_new w2_new loss; do
  cmp -s "$tmp/a/$f.npy" "$tmp/b/$f.npy" || same=no
done
check "grad: the step compiled (--exact) gives the interpreter's results" \
  test $same = yes

# the hand-written step on the same inputs: the seeded inputs of a
# program are drawn per argument from the seed and its position, so
# feed both from .npy files made by a run of a program returning them
cat >"$tmp/ins.pir" <<'EOF'
func @ins(%w1: tensor<64x128xf32>, %w2: tensor<128x32xf32>,
          %x: tensor<16x64xf32>, %target: tensor<16x32xf32>)
    -> (tensor<64x128xf32>, tensor<128x32xf32>, tensor<16x64xf32>,
        tensor<16x32xf32>) {
  return %w1, %w2, %x, %target
}
EOF
mkdir -p "$tmp/ins"
"$PARTIR" run "$tmp/ins.pir" --seed 2 --output "$tmp/ins" >/dev/null
# (each result file is named for the argument it returns)
w1=$tmp/ins/w1.npy w2=$tmp/ins/w2.npy x=$tmp/ins/x.npy y=$tmp/ins/target.npy
mkdir -p "$tmp/hand" "$tmp/auto"
"$PARTIR" run "$top/examples/mlp_sgd.pir" --input "x=$x" --input "y=$y" \
  --input "w1=$w1" --input "w2=$w2" --output "$tmp/hand" >/dev/null
"$PARTIR" run "$tmp/step2.pir" --input "x=$x" --input "target=$y" \
  --input "w1=$w1" --input "w2=$w2" --output "$tmp/auto" >/dev/null
same=yes
cmp -s "$tmp/hand/w1n.npy" "$tmp/auto/w1_new.npy" || same=no
cmp -s "$tmp/hand/w2n.npy" "$tmp/auto/w2_new.npy" || same=no
cmp -s "$tmp/hand/loss.npy" "$tmp/auto/loss.npy" || same=no
check "grad: examples/mlp_sgd.pir's hand-written step, bit for bit" \
  test $same = yes

# ------------------------------------------- differentiated after partitioning

# batch + Megatron first, then grad: the derivative of the partitioned
# program (its tiles, slices and sums differentiated by their own rules)
# computes the same step, up to the order of f32 additions
"$PARTIR" tactic "$tactics/batch-megatron.lua" "$tmp/mlp2.pir" \
  --mesh batch=2,model=2 -o "$tmp/part.pir"
"$PARTIR" grad "$tmp/part.pir" --loss mse --lr 0.05 -o "$tmp/pstep.pir"
check "grad of a partitioned program: its gradients are sums over batch" \
  grep -q 'partir.sum (%r[0-9]* : !partir.range<16,8> @"batch")' \
  "$tmp/pstep.pir"
mkdir -p "$tmp/part"
"$PARTIR" run "$tmp/pstep.pir" --input "x=$x" --input "target=$y" \
  --input "w1=$w1" --input "w2=$w2" --output "$tmp/part" >/dev/null
close=yes
for f in w1_new w2_new loss; do
  "$FIXTURE_RUNNER" --npy-close "$tmp/part/$f.npy" "$tmp/auto/$f.npy" 1e-5 \
    1e-6 >"$tmp/close.tap" 2>&1
  grep -q '^ok' "$tmp/close.tap" || close=no
done
check "grad of a partitioned program: the step of the program (1e-5)" \
  test $close = yes
check "grad of a partitioned program: simulated on batch=2,model=2" \
  quiet "$PARTIR" lower "$tmp/pstep.pir" --mesh batch=2,model=2 --simulate \
  --seed 4

# ------------------------------------------------------ entry points

printf 'return function(s, mesh, opts)\n  return s:grad{loss = "mse", lr = 0.05, wrt = {"w1", "w2"}}\nend\n' \
  >"$tmp/g.lua"
"$PARTIR" tactic "$tmp/g.lua" "$tmp/mlp2.pir" -o "$tmp/lua.pir"
check "Lua s:grad{...} gives partir grad's step" cmp -s "$tmp/lua.pir" \
  "$tmp/step2.pir"
printf 'load %s\ngrad --loss mse --lr 0.05\nsave %s\ngrad --loss nope\nundo\nshow\n' \
  "$tmp/mlp2.pir" "$tmp/repl.pir" | "$PARTIR_REPL" >"$tmp/repl.out" 2>&1
check "REPL grad gives partir grad's step" cmp -s "$tmp/repl.pir" \
  "$tmp/step2.pir"
check "REPL grad: a bad loss is an error naming the choices" \
  grep -q "grad: the loss is sum, mse or xent, not 'nope'" "$tmp/repl.out"
check "REPL grad: undo goes back to the model" \
  grep -q '^func @mlp(' "$tmp/repl.out"

bad() { # DESCRIPTION STATUS ARGS...: partir grad fails with STATUS
  d=$1 want=$2
  shift 2
  "$PARTIR" grad "$@" >"$tmp/out" 2>&1
  check "grad refuses $d (exit $want)" test $? = "$want"
}
bad "no --loss" 2 "$tmp/mlp2.pir"
bad "an unknown loss" 2 "$tmp/mlp2.pir" --loss l1
bad "an unknown optimizer" 2 "$tmp/mlp2.pir" --loss sum --optimizer lamb
bad "--wrt and --params-from-arg together" 2 "$tmp/mlp2.pir" --loss sum \
  --wrt w1 --params-from-arg 1
bad "a parameter the model lacks" 1 "$tmp/mlp2.pir" --loss sum --wrt w3
check "... naming it, with the nearest name" \
  grep -q "the model has no argument 'w3' (did you mean 'w1'?)" "$tmp/out"
bad "a learning rate of 0" 1 "$tmp/mlp2.pir" --loss sum --lr 0
bad "no parameter" 1 "$tmp/mlp2.pir" --loss sum --params-from-arg 3

# refused DESCRIPTION PATTERN COMMAND...: COMMAND fails, saying PATTERN
refused() {
  desc=$1 pattern=$2
  shift 2
  if "$@" >"$tmp/out" 2>&1; then
    not_ok "refused: $desc"
  else
    check "refused: $desc" grep -q "$pattern" "$tmp/out"
  fi
}

# a result's '{updates = %arg}' names an argument, once
sed 's/{updates = %w2}/{updates = %w9}/' "$tmp/step2.pir" >"$tmp/u.pir"
refused "a result updating no argument, at its place" \
  "u.pir:1:[0-9]*: error: result 1 updates '%w9', which is no argument" \
  "$PARTIR" run "$tmp/u.pir"
printf '%s\n' 'func @f(%w: tensor<4xf32>) -> (tensor<4xf32> {updates = %w}, tensor<4xf32> {updates = %w}) {' \
  '  %a = neg(%w)' '  return %a, %w' '}' >"$tmp/u.pir"
refused "two results updating one argument" \
  "u.pir:1:[0-9]*: error: results 0 and 1 both update '%w'" "$PARTIR" run "$tmp/u.pir"

# jit's donated arguments are StableHLO's 'tf.aliasing_output = N' (as
# jax.jit(step, donate_argnums=0).lower(...).as_text() writes them): read
# as '{updates}', and written back so by 'partir export'
cat >"$tmp/donated.mlir" <<'EOF'
module @jit_step {
  func.func public @main(%arg0: tensor<4x4xf32> {tf.aliasing_output = 0 : i32}, %arg1: tensor<2x4xf32>) -> (tensor<4x4xf32> {jax.result_info = "result[0]"}, tensor<f32> {jax.result_info = "result[1]"}) {
    %0 = stablehlo.dot_general %arg1, %arg0, contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<2x4xf32>) -> tensor<4x2xf32>
    %2 = stablehlo.dot_general %1, %arg1, contracting_dims = [1] x [0] : (tensor<4x2xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
    %3 = stablehlo.subtract %arg0, %2 : tensor<4x4xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.reduce(%arg1 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x4xf32>, tensor<f32>) -> tensor<f32>
    return %3, %4 : tensor<4x4xf32>, tensor<f32>
  }
}
EOF
"$PARTIR" import "$tmp/donated.mlir" -o "$tmp/donated.pir"
check "import: a donated argument (tf.aliasing_output) is what its result updates" \
  grep -q -- '-> (tensor<4x4xf32> {updates = %arg0}, tensor<f32>)' "$tmp/donated.pir"
"$PARTIR" export "$tmp/donated.pir" --mesh batch=2 -o "$tmp/donated2.mlir"
check "export: a result's {updates} is its argument's tf.aliasing_output" \
  grep -q '%arg0: tensor<4x4xf32> {tf.aliasing_output = 0 : i32, ' "$tmp/donated2.mlir"
sed 's/tf.aliasing_output = 0/tf.aliasing_output = 1/' "$tmp/donated.mlir" >"$tmp/bad.mlir"
refused "an aliased result of another type, at its place" \
  "bad.mlir:2:[0-9]*: error: 'tf.aliasing_output' of argument 0 names no result of its type" \
  "$PARTIR" import "$tmp/bad.mlir"

# ------------------------------------------ optimizers and losses

# momentum and adam carry their state; xent takes a target distribution
"$PARTIR" grad "$tmp/mlp2.pir" --loss xent --optimizer adam --lr 0.001 \
  -o "$tmp/adam.pir"
check "grad --optimizer adam: (w, m_w, v_w, step, x, target) -> (new ones, loss)" \
  grep -q '^func @mlp_train(%w1: .*, %w2: .*, %m_w1: .*, %m_w2: .*, %v_w1: .*, %v_w2: .*, %step: tensor<f32>, %x: .*, %target: tensor<16x32xf32>) -> (.*, tensor<f32> {updates = %step}, tensor<f32>)' \
  "$tmp/adam.pir"
check "grad --optimizer adam: runs" quiet "$PARTIR" run "$tmp/adam.pir"

# ------------------------------------------------------ strategies

lua5.4 "$top/examples/models/mlp.lua" --layers 4 --batch 16 --width 64 \
  >"$tmp/mlp4.pir"
"$PARTIR" grad "$tmp/mlp4.pir" --loss mse --lr 0.05 -o "$tmp/sgd.pir"
"$PARTIR" grad "$tmp/mlp4.pir" --loss mse --lr 0.05 --optimizer momentum \
  -o "$tmp/mom.pir"

# strategy NAME PROGRAM MESH TACTIC EXPECTED [OPTIONS]: expect_strategy
# with the data x and target, then compiled
strategy() {
  name=$1 prog=$2 mesh=$3 tac=$4 want=$5
  shift 5
  expect_strategy "$name" "$prog" "$mesh" "$tac" "$want" \
    --set inputs=x,target "$@" &&
    expect_compiled "$name" "$tmp/$name.pir" "$mesh"
}
strategy batch "$tmp/sgd.pir" batch=2 "$top/tactics/batch.lua" \
  "all_reduce batch 5 65540"
strategy megatron "$tmp/sgd.pir" model=2 "$top/tactics/megatron.lua" \
  "all_reduce model 3 12288"
strategy batch-megatron "$tmp/sgd.pir" batch=2,model=2 \
  "$tactics/batch-megatron.lua" "all_reduce batch 5 32772
all_reduce model 3 6144"
strategy zero3 "$tmp/sgd.pir" batch=2 "$top/examples/fsdp.lua" \
  "all_gather batch 7 57344
all_reduce batch 1 4
reduce_scatter batch 4 32768"
strategy zero2 "$tmp/mom.pir" batch=2 "$top/examples/fsdp.lua" \
  "all_gather batch 4 32768
all_reduce batch 1 4
reduce_scatter batch 4 32768
shard batch 4 0" --set stage=2

# Megatron on a 3-layer MLP (64 classes) trained on softmax
# cross-entropy: w0 by columns, w1 by rows, w2 by columns, whose logits
# no row-parallel layer follows.  They stay split through the loss, as
# Megatron-LM's vocabulary-parallel cross-entropy keeps them: forward,
# block 1's all_reduce ([16, 64] f32, 4096 B), the logits gathered for
# their max only (2048 B sent; the max is not differentiated), the sum of
# exp over the classes ([16], 64 B) and the loss (4 B); backward, the
# gradient of w2's input (4096 B): 4 all_reduces, 8260 B.  The target is
# read in parts (a shard, no bytes).
lua5.4 "$top/examples/models/mlp.lua" --layers 3 --batch 16 --width 64 \
  >"$tmp/mlp3.pir"
"$PARTIR" grad "$tmp/mlp3.pir" --loss xent -o "$tmp/xent3.pir"
strategy xent-megatron "$tmp/xent3.pir" model=2 "$top/tactics/megatron.lua" \
  "all_gather model 1 2048
all_reduce model 4 8260
shard model 1 0"

# ... and with Adam: each weight's moments are stored split as the weight
# is (Megatron-LM keeps a shard's optimizer state with the shard), so the
# update adds no collective
"$PARTIR" grad "$tmp/mlp3.pir" --loss xent --optimizer adam -o "$tmp/xent3a.pir"
strategy xent-megatron-adam "$tmp/xent3a.pir" model=2 "$top/tactics/megatron.lua" \
  "all_gather model 1 2048
all_reduce model 4 8260
shard model 1 0"
# batch + Megatron on the momentum step: the momentum split with its
# weight, the counts of the SGD step's
strategy batch-megatron-momentum "$tmp/mom.pir" batch=2,model=2 \
  "$tactics/batch-megatron.lua" "all_reduce batch 5 32772
all_reduce model 3 6144"

# A max over a block's split features (before its row-parallel layer)
# is a reduction no split may meet: w0 is the first projection of a
# stream, not a block's, and is left whole; w1 and w2 are the block
# (one all_reduce of the 8x16 f32 result, 512 B), and nothing is
# tolerated
cat >"$tmp/mid.pir" <<'EOF'
func @f(%x: tensor<8x16xf32>, %w0: tensor<16x16xf32>, %w1: tensor<16x16xf32>, %w2: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %h = matmul(%x, %w0)
  %m = reduce_max(%h) {dims = [1]}
  %b = broadcast_in_dim(%m) {dims = [0]} : tensor<8x16xf32>
  %s = sub(%h, %b)
  %h1 = matmul(%s, %w1)
  %h2 = matmul(%h1, %w2)
  return %h2
}
EOF
expect_strategy megatron-mid "$tmp/mid.pir" model=2 "$top/tactics/megatron.lua" \
  "all_reduce model 1 512"
check "megatron-mid: w0 whole, w1 by columns, w2 by rows" \
  sh -c "! grep -q 'partir.slice [0-9] %w0' '$tmp/megatron-mid.pir' &&
         grep -q 'partir.slice 1 %w1' '$tmp/megatron-mid.pir' &&
         grep -q 'partir.slice 0 %w2' '$tmp/megatron-mid.pir'"

# ZeRO-3 regathers for a backward pass only on a training step: a
# program that donates a cache (no loss last) gathers its weight once
cat >"$tmp/cache.pir" <<'EOF'
func @f(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>, %c: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32> {updates = %c}) {
  %h = matmul(%x, %w)
  %y = matmul(%h, %w)
  %c2 = add(%c, %h)
  return %y, %c2
}
EOF
expect_strategy zero3-cache "$tmp/cache.pir" batch=2 "$top/examples/fsdp.lua" \
  "all_gather batch 1 512" --set inputs=x,c

# A result that updates an argument is written into its buffer (a
# donated argument): %new takes no bytes of its own.  Live at neg: %w
# (4096 B, an argument, live throughout), %a and %new in %w's buffer:
# 8192 B; without '{updates}', %new's own 4096 B more: 12288 B.
cat >"$tmp/donate.pir" <<'EOF'
func @f(%w: tensor<1024xf32>) -> (tensor<1024xf32> {updates = %w}) {
  %a = exp(%w)
  %new = neg(%a)
  return %new
}
EOF
sed 's/ {updates = %w}//' "$tmp/donate.pir" >"$tmp/kept.pir"
onedev() { "$PARTIR" cost "$1" | awk '$1 == "peak" && $2 == "memory" { print $3 }'; }
check "peak memory: a donated argument's buffer is its update's (8192 B)" \
  test "$(onedev "$tmp/donate.pir")" = 8192
check "peak memory: ... and without {updates}, 12288 B" \
  test "$(onedev "$tmp/kept.pir")" = 12288

# the SPMD program keeps '{updates}': its cost is the same read back
"$PARTIR" lower "$tmp/donate.pir" --mesh x=2 -o "$tmp/donate-spmd.pir"
check "peak memory: an SPMD program read back keeps its donations (8192 B)" \
  test "$(onedev "$tmp/donate-spmd.pir")" = 8192
sed 's/-> (tensor<1024xf32>/-> (tensor<512xf32>/' "$tmp/donate.pir" >"$tmp/u.pir"
refused "a result updating an argument of another type" \
  "u.pir:1:[0-9]*: error: result 0 (tensor<512xf32>) updates '%w', of another type (tensor<1024xf32>)" \
  "$PARTIR" run "$tmp/u.pir"

# peak memory per device (partir cost) on the momentum step: ZeRO-2
# stores the momentum split (4 x 16384 B halved: at least 32768 B less
# than data parallelism), ZeRO-3 the weights too: the parameters and the
# optimizer state divided by the axis, at least 65536 B less than data
# parallelism
"$PARTIR" tactic "$top/tactics/batch.lua" "$tmp/mom.pir" --mesh batch=2 \
  --set inputs=x,target -o "$tmp/dp.pir"
"$PARTIR" tactic "$top/examples/fsdp.lua" "$tmp/mom.pir" --mesh batch=2 \
  --set inputs=x,target -o "$tmp/z3.pir"
peak() {
  "$PARTIR" cost "$1" --mesh batch=2 |
    awk '$1 == "peak" && $2 == "memory" { print $3 }'
}
dp=$(peak "$tmp/dp.pir") z2=$(peak "$tmp/zero2.pir") z3=$(peak "$tmp/z3.pir")
check "peak memory: ZeRO-2 ($z2 B) saves the momentum's half on data parallelism ($dp B)" \
  test $((dp - z2)) -ge 32768
check "peak memory: ZeRO-3 ($z3 B) saves the weights' and the momentum's halves on data parallelism" \
  test $((dp - z3)) -ge 65536
check "peak memory: ZeRO-3 below ZeRO-2" test "$z3" -lt "$z2"

# The transformer: examples/models/transformer.lua, 2 layers (batch 4,
# sequence 8, d_model 32, 4 heads, d_ff 64).  Megatron: per layer 2
# all_reduces forward (attention's and the MLP's outputs, [4, 8, 32]
# f32 = 4096 B) and 2 backward (the gradients of the two blocks' inputs;
# attention's input has three, through q, k and v, added into one sum:
# sum-add): 8 in all.
lua5.4 "$top/examples/models/transformer.lua" --layers 2 --batch 4 --seq 8 \
  --d_model 32 --heads 4 --d_ff 64 >"$tmp/tf.pir"
"$PARTIR" grad "$tmp/tf.pir" --loss mse -o "$tmp/tf-step.pir"
strategy tf-megatron "$tmp/tf-step.pir" model=2 "$top/tactics/megatron.lua" \
  "all_reduce model 8 32768"
# batch + Megatron on batch=2, model=2: the 8 Megatron all_reduces on
# half the batch (2048 B each), and over batch the gradients of each
# device's parts, per layer: the layer norms' 4 x 32, wq, wk, wv, wo's
# 4 x 512 (32x2x8), w1's and w2's 2 x 1024 (32x32), b1's 32 (stored in
# parts with w1's columns, as Megatron-LM stores it) and b2's 32: 4288
# f32 = 17152 B; 2 layers and the loss: 25 all_reduces, 34308 B.
strategy tf-batch-megatron "$tmp/tf-step.pir" batch=2,model=2 \
  "$tactics/batch-megatron.lua" "all_reduce batch 25 34308
all_reduce model 8 16384"

# remat: the backward pass recomputes h0 = x . w0 and a0 = relu(h0)
# instead of keeping them: the same results bit for bit (the same
# operations), and 'partir cost' counts the copy's FLOPs: the matmul,
# 2 x 16 x 64 x 64 = 131072, and the relu, 16 x 64 = 1024 (the mask of
# relu's derivative is computed once either way; converts are free)
"$PARTIR" rewrite "$tmp/sgd.pir" --do 'remat %h0 %a0' -o "$tmp/remat.pir"
check "remat: the backward pass reads the copy, through converts" \
  grep -q '= matmul(%[0-9]*, %[0-9]*)$' "$tmp/remat.pir"
mkdir -p "$tmp/r0" "$tmp/r1"
"$PARTIR" run "$tmp/sgd.pir" --seed 5 --output "$tmp/r0" >/dev/null
"$PARTIR" run "$tmp/remat.pir" --seed 5 --output "$tmp/r1" >/dev/null
same=yes
for f in "$tmp/r0"/*.npy; do
  cmp -s "$f" "$tmp/r1/$(basename "$f")" || same=no
done
check "remat: the step's results, bit for bit" test $same = yes
flops() { "$PARTIR" cost "$1" | awk '$1 == "FLOPs" { print $2 }'; }
f0=$(flops "$tmp/sgd.pir") f1=$(flops "$tmp/remat.pir")
check "remat: cost counts the recomputation ($f0 -> $f1 FLOPs, +132096)" \
  test $((f1 - f0)) = 132096
if "$PARTIR" rewrite "$tmp/sgd.pir" --do 'remat %w0_new' >"$tmp/out" 2>&1; then
  not_ok "remat refuses a value of the backward pass"
else
  check "remat refuses a value of the backward pass" \
    grep -q 'is not an operator or a region of the forward pass' "$tmp/out"
fi

# ZeRO-3 keeping the gathered weights between the passes (reshard=no):
# one all_gather each, and more memory at the peak than regathering
expect_strategy zero3-kept "$tmp/sgd.pir" batch=2 "$top/examples/fsdp.lua" \
  "all_gather batch 4 32768
all_reduce batch 1 4
reduce_scatter batch 4 32768" --set inputs=x,target --set reshard=no
kept=$(peak "$tmp/zero3-kept.pir") resharded=$(peak "$tmp/zero3.pir")
check "peak memory: ZeRO-3 regathering ($resharded B) below keeping the gathered weights ($kept B)" \
  test "$resharded" -lt "$kept"

# remat lowers the modelled peak where activations dominate it (batch
# 256: each [256, 64] f32 activation is 65536 B, four times a weight):
# at the forward pass's end a0 and a1 are no longer kept for the
# backward pass, at least one activation less at the peak
lua5.4 "$top/examples/models/mlp.lua" --layers 4 --batch 256 --width 64 \
  >"$tmp/mlp256.pir"
"$PARTIR" grad "$tmp/mlp256.pir" --loss mse -o "$tmp/s256.pir"
"$PARTIR" rewrite "$tmp/s256.pir" --do 'remat %h0 %a0 %h1 %a1 %h2' \
  -o "$tmp/r256.pir"
p0=$(onedev "$tmp/s256.pir") p1=$(onedev "$tmp/r256.pir")
check "remat: the modelled peak falls by an activation or more ($p0 -> $p1 B)" \
  test $((p0 - p1)) -ge 65536

# examples/train_mlp.lua: 20 steps of the loop, partitioned on 2x2
# devices and on one: it fails unless the loss falls and both agree
if "$PARTIR" tactic "$top/examples/train_mlp.lua" "$top/examples/mlp_relu.pir" \
  --mesh batch=2,model=2 --set steps=20 -o "$tmp/loop.pir" >"$tmp/loop" \
  2>&1; then
  check "examples/train_mlp.lua: the loss falls, partitioned as on one device" \
    grep -q '^loss 0.72663.* -> 0.3448' "$tmp/loop"
else
  not_ok "examples/train_mlp.lua runs"
  show "$tmp/loop"
fi

done_testing
