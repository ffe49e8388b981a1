"""The policies A3C and SyncA2C accept: SB3's actor-critic policies and sb3-contrib's LSTM ones."""

from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib.common.recurrent.policies import RecurrentActorCriticPolicy
from sb3_contrib.common.recurrent.type_aliases import RNNStates
from sb3_contrib.ppo_recurrent.policies import CnnLstmPolicy, MlpLstmPolicy, MultiInputLstmPolicy
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.policies import (
    ActorCriticCnnPolicy,
    ActorCriticPolicy,
    BasePolicy,
    MultiInputActorCriticPolicy,
)
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from sb3_a3c.common.lstm_acting import act_one_step, can_act_one_step, choose_actions, log_probabilities
from sb3_a3c.common.torch_layers import (
    ClassicA3CConvolutions,
    NatureCnnConvolutions,
    SmallAtariCNN,
    SmallCnnConvolutions,
)


class CnnTwoHeadPolicy(ActorCriticCnnPolicy):
    """
    The A2C tutorial's image network: Nature-CNN convolutions, then separate actor and critic heads of
    one 512-unit ReLU layer each (no shared dense layer); the actor outputs a softmax over actions
    (a categorical distribution) for discrete action spaces.

    Takes the arguments of SB3's ``CnnPolicy``; only the defaults of ``net_arch``, ``activation_fn``
    and ``features_extractor_class`` differ.
    """

    def __init__(
        self,
        *args: Any,
        net_arch: dict[str, list[int]] | None = None,
        activation_fn: type[nn.Module] = nn.ReLU,
        features_extractor_class: type[BaseFeaturesExtractor] = NatureCnnConvolutions,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            *args,
            net_arch=dict(pi=[512], vf=[512]) if net_arch is None else net_arch,
            activation_fn=activation_fn,
            features_extractor_class=features_extractor_class,
            **kwargs,
        )


class SmallCnnTwoHeadPolicy(CnnTwoHeadPolicy):
    """
    ``CnnTwoHeadPolicy`` on the A3C paper's two convolutions (``SmallCnnConvolutions``): separate actor and
    critic heads of one 256-unit ReLU layer each. About a third of the two-head Nature network's
    multiply-adds per 84x84 frame.

    Takes the arguments of SB3's ``CnnPolicy``; only the defaults of ``net_arch``, ``activation_fn``
    and ``features_extractor_class`` differ.
    """

    def __init__(
        self,
        *args: Any,
        net_arch: dict[str, list[int]] | None = None,
        features_extractor_class: type[BaseFeaturesExtractor] = SmallCnnConvolutions,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            *args,
            net_arch=dict(pi=[256], vf=[256]) if net_arch is None else net_arch,
            features_extractor_class=features_extractor_class,
            **kwargs,
        )


class SmallCnnDefaults:
    """Defaults of the ``SmallCnn*`` policies: ``SmallAtariCNN`` features, actor and critic heads directly on them."""

    def __init__(
        self,
        *args: Any,
        net_arch: list[int] | dict[str, list[int]] | None = None,
        features_extractor_class: type[BaseFeaturesExtractor] = SmallAtariCNN,
        **kwargs: Any,
    ) -> None:
        # Like CnnPolicy with NatureCNN: the heads sit directly on the extracted features
        super().__init__(
            *args,
            net_arch=[] if net_arch is None else net_arch,
            features_extractor_class=features_extractor_class,
            **kwargs,
        )


class SmallCnnPolicy(SmallCnnDefaults, ActorCriticCnnPolicy):
    """
    SB3's ``CnnPolicy`` with the small network of the A3C paper (``SmallAtariCNN``: two convolutions,
    256 features), cheaper than the Nature CNN per frame. The policy of our Atari entries (84x84 frames).

    Takes the arguments of SB3's ``CnnPolicy``; only the defaults of ``features_extractor_class`` and
    ``net_arch`` (none) differ.
    """


