"""
The README's main job, measured over several seeds: train A3C on CartPole-v1, evaluating along the way
and at the end (what the user gets).

    python benchmarks/cartpole.py --seeds 0 1 2 3 4
    python benchmarks/cartpole.py --seeds 0 1 2 3 4 --policy-kwargs "dict(lstm_hidden_size=256, enable_critic_lstm=True)" \
        --output benchmarks/results/cartpole_MlpLstmPolicy_lstm256.json

For each seed: 10 deterministic evaluation episodes every ``--eval-every`` steps (on a separate env), the
final model's mean reward over 10 episodes, and the wall-clock seconds of ``learn()`` (evaluations
excluded). Writes one JSON with every seed done so far and a summary (median final reward, seeds whose
final model scores >= 475, seeds that reached 475 at some evaluation), rewritten after each seed.
"""

import argparse
import json
import os
import shlex
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from stable_baselines3.common.callbacks import EvalCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

from sb3_a3c import A3C

SOLVED = 475


class TimedEvalCallback(EvalCallback):
    """
    SB3's ``EvalCallback``, also keeping the curve in memory (``EvalCallback`` keeps it only with a
    ``log_path``) and adding up the seconds its evaluations take (kept out of the training clock).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.curve: list[tuple[int, float]] = []
        self.eval_seconds = 0.0

    def _on_step(self) -> bool:
        start = time.perf_counter()
        continue_training = super()._on_step()
        self.eval_seconds += time.perf_counter() - start
        if self.n_calls % self.eval_freq == 0:
            self.curve.append((self.num_timesteps, float(self.last_mean_reward)))
        return continue_training


def run_seed(seed: int | None, steps: int, policy: str, policy_kwargs: dict | None, eval_every: int) -> dict:
    start = time.perf_counter()
    model = A3C(policy, "CartPole-v1", seed=seed, policy_kwargs=policy_kwargs)  # one worker per CPU core
    evaluations = TimedEvalCallback(
        make_vec_env("CartPole-v1", n_envs=1, seed=12345),
        eval_freq=eval_every // model.n_envs,  # on_step calls: one per n_envs env steps
        n_eval_episodes=10,
        deterministic=True,
    )
    model.learn(steps, callback=evaluations)
    train_seconds = time.perf_counter() - start - evaluations.eval_seconds

    final_mean, final_std = evaluate_policy(model, make_vec_env("CartPole-v1", n_envs=1, seed=54321), n_eval_episodes=10)
    return {
        "seed": seed,
        "workers": model.n_envs,
        "steps": model.num_timesteps,
        "train_seconds": round(train_seconds, 1),
        "final_mean_reward": float(final_mean),
        "final_std_reward": float(final_std),
        "first_solved_at_steps": next((step for step, reward in evaluations.curve if reward >= SOLVED), None),
        "eval_curve": evaluations.curve,
    }


def summarize(runs: list[dict], args: argparse.Namespace) -> dict:
    finals = [run["final_mean_reward"] for run in runs]
    return {
        "command": "python benchmarks/cartpole.py " + shlex.join(sys.argv[1:]),
        "policy": args.policy,
        "policy_kwargs": args.policy_kwargs,
        "cpus": len(os.sched_getaffinity(0)),
        "seeds_done": len(runs),
        "median_final_mean_reward": statistics.median(finals),
        "seeds_final_solved": sum(reward >= SOLVED for reward in finals),
        "seeds_ever_solved": sum(run["first_solved_at_steps"] is not None for run in runs),
        "median_train_seconds": statistics.median(run["train_seconds"] for run in runs),
        "runs": runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--policy", default="MlpLstmPolicy")
    parser.add_argument("--policy-kwargs", default=None, help='a Python expression, e.g. "dict(lstm_hidden_size=64)"')
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--eval-every", type=int, default=20_000)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    policy_kwargs = eval(args.policy_kwargs) if args.policy_kwargs else None  # as the Zoo evaluates its policy_kwargs

    output = args.output or Path(__file__).parent / "results" / f"cartpole_{args.policy}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    runs = []
    for seed in args.seeds:
        runs.append(run_seed(seed, args.steps, args.policy, policy_kwargs, args.eval_every))
        print(json.dumps({key: value for key, value in runs[-1].items() if key != "eval_curve"}), flush=True)
        summary = summarize(runs, args)
        output.write_text(json.dumps(summary, indent=2) + "\n")  # after every seed: a stopped sweep keeps its data
    print(json.dumps({key: value for key, value in summary.items() if key != "runs"}))


if __name__ == "__main__":
    main()
