"""A3C and SyncA2C for Stable-Baselines3 and the RL Zoo."""

from sb3_a3c.a3c import A3C
from sb3_a3c.common.policies import CnnTwoHeadPolicy
from sb3_a3c.common.shared_optimizers import SharedAdam, SharedRMSprop
from sb3_a3c.common.worker_pool import WorkerError
from sb3_a3c.sync_a2c import SyncA2C
from sb3_a3c.version import __version__

__all__ = ["A3C", "CnnTwoHeadPolicy", "SharedAdam", "SharedRMSprop", "SyncA2C", "WorkerError", "__version__"]
