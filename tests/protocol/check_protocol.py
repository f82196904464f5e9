"""Protocol checks for partir-repl --json: every error kind, fork
semantics, determinism, drop, trace/replay, and robustness under
thousands of malformed messages.  Prints TAP.  Standard library only.

usage: check_protocol.py PARTIR_REPL EXAMPLES_DIR
"""
import json
import random
import subprocess
import sys

repl, examples = sys.argv[1], sys.argv[2]
n = 0
failed = False


def tap(ok, what, why=""):
    global n, failed
    n += 1
    print(("ok %d - %s" if ok else "not ok %d - %s") % (n, what))
    if not ok:
        failed = True
        if why:
            print("# " + str(why)[:400])


def start():
    return subprocess.Popen([repl, "--json", "--allow", examples],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, bufsize=1)


class Client:
    def __init__(self):
        self.p = start()
        self.next = 0

    def raw(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline()

    def call(self, method, **params):
        self.next += 1
        req = {"jsonrpc": "2.0", "id": self.next, "method": method,
               "params": params}
        reply = json.loads(self.raw(json.dumps(req)))
        assert reply["id"] == self.next, reply
        return reply

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


mlp = examples + "/mlp.pir"
c = Client()
init = c.call("initialize")["result"]
tap(init["protocol"] == "partir-agent/1", "initialize names the protocol")
tap(all(len(r["sha256"]) == 64 for r in init["rules"]) and init["rules"],
    "initialize lists the rule files with a hash")

# every error kind, and the next request still works
def err(reply, code, what):
    e = reply.get("error")
    tap(e is not None and e["code"] == code, what, reply)

err(json.loads(c.raw("{not json")), -32700, "malformed JSON: -32700")
err(json.loads(c.raw("[1, 2]")), -32600, "not an object: -32600")
err(json.loads(c.raw('{"id": 1, "method": "stats"} x')), -32700,
    "more after the request: -32700")
c.p.stdin.flush()
c.p.stdin.buffer.write(b'{"id": "\xff", "method": "stats"}\n')
c.p.stdin.buffer.flush()
err(json.loads(c.p.stdout.readline()), -32700, "not UTF-8: -32700")
err(json.loads(c.raw('{"id": "a\\u0000b", "method": "stats"}')), -32700,
    "a NUL in a string: -32700 (it would cut the string short)")
err(json.loads(c.raw('{"id": 1e400, "method": "stats"}')), -32600, "an infinite id: -32600")
err(json.loads(c.raw("[" * 100000)), -32700, "nesting 100000 deep: -32700")
err(json.loads(c.raw('{"jsonrpc":"2.0","id":7}')), -32600, "no method: -32600")
err(c.call("frobnicate"), -32601, "unknown method: -32601")
err(json.loads(c.raw('{"jsonrpc":"2.0","id":9,"method":"reset","params":[1]}')),
    -32602, "params not an object: -32602")
err(c.call("reset", path=42), -32602, "wrong-typed parameter: -32602")
err(c.call("reset", path=mlp, mesh="model=2", seed="x"), -32602, "a seed that is not an integer: -32602")
err(c.call("step", state=12345, actions=[]), 1, "unknown state id: 1")
root = c.call("reset", path=mlp, mesh="model=2")["result"]
s1 = root["state"]
err(c.call("step", state=s1, actions=["arg-tile %x 0 5 model"]), 2,
    "illegal action: 2")
err(c.call("step", state=s1, actions=[10 ** 6]), 2, "an action index out of range: 2")
err(c.call("reset", program="func @f(", mesh="model=2"), 3, "a bad program: 3")
err(c.call("reset", path="/etc/passwd"), 4, "a file outside --allow: 4")
err(c.call("observe", state=s1, what=["nonsense"]), -32602, "unknown observation")
big = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"' + "a" * (17 << 20) + '"}}'
err(json.loads(c.raw(big)), -32600, "an oversized line: -32600")
tap(c.call("observe", state=s1, what=["program"])["result"]["program"].startswith("func @mlp"),
    "after all those errors the next request works and the state is intact")

# fork semantics
prog1 = c.call("observe", state=s1, what=["program"])["result"]["program"]
a = c.call("step", state=s1, actions=["arg-tile %x 0 8 model", "propagate"])["result"]
b = c.call("step", state=s1, actions=["arg-tile %w 1 128 model",
                                      "arg-tile %u 0 128 model", "propagate"])["result"]
tap(a["state"] != b["state"] and a["hash"] != b["hash"],
    "two steps from one state give two different children")
tap(c.call("observe", state=s1, what=["program"])["result"]["program"] == prog1,
    "the parent is unchanged")
tap(b["reward"]["delta"] > 0, "megatron on 2 devices lowers the modelled time")
noop = c.call("step", state=a["state"], actions=["propagate"])["result"]
tap(noop["no_effect"] is True and noop["hash"] == a["hash"], "a step that changes nothing says no_effect")

