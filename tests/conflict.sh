#!/bin/sh
# Conflicts (issue 14, item 5): one operand of an add split by rows over
# "model", the other by columns over "model".  One axis cannot split two
# dimensions of the sum, so propagate fails, from 'partir rewrite', a Lua
# tactic ('partir tactic') and the REPL, naming both splits and where
# they came from; 'propagate --resolve' keeps the split the cost model
# prices fastest, the program lowers, and the simulator agrees with the
# interpreter.  (The fixtures in rewrite.test check the engine's texts;
# the protocol's reply is in tests/protocol/check_protocol.py.)
. "$top_srcdir/tests/tap.sh"
PARTIR_REPL=${PARTIR_REPL:-$top_builddir/repl/partir-repl}

cat >"$tmp/add.pir" <<'EOF'
func @f(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %s = add(%x, %y)
  return %s
}
EOF
split='arg-tile %x 0 4 model; arg-tile %y 1 4 model'
conflict='conflicting splits: axis "model" at %s (add): operand 1 split along dimension 0 (from %x dimension 0), operand 2 along dimension 1 (from %y dimension 1)'

# ---- partir rewrite: exit 1, the conflict on stderr, nothing written
"$PARTIR" rewrite "$tmp/add.pir" --do "$split; propagate" -o "$tmp/out.pir" \
  >"$tmp/out" 2>"$tmp/err"
check "rewrite: a conflict exits 1" test $? -eq 1
check "...naming the axis, both operands and the value and dimension each split came from" \
  grep -qF "add.pir: 'propagate': $conflict" "$tmp/err"
check "...and saying what resolves it" grep -qF "'propagate --resolve' keeps the split" "$tmp/err"
check "...and writes nothing" test ! -e "$tmp/out.pir" -a ! -s "$tmp/out"

# ---- partir tactic: the Lua error fails the tactic
printf 'return function(s)\n  return (s:arg_tile("x", 0, 4, "model"):arg_tile("y", 1, 4, "model"):propagate())\nend\n' \
  >"$tmp/split.lua"
"$PARTIR" tactic "$tmp/split.lua" "$tmp/add.pir" --mesh model=2 >"$tmp/out" 2>"$tmp/err"
check "tactic: propagate on a conflict fails the tactic (exit 1)" test $? -eq 1
check "...with the conflict" grep -qF "'propagate': $conflict" "$tmp/err"
check "...and where the tactic raised it" grep -q 'split.lua:2: in function' "$tmp/err"
check "...and prints no program" test ! -s "$tmp/out"

# ---- propagate --resolve on cpu2 (link_bw 8.5e9 B/s, link_latency 1e-6 s
# a step, 111e9 FLOP/s), on model=2.  Keeping x's rows: y arrives split by
# columns, a [8,4] f32 chunk of 128 B, and an all_to_all re-splits it by
# rows, sending (2-1)/2 * 128 = 64 B in one step: 1e-6 + 64/8.5e9 =
# 1.0075e-6 s, and the add of a [4,8] chunk, 32 FLOP = 0.29 ns: 1.01 us.
# Keeping y's columns moves x's [4,8] chunk the same way: 64 B, 1.01 us.
# The tie keeps the first operand's split.
choice='propagate --resolve: axis "model" at %s (add): chose all_to_all of %y from dimension 1 to 0 (keeping %x dimension 0): 1.01 us a step on cpu2, 1 all_to_all over model, 64 B sent; over all_to_all of %x from dimension 0 to 1 (keeping %y dimension 1): 1.01 us a step on cpu2, 1 all_to_all over model, 64 B sent (as fast: the first operand'"'"'s split stays)'
"$PARTIR" rewrite "$tmp/add.pir" --do "$split; propagate --resolve" \
  -o "$tmp/resolved.pir" 2>"$tmp/err"
