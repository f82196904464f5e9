"""partir_env: a Python client for partir's JSON agent protocol.

`partir-repl --json` reads one JSON-RPC 2.0 request per line on stdin and
writes one reply per line on stdout, in order (docs/protocol.md).  This
module wraps it, with the Python standard library only:

    PartirClient  starts the server and calls its methods:
                  client.call("reset", path="examples/mlp.pir", mesh="model=2")
                  or the shorthands client.reset(...), client.step(...), ...
                  An error reply raises PartirError(code, message, data).
    PartirEnv     a small Gymnasium-style environment over one program:
                  reset(seed=None, options=None) -> (observation, info)
                  step(action) -> (observation, reward, terminated,
                                   truncated, info)
                  An observation is {"features": [numbers], "cost": {...}};
                  the reward is the normalized improvement of the modelled
                  time per step: (parent time - child time) / root time.

The server binary is, in order: the `repl` argument, $PARTIR_REPL, or
../../repl/partir-repl relative to this file (the build tree).  The server
reads program files only from directories given with --allow: PartirEnv
allows its program's directory, PartirClient(allow=[...]) any you name.
"""

import json
import os
import subprocess

__all__ = ["PartirError", "PartirClient", "PartirEnv", "default_repl"]


def default_repl():
    """The partir-repl binary: $PARTIR_REPL, else the build tree's."""
    env = os.environ.get("PARTIR_REPL")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", "..", "repl", "partir-repl"))


class PartirError(Exception):
    """An error reply from the server (or the server going away)."""

    def __init__(self, code, message, data=None):
        super().__init__("%s (code %s)" % (message, code))
        self.code = code
        self.message = message
        self.data = data


class PartirClient:
    """One `partir-repl --json` process and its request/reply channel."""

    def __init__(self, repl=None, allow=(), args=(), env=None, initialize=True):
        """allow: directories the server may read programs from (--allow);
        args: more command-line arguments; env: its environment."""
        self.repl = repl or default_repl()
        argv = [self.repl, "--json"]
        for d in allow:
            argv += ["--allow", d]
        self.proc = subprocess.Popen(
            argv + list(args),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env=env, text=True, encoding="utf-8", bufsize=1)
        self.next_id = 1
        self.info = self.call("initialize") if initialize else None

    def call(self, method, **params):
        """Sends one request and returns its result; raises PartirError."""
        if self.proc is None:
            raise PartirError(-1, "the client is closed")
        rid = self.next_id
        self.next_id += 1
        req = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params:
            req["params"] = params
        try:
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # reported below, when the reply does not come
        line = self.proc.stdout.readline()
        if not line:
            status = self.proc.wait()
            raise PartirError(-1, "partir-repl exited (status %s) before "
                              "replying to %s" % (status, method))
        reply = json.loads(line)
        if reply.get("id") != rid:
            raise PartirError(-1, "reply id %r for request %d"
                              % (reply.get("id"), rid), reply)
        if "error" in reply:
            e = reply["error"]
            raise PartirError(e.get("code"), e.get("message", ""), e.get("data"))
        return reply.get("result")

    # Shorthands, one per method (keyword arguments are the params).
    def reset(self, **p): return self.call("reset", **p)
    def actions(self, **p): return self.call("actions", **p)
    def step(self, **p): return self.call("step", **p)
    def expand(self, **p): return self.call("expand", **p)
    def observe(self, **p): return self.call("observe", **p)
    def trace(self, **p): return self.call("trace", **p)
    def replay(self, **p): return self.call("replay", **p)
    def drop(self, **p): return self.call("drop", **p)

    def close(self):
        """Asks the server to shut down and waits for it."""
        if self.proc is None:
            return
        try:
            self.call("shutdown")
        except (PartirError, OSError, ValueError):
            pass
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.proc = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class PartirEnv:
    """A Gymnasium-style environment: partition one program step by step.

    program: a file name (sent as "path"; the client that the environment
    starts may read its directory); or text=... for program text.
    An action is an index into legal_actions() or an action string.
    An episode is terminated when no legal action is left and truncated
    after max_steps steps (the engine counts them: reset's max_steps).
    A listed action the engine refuses when it runs it (code 2: two
    splits in conflict, a limit) leaves the state as it was, with reward
    0 and info["refused"] saying why, and is not offered again there.  Each reset drops the last episode's states.
    """

    OBSERVE = ["features", "cost"]

    def __init__(self, program=None, text=None, mesh="model=2", hw="cpu2",
                 max_steps=16, client=None, repl=None):
        if (program is None) == (text is None):
            raise ValueError("give one of program (a file) or text")
        self.source = {"path": program} if program is not None else {"program": text}
        self.mesh, self.hw, self.max_steps = mesh, hw, max_steps
        self.own_client = client is None
        if client is None:
            allow = [os.path.dirname(os.path.abspath(program))] if program else []
            client = PartirClient(repl, allow=allow)
        self.client = client
        self.state = None
        self.steps = 0
        self.episode_states = []
        self._legal = None
        self._filtered = False  # refused actions left out of _legal

    def _obs(self, result):
        """The observation {"features", "cost"} of a reset or step result."""
        obs = result.get("observation") or {}
        if "features" not in obs or "cost" not in obs:
            obs = self.client.observe(state=result["state"], what=self.OBSERVE)
        return {"features": obs["features"], "cost": obs["cost"]}

    def reset(self, seed=None, options=None):
        opts = dict(options or {})
        if self.episode_states:
            self.client.drop(states=sorted(set(self.episode_states)))
            self.episode_states = []
        params = dict(self.source)
        for key in ("path", "program"):
            if key in opts:
                params = {key: opts.pop(key)}
        params["mesh"] = opts.pop("mesh", self.mesh)
        params["hw"] = opts.pop("hw", self.hw)
        params["max_steps"] = opts.pop("max_steps", self.max_steps)
        if seed is not None:
            params["seed"] = seed
        params.update(opts)
        r = self.client.reset(**params)
        self.state, self.steps, self._legal = r["state"], 0, None
        self._filtered = False
        self.episode_states.append(self.state)
        return self._obs(r), {"state": self.state, "hash": r.get("hash")}

    def legal_actions(self):
        """The action strings legal in the current state (cached)."""
        if self._legal is None:
            r = self.client.actions(state=self.state)
            self._legal = [a["action"] for a in r["actions"]]
        return self._legal

    def action_space_n(self):
        return len(self.legal_actions())

    def step(self, action):
        if self.state is None:
            raise RuntimeError("step before reset")
        sent = action  # an index goes as it is: the engine keeps the list
        if isinstance(action, int) and self._legal and 0 <= action < len(self._legal):
            action = self._legal[action]  # the string the index named
            if self._filtered:  # the engine's list still holds the refused
                sent = action
        try:
            r = self.client.step(state=self.state, actions=[sent],
                                 observe=self.OBSERVE, reward=True)
        except PartirError as e:
            listed = self._legal is not None and action in self._legal
            if e.code != 2 or not listed:
                raise  # not an action the engine offered: the caller's error
            # a listed action the engine refuses when it runs it (a
            # conflict between two splits, a propagation limit): the
            # state stays, the step counts, nothing is gained, and the
            # action is not offered again in this state
            self.steps += 1
            self._legal = [a for a in self._legal if a != action]
            self._filtered = True
            obs = self._obs({"state": self.state})
            truncated = self.max_steps > 0 and self.steps >= self.max_steps
            info = {"state": self.state, "action": action, "refused": e.message}
            return obs, 0.0, False, truncated, info
        self.state, self._legal, self._filtered = r["state"], None, False
        self.steps += 1
        self.episode_states.append(self.state)
        obs = self._obs(r)
        # no reward when a state cannot be lowered or costed: count it as 0
        reward = float(r["reward"]["normalized"]) if r.get("reward") else 0.0
        terminated = bool(r.get("terminated", False))
        truncated = bool(r.get("truncated", False))  # the engine counts max_steps
        info = {"state": self.state, "hash": r.get("hash"), "action": action,
                "delta": (r.get("reward") or {}).get("delta"),
                "no_effect": r.get("no_effect")}
        return obs, reward, terminated, truncated, info

    def close(self):
        if self.own_client:
            self.client.close()
        self.state = None


