"""save/load round trips through SB3's zip format, optimizer statistics included, and training resumes."""

import numpy as np
import torch as th
from stable_baselines3.common.env_util import make_vec_env

from sb3_a3c import A3C, SharedRMSprop


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

    assert isinstance(loaded.policy.optimizer, SharedRMSprop)
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
