"""
Check what the shipped hyperparameters reach: run the exact RL Zoo command for each (algo, env) with
periodic evaluation, then report the best and the last evaluation mean and when they were reached.

    python benchmarks/zoo_check.py --algos a3c sync_a2c --envs CartPole-v1 Acrobot-v1 --eval-freq 10000

Each run is ``python -m rl_zoo3.train --algo ALGO --env ENV -f LOGDIR --eval-freq F --eval-episodes 10
--seed SEED`` (eval_freq counts env steps, as the Zoo divides it by n_envs). Results go to JSON.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def check(algo: str, env_id: str, eval_freq: int, seed: int, log_folder: Path) -> dict:
    command = [
        sys.executable, "-m", "rl_zoo3.train", "--algo", algo, "--env", env_id, "-f", str(log_folder),
        "--eval-freq", str(eval_freq), "--eval-episodes", "10", "--seed", str(seed),
    ]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    evaluations = np.load(next((log_folder / algo).glob(f"{env_id}_*/evaluations.npz")))
    means = evaluations["results"].mean(axis=1)
    best = int(np.argmax(means))
    return {
        "algo": algo,
        "env": env_id,
        "seed": seed,
        "command": " ".join(command[1:]),
        "wall_clock_s": round(seconds, 1),
        "best_eval_mean": float(means[best]),
        "best_at_step": int(evaluations["timesteps"][best]),
        "last_eval_mean": float(means[-1]),
        "last_step": int(evaluations["timesteps"][-1]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algos", nargs="+", default=["a3c", "sync_a2c"])
    parser.add_argument("--envs", nargs="+", default=["CartPole-v1", "Acrobot-v1", "Pendulum-v1"])
    parser.add_argument("--eval-freq", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "zoo_check.json")
    args = parser.parse_args()

    results = []
    for algo in args.algos:
        for env_id in args.envs:
            with tempfile.TemporaryDirectory() as log_folder:
                result = check(algo, env_id, args.eval_freq, args.seed, Path(log_folder))
            results.append(result)
            print(json.dumps(result), flush=True)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    previous = json.loads(args.output.read_text()) if args.output.exists() else []
    kept = [row for row in previous if (row["algo"], row["env"]) not in {(r["algo"], r["env"]) for r in results}]
    args.output.write_text(json.dumps(kept + results, indent=2) + "\n")


if __name__ == "__main__":
    main()