acts = c.call("actions", state=s1)["result"]
tap(acts["count"] == len(acts["actions"]) and acts["count"] > 0
    and [x["index"] for x in acts["actions"]] == list(range(acts["count"])),
    "actions are numbered in order")
by_index = c.call("step", state=s1, actions=[0])["result"]
by_text = c.call("step", state=s1, actions=[acts["actions"][0]["action"]])["result"]
tap(by_index["hash"] == by_text["hash"], "an action by index is the action by its string")
ex = c.call("expand", state=s1, observe=["cost"])["result"]["children"]
tap(len(ex) == acts["count"] and all("state" in ch or "error" in ch for ch in ex),
    "expand gives one child per legal action")

# a budget: truncated from max_steps actions on
rb = c.call("reset", path=mlp, mesh="model=2", max_steps=2)["result"]["state"]
t1 = c.call("step", state=rb, actions=["arg-tile %x 0 8 model"], reward=False)["result"]
t2 = c.call("step", state=t1["state"], actions=["propagate"], reward=False)["result"]
t3 = c.call("step", state=rb, actions=["arg-tile %x 0 8 model", "propagate"], reward=False)["result"]
tap(not t1["truncated"] and t2["truncated"] and t3["truncated"],
    "max_steps truncates from that many actions on, whichever steps took them")
err(c.call("reset", path=mlp, max_steps=-1), -32602, "a negative budget: -32602")

# trace and replay
tr = c.call("trace", state=b["state"])["result"]["actions"]
rp = c.call("replay", path=mlp, mesh="model=2", trace=tr)["result"]
tap(rp["hash"] == b["hash"], "replaying a trace reaches the same program")

# drop
d = c.call("drop", states=[a["state"], a["state"], 99999])["result"]
tap(d["dropped"] == 1, "drop counts what it dropped")
err(c.call("observe", state=a["state"], what=["program"]), 1, "a dropped state is gone")
obs = c.call("observe", state=b["state"], what=["program", "cost", "features", "graph", "legal"])["result"]
tap(len(obs["features"]) == 8 and obs["graph"]["nodes"] and obs["legal"] >= 0,
    "observe gives features, graph and the legal count")
c.call("shutdown")
c.p.wait(timeout=30)
tap(c.p.returncode == 0, "shutdown ends the process")

# determinism: the same requests give the same bytes
def session():
    p = start()
    reqs = [
        {"jsonrpc": "2.0", "id": 1, "method": "reset",
         "params": {"path": mlp, "mesh": "batch=2,model=2"}},
        {"jsonrpc": "2.0", "id": 2, "method": "actions", "params": {"state": 1}},
        {"jsonrpc": "2.0", "id": 3, "method": "expand",
         "params": {"state": 1, "observe": ["cost", "features"]}},
    ]
    out, _ = p.communicate("\n".join(json.dumps(r) for r in reqs) + "\n", timeout=60)
    return out

tap(session() == session(), "the same requests give the same replies, byte for byte")

# robustness: thousands of malformed and random messages
rng = random.Random(7)
p = start()
lines = []
pieces = ['{', '}', '[', ']', '"', ':', ',', 'null', 'true', '1e999', '-0',
          '"method"', '"params"', '"state"', '"id"', '"step"', '"reset"', '\\u0000']
for i in range(3000):
    kind = rng.randrange(4)
    if kind == 0:
        lines.append("".join(rng.choice(pieces) for _ in range(rng.randrange(1, 12))))
    elif kind == 1:
        lines.append(json.dumps({"jsonrpc": "2.0", "id": i, "method": rng.choice(
            ["step", "actions", "observe", "expand", "trace", "drop", "replay", "x"]),
            "params": {"state": rng.randrange(-2, 5), "actions": [rng.randrange(-3, 50)],
                       "what": ["program"], "states": [rng.randrange(0, 9)]}}))
    elif kind == 2:
        lines.append(json.dumps({"jsonrpc": "2.0", "id": i, "method": "reset",
                                 "params": {"program": "".join(rng.choice("func@%(){}:=<>x0123")
                                                               for _ in range(40))}}))
    else:
        lines.append("".join(chr(rng.randrange(32, 127)) for _ in range(rng.randrange(1, 80))))
lines.append(json.dumps({"jsonrpc": "2.0", "id": "last", "method": "initialize"}))
out, _ = p.communicate("\n".join(l.replace("\n", " ") for l in lines) + "\n", timeout=300)
replies = out.splitlines()
tap(len(replies) == len(lines), "every one of %d messages gets exactly one reply" % len(lines),
    "%d replies" % len(replies))
tap(all(json.loads(r).get("jsonrpc") == "2.0" for r in replies), "every reply is JSON-RPC 2.0")
tap(p.returncode == 0 and json.loads(replies[-1]).get("id") == "last"
    and "result" in json.loads(replies[-1]), "the process survives and answers the last request")
# the transcript in docs/protocol.md is what the engine answers, byte for byte
import os
top = os.path.dirname(os.path.abspath(examples))
with open(os.path.join(top, "docs", "protocol.md")) as f:
    doc = f.read().split("## Example transcript", 1)[1]
