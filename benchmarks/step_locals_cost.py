"""
What giving callbacks SB3's per-step locals costs A3C, in steps/s on Pong with the shipped ``a3c.yml`` entry.

Steps/s are the workers' between 10% and 90% of each ``learn()`` (start-up and the end left out).

A3C's workers send every step's ``actions``, ``values``, ``log_probs``, ``rewards``, ``dones`` and ``infos``
to the main process, and ``new_obs`` too when a callback of the user's own is attached. Variants, run one
after another in alternating rounds, each in a fresh process:

  library_callbacks   learn() with SB3's CheckpointCallback only (what the Zoo attaches, bar evaluations):
                      no observations travel
  users_callback      learn() with a callback of the user's own (reads nothing): observations travel too
  baseline            library_callbacks with the package found at ``--baseline-tree`` (e.g. a checkout of
                      a release without per-step locals), only when that option is given

    python benchmarks/step_locals_cost.py --steps 20000 --rounds 3
    python benchmarks/step_locals_cost.py --steps 20000 --rounds 3 --baseline-tree /path/to/older/checkout
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from result_files import median_of_rounds, rounds_parser, write_result


def run_variant(variant: str, steps: int) -> float:
    """In this process: the steps/s of ``learn(steps)`` for ``variant``."""
    from stable_baselines3.common.callbacks import BaseCallback, CheckpointCallback

    sys.path.insert(0, str(Path(__file__).parent))
    from throughput import make_shipped_a3c

    class UsersCallback(BaseCallback):
        def _on_step(self) -> bool:
            return True

    model = make_shipped_a3c()
    model.learn(500)  # fork and first allocations are not counted
    with tempfile.TemporaryDirectory() as folder:
        callback = CheckpointCallback(save_freq=10**9, save_path=folder)
        if variant == "users_callback":
            callback = [callback, UsersCallback()]
        return steady_rate(model, steps, callback)


def steady_rate(model, steps: int, callback) -> float:
    """
    Steps/s of ``model.learn(steps)`` between 10% and 90% of the budget, from the workers' shared step
    counter sampled every 50 ms: the start (fork) and the end (the last worker finishing alone, the envs
    travelling back) are left out, as they do not grow with a run's length.
    """
    samples: list[tuple[float, int]] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            backend = getattr(model, "_backend", None)
            if backend is not None:
                samples.append((time.perf_counter(), backend.job.global_step_counter.value))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    model.learn(steps, callback=callback)
    done.set()
    sampler.join()
    first = next(sample for sample in samples if sample[1] >= 0.1 * steps)
    last = next(sample for sample in samples if sample[1] >= 0.9 * steps)
    return (last[1] - first[1]) / (last[0] - first[0])


def main() -> None:
    parser = rounds_parser(__doc__, "step_locals_cost")
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--baseline-tree", type=Path, help="a checkout whose sb3_a3c package is the baseline")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_variant(args.child, args.steps)))
        return

    variants = ["library_callbacks", "users_callback"] + (["baseline"] if args.baseline_tree else [])
    rates: dict[str, list[float]] = {variant: [] for variant in variants}
    for round_index in range(args.rounds):
        for variant in variants:
            environment = dict(os.environ)
            if variant == "baseline":
                environment["PYTHONPATH"] = str(args.baseline_tree.resolve())
            child = "library_callbacks" if variant == "baseline" else variant
            output = subprocess.run(
                [sys.executable, __file__, "--child", child, "--steps", str(args.steps)],
                env=environment,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            rates[variant].append(float(output.strip().splitlines()[-1]))
            print(f"round {round_index + 1}: {variant:<18} {rates[variant][-1]:8.1f} steps/s", flush=True)

    medians = median_of_rounds(rates)
    reference = medians.get("baseline", medians["library_callbacks"])
    print(f"\n{'variant':<18} {'steps/s':>9} {'ratio':>6}   (median of {args.rounds} rounds)")
    for variant, median in medians.items():
        print(f"{variant:<18} {median:9.1f} {median / reference:6.3f}")
    result = {
        "command": "python benchmarks/step_locals_cost.py "
        + f"--steps {args.steps} --rounds {args.rounds}"
        + (" --baseline-tree TREE" if args.baseline_tree else ""),
        "rounds": rates,
        "median_steps_per_second": medians,
    }
    write_result(args.output, result)


if __name__ == "__main__":
    main()
