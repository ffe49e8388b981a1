"""Hugging Face Hub model cards for A3C and SyncA2C models pushed with ``python -m rl_zoo3.push_to_hub``."""

import contextvars
import functools
import inspect
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from pprint import pformat
from typing import Any

from huggingface_hub import ModelCardData
from huggingface_hub.repocard import metadata_eval_result

from sb3_a3c.version import __version__
from sb3_a3c.zoo import ZOO_ALGORITHMS

# Zoo name -> class name of our algorithms
ALGORITHM_CLASSES = {algo: class_name for algo, (_, class_name) in ZOO_ALGORITHMS.items()}

# (repo id, local folder of the repo, model file name) of the push in progress, set by `with_push_context`
_current_push: contextvars.ContextVar[tuple[str, Path, str] | None] = contextvars.ContextVar("current_push", default=None)


def generate_metadata(model_name: str, env_id: str, mean_reward: float, std_reward: float) -> dict[str, Any]:
    """
    Model card metadata (tags and the evaluation result), as rl_zoo3 expects ``generate_metadata`` to return.

    :param model_name: the algorithm's class name (e.g. "A3C")
    :param env_id: the gym id of the environment
    :param mean_reward: mean evaluation reward
    :param std_reward: standard deviation of the evaluation reward
    """
    ours = model_name in ALGORITHM_CLASSES.values()
    tags = [env_id, "deep-reinforcement-learning", "reinforcement-learning", "stable-baselines3"]
    if ours:
        tags += ["sb3-a3c", model_name.lower()]
    evaluation = metadata_eval_result(
        model_pretty_name=model_name,
        task_pretty_name="reinforcement-learning",
        task_id="reinforcement-learning",
        metrics_pretty_name="mean_reward",
        metrics_id="mean_reward",
        metrics_value=f"{mean_reward:.2f} +/- {std_reward:.2f}",
        dataset_pretty_name=env_id,
        dataset_id=env_id,
    )
    library_name = "sb3-a3c" if ours else "stable-baselines3"
    return ModelCardData(library_name=library_name, tags=tags, **evaluation).to_dict()


def sb3_a3c_model_card(
    algo_name: str,
    repo_id: str,
    model_filename: str,
    env_id: str,
    mean_reward: float,
    std_reward: float,
    hyperparams: dict[str, Any],
    env_kwargs: dict[str, Any],
    with_video: bool,
) -> str:
    """The README of a pushed A3C / SyncA2C model."""
    class_name = ALGORITHM_CLASSES[algo_name]
    organization = repo_id.split("/")[0]
    card = f"""
# **{class_name}** Agent playing **{env_id}**

This is a trained **{class_name}** agent playing **{env_id}**, trained with
[sb3-a3c](https://pypi.org/project/sb3-a3c/) {__version__} (A3C and SyncA2C for Stable-Baselines3)
and the [RL Zoo](https://github.com/DLR-RM/rl-baselines3-zoo).

## Evaluation

Mean reward: **{mean_reward:.2f} +/- {std_reward:.2f}** (RL Zoo evaluation, see `results.json`).
"""
    if with_video:
        card += """
<video controls autoplay loop src="replay.mp4"></video>
"""
    card += f"""
## Usage (Python)

```bash
pip install "sb3-a3c[zoo]"
```

```python
from huggingface_sb3 import load_from_hub
from sb3_a3c import {class_name}

checkpoint = load_from_hub("{repo_id}", "{model_filename}")
model = {class_name}.load(checkpoint)
```

## Usage (with the RL Zoo)

```bash
python -m rl_zoo3.load_from_hub --algo {algo_name} --env {env_id} -orga {organization} -name {repo_id.split("/")[1]} -f logs/
python -m rl_zoo3.enjoy --algo {algo_name} --env {env_id} -f logs/
```

## Training (with the RL Zoo)

```bash
python -m rl_zoo3.train --algo {algo_name} --env {env_id} -f logs/
python -m rl_zoo3.push_to_hub --algo {algo_name} --env {env_id} -f logs/ -orga {organization}
```

## Hyperparameters

```python
{pformat(hyperparams)}
```
"""
    if env_kwargs:
        card += f"""
## Environment Arguments

```python
{pformat(env_kwargs)}
```
"""
    return card


