"""
The A3C-LSTM agent's one-step acting path (``sb3_a3c.common.lstm_acting``) gives what sb3-contrib's sequence path
gives, for a worker's rollout (``forward``) and for ``predict`` (the Zoo's evaluation), with the policy's current
weights.
"""

import copy

import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from sb3_contrib.common.recurrent.policies import RecurrentActorCriticPolicy
from sb3_contrib.common.recurrent.type_aliases import RNNStates

from sb3_a3c.common.policies import A3CCnnLstmPolicy

N_ENVS = 6


def make_policy(seed: int = 0) -> A3CCnnLstmPolicy:
    th.manual_seed(seed)
    return A3CCnnLstmPolicy(spaces.Box(-5, 5, (1, 42, 42), np.float32), spaces.Discrete(6), lambda _: 1e-4)


def inputs(seed: int = 1) -> tuple[th.Tensor, RNNStates, th.Tensor]:
    generator = th.Generator().manual_seed(seed)
    observation = th.randn(N_ENVS, 1, 42, 42, generator=generator)
    hidden, cell = th.randn(1, N_ENVS, 256, generator=generator), th.randn(1, N_ENVS, 256, generator=generator)
    episode_starts = th.tensor([0.0, 1.0, 0.0, 0.0, 1.0, 0.0])
    return observation, RNNStates((hidden, cell), (hidden, cell)), episode_starts


def sequence_path_forward(policy, observation, states, episode_starts, deterministic=False):
    return RecurrentActorCriticPolicy.forward(policy, observation, states, episode_starts, deterministic)


def test_acting_step_gives_the_sequence_paths_actions_values_log_probs_and_states():
    policy = make_policy()
    observation, states, episode_starts = inputs()
    with th.no_grad():
        actions, values, log_probs, new_states = policy.forward(observation, states, episode_starts, deterministic=True)
        expected = sequence_path_forward(policy, observation, states, episode_starts, deterministic=True)
    th.testing.assert_close(actions, expected[0])
    th.testing.assert_close(values, expected[1])
    th.testing.assert_close(log_probs, expected[2])
    for actual, wanted in zip([*new_states.pi, *new_states.vf], [*expected[3].pi, *expected[3].vf]):
        th.testing.assert_close(actual, wanted)


def test_sampled_actions_are_those_of_the_sequence_path_with_the_same_random_state():
    policy = make_policy()
    observation, states, episode_starts = inputs()
    with th.no_grad():
        th.manual_seed(7)
        actions = [policy.forward(observation, states, episode_starts)[0] for _ in range(20)]
        th.manual_seed(7)
        expected = [sequence_path_forward(policy, observation, states, episode_starts)[0] for _ in range(20)]
    assert all(th.equal(actual, wanted) for actual, wanted in zip(actions, expected))
    assert len({tuple(action.tolist()) for action in actions}) > 1  # the actions were sampled


def test_acting_step_agrees_with_evaluate_actions():
    """The values and log-probabilities stored at acting time are those the update recomputes for the same step."""
    policy = make_policy()
    observation, states, episode_starts = inputs()
    with th.no_grad():
        actions, values, log_probs, _ = policy.forward(observation, states, episode_starts)
        evaluated_values, evaluated_log_probs, _ = policy.evaluate_actions(observation, actions, states, episode_starts)
    th.testing.assert_close(values, evaluated_values)
    th.testing.assert_close(log_probs, evaluated_log_probs)


def test_acting_step_uses_the_weights_loaded_by_a_parameter_sync():
    """A worker loads the shared parameters before each rollout: the acting step then computes with them."""
    local_policy, shared_policy = make_policy(seed=0), make_policy(seed=1)
    observation, states, episode_starts = inputs()
    with th.no_grad():
        before = local_policy.forward(observation, states, episode_starts, deterministic=True)
        local_policy.load_state_dict(shared_policy.state_dict())
        after = local_policy.forward(observation, states, episode_starts, deterministic=True)
        expected = sequence_path_forward(shared_policy, observation, states, episode_starts, deterministic=True)
    assert not th.allclose(before[1], after[1])
    th.testing.assert_close(after[1], expected[1])
    th.testing.assert_close(after[2], expected[2])


