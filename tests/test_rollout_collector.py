"""A3C workers run SB3's own ``collect_rollouts`` on ``RolloutCollector``: the attributes it relies on are named."""

import inspect
import re

import pytest
from sb3_contrib.ppo_recurrent import RecurrentPPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm

from sb3_a3c import A3C
from sb3_a3c.a3c.worker.rollout_collector import COLLECT_ROLLOUTS_ATTRIBUTES, RolloutCollector


def attributes_of_self(function) -> set[str]:
    return set(re.findall(r"\bself\.(\w+)", inspect.getsource(function)))


def test_collect_rollouts_uses_only_the_named_attributes():
    """Fails when a release of SB3 or sb3-contrib makes collect_rollouts read or write another attribute."""
    used = attributes_of_self(OnPolicyAlgorithm.collect_rollouts) | attributes_of_self(RecurrentPPO.collect_rollouts)
    assert used == COLLECT_ROLLOUTS_ATTRIBUTES


@pytest.mark.parametrize("policy", ["MlpPolicy", "MlpLstmPolicy"])
def test_collector_provides_every_named_attribute_and_fills_its_buffer(policy):
    model = A3C(policy, make_vec_env("CartPole-v1", n_envs=1, seed=0), n_steps=8, seed=0)
    local_policy = model.config().make_local_policy()
    collector = RolloutCollector(
        local_policy, make_vec_env("CartPole-v1", n_envs=2, seed=0), n_steps=8, gamma=0.99, gae_lambda=1.0
    )
    for name in COLLECT_ROLLOUTS_ATTRIBUTES:
        assert hasattr(collector, name), name
    collector.collect()
    assert collector.rollout_buffer.full
    assert collector.num_timesteps == 8 * 2
