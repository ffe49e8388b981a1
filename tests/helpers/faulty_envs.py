"""An env wrapper that fails on purpose, for the tests of how failures surface."""

import gymnasium as gym


class FaultAtStep(gym.Wrapper):
    """From its ``at``-th step the env raises (``fault="raise"``); at that step only, its reward is NaN (``fault="nan"``)."""

    def __init__(self, env: gym.Env, at: int, fault: str):
        super().__init__(env)
        self.at, self.fault = at, fault
        self.steps = 0

    def step(self, action):
        self.steps += 1
        if self.fault == "raise" and self.steps >= self.at:
            raise RuntimeError(f"simulated env failure at step {self.steps}")
        observation, reward, terminated, truncated, info = super().step(action)
        if self.fault == "nan" and self.steps == self.at:
            reward = float("nan")
        return observation, reward, terminated, truncated, info
