"""
What one A3C actor-learner does, in its own worker process: the loop of sync, rollout, update. Starting,
watching and stopping the processes is the runner's job (``sb3_a3c.a3c.runner.worker_pool``), not this module's.
"""

import copy
import traceback
from collections.abc import Callable
from typing import Any

import torch as th
from stable_baselines3.common.utils import set_random_seed
from stable_baselines3.common.vec_env import VecEnv, unwrap_vec_normalize

from sb3_a3c.a3c.job import ActorLearnerJob
from sb3_a3c.a3c.messages import RolloutReport, WorkerEnvs
from sb3_a3c.a3c.worker.rollout_collector import RolloutCollector
from sb3_a3c.a3c.worker.updates import apply_hogwild_update, apply_synchronous_update
from sb3_a3c.a3c.worker_envs import export_worker_env, make_worker_env


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
            metrics = apply_hogwild_update(
                local_policy, job.shared_policy, collector.rollout_buffer, config.update, learning_rate, job.update_lock
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
                env_steps=steps_per_update,
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
