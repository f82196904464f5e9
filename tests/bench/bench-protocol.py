"""Throughput of the agent protocol over a pipe (make bench).

Measures, for the 2-layer MLP and a 12-layer transformer: 'step' with one
action (no observation, no reward: the engine and the protocol alone, and
with the reward, which lowers and costs both states), 'expand' children
per second, and the same step in-process through Lua (partir tactic) for
the protocol's overhead ratio.  The pipe client never drops its ids, so
the engine keeps every child; the in-process loop that keeps its children
does the same work, the one that drops them does less.

usage: bench-protocol.py PARTIR_REPL PARTIR EXAMPLES_DIR TMPDIR
"""
import json
import resource
import statistics
import subprocess
import sys
import time

repl, partir, examples, tmp = sys.argv[1:5]


def serve(path, mesh, lines):
    """Runs partir-repl --json on a reset then 'lines'; returns the wall
    time and the server's CPU time (user + system: RUSAGE_CHILDREN grows
    by the child's when it is reaped)."""
    p = subprocess.Popen([repl, "--json", "--allow", tmp, "--allow", examples],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    first = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "reset",
                        "params": {"path": path, "mesh": mesh}})
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out, _ = p.communicate(first + "\n" + "".join(l + "\n" for l in lines))
    dt = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert len(out.splitlines()) == len(lines) + 1 and '"error"' not in out, out[:300]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return dt, cpu


def pipe_rate(path, mesh, action, n, reward):
    """Steps per second over the pipe (wall clock), and the server's CPU
    seconds per step beyond those of a reset alone."""
    reqs = [json.dumps({"jsonrpc": "2.0", "id": i + 1, "method": "step",
                        "params": {"state": 1, "actions": [action], "reward": reward}})
            for i in range(n)]
    _, cpu0 = serve(path, mesh, [])
    dt, cpu = serve(path, mesh, reqs)
    return n / dt, (cpu - cpu0) / n


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


def lua_rate(path, mesh, action, n, keep):
    """The same step in-process through Lua.  With 'keep' the loop keeps
    every child, as the pipe client does (its ids are never dropped);
    without, each child is garbage at once."""
    script = tmp + "/bench_step.lua"
    store = "kept[i] = " if keep else ""
    with open(script, "w") as f:
        f.write("return function(s)\n  local kept = {}\n  local t = os.clock()\n"
                "  for i = 1, %d do %ss:exec(%r) end\n"
                "  io.stderr:write(string.format('%%.6f\\n', os.clock() - t))\n"
                "  return s\nend\n" % (n, store, action))
    r = subprocess.run([partir, "tactic", script, path, "--mesh", mesh, "-o", tmp + "/x.pir"],
                       capture_output=True, text=True, check=True)
    return n / float(r.stderr.strip().splitlines()[-1])


subprocess.run(["lua5.4", examples + "/models/transformer.lua", "--layers", "12"],
               stdout=open(tmp + "/t12.pir", "w"), check=True)
cases = [("mlp", examples + "/mlp.pir", "model=2", "arg-tile %x 0 8 model", 20000),
         ("transformer-12", tmp + "/t12.pir", "model=2", "arg-tile %x 0 1 model", 500)]
print("agent protocol throughput (one client, one pipe)")
print("target: >= 20000 steps/s on the MLP; protocol overhead < 2x in-process")
print("overhead: the server's CPU time per step (getrusage) over the CPU time of")
print("the same step in-process (Lua s:exec in a loop; os.clock), in a loop that")
print("keeps every child as the pipe client does ('keep') and in one that drops")
print("them ('disc'); each of 5 rounds measures all three back to back, and the")
print("ratios are the medians of the rounds' ratios (a shared machine's load")
print("moves all three together); steps/s is the best round's wall clock")
print("%-16s %10s %10s %10s %10s %10s %10s %7s %7s" % (
    "program", "steps/s", "+reward/s", "expand/s", "pipe us", "keep us",
    "disc us", "ratio", "vs disc"))
for name, path, mesh, action, n in cases:
    rounds = []
    for _ in range(5):
        rate, cpu = pipe_rate(path, mesh, action, n, False)
        keep = lua_rate(path, mesh, action, n, True)
        disc = lua_rate(path, mesh, action, n, False)
        rounds.append((rate, cpu, keep, disc))
    s = max(r[0] for r in rounds)
    cpu = statistics.median(r[1] for r in rounds)
    keep = statistics.median(r[2] for r in rounds)
    disc = statistics.median(r[3] for r in rounds)
    ratio = statistics.median(r[1] * r[2] for r in rounds)
    ratio_disc = statistics.median(r[1] * r[3] for r in rounds)
    sr = pipe_rate(path, mesh, action, max(n // 10, 100), True)[0]
    ex = expand_rate(path, mesh, 20 if name == "mlp" else 1)
    print("%-16s %10.0f %10.0f %10.0f %10.2f %10.2f %10.2f %7.2f %7.2f" % (
        name, s, sr, ex, cpu * 1e6, 1e6 / keep, 1e6 / disc, ratio, ratio_disc))
