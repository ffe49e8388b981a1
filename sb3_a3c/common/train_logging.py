"""The ``train/*`` metrics of an actor-critic update, recorded under SB3 A2C's names."""

import torch as th
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.policies import BasePolicy


def record_train_metrics(
    logger: Logger,
    policy: BasePolicy,
    n_updates: int,
    explained_variance: float,
    entropy_loss: float,
    policy_loss: float,
    value_loss: float,
    grad_norm: float | None = None,
) -> None:
    """
    Record what SB3's ``A2C.train()`` logs after an update (and the gradient norm, when known).

    :param logger: the algorithm's logger
    :param policy: the policy (its ``log_std`` is logged as ``train/std`` for Gaussian actions)
    :param n_updates: gradient steps made so far
    :param explained_variance: of the value function on the update's returns
    :param entropy_loss: entropy term of the loss
    :param policy_loss: policy-gradient term of the loss
    :param value_loss: value term of the loss
    :param grad_norm: norm of the gradient before clipping
    """
    logger.record("train/n_updates", n_updates, exclude="tensorboard")
    logger.record("train/explained_variance", explained_variance)
    logger.record("train/entropy_loss", entropy_loss)
    logger.record("train/policy_loss", policy_loss)
    logger.record("train/value_loss", value_loss)
    if grad_norm is not None:
        logger.record("train/grad_norm", grad_norm)
    if hasattr(policy, "log_std"):
        logger.record("train/std", th.exp(policy.log_std).mean().item())
