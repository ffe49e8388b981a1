"""A3C and SyncA2C for Stable-Baselines3 and the RL Zoo."""

from sb3_a3c.a3c import A3C
from sb3_a3c.common.shared_optimizers import SharedAdam, SharedRMSprop
from sb3_a3c.common.worker_pool import WorkerError
from sb3_a3c.version import __version__

__all__ = ["A3C", "SharedAdam", "SharedRMSprop", "WorkerError", "__version__"]
