"""
The optimizer panel behind A3C's default optimizer: each candidate optimizer on small envs with the library's
defaults, and the Atari dead-start probe with a feed-forward CNN.

``mlp``: ``A3C(policy, ENV_ID, seed=S, policy_kwargs=dict(optimizer_class=...))`` with every other argument at
its default (no YAML: one worker per core, one env each, ``n_steps`` 20), trained for the env's budget (equal
steps for every optimizer), then its final policy evaluated on 10 episodes (deterministic). MountainCarContinuous
uses gSDE (``use_sde=True``), as the Zoo runs it. Each run goes in its own process, one after another.

    python benchmarks/optimizer_panel.py mlp --seeds 0 1 2
    python benchmarks/optimizer_panel.py mlp --envs CartPole-v1 --optimizers rmsprop adam --seeds 0

``dead-start``: SyncA2C (one process, repeatable) trains ``a3c_cnn.yml``'s feed-forward Atari network
(``SmallCnnTwoHeadPolicy``: two convolutions, separate 256-unit ReLU heads) on Pong, 16 envs x 5 steps, the
entry's ent_coef 0.01 and SB3 A2C's other defaults, with each optimizer; every ``--interval`` steps it records
the share of each head's units that are zero on every frame of a fixed probe set (480 frames of random play) and
the policy's mean entropy on them (ln 6 = 1.792: uniform). A unit zero on all frames gets no gradient from them:
a dead start.

    python benchmarks/optimizer_panel.py dead-start --seeds 0 1 2 3 4 --steps 10000

Candidates: ``rmsprop`` (``th.optim.RMSprop``, alpha 0.99, eps 1e-5: SB3 A2C's default), ``tf_like`` (SB3's
``RMSpropTFLike``, the Zoo's A2C Atari entry), ``adam`` (``th.optim.Adam``, eps 1e-5) and ``from_one``
(``sb3_a3c.RMSpropFromOne``: RMSprop whose average of squared gradients starts at one).
"""

import argparse
import json
import multiprocessing
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch as th

RESULTS = Path(__file__).parent / "results"
RMSPROP_SETTINGS = dict(alpha=0.99, eps=1e-5, weight_decay=0)
OPTIMIZER_NAMES = ("rmsprop", "tf_like", "adam", "from_one")
# Env id -> training steps of the panel (short budgets: the comparison is at equal steps)
PANEL_BUDGETS = {
    "CartPole-v1": 50_000,
    "Acrobot-v1": 100_000,
    "LunarLander-v3": 300_000,
    "Pendulum-v1": 150_000,
    "MountainCarContinuous-v0": 100_000,
    "HalfCheetah-v5": 200_000,
}
GSDE_ENVS = ("MountainCarContinuous-v0",)


def optimizer_kwargs(name: str) -> dict[str, Any]:
    """The ``policy_kwargs`` that select optimizer ``name``."""
    from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike

    from sb3_a3c import RMSpropFromOne

    return {
        "rmsprop": dict(optimizer_class=th.optim.RMSprop, optimizer_kwargs=RMSPROP_SETTINGS),
        "tf_like": dict(optimizer_class=RMSpropTFLike, optimizer_kwargs=dict(alpha=0.99, eps=1e-5)),
        "adam": dict(optimizer_class=th.optim.Adam, optimizer_kwargs=dict(eps=1e-5)),
        "from_one": dict(optimizer_class=RMSpropFromOne, optimizer_kwargs=RMSPROP_SETTINGS),
    }[name]


def train_and_evaluate(env_id: str, optimizer: str, seed: int, steps: int) -> dict[str, Any]:
    """One panel run (in a fresh process): A3C with the library's defaults and ``optimizer``."""
    import gymnasium as gym
    from stable_baselines3.common.evaluation import evaluate_policy

    from sb3_a3c import A3C

    policy = "MlpPolicy"
    start = time.monotonic()
    model = A3C(policy, env_id, seed=seed, use_sde=env_id in GSDE_ENVS, policy_kwargs=optimizer_kwargs(optimizer))
    model.learn(steps)
    minutes = (time.monotonic() - start) / 60
    eval_env = gym.make(env_id)
    eval_env.reset(seed=10_000 + seed)
    mean, std = evaluate_policy(model, eval_env, n_eval_episodes=10, deterministic=True)
    return dict(
        env=env_id, optimizer=optimizer, seed=seed, steps=steps, minutes=round(minutes, 2), mean=float(mean), std=float(std)
    )


