"""The policies A3C and SyncA2C accept: SB3's actor-critic policies and sb3-contrib's LSTM ones."""

from typing import Any

from sb3_contrib.common.recurrent.policies import RecurrentActorCriticPolicy
from sb3_contrib.ppo_recurrent.policies import CnnLstmPolicy, MlpLstmPolicy, MultiInputLstmPolicy
from stable_baselines3.common.policies import (
    ActorCriticCnnPolicy,
    ActorCriticPolicy,
    BasePolicy,
    MultiInputActorCriticPolicy,
)

POLICY_ALIASES: dict[str, type[BasePolicy]] = {
    "MlpPolicy": ActorCriticPolicy,
    "CnnPolicy": ActorCriticCnnPolicy,
    "MultiInputPolicy": MultiInputActorCriticPolicy,
    "MlpLstmPolicy": MlpLstmPolicy,
    "CnnLstmPolicy": CnnLstmPolicy,
    "MultiInputLstmPolicy": MultiInputLstmPolicy,
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
