#!/bin/sh
# The rewrite engine end to end: every shipped rule checked against the
# interpreter, random rewrite sequences on every example, and the CLI's
# rewrite command (the talk's session, failures that write nothing).
. "$top_srcdir/tests/tap.sh"
ex=$top_srcdir/examples
rules=$(cd "$top_srcdir/rules" && pwd)

for seed in 1 2 3; do
  check "check-rules --seed $seed: every rule has instances and keeps the meaning" \
    quiet "$PARTIR" check-rules --seed $seed
done
# hundreds of random sequences of legal rewrites per example
for f in mlp mlp_tiled transformer_layer; do
  check "$f: 200 random rewrite sequences keep the meaning and type-check" \
    quiet "$PARTIR" walk "$ex/$f.pir" --walks 200 --steps 8 --seed 11
done

# a rule that changes the meaning is caught by check-rules
cat >"$tmp/bad.rules" <<RULES
include "$rules/ops.rules"
include "$rules/partir.rules"
rule drop-neg: neg(x) ~~> x
RULES
"$PARTIR" check-rules "$tmp/bad.rules" >"$tmp/out" 2>&1
check "check-rules reports a wrong rule with an instance" \
  sh -c "test $? -eq 1 && grep -q \"FAIL after 'apply drop-neg\" '$tmp/out'"
# every rule is checked: each failure is reported, the counts are true
cat >"$tmp/bad3.rules" <<RULES
include "$rules/ops.rules"
include "$rules/partir.rules"
rule drop-neg: neg(x) ~~> x
rule drop-exp: exp(x) ~~> x
rule gather-of-shard [spmd]:
  all_gather(shard(x){axes = a, size = k, dim = d}){axes = a, size = k, dim = d}  ~~>  x
RULES
"$PARTIR" check-rules "$tmp/bad3.rules" >"$tmp/out" 2>&1
check "check-rules goes on after a failing rule and exits 1" test $? -eq 1
check "...reports each failing rule" sh -c \
  "grep -Eq '^FAIL +drop-neg +' '$tmp/out' && grep -Eq '^FAIL +drop-exp +' '$tmp/out' &&
   grep -Eq '^FAIL +gather-of-shard +' '$tmp/out'"
check "...counts them in the summary" grep -Eq '^[0-9]+ rules, 3 failed,' "$tmp/out"
check "...after a line for every rule it counts" sh -c \
  "test \$(grep -Ec '^(ok|NONE|FAIL) +[^ :]+ +([0-9]|no instance|wrong on)' '$tmp/out') -eq \$(sed -n 's/^\([0-9]*\) rules, .*/\1/p' '$tmp/out')"
# check-rules takes --rules (repeatable) like every command, and files
printf 'rule drop-neg: neg(x) ~~> x\n' >"$tmp/drop-neg.rules"
"$PARTIR" check-rules --rules "$rules/ops.rules" --rules "$rules/partir.rules" \
  "$tmp/drop-neg.rules" >"$tmp/out" 2>&1
check "check-rules --rules FILE --rules FILE FILE loads all three" sh -c \
  "test $? -eq 1 && grep -q \"FAIL after 'apply drop-neg\" '$tmp/out'"
"$PARTIR" check-rules --tries 1 --rules "$rules/ops.rules" >"$tmp/out" 2>&1
check "...and --rules alone replaces the default rules" sh -c \
  "test $? -eq 1 && grep -q \"no 'arg-tile' rule is loaded\" '$tmp/out'"
# without partir.rules there is no arg-tile to make instances with
"$PARTIR" check-rules --tries 1 "$rules/ops.rules" >"$tmp/out" 2>&1
check "check-rules without 'arg-tile' says so (no assertion)" \
  sh -c "test $? -eq 1 && grep -q \"no 'arg-tile' rule is loaded\" '$tmp/out'"
"$PARTIR" check-rules --tries 1 "$rules/spmd.rules" >"$tmp/out" 2>&1
check "...and so does check-rules of spmd.rules alone (issue 14, item 11)" \
  sh -c "test $? -eq 1 && grep -q \"no 'arg-tile' rule is loaded\" '$tmp/out'"

# an [spmd] rule runs on simulated devices that hold different data:
# gathering the chunks of x gives back x only where x is replicated
cat >"$tmp/bad-spmd.rules" <<RULES
include "$rules/ops.rules"
include "$rules/partir.rules"
rule gather-of-shard [spmd]:
  all_gather(shard(x){axes = a, size = k, dim = d}){axes = a, size = k, dim = d}  ~~>  x
