"""
A3C against SB3's A2C on the Zoo's own entries, side by side on this machine.

For each env and seed, the exact Zoo command for each algorithm (``--algos``, default ``a3c`` and ``a2c``, each
with its shipped entry), one after the other (the order alternates between seeds), each until its entry's
``n_timesteps`` or ``--minutes``, whichever comes first. The Zoo evaluates every ``--eval-freq`` steps on
10 episodes (deterministic except on Atari, as the Zoo does for every algorithm). Each run writes the CSV of
``pong.py`` (wall clock, steps, evaluation mean and std) under ``benchmarks/results/side_by_side/``, named
``ENV_ALGO_seedS.csv`` (``ENV_ALGO_TAG_seedS.csv`` with ``--tag TAG``; a run never overwrites an earlier one's); the
summary JSON has, per run, the best and the last evaluation, and the steps and minutes at which an
evaluation first reached A2C's published Zoo score (``PUBLISHED_A2C``); a PNG beside it, of the same name
(with ``_ENV`` appended when it covers several envs), draws reward against steps and against minutes.

    python benchmarks/zoo_side_by_side.py --envs LunarLander-v3 --eval-freq 10000 --minutes 20 --seeds 0 1

Runs already made with ``pong.py`` (a trial whose ``--hyperparams`` an entry then took) are summarized the same
way with ``--csvs``, which trains nothing; ``--command`` records how they were made:

    python benchmarks/zoo_side_by_side.py \
        --csvs benchmarks/results/side_by_side/trials/Hopper-v5_a3c_lin7e-4_seed{0,1}.csv \
        --output benchmarks/results/side_by_side/Hopper-v5_a3c.json --command "python benchmarks/pong.py ..."
"""

import argparse
import csv
import re
from pathlib import Path

import rl_zoo3
import yaml
from pong import record
from result_files import write_result

RESULTS = Path(__file__).parent / "results" / "side_by_side"
RANDOM_SCORES = RESULTS / "random_scores.json"  # a random policy's score per env (random_scores.py)

# A2C's scores in the RL Zoo's benchmark.md (rl-baselines3-zoo), under the env versions gymnasium 1.x ships
PUBLISHED_A2C = {
    "LunarLander-v3": 155.751,
    "LunarLanderContinuous-v3": 84.225,
    "MountainCar-v0": -111.263,
    "MountainCarContinuous-v0": 91.166,
    "BipedalWalker-v3": 299.754,
    "BipedalWalkerHardcore-v3": 96.171,
    "HalfCheetah-v5": 3041.174,
    "Hopper-v5": 733.454,
    "Swimmer-v5": 200.627,
    "BeamRiderNoFrameskip-v4": 2890.298,
    "EnduroNoFrameskip-v4": 0.0,
    "QbertNoFrameskip-v4": 3882.345,
    "SeaquestNoFrameskip-v4": 1721.493,
    "PongNoFrameskip-v4": 17.292,
    "HalfCheetahBulletEnv-v0": 2107.384,
    "AntBulletEnv-v0": 2497.147,
    "HopperBulletEnv-v0": 815.355,
    "Walker2DBulletEnv-v0": 858.209,
    "ReacherBulletEnv-v0": 14.968,
}
# The envs of the Zoo's a2c.yml that install from the package registries (MuJoCo at gymnasium 1.x's v5), and the
# Atari games of its benchmark: the envs the shipped entries cover
ZOO_A2C_ENVS = [*PUBLISHED_A2C, "Walker2d-v5", "Ant-v5", "Humanoid-v5"]


