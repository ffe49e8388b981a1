"""A worker's envs go out of the training VecEnv and come back (``worker_envs``), in this process."""

import numpy as np
import pytest
from stable_baselines3.common.vec_env import VecNormalize

from sb3_a3c.a3c.worker_envs import export_worker_env, import_worker_env, make_worker_env, put_back_worker_envs
from tests.helpers.counting_envs import UnpicklableCountingEnv, counting_vec_env


def step(vec_env, times: int) -> None:
    for _ in range(times):
        vec_env.step(np.zeros(vec_env.num_envs, dtype=np.int64))


def test_a_workers_envs_come_back_where_the_worker_left_them(tmp_path):
    training_env = VecNormalize(counting_vec_env(4, episode_length=50, monitor_dir=str(tmp_path)), norm_reward=False)
    worker_env = make_worker_env(training_env, range(2, 4))
    assert worker_env.num_envs == 2 and isinstance(worker_env, VecNormalize)
    worker_env.reset()
    step(worker_env, 7)

    imported, extra = import_worker_env(export_worker_env(worker_env, {"rollouts": 3}), training_env)
    put_back_worker_envs(training_env, imported, range(2, 4))

    assert extra == {"rollouts": 3}
    envs = training_env.venv.envs
    assert [env.unwrapped.env_index for env in envs] == [0, 1, 2, 3]
    assert [env.unwrapped.episode_step for env in envs] == [0, 0, 7, 7]
    # VecNormalize's running statistics and discounted returns travel with the envs
    assert imported.obs_rms.count == worker_env.obs_rms.count
    np.testing.assert_array_equal(imported.returns, worker_env.returns)


def test_the_imported_env_writes_to_the_training_envs_monitor_file(tmp_path):
    training_env = counting_vec_env(2, episode_length=5, monitor_dir=str(tmp_path))
    writers = [env.results_writer for env in training_env.envs]
    worker_env = make_worker_env(training_env, range(0, 2))
    worker_env.reset()
    imported, _ = import_worker_env(export_worker_env(worker_env, None), training_env)
    assert [env.results_writer for env in imported.envs] == writers
    step(imported, 5)  # one episode each, written by the training env's writers
    for writer in writers:
        writer.file_handler.flush()
    assert all(len((tmp_path / f"{index}.monitor.csv").read_text().splitlines()) == 3 for index in range(2))


def test_envs_imported_on_another_machine_get_no_files(tmp_path):
    worker_env = make_worker_env(counting_vec_env(2, episode_length=5, monitor_dir=str(tmp_path)), range(0, 2))
    worker_env.reset()
    imported, _ = import_worker_env(export_worker_env(worker_env, None), None)
    assert all(env.results_writer is None for env in imported.envs)
    step(imported, 5)  # and they still step


def test_an_env_that_cannot_be_pickled_raises_when_exported():
    worker_env = make_worker_env(counting_vec_env(2, episode_length=5, env_class=UnpicklableCountingEnv), range(0, 2))
    with pytest.raises(TypeError):
        export_worker_env(worker_env, None)
