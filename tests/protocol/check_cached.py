"""What the agent protocol keeps between requests changes no reply (issue 12).

partir-repl --json lists a state's legal actions without running a pass
per action: it decides each one at its value (the rule's matcher or the
operator's tiling spec, by signature in a memo), keeps the list with the
state, and steps an index from the kept list.  It costs a state (reward,
features) lowering only what is new in it: the lowerings of values it
shares with states costed before are remembered (SpmdMemo).  This test
takes random walks (seeded, the same in every run) over several programs
and meshes, and at each state it visits checks

  1. the list against a trial of every candidate action: the commands
     the actions would be, made from the state's 'graph' observation
     alone (each argument's dimensions over each mesh axis that divides
     them; each operator value's rules OP-tile-D for its result
     dimensions and OP-sum, OP-sum-1, OP-sum-2 at every width an axis
     makes of one of its operands' or result's dimensions), each stepped
     as a command.  An action is legal when its step succeeds, changes
     the program and leaves every region bound to a mesh axis with as
     many parts as the axis has devices (a command takes any width; a
     tile or sum whose range counts otherwise is no partition of the
     mesh): the listed rule and arg-tile actions must be exactly those.
     'propagate' must be listed exactly when stepping it changes the
     program or is refused for a conflict (a rewrite was due);
  2. the list, the cost and the features against those a fresh server
     gives the same state (the walk's trace replayed from the root): the
     walk's server has listed, dropped and costed many other states by
     then, so a reply that depended on its caches or memos would differ;
  3. every reply of the walk's server against a mirror that gets the same
     requests with its store collected at every request
     (PARTIR_COLLECT_MIN_TERMS=0), which empties its memos of lowerings
     before each: byte for byte (the test sends no 'stats').  Every
     COSTED-th trial observes the cost, the features and the reward of
     its state too, so that the lowerings of thousands of states, sharing
     most of their values, go through the memo.

Then, on the larger programs in MODELS_DIR when it is given (the
12-layer transformer on batch=2,model=2 and the GPT-3-shaped 2-layer one
on batch=8,model=8), it runs an agent's session (random, seeded): steps
of one action or two, from states it goes back to at random, listings
whole and filtered, observations, traces, drops), and checks 3 on every
reply.

No timing is asserted.  Prints TAP.  Standard library only.

usage: check_cached.py PARTIR_REPL EXAMPLES_DIR [MODELS_DIR]
"""
import json
import os
import random
import re
import subprocess
import sys

from taplines import done, tap

repl, examples = sys.argv[1], sys.argv[2]
models = sys.argv[3] if len(sys.argv) > 3 else None


class Client:
    def __init__(self, env=None, mirror=False):
        allow = ["--allow", examples] + (["--allow", models] if models else [])
        self.p = subprocess.Popen([repl, "--json"] + allow,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, bufsize=1,
                                  env=dict(os.environ, **(env or {})))
        self.next = 0
        self.mirror = Client({"PARTIR_COLLECT_MIN_TERMS": "0"}) if mirror else None
        self.replies = self.differ = 0

    def send(self, line):
        self.p.stdin.write(line)
        self.p.stdin.flush()
        return self.p.stdout.readline()

    def call(self, method, **params):
        self.next += 1
        line = json.dumps({"jsonrpc": "2.0", "id": self.next, "method": method,
                           "params": params}) + "\n"
        text = self.send(line)
        if self.mirror:
            self.replies += 1
            self.differ += self.mirror.send(line) != text
        reply = json.loads(text)
        assert reply["id"] == self.next, reply
        return reply

    def close(self):
        self.call("shutdown")
        self.p.wait(timeout=30)
        if self.mirror:
            self.mirror.p.wait(timeout=30)


def axes_of(mesh):
    return [(a.split("=")[0], int(a.split("=")[1])) for a in mesh.split(",")]


