"""
A3C against SB3's A2C on the RL Zoo's envs, side by side: learning curves in wall clock from the exact Zoo command,
the summary tables and the plots of ``docs/benchmarks.md``.

    python benchmarks/zoo_side_by_side.py run --env Hopper-v5 --algos a3c a2c --seeds 0 1 --minutes 8 --eval-freq 50000
    python benchmarks/zoo_side_by_side.py run --env PongNoFrameskip-v4 --algos a3c --seeds 0 --minutes 40 --stop-at-eval 18
    python benchmarks/zoo_side_by_side.py table --family mujoco
    python benchmarks/zoo_side_by_side.py plot --family mujoco
    python benchmarks/zoo_side_by_side.py run --env Hopper-v5 --algos a3c --seeds 0 --minutes 8 --dry-run

``run``: for each seed, each algorithm in turn (the order alternating between seeds), one run at a time:
``python -m rl_zoo3.train --algo ALGO --env ENV --seed S -f FOLDER`` with the algorithm's shipped entry (SB3's
``a2c``: the Zoo's own; where the Zoo names an older version of the env, such as its v4 MuJoCo entries, that entry
through ``--conf-file``), plus ``--eval-freq N --eval-episodes 10`` when ``--eval-freq`` is given (else the Zoo's own
evaluation: every 25k steps, 5 episodes). The run ends at the entry's ``n_timesteps``, after ``--minutes`` or at
``--stop-at-eval``/``--stop-at-steps``; it is stopped with Ctrl-C, as a user would (the Zoo then saves the model).
Each evaluation is recorded with the wall-clock second it appeared at, in
``benchmarks/results/zoo/ENV/ALGO[_TAG]_seedS.csv``; the machine's Atari env-only speed (``throughput.py``'s
``env_only``) is measured just before and just after, and the run is listed in ``benchmarks/results/zoo/runs.json``.
The Zoo's folder (model, Monitor files, ``evaluations.npz``) and its training log go to the git-ignored
``benchmarks/runs/ENV/ALGO[_TAG]_seedS/``.

``table``: per env of a family, one markdown row per algorithm over the runs of ``runs.json``, in the layout of the
Zoo's ``benchmark.md``, and the line saying when and on what the runs were measured. ``plot``: the family's
evaluations against wall-clock minutes, one line per run. The ``pong`` family's minutes are scaled to a machine of
the reference env-only speed (``REFERENCE_ENV_ONLY``): minutes x env-only / 4600.
"""

import argparse
import csv
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import rl_zoo3
import yaml

BENCHMARKS = Path(__file__).resolve().parent
REPOSITORY = BENCHMARKS.parent
RESULTS = BENCHMARKS / "results"
ZOO_RESULTS = RESULTS / "zoo"
RUNS_INDEX = ZOO_RESULTS / "runs.json"
RUN_FOLDERS = BENCHMARKS / "runs"  # git-ignored: the Zoo's logs, models, Monitor files
REFERENCE_ENV_ONLY = 4600  # Atari env-only steps/s of the reference machine (throughput.py's env_only)

# A2C's scores in the RL Zoo's benchmark.md, under the env versions gymnasium 1.x ships (MuJoCo there at v3)
PUBLISHED_A2C = {
    "CartPole-v1": 500.0,
    "Acrobot-v1": -83.353,
    "Pendulum-v1": -162.965,
    "MountainCar-v0": -111.263,
    "MountainCarContinuous-v0": 91.166,
    "LunarLander-v3": 155.751,
    "LunarLanderContinuous-v3": 84.225,
    "BipedalWalker-v3": 299.754,
    "BipedalWalkerHardcore-v3": 96.171,
    "HalfCheetah-v5": 3041.174,
    "Hopper-v5": 733.454,
    "Swimmer-v5": 200.627,
    "HalfCheetahBulletEnv-v0": 2107.384,
    "Walker2DBulletEnv-v0": 858.209,
    "AntBulletEnv-v0": 2497.147,
    "HopperBulletEnv-v0": 815.355,
    "ReacherBulletEnv-v0": 14.968,
    "PongNoFrameskip-v4": 17.292,
    "BreakoutNoFrameskip-v4": 279.793,
    "BeamRiderNoFrameskip-v4": 2890.298,
    "EnduroNoFrameskip-v4": 0.0,
    "QbertNoFrameskip-v4": 3882.345,
    "SeaquestNoFrameskip-v4": 1721.493,
}
# The envs of the shipped entries, by family (the page's sections and plots)
FAMILIES = {
    "pong": ["PongNoFrameskip-v4"],
    "classic_control": ["CartPole-v1", "Acrobot-v1", "Pendulum-v1", "MountainCar-v0", "MountainCarContinuous-v0"],
    "box2d": ["LunarLander-v3", "LunarLanderContinuous-v3", "BipedalWalker-v3", "BipedalWalkerHardcore-v3"],
    "mujoco": ["HalfCheetah-v5", "Hopper-v5", "Swimmer-v5", "Walker2d-v5", "Ant-v5", "Humanoid-v5"],
    "pybullet": [
        "HalfCheetahBulletEnv-v0",
        "Walker2DBulletEnv-v0",
        "AntBulletEnv-v0",
        "HopperBulletEnv-v0",
        "ReacherBulletEnv-v0",
    ],
    "atari": [
        "BreakoutNoFrameskip-v4",
        "BeamRiderNoFrameskip-v4",
        "EnduroNoFrameskip-v4",
        "QbertNoFrameskip-v4",
        "SeaquestNoFrameskip-v4",
    ],
}
ALGO_ORDER = ["a3c", "a3c_cnn", "a2c", "sync_a2c"]
ALGO_COLORS = {"a3c": "tab:blue", "a3c_cnn": "tab:purple", "a2c": "tab:orange", "sync_a2c": "tab:green"}
# A run's tag, as the tables print it
TAG_NOTES = {"torch_rmsprop": "torch's RMSprop"}