# ------------------------------------------------------ for the agents

def agent_arguments(description, steps):
    """The command line the example agents share."""
    import argparse
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--program", required=True, help="a .pir file")
    p.add_argument("--mesh", default="model=2", help="e.g. batch=2,model=2")
    p.add_argument("--hw", default="cpu2", help="cpu2, h100x8, tpuv4 or a .hw file")
    p.add_argument("--episodes", type=int, default=20)
    p.add_argument("--steps", type=int, default=steps, help="actions per episode at most")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--repl", default=None, help="partir-repl (default: $PARTIR_REPL)")
    p.add_argument("-o", "--output", default=None, help="also write the program here")
    return p


def print_result(client, state, output=None, out=None):
    """Prints a state's trace, program and cost, ending with a line
    'total_time SECONDS' that scripts can read; writes the program to the
    file output when given."""
    import sys
    out = out or sys.stdout
    # a step of several actions (as replay makes) reads "a; b"
    actions = [a for step in client.trace(state=state)["actions"]
               for a in step.split("; ")]
    obs = client.observe(state=state, what=["program", "cost"])
    cost = obs["cost"] or {}
    print("trace (%d actions):" % len(actions), file=out)
    for a in actions:
        print("  " + a, file=out)
    if output:
        with open(output, "w", encoding="utf-8") as f:
            f.write(obs["program"])
    print("program:", file=out)
    print(obs["program"].rstrip("\n"), file=out)
    print("cost:", file=out)
    for key in ("flops", "peak_bytes", "comm_bytes", "compute_time",
                "comm_time", "total_time", "fits"):
        if key in cost:
            print("  %-13s %s" % (key, cost[key]), file=out)
    if not cost:
        print("  (this state cannot be lowered or costed)", file=out)
    print("total_time %.9g" % cost.get("total_time", float("inf")), file=out)
