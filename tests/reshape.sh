#!/bin/sh
# Splits through reshape (issue 14, item 1): a split on a dimension that a
# reshape splits or merges moves to the matching dimension, as the same
# number of parts, where the sizes divide; it is gathered only where they
# do not.  Hand-written programs with counts derived by hand, then the
# transformer whose heads are split off by reshape and transpose (as JAX
# and PyTorch export attention) under Megatron.  Every lowering runs on
# simulated devices against the interpreter.
. "$top_srcdir/tests/tap.sh"
top=$(cd "$top_srcdir" && pwd)
ex=$top/examples
tactics=$top/tactics

# rewrite IN SCRIPT OUT: the commands' result, propagate's report in OUT.err
rewrite() {
  "$PARTIR" rewrite "$1" --do "$2" -o "$3" 2>"$3.err"
}
# stats FILE MESH: the collective lines of --stats ("none" when none)
stats() {
  "$PARTIR" lower "$1" --mesh "$2" --stats | sed -n '/^collectives/,$p' | tail -n +2
}
# flops FILE [MESH]: per-device FLOPs of the cost model
flops() {
  if [ -n "$2" ]; then
    "$PARTIR" cost "$1" --mesh "$2"
  else
    "$PARTIR" cost "$1"
  fi | awk '$1 == "FLOPs" { print $2 }'
}
simulates() { # simulates FILE MESH
  check "$(basename "$1" .pir) on $2: simulated devices agree with the interpreter" \
    quiet "$PARTIR" lower "$1" --mesh "$2" --simulate --seed 5
}

# ---- columns to heads: 16x128 -> 16x4x32, dim 1 split over model=2
# Dim 1 of both has 16 elements before it, so the 2 parts of 64 columns
# are 2 parts of 2 heads: each device reshapes its own 16x64 into 16x2x32
# and nothing moves.  exp then runs on 16x2x32 = 1024 elements a device
# (2048 in all).
cat >"$tmp/heads.pir" <<'EOF'
func @f(%x: tensor<16x128xf32>) -> tensor<16x4x32xf32> {
  %h = reshape(%x) : tensor<16x4x32xf32>
  %e = exp(%h)
  return %e
}
EOF
rewrite "$tmp/heads.pir" "arg-tile %x 1 64 model; propagate" "$tmp/heads.m.pir"
check "heads: propagate moves the split to the heads (range<4,2>), reporting nothing" sh -c \
  "grep -qF '%e = partir.tile 1 (%r : !partir.range<4,2> @\"model\")' '$tmp/heads.m.pir' &&
   test ! -s '$tmp/heads.m.pir.err'"
check "heads: no collective" test "$(stats "$tmp/heads.m.pir" model=2)" = "  none"
"$PARTIR" lower "$tmp/heads.m.pir" --mesh model=2 >"$tmp/heads.spmd"
check "heads: each device reshapes its 16x64 columns into 16x2x32, 2 of the 4 heads" sh -c \
  "grep -qF '%x: tensor<16x64xf32> {dist = [[], [\"model\"]]}' '$tmp/heads.spmd' &&
   grep -qF '(tensor<16x2x32xf32> {dist = [[], [\"model\"], []]})' '$tmp/heads.spmd' &&
   grep -qF 'reshape(%x) : tensor<16x2x32xf32>' '$tmp/heads.spmd'"
check "heads: 1024 FLOPs a device, half of 2048" \
  test "$(flops "$tmp/heads.pir"):$(flops "$tmp/heads.m.pir" model=2)" = "2048:1024"
simulates "$tmp/heads.m.pir" model=2

# ---- a batch through a merge: [B,S,D] = 4x8x16 -> [B*S,D] = 32x16 -> matmul
# Dim 0 of both has nothing before it: 2 parts of 2 sequences are 2 parts
# of 16 rows.  The matmul keeps the split: 2 x 16 x 16 x 32 = 16384 FLOPs
# a device, half of 2 x 32 x 16 x 32 = 32768, and nothing is exchanged.
cat >"$tmp/merge.pir" <<'EOF'
func @f(%x: tensor<4x8x16xf32>, %w: tensor<16x32xf32>) -> tensor<32x32xf32> {
  %flat = reshape(%x) : tensor<32x16xf32>
  %y = matmul(%flat, %w)
  return %y
}
EOF
rewrite "$tmp/merge.pir" "arg-tile %x 0 2 batch; propagate" "$tmp/merge.b.pir"
check "merge: the batch split reaches the matmul (range<32,16>), reporting nothing" sh -c \
  "grep -qF '%y = partir.tile 0 (%r : !partir.range<32,16> @\"batch\")' '$tmp/merge.b.pir' &&
   test ! -s '$tmp/merge.b.pir.err'"
check "merge: no collective" test "$(stats "$tmp/merge.b.pir" batch=2)" = "  none"
"$PARTIR" lower "$tmp/merge.b.pir" --mesh batch=2 >"$tmp/merge.spmd"
check "merge: each device holds 2 sequences and computes 16 rows of the result" sh -c \
  "grep -qF '%x: tensor<2x8x16xf32> {dist = [[\"batch\"], [], []]}' '$tmp/merge.spmd' &&
   grep -qF '(tensor<16x32xf32> {dist = [[\"batch\"], []]})' '$tmp/merge.spmd'"
