"""Worker errors surface in the main process, no process outlives learn(), bad input fails early."""

import os
import signal
import time

import gymnasium as gym
import numpy as np
import psutil
import pytest
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnvWrapper

from sb3_a3c import A3C, SyncA2C, WorkerError
from tests.helpers.faulty_envs import FaultAtStep

from .conftest import live_children

# With synchronous updates the other workers wait for the failed one: they must not wait forever
UPDATE_MODES = pytest.mark.parametrize("synchronous_updates", [False, True], ids=["hogwild", "synchronous"])


@UPDATE_MODES
def test_worker_exception_is_raised_by_learn_with_its_traceback(synchronous_updates):
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0, wrapper_class=FaultAtStep, wrapper_kwargs=dict(at=300, fault="raise"))
    model = A3C("MlpPolicy", env, n_steps=10, seed=0, synchronous_updates=synchronous_updates)
    started = time.monotonic()
    with pytest.raises(WorkerError) as error:
        model.learn(1_000_000)
    assert time.monotonic() - started < 30
    message = str(error.value)
    assert "simulated env failure at step 300" in message
    assert "Traceback" in message and "in step" in message
    assert "(CartPole-v1)" in message and "A3C worker" in message
    assert live_children() == []


class KillWorkerAt(BaseCallback):
    """SIGKILLs the first worker at ``timestep``; with ``hold_update_lock``, first takes the update lock for good."""

    def __init__(self, timestep: int, hold_update_lock: bool = False):
        super().__init__()
        self.timestep = timestep
        self.hold_update_lock = hold_update_lock
        self.killed_pid = None

    def _on_step(self) -> bool:
        if self.killed_pid is None and self.num_timesteps >= self.timestep:
            if self.hold_update_lock:
                # As if the killed worker had died during an update: the others wait for the lock forever
                assert self.model._backend.update_lock.acquire(timeout=5)
            worker = psutil.Process().children()[0]
            self.killed_pid = worker.pid
            os.kill(worker.pid, signal.SIGKILL)
            self.killed_at = time.monotonic()
        return True


@UPDATE_MODES
@pytest.mark.parametrize("hold_update_lock", [False, True], ids=["lock-free", "lock-orphaned"])
def test_killed_worker_is_detected_and_model_stays_usable(tmp_path, hold_update_lock, synchronous_updates):
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0)
    model = A3C("MlpPolicy", env, n_steps=10, seed=0, synchronous_updates=synchronous_updates)
    killer = KillWorkerAt(timestep=1000, hold_update_lock=hold_update_lock)
    with pytest.raises(WorkerError, match=r"killed by signal SIGKILL") as error:
        model.learn(1_000_000, callback=killer)
    # Well under the 5 s that surviving workers get to stop on their own: they are not waited for
    assert time.monotonic() - killer.killed_at < 4
    assert f"pid {killer.killed_pid}" in str(error.value)
    assert live_children() == []
    model.predict(np.zeros(4, dtype=np.float32))
    model.save(tmp_path / "after_failure.zip")
    assert A3C.load(tmp_path / "after_failure.zip").num_timesteps == model.num_timesteps


class InterruptAt(BaseCallback):
    def _on_step(self) -> bool:
        if self.num_timesteps >= 500:
            raise KeyboardInterrupt
        return True


