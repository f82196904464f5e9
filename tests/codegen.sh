#!/bin/sh
# Compiled execution (codegen/) against the reference interpreter
# ('partir run'), the .npy files of --output compared:
#
#   - with --exact, bit for bit (cmp): the code generator then mirrors
#     the interpreter's arithmetic (docs/codegen.md);
#   - by default (fast arithmetic: each value in its own type, FMA,
#     reassociated reductions, polynomial transcendentals) within
#     (8 + K + 8 T) eps of the largest magnitude of each result, where
#     eps is the unit of the least precise float type in the program
#     (2^-7 bf16, 2^-10 f16, 2^-23 f32, 2^-52 f64), K its largest dimension (a bound
#     on any sum's length) and T 1 when it holds a transcendental;
#     integers exactly (fixture-runner --npy-near).
#
# On:
#   - every program of tests/fixtures/kernels.test (the interpreter's
#     kernel tests, values from NumPy), tiles and sums included;
#   - the bitwise operators (tests/fixtures/export/bitwise.pir);
#   - the examples and generated models (MLP, transformer layer, a
#     12-layer transformer) on random inputs (--seed), and partitioned
#     ones (mlp_tiled.pir, a 4-layer transformer after batch, Megatron
#     and ZeRO tactics), whose regions run as loops on one device;
#   - with --mesh, the program lowered and each device's program
#     compiled, run on a thread per device: the global results again
#     equal the interpreter's (the compositions on batch=2,model=2, and
#     batch, Megatron and ZeRO each on meshes of 1, 2 and 4 devices);
#   - a device's program given alone (SPMD text) is refused, saying what
#     to give;
#   - 'partir compile' shows the optimized IR, the host's assembly, an
#     object and the fusion decision, and refuses an unknown --emit.
. "$top_srcdir/tests/tap.sh"
. "$top_srcdir/tests/compiled.sh"
PARTIR=${PARTIR:-$top_builddir/repl/partir}
mesh=


