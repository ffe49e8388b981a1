"""Rollout buffers and initial LSTM states for A3C workers and SyncA2C (SB3's and sb3-contrib's classes)."""

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
