"""SB3 callbacks and logging run in the main process with SB3's semantics."""

import csv
import fcntl
import os
import pickle
import time

import numpy as np
import pytest
from stable_baselines3.common.callbacks import (
    BaseCallback,
    CheckpointCallback,
    EvalCallback,
    StopTrainingOnMaxEpisodes,
    StopTrainingOnRewardThreshold,
)
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import configure

from sb3_a3c import A3C
from sb3_a3c.a3c.messages import RolloutReport, RolloutSteps
from sb3_a3c.common.update import UpdateMetrics


class CallCounter(BaseCallback):
    def __init__(self, stop_at_timestep: int | None = None):
        super().__init__()
        self.stop_at_timestep = stop_at_timestep
        self.timesteps_seen: list[int] = []
        self.rollout_ends = 0
        self.training_started = self.training_ended = False
        self.calls_after_stop = 0

    def _on_training_start(self) -> None:
        self.training_started = True

    def _on_rollout_end(self) -> None:
        self.rollout_ends += 1

    def _on_step(self) -> bool:
        if self.stop_at_timestep is not None and self.timesteps_seen and self.timesteps_seen[-1] >= self.stop_at_timestep:
            self.calls_after_stop += 1
        self.timesteps_seen.append(self.num_timesteps)
        return self.stop_at_timestep is None or self.num_timesteps < self.stop_at_timestep

    def _on_training_end(self) -> None:
        self.training_ended = True


def make_model(n_envs: int = 2, **kwargs) -> A3C:
    return A3C("MlpPolicy", make_vec_env("CartPole-v1", n_envs=n_envs, seed=0), n_steps=10, seed=0, **kwargs)


def test_one_on_step_per_n_envs_environment_steps():
    model, counter = make_model(n_envs=3), CallCounter()
    model.learn(3000, callback=counter)
    assert counter.training_started and counter.training_ended
    assert counter.timesteps_seen == list(range(3, 3 * len(counter.timesteps_seen) + 1, 3))
    assert 3000 <= model.num_timesteps <= 3000 + 3 * 10
    # one "rollout" = n_envs worker updates = n_steps * n_envs steps, as in SB3's A2C
    assert counter.rollout_ends == model.num_timesteps // (3 * 10)


def test_callback_returning_false_stops_all_workers():
    model, counter = make_model(), CallCounter(stop_at_timestep=1000)
    model.learn(1_000_000, callback=counter)
    assert counter.calls_after_stop == 0
    assert counter.timesteps_seen[-1] == 1000
    assert model.num_timesteps < 1500


def test_eval_callback_runs_at_the_expected_timesteps(tmp_path):
    model = make_model()
    eval_callback = EvalCallback(
        make_vec_env("CartPole-v1", n_envs=1), eval_freq=500, n_eval_episodes=2, log_path=str(tmp_path)
    )
    model.learn(5000, callback=eval_callback)
    # eval_freq counts on_step calls: 500 calls * 2 envs = every 1000 timesteps
    assert list(eval_callback.evaluations_timesteps) == [1000, 2000, 3000, 4000, 5000]
    assert np.load(tmp_path / "evaluations.npz")["results"].shape == (5, 2)


def test_stop_training_on_reward_threshold_stops_learning():
    model = make_model()
    stop = StopTrainingOnRewardThreshold(reward_threshold=0.0)  # any evaluation passes
    eval_callback = EvalCallback(
        make_vec_env("CartPole-v1", n_envs=1), eval_freq=200, n_eval_episodes=1, callback_on_new_best=stop
    )
    model.learn(1_000_000, callback=eval_callback)
    assert model.num_timesteps < 1000


def test_stop_training_on_max_episodes_counts_worker_episodes():
    model = make_model()
    model.learn(1_000_000, callback=StopTrainingOnMaxEpisodes(max_episodes=20))
    assert model.num_timesteps < 20 * 500


def test_checkpoints_saved_while_workers_run_load(tmp_path):
    model = make_model()
    model.learn(3000, callback=CheckpointCallback(save_freq=500, save_path=str(tmp_path), name_prefix="a3c"))
    checkpoints = sorted(tmp_path.glob("a3c_*_steps.zip"), key=lambda path: int(path.stem.split("_")[1]))
    assert [path.name for path in checkpoints] == ["a3c_1000_steps.zip", "a3c_2000_steps.zip", "a3c_3000_steps.zip"]
    previous = -1
    for path in checkpoints:
        loaded = A3C.load(path)
        assert previous < loaded.num_timesteps == int(path.stem.split("_")[1])
        previous = loaded.num_timesteps
        assert all(np.isfinite(p.detach().numpy()).all() for p in loaded.policy.parameters())