# same NAME FILE [ARGS...]: exec --exact writes the interpreter's .npy
# files bit for bit, and exec (fast) writes them within the tolerance
# (exec with --mesh $mesh when 'mesh' is set).
same() {
  name=$1
  file=$2
  shift 2
  rm -rf "$tmp/run" "$tmp/exact" "$tmp/fast" "$tmp/blas"
  mkdir -p "$tmp/run"
  if ! $VALGRIND "$PARTIR" run "$file" --output "$tmp/run" "$@" \
    >/dev/null 2>"$tmp/err"; then
    not_ok "$name: the interpreter runs it"
    show "$tmp/err"
    return
  fi
  for mode in exact fast $blas; do
    case $mode in
    exact) flags=--exact ;;
    blas) flags="--blas openblas" ;;
    *) flags= ;;
    esac
    mkdir -p "$tmp/$mode"
    if ! $VALGRIND "$PARTIR" exec "$file" --output "$tmp/$mode" \
      ${mesh:+--mesh "$mesh"} $flags "$@" \
      >/dev/null 2>"$tmp/err"; then
      not_ok "$name: compiled ($mode), it runs"
      show "$tmp/err"
      return
    fi
  done
  for f in "$tmp/run"/*.npy; do
    if ! cmp -s "$f" "$tmp/exact/$(basename "$f")"; then
      not_ok "$name: compiled exact, $(basename "$f") differs from the interpreter's"
      return
    fi
  done
  rel=$(tolerance "$file")
  for mode in fast $blas; do
    near "$name: compiled $mode" "$tmp/run" "$tmp/$mode" "$rel" || return
  done
  ok "$name: compiled, exact bit for bit, fast${blas:+ and with OpenBLAS} within $rel"
}

# The kernel fixtures, one file each.
split_kernels "$tmp/kernels"
compiled=0
for file in "$tmp/kernels"/*.pir; do
  name=$(basename "$file" .pir)
  before=$failed
  same "kernels/$name" "$file"
  [ "$failed" = "$before" ] && compiled=$((compiled + 1))
done
# 215 programs, 20 of them with tiles and sums (counted when written)
check "kernel fixtures: all $compiled compiled and agree (215)" \
  test "$compiled" -eq 215

# Examples and models, on random inputs; and with OpenBLAS's products
# where partir has it.
if "$PARTIR" exec "$top_srcdir/examples/mlp.pir" --blas openblas >/dev/null \
  2>&1; then
  blas=blas
else
  echo "# OpenBLAS: not built in, its runs skipped"
fi
same "examples/mlp.pir" "$top_srcdir/examples/mlp.pir" --seed 3
same "examples/transformer_layer.pir" \
  "$top_srcdir/examples/transformer_layer.pir" --seed 4
# shifts by amounts in range and out of it (random i32 in [-10, 10]),
# bitwise operations on ui32, i8 and i1, every reduction
same "bitwise operators" "$top_srcdir/tests/fixtures/export/bitwise.pir" --seed 6
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

# Each tactic on its own over meshes of 1, 2 and 4 devices, each device
# on its thread: the transformer and the MLP example.
# on_mesh PROGRAM TACTIC MESH FILE: FILE lowered on MESH, run and compared
on_mesh() {
  mesh=$3
  same "$1, $2 on $3" "$4" --seed 9
  mesh=
}
each_tactic on_mesh batch:batch=1 batch:batch=2 batch:batch=4 megatron:model=2 \
  megatron:model=4 zero:data=2 zero:data=4

# compile: the code.
"$PARTIR" compile "$top_srcdir/examples/mlp.pir" >"$tmp/ll" 2>"$tmp/err"
check "compile: the optimized IR defines the entry" \
  grep -q '^define void @partir_main(ptr' "$tmp/ll"
"$PARTIR" compile "$top_srcdir/examples/mlp.pir" --emit asm >"$tmp/s" 2>&1
check "compile --emit asm: the host's assembly of the entry" \
  grep -q '^partir_main:' "$tmp/s"
"$PARTIR" compile "$top_srcdir/examples/mlp.pir" --emit obj -o "$tmp/o" \
  2>"$tmp/err"
check "compile --emit obj: an ELF object" \
  sh -c "head -c 4 '$tmp/o' | od -c | grep -q 'E   L   F'"
"$PARTIR" compile "$top_srcdir/examples/transformer_layer.pir" --emit fusion \
  >"$tmp/fusion" 2>"$tmp/err"
# hand-derived from examples/transformer_layer.pir: the softmax's
# subtraction and its broadcast are computed inside exp's loop; the
# variance's square inside its reduction's; the row statistic rsqrt is
# not repeated per column (it keeps its buffer)
check "compile --emit fusion: softmax's exp fuses its shift" \
  grep -qx 'exps = exp fusing scores_max_b broadcast_in_dim, shifted sub; reads scores, scores_max' "$tmp/fusion"
check "...the variance's reduction fuses the square" \
  grep -qx 'ln1_sqsum = reduce_sum fusing ln1_sq mul; reads ln1_xc' "$tmp/fusion"
check "...a row's rsqrt is not broadcast inside the normalization" \
  grep -q '^ln1_rstd = rsqrt' "$tmp/fusion"
"$PARTIR" compile "$top_srcdir/examples/mlp.pir" --emit bogus >/dev/null \
  2>"$tmp/err"
status=$?
check "compile --emit bogus: refused as a usage error (exit 2)" test $status -eq 2
check "...saying what --emit takes" grep -q 'must be llvm, asm, obj or fusion' "$tmp/err"
"$PARTIR" lower "$top_srcdir/examples/mlp_tiled.pir" --mesh batch=2 \
  -o "$tmp/spmd.pir" 2>/dev/null
"$PARTIR" exec "$tmp/spmd.pir" >"$tmp/out" 2>"$tmp/err"
status=$?
check "exec of a device's program (SPMD text) without its global program: exit 1" \
  test $status -eq 1
check "...saying what to give, nothing printed" \
  sh -c "grep -q \"spmd.pir: this is a device's program: compile the program before lowering, on its mesh\" '$tmp/err' && ! test -s '$tmp/out'"
# calibrate: a description of this machine that the cost model loads and
# prices kernels with (the figures themselves are timings: only their
# form is checked); two passes, the figures those of the pass the
# machine slowed least
"$PARTIR" calibrate --devices 2 --runs 1 --passes 2 -o "$tmp/here.hw" >"$tmp/out" 2>"$tmp/err"
status=$?
check "calibrate --devices 2: a description written, nothing on stdout" \
  sh -c "test $status -eq 0 && test -s '$tmp/here.hw' && ! test -s '$tmp/out'"
check "...from two passes, every figure the one pass's it names as the least slowed" sh -c \
  "grep -qx '# pass 2 of 2' '$tmp/here.hw' &&
   k=\$(sed -n 's/^# the figures of pass \([12]\), the least slowed\$/\1/p' '$tmp/here.hw') &&
   test -n \"\$k\" &&
   for key in step_overhead mem_bw peak_flops_f32 kernel_overhead link_latency link_bw; do
     v=\$(sed -n \"s/^\$key=//p\" '$tmp/here.hw')
     awk -v k=\"\$k\" -v key=\"# \$key:\" '/^# pass / { p = \$3 } p == k && index(\$0, key) == 1 { print \$NF }' '$tmp/here.hw' |
       grep -qx \"\${v:-0}\" || exit 1
   done"
# (an overhead the machine shows none of, as a loaded machine may time
# it, is solved as 0: its line is left out, 0 being the figure's default)
check "...every figure, each with how it was measured" sh -c \
  "for k in step_overhead peak_flops_f32 peak_flops_f64 peak_flops_bf16 mem_bw cache_bytes cache_bw kernel_overhead product_overhead gemm_mr gemm_nr link_latency link_bw; do grep -q \"^# \$k: \" '$tmp/here.hw' && { grep -q \"^\$k=[0-9]\" '$tmp/here.hw' || grep -q \"^# \$k: .* -> 0\$\" '$tmp/here.hw'; } || exit 1; done"
check "...named after its file" grep -qx 'name=here' "$tmp/here.hw"
"$PARTIR" cost "$top_srcdir/examples/mlp.pir" --hw "$tmp/here.hw" >"$tmp/cost" 2>&1
check "...and the cost model prices the compiled kernels with it" \
  grep -q '^  kernels          2$' "$tmp/cost"
"$PARTIR" calibrate --devices 0 >/dev/null 2>"$tmp/err"
status=$?
check "calibrate --devices 0: a usage error" \
  sh -c "test $status -eq 2 && grep -q 'devices takes a count from 1 to 64' '$tmp/err'"
"$PARTIR" calibrate --passes 0 >/dev/null 2>"$tmp/err"
status=$?
check "calibrate --passes 0: a usage error" \
  sh -c "test $status -eq 2 && grep -q 'passes takes a count from 1 to 99' '$tmp/err'"
"$PARTIR" calibrate extra.pir >/dev/null 2>"$tmp/err"
status=$?
check "calibrate FILE: a usage error" \
  sh -c "test $status -eq 2 && grep -q 'takes no FILE' '$tmp/err'"
done_testing
