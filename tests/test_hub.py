"""push_to_hub / load_from_hub round trip for our algorithms, over HTTP against a local Hub-compatible server."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch as th
import yaml

from sb3_a3c import A3C

from .helpers.fake_hub_server import FakeHub

ORGANIZATION = "sb3-a3c-tests"


def run(*args: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600, env={**os.environ, **env})
    assert result.returncode == 0, f"{' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    return result


@pytest.fixture
def hub(tmp_path):
    with FakeHub() as fake_hub:
        yield fake_hub


def test_push_to_hub_then_load_from_hub_round_trip(tmp_path, hub):
    hub_env = hub.client_environment(str(tmp_path / "hf_home"))
    zoo = (sys.executable, "-m")
    common = ("--algo", "a3c", "--env", "CartPole-v1")
    run(*zoo, "rl_zoo3.train", *common, "-n", "2000", "-f", "logs", cwd=tmp_path, env=hub_env)
    push = run(
        *zoo, "rl_zoo3.push_to_hub", *common, "-f", "logs", "--repo-name", "a3c-CartPole-v1", "-orga", ORGANIZATION,
        "-m", "first push", "-n", "200", cwd=tmp_path, env=hub_env,
    )  # fmt: skip
    assert "Your model is pushed to the hub" in push.stdout

    files = hub.files(f"{ORGANIZATION}/a3c-CartPole-v1")
    assert {"a3c-CartPole-v1.zip", "config.yml", "results.json", "README.md", "replay.mp4"} <= set(files)
    card = files["README.md"].decode()
    metadata = yaml.safe_load(card.split("---")[1])
    assert metadata["library_name"] == "sb3-a3c"
    assert "sb3-a3c" in metadata["tags"]
    assert metadata["model-index"][0]["results"][0]["metrics"][0]["type"] == "mean_reward"
    assert "from sb3_a3c import A3C" in card
    assert 'load_from_hub("sb3-a3c-tests/a3c-CartPole-v1", "a3c-CartPole-v1.zip")' in card
    assert "n_steps" in card and "replay.mp4" in card

    load = run(
        *zoo, "rl_zoo3.load_from_hub", *common, "-orga", ORGANIZATION, "-f", "downloaded", cwd=tmp_path, env=hub_env
    )  # fmt: skip
    original = A3C.load(tmp_path / "logs" / "a3c" / "CartPole-v1_1" / "CartPole-v1.zip")
    loaded = A3C.load(tmp_path / "downloaded" / "a3c" / "CartPole-v1_1" / "CartPole-v1.zip")
    for expected, actual in zip(original.policy.parameters(), loaded.policy.parameters()):
        assert th.equal(expected, actual)
    observations = np.random.default_rng(0).uniform(-0.5, 0.5, size=(32, 4)).astype(np.float32)
    np.testing.assert_array_equal(
        original.predict(observations, deterministic=True)[0], loaded.predict(observations, deterministic=True)[0]
    )
    # The optional vec_normalize.pkl is absent: load_from_hub went through the "not found" path and carried on
    assert "vec_normalize.pkl" not in files
    assert "Traceback" not in load.stderr

    # enjoy prints a line per finished episode; CartPole-v1 truncates at 500 steps, so 1000 steps finish at least one
    # whatever the (asynchronously trained, hence unrepeatable) policy does
    enjoy = run(*zoo, "rl_zoo3.enjoy", *common, "-f", "downloaded", "--no-render", "-n", "1000", cwd=tmp_path, env=hub_env)
    assert "Episode Reward" in enjoy.stdout
