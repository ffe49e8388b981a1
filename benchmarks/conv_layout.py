"""
A3C steps per second on PongNoFrameskip-v4 with the workers' convolution weights channels-last (shipped)
against PyTorch's default (contiguous) layout: the measurement behind ``A3CConfig.make_local_policy``.

Builds A3C from the shipped ``hyperparams/a3c.yml`` Pong entry (``--policy CnnPolicy`` swaps in the
Nature CNN, all else equal) and alternates the two layouts for ``--rounds`` rounds, one run at a time;
prints the median of each and writes JSON.

    python benchmarks/conv_layout.py --steps 20000 --rounds 3
    python benchmarks/conv_layout.py --policy CnnPolicy --output benchmarks/results/conv_layout_nature_cnn.json
"""

import json
import os
import platform
import shlex
import statistics
import sys
import time

import torch as th
from result_files import rounds_parser
from throughput import make_shipped_a3c

from sb3_a3c.a3c.config import A3CConfig

SHIPPED_MAKE_LOCAL_POLICY = A3CConfig.make_local_policy


def _contiguous_local_policy(self: A3CConfig):
    return SHIPPED_MAKE_LOCAL_POLICY(self).to(memory_format=th.contiguous_format)


LAYOUTS = {"contiguous": _contiguous_local_policy, "channels_last": SHIPPED_MAKE_LOCAL_POLICY}


def measure(layout: str, policy: str | None, steps: int) -> float:
    A3CConfig.make_local_policy = LAYOUTS[layout]  # type: ignore[method-assign]
    try:
        model = make_shipped_a3c(policy=policy)
        model.learn(500)  # fork and first allocations are not counted
        start = time.perf_counter()
        model.learn(steps)
        steps_per_second = steps / (time.perf_counter() - start)
        model.env.close()
    finally:
        A3CConfig.make_local_policy = SHIPPED_MAKE_LOCAL_POLICY  # type: ignore[method-assign]
    return steps_per_second


def main() -> None:
    parser = rounds_parser(__doc__, "conv_layout")
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--policy", default=None, help="instead of the shipped entry's policy (e.g. CnnPolicy)")
    args = parser.parse_args()
    rates: dict[str, list[float]] = {layout: [] for layout in LAYOUTS}
    for round_index in range(args.rounds):
        for layout in LAYOUTS:
            rates[layout].append(measure(layout, args.policy, args.steps))
            print(f"round {round_index + 1}: {layout:<14} {rates[layout][-1]:8.1f} steps/s", flush=True)
    medians = {layout: statistics.median(values) for layout, values in rates.items()}
    ratio = medians["channels_last"] / medians["contiguous"]
    print(f"median: channels_last {medians['channels_last']:.1f}, contiguous {medians['contiguous']:.1f} (x{ratio:.2f})")
    machine = {"cpus": len(os.sched_getaffinity(0)), "platform": platform.platform(), "torch": th.__version__}
    result = {"command": shlex.join(["python", *sys.argv]), "machine": machine, "rounds": rates, "medians": medians}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
