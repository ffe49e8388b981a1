"""Every policy and action space SB3's A2C supports trains through the workers, with the user's wrappers."""

import ale_py
import gymnasium as gym
import numpy as np
import pytest
import torch as th
from sb3_contrib.common.recurrent.type_aliases import RNNStates
from stable_baselines3.common.env_util import make_atari_env, make_vec_env
from stable_baselines3.common.envs import IdentityEnvMultiBinary, IdentityEnvMultiDiscrete, SimpleMultiObsEnv
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.logger import configure
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack, VecNormalize

from sb3_a3c import A3C, SyncA2C
from sb3_a3c.common.atari_wrappers import A3CAtariWrapper, RunningFrameNormalization
from sb3_a3c.common.policies import A3CCnnLstmPolicy
from sb3_a3c.common.torch_layers import ClassicA3CCNN, SmallAtariCNN, SmallCnnConvolutions

gym.register_envs(ale_py)


@pytest.mark.parametrize(
    "policy, make_env",
    [
        ("MlpPolicy", lambda: make_vec_env("Pendulum-v1", n_envs=2, seed=0)),
        ("MlpLstmPolicy", lambda: make_vec_env("Pendulum-v1", n_envs=2, seed=0)),
        ("MlpPolicy", lambda: DummyVecEnv([lambda: IdentityEnvMultiDiscrete(dim=3)] * 2)),
        ("MlpPolicy", lambda: DummyVecEnv([lambda: IdentityEnvMultiBinary(dim=3)] * 2)),
        ("MultiInputPolicy", lambda: DummyVecEnv([SimpleMultiObsEnv] * 2)),
        ("MultiInputLstmPolicy", lambda: DummyVecEnv([SimpleMultiObsEnv] * 2)),
    ],
)
def test_policy_and_action_space_train(policy, make_env):
    model = A3C(policy, make_env(), n_steps=8, seed=0)
    before = [p.detach().clone() for p in model.policy.parameters()]
    model.learn(400)
    assert model.num_timesteps >= 400
    assert any(not (a == b).all() for a, b in zip(before, model.policy.parameters()))
    observation = model.env.reset()
    actions, _ = model.predict(observation, deterministic=True)
    assert model.env.action_space.contains(actions[0])


def test_gsde_exploration_trains():
    model = A3C("MlpPolicy", make_vec_env("Pendulum-v1", n_envs=2, seed=0), n_steps=8, use_sde=True, sde_sample_freq=4, seed=0)
    model.learn(400)
    assert model.num_timesteps >= 400


def test_gym_env_instance_gives_one_worker():
    model = A3C("MlpPolicy", gym.make("CartPole-v1"), n_steps=8, seed=0)
    assert model.n_envs == 1
    model.learn(200)
    assert 200 <= model.num_timesteps <= 208


def test_env_id_gives_n_envs_workers():
    model = A3C("MlpPolicy", "CartPole-v1", n_envs=3, n_steps=8, seed=0)
    assert model.n_envs == 3
    model.learn(300)
    assert 300 <= model.num_timesteps <= 300 + 3 * 8


class RecordEnvStepsPerWorker(gym.Wrapper):
    """Counts, in a file per process, the steps this env made (to see which worker stepped it)."""

    def __init__(self, env: gym.Env, folder) -> None:
        super().__init__(env)
        self.folder = folder

    def step(self, action):
        import os

        with open(self.folder / f"{os.getpid()}_{id(self)}", "a") as file:
            file.write("x")
        return super().step(action)


def test_n_workers_split_the_envs_between_them(tmp_path):
    env = DummyVecEnv([lambda: RecordEnvStepsPerWorker(gym.make("CartPole-v1"), tmp_path)] * 6)
    model = A3C("MlpPolicy", env, n_workers=2, n_steps=5, seed=0)
    model.learn(600)
    # Each update covers n_steps on each of the worker's 3 envs
    assert 600 <= model.num_timesteps <= 600 + 2 * 3 * 5
    steps_by_pid: dict[str, list[int]] = {}
    for path in tmp_path.iterdir():
        steps_by_pid.setdefault(path.name.split("_")[0], []).append(len(path.read_text()))
    assert len(steps_by_pid) == 2, "two worker processes"
    for env_steps in steps_by_pid.values():
        assert len(env_steps) == 3, "three envs per worker"
        assert len(set(env_steps)) == 1, "the envs of a worker step together"
    assert sum(sum(env_steps) for env_steps in steps_by_pid.values()) == model.num_timesteps