@UPDATE_MODES
def test_keyboard_interrupt_stops_all_workers(synchronous_updates):
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0)
    model = A3C("MlpPolicy", env, n_steps=10, seed=0, synchronous_updates=synchronous_updates)
    with pytest.raises(KeyboardInterrupt):
        model.learn(1_000_000, callback=InterruptAt())
    assert live_children() == []


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(n_steps=0), "n_steps=0 is not allowed: n_steps must be an integer >= 1"),
        (dict(n_steps=2.5), "n_steps=2.5 is not allowed"),
        (dict(gamma=1.5), "gamma=1.5 is not allowed: gamma must be in (0, 1]"),
        (dict(gae_lambda=-0.1), "gae_lambda=-0.1 is not allowed"),
        (dict(learning_rate=-1e-3), "learning_rate=-0.001 is not allowed"),
        (dict(max_grad_norm=0), "max_grad_norm=0 is not allowed"),
        (dict(ent_coef=-1), "ent_coef=-1 is not allowed"),
        (dict(n_envs=0), "n_envs=0 is not allowed"),
        (dict(n_envs=3), "n_envs=3 but the VecEnv has 2 envs"),
        (dict(n_workers=0), "n_workers=0 is not allowed"),
        (dict(n_workers=3), "2 envs cannot be split between n_workers=3"),
        (dict(synchronous_updates="yes"), "synchronous_updates must be True or False"),
        (dict(synchronous_updates=True, ray_address="local"), "synchronous_updates=True cannot be used with ray_address"),
        (dict(policy_kwargs=dict(lstm_hidden_size=64)), "['lstm_hidden_size'] only apply to LSTM policies"),
        (dict(policy_kwargs=dict(optimizer_class=__import__("torch").optim.SGD)), "cannot be shared between A3C workers"),
    ],
)
def test_bad_arguments_raise_value_error_before_any_process_starts(kwargs, message):
    with pytest.raises(ValueError) as error:
        A3C("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2), **kwargs)
    assert message in str(error.value)
    assert live_children() == []


def test_unknown_policy_name_is_a_value_error():
    with pytest.raises(ValueError, match="Policy MlpLSTMPolicy unknown"):
        A3C("MlpLSTMPolicy", "CartPole-v1", n_envs=1)


def test_subproc_vec_env_is_refused_with_what_to_use_instead():
    env = SubprocVecEnv([lambda: gym.make("CartPole-v1")] * 2, start_method="fork")
    try:
        with pytest.raises(ValueError, match=r"needs the environments in a DummyVecEnv.*got SubprocVecEnv"):
            A3C("MlpPolicy", env)
    finally:
        env.close()


class UnknownVecWrapper(VecEnvWrapper):
    def reset(self):
        return self.venv.reset()

    def step_wait(self):
        return self.venv.step_wait()


def test_unknown_vec_env_wrapper_is_refused():
    with pytest.raises(ValueError, match="does not know how to copy UnknownVecWrapper"):
        A3C("MlpPolicy", UnknownVecWrapper(DummyVecEnv([lambda: gym.make("CartPole-v1")])))


class TupleActionEnv(gym.Env):
    observation_space = gym.spaces.Box(-1, 1, (2,))
    action_space = gym.spaces.Tuple([gym.spaces.Discrete(2), gym.spaces.Discrete(3)])

    def reset(self, seed=None, options=None):
        return np.zeros(2, dtype=np.float32), {}

    def step(self, action):
        return np.zeros(2, dtype=np.float32), 0.0, False, False, {}


def test_unsupported_action_space_is_a_value_error():
    with pytest.raises(ValueError, match="does not support the action space Tuple"):
        A3C("MlpPolicy", TupleActionEnv())


class InfiniteBoxActionEnv(gym.Env):
    observation_space = gym.spaces.Box(-1, 1, (2,))
    action_space = gym.spaces.Box(-np.inf, np.inf, (1,))

    def reset(self, seed=None, options=None):
        return np.zeros(2, dtype=np.float32), {}

    def step(self, action):
        return np.zeros(2, dtype=np.float32), 0.0, False, False, {}


@pytest.mark.parametrize("algorithm", [A3C, SyncA2C])
def test_box_action_space_with_infinite_bounds_is_a_value_error(algorithm):
    with pytest.raises(ValueError, match=r"needs finite bounds for a Box action space.*got Box\(-inf, inf"):
        algorithm("MlpPolicy", InfiniteBoxActionEnv())


def test_gpu_device_is_not_silently_ignored():
    with pytest.warns(UserWarning, match="runs every worker on the CPU; device='cuda' is not used"):
        model = A3C("MlpPolicy", "CartPole-v1", n_envs=1, device="cuda")
    assert model.device.type == "cpu"
