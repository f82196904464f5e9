#!/bin/sh
# The example agents (examples/agents/, Python standard library only) over
# the JSON agent protocol of 'partir-repl --json': greedy descent on the
# modelled cost reaches the Megatron tactic's time on the MLP and on the
# transformer layer, the random agent finds and prints a program, and
# PartirEnv's reset/step return Gymnasium's tuples.
. "$top_srcdir/tests/tap.sh"
if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import json' 2>/dev/null; then
  echo "1..0 # SKIP no python3"
  exit 0
fi
top=$(cd "$top_srcdir" && pwd)
ex=$top/examples
agents=$top/examples/agents
export PARTIR_REPL PYTHONDONTWRITEBYTECODE=1

# total_time FILE MESH: the modelled time per step of a program (cpu2),
# from a reset and observe through the protocol.
total_time() {
  PYTHONPATH=$agents python3 -c '
import os, sys
from partir_env import PartirClient
with PartirClient(allow=[os.path.dirname(sys.argv[1])]) as c:
    s = c.reset(path=sys.argv[1], mesh=sys.argv[2], hw="cpu2")["state"]
    print("%.9g" % c.observe(state=s, what=["cost"])["cost"]["total_time"])
' "$1" "$2"
}

# no_worse A B: A <= B, up to rounding in the last printed digit
no_worse() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && b != "" && a <= b * (1 + 1e-6)) }'; }

# greedy NAME MESH: the greedy agent against the Megatron tactic
greedy() {
  name=$1 mesh=$2
  if python3 "$agents/greedy_agent.py" --program "$ex/$name.pir" --mesh "$mesh" \
      --hw cpu2 --steps 32 -o "$tmp/$name.greedy.pir" >"$tmp/$name.greedy" 2>"$tmp/$name.err"; then
    ok "$name: the greedy agent runs with --mesh $mesh"
  else
    not_ok "$name: the greedy agent runs with --mesh $mesh"
    show "$tmp/$name.err"
  fi
  "$PARTIR" tactic "$top/tactics/megatron.lua" "$ex/$name.pir" --mesh "$mesh" \
    -o "$tmp/$name.megatron.pir" 2>"$tmp/$name.err"
  g=$(awk '$1 == "total_time" { t = $2 } END { print t }' "$tmp/$name.greedy")
  m=$(total_time "$tmp/$name.megatron.pir" "$mesh" 2>>"$tmp/$name.err")
  if no_worse "$g" "$m"; then
    ok "$name: greedy total_time $g s is no worse than megatron's $m s"
  else
    not_ok "$name: greedy total_time '$g' s is no worse than megatron's '$m' s"
    show "$tmp/$name.greedy"
    show "$tmp/$name.err"
  fi
  check "$name: ...and prints the program and its trace" sh -c \
    "grep -q '^func @' '$tmp/$name.greedy' && grep -q '^trace (' '$tmp/$name.greedy'"
  # a strategy the cost model likes must also be one that runs
  if "$PARTIR" lower "$tmp/$name.greedy.pir" --mesh "$mesh" --simulate \
      >"$tmp/$name.sim" 2>&1; then
    ok "$name: the greedy strategy runs on simulated devices and agrees"
  else
    not_ok "$name: the greedy strategy runs on simulated devices and agrees"
    show "$tmp/$name.greedy"
    show "$tmp/$name.sim"
  fi
}
greedy mlp model=2
greedy transformer_layer model=2

# the random agent: seeded, prints its best program and its cost
if python3 "$agents/random_agent.py" --program "$ex/mlp.pir" --mesh model=2 \
    --hw cpu2 --episodes 5 --steps 6 --seed 1 -o "$tmp/random.pir" \
    >"$tmp/random.out" 2>"$tmp/random.err"; then
  ok "random agent: 5 episodes on mlp.pir"
else
  not_ok "random agent: 5 episodes on mlp.pir"
  show "$tmp/random.err"
fi
check "random agent: ...prints a program" grep -q '^func @mlp' "$tmp/random.out"
r=$(awk '$1 == "total_time" { t = $2 } END { print t }' "$tmp/random.out")
root=$(total_time "$ex/mlp.pir" model=2)
check "random agent: ...no worse than the root ($r <= $root s)" no_worse "$r" "$root"
python3 "$agents/random_agent.py" --program "$ex/mlp.pir" --mesh model=2 \
  --hw cpu2 --episodes 5 --steps 6 --seed 1 >"$tmp/random2.out" 2>/dev/null