def test_small_cnn_policy_on_42x42_atari_frames():
    env = VecFrameStack(make_atari_env("PongNoFrameskip-v4", n_envs=4, seed=0, wrapper_kwargs=dict(screen_size=42)), 4)
    model = A3C("SmallCnnPolicy", env, n_workers=2, n_steps=5, seed=0)
    assert isinstance(model.policy.features_extractor, SmallAtariCNN)
    assert model.observation_space.shape == (4, 42, 42)
    before = [p.detach().clone() for p in model.policy.parameters()]
    model.learn(400)
    assert all(not (a == b).all() for a, b in zip(before, model.policy.parameters())), "every layer is trained"
    actions, _ = model.predict(env.reset(), deterministic=True)
    assert actions.shape == (4,)


def test_classic_a3c_cnn_on_42x42_atari_frames():
    env = VecFrameStack(make_atari_env("PongNoFrameskip-v4", n_envs=2, seed=0, wrapper_kwargs=dict(screen_size=42)), 4)
    model = A3C("CnnPolicy", env, n_steps=5, seed=0, policy_kwargs=dict(features_extractor_class=ClassicA3CCNN))
    assert model.policy.features_extractor.cnn(th.zeros(1, 4, 42, 42)).shape == (1, 32 * 3 * 3)
    model.learn(200)
    assert model.num_timesteps >= 200


def test_a3c_atari_wrapper_gives_one_normalised_42x42_frame():
    env = A3CAtariWrapper(gym.make("PongNoFrameskip-v4"))
    observation, _ = env.reset(seed=0)
    assert observation.shape == (1, 42, 42) and observation.dtype == np.float32
    assert env.observation_space.shape == (1, 42, 42)
    frames = [env.step(env.action_space.sample())[0] for _ in range(200)]
    # The running statistics are bias-corrected: the frames are normalised from the first one on
    assert abs(float(np.mean(frames))) < 0.5 and 0.5 < float(np.std(frames)) < 2.0
    assert float(np.ptp(frames[-1])) > 0  # the paddles and the ball survive the crop and the resize


def test_a3c_lstm_policy_trains_its_lstm_with_the_value_loss():
    """Unlike sb3-contrib's shared_lstm, the critic's gradient reaches the LSTM and the convolutions."""
    env = make_vec_env("PongNoFrameskip-v4", n_envs=2, seed=0, wrapper_class=A3CAtariWrapper)
    policy = A3C("A3CCnnLstmPolicy", env, seed=0).policy
    assert isinstance(policy, A3CCnnLstmPolicy) and policy.shared_lstm and policy.lstm_critic is None
    assert policy.features_extractor.cnn(th.zeros(1, 1, 42, 42)).shape == (1, 32 * 3 * 3)
    observations = th.as_tensor(np.stack([env.reset()] * 3).reshape(6, 1, 42, 42))
    zeros = th.zeros(1, 2, 256)
    states = RNNStates((zeros, zeros), (zeros, zeros))
    values, _, _ = policy.evaluate_actions(observations, th.zeros(6), states, th.zeros(6))
    values.sum().backward()
    assert policy.lstm_actor.weight_ih_l0.grad.abs().sum() > 0
    assert policy.features_extractor.cnn[0].weight.grad.abs().sum() > 0
    assert policy.action_net.weight.grad is None or policy.action_net.weight.grad.abs().sum() == 0


def test_a3c_lstm_policy_trains_on_a3c_atari_frames():
    env = make_vec_env("PongNoFrameskip-v4", n_envs=4, seed=0, wrapper_class=A3CAtariWrapper)
    model = A3C("A3CCnnLstmPolicy", env, n_workers=2, n_steps=20, use_rms_prop=False, max_grad_norm=40, seed=0)
    before = [p.detach().clone() for p in model.policy.parameters()]
    model.learn(800)
    assert all(not (a == b).all() for a, b in zip(before, model.policy.parameters())), "every layer is trained"
    actions, state = model.predict(env.reset(), state=None, episode_start=np.ones(4, dtype=bool))
    assert actions.shape == (4,) and state[0].shape == (1, 4, 256)


@pytest.mark.parametrize("extractor", [SmallAtariCNN, SmallCnnConvolutions, ClassicA3CCNN])
def test_small_cnns_refuse_non_image_observations(extractor):
    with pytest.raises(ValueError, match=f"{extractor.__name__} expects channel-first image observations"):
        A3C("MlpPolicy", "CartPole-v1", n_envs=1, policy_kwargs=dict(features_extractor_class=extractor))


def test_vec_normalize_statistics_reach_the_main_process():
    env = VecNormalize(make_vec_env("Pendulum-v1", n_envs=2, seed=0))
    model = A3C("MlpPolicy", env, n_steps=8, seed=0)
    model.learn(800)
    assert env.obs_rms.count > 300  # worker 0's running statistics, mirrored after each of its updates