def plot_path(family: str) -> Path:
    """Where ``plot`` draws a family (the Pong plot is the README's)."""
    return RESULTS / "pong_learning_curves.png" if family == "pong" else ZOO_RESULTS / f"{family}.png"


def run_name(algo: str, seed: int, tag: str | None) -> str:
    """``ALGO[_TAG]_seedS``: a run's curve is ``zoo/ENV/<name>.csv`` and its Zoo folder ``runs/ENV/<name>/``."""
    return f"{algo}_{'' if tag is None else tag + '_'}seed{seed}"


def load_runs() -> list[dict[str, Any]]:
    return json.loads(RUNS_INDEX.read_text())["runs"] if RUNS_INDEX.exists() else []


def save_runs(runs: list[dict[str, Any]]) -> None:
    runs = sorted(runs, key=lambda run: (run["env"], run["algo"], run.get("tag") or "", run["seed"]))
    RUNS_INDEX.parent.mkdir(parents=True, exist_ok=True)
    RUNS_INDEX.write_text(json.dumps({"runs": runs}, indent=1) + "\n")


def older_version_entry(algo: str, env_id: str, folder: Path) -> Path | None:
    """
    A conf file holding the Zoo's entry for an older version of ``env_id`` (``HalfCheetah-v4`` for ``HalfCheetah-v5``)
    under ``env_id``'s name, written to ``folder``, where the Zoo's YAML for ``algo`` has no entry for ``env_id``.

    :return: the conf file's path, or None where the Zoo ships an entry for ``env_id`` (or no YAML for ``algo``)
    """
    shipped = Path(rl_zoo3.__file__).parent / "hyperparams" / f"{algo}.yml"
    if not shipped.exists():
        return None
    entries = yaml.safe_load(shipped.read_text())
    versioned = re.fullmatch(r"(.+)-v(\d+)", env_id)
    if env_id in entries or versioned is None:
        return None
    name, version = versioned.groups()
    older = [f"{name}-v{v}" for v in range(int(version) - 1, -1, -1) if f"{name}-v{v}" in entries]
    if not older:
        return None
    conf_file = folder / f"{algo}_{env_id}.yml"
    conf_file.parent.mkdir(parents=True, exist_ok=True)
    conf_file.write_text(f"# The Zoo's {algo}.yml entry for {older[0]}\n" + yaml.safe_dump({env_id: entries[older[0]]}))
    return conf_file


def zoo_command(args: argparse.Namespace, algo: str, env_id: str, seed: int, conf_file: Path | None) -> list[str]:
    """The Zoo command of one run, as a user types it in the repository's root (``-f`` aside)."""
    command = ["python", "-m", "rl_zoo3.train", "--algo", algo, "--env", env_id, "--seed", str(seed)]
    if args.eval_freq is not None:
        command += ["--eval-freq", str(args.eval_freq), "--eval-episodes", "10"]
    if args.hyperparams:
        command += ["--hyperparams", *args.hyperparams]
    if conf_file is not None:
        command += ["--conf-file", str(conf_file.relative_to(REPOSITORY))]
    return command