sent = [l[2:] for l in doc.splitlines() if l.startswith("> ")]
want = [l[2:] for l in doc.splitlines() if l.startswith("< ")]
env = dict(os.environ)
env.pop("PARTIR_COLLECT_MIN_TERMS", None)  # the transcript's stats are the default's
run = subprocess.run([repl, "--json", "--allow", "examples"], cwd=top, text=True, env=env,
                     input="\n".join(sent) + "\n", capture_output=True, timeout=60)
got = run.stdout.splitlines()
tap(len(sent) > 5 and got == want, "docs/protocol.md's transcript is answered byte for byte",
    [(g, w) for g, w in zip(got, want) if g != w][:1])

# traces outlive their ancestors; a bad drop drops nothing
c = Client()
r = c.call("reset", path=mlp, mesh="model=2")["result"]["state"]
x1 = c.call("step", state=r, actions=["arg-tile %x 0 8 model"], reward=False)["result"]["state"]
x2 = c.call("step", state=x1, actions=["propagate"], reward=False)["result"]["state"]
err(c.call("drop", states=[x1, "two"]), -32602, "a drop with a bad id is refused")
tap("error" not in c.call("observe", state=x1, what=[]), "...and drops nothing")
c.call("drop", states=[r, x1])
tap(c.call("trace", state=x2)["result"]["actions"] == ["arg-tile %x 0 8 model", "propagate"],
    "a trace outlives the states it went through")
c.call("shutdown")
c.p.wait(timeout=30)

# reclaiming: a long random search that drops what it leaves behind
def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])

def sanitized(pid):
    with open("/proc/%d/maps" % pid) as f:
        maps = f.read()
    return "libasan" in maps or "vgpreload" in maps

transformer = examples + "/transformer_layer.pir"
c = Client()
root = c.call("reset", path=transformer, mesh="batch=2,model=2")["result"]["state"]
base = c.call("stats", collect=True)["result"]
rng = random.Random(5)
peak = 0

def search(episodes):
    global peak
    for _ in range(episodes):
        s = root
        for _ in range(6):
            legal = c.call("observe", state=s, what=["legal"])["result"]["legal"]
            if legal == 0:
                break
            kid = c.call("step", state=s, actions=[rng.randrange(legal)],
                         reward=False)["result"]["state"]
            if s != root:
                c.call("drop", states=[s])
            s = kid
            peak = max(peak, c.call("stats")["result"]["terms"])
        if s != root:
            c.call("drop", states=[s])

search(40)
after = c.call("stats", collect=True)["result"]
tap(after["states"] == 1 and after["terms"] == base["terms"] and peak > base["terms"],
    "after dropping all but the root the term store holds what it held at reset",
    (base, after, peak))
tap(after["collected"] > 0, "dropped states' terms were reclaimed", after)
if sanitized(c.p.pid):
    tap(True, "memory stays flat over a long search # SKIP under valgrind or ASan")
else:
    search(60)
    before = rss_kb(c.p.pid)
    search(180)
    now = rss_kb(c.p.pid)
    # without collection this grows by about 250 KB an episode
    tap(now <= before * 1.1 + 2048,
        "memory stays flat over a long search (%d KB after 100 episodes, %d KB after 280)"
        % (before, now))
# collections never change what a live state prints: random steps,
# expands and drops, each followed by a forced collection, then every
# live state must print and hash as it did when it was made
rng2 = random.Random(11)
c.call("drop", states=[root])
made = {}
def remember(sid):
    made[sid] = (c.call("observe", state=sid, what=["program"])["result"]["program"],
                 c.call("trace", state=sid)["result"]["actions"])
r2 = c.call("reset", path=transformer, mesh="batch=2,model=2")["result"]["state"]
remember(r2)
for _ in range(40):
    sid = rng2.choice(sorted(made))
    legal = c.call("observe", state=sid, what=["legal"])["result"]["legal"]
    op = rng2.randrange(3)
    if op == 0 and legal:
        remember(c.call("step", state=sid, actions=[rng2.randrange(legal)],
                        reward=False)["result"]["state"])
    elif op == 1 and legal:
        kids = c.call("expand", state=sid, reward=False)["result"]["children"]
        keep = [k["state"] for k in kids if "state" in k]
        for k in rng2.sample(keep, min(2, len(keep))):
            remember(k)
        c.call("drop", states=[k for k in keep if k not in made])
    elif len(made) > 1:
        gone = rng2.choice(sorted(made))
        c.call("drop", states=[gone])
        del made[gone]
    c.call("stats", collect=True)
same = all((c.call("observe", state=k, what=["program"])["result"]["program"],
            c.call("trace", state=k)["result"]["actions"]) == v for k, v in made.items())
tap(same and len(made) > 3,
    "after collections every live state prints and traces as it did (%d states)" % len(made))
c.call("shutdown")
c.p.wait(timeout=30)

print("1..%d" % n)
sys.exit(1 if failed else 0)
