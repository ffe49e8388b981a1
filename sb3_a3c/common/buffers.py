"""Rollout buffers and initial LSTM states for A3C workers and SyncA2C (SB3's and sb3-contrib's classes)."""

from typing import Any

import torch as th
from gymnasium import spaces
from sb3_contrib.common.recurrent.buffers import RecurrentDictRolloutBuffer, RecurrentRolloutBuffer
from sb3_contrib.common.recurrent.policies import RecurrentActorCriticPolicy
from sb3_contrib.common.recurrent.type_aliases import RNNStates
from stable_baselines3.common.buffers import DictRolloutBuffer, RolloutBuffer
from stable_baselines3.common.policies import ActorCriticPolicy


def make_rollout_buffer(
    policy: ActorCriticPolicy,
    n_steps: int,
    n_envs: int,
    gamma: float,
    gae_lambda: float,
    device: th.device,
    buffer_class: type[RolloutBuffer] | None = None,
    buffer_kwargs: dict[str, Any] | None = None,
) -> RolloutBuffer:
    """
    Create the SB3 rollout buffer that fits ``policy``: sb3-contrib's recurrent buffer for LSTM policies,
    otherwise ``buffer_class`` (SB3's ``rollout_buffer_class``; by default chosen as SB3 does).

    :param policy: the policy that will fill the buffer
    :param n_steps: steps per env in one rollout
    :param n_envs: number of envs stepped together
    :param gamma: discount factor
    :param gae_lambda: GAE lambda (1 gives the classic n-step advantage)
    :param device: where the samples are returned
    :param buffer_class: the buffer class for feed-forward policies (default: (Dict)RolloutBuffer by observation space)
    :param buffer_kwargs: more keyword arguments for ``buffer_class`` (SB3's ``rollout_buffer_kwargs``)
    """
    observation_and_action_spaces = (policy.observation_space, policy.action_space)
    settings = dict(gamma=gamma, gae_lambda=gae_lambda, n_envs=n_envs)
    dict_observations = isinstance(policy.observation_space, spaces.Dict)
    if isinstance(policy, RecurrentActorCriticPolicy):
        lstm = policy.lstm_actor
        hidden_state_shape = (n_steps, lstm.num_layers, n_envs, lstm.hidden_size)
        recurrent_class = RecurrentDictRolloutBuffer if dict_observations else RecurrentRolloutBuffer
        return recurrent_class(n_steps, *observation_and_action_spaces, hidden_state_shape, device, **settings)
    if buffer_class is None:
        buffer_class = DictRolloutBuffer if dict_observations else RolloutBuffer
    return buffer_class(n_steps, *observation_and_action_spaces, device, **settings, **(buffer_kwargs or {}))


def initial_lstm_states(policy: RecurrentActorCriticPolicy, n_envs: int, device: th.device) -> RNNStates:
    """Zero LSTM states for actor and critic, shaped as ``RecurrentPPO`` keeps them."""
    lstm = policy.lstm_actor
    shape = (lstm.num_layers, n_envs, lstm.hidden_size)
    return RNNStates(
        (th.zeros(shape, device=device), th.zeros(shape, device=device)),
        (th.zeros(shape, device=device), th.zeros(shape, device=device)),
    )
