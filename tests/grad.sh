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
#     gathered once (one all_gather of 16384 B, half sent: the gathered
#     weight serves the forward and the backward pass); each device
#     keeps its half of each gradient (4 reduce_scatters) and updates its
#     half; the loss's all_reduce.
#   ZeRO-2 (--set stage=2) on the momentum step: the weights whole, the
#     momentum stored split; the 4 gradients reduce-scattered, each
#     device updating its half of the weights and momentum; the new
#     weights come back split (4 shards, no bytes: each device's part).
. "$top_srcdir/tests/tap.sh"
. "$top_srcdir/tests/strategies.sh"
top=$(cd "$top_srcdir" && pwd)
tactics=$top/tests/bench/tactics
export LUA_PATH="$top/tactics/?.lua;$tactics/?.lua;;"

# ---------------------------------------------------------- the rules

"$PARTIR" check-rules "$top/rules/grad.rules" >"$tmp/cr" 2>&1
check "check-rules: every vjp agrees with finite differences" \
  grep -q '^37 vjp rules, 0 failed$' "$tmp/cr"
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
check "grad --loss mse: the step's signature" grep -q \
  '^func @mlp_train(%w1: tensor<64x128xf32>, %w2: tensor<128x32xf32>, %x: tensor<16x64xf32>, %target: tensor<16x32xf32>) -> (tensor<64x128xf32>, tensor<128x32xf32>, tensor<f32>)' \
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

# ------------------------------------------ optimizers and losses

# momentum and adam carry their state; xent takes a target distribution
"$PARTIR" grad "$tmp/mlp2.pir" --loss xent --optimizer adam --lr 0.001 \
  -o "$tmp/adam.pir"
check "grad --optimizer adam: (w, m_w, v_w, step, x, target) -> (new ones, loss)" \
  grep -q '^func @mlp_train(%w1: .*, %w2: .*, %m_w1: .*, %m_w2: .*, %v_w1: .*, %v_w2: .*, %step: tensor<f32>, %x: .*, %target: tensor<16x32xf32>) -> (.*, tensor<f32>, tensor<f32>)' \
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
  "all_gather batch 4 32768
all_reduce batch 1 4
reduce_scatter batch 4 32768"
strategy zero2 "$tmp/mom.pir" batch=2 "$top/examples/fsdp.lua" \
  "all_reduce batch 1 4
reduce_scatter batch 4 32768
shard batch 4 0" --set stage=2

# peak memory per device (partir cost) on the momentum step: ZeRO-2
# stores the momentum split (4 x 16384 B halved: at least 32768 B less
# than data parallelism), ZeRO-3 the weights too (at least 32768 B less
# again)
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
check "peak memory: ZeRO-3 ($z3 B) saves the weights' half on ZeRO-2" \
  test $((z2 - z3)) -ge 32768

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

# ZeRO-3 with the gathered weights rematerialized: each weight gathered
# again for the backward pass, as DeepSpeed's ZeRO-3 does, where the
# backward reads it: w1, w2 and w3 (dx of a block's input needs its
# weight); w0 is read by the forward pass only (x's gradient is not
# computed).  4 + 3 all_gathers of 8192 B each.
gathered=$(awk '/= partir.tile 0 .*@"batch"/ && !/_new/ { print $1 }' \
  "$tmp/zero3.pir" | head -4 | tr '\n' ' ')
"$PARTIR" rewrite "$tmp/zero3.pir" --do "remat $gathered" -o "$tmp/z3r.pir"
printf 'all_gather batch 7 57344\nall_reduce batch 1 4\nreduce_scatter batch 4 32768\n' \
  >"$tmp/want"
collectives "$tmp/z3r.pir" batch=2 | grep -v '^shard' >"$tmp/got"
check "ZeRO-3, the weights rematerialized ($gathered): gathered again for the backward pass" \
  cmp -s "$tmp/want" "$tmp/got"
check "ZeRO-3 rematerialized: simulated on batch=2" \
  quiet "$PARTIR" lower "$tmp/z3r.pir" --mesh batch=2 --simulate --seed 4

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
