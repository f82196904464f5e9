#!/bin/sh
# bench-train.sh — a training step compiled by partir against the same
# step written by hand in NumPy (issue 16, "Correctness and
# performance"; tests/bench/README says what each figure is).
#
# Generates the steps with the model generators' --train (a relu MLP
# under SGD, a transformer layer under momentum, both on a mean squared
# error), partitions each data parallel with tactics/batch.lua on
# batch=2, runs tests/bench/bench-codegen on each (compile and run
# times; the arguments and results saved as .npy) and
# tests/bench/train_peers.py (NumPy from the system python3: forward
# and backward written by hand; checked against its own float64 step)
# on the same arguments, and prints a table of ratios, each against a
# baseline measured in this run.  Run
# it from the build directory (run.sh and 'make bench' do); the
# environment may set:
#   BENCH_CODEGEN  the driver (default tests/bench/bench-codegen)
#   BENCH_RUNS     timed runs after the warm-up, the median is reported
#                  (default 5)
#   BENCH_SHAPES   'small' for tiny shapes (a quick try of the script)
#   PYTHON         the python with NumPy (default /usr/bin/python3)
#   PARTIR         the CLI (default repl/partir)
#   LUA, PARTIR_RULES, PARTIR_TACTICS, top_srcdir  as for run.sh
# Exit status: 1 when something fails to run or the compiled step
# disagrees with NumPy's in float64; timings never fail it.
set -u

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${BENCH_CODEGEN:=tests/bench/bench-codegen}"
: "${BENCH_RUNS:=5}"
: "${BENCH_SHAPES:=}"
: "${PYTHON:=/usr/bin/python3}"
: "${PARTIR:=repl/partir}"
: "${LUA:=lua5.4}"
: "${PARTIR_RULES:=$top_srcdir/rules}"
: "${PARTIR_TACTICS:=$top_srcdir/tactics}"
export PARTIR_RULES PARTIR_TACTICS PARTIR

for tool in "$BENCH_CODEGEN" "$PARTIR"; do
  if ! test -x "$tool"; then
    echo "bench-train: no $tool (make tests/bench/bench-codegen, or run" \
      "from the build directory)" >&2
    exit 1
  fi
done
if ! "$PYTHON" -c 'import numpy' 2>/dev/null; then
  echo "bench-train: no NumPy in $PYTHON (apt-get install python3-numpy)" >&2
  exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/partir-bench-train.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
status=0
models=$top_srcdir/examples/models
peers=$top_srcdir/tests/bench/train_peers.py

fail() {
  echo "bench-train: $*" >&2
  status=1
}

if [ "$BENCH_SHAPES" = small ]; then
  mlp_shape="--layers 3 --batch 16 --width 64"
  tr_shape="--layers 1 --batch 2 --seq 16 --d_model 64 --heads 4 --d_ff 128"
else
  mlp_shape="--layers 4 --batch 256 --width 1024"
  tr_shape="--layers 1 --batch 4 --seq 128 --d_model 256 --heads 4"
  tr_shape="$tr_shape --d_ff 1024"
fi
heads=4
mlp_train="--train --loss mse --optimizer sgd --lr 0.01"
tr_train="--train --loss mse --optimizer momentum --lr 0.01"
# shellcheck disable=SC2086 # the shapes are several arguments
if ! { "$LUA" "$models/mlp.lua" $mlp_shape $mlp_train >"$tmp/mlp.pir" &&
  "$LUA" "$models/transformer.lua" $tr_shape $tr_train >"$tmp/tr.pir"; }; then
  echo "bench-train: cannot generate the steps with $LUA --train" >&2
  exit 1
fi
for m in mlp tr; do
  "$PARTIR" tactic "$PARTIR_TACTICS/batch.lua" "$tmp/$m.pir" --mesh batch=2 \
    --set inputs=x,target -o "$tmp/$m-b2.pir" ||
    fail "the batch tactic fails on the $m step"
done

