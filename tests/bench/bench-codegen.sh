#!/bin/sh
# bench-codegen.sh — compiled execution against its peers, and the cost
# model against it (issue 13, Performance items 2 to 7; tests/bench/README
# says what each figure is).
#
# Generates the programs with examples/models/*.lua (and writes the
# elementwise chain), partitions two of them with the tactics, runs
# tests/bench/bench-codegen on each (compile and run times, the results
# saved as .npy) and tests/bench/codegen_peers.py (NumPy from the system
# python3, JAX from a virtual environment made here when missing) on the
# same arguments, and prints one table of ratios, each against a
# baseline measured in this run.  Run it from the build directory (run.sh
# and 'make bench' do); the environment may set:
#   BENCH_CODEGEN  the driver (default tests/bench/bench-codegen)
#   BENCH_RUNS     timed runs after the warm-up, the median is reported
#                  (default 5)
#   BENCH_SHAPES   'small' for tiny shapes (a quick try of the script)
#   BENCH_COST_ONLY  set: item 7 alone (the cost model against partir
#                  exec), without the peers and items 2 to 6
#   BENCH_VENV     the virtual environment for JAX (default tests/.venv
#                  in the build directory, the one tests/referee.sh
#                  uses; tests/jax-venv.sh makes it); BENCH_NO_JAX=1
#                  skips JAX
#   PYTHON         the python with NumPy (default /usr/bin/python3)
#   PARTIR         the CLI, for 'partir tactic' (default repl/partir)
#   LUA, PARTIR_RULES, PARTIR_TACTICS, top_srcdir  as for run.sh
# Exit status: 1 when something fails to run or a result disagrees with
# NumPy's (or JAX's); timings never fail it.
set -u

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${BENCH_CODEGEN:=tests/bench/bench-codegen}"
: "${BENCH_RUNS:=5}"
: "${BENCH_SHAPES:=}"
: "${BENCH_VENV:=$(pwd)/tests/.venv}"
: "${BENCH_NO_JAX:=}"
: "${BENCH_COST_ONLY:=}"
: "${PYTHON:=/usr/bin/python3}"
: "${PARTIR:=repl/partir}"
: "${LUA:=lua5.4}"
: "${PARTIR_RULES:=$top_srcdir/rules}"
: "${PARTIR_TACTICS:=$top_srcdir/tactics}"
export PARTIR_RULES PARTIR_TACTICS

for tool in "$BENCH_CODEGEN" "$PARTIR"; do
  if ! test -x "$tool"; then
    echo "bench-codegen: no $tool (make tests/bench/bench-codegen, or run" \
      "from the build directory)" >&2
    exit 1
  fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/partir-bench-codegen.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
status=0
peers=$top_srcdir/tests/bench/codegen_peers.py
models=$top_srcdir/examples/models

# fail MESSAGE: says what failed; the script will exit 1.
fail() {
  echo "bench-codegen: $*" >&2
  status=1
}

# ------------------------------------------------------------ programs
if [ "$BENCH_SHAPES" = small ]; then
  mlp_shape="--layers 4 --batch 16 --width 64"
  tr_shape="--layers 1 --batch 1 --seq 16 --d_model 64 --heads 4 --d_ff 128"
  heads=4
  chain_dims=64x1024
else
  mlp_shape="--layers 4 --batch 256 --width 2048"
  tr_shape="--layers 1 --batch 1 --seq 512 --d_model 1024 --heads 16"
  tr_shape="$tr_shape --d_ff 4096"
  heads=16
  chain_dims=4096x4096 # 16 Mi f32: 64 MiB
fi
# shellcheck disable=SC2086 # the shapes are several arguments
if ! { "$LUA" "$models/mlp.lua" $mlp_shape >"$tmp/mlp.pir" &&
  "$LUA" "$models/transformer.lua" $tr_shape >"$tmp/tr.pir" &&
  "$LUA" "$models/transformer.lua" --layers 12 >"$tmp/t12.pir"; }; then
  echo "bench-codegen: cannot generate the programs with $LUA" >&2
  exit 1