def record_evaluations(
    command: list[str], folder: Path, curve: Path, minutes: float, stop_at_eval: float | None, stop_at_steps: int | None
) -> None:
    """
    Run the Zoo ``command`` with ``-f folder`` and write each evaluation (wall clock, steps, mean, std) to ``curve`` as
    it appears; stop the Zoo with Ctrl-C after ``minutes`` or at the first evaluation at or past a stop condition.
    """
    folder.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, float]] = []
    start = time.monotonic()
    with (folder / "training.log").open("a") as training_log:
        # SIGINT back to its default: a shell that starts this script in the background ignores it, the Zoo would
        # inherit that and never get its KeyboardInterrupt
        process = subprocess.Popen(
            [sys.executable, *command[1:], "-f", str(folder)],
            cwd=REPOSITORY,
            start_new_session=True,
            stdout=training_log,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        stop = False
        try:
            while process.poll() is None and time.monotonic() - start < minutes * 60 and not stop:
                time.sleep(1)
                for timesteps, results in read_evaluations(folder)[len(rows) :]:
                    rows.append(
                        {
                            "wall_clock_s": round(time.monotonic() - start, 1),
                            "steps": timesteps,
                            "eval_mean": float(results.mean()),
                            "eval_std": float(results.std()),
                        }
                    )
                    print(rows[-1], flush=True)
                    write_curve(curve, rows)  # after each evaluation: nothing is lost if this script dies
                    stop = stop or (stop_at_eval is not None and rows[-1]["eval_mean"] >= stop_at_eval)
                    stop = stop or (stop_at_steps is not None and rows[-1]["steps"] >= stop_at_steps)
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
        sys.exit(f"the Zoo's training exited with status {process.returncode} (its log: {folder / 'training.log'})")
    write_curve(curve, rows)


def read_evaluations(folder: Path) -> list[tuple[int, np.ndarray]]:
    """The (steps, episode returns) of the evaluations the Zoo has written so far (none while it writes them)."""
    found = list(folder.glob("*/*/evaluations.npz"))
    if not found:
        return []
    try:
        evaluations = np.load(found[0])
        return list(zip(evaluations["timesteps"].tolist(), evaluations["results"], strict=True))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return []


def write_curve(curve: Path, rows: list[dict[str, float]]) -> None:
    curve.parent.mkdir(parents=True, exist_ok=True)
    with curve.open("w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=["wall_clock_s", "steps", "eval_mean", "eval_std"])
        writer.writeheader()
        writer.writerows(rows)


def env_only_speed(steps: int) -> int:
    """The machine's Atari env-only steps/s (``throughput.py``'s ``env_only``), measured now."""
    from throughput import env_only

    return round(steps / env_only(steps))


def run(args: argparse.Namespace) -> None:
    planned = []
    for seed_index, seed in enumerate(args.seeds):
        for algo in args.algos if seed_index % 2 == 0 else list(reversed(args.algos)):
            name = run_name(algo, seed, args.tag)
            folder = RUN_FOLDERS / args.env / name
            command = zoo_command(args, algo, args.env, seed, older_version_entry(algo, args.env, folder))
            planned.append((algo, seed, ZOO_RESULTS / args.env / f"{name}.csv", folder, command))
    earlier = [str(curve) for _, _, curve, _, _ in planned if curve.exists()]
    if earlier:
        sys.exit(f"earlier runs would be overwritten ({', '.join(earlier)}): name the new runs with --tag")
    for algo, seed, curve, folder, command in planned:
        print(" ".join(command), f"-f {folder}  ->  {curve}", flush=True)
        if args.dry_run:
            continue
        before = env_only_speed(args.env_only_steps) if args.env_only_steps else None
        record_evaluations(command, folder, curve, args.minutes, args.stop_at_eval, args.stop_at_steps)
        after = env_only_speed(args.env_only_steps) if args.env_only_steps else None
        runs = load_runs()
        runs.append(
            {
                "env": args.env,
                "algo": algo,
                "seed": seed,
                "tag": args.tag,
                "command": " ".join(command),
                "date": time.strftime("%Y-%m-%d"),
                "env_only_steps_per_s": None if before is None else [before, after],
                "machine": f"{os.cpu_count()}-core {platform.machine()}",
                "curve": str(curve.relative_to(ZOO_RESULTS)),
            }
        )
        save_runs(runs)
        print(f"wrote {curve} and {RUNS_INDEX} (the Zoo's folder: {folder})", flush=True)


def curve_rows(run: dict[str, Any]) -> list[dict[str, float]]:
    with (ZOO_RESULTS / run["curve"]).open() as file:
        return [{key: float(value) for key, value in row.items()} for row in csv.DictReader(file)]


def scale(run: dict[str, Any], scaled: bool) -> float:
    """The factor from a run's wall-clock minutes to minutes at the reference env-only speed (1 when not ``scaled``)."""
    if not scaled:
        return 1.0
    if not run.get("env_only_steps_per_s"):
        sys.exit(f"{run['env']} {run_name(run['algo'], run['seed'], run.get('tag'))}: no env-only speed to scale by")
    return statistics.mean(run["env_only_steps_per_s"]) / REFERENCE_ENV_ONLY


def summarize(run: dict[str, Any], scaled: bool) -> dict[str, Any]:
    """A run's best and last evaluation, steps, minutes and the minutes to the Zoo's A2C score (None: not reached)."""
    if run.get("curve") is None:  # a run listed with its summary only
        return {**run["summary"], "reached_minutes": "n/a"}
    rows = curve_rows(run)
    factor = scale(run, scaled)
    target = PUBLISHED_A2C.get(run["env"])
    reached = next((row for row in rows if target is not None and row["eval_mean"] >= target), None)
    return {
        "best_eval_mean": max(row["eval_mean"] for row in rows),
        "last_eval_mean": rows[-1]["eval_mean"],
        "last_eval_std": rows[-1]["eval_std"],
        "last_at_steps": int(rows[-1]["steps"]),
        "last_at_minutes": rows[-1]["wall_clock_s"] / 60 * factor,
        "reached_minutes": None if reached is None else reached["wall_clock_s"] / 60 * factor,
    }


def algo_label(algo: str, tag: str | None) -> str:
    return algo if tag is None else f"{algo} ({TAG_NOTES.get(tag, tag)})"


def minutes_text(minutes: float | str | None) -> str:
    """Minutes to the Zoo's score: one decimal, "-" where not reached, "n/a" where the run has no curve."""
    if minutes is None:
        return "-"
    return minutes if isinstance(minutes, str) else f"{minutes:.1f}"


def table_row(env_id: str, label: str, runs: list[dict[str, Any]], scaled: bool) -> str:
    """One markdown row: the run with the median last evaluation (the lower middle one of an even count), medians."""
    summaries = [summarize(run, scaled) for run in sorted(runs, key=lambda run: run["seed"])]
    final = sorted(summaries, key=lambda summary: summary["last_eval_mean"])[(len(summaries) - 1) // 2]
    last = f"{final['last_eval_mean']:.1f}"
    if final.get("last_eval_std") is not None:
        last += f" ± {final['last_eval_std']:.1f}"
    reached = ", ".join(minutes_text(summary["reached_minutes"]) for summary in summaries)
    published = PUBLISHED_A2C.get(env_id)
    return (
        f"| {env_id} | {label} | {', '.join(str(run['seed']) for run in sorted(runs, key=lambda run: run['seed']))} "
        f"| {last} | {statistics.median(summary['best_eval_mean'] for summary in summaries):.1f} "
        f"| {max(summary['last_at_steps'] for summary in summaries) / 1e6:.3g}M "
        f"| {statistics.median(summary['last_at_minutes'] for summary in summaries):.1f} | {reached} "
        f"| {'-' if published is None else f'{published:.1f}'} |"
    )


def measured_on(runs: list[dict[str, Any]]) -> str:
    """When the runs were made and the env-only speeds recorded around them."""
    dates = sorted(run["date"] for run in runs)
    speeds = [speed for run in runs for speed in run.get("env_only_steps_per_s") or []]
    line = f"Measured on {dates[0]}" + ("" if dates[0] == dates[-1] else f" to {dates[-1]}")
    line += f", {' and '.join(sorted({run['machine'] for run in runs}))} machines, one run at a time"
    if speeds:
        recorded = sum(bool(run.get("env_only_steps_per_s")) for run in runs)
        where = "" if recorded == len(runs) else f" (recorded around {recorded} of the {len(runs)} runs)"
        line += f"; Atari env-only {min(speeds)}-{max(speeds)} steps/s{where}, the reference {REFERENCE_ENV_ONLY}"
    return line + "."


def table(args: argparse.Namespace) -> None:
    runs = load_runs()
    scaled = args.family == "pong"
    print(
        f"| env | algo | seeds | last eval ± std (median run) | best eval (median) | steps "
        f"| {'scaled ' if scaled else ''}minutes (median) | {'scaled ' if scaled else ''}minutes to the Zoo's A2C "
        "score (per seed) | Zoo's A2C score |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    shown = []
    for env_id in FAMILIES[args.family]:
        env_runs = [run for run in runs if run["env"] == env_id]
        groups = sorted({(run["algo"], run.get("tag")) for run in env_runs}, key=lambda group: ALGO_ORDER.index(group[0]))
        for algo, tag in groups:
            group = [run for run in env_runs if run["algo"] == algo and run.get("tag") == tag]
            print(table_row(env_id, algo_label(algo, tag), group, scaled))
        if not env_runs:
            print(f"| {env_id} | not measured | | | | | | | {PUBLISHED_A2C[env_id]:.1f} |")
        shown += env_runs
    print()
    print(textwrap.fill(measured_on(shown), width=120))


def plot(args: argparse.Namespace) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [run for run in load_runs() if run.get("curve") is not None and (args.algos is None or run["algo"] in args.algos)]
    scaled = args.family == "pong"
    envs = [env_id for env_id in FAMILIES[args.family] if any(run["env"] == env_id for run in runs)]
    columns = min(3, len(envs))
    rows_of_axes = -(-len(envs) // columns)
    figure, axes = plt.subplots(rows_of_axes, columns, figsize=(5.5 * columns, 3.8 * rows_of_axes), squeeze=False)
    for axis, env_id in zip(axes.flat, envs, strict=False):
        labelled: set[str] = set()
        env_runs = [run for run in runs if run["env"] == env_id]
        for run in sorted(env_runs, key=lambda run: (ALGO_ORDER.index(run["algo"]), run["seed"])):
            rows = curve_rows(run)
            factor = scale(run, scaled)
            label = algo_label(run["algo"], run.get("tag"))
            axis.plot(
                [row["wall_clock_s"] / 60 * factor for row in rows],
                [row["eval_mean"] for row in rows],
                color=ALGO_COLORS[run["algo"]],
                linestyle="--" if run.get("tag") else "-",
                marker="osD^v"[run["seed"] % 5] if scaled else ".",
                markersize=3,
                linewidth=1,
                label=f"{label}, seed {run['seed']}" if scaled else (None if label in labelled else label),
            )
            labelled.add(label)
        if env_id in PUBLISHED_A2C:
            axis.axhline(PUBLISHED_A2C[env_id], color="grey", linestyle=":", label="the Zoo's A2C score")
        axis.set_title(env_id)
        axis.set_xlabel(f"wall-clock minutes{f' at {REFERENCE_ENV_ONLY} env-only steps/s' if scaled else ''} (2 cores)")
        axis.set_ylabel("evaluation mean reward")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7)
    for axis in list(axes.flat)[len(envs) :]:
        axis.set_visible(False)
    figure.tight_layout()
    output = plot_path(args.family)
    figure.savefig(output, dpi=90)
    print(f"wrote {output}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="subcommand", required=True)
    run_parser = commands.add_parser("run", help="train with the Zoo command and record the evaluations")
    run_parser.add_argument("--env", required=True)
    run_parser.add_argument("--algos", nargs="+", default=["a3c", "a2c"])
    run_parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    run_parser.add_argument("--minutes", type=float, default=30, help="wall-clock limit of each run")
    run_parser.add_argument("--eval-freq", type=int, default=None, help="env steps between evaluations (default: the Zoo's)")
    run_parser.add_argument("--hyperparams", nargs="+", default=None, help="the Zoo's own overrides of the entry")
    run_parser.add_argument("--stop-at-eval", type=float, default=None, help="stop at the first evaluation mean >= this")
    run_parser.add_argument("--stop-at-steps", type=int, default=None, help="stop at the first evaluation past these steps")
    run_parser.add_argument("--tag", default=None, help="names the runs ALGO_TAG_seedS, beside earlier runs of a seed")
    run_parser.add_argument("--env-only-steps", type=int, default=20_000, help="env-only steps before and after (0: none)")
    run_parser.add_argument("--dry-run", action="store_true", help="print the commands and where they write; run nothing")
    table_parser = commands.add_parser("table", help="print a family's summary table")
    table_parser.add_argument("--family", choices=list(FAMILIES), required=True)
    plot_parser = commands.add_parser("plot", help="draw a family's learning curves")
    plot_parser.add_argument("--family", choices=list(FAMILIES), required=True)
    plot_parser.add_argument("--algos", nargs="+", choices=ALGO_ORDER, default=None, help="only these (default: all)")
    args = parser.parse_args()
    {"run": run, "table": table, "plot": plot}[args.subcommand](args)


if __name__ == "__main__":
    main()
