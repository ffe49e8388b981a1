"""Argument checks that run in ``__init__``, before any worker process starts."""

import warnings
from numbers import Real

import numpy as np
import torch as th
from gymnasium import spaces

# The action spaces SB3's A2C supports
SUPPORTED_ACTION_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


def _require(condition: bool, name: str, value: object, allowed: str) -> None:
    if not condition:
        raise ValueError(f"{name}={value!r} is not allowed: {name} must be {allowed}")


def check_hyperparameters(
    learning_rate: object,
    n_steps: object,
    gamma: object,
    gae_lambda: object,
    ent_coef: object,
    vf_coef: object,
    max_grad_norm: object,
    n_envs: object = None,
    n_workers: object = None,
) -> None:
    """Raise ``ValueError`` naming the first argument that is out of range, and its allowed range."""
    _require(
        callable(learning_rate) or (isinstance(learning_rate, Real) and 0 < float(learning_rate) < np.inf),
        "learning_rate",
        learning_rate,
        "a positive number or a schedule (a function of the progress remaining)",
    )
    _require(_is_positive_int(n_steps), "n_steps", n_steps, "an integer >= 1")
    _require(isinstance(gamma, Real) and 0 < float(gamma) <= 1, "gamma", gamma, "in (0, 1]")
    _require(isinstance(gae_lambda, Real) and 0 <= float(gae_lambda) <= 1, "gae_lambda", gae_lambda, "in [0, 1]")
    _require(isinstance(ent_coef, Real) and 0 <= float(ent_coef) < np.inf, "ent_coef", ent_coef, "a finite number >= 0")
    _require(isinstance(vf_coef, Real) and 0 <= float(vf_coef) < np.inf, "vf_coef", vf_coef, "a finite number >= 0")
    _require(isinstance(max_grad_norm, Real) and float(max_grad_norm) > 0, "max_grad_norm", max_grad_norm, "a number > 0")
    if n_envs is not None:
        _require(_is_positive_int(n_envs), "n_envs", n_envs, "an integer >= 1")
    if n_workers is not None:
        _require(_is_positive_int(n_workers), "n_workers", n_workers, "an integer >= 1 (or None: one worker per env)")


def _is_positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


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


def cpu_device(device: th.device | str, algorithm_name: str) -> th.device:
    """
    The device of an algorithm whose shared model and workers live on the CPU.

    "auto" and "cpu" give the CPU; another device is not silently ignored: a warning says where things run.
    """
    if str(device) not in ("auto", "cpu"):
        warnings.warn(
            f"{algorithm_name} keeps its shared model in CPU shared memory and runs every worker on the CPU; "
            f"device={device!r} is not used. Pass device='cpu' to silence this warning.",
            UserWarning,
            stacklevel=3,
        )
    return th.device("cpu")


def check_envs_divide_among_workers(n_envs: int, n_workers: int, algorithm_name: str) -> None:
    """Raise ``ValueError`` unless the ``n_envs`` envs can be split evenly between ``n_workers`` workers."""
    if n_envs % n_workers != 0:
        raise ValueError(
            f"{algorithm_name} splits the envs evenly between its worker processes, but {n_envs} envs cannot be split "
            f"between n_workers={n_workers}. Use a number of envs that is a multiple of n_workers."
        )
