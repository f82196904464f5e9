#!/bin/sh
# StableHLO export (docs/stablehlo.md, "Export").  The shardings partir
# writes for JAX are the layouts of the lowering, checked by hand here
# (Shardy's and GSPMD's notations, derived below from the mesh, device
# ids row-major over it); each device's program has the collectives of
# the lowering over the replica groups derived by hand; an export
# imports back to a program that computes what the original computes
# and exports to the same text again; mlir-opt parses every export;
# refusals say why and write nothing.  With JAX (PARTIR_JAX_PYTHON, a
# python that imports jax), tests/export-jax.py also runs the exports
# with XLA and jax.jit with the shardings on 8 simulated devices.
. "$top_srcdir/tests/tap.sh"
ex=$top_srcdir/examples
fx=$top_srcdir/tests/fixtures
tactics=$top_srcdir/tactics
mlp=$ex/mlp_jax.mlir
bm=$top_srcdir/tests/bench/tactics/batch-megatron.lua

# has FILE TEXT DESC: FILE holds TEXT (a fixed string).
has() {
  if grep -qF -- "$2" "$1"; then ok "$3"; else
    not_ok "$3"
    echo "#   expected: $2"
    grep -F 'func.func' "$1" | show /dev/stdin
  fi
}

# count FILE TEXT: how many lines of FILE hold TEXT.
count() { grep -cF -- "$1" "$2"; }

# ---------------------------------------- Megatron MLP on model=2, by hand
# Megatron splits the first weight's columns and the second weight's
# rows over model; x and the result are whole on every device.
$VALGRIND "$PARTIR" export "$mlp" --mesh model=2 --tactic "$tactics/megatron.lua" \
  -o "$tmp/mt.mlir" 2>"$tmp/err"
check "export --emit stablehlo (the default) of the Megatron MLP" test -s "$tmp/mt.mlir"
has "$tmp/mt.mlir" '"sdy.mesh"() <{mesh = #sdy.mesh<["model"=2]>, sym_name = "mesh"}> : () -> ()' \
  "the mesh is declared once, as Shardy writes it"
has "$tmp/mt.mlir" 'mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32' \
  "the module says how many partitions"
has "$tmp/mt.mlir" '%x: tensor<16x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}' \
  "x is replicated: [{}, {}]"
has "$tmp/mt.mlir" '%w0: tensor<64x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>}' \
  "w0's columns are split over model: [{}, {\"model\"}]"
has "$tmp/mt.mlir" '%w1: tensor<64x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"model"}, {}]>}' \
  "w1's rows are split over model: [{\"model\"}, {}]"
has "$tmp/mt.mlir" '-> (tensor<16x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>})' \
  "the result is replicated"
check "the program is the one loaded, not the partitioned one: two dot_generals, no collective" \
  test "$(count '"stablehlo.dot_general"' "$tmp/mt.mlir"):$(grep -c 'all_reduce\|slice' "$tmp/mt.mlir")" = 2:0
"$PARTIR" export "$mlp" --mesh model=2 --tactic "$tactics/megatron.lua" \
  --emit stablehlo-gspmd -o "$tmp/mt.gspmd.mlir"
# devices 0, 1 along model; a split over all of them: <=[2]
has "$tmp/mt.gspmd.mlir" '%w0: tensor<64x64xf32> {mhlo.sharding = "{devices=[1,2]<=[2]}"}' \
  "GSPMD: w0 is {devices=[1,2]<=[2]}"
has "$tmp/mt.gspmd.mlir" '%w1: tensor<64x64xf32> {mhlo.sharding = "{devices=[2,1]<=[2]}"}' \
  "GSPMD: w1 is {devices=[2,1]<=[2]}"
has "$tmp/mt.gspmd.mlir" '%x: tensor<16x64xf32> {mhlo.sharding = "{replicated}"}' \
  "GSPMD: x is {replicated}"
