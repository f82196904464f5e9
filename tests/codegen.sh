#!/bin/sh
# Compiled execution on one device (codegen/): 'partir exec' must give
# exactly what the reference interpreter ('partir run') gives, bit for
# bit (the .npy files of --output compared with cmp), because the code
# generator mirrors the interpreter's arithmetic (docs/codegen.md).
#
#   - every program of tests/fixtures/kernels.test (the interpreter's
#     kernel tests, values from NumPy), tiles and sums included;
#   - the examples and generated models (MLP, transformer layer, a
#     12-layer transformer) on random inputs (--seed), and partitioned
#     ones (mlp_tiled.pir, a 4-layer transformer after batch, Megatron
#     and ZeRO tactics), whose regions run as loops on one device;
#   - with --mesh, the program lowered and each device's program
#     compiled, run on a thread per device (the simulator's collectives):
#     the global results again equal the interpreter's;
#   - a device's program given alone (SPMD text) is refused, saying what
#     to give;
#   - 'partir compile' shows the optimized IR and the host's assembly,
#     and refuses an unknown --emit.
. "$top_srcdir/tests/tap.sh"
PARTIR=${PARTIR:-$top_builddir/repl/partir}
mesh=

# same NAME FILE [ARGS...]: exec and run write the same .npy files
# (exec with --mesh $mesh when 'mesh' is set).
same() {
  name=$1
  file=$2
  shift 2
  rm -rf "$tmp/run" "$tmp/exec"
  mkdir -p "$tmp/run" "$tmp/exec"
  if ! $VALGRIND "$PARTIR" run "$file" --output "$tmp/run" "$@" \
    >/dev/null 2>"$tmp/err"; then
    not_ok "$name: the interpreter runs it"
    show "$tmp/err"
    return
  fi
  if ! $VALGRIND "$PARTIR" exec "$file" --output "$tmp/exec" \
    ${mesh:+--mesh "$mesh"} "$@" \
    >/dev/null 2>"$tmp/err"; then
    not_ok "$name: compiled, it runs"
    show "$tmp/err"
    return
  fi
  for f in "$tmp/run"/*.npy; do
    if ! cmp -s "$f" "$tmp/exec/$(basename "$f")"; then
      not_ok "$name: compiled, $(basename "$f") differs from the interpreter's"
      return
    fi
  done
  ok "$name: compiled, its results equal the interpreter's bit for bit"
}

# The kernel fixtures, one file each.
mkdir -p "$tmp/kernels"
awk -v dir="$tmp/kernels" '
  /^%%RUN / { file = dir "/" $2 ".pir"; copy = 1; next }
  /^%%/ { copy = 0 }
  copy { print > file }' "$top_srcdir/tests/fixtures/kernels.test"
compiled=0
for file in "$tmp/kernels"/*.pir; do
  name=$(basename "$file" .pir)
  before=$failed
  same "kernels/$name" "$file"
  [ "$failed" = "$before" ] && compiled=$((compiled + 1))
done
# 154 programs, 18 of them with tiles and sums (counted when written)
check "kernel fixtures: all $compiled compiled and agree (154)" \
  test "$compiled" -eq 154

# Examples and models, on random inputs.
same "examples/mlp.pir" "$top_srcdir/examples/mlp.pir" --seed 3
same "examples/transformer_layer.pir" \
  "$top_srcdir/examples/transformer_layer.pir" --seed 4
lua5.4 "$top_srcdir/examples/models/transformer.lua" --layers 12 >"$tmp/t12.pir"
same "12-layer transformer" "$tmp/t12.pir" --seed 5
lua5.4 "$top_srcdir/examples/models/mlp.lua" --layers 8 --batch 16 \
  --width 64 >"$tmp/mlp8.pir"
same "8-layer MLP" "$tmp/mlp8.pir" --seed 6

# Partitioned programs run on one device: their tiles and sums are loops.
same "examples/mlp_tiled.pir" "$top_srcdir/examples/mlp_tiled.pir" --seed 7
mesh=batch=2
same "examples/mlp_tiled.pir on batch=2" "$top_srcdir/examples/mlp_tiled.pir" \
  --seed 7
mesh=
lua5.4 "$top_srcdir/examples/models/transformer.lua" --layers 4 --batch 4 \
  --seq 8 --d_model 32 --heads 4 --d_ff 64 >"$tmp/t4.pir"
for tactic in batch-megatron megatron-batch batch-megatron-zero; do
  if "$PARTIR" tactic "$top_srcdir/tests/bench/tactics/$tactic.lua" \
    "$tmp/t4.pir" --mesh batch=2,model=2 -o "$tmp/t4-$tactic.pir" \
    2>"$tmp/err"; then
    same "4-layer transformer, $tactic" "$tmp/t4-$tactic.pir" --seed 8
    # lowered on its mesh: four devices, each on its thread, compiled
    mesh=batch=2,model=2
    same "4-layer transformer, $tactic, on batch=2,model=2" \
      "$tmp/t4-$tactic.pir" --seed 8
    mesh=
  else
    not_ok "4-layer transformer, $tactic: the tactic runs"
    show "$tmp/err"
  fi
done

# compile: the code.
"$PARTIR" compile "$top_srcdir/examples/mlp.pir" >"$tmp/ll" 2>"$tmp/err"
check "compile: the optimized IR defines the entry" \
  grep -q '^define void @partir_main(ptr' "$tmp/ll"
"$PARTIR" compile "$top_srcdir/examples/mlp.pir" --emit asm >"$tmp/s" 2>&1
check "compile --emit asm: the host's assembly of the entry" \
  grep -q '^partir_main:' "$tmp/s"
"$PARTIR" compile "$top_srcdir/examples/mlp.pir" --emit obj >/dev/null \
  2>"$tmp/err"
status=$?
check "compile --emit obj: refused as a usage error (exit 2)" test $status -eq 2
check "...saying what --emit takes" grep -q 'must be llvm or asm' "$tmp/err"
"$PARTIR" lower "$top_srcdir/examples/mlp_tiled.pir" --mesh batch=2 \
  -o "$tmp/spmd.pir" 2>/dev/null
"$PARTIR" exec "$tmp/spmd.pir" >"$tmp/out" 2>"$tmp/err"
status=$?
check "exec of a device's program (SPMD text) without its global program: exit 1" \
  test $status -eq 1
check "...saying what to give, nothing printed" \
  sh -c "grep -q \"spmd.pir: this is a device's program: give exec the program before lowering, and its --mesh\" '$tmp/err' && ! test -s '$tmp/out'"
done_testing
