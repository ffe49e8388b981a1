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
time (all its threads) per 1000 env steps is counted over the whole ``learn()``, and over its steady state
(from 10% to 90% of the steps, sampled by a thread of the benchmark: the start-up and the end, which do
not grow with a run's length, left out).

    python benchmarks/ray_overhead.py --steps 30000 --rounds 2 --callback library
"""

import argparse
import os
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

import ray
from stable_baselines3.common.callbacks import BaseCallback, CallbackList

sys.path.insert(0, str(Path(__file__).parent))
from result_files import median_of_rounds, write_result
from throughput import make_shipped_a3c

from sb3_a3c import A3C

VARIANTS = {"one_machine_without_ray": (None, None), "ray_1_learner": ("auto", 1), "ray_2_learners": ("auto", 2)}


class RateAfterWarmup(BaseCallback):
    """Steps per second from the first on_step at or after ``warmup`` steps to the last one."""

    def __init__(self, warmup: int) -> None:
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


def main_thread_cpu_seconds() -> float:
    """CPU time of this process's main thread (the one that runs ``learn()`` and the callbacks)."""
    return time.clock_gettime(time.pthread_getcpuclockid(threading.main_thread().ident))


class SteadyStateCpu:
    """
    (CPU time of this process, of its main thread, ``model.num_timesteps``) every ``interval`` seconds, from a
    thread of its own.
    """

    def __init__(self, model: A3C, interval: float = 0.05) -> None:
        self.model = model
        self.interval = interval
        self.samples: list[tuple[float, float, int]] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._done.wait(self.interval):
            self.samples.append((time.process_time(), main_thread_cpu_seconds(), self.model.num_timesteps))

    def __enter__(self) -> "SteadyStateCpu":
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._done.set()
        self._thread.join()

    def seconds_per_1000_steps(self, total_steps: int) -> tuple[float, float]:
        """
        CPU seconds per 1000 steps of the process and of its main thread, from the first sample at 10% of
        ``total_steps`` to the first at 90%.
        """
        first = next(sample for sample in self.samples if sample[2] >= 0.1 * total_steps)
        last = next(sample for sample in self.samples if sample[2] >= 0.9 * total_steps)
        steps = last[2] - first[2]
        return 1000 * (last[0] - first[0]) / steps, 1000 * (last[1] - first[1]) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30_000)
    parser.add_argument("--warmup", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--callback", choices=["user", "library"], default="library")
    parser.add_argument(
        "--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS), help="Ray starts only for a Ray variant"
    )
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "ray_overhead.json")
    args = parser.parse_args()

    variants = {variant: VARIANTS[variant] for variant in args.variants}
    uses_ray = any(address for address, _ in variants.values())
    if uses_ray:  # its threads in this process cost CPU in every variant
        cpus = len(os.sched_getaffinity(0))
        ray.init(include_dashboard=False, log_to_driver=False, num_cpus=cpus, _node_ip_address="127.0.0.1")
    rates: dict[str, list[float]] = {variant: [] for variant in variants}
    syncs: dict[str, list[dict]] = {variant: [] for variant in variants if variants[variant][0]}
    main_cpu: dict[str, list[float]] = {variant: [] for variant in variants}
    main_cpu_steady: dict[str, list[float]] = {variant: [] for variant in variants}
    main_thread_steady: dict[str, list[float]] = {variant: [] for variant in variants}
    try:
        for round_index in range(args.rounds):
            for variant, (address, n_machines) in variants.items():
                model = make_shipped_a3c(ray_address=address, n_machines=n_machines, synchronous_updates=False)
                sync_interval = model.machine_sync_interval
                callback = RateAfterWarmup(args.warmup) if args.callback == "user" else CallbackList([])
                start, start_cpu = time.perf_counter(), time.process_time()
                with SteadyStateCpu(model) as steady_state:
                    model.learn(args.steps, callback=callback)
                seconds = time.perf_counter() - start
                steady_cpu_per_1000_steps, main_thread_per_1000_steps = steady_state.seconds_per_1000_steps(args.steps)
                main_cpu_steady[variant].append(steady_cpu_per_1000_steps)
                main_thread_steady[variant].append(main_thread_per_1000_steps)
                rate = callback.rate() if args.callback == "user" else model.num_timesteps / seconds
                # CPU time of the main process (all its threads; not the workers, not the learners)
                main_cpu_per_1000_steps = 1000 * (time.process_time() - start_cpu) / model.num_timesteps
                rates[variant].append(rate)
                main_cpu[variant].append(main_cpu_per_1000_steps)
                line = f"round {round_index + 1}: {variant:<24} {rate:8.1f} steps/s"
                line += f"  main process {main_cpu_per_1000_steps * 1000:.1f} ms CPU per 1000 steps"
                line += f" ({steady_cpu_per_1000_steps * 1000:.1f} ms in the steady state,"
                line += f" {main_thread_per_1000_steps * 1000:.1f} ms of them its main thread's)"
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
        if uses_ray:
            ray.shutdown()

    medians = median_of_rounds(rates)
    reference = next(iter(medians.values()))
    print(f"\n{'variant':<24} {'steps/s':>9} {'ratio':>6}   (median of {args.rounds} rounds)")
    for variant, median in medians.items():
        print(f"{variant:<24} {median:9.1f} {median / reference:6.3f}")
    result = {
        "command": (
            f"python benchmarks/ray_overhead.py --steps {args.steps} --warmup {args.warmup} --rounds {args.rounds}"
            f" --callback {args.callback} --variants {' '.join(args.variants)}"
        ),
        "ray_running_in_this_process": uses_ray,
        "callback": args.callback,
        "rounds": rates,
        "median_steps_per_second": medians,
        "syncs": syncs,
        "main_process_cpu_seconds_per_1000_steps": main_cpu,
        "main_process_cpu_seconds_per_1000_steps_steady_state": main_cpu_steady,
        "main_thread_cpu_seconds_per_1000_steps_steady_state": main_thread_steady,
        "machine_sync_interval": sync_interval,
    }
    write_result(args.output, result)


if __name__ == "__main__":
    main()