# the peer pinned to one CPU and one thread, with OpenBLAS's kernels for
# this CPU's extensions (Debian's OpenBLAS takes a recent Xeon for a
# Prescott: bench-codegen.sh shows both)
cpu=$("$PYTHON" -c 'import os; print(min(os.sched_getaffinity(0)))')
pin=
command -v taskset >/dev/null 2>&1 && pin="taskset -c $cpu"
case $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null) in
*avx512_bf16*) coretype=Cooperlake ;;
*avx512vl*) coretype=SkylakeX ;;
*avx2*) coretype=Haswell ;;
*) coretype= ;;
esac

# driver NAME ARGS...: bench-codegen ARGS > $tmp/NAME.out
driver() {
  name=$1
  shift
  echo "bench-train: $name" >&2
  mkdir -p "$tmp/$name"
  "$BENCH_CODEGEN" --runs "$BENCH_RUNS" --save "$tmp/$name" "$@" \
    >"$tmp/$name.out" || fail "$name: bench-codegen $* fails"
}

# peer NAME CASE DIR [ARGS...]: train_peers.py > $tmp/NAME.out
peer() {
  name=$1
  shift
  echo "bench-train: $name" >&2
  # shellcheck disable=SC2086 # 'pin' is a command and its arguments
  env ${coretype:+OPENBLAS_CORETYPE=$coretype} OPENBLAS_NUM_THREADS=1 \
    OMP_NUM_THREADS=1 $pin "$PYTHON" "$peers" "$@" --heads $heads \
    --runs "$BENCH_RUNS" >"$tmp/$name.out" ||
    fail "$name: $(tail -n 1 "$tmp/$name.out")"
}

driver mlp "$tmp/mlp.pir"
peer mlp-np mlp "$tmp/mlp"
driver mlp-b2 --mesh batch=2 "$tmp/mlp-b2.pir"
peer mlp-b2-check mlp "$tmp/mlp-b2" --runs 1
driver tr "$tmp/tr.pir"
peer tr-np transformer "$tmp/tr"
driver tr-b2 --mesh batch=2 "$tmp/tr-b2.pir"
peer tr-b2-check transformer "$tmp/tr-b2" --runs 1

. "$top_srcdir/tests/bench/figures.sh"
row() {
  printf '%-40s %9s %9s  %6s  %6s  %s\n' "$@" | sed 's/ *$//'
}

echo
echo "training steps: median of $BENCH_RUNS runs after a warm-up; ratio ="
echo "NumPy / partir in wall time, cpu = the same in CPU time (above 1 when"
echo "partir is faster); NumPy on CPU $cpu, one thread," \
  "OPENBLAS_CORETYPE=${coretype:-unset}"
echo "mlp: $mlp_shape $mlp_train"
echo "transformer: $tr_shape $tr_train"
row "step" "partir ms" "numpy ms" "ratio" "cpu" \
  "check (max diff / max, vs float64)"
for entry in "mlp, 1 device|mlp|mlp-np|mlp-np" \
  "mlp, batch=2 (2 threads)|mlp-b2|mlp-np|mlp-b2-check" \
  "transformer layer, 1 device|tr|tr-np|tr-np" \
  "transformer layer, batch=2 (2 threads)|tr-b2|tr-np|tr-b2-check"; do
  what=${entry%%|*} rest=${entry#*|}
  ours=${rest%%|*} rest=${rest#*|}
  base=${rest%%|*} checked=${rest#*|}
  row "$what" "$(ms "$(get "$ours" run)")" "$(ms "$(get "$base" run)")" \
    "$(div "$(get "$base" run)" "$(get "$ours" run)")" \
    "$(div "$(get "$base" run_cpu)" "$(get "$ours" run_cpu)")" \
    "$(get "$checked" check) $(get "$checked" check 3)"
done
echo "NumPy's own float32 step against float64: mlp $(get mlp-np numpy_err)," \
  "transformer $(get tr-np numpy_err)"
echo "compile: mlp $(ms "$(get mlp compile)") ms," \
  "transformer $(ms "$(get tr compile)") ms"
exit $status
