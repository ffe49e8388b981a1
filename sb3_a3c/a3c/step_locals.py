"""
The per-step ``locals`` that SB3 gives callbacks, recorded in an A3C worker and rebuilt in the main process.

In SB3, ``collect_rollouts`` calls ``callback.update_locals(locals())`` and ``callback.on_step()`` after
each step of the VecEnv, so a callback sees ``actions``, ``values``, ``new_obs``, ``rewards``, ``dones``,
``infos``... of that step, one entry per env. An A3C worker runs the same ``collect_rollouts`` with a
``StepRecorder`` in place of the callback; its rollout's steps travel to the main process in the worker's
report, and the main process gives step ``t`` of every worker together to the user's callback, in the
training VecEnv's env order (``merge_step``).

``new_obs`` is the large one (a stack of Atari frames per env and step). It travels only when the callback
may read it: when some callback attached is not one of SB3's, sb3-contrib's or the RL Zoo's own
(``callback_may_read_observations``), which read none of it.
"""

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback, ConvertCallback

# Modules whose callbacks never read ``self.locals["new_obs"]``
LIBRARY_CALLBACK_MODULES = ("stable_baselines3.", "sb3_contrib.", "rl_zoo3.", "sb3_a3c.")

# Locals of SB3's ``collect_rollouts`` that are numpy arrays with one row per env
ARRAY_KEYS = ("actions", "clipped_actions", "rewards", "dones")
# Locals that are torch tensors with one row per env
TENSOR_KEYS = ("values", "log_probs")


def _copy_observation(observation: np.ndarray | dict[str, np.ndarray]) -> np.ndarray | dict[str, np.ndarray]:
    # VecFrameStack returns the same buffer at every step, updated in place: keep a copy
    if isinstance(observation, dict):
        return {key: np.array(value) for key, value in observation.items()}
    return np.array(observation)


def _concatenate(parts: list[Any]) -> Any:
    if isinstance(parts[0], dict):
        return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}
    return np.concatenate(parts)


@dataclass
class RolloutSteps:
    """
    The per-step locals of one worker's rollout: ``steps[t][key]`` for step ``t`` (0 to ``n_steps - 1``),
    one row per env of the worker. ``new_obs`` is present only when observations were recorded.
    """

    steps: list[dict[str, Any]]

    def __len__(self) -> int:
        return len(self.steps)


class StepRecorder:
    """
    Stands in for the callback that SB3's ``collect_rollouts`` expects, in a worker: it keeps what SB3 would
    have shown a callback at each step, and never stops the rollout (the main process decides that).

    :param record_observations: also keep ``new_obs`` (a copy of each step's observations)
    """

    def __init__(self, record_observations: bool) -> None:
        self.record_observations = record_observations
        self.steps: list[dict[str, Any]] = []
        self._locals: dict[str, Any] = {}

    def start(self) -> None:
        """Forget the previous rollout's steps."""
        self.steps = []

    def rollout_steps(self) -> RolloutSteps:
        return RolloutSteps(self.steps)

    def on_rollout_start(self) -> None:
        pass

    def update_locals(self, locals_: dict[str, Any]) -> None:
        # SB3 also calls this once after the last step, without an on_step: record in on_step
        self._locals = locals_

    def on_step(self) -> bool:
        locals_ = self._locals
        # The step's arrays and tensors are new at every step and never changed afterwards, except `rewards`,
        # which SB3 changes in place after on_step (time-limit bootstrapping): only that one is copied
        step = {key: locals_[key] for key in ARRAY_KEYS}
        step["rewards"] = np.array(locals_["rewards"])
        step.update({key: locals_[key].numpy() for key in TENSOR_KEYS})
        step["infos"] = locals_["infos"]
        if self.record_observations:
            step["new_obs"] = _copy_observation(locals_["new_obs"])
        self.steps.append(step)
        return True

    def on_rollout_end(self) -> None:
        pass


def merge_step(rollouts: list[RolloutSteps], t: int) -> dict[str, Any]:
    """
    The locals of step ``t`` of all workers at once, as SB3 would give them for the whole training VecEnv.

    :param rollouts: one rollout per worker, in worker rank order (the order of the envs in the VecEnv)
    :param t: the step within the rollouts
    :return: ``actions``, ``clipped_actions``, ``rewards``, ``dones`` (numpy), ``values``, ``log_probs``
        (torch), ``infos`` (a list), ``new_obs`` when recorded, and ``n_steps`` (``t``, as in SB3)
    """
    steps = [rollout.steps[t] for rollout in rollouts]
    merged: dict[str, Any] = {key: np.concatenate([step[key] for step in steps]) for key in ARRAY_KEYS}
    merged.update({key: th.as_tensor(np.concatenate([step[key] for step in steps])) for key in TENSOR_KEYS})
    merged["infos"] = [info for step in steps for info in step["infos"]]
    if "new_obs" in steps[0]:
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


def callback_may_read_observations(callback: BaseCallback) -> bool:
    """
    Whether ``callback`` (or a callback it holds) may read ``self.locals["new_obs"]``: any callback that is not
    one of the libraries' own, and any function turned into a callback (``ConvertCallback``).
    """
    return any(
        isinstance(member, ConvertCallback) or not type(member).__module__.startswith(LIBRARY_CALLBACK_MODULES)
        for member in _callbacks_in(callback)
    )
