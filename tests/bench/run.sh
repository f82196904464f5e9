#!/bin/sh
# run.sh — the benchmarks (make bench).
#
# Generates MLPs of 10, 100 and 1000 layers and transformers of 1, 10 and
# 100 layers with examples/models/*.lua into a temporary directory, then
# runs tests/bench/bench-rewrite on them, which prints the table.  Then
# generates GPT-3-shaped transformers of 12, 24, 48 and 96 layers and runs
# tests/bench/bench-gpt3 on them with three strategies (the tactics in
# tests/bench/tactics/), tests/bench/bench-gemm (the generated sgemm
# against OpenBLAS), bench-codegen.sh, which times compiled execution
# against NumPy, JAX and memcpy (issue 13), bench-train.sh, training
# steps compiled against NumPy's (issue 16), and last bench-search.sh,
# partir search against the experts' tactics (issue 18).  Run it from the
# build directory; the environment may set:
#   BENCH_REWRITE  the rewrite benchmark (default tests/bench/bench-rewrite)
#   BENCH_GPT3     the GPT-3 benchmark (default tests/bench/bench-gpt3)
#   BENCH_GEMM     the gemm benchmark (default tests/bench/bench-gemm)
#   OPENBLAS_CORETYPE  OpenBLAS's kernels for bench-gemm (default: as
#                  OpenBLAS finds the CPU, then the one run.sh picks)
#   BENCH_SIZES    collective bandwidth against size, threads and MPI
#                  (default tests/bench/bench-collective-sizes; bench-mpi.sh)
#   BENCH_COLLECTIVES  the collectives benchmark (default
#                  tests/bench/bench-collectives; skipped when not built)
#   BENCH_RUNS     runs per program, the median is reported (default 5 for
#                  bench-rewrite, 7 for bench-gpt3: its 12-layer programs
#                  take 20 ms, whose noise moves t(96)/t(12) by 20 %)
#   LUA            a Lua 5.4 interpreter (default lua5.4)
#   PARTIR_RULES   rule directory (default the source tree's rules/)
#   PARTIR_TACTICS tactic directory (default the source tree's tactics/)
#   PARTIR_HW      hardware directory (default the source tree's hw/)
#   top_srcdir     the source tree (default: two levels above this script)
#   BENCH_CODEGEN  the compiled-execution driver (default
#                  tests/bench/bench-codegen; bench-codegen.sh says more)
# The exit status is 1 when bench-gpt3 finds a wrong count of all-reduces,
# or when compiled code fails to run or disagrees with NumPy; timings
# never fail it.
set -e

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${BENCH_REWRITE:=tests/bench/bench-rewrite}"
: "${BENCH_GPT3:=tests/bench/bench-gpt3}"
: "${BENCH_GEMM:=tests/bench/bench-gemm}"
gpt3_runs=${BENCH_RUNS:-7}
: "${BENCH_RUNS:=5}"
: "${LUA:=lua5.4}"
: "${PARTIR_RULES:=$top_srcdir/rules}"
: "${PARTIR_TACTICS:=$top_srcdir/tactics}"
: "${PARTIR_HW:=$top_srcdir/hw}"
export PARTIR_RULES PARTIR_TACTICS PARTIR_HW

if ! command -v "$LUA" >/dev/null 2>&1; then
  echo "bench: no '$LUA' to generate the programs (apt-get install lua5.4," \
    "or set LUA)" >&2
  exit 1
fi
if ! test -x "$BENCH_REWRITE"; then
  echo "bench: no $BENCH_REWRITE (build it: make tests/bench/bench-rewrite," \
    "or set BENCH_REWRITE)" >&2
  exit 1
fi
if ! test -x "$BENCH_GPT3"; then
  echo "bench: no $BENCH_GPT3 (build it: make tests/bench/bench-gpt3," \
    "or set BENCH_GPT3)" >&2
  exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/partir-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

models=$top_srcdir/examples/models
set --
for n in 10 100 1000; do
  "$LUA" "$models/mlp.lua" --layers $n --batch 16 --width 256 \
    >"$tmp/mlp-$n.pir"
  set -- "$@" "$tmp/mlp-$n.pir"
