#!/bin/sh
# The MPI runtime (partir exec --runtime mpi, docs/runtime.md) against
# the threaded runtime and the interpreter: under mpirun, a rank per
# device, the results printed and the .npy files of --output equal the
# threaded runtime's byte for byte (both --exact, so both equal the
# interpreter's 'partir run', compared too).
#
# On:
#   - the meshes tests/codegen.sh runs with threads: a 4-layer
#     transformer after the batch+Megatron(+ZeRO) compositions on
#     batch=2,model=2, and the transformer and examples/mlp.pir after
#     batch, Megatron and ZeRO each on meshes of 1, 2 and 4 devices:
#     all_reduce and all_gather, over groups of 2 and 4;
#   - the redistribution fixtures (tests/fixtures/spmd): reduce_scatter,
#     all_to_all and shard on model=2, their f64 versions on model=4 (a
#     float sum over more than two ranks, summed in group order), and a
#     sum over two axes on a=2,b=2;
#   - other element types: bf16 (an all_reduce over 4 ranks), i32 (an
#     all_gather);
#   - failures: a rank count that is not the mesh's devices (every rank
#     exits, one message), a bad input file on rank 0 (every rank ends,
#     the message said, long before the timeout), an unknown --runtime;
#   - uneven splits (padded chunks: rows, a reduce_scatter, a shard and
#     an all_gather of them), byte for byte the threads' and the
#     interpreter's.
# Every mpirun runs under 'timeout': a hang fails the test instead of
# stalling make check.  Skipped, saying so, when the MPI runtime is not
# built or mpirun is missing.
. "$top_srcdir/tests/tap.sh"
# Under --enable-asan, LeakSanitizer reports OpenMPI's allocations that
# outlive MPI_Finalize; its components are unloaded by then, so no
# suppression can name them.  These runs keep ASan's and UBSan's other
# checks, without leak detection (the threaded runtime's tests check
# partir's leaks on the same compiled code).
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export ASAN_OPTIONS
PARTIR=${PARTIR:-$top_builddir/repl/partir}

# (--repeat -1 fails before MPI starts: only the runtime's name is judged)
"$PARTIR" exec "$top_srcdir/examples/mlp.pir" --runtime mpi --repeat -1 \
  >/dev/null 2>"$tmp/err"
if grep -q 'not built' "$tmp/err"; then
  check "--runtime mpi without MPI: says it is not built" \
    grep -q 'the mpi runtime is not built into this partir' "$tmp/err"
  echo "# SKIP the MPI runtime is not built (configure found no MPI)"
  done_testing
fi
if ! command -v mpirun >/dev/null 2>&1; then
  echo "# SKIP mpirun is not in PATH (apt-get install openmpi-bin)"
  done_testing
fi

# OpenMPI 4: shared memory is the 'vader' BTL (OpenMPI 5 calls it 'sm')
export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}
LIMIT=${MPI_TIMEOUT:-60}
# mpi N ARGS...: partir exec ARGS on N ranks.
mpi() {
  ranks=$1
  shift
  timeout "$LIMIT" mpirun --oversubscribe --allow-run-as-root -np "$ranks" \
    "$PARTIR" exec "$@" --runtime mpi
}

