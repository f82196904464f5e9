#!/bin/sh
# The CUDA runtime under MPI (docs/gpu.md): 'mpirun -np N partir exec
# --runtime cuda-mpi', a rank per device of the mesh, each driving one
# GPU, NCCL between them; against the threaded runtime ('partir exec
# --exact': the interpreter's bits), the .npy files of --output compared
# within fast arithmetic's bound (tests/compiled.sh: the GPU's reductions
# and NCCL sum in their own order), integers exactly.
#
# Everywhere MPI is built (make check, no GPU needed):
#   - --runtime cuda under an mpirun of 2 ranks is refused, naming
#     cuda-mpi (each rank would drive every GPU);
#   - without a GPU, every rank of an mpirun of 2 says so, once, and
#     all exit 1 long before the timeout, printing no result.
# Then, without a GPU, the rest is skipped, saying why.
#
# With GPUs: examples/mlp.pir and the transformer layer on one rank (no
# mesh); a mesh of 2 devices on one rank refused (a rank per device);
# where the machine has the GPUs, the MLP and a 4-layer transformer
# under batch, Megatron and ZeRO on 2 and 4 ranks and the compositions
# on batch=2,model=2 (one GPU a rank: its local rank); with one GPU,
# two ranks that would share it are refused by both; a bad input file
# on rank 0 ends every rank with the message.  Every mpirun runs under
# 'timeout'.  Skipped, saying so, when the MPI runtime is not built or
# mpirun is missing.
. "$top_srcdir/tests/tap.sh"
. "$top_srcdir/tests/compiled.sh"
# (as tests/mpi.sh: OpenMPI's allocations outlive MPI_Finalize)
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export ASAN_OPTIONS
PARTIR=${PARTIR:-$top_builddir/repl/partir}

"$PARTIR" exec "$top_srcdir/examples/mlp.pir" --runtime cuda-mpi \
  --repeat -1 >/dev/null 2>"$tmp/err"
if grep -q 'not built' "$tmp/err"; then
  check "--runtime cuda-mpi without MPI: says it is not built" \
    grep -q 'the cuda-mpi runtime is not built into this partir' "$tmp/err"
  echo "# SKIP the MPI runtime is not built (configure found no MPI)"
  done_testing
fi
if ! command -v mpirun >/dev/null 2>&1; then
  echo "# SKIP mpirun is not in PATH (apt-get install openmpi-bin)"
  done_testing
fi
export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}
LIMIT=${MPI_TIMEOUT:-120}
# ranks N ARGS...: partir exec ARGS on N ranks, on the cuda-mpi runtime
# unless ARGS name another.
ranks() {
  np=$1
  shift
  timeout "$LIMIT" mpirun --oversubscribe --allow-run-as-root -np "$np" \
    "$PARTIR" exec "$@"
}

mlp=$top_srcdir/examples/mlp.pir
"$PARTIR" tactic "$top_srcdir/tactics/batch.lua" "$mlp" --mesh batch=2 \
  -o "$tmp/mlp-b2.pir" 2>"$tmp/err" || show "$tmp/err"

ranks 2 "$mlp" --runtime cuda >"$tmp/out" 2>"$tmp/err"
status=$?
check "--runtime cuda under mpirun: exit 2 on every rank" test $status -eq 2
check "...each naming cuda-mpi" test "$(grep -c \
  'drives every GPU from one process, but mpirun started 2 processes: run --runtime cuda-mpi' \
  "$tmp/err")" -eq 2

ranks 2 "$tmp/mlp-b2.pir" --mesh batch=2 --runtime cuda-mpi >"$tmp/out" \
  2>"$tmp/err"
status=$?
if grep -q 'no GPU to run on' "$tmp/err"; then
  check "no GPU, 2 ranks: exit 1, not by the timeout" test $status -eq 1
  for r in 0 1; do
    check "...rank $r says so once" test "$(grep -c \
      "^partir: --runtime cuda-mpi: rank $r ([^)]*): no GPU to run on: " \
      "$tmp/err")" -eq 1
  done
  check "...and nothing is printed" test ! -s "$tmp/out"
  echo "# SKIP no GPU: $(grep -m1 'rank 0' "$tmp/err" |
    sed 's/^partir: --runtime cuda-mpi: rank 0 ([^)]*): //')"
  done_testing
fi
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
echo "# $gpus GPU(s)"