check "rewrite: propagate --resolve succeeds" test $? -eq 0
check "...and says what it chose, and both prices" grep -qxF "partir: $tmp/add.pir: $choice" "$tmp/err"
"$PARTIR" lower "$tmp/resolved.pir" --mesh model=2 --stats --simulate >"$tmp/lowered" 2>&1
check "...the program lowers, and the simulator agrees with the interpreter" \
  grep -qxF "simulated on 2 devices: the results agree with the interpreter (seed 0)" "$tmp/lowered"
check "...with the one all_to_all it chose" sh -c \
  "grep -c 'all_to_all(%y)' '$tmp/lowered' | grep -qx 1 && ! grep -q 'all_gather(' '$tmp/lowered'"
check "...whose cost is the price it said" sh -c \
  "'$PARTIR' cost '$tmp/resolved.pir' --mesh model=2 | grep -qE '^  total +1.01 us'"
# a later propagate leaves the resolved program, and says nothing
"$PARTIR" rewrite "$tmp/add.pir" --do "$split; propagate --resolve; propagate" \
  -o "$tmp/again.pir" 2>/dev/null
check "...and a later propagate leaves it as it is" cmp -s "$tmp/again.pir" "$tmp/resolved.pir"

# --hw prices on another machine: h100x8 (link_latency 5e-6 s, link_bw
# 450e9 B/s): 5e-6 + 64/450e9 = 5.0001e-6 s a side
"$PARTIR" rewrite "$tmp/add.pir" --do "$split; propagate --resolve" --hw h100x8 \
  >/dev/null 2>"$tmp/err"
check "rewrite --hw h100x8: the prices are that machine's" \
  grep -qF "(keeping %x dimension 0): 5 us a step on h100x8, 1 all_to_all over model, 64 B sent" "$tmp/err"
"$PARTIR" rewrite "$tmp/add.pir" --do "$split; propagate --resolve" --set link_latency=2x \
  >/dev/null 2>"$tmp/err"
check "...and --set asks what if: twice the latency, 2.01 us" \
  grep -qF "(keeping %x dimension 0): 2.01 us a step on cpu2" "$tmp/err"

# ---- the tactic resolves with propagate{resolve = true}: the same program
printf 'return function(s)\n  local t, _, chose = s:arg_tile("x", 0, 4, "model"):arg_tile("y", 1, 4, "model"):propagate { resolve = true }\n  assert(#chose == 1 and chose[1]:find("chose all_to_all of %%y", 1, true), chose[1])\n  return t\nend\n' \
  >"$tmp/resolve.lua"
"$PARTIR" tactic "$tmp/resolve.lua" "$tmp/add.pir" --mesh model=2 -o "$tmp/tactic.pir" 2>"$tmp/err"
check "tactic: propagate{resolve = true} succeeds and returns its choice" test $? -eq 0
check "...with the program 'partir rewrite' resolves to" cmp -s "$tmp/tactic.pir" "$tmp/resolved.pir"

# ---- the REPL: the error, the state kept, then --resolve and its note
printf 'load %s\n%s\npropagate\nhistory\npropagate --resolve\nsave %s\n' \
  "$tmp/add.pir" "$(echo "$split" | tr ';' '\n')" "$tmp/repl.pir" |
  (cd "$tmp" && "$PARTIR_REPL" --echo) >"$tmp/repl.out" 2>"$tmp/repl.err"
check "repl: propagate on a conflict is an error naming both splits" \
  grep -qF "<stdin>:4: error: 'propagate': $conflict" "$tmp/repl.err"
check "...and the session keeps its state (history has no propagate)" sh -c \
  "sed -n '/^partir> history/,/^partir> propagate --resolve/p' '$tmp/repl.out' | grep -c . | grep -qx 5"
check "...propagate --resolve notes its choice" \
  grep -qxF "<stdin>:6: note: $choice" "$tmp/repl.err"
check "...and gives the program partir rewrite gives" cmp -s "$tmp/repl.pir" "$tmp/resolved.pir"
done_testing
