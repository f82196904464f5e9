#!/bin/sh
# bench-search.sh — partir search (docs/search.md) against the experts'
# tactics (make bench; run.sh runs it last).
#
# Transformer stacks of 2, 4, 12 and 24 layers (batch 16, seq 512,
# d_model 1024, 16 heads, d_ff 4096) on batch=2,model=4 with h100x8: the
# modelled step time of tests/bench/tactics/batch-megatron.lua beside
# what MCTS (the default budget, 1000 states) and beam search (width 4)
# find, the states costed, the one the best was (best@), the search's
# wall time and states/s; 'ok'
# when the search is within 5% of the expert or better.  Then the
# GPT-3-shaped 96-layer model on model=8: the Megatron tactic's peak
# memory beside the search's (BENCH_SEARCH_GPT3_BUDGET states, default
# 200; 0 skips it: it takes about a minute).  Timings never fail it; the
# exit status is 1 when a search fails to run.
# Environment: PARTIR (default repl/partir), LUA (default lua5.4),
# BENCH_SEARCH_LAYERS (default "2 4 12 24"), top_srcdir (default: two
# levels above this script).
set -e
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${PARTIR:=repl/partir}"
: "${LUA:=lua5.4}"
: "${BENCH_SEARCH_GPT3_BUDGET:=200}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/partir-bench-search.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
models=$top_srcdir/examples/models
tactics=$top_srcdir/tests/bench/tactics

# seconds FILE MESH: the modelled step time on h100x8 ('partir cost')
seconds() {
  "$PARTIR" cost "$1" --mesh "$2" --hw h100x8 | awk '
    $1 == "total" {
      f = $3 == "s" ? 1 : $3 == "ms" ? 1e-3 : $3 == "us" ? 1e-6 : $3 == "ns" ? 1e-9 : 0
      printf "%.4g\n", $2 * f
    }'
}

mesh=batch=2,model=4
echo "partir search on $mesh, h100x8: transformer --batch 16 --seq 512" \
  "--d_model 1024 --heads 16 --d_ff 4096"
printf '%-7s %-11s %-5s %-11s %7s %7s %9s %9s  %s\n' layers expert algo found \
  states best@ seconds states/s "within 5%"
for layers in ${BENCH_SEARCH_LAYERS:-2 4 12 24}; do
  "$LUA" "$models/transformer.lua" --layers $layers --batch 16 --seq 512 \
    --d_model 1024 --heads 16 --d_ff 4096 >"$tmp/t.pir"
  "$PARTIR" tactic "$tactics/batch-megatron.lua" "$tmp/t.pir" --mesh $mesh \
    --hw h100x8 -o "$tmp/expert.pir"
  expert=$(seconds "$tmp/expert.pir" $mesh)
  for algo in mcts beam; do
    "$PARTIR" search "$tmp/t.pir" --mesh $mesh --hw h100x8 --algo $algo \
      -o "$tmp/found.pir" >"$tmp/report"
    found=$(seconds "$tmp/found.pir" $mesh)
    # "...: N states costed in T s (R states/s), M transpositions, the best
    # at state B; ..."
    set -- $(sed -n '1s/.*: \([0-9]*\) states costed in \([0-9.]*\) s (\([0-9]*\) states\/s).* the best at state \([0-9]*\).*/\1 \2 \3 \4/p' "$tmp/report")
    verdict=$(awk -v a="$found" -v b="$expert" 'BEGIN { print (a <= 1.05 * b) ? "ok" : "NO" }')
    printf '%-7s %-11s %-5s %-11s %7s %7s %9s %9s  %s\n' $layers "$expert s" $algo \
      "$found s" "$1" "$4" "$2" "$3" "$verdict"
  done
done

if [ "$BENCH_SEARCH_GPT3_BUDGET" -gt 0 ]; then
  "$LUA" "$models/transformer.lua" --layers 96 --batch 8 --seq 2048 \
    --d_model 12288 --heads 96 --d_ff 49152 >"$tmp/gpt3.pir"
  "$PARTIR" tactic "$top_srcdir/tactics/megatron.lua" "$tmp/gpt3.pir" \
    --mesh model=8 --hw h100x8 -o "$tmp/gpt3.megatron.pir"
  echo
  echo "GPT-3 shape, 96 layers, model=8, h100x8 (80 GB a device):"
  printf '  %-22s' "megatron.lua:"
  "$PARTIR" cost "$tmp/gpt3.megatron.pir" --mesh model=8 --hw h100x8 |
    awk '/^  peak memory/ { p = $5 " " $6; gsub(/[()]/, "", p) } /% of/ { f = $0 } $1 == "total" { t = $2 " " $3 }
      END { sub(/^ */, "", f); print "peak " p ", " f ", step " t }'
  "$PARTIR" search "$tmp/gpt3.pir" --mesh model=8 --hw h100x8 \
    --budget "$BENCH_SEARCH_GPT3_BUDGET" -o "$tmp/gpt3.found.pir" >"$tmp/report"
  printf '  %-22s' "search ($BENCH_SEARCH_GPT3_BUDGET states):"
  "$PARTIR" cost "$tmp/gpt3.found.pir" --mesh model=8 --hw h100x8 |
    awk '/^  peak memory/ { p = $5 " " $6; gsub(/[()]/, "", p) } /% of/ { f = $0 } $1 == "total" { t = $2 " " $3 }
      END { sub(/^ */, "", f); print "peak " p ", " f ", step " t }'
  sed -n '1s/.*: \([0-9]*\) states costed in \([0-9.]*\) s.*/  search: \1 states in \2 s/p' "$tmp/report"
fi
