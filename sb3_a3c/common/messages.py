"""What worker processes send to the main process."""

from dataclasses import dataclass, field
from typing import Any


@dataclass
class RolloutReport:
    """One finished update of one actor-learner: what it collected and the loss it applied."""

    worker_rank: int
    # Environment steps collected for this update (over all the worker's envs)
    n_steps: int
    episode_infos: list[dict[str, Any]] = field(default_factory=list)
    policy_loss: float = 0.0
    value_loss: float = 0.0
    entropy_loss: float = 0.0
    explained_variance: float = 0.0
    grad_norm: float = 0.0
    # Observation/return statistics of the worker's VecNormalize, when it has one
    normalization_stats: Any = None


@dataclass
class WorkerFailure:
    """An exception raised in a worker, with its formatted traceback."""

    worker_rank: int
    description: str
    traceback: str
