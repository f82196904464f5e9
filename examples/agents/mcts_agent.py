#!/usr/bin/env python3
"""mcts_agent: Monte-Carlo tree search over the protocol's actions.

UCT as partir's built-in search does it (docs/search.md), but from
outside, over the JSON protocol and its actions one argument at a time:
each action is a legal 'arg-tile' of the state followed by 'propagate'
(with --all-actions, any legal action, rule applications included).
Selection takes the child with the best reward seen below it (the
speed-up over the program as given, normalized by the best so far) plus
an exploration term; expansion steps one untried action, in a seeded
random order; a rollout takes --rollout random actions; the best reward
met is backed up.  A state whose peak memory does not fit scores its time
times 10 times how many times over the memory it is (as the built-in
search), one whose results are split over an axis other than 'batch'
is not a candidate, and the first argument (the data) is split only
over 'batch'.

--budget counts the steps taken.  With --compare, the built-in search
(the protocol's 'search' method, same budget, a minute at most) runs on
the same program, and both results are printed; the last lines are
'total_time SECONDS' (this agent's best) and, with --compare,
'builtin_total_time SECONDS'.

    mcts_agent.py --program examples/mlp.pir --mesh model=2 --hw h100x8 \\
        --budget 60 --compare
"""

import math
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from partir_env import (PartirClient, PartirError,  # noqa: E402
                        agent_arguments, print_result)

EXPLORATION = 0.7
MEMORY_PENALTY = 10.0


class Node:
    def __init__(self, state, score, candidate, depth):
        self.state = state
        self.score = score          # seconds (penalized); inf: no cost
        self.candidate = candidate  # may be the answer
        self.depth = depth
        self.untried = None         # action indices not yet stepped
        self.children = []          # Node
        self.visits = 0
        self.best_reward = 0.0


class Search:
    def __init__(self, client, args, root_id):
        self.client = client
        self.args = args
        self.rng = random.Random(args.seed)
        self.steps = 0
        self.by_hash = {}           # the protocol's hash -> Node
        obs = client.observe(state=root_id, what=["cost", "program"])
        cost = obs["cost"]
        # the first argument: "func @f(%x: ..."
        self.data = obs["program"].split("(%", 1)[1].split(":", 1)[0]
        self.root = Node(root_id, self.score(cost), True, 0)
        self.best = self.root

    def score(self, cost):
        if not cost:
            return math.inf
        if cost["fits"]:
            return cost["total_time"]
        # the device's memory is not observed: the penalty grows with the
        # peak as the built-in one does with peak / memory
        return cost["total_time"] * MEMORY_PENALTY * max(cost["peak_bytes"], 1) / 80e9

    def reward(self, node):
        if not node.candidate or not math.isfinite(node.score) or node.score <= 0:
            return 0.0
        return self.root.score / node.score

    def actions(self, node):
        if node.untried is None:
            listed = self.client.actions(state=node.state)["actions"]
            node.untried = [a["index"] for a in listed if self.allowed(a)]
            self.rng.shuffle(node.untried)
        return node.untried

    def allowed(self, a):
        if a["rule"] == "arg-tile" and a["location"] == self.data:
            return a["args"]["axis"] == "batch"
        return self.args.all_actions or a["rule"] == "arg-tile"

    def take(self, node, index):
        """Steps 'index' (then propagate) from 'node': the child, or None."""
        todo = [index] if self.args.all_actions else [index, "propagate"]
        self.steps += 1
        try:
            r = self.client.step(state=node.state, actions=todo,
                                 observe=["cost", "program"])
        except PartirError:
            return None  # a conflict, or an axis bound twice
        if r["no_effect"]:
            self.client.drop(states=[r["state"]])
            return None
        known = self.by_hash.get(r["hash"])
        if known is not None:
            self.client.drop(states=[r["state"]])
            return known if known.depth > node.depth else None
        obs = r["observation"]
        child = Node(r["state"], self.score(obs["cost"]),
                     candidate(obs["program"]), node.depth + 1)
        self.by_hash[r["hash"]] = child
        if child.candidate and child.score < self.best.score:
            self.best = child
        return child

    def select(self, node):
        norm = max(self.reward(self.best), 1e-300)
        return max(node.children, key=lambda c: c.best_reward / norm +
                   EXPLORATION * math.sqrt(math.log(node.visits + 1) / (c.visits + 1)),
                   default=None)

    def rollout(self, node):
        r = self.reward(node)
        for _ in range(self.args.rollout):
            if self.steps >= self.args.budget:
                break
            acts = self.actions(node)
            if not acts:
                break
            c = self.take(node, self.rng.choice(acts))
            if c is None:
                continue
            r = max(r, self.reward(c))
            node = c
        return r

    def run(self):
        idle = 0
        while self.steps < self.args.budget and idle < 100:
            before = self.steps
            path, node, leaf = [self.root], self.root, None
            while leaf is None and self.steps < self.args.budget:
                acts = self.actions(node)
                while acts and leaf is None and self.steps < self.args.budget:
                    leaf = self.take(node, acts.pop())
                    if leaf is not None and leaf not in node.children:
                        node.children.append(leaf)
                if leaf is not None:
                    break
                nxt = self.select(node)
                if nxt is None:
                    break
                node = nxt
                path.append(node)
            r = self.rollout(leaf) if leaf is not None else self.reward(node)
            if leaf is not None:
                path.append(leaf)
            for p in path:
                p.visits += 1
                p.best_reward = max(p.best_reward, r)
            idle = idle + 1 if self.steps == before else 0


def candidate(program):
    """Whether a printed program returns its results whole along every
    axis but 'batch': a result that is a tile over another axis is a
    partial answer.  Read from the text: the returned names, and the
    axis of the partir.tile that defines each."""
    lines = program.splitlines()
    returned = set()
    for line in lines:
        s = line.strip()
        if s.startswith("return "):
            returned |= {w.strip().rstrip(",") for w in s[7:].split(",")}
    for line in lines:
        s = line.strip()
        name = s.split(" = ")[0] if " = " in s else None
        if name in returned and "partir.tile" in s and '@"' in s:
            axis = s.split('@"')[1].split('"')[0]
            if axis != "batch":
                return False
    return True


def main():
    p = agent_arguments(__doc__.splitlines()[0], steps=0)
    p.add_argument("--budget", type=int, default=60, help="steps at most")
    p.add_argument("--rollout", type=int, default=2, help="random actions after an expansion")
    p.add_argument("--all-actions", action="store_true",
                   help="every legal action, not only arg-tile then propagate")
    p.add_argument("--compare", action="store_true",
                   help="also run the built-in search and print both")
    args = p.parse_args()
    program = os.path.abspath(args.program)
    with PartirClient(args.repl, allow=[os.path.dirname(program)]) as client:
        root = client.reset(path=program, mesh=args.mesh, hw=args.hw,
                            seed=args.seed)
        search = Search(client, args, root["state"])
        search.run()
        print("mcts agent: %d steps, %d states" % (search.steps, len(search.by_hash)))
        builtin = None
        if args.compare:
            builtin = client.call("search", state=root["state"], time=60,
                                  budget=args.budget, seed=args.seed,
                                  observe=["cost"])
        print_result(client, search.best.state, output=args.output)
        if builtin is not None:
            b = builtin["search"]
            print("builtin search: %d states costed, actions:" % b["explored"])
            for a in b["actions"]:
                print("  " + a)
            print("builtin_total_time %.9g" % builtin["observation"]["cost"]["total_time"])


if __name__ == "__main__":
    main()
