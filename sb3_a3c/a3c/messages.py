"""What A3C's workers send the runner: one ``RolloutReport`` per update, then their envs (``WorkerEnvs``)."""

from dataclasses import dataclass, field
from typing import Any

from sb3_a3c.common.update import UpdateMetrics

# Locals of SB3's ``collect_rollouts`` that are numpy arrays with one row per env
ARRAY_KEYS = ("actions", "clipped_actions", "rewards", "dones")
# Locals that are torch tensors with one row per env (they travel as numpy arrays)
TENSOR_KEYS = ("values", "log_probs")


@dataclass
class RolloutSteps:
    """
    What SB3 would have shown a callback at each step of one worker's rollout.

    When a callback of the user's own is attached, every step's locals travel: ``steps[t][key]``, one row per
    env of the worker (the keys ``ARRAY_KEYS``, ``TENSOR_KEYS``, ``infos`` and ``new_obs``). Otherwise (only
    SB3's, sb3-contrib's or the Zoo's callbacks, which read no per-step array) only the finished episodes
    travel, as ``(t, env, info)``.

    :param steps_per_env: steps of each env in the rollout
    :param n_envs: the worker's envs
    :param steps: every step's locals (None: not recorded)
    :param episode_ends: when ``steps`` is None, the episodes that ended: at step ``t``, in the worker's env
        ``env``, with that env's ``info``
    """

    steps_per_env: int
    n_envs: int
    steps: list[dict[str, Any]] | None = None
    episode_ends: list[tuple[int, int, dict[str, Any]]] = field(default_factory=list)


@dataclass
class RolloutReport:
    """
    One finished update of one worker: what it collected and the loss it applied.

    :param worker_rank: the worker's rank
    :param env_steps: environment steps collected for this update (over all the worker's envs)
    :param metrics: the update's ``train/*`` metrics
    :param steps: what callbacks are shown of the rollout's steps
    :param normalization_stats: observation/return statistics of the worker's VecNormalize, when it has one
    """

    worker_rank: int
    env_steps: int
    metrics: UpdateMetrics
    steps: RolloutSteps
    normalization_stats: Any = None


@dataclass
class WorkerEnvs:
    """A worker's envs, sent once its last update is done (``worker_envs.export_worker_env``), or why they could not be."""

    worker_rank: int
    data: bytes | None
    error: str | None = None
