"""
Give each actor-learner its own environments: a slice of the envs of the user's ``DummyVecEnv``,
re-wrapped in fresh copies of the user's VecEnv wrappers.

Workers are forked from the main process, so each one inherits the whole VecEnv (ALE emulators and
open ``Monitor`` files included). A worker keeps the envs of its rank and rebuilds the wrapper chain
around them. When ``learn()`` ends, each worker sends its envs back (``export_worker_env``) and the
main process puts them in place of its own copies (``import_worker_env``, ``put_back_worker_envs``): the
training VecEnv's envs (their ``Monitor`` statistics included) are then the ones the workers advanced,
and a later ``learn()`` continues from them.
"""

import copy
import copyreg
import inspect
import io
import pickle
from collections.abc import Callable
from typing import Any

from stable_baselines3.common.monitor import ResultsWriter
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


def _set_wrapper_state(wrapper: VecEnvWrapper, state: dict[str, Any]) -> None:
    wrapper.__dict__.update(state)
    wrapper.class_attributes = dict(inspect.getmembers(type(wrapper)))


class _Pickler(pickle.Pickler):
    """
    Pickles open files and ``Monitor``'s CSV writers by file name: the main process has the same files open
    (the forked workers inherited them), and their objects take the place of the worker's.
    """

    def reducer_override(self, obj: Any) -> Any:
        # A VecEnvWrapper keeps its class's members (not picklable) and answers unknown attributes from its
        # venv (which pickle's own attribute lookups would recurse into): pickle its other attributes only
        if isinstance(obj, VecEnvWrapper) and not isinstance(obj, VecNormalize):
            state = {name: value for name, value in vars(obj).items() if name != "class_attributes"}
            return copyreg.__newobj__, (type(obj),), state, None, None, _set_wrapper_state
        return NotImplemented

    def persistent_id(self, obj: Any) -> tuple[str, str] | None:
        if isinstance(obj, ResultsWriter):
            return ("monitor results writer", getattr(obj.file_handler, "name", repr(obj)))
        if isinstance(obj, io.IOBase):
            return ("open file", getattr(obj, "name", repr(obj)))
        return None


class _FileCollector(_Pickler):
    """Finds the open files an object holds (by pickling it into nothing)."""

    def __init__(self) -> None:
        super().__init__(io.BytesIO())
        self.files: dict[tuple[str, str], Any] = {}

    def persistent_id(self, obj: Any) -> tuple[str, str] | None:
        file_id = super().persistent_id(obj)
        if file_id is not None:
            self.files[file_id] = obj
        return file_id


class _Unpickler(pickle.Unpickler):
    """Unpickles what ``_Pickler`` wrote, giving each file the object in ``open_files`` (None when ``open_files`` is None)."""

    def __init__(self, data: bytes, open_files: dict[tuple[str, str], Any] | None) -> None:
        super().__init__(io.BytesIO(data))
        self.open_files = open_files

    def persistent_load(self, file_id: tuple[str, str]) -> Any:
        if self.open_files is None:
            return None
        try:
            return self.open_files[tuple(file_id)]
        except KeyError:
            raise pickle.UnpicklingError(f"{file_id[1]} is open in the worker's env but not in the training env") from None


def _layers(vec_env: VecEnv) -> list[VecEnv]:
    wrappers, base = _unwrap(vec_env)
    return [*wrappers, base]


def export_worker_env(vec_env: VecEnv, extra: Any) -> bytes:
    """
    Pickle a worker's VecEnv (wrappers, envs and the state of their episodes) with ``extra``, to send it to
    the main process. Open files travel by name.

    :raises Exception: whatever pickling raises for an env that cannot be pickled
    """
    layers = _layers(vec_env)
    # VecNormalize does not pickle its discounted returns (nor its venv); keep them
    returns = [layer.returns if isinstance(layer, VecNormalize) else None for layer in layers]
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump((layers, returns, extra))
    return buffer.getvalue()


def import_worker_env(data: bytes, training_env: VecEnv | None) -> tuple[VecEnv, Any]:
    """
    Rebuild a VecEnv sent by ``export_worker_env``.

    :param data: what the worker sent
    :param training_env: the main process's training VecEnv, whose open files take the place of the worker's;
        None on another machine, where the envs get no files (a ``Monitor`` there writes no CSV)
    :return: the worker's VecEnv and the ``extra`` it was sent with
    """
    open_files = None
    if training_env is not None:
        collector = _FileCollector()
        collector.dump(_unwrap(training_env)[1].envs)
        open_files = collector.files
    layers, returns, extra = _Unpickler(data, open_files).load()
    for outer, inner, layer_returns in zip(layers, layers[1:], returns):
        if isinstance(outer, VecNormalize):
            outer.set_venv(inner)
            outer.returns = layer_returns
    return layers[0], extra


def put_back_worker_envs(training_env: VecEnv, worker_env: VecEnv, env_indices: range) -> None:
    """Make the envs of ``worker_env`` the envs ``env_indices`` of the main process's ``training_env``."""
    base = _unwrap(training_env)[1]
    assert isinstance(base, DummyVecEnv)
    worker_base = _unwrap(worker_env)[1]
    assert isinstance(worker_base, DummyVecEnv) and len(worker_base.envs) == len(env_indices)
    for index, env in zip(env_indices, worker_base.envs):
        base.envs[index] = env
