"""
What A3C workers report after each update, and how the main process turns those asynchronous reports
into the view SB3 users know: the ``num_timesteps`` counter, one ``callback.on_step()`` per step of the
training VecEnv (``n_envs`` environment steps) with that step's locals, a rollout (``on_rollout_end`` /
``on_rollout_start``, train metrics, log dump) per ``n_steps`` such steps.

Step ``t`` of the main process's view is step ``t`` of every worker: the main process keeps each worker's
reports until every worker has reported the same step, so that ``self.locals["dones"][i]`` is always env
``i``'s (the workers keep within a few rollouts of each other for that, ``ActorLearnerJob.max_rollouts_ahead``).
"""

from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm

from sb3_a3c.a3c.step_locals import RolloutSteps, merge_step
from sb3_a3c.a3c.update import UpdateMetrics
from sb3_a3c.common.train_logging import record_train_metrics


@dataclass
class RolloutReport:
    """One finished update of one actor-learner: what it collected and the loss it applied."""

    worker_rank: int
    # Environment steps collected for this update (over all the worker's envs)
    n_steps: int
    metrics: UpdateMetrics
    # What SB3 shows a callback at each step of the rollout
    steps: RolloutSteps
    # Observation/return statistics of the worker's VecNormalize, when it has one
    normalization_stats: Any = None


@dataclass
class WorkerEnvs:
    """A worker's envs, sent once its last update is done (``worker_envs.export_worker_env``), or why they could not be."""

    worker_rank: int
    data: bytes | None
    error: str | None = None


class WorkerReportHandler:
    """
    Drive SB3's callbacks and logger from worker reports, in the main process.

    An "iteration" is one update of each worker (``n_workers`` updates), i.e. ``n_steps * n_envs``
    environment steps: the same amount of experience as one iteration of SB3's A2C with the same VecEnv.

    :param model: the algorithm being trained (its counters, info buffer and logger are updated)
    :param n_workers: the number of worker processes
    :param callback: the callback given to ``learn()`` (already initialised by ``_setup_learn``)
    :param log_interval: dump the logs every ``log_interval`` iterations
    :param total_timesteps: the budget, for the progress that drives the learning rate schedule
    """

    def __init__(
        self,
        model: OnPolicyAlgorithm,
        n_workers: int,
        callback: BaseCallback,
        log_interval: int | None,
        total_timesteps: int,
    ) -> None:
        self.model = model
        self.n_workers = n_workers
        self.callback = callback
        self.log_interval = log_interval
        self.total_timesteps = total_timesteps
        self.iteration = 0
        self.training_stopped = False
        # Reports not yet shown to the callback, per worker, oldest first
        self._pending: list[deque[RolloutReport]] = [deque() for _ in range(n_workers)]
        # Steps of the oldest pending reports already shown to the callback
        self._steps_shown = 0

    def handle(self, report: RolloutReport) -> bool:
        """
        Account for one worker update.

        :return: False once a callback asked to stop training
        """
        model = self.model
        model._n_updates += 1
        if report.normalization_stats is not None and model._vec_normalize_env is not None:
            model._vec_normalize_env.obs_rms, model._vec_normalize_env.ret_rms = report.normalization_stats
        if self.training_stopped:
            self._count_without_callbacks(report)
            return False
        self._pending[report.worker_rank].append(report)
        while all(self._pending):
            oldest = [pending[0] for pending in self._pending]
            while self._steps_shown < len(oldest[0].steps):
                self._steps_shown += 1
                if not self._show_step(oldest, self._steps_shown - 1):
                    self.training_stopped = True
                    return False
            for pending in self._pending:
                pending.popleft()
            self._steps_shown = 0
            self._end_iteration([report.metrics for report in oldest])
        return True

    def finish(self) -> None:
        """Count the steps of the reports the callback was not shown (training stopped, or the workers ended unevenly)."""
        for pending in self._pending:
            for index, report in enumerate(pending):
                self._count_without_callbacks(report, first_step=self._steps_shown if index == 0 else 0)
            pending.clear()
        self._steps_shown = 0

    def _show_step(self, reports: list[RolloutReport], t: int) -> bool:
        """Step ``t`` of every worker, as one step of the training VecEnv: ``on_step`` and episode statistics."""
        model = self.model
        step_locals = merge_step([report.steps for report in reports], t)
        model.num_timesteps += len(step_locals["dones"])
        self.callback.update_locals({**step_locals, "env": model.env})
        if not self.callback.on_step():
            return False
        model._update_info_buffer(step_locals["infos"], step_locals["dones"])
        return True

    def _count_without_callbacks(self, report: RolloutReport, first_step: int = 0) -> None:
        for step in report.steps.steps[first_step:]:
            self.model.num_timesteps += len(step["dones"])
            self.model._update_info_buffer(step["infos"], step["dones"])

    def _end_iteration(self, metrics: list[UpdateMetrics]) -> None:
        model = self.model
        self.callback.on_rollout_end()
        self.iteration += 1
        model._update_current_progress_remaining(model.num_timesteps, self.total_timesteps)
        model._update_learning_rate(model.policy.optimizer)
        record_train_metrics(
            model.logger,
            model.policy,
            n_updates=model._n_updates,
            explained_variance=float(np.mean([m.explained_variance for m in metrics])),
            entropy_loss=float(np.mean([m.entropy_loss for m in metrics])),
            policy_loss=float(np.mean([m.policy_loss for m in metrics])),
            value_loss=float(np.mean([m.value_loss for m in metrics])),
            grad_norm=float(np.mean([m.grad_norm for m in metrics])),
        )
        if self.log_interval is not None and self.iteration % self.log_interval == 0:
            model.dump_logs(self.iteration)
        self.callback.on_rollout_start()
