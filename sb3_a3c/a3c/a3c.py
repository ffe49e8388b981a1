import copy
import multiprocessing
import os
from functools import partial
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch as th
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, Schedule

from sb3_a3c.a3c.actor_learner import ActorLearnerJob, run_actor_learner
from sb3_a3c.a3c.reporting import WorkerReportHandler
from sb3_a3c.a3c.shared_optimizers import SharedOptimizerMixin, shared_optimizer_class
from sb3_a3c.a3c.validation import check_envs_divide_among_workers, check_fork_is_available, cpu_device
from sb3_a3c.a3c.worker_envs import check_worker_env_support, describe_env
from sb3_a3c.a3c.worker_pool import WorkerPool
from sb3_a3c.common.loading import ClearLoadErrorsMixin
from sb3_a3c.common.policies import POLICY_ALIASES, build_policy, check_policy_kwargs, with_default_optimizer
from sb3_a3c.common.validation import (
    SUPPORTED_ACTION_SPACES,
    check_action_space,
    check_hyperparameters,
    is_positive_int,
    require,
)

SelfA3C = TypeVar("SelfA3C", bound="A3C")

# Seconds `save()` waits, during training, for the workers to finish the optimizer step in progress
SNAPSHOT_LOCK_TIMEOUT = 30.0


