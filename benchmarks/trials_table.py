"""
One markdown row per trial run, as in the per-run tables of ``docs/benchmarks.md``: the best and the last evaluation
(mean ± std, the steps and minutes at which it came), the minutes at which an evaluation first reached the Zoo's
published A2C score, and the last evaluation's fall from the best (goal 2's measure, as ``side_by_side_table.py``).
Each CSV is a ``pong.py`` run named ``ENV_ALGO_TAG_seedS.csv``; the row's second column is its ``TAG``.

    python benchmarks/trials_table.py benchmarks/results/side_by_side/trials/Ant-v5_a3c_*_seed?.csv
"""

import argparse
import json
from pathlib import Path

from side_by_side_table import fall_from_best
from zoo_side_by_side import PUBLISHED_A2C, RANDOM_SCORES, run_name, summarize

NOT_REACHED = "\N{EN DASH}"


def evaluation(run: dict, which: str) -> str:
    """The ``best`` or ``last`` evaluation of ``run``: mean ± std (steps, minutes)."""
    return (
        f"{run[f'{which}_eval_mean']:.1f} ± {run[f'{which}_eval_std']:.1f} "
        f"({run[f'{which}_at_steps'] / 1e6:g}M, {run[f'{which}_at_minutes']:.1f})"
    )


def trial_row(csv_path: Path, random_scores: dict) -> str:
    env_id, _, tag, seed = run_name(csv_path)
    tag = tag or "-"
    run = summarize(csv_path, PUBLISHED_A2C.get(env_id))
    if not run["evaluations"]:
        return f"| {env_id} | {tag} | {seed} | no evaluation | | | |"
    reached = run["reached_published_at_minutes"]
    return (
        f"| {env_id} | {tag} | {seed} | {evaluation(run, 'best')} | {evaluation(run, 'last')} "
        f"| {NOT_REACHED if reached is None else f'{reached:.2f}'} "
        f"| {fall_from_best(run, random_scores.get(env_id, {}).get('mean'))} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csvs", nargs="+", type=Path)
    args = parser.parse_args()
    random_scores = json.loads(RANDOM_SCORES.read_text()) if RANDOM_SCORES.exists() else {}
    print(
        "| env | trial | seed | best eval ± std (steps, minutes) | last eval ± std (steps, minutes) "
        "| minutes to the Zoo's A2C score | fall from the best |"
    )
    print("|---|---|---|---|---|---|---|")
    for csv_path in args.csvs:
        print(trial_row(csv_path, random_scores))


if __name__ == "__main__":
    main()
