"""
What one A3C actor-learner does, in its own process. Starting, watching and stopping the processes
is ``worker_pool``'s job, not this module's; the maths of an update is ``sb3_a3c.common.update.apply_update``.
"""

import copy
import multiprocessing
import multiprocessing.sharedctypes
import multiprocessing.synchronize
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.sharedctypes import Synchronized
from typing import Any

import torch as th
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.utils import set_random_seed
from stable_baselines3.common.vec_env import VecEnv, unwrap_vec_normalize

from sb3_a3c.a3c.config import A3CConfig
from sb3_a3c.a3c.messages import RolloutReport, WorkerEnvs
from sb3_a3c.a3c.rollout_collector import CollectorState, RolloutCollector
from sb3_a3c.a3c.synchronous_update import GradientExchange, apply_synchronous_update
from sb3_a3c.a3c.worker_envs import describe_env, export_worker_env, make_worker_env
from sb3_a3c.common.update import apply_update


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


def run_actor_learner(job: ActorLearnerJob, rank: int, send_report: Callable[[Any], None]) -> None:
    """
    The A3C actor-learner loop: sync with the shared policy, collect ``n_steps`` per env, apply the
    gradient of the rollout's loss to the shared policy with the shared optimizer. Repeat until stopped.

    :param job: the shared model, optimizer, counters and hyperparameters
    :param rank: this worker's index
    :param send_report: delivers one ``RolloutReport`` per update to the main process, then the envs (``WorkerEnvs``)
    """
    config = job.config
    set_random_seed(job.run.worker_seeds[rank])
    # torch.distributions re-checks the policy's logits and actions on every call (~12% of acting time);
    # a NaN still surfaces, as a non-finite loss. This process only runs this loop.
    th.distributions.Distribution.set_default_validate_args(False)
    start = job.starts[rank] if job.starts else None
    if start is None:
        env = make_worker_env(job.training_env, job.worker_env_indices(rank))
        env.seed(job.run.worker_seeds[rank])
    else:
        env = start.env
    local_policy = config.make_local_policy()
    steps_per_update = config.n_steps * env.num_envs
    collector = RolloutCollector(
        local_policy,
        env,
        config.n_steps,
        config.gamma,
        config.gae_lambda,
        config.use_sde,
        config.sde_sample_freq,
        record_step_locals=job.run.record_step_locals,
        resume_from=None if start is None else start.collector_state,
    )

    while not job.should_stop(rank):
        job.wait_for_slower_workers(rank)
        if job.stop_event.is_set():
            break
        # Start from the current shared parameters
        local_policy.load_state_dict(job.shared_policy.state_dict())

        # Collect n_steps transitions per env; the buffer computes returns and GAE advantages
        steps = collector.collect()
        with job.global_step_counter.get_lock():
            job.global_step_counter.value += steps_per_update

        # Loss, gradient, and the shared optimizer's step (or the step of all workers' mean gradient)
        learning_rate = config.lr_schedule(job.progress_remaining())
        if job.gradient_exchange is None:
            metrics = apply_update(
                local_policy, collector.rollout_buffer, config.update, learning_rate, job.shared_policy, job.update_lock
            )
        else:
            synchronous_metrics = apply_synchronous_update(
                local_policy,
                job.shared_policy,
                collector.rollout_buffer,
                config.update,
                learning_rate,
                job.update_lock,
                exchange=job.gradient_exchange,
                rank=rank,
                update_number=job.rollouts_done[rank] + 1,
                stop_requested=job.stop_event.is_set,
            )
            if synchronous_metrics is None:
                break  # stopped while waiting for the other workers
            metrics = synchronous_metrics
        job.rollouts_done[rank] += 1

        send_report(
            RolloutReport(
                worker_rank=rank,
                n_steps=steps_per_update,
                metrics=metrics,
                steps=steps,
                normalization_stats=_normalization_stats(env) if rank == 0 else None,
            )
        )

    send_report(_export_envs(rank, env, collector))


def _export_envs(rank: int, env: VecEnv, collector: RolloutCollector) -> WorkerEnvs:
    """The worker's envs and where their episodes stand, for the main process (or why they cannot travel)."""
    try:
        return WorkerEnvs(rank, export_worker_env(env, collector.state()))
    except Exception:
        return WorkerEnvs(rank, None, traceback.format_exc(limit=-1))


def _normalization_stats(env: VecEnv) -> tuple | None:
    """The running statistics of ``env``'s VecNormalize, mirrored to the main process's VecNormalize."""
    vec_normalize = unwrap_vec_normalize(env)
    if vec_normalize is None:
        return None
    return copy.deepcopy((vec_normalize.obs_rms, vec_normalize.ret_rms))