RULES
"$PARTIR" check-rules "$tmp/bad-spmd.rules" >"$tmp/out" 2>&1
check "check-rules runs [spmd] rules on simulated devices and catches a wrong one" \
  sh -c "test $? -eq 1 && grep -q 'FAIL  gather-of-shard: result 0' '$tmp/out' &&
         grep -q 'all_gather(%0)' '$tmp/out'"
# ... and a chunk commutes with a sum only over other axes
cat >"$tmp/bad-commute.rules" <<RULES
include "$rules/ops.rules"
include "$rules/partir.rules"
rule commute-any [spmd]:
  shard(all_reduce(x){axes = b, size = m}){axes = a, size = k, dim = d}
    ~~>  all_reduce(shard(x){axes = a, size = k, dim = d}){axes = b, size = m}
RULES
"$PARTIR" check-rules "$tmp/bad-commute.rules" >"$tmp/out" 2>&1
check "...and a commuting rule that needs disjoint axes" \
  sh -c "test $? -eq 1 && grep -q 'FAIL  commute-any: result 0' '$tmp/out'"
"$PARTIR" check-rules >"$tmp/out" 2>&1
check "check-rules checks every shipped [spmd] rule" sh -c \
  "grep -Eq '^ok +all_reduce-shard +[0-9]+ instances' '$tmp/out' &&
   grep -Eq '^ok +all_gather-shard +[0-9]+ instances' '$tmp/out' &&
   grep -Eq '^ok +all_gather-shard-other +[0-9]+ instances' '$tmp/out' &&
   grep -Eq '^ok +shard-all_reduce +[0-9]+ instances' '$tmp/out'"

# a type-changing rule is refused when the file loads
cat >"$tmp/retype.rules" <<RULES
include "$rules/ops.rules"
include "$rules/partir.rules"
rule retype:
  tile d (\\r -> e)  ~~>  sum (\\r -> e)
RULES
"$PARTIR" rules --rules "$tmp/retype.rules" >"$tmp/out" 2>"$tmp/err"
check "a type-changing rule is refused at load with file:line:col" \
  sh -c "test $? -eq 1 && grep -q 'retype.rules:3:6: error: rule .retype. changes the type' '$tmp/err'"

cat >"$tmp/retype-spmd.rules" <<RULES
include "$rules/ops.rules"
include "$rules/partir.rules"
rule retype [spmd]:
  all_reduce(x){axes = a, size = k}  ~~>  all_gather(x){axes = a, size = k, dim = 0}
RULES
"$PARTIR" rules --rules "$tmp/retype-spmd.rules" >"$tmp/out" 2>"$tmp/err"
check "a type-changing [spmd] rule is refused at load too" \
  sh -c "test $? -eq 1 && grep -q 'retype-spmd.rules:3:6: error: rule .retype. changes the type' '$tmp/err'"

# the talk's session: exactly examples/mlp_tiled.pir
"$PARTIR" rewrite "$ex/mlp.pir" --do 'arg-tile 0 0 8. propagate.' -o "$tmp/t.pir"
"$PARTIR" fmt "$ex/mlp_tiled.pir" >"$tmp/want.pir"
check "arg-tile 0 0 8; propagate gives mlp_tiled.pir" cmp -s "$tmp/t.pir" "$tmp/want.pir"
check "the result runs and agrees with the original" sh -c \
  "'$PARTIR' run '$ex/mlp.pir' --seed 5 > '$tmp/a' && '$PARTIR' run '$tmp/t.pir' --seed 5 > '$tmp/b' && cmp -s '$tmp/a' '$tmp/b'"
check "partir rules lists derived rules with their origin" sh -c \
  "'$PARTIR' rules | grep -A1 '^matmul-sum ' | grep -q 'derived from op matmul'"

# failures: a message, status 1, nothing written
"$PARTIR" rewrite "$ex/mlp.pir" --do 'arg-tile 0 0 17' -o "$tmp/bad.pir" 2>"$tmp/err"
check "a failing action exits 1" test $? -eq 1
check "...says why" grep -q "width 17 is not between 1 and the size 16" "$tmp/err"
check "...and writes nothing" test ! -e "$tmp/bad.pir"
"$PARTIR" rewrite "$ex/mlp.pir" --do 'frobnicate' 2>"$tmp/err" >/dev/null
check "an unknown command is refused" grep -q "unknown command 'frobnicate'" "$tmp/err"
"$PARTIR" rewrite "$ex/mlp.pir" 2>"$tmp/err" >/dev/null
check "rewrite without --do is refused" grep -q "needs --do" "$tmp/err"
"$PARTIR" rewrite "$ex/mlp.pir" --do propagate --rules "$tmp/none.rules" 2>"$tmp/err" >/dev/null
check "a missing rule file is reported" grep -q "none.rules" "$tmp/err"
# hostile rule files: a diagnostic, never a crash
awk 'BEGIN { srand(7); for (i = 0; i < 4096; i++) printf "%c", int(rand() * 256) }' \
  >"$tmp/junk.rules" 2>/dev/null