done
for n in 1 10 100; do
  "$LUA" "$models/transformer.lua" --layers $n --batch 16 --seq 16 \
    --d_model 64 --heads 4 --d_ff 128 >"$tmp/transformer-$n.pir"
  set -- "$@" "$tmp/transformer-$n.pir"
done

echo "mlp: --batch 16 --width 256; transformer: --batch 16 --seq 16" \
  "--d_model 64 --heads 4 --d_ff 128"
"$BENCH_REWRITE" --runs "$BENCH_RUNS" "$@" \
  --one-file "$tmp/mlp-1000.pir" \
  --one 'apply relu-tile-0 at %a100 w=8' \
  --one 'apply relu-tile-0 at %a500 w=8' \
  --one 'apply relu-tile-0 at %a900 w=8' \
  --one 'tile %h500 0 8'

# GPT-3 shapes (issue 12): parse -> tactic -> lower -> cost per strategy
gpt3_shape="--batch 8 --seq 2048 --d_model 12288 --heads 96 --d_ff 49152"
set --
for n in 12 24 48 96; do
  # shellcheck disable=SC2086 # the shape is several arguments
  "$LUA" "$models/transformer.lua" --layers $n $gpt3_shape \
    >"$tmp/gpt3-$n.pir"
  set -- "$@" "$tmp/gpt3-$n.pir"
done
bench_tactics=$top_srcdir/tests/bench/tactics
echo
echo "gpt3: $gpt3_shape"
gpt3_status=0
"$BENCH_GPT3" --runs "$gpt3_runs" --mesh batch=8,model=8 --hw h100x8 \
  --strategy "batch+megatron=$bench_tactics/batch-megatron.lua" \
  --strategy "megatron+batch=$bench_tactics/megatron-batch.lua" \
  --strategy "batch+megatron+zero=$bench_tactics/batch-megatron-zero.lua" \
  "$@" || gpt3_status=$?

# The same phases counted in instructions, which the machine's load and
# caches do not move: CPU time grows faster than the work once the
# program's terms outgrow the caches (tests/bench/README), so the growth
# of the work itself is read here, at the smallest and largest sizes.
if test "${BENCH_GPT3_CALLGRIND:-1}" != 0 && command -v valgrind >/dev/null &&
  command -v python3 >/dev/null; then
  echo
  echo "the same in instructions (valgrind --tool=callgrind, one run each),"
  echo "millions; growth = t(96)/t(12) (target <= 9)"
  printf '%-20s %6s %8s %8s %8s %8s %8s\n' strategy layers parse tactic \
    lower cost total
  for strategy in batch-megatron megatron-batch batch-megatron-zero; do
    label=$(echo "$strategy" | sed 's/-/+/g')
    for n in 12 96; do
      cg=$tmp/cg-$strategy-$n
      mkdir -p "$cg"
      valgrind --tool=callgrind --callgrind-out-file="$cg/cg.%p" \
        "$BENCH_GPT3" --runs 1 --mesh batch=8,model=8 --hw h100x8 \
        --strategy "$label=$bench_tactics/$strategy.lua" \
        "$tmp/gpt3-$n.pir" >/dev/null 2>&1 || true
      # the forked child that ran the pipeline is the file with a tactic
      for f in "$cg"/cg.*; do
        python3 "$top_srcdir/tests/bench/callgrind-phases.py" "$f" \
          pipeline_load_program pipeline_tactic pipeline_lower pipeline_cost
      done | awk '{ v[$1] = v[$1] > $2 ? v[$1] : $2 }
        END { print v["pipeline_load_program"], v["pipeline_tactic"],
                    v["pipeline_lower"], v["pipeline_cost"] }' >"$cg/phases"
    done
    awk -v s="$label" '
      function row(n, a, t) {
        t = a[1] + a[2] + a[3] + a[4]
        printf "%-20s %6s %8.1f %8.1f %8.1f %8.1f %8.1f\n", s, n,
          a[1] / 1e6, a[2] / 1e6, a[3] / 1e6, a[4] / 1e6, t / 1e6
        return t }
      function ratio(x, y) { return y > 0 ? sprintf("%8.2f", x / y) : "       -" }
      NR == 1 { split($0, a); ta = row(12, a) }
      NR == 2 { split($0, b); tb = row(96, b)
        printf "%-20s %6s %s %s %s %s %s\n", s, "96/12", ratio(b[1], a[1]),
          ratio(b[2], a[2]), ratio(b[3], a[3]), ratio(b[4], a[4]), ratio(tb, ta) }
    ' "$tmp/cg-$strategy-12/phases" "$tmp/cg-$strategy-96/phases"
  done
