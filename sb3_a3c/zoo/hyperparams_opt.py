"""Optuna samplers for ``python -m rl_zoo3.train --algo a3c|sync_a2c -optimize``, in rl_zoo3's style."""

from typing import Any

import optuna
from rl_zoo3.hyperparams_opt import convert_onpolicy_params


def _sample_actor_critic_params(trial: optuna.Trial, n_steps_choices: list[int]) -> dict[str, Any]:
    """The hyperparameters A3C and SyncA2C share (the same names, so that the two compare)."""
    sampled_params = {
        "n_steps": trial.suggest_categorical("n_steps", n_steps_choices),
        "one_minus_gamma": trial.suggest_float("one_minus_gamma", 0.0001, 0.03, log=True),
        "one_minus_gae_lambda": trial.suggest_float("one_minus_gae_lambda", 0.0001, 0.1, log=True),
        "learning_rate": trial.suggest_float("learning_rate", 1e-5, 0.003, log=True),
        "ent_coef": trial.suggest_float("ent_coef", 0.00000001, 0.1, log=True),
        "max_grad_norm": trial.suggest_float("max_grad_norm", 0.3, 5),
        "net_arch": trial.suggest_categorical("net_arch", ["small", "medium"]),
        "activation_fn": trial.suggest_categorical("activation_fn", ["tanh", "relu"]),
    }
    # Display true values
    trial.set_user_attr("gamma", 1 - sampled_params["one_minus_gamma"])
    return convert_onpolicy_params(sampled_params)


def sample_a3c_params(trial: optuna.Trial, n_actions: int, n_envs: int, additional_args: dict) -> dict[str, Any]:
    """Sampler for A3C hyperparameters (each worker updates every ``n_steps`` steps)."""
    return _sample_actor_critic_params(trial, [5, 10, 20, 32, 64])


def sample_sync_a2c_params(trial: optuna.Trial, n_actions: int, n_envs: int, additional_args: dict) -> dict[str, Any]:
    """Sampler for SyncA2C hyperparameters (one update every ``n_steps`` steps of all envs)."""
    return _sample_actor_critic_params(trial, [5, 8, 16, 32, 64, 128])