def candidates(graph, mesh):
    """The commands an action of the state could be, from its graph."""
    out = set()
    for node in graph["nodes"]:
        shape, name = node["shape"], node["name"]
        if node["kind"] == "arg":
            for d, size in enumerate(shape):
                for axis, k in axes_of(mesh):
                    if size % k == 0:
                        out.add("arg-tile %%%s %d %d %s" % (name, d, size // k, axis))
            continue
        if node["kind"] in ("slice", "tile", "sum", "result"):
            continue
        op = node["kind"]
        sizes = set(shape)
        for edge in graph["edges"]:
            if edge[1] == node["id"]:
                sizes |= set(graph["nodes"][edge[0]]["shape"])
        for axis, k in axes_of(mesh):
            for d, size in enumerate(shape):
                if size % k == 0:
                    out.add("apply %s-tile-%d at %%%s w=%d a=%s"
                            % (op, d, name, size // k, axis))
            for rule in (op + "-sum", op + "-sum-1", op + "-sum-2"):
                for size in sizes:
                    if size % k == 0:
                        out.add("apply %s at %%%s w=%d a=%s" % (rule, name, size // k, axis))
    return out


BOUND = re.compile(r'!partir\.range<(\d+),(\d+)> @"(\w+)"')


def trial(c, state, command, mesh, costed=False):
    """Whether stepping 'command' succeeds, changes the program and binds
    every region over an axis to as many parts as the axis has devices;
    the error message when it is refused.  'costed': the step observes
    the cost, the features and the reward too."""
    r = c.call("step", state=state, actions=[command], reward=costed,
               observe=["program"] + (["cost", "features"] if costed else []))
    if "error" in r:
        return False, r["error"]["message"]
    c.call("drop", states=[r["result"]["state"]])
    sizes = dict(axes_of(mesh))
    parts_ok = all(int(n) % int(w) == 0 and int(n) // int(w) == sizes.get(axis)
                   for n, w, axis in BOUND.findall(r["result"]["observation"]["program"]))
    return not r["result"]["no_effect"] and parts_ok, None


def listing(c, state):
    return [a["action"] for a in c.call("actions", state=state)["result"]["actions"]]


def check_program(path, mesh, walks, steps, costed, seed):
    rng = random.Random(seed)
    c = Client(mirror=True)
    root = c.call("reset", path=path, mesh=mesh)["result"]["state"]
    states = agree_trial = agree_fresh = agree_cost = 0
    legal_seen = trials = 0
    mismatch = []
    for walk in range(walks):
        s = root
        for depth in range(steps):
            listed = listing(c, s)
            graph = c.call("observe", state=s, what=["graph"])["result"]["graph"]
            # 1. every candidate tried as a command
            legal = set()
            for k, command in enumerate(sorted(candidates(graph, mesh))):
                ok, _ = trial(c, s, command, mesh, costed=k % costed == 0)
                trials += 1
                if ok:
                    legal.add(command)
            ok, why = trial(c, s, "propagate", mesh)
            propagate_due = ok or "conflicting splits" in (why or "")
            rules_listed = [a for a in listed if a != "propagate"]
            same = (set(rules_listed) == legal and len(rules_listed) == len(legal)
                    and ("propagate" in listed) == propagate_due)
            agree_trial += same
            legal_seen += len(legal)
            if not same:
                mismatch.append((depth, sorted(legal - set(rules_listed))[:3],
                                 sorted(set(rules_listed) - legal)[:3],
                                 "propagate" in listed, propagate_due))
            # 2. a fresh server's list of the same state
            trace = c.call("trace", state=s)["result"]["actions"]
            fresh = Client()
            if trace:
                r = fresh.call("replay", path=path, mesh=mesh, trace=trace)
            else:
                r = fresh.call("reset", path=path, mesh=mesh)
            what = ["cost", "features"]
            agree_fresh += "result" in r and listing(fresh, r["result"]["state"]) == listed
            seen = c.call("observe", state=s, what=what)["result"]
            anew = fresh.call("observe", state=r["result"]["state"], what=what) \
                if "result" in r else {}
            agree_cost += anew.get("result") == seen
            fresh.close()
            states += 1
            # the walk: a listed action by index (a refused one ends it)
            step = c.call("step", state=s, actions=[rng.randrange(len(listed))],
                          reward=False) if listed else {}
            if "result" not in step:
                break
            s = step["result"]["state"]
    c.close()
    name = "%s on %s" % (path.rsplit("/", 1)[1], mesh)
    tap(states > 0 and agree_trial == states,
        "%s: the listed actions are those whose command changes the program, in "
        "%d of %d states (%d candidates tried, %d legal)"
        % (name, agree_trial, states, trials, legal_seen), mismatch[:3])
    tap(states > 0 and agree_fresh == states,
        "%s: a fresh server lists the same actions in %d of %d states"
        % (name, agree_fresh, states))
    tap(states > 0 and agree_cost == states,
        "%s: a fresh server observes the same cost and features in %d of %d states"
        % (name, agree_cost, states))
    tap(c.replies > 0 and c.differ == 0,
        "%s: %d of %d replies the same from a server whose memos are emptied "
        "at every request" % (name, c.replies - c.differ, c.replies))


def session(path, mesh, hw, requests, seed, batch_first=False):
    """An agent's session, mirrored (3); with batch_first, from the state
    that splits %x's first dimension over the mesh's first axis and
    propagates (data parallelism: most values inside one region, whose
    lowerings are remembered by their binders)."""
    rng = random.Random(seed)
    c = Client(mirror=True)
    root = c.call("reset", path=path, mesh=mesh, hw=hw, max_steps=40)["result"]["state"]
    if batch_first:
        graph = c.call("observe", state=root, what=["graph"])["result"]["graph"]
        x = next(n for n in graph["nodes"] if n["kind"] == "arg" and n["name"] == "x")
        axis, size = mesh.split(",")[0].split("=")
        split = "arg-tile %%x 0 %d %s" % (x["shape"][0] // int(size), axis)
        root = c.call("step", state=root, actions=[split, "propagate"])["result"]["state"]
    s, live = root, [root]
    for _ in range(requests):
        k = rng.random()
        if k < 0.05:
            c.call("actions", state=s)
        elif k < 0.08:
            c.call("actions", state=s, filter="tile-1", limit=5)
        elif k < 0.10:
            c.call("observe", state=s, what=["program", "cost", "features", "legal", "graph"])
        elif k < 0.12 and len(live) > 3:
            gone = rng.sample(live[:-1], 2)
            live = [x for x in live if x not in gone]
            c.call("drop", states=gone)
            s = s if s in live else live[-1]
        elif k < 0.14:
            c.call("trace", state=s)
        elif k < 0.20:
            s = rng.choice(live)
        total = c.call("actions", state=s, limit=0).get("result", {}).get("total", 0)
        if total == 0:
            s = root
            continue
        r = rng.random()
        actions = ([rng.randrange(total), "propagate"] if r < 0.1 else
                   ["propagate"] if r < 0.25 else [rng.randrange(total)])
        step = c.call("step", state=s, actions=actions, reward=rng.random() < 0.9,
                      observe=rng.choice([["features"], ["cost"], ["features", "legal"], []]))
        if "result" in step:
            s = step["result"]["state"]
            live.append(s)
    c.close()
    tap(c.differ == 0,
        "%s on %s%s: an agent's session, %d of %d replies the same from a server "
        "whose memos are emptied at every request"
        % (path.rsplit("/", 1)[1], mesh, ", data-parallel first" if batch_first else "",
           c.replies - c.differ, c.replies))


def guarded(check, *args):
    """Runs a check; a server that dies (or answers what cannot be read)
    fails it rather than the script."""
    try:
        check(*args)
    except (ValueError, KeyError, AssertionError, BrokenPipeError) as e:
        tap(False, "%s on %s: the servers answered throughout"
            % (args[0].rsplit("/", 1)[1], args[1]), repr(e))


guarded(check_program, examples + "/mlp.pir", "model=2", 3, 5, 2, 1)
guarded(check_program, examples + "/mlp.pir", "batch=2,model=4", 3, 5, 2, 2)
guarded(check_program, examples + "/heads.pir", "batch=2,model=2", 3, 4, 4, 3)
guarded(check_program, examples + "/transformer_layer.pir", "batch=2,model=2",
        2, 5, 16, 4)
if models:
    guarded(session, models + "/t12.pir", "batch=2,model=2", "cpu2", 300, 5)
    guarded(session, models + "/gpt3-2.pir", "batch=8,model=8", "h100x8", 300, 6)
    guarded(session, models + "/t12.pir", "batch=2,model=2", "cpu2", 200, 7, True)

done()
