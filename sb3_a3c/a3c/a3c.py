import copy
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback, Schedule
from stable_baselines3.common.vec_env import unwrap_vec_normalize

from sb3_a3c.a3c.config import A3CConfig
from sb3_a3c.a3c.job import ActorLearnerJob, RunSettings, WorkerStart
from sb3_a3c.a3c.messages import RolloutReport
from sb3_a3c.a3c.runner.backends import Backend, OneMachineBackend
from sb3_a3c.a3c.runner.report_merger import IterationEnd, ReportMerger, VecEnvStep, callback_reads_step_locals
from sb3_a3c.a3c.shared_optimizers import SharedOptimizerMixin, shared_optimizer_class
from sb3_a3c.a3c.validation import check_envs_divide_among_workers, check_fork_is_available, cpu_device
from sb3_a3c.a3c.worker_envs import check_worker_env_support
from sb3_a3c.common.loading import ClearLoadErrorsMixin
from sb3_a3c.common.policies import POLICY_ALIASES, build_policy, check_policy_kwargs, with_default_optimizer
from sb3_a3c.common.train_logging import record_train_metrics
from sb3_a3c.common.update import UpdateMetrics, UpdateSettings
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


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """The workers use the cores; callbacks that run the policy in the main process (EvalCallback) use one thread."""
    threads = th.get_num_threads()
    th.set_num_threads(1)
    try:
        yield
    finally:
        th.set_num_threads(threads)


