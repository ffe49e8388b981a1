"""
How the main process shows the workers' asynchronous reports to SB3's callbacks: one step of the training
VecEnv (``n_envs`` env steps) after another, and the end of an iteration (``on_rollout_end``, the train
metrics) after every ``n_steps`` of them. ``A3C.learn()`` applies them to the model and its callbacks.

Step ``t`` of the main process's view is step ``t`` of every worker: the merger keeps each worker's reports
until every worker has reported the same step, so that ``self.locals["dones"][i]`` is always env ``i``'s (the
workers keep within a few rollouts of each other for that, ``ActorLearnerJob.max_rollouts_ahead``).

Only a callback of the user's own may read the per-step arrays (``callback_reads_step_locals``): SB3's,
sb3-contrib's and the RL Zoo's callbacks read ``dones`` and ``infos`` at most. Without such a callback the
workers send only the episodes that ended, and the main process shows ``dones`` and ``infos`` rebuilt from them
(the ``infos`` of envs whose episode goes on are empty).
"""

from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback, ConvertCallback

from sb3_a3c.a3c.messages import ARRAY_KEYS, TENSOR_KEYS, RolloutReport, RolloutSteps
from sb3_a3c.common.update import UpdateMetrics

# Modules whose callbacks read no per-step array but ``dones`` and ``infos``
LIBRARY_CALLBACK_MODULES = ("stable_baselines3.", "sb3_contrib.", "rl_zoo3.", "sb3_a3c.")


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
            progress.extend(VecEnvStep(merge_step(rollouts, t)) for t in range(rollouts[0].steps_per_env))
            progress.append(IterationEnd([report.metrics for report in oldest]))
        return progress

    def unmerged_steps(self) -> list[VecEnvStep]:
        """The steps of the reports that no other worker matched (the workers ended unevenly), each worker's apart."""
        steps = [
            VecEnvStep(merge_step([report.steps], t))
            for pending in self._pending
            for report in pending
            for t in range(report.steps.steps_per_env)
        ]
        for pending in self._pending:
            pending.clear()
        return steps


def _concatenate(parts: list[Any]) -> Any:
    if isinstance(parts[0], dict):
        return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}
    return np.concatenate(parts)


def merge_step(rollouts: list[RolloutSteps], t: int) -> dict[str, Any]:
    """
    The locals of step ``t`` of all workers at once, as SB3 would give them for the whole training VecEnv.

    :param rollouts: one rollout per worker, in worker rank order (the order of the envs in the VecEnv)
    :param t: the step within the rollouts
    :return: ``dones`` (numpy), ``infos`` (a list) and ``n_steps`` (``t``, as in SB3); with every local recorded,
        also ``actions``, ``clipped_actions``, ``rewards``, ``new_obs`` (numpy), ``values`` and ``log_probs`` (torch)
    """
    if rollouts[0].steps is None:
        dones = np.zeros(sum(rollout.n_envs for rollout in rollouts), dtype=bool)
        infos: list[dict[str, Any]] = [{} for _ in dones]
        first_env = 0
        for rollout in rollouts:
            for step, env, info in rollout.episode_ends:
                if step == t:
                    dones[first_env + env] = True
                    infos[first_env + env] = info
            first_env += rollout.n_envs
        return {"dones": dones, "infos": infos, "n_steps": t}
    steps = [rollout.steps[t] for rollout in rollouts]  # type: ignore[index]
    merged: dict[str, Any] = {key: np.concatenate([step[key] for step in steps]) for key in ARRAY_KEYS}
    merged.update({key: th.as_tensor(np.concatenate([step[key] for step in steps])) for key in TENSOR_KEYS})
    merged["infos"] = [info for step in steps for info in step["infos"]]
    merged["new_obs"] = _concatenate([step["new_obs"] for step in steps])
    merged["n_steps"] = t
    return merged


def _callbacks_in(callback: BaseCallback) -> list[BaseCallback]:
    """``callback`` and every callback it holds (CallbackList members, EvalCallback's callbacks, ...)."""
    found: list[BaseCallback] = []
    pending = [callback]
    while pending:
        current = pending.pop()
        if any(current is seen for seen in found):
            continue
        found.append(current)
        for name, value in vars(current).items():
            if name == "parent":
                continue
            candidates = value if isinstance(value, (list, tuple)) else [value]
            pending.extend(candidate for candidate in candidates if isinstance(candidate, BaseCallback))
    return found


def callback_reads_step_locals(callback: BaseCallback) -> bool:
    """
    Whether ``callback`` (or a callback it holds) may read a per-step array of ``self.locals`` (``actions``,
    ``new_obs``, ...): any callback that is not one of the libraries' own, and any function turned into a
    callback (``ConvertCallback``; SB3 wraps ``callback=None`` in one that calls nothing).
    """
    return any(
        (isinstance(member, ConvertCallback) and member.callback is not None)
        or not type(member).__module__.startswith(LIBRARY_CALLBACK_MODULES)
        for member in _callbacks_in(callback)
    )
