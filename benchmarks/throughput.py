"""
Steps per second on PongNoFrameskip-v4 with SB3's Atari wrappers, measured side by side in one run.

Each entry runs for the same budget of environment steps, one after another (never two at once),
and the whole sequence is repeated ``--rounds`` times; the table gives the median over rounds and the
ratio to SB3's A2C measured in the same run.

    python benchmarks/throughput.py --entries a2c sync_a2c --steps 20000 --rounds 3

Entries:
  env_only   random actions in as many processes as the shipped A3C entry has workers, with SB3's
             AtariWrapper (no learning): the reference speed of the machine (84x84 frames, as the
             reference of 4600 steps/s in docs/benchmarks.md was measured)
  a2c        SB3 A2C with the RL Zoo's Atari hyperparameters (16 envs, CnnPolicy, frame stack 4)
  sync_a2c   SyncA2C with the same network, envs and hyperparameters as ``a2c``
  a3c        A3C with the shipped ``hyperparams/a3c.yml`` entry for PongNoFrameskip-v4 (envs, wrappers,
             policy, workers and hyperparameters, built as the RL Zoo builds them): the LSTM agent
  a3c_cnn    the same with the shipped ``hyperparams/a3c_cnn.yml`` entry (``--algo a3c_cnn``: feed-forward
             network on 4 stacked frames, synchronous updates)
"""

import argparse
import importlib.resources
import multiprocessing
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ale_py
import gymnasium as gym
import torch as th
import yaml
from result_files import median_of_rounds, write_result
from rl_zoo3.utils import get_wrapper_class, linear_schedule
from stable_baselines3 import A2C
from stable_baselines3.common.atari_wrappers import AtariWrapper
from stable_baselines3.common.env_util import make_atari_env, make_vec_env
from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike
from stable_baselines3.common.vec_env import VecFrameStack

from sb3_a3c import A3C, SyncA2C

gym.register_envs(ale_py)
ENV_ID = "PongNoFrameskip-v4"
# rl_zoo3/hyperparams/a2c.yml, "atari" entry (n_timesteps and env_wrapper aside)
ZOO_A2C_ATARI = dict(
    ent_coef=0.01,
    vf_coef=0.25,
    policy_kwargs=dict(optimizer_class=RMSpropTFLike, optimizer_kwargs=dict(eps=1e-5)),
)


# Keys of a Zoo entry that describe the env or the budget rather than the model
ZOO_ENV_KEYS = ("env_wrapper", "frame_stack", "n_envs", "n_timesteps", "policy")


def shipped_a3c_entry(algo: str = "a3c") -> dict[str, Any]:
    """The entry of the shipped hyperparams/{algo}.yml that the Zoo uses for PongNoFrameskip-v4 (its own or "atari")."""
    text = importlib.resources.files("sb3_a3c.hyperparams").joinpath(f"{algo}.yml").read_text()
    entries = yaml.load(text, Loader=yaml.UnsafeLoader)  # the Zoo's loader (for !!float)
    return entries.get(ENV_ID, entries["atari"])


def _random_stepping(n_steps: int, seed: int) -> None:
    env = AtariWrapper(gym.make(ENV_ID))
    env.reset(seed=seed)
    for _ in range(n_steps):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()


def time_in_worker_processes(target: Callable[..., None], args_by_rank: list[tuple]) -> float:
    """
    Run ``target(*args_by_rank[rank])`` in one forked process per rank, all at once; return the wall-clock seconds.

    :raises RuntimeError: when a process fails (its traceback is printed by the process itself)
    """
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=target, args=args) for args in args_by_rank]
    start = time.perf_counter()
    for process in processes:
        process.start()
    for process in processes:
        process.join()
    elapsed = time.perf_counter() - start
    failed = [rank for rank, process in enumerate(processes) if process.exitcode != 0]
    if failed:
        raise RuntimeError(f"{target.__name__} failed in the processes of ranks {failed}")
    return elapsed


