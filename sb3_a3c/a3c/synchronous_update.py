"""
The synchronous variant of the A3C update (``A3C(..., synchronous_updates=True)``): every worker computes
the gradient of its own rollout, worker 0 applies their mean in one step of the shared optimizer, and all
workers start their next rollouts from the parameters of that step.

With ``k`` workers of ``m`` envs each, one step then sees the gradient of the mean loss over all ``k * m *
n_steps`` samples, clipped once: the update synchronous A2C makes with all the envs, computed in parallel.

The workers meet through counters in shared memory, polled, rather than a barrier: a worker that waits
also watches the stop event, so a stop request, or another worker's failure or death, never leaves one
waiting for a partner that will not come.
"""

import math
import multiprocessing.sharedctypes
import multiprocessing.synchronize
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch as th
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.utils import update_learning_rate

from sb3_a3c.common.update import UpdateMetrics, UpdateSettings, apply_update

# The worker that combines the gradients and steps the shared optimizer
LEADER_RANK = 0


@dataclass
class GradientExchange:
    """
    Where the workers of one machine hand over their gradients, in shared memory.

    :param gradients: one row per worker rank: its rollout's gradient, all parameters flattened in
        ``policy.parameters()`` order
    :param gradients_ready: per rank, the number of the update whose gradient its row holds
    :param updates_applied: how many combined steps the leader has applied
    :param combined_grad_norm: the norm of the last combined gradient, before clipping
    """

    gradients: th.Tensor
    gradients_ready: Any
    updates_applied: Any
    combined_grad_norm: Any

    @classmethod
    def for_policy(cls, policy: th.nn.Module, n_workers: int) -> "GradientExchange":
        n_parameters = sum(parameter.numel() for parameter in policy.parameters())
        return cls(
            gradients=th.zeros(n_workers, n_parameters).share_memory_(),
            gradients_ready=multiprocessing.sharedctypes.RawArray("q", n_workers),
            updates_applied=multiprocessing.sharedctypes.RawValue("q", 0),
            combined_grad_norm=multiprocessing.sharedctypes.RawValue("d", 0.0),
        )

    def put(self, rank: int, policy: th.nn.Module, update_number: int) -> None:
        """Copy ``policy``'s gradient into row ``rank`` and mark it as update ``update_number``'s."""
        offset = 0
        row = self.gradients[rank]
        for parameter in policy.parameters():
            destination = row[offset : offset + parameter.numel()].view(parameter.shape)
            if parameter.grad is None:
                destination.zero_()
            else:
                destination.copy_(parameter.grad)  # also from a channels-last gradient
            offset += parameter.numel()
        self.gradients_ready[rank] = update_number

    def set_mean_gradient(self, policy: th.nn.Module) -> None:
        """Give ``policy``'s parameters the mean of all rows as their gradient."""
        mean = self.gradients.mean(dim=0)
        offset = 0
        for parameter in policy.parameters():
            parameter.grad = mean[offset : offset + parameter.numel()].view(parameter.shape).clone()
            offset += parameter.numel()


def wait_until(condition: Callable[[], bool], stop_requested: Callable[[], bool], poll_interval: float = 0.0002) -> bool:
    """Wait for ``condition``; give up when a stop is requested. Return whether the condition holds."""
    while not condition():
        if stop_requested():
            return False
        time.sleep(poll_interval)
    return True


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
    workers' gradients (the leader: once it has applied it). Arguments as ``apply_update``, and:

    :param exchange: the gradients of all workers of this machine
    :param rank: this worker's rank
    :param update_number: the number of this update, from 1, the same for all workers
    :param stop_requested: whether the main process asked the workers to stop
    :return: the update's metrics (the gradient norm is that of the combined gradient), or None when a stop
        was requested before all workers' gradients met (the shared policy is then not updated)
    :raises NonFiniteLossError: when this worker's loss or gradient is not finite
    """
    # This worker's gradient, not clipped: the leader clips the workers' mean
    metrics = apply_update(local_policy, rollout_buffer, replace(settings, max_grad_norm=math.inf), learning_rate, None)
    exchange.put(rank, local_policy, update_number)

    if rank == LEADER_RANK:
        n_workers = exchange.gradients.shape[0]
        all_ready = wait_until(
            lambda: all(exchange.gradients_ready[other] >= update_number for other in range(n_workers)), stop_requested
        )
        if not all_ready:
            return None
        exchange.set_mean_gradient(shared_policy)
        combined_grad_norm = th.nn.utils.clip_grad_norm_(shared_policy.parameters(), settings.max_grad_norm)
        exchange.combined_grad_norm.value = combined_grad_norm.item()
        optimizer = shared_policy.optimizer
        update_learning_rate(optimizer, learning_rate)
        with update_lock:
            optimizer.step()
            for buffer, shared_buffer in zip(local_policy.buffers(), shared_policy.buffers()):
                shared_buffer.copy_(buffer)
        optimizer.zero_grad(set_to_none=True)
        exchange.updates_applied.value = update_number
    elif not wait_until(lambda: exchange.updates_applied.value >= update_number, stop_requested):
        return None
    return metrics._replace(grad_norm=exchange.combined_grad_norm.value)
