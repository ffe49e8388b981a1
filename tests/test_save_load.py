"""save/load round trips through SB3's zip format (optimizer statistics included), resume, and clear errors for bad files."""

import subprocess
import sys
import zipfile

import numpy as np
import pytest
import torch as th
from stable_baselines3.common.env_util import make_vec_env

from sb3_a3c import A3C, SharedRMSprop, SyncA2C


def sample_observations(n: int = 16) -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.uniform(-0.5, 0.5, size=(n, 4)).astype(np.float32)


def test_save_load_round_trip_keeps_parameters_actions_and_optimizer_state(tmp_path):
    model = A3C("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), n_steps=10, seed=0)
    model.learn(2000)
    model.save(tmp_path / "a3c.zip")

    loaded = A3C.load(tmp_path / "a3c.zip")
    for name, param in model.policy.state_dict().items():
        assert th.equal(param, loaded.policy.state_dict()[name]), name
    observations = sample_observations()
    expected_actions, _ = model.predict(observations, deterministic=True)
    actions, _ = loaded.predict(observations, deterministic=True)
    np.testing.assert_array_equal(actions, expected_actions)

    assert type(loaded.policy.optimizer) is SharedRMSprop
    saved_state = model.policy.optimizer.state_dict()["state"]
    loaded_state = loaded.policy.optimizer.state_dict()["state"]
    assert saved_state.keys() == loaded_state.keys()
    for index, state in saved_state.items():
        assert th.equal(state["square_avg"], loaded_state[index]["square_avg"])
        assert th.equal(state["step"], loaded_state[index]["step"])
    assert loaded.num_timesteps == model.num_timesteps


def test_loaded_lstm_model_predicts_like_the_original(tmp_path):
    model = A3C("MlpLstmPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), n_steps=10, seed=0)
    model.learn(600)
    model.save(tmp_path / "a3c_lstm.zip")
    loaded = A3C.load(tmp_path / "a3c_lstm.zip")

    observations = sample_observations(4)
    episode_starts = np.ones(4, dtype=bool)
    expected_actions, expected_state = model.predict(
        observations, state=None, episode_start=episode_starts, deterministic=True
    )
    actions, state = loaded.predict(observations, state=None, episode_start=episode_starts, deterministic=True)
    np.testing.assert_array_equal(actions, expected_actions)
    np.testing.assert_allclose(state[0], expected_state[0])


def test_resume_continues_step_count_and_optimizer_statistics(tmp_path):
    model = A3C("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), n_steps=10, seed=0)
    model.learn(1000)
    model.save(tmp_path / "a3c.zip")
    saved_timesteps, saved_updates = model.num_timesteps, model._n_updates

    loaded = A3C.load(tmp_path / "a3c.zip", env=make_vec_env("CartPole-v1", n_envs=2, seed=1))
    loaded.learn(1000, reset_num_timesteps=False)

    # Budget: 1000 more steps, overshooting by at most one rollout per worker
    assert saved_timesteps + 1000 <= loaded.num_timesteps <= saved_timesteps + 1000 + 2 * 10
    assert loaded._n_updates == saved_updates + (loaded.num_timesteps - saved_timesteps) // 10
    first_param = next(iter(loaded.policy.parameters()))
    step = loaded.policy.optimizer.state[first_param]["step"]
    assert int(step.item()) == loaded._n_updates
    assert step.is_shared()


def test_reset_num_timesteps_starts_counting_again():
    model = A3C("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), n_steps=10, seed=0)
    model.learn(500)
    model.learn(500)
    assert 500 <= model.num_timesteps <= 520


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


def test_loading_into_env_with_other_observation_space_names_both_spaces(tmp_path):
    A3C("MlpPolicy", "CartPole-v1", n_envs=1).save(tmp_path / "cartpole.zip")
    with pytest.raises(ValueError, match="Observation spaces do not match") as error:
        A3C.load(tmp_path / "cartpole.zip", env=make_vec_env("Pendulum-v1", n_envs=1))
    assert "(4,)" in str(error.value) and "(3,)" in str(error.value)  # CartPole's and Pendulum's spaces


@pytest.mark.parametrize("algorithm", [A3C, SyncA2C])
def test_zip_whose_parameters_do_not_fit_gets_sb3s_own_message(tmp_path, algorithm):
    """A readable model zip whose policy.pth belongs to another network is not reported as a damaged file."""
    small = tmp_path / "small.zip"
    large = tmp_path / "large.zip"
    env = make_vec_env("CartPole-v1", n_envs=2)
    algorithm("MlpPolicy", env, n_steps=8, policy_kwargs=dict(net_arch=[8])).save(small)
    algorithm("MlpPolicy", env, n_steps=8, policy_kwargs=dict(net_arch=[16])).save(large)
    mixed = tmp_path / "mixed.zip"
    with zipfile.ZipFile(small) as small_zip, zipfile.ZipFile(large) as large_zip, zipfile.ZipFile(mixed, "w") as out:
        for name in small_zip.namelist():
            source = large_zip if name == "policy.pth" else small_zip
            out.writestr(name, source.read(name))
    with pytest.raises(RuntimeError, match="size mismatch") as error:
        algorithm.load(mixed)
    assert "truncated" not in str(error.value)


def test_zip_that_is_not_a_model_names_what_is_missing(tmp_path):
    archive = tmp_path / "archive.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("notes.txt", "not a model")
    with pytest.raises(ValueError, match=rf"Cannot load a A3C model from {archive}: it is a zip but not a model"):
        A3C.load(archive)


@pytest.mark.parametrize("algorithm", [A3C, SyncA2C])
def test_load_accepts_the_policy_kwargs_the_model_was_built_with(tmp_path, algorithm):
    """As with SB3's A2C: the algorithm's default optimizer is not stored in the user's policy_kwargs."""
    policy_kwargs = dict(net_arch=[32])
    model = algorithm("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2), n_steps=8, policy_kwargs=policy_kwargs)
    model.save(tmp_path / "m")
    assert policy_kwargs == dict(net_arch=[32])
    loaded = algorithm.load(tmp_path / "m", policy_kwargs=dict(net_arch=[32]))
    assert type(loaded.policy.optimizer) is type(model.policy.optimizer)
    with pytest.raises(ValueError, match="policy kwargs do not equal"):
        algorithm.load(tmp_path / "m", policy_kwargs=dict(net_arch=[64]))