def test_atari_cnn_lstm_smoke(tmp_path):
    """CnnLstmPolicy on Pong with SB3's AtariWrapper and VecFrameStack: trains a few thousand steps and logs."""
    env = VecFrameStack(make_atari_env("PongNoFrameskip-v4", n_envs=2, seed=0), n_stack=4)
    model = A3C("CnnLstmPolicy", env, n_steps=20, seed=0, policy_kwargs=dict(lstm_hidden_size=128))
    model.set_logger(configure(str(tmp_path), ["csv"]))
    model.learn(2000, log_interval=10)
    assert model.num_timesteps >= 2000
    assert (tmp_path / "progress.csv").read_text().count("\n") >= 2
    observation = env.reset()
    episode_starts = np.ones(env.num_envs, dtype=bool)
    actions, state = model.predict(observation, state=None, episode_start=episode_starts, deterministic=True)
    assert actions.shape == (2,) and state is not None


def test_evaluate_policy_with_lstm_policy():
    model = A3C("MlpLstmPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), n_steps=8, seed=0)
    model.learn(200)
    mean_reward, _ = evaluate_policy(model, make_vec_env("CartPole-v1", n_envs=1), n_eval_episodes=2)
    assert mean_reward > 0


@pytest.mark.parametrize(
    "policy, env_id, hidden_size", [("MlpLstmPolicy", "CartPole-v1", 64), ("CnnLstmPolicy", "PongNoFrameskip-v4", 256)]
)
def test_lstm_policies_default_to_one_actor_lstm(policy, env_id, hidden_size):
    """One LSTM, the actor's; the critic is a dense layer on the features (what learns with A3C)."""
    env = make_atari_env(env_id, n_envs=1, seed=0) if "NoFrameskip" in env_id else make_vec_env(env_id, n_envs=1)
    for algorithm in (A3C, SyncA2C):
        lstm_policy = algorithm(policy, env, seed=0, device="cpu").policy
        assert lstm_policy.lstm_actor.hidden_size == hidden_size
        assert lstm_policy.lstm_critic is None and not lstm_policy.shared_lstm
        assert isinstance(lstm_policy.critic, th.nn.Linear)


def test_explicit_lstm_kwargs_win_over_the_defaults():
    model = A3C("MlpLstmPolicy", "CartPole-v1", n_envs=1, policy_kwargs=dict(lstm_hidden_size=32, enable_critic_lstm=True))
    assert model.policy.lstm_actor.hidden_size == 32
    assert model.policy.lstm_critic.hidden_size == 32


class BatchNormFeatures(BaseFeaturesExtractor):
    """Observations through BatchNorm1d, then a dense layer."""

    def __init__(self, observation_space: gym.spaces.Box):
        super().__init__(observation_space, features_dim=16)
        self.net = th.nn.Sequential(
            th.nn.BatchNorm1d(observation_space.shape[0]), th.nn.Linear(observation_space.shape[0], 16)
        )

    def forward(self, observations: th.Tensor) -> th.Tensor:
        return self.net(observations)


@pytest.mark.parametrize("algorithm", [A3C, SyncA2C])
def test_batch_norm_statistics_are_learned(algorithm):
    """The running mean the workers' forward passes update reaches the policy that predict() uses."""
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0)
    model = algorithm("MlpPolicy", env, n_steps=8, seed=0, policy_kwargs=dict(features_extractor_class=BatchNormFeatures))
    batch_norm = model.policy.features_extractor.net[0]
    model.learn(1000)
    assert batch_norm.num_batches_tracked.item() > 0
    assert batch_norm.running_mean.abs().sum() > 0
    assert not th.equal(batch_norm.running_var, th.ones_like(batch_norm.running_var))


@pytest.mark.parametrize("channels", [1, 3])
def test_running_frame_normalization_is_the_classic_agents(channels):
    """Each frame is normalised by the bias-corrected running mean and deviation of all frames up to it."""

    class Frames(gym.Env):
        observation_space = gym.spaces.Box(0, 255, (6, 5, channels), np.uint8)
        action_space = gym.spaces.Discrete(2)

    normalization = RunningFrameNormalization(Frames(), alpha=0.9)
    generator = np.random.default_rng(0)
    mean, std = 0.0, 0.0
    for n_frames in range(1, 6):
        frame = generator.integers(0, 256, (6, 5, channels), dtype=np.uint8)
        reference = np.moveaxis(frame, -1, 0).astype(np.float64) / 255.0
        mean = 0.9 * mean + 0.1 * reference.mean()
        std = 0.9 * std + 0.1 * reference.std()
        correction = 1 - 0.9**n_frames
        normalized = normalization.observation(frame)
        assert normalized.shape == (channels, 6, 5) and normalized.dtype == np.float32
        expected = (reference - mean / correction) / (std / correction + 1e-8)
        np.testing.assert_allclose(normalized, expected, rtol=1e-5, atol=1e-5)