fi
t="tensor<${chain_dims}xf32>"
cat >"$tmp/chain.pir" <<EOF
// 8 elementwise ops, one input read and one result written when fused
func @chain(%x: $t) -> $t {
  %a = mul(%x, %x)
  %b = add(%a, %x)
  %c = relu(%b)
  %d = sub(%c, %x)
  %e = abs(%d)
  %f = max(%e, %x)
  %g = neg(%f)
  %y = min(%g, %x)
  return %y
}
EOF
# the partitioned programs of item 5
"$PARTIR" tactic "$PARTIR_TACTICS/batch.lua" "$tmp/mlp.pir" --mesh batch=2 \
  -o "$tmp/mlp-b2.pir" || fail "the batch tactic fails on the MLP"
"$PARTIR" tactic "$PARTIR_TACTICS/megatron.lua" "$tmp/tr.pir" --mesh model=2 \
  -o "$tmp/tr-m2.pir" || fail "the megatron tactic fails on the transformer"

. "$top_srcdir/tests/bench/figures.sh"

if [ -z "$BENCH_COST_ONLY" ]; then
# -------------------------------------------------------------- python
cpu=0
have_numpy=
if "$PYTHON" -c 'import numpy' 2>/dev/null; then
  have_numpy=1
  cpu=$("$PYTHON" -c 'import os; print(min(os.sched_getaffinity(0)))')
else
  echo "bench-codegen: no NumPy in $PYTHON (apt-get install python3-numpy):" \
    "NumPy rows skipped, results not checked" >&2
fi
pin=
if command -v taskset >/dev/null 2>&1; then
  pin="taskset -c $cpu"
else
  echo "bench-codegen: no taskset: the peers are not pinned to one CPU" >&2
fi

# JAX in its own environment, installed once (never a dependency of
# partir); where it cannot be, its rows are skipped.
. "$top_srcdir/tests/jax-venv.sh"
jax_python=
if [ -n "$BENCH_NO_JAX" ]; then
  echo "bench-codegen: BENCH_NO_JAX is set: JAX rows skipped" >&2
elif [ -n "$have_numpy" ] && ! jax_venv "$BENCH_VENV" "$PYTHON"; then
  echo "bench-codegen: $jax_why: JAX rows skipped" >&2
  jax_python=
fi

# The CPU's own OpenBLAS core type, from its flags: an OpenBLAS older than
# the CPU can fall back to a generic kernel (Prescott) on its own.
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
case $flags in
*avx512_bf16*) coretype=Cooperlake ;;
*avx512vl*) coretype=SkylakeX ;;
*avx2*) coretype=Haswell ;;
*) coretype= ;;
esac

# ---------------------------------------------------------------- runs

# driver NAME ARGS...: bench-codegen ARGS > $tmp/NAME.out
driver() {
  name=$1
  shift
  echo "bench-codegen: $name" >&2
  "$BENCH_CODEGEN" --runs "$BENCH_RUNS" "$@" >"$tmp/$name.out" ||
    fail "$name: bench-codegen $* fails"
}

# peer NAME PEER CASE DIR [ARGS...]: codegen_peers.py on one thread,
# pinned to one CPU, into $tmp/NAME.out; OPENBLAS_CORETYPE is 'core' when
# set, else unset.
core=
peer() {
  name=$1
  kind=$2
  shift 2
  if [ "$kind" = jax ]; then
    [ -n "$jax_python" ] || return 0
    py=$jax_python
  else
    [ -n "$have_numpy" ] || return 0
    py=$PYTHON
  fi
  if [ -n "$core" ]; then
    set -- env OPENBLAS_CORETYPE="$core" "$py" "$peers" "$kind" \
      --runs "$BENCH_RUNS" "$@"
  else
    set -- env -u OPENBLAS_CORETYPE "$py" "$peers" "$kind" \
      --runs "$BENCH_RUNS" "$@"
  fi
  echo "bench-codegen: $name" >&2
  # shellcheck disable=SC2086 # 'pin' is a command and its arguments
  OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
    XLA_FLAGS=--xla_cpu_multi_thread_eigen=false $pin "$@" \
    >"$tmp/$name.out" || fail "$name: $(tail -n 1 "$tmp/$name.out")"
}

