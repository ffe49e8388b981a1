"""
The shipped Atari entries do not die in their first updates: after a few hundred updates on real Pong
frames, the units of the layers the actor and the critic read are still active and the policy still
tells frames apart (a dead network gives every frame the same action distribution, for good).
"""

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import rl_zoo3.exp_manager
import torch as th
import yaml
from rl_zoo3.utils import get_wrapper_class
from sb3_contrib.common.recurrent.policies import RecurrentActorCriticPolicy
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.preprocessing import is_image_space, is_image_space_channels_first
from stable_baselines3.common.vec_env import VecEnv, VecFrameStack, VecTransposeImage

from sb3_a3c import A3C, SyncA2C
from sb3_a3c.zoo import ZOO_ALGORITHMS
from sb3_a3c.zoo.registration import hyperparams_path

ENV_ID = "PongNoFrameskip-v4"
# Keys of a Zoo entry that build the env or set the budget, not the model
ZOO_ENV_KEYS = ("env_wrapper", "frame_stack", "n_envs", "n_timesteps", "policy")


def make_atari_env_as_the_zoo(entry: dict, n_envs: int, seed: int) -> VecEnv:
    """The entry's envs, wrappers and frame stack, transposed to channel-first as the Zoo does."""
    import ale_py

    gym.register_envs(ale_py)
    env = make_vec_env(ENV_ID, n_envs=n_envs, seed=seed, wrapper_class=get_wrapper_class(entry))
    if entry.get("frame_stack"):
        env = VecFrameStack(env, n_stack=entry["frame_stack"])
    if is_image_space(env.observation_space) and not is_image_space_channels_first(env.observation_space):
        env = VecTransposeImage(env)
    return env


def shipped_atari_entry(algo: str, entry_name: str = "atari") -> dict:
    return yaml.load(Path(hyperparams_path(algo)).read_text(), Loader=yaml.UnsafeLoader)[entry_name]


def shipped_atari_model(algo: str, entry: dict, n_envs: int, seed: int) -> OnPolicyAlgorithm:
    """The shipped Atari ``entry`` of ``algo`` with ``n_envs`` envs (and at most as many workers)."""
    hyperparameters = {key: value for key, value in entry.items() if key not in ZOO_ENV_KEYS}
    if "n_workers" in hyperparameters:
        hyperparameters["n_workers"] = min(hyperparameters["n_workers"], n_envs)
    if isinstance(hyperparameters.get("policy_kwargs"), str):
        # As the Zoo reads it: evaluated in rl_zoo3.exp_manager's namespace
        hyperparameters["policy_kwargs"] = eval(hyperparameters["policy_kwargs"], vars(rl_zoo3.exp_manager))
    algorithm_class = {A3C.__name__: A3C, SyncA2C.__name__: SyncA2C}[ZOO_ALGORITHMS[algo][1]]
    return algorithm_class(entry["policy"], make_atari_env_as_the_zoo(entry, n_envs, seed), seed=seed, **hyperparameters)


def random_play_frames(env: VecEnv, n_steps: int) -> np.ndarray:
    """Observations of ``env`` under random actions, in the order they came (one sequence per env)."""
    frames = [env.reset()]
    for _ in range(n_steps - 1):
        frames.append(env.step(np.array([env.action_space.sample() for _ in range(env.num_envs)]))[0])
    return np.stack(frames)  # (n_steps, n_envs, *observation shape)


def latents_and_action_probabilities(policy, frames: np.ndarray) -> tuple[th.Tensor, th.Tensor]:
    """What the actor's and the critic's heads read for each frame, and the policy's action probabilities."""
    n_steps, n_envs = frames.shape[:2]
    with th.no_grad():
        observations = th.as_tensor(frames.swapaxes(0, 1).reshape(n_envs * n_steps, *frames.shape[2:]))
        features = policy.extract_features(observations)
        if isinstance(policy, RecurrentActorCriticPolicy):
            # One sequence per env, from a zero state: the LSTM's output is what both heads read
            states = th.zeros(policy.lstm_hidden_state_shape[0], n_envs, policy.lstm_hidden_state_shape[2])
            episode_starts = th.zeros(n_envs * n_steps)
            latent_pi, _ = policy._process_sequence(features, (states, states), episode_starts, policy.lstm_actor)
            latents = latent_pi = policy.mlp_extractor.forward_actor(latent_pi)
        else:
            latent_pi, latent_vf = policy.mlp_extractor(features)
            latents = th.cat([latent_pi, latent_vf], dim=1)
        probabilities = policy._get_action_dist_from_latent(latent_pi).distribution.probs
    return latents, probabilities


def active_unit_share(latents: th.Tensor) -> float:
    """Share of the units that are non-zero on at least one frame (a dead ReLU unit is zero on all)."""
    return (latents != 0).any(dim=0).float().mean().item()


def active_shares_before_and_after(model: OnPolicyAlgorithm, entry: dict, n_updates: int, seed: int) -> tuple:
    """The share of active units on fixed frames of random play before and after ``n_updates``, and the policy's
    action probabilities on them after."""
    frames = random_play_frames(make_atari_env_as_the_zoo(entry, n_envs=4, seed=seed + 1), n_steps=64)
    latents_at_start, _ = latents_and_action_probabilities(model.policy, frames)
    model.learn(n_updates * model.n_steps * model.n_envs)
    latents, probabilities = latents_and_action_probabilities(model.policy, frames)
    return active_unit_share(latents_at_start), active_unit_share(latents), latents, probabilities


@pytest.mark.slow
@pytest.mark.parametrize(
    "algo, entry_name, n_updates",
    [("a3c", "atari", 200), ("a3c", "BreakoutNoFrameskip-v4", 300), ("a3c_cnn", "atari", 300), ("sync_a2c", "atari", 300)],
)
def test_atari_entry_keeps_its_features_alive_in_its_first_updates(algo, entry_name, n_updates):
    seed = 3
    entry = shipped_atari_entry(algo, entry_name)
    model = shipped_atari_model(algo, entry, n_envs=4, seed=seed)
    share_at_start, share, latents, probabilities = active_shares_before_and_after(model, entry, n_updates, seed)
    assert latents.abs().sum() > 0, "every feature is zero on every frame"
    assert share >= 0.8 * share_at_start, (
        f"{algo} {entry_name}: {share:.2f} of the units active after {n_updates} updates, {share_at_start:.2f} at the start"
    )
    assert (probabilities.max(dim=0).values - probabilities.min(dim=0).values).max() > 1e-4, (
        "the policy gives every frame the same action distribution"
    )


@pytest.mark.slow
def test_without_its_optimizer_the_feed_forward_atari_entry_loses_its_units():
    """What the entries' ``optimizer_class`` protects against: with torch's RMSprop (SB3's default) in its place,
    ``sync_a2c``'s entry switches off most of its units in its first updates (the check above would fail)."""
    seed = 3
    entry = dict(shipped_atari_entry("sync_a2c"))
    assert "RMSpropFromOne" in entry.pop("policy_kwargs")
    model = shipped_atari_model("sync_a2c", entry, n_envs=4, seed=seed)
    assert type(model.policy.optimizer) is th.optim.RMSprop
    share_at_start, share, _, _ = active_shares_before_and_after(model, entry, n_updates=300, seed=seed)
    assert share < 0.8 * share_at_start, (
        f"{share:.2f} of the units active after 300 updates, {share_at_start:.2f} at the start"
    )
