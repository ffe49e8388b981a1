"""``load()`` that names the file when a model zip cannot be read."""

import json
import pickle
import zipfile
import zlib
from typing import Any, TypeVar

from stable_baselines3.common.base_class import BaseAlgorithm

SelfAlgorithm = TypeVar("SelfAlgorithm", bound="ClearLoadErrorsMixin")

# What reading a truncated or corrupted zip raises, from zipfile, json, pickle, torch.load, and SB3's
# `assert data is not None` when the zip lacks its "data" entry
UNREADABLE_MODEL_ERRORS = (
    AssertionError,
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    pickle.UnpicklingError,
    json.JSONDecodeError,
    RuntimeError,
)


class ClearLoadErrorsMixin(BaseAlgorithm):
    """Turn the low-level errors of reading a damaged model zip into a ``ValueError`` that names the file."""

    @classmethod
    def load(cls: type[SelfAlgorithm], path: Any, *args: Any, **kwargs: Any) -> SelfAlgorithm:  # type: ignore[override]
        try:
            return super().load(path, *args, **kwargs)
        except UNREADABLE_MODEL_ERRORS as error:
            raise ValueError(
                f"Cannot load a {cls.__name__} model from {path!s}: the file is truncated or is not a model zip "
                f"saved by {cls.__name__}.save() ({type(error).__name__}: {error})"
            ) from error
