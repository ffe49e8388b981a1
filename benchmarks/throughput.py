"""
Steps per second on PongNoFrameskip-v4, measured side by side in one run: each variant trains for the same budget of
env steps, one variant at a time, in ``--rounds`` rounds (every other round in reverse order); the table gives the
median of the rounds and the ratio to SB3's A2C and to the env-only speed measured in the same run.

    python benchmarks/throughput.py --variants env_only a2c a3c a3c_cnn --steps 20000 --rounds 3
    python benchmarks/throughput.py --variants a3c:n_envs=4 a3c a3c:n_envs=16 --output /tmp/envs_per_worker.json
    python benchmarks/throughput.py --variants a3c:n_workers=4 a3c_cnn --dry-run

Variants:
  env_only   random actions in as many processes as the shipped A3C entry has workers, with SB3's AtariWrapper
             (84x84 frames), no learning: the machine's speed (the reference machine: 4600 steps/s)
  a2c        SB3 A2C with the RL Zoo's Atari hyperparameters (16 envs, CnnPolicy, frame stack 4)
  sync_a2c   SyncA2C with the same network, envs and hyperparameters as ``a2c``
  a3c        A3C with the shipped ``hyperparams/a3c.yml`` Atari entry (envs, wrappers, policy, workers and
             hyperparameters, built as the RL Zoo builds them): the A3C-LSTM agent
  a3c_cnn    the same with the shipped ``hyperparams/a3c_cnn.yml`` Atari entry (feed-forward, 4 stacked frames)
  a3c:KEY=VALUE,...  an A3C variant with the entry's values replaced, as the Zoo's ``--hyperparams`` does
             (``n_envs``, ``n_workers``, ``n_steps``, ``policy``, ...); also ``a3c_cnn:KEY=VALUE,...``
  a3c_sequence_acting  ``a3c`` with the workers acting through sb3-contrib's ``forward`` (the LSTM run as a
             sequence, a distribution object per step) in place of the policy's one-step path
  evaluation the Zoo's evaluation of the ``a3c`` entry's policy, as its EvalCallback runs it in the main process:
             ``model.predict`` one step at a time on one env (sampled actions, one torch thread), env steps included;
             its steps/s are per second of the process's CPU time
  evaluation_contrib_predict  the same with sb3-contrib's ``predict`` (module walk, transposition checks, state
             copies at every call) around the policy's one-step ``_predict``
  evaluation_sequence_path  the same with sb3-contrib's ``predict`` and ``_predict`` (the LSTM run as a sequence, a
             distribution object per step) in place of the policy's own
  evaluation_onednn  ``evaluation`` with the convolutions run by the extractor's ``forward`` (oneDNN) in place of
             ``acting_convolutions`` (channels-last weights, no oneDNN)
"""

import ast
import functools
import importlib.resources
import multiprocessing
import os
import platform
import time
import unittest.mock
from collections.abc import Callable
from typing import Any

import ale_py
import gymnasium as gym
import numpy as np
import rl_zoo3.exp_manager
import torch as th
import yaml
from result_files import alternating_rounds, median_of_rounds, rounds_parser, write_result
from rl_zoo3.utils import get_wrapper_class, linear_schedule
from sb3_contrib.common.recurrent.policies import RecurrentActorCriticPolicy
from stable_baselines3 import A2C
from stable_baselines3.common.atari_wrappers import AtariWrapper
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.env_util import make_atari_env, make_vec_env
from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike
from stable_baselines3.common.vec_env import VecFrameStack

