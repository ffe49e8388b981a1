"""
The two ways an A3C worker applies its rollout's gradient (``sb3_a3c.common.update.compute_gradients``) to the
shared policy.

- ``apply_hogwild_update`` (the default): clip the worker's own gradient, hand it to the shared policy, and step
  the shared optimizer at once. The other workers read the shared parameters meanwhile without waiting (Hogwild).
- ``apply_synchronous_update`` (``A3C(..., synchronous_updates=True)``): every worker puts its gradient in the
  ``GradientExchange``; worker 0 averages them, clips the mean once and steps, and all workers start their next
  rollouts from the parameters of that step. With ``k`` workers of ``m`` envs each, one step then sees the gradient
  of the mean loss over all ``k * m * n_steps`` samples: the update synchronous A2C makes with all the envs,
  computed in parallel. The workers meet through counters in shared memory, polled, rather than a barrier: a
  worker that waits also watches the stop event, so a stop request, or another worker's failure or death, never
  leaves one waiting for a partner that will not come.

The optimizer step is taken under ``update_lock``, so that a checkpoint the main process takes meanwhile never holds
half an update.
"""

import multiprocessing.synchronize
import time
from collections.abc import Callable

from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.utils import update_learning_rate

from sb3_a3c.a3c.job import GradientExchange
from sb3_a3c.common.update import UpdateMetrics, UpdateSettings, clip_gradients, compute_gradients

# The worker that combines the gradients and steps the shared optimizer
LEADER_RANK = 0


def apply_hogwild_update(
    local_policy: ActorCriticPolicy,
    shared_policy: ActorCriticPolicy,
    rollout_buffer: RolloutBuffer,
    settings: UpdateSettings,
    learning_rate: float,
    update_lock: multiprocessing.synchronize.Lock,
) -> UpdateMetrics:
    """
    Compute the rollout's gradient on ``local_policy`` and apply it to ``shared_policy`` with its shared optimizer.

    :param local_policy: the worker's copy of the shared policy, which collected the rollout
    :param shared_policy: the policy in shared memory; its optimizer keeps its statistics in shared memory
    :param rollout_buffer: the rollout, with returns and advantages computed
    :param settings: the update's hyperparameters
    :param learning_rate: the learning rate of this step
    :param update_lock: held during the optimizer step
    :return: the update's metrics
    :raises NonFiniteLossError: when the loss or the gradient is not finite (no step is taken)
    """
    metrics = compute_gradients(local_policy, rollout_buffer, settings)
    grad_norm = clip_gradients(local_policy, settings.max_grad_norm)

    # The shared parameters take the local gradient, and the shared optimizer steps
    for param, shared_param in zip(local_policy.parameters(), shared_policy.parameters()):
        shared_param.grad = param.grad
    step_shared_optimizer(local_policy, shared_policy, learning_rate, update_lock)
    return metrics._replace(grad_norm=grad_norm)


def apply_synchronous_update(
    local_policy: ActorCriticPolicy,
    shared_policy: ActorCriticPolicy,
    rollout_buffer: RolloutBuffer,
    settings: UpdateSettings,
    learning_rate: float,
    update_lock: multiprocessing.synchronize.Lock,
    exchange: GradientExchange,
    rank: int,
    update_number: int,
    stop_requested: Callable[[], bool],
) -> UpdateMetrics | None:
    """
    Hand this worker's rollout gradient to ``exchange`` and return once the leader has applied the mean of all
    workers' gradients (the leader: once it has applied it). Arguments as ``apply_hogwild_update``, and:

    :param exchange: the gradients of all workers of this machine
    :param rank: this worker's rank
    :param update_number: the number of this update, from 1, the same for all workers
    :param stop_requested: whether the main process asked the workers to stop
    :return: the update's metrics (the gradient norm is that of the mean gradient), or None when a stop
        was requested before all workers' gradients met (the shared policy is then not updated)
    :raises NonFiniteLossError: when this worker's loss, or the mean gradient, is not finite
    """
    # This worker's gradient, not clipped: the leader clips the workers' mean
    metrics = compute_gradients(local_policy, rollout_buffer, settings)
    exchange.put(rank, local_policy, update_number)

    if rank == LEADER_RANK:
        n_workers = exchange.gradients.shape[0]
        all_ready = wait_until(
            lambda: all(exchange.gradients_ready[other] >= update_number for other in range(n_workers)), stop_requested
        )
        if not all_ready:
            return None
        # The mean of the workers' gradients, clipped once, and one step of the shared optimizer
        exchange.set_mean_gradient(shared_policy)
        exchange.combined_grad_norm.value = clip_gradients(shared_policy, settings.max_grad_norm)
        step_shared_optimizer(local_policy, shared_policy, learning_rate, update_lock)
        exchange.updates_applied.value = update_number
    elif not wait_until(lambda: exchange.updates_applied.value >= update_number, stop_requested):
        return None
    return metrics._replace(grad_norm=exchange.combined_grad_norm.value)


def step_shared_optimizer(
    local_policy: ActorCriticPolicy,
    shared_policy: ActorCriticPolicy,
    learning_rate: float,
    update_lock: multiprocessing.synchronize.Lock,
) -> None:
    """Step the shared optimizer with the gradient in ``shared_policy``'s ``.grad``, under ``update_lock``."""
    update_learning_rate(shared_policy.optimizer, learning_rate)
    with update_lock:
        shared_policy.optimizer.step()
        # Running statistics (BatchNorm) that the local forward passes updated
        for buffer, shared_buffer in zip(local_policy.buffers(), shared_policy.buffers()):
            shared_buffer.copy_(buffer)
    shared_policy.optimizer.zero_grad(set_to_none=True)


def wait_until(condition: Callable[[], bool], stop_requested: Callable[[], bool], poll_interval: float = 0.0002) -> bool:
    """Wait for ``condition``; give up when a stop is requested. Return whether the condition holds."""
    while not condition():
        if stop_requested():
            return False
        time.sleep(poll_interval)
    return True
