"""
The callback a worker's ``collect_rollouts`` calls at each step: it records the per-step ``locals`` that SB3
gives callbacks, for the runner to show the main process's callbacks (``runner.report_merger``).
"""

from typing import Any

import numpy as np

from sb3_a3c.a3c.messages import ARRAY_KEYS, TENSOR_KEYS, RolloutSteps


def _copy_observation(observation: np.ndarray | dict[str, np.ndarray]) -> np.ndarray | dict[str, np.ndarray]:
    # VecFrameStack returns the same buffer at every step, updated in place: keep a copy
    if isinstance(observation, dict):
        return {key: np.array(value) for key, value in observation.items()}
    return np.array(observation)


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
        self._steps_per_env = 0
        self._locals: dict[str, Any] = {}

    def start(self) -> None:
        """Forget the previous rollout's steps."""
        self._steps, self._episode_ends, self._steps_per_env = [], [], 0

    def rollout_steps(self, n_envs: int) -> RolloutSteps:
        if self.record_step_locals:
            return RolloutSteps(self._steps_per_env, n_envs, steps=self._steps)
        return RolloutSteps(self._steps_per_env, n_envs, episode_ends=self._episode_ends)

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
            self._episode_ends.extend((self._steps_per_env, env, infos[env]) for env in np.flatnonzero(locals_["dones"]))
        self._steps_per_env += 1
        return True

    def on_rollout_end(self) -> None:
        pass
