"""SyncA2C: SB3 A2C's maths (checked against SB3's A2C), reproducible, with LSTM policies and the SB3 API."""

import inspect

import ale_py
import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3 import A2C
from stable_baselines3.common.callbacks import BaseCallback, EvalCallback, StopTrainingOnRewardThreshold
from stable_baselines3.common.env_util import make_atari_env, make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import VecFrameStack
from torch import nn

from sb3_a3c import A3C, CnnTwoHeadPolicy, SyncA2C

gym.register_envs(ale_py)


def parameters(model) -> list[th.Tensor]:
    return [p.detach().clone() for p in model.policy.parameters()]


# The hyperparameters of SB3 A2C's Zoo entries for LunarLanderContinuous, BipedalWalker and the PyBullet envs,
# which sync_a2c.yml ships (linear schedule as the Zoo passes it: a callable)
ZOO_GSDE_ENTRY = dict(
    n_steps=8,
    gae_lambda=0.9,
    vf_coef=0.4,
    normalize_advantage=False,
    learning_rate=lambda progress_remaining: 7e-4 * progress_remaining,
    use_sde=True,
    policy_kwargs=dict(log_std_init=-2, ortho_init=False),
)


@pytest.mark.parametrize(
    "env_id, n_updates, hyperparams",
    [("CartPole-v1", 1, {}), ("CartPole-v1", 10, {}), ("Pendulum-v1", 5, {}), ("Pendulum-v1", 5, ZOO_GSDE_ENTRY)],
    ids=["cartpole-1", "cartpole-10", "pendulum", "pendulum-zoo-gsde-entry"],
)
def test_updates_match_sb3_a2c(env_id: str, n_updates: int, hyperparams: dict):
    """With the same arguments (defaults included), seed and env, on the CPU: the same parameters as SB3's A2C."""
    n_envs, n_steps = 4, hyperparams.get("n_steps", 5)
    reference = A2C("MlpPolicy", make_vec_env(env_id, n_envs=n_envs, seed=0), seed=0, device="cpu", **hyperparams)
    reference.learn(n_envs * n_steps * n_updates)
    expected = parameters(reference)

    model = SyncA2C("MlpPolicy", make_vec_env(env_id, n_envs=n_envs, seed=0), seed=0, device="cpu", **hyperparams)
    model.learn(n_envs * n_steps * n_updates)
    assert model._n_updates == reference._n_updates == n_updates
    for actual, wanted in zip(parameters(model), expected):
        th.testing.assert_close(actual, wanted, rtol=0, atol=0)


def test_default_arguments_are_sb3_a2cs():
    a2c_defaults = inspect.signature(A2C.__init__).parameters
    for name, parameter in inspect.signature(SyncA2C.__init__).parameters.items():
        if name in a2c_defaults and name != "policy":
            assert parameter.default == a2c_defaults[name].default, name
    model = SyncA2C("MlpPolicy", "CartPole-v1", device="cpu")
    assert type(model.policy.optimizer) is th.optim.RMSprop
    assert model.policy.optimizer.defaults | dict(alpha=0.99, eps=1e-5) == model.policy.optimizer.defaults


def test_default_sync_a2c_learns_the_infinite_horizon_value_as_sb3_a2c():
    """
    SB3's tests/test_gae.py::test_infinite_horizon: a reward of 1 at every step, episodes cut by a time limit
    (and bootstrapped), so the initial state's value is ``1 / (1 - gamma)`` = 50.
    """
    gamma = 0.98
    values = {}
    for algorithm in (A2C, SyncA2C):
        env = gym.wrappers.TimeLimit(InfiniteHorizonEnv(), max_episode_steps=8)
        model = algorithm("MlpPolicy", env, gamma=gamma, seed=1, learning_rate=0.01, policy_kwargs=dict(net_arch=[32]))
        model.learn(500)
        initial_observation = model.policy.obs_to_tensor(0)[0]
        values[algorithm.__name__] = model.policy.predict_values(initial_observation).item()
    assert values["SyncA2C"] == pytest.approx(values["A2C"])
    assert values["SyncA2C"] == pytest.approx(1 / (1 - gamma), abs=1.0)


class InfiniteHorizonEnv(gym.Env):
    """A one-state env whose episodes never end, as SB3's ``test_gae.py`` builds it: the value is ``1 / (1 - gamma)``."""

    def __init__(self, n_states: int = 4):
        super().__init__()
        self.n_states = n_states
        self.observation_space = gym.spaces.Discrete(n_states)
        self.action_space = gym.spaces.Discrete(2)
        self.current_state = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.current_state = 0
        return self.current_state, {}

    def step(self, action):
        self.current_state = (self.current_state + 1) % self.n_states
        return self.current_state, 1.0, False, False, {}