def default_n_workers() -> int:
    """One worker per CPU core this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class A3C(ClearLoadErrorsMixin, OnPolicyAlgorithm):
    """
    Asynchronous Advantage Actor Critic (A3C), with Hogwild actor-learners in worker processes

    Paper: https://arxiv.org/abs/1602.01783
    ``n_workers`` worker processes share the envs of the training VecEnv (one env each by default).
    A worker copies the shared policy, collects ``n_steps`` transitions from each of its envs (stepped
    together, so the policy's forward pass is batched), and applies the gradient of its loss to the shared
    policy with the shared optimizer (statistics in shared memory): the loop is
    ``sb3_a3c.a3c.actor_learner.run_actor_learner``, the update ``sb3_a3c.a3c.update.apply_update``.
    Callbacks and logging run in the main process.

    :param policy: The policy model to use (MlpPolicy, CnnPolicy, MultiInputPolicy, MlpLstmPolicy, CnnLstmPolicy, ...)
    :param env: The environment to learn from: a VecEnv (``DummyVecEnv`` based), a gym env or an env id
        (``n_envs`` envs)
    :param learning_rate: The learning rate, it can be a function of the global progress remaining (from 1 to 0)
    :param n_steps: The number of steps a worker collects from each of its envs for each of its updates
    :param gamma: Discount factor
    :param gae_lambda: Factor for trade-off of bias vs variance for Generalized Advantage Estimator.
        Equivalent to the classic n-step advantage when set to 1.
    :param ent_coef: Entropy coefficient for the loss calculation
    :param vf_coef: Value function coefficient for the loss calculation
    :param max_grad_norm: The maximum value for the gradient clipping (of each worker's gradient)
    :param rms_prop_eps: RMSProp epsilon. It stabilizes square root computation in denominator
        of RMSProp update
    :param use_rms_prop: Whether to use shared RMSprop (default) or shared Adam as optimizer
    :param use_sde: Whether to use generalized State Dependent Exploration (gSDE)
        instead of action noise exploration (default: False)
    :param sde_sample_freq: Sample a new noise matrix every n steps when using gSDE
        Default: -1 (only sample at the beginning of the rollout)
    :param normalize_advantage: Whether to normalize or not the advantage
    :param n_envs: Number of envs to create when ``env`` is an env id (default: one per CPU core)
    :param n_workers: Number of worker processes; the envs are split evenly between them. Default (None):
        one worker per env. On a CPU, one worker per core with several envs each is usually fastest.
    :param stats_window_size: Window size for the rollout logging, specifying the number of episodes to average
        the reported success rate, mean episode length, and mean reward over
    :param tensorboard_log: the log location for tensorboard (if None, no logging)
    :param policy_kwargs: additional arguments to be passed to the policy on creation. ``optimizer_class``
        ``th.optim.RMSprop`` or ``th.optim.Adam`` is replaced by its shared-memory version.
    :param verbose: Verbosity level: 0 for no output, 1 for info messages (such as device or wrappers used), 2 for
        debug messages
    :param seed: Seed for the pseudo random generators (each worker gets its own seed derived from it)
    :param device: The shared model and all workers run on the CPU; "auto" and "cpu" mean the CPU,
        any other device is refused with a warning and the CPU is used.
    :param _init_setup_model: Whether or not to build the network at the creation of the instance
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = POLICY_ALIASES

    def __init__(
        self,
        policy: str | type[BasePolicy],
        env: GymEnv | str,
        learning_rate: float | Schedule = 7e-4,
        n_steps: int = 20,
        gamma: float = 0.99,
        gae_lambda: float = 1.0,
        ent_coef: float = 0.01,
        vf_coef: float = 0.5,
        max_grad_norm: float = 0.5,
        rms_prop_eps: float = 1e-5,
        use_rms_prop: bool = True,
        use_sde: bool = False,
        sde_sample_freq: int = -1,
        normalize_advantage: bool = False,
        n_envs: int | None = None,
        n_workers: int | None = None,
        stats_window_size: int = 100,
        tensorboard_log: str | None = None,
        policy_kwargs: dict[str, Any] | None = None,
        verbose: int = 0,
        seed: int | None = None,
        device: th.device | str = "cpu",
        _init_setup_model: bool = True,
    ):
        if n_envs is not None:
            require(is_positive_int(n_envs), "n_envs", n_envs, "an integer >= 1")
        if n_workers is not None:
            require(is_positive_int(n_workers), "n_workers", n_workers, "an integer >= 1 (or None: one worker per env)")
        check_fork_is_available(type(self).__name__)
        if isinstance(env, str):
            env = make_vec_env(env, n_envs=n_envs or default_n_workers(), seed=seed)
        elif n_envs is not None and hasattr(env, "num_envs") and env.num_envs != n_envs:
            raise ValueError(f"n_envs={n_envs} but the VecEnv has {env.num_envs} envs.")
        if env is not None:
            check_action_space(env.action_space, type(self).__name__)

        super().__init__(
            policy,
            env,
            learning_rate=learning_rate,
            n_steps=n_steps,
            gamma=gamma,
            gae_lambda=gae_lambda,
            ent_coef=ent_coef,
            vf_coef=vf_coef,
            max_grad_norm=max_grad_norm,
            use_sde=use_sde,
            sde_sample_freq=sde_sample_freq,
            stats_window_size=stats_window_size,
            tensorboard_log=tensorboard_log,
            policy_kwargs=dict(policy_kwargs or {}),
            verbose=verbose,
            device=cpu_device(device, type(self).__name__),
            seed=seed,
            _init_setup_model=False,
            supported_action_spaces=SUPPORTED_ACTION_SPACES,
        )
        check_hyperparameters(self)
        self.rms_prop_eps = rms_prop_eps
        self.use_rms_prop = use_rms_prop
        self.normalize_advantage = normalize_advantage
        self.n_workers = n_workers

        check_policy_kwargs(self.policy_class, self.policy_kwargs)
        if self.env is not None:
            check_worker_env_support(self.env, type(self).__name__)
            check_envs_divide_among_workers(self.n_envs, self._worker_count(), type(self).__name__)
        self._policy_kwargs_with_shared_optimizer()  # refuses optimizers that cannot be shared, before any process

        if _init_setup_model:
            self._setup_model()

    def _worker_count(self) -> int:
        """How many worker processes ``learn()`` starts for the current env."""
        return self.n_workers or self.n_envs

    def _policy_kwargs_with_shared_optimizer(self) -> dict[str, Any]:
        """
        ``policy_kwargs`` with the shared-memory version of the optimizer: RMSprop with SB3 A2C's settings by
        default, the user's ``optimizer_class`` otherwise (SB3's Adam with ``use_rms_prop=False``).
        """
        policy_kwargs = with_default_optimizer(self.policy_kwargs, self.use_rms_prop, self.rms_prop_eps)
        optimizer_class = policy_kwargs.get("optimizer_class", th.optim.Adam)
        if optimizer_class is th.optim.Adam:
            # SB3's policies add eps=1e-5 to Adam; keep that for its shared version
            policy_kwargs["optimizer_kwargs"] = {"eps": 1e-5, **(policy_kwargs.get("optimizer_kwargs") or {})}
        policy_kwargs["optimizer_class"] = shared_optimizer_class(optimizer_class)
        return policy_kwargs

    def _setup_model(self) -> None:
        # No rollout buffer here: each worker fills its own
        build_policy(self, self._policy_kwargs_with_shared_optimizer())

    @property
    def rollout_buffer(self) -> None:
        raise AttributeError(
            "A3C has no rollout_buffer in the main process: each worker fills its own and applies its update "
            "there (see the README, 'Differences from SB3's A2C'). Callbacks get the episode statistics "
            "(self.model.ep_info_buffer) and the train/* metrics (self.logger.name_to_value) in _on_rollout_end."
        )

    def _share_model(self) -> None:
        """Put the policy and the optimizer statistics in shared memory (again, after a load)."""
        self.policy.share_memory()
        optimizer = self.policy.optimizer
        if not isinstance(optimizer, SharedOptimizerMixin):
            raise ValueError(f"policy.optimizer must keep its state in shared memory, got {type(optimizer).__name__}")
        optimizer.share_memory()

    def _make_local_policy(self) -> BasePolicy:
        """
        A private policy for a worker. It only computes gradients and its parameters are overwritten from
        the shared policy before each rollout, so it skips the (slow) orthogonal initialisation, and its own
        optimizer is a stateless placeholder. Its convolution weights are kept channels-last: on a CPU
        that makes the forward and backward passes of the Atari networks cheaper (``load_state_dict``
        copies the shared parameters into that layout, and the gradients handed to the shared
        optimizer keep it; both work across layouts).
        """
        policy_kwargs = {**self.policy_kwargs, "ortho_init": False, "optimizer_class": th.optim.SGD, "optimizer_kwargs": {}}
        local_policy = self.policy_class(
            self.observation_space, self.action_space, self.lr_schedule, use_sde=self.use_sde, **policy_kwargs
        )
        return local_policy.to(memory_format=th.channels_last)

    def _make_job(self, total_timesteps: int) -> ActorLearnerJob:
        context = multiprocessing.get_context("fork")
        # Distinct seeds per worker, drawn from the (seeded) main-process generator
        worker_seeds = [int(seed) for seed in np.random.randint(0, 2**31 - 1, size=self._worker_count())]
        return ActorLearnerJob(
            shared_policy=self.policy,
            make_local_policy=self._make_local_policy,
            training_env=self.env,
            envs_per_worker=self.n_envs // self._worker_count(),
            worker_seeds=worker_seeds,
            n_steps=self.n_steps,
            gamma=self.gamma,
            gae_lambda=self.gae_lambda,
            ent_coef=self.ent_coef,
            vf_coef=self.vf_coef,
            max_grad_norm=self.max_grad_norm,
            normalize_advantage=self.normalize_advantage,
            use_sde=self.use_sde,
            sde_sample_freq=self.sde_sample_freq,
            lr_schedule=self.lr_schedule,
            global_step_counter=context.Value("q", self.num_timesteps),
            total_timesteps=total_timesteps,
            stop_event=context.Event(),
            update_lock=context.Lock(),
        )

    def train(self) -> None:
        """
        Not used: A3C updates the shared policy in its worker processes, each after its own rollout.

        The update is ``sb3_a3c.a3c.update.apply_update`` (loss, gradient, shared optimizer step), called by
        the actor-learner loop ``sb3_a3c.a3c.actor_learner.run_actor_learner``; ``learn()`` starts the
        workers and turns their reports into SB3's callbacks and logs (``sb3_a3c.a3c.reporting``).
        """
        raise NotImplementedError(
            "A3C has no main-process update: each worker applies its own (sb3_a3c.a3c.update.apply_update). Call learn()."
        )

    def learn(
        self: SelfA3C,
        total_timesteps: int,
        callback: MaybeCallback = None,
        log_interval: int = 100,
        tb_log_name: str = "A3C",
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
    ) -> SelfA3C:
        total_timesteps, callback = self._setup_learn(
            total_timesteps, callback, reset_num_timesteps, tb_log_name, progress_bar
        )
        callback.on_training_start(locals(), globals())
        assert self.env is not None
        n_workers = self._worker_count()
        # The env may have been replaced (set_env, load) since __init__ checked it
        check_envs_divide_among_workers(self.n_envs, n_workers, type(self).__name__)

        self._share_model()
        job = self._make_job(total_timesteps)
        self._update_lock = job.update_lock
        # Steps the workers have collected, ahead of num_timesteps while reports wait to be handled
        self._global_step_counter = job.global_step_counter
        report_handler = WorkerReportHandler(self, n_workers, callback, log_interval, total_timesteps)

        def describe_worker(rank: int) -> str:
            return describe_env(self.env, job.worker_env_indices(rank)[0])

        # The workers use the cores; callbacks that run the policy here (EvalCallback) use one thread
        main_process_threads = th.get_num_threads()
        th.set_num_threads(1)
        try:
            with WorkerPool(n_workers, partial(run_actor_learner, job), job.stop_event, describe_worker) as pool:
                callback.on_rollout_start()
                for report in pool.reports():
                    if not report_handler.handle(report):
                        pool.request_stop()
        finally:
            th.set_num_threads(main_process_threads)
            self._update_lock = self._global_step_counter = None
            report_handler.finish()

        callback.on_training_end()
        return self

    def get_parameters(self) -> dict[str, dict]:
        # Workers may be writing the shared parameters: copy them between two updates
        lock = getattr(self, "_update_lock", None)
        if lock is None:
            return super().get_parameters()
        if not lock.acquire(timeout=SNAPSHOT_LOCK_TIMEOUT):
            raise RuntimeError(
                f"Could not take a consistent snapshot of the shared model within {SNAPSHOT_LOCK_TIMEOUT} s: "
                "a worker holds the update lock (it may have died during an update)."
            )
        try:
            # deepcopy: private tensors, no longer shared with the workers
            return copy.deepcopy(super().get_parameters())
        finally:
            lock.release()

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_update_lock", "_global_step_counter"]
