"""
Steps/s of the bare RL Zoo command with the Zoo's own evaluations (every 25k steps, 5 episodes, in the main
process) and without them (``--eval-freq -1``), one after the other on the same machine.

    python benchmarks/eval_overhead.py --algo a3c --env PongNoFrameskip-v4 --minutes 8

Each run is ``python -m rl_zoo3.train --algo ALGO --env ENV -f LOGDIR --seed 0 [--eval-freq -1]``, stopped
with Ctrl-C after ``--minutes``; its steps/s is the last ``time/total_timesteps`` over ``time/time_elapsed``
that SB3's logger printed. Writes JSON.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def steps_per_second(algo: str, env_id: str, minutes: float, evaluate: bool) -> dict:
    log_folder = tempfile.mkdtemp(prefix=f"{env_id}_{algo}_")
    command = [sys.executable, "-m", "rl_zoo3.train", "--algo", algo, "--env", env_id, "-f", log_folder, "--seed", "0"]
    if not evaluate:
        command += ["--eval-freq", "-1"]
    output_path = Path(log_folder) / "stdout.txt"
    with output_path.open("w") as output:
        # SIGINT back to its default, for a shell that starts this script in the background
        process = subprocess.Popen(
            command,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        deadline = time.monotonic() + minutes * 60
        while time.monotonic() < deadline and process.poll() is None:
            time.sleep(1)
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=120)
    text = output_path.read_text()
    steps = [int(value) for value in re.findall(r"\|\s+total_timesteps\s+\|\s+(\d+)", text)]
    seconds = [int(value) for value in re.findall(r"\|\s+time_elapsed\s+\|\s+(\d+)", text)]
    evaluations = len(re.findall(r"Eval num_timesteps=", text))
    return {
        "command": " ".join(command[1:]),
        "evaluations": evaluations,
        "total_timesteps": steps[-1],
        "time_elapsed_s": seconds[-1],
        "steps_per_second": round(steps[-1] / seconds[-1], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algo", default="a3c")
    parser.add_argument("--env", default="PongNoFrameskip-v4")
    parser.add_argument("--minutes", type=float, default=8)
    parser.add_argument("--output", type=Path, default=RESULTS / "eval_overhead.json")
    args = parser.parse_args()
    runs = {}
    for label, evaluate in (("with_zoo_evaluations", True), ("eval_freq_-1", False)):
        runs[label] = steps_per_second(args.algo, args.env, args.minutes, evaluate)
        print(label, runs[label], flush=True)
    ratio = runs["with_zoo_evaluations"]["steps_per_second"] / runs["eval_freq_-1"]["steps_per_second"]
    result = {"command": " ".join(["python", *sys.argv]), "cpus": os.cpu_count(), "runs": runs, "ratio": round(ratio, 3)}
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"steps/s with evaluations / without: {ratio:.3f}; wrote {args.output}")


if __name__ == "__main__":
    main()
