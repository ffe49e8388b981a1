"""
Learning curve in wall-clock time on PongNoFrameskip-v4 (or ``--env``), from the exact RL Zoo user command.

Runs ``python -m rl_zoo3.train --algo ALGO --env ENV -f LOGDIR --seed SEED`` (the bare command: the Zoo's
own evaluation every 25k steps, 5 episodes), or with ``--eval-freq F --eval-episodes 10`` when
``--eval-freq`` is given; stops it with Ctrl-C (SIGINT, as a user would; the Zoo then saves the model)
after ``--minutes``, and records each evaluation with the wall-clock second at which it appeared. Note:
on Atari the Zoo's evaluation samples actions (``deterministic=False``), as it does for every algorithm.
Writes CSV (wall_clock_s, steps, eval_mean, eval_std), the Zoo's training log (SB3's tables) to ``*_training.log``,
the training episodes of the Zoo's Monitor files
to ``*_episodes.csv`` (wall_clock_s, reward, length), and a PNG of all CSVs given to ``--plot``.

    python benchmarks/pong.py --algo a3c --minutes 30 --seed 0
    python benchmarks/pong.py --algo a3c --minutes 60 --seed 1 --stop-at-eval 18
    python benchmarks/pong.py --algo a3c --env BreakoutNoFrameskip-v4 --eval-freq 200000 --minutes 45 --stop-at-steps 1000000
    python benchmarks/pong.py --algo a2c --minutes 30 --seed 0
    python benchmarks/pong.py --plot benchmarks/results/pong_a3c.csv benchmarks/results/pong_a2c.csv
    python benchmarks/pong.py --algo a3c --env CartPole-v1 --minutes 1.5 --eval-freq 5000
    python benchmarks/pong.py --algo a3c --hyperparams policy:"'CnnTwoHeadPolicy'" vf_coef:0.5 policy_kwargs:"dict()"

To extend a stopped run, resume from the model the Zoo saved when it was stopped (the Zoo's ``-i``,
optimizer statistics included) and append to its CSV, shifting the new rows by the stopped run's wall
clock and steps:

    python benchmarks/pong.py --algo a3c --minutes 90 --eval-freq 200000 \
        --resume-from LOGDIR/a3c/PongNoFrameskip-v4_1/PongNoFrameskip-v4.zip --resume-after-seconds 8100 \
        --output benchmarks/results/pong_a3c.csv
"""

import argparse
import csv
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
from stable_baselines3.common.save_util import load_from_zip_file

RESULTS = Path(__file__).parent / "results"


def record(
    algo: str,
    env_id: str,
    minutes: float,
    eval_freq: int | None,
    output: Path,
    resume_from: Path | None = None,
    resume_after_seconds: float = 0.0,
    hyperparams: list[str] | None = None,
    seed: int = 0,
    stop_at_eval: float | None = None,
    stop_at_steps: int | None = None,
    conf_file: Path | None = None,
) -> None:
    log_folder = Path(tempfile.mkdtemp(prefix=f"{env_id}_{algo}_"))
    command = [
        sys.executable, "-m", "rl_zoo3.train", "--algo", algo, "--env", env_id, "-f", str(log_folder), "--seed", str(seed),
    ]  # fmt: skip
    if eval_freq is not None:
        command += ["--eval-freq", str(eval_freq), "--eval-episodes", "10"]
    if hyperparams:
        command += ["--hyperparams", *hyperparams]
    if conf_file is not None:
        command += ["--conf-file", str(conf_file)]
    earlier_rows: list[dict] = []
    seconds_offset, steps_offset = 0.0, 0
    if resume_from is not None:
        command += ["-i", str(resume_from)]
        earlier_rows = list(csv.DictReader(output.open())) if output.exists() else []
        seconds_offset = resume_after_seconds
        steps_offset = int(load_from_zip_file(resume_from, load_data=True)[0]["num_timesteps"])
        print(f"resuming at {steps_offset} steps, {seconds_offset / 60:.1f} min; {len(earlier_rows)} earlier rows", flush=True)
    rows: list[dict] = []
    print(" ".join(command[1:]), flush=True)
    start = time.monotonic()
    start_epoch = time.time()
    # SIGINT back to its default: a shell starting this script in the background (nohup ... &) ignores
    # it, the child would inherit that, and the Zoo would never get its KeyboardInterrupt
    # The Zoo's training log (SB3's tables: train/entropy_loss, train/explained_variance, ...) beside the CSV
    training_log = output.with_name(output.stem + "_training.log").open("a")
    process = subprocess.Popen(
        command,
        start_new_session=True,
        stdout=training_log,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    reached = False
    try:
        while process.poll() is None and time.monotonic() - start < minutes * 60 and not reached:
            time.sleep(1)
            found = list(log_folder.glob(f"{algo}/{env_id}_*/evaluations.npz"))
            if not found:
                continue
            try:
                evaluations = np.load(found[0])
                timesteps, results = evaluations["timesteps"], evaluations["results"]
            except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
                continue  # being written
            for index in range(len(rows), len(timesteps)):
                rows.append(
                    {
                        "wall_clock_s": round(seconds_offset + time.monotonic() - start, 1),
                        "steps": steps_offset + int(timesteps[index]),
                        "eval_mean": float(results[index].mean()),
                        "eval_std": float(results[index].std()),
                    }
                )
                print(rows[-1], flush=True)
                write_rows(output, earlier_rows + rows)  # after each evaluation: nothing is lost if this script dies
                reached = reached or (stop_at_eval is not None and rows[-1]["eval_mean"] >= stop_at_eval)
                reached = reached or (stop_at_steps is not None and rows[-1]["steps"] >= stop_at_steps)
    finally:
        stopped_here = process.poll() is None
        if stopped_here:
            os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    if not stopped_here and process.returncode != 0:
        sys.exit(f"the Zoo's training exited with status {process.returncode} (its traceback is above)")
    write_rows(output, earlier_rows + rows)
    episodes_output = output.with_name(f"{output.stem}_episodes.csv")
    write_training_episodes(log_folder, start_epoch - seconds_offset, episodes_output)
    print(f"wrote {output} and {episodes_output} (logs in {log_folder})")


def write_training_episodes(log_folder: Path, start_epoch: float, output: Path) -> None:
    """The episodes of the Zoo's training Monitor files, with the wall-clock second they ended at."""
    episodes = []
    for monitor_file in log_folder.glob("*/*/*.monitor.csv"):
        with monitor_file.open() as file:
            t_start = json.loads(file.readline().removeprefix("#"))["t_start"]
            for row in csv.DictReader(file):
                episodes.append((round(t_start + float(row["t"]) - start_epoch, 1), float(row["r"]), int(row["l"])))
    with output.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["wall_clock_s", "reward", "length"])
        writer.writerows(sorted(episodes))


