"""
What the runner gives the workers of one machine for one ``learn()``: the shared policy, the counters, the
lock and the stop event in shared memory (``ActorLearnerJob``), where the envs start (``WorkerStart``), and,
with synchronous updates, where the workers' gradients meet (``GradientExchange``). Built by the runner
before it forks the workers, which inherit it.
"""

import multiprocessing
import multiprocessing.sharedctypes
import multiprocessing.synchronize
import time
from dataclasses import dataclass
from multiprocessing.sharedctypes import Synchronized
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.vec_env import VecEnv

from sb3_a3c.a3c.config import A3CConfig
from sb3_a3c.a3c.worker_envs import describe_env


@dataclass
class CollectorState:
    """Where a worker's envs stand between two rollouts, so that a later ``learn()`` can continue them."""

    last_obs: Any
    last_episode_starts: np.ndarray
    last_lstm_states: Any = None


@dataclass
class WorkerStart:
    """Where a worker's envs stand at the end of a ``learn()``: the next one continues from there."""

    env: VecEnv
    collector_state: CollectorState


@dataclass(frozen=True)
class RunSettings:
    """
    What one ``learn()`` asks of the workers (of one machine, or of all machines together).

    :param worker_seeds: one seed per worker rank
    :param rollouts_per_worker: each worker stops after this many rollouts (all workers together then
        collect what SB3's A2C collects for the same ``total_timesteps``)
    :param total_timesteps: the global budget (the learning rate schedule's progress is the step counter's share of it)
    :param record_step_locals: send every step's locals (a callback of the user's own may read them); otherwise
        only the episodes that ended
    """

    worker_seeds: tuple[int, ...]
    rollouts_per_worker: int
    total_timesteps: int
    record_step_locals: bool


@dataclass
class GradientExchange:
    """
    Where the workers of one machine hand over their gradients for a synchronous update, in shared memory.

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


@dataclass
class ActorLearnerJob:
    """
    Everything the A3C workers of one machine need. Built in the main process (``ActorLearnerJob.create``)
    and inherited by the forked workers.

    :param config: the model's hyperparameters and policy architecture
    :param run: the seeds and the budget of this ``learn()``
    :param shared_policy: the policy in shared memory that all workers update; its ``optimizer`` keeps
        its statistics in shared memory
    :param training_env: the user's VecEnv; worker ``rank`` steps its envs ``worker_env_indices(rank)``
    :param starts: per rank, the envs to continue (from the previous ``learn()``), or empty to start
        from ``training_env`` with a reset
    :param global_step_counter: environment steps collected by all workers (shared integer)
    :param rollouts_done: rollouts finished by each worker (shared integers, one per rank)
    :param stop_event: set by the main process to stop the workers after their current update
    :param update_lock: held while the shared optimizer writes the shared parameters, so that a
        checkpoint taken by the main process never sees a half-applied update
    :param gradient_exchange: with synchronous updates, where the workers' gradients meet (worker 0 applies
        their mean); None: each worker applies its own (Hogwild)
    :param max_rollouts_ahead: a worker waits before a new rollout while it is this many rollouts ahead of
        the slowest worker: the main process shows step ``t`` of all workers together, and keeps the
        reports of the faster ones meanwhile
    """

    config: A3CConfig
    run: RunSettings
    shared_policy: ActorCriticPolicy
    training_env: VecEnv
    starts: list[WorkerStart]
    global_step_counter: Synchronized
    rollouts_done: Any
    stop_event: multiprocessing.synchronize.Event
    update_lock: multiprocessing.synchronize.Lock
    gradient_exchange: GradientExchange | None = None
    max_rollouts_ahead: int = 16

    @classmethod
    def create(
        cls,
        config: A3CConfig,
        run: RunSettings,
        shared_policy: ActorCriticPolicy,
        training_env: VecEnv,
        steps_done: int = 0,
        starts: list[WorkerStart] | None = None,
        synchronous_updates: bool = False,
    ) -> "ActorLearnerJob":
        """
        The job of ``len(run.worker_seeds)`` workers sharing ``shared_policy`` (in shared memory already).

        :param steps_done: the steps already collected (the model's ``num_timesteps``), where the counter starts
        :param starts: per rank, the envs to continue; None: start from ``training_env`` with a reset
        :param synchronous_updates: the workers apply the mean of their gradients together
        """
        context = multiprocessing.get_context("fork")
        n_workers = len(run.worker_seeds)
        return cls(
            config=config,
            run=run,
            shared_policy=shared_policy,
            training_env=training_env,
            starts=starts or [],
            global_step_counter=context.Value("q", steps_done),
            rollouts_done=multiprocessing.sharedctypes.RawArray("q", n_workers),
            stop_event=context.Event(),
            update_lock=context.Lock(),
            gradient_exchange=GradientExchange.for_policy(shared_policy, n_workers) if synchronous_updates else None,
        )

    @property
    def n_workers(self) -> int:
        return len(self.run.worker_seeds)

    def worker_env_indices(self, rank: int) -> range:
        """The indices, in the training VecEnv, of the envs that worker ``rank`` steps."""
        envs_per_worker = self.training_env.num_envs // self.n_workers
        return range(rank * envs_per_worker, (rank + 1) * envs_per_worker)

    def describe_worker(self, rank: int) -> str:
        """A short description of worker ``rank`` for error messages: its first env's id."""
        return describe_env(self.training_env, self.worker_env_indices(rank)[0])

    def progress_remaining(self) -> float:
        """Global training progress remaining, from 1 to 0, as SB3 schedules expect."""
        return max(0.0, 1.0 - self.global_step_counter.value / self.run.total_timesteps)

    def should_stop(self, rank: int) -> bool:
        return self.stop_event.is_set() or self.rollouts_done[rank] >= self.run.rollouts_per_worker

    def wait_for_slower_workers(self, rank: int, poll_interval: float = 0.001) -> None:
        """Wait while worker ``rank`` is ``max_rollouts_ahead`` rollouts ahead of the slowest worker."""
        while self.rollouts_done[rank] - min(self.rollouts_done) >= self.max_rollouts_ahead and not self.stop_event.is_set():
            time.sleep(poll_interval)