def older_version_entry(algo: str, env_id: str) -> Path | None:
    """
    A conf file holding the Zoo's entry for an older version of ``env_id`` (``HalfCheetah-v4`` for
    ``HalfCheetah-v5``) under ``env_id``'s name, when the Zoo's YAML for ``algo`` has none for ``env_id``:
    the Zoo's ``a2c.yml`` names the MuJoCo envs by their v4 versions, which gymnasium 1.x deprecates.

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
    conf_file = RESULTS / "conf" / f"{algo}_{env_id}.yml"
    conf_file.parent.mkdir(parents=True, exist_ok=True)
    conf_file.write_text(f"# The Zoo's {algo}.yml entry for {older[0]}\n" + yaml.safe_dump({env_id: entries[older[0]]}))
    return conf_file


def summarize(csv_path: Path, target: float | None) -> dict:
    rows = [{key: float(value) for key, value in row.items()} for row in csv.DictReader(csv_path.open())]
    if not rows:
        return {"evaluations": 0}
    best = max(rows, key=lambda row: row["eval_mean"])
    reached = next((row for row in rows if target is not None and row["eval_mean"] >= target), None)
    return {
        "evaluations": len(rows),
        "best_eval_mean": best["eval_mean"],
        "best_eval_std": best["eval_std"],
        "best_at_steps": int(best["steps"]),
        "best_at_minutes": round(best["wall_clock_s"] / 60, 2),
        "last_eval_mean": rows[-1]["eval_mean"],
        "last_eval_std": rows[-1]["eval_std"],
        "last_at_steps": int(rows[-1]["steps"]),
        "last_at_minutes": round(rows[-1]["wall_clock_s"] / 60, 2),
        "published_a2c": target,
        "reached_published_at_steps": None if reached is None else int(reached["steps"]),
        "reached_published_at_minutes": None if reached is None else round(reached["wall_clock_s"] / 60, 2),
    }


def run_csv(env_id: str, algo: str, seed: int, tag: str | None) -> Path:
    """Where a run's CSV goes: ``ENV_ALGO_[TAG_]seedS.csv`` under ``RESULTS`` (``run_name`` reads it back)."""
    return RESULTS / f"{env_id}_{algo}_{'' if tag is None else tag + '_'}seed{seed}.csv"


def run_name(csv_path: Path) -> tuple[str, str, str | None, int]:
    """The env, algo, trial tag (None if absent) and seed of a run's CSV, named ``ENV_ALGO_[TAG_]seedS.csv``."""
    named = re.fullmatch(r"(.+?-v\d+)_(sync_a2c|a3c_cnn|a3c|a2c)_(?:(.+)_)?seed(\d+)\.csv", csv_path.name)
    if named is None:
        raise ValueError(f"{csv_path.name} is not named ENV_ALGO_[TAG_]seedS.csv")
    env_id, algo, tag, seed = named.groups()
    return env_id, algo, tag, int(seed)


def summarize_made_runs(csv_paths: list[Path], output: Path, command: str) -> None:
    """Write the summary JSON of runs already made, each CSV named ``ENV_ALGO_[TAG_]seedS.csv``."""
    summary = []
    curves: dict[str, dict[str, Path]] = {}
    for csv_path in csv_paths:
        env_id, algo, _, seed = run_name(csv_path)
        summary.append({"env": env_id, "algo": algo, "seed": seed, **summarize(csv_path, PUBLISHED_A2C.get(env_id))})
        curves.setdefault(env_id, {})[f"{algo} seed {seed}"] = csv_path
    for env_id, env_curves in curves.items():
        plot(env_id, env_curves, plot_path(output, env_id, len(curves)))
    write_result(output, {"command": command, "runs": summary})


def plot_path(output: Path, env_id: str, envs_in_summary: int) -> Path:
    """The learning curves' PNG beside the summary JSON: same name, or with the env appended when it has several."""
    return output.with_suffix(".png") if envs_in_summary == 1 else output.with_name(f"{output.stem}_{env_id}.png")


