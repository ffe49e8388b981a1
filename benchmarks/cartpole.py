"""
The README's main job, measured: train A3C on CartPole-v1, then evaluate the final model.

    python benchmarks/cartpole.py --policy MlpLstmPolicy --steps 200000

Prints and writes (JSON) the step count, wall-clock seconds and the final mean reward over 10
deterministic evaluation episodes.
"""

import argparse
import json
import os
import time
from pathlib import Path

from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

from sb3_a3c import A3C


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--policy", default="MlpLstmPolicy")
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()

    start = time.perf_counter()
    model = A3C(args.policy, "CartPole-v1", seed=args.seed)  # one worker per CPU core
    model.learn(args.steps)
    train_seconds = time.perf_counter() - start
    mean_reward, std_reward = evaluate_policy(model, make_vec_env("CartPole-v1", n_envs=1, seed=12345), n_eval_episodes=10)
    result = {
        "policy": args.policy,
        "workers": model.n_envs,
        "cpus": len(os.sched_getaffinity(0)),
        "steps": model.num_timesteps,
        "train_seconds": round(train_seconds, 1),
        "eval_mean_reward": float(mean_reward),
        "eval_std_reward": float(std_reward),
    }
    print(json.dumps(result))
    output = args.output or Path(__file__).parent / "results" / f"cartpole_{args.policy}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
