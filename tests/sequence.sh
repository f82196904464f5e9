#!/bin/sh
# Sequence parallelism and Megatron-SP (issue 14, item 7), on
# examples/models/transformer.lua at batch 4, sequence 8, d_model 32,
# 4 heads of 8, d_ff 64, f32, with heads as their own dimension and
# with heads split by reshape (--heads-by-reshape).  The counts, derived
# by hand (bytes sent per device: an all_gather or a reduce_scatter over
# 2 devices sends half the whole buffer):
#
#   sequence alone (tactics/sequence.lua --set axis=seq on seq=2): every
#     position-wise computation keeps the split; attention's scores
#     contract each query with every key, and the context sums every
#     value: k and v (4x8x4x8 = 4096 B each) are gathered, 2 all_gathers
#     per layer of 2048 B, nothing else.
#   Megatron-SP (megatron.lua, then sequence.lua over model on model=2):
#     each block's input, the layer norm's output (4x8x32 = 4096 B), is
#     gathered before its column-parallel weights (2 all_gathers a
#     layer), and each block's output is reduce-scattered along the
#     sequence into the residual stream (2 reduce_scatters a layer):
#     2048 B each, and no all_reduce.  With batch=2 first, every buffer
#     halves: 1024 B each.
#
# Each result is simulated on its devices against the interpreter; one
# is compiled and run on threads against the interpreter.
. "$top_srcdir/tests/tap.sh"
. "$top_srcdir/tests/strategies.sh"
top=$(cd "$top_srcdir" && pwd)

cat >"$tmp/megatron-sp.lua" <<'LUA'
local C = require "combinators"
return C.seq(require "megatron", require "sequence")
LUA
cat >"$tmp/batch-megatron-sp.lua" <<'LUA'
local batch, megatron, sequence = require "batch", require "megatron", require "sequence"
return function(s, mesh)
  return sequence(megatron(batch(s, mesh, {}), mesh, {}), mesh, {})
end
LUA

for L in 1 3; do
  for form in heads reshape; do
    prog=$tmp/t$L-$form.pir
    flag=
    [ $form = reshape ] && flag=--heads-by-reshape
    # shellcheck disable=SC2086
    lua5.4 "$top/examples/models/transformer.lua" --layers $L --batch 4 \
      --seq 8 --d_model 32 --heads 4 --d_ff 64 $flag >"$prog"
    k=$((2 * L))
    expect_strategy "sequence-$L-$form" "$prog" seq=2 "$top/tactics/sequence.lua" \
      "all_gather seq $k $((2048 * k))" --set axis=seq
    expect_strategy "megatron-sp-$L-$form" "$prog" model=2 "$tmp/megatron-sp.lua" \
      "all_gather model $k $((2048 * k))
reduce_scatter model $k $((2048 * k))"
    expect_strategy "batch-megatron-sp-$L-$form" "$prog" batch=2,model=2 \
      "$tmp/batch-megatron-sp.lua" \
      "all_gather model $k $((1024 * k))
reduce_scatter model $k $((1024 * k))"
  done
done

# The context product written with its operands either way round
# (jnp.einsum("bhqk,bkhd->bqhd", p, v) puts v first): the queries' split
# is kept and v gathered in both, whichever operand propagation meets
# first (the other way, v's split made a sum that the queries' split
# conflicted with).  k and v (2x8x16 f32, 1024 B) gathered over 2
# devices: 2 all_gathers of 512 B.
for order in pv vp; do
  if [ $order = pv ]; then
    ctx='%c = dot_general(%p, %v) {lhs_batch = [0], rhs_batch = [0], lhs_contract = [2], rhs_contract = [1]}'
  else
    ctx='%ct = dot_general(%v, %p) {lhs_batch = [0], rhs_batch = [0], lhs_contract = [1], rhs_contract = [2]}
  %c = transpose(%ct) {permutation = [0, 2, 1]}'
  fi
  cat >"$tmp/attn-$order.pir" <<PIR
func @attn(%x: tensor<2x8x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<16x16xf32>, %wv: tensor<16x16xf32>) -> tensor<2x8x16xf32> {
  %q = dot_general(%x, %wq) {lhs_contract = [2], rhs_contract = [0]}
  %k = dot_general(%x, %wk) {lhs_contract = [2], rhs_contract = [0]}
  %v = dot_general(%x, %wv) {lhs_contract = [2], rhs_contract = [0]}
  %s = dot_general(%q, %k) {lhs_batch = [0], rhs_batch = [0], lhs_contract = [2], rhs_contract = [2]}
  %p = exp(%s)
  $ctx
  return %c
}
PIR
  expect_strategy "sequence-attn-$order" "$tmp/attn-$order.pir" seq=2 \
    "$top/tactics/sequence.lua" "all_gather seq 2 1024" --set axis=seq
done

# Megatron-SP keeps the residual stream split: the layer's output comes
# back split along the sequence over model
"$PARTIR" lower "$tmp/megatron-sp-1-heads.pir" --mesh model=2 >"$tmp/sp.spmd"
check "megatron-sp: the output is returned split along the sequence" \
  grep -qF -- '-> (tensor<4x4x32xf32> {dist = [[], ["model"], []]})' \
  "$tmp/sp.spmd"

expect_compiled "megatron-sp, 3 layers" "$tmp/megatron-sp-3-reshape.pir" model=2
done_testing
