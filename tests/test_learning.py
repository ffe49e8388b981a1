"""A3C learns CartPole-v1: mean evaluation reward >= 400 over 10 deterministic episodes within a step budget."""

import pytest
from stable_baselines3.common.callbacks import EvalCallback, StopTrainingOnRewardThreshold
from stable_baselines3.common.env_util import make_vec_env

from sb3_a3c import A3C

REWARD_THRESHOLD = 400


@pytest.mark.slow
@pytest.mark.parametrize(
    "policy, synchronous_updates, budget",
    [
        # Budgets several times the steps these runs typically need (about 10k for the MLP, about 21k for the
        # LSTM); training stops as soon as 400 is reached.
        ("MlpPolicy", False, 100_000),
        # The default LSTM (one 64-unit LSTM, the actor's), with synchronous updates: their training repeats for
        # a seed, where a Hogwild run differs each time and can collapse before it reaches 400.
        ("MlpLstmPolicy", True, 300_000),
    ],
)
def test_a3c_learns_cartpole(policy: str, synchronous_updates: bool, budget: int):
    """Seed 0, 2 workers, default hyperparameters; evaluation every 2 500 steps on a separate env."""
    model = A3C(policy, make_vec_env("CartPole-v1", n_envs=2, seed=0), seed=0, synchronous_updates=synchronous_updates)
    eval_callback = EvalCallback(
        make_vec_env("CartPole-v1", n_envs=1, seed=100),
        eval_freq=2_500 // 2,  # on_step calls: one per n_envs = 2 env steps
        n_eval_episodes=10,
        deterministic=True,
        callback_on_new_best=StopTrainingOnRewardThreshold(reward_threshold=REWARD_THRESHOLD),
    )
    model.learn(budget, callback=eval_callback)
    assert eval_callback.best_mean_reward >= REWARD_THRESHOLD, (
        f"{policy} reached only {eval_callback.best_mean_reward} in {model.num_timesteps} steps"
    )
    assert model.num_timesteps <= budget + 2 * model.n_steps