check "GSPMD: no Shardy mesh" test "$(count sdy "$tmp/mt.gspmd.mlir")" -eq 0
$VALGRIND "$PARTIR" export "$mlp" --mesh model=2 --tactic "$tactics/megatron.lua" \
  --emit stablehlo-spmd -o "$tmp/mt.spmd.mlir"
check "each device's program: exactly one stablehlo.all_reduce" \
  test "$(count '"stablehlo.all_reduce"' "$tmp/mt.spmd.mlir")" -eq 1
has "$tmp/mt.spmd.mlir" 'replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>' \
  "...over the group of both devices"
has "$tmp/mt.spmd.mlir" 'channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>' \
  "...on a channel, as JAX writes it"
has "$tmp/mt.spmd.mlir" 'use_global_device_ids}> ({' "...with device ids and its sum as a region"
has "$tmp/mt.spmd.mlir" '"stablehlo.add"' "...which adds"
check "...and no other collective" \
  test "$(grep -c 'all_gather\|reduce_scatter\|all_to_all\|partition_id' "$tmp/mt.spmd.mlir")" -eq 0
has "$tmp/mt.spmd.mlir" '%w0: tensor<64x32xf32> {mhlo.sharding = "{manual}"}, %w1: tensor<32x64xf32> {mhlo.sharding = "{manual}"}' \
  "a device takes its own columns of w0 and rows of w1, {manual} for XLA"
has "$tmp/mt.spmd.mlir" '//   %w0: tensor<64x64xf32> #sdy.sharding<@mesh, [{}, {"model"}]>' \
  "a comment says what each argument is the part of"

# ---------------------------------- batch and Megatron on batch=2,model=2
# device id = 2 * batch + model.  x: rows over batch, copies over model:
# tiles [2,1] x 2 copies, devices in order (batch major): <=[4].  w0:
# columns over model, copies over batch: the tile assignment lists model
# first, then batch: [[0,2],[1,3]], the iota [2,2] transposed.
"$PARTIR" export "$mlp" --mesh batch=2,model=2 --tactic "$bm" -o "$tmp/bm.mlir"
has "$tmp/bm.mlir" '%x: tensor<16x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"batch"}, {}]>}' \
  "batch + Megatron: x's rows over batch"
has "$tmp/bm.mlir" '%w0: tensor<64x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>}' \
  "...w0's columns over model"
has "$tmp/bm.mlir" '-> (tensor<16x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"batch"}, {}]>})' \
  "...the result's rows over batch"
"$PARTIR" export "$mlp" --mesh batch=2,model=2 --tactic "$bm" --emit stablehlo-gspmd \
  -o "$tmp/bm.gspmd.mlir"
has "$tmp/bm.gspmd.mlir" '%x: tensor<16x64xf32> {mhlo.sharding = "{devices=[2,1,2]<=[4] last_tile_dim_replicate}"}' \
  "GSPMD: x is {devices=[2,1,2]<=[4] last_tile_dim_replicate}"
has "$tmp/bm.gspmd.mlir" '%w0: tensor<64x64xf32> {mhlo.sharding = "{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}"}' \
  "GSPMD: w0 is {devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}"
has "$tmp/bm.gspmd.mlir" '%w1: tensor<64x64xf32> {mhlo.sharding = "{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}"}' \
  "GSPMD: w1 is {devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}"
"$PARTIR" export "$mlp" --mesh batch=2,model=2 --tactic "$bm" --emit stablehlo-spmd \
  -o "$tmp/bm.spmd.mlir"
check "batch + Megatron, each device: exactly one all_reduce" \
  test "$(count '"stablehlo.all_reduce"' "$tmp/bm.spmd.mlir")" -eq 1
has "$tmp/bm.spmd.mlir" 'replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>' \
  "...over model: devices that differ only in it, [[0, 1], [2, 3]]"
has "$tmp/bm.spmd.mlir" 'mhlo.num_partitions = 4 : i32' "...on 4 partitions"