check "random agent: ...the same again with the same seed" cmp -s "$tmp/random.out" "$tmp/random2.out"
check "random agent: ...its strategy runs on simulated devices and agrees" \
  quiet "$PARTIR" lower "$tmp/random.pir" --mesh model=2 --simulate

# PartirEnv: Gymnasium's reset and step tuples, truncation, errors
PYTHONPATH=$agents python3 - "$ex/mlp.pir" >"$tmp/env.out" 2>&1 <<'PY'
import sys
from partir_env import PartirEnv, PartirError

def check(cond, what):
    print(("ok " if cond else "FAIL ") + what)

env = PartirEnv(sys.argv[1], mesh="model=2", hw="cpu2", max_steps=2)
obs, info = env.reset(seed=3)
check(isinstance(obs, dict) and isinstance(info, dict), "reset -> (dict, dict)")
check(isinstance(obs["features"], list) and len(obs["features"]) > 0
      and all(isinstance(x, (int, float)) for x in obs["features"]),
      "features: a list of numbers")
check(isinstance(obs["cost"], dict) and obs["cost"]["total_time"] > 0, "cost: a dict")
n = env.action_space_n()
check(n > 0 and n == len(env.legal_actions())
      and all(isinstance(a, str) for a in env.legal_actions()), "legal actions")
out = env.step(0)
check(isinstance(out, tuple) and len(out) == 5, "step -> a 5-tuple")
obs, reward, terminated, truncated, info = out
check(isinstance(obs, dict) and isinstance(obs["features"], list), "step: observation")
check(isinstance(reward, float), "step: reward is a float")
check(isinstance(terminated, bool) and isinstance(truncated, bool), "step: flags are bools")
check(isinstance(info, dict) and "state" in info, "step: info")
if not terminated:
    a = env.legal_actions()[0]
    obs, reward, terminated, truncated, info = env.step(a)
    check(truncated and info["action"] == a, "a string action; truncated after max_steps")
obs, info = env.reset()
check(env.steps == 0, "reset starts a new episode")
try:
    env.step("no-such-action %nothing 9 9")
    check(False, "a bad action raises PartirError")
except PartirError as e:
    check(isinstance(e.code, int) and e.message != "", "a bad action raises PartirError")
try:
    env.client.observe(state=987654321, what=["cost"])
    check(False, "an unknown state raises PartirError")
except PartirError as e:
    check(True, "an unknown state raises PartirError")
env.close()
# a listed action the engine refuses when it runs it: splitting x by rows
# and y by columns over one axis, 'propagate' (listed) meets their
# conflict; the state stays, the reward is 0 and it is not offered again
text = ("func @f(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>) -> tensor<8x8xf32> {\n"
        "  %s = add(%x, %y)\n  return %s\n}\n")
env = PartirEnv(text=text, mesh="model=2", hw="cpu2", max_steps=8)
env.reset()
env.step("arg-tile %x 0 4 model")
obs, reward, terminated, truncated, info = env.step("arg-tile %y 1 4 model")
before = info["state"]
check("propagate" in env.legal_actions(), "a conflicting propagate is listed")
obs, reward, terminated, truncated, info = env.step(env.legal_actions().index("propagate"))
check(info["state"] == before and reward == 0.0 and "conflicting splits" in info["refused"],
      "...refused by the engine: the state stays, reward 0, the reason in info")
check("propagate" not in env.legal_actions() and not terminated,
      "...and not offered again in that state")
a = env.legal_actions()[0]
obs, reward, terminated, truncated, info = env.step(0)
check(info["action"] == a, "...an index after a refusal names the action shown")
env.close()
check(True, "close")
PY
status=$?
while read -r verdict what; do
  if test "$verdict" = ok; then ok "PartirEnv: $what"; else not_ok "PartirEnv: $what"; fi
done <<EOF2
$(grep -E '^(ok|FAIL) ' "$tmp/env.out")
EOF2
check "PartirEnv: the checks ran to the end" sh -c "test $status -eq 0 && grep -q '^ok close' '$tmp/env.out'"
test $status -eq 0 || show "$tmp/env.out"
done_testing
