#!/bin/sh
# partir search (docs/search.md): the built-in search finds the experts'
# strategies.  On a 2-layer MLP over model=2 it finds Megatron (exactly
# one all_reduce, read from 'partir lower --stats'); on a 2-layer
# transformer over batch=2,model=4 (h100x8) a strategy whose modelled
# step time is within 5% of the batch+megatron tactic's, with MCTS and
# with beam search.  The same seed gives the same result; the emitted
# tactic replays to the program found; the REPL, Lua and the protocol
# give the search too; bad options and files fail cleanly.
. "$top_srcdir/tests/tap.sh"
top=$(cd "$top_srcdir" && pwd)
export PARTIR_REPL PYTHONDONTWRITEBYTECODE=1
have_python=0
python3 -c 'import json' 2>/dev/null && have_python=1

# Shapes where partitioning pays on h100x8 (with the default small
# shapes the collectives' latency outweighs the compute saved).
lua5.4 "$top/examples/models/mlp.lua" --layers 2 --batch 1024 --width 8192 >"$tmp/mlp.pir"
lua5.4 "$top/examples/models/transformer.lua" --layers 2 --batch 16 --seq 512 \
  --d_model 1024 --heads 16 --d_ff 4096 >"$tmp/t2.pir"

# seconds FILE MESH: the modelled step time on h100x8, from 'partir cost'
# (its units read back: 3 significant digits, enough for a 5% margin).
seconds() {
  "$PARTIR" cost "$1" --mesh "$2" --hw h100x8 | awk '
    $1 == "total" {
      v = $2; u = $3
      f = u == "s" ? 1 : u == "ms" ? 1e-3 : u == "us" ? 1e-6 : u == "ns" ? 1e-9 : 0
      printf "%.6g\n", v * f
    }'
}
# within A B: A <= 1.05 B
within() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && b != "" && a > 0 && a <= 1.05 * b) }'; }

# --- MLP: Megatron --------------------------------------------------
if "$PARTIR" search "$tmp/mlp.pir" --mesh model=2 --hw h100x8 --seed 1 \
  -o "$tmp/mlp.s.pir" --emit-tactic "$tmp/mlp.s.lua" >"$tmp/mlp.out" 2>"$tmp/err"; then
  ok "mlp: search runs"
else
  not_ok "mlp: search runs"
  show "$tmp/err"
fi
"$PARTIR" lower "$tmp/mlp.s.pir" --mesh model=2 --stats >"$tmp/mlp.stats" 2>&1
# Megatron: %w0 by columns, %w1 by rows: one sum over model, one all_reduce
check "mlp: the program found lowers to exactly one all_reduce" \
  sh -c "grep -c '^  all_reduce over model  *1 ' '$tmp/mlp.stats' | grep -qx 1"
check "mlp: and no other collective" \
  sh -c "! sed -n '/^collectives per device/,\$p' '$tmp/mlp.stats' | grep -v '^collectives\|all_reduce' | grep -q ."
check "mlp: both weights are split, the data is not" \
  sh -c "grep -q 'partir.slice 1 %w0' '$tmp/mlp.s.pir' && grep -q 'partir.slice 0 %w1' '$tmp/mlp.s.pir' && ! grep -q 'slice . %x' '$tmp/mlp.s.pir'"
check "mlp: the report shows the cost beside the program's as given" \
  grep -q '^total  *4.1 ms  *2.14 ms' "$tmp/mlp.out"
"$PARTIR" tactic "$tmp/mlp.s.lua" "$tmp/mlp.pir" --mesh model=2 --hw h100x8 \
  -o "$tmp/mlp.replay.pir" 2>"$tmp/err"
check "mlp: the emitted tactic replays to the program found" \
  cmp -s "$tmp/mlp.replay.pir" "$tmp/mlp.s.pir"

# --- transformer: batch + Megatron -----------------------------------
"$PARTIR" tactic "$top/tests/bench/tactics/batch-megatron.lua" "$tmp/t2.pir" \
  --mesh batch=2,model=4 --hw h100x8 -o "$tmp/t2.expert.pir" 2>"$tmp/err"
expert=$(seconds "$tmp/t2.expert.pir" batch=2,model=4)
for algo in mcts beam; do
  "$PARTIR" search "$tmp/t2.pir" --mesh batch=2,model=4 --hw h100x8 --algo $algo \
    --budget 400 --seed 3 -o "$tmp/t2.$algo.pir" --emit-tactic "$tmp/t2.$algo.lua" \
    >"$tmp/t2.$algo.out" 2>"$tmp/err"
  found=$(seconds "$tmp/t2.$algo.pir" batch=2,model=4)
  if within "$found" "$expert"; then
    ok "transformer: $algo finds $found s, within 5% of batch+megatron's $expert s"
  else
    not_ok "transformer: $algo finds '$found' s, within 5% of batch+megatron's $expert s"
    show "$tmp/t2.$algo.out"
    show "$tmp/err"
  fi
  "$PARTIR" tactic "$tmp/t2.$algo.lua" "$tmp/t2.pir" --mesh batch=2,model=4 \
    --hw h100x8 -o "$tmp/t2.$algo.replay.pir" 2>"$tmp/err"
  check "transformer: the $algo tactic replays to the program found" \
    cmp -s "$tmp/t2.$algo.replay.pir" "$tmp/t2.$algo.pir"
