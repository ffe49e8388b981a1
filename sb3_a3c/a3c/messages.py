"""What A3C's workers send the main process: the wire types both sides import."""

from dataclasses import dataclass, field
from typing import Any

from sb3_a3c.common.update import UpdateMetrics


@dataclass
class RolloutSteps:
    """
    What SB3 would have shown a callback at each step of one worker's rollout.

    When a callback of the user's own is attached, every step's locals travel: ``steps[t][key]``, one row per
    env of the worker (``step_locals.StepRecorder``). Otherwise (only SB3's, sb3-contrib's or the Zoo's
    callbacks, which read no per-step array) only the finished episodes travel, as ``(t, env, info)``.

    :param n_steps: steps of each env in the rollout
    :param n_envs: the worker's envs
    :param steps: every step's locals (None: not recorded)
    :param episode_ends: when ``steps`` is None, the episodes that ended: at step ``t``, in the worker's env
        ``env``, with that env's ``info``
    """

    n_steps: int
    n_envs: int
    steps: list[dict[str, Any]] | None = None
    episode_ends: list[tuple[int, int, dict[str, Any]]] = field(default_factory=list)


@dataclass
class RolloutReport:
    """One finished update of one actor-learner: what it collected and the loss it applied."""

    worker_rank: int
    # Environment steps collected for this update (over all the worker's envs)
    n_steps: int
    metrics: UpdateMetrics
    steps: RolloutSteps
    # Observation/return statistics of the worker's VecNormalize, when it has one
    normalization_stats: Any = None


@dataclass
class WorkerEnvs:
    """A worker's envs, sent once its last update is done (``worker_envs.export_worker_env``), or why they could not be."""

    worker_rank: int
    data: bytes | None
    error: str | None = None
