#!/usr/bin/env python3
"""random_agent: random legal actions, the best strategy seen wins.

Plays --episodes episodes of at most --steps uniformly random legal
actions (seeded by --seed) through PartirEnv, keeps the state with the
lowest modelled time per step (the root counts too), then replays its
trace and prints the trace, the program, its cost and a last line
'total_time SECONDS'.

    random_agent.py --program examples/mlp.pir --mesh model=2 --hw cpu2 \\
        --episodes 20 --steps 8 --seed 1
"""

import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from partir_env import PartirEnv, agent_arguments, print_result  # noqa: E402


def total_time(obs):
    """The modelled time per step; infinite when it cannot be costed."""
    return obs["cost"]["total_time"] if obs["cost"] else float("inf")


def main():
    args = agent_arguments(__doc__.splitlines()[0], steps=8).parse_args()
    rng = random.Random(args.seed)
    env = PartirEnv(os.path.abspath(args.program), mesh=args.mesh, hw=args.hw,
                    max_steps=args.steps, repl=args.repl)
    client = env.client
    try:
        obs, info = env.reset(seed=args.seed)
        best_time, best_trace = total_time(obs), []
        print("root: total_time %.9g" % best_time)
        for episode in range(1, args.episodes + 1):
            obs, info = env.reset(seed=args.seed + episode)
            ep_best = total_time(obs)
            terminated = truncated = False
            while not (terminated or truncated) and env.action_space_n() > 0:
                a = rng.randrange(env.action_space_n())
                obs, reward, terminated, truncated, info = env.step(a)
                t = total_time(obs)
                ep_best = min(ep_best, t)
                if t < best_time:
                    best_time = t
                    best_trace = client.trace(state=info["state"])["actions"]
            print("episode %d: %d steps, best total_time %.9g"
                  % (episode, env.steps, ep_best))
        # the best state was dropped with its episode: replay its trace
        source = env.source
        if best_trace:
            best = client.replay(**source, mesh=args.mesh, hw=args.hw,
                                 trace=best_trace)["state"]
        else:
            best = client.reset(**source, mesh=args.mesh, hw=args.hw)["state"]
        print("best of %d episodes:" % args.episodes)
        print_result(client, best, output=args.output)
    finally:
        env.close()


if __name__ == "__main__":
    main()
