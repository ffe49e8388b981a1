"""
The summary table of the side-by-side runs, in the layout of the RL Zoo's ``benchmark.md``.

Reads every summary JSON ``zoo_side_by_side.py`` wrote under ``benchmarks/results/side_by_side/`` and prints one
markdown row per env and algorithm: the final evaluation (score ± std of the run with the median final score, the
lower of the middle two for an even count), the median best evaluation, the steps and minutes the runs took, the
minutes each run took to first reach the Zoo's published A2C score, how far each run's last evaluation fell from its
best (in percent of the range from a random policy's score, ``random_scores.py``, to the best; goal 2 allows 20),
and the published score. A run marked ``replaced_by`` (the value names the summary that replaces it: the shipped
entry's runs, where the entry's settings changed, or a run of the same seed to the entry's full budget) is left out.
The Zoo's A2C envs with no run are listed as not measured.

    python benchmarks/side_by_side_table.py
"""

import json
import statistics

from zoo_side_by_side import PUBLISHED_A2C, RANDOM_SCORES, RESULTS, ZOO_A2C_ENVS


def runs_by_env_and_algo() -> dict[tuple[str, str], list[dict]]:
    runs: dict[tuple[str, str], list[dict]] = {}
    for summary in sorted(set(RESULTS.glob("*.json")) - {RANDOM_SCORES}):
        for run in json.loads(summary.read_text())["runs"]:
            if run.get("evaluations") and "replaced_by" not in run:
                runs.setdefault((run["env"], run["algo"]), []).append(run)
    return runs


def fall_from_best(run: dict, random_score: float | None) -> str:
    """How far the last evaluation fell from the best, in percent of the range from random to the best."""
    if random_score is None or run["best_eval_mean"] <= random_score:
        return "-"
    return f"{100 * (run['best_eval_mean'] - run['last_eval_mean']) / (run['best_eval_mean'] - random_score):.0f}%"


def row(env_id: str, algo: str, runs: list[dict], random_score: float | None) -> str:
    runs = sorted(runs, key=lambda run: run["last_eval_mean"])
    final = runs[(len(runs) - 1) // 2]
    best = statistics.median(run["best_eval_mean"] for run in runs)
    steps = max(run["last_at_steps"] for run in runs)
    minutes = statistics.median(run["last_at_minutes"] for run in runs)
    by_seed = sorted(runs, key=lambda run: run["seed"])
    reached = ", ".join(
        "-" if run["reached_published_at_minutes"] is None else f"{run['reached_published_at_minutes']:.2f}" for run in by_seed
    )
    falls = ", ".join(fall_from_best(run, random_score) for run in by_seed)
    published = PUBLISHED_A2C.get(env_id)
    return (
        f"| {env_id} | {algo} | {len(runs)} | {final['last_eval_mean']:.1f} ± {final['last_eval_std']:.1f} | {best:.1f} "
        f"| {steps / 1e6:g}M | {minutes:.1f} | {reached} | {falls} | {'-' if published is None else f'{published:g}'} |"
    )


def main() -> None:
    runs = runs_by_env_and_algo()
    random_scores = json.loads(RANDOM_SCORES.read_text()) if RANDOM_SCORES.exists() else {}
    measured = sorted({env for env, _ in runs})
    print(
        "| env | algo | runs | final score ± std (median run) | best eval (median) | steps | minutes (median) "
        "| minutes to the Zoo's A2C score (per seed) | last eval's fall from the best (per seed) | Zoo's A2C score |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for env_id in measured:
        random_score = random_scores.get(env_id, {}).get("mean")
        for algo in sorted({algo for env, algo in runs if env == env_id}, key=lambda algo: (algo != "a3c", algo)):
            print(row(env_id, algo, runs[env_id, algo], random_score))
    for env_id in sorted(set(ZOO_A2C_ENVS) - set(measured)):
        status = "the bare-command runs: section Pong" if env_id == "PongNoFrameskip-v4" else "not measured"
        print(f"| {env_id} | | 0 | {status} | | | | | | {PUBLISHED_A2C.get(env_id, '-')} |")


if __name__ == "__main__":
    main()
