#!/bin/sh
# Training steps partitioned (issue 14, item 6): examples/mlp_sgd.pir, one
# SGD step of a 2-layer MLP with its backward pass written by hand
# (x 16x64, y 16x32, w1 64x128, w2 128x32, f32), under data parallelism,
# batch + Megatron in both orders, FSDP (ZeRO over the batch axis) and
# all three.  The collectives each must give are counted by hand below;
# every result is simulated on its devices against the interpreter and
# compiled on threads against the interpreter, and the step itself is
# checked against NumPy.
#
# Bytes sent per device, as 'partir cost' counts them: an all_reduce over
# 2 devices sends its whole buffer (half in the reduce-scatter phase,
# half in the all-gather), an all_gather or a reduce_scatter over 2 half
# of the whole buffer.
#
#   batch (x, y split over batch=2): the two weight gradients are sums
#     over the batch, and so is the loss: 3 all_reduces over batch,
#     gw1 64x128 (32768 B) + gw2 128x32 (16384 B) + the loss (4 B) =
#     49156 B.  Nothing else: the forward and backward of each half of
#     the batch need only the (replicated) weights.
#   batch + Megatron (batch=2, model=2; either order): w1 split by
#     columns, w2 by rows.  The forward's second matmul contracts the
#     split hidden dimension: 1 all_reduce over model of p's batch half,
#     8x32 f32 = 1024 B.  The backward needs none: dh, gw1 and gw2 are
#     computed per hidden half (dp is whole on every model device) and
#     the input's gradient is not computed.  Over batch the 3 sums of
#     data parallelism, of each device's chunks: gw1 64x64 (16384 B),
#     gw2 64x32 (8192 B), the loss (4 B) = 24580 B.
#   FSDP (batch=2, ZeRO over batch): w1 and w2 are stored split along
#     dimension 0 and gathered where used: 2 all_gathers, of 64x128 and
#     128x32 f32, half of each sent: 16384 + 8192 = 24576 B.  The
#     updated weights are returned split as they came, so each device
#     needs only its half of each gradient: 2 reduce_scatters (the same
#     24576 B) instead of all_reduces, and the loss's all_reduce (4 B).
#   batch + Megatron + ZeRO (batch=2, model=2; ZeRO over batch): ZeRO
#     splits each device's Megatron chunk, w1's 64x64 along dimension 0
#     and w2's 64x32 along dimension 1 (its rows are Megatron's):
#     all_gathers of 8192 + 4096 = 12288 B, the two gradient chunks
#     reduce-scattered (12288 B), Megatron's all_reduce over model
#     (1024 B) and the loss's over batch (4 B).
. "$top_srcdir/tests/tap.sh"
. "$top_srcdir/tests/strategies.sh"
top=$(cd "$top_srcdir" && pwd)
ex=$top/examples/mlp_sgd.pir
inputs=x,y # the data: every other argument is a weight

# the strategies: the tactic files of tests/bench/tactics/
tactics=$top/tests/bench/tactics

# strategy NAME MESH TACTIC EXPECTED: expect_strategy on $ex with the
# data named by $inputs, then compiled
strategy() {
  expect_strategy "$1" "$ex" "$2" "$3" "$4" --set "inputs=$inputs" &&
    expect_compiled "$1" "$tmp/$1.pir" "$2"
}

strategy batch batch=2 "$top/tactics/batch.lua" \
  "all_reduce batch 3 49156"
strategy batch-megatron batch=2,model=2 "$tactics/batch-megatron.lua" \
  "all_reduce batch 3 24580
all_reduce model 1 1024"
strategy megatron-batch batch=2,model=2 "$tactics/megatron-batch.lua" \
  "all_reduce batch 3 24580
all_reduce model 1 1024"
strategy fsdp batch=2 "$top/examples/fsdp.lua" \
  "all_gather batch 2 24576