"$PARTIR" rules --rules "$tmp/junk.rules" >/dev/null 2>"$tmp/err"
check "a rule file of binary junk is refused with file:line:col" \
  sh -c "test $? -eq 1 && grep -q '^.*junk.rules:1:1: error' '$tmp/err'"
notprint=$(printf '[\001-\010\013-\037\177]')
check "...and the excerpt is valid UTF-8 without control characters" sh -c \
  "! LC_ALL=C grep -q '$notprint' '$tmp/err' && iconv -f UTF-8 -t UTF-8 '$tmp/err' >/dev/null"
awk 'BEGIN { printf "rule deep: "; for (i = 0; i < 100000; i++) printf "neg("; printf "x ~~> x\n" }' \
  >"$tmp/deep.rules"
"$PARTIR" rules --rules "$tmp/deep.rules" >/dev/null 2>"$tmp/err"
check "a deeply nested pattern is refused" grep -q "nests deeper than 200" "$tmp/err"
printf 'include "loop.rules"\ninclude "loop.rules"\n' >"$tmp/loop.rules"
check "a file that includes itself loads once" quiet "$PARTIR" rules --rules "$tmp/loop.rules"
printf 'rule x:\n  neg(y) ~~> neg(y)\nrule x:\n  neg(y) ~~> neg(y)\n' >"$tmp/dup.rules"
"$PARTIR" rules --rules "$tmp/dup.rules" >/dev/null 2>"$tmp/err"
check "a duplicate rule name is refused at its line" grep -q "dup.rules:3:6: error: rule 'x' is defined twice" "$tmp/err"
# a pass that loops fails, naming the pass, and prints or writes nothing
printf 'func @f(%%a: tensor<4xf32>) -> tensor<4xf32> {\n  %%0 = neg(%%a)\n  return %%0\n}\n' \
  >"$tmp/neg.pir"
for pass in simplify fuse; do
  cat >"$tmp/loop-$pass.rules" <<RULES
include "$rules/ops.rules"
include "$rules/partir.rules"
rule neg-loop [$pass]:
  neg(x) <~~> neg(neg(neg(x)))
RULES
  "$PARTIR" rewrite "$tmp/neg.pir" --rules "$tmp/loop-$pass.rules" --do "$pass" \
    >"$tmp/out" 2>"$tmp/err"
  check "$pass without a fixed point fails with status 1" test $? -eq 1
  check "...says the $pass pass did not reach a fixed point" \
    grep -q "'$pass': the $pass pass stopped without reaching a fixed point" "$tmp/err"
  check "...and prints no program" test ! -s "$tmp/out"
done
"$PARTIR" rewrite "$tmp/neg.pir" --rules "$tmp/loop-simplify.rules" \
  --do 'arg-tile 0 0 2; simplify' -o "$tmp/loop.pir" 2>/dev/null
check "...or writes none" sh -c "test $? -eq 1 && test ! -e '$tmp/loop.pir'"
cat >"$tmp/loop-propagate.rules" <<RULES
include "$rules/ops.rules"
include "$rules/partir.rules"
rule slice-loop [propagate]:
  slice d x[r]  ~~>  slice d (neg(neg(x)))[r]
RULES
"$PARTIR" rewrite "$tmp/neg.pir" --rules "$tmp/loop-propagate.rules" \
  --do 'arg-tile 0 0 2; propagate' >"$tmp/out" 2>"$tmp/err"
check "propagate without a fixed point fails too, naming propagate" sh -c \
  "test $? -eq 1 && test ! -s '$tmp/out' &&
   grep -q \"'propagate': the propagate pass stopped without reaching a fixed point\" '$tmp/err'"
"$PARTIR" walk "$tmp/neg.pir" --rules "$tmp/loop-simplify.rules" --walks 50 >"$tmp/out" 2>&1
check "random walks report a looping pass as a failure" sh -c \
  "test $? -eq 1 && grep -q 'the simplify pass stopped without reaching a fixed point' '$tmp/out'"

# sink-slice and 'apply ... at' several values: q and k sliced off one
# product become products with the weight's slices, each value named as
# the program was before the first rewrite (the unnamed ones renumber)
cat >"$tmp/qk.pir" <<'PIR'
func @f(%x: tensor<4x8xf32>, %w: tensor<8x24xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = matmul(%x, %w)
  %1 = slice(%0) {start = [0, 0], limit = [4, 8]}
  %2 = slice(%0) {start = [0, 8], limit = [4, 16]}
  return %1, %2
}
PIR
cat >"$tmp/qk.want" <<'PIR'
func @f(%x: tensor<4x8xf32>, %w: tensor<8x24xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = slice(%w) {limit = [8, 8], start = [0, 0]}
  %1 = matmul(%x, %0)
  %2 = slice(%w) {limit = [8, 16], start = [0, 8]}
  %3 = matmul(%x, %2)
  return %1, %3
}
PIR
"$PARTIR" rewrite "$tmp/qk.pir" --do 'apply sink-slice-matmul at %1,%2' \
  >"$tmp/out" 2>"$tmp/err"
