#!/bin/sh
# partir-repl without a terminal: scripted sessions compared with the
# transcripts in tests/fixtures/repl (NAME.in typed, NAME.out expected:
# stdout and stderr of 'partir-repl --echo < NAME.in', then "[exit N]").
# After a change the session prints what changed; the programs 'show'
# and 'set show full' print are what 'partir rewrite --do' prints, and
# other checks compare with the CLI directly.
. "$top_srcdir/tests/tap.sh"
PARTIR_REPL=${PARTIR_REPL:-$top_builddir/repl/partir-repl}
repl=$(cd "$(dirname "$PARTIR_REPL")" && pwd)/$(basename "$PARTIR_REPL")
fx=$(cd "$top_srcdir/tests/fixtures/repl" && pwd)
ex=$(cd "$top_srcdir/examples" && pwd)
LC_ALL=C
export LC_ALL

# Sessions run in $tmp/work, with the files they name.
work=$tmp/work
mkdir -p "$work"
cp "$ex/mlp.pir" "$fx"/*.cmds "$fx"/*.lua "$work"

for input in "$fx"/*.in; do
  name=$(basename "$input" .in)
  (cd "$work" && $VALGRIND "$repl" --echo <"$input" >"$tmp/$name.got" 2>&1
   echo "[exit $?]" >>"$tmp/$name.got")
  if cmp -s "$fx/$name.out" "$tmp/$name.got"; then
    ok "session $name"
  else
    not_ok "session $name"
    diff -u "$fx/$name.out" "$tmp/$name.got" | sed 's/^/#   /'
  fi
done

# save writes the canonical text: 'partir fmt' reads it back unchanged,
# and it is the talk's tiled MLP
check "save: the file parses back to the same text" sh -c \
  "'$PARTIR' fmt '$work/tiled.pir' | cmp -s - '$work/tiled.pir'"
check "save: the talk's session gives examples/mlp_tiled.pir" sh -c \
  "'$PARTIR' fmt '$ex/mlp_tiled.pir' | cmp -s - '$work/tiled.pir'"

# FILE.pir on the command line, no --echo: stdout is what each line
# changed, and with 'set show full' each new program
printf 'arg-tile 0 0 8.\npropagate.\n' |
  "$repl" "$ex/mlp.pir" >"$tmp/plain.out" 2>"$tmp/plain.err"
check "a session without a terminal succeeds" test $? -eq 0
printf '%s\n' "@mlp: 3 arguments, 2 values, 1 result ('show' prints it)" \
  'new tile: %0 = partir.tile 0 (%r : !partir.range<16,8>) { ... }' \
  'new: %1' 'rewritten: %2, %3' 'rewritten: %0, %2, %3' >"$tmp/plain.want"
check "...prints what each line changed" cmp -s "$tmp/plain.want" "$tmp/plain.out"
check "...with no prompt, colour or message" sh -c \
  "test ! -s '$tmp/plain.err' && ! grep -q 'partir>' '$tmp/plain.out' && ! grep -q \"\$(printf '\\033')\" '$tmp/plain.out'"
printf 'set show full\narg-tile 0 0 8.\npropagate.\n' |
  "$repl" "$ex/mlp.pir" >"$tmp/full.out" 2>&1
{
  sed -n 1p "$tmp/plain.want"
  "$PARTIR" rewrite "$ex/mlp.pir" --do 'arg-tile 0 0 8'
  "$PARTIR" rewrite "$ex/mlp.pir" --do 'arg-tile 0 0 8; propagate'
} >"$tmp/full.want"
check "set show full prints each new program, as 'partir rewrite' does" \
  cmp -s "$tmp/full.want" "$tmp/full.out"
# a 12-layer transformer: the summary is a few lines, 'show' has it all
lua5.4 "$ex/models/transformer.lua" --layers 12 >"$tmp/t12.pir"
printf 'set mesh model=2\ntactic megatron\n' |
  "$repl" "$tmp/t12.pir" >"$tmp/t12.out" 2>&1
check "a tactic on a 12-layer transformer prints a summary of a few lines" \
  sh -c "test \$(wc -l <'$tmp/t12.out') -le 16 &&
         grep -qx 'on model=2: 24 all_reduce over model' '$tmp/t12.out' &&
         grep -qF 'new sum: %l0_attn = partir.sum (%r : !partir.range<4,2> @\"model\") { ... }' '$tmp/t12.out' &&
         grep -qx 'new: 18 more tiles and sums' '$tmp/t12.out'"
printf 'set mesh model=2\ntactic megatron\nshow\n' |
  "$repl" "$tmp/t12.pir" 2>&1 | sed '1,/^on model=2:/d' >"$tmp/t12.show"
"$PARTIR" tactic "$top_srcdir/tactics/megatron.lua" "$tmp/t12.pir" --mesh model=2 \
  >"$tmp/t12.want"
check "...and 'show' prints the whole program" cmp -s "$tmp/t12.want" "$tmp/t12.show"

# --batch FILE reads commands from FILE
printf 'arg-tile 0 0 8. propagate.\nshow\n' >"$tmp/cmds"
"$repl" --batch "$tmp/cmds" "$ex/mlp.pir" >"$tmp/batch.out" 2>&1 </dev/null
check "--batch FILE runs its commands" test $? -eq 0
"$PARTIR" rewrite "$ex/mlp.pir" --do 'arg-tile 0 0 8; propagate' >"$tmp/batch.want"
check "...and 'show' prints the state they made" sh -c \
  "tail -n \$(wc -l <'$tmp/batch.want') '$tmp/batch.out' | cmp -s - '$tmp/batch.want'"
printf 'frob\nargs\n' >"$tmp/bad"
"$repl" --batch "$tmp/bad" "$ex/mlp.pir" >"$tmp/bad.out" 2>"$tmp/bad.err"
check "--batch: a failed command gives exit status 1" test $? -eq 1
check "...names the file and line" grep -q "^$tmp/bad:1: error: unknown command 'frob'" "$tmp/bad.err"
check "...and the later commands still run" grep -q '^2  %u: tensor<256x256xf32>' "$tmp/bad.out"

# run uses the interpreter with 'partir run --seed N' inputs: the tiled
# program computes what the original does
printf 'arg-tile 0 0 8. propagate. run --seed 5\n' |
  "$repl" "$ex/mlp.pir" 2>&1 | tail -n 1 >"$tmp/run.got"
"$PARTIR" run "$ex/mlp.pir" --seed 5 >"$tmp/run.want"
check "run --seed 5 after the talk's session matches 'partir run --seed 5'" \
  cmp -s "$tmp/run.want" "$tmp/run.got"
printf 'run --seed x\n' | "$repl" "$ex/mlp.pir" >/dev/null 2>"$tmp/err"
check "run with a bad seed is refused" grep -q 'usage: run \[--seed N\]' "$tmp/err"

# exec runs the compiled program on the arguments of 'run --seed N':
# with --exact (the interpreter's arithmetic) it prints what 'partir run'
# prints, on one device and a thread per device of a mesh
printf 'exec --seed 5 --exact\nexec --mesh none --seed 5 --exact\n' |
  "$repl" "$ex/mlp.pir" 2>&1 | tail -n 2 >"$tmp/exec.got"
{ cat "$tmp/run.want" "$tmp/run.want"; } >"$tmp/exec.want"
check "exec --exact on one device prints what 'partir run' prints" \
  cmp -s "$tmp/exec.want" "$tmp/exec.got"
printf 'arg-tile 0 0 8 batch. propagate. exec --mesh batch=2 --seed 5 --exact\n' |
  "$repl" "$ex/mlp.pir" 2>&1 | tail -n 1 >"$tmp/exec.got"
check "...and the tiled MLP on batch=2, a thread a device" \
  cmp -s "$tmp/run.want" "$tmp/exec.got"
# (the layer partitioned sums in another order: compared with the
# interpreter on the partitioned layer)
printf 'set mesh model=2\ntactic megatron\nrun --seed 3\nexec --seed 3 --exact\n' |
  "$repl" "$ex/transformer_layer.pir" 2>&1 | sed '1,/^on model=2:/d' \
  >"$tmp/exec.got"
check "...and the Megatron transformer layer on the session's mesh model=2" \
  sh -c "test \$(wc -l <'$tmp/exec.got') -eq 2 &&
         sed -n 1p '$tmp/exec.got' | grep -q '^out = shape 2x8x32 f32' &&
         test \"\$(sed -n 1p '$tmp/exec.got')\" = \"\$(sed -n 2p '$tmp/exec.got')\""
printf 'exec\n' | "$repl" "$ex/mlp.pir" >"$tmp/exec.got" 2>&1
check "exec without --exact prints each result (its own arithmetic)" \
  grep -q '^result0 = shape 16x256 f32: min ' "$tmp/exec.got"
# compiled once per state: a new state is compiled again (another
# program, other results), and so is the old one after undo
printf 'func @f(%%a: tensor<4xi32>) -> tensor<4xi32> {\n  %%b = add(%%a, %%a)\n  return %%b\n}\n' \
  >"$tmp/double.pir"
printf 'exec --seed 2 --exact\nload %s\nexec --seed 2 --exact\nundo\n' \
  "$tmp/double.pir" >"$tmp/cache.cmds"
printf 'exec --seed 2 --exact\nexec --mesh none --seed 2 --exact\n' >>"$tmp/cache.cmds"
"$repl" --batch "$tmp/cache.cmds" "$ex/mlp.pir" 2>&1 | grep -v '^@' >"$tmp/cache.got"
"$PARTIR" run "$ex/mlp.pir" --seed 2 >"$tmp/mlp2.want"
{ cat "$tmp/mlp2.want"
  "$PARTIR" run "$tmp/double.pir" --seed 2
  cat "$tmp/mlp2.want" "$tmp/mlp2.want"; } >"$tmp/cache.want"
check "exec after load runs the new program, and the old one after undo" \
  cmp -s "$tmp/cache.want" "$tmp/cache.got"
printf 'exec --frob\nexec --seed\nexec --mesh a=0\nbench --repeat 0\nbench --repeat x\n' \
  >"$tmp/bad.cmds"
"$repl" --batch "$tmp/bad.cmds" "$ex/mlp.pir" >/dev/null 2>"$tmp/err"
check "exec and bench refuse bad options, saying their usage or the mesh" sh -c \
  "test \$(grep -c 'usage: exec \[--mesh M\] \[--seed N\] \[--exact\]' '$tmp/err') -eq 2 &&
   grep -q 'exec: .*a=0' '$tmp/err' &&
   test \$(grep -c 'usage: bench \[--mesh M\] \[--repeat N\]' '$tmp/err') -eq 2"
printf 'exec\nbench\n' | "$repl" >/dev/null 2>"$tmp/err"
check "exec and bench without a program say so" sh -c \
  "grep -q 'exec: no program loaded' '$tmp/err' &&
   grep -q 'bench: no program loaded' '$tmp/err'"
# a program too large to run is refused before anything is allocated,
# and the session goes on
printf 'func @f(%%a: tensor<100000x100000xf32>) -> tensor<100000x100000xf32> {\n  %%b = add(%%a, %%a)\n  return %%b\n}\n' \
  >"$tmp/big.pir"
printf 'exec\nbench\nargs\n' | "$repl" "$tmp/big.pir" >"$tmp/out" 2>"$tmp/err"
check "exec and bench refuse a program too large to run; the session goes on" sh -c \
  "grep -q 'error: exec: .*too large' '$tmp/err' &&
   grep -q 'error: bench: .*too large' '$tmp/err' &&
   grep -q 'a: tensor<100000x100000xf32>' '$tmp/out'"

# bench: the compiled step time (median and min of N runs), the
# interpreter's for one run, the cost model's on the session's hardware
printf 'set hw h100x8\narg-tile 0 0 8 batch. propagate. bench --mesh batch=2 --repeat 3\n' |
  "$repl" "$ex/mlp.pir" 2>&1 | tail -n 3 >"$tmp/bench.got"
t='[0-9]+\.[0-9]{3} (s|ms|us)'
check "bench prints the compiled, interpreted and predicted times" sh -c \
  "sed -n 1p '$tmp/bench.got' | grep -Eqx 'compiled     median $t, min $t \(3 runs, mesh batch=2\)' &&
   sed -n 2p '$tmp/bench.got' | grep -Eqx 'interpreter  $t \(one run\)' &&
   sed -n 3p '$tmp/bench.got' | grep -Eqx 'predicted    $t \(cost model, hw h100x8\)'"
printf 'bench\n' | "$repl" "$ex/mlp.pir" 2>&1 | grep '^compiled' >"$tmp/bench.got"
check "...5 runs on one device by default" \
  grep -Eq '\(5 runs, one device\)$' "$tmp/bench.got"

# history is a script: sourcing it rebuilds the state
printf 'arg-tile 1 1 128 model; arg-tile 2 0 128 model\npropagate.\nhistory\n' |
  (cd "$work" && "$repl" mlp.pir) | tail -n 4 >"$work/replay.cmds"
printf 'source replay.cmds\nshow\n' | (cd "$work" && "$repl") >"$tmp/replay.out"
"$PARTIR" rewrite "$ex/mlp.pir" --do 'arg-tile 1 1 128 model; arg-tile 2 0 128 model; propagate' >"$tmp/replay.want"
check "sourcing the output of history rebuilds the state" sh -c \
  "tail -n \$(wc -l <'$tmp/replay.want') '$tmp/replay.out' | cmp -s - '$tmp/replay.want'"

# a tactic that needs a mesh axis says how to set one in the REPL
printf 'tactic megatron\n' | "$repl" "$ex/mlp.pir" >/dev/null 2>"$tmp/err"
check "tactic without a mesh suggests 'set mesh model=N'" \
  grep -qF "the mesh has no axis 'model' (mesh: empty; use set mesh model=N)" "$tmp/err"
printf 'set mesh batch=2\ntactic megatron axis=model\n' | "$repl" "$ex/mlp.pir" >/dev/null 2>"$tmp/err"
check "...naming the axes it has" \
  grep -qF "(mesh: batch=2; use set mesh model=N)" "$tmp/err"

# rules [PATTERN]
printf 'rules matmul-*\n' | "$repl" >"$tmp/rules.out"
check "rules PATTERN lists the rules whose names match" sh -c \
  "test \$(wc -l <'$tmp/rules.out') -eq \$('$PARTIR' rules | grep -c '^matmul-') &&
   grep -q '^matmul-sum ' '$tmp/rules.out'"
printf 'rules zzz\n' | "$repl" >"$tmp/rules.out"
check "...and says when none does" grep -qx "no rule matches 'zzz'" "$tmp/rules.out"

# help lists every command; quit stops reading
printf 'help\n' | "$repl" >"$tmp/help.out"
for c in load show info args rules matches apply arg-tile tile sum propagate \
  fuse simplify undo redo history run exec bench save lua source tactic set \
  help quit; do
  grep -q "^  $c" "$tmp/help.out" || echo "# help lacks $c"
done >"$tmp/help.missing"
check "help lists every command" test ! -s "$tmp/help.missing"
printf 'quit\nfrob\n' | "$repl" "$ex/mlp.pir" >/dev/null 2>"$tmp/err"
check "quit stops reading (the command after it does not run)" \
  sh -c "test $? -eq 0 && test ! -s '$tmp/err'"

# start-up failures
printf 'func @f(%%a: tensor<2xf32>) -> tensor<2xf32> { return %%b }\n' >"$tmp/bad.pir"
"$repl" "$tmp/bad.pir" </dev/null >/dev/null 2>"$tmp/err"
check "a program that does not parse: status 1" test $? -eq 1
check "...with the diagnostic" grep -q "bad.pir:1:" "$tmp/err"
# ...and the session goes on without a program: fix the file, 'load' it
cp "$tmp/bad.pir" "$tmp/fix.pir"
mkfifo "$tmp/fix.in"
"$repl" "$tmp/fix.pir" <"$tmp/fix.in" >"$tmp/fix.out" 2>"$tmp/fix.err" &
pid=$!
exec 3>"$tmp/fix.in"
# (a REPL that has exited must not take the test down with SIGPIPE)
(printf 'args\n' >&3) 2>/dev/null
i=0
while ! grep -q 'args: no program loaded' "$tmp/fix.err" && [ $i -lt 300 ] &&
  kill -0 $pid 2>/dev/null; do
  sleep 0.1
  i=$((i + 1))
done
cp "$ex/mlp.pir" "$tmp/fix.pir"
(printf 'load\nargs\n' >&3) 2>/dev/null
exec 3>&-
wait $pid
st=$?
check "a program that does not parse: the session starts without one" sh -c \
  "grep -q 'fix.pir:1:54: error' '$tmp/fix.err' &&
   grep -q \"note: no program loaded; fix .*fix.pir and type 'load'\" '$tmp/fix.err' &&
   grep -q 'args: no program loaded' '$tmp/fix.err'"
check "...'load' reads the fixed file" grep -q '^2  %u: tensor<256x256xf32>' "$tmp/fix.out"
check "...and the exit status still says the first load failed" test $st -eq 1
"$repl" --rules "$tmp/none.rules" </dev/null >/dev/null 2>"$tmp/err"
check "--rules with a missing file: status 1, the file named" sh -c \
  "test $? -eq 1 && grep -q none.rules '$tmp/err'"
"$repl" --frob </dev/null >/dev/null 2>"$tmp/err"
check "an unknown option: status 2" test $? -eq 2
"$repl" --mesh 'a=0' </dev/null >/dev/null 2>"$tmp/err"
check "a bad --mesh: status 2" sh -c "test $? -eq 2 && grep -q 'a=0' '$tmp/err'"

# load reads regular files only: /dev/zero never ends, a FIFO blocks
mkfifo "$tmp/in.fifo"
printf 'load /dev/zero\nload %s\nload %s\nargs\n' "$tmp/in.fifo" "$ex/mlp.pir" |
  timeout 20 "$repl" >"$tmp/out" 2>"$tmp/err"
check "load /dev/zero and load FIFO are refused, and the session goes on" \
  sh -c "test $? -eq 1 &&
    grep -q 'load: /dev/zero: not a regular file (a character device)' '$tmp/err' &&
    grep -q 'load: $tmp/in.fifo: not a regular file (a FIFO)' '$tmp/err' &&
    grep -q 'x: tensor<16x256xf32>' '$tmp/out'"

# a long chain of commands and a file that sources itself stay bounded
printf 'source loop.cmds\n' >"$work/loop.cmds"
printf 'source loop.cmds\n' | (cd "$work" && "$repl") >/dev/null 2>"$tmp/err"
check "a file sourcing itself stops at a depth limit" sh -c \
  "test $? -eq 1 && grep -q 'nested more than' '$tmp/err'"
# 'cost' on a 60000-deep chain (the lowering overflowed the stack)
awk 'BEGIN { printf "func @f(%%x: tensor<4xf32>) -> tensor<4xf32> {\n  %%v1 = neg(%%x)\n";
             for (i = 2; i <= 60000; i++) printf "  %%v%d = neg(%%v%d)\n", i, i - 1;
             printf "  return %%v60000\n}\n" }' >"$tmp/deep.pir"
printf 'cost\n' | "$repl" --mesh a=2 "$tmp/deep.pir" >"$tmp/out" 2>"$tmp/err"
check "cost on a 60000-deep chain: 60000 x 4 FLOPs a device" sh -c \
  "test $? -eq 0 && grep -q 'FLOPs  *240000 ' '$tmp/out'"
awk 'BEGIN { for (i = 0; i < 300; i++) print "arg-tile 0 0 8; undo" }' >"$tmp/long"
"$repl" --batch "$tmp/long" "$ex/mlp.pir" >/dev/null 2>&1
check "600 commands in a row" test $? -eq 0
printf 'lua return setmetatable({}, {__tostring = function() error("boom") end})\nargs\n' \
  >"$tmp/tostring.cmds"
"$repl" "$top_srcdir/examples/mlp.pir" --batch "$tmp/tostring.cmds" >"$tmp/out" 2>"$tmp/err"
check "a __tostring that raises is an error, and the session goes on" \
  sh -c "test $? -eq 1 && grep -q boom '$tmp/err' && grep -q 'x: tensor<16x256xf32>' '$tmp/out'"
# 'lua' written quoted is the command's name, not the raw 'lua CODE'
printf "'lua' 1+1\nargs\n" >"$tmp/quoted.cmds"
"$repl" "$ex/mlp.pir" --batch "$tmp/quoted.cmds" >"$tmp/out" 2>"$tmp/err"
check "a quoted 'lua' says its usage, and the session goes on" \
  sh -c "test $? -eq 1 && grep -q 'usage: lua CODE' '$tmp/err' && grep -q 'x: tensor<16x256xf32>' '$tmp/out'"
done_testing