def env_only(steps: int) -> float:
    """Random actions in one process per A3C worker, `steps` steps in all; returns wall-clock seconds."""
    entry = shipped_a3c_entry()
    workers = entry.get("n_workers") or entry["n_envs"]
    args_by_rank = [(steps // workers, rank) for rank in range(workers)]
    return time_in_worker_processes(_random_stepping, args_by_rank)


def _timed_learn(model, steps: int) -> float:
    start = time.perf_counter()
    model.learn(steps)
    return time.perf_counter() - start


def a2c(steps: int) -> float:
    env = VecFrameStack(make_atari_env(ENV_ID, n_envs=16, seed=0), n_stack=4)
    return _timed_learn(A2C("CnnPolicy", env, device="cpu", seed=0, **ZOO_A2C_ATARI), steps)


def sync_a2c(steps: int) -> float:
    env = VecFrameStack(make_atari_env(ENV_ID, n_envs=16, seed=0), n_stack=4)
    return _timed_learn(SyncA2C("CnnPolicy", env, device="cpu", seed=0, **ZOO_A2C_ATARI), steps)


def make_shipped_a3c(seed: int = 0, policy: str | None = None, algo: str = "a3c", **overrides: Any) -> A3C:
    """
    A3C on Pong with the shipped Zoo entry: its envs, wrappers, policy, workers and hyperparameters.

    :param seed: seed of the envs and the model
    :param policy: a policy to use instead of the entry's (all else unchanged)
    :param algo: the Zoo name whose hyperparameter file holds the entry ("a3c" or "a3c_cnn")
    :param overrides: A3C arguments to use instead of the entry's (as ``--hyperparams`` on the Zoo command)
    """
    entry = shipped_a3c_entry(algo)
    env = make_vec_env(ENV_ID, n_envs=entry["n_envs"], seed=seed, wrapper_class=get_wrapper_class(entry))
    if entry.get("frame_stack"):
        env = VecFrameStack(env, n_stack=entry["frame_stack"])
    hyperparameters = {key: value for key, value in entry.items() if key not in ZOO_ENV_KEYS}
    for key, value in hyperparameters.items():
        if isinstance(value, str) and value.startswith("lin_"):
            hyperparameters[key] = linear_schedule(float(value.removeprefix("lin_")))
    if isinstance(hyperparameters.get("policy_kwargs"), str):
        hyperparameters["policy_kwargs"] = eval(hyperparameters["policy_kwargs"])  # as the Zoo does
    hyperparameters.update(overrides)
    return A3C(policy or entry["policy"], env, seed=seed, **hyperparameters)


def a3c(steps: int, algo: str = "a3c") -> float:
    model = make_shipped_a3c(algo=algo)
    model.learn(500)  # fork and first allocations are not counted
    return _timed_learn(model, steps)


def a3c_cnn(steps: int) -> float:
    return a3c(steps, algo="a3c_cnn")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", nargs="+", default=["env_only", "a2c", "sync_a2c", "a3c"])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "throughput.json")
    args = parser.parse_args()

    runners: dict[str, Callable[[int], float]] = {
        "env_only": env_only,
        "a2c": a2c,
        "sync_a2c": sync_a2c,
        "a3c": a3c,
        "a3c_cnn": a3c_cnn,
    }
    rates: dict[str, list[float]] = {entry: [] for entry in args.entries}
    for round_index in range(args.rounds):
        for entry in args.entries:
            seconds = runners[entry](args.steps)
            rates[entry].append(args.steps / seconds)
            print(f"round {round_index + 1}: {entry:<9} {args.steps / seconds:8.1f} steps/s", flush=True)

    medians = median_of_rounds(rates)
    print(f"\n{'entry':<10} {'steps/s':>9} {'vs a2c':>7} {'vs env':>7}   (median of {args.rounds} rounds)")
    for entry, median in medians.items():
        vs_a2c = f"{median / medians['a2c']:.2f}" if "a2c" in medians else "-"
        vs_env = f"{median / medians['env_only']:.2f}" if "env_only" in medians else "-"
        print(f"{entry:<10} {median:9.1f} {vs_a2c:>7} {vs_env:>7}")

    result = {
        "command": "python benchmarks/throughput.py " + " ".join(f"{k}={v}" for k, v in vars(args).items() if k != "output"),
        "machine": {"cpus": len(os.sched_getaffinity(0)), "platform": platform.platform(), "torch": th.__version__},
        "steps_per_entry": args.steps,
        "a3c_entry": shipped_a3c_entry(),
        **({"a3c_cnn_entry": shipped_a3c_entry("a3c_cnn")} if "a3c_cnn" in args.entries else {}),
        "rounds": rates,
        "median_steps_per_second": medians,
    }
    write_result(args.output, result)


if __name__ == "__main__":
    main()
