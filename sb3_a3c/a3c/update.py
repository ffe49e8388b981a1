"""
The A3C update: the gradient of one worker's rollout, applied to the shared policy by the shared optimizer.

This is what ``A2C.train()`` is to SB3's A2C: the maths of one update, top to bottom. It runs in each
worker process (``actor_learner.run_actor_learner``), never in the main process.
"""

import multiprocessing.synchronize
from typing import NamedTuple

import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.utils import explained_variance, update_learning_rate

from sb3_a3c.common.losses import ActorCriticLoss, actor_critic_loss


class NonFiniteLossError(RuntimeError):
    """A worker computed a NaN or infinite loss or gradient; the shared model was left untouched."""


class UpdateMetrics(NamedTuple):
    """What one update reports under SB3 A2C's ``train/*`` names."""

    policy_loss: float
    value_loss: float
    entropy_loss: float
    explained_variance: float
    grad_norm: float


def apply_update(
    local_policy: ActorCriticPolicy,
    shared_policy: ActorCriticPolicy,
    rollout_buffer: RolloutBuffer,
    action_space: spaces.Space,
    ent_coef: float,
    vf_coef: float,
    max_grad_norm: float,
    normalize_advantage: bool,
    learning_rate: float,
    update_lock: multiprocessing.synchronize.Lock,
) -> UpdateMetrics:
    """
    Compute the A2C loss of the rollout in ``rollout_buffer`` on ``local_policy`` and apply its gradient
    (and nothing else) to ``shared_policy`` with ``shared_policy.optimizer``.

    :param local_policy: the worker's private policy, holding the shared parameters of the rollout's start
    :param shared_policy: the policy in shared memory; its optimizer keeps its statistics in shared memory
    :param rollout_buffer: the rollout, with returns and advantages computed
    :param action_space: the env's action space
    :param ent_coef: entropy coefficient
    :param vf_coef: value function coefficient
    :param max_grad_norm: the gradient's norm is clipped to it
    :param normalize_advantage: normalise the rollout's advantages
    :param learning_rate: the learning rate of this step (from the global progress)
    :param update_lock: held during the shared optimizer's step, so that a checkpoint never holds half an update
    :raises NonFiniteLossError: when the loss or the gradient is not finite (the shared policy is not touched)
    """
    losses, grad_norm = rollout_gradient(
        local_policy, rollout_buffer, action_space, ent_coef, vf_coef, max_grad_norm, normalize_advantage
    )

    # Hand the gradient to the shared parameters (Hogwild: read and written without a lock)
    for local_param, shared_param in zip(local_policy.parameters(), shared_policy.parameters()):
        shared_param.grad = local_param.grad

    step_shared_optimizer(shared_policy, local_policy, learning_rate, update_lock)
    return update_metrics(losses, rollout_buffer, grad_norm.item())


def rollout_gradient(
    local_policy: ActorCriticPolicy,
    rollout_buffer: RolloutBuffer,
    action_space: spaces.Space,
    ent_coef: float,
    vf_coef: float,
    max_grad_norm: float,
    normalize_advantage: bool,
) -> tuple[ActorCriticLoss, th.Tensor]:
    """
    Compute the A2C loss of the rollout on ``local_policy`` and leave its gradient, clipped to ``max_grad_norm``,
    in ``local_policy``'s ``.grad`` (the gradient of this rollout only).

    :return: the loss with its terms, and the gradient's norm before clipping
    :raises NonFiniteLossError: when the loss or the gradient is not finite
    """
    local_policy.set_training_mode(True)
    rollout_data = next(rollout_buffer.get(batch_size=None))

    # Policy gradient, value and entropy losses, as SB3's A2C
    losses = actor_critic_loss(local_policy, rollout_data, action_space, ent_coef, vf_coef, normalize_advantage)

    # The gradient of this rollout only: the classic PyTorch A3C code did not clear the local gradients,
    # so under torch >= 2 they summed up over all past updates
    local_policy.zero_grad(set_to_none=True)
    losses.loss.backward()

    # Clip grad norm
    grad_norm = th.nn.utils.clip_grad_norm_(local_policy.parameters(), max_grad_norm)
    if not (th.isfinite(losses.loss) and th.isfinite(grad_norm)):
        raise NonFiniteLossError(
            f"non-finite loss ({losses.loss.item()}) or gradient norm ({grad_norm.item()}); the shared parameters "
            "were not updated. Check the env's rewards and observations (VecCheckNan(raise_exception=True) finds the step)."
        )
    return losses, grad_norm


def step_shared_optimizer(
    shared_policy: ActorCriticPolicy,
    local_policy: ActorCriticPolicy,
    learning_rate: float,
    update_lock: multiprocessing.synchronize.Lock,
) -> None:
    """
    Apply the gradient held by ``shared_policy``'s parameters with its shared optimizer, then clear it.

    Runs under the lock that checkpoints take too; the running statistics that the loss's forward pass
    updated on ``local_policy`` (BatchNorm) go to the shared policy with the step.
    """
    shared_optimizer = shared_policy.optimizer
    update_learning_rate(shared_optimizer, learning_rate)
    with update_lock:
        shared_optimizer.step()
        for local_buffer, shared_buffer in zip(local_policy.buffers(), shared_policy.buffers()):
            shared_buffer.copy_(local_buffer)
    shared_optimizer.zero_grad(set_to_none=True)


def update_metrics(losses: ActorCriticLoss, rollout_buffer: RolloutBuffer, grad_norm: float) -> UpdateMetrics:
    """The ``train/*`` figures of one update."""
    return UpdateMetrics(
        policy_loss=losses.policy_loss,
        value_loss=losses.value_loss,
        entropy_loss=losses.entropy_loss,
        explained_variance=float(explained_variance(rollout_buffer.values.flatten(), rollout_buffer.returns.flatten())),
        grad_norm=grad_norm,
    )