# ------------------------------------------------- layouts, by hand
lay=$fx/export/layouts.pir
gspmd_of() { # gspmd_of MESH SCRIPT: the GSPMD strings of x, y (arguments)
  "$PARTIR" export "$lay" --mesh "$1" --do "$2" --emit stablehlo-gspmd |
    sed -n 's/.*@main(\(.*\)) -> .*/\1/p' | grep -o 'sharding = "[^"]*"' |
    sed 's/sharding = //' | tr '\n' ' '
}
# rows over model, columns over batch: tile (i, j) on the device with
# model i, batch j, id 2j + i: [[0, 2], [1, 3]]
check "rows over model, columns over batch: {devices=[2,2]<=[2,2]T(1,0)}" \
  test "$(gspmd_of batch=2,model=2 'arg-tile 0 0 4 model; arg-tile 0 1 4 batch; propagate')" = \
  '"{devices=[2,2]<=[2,2]T(1,0)}" "{replicated}" '
# rows over model then batch: tile i = 2 model + batch, devices 0 2 1 3
check "rows over model, then batch: {devices=[4,1]<=[2,2]T(1,0)}" \
  test "$(gspmd_of batch=2,model=2 'arg-tile 0 0 4 model; tile %1 0 2 batch; propagate')" = \
  '"{devices=[4,1]<=[2,2]T(1,0)}" "{replicated}" '
"$PARTIR" export "$lay" --mesh batch=2,model=2 \
  --do 'arg-tile 0 0 4 model; tile %1 0 2 batch; propagate' -o "$tmp/two.mlir"
has "$tmp/two.mlir" '[{"model", "batch"}, {}]' "...which Shardy writes [{\"model\", \"batch\"}, {}]"
# a=2,b=2,c=2, id 4a + 2b + c; rows over b, columns over c, copies over
# a: tile (i, j, k) on id 2i + j + 4k, the iota [2,4] transposed (b and
# c stay together: one dimension of 4)
check "three axes, rows over b, columns over c: {devices=[2,2,2]<=[2,4]T(1,0) last_tile_dim_replicate}" \
  test "$(gspmd_of a=2,b=2,c=2 'arg-tile 0 0 4 b; arg-tile 0 1 4 c; propagate')" = \
  '"{devices=[2,2,2]<=[2,4]T(1,0) last_tile_dim_replicate}" "{replicated}" '
# an axis of one device splits nothing and copies nothing
check "an axis of one device: {devices=[2,1]<=[2]} beside it, {replicated} on it" \
  test "$(gspmd_of one=1,b=2 'arg-tile 0 0 4 b; arg-tile 1 0 4 one; propagate')" = \
  '"{devices=[2,1]<=[2]}" "{replicated}" '

# ---------------------------------------------------- collectives, by hand
spmd=$fx/spmd
base_rules="--rules $top_srcdir/rules/ops.rules --rules $top_srcdir/rules/partir.rules"
"$PARTIR" export "$spmd/reduce_scatter.pir" --mesh model=2 --emit stablehlo-spmd -o "$tmp/rs.mlir"
has "$tmp/rs.mlir" '"stablehlo.reduce_scatter"(' "a sum then a chunk: stablehlo.reduce_scatter"
has "$tmp/rs.mlir" 'replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, scatter_dimension = 0 : i64, use_global_device_ids' \
  "...scattering rows"
# model first: id 2 model + other; the groups over model hold 0,2 and 1,3
"$PARTIR" export "$spmd/all_to_all.pir" --mesh model=2,other=2 --emit stablehlo-spmd -o "$tmp/a2a.mlir"
has "$tmp/a2a.mlir" 'concat_dimension = 1 : i64, replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, split_count = 2 : i64, split_dimension = 0 : i64' \
  "columns then rows: stablehlo.all_to_all over model, groups [[0, 2], [1, 3]] when model is the major axis"
