"""The fake Hub works with the real ``huggingface_hub`` client: auth, repo creation, uploads (regular and LFS),
listings and downloads, without internet."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from huggingface_hub import HfApi, constants, hf_hub_download
from huggingface_hub.errors import EntryNotFoundError, RepositoryNotFoundError

from tests.helpers.fake_hub_server import FakeHub

TOKEN = "hf_dummy"
REPO_ID = "fake-user/a3c-CartPole-v1"
README = """---
library_name: stable-baselines3
tags:
- reinforcement-learning
- stable-baselines3
---
# A3C agent playing CartPole-v1
"""


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeHub]:
    """A running fake Hub; the client is isolated from any real token, cache and Xet."""
    # huggingface_hub reads these at import time (it may already be imported): set the env vars for anything
    # reading them later, and patch the parsed constants for this process.
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with FakeHub() as fake_hub:
        yield fake_hub


@pytest.fixture
def model_folder(tmp_path: Path) -> Path:
    """A folder like the one huggingface_sb3 pushes: a text file, a model card and an LFS-bound ``.zip``."""
    folder = tmp_path / "to_upload"
    folder.mkdir()
    (folder / "config.json").write_text('{"algo": "A3C", "n_workers": 2}\n')
    (folder / "README.md").write_text(README)
    (folder / "a3c-CartPole-v1.zip").write_bytes(os.urandom(64 * 1024))
    (folder / "logs").mkdir()
    (folder / "logs" / "results.txt").write_text("mean_reward=500\n")
    return folder


def test_whoami_and_create_repo(hub: FakeHub) -> None:
    api = HfApi(endpoint=hub.endpoint, token=TOKEN)
    assert api.whoami()["name"] == "fake-user"

    url = api.create_repo("a3c-CartPole-v1")  # no namespace: the user's
    assert url.repo_id == REPO_ID
    assert url.endpoint == hub.endpoint
    assert api.create_repo(REPO_ID, exist_ok=True).repo_id == REPO_ID  # answered with a 409
    assert hub.files(REPO_ID) == {}
    assert api.list_repo_files(REPO_ID) == []


def test_upload_list_and_download(hub: FakeHub, model_folder: Path, tmp_path: Path) -> None:
    api = HfApi(endpoint=hub.endpoint, token=TOKEN)
    api.create_repo(REPO_ID, exist_ok=True)
    commit = api.upload_folder(repo_id=REPO_ID, folder_path=model_folder, commit_message="Upload A3C agent")

    local = {path.relative_to(model_folder).as_posix(): path.read_bytes() for path in model_folder.rglob("*.*")}
    assert hub.files(REPO_ID) == local
    assert hub.lfs_files(REPO_ID) == {"a3c-CartPole-v1.zip"}
    assert "POST /api/validate-yaml" in hub.requests
    assert f"POST /{REPO_ID}.git/info/lfs/objects/batch" in hub.requests
    assert any(request.startswith("PUT /fake-lfs/") for request in hub.requests)
    assert commit.oid == api.model_info(REPO_ID).sha
    assert sorted(api.list_repo_files(REPO_ID)) == sorted(local)

    tree = {entry.path: entry for entry in api.list_repo_tree(REPO_ID, expand=True)}
    assert set(tree) == {"README.md", "a3c-CartPole-v1.zip", "config.json", "logs"}
    assert tree["a3c-CartPole-v1.zip"].lfs.size == 64 * 1024
    assert tree["config.json"].last_commit.oid == commit.oid
    assert [entry.path for entry in api.list_repo_tree(REPO_ID, "logs")] == ["logs/results.txt"]
    infos = api.get_paths_info(REPO_ID, ["README.md", "logs", "missing.txt"])
    assert [info.path for info in infos] == ["README.md", "logs"]

    cache_dir = tmp_path / "cache"
    for path, content in local.items():
        downloaded = hf_hub_download(REPO_ID, path, endpoint=hub.endpoint, token=TOKEN, cache_dir=cache_dir)
        assert Path(downloaded).read_bytes() == content
    # The LFS file went through the 302 to the CDN, which was called without the token.
    assert any(request.startswith("GET /fake-lfs/") for request in hub.requests)

    # Uploading the same folder again is a no-op commit: the client compares the oids from preupload.
    again = api.upload_folder(repo_id=REPO_ID, folder_path=model_folder, commit_message="Same files")
    assert again.oid == commit.oid


def test_big_text_file_goes_through_lfs(hub: FakeHub, tmp_path: Path) -> None:
    api = HfApi(endpoint=hub.endpoint, token=TOKEN)
    api.create_repo(REPO_ID)
    content = b"0123456789abcdef\n" * (11 * 1024 * 1024 // 17)  # > 10 MiB of text
    api.upload_file(path_or_fileobj=content, path_in_repo="big.txt", repo_id=REPO_ID)
    assert hub.lfs_files(REPO_ID) == {"big.txt"}
    downloaded = hf_hub_download(REPO_ID, "big.txt", endpoint=hub.endpoint, cache_dir=tmp_path / "cache")
    assert Path(downloaded).read_bytes() == content


def test_missing_file_and_repo(hub: FakeHub, tmp_path: Path) -> None:
    api = HfApi(endpoint=hub.endpoint, token=TOKEN)
    api.create_repo(REPO_ID)
    with pytest.raises(EntryNotFoundError):
        hf_hub_download(REPO_ID, "nope.zip", endpoint=hub.endpoint, token=TOKEN, cache_dir=tmp_path / "cache")
    with pytest.raises(RepositoryNotFoundError):
        hf_hub_download("fake-user/nope", "a.zip", endpoint=hub.endpoint, cache_dir=tmp_path / "cache")


def test_patched_constants_reach_clients_built_without_endpoint(
    hub: FakeHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """What huggingface_sb3 needs: it calls ``HfApi(token=...)`` and ``hf_hub_download`` without ``endpoint``."""
    monkeypatch.setattr(constants, "ENDPOINT", hub.endpoint)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", hub.endpoint + "/{repo_id}/resolve/{revision}/{filename}")
    api = HfApi(token=TOKEN)
    assert api.endpoint == hub.endpoint
    api.create_repo(REPO_ID)
    api.upload_file(path_or_fileobj=b"PK\x03\x04 fake zip", path_in_repo="model.zip", repo_id=REPO_ID)
    downloaded = hf_hub_download(REPO_ID, "model.zip", cache_dir=tmp_path / "cache")
    assert Path(downloaded).read_bytes() == b"PK\x03\x04 fake zip"
