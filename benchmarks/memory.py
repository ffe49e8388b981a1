"""
Resident memory of the main process and of each A3C worker over a long run on PongNoFrameskip-v4.

Samples RSS every ``--interval`` seconds while A3C trains for ``--minutes`` minutes, writes a CSV,
prints, per process, the RSS after warm-up and at the end (and their ratio), and checks that no
shared-memory segment is left in /dev/shm after ``learn()``.

    python benchmarks/memory.py --minutes 10 --workers 2
"""

import argparse
import csv
import json
import threading
import time
from pathlib import Path

import ale_py
import gymnasium as gym
import psutil
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_atari_env
from stable_baselines3.common.vec_env import VecFrameStack

from sb3_a3c import A3C

gym.register_envs(ale_py)


class StopAfter(BaseCallback):
    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.deadline = time.monotonic() + seconds

    def _on_step(self) -> bool:
        return time.monotonic() < self.deadline


def sample_memory(rows: list[dict], stop: threading.Event, interval: float, start: float) -> None:
    main = psutil.Process()
    while not stop.wait(interval):
        row = {"seconds": round(time.monotonic() - start, 1), "main_rss_mb": main.memory_info().rss / 2**20}
        for rank, child in enumerate(sorted(main.children(), key=lambda process: process.pid)):
            try:
                row[f"worker{rank}_rss_mb"] = child.memory_info().rss / 2**20
            except psutil.NoSuchProcess:
                pass
        rows.append(row)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--policy", default="CnnPolicy")
    parser.add_argument("--interval", type=float, default=15)
    parser.add_argument("--warmup-minutes", type=float, default=2)
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "memory.csv")
    args = parser.parse_args()

    shm_before = set(Path("/dev/shm").iterdir())
    env = VecFrameStack(make_atari_env("PongNoFrameskip-v4", n_envs=args.workers, seed=0), n_stack=4)
    model = A3C(args.policy, env, seed=0)
    rows: list[dict] = []
    stop = threading.Event()
    start = time.monotonic()
    sampler = threading.Thread(target=sample_memory, args=(rows, stop, args.interval, start), daemon=True)
    sampler.start()
    model.learn(10**9, callback=StopAfter(args.minutes * 60))
    stop.set()
    sampler.join()
    leftover_shm = sorted(str(path) for path in set(Path("/dev/shm").iterdir()) - shm_before)

    args.output.parent.mkdir(parents=True, exist_ok=True)
    columns = sorted({key for row in rows for key in row}, key=lambda key: (key != "seconds", key))
    with args.output.open("w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)

    after_warmup = next(row for row in rows if row["seconds"] >= args.warmup_minutes * 60)
    last = rows[-1]
    summary = {"steps": model.num_timesteps, "minutes": args.minutes, "leftover_dev_shm": leftover_shm, "processes": {}}
    print(f"{'process':<10} {'after warm-up MB':>17} {'at end MB':>10} {'end/warm-up':>12}")
    for column in columns[1:]:
        if column in after_warmup and column in last:
            ratio = last[column] / after_warmup[column]
            summary["processes"][column] = {"warmup_mb": after_warmup[column], "end_mb": last[column], "ratio": ratio}
            print(f"{column:<10} {after_warmup[column]:17.1f} {last[column]:10.1f} {ratio:12.3f}")
    print(f"steps: {model.num_timesteps}; files left in /dev/shm by learn(): {leftover_shm or 'none'}")
    args.output.with_suffix(".json").write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
