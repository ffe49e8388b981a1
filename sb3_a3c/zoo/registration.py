"""
What sb3-a3c adds to rl_zoo3's modules, applied by the import hook of ``sb3_a3c.zoo.startup`` right
after each module's own code has run (or by ``register()`` when the hook is not installed).

Registering our algorithms (``ALGOS``, hyperparameter files, Optuna samplers) adds entries and changes
nothing for other algorithms. The Hub fixes (``fix_*``) repair rl_zoo3 2.9's Hub commands for every
algorithm; they are applied only to the versions they were written for (``WRITTEN_FOR``) and warn otherwise.
"""

import functools
import importlib
import importlib.metadata
import importlib.resources
import inspect
import re
import warnings
from types import ModuleType
from typing import Any

from sb3_a3c.zoo import ZOO_ALGORITHMS

# The releases the Hub fixes were written for: distribution -> (lowest version, first version not covered)
WRITTEN_FOR = {"rl_zoo3": ((2, 9), (2, 10)), "sb3-team-hf-integration": ((3, 0), (4, 0))}


def hyperparams_path(algo: str) -> str:
    """Path of the Zoo hyperparameter file shipped with sb3-a3c for ``algo`` ("a3c", "a3c_cnn" or "sync_a2c")."""
    return str(importlib.resources.files("sb3_a3c.hyperparams") / f"{algo}.yml")


def _algorithm_class(algo: str) -> type:
    module_name, class_name = ZOO_ALGORITHMS[algo]
    return getattr(importlib.import_module(module_name), class_name)


def _installed_version(distribution: str) -> tuple[int, ...] | None:
    try:
        version = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


def _is_written_for(distribution: str, fix: str, without_it: str) -> bool:
    """Whether the installed ``distribution`` is one ``fix`` was written for; if not, warn what will not work."""
    version = _installed_version(distribution)
    lowest, first_not_covered = WRITTEN_FOR[distribution]
    if version is not None and lowest <= version < first_not_covered:
        return True
    covered = f">={'.'.join(map(str, lowest))},<{'.'.join(map(str, first_not_covered))}"
    installed = "not installed" if version is None else ".".join(map(str, version))
    warnings.warn(
        f"sb3-a3c did not apply its fix '{fix}': it was written for {distribution}{covered}, "
        f"and {distribution} {installed} is installed. Without it, {without_it}.",
        UserWarning,
        stacklevel=2,
    )
    return False


def register_algorithms(utils: ModuleType) -> None:
    """``ALGOS``: the dict every Zoo command builds its ``--algo`` choices from."""
    for algo in ZOO_ALGORITHMS:
        utils.ALGOS.setdefault(algo, _algorithm_class(algo))


class _TrialIndex(int):
    """A trial index that is true even when it is 0."""

    def __bool__(self) -> bool:
        return True


def use_our_hyperparameter_files(exp_manager: ModuleType) -> None:
    """
    Without ``-conf``, the Zoo reads ``rl_zoo3/hyperparams/{algo}.yml``; ours live in sb3-a3c. A YAML entry's
    ``policy_kwargs`` may name ``RMSpropFromOne`` (our Atari entries do), as the Zoo's name ``RMSpropTFLike``.
    Also, for every algorithm: ``--trial-id 0`` loads the study's first trial (rl_zoo3 tests ``if self.trial_id``,
    which ignored trial 0 and trained the YAML entry instead).
    """
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
        if getattr(self, "trial_id", None) == 0:
            self.trial_id = _TrialIndex(0)

    __init__._sb3_a3c_patched = True  # type: ignore[attr-defined]
    manager_class.__init__ = __init__
    # The Zoo evaluates a YAML entry's policy_kwargs in this module's namespace (RMSpropTFLike is there already)
    from sb3_a3c.common.optimizers import RMSpropFromOne

    exp_manager.RMSpropFromOne = RMSpropFromOne


