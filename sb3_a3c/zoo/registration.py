"""
What sb3-a3c adds to rl_zoo3's modules, applied by the import hook of ``sb3_a3c.zoo.startup`` right
after each module's own code has run (or by ``register()`` when the hook is not installed).
"""

import functools
import importlib.resources
import inspect
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

# The Zoo names of our algorithms, and where their classes live
ZOO_ALGORITHMS = {"a3c": ("sb3_a3c.a3c", "A3C"), "sync_a2c": ("sb3_a3c.sync_a2c", "SyncA2C")}


def hyperparams_path(algo: str) -> str:
    """Path of the Zoo hyperparameter file shipped with sb3-a3c for ``algo`` ("a3c" or "sync_a2c")."""
    return str(importlib.resources.files("sb3_a3c.hyperparams") / f"{algo}.yml")


def _algorithm_class(algo: str) -> type:
    module_name, class_name = ZOO_ALGORITHMS[algo]
    return getattr(importlib.import_module(module_name), class_name)


def _patch_utils(utils: ModuleType) -> None:
    """``ALGOS``: the dict every Zoo command builds its ``--algo`` choices from."""
    for algo in ZOO_ALGORITHMS:
        utils.ALGOS.setdefault(algo, _algorithm_class(algo))


def _patch_exp_manager(exp_manager: ModuleType) -> None:
    """Without ``-conf``, the Zoo reads ``rl_zoo3/hyperparams/{algo}.yml``; ours live in sb3-a3c."""
    manager_class = exp_manager.ExperimentManager
    if getattr(manager_class.__init__, "_sb3_a3c_patched", False):
        return
    original_init = manager_class.__init__
    signature = inspect.signature(original_init)

    @functools.wraps(original_init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        arguments = signature.bind(self, *args, **kwargs).arguments
        if self.algo in ZOO_ALGORITHMS and not arguments.get("config"):
            self.config = hyperparams_path(self.algo)

    __init__._sb3_a3c_patched = True  # type: ignore[attr-defined]
    manager_class.__init__ = __init__


def _patch_hyperparams_opt(hyperparams_opt: ModuleType) -> None:
    """Optuna search spaces for ``-optimize``."""
    from sb3_a3c.zoo.hyperparams_opt import sample_a3c_params, sample_sync_a2c_params

    hyperparams_opt.HYPERPARAMS_SAMPLER.setdefault("a3c", sample_a3c_params)
    hyperparams_opt.HYPERPARAMS_SAMPLER.setdefault("sync_a2c", sample_sync_a2c_params)
    for algo in ZOO_ALGORITHMS:
        hyperparams_opt.HYPERPARAMS_CONVERTER.setdefault(algo, hyperparams_opt.convert_onpolicy_params)


def _patch_huggingface_sb3_push_to_hub(push_to_hub: ModuleType) -> None:
    """
    rl_zoo3 2.9 imports ``generate_metadata`` (a dict), which sb3-team-hf-integration 3.x renamed to
    ``_generate_metadata`` (a ``ModelCardData``): without it ``rl_zoo3.push_to_hub`` cannot even start.
    The replay video needs an ``ffmpeg`` executable.
    """
    from sb3_a3c.zoo.hub import ensure_ffmpeg_on_path, generate_metadata

    if not hasattr(push_to_hub, "generate_metadata") and hasattr(push_to_hub, "_generate_metadata"):
        push_to_hub.generate_metadata = generate_metadata
    # Its replay video is converted by running `ffmpeg`
    ensure_ffmpeg_on_path()


def _patch_rl_zoo3_push_to_hub(push_to_hub: ModuleType) -> None:
    """Model cards of our algorithms: library sb3-a3c, usage with ``from sb3_a3c import ...``, replay video."""
    from sb3_a3c.zoo.hub import with_push_context, with_sb3_a3c_model_card

    push_to_hub.generate_model_card = with_sb3_a3c_model_card(push_to_hub.generate_model_card)
    push_to_hub.package_to_hub = with_push_context(push_to_hub.package_to_hub)


def _patch_rl_zoo3_load_from_hub(load_from_hub: ModuleType) -> None:
    """
    An absent optional file (``vec_normalize.pkl``) raises huggingface_hub's ``EntryNotFoundError``
    (huggingface_hub >= 1 no longer uses requests), which rl_zoo3 2.9 does not catch as ``HTTPError``.
    """
    from huggingface_hub.errors import EntryNotFoundError

    if isinstance(load_from_hub.HTTPError, type) and not issubclass(EntryNotFoundError, load_from_hub.HTTPError):
        # `except HTTPError:` in download_from_hub looks the name up at run time; a tuple catches both
        load_from_hub.HTTPError = (load_from_hub.HTTPError, EntryNotFoundError)


PATCHES: dict[str, Callable[[ModuleType], None]] = {
    "rl_zoo3.utils": _patch_utils,
    "rl_zoo3.exp_manager": _patch_exp_manager,
    "rl_zoo3.hyperparams_opt": _patch_hyperparams_opt,
    "huggingface_sb3.push_to_hub": _patch_huggingface_sb3_push_to_hub,
    "rl_zoo3.push_to_hub": _patch_rl_zoo3_push_to_hub,
    "rl_zoo3.load_from_hub": _patch_rl_zoo3_load_from_hub,
}


def patch_module(module: ModuleType) -> None:
    """Apply sb3-a3c's patch to ``module`` if there is one for it."""
    patch = PATCHES.get(module.__name__)
    if patch is not None:
        patch(module)


def register() -> None:
    """
    Register A3C and SyncA2C with rl_zoo3 explicitly (for scripts that use rl_zoo3 as a library in an
    environment where the start-up hook is not installed). Patches the rl_zoo3 modules already imported.
    """
    for module_name in ("rl_zoo3.utils", "rl_zoo3.exp_manager", "rl_zoo3.hyperparams_opt"):
        module = sys.modules.get(module_name) or importlib.import_module(module_name)
        patch_module(module)