# same NAME FILE MESH ARGS...: on MESH, the MPI runtime's stdout and
# .npy files equal the threaded runtime's, and the files the
# interpreter's.
same() {
  name=$1
  file=$2
  mesh=$3
  shift 3
  ranks=$(echo "$mesh" | awk -F'[=,]' '{ n = 1; for (i = 2; i <= NF; i += 2) n *= $i; print n }')
  rm -rf "$tmp/run" "$tmp/threads" "$tmp/mpi"
  mkdir -p "$tmp/run" "$tmp/threads" "$tmp/mpi"
  if ! "$PARTIR" run "$file" --output "$tmp/run" "$@" >/dev/null 2>"$tmp/err" ||
    ! "$PARTIR" exec "$file" --mesh "$mesh" --exact --output "$tmp/threads" \
      "$@" >"$tmp/threads.out" 2>"$tmp/err"; then
    not_ok "$name: the interpreter and the threaded runtime run it"
    show "$tmp/err"
    return
  fi
  if ! mpi "$ranks" "$file" --mesh "$mesh" --exact --output "$tmp/mpi" "$@" \
    >"$tmp/mpi.out" 2>"$tmp/err"; then
    not_ok "$name: $ranks ranks run it"
    show "$tmp/err"
    return
  fi
  if ! cmp -s "$tmp/threads.out" "$tmp/mpi.out"; then
    not_ok "$name: $ranks ranks print what the threads print"
    show "$tmp/mpi.out"
    return
  fi
  for f in "$tmp/run"/*.npy; do
    b=$(basename "$f")
    if ! cmp -s "$tmp/threads/$b" "$tmp/mpi/$b"; then
      not_ok "$name: $ranks ranks, $b differs from the threads'"
      return
    fi
    if [ -z "$threads_only" ] && ! cmp -s "$f" "$tmp/mpi/$b"; then
      not_ok "$name: $ranks ranks, $b differs from the interpreter's"
      return
    fi
  done
  also=" and the interpreter's"
  [ -n "$threads_only" ] && also=$threads_only
  ok "$name: $ranks ranks, byte for byte the threads'$also"
}
threads_only=

# tactic NAME TACTIC FILE MESH: the tactic's program in $tmp/NAME.pir.
tactic() {
  "$PARTIR" tactic "$2" "$3" --mesh "$4" -o "$tmp/$1.pir" 2>"$tmp/err" || {
    not_ok "$1: the tactic runs"
    show "$tmp/err"
  }
}

# The meshes of tests/codegen.sh.
lua5.4 "$top_srcdir/examples/models/transformer.lua" --layers 4 --batch 4 \
  --seq 8 --d_model 32 --heads 4 --d_ff 64 >"$tmp/t4.pir"
for t in batch-megatron megatron-batch batch-megatron-zero; do
  tactic "t4-$t" "$top_srcdir/tests/bench/tactics/$t.lua" "$tmp/t4.pir" \
    batch=2,model=2 &&
    same "4-layer transformer, $t" "$tmp/t4-$t.pir" batch=2,model=2 --seed 8
done
same "examples/mlp_tiled.pir" "$top_srcdir/examples/mlp_tiled.pir" batch=2 \
  --seed 7
for program in t4 mlp; do
  case $program in
  t4) src=$tmp/t4.pir ;;
  mlp) src=$top_srcdir/examples/mlp.pir ;;
  esac
  for spec in batch:batch=1 batch:batch=2 batch:batch=4 megatron:model=2 \
    megatron:model=4 zero:data=2 zero:data=4; do
    t=${spec%%:*}
    m=${spec#*:}
    tactic "$program-$t" "$top_srcdir/tactics/$t.lua" "$src" "$m" &&
      same "$program, $t on $m" "$tmp/$program-$t.pir" "$m" --seed 9
  done
done

# The other collectives, from the redistribution fixtures.
fx=$top_srcdir/tests/fixtures/spmd
for f in reduce_scatter all_to_all keep_split; do
  same "$f" "$fx/$f.pir" model=2 --seed 3
done
sed 's/range<16,8>/range<16,4>/; s/range<8,4>/range<8,2>/; s/f32/f64/g' \
  "$fx/reduce_scatter.pir" >"$tmp/rs4.pir"
same "reduce_scatter in f64 over 4 ranks" "$tmp/rs4.pir" model=4 --seed 3
sed 's/range<8,4>/range<8,2>/g; s/f32/f64/g' "$fx/all_to_all.pir" \
  >"$tmp/a2a4.pir"
same "all_to_all in f64 over 4 ranks" "$tmp/a2a4.pir" model=4 --seed 3
# (its lowering sums over 'a', then over 'b': another association than
# the interpreter's one sum over both, so only the runtimes agree bit for
# bit)
threads_only=" (the interpreter's sums associate otherwise)"
same "two_axis_sum" "$fx/two_axis_sum.pir" a=2,b=2 --seed 3
threads_only=
"$PARTIR" lower "$tmp/rs4.pir" --mesh model=4 >"$tmp/rs4.spmd"
check "...(the f64 program has its reduce_scatter over 4)" \
  grep -q 'reduce_scatter(.*size = 4' "$tmp/rs4.spmd"

# Other element types.
sed 's/f32/bf16/g' "$top_srcdir/examples/mlp.pir" >"$tmp/mlp16.pir"
tactic mlp16-megatron "$top_srcdir/tactics/megatron.lua" "$tmp/mlp16.pir" \
  model=4 && same "mlp in bf16, megatron" "$tmp/mlp16-megatron.pir" model=4 \
  --seed 2
sed 's/f32/i32/g' "$top_srcdir/examples/mlp.pir" >"$tmp/mlpi.pir"
tactic mlpi-zero "$top_srcdir/tactics/zero.lua" "$tmp/mlpi.pir" data=2 &&
  same "mlp in i32, zero" "$tmp/mlpi-zero.pir" data=2 --seed 2

# Failures end every rank, with the message.
t4bm=$tmp/t4-batch-megatron.pir
mpi 2 "$t4bm" --mesh batch=2,model=2 >"$tmp/out" 2>"$tmp/err"
status=$?
check "2 ranks for a mesh of 4 devices: exit 2" test $status -eq 2
check "...saying so once" test "$(grep -c \
  "mesh 'batch=2,model=2' has 4 devices, but mpirun started 2 ranks (mpirun -np 4)" \
  "$tmp/err")" -eq 1
echo 'not a numpy file' >"$tmp/bad.npy"
mpi 4 "$t4bm" --mesh batch=2,model=2 --input "x=$tmp/bad.npy" \
  >"$tmp/out" 2>"$tmp/err"
status=$?
check "a bad input file on rank 0: every rank ends, not by the timeout" \
  sh -c "test $status -ne 0 && test $status -ne 124 && test $status -ne 137"
check "...with the message, and no results" sh -c \
  "grep -qF '$tmp/bad.npy: not a .npy file' '$tmp/err' && ! test -s '$tmp/out'"
# uneven splits (padded chunks): 10 rows over 4 ranks (the inputs cut
# and the results assembled with the padding); a product contracting 8
# over 3 (width 3, the last part padded) whose sum is scattered over 10
# rows (reduce_scatter of chunks of 4, the last padded) and added to a
# bias cut likewise (shard); and 5 columns over 2, gathered (all_gather
# of chunks of 3, keeping 5) for a reduce_max
sed 's/16x256/10x256/' "$top_srcdir/examples/mlp.pir" >"$tmp/mlp10.pir"
"$PARTIR" rewrite "$tmp/mlp10.pir" --do 'arg-tile %x 0 3 batch; propagate' \
  -o "$tmp/mlp10.b.pir" 2>"$tmp/err"
same "an uneven split, 10 rows over 4 ranks" "$tmp/mlp10.b.pir" batch=4 --seed 4
cat >"$tmp/rs3.pir" <<'EOF'
func @f(%x: tensor<10x8xf32>, %w: tensor<8x6xf32>, %b: tensor<10x6xf32>) -> tensor<10x6xf32> {
  %y = matmul(%x, %w)
  %z = add(%y, %b)
  return %z
}
EOF
"$PARTIR" rewrite "$tmp/rs3.pir" \
  --do 'arg-tile %x 1 3 model; arg-tile %b 0 4 model; propagate' \
  -o "$tmp/rs3.m.pir" 2>"$tmp/err"
check "...its lowering on model=3: a reduce_scatter and a shard of padded chunks" \
  sh -c "'$PARTIR' lower '$tmp/rs3.m.pir' --mesh model=3 >'$tmp/rs3.spmd' &&
         grep -q 'reduce_scatter(%y) {axes = \\[model\\], dim = 0, size = 3}' '$tmp/rs3.spmd' &&
         grep -q 'shard(.*dim = 0, size = 3}' '$tmp/rs3.spmd'"
same "an uneven reduce_scatter and shard over 3 ranks" "$tmp/rs3.m.pir" model=3 --seed 4
cat >"$tmp/ag.pir" <<'EOF'
func @h(%x: tensor<4x8xf32>, %w: tensor<8x5xf32>) -> (tensor<4x5xf32>, tensor<4xf32>) {
  %y = dot_general(%x, %w) {lhs_contract = [1], rhs_contract = [0]}
  %t = tanh(%y)
  %m = reduce_max(%t) {dims = [1]}
  return %t, %m
}
EOF
"$PARTIR" rewrite "$tmp/ag.pir" --do 'arg-tile %w 1 3 model; propagate' \
  -o "$tmp/ag.m.pir" 2>/dev/null
check "...its lowering on model=2: an all_gather of padded chunks keeping 5" \
  sh -c "'$PARTIR' lower '$tmp/ag.m.pir' --mesh model=2 | grep -q 'all_gather(%t) {axes = \\[model\\], dim = 1, length = 5, size = 2}'"
same "an uneven all_gather over 2 ranks" "$tmp/ag.m.pir" model=2 --seed 4
"$PARTIR" exec "$t4bm" --mesh batch=2,model=2 --runtime bogus \
  >/dev/null 2>"$tmp/err"
status=$?
check "--runtime bogus: a usage error naming the runtimes" sh -c \
  "test $status -eq 2 && grep -q \"runtime must be threads.*mpi.*not 'bogus'\" '$tmp/err'"
done_testing