# same NAME FILE MESH [ARGS...]: on MESH (- for none), the cuda-mpi
# runtime's .npy files are the threaded runtime's within the tolerance.
same() {
  name=$1
  file=$2
  mesh=$3
  shift 3
  [ "$mesh" = - ] && mesh=
  np=1
  [ -n "$mesh" ] && np=$(echo "$mesh" |
    awk -F'[=,]' '{ n = 1; for (i = 2; i <= NF; i += 2) n *= $i; print n }')
  rm -rf "$tmp/threads" "$tmp/gpu"
  mkdir -p "$tmp/threads" "$tmp/gpu"
  if ! "$PARTIR" exec "$file" ${mesh:+--mesh "$mesh"} --exact \
    --output "$tmp/threads" "$@" >/dev/null 2>"$tmp/err"; then
    not_ok "$name: the threaded runtime runs it"
    show "$tmp/err"
    return
  fi
  if ! ranks "$np" "$file" ${mesh:+--mesh "$mesh"} --runtime cuda-mpi \
    --output "$tmp/gpu" "$@" >/dev/null 2>"$tmp/err"; then
    not_ok "$name: $np rank(s) run it, a GPU each"
    show "$tmp/err"
    return
  fi
  rel=$(tolerance "$file")
  near "$name" "$tmp/threads" "$tmp/gpu" "$rel" || return
  ok "$name: $np rank(s), a GPU each, within $rel of the threads"
}

same "examples/mlp.pir" "$mlp" - --seed 3
same "examples/transformer_layer.pir" \
  "$top_srcdir/examples/transformer_layer.pir" - --seed 4

ranks 1 "$tmp/mlp-b2.pir" --mesh batch=2 --runtime cuda-mpi >"$tmp/out" \
  2>"$tmp/err"
status=$?
check "a mesh of 2 devices on 1 rank: exit 2, saying so once" sh -c \
  "test $status -eq 2 && test \$(grep -c \"mesh 'batch=2' has 2 devices, but mpirun started 1 ranks\" '$tmp/err') -eq 1"

lua5.4 "$top_srcdir/examples/models/transformer.lua" --layers 4 --batch 4 \
  --seq 8 --d_model 32 --heads 4 --d_ff 64 >"$tmp/t4.pir"
on_mesh() {
  if [ "$gpus" -lt "${3#*=}" ]; then
    echo "# skipped $1, $2 on $3: $gpus GPU(s)"
    return
  fi
  same "$1, $2 on $3" "$4" "$3" --seed 9
}
each_tactic on_mesh batch:batch=2 megatron:model=2 zero:data=2 batch:batch=4 \
  megatron:model=4 zero:data=4
if [ "$gpus" -ge 4 ]; then
  for tactic in batch-megatron batch-megatron-zero; do
    "$PARTIR" tactic "$top_srcdir/tests/bench/tactics/$tactic.lua" \
      "$tmp/t4.pir" --mesh batch=2,model=2 -o "$tmp/c.pir" 2>/dev/null
    same "4-layer transformer, $tactic" "$tmp/c.pir" batch=2,model=2 --seed 8
  done
else
  echo "# skipped the compositions on batch=2,model=2: $gpus GPU(s)"
fi

if [ "$gpus" -eq 1 ]; then
  ranks 2 "$tmp/mlp-b2.pir" --mesh batch=2 --runtime cuda-mpi \
    >"$tmp/out" 2>"$tmp/err"
  status=$?
  check "one GPU, 2 ranks: exit 1, not by the timeout" test $status -eq 1
  check "...each rank saying they would share it" test "$(grep -c \
    'local ranks 0 and 1 of this host would drive the same GPU' \
    "$tmp/err")" -eq 2
fi

# a failure on rank 0 once every rank has started ends them all
np=2
file=$tmp/mlp-b2.pir
mesh=batch=2
if [ "$gpus" -lt 2 ]; then
  np=1
  file=$mlp
  mesh=
fi
echo 'not a numpy file' >"$tmp/bad.npy"
ranks $np "$file" ${mesh:+--mesh $mesh} --runtime cuda-mpi \
  --input "x=$tmp/bad.npy" >"$tmp/out" 2>"$tmp/err"
status=$?
check "a bad input file on rank 0 of $np: every rank ends, not by the timeout" \
  sh -c "test $status -ne 0 && test $status -ne 124 && test $status -ne 137"
check "...with the message, and no results" sh -c \
  "grep -qF '$tmp/bad.npy: not a .npy file' '$tmp/err' && ! test -s '$tmp/out'"
done_testing
