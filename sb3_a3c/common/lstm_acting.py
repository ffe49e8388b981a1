"""
One step of an LSTM policy for acting, without the per-call overhead of sb3-contrib's sequence path.

sb3-contrib's ``RecurrentActorCriticPolicy.forward`` and ``_predict`` run the LSTM over a sequence (on the CPU,
``nn.LSTM`` goes through oneDNN, which reorders its weights at every call) and build a distribution object, even
when each env moves one step. Acting one step per env, as a worker's rollout and an evaluation do, needs one LSTM
cell step and the heads: ``act_one_step`` computes exactly that with the policy's own weights (a parameter sync
or ``load_state_dict`` changes what it computes), and returns what ``forward`` and ``_predict`` would. Our
convolutional feature extractors run their few frames through ``ConvolutionsThenDense.forward_for_acting``, which
skips oneDNN's per-call weight reordering.
"""

from typing import NamedTuple

import torch as th
from sb3_contrib.common.recurrent.policies import RecurrentActorCriticPolicy
from stable_baselines3.common.distributions import CategoricalDistribution
from stable_baselines3.common.preprocessing import preprocess_obs


class OneStep(NamedTuple):
    """The outputs of one acting step for each env."""

    # Unnormalised log-probabilities of the actions, one row per env
    action_logits: th.Tensor
    # The LSTM's hidden and cell states after the step, shaped (1, n_envs, hidden size) as sb3-contrib keeps them
    lstm_states: tuple[th.Tensor, th.Tensor]
    # The LSTM's output (the latent both heads read when the LSTM is shared)
    latent: th.Tensor


def can_act_one_step(policy: RecurrentActorCriticPolicy, observation: th.Tensor, lstm_states: tuple[th.Tensor, ...]) -> bool:
    """
    Whether ``act_one_step`` computes what sb3-contrib's path would: no gradient is recorded, one observation per
    env (the LSTM moves one step), one LSTM layer shared by actor and critic (or the actor's only), discrete actions.
    """
    return (
        not th.is_grad_enabled()
        and isinstance(policy.action_dist, CategoricalDistribution)
        and policy.lstm_actor.num_layers == 1
        and policy.lstm_critic is None
        and observation.shape[0] == lstm_states[0].shape[1]
    )


def act_one_step(
    policy: RecurrentActorCriticPolicy,
    observation: th.Tensor,
    lstm_states: tuple[th.Tensor, th.Tensor],
    episode_starts: th.Tensor,
) -> OneStep:
    """
    One step of the actor's LSTM and its action head, for ``observation`` (one row per env).

    :param policy: the policy (``can_act_one_step`` holds)
    :param observation: the envs' observations, preprocessed as ``forward`` receives them
    :param lstm_states: the actor LSTM's hidden and cell states, each (1, n_envs, hidden size)
    :param episode_starts: 1.0 for the envs whose episode starts at this step (their states are reset to zero)
    """
    lstm = policy.lstm_actor
    # What BaseModel.extract_features computes, through the extractor's acting path where it has one
    extract = getattr(policy.pi_features_extractor, "forward_for_acting", policy.pi_features_extractor)
    features = extract(preprocess_obs(observation, policy.observation_space, policy.normalize_images))
    keep = (1.0 - episode_starts).view(-1, 1)
    hidden, cell = th.lstm_cell(
        features,
        (lstm_states[0][0] * keep, lstm_states[1][0] * keep),
        lstm.weight_ih_l0,
        lstm.weight_hh_l0,
        lstm.bias_ih_l0,
        lstm.bias_hh_l0,
    )
    action_logits = policy.action_net(policy.mlp_extractor.forward_actor(hidden))
    return OneStep(action_logits, (hidden.unsqueeze(0), cell.unsqueeze(0)), hidden)


def choose_actions(action_logits: th.Tensor, deterministic: bool) -> th.Tensor:
    """The most likely action, or one sampled as ``torch.distributions.Categorical`` samples it."""
    if deterministic:
        return th.argmax(action_logits, dim=1)
    return th.multinomial(th.softmax(action_logits, dim=1), 1, True).squeeze(1)


def log_probabilities(action_logits: th.Tensor, actions: th.Tensor) -> th.Tensor:
    """The log-probability of each env's action."""
    return th.log_softmax(action_logits, dim=1).gather(1, actions.long().unsqueeze(1)).squeeze(1)
