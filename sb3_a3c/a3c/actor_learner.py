"""
What one A3C actor-learner does, in its own process. Starting, watching and stopping the processes
is ``worker_pool``'s job, not this module's; the maths of an update is ``update.apply_update``.
"""

import copy
import multiprocessing.synchronize
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.sharedctypes import Synchronized
from typing import Any

import torch as th
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.type_aliases import Schedule
from stable_baselines3.common.utils import set_random_seed
from stable_baselines3.common.vec_env import VecEnv, unwrap_vec_normalize

from sb3_a3c.a3c.reporting import RolloutReport, WorkerEnvs
from sb3_a3c.a3c.rollout_collector import CollectorState, RolloutCollector
from sb3_a3c.a3c.synchronous_update import GradientExchange, apply_synchronous_update
from sb3_a3c.a3c.update import apply_update
from sb3_a3c.a3c.worker_envs import export_worker_env, make_worker_env


@dataclass
class WorkerStart:
    """Where a worker's envs stand at the end of a ``learn()``: the next one continues from there."""

    env: VecEnv
    collector_state: CollectorState


@dataclass
class ActorLearnerJob:
    """
    Everything an A3C worker needs. Built in the main process and inherited by the forked workers.

    :param shared_policy: the policy in shared memory that all workers update; its ``optimizer`` keeps
        its statistics in shared memory
    :param make_local_policy: builds a private policy of the same architecture (gradients are computed on it)
    :param training_env: the user's VecEnv; worker ``rank`` steps its envs ``worker_env_indices(rank)``
    :param envs_per_worker: how many of the envs each worker steps (together, with batched forward passes)
    :param worker_seeds: one seed per worker rank
    :param n_steps: transitions per env in one rollout (a worker's update uses ``n_steps * envs_per_worker``)
    :param gamma: discount factor
    :param gae_lambda: GAE lambda
    :param ent_coef: entropy coefficient
    :param vf_coef: value function coefficient
    :param max_grad_norm: gradient norm clipping threshold
    :param normalize_advantage: whether to normalise advantages in each rollout
    :param use_sde: whether to use gSDE exploration
    :param sde_sample_freq: gSDE noise resampling frequency
    :param lr_schedule: learning rate as a function of the remaining global progress (1 to 0)
    :param global_step_counter: environment steps collected by all workers (shared integer)
    :param total_timesteps: the global budget (the learning rate schedule's progress is the counter's share of it)
    :param rollouts_per_worker: each worker stops after this many rollouts (all workers together
        then collect what SB3's A2C collects for the same ``total_timesteps``)
    :param rollouts_done: rollouts finished by each worker (shared integers, one per rank)
    :param stop_event: set by the main process to stop the workers after their current update
    :param update_lock: held while the shared optimizer writes the shared parameters, so that a
        checkpoint taken by the main process never sees a half-applied update
    :param record_observations: send each step's ``new_obs`` to the main process's callbacks
    :param starts: per rank, the envs to continue (from the previous ``learn()``), or None to start
        from ``training_env`` with a reset
    :param max_rollouts_ahead: a worker waits before a new rollout while it is this many rollouts ahead of
        the slowest worker: the main process shows step ``t`` of all workers together, and keeps the
        reports of the faster ones meanwhile
    :param gradient_exchange: with synchronous updates, where the workers' gradients meet (worker 0 applies
        their mean); None: each worker applies its own (Hogwild)
    """

    shared_policy: ActorCriticPolicy
    make_local_policy: Callable[[], ActorCriticPolicy]
    training_env: VecEnv
    envs_per_worker: int
    worker_seeds: list[int]
    n_steps: int
    gamma: float
    gae_lambda: float
    ent_coef: float
    vf_coef: float
    max_grad_norm: float
    normalize_advantage: bool
    use_sde: bool
    sde_sample_freq: int
    lr_schedule: Schedule
    global_step_counter: Synchronized
    total_timesteps: int
    rollouts_per_worker: int
    rollouts_done: Any
    stop_event: multiprocessing.synchronize.Event
    update_lock: multiprocessing.synchronize.Lock
    record_observations: bool = False
    starts: list[WorkerStart | None] = field(default_factory=list)
    max_rollouts_ahead: int = 16
    gradient_exchange: GradientExchange | None = None

    def worker_env_indices(self, rank: int) -> range:
        """The indices, in the training VecEnv, of the envs that worker ``rank`` steps."""
        return range(rank * self.envs_per_worker, (rank + 1) * self.envs_per_worker)

    def progress_remaining(self) -> float:
        """Global training progress remaining, from 1 to 0, as SB3 schedules expect."""
        return max(0.0, 1.0 - self.global_step_counter.value / self.total_timesteps)

    def should_stop(self, rank: int) -> bool:
        return self.stop_event.is_set() or self.rollouts_done[rank] >= self.rollouts_per_worker

    def wait_for_slower_workers(self, rank: int, poll_interval: float = 0.001) -> None:
        """Wait while worker ``rank`` is ``max_rollouts_ahead`` rollouts ahead of the slowest worker."""
        while self.rollouts_done[rank] - min(self.rollouts_done) >= self.max_rollouts_ahead and not self.stop_event.is_set():
            time.sleep(poll_interval)

    def worker_start(self, rank: int) -> "WorkerStart | None":
        return self.starts[rank] if self.starts else None


def run_actor_learner(job: ActorLearnerJob, rank: int, send_report: Callable[[RolloutReport], None]) -> None:
    """
    The A3C actor-learner loop: sync with the shared policy, collect ``n_steps`` per env, apply the
    gradient of the rollout's loss to the shared policy with the shared optimizer. Repeat until stopped.

    :param job: the shared model, optimizer, counters and hyperparameters
    :param rank: this worker's index
    :param send_report: delivers one ``RolloutReport`` per update to the main process
    """
    set_random_seed(job.worker_seeds[rank])
    # torch.distributions re-checks the policy's logits and actions on every call (~12% of acting time);
    # a NaN still surfaces, as a non-finite loss. This process only runs this loop.
    th.distributions.Distribution.set_default_validate_args(False)
    start = job.worker_start(rank)
    if start is None:
        env = make_worker_env(job.training_env, job.worker_env_indices(rank))
        env.seed(job.worker_seeds[rank])
    else:
        env = start.env
    local_policy = job.make_local_policy()
    steps_per_update = job.n_steps * env.num_envs
    collector = RolloutCollector(
        local_policy,
        env,
        job.n_steps,
        job.gamma,
        job.gae_lambda,
        job.use_sde,
        job.sde_sample_freq,
        record_observations=job.record_observations,
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
        update_arguments = (
            local_policy,
            job.shared_policy,
            collector.rollout_buffer,
            env.action_space,
            job.ent_coef,
            job.vf_coef,
            job.max_grad_norm,
            job.normalize_advantage,
            job.lr_schedule(job.progress_remaining()),
            job.update_lock,
        )
        if job.gradient_exchange is None:
            metrics = apply_update(*update_arguments)
        else:
            synchronous_metrics = apply_synchronous_update(
                *update_arguments,
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
