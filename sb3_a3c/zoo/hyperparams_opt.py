"""Optuna samplers for ``python -m rl_zoo3.train --algo a3c|sync_a2c -optimize``, in rl_zoo3's style."""

import copy
from typing import Any

import optuna
import torch as th
from rl_zoo3.utils import linear_schedule

from sb3_a3c.common.optimizers import RMSpropFromOne

RMSPROP_SETTINGS = dict(alpha=0.99, eps=1e-5, weight_decay=0)
# The optimizer a trial builds (``policy_kwargs``), with SB3 A2C's RMSprop settings: torch's RMSprop, or
# ``RMSpropFromOne`` (its average of squared gradients started at one)
OPTIMIZERS: dict[str, dict[str, Any]] = {
    "rmsprop_from_one": dict(optimizer_class=RMSpropFromOne, optimizer_kwargs=RMSPROP_SETTINGS),
    "rmsprop": dict(optimizer_class=th.optim.RMSprop, optimizer_kwargs=RMSPROP_SETTINGS),
}


def convert_actor_critic_params(sampled_params: dict[str, Any]) -> dict[str, Any]:
    """
    The hyperparameters of a trial's sampled values, as a Zoo YAML entry gives them: rl_zoo3's
    ``convert_onpolicy_params``, plus the optimizer (``optimizer``) and the learning-rate schedule
    (``lr_schedule``: a linear rate is the Zoo's ``"lin_<initial value>"`` string). The Zoo converts a stored
    trial's values with it (``--trial-id``) and then turns the string into a schedule, as it does for its YAML files.
    """
    # Imported here: importing rl_zoo3.hyperparams_opt registers this module's samplers (sb3_a3c.zoo.startup)
    from rl_zoo3.hyperparams_opt import convert_onpolicy_params

    sampled_params = dict(sampled_params)
    optimizer = sampled_params.pop("optimizer", "rmsprop_from_one")
    lr_schedule = sampled_params.pop("lr_schedule", "constant")
    hyperparams = convert_onpolicy_params(sampled_params)
    hyperparams["policy_kwargs"].update(copy.deepcopy(OPTIMIZERS[optimizer]))
    if lr_schedule == "linear":
        hyperparams["learning_rate"] = f"lin_{hyperparams['learning_rate']}"
    return hyperparams


def _sample_actor_critic_params(trial: optuna.Trial, n_steps_choices: list[int]) -> dict[str, Any]:
    """The hyperparameters A3C and SyncA2C share (the same names, so that the two compare)."""
    sampled_params = {
        "n_steps": trial.suggest_categorical("n_steps", n_steps_choices),
        "one_minus_gamma": trial.suggest_float("one_minus_gamma", 0.0001, 0.03, log=True),
        "one_minus_gae_lambda": trial.suggest_float("one_minus_gae_lambda", 0.0001, 0.1, log=True),
        "learning_rate": trial.suggest_float("learning_rate", 1e-5, 0.003, log=True),
        "lr_schedule": trial.suggest_categorical("lr_schedule", ["linear", "constant"]),
        "ent_coef": trial.suggest_float("ent_coef", 0.00000001, 0.1, log=True),
        "max_grad_norm": trial.suggest_float("max_grad_norm", 0.3, 5),
        "net_arch": trial.suggest_categorical("net_arch", ["small", "medium"]),
        "activation_fn": trial.suggest_categorical("activation_fn", ["tanh", "relu"]),
        "optimizer": trial.suggest_categorical("optimizer", list(OPTIMIZERS)),
    }
    # Display true values
    trial.set_user_attr("gamma", 1 - sampled_params["one_minus_gamma"])
    hyperparams = convert_actor_critic_params(sampled_params)
    # A trial's model is built from these values directly, without the Zoo's conversion of "lin_<value>"
    if sampled_params["lr_schedule"] == "linear":
        hyperparams["learning_rate"] = linear_schedule(sampled_params["learning_rate"])
    return hyperparams


def sample_a3c_params(trial: optuna.Trial, n_actions: int, n_envs: int, additional_args: dict) -> dict[str, Any]:
    """Sampler for A3C hyperparameters (each worker updates every ``n_steps`` steps)."""
    return _sample_actor_critic_params(trial, [5, 10, 20, 32, 64])


def sample_sync_a2c_params(trial: optuna.Trial, n_actions: int, n_envs: int, additional_args: dict) -> dict[str, Any]:
    """Sampler for SyncA2C hyperparameters (one update every ``n_steps`` steps of all envs)."""
    return _sample_actor_critic_params(trial, [5, 8, 16, 32, 64, 128])
