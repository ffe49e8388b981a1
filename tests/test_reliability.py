"""Harder fault conditions: NaN losses, Ctrl-C in the Zoo, many workers, nothing left behind."""

import gc
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

from sb3_a3c import A3C, WorkerError
from tests.helpers.faulty_envs import FaultAtStep

from .conftest import live_children


class RecordsWhereItIsFinalized:
    """Part of a reference cycle (only the garbage collector frees it); appends the freeing process's pid to a file."""

    def __init__(self, path: Path):
        self.path = path
        self.cycle = self

    def __del__(self):
        with open(self.path, "a") as file:
            file.write(f"{os.getpid()}\n")


class CollectsGarbageOnItsFirstStep(gym.Wrapper):
    """Runs a full garbage collection in the process that steps it, once."""

    collected = False

    def step(self, action):
        if not self.collected:
            self.collected = True
            gc.collect()
        return super().step(action)


def test_garbage_of_the_main_process_is_never_finalized_in_a_worker(tmp_path):
    # E.g. a shut-down Ray client: its finalizer crashes a forked worker (SIGSEGV in gRPC)
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0, wrapper_class=CollectsGarbageOnItsFirstStep)
    model = A3C("MlpPolicy", env, n_steps=5, seed=0)
    record = tmp_path / "finalized_in"
    gc.disable()  # keep the garbage uncollected until the workers fork
    try:
        RecordsWhereItIsFinalized(record)
        model.learn(200)
    finally:
        gc.enable()
    gc.collect()
    assert record.read_text().split() == [str(os.getpid())]


def test_non_finite_loss_stops_training_and_leaves_shared_parameters_finite():
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0, wrapper_class=FaultAtStep, wrapper_kwargs=dict(at=150, fault="nan"))
    model = A3C("MlpPolicy", env, n_steps=10, seed=0)
    with pytest.raises(WorkerError, match="non-finite loss") as error:
        model.learn(100_000)
    assert "no optimizer step was taken" in str(error.value)
    assert "worker" in str(error.value)
    assert all(th.isfinite(param).all() for param in model.policy.parameters())
    for state in model.policy.optimizer.state.values():
        assert all(th.isfinite(value).all() for value in state.values())
    assert live_children() == []


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


def open_file_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def shared_memory_mappings() -> int:
    """Mappings of torch's shared-memory segments (the shared policy, the synchronous updates' gradients)."""
    with open("/proc/self/maps") as maps:
        return sum("torch_" in line for line in maps)


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc (Linux)")
@pytest.mark.parametrize("synchronous_updates", [False, True], ids=["hogwild", "synchronous"])
def test_learn_leaves_no_pipe_or_shared_memory_behind(synchronous_updates):
    """Each learn() opens pipes and creates shared counters and tensors; repeated calls must not pile them up."""
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0)
    model = A3C("MlpPolicy", env, n_steps=10, seed=0, synchronous_updates=synchronous_updates)
    model.learn(500)  # the shared policy, and what is allocated once
    gc.collect()
    descriptors, mappings = open_file_descriptors(), shared_memory_mappings()
    for _ in range(3):
        model.learn(500, reset_num_timesteps=False)
    gc.collect()
    assert open_file_descriptors() <= descriptors
    assert shared_memory_mappings() <= mappings
