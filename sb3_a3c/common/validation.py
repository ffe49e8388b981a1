"""Argument checks that run in ``__init__``, before any worker process starts or any model is built."""

from numbers import Real

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm

# The action spaces SB3's A2C supports
SUPPORTED_ACTION_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


def require(condition: bool, name: str, value: object, allowed: str) -> None:
    """Raise ``ValueError`` saying what ``name`` was given and what is allowed, unless ``condition``."""
    if not condition:
        raise ValueError(f"{name}={value!r} is not allowed: {name} must be {allowed}")


def is_positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def check_hyperparameters(model: OnPolicyAlgorithm) -> None:
    """Raise ``ValueError`` naming the first hyperparameter of ``model`` that is out of range, and its allowed range."""
    learning_rate = model.learning_rate
    require(
        callable(learning_rate) or (isinstance(learning_rate, Real) and 0 < float(learning_rate) < np.inf),
        "learning_rate",
        learning_rate,
        "a positive number or a schedule (a function of the progress remaining)",
    )
    require(is_positive_int(model.n_steps), "n_steps", model.n_steps, "an integer >= 1")
    require(isinstance(model.gamma, Real) and 0 < float(model.gamma) <= 1, "gamma", model.gamma, "in (0, 1]")
    gae_lambda = model.gae_lambda
    require(isinstance(gae_lambda, Real) and 0 <= float(gae_lambda) <= 1, "gae_lambda", gae_lambda, "in [0, 1]")
    for name in ("ent_coef", "vf_coef"):
        value = getattr(model, name)
        require(isinstance(value, Real) and 0 <= float(value) < np.inf, name, value, "a finite number >= 0")
    max_grad_norm = model.max_grad_norm
    require(isinstance(max_grad_norm, Real) and float(max_grad_norm) > 0, "max_grad_norm", max_grad_norm, "a number > 0")


def check_action_space(action_space: spaces.Space, algorithm_name: str) -> None:
    """
    Raise ``ValueError`` for action spaces that SB3's A2C does not support, and for a ``Box`` with
    infinite bounds (SB3 needs finite bounds to clip or rescale continuous actions).
    """
    if not isinstance(action_space, SUPPORTED_ACTION_SPACES):
        allowed = ", ".join(space.__name__ for space in SUPPORTED_ACTION_SPACES)
        raise ValueError(f"{algorithm_name} does not support the action space {action_space}; supported: {allowed}")
    if isinstance(action_space, spaces.Box) and not (
        np.isfinite(action_space.low).all() and np.isfinite(action_space.high).all()
    ):
        raise ValueError(
            f"{algorithm_name} needs finite bounds for a Box action space (SB3 clips or rescales actions to them), "
            f"got {action_space}. Give the env finite bounds, e.g. with gymnasium.wrappers.ClipAction or RescaleAction."
        )
