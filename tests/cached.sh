#!/bin/sh
# What the agent protocol keeps between requests changes no reply (issue
# 12): tests/protocol/check_cached.py checks on random walks that the
# actions listed (decided at their value, kept with the state) are exactly
# those whose command changes the program, and that a fresh server lists
# the same actions and observes the same cost and features (lowerings
# are remembered across states), and that agents' sessions on the
# 12-layer transformer and the GPT-3-shaped 2-layer one get the same
# replies from a server whose memos are emptied at every request.
# Prints TAP.
. "$top_srcdir/tests/tap.sh"
PARTIR_REPL=${PARTIR_REPL:-$top_builddir/repl/partir-repl}
if ! command -v python3 >/dev/null 2>&1; then
  echo "1..0 # SKIP no python3"
  exit 0
fi
models=$top_srcdir/examples/models
lua5.4 "$models/transformer.lua" --layers 12 >"$tmp/t12.pir"
lua5.4 "$models/transformer.lua" --layers 2 --batch 8 --seq 2048 \
  --d_model 12288 --heads 96 --d_ff 49152 >"$tmp/gpt3-2.pir"
python3 "$top_srcdir/tests/protocol/check_cached.py" "$PARTIR_REPL" \
  "$(cd "$top_srcdir/examples" && pwd)" "$(cd "$tmp" && pwd)"