check "sink-slice at %1,%2: each slice a product with a slice of %w" \
  cmp -s "$tmp/out" "$tmp/qk.want"
"$PARTIR" rewrite "$tmp/qk.pir" --do 'apply sink-slice-matmul at %1,%9' \
  >"$tmp/out" 2>"$tmp/err"
check "...a value of the list the program lacks: status 1, named" \
  sh -c "test $? -eq 1 && grep -q \"no value '%9'\" '$tmp/err'"
"$PARTIR" rewrite "$tmp/qk.pir" --do 'apply sink-slice-matmul at %0' \
  >"$tmp/out" 2>"$tmp/err"
check "...at the product itself: refused with the reason" \
  sh -c "test $? -eq 1 && grep -q \"applies to a slice of 'matmul'\" '$tmp/err'"
# sink-slice through a reshape: PyTorch's unflatten(-1, (3, E)) of a
# fused projection, then q, k, v sliced off the 3: part i of the 3 (all
# of E) is columns [4i, 4i+4) of the [2, 12] operand; a merged dimension
# [2, 4] -> [8] cut at whole rows of 4 is rows of the operand
cat >"$tmp/unflat.pir" <<'PIR'
func @f(%x: tensor<2x12xf32>, %y: tensor<2x4xf32>) -> (tensor<2x1x4xf32>, tensor<4xf32>) {
  %0 = reshape(%x) : tensor<2x3x4xf32>
  %1 = slice(%0) {start = [0, 1, 0], limit = [2, 2, 4]}
  %2 = reshape(%y) : tensor<8xf32>
  %3 = slice(%2) {start = [4], limit = [8]}
  return %1, %3
}
PIR
cat >"$tmp/unflat.want" <<'PIR'
func @f(%x: tensor<2x12xf32>, %y: tensor<2x4xf32>) -> (tensor<2x1x4xf32>, tensor<4xf32>) {
  %0 = slice(%x) {limit = [2, 8], start = [0, 4]}
  %1 = reshape(%0) : tensor<2x1x4xf32>
  %2 = slice(%y) {limit = [2, 4], start = [1, 0]}
  %3 = reshape(%2) : tensor<4xf32>
  return %1, %3
}
PIR
"$PARTIR" rewrite "$tmp/unflat.pir" --do 'apply sink-slice-reshape at %1,%3' \
  >"$tmp/out" 2>"$tmp/err"
check "sink-slice-reshape: a part of a split dimension, whole rows of a merged one" \
  cmp -s "$tmp/out" "$tmp/unflat.want"
"$PARTIR" run "$tmp/unflat.pir" --seed 3 >"$tmp/r0"
"$PARTIR" run "$tmp/out" --seed 3 >"$tmp/r1"
check "...computing what the program computed" cmp -s "$tmp/r0" "$tmp/r1"
cat >"$tmp/unflat2.pir" <<'PIR'
func @f(%x: tensor<2x12xf32>) -> tensor<2x3x2xf32> {
  %0 = reshape(%x) : tensor<2x3x4xf32>
  %1 = slice(%0) {start = [0, 0, 1], limit = [2, 3, 3]}
  return %1
}
PIR
"$PARTIR" rewrite "$tmp/unflat2.pir" --do 'apply sink-slice-reshape at %1' \
  >"$tmp/out" 2>"$tmp/err"
check "...an inner part (every 4th pair of columns) is no part of the operand: refused" \
  sh -c "test $? -eq 1 && grep -q 'is no part of an operand dimension' '$tmp/err'"
# a command of more words than any takes (65536) is refused, saying so
# (a tactic makes it: one argument of the command line holds 128 KiB)
cat >"$tmp/words.lua" <<'LUA'
return function(s)
  local words = {}
  for i = 1, 65537 do
    words[i] = "%x"
  end
  return s:exec("remat " .. table.concat(words, " "))
end
LUA
"$PARTIR" tactic "$tmp/words.lua" "$tmp/qk.pir" >/dev/null 2>"$tmp/err"
check "a command of 65537 words: refused, naming the most" \
  sh -c "test $? -eq 1 && grep -q 'too many words in .remat %x %x.*(at most 65536)' '$tmp/err'"
done_testing
