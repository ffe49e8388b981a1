"""Rollout collection for one A3C actor-learner, reusing SB3's and sb3-contrib's ``collect_rollouts``."""

from typing import Any

import numpy as np
import torch as th
from sb3_contrib.common.recurrent.policies import RecurrentActorCriticPolicy
from sb3_contrib.ppo_recurrent import RecurrentPPO
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.vec_env import VecEnv

from sb3_a3c.common.buffers import initial_lstm_states, make_rollout_buffer

# Keys of a finished episode's ``info`` that the main process needs (episode statistics, success)
EPISODE_INFO_KEYS = ("episode", "is_success", "TimeLimit.truncated")

# The attributes of ``self`` that SB3's ``OnPolicyAlgorithm.collect_rollouts`` and sb3-contrib's
# ``RecurrentPPO.collect_rollouts`` read or write (private ones included). ``RolloutCollector`` provides
# each of them; tests/test_rollout_collector.py fails when a new SB3 release uses another one.
COLLECT_ROLLOUTS_ATTRIBUTES = frozenset(
    {
        "_last_episode_starts",
        "_last_lstm_states",
        "_last_obs",
        "_update_info_buffer",
        "action_space",
        "device",
        "gamma",
        "num_timesteps",
        "policy",
        "sde_sample_freq",
        "use_sde",
    }
)


class _NoCallback:
    """Stands in for the callback ``collect_rollouts`` expects: worker steps report to the main process instead."""

    def on_rollout_start(self) -> None:
        pass

    def update_locals(self, locals_: dict[str, Any]) -> None:
        pass

    def on_step(self) -> bool:
        return True

    def on_rollout_end(self) -> None:
        pass


class RolloutCollector:
    """
    The state SB3's ``collect_rollouts`` reads and writes, for one actor-learner and its environment.

    ``collect()`` calls ``OnPolicyAlgorithm.collect_rollouts`` (``RecurrentPPO.collect_rollouts`` for
    LSTM policies) on this object, so action clipping, time-limit bootstrapping, LSTM state carrying
    and the GAE of the buffer are exactly SB3's. The attributes those functions use are listed in
    ``COLLECT_ROLLOUTS_ATTRIBUTES``.

    :param policy: the policy that acts (the worker's local copy)
    :param env: the environment it steps
    :param n_steps: transitions per rollout and env
    :param gamma: discount factor
    :param gae_lambda: GAE lambda
    :param use_sde: whether to use generalized State Dependent Exploration
    :param sde_sample_freq: sample a new gSDE noise matrix every n steps (-1: once per rollout)
    """

    device = th.device("cpu")

    def __init__(
        self,
        policy: ActorCriticPolicy,
        env: VecEnv,
        n_steps: int,
        gamma: float,
        gae_lambda: float,
        use_sde: bool = False,
        sde_sample_freq: int = -1,
    ) -> None:
        self.policy = policy
        self.env = env
        self.n_steps = n_steps
        self.gamma = gamma
        self.use_sde = use_sde
        self.sde_sample_freq = sde_sample_freq
        self.action_space = env.action_space
        self.num_timesteps = 0
        self.recurrent = isinstance(policy, RecurrentActorCriticPolicy)
        self.rollout_buffer = make_rollout_buffer(policy, n_steps, env.num_envs, gamma, gae_lambda, self.device)
        self._last_obs = env.reset()
        self._last_episode_starts = np.ones((env.num_envs,), dtype=bool)
        self._last_lstm_states = initial_lstm_states(policy, env.num_envs, self.device) if self.recurrent else None  # type: ignore[arg-type]
        self._collect_rollouts = RecurrentPPO.collect_rollouts if self.recurrent else OnPolicyAlgorithm.collect_rollouts
        self._callback = _NoCallback()
        self.finished_episode_infos: list[dict[str, Any]] = []

    def collect(self) -> list[dict[str, Any]]:
        """
        Fill the rollout buffer with ``n_steps`` transitions per env and compute returns and advantages.

        :return: the ``info`` (episode statistics) of each episode that ended during the rollout
        """
        self.finished_episode_infos = []
        self._collect_rollouts(self, self.env, self._callback, self.rollout_buffer, self.n_steps)  # type: ignore[arg-type]
        return self.finished_episode_infos

    def _update_info_buffer(self, infos: list[dict[str, Any]], dones: np.ndarray | None = None) -> None:
        """Called by ``collect_rollouts`` after each step: keep what the main process logs of finished episodes."""
        if dones is None:
            return
        for info, done in zip(infos, dones):
            if done:
                self.finished_episode_infos.append({key: info[key] for key in EPISODE_INFO_KEYS if key in info})