def with_sb3_a3c_model_card(generate_model_card: Callable[..., tuple[str, dict[str, Any]]]) -> Callable[..., Any]:
    """Wrap rl_zoo3's ``generate_model_card``: our card for our algorithms, rl_zoo3's for the others."""
    if getattr(generate_model_card, "_sb3_a3c_patched", False):
        return generate_model_card

    signature = inspect.signature(generate_model_card)

    @functools.wraps(generate_model_card)
    def generate(*args: Any, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        card_arguments = signature.bind(*args, **kwargs).arguments
        algo_name, env_id = card_arguments["algo_name"], card_arguments["env_id"]
        if algo_name not in ALGORITHM_CLASSES:
            return generate_model_card(*args, **kwargs)
        organization, mean_reward, std_reward = (
            card_arguments[name] for name in ("organization", "mean_reward", "std_reward")
        )
        push = _current_push.get()
        if push is None:
            repo_id, repo_folder, model_filename = f"{organization}/{algo_name}-{env_id}", None, f"{algo_name}-{env_id}.zip"
        else:
            repo_id, repo_folder, model_filename = push
        # rl_zoo3 writes the replay (when rendering works) into the repo folder before the card
        with_video = repo_folder is not None and (repo_folder / "replay.mp4").exists()
        card = sb3_a3c_model_card(
            algo_name,
            repo_id,
            model_filename,
            env_id,
            mean_reward,
            std_reward,
            card_arguments["hyperparams"],
            card_arguments["env_kwargs"],
            with_video,
        )
        return card, generate_metadata(card_arguments["algo_class_name"], env_id, mean_reward, std_reward)

    generate._sb3_a3c_patched = True  # type: ignore[attr-defined]
    return generate


def with_push_context(package_to_hub: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap rl_zoo3's ``package_to_hub`` so that the model card knows the repo id, its folder and the file name."""
    if getattr(package_to_hub, "_sb3_a3c_patched", False):
        return package_to_hub
    signature = inspect.signature(package_to_hub)

    @functools.wraps(package_to_hub)
    def push(*args: Any, **kwargs: Any) -> Any:
        arguments = signature.bind(*args, **kwargs)
        arguments.apply_defaults()
        repo_id = str(arguments.arguments["repo_id"])
        repo_folder = Path(arguments.arguments["local_repo_path"]) / repo_id.split("/")[1]
        model_filename = f"{arguments.arguments['model_name']}.zip"
        token = _current_push.set((repo_id, repo_folder, model_filename))
        try:
            return package_to_hub(*args, **kwargs)
        finally:
            _current_push.reset(token)

    push._sb3_a3c_patched = True  # type: ignore[attr-defined]
    return push


def with_ffmpeg_on_path(generate_replay: Callable[..., Any]) -> Callable[..., Any]:
    """
    Wrap huggingface_sb3's ``_generate_replay``, which converts the replay video by running ``ffmpeg`` from
    the shell. Where no ffmpeg is installed, the one the imageio-ffmpeg wheel carries is linked as ``ffmpeg``
    in a temporary folder put on ``PATH`` during the call only; the folder is removed and ``PATH`` restored.
    """
    if getattr(generate_replay, "_sb3_a3c_patched", False):
        return generate_replay

    @functools.wraps(generate_replay)
    def generate(*args: Any, **kwargs: Any) -> Any:
        if shutil.which("ffmpeg") is not None:
            return generate_replay(*args, **kwargs)
        try:
            import imageio_ffmpeg

            ffmpeg_executable = imageio_ffmpeg.get_ffmpeg_exe()
        except (ImportError, RuntimeError):
            return generate_replay(*args, **kwargs)
        original_path = os.environ.get("PATH", "")
        with tempfile.TemporaryDirectory(prefix="sb3-a3c-ffmpeg-") as folder:
            (Path(folder) / "ffmpeg").symlink_to(ffmpeg_executable)
            os.environ["PATH"] = f"{folder}{os.pathsep}{original_path}"
            try:
                return generate_replay(*args, **kwargs)
            finally:
                os.environ["PATH"] = original_path

    generate._sb3_a3c_patched = True  # type: ignore[attr-defined]
    return generate
