"""Envs whose ``info`` says which env stepped and how far, so tests can follow every env step by step."""

import multiprocessing
import threading

import gymnasium as gym
import numpy as np
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv


class CountingEnv(gym.Env):
    """
    Episodes of exactly ``episode_length`` steps with reward 1. ``info`` holds ``env_index``, ``episode_step``
    (1 to ``episode_length``) and ``lifetime_step`` (steps since the env was built, never reset). The
    observation is the episode's progress. ``steps_taken`` (a shared counter, optional) counts every step
    in every process, forked workers included.
    """

    observation_space = gym.spaces.Box(0.0, 1.0, (1,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, env_index: int, episode_length: int, steps_taken=None) -> None:
        self.env_index = env_index
        self.episode_length = episode_length
        self.steps_taken = steps_taken
        self.episode_step = 0
        self.lifetime_step = 0

    def _observation(self) -> np.ndarray:
        return np.array([self.episode_step / self.episode_length], dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.episode_step = 0
        return self._observation(), {}

    def step(self, action):
        self.episode_step += 1
        self.lifetime_step += 1
        if self.steps_taken is not None:
            with self.steps_taken.get_lock():
                self.steps_taken.value += 1
        info = {"env_index": self.env_index, "episode_step": self.episode_step, "lifetime_step": self.lifetime_step}
        return self._observation(), 1.0, self.episode_step >= self.episode_length, False, info


class UnpicklableCountingEnv(CountingEnv):
    """A ``CountingEnv`` holding a lock, as envs with a connection or a thread do: it cannot be pickled."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.lock = threading.Lock()


def counting_vec_env(
    n_envs: int,
    episode_length: int,
    steps_taken=None,
    monitor_dir: str | None = None,
    env_class: type[CountingEnv] = CountingEnv,
) -> DummyVecEnv:
    """``n_envs`` Monitor-wrapped ``CountingEnv``s (Monitor CSVs in ``monitor_dir`` when given)."""

    def make(index: int):
        filename = None if monitor_dir is None else f"{monitor_dir}/{index}"
        return lambda: Monitor(env_class(index, episode_length, steps_taken), filename=filename)

    return DummyVecEnv([make(index) for index in range(n_envs)])


def shared_step_counter():
    """A counter that forked worker processes can increment (create it before ``learn()``)."""
    return multiprocessing.get_context("fork").Value("q", 0)