def sb3_contrib_predict(policy: A3CCnnLstmPolicy):
    """sb3-contrib's own ``predict`` and ``_predict`` (the sequence path) on a copy of ``policy``."""
    reference = copy.deepcopy(policy)
    reference._predict = lambda *args, **kwargs: RecurrentActorCriticPolicy._predict(reference, *args, **kwargs)
    return lambda *args: RecurrentActorCriticPolicy.predict(reference, *args)


@pytest.mark.parametrize("deterministic", [True, False])
def test_predict_gives_sb3_contribs_actions_and_states(deterministic):
    policy = make_policy()
    reference_predict = sb3_contrib_predict(policy)
    generator = np.random.default_rng(0)
    state, reference_state = None, None
    for step in range(30):
        observation = generator.normal(size=(N_ENVS, 1, 42, 42)).astype(np.float32)
        episode_start = np.array([step % 11 == 0] * N_ENVS)
        th.manual_seed(step)
        actions, state = policy.predict(observation, state, episode_start, deterministic)
        th.manual_seed(step)
        expected_actions, reference_state = reference_predict(observation, reference_state, episode_start, deterministic)
        assert actions.shape == expected_actions.shape and actions.dtype == expected_actions.dtype
        np.testing.assert_array_equal(actions, expected_actions)
        np.testing.assert_allclose(state[0], reference_state[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(state[1], reference_state[1], rtol=1e-5, atol=1e-6)


def test_predict_without_state_or_episode_start_and_for_one_unbatched_observation():
    policy = make_policy()
    reference_predict = sb3_contrib_predict(policy)
    observations = np.random.default_rng(1).normal(size=(N_ENVS, 1, 42, 42)).astype(np.float32)
    actions, state = policy.predict(observations, deterministic=True)
    expected_actions, expected_state = reference_predict(observations, None, None, True)
    np.testing.assert_array_equal(actions, expected_actions)
    np.testing.assert_allclose(state[0], expected_state[0], rtol=1e-5, atol=1e-6)
    action, one_state = policy.predict(observations[0], deterministic=True)  # one env's observation, no batch axis
    assert action.shape == () and action == expected_actions[0]
    np.testing.assert_allclose(one_state[0][:, 0], expected_state[0][:, 0], rtol=1e-5, atol=1e-6)


def test_predict_switches_a_policy_left_in_training_mode_to_evaluation_mode():
    policy = make_policy()
    policy.set_training_mode(True)
    policy.predict(np.zeros((N_ENVS, 1, 42, 42), dtype=np.float32))
    assert not any(module.training for module in policy.modules())


def test_training_takes_the_sequence_path_with_gradients():
    policy = make_policy()
    observation, states, episode_starts = inputs()
    _, values, log_probs, _ = policy.forward(observation, states, episode_starts)
    (values.sum() + log_probs.sum()).backward()
    assert policy.lstm_actor.weight_ih_l0.grad is not None


@pytest.mark.parametrize("n_frames", [1, 4, 64])
def test_acting_features_are_the_extractors_features_with_the_current_weights(n_frames):
    """The acting step's convolutions (channels-last, without oneDNN) compute what ``forward`` computes."""
    policy, other = make_policy(seed=0), make_policy(seed=1)
    extractor = policy.features_extractor
    observation = th.randn(n_frames, 1, 42, 42, generator=th.Generator().manual_seed(2))
    onednn_enabled = th.backends.mkldnn.enabled
    with th.no_grad():
        before = extractor.forward_for_acting(observation)
        th.testing.assert_close(before, extractor(observation), rtol=1e-5, atol=1e-5)
        policy.load_state_dict(other.state_dict())
        after = extractor.forward_for_acting(observation)
        th.testing.assert_close(after, other.features_extractor(observation), rtol=1e-5, atol=1e-5)
    assert not th.allclose(before, after)
    assert th.backends.mkldnn.enabled == onednn_enabled
    # The weights keep their layout: a shared policy's parameters stay where the workers read them
    assert all(parameter.is_contiguous() for parameter in policy.parameters())