done
# one decision splits every layer: the first action names both layers'
# weights of one kind
check "transformer: an action splits a weight of every layer at once" \
  sh -c "grep -q 'arg-tile %l0_\([a-z0-9]*\) .*arg-tile %l1_\1 ' '$tmp/t2.mcts.lua'"
check "transformer: the data is split over batch only" \
  sh -c "grep -q 'arg-tile %x 0 8 batch' '$tmp/t2.mcts.lua' && ! grep -q 'arg-tile %x [0-9]* [0-9]* model' '$tmp/t2.mcts.lua'"

# --- determinism ------------------------------------------------------
"$PARTIR" search "$tmp/t2.pir" --mesh batch=2,model=4 --hw h100x8 --budget 400 \
  --seed 3 -o "$tmp/t2.again.pir" --emit-tactic "$tmp/t2.again.lua" \
  >"$tmp/t2.again.out" 2>"$tmp/err"
check "determinism: the same seed gives the same program" \
  cmp -s "$tmp/t2.again.pir" "$tmp/t2.mcts.pir"
check "determinism: ... the same tactic" cmp -s "$tmp/t2.again.lua" "$tmp/t2.mcts.lua"
# the report but its first line (which holds the time taken)
tail -n +2 "$tmp/t2.mcts.out" >"$tmp/t2.mcts.tail"
tail -n +2 "$tmp/t2.again.out" >"$tmp/t2.again.tail"
check "determinism: ... and the same report" cmp -s "$tmp/t2.again.tail" "$tmp/t2.mcts.tail"
"$PARTIR" search "$tmp/t2.pir" --mesh batch=2,model=4 --hw h100x8 --budget 60 \
  --seed 3 --emit-tactic "$tmp/t2.60.lua" >/dev/null 2>&1
check "determinism: a budget counts the states costed" \
  grep -q '(60 states)' "$tmp/t2.60.lua"

# --- the REPL ------------------------------------------------------------
cat >"$tmp/repl.in" <<EOF
load $tmp/mlp.pir
set mesh model=2
set hw h100x8
search --budget 40 --emit-tactic $tmp/repl.lua
stats
undo
stats
search --algo nope
EOF
"$PARTIR_REPL" <"$tmp/repl.in" >"$tmp/repl.out" 2>&1
check "repl: search finds Megatron and makes it the current state" \
  grep -q '^  all_reduce over model  *1 ' "$tmp/repl.out"
check "repl: undo goes back to the program as given" grep -q '^  none' "$tmp/repl.out"
check "repl: search --emit-tactic writes the tactic" \
  grep -q 's:exec("arg-tile %w1 0 4096 model; propagate"' "$tmp/repl.lua"
check "repl: a bad option gives the usage" \
  grep -q 'error: usage: search \[--algo mcts|beam\]' "$tmp/repl.out"

