#!/bin/sh
# bench-mpi.sh — the runtimes side by side (docs/runtime.md):
#
#   1. collective bandwidth against size (bench-collective-sizes: 4 KiB to
#      64 MiB; all_reduce, all_gather, reduce_scatter), on the threaded
#      runtime and on the MPI runtime (2 ranks, shared memory), each row
#      also as a multiple of memcpy of the same bytes in the same run;
#   2. a step of a partitioned transformer (2 layers, batch 2, seq 128,
#      d_model 256, 4 heads, d_ff 1024; Megatron on model=2) on each
#      runtime: 'partir exec --repeat', the min and median of the steps;
#   3. the cost model's step time for it on hw/cpu2.hw (threads) and
#      hw/cpu2-mpi.hw (MPI), beside the measured ones.
#
# Run by tests/bench/run.sh (make bench), or by hand from the build
# directory: sh tests/bench/bench-mpi.sh.  Environment: PARTIR,
# BENCH_SIZES (the bench-collective-sizes binary), BENCH_RUNS, BENCH_STEPS
# (default 20), BENCH_MAX_MB (64).  Skips the MPI rows, saying so, when
# the MPI runtime is not built or mpirun is missing.  Timings are
# reported, never asserted.
top_srcdir=${top_srcdir:-.}
: "${PARTIR:=repl/partir}"
: "${BENCH_SIZES:=tests/bench/bench-collective-sizes}"
: "${BENCH_RUNS:=5}"
: "${BENCH_STEPS:=20}"
: "${BENCH_MAX_MB:=64}"
: "${LUA:=lua5.4}"
export OMPI_MCA_btl="${OMPI_MCA_btl:-self,vader}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/partir-bench-mpi.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

mpi=yes
"$PARTIR" exec "$top_srcdir/examples/mlp.pir" --runtime mpi --repeat -1 \
  >/dev/null 2>"$tmp/err"
if grep -q 'not built' "$tmp/err"; then
  echo "bench-mpi: the MPI runtime is not built: MPI rows skipped" >&2
  mpi=
elif ! command -v mpirun >/dev/null 2>&1; then
  echo "bench-mpi: no mpirun: MPI rows skipped" >&2
  mpi=
fi
mpirun2() {
  timeout 600 mpirun --oversubscribe --allow-run-as-root -np 2 "$@"
}

if test -x "$BENCH_SIZES"; then
  "$BENCH_SIZES" --runtime threads --runs "$BENCH_RUNS" --max-mb "$BENCH_MAX_MB"
  if test -n "$mpi"; then
    echo
    mpirun2 "$BENCH_SIZES" --runtime mpi --runs "$BENCH_RUNS" \
      --max-mb "$BENCH_MAX_MB"
  fi
else
  echo "bench-mpi: no $BENCH_SIZES (make tests/bench/bench-collective-sizes):" \
    "collective sizes skipped" >&2
fi

"$LUA" "$top_srcdir/examples/models/transformer.lua" --layers 2 --batch 2 \
  --seq 128 --d_model 256 --heads 4 --d_ff 1024 >"$tmp/t2.pir" &&
  "$PARTIR" tactic "$top_srcdir/tactics/megatron.lua" "$tmp/t2.pir" \
    --mesh model=2 -o "$tmp/t2m.pir" || {
  echo "bench-mpi: cannot make the transformer" >&2
  exit 1
}
# step RUNTIME: the 'N steps: min, median' line of partir exec --repeat.
step() {
  if [ "$1" = mpi ]; then
    mpirun2 "$PARTIR" exec "$tmp/t2m.pir" --mesh model=2 --seed 2 \
      --repeat "$BENCH_STEPS" --runtime mpi
  else
    "$PARTIR" exec "$tmp/t2m.pir" --mesh model=2 --seed 2 \
      --repeat "$BENCH_STEPS"
  fi 2>&1 >/dev/null | sed -n 's/^partir: \(.*steps: .*\)$/\1/p'
}
# predicted HW: the cost model's total step time on hw/HW.hw.
predicted() {
  PARTIR_HW=$top_srcdir/hw "$PARTIR" cost "$tmp/t2m.pir" --mesh model=2 \
    --hw "$1" | sed -n 's/^  total *//p'
}
echo
echo "a step of a 2-layer transformer (Megatron, model=2), $BENCH_STEPS steps:"
printf '%-8s %-40s %s\n' runtime measured "predicted (hardware file)"
printf '%-8s %-40s %s\n' threads "$(step threads)" "$(predicted cpu2) (cpu2)"
if test -n "$mpi"; then
  printf '%-8s %-40s %s\n' mpi "$(step mpi)" "$(predicted cpu2-mpi) (cpu2-mpi)"
fi
