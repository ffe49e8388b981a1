"""The advantage actor-critic loss, shared by A3C workers and SyncA2C."""

from typing import NamedTuple

import torch as th
from gymnasium import spaces
from sb3_contrib.common.recurrent.type_aliases import RecurrentDictRolloutBufferSamples, RecurrentRolloutBufferSamples
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.type_aliases import DictRolloutBufferSamples, RolloutBufferSamples


class ActorCriticLoss(NamedTuple):
    """The loss to minimise and its terms (detached terms are for logging)."""

    loss: th.Tensor
    policy_loss: float
    value_loss: float
    entropy_loss: float


def actor_critic_loss(
    policy: ActorCriticPolicy,
    rollout_data: RolloutBufferSamples
    | DictRolloutBufferSamples
    | RecurrentRolloutBufferSamples
    | RecurrentDictRolloutBufferSamples,
    action_space: spaces.Space,
    ent_coef: float,
    vf_coef: float,
    normalize_advantage: bool = False,
) -> ActorCriticLoss:
    """
    Compute ``policy_loss + ent_coef * entropy_loss + vf_coef * value_loss`` on one batch, as SB3's A2C does.

    For recurrent samples the LSTM is re-run from the states stored at the start of each sequence
    (truncated backpropagation through time) and padded steps are masked out.

    :param policy: the policy whose parameters receive the gradient
    :param rollout_data: all samples of a rollout buffer, from ``buffer.get(batch_size=None)``
    :param action_space: the env's action space (discrete actions are stored as floats)
    :param ent_coef: entropy coefficient
    :param vf_coef: value function coefficient
    :param normalize_advantage: normalise the advantages of the batch (not in the original algorithm)
    :return: the loss and its terms
    """
    actions = rollout_data.actions
    if isinstance(action_space, spaces.Discrete):
        # Convert discrete action from float to long
        actions = actions.long().flatten()

    if isinstance(rollout_data, (RecurrentRolloutBufferSamples, RecurrentDictRolloutBufferSamples)):
        values, log_prob, entropy = policy.evaluate_actions(  # type: ignore[call-arg]
            rollout_data.observations, actions, rollout_data.lstm_states, rollout_data.episode_starts
        )
        # Padding added to make sequences of equal length does not count
        mask = rollout_data.mask > 1e-8
    else:
        values, log_prob, entropy = policy.evaluate_actions(rollout_data.observations, actions)
        mask = th.ones_like(rollout_data.returns, dtype=th.bool)
    values = values.flatten()

    advantages = rollout_data.advantages
    if normalize_advantage:
        advantages = (advantages - advantages[mask].mean()) / (advantages[mask].std() + 1e-8)

    # Policy gradient loss
    policy_loss = -(advantages * log_prob)[mask].mean()

    # Value loss using the TD(gae_lambda) target
    value_loss = ((rollout_data.returns - values) ** 2)[mask].mean()

    # Entropy loss favors exploration
    if entropy is None:
        # Approximate entropy when no analytical form
        entropy_loss = -(-log_prob[mask]).mean()
    else:
        entropy_loss = -entropy[mask].mean()

    loss = policy_loss + ent_coef * entropy_loss + vf_coef * value_loss
    return ActorCriticLoss(loss, policy_loss.item(), value_loss.item(), entropy_loss.item())
