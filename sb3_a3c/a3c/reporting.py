"""
What A3C workers report after each update, and how the main process turns those asynchronous reports
into the view SB3 users know: the ``num_timesteps`` counter, one ``callback.on_step()`` per ``n_envs``
environment steps, a rollout (``on_rollout_end`` / ``on_rollout_start``, train metrics, log dump) per
``n_workers`` worker updates.
"""

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm

from sb3_a3c.a3c.update import UpdateMetrics
from sb3_a3c.common.train_logging import record_train_metrics


@dataclass
class RolloutReport:
    """One finished update of one actor-learner: what it collected and the loss it applied."""

    worker_rank: int
    # Environment steps collected for this update (over all the worker's envs)
    n_steps: int
    metrics: UpdateMetrics
    episode_infos: list[dict[str, Any]] = field(default_factory=list)
    # Observation/return statistics of the worker's VecNormalize, when it has one
    normalization_stats: Any = None


class WorkerReportHandler:
    """
    Drive SB3's callbacks and logger from worker reports, in the main process.

    An "iteration" is one update of each worker on average (``n_workers`` updates), i.e.
    ``n_steps * n_envs`` environment steps: the same amount of experience as one iteration of SB3's A2C
    with the same VecEnv.

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
        self._uncounted_steps = 0
        self._undelivered_infos: list[dict[str, Any]] = []
        self._iteration_reports: list[RolloutReport] = []

    def handle(self, report: RolloutReport) -> bool:
        """
        Account for one worker update.

        :return: False once a callback asked to stop training
        """
        model = self.model
        model._n_updates += 1
        model._update_info_buffer(report.episode_infos, np.ones(len(report.episode_infos), dtype=bool))
        if report.normalization_stats is not None and model._vec_normalize_env is not None:
            model._vec_normalize_env.obs_rms, model._vec_normalize_env.ret_rms = report.normalization_stats
        self._uncounted_steps += report.n_steps
        self._undelivered_infos.extend(report.episode_infos)
        if self.training_stopped:
            return False

        while self._uncounted_steps >= model.n_envs:
            self._uncounted_steps -= model.n_envs
            model.num_timesteps += model.n_envs
            infos, self._undelivered_infos = self._undelivered_infos, []
            # The episodes that ended since the previous call, as SB3's `dones`/`infos` locals
            self.callback.update_locals({"infos": infos, "dones": np.ones(len(infos), dtype=bool)})
            if not self.callback.on_step():
                self.training_stopped = True
                return False

        self._iteration_reports.append(report)
        if len(self._iteration_reports) == self.n_workers:
            self._end_iteration()
        return True

    def finish(self) -> None:
        """Count the steps of the last reports, which did not fill a whole ``on_step``."""
        self.model.num_timesteps += self._uncounted_steps
        self._uncounted_steps = 0

    def _end_iteration(self) -> None:
        model = self.model
        self.callback.on_rollout_end()
        self.iteration += 1
        model._update_current_progress_remaining(model.num_timesteps, self.total_timesteps)
        model._update_learning_rate(model.policy.optimizer)
        metrics = [report.metrics for report in self._iteration_reports]
        self._iteration_reports = []
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