# numpy_peers PREFIX CASE DIR [ARGS...]: NumPy with OPENBLAS_CORETYPE
# unset, then set to the CPU's core type.
numpy_peers() {
  prefix=$1
  shift
  core=
  peer "$prefix-np" numpy "$@"
  if [ -n "$coretype" ]; then
    core=$coretype
    peer "$prefix-npc" numpy "$@"
    core=
  fi
}

# 2: MLP; 5: the same on batch=2, on one device, and two copies at once
driver mlp --save "$tmp/mlp" "$tmp/mlp.pir"
numpy_peers mlp mlp "$tmp/mlp"
peer mlp-jax jax mlp "$tmp/mlp"
driver mlp-b2 --mesh batch=2 --scaling --save "$tmp/mlp-b2" "$tmp/mlp-b2.pir"
peer mlp-b2-check numpy mlp "$tmp/mlp-b2" --runs 1
# 3: transformer layer; 5: Megatron on model=2
driver tr --save "$tmp/tr" "$tmp/tr.pir"
numpy_peers tr transformer "$tmp/tr" --heads $heads
peer tr-jax jax transformer "$tmp/tr" --heads $heads
driver tr-m2 --mesh model=2 --scaling --save "$tmp/tr-m2" "$tmp/tr-m2.pir"
peer tr-m2-check numpy transformer "$tmp/tr-m2" --heads $heads \
  --runs 1
# 4: the chain against memcpy
driver chain --memcpy --save "$tmp/chain" "$tmp/chain.pir"
peer chain-np numpy chain "$tmp/chain"
# 6: compile time of 12 layers of transformer.lua's default shape
driver t12 --compile-only "$tmp/t12.pir"
layer_shapes="32,32,32x4x8,32x4x8,32x4x8,4x8x32,32,32,32x64,64,64x32,32"
shapes=2x8x32
for _ in 1 2 3 4 5 6 7 8 9 10 11 12; do
  shapes="$shapes,$layer_shapes"
done
peer t12-jax jax transformer "$tmp" --heads 4 --compile-only --shapes "$shapes"

# --------------------------------------------------------------- table

# row ITEM PROGRAM PARTIR_MS BASELINE BASE_MS RATIO CPU_RATIO TARGET
row() {
  printf '%-2s %-34s %9s  %-42s %9s  %6s  %6s  %s\n' "$@" | sed 's/ *$//'
}

# peer_rows ITEM WHAT NAME JAX_TARGET: the NumPy and JAX rows of case
# NAME.
peer_rows() {
  item=$1 what=$2 ours=$(get "$3" run) ours_cpu=$(get "$3" run_cpu)
  for p in np npc jax; do
    case $p in
    np) label="numpy, OPENBLAS_CORETYPE unset: $(get "$3-np" blas)" ;;
    npc) label="numpy, OPENBLAS_CORETYPE=$(get "$3-npc" blas)" ;;
    jax) label="jax.jit (XLA:CPU $(get "$3-jax" jax), 1 CPU)" ;;
    esac
    base=$(get "$3-$p" run) target=">= 1"
    [ $p = jax ] && target=$4
    if [ -z "$base" ]; then
      [ $p = jax ] && row "$item" "$what" "$(ms "$ours")" "jax.jit" \
        "skipped" "-" "-" "(no JAX)"
      continue
    fi
    row "$item" "$what" "$(ms "$ours")" "$label" "$(ms "$base")" \
      "$(div "$base" "$ours")" "$(div "$(get "$3-$p" run_cpu)" "$ours_cpu")" \
      "$target"
    item="" what=""
  done
}