from sb3_a3c import A3C, SyncA2C
from sb3_a3c.common.torch_layers import ConvolutionsThenDense

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
    """Random actions in one process per A3C worker, ``steps`` steps in all; returns wall-clock seconds."""
    entry = shipped_a3c_entry()
    workers = entry.get("n_workers") or entry["n_envs"]
    return time_in_worker_processes(_random_stepping, [(steps // workers, rank) for rank in range(workers)])


def make_shipped_a3c(seed: int = 0, algo: str = "a3c", **overrides: Any) -> A3C:
    """
    A3C on Pong with the shipped Zoo entry: its envs, wrappers, policy, workers and hyperparameters.

    :param seed: seed of the envs and the model
    :param algo: the Zoo name whose hyperparameter file holds the entry ("a3c" or "a3c_cnn")
    :param overrides: values to use instead of the entry's, as ``--hyperparams`` on the Zoo command (``n_envs`` and
        ``policy`` included)
    """
    entry = {**shipped_a3c_entry(algo), **overrides}
    env = make_vec_env(ENV_ID, n_envs=entry["n_envs"], seed=seed, wrapper_class=get_wrapper_class(entry))
    if entry.get("frame_stack"):
        env = VecFrameStack(env, n_stack=entry["frame_stack"])
    hyperparameters = {key: value for key, value in entry.items() if key not in ZOO_ENV_KEYS}
    for key, value in hyperparameters.items():
        if isinstance(value, str) and value.startswith("lin_"):
            hyperparameters[key] = linear_schedule(float(value.removeprefix("lin_")))
    if isinstance(hyperparameters.get("policy_kwargs"), str):
        # As the Zoo evaluates it: in rl_zoo3.exp_manager's namespace, where sb3-a3c adds RMSpropFromOne
        hyperparameters["policy_kwargs"] = eval(hyperparameters["policy_kwargs"], vars(rl_zoo3.exp_manager))
    return A3C(entry["policy"], env, seed=seed, **hyperparameters)


def parse_variant(variant: str) -> tuple[str, dict[str, Any]]:
    """``NAME`` or ``NAME:KEY=VALUE,...`` -> (NAME, overrides); values are Python literals, else strings."""
    name, _, assignments = variant.partition(":")
    overrides: dict[str, Any] = {}
    for assignment in filter(None, assignments.split(",")):
        key, _, text = assignment.partition("=")
        try:
            overrides[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            overrides[key] = text
    if name not in RUNNERS or (overrides and name not in ("a3c", "a3c_cnn")):
        raise ValueError(f"unknown variant {variant!r}: {', '.join(RUNNERS)}, or a3c/a3c_cnn with :KEY=VALUE,...")
    return name, overrides


def build(name: str, overrides: dict[str, Any]) -> None:
    """Build a variant's model (its envs and policy) without stepping it: what ``--dry-run`` checks."""
    if name == "a2c":
        A2C("CnnPolicy", VecFrameStack(make_atari_env(ENV_ID, n_envs=16, seed=0), n_stack=4), **ZOO_A2C_ATARI)
    elif name == "sync_a2c":
        SyncA2C("CnnPolicy", VecFrameStack(make_atari_env(ENV_ID, n_envs=16, seed=0), n_stack=4), **ZOO_A2C_ATARI)
    elif name in ("a3c", "a3c_cnn"):
        make_shipped_a3c(algo=name, **overrides)


def _timed_learn(model: BaseAlgorithm, steps: int) -> float:
    start = time.perf_counter()
    model.learn(steps)
    return time.perf_counter() - start


def a2c(steps: int) -> float:
    env = VecFrameStack(make_atari_env(ENV_ID, n_envs=16, seed=0), n_stack=4)
    return _timed_learn(A2C("CnnPolicy", env, device="cpu", seed=0, **ZOO_A2C_ATARI), steps)


def sync_a2c(steps: int) -> float:
    env = VecFrameStack(make_atari_env(ENV_ID, n_envs=16, seed=0), n_stack=4)
    return _timed_learn(SyncA2C("CnnPolicy", env, device="cpu", seed=0, **ZOO_A2C_ATARI), steps)


def a3c(steps: int, algo: str = "a3c", **overrides: Any) -> float:
    model = make_shipped_a3c(algo=algo, **overrides)
    model.learn(500)  # fork and first allocations are not counted
    return _timed_learn(model, steps)


def a3c_cnn(steps: int, **overrides: Any) -> float:
    return a3c(steps, algo="a3c_cnn", **overrides)


def a3c_sequence_acting(steps: int) -> float:
    model = make_shipped_a3c()
    # The forked workers' local policies are built from the same class: they act through sb3-contrib's path
    policy_class = type(model.policy)
    one_step_forward = policy_class.forward
    policy_class.forward = RecurrentActorCriticPolicy.forward
    try:
        model.learn(500)
        return _timed_learn(model, steps)
    finally:
        policy_class.forward = one_step_forward


def evaluation(steps: int, contrib_predict: bool = False, sequence_path: bool = False) -> float:
    """``steps`` steps of the Zoo's evaluation of the shipped LSTM agent; returns the process's CPU seconds."""
    model = make_shipped_a3c()
    if contrib_predict or sequence_path:
        model.policy.predict = functools.partial(RecurrentActorCriticPolicy.predict, model.policy)
    if sequence_path:
        model.policy._predict = functools.partial(RecurrentActorCriticPolicy._predict, model.policy)
    env = make_vec_env(ENV_ID, n_envs=1, seed=1, wrapper_class=get_wrapper_class(shipped_a3c_entry()))
    threads = th.get_num_threads()
    th.set_num_threads(1)
    observation, state, episode_start = env.reset(), None, np.ones((1,), dtype=bool)
    start = time.process_time()
    for _ in range(steps):
        action, state = model.predict(observation, state, episode_start, deterministic=False)
        observation, _, episode_start, _ = env.step(action)
    seconds = time.process_time() - start
    th.set_num_threads(threads)
    return seconds


def evaluation_contrib_predict(steps: int) -> float:
    return evaluation(steps, contrib_predict=True)


def evaluation_sequence_path(steps: int) -> float:
    return evaluation(steps, sequence_path=True)


def evaluation_onednn(steps: int) -> float:
    with unittest.mock.patch.object(ConvolutionsThenDense, "forward_for_acting", ConvolutionsThenDense.forward):
        return evaluation(steps)


RUNNERS: dict[str, Callable[..., float]] = {
    "env_only": env_only,
    "a2c": a2c,
    "sync_a2c": sync_a2c,
    "a3c": a3c,
    "a3c_cnn": a3c_cnn,
    "a3c_sequence_acting": a3c_sequence_acting,
    "evaluation": evaluation,
    "evaluation_contrib_predict": evaluation_contrib_predict,
    "evaluation_sequence_path": evaluation_sequence_path,
    "evaluation_onednn": evaluation_onednn,
}


def main() -> None:
    parser = rounds_parser(__doc__, "throughput")
    parser.add_argument("--variants", nargs="+", default=["env_only", "a2c", "a3c", "a3c_cnn"])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--dry-run", action="store_true", help="build each variant's model, step nothing, write nothing")
    args = parser.parse_args()
    try:
        variants = {variant: parse_variant(variant) for variant in args.variants}
    except ValueError as error:
        parser.error(str(error))
    if args.dry_run:
        for variant, (name, overrides) in variants.items():
            build(name, overrides)
            print(f"{variant}: built")
        return

    rates: dict[str, list[float]] = {variant: [] for variant in variants}
    for round_index, variant in alternating_rounds(list(variants), args.rounds):
        name, overrides = variants[variant]
        rates[variant].append(args.steps / RUNNERS[name](args.steps, **overrides))
        print(f"round {round_index + 1}: {variant:<24} {rates[variant][-1]:8.1f} steps/s", flush=True)

    medians = median_of_rounds(rates)
    print(f"\n{'variant':<24} {'steps/s':>9} {'vs a2c':>7} {'vs env':>7}   (median of {args.rounds} rounds)")
    for variant, median in medians.items():
        vs_a2c = f"{median / medians['a2c']:.2f}" if "a2c" in medians else "-"
        vs_env = f"{median / medians['env_only']:.2f}" if "env_only" in medians else "-"
        print(f"{variant:<24} {median:9.1f} {vs_a2c:>7} {vs_env:>7}")
    write_result(
        args.output,
        {
            "command": f"python benchmarks/throughput.py --variants {' '.join(args.variants)} --steps {args.steps}"
            f" --rounds {args.rounds}",
            "machine": {"cpus": len(os.sched_getaffinity(0)), "platform": platform.platform(), "torch": th.__version__},
            "steps_per_variant": args.steps,
            "a3c_entry": shipped_a3c_entry(),
            "a3c_cnn_entry": shipped_a3c_entry("a3c_cnn"),
            "rounds": rates,
            "median_steps_per_second": medians,
        },
    )


if __name__ == "__main__":
    main()
