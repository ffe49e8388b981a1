"""
The per-step ``locals`` that SB3 gives callbacks, recorded in an A3C worker and rebuilt in the main process.

In SB3, ``collect_rollouts`` calls ``callback.update_locals(locals())`` and ``callback.on_step()`` after
each step of the VecEnv, so a callback sees ``actions``, ``values``, ``new_obs``, ``rewards``, ``dones``,
``infos``... of that step, one entry per env. An A3C worker runs the same ``collect_rollouts`` with a
``StepRecorder`` in place of the callback; its rollout's steps travel to the main process in the worker's
report, and the main process gives step ``t`` of every worker together to the callbacks, in the training
VecEnv's env order (``merge_step``).

Only a callback of the user's own may read the per-step arrays (``callback_reads_step_locals``): SB3's,
sb3-contrib's and the RL Zoo's callbacks read ``dones`` and ``infos`` at most. Without such a callback the
workers send only the episodes that ended, and the main process shows ``dones`` and ``infos`` rebuilt from them
(the ``infos`` of envs whose episode goes on are empty).
"""

from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback, ConvertCallback

from sb3_a3c.a3c.messages import RolloutSteps

# Modules whose callbacks read no per-step array but ``dones`` and ``infos``
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


class StepRecorder:
    """
    Stands in for the callback that SB3's ``collect_rollouts`` expects, in a worker: it keeps what the main
    process's callbacks will be shown of each step, and never stops the rollout (the main process decides that).

    :param record_step_locals: keep every step's locals (``new_obs`` included, copied); otherwise only the
        episodes that ended
    """

    def __init__(self, record_step_locals: bool) -> None:
        self.record_step_locals = record_step_locals
        self._steps: list[dict[str, Any]] = []
        self._episode_ends: list[tuple[int, int, dict[str, Any]]] = []
        self._n_steps = 0
        self._locals: dict[str, Any] = {}

    def start(self) -> None:
        """Forget the previous rollout's steps."""
        self._steps, self._episode_ends, self._n_steps = [], [], 0

    def rollout_steps(self, n_envs: int) -> RolloutSteps:
        if self.record_step_locals:
            return RolloutSteps(self._n_steps, n_envs, steps=self._steps)
        return RolloutSteps(self._n_steps, n_envs, episode_ends=self._episode_ends)

    def on_rollout_start(self) -> None:
        pass

    def update_locals(self, locals_: dict[str, Any]) -> None:
        # SB3 also calls this once after the last step, without an on_step: record in on_step
        self._locals = locals_

    def on_step(self) -> bool:
        locals_ = self._locals
        if self.record_step_locals:
            # The step's arrays and tensors are new at every step and never changed afterwards, except `rewards`,
            # which SB3 changes in place after on_step (time-limit bootstrapping): only that one is copied
            step = {key: locals_[key] for key in ARRAY_KEYS}
            step["rewards"] = np.array(locals_["rewards"])
            step.update({key: locals_[key].numpy() for key in TENSOR_KEYS})
            step["infos"] = locals_["infos"]
            step["new_obs"] = _copy_observation(locals_["new_obs"])
            self._steps.append(step)
        else:
            infos = locals_["infos"]
            self._episode_ends.extend((self._n_steps, env, infos[env]) for env in np.flatnonzero(locals_["dones"]))
        self._n_steps += 1
        return True

    def on_rollout_end(self) -> None:
        pass


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
