"""Checks of A3C's own arguments (its CPU-only shared model, its worker processes), run in ``__init__``."""

import multiprocessing
import warnings

import torch as th


def check_fork_is_available(algorithm_name: str) -> None:
    """Raise ``ValueError`` where worker processes cannot be forked."""
    if "fork" not in multiprocessing.get_all_start_methods():
        raise ValueError(
            f"{algorithm_name} forks its worker processes (they inherit the shared model and the environments), "
            "and this platform has no 'fork' start method. Use Linux (or WSL)."
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