def write_rows(output: Path, rows: list[dict]) -> None:
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=["wall_clock_s", "steps", "eval_mean", "eval_std"])
        writer.writeheader()
        writer.writerows(rows)


def plot(csv_paths: list[Path], output: Path, env_id: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    figure, (axis, steps_axis) = plt.subplots(1, 2, figsize=(12, 4.5))
    for path in csv_paths:
        rows = list(csv.DictReader(path.open()))
        minutes = [float(row["wall_clock_s"]) / 60 for row in rows]
        label = path.stem.removeprefix("pong_").removeprefix("breakout_")
        axis.plot(minutes, [float(row["eval_mean"]) for row in rows], marker="o", markersize=3, label=label)
        steps_axis.plot(minutes, [int(row["steps"]) / 1e6 for row in rows], marker="o", markersize=3, label=label)
    if env_id == "PongNoFrameskip-v4":
        axis.axhline(18, color="grey", linestyle="--", linewidth=1, label="+18")
        axis.set_ylim(-21.5, 21.5)
    axis.set_xlabel("wall-clock minutes (2 CPU cores)")
    axis.set_ylabel("evaluation mean reward")
    axis.set_title(f"{env_id}: evaluation")
    axis.legend(fontsize=8)
    steps_axis.set_xlabel("wall-clock minutes (2 CPU cores)")
    steps_axis.set_ylabel("environment steps (millions)")
    steps_axis.set_title("steps trained, evaluation time included")
    figure.tight_layout()
    figure.savefig(output, dpi=120)
    print(f"wrote {output}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algo", default="a3c")
    parser.add_argument("--env", default="PongNoFrameskip-v4")
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--eval-freq", type=int, default=None, help="evaluate every this many env steps (default: the Zoo's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", type=Path, nargs="*", help="CSV files to draw on the same axes instead of training")
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--resume-from", type=Path, default=None, help="a model .zip the Zoo saved; rows go after --output's")
    parser.add_argument("--resume-after-seconds", type=float, default=0.0, help="wall clock of the run that saved it")
    parser.add_argument("--hyperparams", nargs="+", default=None, help="the Zoo's own overrides of the shipped entry")
    parser.add_argument("--stop-at-eval", type=float, default=None, help="stop at the first evaluation mean >= this")
    parser.add_argument("--stop-at-steps", type=int, default=None, help="stop at the first evaluation at >= this many steps")
    args = parser.parse_args()
    if args.plot:
        default_name = "pong_learning_curves.png" if args.env == "PongNoFrameskip-v4" else f"{args.env}_learning_curves.png"
        plot(args.plot, args.output or RESULTS / default_name, args.env)
    else:
        default_name = f"pong_{args.algo}.csv" if args.env == "PongNoFrameskip-v4" else f"{args.env}_{args.algo}_curve.csv"
        output = args.output or RESULTS / default_name
        record(
            args.algo,
            args.env,
            args.minutes,
            args.eval_freq,
            output,
            args.resume_from,
            args.resume_after_seconds,
            args.hyperparams,
            args.seed,
            args.stop_at_eval,
            args.stop_at_steps,
        )


if __name__ == "__main__":
    main()