all_reduce batch 1 4
reduce_scatter batch 2 24576"
strategy batch-megatron-zero batch=2,model=2 \
  "$tactics/batch-megatron-zero.lua" \
  "all_gather batch 2 12288
all_reduce batch 1 4
all_reduce model 1 1024
reduce_scatter batch 2 12288"

# The same strategies on JAX's SGD step of a 2-layer MLP
# (tests/fixtures/stablehlo/mlp_train_step.mlir: x 8x32, y 8x16, w1
# 32x32, w2 32x16, arguments arg0..arg3), counted the same way:
#   batch + Megatron: over batch gw1's chunk 32x16 (2048 B), gw2's 16x16
#     (1024 B) and the loss (4 B); over model p's batch half 4x16 (256 B)
#   FSDP: w1 and w2 gathered from halves along dimension 0 (16x32: 2048
#     B, 16x16: 1024 B sent), their gradients reduce-scattered (the same)
#   all three: w1's chunk 32x16 split along dimension 0 (16x16, 1024 B
#     sent), w2's 16x16 along dimension 1 (16x8, 512 B); the gradient
#     chunks reduce-scattered alike
ex=$top/tests/fixtures/stablehlo/mlp_train_step.mlir
inputs=arg0,arg1
strategy jax-batch-megatron batch=2,model=2 "$tactics/batch-megatron.lua" \
  "all_reduce batch 3 3076
all_reduce model 1 256"
strategy jax-megatron-batch batch=2,model=2 "$tactics/megatron-batch.lua" \
  "all_reduce batch 3 3076
all_reduce model 1 256"
strategy jax-fsdp batch=2 "$top/examples/fsdp.lua" \
  "all_gather batch 2 3072
all_reduce batch 1 4
reduce_scatter batch 2 3072"
strategy jax-batch-megatron-zero batch=2,model=2 \
  "$tactics/batch-megatron-zero.lua" \
  "all_gather batch 2 1536
all_reduce batch 1 4
all_reduce model 1 256
reduce_scatter batch 2 1536"
ex=$top/examples/mlp_sgd.pir

# FSDP returns the updated weights split as they came in: each device
# updates its half (the lowered results carry the split)
"$PARTIR" lower "$tmp/fsdp.pir" --mesh batch=2 >"$tmp/fsdp.spmd" 2>&1
check "fsdp: w1' and w2' are returned split over batch, the loss whole" \
  grep -q -- '-> (tensor<32x128xf32> {dist = \[\["batch"\], \[\]\]}, tensor<64x32xf32> {dist = \[\["batch"\], \[\]\]}, tensor<f32>' \
  "$tmp/fsdp.spmd"

# The step itself, against NumPy: the gradient of the mean squared error
# through relu, written again from the formula in NumPy (in float64) by
# tests/fixtures/train/gen_numpy.py, which made the committed answers
fx=$top/tests/fixtures/train
ins="-i x=$fx/sgd.x.npy -i y=$fx/sgd.y.npy -i w1=$fx/sgd.w1.npy -i w2=$fx/sgd.w2.npy"
for name in "" fsdp batch-megatron-zero; do
  file=${name:+$tmp/$name.pir}
  file=${file:-$ex}
  rm -rf "$tmp/got"
  mkdir -p "$tmp/got"
  # shellcheck disable=SC2086
  if "$PARTIR" run "$file" $ins --output "$tmp/got" >/dev/null 2>"$tmp/err"; then
    close=yes
    : >"$tmp/close.tap"
    for r in w1n w2n loss; do
      "$FIXTURE_RUNNER" --npy-close "$tmp/got/$r.npy" "$fx/sgd.$r.npy" \
        1e-4 1e-5 >>"$tmp/close.tap" || close=no
    done
    check "${name:-the step}: NumPy's updated weights and loss" test $close = yes
    [ $close = yes ] || show "$tmp/close.tap"
  else
    not_ok "${name:-the step}: runs on NumPy's inputs"
    show "$tmp/err"
  fi
done
done_testing