def plot(env_id: str, csv_paths: dict[str, Path], output: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (by_steps, by_minutes) = plt.subplots(1, 2, figsize=(11, 4))
    for label, path in csv_paths.items():
        rows = list(csv.DictReader(path.open()))
        steps = [float(row["steps"]) for row in rows]
        minutes = [float(row["wall_clock_s"]) / 60 for row in rows]
        means = [float(row["eval_mean"]) for row in rows]
        by_steps.plot(steps, means, marker=".", label=label)
        by_minutes.plot(minutes, means, marker=".", label=label)
    for axes, xlabel in ((by_steps, "env steps"), (by_minutes, "wall clock (min)")):
        if env_id in PUBLISHED_A2C:
            axes.axhline(PUBLISHED_A2C[env_id], color="grey", linestyle="--", label="A2C, Zoo benchmark")
        axes.set_xlabel(xlabel)
        axes.set_ylabel("evaluation mean reward")
        axes.grid(alpha=0.3)
    by_minutes.legend(fontsize=8)
    figure.suptitle(f"{env_id}: the Zoo command, this machine")
    figure.tight_layout()
    figure.savefig(output, dpi=100)
    plt.close(figure)
    print(f"wrote {output}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    runs = parser.add_mutually_exclusive_group(required=True)
    runs.add_argument("--envs", nargs="+")
    runs.add_argument("--csvs", nargs="+", type=Path, help="summarize these runs (ENV_ALGO_..._seedS.csv) instead")
    parser.add_argument("--algos", nargs="+", default=["a3c", "a2c"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--minutes", type=float, default=30, help="wall-clock limit of each run")
    parser.add_argument("--eval-freq", type=int, default=10_000, help="env steps between evaluations")
    parser.add_argument("--output", type=Path, default=None, help="the summary JSON (default: side_by_side/ENVS.json)")
    parser.add_argument("--command", help="with --csvs: the command that made them")
    parser.add_argument("--tag", help="names the runs' CSVs ENV_ALGO_TAG_seedS.csv, beside earlier runs of a seed")
    args = parser.parse_args()
    if args.csvs:
        if args.output is None or args.command is None:
            parser.error("--csvs needs --output and --command")
        summarize_made_runs(args.csvs, args.output, args.command)
        return

    RESULTS.mkdir(parents=True, exist_ok=True)
    output = args.output or RESULTS / f"{'_'.join(args.envs)}.json"
    earlier = [
        path
        for env_id in args.envs
        for algo in args.algos
        for seed in args.seeds
        if (path := run_csv(env_id, algo, seed, args.tag)).exists()
    ]
    if earlier:
        parser.error(f"earlier runs' CSVs would be overwritten ({', '.join(map(str, earlier))}): name the new runs with --tag")
    summary: list[dict] = []
    for env_id in args.envs:
        csv_paths: dict[str, Path] = {}
        for seed_index, seed in enumerate(args.seeds):
            algos = args.algos if seed_index % 2 == 0 else list(reversed(args.algos))
            for algo in algos:
                csv_path = run_csv(env_id, algo, seed, args.tag)
                conf_file = older_version_entry(algo, env_id)
                record(algo, env_id, args.minutes, args.eval_freq, csv_path, seed=seed, conf_file=conf_file)
                csv_paths[f"{algo} seed {seed}"] = csv_path
                summary.append({"env": env_id, "algo": algo, "seed": seed, **summarize(csv_path, PUBLISHED_A2C.get(env_id))})
                print(summary[-1], flush=True)
        plot(env_id, csv_paths, plot_path(output, env_id, len(args.envs)))
    command = "python benchmarks/zoo_side_by_side.py --envs " + " ".join(args.envs)
    command += f" --algos {' '.join(args.algos)} --seeds {' '.join(map(str, args.seeds))}"
    command += f" --minutes {args.minutes:g} --eval-freq {args.eval_freq}"
    command += "" if args.tag is None else f" --tag {args.tag}"
    command += "" if args.output is None else f" --output {args.output}"
    write_result(output, {"command": command, "runs": summary})


if __name__ == "__main__":
    main()
