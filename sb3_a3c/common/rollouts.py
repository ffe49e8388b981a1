"""Rollout collection for one actor-learner, reusing SB3's and sb3-contrib's ``collect_rollouts``."""

from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib.common.recurrent.buffers import RecurrentDictRolloutBuffer, RecurrentRolloutBuffer
from sb3_contrib.common.recurrent.policies import RecurrentActorCriticPolicy
from sb3_contrib.common.recurrent.type_aliases import RNNStates
from sb3_contrib.ppo_recurrent import RecurrentPPO
from stable_baselines3.common.buffers import DictRolloutBuffer, RolloutBuffer
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.vec_env import VecEnv

# Keys of a finished episode's ``info`` that the main process needs (episode statistics, success)
EPISODE_INFO_KEYS = ("episode", "is_success", "TimeLimit.truncated")


def make_rollout_buffer(
    policy: ActorCriticPolicy,
    n_steps: int,
    n_envs: int,
    gamma: float,
    gae_lambda: float,
    device: th.device,
) -> RolloutBuffer:
    """
    Create the SB3 rollout buffer that fits ``policy``: sb3-contrib's recurrent buffer for LSTM policies.

    :param policy: the policy that will fill the buffer
    :param n_steps: steps per env in one rollout
    :param n_envs: number of envs stepped together
    :param gamma: discount factor
    :param gae_lambda: GAE lambda (1 gives the classic n-step advantage)
    :param device: where the samples are returned
    """
    observation_space, action_space = policy.observation_space, policy.action_space
    if isinstance(policy, RecurrentActorCriticPolicy):
        lstm = policy.lstm_actor
        hidden_state_shape = (n_steps, lstm.num_layers, n_envs, lstm.hidden_size)
        buffer_class = RecurrentDictRolloutBuffer if isinstance(observation_space, spaces.Dict) else RecurrentRolloutBuffer
        return buffer_class(
            n_steps,
            observation_space,
            action_space,
            hidden_state_shape,
            device,
            gamma=gamma,
            gae_lambda=gae_lambda,
            n_envs=n_envs,
        )
    buffer_class = DictRolloutBuffer if isinstance(observation_space, spaces.Dict) else RolloutBuffer
    return buffer_class(n_steps, observation_space, action_space, device, gamma=gamma, gae_lambda=gae_lambda, n_envs=n_envs)


def initial_lstm_states(policy: RecurrentActorCriticPolicy, n_envs: int, device: th.device) -> RNNStates:
    """Zero LSTM states for actor and critic, shaped as ``RecurrentPPO`` keeps them."""
    lstm = policy.lstm_actor
    shape = (lstm.num_layers, n_envs, lstm.hidden_size)
    return RNNStates(
        (th.zeros(shape, device=device), th.zeros(shape, device=device)),
        (th.zeros(shape, device=device), th.zeros(shape, device=device)),
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
    and the GAE of the buffer are exactly SB3's.

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
        if self.recurrent:
            self._last_lstm_states = initial_lstm_states(policy, env.num_envs, self.device)  # type: ignore[arg-type]
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