def test_training_metrics_and_episode_statistics_are_logged(tmp_path):
    model = make_model()
    model.set_logger(configure(str(tmp_path), ["csv"]))
    model.learn(4000, log_interval=10)
    with open(tmp_path / "progress.csv") as progress_file:
        rows = list(csv.DictReader(progress_file))
    for column in [
        "rollout/ep_rew_mean",
        "rollout/ep_len_mean",
        "time/fps",
        "time/iterations",
        "train/policy_loss",
        "train/value_loss",
        "train/entropy_loss",
        "train/explained_variance",
        "train/learning_rate",
        "train/n_updates",
    ]:
        assert column in rows[0], column
    assert len(rows) >= 3
    for row in rows:
        # Real episodes from the workers' Monitor wrappers: a CartPole episode lasts at least 8 steps
        assert float(row["rollout/ep_rew_mean"]) >= 8
        assert row["rollout/ep_rew_mean"] == row["rollout/ep_len_mean"]
        assert float(row["time/fps"]) > 0
    assert len(model.ep_info_buffer) > 0


def test_tensorboard_and_progress_bar(tmp_path):
    pytest.importorskip("tensorboard")
    model = make_model(tensorboard_log=str(tmp_path))
    model.learn(1000, progress_bar=True)
    event_files = list(tmp_path.glob("A3C_1/events.out.tfevents.*"))
    assert event_files and event_files[0].stat().st_size > 0


def pipe_capacity_bytes() -> int:
    """What one worker's report pipe holds before the worker blocks in ``send``."""
    reader, writer = os.pipe()
    try:
        return fcntl.fcntl(writer, getattr(fcntl, "F_GETPIPE_SZ", 1032))
    finally:
        os.close(reader)
        os.close(writer)


class SlowCallbackOnce(BaseCallback):
    """At ``at`` steps, holds the main process (as a long evaluation does) until the workers have collected
    ``steps_while_held`` more steps, or ``timeout`` seconds have passed."""

    def __init__(self, at: int, steps_while_held: int, timeout: float = 120.0):
        super().__init__()
        self.at, self.steps_while_held, self.timeout = at, steps_while_held, timeout
        self.worker_steps_while_held: int | None = None
        self.on_step_calls = 0

    def _on_step(self) -> bool:
        self.on_step_calls += 1
        if self.worker_steps_while_held is None and self.num_timesteps >= self.at:
            counter = self.model._backend.job.global_step_counter
            before, deadline = counter.value, time.monotonic() + self.timeout
            while counter.value - before < self.steps_while_held and time.monotonic() < deadline:
                time.sleep(0.05)
            self.worker_steps_while_held = counter.value - before
        return True


def test_slow_callback_does_not_stop_the_workers_and_loses_no_report():
    """Workers keep learning while a callback holds the main process, past what their pipes could buffer."""
    n_envs, n_steps = 2, 5
    one_step = {
        "actions": np.zeros(1, dtype=np.int64),
        "clipped_actions": np.zeros(1, dtype=np.int64),
        "rewards": np.ones(1, dtype=np.float32),
        "dones": np.zeros(1, dtype=bool),
        "values": np.zeros((1, 1), dtype=np.float32),
        "log_probs": np.zeros(1, dtype=np.float32),
        "infos": [{}],
        "new_obs": np.zeros((1, 4), dtype=np.float32),
    }
    steps = RolloutSteps(n_steps, 1, steps=[one_step] * n_steps)
    report = RolloutReport(0, n_steps, UpdateMetrics(0.0, 0.0, 0.0, 0.0, 0.0), steps=steps)
    steps_the_pipes_hold = n_envs * (pipe_capacity_bytes() // len(pickle.dumps(report))) * n_steps
    callback = SlowCallbackOnce(at=1000, steps_while_held=3 * steps_the_pipes_hold)
    model = A3C("MlpPolicy", make_vec_env("CartPole-v1", n_envs=n_envs, seed=0), n_steps=n_steps, seed=0)
    model.learn(1000 + 5 * steps_the_pipes_hold, callback=callback)
    assert callback.worker_steps_while_held >= 3 * steps_the_pipes_hold
    # Every report reached the main process, in order: one on_step per n_envs steps, none missing
    assert callback.on_step_calls == model.num_timesteps // n_envs
    assert model._n_updates == model.num_timesteps // n_steps


def test_rollout_buffer_access_explains_why_a3c_has_none():
    model = make_model()
    assert not hasattr(model, "rollout_buffer")
    with pytest.raises(AttributeError, match="each worker fills its own"):
        _ = model.rollout_buffer
