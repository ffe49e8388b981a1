"""Harder fault conditions: NaN losses, Ctrl-C in the Zoo, resume in a fresh process, damaged zips, many workers."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import psutil
import pytest
import torch as th
from stable_baselines3.common.env_util import make_vec_env

from sb3_a3c import A3C, SyncA2C, WorkerError

from .conftest import live_children


class NanRewardAt(gym.Wrapper):
    """Emits a NaN reward at step `at`."""

    def __init__(self, env: gym.Env, at: int):
        super().__init__(env)
        self.at = at
        self.steps = 0

    def step(self, action):
        observation, reward, terminated, truncated, info = super().step(action)
        self.steps += 1
        return observation, float("nan") if self.steps == self.at else reward, terminated, truncated, info


def test_non_finite_loss_stops_training_and_leaves_shared_parameters_finite():
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0, wrapper_class=NanRewardAt, wrapper_kwargs=dict(at=150))
    model = A3C("MlpPolicy", env, n_steps=10, seed=0)
    with pytest.raises(WorkerError, match="non-finite loss") as error:
        model.learn(100_000)
    assert "the shared parameters were not updated" in str(error.value)
    assert "worker" in str(error.value)
    assert all(th.isfinite(param).all() for param in model.policy.parameters())
    for state in model.policy.optimizer.state.values():
        assert all(th.isfinite(value).all() for value in state.values())
    assert live_children() == []


def test_resume_in_a_fresh_process_continues_steps_and_optimizer_statistics(tmp_path):
    model = A3C("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), n_steps=10, seed=0)
    model.learn(1_000)
    model.save(tmp_path / "mid_run.zip")
    saved_step = int(next(iter(model.policy.optimizer.state.values()))["step"].item())
    code = (
        "from sb3_a3c import A3C; from stable_baselines3.common.env_util import make_vec_env;"
        f"m = A3C.load({str(tmp_path / 'mid_run.zip')!r}, env=make_vec_env('CartPole-v1', n_envs=2));"
        "m.learn(1000, reset_num_timesteps=False);"
        "print(m.num_timesteps, int(next(iter(m.policy.optimizer.state.values()))['step'].item()))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    num_timesteps, step = map(int, result.stdout.split()[-2:])
    assert model.num_timesteps + 1000 <= num_timesteps <= model.num_timesteps + 1020
    assert step == saved_step + (num_timesteps - model.num_timesteps) // 10


@pytest.mark.parametrize("algorithm", [A3C, SyncA2C])
def test_damaged_model_zip_error_names_the_file(tmp_path, algorithm):
    path = tmp_path / "model.zip"
    algorithm("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2), n_steps=8).save(path)
    content = path.read_bytes()
    truncated = tmp_path / "truncated.zip"
    truncated.write_bytes(content[: len(content) // 2])
    with pytest.raises(ValueError, match=f"Cannot load a {algorithm.__name__} model from {truncated}"):
        algorithm.load(truncated)
    not_a_zip = tmp_path / "not_a_zip.zip"
    not_a_zip.write_text("hello")
    with pytest.raises(ValueError, match=f"{not_a_zip}.*(wasn't a zip-file|truncated or is not a model zip)"):
        algorithm.load(not_a_zip)


def test_sixteen_workers_on_two_cores_make_progress_and_finish():
    model = A3C("MlpPolicy", make_vec_env("CartPole-v1", n_envs=16, seed=0), n_steps=10, seed=0)
    model.learn(8_000)
    assert 8_000 <= model.num_timesteps <= 8_000 + 16 * 10
    assert model._n_updates == model.num_timesteps // 10
    assert live_children() == []


def test_ctrl_c_during_zoo_training_saves_a_model_that_loads_and_leaves_no_process(tmp_path):
    process = subprocess.Popen(
        [sys.executable, "-m", "rl_zoo3.train", "--algo", "a3c", "--env", "CartPole-v1", "-n", "10000000", "-f", "logs"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
        # SIGINT handled as in a terminal even when the tests run from a background job (which ignores it)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    run_folder = tmp_path / "logs" / "a3c" / "CartPole-v1_1"
    deadline = time.monotonic() + 120
    workers: list[psutil.Process] = []
    while time.monotonic() < deadline and len(workers) < 2:
        workers = psutil.Process(process.pid).children()
        time.sleep(0.5)
    assert len(workers) == 2, "the Zoo did not start 2 A3C workers"
    time.sleep(3)  # let it train a little
    # Ctrl-C in a terminal: SIGINT to the whole foreground process group
    os.killpg(process.pid, signal.SIGINT)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 0, output
    assert "Saving to" in output
    assert not any(worker.is_running() and worker.status() != psutil.STATUS_ZOMBIE for worker in workers)
    model = A3C.load(run_folder / "CartPole-v1.zip")
    assert model.num_timesteps > 0
    action, _ = model.predict(np.zeros(4, dtype=np.float32), deterministic=True)
    assert action in (0, 1)


def test_no_shared_memory_or_temporary_files_left_behind():
    shm = Path("/dev/shm")
    before = set(shm.iterdir()) if shm.exists() else set()
    A3C("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), n_steps=10, seed=0).learn(1_000)
    after = set(shm.iterdir()) if shm.exists() else set()
    assert after - before == set()
