"""The fixes of rl_zoo3's Hub commands touch only the versions they were written for, and leave nothing behind."""

import os
import shutil
import types
from pathlib import Path

import pytest
from huggingface_hub.errors import EntryNotFoundError

from sb3_a3c.zoo import registration
from sb3_a3c.zoo.hub import with_ffmpeg_on_path


class OldHTTPError(Exception):
    """Stands for requests' HTTPError, which rl_zoo3 2.9's load_from_hub catches."""


def fake_load_from_hub() -> types.ModuleType:
    module = types.ModuleType("rl_zoo3.load_from_hub")
    module.HTTPError = OldHTTPError
    return module


def test_hub_fix_applies_to_the_rl_zoo3_release_it_was_written_for(monkeypatch):
    monkeypatch.setattr(registration, "_installed_version", lambda distribution: (2, 9, 2))
    module = fake_load_from_hub()
    registration.fix_rl_zoo3_load_from_hub(module)
    assert module.HTTPError == (OldHTTPError, EntryNotFoundError)


def test_hub_fix_warns_and_changes_nothing_for_another_rl_zoo3_release(monkeypatch):
    monkeypatch.setattr(registration, "_installed_version", lambda distribution: (2, 10, 0))
    module = fake_load_from_hub()
    with pytest.warns(UserWarning, match=r"written for rl_zoo3>=2\.9,<2\.10, and rl_zoo3 2\.10\.0 is installed"):
        registration.fix_rl_zoo3_load_from_hub(module)
    assert module.HTTPError is OldHTTPError


def test_replay_finds_ffmpeg_only_while_it_runs_and_leaves_no_file(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no ffmpeg on PATH
    seen = {}

    def generate_replay() -> str:
        seen["ffmpeg"] = shutil.which("ffmpeg")
        return "replayed"

    assert with_ffmpeg_on_path(generate_replay)() == "replayed"
    assert seen["ffmpeg"] is not None and Path(seen["ffmpeg"]).name == "ffmpeg"
    assert not Path(seen["ffmpeg"]).parent.exists()
    assert os.environ["PATH"] == str(tmp_path)
