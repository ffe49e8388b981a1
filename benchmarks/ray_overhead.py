"""
What the Ray backend costs: steps/s of A3C with the shipped Pong entry (``hyperparams/a3c.yml``) on this
machine without Ray, on Ray with one learner, and on Ray with two learners on this same machine (same
cores: it shows the overhead, not a speed-up), in alternating rounds; plus the exchanges' bytes, latency
and rate, for the scaling estimate of docs/benchmarks.md. Every variant updates asynchronously
(``synchronous_updates=False``, the only mode of the Ray backend), the entry's other settings unchanged.

``--callback user`` attaches a callback of the user's own (it counts steps/s from ``--warmup`` steps on, leaving
out the learners' start-up): the workers then send every step's locals, observations included.
``--callback library`` attaches SB3's own callbacks only (an empty ``CallbackList``), as the Zoo's callbacks are:
the workers then send finished episodes only, and steps/s are counted over the whole ``learn()``. The main process's CPU
time per 1000 env steps is counted over the whole ``learn()`` in both.

    python benchmarks/ray_overhead.py --steps 30000 --rounds 2 --callback library
"""

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

import ray
from stable_baselines3.common.callbacks import BaseCallback, CallbackList

sys.path.insert(0, str(Path(__file__).parent))
from result_files import median_of_rounds, write_result
from throughput import make_shipped_a3c

VARIANTS = {"one_machine_without_ray": (None, None), "ray_1_learner": ("auto", 1), "ray_2_learners": ("auto", 2)}


class RateAfterWarmup(BaseCallback):
    """Steps per second from the first on_step at or after ``warmup`` steps to the last one."""

    def __init__(self, warmup: int):
        super().__init__()
        self.warmup = warmup
        self.start: tuple[float, int] | None = None
        self.end: tuple[float, int] | None = None

    def _on_step(self) -> bool:
        if self.start is None and self.num_timesteps >= self.warmup:
            self.start = (time.perf_counter(), self.num_timesteps)
        self.end = (time.perf_counter(), self.num_timesteps)
        return True

    def rate(self) -> float:
        return (self.end[1] - self.start[1]) / (self.end[0] - self.start[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30_000)
    parser.add_argument("--warmup", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--callback", choices=["user", "library"], default="library")
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "ray_overhead.json")
    args = parser.parse_args()

    cpus = len(os.sched_getaffinity(0))
    ray.init(include_dashboard=False, log_to_driver=False, num_cpus=cpus, _node_ip_address="127.0.0.1")
    rates: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    syncs: dict[str, list[dict]] = {variant: [] for variant in VARIANTS if VARIANTS[variant][0]}
    main_cpu: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    try:
        for round_index in range(args.rounds):
            for variant, (address, n_machines) in VARIANTS.items():
                model = make_shipped_a3c(ray_address=address, n_machines=n_machines, synchronous_updates=False)
                sync_interval = model.machine_sync_interval
                callback = RateAfterWarmup(args.warmup) if args.callback == "user" else CallbackList([])
                start, start_cpu = time.perf_counter(), time.process_time()
                model.learn(args.steps, callback=callback)
                seconds = time.perf_counter() - start
                rate = callback.rate() if args.callback == "user" else model.num_timesteps / seconds
                # CPU time of the main process (all its threads; not the workers, not the learners)
                main_cpu_per_1000_steps = 1000 * (time.process_time() - start_cpu) / model.num_timesteps
                rates[variant].append(rate)
                main_cpu[variant].append(main_cpu_per_1000_steps)
                line = f"round {round_index + 1}: {variant:<24} {rate:8.1f} steps/s"
                line += f"  main process {main_cpu_per_1000_steps * 1000:.0f} ms CPU per 1000 steps"
                if address:
                    statistics_ = dict(model.backend_statistics)
                    statistics_["syncs_per_second"] = statistics_["syncs"] / seconds
                    syncs[variant].append(statistics_)
                    line += (
                        f"  {statistics_['syncs_per_second']:.1f} syncs/s, {statistics_['bytes_per_sync'] / 1e6:.2f} MB/sync,"
                        f" {statistics_['median_latency_s'] * 1000:.0f} ms median latency,"
                        f" {statistics_['median_main_process_parameter_s'] * 1000:.1f} ms main-process time per sync"
                    )
                print(line, flush=True)
    finally:
        ray.shutdown()

    medians = median_of_rounds(rates)
    reference = medians["one_machine_without_ray"]
    print(f"\n{'variant':<24} {'steps/s':>9} {'ratio':>6}   (median of {args.rounds} rounds)")
    for variant, median in medians.items():
        print(f"{variant:<24} {median:9.1f} {median / reference:6.3f}")
    result = {
        "command": (
            f"python benchmarks/ray_overhead.py --steps {args.steps} --warmup {args.warmup} --rounds {args.rounds}"
            f" --callback {args.callback}"
        ),
        "callback": args.callback,
        "rounds": rates,
        "median_steps_per_second": medians,
        "syncs": syncs,
        "main_process_cpu_seconds_per_1000_steps": main_cpu,
        "machine_sync_interval": sync_interval,
    }
    write_result(args.output, result)


if __name__ == "__main__":
    main()
