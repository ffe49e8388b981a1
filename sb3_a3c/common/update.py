"""
The gradient of one advantage actor-critic update, as SB3's ``A2C.train()`` computes it. Each caller takes
its own optimizer step: ``SyncA2C.train`` on its policy, an A3C worker on the shared policy
(``sb3_a3c.a3c.worker.updates``).
"""

from dataclasses import dataclass
from typing import NamedTuple

import torch as th
from gymnasium import spaces
from sb3_contrib.common.recurrent.type_aliases import RecurrentDictRolloutBufferSamples, RecurrentRolloutBufferSamples
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.utils import explained_variance

RECURRENT_SAMPLES = (RecurrentRolloutBufferSamples, RecurrentDictRolloutBufferSamples)
# Ends the message of a NonFiniteLossError
_FIND_THE_STEP = "Check the env's rewards and observations (VecCheckNan(raise_exception=True) finds the step)."


class NonFiniteLossError(RuntimeError):
    """A NaN or infinite loss or gradient; no optimizer step was taken."""


@dataclass(frozen=True)
class UpdateSettings:
    """
    The hyperparameters of one update.

    :param ent_coef: entropy coefficient
    :param vf_coef: value function coefficient
    :param max_grad_norm: the gradient's norm is clipped to it
    :param normalize_advantage: normalise the rollout's advantages (not in the original algorithm)
    """

    ent_coef: float
    vf_coef: float
    max_grad_norm: float
    normalize_advantage: bool


class UpdateMetrics(NamedTuple):
    """What one update reports under SB3 A2C's ``train/*`` names."""

    policy_loss: float
    value_loss: float
    entropy_loss: float
    explained_variance: float
    # The norm of the gradient the optimizer stepped with, before clipping (NaN until it is clipped)
    grad_norm: float = float("nan")


def compute_gradients(policy: ActorCriticPolicy, rollout_buffer: RolloutBuffer, settings: UpdateSettings) -> UpdateMetrics:
    """
    Compute the A2C loss of the rollout in ``rollout_buffer`` on ``policy`` and leave its gradient (of this
    rollout only, not clipped) in the ``.grad`` of ``policy``'s parameters.

    :param policy: the policy the loss is computed on (an A3C worker's local copy of the shared policy)
    :param rollout_buffer: the rollout, with returns and advantages computed
    :param settings: the update's hyperparameters
    :return: the loss terms and the explained variance (``grad_norm``: NaN, the caller clips)
    :raises NonFiniteLossError: when the loss is not finite
    """
    # Switch to train mode (this affects batch norm / dropout)
    policy.set_training_mode(True)

    # This will only loop once (get all data in one go)
    rollout_data = next(rollout_buffer.get(batch_size=None))
    actions = rollout_data.actions
    if isinstance(policy.action_space, spaces.Discrete):
        # Convert discrete action from float to long
        actions = actions.long().flatten()

    if isinstance(rollout_data, RECURRENT_SAMPLES):
        # The LSTM re-runs from the states stored at each sequence's start; padding steps do not count
        values, log_prob, entropy = policy.evaluate_actions(  # type: ignore[call-arg]
            rollout_data.observations, actions, rollout_data.lstm_states, rollout_data.episode_starts
        )
        mask = rollout_data.mask > 1e-8
    else:
        values, log_prob, entropy = policy.evaluate_actions(rollout_data.observations, actions)
        mask = th.ones_like(rollout_data.returns, dtype=th.bool)
    values = values.flatten()

    # Normalize advantage (not present in the original implementation)
    advantages = rollout_data.advantages
    if settings.normalize_advantage:
        advantages = (advantages - advantages[mask].mean()) / (advantages[mask].std() + 1e-8)

    # Policy gradient loss
    policy_loss = -(advantages * log_prob)[mask].mean()

    # Value loss using the TD(gae_lambda) target
    value_loss = ((rollout_data.returns - values) ** 2)[mask].mean()

    # Entropy loss favor exploration (approximate entropy when no analytical form)
    entropy_loss = -(entropy[mask] if entropy is not None else -log_prob[mask]).mean()

    loss = policy_loss + settings.ent_coef * entropy_loss + settings.vf_coef * value_loss
    if not th.isfinite(loss):
        raise NonFiniteLossError(f"non-finite loss ({loss.item()}); no optimizer step was taken. {_FIND_THE_STEP}")

    # The gradient of this rollout only: the classic PyTorch A3C code did not clear the local gradients,
    # so under torch >= 2 they summed up over all past updates
    policy.zero_grad(set_to_none=True)
    loss.backward()

    return UpdateMetrics(
        policy_loss=policy_loss.item(),
        value_loss=value_loss.item(),
        entropy_loss=entropy_loss.item(),
        explained_variance=float(explained_variance(rollout_buffer.values.flatten(), rollout_buffer.returns.flatten())),
    )


def clip_gradients(policy: th.nn.Module, max_grad_norm: float) -> float:
    """
    Clip the gradient of ``policy``'s parameters to the norm ``max_grad_norm`` (``th.nn.utils.clip_grad_norm_``).

    :return: the gradient's norm before clipping
    :raises NonFiniteLossError: when that norm is not finite (the caller then takes no optimizer step)
    """
    grad_norm = th.nn.utils.clip_grad_norm_(policy.parameters(), max_grad_norm)
    if not th.isfinite(grad_norm):
        raise NonFiniteLossError(
            f"non-finite gradient norm ({grad_norm.item()}); no optimizer step was taken. {_FIND_THE_STEP}"
        )
    return grad_norm.item()
