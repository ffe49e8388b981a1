import copy
import math
import multiprocessing
import multiprocessing.sharedctypes
import os
import threading
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch as th
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, Schedule
from stable_baselines3.common.vec_env import unwrap_vec_normalize

from sb3_a3c.a3c.actor_learner import ActorLearnerJob, WorkerStart, run_actor_learner
from sb3_a3c.a3c.reporting import WorkerEnvs, WorkerReportHandler
from sb3_a3c.a3c.shared_optimizers import SharedOptimizerMixin, shared_optimizer_class
from sb3_a3c.a3c.step_locals import callback_may_read_observations
from sb3_a3c.a3c.synchronous_update import GradientExchange
from sb3_a3c.a3c.validation import check_envs_divide_among_workers, check_fork_is_available, cpu_device
from sb3_a3c.a3c.worker_envs import check_worker_env_support, describe_env, import_worker_env, put_back_worker_envs
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
    With ``synchronous_updates=True`` the workers instead apply the mean of their gradients together
    (``sb3_a3c.a3c.synchronous_update``).
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
    :param max_grad_norm: The maximum value for the gradient clipping (of each worker's gradient; with
        ``synchronous_updates``, of the workers' mean gradient)
    :param rms_prop_eps: RMSProp epsilon. It stabilizes square root computation in denominator
        of RMSProp update
    :param use_rms_prop: Whether to use shared RMSprop (default: ``SharedRMSpropFromOne``, its running average started
        at one, so that the first updates do not switch off ReLU units) or shared Adam as optimizer
    :param use_sde: Whether to use generalized State Dependent Exploration (gSDE)
        instead of action noise exploration (default: False)
    :param sde_sample_freq: Sample a new noise matrix every n steps when using gSDE
        Default: -1 (only sample at the beginning of the rollout)
    :param normalize_advantage: Whether to normalize or not the advantage
    :param n_envs: Number of envs to create when ``env`` is an env id (default: one per CPU core)
    :param n_workers: Number of worker processes; the envs are split evenly between them. Default (None):
        one worker per env. On a CPU, one worker per core with several envs each is usually fastest.
    :param synchronous_updates: Whether the workers wait for each other after each rollout: worker 0 then
        applies the mean of all workers' gradients in one optimizer step, and every worker starts its next
        rollout from the parameters of that step (the update synchronous A2C makes with all ``n_envs``
        envs, computed by ``n_workers`` processes). False (default): asynchronous (Hogwild), each worker
        applies its own gradient as soon as it has it. Not available with ``ray_address``.
    :param ray_address: Train on the machines of a Ray cluster (``pip install "sb3-a3c[ray]"``): "auto" for the
        cluster ``ray start`` runs on this machine, "HOST:PORT" for another, "local" for a Ray cluster of this
        machine alone. One learner per machine runs ``n_workers / n_machines`` workers on ``n_envs / n_machines``
        envs; optimizer statistics are shared within a machine (each machine has its own); the main process
        keeps the global parameters, which ``save()`` stores. None (default): this machine only, without Ray.
    :param n_machines: With ``ray_address``: how many learners to start (None: one per alive node with a CPU)
    :param machine_sync_interval: With ``ray_address``: updates of a machine's workers between two exchanges of
        parameters with the main process (the change goes up, the global parameters come down)
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
        synchronous_updates: bool = False,
        ray_address: str | None = None,
        n_machines: int | None = None,
        machine_sync_interval: int = 10,
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
        require(
            ray_address is None or isinstance(ray_address, str),
            "ray_address",
            ray_address,
            '"auto", "HOST:PORT", "local" or None',
        )
        if n_machines is not None:
            require(is_positive_int(n_machines), "n_machines", n_machines, "an integer >= 1 (or None: one per Ray node)")
        require(isinstance(synchronous_updates, bool), "synchronous_updates", synchronous_updates, "True or False")
        require(is_positive_int(machine_sync_interval), "machine_sync_interval", machine_sync_interval, "an integer >= 1")
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
        self.synchronous_updates = synchronous_updates
        self.ray_address = ray_address
        self.n_machines = n_machines
        self.machine_sync_interval = machine_sync_interval

        check_policy_kwargs(self.policy_class, self.policy_kwargs)
        if self.env is not None:
            check_worker_env_support(self.env, type(self).__name__)
            check_envs_divide_among_workers(self.n_envs, self._worker_count(), type(self).__name__)
            self._check_machines()
        self._policy_kwargs_with_shared_optimizer()  # refuses optimizers that cannot be shared, before any process

        if _init_setup_model:
            self._setup_model()

    def _worker_count(self) -> int:
        """How many worker processes ``learn()`` starts for the current env (on all machines together)."""
        return self.n_workers or self.n_envs

    def _check_machines(self) -> None:
        """Refuse, before anything starts, what the Ray backend cannot run."""
        if self.ray_address is None:
            return
        if self.synchronous_updates:
            raise ValueError(
                "synchronous_updates=True cannot be used with ray_address: the workers of different machines do not "
                "wait for each other. Train with synchronous_updates=False on Ray, or on one machine (ray_address=None)."
            )
        if unwrap_vec_normalize(self.env) is not None:
            raise ValueError(
                "VecNormalize cannot be used with ray_address: each machine would normalise with its own statistics, "
                "which A3C does not merge. Train without VecNormalize, or on one machine (ray_address=None)."
            )
        n_machines = self.n_machines
        if n_machines is not None and (self.n_envs % n_machines or self._worker_count() % n_machines):
            raise ValueError(
                f"n_envs={self.n_envs} and n_workers={self._worker_count()} must both be multiples of "
                f"n_machines={n_machines}: each machine runs the same share of the workers and envs."
            )

    def _rollouts_per_worker(self, total_timesteps: int) -> int:
        """As many rollouts of all envs as SB3's A2C would collect to reach ``total_timesteps``."""
        return max(0, math.ceil((total_timesteps - self.num_timesteps) / (self.n_steps * self.n_envs)))

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

    def _draw_worker_seeds(self) -> list[int]:
        """Distinct seeds, one per worker (all machines together), drawn from the (seeded) main-process generator."""
        return [int(seed) for seed in np.random.randint(0, 2**31 - 1, size=self._worker_count())]

    def _make_job(
        self,
        total_timesteps: int,
        record_observations: bool = False,
        starts: list[WorkerStart | None] | None = None,
        worker_seeds: list[int] | None = None,
        rollouts_per_worker: int | None = None,
    ) -> ActorLearnerJob:
        """
        What this machine's workers need. ``worker_seeds`` and ``rollouts_per_worker`` default to fresh seeds
        and this model's budget; a learner on Ray gets them from the main process.
        """
        context = multiprocessing.get_context("fork")
        n_workers = self._worker_count()
        if rollouts_per_worker is None:
            rollouts_per_worker = self._rollouts_per_worker(total_timesteps)
        return ActorLearnerJob(
            shared_policy=self.policy,
            make_local_policy=self._make_local_policy,
            training_env=self.env,
            envs_per_worker=self.n_envs // n_workers,
            worker_seeds=worker_seeds or self._draw_worker_seeds(),
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
            rollouts_per_worker=rollouts_per_worker,
            rollouts_done=multiprocessing.sharedctypes.RawArray("q", n_workers),
            stop_event=context.Event(),
            update_lock=context.Lock(),
            record_observations=record_observations,
            starts=starts or [],
            gradient_exchange=GradientExchange.for_policy(self.policy, n_workers) if self.synchronous_updates else None,
        )

    def _worker_starts_to_continue(self, reset_num_timesteps: bool) -> list[WorkerStart | None] | None:
        """
        The workers' envs as the previous ``learn()`` left them, to continue their episodes. As SB3 does,
        ``reset_num_timesteps=True`` (or another env, or another number of workers) starts from a reset instead.
        """
        saved = getattr(self, "_worker_starts", None)
        if reset_num_timesteps or saved is None:
            return None
        env, n_workers, starts = saved
        if env is not self.env or n_workers != self._worker_count():
            return None
        return starts

    def _take_back_worker_envs(self, job: ActorLearnerJob, messages: list[WorkerEnvs]) -> None:
        """Put the envs the workers advanced in place of the training env's own, and keep them for the next ``learn()``."""
        self._worker_starts = None
        received = {message.worker_rank: message for message in messages}
        if len(received) != self._worker_count():
            return  # some workers did not finish (they failed): the training env keeps its envs
        starts: list[WorkerStart | None] = []
        for rank in range(self._worker_count()):
            message = received[rank]
            try:
                if message.data is None:
                    raise RuntimeError(message.error)
                worker_env, collector_state = import_worker_env(message.data, self.env)
            except Exception as error:
                warnings.warn(
                    f"{type(self).__name__} could not bring the envs of worker {rank} back to the main process "
                    f"({str(error).strip().splitlines()[-1]}): the training env keeps its own envs, which did not advance, "
                    "and the next learn() starts its workers from them (see the README, 'Differences from SB3's A2C').",
                    stacklevel=3,
                )
                return
            starts.append(WorkerStart(worker_env, collector_state))
        for rank, start in enumerate(starts):
            assert start is not None
            put_back_worker_envs(self.env, start.env, job.worker_env_indices(rank))
        self._worker_starts = (self.env, self._worker_count(), starts)

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

        record_observations = callback_may_read_observations(callback)
        job: ActorLearnerJob | None = None
        pool: Any
        if self.ray_address is None:
            self._share_model()
            job = self._make_job(total_timesteps, record_observations, self._worker_starts_to_continue(reset_num_timesteps))
            self._update_lock = job.update_lock
            # Steps the workers have collected, ahead of num_timesteps while reports wait to be handled
            self._global_step_counter = job.global_step_counter
            pool = WorkerPool(n_workers, partial(run_actor_learner, job), job.stop_event, self._describe_worker(job))
        else:
            self._check_machines()
            pool = self._make_ray_pool(total_timesteps, record_observations)
            self._update_lock = pool.update_lock
        report_handler = WorkerReportHandler(self, n_workers, callback, log_interval, total_timesteps)
        worker_envs: list[WorkerEnvs] = []

        # The workers use the cores; callbacks that run the policy here (EvalCallback) use one thread
        main_process_threads = th.get_num_threads()
        th.set_num_threads(1)
        try:
            with pool:
                self._machines = getattr(pool, "machines", None)
                callback.on_rollout_start()
                for report in pool.reports():
                    if isinstance(report, WorkerEnvs):
                        worker_envs.append(report)
                    elif not report_handler.handle(report):
                        pool.request_stop()
            if job is not None:
                self._take_back_worker_envs(job, worker_envs)
            else:
                # What the exchanges with the machines cost (docs/benchmarks.md, "More than one machine")
                self.machine_sync_statistics = pool.sync_statistics()
        finally:
            th.set_num_threads(main_process_threads)
            self._update_lock = self._global_step_counter = self._machines = None
            report_handler.finish()

        callback.on_training_end()
        return self

    def _describe_worker(self, job: ActorLearnerJob) -> Callable[[int], str]:
        def describe_worker(rank: int) -> str:
            return describe_env(self.env, job.worker_env_indices(rank)[0])

        return describe_worker

    def _make_ray_pool(self, total_timesteps: int, record_observations: bool) -> Any:
        """The machines of the Ray cluster at ``ray_address`` as a worker pool (``sb3_a3c.a3c.ray_machines``)."""
        from sb3_a3c.a3c.ray_machines import RayMachinePool  # imports Ray: only here

        return RayMachinePool(
            model=self,
            training_env=self.env,
            worker_seeds=self._draw_worker_seeds(),
            rollouts_per_worker=self._rollouts_per_worker(total_timesteps),
            total_timesteps=total_timesteps,
            record_observations=record_observations,
            address=self.ray_address,
            n_machines=self.n_machines,
            sync_interval=self.machine_sync_interval,
            update_lock=threading.Lock(),
        )

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
        # Set during learn(), or live objects of this process (envs, locks, Ray handles)
        during_learn = ["_update_lock", "_global_step_counter", "_worker_starts", "_machines", "machine_sync_statistics"]
        return [*super()._excluded_save_params(), *during_learn]