# shell word splitting wanted: the rule options
# shellcheck disable=SC2086
"$PARTIR" export "$spmd/all_to_all.pir" --mesh model=2 --emit stablehlo-spmd $base_rules -o "$tmp/ag.mlir"
has "$tmp/ag.mlir" '"stablehlo.all_gather"(%0) <{all_gather_dim = 1 : i64' \
  "without the [spmd] rules: an all_gather of the columns"
has "$tmp/ag.mlir" '"stablehlo.partition_id"() : () -> tensor<ui32>' \
  "...then the device's rows: from partition_id"
has "$tmp/ag.mlir" '"stablehlo.dynamic_slice"' "...by a dynamic_slice"
"$PARTIR" export "$spmd/two_axis_sum.pir" --mesh a=2,b=2 --emit stablehlo-spmd -o "$tmp/two_axis.mlir"
has "$tmp/two_axis.mlir" 'replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, scatter_dimension = 0' \
  "a sum over a and b, then rows over a: reduce_scatter over a (ids 2a + b: [[0, 2], [1, 3]])"
has "$tmp/two_axis.mlir" 'replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, use_global_device_ids' \
  "...then all_reduce over b ([[0, 1], [2, 3]])"
check "every collective has a channel of its own" \
  test "$(grep -o 'handle = [0-9][0-9]*' "$tmp/two_axis.mlir" | tr '\n' ' ')" = "handle = 1 handle = 2 "

# --------------------------------------------------- loops are unrolled
"$PARTIR" export "$fx/export/loops.pir" --mesh model=2 -o "$tmp/loops.mlir"
# the sum over k (4 parts) inside each of 2 tiles over model, then a tile
# of 4 row parts: 8 products, 4 tanh
check "loops: the sum's body once per part, in every part of the tile" \
  test "$(count '"stablehlo.dot_general"' "$tmp/loops.mlir"):$(count '"stablehlo.tanh"' "$tmp/loops.mlir")" = 8:4
"$PARTIR" export "$fx/export/loops.pir" --mesh model=2 --emit stablehlo-spmd -o "$tmp/loops.spmd.mlir"
check "...and in each device's program (one part of the tile: 4 products)" \
  test "$(count '"stablehlo.dot_general"' "$tmp/loops.spmd.mlir")" -eq 4

# ----------------------------------------------------------- round trips
# export, import: the same values as the original (the interpreter on
# both, the same seed); import, export, import again: the same term; and
# for a program without loops, the same text at once.  The imports here
# leave the shardings alone (--shardings ignore), so each gives the
# program as written and the exports run the same tactic; that the
# shardings come back is checked after.
roundtrip() { # roundtrip LABEL FILE same|term EXPORT-OPTIONS...
  label=$1 file=$2 text=$3
  shift 3
  out=$tmp/rt.$(basename "$file")
  "$PARTIR" export "$file" "$@" -o "$out.mlir" 2>"$tmp/err" &&
    "$PARTIR" import "$out.mlir" --shardings ignore -o "$out.pir" &&
    "$PARTIR" export "$out.pir" "$@" -o "$out.again.mlir" &&
    "$PARTIR" import "$out.again.mlir" --shardings ignore -o "$out.again.pir"
  check "$label: export, import, export, import gives the same term" \
    sh -c "test -s '$out.pir' && cmp -s '$out.pir' '$out.again.pir'"
  [ "$text" = same ] &&
    check "$label: export, import, export gives the same text" \
      cmp -s "$out.mlir" "$out.again.mlir"
}
roundtrip "every operator" "$fx/export/ops.pir" same
roundtrip "the MLP (Megatron's shardings)" "$mlp" same --mesh model=2 --tactic "$tactics/megatron.lua"
roundtrip "loops, unrolled" "$fx/export/loops.pir" term --mesh model=2
roundtrip "bitwise operators and every reduction" "$fx/export/bitwise.pir" same
check "...and the export computes what the original computes" \
  sh -c "'$PARTIR' run '$fx/export/bitwise.pir' --seed 3 >'$tmp/bw.orig' &&
         '$PARTIR' run '$tmp/rt.bitwise.pir.mlir' --seed 3 >'$tmp/bw.back' &&
         test -s '$tmp/bw.orig' && cmp -s '$tmp/bw.orig' '$tmp/bw.back'"
