"""The frame pipeline of the classic A3C-LSTM agent: one cropped 42x42 grayscale frame per step, normalised."""

import cv2
import gymnasium as gym
import numpy as np
from gymnasium import spaces
from stable_baselines3.common.atari_wrappers import AtariWrapper


class CropRows(gym.ObservationWrapper):
    """
    Keep rows ``first_row`` to ``last_row`` (excluded) of each image observation (height first).

    :param env: an env with image observations of shape (height, width, channels)
    :param first_row: first row kept
    :param last_row: row after the last one kept
    """

    def __init__(self, env: gym.Env, first_row: int, last_row: int) -> None:
        super().__init__(env)
        assert isinstance(env.observation_space, spaces.Box)
        height = env.observation_space.shape[0]
        if not 0 <= first_row < last_row <= height:
            raise ValueError(f"rows {first_row}:{last_row} must lie within the frame's {height} rows")
        self.rows = slice(first_row, last_row)
        self.observation_space = spaces.Box(
            low=env.observation_space.low[self.rows],
            high=env.observation_space.high[self.rows],
            dtype=env.observation_space.dtype,  # type: ignore[arg-type]
        )

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return observation[self.rows]


class RunningFrameNormalization(gym.ObservationWrapper):
    """
    Frames as channel-first float32, normalised by running averages of each frame's mean and standard
    deviation (the classic A3C code's ``NormalizedEnv``): ``(frame - mean) / (std + 1e-8)``, the averages
    decaying by ``alpha`` per frame and bias-corrected, so the first frames of an env are normalised too.

    :param env: an env with uint8 image observations of shape (height, width, channels)
    :param alpha: decay of the running averages per frame
    """

    def __init__(self, env: gym.Env, alpha: float = 0.9999) -> None:
        super().__init__(env)
        assert isinstance(env.observation_space, spaces.Box)
        height, width, channels = env.observation_space.shape
        self.observation_space = spaces.Box(low=-np.inf, high=np.inf, shape=(channels, height, width), dtype=np.float32)
        self.alpha = alpha
        self.frame_mean = 0.0
        self.frame_std = 0.0
        self.n_frames = 0

    def observation(self, observation: np.ndarray) -> np.ndarray:
        # One OpenCV call for the frame's mean and standard deviation (over all its pixels), then one scale and one
        # shift: numpy's per-call overhead would cost more than the arithmetic on a 42x42 frame
        mean, std = cv2.meanStdDev(observation.reshape(-1, 1))
        self.n_frames += 1
        self.frame_mean = self.alpha * self.frame_mean + (1 - self.alpha) * float(mean[0, 0]) / 255.0
        self.frame_std = self.alpha * self.frame_std + (1 - self.alpha) * float(std[0, 0]) / 255.0
        bias_correction = 1 - self.alpha**self.n_frames
        scale = 1.0 / (self.frame_std / bias_correction + 1e-8)
        frame = observation.transpose(2, 0, 1).astype(np.float32)
        frame *= scale / 255.0
        frame -= self.frame_mean / bias_correction * scale
        return frame


class A3CAtariWrapper(gym.Wrapper):
    """
    Atari preprocessing of the classic A3C-LSTM agent (universe-starter-agent, pytorch-a3c), on SB3's
    ``AtariWrapper``: the playing field (rows 34 to 194, without the score) in grayscale at 42x42, one frame
    per step (no frame stack: the LSTM remembers), normalised by ``RunningFrameNormalization``. No-op starts,
    frame skip with max-pooling, life loss as episode end and reward clipping are ``AtariWrapper``'s.

    Observations are float32 of shape (1, 42, 42). Use it with ``NoFrameskip-v4`` envs, as ``AtariWrapper``
    (``env_wrapper: sb3_a3c.common.atari_wrappers.A3CAtariWrapper`` in a Zoo entry).

    :param env: the Atari env
    :param noop_max: at most this many no-ops at reset
    :param frame_skip: each action is repeated this many frames
    :param screen_size: the frame is resized to ``screen_size`` x ``screen_size``
    :param terminal_on_life_loss: a lost life ends the episode (for the learner; the Monitor counts whole games)
    :param clip_reward: rewards are clipped to their sign
    :param first_row: first row of the frame kept
    :param last_row: row after the last one kept
    """

    def __init__(
        self,
        env: gym.Env,
        noop_max: int = 30,
        frame_skip: int = 4,
        screen_size: int = 42,
        terminal_on_life_loss: bool = True,
        clip_reward: bool = True,
        first_row: int = 34,
        last_row: int = 194,
    ) -> None:
        env = CropRows(env, first_row, last_row)
        env = AtariWrapper(
            env,
            noop_max=noop_max,
            frame_skip=frame_skip,
            screen_size=screen_size,
            terminal_on_life_loss=terminal_on_life_loss,
            clip_reward=clip_reward,
        )
        super().__init__(RunningFrameNormalization(env))