def _run_in_process(queue: Any, *args: Any) -> None:
    queue.put(train_and_evaluate(*args))


def run_mlp_panel(args: argparse.Namespace) -> None:
    output = args.output or RESULTS / "optimizer_panel.json"
    rows: list[dict[str, Any]] = json.loads(output.read_text())["rows"] if output.exists() else []
    done = {(row["env"], row["optimizer"], row["seed"]) for row in rows}
    context = multiprocessing.get_context("spawn")
    for seed in args.seeds:
        for env_id in args.envs:
            for optimizer in args.optimizers:
                if (env_id, optimizer, seed) in done:
                    continue
                queue = context.Queue()
                process = context.Process(target=_run_in_process, args=(queue, env_id, optimizer, seed, PANEL_BUDGETS[env_id]))
                process.start()
                row = queue.get()
                process.join()
                print(
                    f"{env_id:<26} {optimizer:<9} seed {seed}: {row['mean']:9.1f} ± {row['std']:7.1f} ({row['minutes']} min)"
                )
                rows.append(row)
                _write(output, "mlp", rows)
    print_mlp_table(rows)


def print_mlp_table(rows: list[dict[str, Any]]) -> None:
    """One markdown row per env: the median final evaluation of each optimizer over its seeds."""
    envs = [env for env in PANEL_BUDGETS if any(row["env"] == env for row in rows)]
    print("| env | steps | " + " | ".join(OPTIMIZER_NAMES) + " |")
    print("|---|---|" + "---|" * len(OPTIMIZER_NAMES))
    for env in envs:
        cells = []
        for optimizer in OPTIMIZER_NAMES:
            scores = [row["mean"] for row in rows if row["env"] == env and row["optimizer"] == optimizer]
            cells.append(f"{statistics.median(scores):.1f} ({len(scores)})" if scores else "-")
        print(f"| {env} | {PANEL_BUDGETS[env]:,} | " + " | ".join(cells) + " |")


def run_dead_start_probe(args: argparse.Namespace) -> None:
    import ale_py
    import gymnasium as gym
    from stable_baselines3.common.env_util import make_atari_env
    from stable_baselines3.common.vec_env import VecFrameStack, VecTransposeImage

    from sb3_a3c import SyncA2C

    gym.register_envs(ale_py)
    output = args.output or RESULTS / "dead_start.json"
    rows: list[dict[str, Any]] = []
    for optimizer in args.optimizers:
        for seed in args.seeds:
            env = VecTransposeImage(VecFrameStack(make_atari_env("PongNoFrameskip-v4", n_envs=16, seed=seed), n_stack=4))
            model = SyncA2C(
                "SmallCnnTwoHeadPolicy",
                env,
                n_steps=5,
                ent_coef=0.01,
                seed=seed,
                device="cpu",
                policy_kwargs=optimizer_kwargs(optimizer),
            )
            frames = _probe_frames(env)
            for done in range(0, args.steps + 1, args.interval):
                if done:
                    model.learn(args.interval, reset_num_timesteps=False)
                dead_actor, dead_critic, entropy = _dead_shares_and_entropy(model.policy, frames)
                rows.append(
                    dict(
                        optimizer=optimizer,
                        seed=seed,
                        steps=done,
                        dead_actor=dead_actor,
                        dead_critic=dead_critic,
                        entropy=entropy,
                    )
                )
                dead = f"dead {dead_actor:.3f} (actor) {dead_critic:.3f} (critic)"
                print(f"{optimizer:<9} seed {seed} {done:>7} steps: {dead}, H {entropy}")
            _write(output, "dead-start", rows)
    print_dead_start_table(rows)


