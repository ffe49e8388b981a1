"""
What one A3C actor-learner does, in its own process. Starting, watching and stopping the processes
is ``worker_pool``'s job, not this module's.
"""

import copy
import multiprocessing.synchronize
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.sharedctypes import Synchronized

import torch as th
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.type_aliases import Schedule
from stable_baselines3.common.utils import explained_variance, set_random_seed, update_learning_rate
from stable_baselines3.common.vec_env import VecEnv, unwrap_vec_normalize

from sb3_a3c.common.losses import actor_critic_loss
from sb3_a3c.common.messages import RolloutReport
from sb3_a3c.common.rollouts import RolloutCollector
from sb3_a3c.common.worker_envs import make_worker_env


class NonFiniteLossError(RuntimeError):
    """A worker computed a NaN or infinite loss or gradient; the shared model was left untouched."""


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
    :param total_timesteps: workers stop starting new rollouts once the counter reaches it
    :param stop_event: set by the main process to stop the workers after their current update
    :param update_lock: held while the shared optimizer writes the shared parameters, so that a
        checkpoint taken by the main process never sees a half-applied update
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
    stop_event: multiprocessing.synchronize.Event
    update_lock: multiprocessing.synchronize.Lock

    def worker_env_indices(self, rank: int) -> range:
        """The indices, in the training VecEnv, of the envs that worker ``rank`` steps."""
        return range(rank * self.envs_per_worker, (rank + 1) * self.envs_per_worker)

    def progress_remaining(self) -> float:
        """Global training progress remaining, from 1 to 0, as SB3 schedules expect."""
        return max(0.0, 1.0 - self.global_step_counter.value / self.total_timesteps)

    def should_stop(self) -> bool:
        return self.stop_event.is_set() or self.global_step_counter.value >= self.total_timesteps


def apply_gradients_to_shared_policy(
    local_policy: th.nn.Module,
    shared_policy: th.nn.Module,
    shared_optimizer: th.optim.Optimizer,
    learning_rate: float,
    update_lock: multiprocessing.synchronize.Lock,
) -> None:
    """
    Step the shared optimizer with the gradient held by ``local_policy`` (and with nothing else).

    The local gradients must come from a single ``backward()`` after ``zero_grad(set_to_none=True)``:
    the classic PyTorch A3C code skipped that reset, so under torch >= 2 its local gradients summed
    up over all past updates.
    """
    for local_param, shared_param in zip(local_policy.parameters(), shared_policy.parameters()):
        shared_param.grad = local_param.grad
    update_learning_rate(shared_optimizer, learning_rate)
    with update_lock:
        shared_optimizer.step()
    shared_optimizer.zero_grad(set_to_none=True)


def run_actor_learner(job: ActorLearnerJob, rank: int, send_report: Callable[[RolloutReport], None]) -> None:
    """
    The A3C actor-learner loop: sync with the shared policy, collect ``n_steps`` per env, compute the loss,
    apply its gradient to the shared policy with the shared optimizer. Repeat until stopped.

    :param job: the shared model, optimizer, counters and hyperparameters
    :param rank: this worker's index
    :param send_report: delivers one ``RolloutReport`` per update to the main process
    """
    set_random_seed(job.worker_seeds[rank])
    # torch.distributions re-checks the policy's logits and actions on every call (~12% of acting time);
    # a NaN still surfaces, as the non-finite loss below. This process only runs this loop.
    th.distributions.Distribution.set_default_validate_args(False)
    env = make_worker_env(job.training_env, job.worker_env_indices(rank))
    env.seed(job.worker_seeds[rank])
    local_policy = job.make_local_policy()
    steps_per_update = job.n_steps * env.num_envs
    collector = RolloutCollector(local_policy, env, job.n_steps, job.gamma, job.gae_lambda, job.use_sde, job.sde_sample_freq)

    while not job.should_stop():
        # Start from the current shared parameters
        local_policy.load_state_dict(job.shared_policy.state_dict())

        # Collect n_steps transitions per env; the buffer computes returns and GAE advantages
        episode_infos = collector.collect()
        with job.global_step_counter.get_lock():
            job.global_step_counter.value += steps_per_update

        # Loss of this rollout, and its gradient (only its gradient) on the local policy
        local_policy.set_training_mode(True)
        rollout_data = next(collector.rollout_buffer.get(batch_size=None))
        losses = actor_critic_loss(
            local_policy, rollout_data, env.action_space, job.ent_coef, job.vf_coef, job.normalize_advantage
        )
        local_policy.zero_grad(set_to_none=True)
        losses.loss.backward()
        grad_norm = th.nn.utils.clip_grad_norm_(local_policy.parameters(), job.max_grad_norm)
        if not (th.isfinite(losses.loss) and th.isfinite(grad_norm)):
            raise NonFiniteLossError(
                f"worker {rank}: non-finite loss ({losses.loss.item()}) or gradient norm ({grad_norm.item()}) "
                f"at global step {job.global_step_counter.value}; the shared parameters were not updated. "
                "Check the env's rewards and observations (VecCheckNan(raise_exception=True) finds the step)."
            )

        # Write the gradient to the shared policy and step the shared optimizer
        learning_rate = job.lr_schedule(job.progress_remaining())
        apply_gradients_to_shared_policy(
            local_policy, job.shared_policy, job.shared_policy.optimizer, learning_rate, job.update_lock
        )

        send_report(
            RolloutReport(
                worker_rank=rank,
                n_steps=steps_per_update,
                episode_infos=episode_infos,
                policy_loss=losses.policy_loss,
                value_loss=losses.value_loss,
                entropy_loss=losses.entropy_loss,
                explained_variance=float(
                    explained_variance(collector.rollout_buffer.values.flatten(), collector.rollout_buffer.returns.flatten())
                ),
                grad_norm=grad_norm.item(),
                normalization_stats=_normalization_stats(env) if rank == 0 else None,
            )
        )


def _normalization_stats(env: VecEnv) -> tuple | None:
    """The running statistics of ``env``'s VecNormalize, mirrored to the main process's VecNormalize."""
    vec_normalize = unwrap_vec_normalize(env)
    if vec_normalize is None:
        return None
    return copy.deepcopy((vec_normalize.obs_rms, vec_normalize.ret_rms))