fi

# the generated gemm against OpenBLAS (issue 13): as OpenBLAS finds the
# CPU, then, unless OPENBLAS_CORETYPE is set, with the core that matches
# the CPU's vector extensions (OpenBLAS takes a CPU it does not know for
# an SSE3 Prescott)
echo
if test -x "$BENCH_GEMM"; then
  "$BENCH_GEMM" --runs "$BENCH_RUNS"
  if test -z "${OPENBLAS_CORETYPE:-}" && grep -q '^flags' /proc/cpuinfo 2>/dev/null; then
    gemm_core=
    case " $(grep -m1 '^flags' /proc/cpuinfo) " in
    *" avx512_bf16 "*) gemm_core=Cooperlake ;;
    *" avx512f "*) gemm_core=SkylakeX ;;
    *" avx2 "*) gemm_core=Haswell ;;
    esac
    if test -n "$gemm_core"; then
      echo
      echo "again with OPENBLAS_CORETYPE=$gemm_core (this CPU's extensions):"
      OPENBLAS_CORETYPE=$gemm_core "$BENCH_GEMM" --runs "$BENCH_RUNS"
    fi
  fi
else
  echo "bench: no $BENCH_GEMM (build it: make tests/bench/bench-gemm," \
    "or set BENCH_GEMM); skipping the gemm benchmark" >&2
fi

# the threaded runtime's collectives against memcpy (bench-collectives.c)
: "${BENCH_COLLECTIVES:=tests/bench/bench-collectives}"
echo
if test -x "$BENCH_COLLECTIVES"; then
  "$BENCH_COLLECTIVES" --runs "$BENCH_RUNS"
else
  echo "bench: no $BENCH_COLLECTIVES (make tests/bench/bench-collectives)," \
    "collectives skipped"
fi

# collective bandwidth against size and a transformer step, threads and
# MPI, with the cost model's predictions (bench-mpi.sh)
echo
BENCH_SIZES=${BENCH_SIZES:-tests/bench/bench-collective-sizes} \
  PARTIR=${PARTIR:-${abs_top_builddir:-.}/repl/partir} BENCH_RUNS=$BENCH_RUNS \
  sh "$top_srcdir/tests/bench/bench-mpi.sh"

# the agent protocol over a pipe
if command -v python3 >/dev/null 2>&1; then
  echo
  python3 "$top_srcdir/tests/bench/bench-protocol.py" \
    "${PARTIR_REPL:-$abs_top_builddir/repl/partir-repl}" \
    "${PARTIR:-$abs_top_builddir/repl/partir}" \
    "$(cd "$top_srcdir/examples" && pwd)" "$tmp"
  echo
  python3 "$top_srcdir/tests/bench/bench-walk.py" \
    "${PARTIR_REPL:-$abs_top_builddir/repl/partir-repl}" "$tmp" \
    --models "$top_srcdir/examples/models"
fi

# compiled execution (issue 13): partir exec against NumPy, JAX, memcpy
echo
codegen_status=0
PARTIR=${PARTIR:-${abs_top_builddir:-.}/repl/partir} \
  sh "$top_srcdir/tests/bench/bench-codegen.sh" || codegen_status=$?

# training steps (issue 16): partir exec against NumPy written by hand
echo
train_status=0
PARTIR=${PARTIR:-${abs_top_builddir:-.}/repl/partir} \
  sh "$top_srcdir/tests/bench/bench-train.sh" || train_status=$?

# automatic partitioning (issue 18): partir search against the tactics
echo
search_status=0
PARTIR=${PARTIR:-${abs_top_builddir:-.}/repl/partir} LUA=$LUA \
  sh "$top_srcdir/tests/bench/bench-search.sh" || search_status=$?

if [ "$gpt3_status" -ne 0 ]; then
  exit "$gpt3_status"
fi
if [ "$codegen_status" -ne 0 ]; then
  exit "$codegen_status"
fi
if [ "$train_status" -ne 0 ]; then
  exit "$train_status"
fi
exit $search_status