def print_dead_start_table(rows: list[dict[str, Any]]) -> None:
    """
    One markdown row per optimizer: the median share of dead units (actor / critic heads) at the start and at the
    last step, and the seeds with a dead start: a head whose active units fall below 0.8 of the share active at the
    start (the criterion of ``tests/test_dead_start.py``).
    """
    last_step = max(row["steps"] for row in rows)
    print(f"| optimizer | dead units at the start (actor / critic) | after {last_step:,} steps | seeds with a dead start |")
    print("|---|---|---|---|")
    for optimizer in dict.fromkeys(row["optimizer"] for row in rows):
        runs = [row for row in rows if row["optimizer"] == optimizer]
        start = {row["seed"]: row for row in runs if row["steps"] == 0}
        end = {row["seed"]: row for row in runs if row["steps"] == last_step}
        dead = [
            seed
            for seed in end
            if any(1 - end[seed][head] < 0.8 * (1 - start[seed][head]) for head in ("dead_actor", "dead_critic"))
        ]
        seeds = f"{len(dead)} of {len(end)}" + (f" ({', '.join(map(str, dead))})" if dead else "")
        print(f"| {optimizer} | {_median_dead_shares(start)} | {_median_dead_shares(end)} | {seeds} |")


def _median_dead_shares(rows_by_seed: dict[int, dict[str, Any]]) -> str:
    """The median share of dead units of the actor and critic heads over the seeds, as ``actor / critic``."""
    actor = statistics.median(row["dead_actor"] for row in rows_by_seed.values())
    critic = statistics.median(row["dead_critic"] for row in rows_by_seed.values())
    return f"{actor:.2f} / {critic:.2f}"


def _probe_frames(env: Any, n_steps: int = 30) -> th.Tensor:
    env.reset()
    frames = [env.step(np.array([env.action_space.sample() for _ in range(env.num_envs)]))[0] for _ in range(n_steps)]
    return th.as_tensor(np.concatenate(frames))


def _dead_shares_and_entropy(policy: Any, frames: th.Tensor) -> tuple[float, float, float]:
    """Share of the actor's and of the critic's head units zero on every frame, and the mean entropy."""
    with th.no_grad():
        latent_pi, latent_vf = policy.mlp_extractor(policy.extract_features(frames))
        entropy = policy.get_distribution(frames).entropy().mean().item()
    dead_actor = (latent_pi.abs().sum(dim=0) == 0).float().mean().item()
    dead_critic = (latent_vf.abs().sum(dim=0) == 0).float().mean().item()
    return round(dead_actor, 3), round(dead_critic, 3), round(entropy, 4)


def _write(output: Path, panel: str, rows: list[dict[str, Any]]) -> None:
    output.parent.mkdir(parents=True, exist_ok=True)
    command = "python benchmarks/optimizer_panel.py " + " ".join(sys.argv[1:])
    output.write_text(json.dumps({"panel": panel, "command": command, "rows": rows}, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    subcommands = parser.add_subparsers(dest="panel", required=True)
    mlp = subcommands.add_parser("mlp", help="the small-env panel (A3C, library defaults)")
    mlp.add_argument("--envs", nargs="+", default=list(PANEL_BUDGETS), choices=list(PANEL_BUDGETS))
    mlp.add_argument("--table", action="store_true", help="print the table of --output and run nothing")
    dead_start = subcommands.add_parser("dead-start", help="the Atari dead-start probe (SyncA2C, feed-forward CNN)")
    dead_start.add_argument("--steps", type=int, default=10_000)
    dead_start.add_argument("--interval", type=int, default=2_000)
    dead_start.add_argument("--table", action="store_true", help="print the table of --output and run nothing")
    for subcommand in (mlp, dead_start):
        subcommand.add_argument("--optimizers", nargs="+", default=list(OPTIMIZER_NAMES), choices=OPTIMIZER_NAMES)
        subcommand.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
        subcommand.add_argument("--output", type=Path, default=None, help="JSON file (runs already in it are kept)")
    args = parser.parse_args()
    if args.panel == "dead-start" and args.table:
        print_dead_start_table(json.loads((args.output or RESULTS / "dead_start.json").read_text())["rows"])
    elif args.panel == "dead-start":
        run_dead_start_probe(args)
    elif args.table:
        print_mlp_table(json.loads((args.output or RESULTS / "optimizer_panel.json").read_text())["rows"])
    else:
        run_mlp_panel(args)


if __name__ == "__main__":
    main()