has "$tmp/rt.bitwise.pir.mlir" '"stablehlo.shift_right_arithmetic"(%i, %i)' \
  "shift_right_arithmetic is written as StableHLO's"
has "$tmp/rt.bitwise.pir.mlir" 'value = dense<4294967295> : tensor<ui32>' \
  "a ui32 reduce_and starts from every bit set"
# the export imported with its shardings applied lowers to the layouts
# the tactic gave: the signature's dist annotations are the same
dists() { "$PARTIR" lower "$1" --mesh model=2 | head -n 1 | grep -o '{dist[^}]*}'; }
"$PARTIR" tactic "$tactics/megatron.lua" "$mlp" --mesh model=2 -o "$tmp/mlp.m.pir"
dists "$tmp/mlp.m.pir" >"$tmp/d1"
dists "$tmp/rt.$(basename "$mlp").mlir" >"$tmp/d2"
check "the MLP's export, imported with its shardings, lowers to the tactic's layouts" \
  sh -c "test -s '$tmp/d1' && cmp -s '$tmp/d1' '$tmp/d2'"
"$PARTIR" run "$fx/export/ops.pir" --seed 4 -o "$tmp/ops.run" >/dev/null
"$PARTIR" run "$tmp/rt.ops.pir.pir" --seed 4 -o "$tmp/ops.rt.run" >/dev/null
same=0 files=0
for f in "$tmp"/ops.run/*.npy; do
  files=$((files + 1))
  cmp -s "$f" "$tmp/ops.rt.run/$(basename "$f")" && same=$((same + 1))
done
check "every operator: the import of the export computes the same values, bit for bit ($same of 17 results)" \
  test "$same:$files" = 17:17
# the unrolled sum adds its parts one by one, rounding each time
"$PARTIR" run "$fx/export/loops.pir" --seed 4 -o "$tmp/loops.run" >/dev/null
"$PARTIR" run "$tmp/rt.loops.pir.pir" --seed 4 -o "$tmp/loops.rt.run" >/dev/null
for r in result0 result1; do
  if "$FIXTURE_RUNNER" --npy-near "$tmp/loops.rt.run/$r.npy" "$tmp/loops.run/$r.npy" 1e-6 >"$tmp/near" &&
    grep -q '^ok' "$tmp/near"; then
    ok "loops: the unrolled import computes $r within 1e-6"
  else
    not_ok "loops: the unrolled import computes $r within 1e-6"
    show "$tmp/near"
  fi
done
# what JAX computed (tests/fixtures/stablehlo: gen_jax.py's mlp_relu)
s=$fx/stablehlo
"$PARTIR" run "$tmp/rt.mlp_jax.mlir.pir" -i x="$s/mlp_relu.x.npy" -i w0="$s/mlp_relu.w0.npy" \
  -i w1="$s/mlp_relu.w1.npy" -o "$tmp/mlp.run" >/dev/null 2>"$tmp/err"
if "$FIXTURE_RUNNER" --npy-near "$tmp/mlp.run/result0.npy" "$s/mlp_relu.expected0.npy" 1e-5 >"$tmp/near" &&
  grep -q '^ok' "$tmp/near"; then
  ok "the MLP, JAX's export through partir's export and import, computes what JAX computed"
else
  not_ok "the MLP, JAX's export through partir's export and import, computes what JAX computed"
  show "$tmp/near"
  show "$tmp/err"
fi

# --------------------------------------------- the REPL and Lua agree
"$PARTIR" export "$mlp" --mesh model=2 --tactic "$tactics/megatron.lua" --emit stablehlo-spmd \
  -o "$tmp/cli.spmd.mlir"
printf 'set mesh model=2\ntactic megatron\nexport --emit stablehlo-spmd %s\nexport --emit nonsense\n' \
  "$tmp/repl.spmd.mlir" | "$PARTIR_REPL" "$mlp" >"$tmp/repl.out" 2>"$tmp/repl.err"
check "REPL 'export --emit stablehlo-spmd FILE' writes what the CLI writes" \
  cmp -s "$tmp/cli.spmd.mlir" "$tmp/repl.spmd.mlir"
check "...and refuses an unknown form, naming the three" \
  grep -qF "export: --emit takes stablehlo, stablehlo-gspmd or stablehlo-spmd, not 'nonsense'" "$tmp/repl.err"
cat >"$tmp/export.lua" <<'LUA'
-- a tactic that writes s:export of Megatron's result to options.out
return function(s, mesh, o)
  local megatron = dofile(o.tactics .. "/megatron.lua")
  local f = assert(io.open(o.out, "w"))
  f:write(megatron(s, mesh, {}):export("model=2"))
  f:close()
  return s
end
LUA
"$PARTIR" tactic "$tmp/export.lua" "$mlp" --mesh model=2 --set out="$tmp/lua.mlir" \
  --set tactics="$tactics" >/dev/null 2>"$tmp/lua.err"
check "Lua's s:export(mesh) writes what the CLI writes" \
  cmp -s "$tmp/lua.mlir" "$tmp/mt.mlir"

# ----------------------------------------------------------- refusals
"$PARTIR" lower "$mlp" --mesh model=2 -o "$tmp/device.spmd" 2>/dev/null
"$PARTIR" export "$tmp/device.spmd" --mesh model=2 -o "$tmp/device.mlir" 2>"$tmp/err"
check "SPMD text: --emit stablehlo refuses it (a device's program has no global shardings)" \
  sh -c "grep -qF \"this is a device's program (SPMD text): only stablehlo-spmd exports it\" '$tmp/err' &&
         ! test -e '$tmp/device.mlir'"
check "...--emit stablehlo-spmd exports it" \
  quiet "$PARTIR" export "$tmp/device.spmd" --mesh model=2 --emit stablehlo-spmd
"$PARTIR" export "$mlp" --emit hlo 2>"$tmp/err"
check "an unknown --emit is a usage error (status 2)" test $? -eq 2
check "...that names the forms" \
  grep -qF "export --emit takes stablehlo, stablehlo-gspmd or stablehlo-spmd, not 'hlo'" "$tmp/err"
"$PARTIR" export "$mlp" --mesh model=2 --set a=b 2>"$tmp/err"
check "--set without --tactic is a usage error (status 2)" \
  sh -c "test $? -eq 2 && grep -qF 'export --set gives the --tactic options' '$tmp/err'"
cat >"$tmp/long.pir" <<'EOF'
func @long(%x: tensor<2097152xf32>) -> tensor<2097152xf32> {
  %0 = partir.tile 0 (%r : !partir.range<2097152,1>) {
    %1 = partir.slice 0 %x[%r]
    %2 = neg(%1)
    partir.yield %2
  }
  return %0
}
EOF
"$PARTIR" export "$tmp/long.pir" -o "$tmp/long.mlir" 2>"$tmp/err"
check "a loop of 2^21 parts is not unrolled: it says so and writes nothing" \
  sh -c "grep -qF 'a loop of 2097152 parts: more than the 1000000 operations an export writes' '$tmp/err' &&
         ! test -e '$tmp/long.mlir'"
"$PARTIR" export "$spmd/reduce_scatter.pir" --mesh batch=2 -o "$tmp/nomodel.mlir" 2>"$tmp/err"
check "a mesh without the program's axis: cannot export, nothing written" \
  sh -c "grep -qF 'cannot export on mesh batch=2: a tile is bound to axis \"model\", which the mesh does not have' '$tmp/err' &&
         ! test -e '$tmp/nomodel.mlir'"
"$PARTIR" export "$mlp" --mesh model=100 --tactic "$tactics/megatron.lua" -o "$tmp/three.mlir" 2>"$tmp/err"
check "a tactic that fails: its error, nothing written" \
  sh -c "grep -q 'tactic' '$tmp/err' && ! test -e '$tmp/three.mlir'"

# -------------------------------------------------- mlir-opt parses all
MLIR_OPT=${MLIR_OPT:-mlir-opt-19}
if command -v "$MLIR_OPT" >/dev/null 2>&1; then
  n_files=0
  bad=
  for f in "$tmp"/*.mlir; do
    n_files=$((n_files + 1))
    "$MLIR_OPT" --allow-unregistered-dialect "$f" >/dev/null 2>"$tmp/opt.err" ||
      bad="$bad $(basename "$f")"
  done
  check "mlir-opt parses and verifies every export above ($n_files files)${bad:+; not:$bad}" \
    test -z "$bad" -a "$n_files" -ge 20
else
  ok "# SKIP $MLIR_OPT not installed (Debian: mlir-19-tools), the exports are not parsed by MLIR"
fi

# ------------------------------------------------- JAX and XLA run them
# PARTIR_JAX_PYTHON, else the environment tests/referee.sh (earlier in
# TESTS) made once it is complete (its stamp written), else python3
venv=${abs_top_builddir:-.}/tests/.venv
JAX_PYTHON=${PARTIR_JAX_PYTHON:-python3}
[ -z "${PARTIR_JAX_PYTHON:-}" ] && [ -f "$venv/.requirements" ] &&
  JAX_PYTHON=$venv/bin/python
if "$JAX_PYTHON" -c 'import jax' >/dev/null 2>&1; then
  mkdir -p "$tmp/jax"
  "$JAX_PYTHON" "$top_srcdir/tests/export-jax.py" "$PARTIR" "$top_srcdir" "$tmp/jax" \
    >"$tmp/jax.out" 2>"$tmp/jax.err"
  status=$?
  while IFS= read -r line; do
    case $line in
    "ok - "*) ok "JAX: ${line#ok - }" ;;
    "not ok - "*) not_ok "JAX: ${line#not ok - }" ;;
    "#"*) echo "$line" ;;
    esac
  done <"$tmp/jax.out"
  check "tests/export-jax.py ran to its end" test "$status" -eq 0 -a -s "$tmp/jax.out"
  [ "$status" -eq 0 ] || grep -v '^W[0-9]' "$tmp/jax.err" | tail -20 | show /dev/stdin
else
  ok "# SKIP no JAX in $JAX_PYTHON (set PARTIR_JAX_PYTHON to a python with jax): XLA does not run the exports"
fi

# comparisons of unsigned integers are written UNSIGNED, which XLA's
# verifier requires of ui8 and ui32 (a mask, a lookup's indices)
cat >"$tmp/umask.pir" <<'PIR'
func @umask(%m: tensor<4x8xui8>, %x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %z = constant() {value = 0} : tensor<4x8xui8>
  %c = compare(%m, %z) {direction = NE}
  %zf = constant() {value = 0.0} : tensor<4x8xf32>
  %y = select(%c, %x, %zf)
  return %y
}
PIR
"$PARTIR" export "$tmp/umask.pir" --mesh batch=2 --tactic "$tactics/batch.lua" \
  -o "$tmp/umask.mlir" 2>"$tmp/err"
check "a comparison of ui8 is exported UNSIGNED" \
  grep -q 'comparison_type UNSIGNED>, comparison_direction = #stablehlo<comparison_direction NE>}> : (tensor<2x8xui8>\|comparison_type UNSIGNED>, comparison_direction = #stablehlo<comparison_direction NE>}> : (tensor<4x8xui8>' "$tmp/umask.mlir"
done_testing
