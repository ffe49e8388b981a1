"""``load()`` that names the file when it is not a readable model zip."""

import pathlib
import zipfile
import zlib
from typing import Any, TypeVar

from stable_baselines3.common.base_class import BaseAlgorithm

SelfAlgorithm = TypeVar("SelfAlgorithm", bound="ClearLoadErrorsMixin")

# The entries every zip written by ``BaseAlgorithm.save()`` holds
MODEL_ZIP_ENTRIES = ("data", "policy.pth")


def _existing_path(path: Any) -> pathlib.Path | None:
    """The file SB3's ``load`` would open for ``path`` (it tries ``path``, then ``path`` + ".zip"), if it exists."""
    if not isinstance(path, (str, pathlib.Path)):
        return None
    for candidate in (pathlib.Path(path), pathlib.Path(f"{path}.zip")):
        if candidate.is_file():
            return candidate
    return None


def check_model_zip(path: Any, algorithm_name: str) -> None:
    """
    Raise ``ValueError`` naming ``path`` when it is damaged, not a zip, or not a zip written by ``save()``.

    Only the archive is checked (entries, checksums); whether its parameters fit the policy is left to
    SB3's ``load``, whose own message says what does not fit. Paths that do not exist and file objects
    are left to SB3's ``load`` too.

    :param path: what the user passed to ``load``
    :param algorithm_name: used in the message
    """
    file = _existing_path(path)
    if file is None:
        return
    cannot_load = f"Cannot load a {algorithm_name} model from {file}"
    try:
        with zipfile.ZipFile(file) as archive:
            damaged_entry = archive.testzip()
            names = archive.namelist()
    except (zipfile.BadZipFile, zlib.error, EOFError) as error:
        raise ValueError(
            f"{cannot_load}: the file is truncated or is not a model zip ({type(error).__name__}: {error})"
        ) from error
    if damaged_entry is not None:
        raise ValueError(f"{cannot_load}: its entry {damaged_entry!r} is damaged (checksum mismatch)")
    missing = [entry for entry in MODEL_ZIP_ENTRIES if entry not in names]
    if missing:
        raise ValueError(f"{cannot_load}: it is a zip but not a model saved by {algorithm_name}.save() (no {missing})")


class ClearLoadErrorsMixin(BaseAlgorithm):
    """Check the model zip before SB3's ``load``, so that a damaged file gets a ``ValueError`` naming it."""

    @classmethod
    def load(cls: type[SelfAlgorithm], path: Any, *args: Any, **kwargs: Any) -> SelfAlgorithm:  # type: ignore[override]
        check_model_zip(path, cls.__name__)
        return super().load(path, *args, **kwargs)