def register_samplers(hyperparams_opt: ModuleType) -> None:
    """Optuna search spaces for ``-optimize``."""
    from sb3_a3c.zoo.hyperparams_opt import convert_actor_critic_params, sample_a3c_params, sample_sync_a2c_params

    hyperparams_opt.HYPERPARAMS_SAMPLER.setdefault("a3c", sample_a3c_params)
    hyperparams_opt.HYPERPARAMS_SAMPLER.setdefault("a3c_cnn", sample_a3c_params)
    hyperparams_opt.HYPERPARAMS_SAMPLER.setdefault("sync_a2c", sample_sync_a2c_params)
    for algo in ZOO_ALGORITHMS:
        hyperparams_opt.HYPERPARAMS_CONVERTER.setdefault(algo, convert_actor_critic_params)


def fix_huggingface_sb3_push_to_hub(push_to_hub: ModuleType) -> None:
    """
    rl_zoo3 2.9 imports ``generate_metadata`` (a dict), which sb3-team-hf-integration 3.x renamed to
    ``_generate_metadata`` (a ``ModelCardData``): without it ``rl_zoo3.push_to_hub`` cannot even start.
    Adds the old name back (for every algorithm); changes nothing when the name exists.
    """
    if hasattr(push_to_hub, "generate_metadata") or not hasattr(push_to_hub, "_generate_metadata"):
        return
    if not _is_written_for("sb3-team-hf-integration", "generate_metadata", "rl_zoo3.push_to_hub may fail to import"):
        return
    from sb3_a3c.zoo.hub import generate_metadata

    push_to_hub.generate_metadata = generate_metadata


def fix_rl_zoo3_push_to_hub(push_to_hub: ModuleType) -> None:
    """
    Our model cards for our algorithms (library sb3-a3c, usage with ``from sb3_a3c import ...``, replay
    video; other algorithms keep rl_zoo3's card), and, for every algorithm, the ``ffmpeg`` that the replay
    video's conversion runs, taken from the imageio-ffmpeg wheel while the replay is made when none is installed.
    """
    if not _is_written_for("rl_zoo3", "model cards and replay video", "pushed A3C/SyncA2C models get rl_zoo3's card"):
        return
    from sb3_a3c.zoo.hub import with_ffmpeg_on_path, with_push_context, with_sb3_a3c_model_card

    push_to_hub.generate_model_card = with_sb3_a3c_model_card(push_to_hub.generate_model_card)
    push_to_hub.package_to_hub = with_push_context(push_to_hub.package_to_hub)
    push_to_hub._generate_replay = with_ffmpeg_on_path(push_to_hub._generate_replay)


def fix_rl_zoo3_load_from_hub(load_from_hub: ModuleType) -> None:
    """
    An absent optional file (``vec_normalize.pkl``) raises huggingface_hub's ``EntryNotFoundError``
    (huggingface_hub >= 1 no longer uses requests), which rl_zoo3 2.9 does not catch as ``HTTPError``.
    Makes its ``except HTTPError:`` catch both (for every algorithm).
    """
    from huggingface_hub.errors import EntryNotFoundError

    if not isinstance(load_from_hub.HTTPError, type) or issubclass(EntryNotFoundError, load_from_hub.HTTPError):
        return
    if not _is_written_for("rl_zoo3", "load_from_hub", "load_from_hub may fail on models without vec_normalize.pkl"):
        return
    # `except HTTPError:` in download_from_hub looks the name up at run time; a tuple catches both
    load_from_hub.HTTPError = (load_from_hub.HTTPError, EntryNotFoundError)


def apply_patch(patch_name: str, module: ModuleType) -> None:
    """Run this module's function ``patch_name`` on ``module`` (the names come from ``startup.PATCHED_MODULES``)."""
    globals()[patch_name](module)


def register() -> None:
    """
    Register A3C and SyncA2C with rl_zoo3 explicitly (for scripts that use rl_zoo3 as a library in an
    environment where the start-up hook is not installed). Idempotent.
    """
    register_algorithms(importlib.import_module("rl_zoo3.utils"))
    use_our_hyperparameter_files(importlib.import_module("rl_zoo3.exp_manager"))
    register_samplers(importlib.import_module("rl_zoo3.hyperparams_opt"))
