"""
Where an A3C worker's time goes, on Pong with the shipped Zoo entry: py-spy samples every process
(``--subprocesses``) while A3C trains, and each sample of a worker is put in one category
(env step, frame preprocessing, policy forward while acting, loss forward, backward, optimizer step,
parameter sync, report to the main process, rollout buffer and GAE, LSTM sequences, other).

    python benchmarks/profile_worker.py --steps 40000
    python benchmarks/profile_worker.py --raw RAW.txt    (summarize a py-spy raw file already recorded)

Needs py-spy (``pip install py-spy``). Writes the category shares to ``benchmarks/results/a3c_worker_profile.json``
(``--output``); py-spy's raw samples to the git-ignored ``benchmarks/runs/profile_worker/raw.txt``.
"""

import argparse
import collections
import json
import shutil
import subprocess
import sys
from pathlib import Path

# (category, function names that put a stack in it), checked in this order: the first match wins,
# so a category listed earlier takes the samples it shares with later ones (e.g. env step before
# the forward pass of collect_rollouts).
CATEGORIES = [
    ("report to main process (IPC)", ("send_report", "_send_bytes", "send")),
    ("parameter sync (load_state_dict)", ("load_state_dict",)),
    ("optimizer step (shared optimizer, lock)", ("rmsprop", "adam", "adamw")),
    ("backward", ("backward", "_engine_run_backward")),
    ("loss forward (evaluate_actions, LSTM re-run)", ("evaluate_actions",)),
    ("sequences of the LSTM buffer (padding, sampling)", ("_get_samples", "create_sequencers", "get")),
    ("frame preprocessing (crop, resize, normalisation)", ("observation",)),
    ("env step (ALE, frame skip, Atari wrappers)", ("step_wait",)),
    ("buffer, returns and GAE", ("compute_returns_and_advantage", "add")),
    ("policy forward while acting", ("forward", "_predict", "predict_values")),
    ("rollout bookkeeping (collect_rollouts)", ("collect_rollouts",)),
]


def categorize(stack: str) -> str:
    # Frames read "Class.method (file.py:line)": match on the method name
    functions = {frame.split(" (")[0].strip().rsplit(".", 1)[-1] for frame in stack.split(";")}
    for category, names in CATEGORIES:
        if functions.intersection(names):
            return category
    return "other"


def record(steps: int, rate: int) -> Path:
    raw = Path(__file__).parent / "runs" / "profile_worker" / "raw.txt"
    raw.parent.mkdir(parents=True, exist_ok=True)
    # py-spy installed in the venv is found without activating it
    py_spy = shutil.which("py-spy") or shutil.which("py-spy", path=str(Path(sys.executable).parent))
    if py_spy is None:
        sys.exit("py-spy not found: pip install py-spy")
    command = [
        py_spy, "record", "--subprocesses", "--format", "raw", "--rate", str(rate), "-o", str(raw), "--",
        sys.executable, __file__, "--train", "--steps", str(steps),
    ]  # fmt: skip
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    print(f"wrote {raw}")
    return raw


def summarize(raw: Path, steps: int, rate: int) -> dict:
    samples_by_category: collections.Counter = collections.Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if "run_actor_learner" not in stack:
            continue  # the main process, or a worker before its loop
        samples_by_category[categorize(stack)] += int(count)
    total = sum(samples_by_category.values())
    return {
        "command": f"python benchmarks/profile_worker.py --steps {steps} --rate {rate}",
        "worker_samples": total,
        "share": {category: round(count / total, 3) for category, count in samples_by_category.most_common()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=60_000)
    parser.add_argument("--rate", type=int, default=100, help="py-spy samples per second")
    parser.add_argument("--raw", type=Path, help="summarize this py-spy raw file instead of recording one")
    parser.add_argument("--train", action="store_true", help="(internal) the training run that py-spy samples")
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "a3c_worker_profile.json")
    args = parser.parse_args()
    if args.train:
        sys.path.insert(0, str(Path(__file__).parent))
        from throughput import make_shipped_a3c

        make_shipped_a3c().learn(args.steps)
        return
    result = summarize(args.raw or record(args.steps, args.rate), args.steps, args.rate)
    for category, share in result["share"].items():
        print(f"{share:6.1%}  {category}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