# --- Lua -----------------------------------------------------------------
cat >"$tmp/search.lua" <<'EOF'
return function(s, mesh, opts)
  local best, info = s:search{mesh = "model=2", hw = "h100x8", budget = 40}
  local same = partir.search{state = s, mesh = "model=2", hw = "h100x8",
                             algo = "beam", budget = 40}
  assert(best == same, "s:search and partir.search (beam) agree")
  assert(info.fits and info.time < info.base_time, "faster, and it fits")
  assert(#info.trace >= 1 and info.tactic:find("return function"), "a trace and a tactic")
  local ok, err = pcall(s.search, s, {mesh = "model=2", bogus = 1})
  assert(not ok and err:find("options are"), "an unknown option fails")
  ok, err = pcall(s.search, s, {hw = "h100x8"})
  assert(not ok and err:find("give the mesh"), "no mesh fails")
  return best
end
EOF
if "$PARTIR" tactic "$tmp/search.lua" "$tmp/mlp.pir" -o "$tmp/lua.pir" 2>"$tmp/err"; then
  ok "lua: s:search and partir.search"
else
  not_ok "lua: s:search and partir.search"
  show "$tmp/err"
fi
check "lua: the state found is the CLI's" cmp -s "$tmp/lua.pir" "$tmp/mlp.s.pir"

# --- the protocol ---------------------------------------------------------
if [ $have_python = 1 ]; then
  PYTHONPATH=$top/examples/agents python3 - "$tmp/t2.pir" "$tmp/t2.mcts.lua" >"$tmp/proto.out" 2>"$tmp/err" <<'EOF'
import os, re, sys
from partir_env import PartirClient, PartirError
path, tactic = sys.argv[1], sys.argv[2]
want = re.findall(r's:exec\("([^"]*)"', open(tactic).read())
with PartirClient(allow=[os.path.dirname(path)]) as c:
    root = c.reset(path=path, mesh="batch=2,model=4", hw="h100x8")["state"]
    r = c.call("search", state=root, time=60, budget=400, seed=3, observe=["cost"])
    print("actions", r["search"]["actions"] == want)
    print("trace", c.trace(state=r["state"])["actions"] == want)
    print("reward", r["reward"]["delta"] > 0)
    for bad in ({}, {"time": 0}, {"time": 1, "algo": "x"}, {"time": 1, "inputs": ["nope"]}):
        try:
            c.call("search", state=root, **bad)
            print("refused", False)
        except PartirError as e:
            print("refused", e.code == -32602)
EOF
  check "protocol: search's actions are the CLI's for the seed" grep -qx 'actions True' "$tmp/proto.out"
  check "protocol: the state found has them as its trace" grep -qx 'trace True' "$tmp/proto.out"
  check "protocol: its reward is positive" grep -qx 'reward True' "$tmp/proto.out"
  check "protocol: no time, a bad algo or input is a parameter error" \
    sh -c "[ \$(grep -cx 'refused True' '$tmp/proto.out') = 4 ]"
  [ -s "$tmp/err" ] && show "$tmp/err"
  python3 "$top/examples/agents/mcts_agent.py" --program "$tmp/mlp.pir" --mesh model=2 \
    --hw h100x8 --budget 30 --compare >"$tmp/agent.out" 2>"$tmp/err"
  a=$(sed -n 's/^total_time //p' "$tmp/agent.out")
  b=$(sed -n 's/^builtin_total_time //p' "$tmp/agent.out")
  check "mcts_agent.py: finds Megatron's time on the MLP, as the built-in search" \
    sh -c "[ -n '$a' ] && [ '$a' = '$b' ]"
else
  for i in 1 2 3 4 5; do ok "# SKIP no python3"; done
fi

# --- a terminal: the progress line, and Ctrl-C keeps the best so far ---
if [ $have_python = 1 ]; then
  python3 - "$PARTIR" "$tmp/t2.pir" "$tmp/int.pir" >"$tmp/pty.out" 2>&1 <<'EOF'
import os, pty, select, sys, time
partir, program, out = sys.argv[1:4]
pid, fd = pty.fork()
if pid == 0:
    os.execv(partir, [partir, "search", program, "--mesh", "batch=2,model=4",
                      "--hw", "h100x8", "--budget", "1000000", "-o", out])
got, sent, start = b"", False, time.time()
while time.time() - start < 120:
    if select.select([fd], [], [], 0.1)[0]:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        got += chunk
    if not sent and b"states/s, best" in got:
        os.write(fd, b"\x03")  # Ctrl-C, once the search reports progress
        sent = True
_, status = os.waitpid(pid, 0)
text = got.decode(errors="replace")
print("progress", "\r\x1b[Ksearch: " in text)
print("interrupted", "(interrupted: the best so far)" in text)
print("status", status)
EOF
  check "terminal: a progress line" grep -qx 'progress True' "$tmp/pty.out"
  check "terminal: Ctrl-C stops the search and says so" grep -qx 'interrupted True' "$tmp/pty.out"
  check "terminal: ... exits 0 and writes the best program" \
    sh -c "grep -qx 'status 0' '$tmp/pty.out' && grep -q '^func @transformer' '$tmp/int.pir'"
else
  for i in 1 2 3; do ok "# SKIP no python3"; done
fi

# --- bad input ---------------------------------------------------------
"$PARTIR" search "$tmp/mlp.pir" --hw h100x8 >/dev/null 2>"$tmp/err"
check "no mesh: a clear error" grep -q 'search needs a mesh with axes' "$tmp/err"
"$PARTIR" search "$tmp/mlp.pir" --mesh model=2 --algo nope >/dev/null 2>"$tmp/err"
st=$?
check "--algo nope: usage status 2" sh -c "[ $st = 2 ] && grep -q 'takes mcts or beam' '$tmp/err'"
"$PARTIR" search "$tmp/mlp.pir" --mesh model=2 --inputs nope >/dev/null 2>"$tmp/err"
check "--inputs nope: names the argument" grep -q 'no argument %nope' "$tmp/err"
"$PARTIR" search "$tmp/none.pir" --mesh model=2 >/dev/null 2>"$tmp/err"
check "a missing file: an error" test -s "$tmp/err"
"$PARTIR" search "$tmp/mlp.pir" --mesh model=2 --hw h100x8 --budget 5 -o "$tmp/half.pir" \
  --emit-tactic "$tmp/no/dir/t.lua" >/dev/null 2>"$tmp/err"
st=$?
check "an unwritable tactic: status 1, and no program written either" \
  sh -c "[ $st = 1 ] && [ ! -e '$tmp/half.pir' ]"
echo "the user's own" >"$tmp/mine.pir"
"$PARTIR" search "$tmp/mlp.pir" --mesh model=2 --hw h100x8 --budget 5 -o "$tmp/mine.pir" \
  --emit-tactic "$tmp/no/dir/t.lua" >/dev/null 2>"$tmp/err"
check "...and a program file that was there is left as it was (not written, then deleted)" \
  sh -c "grep -qx \"the user's own\" '$tmp/mine.pir' && grep -q 'no/dir/t.lua: No such file' '$tmp/err'"
done_testing