# spmd_rows WHAT NAME: item 5 for one program (its three times measured
# in turn by bench-codegen --scaling).
spmd_rows() {
  what=$1 one=$(get "$2" one) pair=$(get "$2" pair) two=$(get "$2" spmd)
  speedup=$(div "$one" "$two")
  allowed=$(awk -v o="$one" -v p="$pair" 'BEGIN {
    if (o == "" || p == "" || p + 0 == 0) print "-";
    else printf "%.2f\n", 2 * o / p }')
  row 5 "$what" "$(ms "$two")" "1 device (speedup)" "$(ms "$one")" \
    "$speedup" "" ""
  row "" "" "" "2 copies at once (machine allows)" "$(ms "$pair")" \
    "$allowed" "" ""
  row "" "" "" "parallel efficiency: speedup/allowed" "" \
    "$(div "$speedup" "$allowed")" "" ">= 0.90"
}

chain_bytes=$(get chain bytes)
mib() {
  awk -v b="${1:-}" 'BEGIN { if (b == "") print "-"; else print b / 1048576 }'
}
gbps() {
  awk -v b="$chain_bytes" -v t="${1:-}" 'BEGIN {
    if (b == "" || t == "" || t + 0 == 0) print "-";
    else printf "%.1f GB/s\n", 2 * b / (t * 1e6) }'
}

echo
echo "compiled execution: median of $BENCH_RUNS runs after a warm-up;" \
  "ratio = baseline / partir in wall time, cpu = the same in CPU time"
echo "(above 1 when partir is faster); peers pinned to CPU $cpu, one thread" \
  "(OPENBLAS_NUM_THREADS=1, XLA_FLAGS=--xla_cpu_multi_thread_eigen=false)"
echo "mlp: $mlp_shape; transformer: $tr_shape"
row "" "program" "partir ms" "baseline" "base ms" "ratio" "cpu" "target"
peer_rows 2 "mlp, 1 device" mlp ">= 1"
peer_rows 3 "transformer layer, 1 device" tr ">= 0.90"
chain_ms=$(get chain run)
copy_ms=$(get chain memcpy)
row 4 "8 elementwise ops, $(mib "$chain_bytes") MiB f32" "$(ms "$chain_ms")" \
  "memcpy of the same bytes" "$(ms "$copy_ms")" \
  "$(div "$copy_ms" "$chain_ms")" \
  "$(div "$(get chain memcpy_cpu)" "$(get chain run_cpu)")" ">= 0.70"
row "" "  $(gbps "$chain_ms") vs $(gbps "$copy_ms")" "" "" "" "" "" ""
np_chain=$(get chain-np run)
if [ -n "$np_chain" ]; then
  row "" "" "" "numpy (8 passes)" "$(ms "$np_chain")" \
    "$(div "$np_chain" "$chain_ms")" \
    "$(div "$(get chain-np run_cpu)" "$(get chain run_cpu)")" ""
fi
spmd_rows "mlp, batch=2, 2 threads" mlp-b2
spmd_rows "transformer, model=2, 2 threads" tr-m2
t12=$(get t12 compile)
row 6 "compile, 12-layer transformer" "$(ms "$t12")" "target" "1000" \
  "$(div 1000 "$t12")" "$(div 1000 "$(get t12 compile_cpu)")" ">= 1"
jax_compile=$(get t12-jax compile)
if [ -n "$jax_compile" ]; then
  row "" "  (transformer.lua's default shape)" "" "jax.jit lower + compile" \
    "$(ms "$jax_compile")" "$(div "$jax_compile" "$t12")" \
    "$(div "$(get t12-jax compile_cpu)" "$(get t12 compile_cpu)")" ""
fi
echo "checks against the compiled results, and CPU time over wall time" \
  "(about 1.0 for one thread that the machine left alone):"
for name in mlp mlp-np mlp-npc mlp-jax mlp-b2-check tr tr-np tr-npc tr-jax \
  tr-m2-check chain chain-np; do
  [ -f "$tmp/$name.out" ] || continue
  printf '  %-13s' "$name"
  awk '$1 == "check" { printf "%s (max diff / max %s) ", $2, $3 }
       $1 == "run_load" { printf "cpu/wall %s ", $2 }
      ' "$tmp/$name.out"
  echo
