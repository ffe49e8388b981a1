"""
How the main process orders the workers' asynchronous reports into the view SB3 users know: one step of the
training VecEnv (``n_envs`` env steps) after another, and the end of an iteration (``on_rollout_end``, the
train metrics) after every ``n_steps`` of them. ``A3C.learn()`` applies them to the model and its callbacks.

Step ``t`` of the main process's view is step ``t`` of every worker: the merger keeps each worker's reports
until every worker has reported the same step, so that ``self.locals["dones"][i]`` is always env ``i``'s (the
workers keep within a few rollouts of each other for that, ``ActorLearnerJob.max_rollouts_ahead``).
"""

from collections import deque
from dataclasses import dataclass
from typing import Any

from sb3_a3c.a3c.messages import RolloutReport
from sb3_a3c.a3c.step_locals import merge_step
from sb3_a3c.common.update import UpdateMetrics


@dataclass
class VecEnvStep:
    """One step of the training VecEnv: the locals SB3's ``collect_rollouts`` shows a callback at that step."""

    locals: dict[str, Any]


@dataclass
class IterationEnd:
    """One update of each worker is done (``n_steps * n_envs`` env steps since the previous one): their metrics."""

    metrics: list[UpdateMetrics]


class ReportMerger:
    """
    Merge the reports of ``n_workers`` workers, in worker rank order, into the steps of the training VecEnv.

    :param n_workers: the number of workers (of all machines)
    """

    def __init__(self, n_workers: int) -> None:
        # Reports not yet merged, per worker, oldest first
        self._pending: list[deque[RolloutReport]] = [deque() for _ in range(n_workers)]

    def add(self, report: RolloutReport) -> list[VecEnvStep | IterationEnd]:
        """
        Take one report; return the steps and iteration ends it completes (none until every worker has
        reported the same rollout), in order.
        """
        self._pending[report.worker_rank].append(report)
        progress: list[VecEnvStep | IterationEnd] = []
        while all(self._pending):
            oldest = [pending.popleft() for pending in self._pending]
            rollouts = [report.steps for report in oldest]
            progress.extend(VecEnvStep(merge_step(rollouts, t)) for t in range(rollouts[0].n_steps))
            progress.append(IterationEnd([report.metrics for report in oldest]))
        return progress

    def unmerged_steps(self) -> list[VecEnvStep]:
        """The steps of the reports that no other worker matched (the workers ended unevenly), each worker's apart."""
        steps = [
            VecEnvStep(merge_step([report.steps], t))
            for pending in self._pending
            for report in pending
            for t in range(report.steps.n_steps)
        ]
        for pending in self._pending:
            pending.clear()
        return steps
