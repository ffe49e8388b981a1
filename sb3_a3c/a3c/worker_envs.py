"""
Give each actor-learner its own environments: a slice of the envs of the user's ``DummyVecEnv``,
re-wrapped in fresh copies of the user's VecEnv wrappers.

Workers are forked from the main process, so each one inherits the whole VecEnv (ALE emulators and
open ``Monitor`` files included, which cannot be pickled). A worker keeps the envs of its rank and
rebuilds the wrapper chain around them.
"""

import copy
from collections.abc import Callable

from stable_baselines3.common.vec_env import (
    DummyVecEnv,
    VecCheckNan,
    VecEnv,
    VecEnvWrapper,
    VecExtractDictObs,
    VecFrameStack,
    VecMonitor,
    VecNormalize,
    VecTransposeImage,
)


def _rebuild_frame_stack(wrapper: VecFrameStack, venv: VecEnv) -> VecEnv:
    stacked = wrapper.stacked_obs
    if hasattr(stacked, "sub_stacked_observations"):
        channels_order = {
            key: "first" if sub.channels_first else "last" for key, sub in stacked.sub_stacked_observations.items()
        }
        n_stack = next(iter(stacked.sub_stacked_observations.values())).n_stack
        return VecFrameStack(venv, n_stack=n_stack, channels_order=channels_order)
    return VecFrameStack(venv, n_stack=stacked.n_stack, channels_order="first" if stacked.channels_first else "last")


def _rebuild_normalize(wrapper: VecNormalize, venv: VecEnv) -> VecEnv:
    normalized = VecNormalize(
        venv,
        training=wrapper.training,
        norm_obs=wrapper.norm_obs,
        norm_reward=wrapper.norm_reward,
        clip_obs=wrapper.clip_obs,
        clip_reward=wrapper.clip_reward,
        gamma=wrapper.gamma,
        epsilon=wrapper.epsilon,
        norm_obs_keys=wrapper.norm_obs_keys,
    )
    # Start from the statistics gathered so far (e.g. a loaded vec_normalize.pkl)
    normalized.obs_rms = copy.deepcopy(wrapper.obs_rms)
    normalized.ret_rms = copy.deepcopy(wrapper.ret_rms)
    return normalized


# How to rebuild each supported VecEnv wrapper around a single-env VecEnv
WRAPPER_REBUILDERS: dict[type[VecEnvWrapper], Callable[[VecEnvWrapper, VecEnv], VecEnv]] = {
    VecFrameStack: _rebuild_frame_stack,
    VecTransposeImage: lambda wrapper, venv: VecTransposeImage(venv, skip=wrapper.skip),
    VecNormalize: _rebuild_normalize,
    VecMonitor: lambda wrapper, venv: VecMonitor(venv, info_keywords=wrapper.info_keywords),
    VecCheckNan: lambda wrapper, venv: VecCheckNan(
        venv, raise_exception=wrapper.raise_exception, warn_once=wrapper.warn_once, check_inf=wrapper.check_inf
    ),
    VecExtractDictObs: lambda wrapper, venv: VecExtractDictObs(venv, key=wrapper.key),
}


def _unwrap(vec_env: VecEnv) -> tuple[list[VecEnvWrapper], VecEnv]:
    """Return the VecEnv wrappers (outermost first) and the VecEnv they wrap."""
    wrappers = []
    while isinstance(vec_env, VecEnvWrapper):
        wrappers.append(vec_env)
        vec_env = vec_env.venv
    return wrappers, vec_env


def check_worker_env_support(vec_env: VecEnv, algorithm_name: str) -> None:
    """
    Raise ``ValueError`` unless each worker can get its own copy of ``vec_env``'s environments.

    :param vec_env: the training VecEnv
    :param algorithm_name: used in the error message
    """
    wrappers, base = _unwrap(vec_env)
    if not isinstance(base, DummyVecEnv):
        raise ValueError(
            f"{algorithm_name} runs one environment per worker process, so it needs the environments in a "
            f"DummyVecEnv (make_vec_env's default); got {type(base).__name__}. {type(base).__name__} already runs "
            "its envs in other processes, which A3C workers cannot share. Use make_vec_env(env_id, n_envs=N) or "
            "DummyVecEnv: A3C then runs the N envs in N worker processes."
        )
    for wrapper in wrappers:
        if type(wrapper) not in WRAPPER_REBUILDERS:
            supported = ", ".join(cls.__name__ for cls in WRAPPER_REBUILDERS)
            raise ValueError(
                f"{algorithm_name} gives each worker a copy of the VecEnv wrappers, and does not know how to copy "
                f"{type(wrapper).__name__}. Supported VecEnv wrappers: {supported}. "
                "Gymnasium wrappers inside the env (e.g. AtariWrapper, Monitor) are always supported."
            )


def make_worker_env(vec_env: VecEnv, env_indices: range) -> VecEnv:
    """
    Build a VecEnv from envs ``env_indices`` of ``vec_env``, with the same VecEnv wrappers.

    Call it in the worker process: the env objects are taken over, not copied.

    :param vec_env: the training VecEnv, as inherited by the forked worker
    :param env_indices: which of its environments this worker steps
    :return: a VecEnv with ``num_envs == len(env_indices)``
    """
    wrappers, base = _unwrap(vec_env)
    assert isinstance(base, DummyVecEnv), "check_worker_env_support() must run first"
    envs = [base.envs[index] for index in env_indices]
    worker_env: VecEnv = DummyVecEnv([lambda env=env: env for env in envs])
    for wrapper in reversed(wrappers):
        worker_env = WRAPPER_REBUILDERS[type(wrapper)](wrapper, worker_env)
    return worker_env


def describe_env(vec_env: VecEnv, env_index: int) -> str:
    """A short name for env ``env_index`` of ``vec_env`` to put in error messages (its gym id when known)."""
    _, base = _unwrap(vec_env)
    if isinstance(base, DummyVecEnv):
        spec = base.envs[env_index].spec
        if spec is not None:
            return spec.id
        return type(base.envs[env_index].unwrapped).__name__
    return type(base).__name__
