"""Throughput of the agent protocol over a pipe (make bench).

Measures, for the 2-layer MLP and a 12-layer transformer: 'step' with one
action (no observation, no reward: the engine and the protocol alone, and
with the reward, which lowers and costs both states), 'expand' children
per second, and the same step in-process through Lua (partir tactic) for
the protocol's overhead ratio.

usage: bench-protocol.py PARTIR_REPL PARTIR EXAMPLES_DIR TMPDIR
"""
import json
import subprocess
import sys
import time

repl, partir, examples, tmp = sys.argv[1:5]


def pipe_rate(path, mesh, action, n, reward):
    p = subprocess.Popen([repl, "--json", "--allow", tmp, "--allow", examples],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    first = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "reset",
                        "params": {"path": path, "mesh": mesh}})
    reqs = [json.dumps({"jsonrpc": "2.0", "id": i + 1, "method": "step",
                        "params": {"state": 1, "actions": [action], "reward": reward}})
            for i in range(n)]
    t0 = time.perf_counter()
    out, _ = p.communicate(first + "\n" + "\n".join(reqs) + "\n")
    dt = time.perf_counter() - t0
    assert len(out.splitlines()) == n + 1 and '"error"' not in out, out[:300]
    return n / dt


def expand_rate(path, mesh, n):
    p = subprocess.Popen([repl, "--json", "--allow", tmp, "--allow", examples],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    reqs = [json.dumps({"jsonrpc": "2.0", "id": 0, "method": "reset",
                        "params": {"path": path, "mesh": mesh}})]
    reqs += [json.dumps({"jsonrpc": "2.0", "id": i + 1, "method": "expand",
                         "params": {"state": 1, "reward": False}}) for i in range(n)]
    t0 = time.perf_counter()
    out, _ = p.communicate("\n".join(reqs) + "\n")
    dt = time.perf_counter() - t0
    kids = sum(len(json.loads(l)["result"]["children"]) for l in out.splitlines()[1:])
    return kids / dt


def lua_rate(path, mesh, action, n):
    script = tmp + "/bench_step.lua"
    with open(script, "w") as f:
        f.write("return function(s)\n  local t = os.clock()\n"
                "  for _ = 1, %d do s:exec(%r) end\n"
                "  io.stderr:write(string.format('%%.6f\\n', os.clock() - t))\n"
                "  return s\nend\n" % (n, action))
    r = subprocess.run([partir, "tactic", script, path, "--mesh", mesh, "-o", tmp + "/x.pir"],
                       capture_output=True, text=True, check=True)
    return n / float(r.stderr.strip().splitlines()[-1])


subprocess.run(["lua5.4", examples + "/models/transformer.lua", "--layers", "12"],
               stdout=open(tmp + "/t12.pir", "w"), check=True)
cases = [("mlp", examples + "/mlp.pir", "model=2", "arg-tile %x 0 8 model", 20000),
         ("transformer-12", tmp + "/t12.pir", "model=2", "arg-tile %x 0 1 model", 500)]
print("agent protocol throughput (one client, one pipe)")
print("target: >= 20000 steps/s on the MLP; protocol overhead < 2x in-process")
print("%-16s %14s %14s %14s %14s %8s" % ("program", "steps/s", "+reward /s",
                                          "in-process /s", "expand kids/s", "ratio"))
for name, path, mesh, action, n in cases:
    s = pipe_rate(path, mesh, action, n, False)
    sr = pipe_rate(path, mesh, action, max(n // 10, 100), True)
    lua = lua_rate(path, mesh, action, n)
    ex = expand_rate(path, mesh, 20 if name == "mlp" else 1)
    print("%-16s %14.0f %14.0f %14.0f %14.0f %8.2f" % (name, s, sr, lua, ex, lua / s))