class ActorLstmDefaults:
    """
    Defaults of our LSTM policies: one LSTM, the actor's, of ``default_lstm_hidden_size`` units; the
    critic is a dense layer on the features (sb3-contrib's ``enable_critic_lstm=False``). sb3-contrib's
    defaults, two 256-unit LSTMs, learn CartPole less reliably with A3C (docs/benchmarks.md#cartpole).
    Arguments given explicitly win.
    """

    default_lstm_hidden_size = 64

    def __init__(
        self, *args: Any, lstm_hidden_size: int | None = None, enable_critic_lstm: bool = False, **kwargs: Any
    ) -> None:
        super().__init__(
            *args,
            lstm_hidden_size=self.default_lstm_hidden_size if lstm_hidden_size is None else lstm_hidden_size,
            enable_critic_lstm=enable_critic_lstm,
            **kwargs,
        )


class ActorLstmMlpPolicy(ActorLstmDefaults, MlpLstmPolicy):
    """
    sb3-contrib's ``MlpLstmPolicy`` with one 64-unit LSTM, the actor's (what ``"MlpLstmPolicy"`` means for
    A3C and SyncA2C). Takes the arguments of ``MlpLstmPolicy``; only the LSTM defaults differ.
    """


class ActorLstmMultiInputPolicy(ActorLstmDefaults, MultiInputLstmPolicy):
    """
    sb3-contrib's ``MultiInputLstmPolicy`` with one 64-unit LSTM, the actor's (``"MultiInputLstmPolicy"``).
    Takes the arguments of ``MultiInputLstmPolicy``; only the LSTM defaults differ.
    """


class ActorLstmCnnPolicy(ActorLstmDefaults, CnnLstmPolicy):
    """
    sb3-contrib's ``CnnLstmPolicy`` with one 256-unit LSTM, the actor's, as in the A3C paper's recurrent
    agent (``"CnnLstmPolicy"``). Takes the arguments of ``CnnLstmPolicy``; only the LSTM defaults differ.
    """

    default_lstm_hidden_size = 256


class SmallCnnLstmPolicy(SmallCnnDefaults, ActorLstmCnnPolicy):
    """
    The A3C paper's recurrent network: the ``SmallAtariCNN`` features, then one 256-unit LSTM (the actor's).

    Takes the arguments of sb3-contrib's ``CnnLstmPolicy``; the defaults of ``features_extractor_class``,
    ``net_arch`` (none) and the LSTM differ.
    """


class SmallCnnTwoHeadLstmPolicy(ActorLstmCnnPolicy):
    """
    ``SmallCnnTwoHeadPolicy`` with an LSTM as the actor's head: the A3C paper's two convolutions
    (``SmallCnnConvolutions``), then one 256-unit LSTM for the actor, and for the critic its own dense
    layer and a 256-unit ReLU layer (sb3-contrib's critic without LSTM, ``net_arch=dict(pi=[], vf=[256])``).

    Takes the arguments of sb3-contrib's ``CnnLstmPolicy``; the defaults of ``features_extractor_class``,
    ``net_arch``, ``activation_fn`` and the LSTM differ.
    """

    def __init__(
        self,
        *args: Any,
        net_arch: list[int] | dict[str, list[int]] | None = None,
        activation_fn: type[nn.Module] = nn.ReLU,
        features_extractor_class: type[BaseFeaturesExtractor] = SmallCnnConvolutions,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            *args,
            net_arch=dict(pi=[], vf=[256]) if net_arch is None else net_arch,
            activation_fn=activation_fn,
            features_extractor_class=features_extractor_class,
            **kwargs,
        )