check "merge: 16384 FLOPs a device, half of 32768" \
  test "$(flops "$tmp/merge.pir"):$(flops "$tmp/merge.b.pir" batch=2)" = "32768:16384"
simulates "$tmp/merge.b.pir" batch=2

# ---- sizes that do not divide: 8 parts of 16 columns, 4 heads
# 4 heads cannot be cut in 8 parts (nor is a part of 16 columns whole
# heads of 32): propagate says so, the tile stays, and the lowering
# gathers it once, each device sending its 16x16 (1024 bytes).
rewrite "$tmp/heads.pir" "arg-tile %x 1 16 model; propagate" "$tmp/heads8.m.pir"
check "8 parts of 4 heads: propagate reports that they do not divide" grep -qF \
  "cannot propagate the tiling of operand 1 of 'reshape' along dimension 1: its 8 parts do not divide dimension 1 of the result (size 4), which carries it (reshape-tile-1); the tile is used whole" \
  "$tmp/heads8.m.pir.err"
check "8 parts of 4 heads: one all_gather of 16x16 f32 a device, nothing else" \
  test "$(stats "$tmp/heads8.m.pir" model=8 | awk '{ print $1, $3, $4, $5 }')" = "all_gather model 1 1024"
simulates "$tmp/heads8.m.pir" model=8
# Compiled: a loop over the heads (no axis) slices 64 columns by a part
# of 4 heads; the generated code offsets by the slice's own width, and
# --exact agrees with the interpreter bit for bit.
rewrite "$tmp/heads.pir" "arg-tile %x 1 64; propagate" "$tmp/heads.loop.pir"
"$PARTIR" run "$tmp/heads.loop.pir" --seed 1 >"$tmp/heads.run"
"$PARTIR" exec "$tmp/heads.loop.pir" --seed 1 --exact >"$tmp/heads.exec"
check "heads in a loop, compiled: exact, what the interpreter prints" sh -c \
  "test -s '$tmp/heads.run' && cmp -s '$tmp/heads.run' '$tmp/heads.exec'"
# ...and a minor dimension carries nothing: head_dim (32) has 64 elements
# before it, no dimension of 16x128 has; its split is gathered
cat >"$tmp/minor.pir" <<'EOF'
func @f(%x: tensor<16x4x32xf32>) -> tensor<16x128xf32> {
  %flat = reshape(%x) : tensor<16x128xf32>
  return %flat
}
EOF
rewrite "$tmp/minor.pir" "arg-tile %x 2 16 model; propagate" "$tmp/minor.m.pir"
check "a split of head_dim: one all_gather of 16x4x16 f32 (4096 bytes)" \
  test "$(stats "$tmp/minor.m.pir" model=2 | awk '{ print $1, $3, $4, $5 }')" = "all_gather model 1 4096"
simulates "$tmp/minor.m.pir" model=2

# ---- the transformer with heads split by reshape and transpose
lua5.4 "$ex/models/transformer.lua" --layers 2 >"$tmp/tf2.pir"
lua5.4 "$ex/models/transformer.lua" --layers 2 --heads-by-reshape >"$tmp/tfr2.pir"
check "--heads-by-reshape: the default form has no reshape" \
  test "$(grep -c 'reshape(' "$tmp/tf2.pir")" -eq 0
# per layer: q, k, v from [B,S,D] to [B,S,H,D/H], the context back
check "--heads-by-reshape: 4 reshapes a layer, 3 to heads and 1 back" sh -c \
  "test \$(grep -c '_heads = reshape(%l[01]_[qkv]) : tensor<2x8x4x8xf32>' '$tmp/tfr2.pir') -eq 6 &&
   test \$(grep -c '_ctx_flat = reshape(%l[01]_ctx_t) : tensor<2x8x32xf32>' '$tmp/tfr2.pir') -eq 2"
check "--heads-by-reshape: [D, D] projections" \
  grep -qF '%l0_wq: tensor<32x32xf32>' "$tmp/tfr2.pir"
# the same seeded numbers fill [D, H, D/H] and [D, D] alike (row-major):
# both forms compute the same
"$PARTIR" run "$tmp/tf2.pir" --seed 3 -o "$tmp/tf2.out" >/dev/null
"$PARTIR" run "$tmp/tfr2.pir" --seed 3 -o "$tmp/tfr2.out" >/dev/null
"$FIXTURE_RUNNER" --npy-close "$tmp/tfr2.out/l1_out.npy" "$tmp/tf2.out/l1_out.npy" 1e-5 1e-6 \
  >"$tmp/close.tap"
check "--heads-by-reshape computes what the default form computes" grep -q '^ok' "$tmp/close.tap"