class A3C(ClearLoadErrorsMixin, OnPolicyAlgorithm):
    """
    Asynchronous Advantage Actor Critic (A3C), with Hogwild actor-learners in worker processes

    Paper: https://arxiv.org/abs/1602.01783
    ``n_workers`` worker processes share the envs of the training VecEnv (one env each by default).
    A worker copies the shared policy, collects ``n_steps`` transitions from each of its envs (stepped
    together, so the policy's forward pass is batched), and applies the gradient of its loss to the shared
    policy with the shared optimizer (statistics in shared memory): the loop is
    ``sb3_a3c.a3c.worker.actor_learner.run_actor_learner``, the update ``sb3_a3c.a3c.worker.updates``.
    With ``synchronous_updates=True`` the workers instead apply the mean of their gradients together.
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
    :param use_rms_prop: Whether to use shared RMSprop with SB3 A2C's settings (default: ``SharedRMSprop``) or shared
        Adam as optimizer (``policy_kwargs=dict(optimizer_class=...)`` chooses another one, made shared)
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

    def config(self) -> A3CConfig:
        """What the workers need of this model: its hyperparameters and how to build its policy."""
        return A3CConfig(
            policy_class=self.policy_class,  # type: ignore[arg-type]
            policy_kwargs=self._policy_kwargs_with_shared_optimizer(),
            observation_space=self.observation_space,
            action_space=self.action_space,
            lr_schedule=self.lr_schedule,
            n_steps=self.n_steps,
            gamma=self.gamma,
            gae_lambda=self.gae_lambda,
            update=UpdateSettings(self.ent_coef, self.vf_coef, self.max_grad_norm, self.normalize_advantage),  # type: ignore[arg-type]
            use_sde=self.use_sde,
            sde_sample_freq=self.sde_sample_freq,
        )

    def _share_model(self) -> None:
        """Put the policy and the optimizer statistics in shared memory (again, after a load)."""
        self.policy.share_memory()
        optimizer = self.policy.optimizer
        if not isinstance(optimizer, SharedOptimizerMixin):
            raise ValueError(f"policy.optimizer must keep its state in shared memory, got {type(optimizer).__name__}")
        optimizer.share_memory()

    def _worker_starts_to_continue(self, reset_num_timesteps: bool) -> list[WorkerStart] | None:
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

    def _make_backend(self, total_timesteps: int, record_step_locals: bool, reset_num_timesteps: bool) -> Backend:
        """This machine's forked workers, or the machines of the Ray cluster at ``ray_address``."""
        run = RunSettings(
            # Distinct seeds, one per worker (all machines together), from the (seeded) main-process generator
            worker_seeds=tuple(int(seed) for seed in np.random.randint(0, 2**31 - 1, size=self._worker_count())),
            rollouts_per_worker=self._rollouts_per_worker(total_timesteps),
            total_timesteps=total_timesteps,
            record_step_locals=record_step_locals,
        )
        if self.ray_address is not None:
            self._check_machines()
            from sb3_a3c.a3c.runner.ray_machines import RayBackend  # imports Ray: only here

            return RayBackend(
                self.config(), self.policy, self.env, run, self.num_timesteps,  # type: ignore[arg-type]
                self.ray_address, self.n_machines, self.machine_sync_interval,
            )  # fmt: skip
        self._share_model()
        starts = self._worker_starts_to_continue(reset_num_timesteps)
        job = ActorLearnerJob.create(
            self.config(),
            run,
            self.policy,
            self.env,
            self.num_timesteps,
            starts,
            self.synchronous_updates,  # type: ignore[arg-type]
        )
        return OneMachineBackend(job, type(self).__name__)

    def train(self) -> None:
        """
        Not used: A3C updates the shared policy in its worker processes, each after its own rollout.

        The update (loss, gradient, shared optimizer step) is ``sb3_a3c.a3c.worker.updates``, called by the
        actor-learner loop ``sb3_a3c.a3c.worker.actor_learner.run_actor_learner``; ``learn()`` starts the
        workers and turns their reports into SB3's callbacks and logs (``sb3_a3c.a3c.runner.report_merger``).
        """
        raise NotImplementedError(
            "A3C has no main-process update: each worker applies its own (sb3_a3c.a3c.worker.updates). Call learn()."
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
        # The env may have been replaced (set_env, load) since __init__ checked it
        check_envs_divide_among_workers(self.n_envs, self._worker_count(), type(self).__name__)
        backend = self._make_backend(total_timesteps, callback_reads_step_locals(callback), reset_num_timesteps)
        merger = ReportMerger(self._worker_count())
        self._training_stopped, self._iteration = False, 0
        try:
            with one_torch_thread(), backend:
                self._backend = backend
                callback.on_rollout_start()
                for report in backend.reports():
                    self._apply_report(report)
                    for progress in merger.add(report):
                        self._show(progress, callback, log_interval, total_timesteps)
                    if self._training_stopped:
                        backend.request_stop()
            self._worker_starts = (self.env, self._worker_count(), backend.take_back_envs())
            # What the exchanges with the machines cost (docs/benchmarks.md, "More than one machine")
            self.backend_statistics = backend.statistics()
        finally:
            self._backend = None
            for step in merger.unmerged_steps():
                self._count_step(step)
        callback.on_training_end()
        return self

    def _apply_report(self, report: RolloutReport) -> None:
        """One worker's update is done: count it, and mirror its VecNormalize statistics."""
        self._n_updates += 1
        if report.normalization_stats is not None and self._vec_normalize_env is not None:
            self._vec_normalize_env.obs_rms, self._vec_normalize_env.ret_rms = report.normalization_stats

    def _show(
        self, progress: VecEnvStep | IterationEnd, callback: BaseCallback, log_interval: int, total_timesteps: int
    ) -> None:
        """Show one step or iteration end to the callback, as SB3's ``collect_rollouts`` and ``learn`` would."""
        if self._training_stopped:
            if isinstance(progress, VecEnvStep):
                self._count_step(progress)
        elif isinstance(progress, VecEnvStep):
            self.num_timesteps += len(progress.locals["dones"])
            callback.update_locals({**progress.locals, "env": self.env})
            if not callback.on_step():
                self._training_stopped = True
                return
            self._update_info_buffer(progress.locals["infos"], progress.locals["dones"])
        else:
            self._end_iteration(progress, callback, log_interval, total_timesteps)

    def _count_step(self, step: VecEnvStep) -> None:
        """A step no callback is shown (training was stopped): its steps and episodes still count."""
        self.num_timesteps += len(step.locals["dones"])
        self._update_info_buffer(step.locals["infos"], step.locals["dones"])

    def _end_iteration(
        self, iteration_end: IterationEnd, callback: BaseCallback, log_interval: int, total_timesteps: int
    ) -> None:
        callback.on_rollout_end()
        self._iteration += 1
        self._update_current_progress_remaining(self.num_timesteps, total_timesteps)
        self._update_learning_rate(self.policy.optimizer)
        # The mean of each metric over the workers' updates of this iteration
        mean_metrics = UpdateMetrics(*map(float, np.mean(iteration_end.metrics, axis=0)))
        record_train_metrics(self.logger, self.policy, n_updates=self._n_updates, **mean_metrics._asdict())
        if log_interval is not None and self._iteration % log_interval == 0:
            self.dump_logs(self._iteration)
        callback.on_rollout_start()

    def get_parameters(self) -> dict[str, dict]:
        # Workers may be writing the shared parameters: copy them between two updates
        backend = getattr(self, "_backend", None)
        if backend is None:
            return super().get_parameters()
        lock = backend.update_lock
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
        during_learn = ["_backend", "_worker_starts", "_training_stopped", "_iteration", "backend_statistics"]
        return [*super()._excluded_save_params(), *during_learn]
