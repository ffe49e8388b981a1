"""
A3C and SyncA2C for Stable-Baselines3 and the RL Zoo.

Attributes are imported on first use, so that the RL Zoo hook installed at interpreter start-up
(``sb3_a3c.zoo.startup``) does not import torch in Python processes that never train.
"""

import importlib

from sb3_a3c.version import __version__

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing at every start-up costs milliseconds

_LAZY_ATTRIBUTES = {
    "A3C": "sb3_a3c.a3c",
    "SyncA2C": "sb3_a3c.sync_a2c",
    "CnnTwoHeadPolicy": "sb3_a3c.common.policies",
    "SharedAdam": "sb3_a3c.a3c.shared_optimizers",
    "SharedAdamW": "sb3_a3c.a3c.shared_optimizers",
    "RMSpropFromOne": "sb3_a3c.common.optimizers",
    "SharedRMSprop": "sb3_a3c.a3c.shared_optimizers",
    "SharedRMSpropFromOne": "sb3_a3c.a3c.shared_optimizers",
    "SharedRMSpropTFLike": "sb3_a3c.a3c.shared_optimizers",
    "WorkerError": "sb3_a3c.a3c.runner.worker_pool",
}

if TYPE_CHECKING:
    from sb3_a3c.a3c import A3C
    from sb3_a3c.a3c.runner.worker_pool import WorkerError
    from sb3_a3c.a3c.shared_optimizers import (
        SharedAdam,
        SharedAdamW,
        SharedRMSprop,
        SharedRMSpropFromOne,
        SharedRMSpropTFLike,
    )
    from sb3_a3c.common.optimizers import RMSpropFromOne
    from sb3_a3c.common.policies import CnnTwoHeadPolicy
    from sb3_a3c.sync_a2c import SyncA2C


def __getattr__(name: str) -> object:
    if name in _LAZY_ATTRIBUTES:
        return getattr(importlib.import_module(_LAZY_ATTRIBUTES[name]), name)
    raise AttributeError(f"module 'sb3_a3c' has no attribute {name!r}")


__all__ = [
    "A3C",
    "CnnTwoHeadPolicy",
    "RMSpropFromOne",
    "SharedAdam",
    "SharedAdamW",
    "SharedRMSprop",
    "SharedRMSpropFromOne",
    "SharedRMSpropTFLike",
    "SyncA2C",
    "WorkerError",
    "__version__",
]
