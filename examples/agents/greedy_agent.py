#!/usr/bin/env python3
"""greedy_agent: steepest descent on the modelled time per step.

From the root, repeatedly expands the current state (every legal action
applied, each child with its reward) and moves to the child with the
largest cost decrease, ties broken by action order; stops when no child
improves or after --steps moves.  Prints each move, then the trace, the
program, its cost and a last line 'total_time SECONDS'.

    greedy_agent.py --program examples/mlp.pir --mesh model=2 --hw cpu2 \\
        --steps 16
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from partir_env import PartirClient, agent_arguments, print_result  # noqa: E402


def best_child(children):
    """The child with the largest positive reward delta (first of equals)."""
    best = None
    for c in children:
        if "error" in c or not c.get("reward"):
            continue  # the action failed, or the child cannot be costed
        if c["reward"]["delta"] > 0 and (best is None or
                                          c["reward"]["delta"] > best["reward"]["delta"]):
            best = c
    return best


def main():
    args = agent_arguments(__doc__.splitlines()[0], steps=16).parse_args()
    program = os.path.abspath(args.program)
    with PartirClient(args.repl, allow=[os.path.dirname(program)]) as client:
        root = client.reset(path=program, mesh=args.mesh,
                            hw=args.hw, seed=args.seed)
        state = root["state"]
        path = {state}
        cost = client.observe(state=state, what=["cost"])["cost"]
        print("root: total_time %.9g" % cost["total_time"])
        for move in range(1, args.steps + 1):
            children = client.expand(state=state, observe=["cost"],
                                     reward=True)["children"]
            child = best_child(children)
            if child is None:
                print("no child of %d improves: stop" % len(children))
                break
            print("move %d: %s (delta %.3g s, normalized %.3g, %d children)"
                  % (move, child["action"], child["reward"]["delta"],
                     child["reward"]["normalized"], len(children)))
            state = child["state"]
            path.add(state)
            # the server may forget the other children (not our path)
            client.drop(states=sorted({c["state"] for c in children
                                       if "state" in c} - path))
        print_result(client, state, output=args.output)


if __name__ == "__main__":
    main()