done
fi # BENCH_COST_ONLY

# ------------------------------------------------ 7: the cost model
# In rounds: each round calibrates the machine (partir calibrate, one
# pass: a description for two devices at once, then one for one device
# alone), and right after each description measures the programs it
# prices (partir exec --repeat: device steps, inputs scattered once) and
# predicts their step (partir cost on it).  A program's ratio is the
# median of its rounds' ratios.  On these VMs the two vCPUs run at times
# on one core for tens of seconds, halving what two threads get: a
# description measured in one spell and programs measured in another
# compare two machines, which pairing a round's description with its own
# measurements avoids.
echo
"$PARTIR" tactic "$PARTIR_TACTICS/megatron.lua" \
  "$top_srcdir/examples/transformer_layer.pir" --mesh model=2 \
  -o "$tmp/layer-m2.pir" || fail "the megatron tactic fails on the example"
"$LUA" "$models/transformer.lua" --layers 2 --batch 2 --seq 128 \
  --d_model 256 --heads 4 --d_ff 1024 >"$tmp/t2.pir" &&
  "$PARTIR" tactic "$PARTIR_TACTICS/megatron.lua" "$tmp/t2.pir" \
    --mesh model=2 -o "$tmp/t2-m2.pir" ||
  fail "the 2-layer transformer of make demo cannot be made"

# exec_median STEPS FILE [--mesh M]: the median step of partir exec, in ms.
exec_median() {
  em_steps=$1
  shift
  "$PARTIR" exec "$@" --repeat "$em_steps" 2>&1 >/dev/null </dev/null |
    sed -n 's/^partir: .* steps: min .* ms, median \([0-9.]*\) ms$/\1/p'
}

# to_ms "X unit": the cost table's time in milliseconds.
to_ms() {
  awk -v v="$1" -v u="$2" 'BEGIN {
    f = u == "ns" ? 1e-6 : u == "us" ? 1e-3 : u == "ms" ? 1 : u == "s" ? 1e3 : -1
    if (v == "" || f < 0) print ""; else printf "%.6g\n", v * f }'
}

