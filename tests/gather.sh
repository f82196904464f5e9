#!/bin/sh
# Embedding lookups (issue 14, item 8): gather (StableHLO's form, the one
# JAX emits for table[ids]) and dynamic_slice.  The interpreter's values
# on small cases derived by hand (out-of-range starts clamped); bad
# attributes refused with their position; the tiling specs: a table
# split along its rows (vocabulary parallel) is one all_reduce, ids split
# along the batch nothing, a table split along the embedding nothing, a
# dynamic_slice split along a dimension it takes whole nothing; Megatron
# and batch parallelism on the transformer with --embed and on JAX's
# export; the simulator and the compiled program agree with the
# interpreter everywhere.  (JAX's own values for its export: stablehlo.sh.)
. "$top_srcdir/tests/tap.sh"
top=$(cd "$top_srcdir" && pwd)
ex=$top/examples
tactics=$top/tactics
fx=$top/tests/fixtures/stablehlo

# stats FILE MESH: the collective lines of --stats ("none" when none)
stats() {
  "$PARTIR" lower "$1" --mesh "$2" --stats | sed -n '/^collectives/,$p' | tail -n +2
}
simulates() { # simulates FILE MESH
  check "$(basename "$1" .pir) on $2: simulated devices agree with the interpreter" \
    quiet "$PARTIR" lower "$1" --mesh "$2" --simulate --seed 5
}
# compiled FILE [MESH]: 'exec --exact' writes the interpreter's .npy files
# bit for bit (a partitioned program's: its sums in its order), and
# 'exec' the same values (a gather moves data; no arithmetic to round)
compiled() {
  name="$(basename "$1" .pir)${2:+ on $2}"
  rm -rf "$tmp/c-run" "$tmp/c-exact" "$tmp/c-fast"
  if "$PARTIR" run "$1" --seed 9 -o "$tmp/c-run" >/dev/null 2>"$tmp/err" &&
    "$PARTIR" exec "$1" ${2:+--mesh "$2"} --exact --seed 9 -o "$tmp/c-exact" \
      >/dev/null 2>>"$tmp/err" &&
    "$PARTIR" exec "$1" ${2:+--mesh "$2"} --seed 9 -o "$tmp/c-fast" \
      >/dev/null 2>>"$tmp/err"; then
    same=yes
    for f in "$tmp/c-run"/*.npy; do
      cmp -s "$f" "$tmp/c-exact/$(basename "$f")" || same=no
      "$FIXTURE_RUNNER" --npy-near "$tmp/c-fast/$(basename "$f")" "$f" 1e-5 \
        >"$tmp/near" 2>&1 && grep -q '^ok' "$tmp/near" || same=no
    done
    check "$name: compiled, the interpreter's values (exact: bit for bit)" \
      test "$same" = yes
  else
    not_ok "$name: compiled, it runs"
    show "$tmp/err"
  fi
}

# ---- the interpreter, by hand
# t[i][j] = 10 i + j.  table[ids]: 7 is past the 5 rows and reads the
# last (40 41 42), -2 reads the first, as StableHLO clamps gather starts.
# windows: 2x2 windows of x[i][j] = 10 i + j, each index vector (row j,
# column i: start_index_map = [1, 0]) clamped so the window fits, to
# rows 0..2 and columns 0..3: (1, 3) starts at row 2 (3 clamped), column
# 1; (-1, 9) at row 2 (9 clamped), column 0.  dynamic_slice the same:
# (1, 4) at row 1, column 3 (4 clamped); (-3, 2) at row 0, column 2.
# batched: b[n][v] = the row [100 n + 10 v, 100 n + 10 v + 1], batch n
# looking up row ids[n] of its own table: 2, then 5 clamped to 2.
cat >"$tmp/values.pir" <<'EOF'
func @f() -> (tensor<2x2x3xf32>, tensor<2x2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) {
  %t = constant() {value = [[0, 1, 2], [10, 11, 12], [20, 21, 22], [30, 31, 32], [40, 41, 42]]} : tensor<5x3xf32>
  %ids = constant() {value = [[4, 0], [7, -2]]} : tensor<2x2xi32>
  %rows = gather(%t, %ids) {offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2, slice_sizes = [1, 3]}
  %x = constant() {value = [[0, 1, 2, 3, 4], [10, 11, 12, 13, 14], [20, 21, 22, 23, 24], [30, 31, 32, 33, 34]]} : tensor<4x5xf32>
  %starts = constant() {value = [[1, 3], [-1, 9]]} : tensor<2x2xi32>
  %windows = gather(%x, %starts) {offset_dims = [1, 2], start_index_map = [1, 0], index_vector_dim = 1, slice_sizes = [2, 2]}
  %i = constant() {value = 1} : tensor<i32>
  %j = constant() {value = 4} : tensor<i32>
  %k = constant() {value = -3} : tensor<i32>
  %l = constant() {value = 2} : tensor<i32>
  %d1 = dynamic_slice(%x, %i, %j) {slice_sizes = [2, 2]}
  %d2 = dynamic_slice(%x, %k, %l) {slice_sizes = [2, 2]}
  %b = constant() {value = [[[0, 1], [10, 11], [20, 21]], [[100, 101], [110, 111], [120, 121]]]} : tensor<2x3x2xf32>
  %bi = constant() {value = [2, 5]} : tensor<2xi32>
  %batched = gather(%b, %bi) {offset_dims = [1], collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 1, slice_sizes = [1, 1, 2]}
  return %rows, %windows, %d1, %d2, %batched
}
EOF
cat >"$tmp/values.want" <<'EOF'
rows = tensor<2x2x3xf32>
[[[40, 41, 42], [0, 1, 2]], [[40, 41, 42], [0, 1, 2]]]
windows = tensor<2x2x2xf32>
[[[21, 22], [31, 32]], [[20, 21], [30, 31]]]
d1 = tensor<2x2xf32>
[[13, 14], [23, 24]]
d2 = tensor<2x2xf32>
[[2, 3], [12, 13]]
batched = tensor<2x2xf32>
[[20, 21], [120, 121]]
EOF
"$PARTIR" run "$tmp/values.pir" >"$tmp/values.got" 2>&1
check "gather and dynamic_slice: the values derived by hand, starts clamped" \
  cmp -s "$tmp/values.want" "$tmp/values.got"
"$PARTIR" exec "$tmp/values.pir" >"$tmp/values.exec" 2>&1
check "...and compiled" cmp -s "$tmp/values.want" "$tmp/values.exec"
check "the .pir text of gather and dynamic_slice reads back as itself" \
  sh -c "'$PARTIR' fmt '$tmp/values.pir' >'$tmp/v1.pir' &&
         '$PARTIR' fmt '$tmp/v1.pir' | cmp -s - '$tmp/v1.pir' &&
         grep -qF 'gather(%b, %bi) {collapsed_slice_dims = [1], index_vector_dim = 1, offset_dims = [1], operand_batching_dims = [0], slice_sizes = [1, 1, 2], start_index_map = [1], start_indices_batching_dims = [0]}' '$tmp/v1.pir'"

# ---- bad attributes: a positioned error each
bad() { # bad DESCRIPTION MESSAGE OPERATOR-LINE
  printf 'func @f(%%t: tensor<5x3xf32>, %%ids: tensor<2x2xi32>, %%f: tensor<2x2xf32>,\n        %%i: tensor<i32>) -> tensor<2x2xf32> {\n  %%e = %s\n  return %%i\n}\n' \
    "$3" >"$tmp/bad.pir"
  if "$PARTIR" check "$tmp/bad.pir" >/dev/null 2>"$tmp/err"; then
    not_ok "$1: refused"
  else
    check "$1: refused at 3:3 ($2)" grep -qF "bad.pir:3:3: error: $2" "$tmp/err"
  fi
}
bad "float indices" "'gather' indices must be integers, not f32" \
  "gather(%t, %f) {offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2, slice_sizes = [1, 3]}"
bad "a collapsed dim sliced by 2" \
  "'gather' slice size 2 of dimension 0: need 0 to 1 (collapsed or batching)" \
  "gather(%t, %ids) {offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2, slice_sizes = [2, 3]}"
bad "two start components for one" \
  "'gather' start_index_map has 2 entries but each start index has 1 components" \
  "gather(%t, %ids) {offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0, 1], index_vector_dim = 2, slice_sizes = [1, 3]}"
bad "offset dims that do not cover the slice" \
  "'gather' offset_dims has 0 entries: the operand's rank 2 less 1 collapsed and 0 batching dims" \
  "gather(%t, %ids) {offset_dims = [], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2, slice_sizes = [1, 3]}"
bad "dynamic_slice with one start for two dims" \
  "'dynamic_slice' of a rank-2 operand needs 2 start indices and 2 slice_sizes, got 1 and 2" \
  "dynamic_slice(%t, %i) {slice_sizes = [2, 3]}"
bad "dynamic_slice larger than its operand" \
  "'dynamic_slice' slice size 6 of dimension 0: need 0 to 5" \
  "dynamic_slice(%t, %i, %i) {slice_sizes = [6, 3]}"

# ---- the rules, checked against the interpreter
"$PARTIR" check-rules >"$tmp/rules" 2>&1
for rule in gather-sum gather-sum-rev gather-tile-0 slice-gather-2 \
  dynamic_slice-tile-1 slice-dynamic_slice-0; do
  check "check-rules: $rule holds on random instances" \
    grep -Eq "^ok +$rule +[0-9]+ instance" "$tmp/rules"
done

# ---- vocabulary parallel: examples/embedding.pir, ids 4x8 in a 16x32
# table, then a 32x32 projection.  Megatron splits the table's rows over
# model=2 (8 a device) and the projection's columns: the lookup is a sum
# over the axis, one all_reduce of the 4x8x32 f32 embeddings (4096 B; a
# ring over 2 sends 2 x 1/2 x 4096 = 4096 B a device), and nothing else
# moves (the projection's columns stay split in the result).  A device
# multiplies 2 x 4 x 8 x 16 x 32 = 32768 FLOPs, and masks its 32 lookups
# with 32 subtractions and 32 comparisons: 32832.
"$PARTIR" tactic "$tactics/megatron.lua" "$ex/embedding.pir" --mesh model=2 \
  -o "$tmp/emb.m.pir" 2>"$tmp/err"
check "embedding, Megatron: the table's rows become a partir.sum over model" \
  grep -qF '%x = partir.sum (%r : !partir.range<16,8> @"model")' "$tmp/emb.m.pir"
check "...exactly one all_reduce, 4096 B" \
  test "$(stats "$tmp/emb.m.pir" model=2)" = \
  "  all_reduce over model               1           4096 bytes"
"$PARTIR" cost "$tmp/emb.m.pir" --mesh model=2 >"$tmp/emb.cost"
check "...4096 B sent a device, 32832 FLOPs a device" sh -c \
  "grep -Eq '^  bytes sent +4096 B' '$tmp/emb.cost' &&
   grep -Eq '^  FLOPs +32832 ' '$tmp/emb.cost'"
"$PARTIR" lower "$tmp/emb.m.pir" --mesh model=2 >"$tmp/emb.spmd"
check "...each device holds 8 of the 16 rows and looks up with shifted ids" sh -c \
  "grep -qF '%table: tensor<8x32xf32> {dist = [[\"model\"], []]}' '$tmp/emb.spmd' &&
   grep -qF 'gather(%table, %6)' '$tmp/emb.spmd'"
simulates "$tmp/emb.m.pir" model=2
compiled "$tmp/emb.m.pir" model=2

# the same split made by hand and propagated: the same program
"$PARTIR" rewrite "$ex/embedding.pir" --do 'arg-tile %table 0 8 model; propagate' \
  -o "$tmp/emb.v.pir" 2>"$tmp/emb.v.err"
check "arg-tile of the table's rows propagates to the sum, reporting nothing" \
  sh -c "grep -qF '%x = partir.sum' '$tmp/emb.v.pir' && test ! -s '$tmp/emb.v.err'"
check "...one all_reduce (the lookup's) and nothing else" \
  test "$(stats "$tmp/emb.v.pir" model=2)" = \
  "  all_reduce over model               1           4096 bytes"
simulates "$tmp/emb.v.pir" model=2
# the table split but not propagated: the lowering cannot add the gather
# of a part to the others (they are not masked), so it gathers the table
"$PARTIR" rewrite "$ex/embedding.pir" --do 'arg-tile %table 0 8 model' \
  -o "$tmp/emb.t.pir"
check "a split table used whole by the gather is all_gathered (its 8x32 halves), not summed" \
  test "$(stats "$tmp/emb.t.pir" model=2)" = \
  "  all_gather over model               1           1024 bytes"
simulates "$tmp/emb.t.pir" model=2

# ---- batch-split ids: each device looks up its own 2 of the 4 sequences
"$PARTIR" tactic "$tactics/batch.lua" "$ex/embedding.pir" --mesh batch=2 \
  -o "$tmp/emb.b.pir"
check "embedding, batch.lua: no collective" \
  test "$(stats "$tmp/emb.b.pir" batch=2)" = "  none"
check "...each device gathers for its 2x8 ids" \
  sh -c "'$PARTIR' lower '$tmp/emb.b.pir' --mesh batch=2 |
         grep -qF '%ids: tensor<2x8xi32> {dist = [[\"batch\"], []]}'"
simulates "$tmp/emb.b.pir" batch=2
compiled "$tmp/emb.b.pir" batch=2

# ---- the table split along the embedding (offset) dim: the lookup's
# columns, nothing moves; each device's slice_sizes follow its 16 columns
cat >"$tmp/lookup.pir" <<'EOF'
func @f(%ids: tensor<4x8xi32>, %table: tensor<16x32xf32>) -> tensor<4x8x32xf32> {
  %x = gather(%table, %ids) {offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2, slice_sizes = [1, 32]}
  %e = exp(%x)
  return %e
}
EOF
"$PARTIR" rewrite "$tmp/lookup.pir" --do 'arg-tile %table 1 16 model; propagate' \
  -o "$tmp/lookup.d.pir" 2>"$tmp/lookup.d.err"
check "the table's columns split: the lookup's columns (tile 2), reporting nothing" \
  sh -c "grep -qF '%e = partir.tile 2 (%r : !partir.range<32,16> @\"model\")' '$tmp/lookup.d.pir' &&
         test ! -s '$tmp/lookup.d.err'"
check "...no collective" test "$(stats "$tmp/lookup.d.pir" model=2)" = "  none"
check "...each device looks up its 16 columns (slice_sizes = [1, 16])" \
  sh -c "'$PARTIR' lower '$tmp/lookup.d.pir' --mesh model=2 |
         grep -qF 'gather(%table, %ids) {collapsed_slice_dims = [0], index_vector_dim = 2, offset_dims = [2], slice_sizes = [1, 16], start_index_map = [0]}'"
simulates "$tmp/lookup.d.pir" model=2
compiled "$tmp/lookup.d.pir" model=2

# batch and vocabulary together on batch=2,model=2: the one all_reduce,
# of a device's 2x8x32 (2048 B)
"$PARTIR" tactic "$ex/batch_megatron.lua" "$ex/embedding.pir" \
  --mesh batch=2,model=2 -o "$tmp/emb.bm.pir"
check "embedding, batch then Megatron: one all_reduce over model, 2048 B" \
  test "$(stats "$tmp/emb.bm.pir" batch=2,model=2)" = \
  "  all_reduce over model               1           2048 bytes"
simulates "$tmp/emb.bm.pir" batch=2,model=2
compiled "$tmp/emb.bm.pir" batch=2,model=2

# ---- dynamic_slice: a window of 2 of 8 columns at runtime starts.  A
# split of the rows (taken whole) passes through; a split of the
# columns (sliced at a runtime start) cannot, and is gathered.
cat >"$tmp/dyn.pir" <<'EOF'
func @f(%x: tensor<8x8xf32>, %i: tensor<i32>, %j: tensor<i32>) -> tensor<8x2xf32> {
  %w = dynamic_slice(%x, %i, %j) {slice_sizes = [8, 2]}
  %e = exp(%w)
  return %e
}
EOF
"$PARTIR" rewrite "$tmp/dyn.pir" --do 'arg-tile %x 0 4 batch; propagate' \
  -o "$tmp/dyn.b.pir" 2>"$tmp/dyn.b.err"
check "dynamic_slice, rows split: the split passes through, reporting nothing" \
  sh -c "grep -qF '%e = partir.tile 0 (%r : !partir.range<8,4> @\"batch\")' '$tmp/dyn.b.pir' &&
         test ! -s '$tmp/dyn.b.err'"
check "...no collective" test "$(stats "$tmp/dyn.b.pir" batch=2)" = "  none"
simulates "$tmp/dyn.b.pir" batch=2
compiled "$tmp/dyn.b.pir" batch=2
"$PARTIR" rewrite "$tmp/dyn.pir" --do 'arg-tile %x 1 4 model; propagate' \
  -o "$tmp/dyn.m.pir" 2>"$tmp/dyn.m.err"
check "dynamic_slice, the sliced columns split: propagate says it cannot carry it" \
  grep -qF "cannot propagate the tiling of operand 1 of 'dynamic_slice' along dimension 1" "$tmp/dyn.m.err"
check "...the lowering gathers x's 8x4 halves (128 B each)" \
  test "$(stats "$tmp/dyn.m.pir" model=2)" = \
  "  all_gather over model               1            128 bytes"
simulates "$tmp/dyn.m.pir" model=2

# ---- the transformer from token ids (--embed 64), 2 layers of width
# 32, batch 2, sequence 8: Megatron makes the lookup one all_reduce and
# each layer two, 5 in all, each of the 2x8x32 f32 activations (2048 B):
# 10240 B; batch parallelism exchanges nothing
gen=$ex/models/transformer.lua
lua5.4 "$gen" --layers 2 --embed 64 >"$tmp/tf.pir"
check "transformer --embed: the ids look up rows of a 64x32 table" sh -c \
  "grep -qF 'func @transformer(%ids: tensor<2x8xi32>,' '$tmp/tf.pir' &&
   grep -qF '%embed: tensor<64x32xf32>,' '$tmp/tf.pir' &&
   grep -qF '%x = gather(%embed, %ids)' '$tmp/tf.pir'"
"$PARTIR" tactic "$tactics/megatron.lua" "$tmp/tf.pir" --mesh model=2 -o "$tmp/tf.m.pir"
check "transformer --embed, Megatron: 5 all_reduces (1 + 2 a layer), 10240 B, nothing else" \
  test "$(stats "$tmp/tf.m.pir" model=2)" = \
  "  all_reduce over model               5          10240 bytes"
simulates "$tmp/tf.m.pir" model=2
compiled "$tmp/tf.m.pir" model=2
"$PARTIR" tactic "$tactics/batch.lua" "$tmp/tf.pir" --mesh batch=2 -o "$tmp/tf.b.pir"
check "transformer --embed, batch: no collective" \
  test "$(stats "$tmp/tf.b.pir" batch=2)" = "  none"
simulates "$tmp/tf.b.pir" batch=2

# ---- JAX's export (tests/fixtures/stablehlo/embed.mlir: ids 2x6 in a
# 16x8 table, an 8x8 projection, relu, a dynamic_slice of 2 positions):
# Megatron splits the table's rows and the projection's columns, one
# all_reduce of the 2x6x8 f32 embeddings (384 B); batch, none
"$PARTIR" tactic "$tactics/megatron.lua" "$fx/embed.mlir" --mesh model=2 \
  -o "$tmp/jax.m.pir"
check "JAX's embedding model, Megatron: one all_reduce, 384 B" \
  test "$(stats "$tmp/jax.m.pir" model=2)" = \
  "  all_reduce over model               1            384 bytes"
simulates "$tmp/jax.m.pir" model=2
compiled "$tmp/jax.m.pir" model=2
# on JAX's own inputs, whose ids run past the table both ways (19 reads
# the last row, in the last device's part; -16 is 0 after JAX's wrap),
# the partitioned program computes what JAX computed
jax_in=
for a in arg0=ids arg1=table arg2=w arg3=pos; do
  jax_in="$jax_in -i ${a%=*}=$fx/embed.${a#*=}.npy"
done
# shellcheck disable=SC2086 # word splitting wanted: the -i options
"$PARTIR" exec "$tmp/jax.m.pir" --mesh model=2 $jax_in -o "$tmp/jax.m" \
  >/dev/null 2>"$tmp/err"
for k in 0 1; do
  if "$FIXTURE_RUNNER" --npy-near "$tmp/jax.m/result$k.npy" \
    "$fx/embed.expected$k.npy" 1e-5 >"$tmp/near" 2>&1 &&
    grep -q '^ok' "$tmp/near"; then
    ok "...on JAX's inputs, vocabulary parallel on 2 devices: result $k is JAX's"
  else
    not_ok "...on JAX's inputs, vocabulary parallel on 2 devices: result $k is JAX's"
    show "$tmp/near"
    show "$tmp/err"
  fi
done
"$PARTIR" tactic "$tactics/batch.lua" "$fx/embed.mlir" --mesh batch=2 \
  -o "$tmp/jax.b.pir"
check "JAX's embedding model, batch: no collective" \
  test "$(stats "$tmp/jax.b.pir" batch=2)" = "  none"
simulates "$tmp/jax.b.pir" batch=2
compiled "$tmp/jax.b.pir" batch=2
compiled "$fx/embed.mlir"

# JAX's vmap of a lookup (batched_lookup.mlir: 4 tables of 5x3, 4x3 ids):
# one gather whose batching dims pair each table with its ids.  Split
# along that batch, each device looks up in its own 2 tables: nothing
# moves (the ids are cut to the device's 2 rows where they are)
"$PARTIR" tactic "$tactics/batch.lua" "$fx/batched_lookup.mlir" --mesh batch=2 \
  -o "$tmp/vmap.b.pir"
check "JAX's batched lookup, batch: the batching dims carry the split (tile 0)" \
  grep -qF 'partir.tile 0 (%r : !partir.range<4,2> @"batch")' "$tmp/vmap.b.pir"
check "...no collective" test "$(stats "$tmp/vmap.b.pir" batch=2)" = "  none"
simulates "$tmp/vmap.b.pir" batch=2
compiled "$tmp/vmap.b.pir" batch=2

done_testing
