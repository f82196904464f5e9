#!/bin/sh
# run.sh — the rewrite benchmark (make bench).
#
# Generates MLPs of 10, 100 and 1000 layers and transformers of 1, 10 and
# 100 layers with examples/models/*.lua into a temporary directory, then
# runs tests/bench/bench-rewrite on them, which prints the table.  Run it
# from the build directory; the environment may set:
#   BENCH_REWRITE  the benchmark binary (default tests/bench/bench-rewrite)
#   BENCH_RUNS     runs per program, the median is reported (default 5)
#   LUA            a Lua 5.4 interpreter (default lua5.4)
#   PARTIR_RULES   rule directory (default the source tree's rules/)
#   top_srcdir     the source tree (default: two levels above this script)
set -e

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${BENCH_REWRITE:=tests/bench/bench-rewrite}"
: "${BENCH_RUNS:=5}"
: "${LUA:=lua5.4}"
: "${PARTIR_RULES:=$top_srcdir/rules}"
export PARTIR_RULES

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

# the agent protocol over a pipe
if command -v python3 >/dev/null 2>&1; then
  echo
  python3 "$top_srcdir/tests/bench/bench-protocol.py" \
    "${PARTIR_REPL:-$abs_top_builddir/repl/partir-repl}" \
    "${PARTIR:-$abs_top_builddir/repl/partir}" \
    "$(cd "$top_srcdir/examples" && pwd)" "$tmp"
fi