# Megatron: q, k, v by columns (their split moves through reshape and
# transpose to the heads), the output projection by rows after the
# context's heads are merged back: one all_reduce for attention and one
# for the MLP, 2 a layer, and no all_gather.  Each device does what it
# does on the default form (301312 FLOPs, 2 x 150656; tests/spmd.sh).
count() { # count FILE MESH KIND AXES -> the number in --stats
  "$PARTIR" lower "$1" --mesh "$2" --stats |
    awk -v k="$3 over $4" 'index($0, k) { n = $(NF - 2) } END { print n + 0 }'
}
total() { # total FILE MESH -> all collectives
  "$PARTIR" lower "$1" --mesh "$2" --stats |
    awk '/ over / { n += $(NF - 2) } END { print n + 0 }'
}
for L in 1 2 4; do
  lua5.4 "$ex/models/transformer.lua" --layers $L --heads-by-reshape >"$tmp/tfr$L.pir"
  for mesh in model=2 model=4; do
    m=$tmp/tfr$L.$mesh.pir
    if ! "$PARTIR" tactic "$tactics/megatron.lua" "$tmp/tfr$L.pir" --mesh "$mesh" -o "$m" 2>"$tmp/err"; then
      not_ok "$L-layer heads-by-reshape, megatron on $mesh: the tactic failed"
      show "$tmp/err"
      continue
    fi
    check "$L-layer heads-by-reshape, megatron on $mesh: $((2 * L)) all_reduce over model" \
      test "$(count "$m" "$mesh" all_reduce model)" -eq $((2 * L))
    check "...no all_gather, nothing else" test "$(total "$m" "$mesh")" -eq $((2 * L))
    simulates "$m" "$mesh"
  done
done
"$PARTIR" run "$tmp/tfr2.model=2.pir" --seed 2 >"$tmp/tfr2.run"
"$PARTIR" exec "$tmp/tfr2.model=2.pir" --mesh model=2 --seed 2 --exact >"$tmp/tfr2.exec"
check "2-layer heads-by-reshape, megatron, compiled on 2 threads: exact, what the interpreter prints" sh -c \
  "test -s '$tmp/tfr2.run' && cmp -s '$tmp/tfr2.run' '$tmp/tfr2.exec'"
check "2-layer heads-by-reshape, megatron on model=2: 301312 FLOPs a device, as the default form" \
  test "$(flops "$tmp/tfr2.model=2.pir" model=2)" -eq 301312
"$PARTIR" lower "$tmp/tfr2.model=2.pir" --mesh model=2 >"$tmp/tfr2.spmd"
check "...each device projects its 2 heads and reshapes them (2x8x2x8)" sh -c \
  "grep -qF '%l0_wq: tensor<32x16xf32> {dist = [[], [\"model\"]]}' '$tmp/tfr2.spmd' &&
   test \$(grep -c 'reshape(%[0-9]*) : tensor<2x8x2x8xf32>' '$tmp/tfr2.spmd') -eq 6"
# batch and Megatron composed: the batch split goes through the
# reshapes on dim 0, untouched
cat >"$tmp/batch_megatron.lua" <<'LUA'
local C = require "combinators"
local dir = os.getenv("PARTIR_TACTICS"):match("[^:]+")
return C.seq(dofile(dir .. "/batch.lua"), dofile(dir .. "/megatron.lua"))
LUA
bm=$tmp/tfr2.bm.pir
"$PARTIR" tactic "$tmp/batch_megatron.lua" "$tmp/tfr2.pir" --mesh batch=2,model=2 -o "$bm"
check "2-layer heads-by-reshape, batch + megatron: 4 all_reduce over model, nothing else" sh -c \
  "test $(count "$bm" batch=2,model=2 all_reduce model) -eq 4 &&
   test $(total "$bm" batch=2,model=2) -eq 4"
simulates "$bm" batch=2,model=2
# 8 devices cannot each take whole heads of 4: the tactic says so
"$PARTIR" tactic "$tactics/megatron.lua" "$tmp/tfr2.pir" --mesh model=8 -o "$tmp/tfr8.pir" 2>"$tmp/err"
check "heads-by-reshape, megatron on model=8 (4 heads): refused, naming the reshape" sh -c \
  "test $? -ne 0 && grep -qF \"its 8 parts do not divide dimension 2 of the result (size 4)\" '$tmp/err'"
# --dtype bf16: every tensor bf16; Megatron's 2 all_reduces per layer move
# [2, 8, 32] bf16, 1024 B each (half f32's 2048)
lua5.4 "$ex/models/transformer.lua" --layers 1 --dtype bf16 >"$tmp/tfb.pir"
check "--dtype bf16: no f32 tensor left" sh -c "! grep -q 'xf32>' '$tmp/tfb.pir'"
"$PARTIR" tactic "$tactics/megatron.lua" "$tmp/tfb.pir" --mesh model=2 -o "$tmp/tfbm.pir"
check "--dtype bf16, megatron on model=2: 2 all_reduces of 1024 B" sh -c \
  "'$PARTIR' cost '$tmp/tfbm.pir' --mesh model=2 | grep -q '^  all_reduce  *model  *2  *2  *2048 B'"
done_testing
