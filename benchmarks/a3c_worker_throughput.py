"""
Environment steps per second of A3C on PongNoFrameskip-v4 with a given number of workers.

Runs the configurations one after another (never two at once) and writes a JSON file.

    python benchmarks/a3c_worker_throughput.py --workers 2 4 --policies CnnLstmPolicy CnnPolicy --steps 20000
"""

import argparse
import json
import platform
import time
from pathlib import Path

import ale_py
import gymnasium as gym
from stable_baselines3.common.env_util import make_atari_env
from stable_baselines3.common.vec_env import VecFrameStack

from sb3_a3c import A3C

gym.register_envs(ale_py)


def measure(policy: str, n_workers: int, n_steps_total: int, warmup_steps: int) -> dict:
    env = VecFrameStack(make_atari_env("PongNoFrameskip-v4", n_envs=n_workers, seed=0), n_stack=4)
    model = A3C(policy, env, seed=0)
    model.learn(warmup_steps)  # process start-up and first allocations are not counted
    start = time.perf_counter()
    model.learn(n_steps_total, reset_num_timesteps=True)
    elapsed = time.perf_counter() - start
    env.close()
    return {
        "policy": policy,
        "workers": n_workers,
        "steps": model.num_timesteps,
        "seconds": round(elapsed, 2),
        "steps_per_second": round(model.num_timesteps / elapsed, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--policies", nargs="+", default=["CnnLstmPolicy", "CnnPolicy"])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--warmup-steps", type=int, default=1_000)
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "a3c_worker_throughput.json")
    args = parser.parse_args()

    results = []
    print(f"{'policy':<15} {'workers':>7} {'steps':>8} {'seconds':>8} {'steps/s':>8}")
    for policy in args.policies:
        for n_workers in args.workers:
            row = measure(policy, n_workers, args.steps, args.warmup_steps)
            results.append(row)
            print(
                f"{policy:<15} {n_workers:>7} {row['steps']:>8} {row['seconds']:>8} {row['steps_per_second']:>8}", flush=True
            )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    machine = {"cpus": len(__import__("os").sched_getaffinity(0)), "platform": platform.platform()}
    args.output.write_text(json.dumps({"machine": machine, "results": results}, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
