"""A random-walk agent over the agent protocol (make bench).

Walks the 12-layer GPT-3-shaped transformer (examples/models/transformer.lua
--layers 12 --batch 8 --seq 2048 --d_model 12288 --heads 96 --d_ff 49152)
on the mesh batch=8,model=8 with hardware h100x8.  Each walk resets, then
takes one uniformly random legal action per step, with the reward and the
'features' observation, for STEPS steps: an 'actions' request with limit 0
gives the number of legal actions ('total'), and the step names one by its
index.  Every EVERY steps (and at the first and last) the full list is
asked for as well, and its latency measured (the request written to the
reply read, unparsed), so the latency is known along the whole depth of
the walk.  Prints steps per second (the wall clock of the walk's requests,
the full listings left out), the latency of 'actions' (median and max, and
by depth), the server's CPU time per step, and the distribution of the
program sizes reached (values in the program, from 'features').

usage: bench-walk.py PARTIR_REPL TMPDIR [--walks N] [--steps N] [--every N]
                     [--seed N] [--layers N]
"""
import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("repl")
ap.add_argument("tmp")
ap.add_argument("--walks", type=int, default=4)
ap.add_argument("--steps", type=int, default=500)
ap.add_argument("--every", type=int, default=25)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--layers", type=int, default=12)
ap.add_argument("--start", action="append", default=[],
                help="an action taken before the walk (repeatable), e.g. "
                     "'arg-tile %%x 0 1 batch' then 'propagate': the walk "
                     "starts from the data-parallel state")
ap.add_argument("--models", default=None, help="examples/models")
ap.add_argument("--record", default=None,
                help="write every request sent to this file (to replay it under perf)")
args = ap.parse_args()

models = args.models or __file__.rsplit("/", 3)[0] + "/examples/models"
path = "%s/gpt3-%d.pir" % (args.tmp, args.layers)
with open(path, "w") as out:
    subprocess.run(["lua5.4", models + "/transformer.lua", "--layers", str(args.layers),
                    "--batch", "8", "--seq", "2048", "--d_model", "12288",
                    "--heads", "96", "--d_ff", "49152"], stdout=out, check=True)


class Server:
    def __init__(self):
        self.p = subprocess.Popen([args.repl, "--json", "--allow", args.tmp],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, bufsize=1)
        self.n = 0
        self.log = open(args.record, "a") if args.record else None

    def send(self, method, **params):
        self.n += 1
        line = json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method,
                           "params": params}) + "\n"
        if self.log:
            self.log.write(line)
        self.p.stdin.write(line)
        self.p.stdin.flush()
        return self.p.stdout.readline()

    def call(self, method, **params):
        line = self.send(method, **params)
        if not line.startswith("{"):
            raise EOFError(method)
        r = json.loads(line)
        if "error" in r:
            raise RuntimeError("%s: %s" % (method, r["error"]))
        return r["result"]

    def close(self):
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        return self.p.wait()


rng = random.Random(args.seed)
walk_time = 0.0
steps = 0
failed = 0
crashes = []  # (walk, depth, action index, exit status)
latency = []  # (depth, seconds, actions listed)
sizes = []
cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
for walk in range(args.walks):
    s = Server()
    state = s.call("reset", path=path, mesh="batch=8,model=8", hw="h100x8")["state"]
    if args.start:
        state = s.call("step", state=state, actions=args.start)["state"]
    root_size = s.call("observe", state=state, what=["features"])["features"][0]
    for depth in range(args.steps + 1):
        if depth % args.every == 0 or depth == args.steps:
            t = time.perf_counter()
            try:
                line = s.send("actions", state=state)
            except BrokenPipeError:  # the server died: the step below says so
                line = ""
            latency.append((depth, time.perf_counter() - t, line.count('"index"')))
        if depth == args.steps:
            break
        t = time.perf_counter()
        try:
            total = s.call("actions", state=state, limit=0)["total"]
        except (EOFError, BrokenPipeError):  # the server died
            crashes.append((walk, depth, -1, s.close()))
            break
        if total == 0:
            break
        index = rng.randrange(total)
        try:
            line = s.send("step", state=state, actions=[index], observe=["features"])
        except BrokenPipeError:
            line = ""
        walk_time += time.perf_counter() - t
        if not line.startswith("{"):  # the server died (an assertion's
            # message may reach stdout): say where, and walk on afresh
            crashes.append((walk, depth, index, s.close()))
            break
        r = json.loads(line)
        steps += 1
        if "error" in r:  # a listed action that fails: the state stays
            failed += 1
            continue
        state = r["result"]["state"]
        sizes.append(r["result"]["observation"]["features"][0])
    s.close()
cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)

lat = [x[1] for x in latency]
print("random walk over the agent protocol: %d-layer GPT-3-shaped transformer,"
      " batch=8,model=8, h100x8" % args.layers)
print("%d walks of %d steps (seed %d): one random legal action per step, with"
      " reward and features" % (args.walks, args.steps, args.seed))
print("target: >= 2000 steps/s; 'actions' under 10 ms at any depth")
print("steps/s %.0f  (%d steps in %.2f s; %d refused; server CPU %.0f us/step,"
      " full listings included)" % (steps / walk_time, steps, walk_time, failed,
                                    1e6 * cpu / max(steps, 1)))
print("actions (full list, %d requests): median %.2f ms, max %.2f ms, %d-%d listed"
      % (len(lat), 1e3 * statistics.median(lat), 1e3 * max(lat),
         min(x[2] for x in latency), max(x[2] for x in latency)))
bands = sorted({d for d, _, _ in latency})
step = max(1, len(bands) // 5)
for lo in bands[::step]:
    hi = lo + step * args.every
    xs = [t for d, t, _ in latency if lo <= d < hi]
    if xs:
        print("  depth %4d-%-4d median %.2f ms  max %.2f ms" % (
            lo, hi - 1, 1e3 * statistics.median(xs), 1e3 * max(xs)))
if sizes:
    q = statistics.quantiles(sizes, n=10) if len(sizes) > 1 else [sizes[0]] * 9
    print("program size (values) reached: min %d, p10 %.0f, median %.0f, p90 %.0f,"
          " max %d (the root has %d)" % (min(sizes), q[0], statistics.median(sizes),
                                         q[8], max(sizes), root_size))
for walk, depth, index, status in crashes:
    print("walk %d: the server died (status %d) stepping action %d at depth %d"
          % (walk, status, index, depth))
sys.stdout.flush()