@pytest.mark.parametrize("policy", ["MlpPolicy", "MlpLstmPolicy"])
def test_same_seed_twice_gives_identical_parameters(policy: str):
    runs = []
    for _ in range(2):
        model = SyncA2C(policy, make_vec_env("CartPole-v1", n_envs=4, seed=3), seed=3, device="cpu")
        model.learn(2_000)
        runs.append(parameters(model))
    for first, second in zip(*runs):
        assert th.equal(first, second)


def test_lstm_states_are_carried_across_rollouts_and_reset_at_episode_start():
    model = SyncA2C("MlpLstmPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), n_steps=5, seed=0, device="cpu")
    model.learn(10)
    hidden_after_first = model._last_lstm_states.pi[0].clone()
    assert hidden_after_first.abs().sum() > 0  # carried, not reset, at the end of a rollout
    buffer = model.rollout_buffer
    # The first states stored by the next rollout are those the previous rollout ended with
    model.learn(10, reset_num_timesteps=False)
    # After train(), the buffer holds (n_envs * n_steps, n_layers, hidden) with env 0's steps first
    np.testing.assert_allclose(buffer.hidden_states_pi[0], hidden_after_first[:, 0].numpy(), rtol=1e-6)
    np.testing.assert_allclose(buffer.hidden_states_pi[5], hidden_after_first[:, 1].numpy(), rtol=1e-6)


def test_save_load_resume_and_predict(tmp_path):
    model = SyncA2C("MlpLstmPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), seed=0, device="cpu")
    model.learn(500)
    model.save(tmp_path / "sync_a2c.zip")
    loaded = SyncA2C.load(tmp_path / "sync_a2c.zip", env=make_vec_env("CartPole-v1", n_envs=2, seed=1))
    for expected, actual in zip(parameters(model), parameters(loaded)):
        assert th.equal(expected, actual)
    observations = np.zeros((2, 4), dtype=np.float32)
    starts = np.ones(2, dtype=bool)
    np.testing.assert_array_equal(
        model.predict(observations, episode_start=starts, deterministic=True)[0],
        loaded.predict(observations, episode_start=starts, deterministic=True)[0],
    )
    saved_steps = loaded.num_timesteps
    loaded.learn(500, reset_num_timesteps=False)
    assert loaded.num_timesteps == saved_steps + 500


class StopAt(BaseCallback):
    def _on_step(self) -> bool:
        return self.num_timesteps < 200


def test_callbacks_eval_and_early_stop(tmp_path):
    model = SyncA2C("MlpPolicy", make_vec_env("CartPole-v1", n_envs=4, seed=0), seed=0, tensorboard_log=str(tmp_path))
    eval_callback = EvalCallback(make_vec_env("CartPole-v1"), eval_freq=100, n_eval_episodes=1, log_path=str(tmp_path))
    model.learn(1_000, callback=[eval_callback], progress_bar=True)
    assert list(eval_callback.evaluations_timesteps) == [400, 800]
    assert list(tmp_path.glob("SyncA2C_1/events.out.tfevents.*"))
    model.learn(10_000, callback=StopAt())
    assert model.num_timesteps == 200


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(n_steps=0), "n_steps=0 is not allowed"),
        (dict(gamma=0.0), "gamma=0.0 is not allowed"),
        (dict(policy_kwargs=dict(n_lstm_layers=2)), "['n_lstm_layers'] only apply to LSTM policies"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs, message):
    with pytest.raises(ValueError) as error:
        SyncA2C("MlpPolicy", "CartPole-v1", **kwargs)
    assert message in str(error.value)


def test_two_head_policy_has_separate_512_unit_heads_on_nature_cnn_convolutions():
    env = VecFrameStack(make_atari_env("PongNoFrameskip-v4", n_envs=2, seed=0), n_stack=4)
    for algorithm in (SyncA2C, A3C):
        model = algorithm("CnnTwoHeadPolicy", env, seed=0, device="cpu")
        policy = model.policy
        assert isinstance(policy, CnnTwoHeadPolicy)
        convolutions = [m for m in policy.features_extractor.modules() if isinstance(m, nn.Conv2d)]
        assert [(c.out_channels, c.kernel_size, c.stride) for c in convolutions] == [
            (32, (8, 8), (4, 4)),
            (64, (4, 4), (2, 2)),
            (64, (3, 3), (1, 1)),
        ]
        assert policy.features_dim == 64 * 7 * 7  # no shared dense layer
        for head in (policy.mlp_extractor.policy_net, policy.mlp_extractor.value_net):
            linears = [m for m in head if isinstance(m, nn.Linear)]
            assert [(lin.in_features, lin.out_features) for lin in linears] == [(3136, 512)]
            assert any(isinstance(m, nn.ReLU) for m in head)
        assert policy.action_net.out_features == env.action_space.n
        model.learn(200)
        assert model.num_timesteps >= 200


def test_small_two_head_policy_has_separate_256_unit_heads_on_the_a3c_paper_convolutions():
    env = VecFrameStack(make_atari_env("PongNoFrameskip-v4", n_envs=2, seed=0), n_stack=4)
    for algorithm in (SyncA2C, A3C):
        policy = algorithm("SmallCnnTwoHeadPolicy", env, seed=0, device="cpu").policy
        convolutions = [m for m in policy.features_extractor.modules() if isinstance(m, nn.Conv2d)]
        layers = [(c.out_channels, c.kernel_size, c.stride) for c in convolutions]
        assert layers == [(16, (8, 8), (4, 4)), (32, (4, 4), (2, 2))]
        assert policy.features_dim == 32 * 9 * 9  # no shared dense layer
        for head in (policy.mlp_extractor.policy_net, policy.mlp_extractor.value_net):
            assert [(m.in_features, m.out_features) for m in head if isinstance(m, nn.Linear)] == [(2592, 256)]
            assert any(isinstance(m, nn.ReLU) for m in head)
    model = A3C("SmallCnnTwoHeadPolicy", env, n_steps=5, seed=0, policy_kwargs=dict(net_arch=dict(pi=[64], vf=[32])))
    assert model.policy.mlp_extractor.latent_dim_vf == 32, "the user's net_arch wins"
    model.learn(200)
    assert model.num_timesteps >= 200


def test_small_two_head_lstm_policy_has_an_lstm_actor_head_and_a_dense_critic_on_the_convolutions():
    env = VecFrameStack(make_atari_env("PongNoFrameskip-v4", n_envs=2, seed=0), n_stack=4)
    for algorithm in (SyncA2C, A3C):
        model = algorithm("SmallCnnTwoHeadLstmPolicy", env, n_steps=5, seed=0, device="cpu")
        policy = model.policy
        assert (policy.lstm_actor.input_size, policy.lstm_actor.hidden_size) == (2592, 256)
        assert policy.lstm_critic is None and not policy.shared_lstm
        assert (policy.critic.in_features, policy.critic.out_features) == (2592, 256)
        value_layers = [m for m in policy.mlp_extractor.value_net if isinstance(m, nn.Linear)]
        assert [(m.in_features, m.out_features) for m in value_layers] == [(256, 256)]
        assert not [m for m in policy.mlp_extractor.policy_net if isinstance(m, nn.Linear)], "the LSTM is the actor's head"
        model.learn(200)
        assert model.num_timesteps >= 200
        actions, states = model.predict(env.reset(), deterministic=True)
        assert actions.shape == (2,) and states[0].shape == (1, 2, 256)


@pytest.mark.slow
@pytest.mark.parametrize(
    "policy, policy_kwargs, budget",
    [
        # Budgets several times the 10k-35k steps these runs need to reach 400 (seeds 0-2)
        ("MlpPolicy", {}, 150_000),
        ("MlpLstmPolicy", {}, 150_000),
    ],
)
def test_sync_a2c_learns_cartpole(policy: str, policy_kwargs: dict, budget: int):
    """Seed 0, 8 envs, n_steps=5, ent_coef=0, evaluation every 5 000 steps (10 deterministic episodes)."""
    model = SyncA2C(
        policy, make_vec_env("CartPole-v1", n_envs=8, seed=0), ent_coef=0.0, seed=0, device="cpu", policy_kwargs=policy_kwargs
    )
    eval_callback = EvalCallback(
        make_vec_env("CartPole-v1", n_envs=1, seed=100),
        eval_freq=5_000 // 8,
        n_eval_episodes=10,
        callback_on_new_best=StopTrainingOnRewardThreshold(reward_threshold=400),
    )
    model.learn(budget, callback=eval_callback)
    assert eval_callback.best_mean_reward >= 400, f"{policy}: {eval_callback.best_mean_reward} in {model.num_timesteps} steps"
    mean_reward, _ = evaluate_policy(model, make_vec_env("CartPole-v1", n_envs=1, seed=200), n_eval_episodes=10)
    assert mean_reward >= 400
