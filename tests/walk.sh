#!/bin/sh
# Random walks stay small (issue 12): tests/walk/walk_size.py drives
# partir-repl --json with random legal actions and fails when a program
# grows beyond a constant factor of the original (FACTOR, at its top).
# The programs: the 12-layer transformer at the generator's default
# widths on batch=2,model=2, and the GPT-3-shaped 2-layer transformer on
# batch=8,model=8; each twice: walks drawn uniformly, and walks that
# take propagate half the time it is listed (the adversarial case:
# tilings over two axes that conflict, propagated).
. "$top_srcdir/tests/tap.sh"
PARTIR_REPL=${PARTIR_REPL:-$top_builddir/repl/partir-repl}
if ! command -v python3 >/dev/null 2>&1; then
  echo "1..0 # SKIP no python3"
  exit 0
fi
models=$top_srcdir/examples/models
lua5.4 "$models/transformer.lua" --layers 12 >"$tmp/t12.pir"
lua5.4 "$models/transformer.lua" --layers 2 --batch 8 --seq 2048 \
  --d_model 12288 --heads 96 --d_ff 49152 >"$tmp/gpt3.pir"
dir=$(cd "$tmp" && pwd)
python3 "$top_srcdir/tests/walk/walk_size.py" "$PARTIR_REPL" "$dir" \
  "transformer-12:$dir/t12.pir:batch=2,model=2" \
  "gpt3-2:$dir/gpt3.pir:batch=8,model=8" \
  "transformer-12-propagating:$dir/t12.pir:batch=2,model=2:0.5:100" \
  "gpt3-2-propagating:$dir/gpt3.pir:batch=8,model=8:0.5:100"
