"""
One advantage actor-critic update, the maths of ``A2C.train()``: the loss of a rollout, its gradient, the
optimizer step. ``SyncA2C.train`` applies it to its own policy; an A3C worker computes it on its local copy
and applies it to the shared policy (``sb3_a3c.a3c.actor_learner``).
"""

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import NamedTuple

import torch as th
from gymnasium import spaces
from sb3_contrib.common.recurrent.type_aliases import RecurrentDictRolloutBufferSamples, RecurrentRolloutBufferSamples
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.utils import explained_variance, update_learning_rate

RECURRENT_SAMPLES = (RecurrentRolloutBufferSamples, RecurrentDictRolloutBufferSamples)


class NonFiniteLossError(RuntimeError):
    """A NaN or infinite loss or gradient; the optimizer's parameters were left untouched."""


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
    grad_norm: float


def apply_update(
    policy: ActorCriticPolicy,
    rollout_buffer: RolloutBuffer,
    settings: UpdateSettings,
    learning_rate: float,
    apply_to: ActorCriticPolicy | None,
    update_lock: AbstractContextManager | None = None,
) -> UpdateMetrics:
    """
    Compute the A2C loss of the rollout in ``rollout_buffer`` on ``policy`` and apply its gradient (and
    nothing else) with ``apply_to.optimizer``.

    :param policy: the policy the loss is computed on (an A3C worker's local copy of the shared policy)
    :param rollout_buffer: the rollout, with returns and advantages computed
    :param settings: the update's hyperparameters
    :param learning_rate: the learning rate of this step
    :param apply_to: the policy whose optimizer takes the step: ``policy`` itself, or the shared policy
        (``policy`` hands it its gradient); None: no step, the clipped gradient is left in ``policy``'s ``.grad``
    :param update_lock: held during the optimizer step, so that a checkpoint never holds half an update (None: no lock)
    :raises NonFiniteLossError: when the loss or the gradient is not finite (no step is taken)
    """
    policy.set_training_mode(True)
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

    # Entropy loss favors exploration (approximated by -log_prob when there is no analytical form)
    entropy_loss = -(entropy[mask] if entropy is not None else -log_prob[mask]).mean()

    loss = policy_loss + settings.ent_coef * entropy_loss + settings.vf_coef * value_loss

    # The gradient of this rollout only: the classic PyTorch A3C code did not clear the local gradients,
    # so under torch >= 2 they summed up over all past updates
    policy.zero_grad(set_to_none=True)
    loss.backward()

    # Clip grad norm; a non-finite loss or gradient never reaches the optimizer
    grad_norm = th.nn.utils.clip_grad_norm_(policy.parameters(), settings.max_grad_norm)
    if not (th.isfinite(loss) and th.isfinite(grad_norm)):
        parameters = "parameters" if apply_to is policy else "shared parameters"
        raise NonFiniteLossError(
            f"non-finite loss ({loss.item()}) or gradient norm ({grad_norm.item()}); the {parameters} were not updated. "
            "Check the env's rewards and observations (VecCheckNan(raise_exception=True) finds the step)."
        )

    if apply_to is policy:
        # Optimization step
        update_learning_rate(policy.optimizer, learning_rate)
        with update_lock or nullcontext():
            policy.optimizer.step()
    elif apply_to is not None:
        # Hand the gradient to the shared parameters (Hogwild: read and written without a lock), then the
        # optimization step; running statistics (BatchNorm) that the forward pass updated go with it
        for param, shared_param in zip(policy.parameters(), apply_to.parameters()):
            shared_param.grad = param.grad
        update_learning_rate(apply_to.optimizer, learning_rate)
        with update_lock or nullcontext():
            apply_to.optimizer.step()
            for buffer, shared_buffer in zip(policy.buffers(), apply_to.buffers()):
                shared_buffer.copy_(buffer)
        apply_to.optimizer.zero_grad(set_to_none=True)

    return UpdateMetrics(
        policy_loss=policy_loss.item(),
        value_loss=value_loss.item(),
        entropy_loss=entropy_loss.item(),
        explained_variance=float(explained_variance(rollout_buffer.values.flatten(), rollout_buffer.returns.flatten())),
        grad_norm=grad_norm.item(),
    )