# median FILE: the median of the numbers in FILE, one a line.
median() {
  sort -g "$1" | awk '{ v[NR] = $1 } END {
    if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

echo "cost model (item 7): predicted step time on this machine's calibrated"
echo "description against the median step of partir exec --repeat (as many"
echo "steps as fill 0.2 s, at least $BENCH_RUNS, at most 2000), in"
echo "$BENCH_RUNS rounds, each calibrating (partir calibrate --passes 1) and"
echo "measuring right after; ratio = predicted / measured, the median of the"
echo "rounds' ratios (measured and predicted: the medians of the rounds')"
# The programs, "label|mesh (- for one device)|file"
entries=$tmp/entries
for entry in \
  "examples/mlp.pir|-|$top_srcdir/examples/mlp.pir" \
  "examples/mlp_tiled.pir|batch=2|$top_srcdir/examples/mlp_tiled.pir" \
  "examples/transformer_layer.pir|-|$top_srcdir/examples/transformer_layer.pir" \
  "...megatron|model=2|$tmp/layer-m2.pir" \
  "2-layer transformer (make demo), megatron|model=2|$tmp/t2-m2.pir" \
  "mlp (item 2)|-|$tmp/mlp.pir" \
  "...batch|batch=2|$tmp/mlp-b2.pir" \
  "transformer layer (item 3)|-|$tmp/tr.pir" \
  "...megatron|model=2|$tmp/tr-m2.pir" \
  "12-layer transformer (item 6)|-|$tmp/t12.pir" \
  "8 elementwise ops (item 4)|-|$tmp/chain.pir"; do
  [ -f "${entry##*|}" ] && printf '%s\n' "$entry"
done >"$entries"

# entry_fields ENTRY: sets 'what', 'mesh' and 'file' of one program.
entry_fields() {
  what=${1%%|*}
  rest=${1#*|}
  mesh=${rest%%|*}
  file=${rest#*|}
}

# The steps a process times: as many as fill about 0.2 s (at most
# 2000), as partir calibrate does: a few steps of microseconds are mostly
# the first ones' page faults and the threads' start.
n=0
while IFS= read -r entry; do
  n=$((n + 1))
  entry_fields "$entry"
  if [ "$mesh" = - ]; then set -- "$file"; else set -- "$file" --mesh "$mesh"; fi
  first=$(exec_median "$BENCH_RUNS" "$@")
  awk -v m="${first:-}" -v r="$BENCH_RUNS" 'BEGIN {
    if (m == "") { print 0; exit }
    n = int(200 / (m + 0.001)); if (n > 2000) n = 2000
    print (n > r ? n : r) }' >"$tmp/steps.$n"
  : >"$tmp/measured.$n"
  : >"$tmp/predicted.$n"
  : >"$tmp/ratio.$n"
done <"$entries"

# measure_round DEVICES HW: each program on DEVICES devices (1: no mesh)
# measured, then priced on HW.
measure_round() {
  devices=$1 hw=$2 n=0
  while IFS= read -r entry; do
    n=$((n + 1))
    entry_fields "$entry"
    steps=$(cat "$tmp/steps.$n")
    if [ "$mesh" = - ]; then
      [ "$devices" = 1 ] || continue
      set -- "$file"
    else
      [ "$devices" = 2 ] || continue
      set -- "$file" --mesh "$mesh"
    fi
    [ "$steps" -gt 0 ] || continue
    measured=$(exec_median "$steps" "$@")
    predicted=$(to_ms $("$PARTIR" cost "$@" --hw "$hw" </dev/null |
      awk '$1 == "total" { print $2, $3; exit }'))
    ratio=$(div "$predicted" "$measured")
    if [ "$ratio" != - ]; then
      echo "$measured" >>"$tmp/measured.$n"
      echo "$predicted" >>"$tmp/predicted.$n"
      echo "$ratio" >>"$tmp/ratio.$n"
    fi
  done <"$entries"
}

echo "bench-codegen: calibrating and measuring in $BENCH_RUNS rounds" >&2
round=0
while [ "$round" -lt "$BENCH_RUNS" ]; do
  round=$((round + 1))
  for devices in 2 1; do
    hw=$tmp/d$devices.r$round.hw
    if "$PARTIR" calibrate --devices "$devices" --runs "$BENCH_RUNS" \
      --passes 1 -o "$hw" </dev/null; then
      measure_round "$devices" "$hw"
    else
      fail "partir calibrate --devices $devices fails"
    fi
  done
done
echo "  the first round's descriptions:"
grep -h '^# [a-z_0-9]*: ' "$tmp/d1.r1.hw" "$tmp/d2.r1.hw" 2>/dev/null |
  sed 's/^# /  /'

printf '  %-44s %-9s %11s %11s %7s  %s\n' "program" "mesh" "measured ms" \
  "predicted" "ratio" "target 0.75..1.25"
within=0 total=0 n=0
while IFS= read -r entry; do
  n=$((n + 1))
  entry_fields "$entry"
  ratio=$(median "$tmp/ratio.$n")
  verdict=
  if [ -n "$ratio" ]; then
    total=$((total + 1))
    if awk -v r="$ratio" 'BEGIN { exit !(r >= 0.75 && r <= 1.25) }'; then
      within=$((within + 1))
      verdict=within
    else
      verdict=outside
    fi
    ratio=$(awk -v r="$ratio" 'BEGIN { printf "%.2f", r }')
  else
    ratio=-
    fail "$what: no measured or predicted time"
  fi
  printf '  %-44s %-9s %11s %11s %7s  %s\n' "$what" "$mesh" \
    "$(ms "$(median "$tmp/measured.$n")")" \
    "$(ms "$(median "$tmp/predicted.$n")")" "$ratio" "$verdict"
  printf '  %-44s %-9s %s\n' "" "" \
    "rounds: $(tr '\n' ' ' <"$tmp/ratio.$n")"
done <"$entries"
echo "  $within of $total programs predicted within 25 %"
exit $status
