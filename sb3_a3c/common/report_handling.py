"""
Turn the asynchronous reports of A3C workers into the main-process view SB3 users know: the
``num_timesteps`` counter, one ``callback.on_step()`` per ``n_envs`` environment steps, a rollout
(``on_rollout_end`` / ``on_rollout_start``, train metrics, log dump) per ``n_workers`` worker updates.
"""

from typing import TYPE_CHECKING, Any

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback

from sb3_a3c.common.messages import RolloutReport

if TYPE_CHECKING:
    from sb3_a3c.a3c.a3c import A3C


class WorkerReportHandler:
    """
    Drive SB3's callbacks and logger from worker reports, in the main process.

    An "iteration" is one update of each worker on average (``n_workers`` updates), i.e.
    ``n_steps * n_envs`` environment steps: the same amount of experience as one iteration of SB3's A2C
    with the same VecEnv.

    :param model: the algorithm being trained
    :param n_workers: the number of worker processes
    :param callback: the callback given to ``learn()`` (already initialised by ``_setup_learn``)
    :param log_interval: dump the logs every ``log_interval`` iterations
    :param total_timesteps: the budget, for the progress that drives the learning rate schedule
    """

    def __init__(
        self, model: "A3C", n_workers: int, callback: BaseCallback, log_interval: int | None, total_timesteps: int
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
        reports, self._iteration_reports = self._iteration_reports, []
        model.logger.record("train/n_updates", model._n_updates, exclude="tensorboard")
        model.logger.record("train/explained_variance", float(np.mean([r.explained_variance for r in reports])))
        model.logger.record("train/entropy_loss", float(np.mean([r.entropy_loss for r in reports])))
        model.logger.record("train/policy_loss", float(np.mean([r.policy_loss for r in reports])))
        model.logger.record("train/value_loss", float(np.mean([r.value_loss for r in reports])))
        model.logger.record("train/grad_norm", float(np.mean([r.grad_norm for r in reports])))
        if hasattr(model.policy, "log_std"):
            model.logger.record("train/std", th.exp(model.policy.log_std).mean().item())
        if self.log_interval is not None and self.iteration % self.log_interval == 0:
            model.dump_logs(self.iteration)
        self.callback.on_rollout_start()