class A3CCnnLstmPolicy(RecurrentActorCriticPolicy):
    """
    The classic A3C-LSTM network (universe-starter-agent, pytorch-a3c) for ``A3CAtariWrapper``'s 42x42 frames:
    four 3x3 stride-2 convolutions of 32 channels with ELU (``ClassicA3CConvolutions``), one 256-unit LSTM
    shared by the actor and the critic, and linear actor and critic heads on its output.

    Unlike sb3-contrib's ``shared_lstm=True``, which detaches the critic from the LSTM, the value loss trains
    the LSTM and the convolutions too, as in the classic agent.

    Acting (``forward`` without gradient, as a worker's rollout calls it) and ``predict`` move each env one
    step with one LSTM cell step (``sb3_a3c.common.lstm_acting``), not sb3-contrib's sequence path; the results
    are the same.

    Takes the arguments of sb3-contrib's ``CnnLstmPolicy``; the defaults of ``features_extractor_class``,
    ``net_arch`` (none), ``lstm_hidden_size`` and ``shared_lstm`` differ.
    """

    def __init__(
        self,
        *args: Any,
        net_arch: list[int] | dict[str, list[int]] | None = None,
        features_extractor_class: type[BaseFeaturesExtractor] = ClassicA3CConvolutions,
        lstm_hidden_size: int = 256,
        shared_lstm: bool = True,
        enable_critic_lstm: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            *args,
            net_arch=[] if net_arch is None else net_arch,
            features_extractor_class=features_extractor_class,
            lstm_hidden_size=lstm_hidden_size,
            shared_lstm=shared_lstm,
            enable_critic_lstm=enable_critic_lstm,
            **kwargs,
        )

    def forward(
        self, obs: th.Tensor, lstm_states: RNNStates, episode_starts: th.Tensor, deterministic: bool = False
    ) -> tuple[th.Tensor, th.Tensor, th.Tensor, RNNStates]:
        if not (self.shared_lstm and can_act_one_step(self, obs, lstm_states.pi)):
            return super().forward(obs, lstm_states, episode_starts, deterministic)
        # Acting, one step per env (a worker's rollout): one LSTM cell step and the heads
        step = act_one_step(self, obs, lstm_states.pi, episode_starts)
        actions = choose_actions(step.action_logits, deterministic)
        values = self.value_net(self.mlp_extractor.forward_critic(step.latent))
        return actions, values, log_probabilities(step.action_logits, actions), RNNStates(step.lstm_states, step.lstm_states)

    def _predict(
        self,
        observation: th.Tensor,
        lstm_states: tuple[th.Tensor, th.Tensor],
        episode_starts: th.Tensor,
        deterministic: bool = False,
    ) -> tuple[th.Tensor, tuple[th.Tensor, ...]]:
        if not can_act_one_step(self, observation, lstm_states):
            return super()._predict(observation, lstm_states, episode_starts, deterministic)
        # predict() (the Zoo's evaluation), one step per env
        step = act_one_step(self, observation, lstm_states, episode_starts)
        return choose_actions(step.action_logits, deterministic), step.lstm_states

    def predict(
        self,
        observation: np.ndarray | dict[str, np.ndarray],
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """
        sb3-contrib's ``predict``, with the same arguments and results. For a batch of observations shaped as the
        observation space (what a VecEnv, and so the Zoo's evaluation, passes) and discrete actions, it skips the
        per-call work that batch does not need: the walk over every module when the policy is already in
        evaluation mode, the image transposition checks and the copies of the LSTM states.
        """
        if not (
            isinstance(observation, np.ndarray)
            and observation.shape[1:] == self.observation_space.shape
            and isinstance(self.action_space, spaces.Discrete)
        ):
            return super().predict(observation, state, episode_start, deterministic)
        if self.training:
            self.set_training_mode(False)
        n_envs = observation.shape[0]
        if state is None:
            n_layers, _, hidden_size = self.lstm_hidden_state_shape
            zeros = np.zeros((n_layers, n_envs, hidden_size), dtype=np.float32)
            state = (zeros, zeros)
        if episode_start is None:
            episode_start = np.zeros(n_envs, dtype=np.float32)
        with th.no_grad():
            states = (
                th.as_tensor(state[0], dtype=th.float32, device=self.device),
                th.as_tensor(state[1], dtype=th.float32, device=self.device),
            )
            episode_starts = th.as_tensor(episode_start, dtype=th.float32, device=self.device)
            observations = th.as_tensor(observation, device=self.device)
            actions, new_states = self._predict(observations, states, episode_starts, deterministic)
        return actions.cpu().numpy(), (new_states[0].cpu().numpy(), new_states[1].cpu().numpy())

    def evaluate_actions(
        self, obs: th.Tensor, actions: th.Tensor, lstm_states: RNNStates, episode_starts: th.Tensor
    ) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        if not self.shared_lstm:
            return super().evaluate_actions(obs, actions, lstm_states, episode_starts)
        features = self.extract_features(obs)
        latent, _ = self._process_sequence(features, lstm_states.pi, episode_starts, self.lstm_actor)
        # The critic reads the shared LSTM's output without detaching it
        distribution = self._get_action_dist_from_latent(self.mlp_extractor.forward_actor(latent))
        values = self.value_net(self.mlp_extractor.forward_critic(latent))
        return values, distribution.log_prob(actions), distribution.entropy()


POLICY_ALIASES: dict[str, type[BasePolicy]] = {
    "MlpPolicy": ActorCriticPolicy,
    "CnnPolicy": ActorCriticCnnPolicy,
    "MultiInputPolicy": MultiInputActorCriticPolicy,
    "MlpLstmPolicy": ActorLstmMlpPolicy,
    "CnnLstmPolicy": ActorLstmCnnPolicy,
    "MultiInputLstmPolicy": ActorLstmMultiInputPolicy,
    "CnnTwoHeadPolicy": CnnTwoHeadPolicy,
    "SmallCnnPolicy": SmallCnnPolicy,
    "SmallCnnTwoHeadPolicy": SmallCnnTwoHeadPolicy,
    "SmallCnnLstmPolicy": SmallCnnLstmPolicy,
    "SmallCnnTwoHeadLstmPolicy": SmallCnnTwoHeadLstmPolicy,
    "A3CCnnLstmPolicy": A3CCnnLstmPolicy,
}

# Keyword arguments that only sb3-contrib's recurrent policies understand
LSTM_POLICY_KWARGS = frozenset({"lstm_hidden_size", "n_lstm_layers", "shared_lstm", "enable_critic_lstm", "lstm_kwargs"})


def is_recurrent_policy_class(policy_class: type[BasePolicy]) -> bool:
    """Whether ``policy_class`` carries LSTM states (sb3-contrib's ``RecurrentActorCriticPolicy``)."""
    return issubclass(policy_class, RecurrentActorCriticPolicy)


def check_policy_kwargs(policy_class: type[BasePolicy], policy_kwargs: dict[str, Any]) -> None:
    """
    Reject LSTM options given to a feed-forward policy, which would otherwise fail deep inside torch.

    :param policy_class: the resolved policy class
    :param policy_kwargs: the user's ``policy_kwargs``
    """
    if not issubclass(policy_class, ActorCriticPolicy):
        raise ValueError(f"policy must be an actor-critic policy (a subclass of ActorCriticPolicy), got {policy_class!r}")
    lstm_kwargs = sorted(LSTM_POLICY_KWARGS & set(policy_kwargs))
    if lstm_kwargs and not is_recurrent_policy_class(policy_class):
        raise ValueError(
            f"policy_kwargs {lstm_kwargs} only apply to LSTM policies, but the policy is {policy_class.__name__}. "
            "Use 'MlpLstmPolicy', 'CnnLstmPolicy' or 'MultiInputLstmPolicy', or remove these keys."
        )


def with_default_optimizer(
    policy_kwargs: dict[str, Any],
    use_rms_prop: bool,
    rms_prop_eps: float,
) -> dict[str, Any]:
    """
    A copy of ``policy_kwargs`` with SB3 A2C's RMSprop (``torch.optim.RMSprop`` with ``alpha=0.99, eps=rms_prop_eps``)
    unless the user chose an ``optimizer_class`` or ``use_rms_prop=False`` (then the policy's own default, Adam).
    The defaults are added when the policy is built, not stored in ``model.policy_kwargs``, so that
    ``load(path, policy_kwargs=...)`` with the dict the model was built with matches what was saved.
    """
    policy_kwargs = dict(policy_kwargs)
    if use_rms_prop and "optimizer_class" not in policy_kwargs:
        policy_kwargs["optimizer_class"] = th.optim.RMSprop
        policy_kwargs["optimizer_kwargs"] = dict(alpha=0.99, eps=rms_prop_eps, weight_decay=0)
    return policy_kwargs


def build_policy(model: OnPolicyAlgorithm, policy_kwargs: dict[str, Any]) -> None:
    """
    The part of ``OnPolicyAlgorithm._setup_model`` that does not create a rollout buffer: learning-rate
    schedule, seeding, and ``model.policy`` built from ``model.policy_class`` and ``policy_kwargs``.

    :param model: the algorithm
    :param policy_kwargs: ``model.policy_kwargs`` with the algorithm's defaults added (``with_default_optimizer``)
    """
    model._setup_lr_schedule()
    model.set_random_seed(model.seed)
    model.policy = model.policy_class(  # type: ignore[assignment]
        model.observation_space, model.action_space, model.lr_schedule, use_sde=model.use_sde, **policy_kwargs
    )
    model.policy = model.policy.to(model.device)
