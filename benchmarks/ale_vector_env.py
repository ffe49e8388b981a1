"""
What ale-py's ``AtariVectorEnv`` (C++ frame skip, max-pool, resize and frame stack) would give an A3C worker
on PongNoFrameskip-v4, against SB3's ``AtariWrapper`` + ``VecFrameStack`` that the Zoo builds.

Each variant runs in as many forked processes as the shipped A3C entry has workers (one torch thread each),
every process with its share of the entry's envs, and the sequence is repeated ``--rounds`` times:

  env_only      random actions, no network
  worker_loop   an A3C worker's compute without its shared memory: the entry's policy acts on every step,
                and every ``n_steps`` steps the loss of those samples is back-propagated and RMSprop steps

The ratio of ``worker_loop`` rates is the most that moving A3C's workers to ``AtariVectorEnv`` can speed
up training (the worker's reports, parameter sync and lock are left out, so it slightly overstates it).

    python benchmarks/ale_vector_env.py --steps 20000 --rounds 3
"""

import platform
import time
from collections.abc import Callable

import ale_py
import gymnasium as gym
import numpy as np
import torch as th
from ale_py.vector_env import AtariVectorEnv
from result_files import alternating_rounds, median_of_rounds, rounds_parser, write_result
from stable_baselines3.common.env_util import make_atari_env
from stable_baselines3.common.vec_env import VecFrameStack, VecTransposeImage
from throughput import ENV_ID, shipped_a3c_entry, time_in_worker_processes

from sb3_a3c import A3C

gym.register_envs(ale_py)


class SB3AtariEnvs:
    """SB3's Atari stack as the Zoo builds it (``AtariWrapper`` per env, ``VecFrameStack``, channels first)."""

    def __init__(self, n_envs: int, seed: int) -> None:
        self.venv = VecTransposeImage(VecFrameStack(make_atari_env(ENV_ID, n_envs=n_envs, seed=seed), n_stack=4))
        self.observation_space = self.venv.observation_space
        self.action_space = self.venv.action_space

    def reset(self) -> np.ndarray:
        return self.venv.reset()

    def step(self, actions: np.ndarray) -> np.ndarray:
        return self.venv.step(actions)[0]


class AleVectorEnvs:
    """ale-py's ``AtariVectorEnv`` with ``AtariWrapper``'s settings (episodic life, clipped rewards, noop and fire resets)."""

    def __init__(self, n_envs: int, seed: int) -> None:
        self.env = AtariVectorEnv(
            "pong", n_envs, num_threads=1, episodic_life=True, reward_clipping=True, autoreset_mode="SameStep"
        )
        self.seed = seed
        self.observation_space = gym.spaces.Box(0, 255, self.env.single_observation_space.shape, np.uint8)
        self.action_space = self.env.single_action_space

    def reset(self) -> np.ndarray:
        return self.env.reset(seed=self.seed)[0]

    def step(self, actions: np.ndarray) -> np.ndarray:
        return self.env.step(actions)[0]


ENV_SOURCES: dict[str, Callable[[int, int], SB3AtariEnvs | AleVectorEnvs]] = {
    "sb3_atari_wrapper": SB3AtariEnvs,
    "ale_vector_env": AleVectorEnvs,
}


def _env_only(envs: SB3AtariEnvs | AleVectorEnvs, n_steps: int) -> None:
    rng = np.random.default_rng(0)
    n_envs = len(envs.reset())
    for _ in range(n_steps // n_envs):
        envs.step(rng.integers(envs.action_space.n, size=n_envs))


def _worker_loop(envs: SB3AtariEnvs | AleVectorEnvs, n_steps: int) -> None:
    entry = shipped_a3c_entry()
    policy_class = A3C.policy_aliases[entry["policy"]]
    policy = policy_class(envs.observation_space, envs.action_space, lambda _: entry["learning_rate"])
    optimizer = th.optim.RMSprop(policy.parameters(), lr=entry["learning_rate"], alpha=0.99, eps=1e-5)
    obs = envs.reset()
    n_envs = len(obs)
    rollout_steps = entry["n_steps"]
    for _ in range(n_steps // (n_envs * rollout_steps)):
        observations, actions = [], []
        for _ in range(rollout_steps):
            obs_tensor = policy.obs_to_tensor(obs)[0]
            with th.no_grad():
                action, _, _ = policy(obs_tensor)
            observations.append(obs_tensor)
            actions.append(action)
            obs = envs.step(action.numpy())
        values, log_prob, entropy = policy.evaluate_actions(th.cat(observations), th.cat(actions))
        advantages = th.randn_like(log_prob)  # the returns do not change the cost of the update
        loss = -(advantages * log_prob).mean() + entry["vf_coef"] * values.pow(2).mean() - entry["ent_coef"] * entropy.mean()
        optimizer.zero_grad()
        loss.backward()
        th.nn.utils.clip_grad_norm_(policy.parameters(), entry["max_grad_norm"])
        optimizer.step()


MODES = {"env_only": _env_only, "worker_loop": _worker_loop}


def _run_process(mode: str, source: str, n_envs: int, n_steps: int, seed: int) -> None:
    th.set_num_threads(1)
    MODES[mode](ENV_SOURCES[source](n_envs, seed), n_steps)


def measure(mode: str, source: str, steps: int) -> float:
    """Steps per second of ``mode`` with ``source`` envs in one process per worker of the shipped entry."""
    entry = shipped_a3c_entry()
    workers = entry.get("n_workers") or entry["n_envs"]
    args_by_rank = [(mode, source, entry["n_envs"] // workers, steps // workers, rank) for rank in range(workers)]
    return steps / time_in_worker_processes(_run_process, args_by_rank)


def main() -> None:
    parser = rounds_parser(__doc__, "ale_vector_env")
    parser.add_argument("--steps", type=int, default=20_000, help="env steps per variant and round, all workers together")
    args = parser.parse_args()

    variants = [(mode, source) for mode in MODES for source in ENV_SOURCES]
    rates: dict[str, list[float]] = {f"{mode} {source}": [] for mode, source in variants}
    for round_index, (mode, source) in alternating_rounds(variants, args.rounds):
        rate = measure(mode, source, args.steps)
        rates[f"{mode} {source}"].append(round(rate, 1))
        print(f"round {round_index}: {mode:<12} {source:<18} {rate:8.1f} steps/s", flush=True)
    medians = median_of_rounds(rates)
    ratios = {mode: round(medians[f"{mode} ale_vector_env"] / medians[f"{mode} sb3_atari_wrapper"], 2) for mode in MODES}
    for mode, ratio in ratios.items():
        print(f"{mode}: ale_vector_env / sb3_atari_wrapper = {ratio}")
    write_result(
        args.output,
        {
            "command": f"python benchmarks/ale_vector_env.py --steps {args.steps} --rounds {args.rounds}",
            "date": time.strftime("%Y-%m-%d"),
            "machine": platform.processor() or platform.machine(),
            "steps_per_second_rounds": rates,
            "steps_per_second_median": medians,
            "ratio_ale_vector_env_to_sb3_atari_wrapper": ratios,
        },
    )


if __name__ == "__main__":
    main()
