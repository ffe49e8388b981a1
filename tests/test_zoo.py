"""The RL Zoo commands work with --algo a3c / sync_a2c, as with built-in algorithms, in both install modes."""

import csv
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import optuna
import pytest
import torch as th
import yaml

from sb3_a3c import A3C, SyncA2C
from sb3_a3c.common.optimizers import RMSpropFromOne
from sb3_a3c.common.policies import A3CCnnLstmPolicy
from sb3_a3c.zoo import registration, startup
from sb3_a3c.zoo.hyperparams_opt import convert_actor_critic_params, sample_a3c_params

REPO_ROOT = Path(__file__).resolve().parent.parent


def run(*args: str, cwd: Path, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = {**os.environ, "MPLBACKEND": "Agg", "SDL_VIDEODRIVER": "dummy", **(env or {})}
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=environment)
    assert result.returncode == 0, f"{' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    return result


def saved_config(run_folder: Path, env_id: str = "CartPole-v1") -> dict:
    """The hyperparameters the Zoo saved for a run (an OrderedDict dumped by PyYAML)."""
    return dict(yaml.load((run_folder / env_id / "config.yml").read_text(), Loader=yaml.UnsafeLoader))


def zoo(command: str, algo: str, *extra: str, cwd: Path, env_id: str = "CartPole-v1") -> subprocess.CompletedProcess:
    """``python -m rl_zoo3.{command} --algo {algo} --env {env_id} -f logs ...``"""
    return run(sys.executable, "-m", f"rl_zoo3.{command}", "--algo", algo, "--env", env_id, "-f", "logs", *extra, cwd=cwd)


def zoo_train(tmp_path: Path, algo: str, env_id: str, *extra: str) -> Path:
    zoo("train", algo, *extra, cwd=tmp_path, env_id=env_id)
    return tmp_path / "logs" / algo / f"{env_id}_1"


def test_startup_hook_patches_exactly_the_registered_modules():
    for module_name, patch_name in startup.PATCHED_MODULES.items():
        assert callable(getattr(registration, patch_name, None)), f"{module_name}: no registration.{patch_name}"


def test_python_start_up_imports_neither_torch_nor_rl_zoo3(tmp_path):
    result = run(
        sys.executable,
        "-c",
        "import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'rl_zoo3', 'sb3_a3c')))",
        cwd=tmp_path,
    )
    assert result.stdout.strip() == "['sb3_a3c', 'sb3_a3c.version', 'sb3_a3c.zoo', 'sb3_a3c.zoo.startup']"


def test_zoo_sees_our_algorithms_hyperparameters_and_samplers(tmp_path):
    code = (
        "from rl_zoo3.utils import ALGOS;"
        "from rl_zoo3.hyperparams_opt import HYPERPARAMS_SAMPLER as S, HYPERPARAMS_CONVERTER as C;"
        "print(ALGOS['a3c'].__name__, ALGOS['a3c_cnn'].__name__, ALGOS['sync_a2c'].__name__,"
        "'a3c' in S, 'a3c_cnn' in S, 'sync_a2c' in C, 'a3c_cnn' in C)"
    )
    output = run(sys.executable, "-c", code, cwd=tmp_path).stdout.split()
    assert output == ["A3C", "A3C", "SyncA2C", "True", "True", "True", "True"]


@pytest.mark.parametrize(
    "algo, env_ids",
    [
        ("a3c", ["PongNoFrameskip-v4", "BreakoutNoFrameskip-v4", "CartPole-v1", "Acrobot-v1", "Pendulum-v1"]),
        ("a3c_cnn", ["PongNoFrameskip-v4", "BreakoutNoFrameskip-v4"]),
        ("sync_a2c", ["PongNoFrameskip-v4", "BreakoutNoFrameskip-v4", "CartPole-v1", "Acrobot-v1", "Pendulum-v1"]),
    ],
)
def test_shipped_hyperparameters_cover_the_zoo_entries(algo, env_ids):
    """Every env gets an entry by the Zoo's lookup (its own, else "atari" for Atari ids), none a copy of "atari"."""
    hyperparams = yaml.safe_load(Path(registration.hyperparams_path(algo)).read_text())
    for env_id in env_ids:
        entry = hyperparams.get(env_id, hyperparams["atari"] if env_id.endswith("NoFrameskip-v4") else None)
        assert entry is not None, env_id
        assert "policy" in entry and "n_timesteps" in entry
    assert "default" in hyperparams or algo == "a3c_cnn"  # a3c_cnn has image entries only
    assert [env_id for env_id, entry in hyperparams.items() if env_id != "atari" and entry == hyperparams["atari"]] == []


def test_zoo_train_command_creates_model(tmp_path):
    run_folder = zoo_train(
        tmp_path, "a3c", "CartPole-v1", "-n", "3000", "--eval-freq", "1000", "--eval-episodes", "2", "--seed", "1"
    )
    model = A3C.load(run_folder / "CartPole-v1.zip")
    assert model.num_timesteps >= 3000
    assert saved_config(run_folder)["n_envs"] == 2  # read from sb3-a3c's hyperparams/a3c.yml
    assert (run_folder / "evaluations.npz").exists()
    assert sorted(path.name for path in run_folder.glob("*.monitor.csv")) == ["0.monitor.csv", "1.monitor.csv"]


def test_zoo_continues_training_from_a_saved_model(tmp_path):
    """``-i model.zip``: the Zoo loads our model (its hyperparameters passed to ``load``) and trains on from it."""
    first = A3C.load(zoo_train(tmp_path, "a3c", "CartPole-v1", "-n", "2000", "--seed", "1") / "CartPole-v1.zip")
    result = zoo("train", "a3c", "-i", "logs/a3c/CartPole-v1_1/CartPole-v1.zip", "-n", "200", "--seed", "2", cwd=tmp_path)
    assert "Loading pretrained agent" in result.stdout
    resumed = A3C.load(tmp_path / "logs" / "a3c" / "CartPole-v1_2" / "CartPole-v1.zip")
    fresh = A3C("MlpPolicy", "CartPole-v1", n_envs=2, seed=2)
    first_parameters = th.nn.utils.parameters_to_vector(first.policy.parameters())
    resumed_distance = (th.nn.utils.parameters_to_vector(resumed.policy.parameters()) - first_parameters).norm()
    fresh_distance = (th.nn.utils.parameters_to_vector(fresh.policy.parameters()) - first_parameters).norm()
    assert 0 < resumed_distance < fresh_distance / 10


def test_zoo_sync_a2c_train_with_eval_and_enjoy(tmp_path):
    run_folder = zoo_train(
        tmp_path, "sync_a2c", "CartPole-v1", "-n", "2000", "--eval-freq", "500", "--eval-episodes", "2", "--seed", "0"
    )
    assert SyncA2C.load(run_folder / "CartPole-v1.zip").num_timesteps == 2000
    # CartPole truncates at 500 steps, so at least one episode ends (and is reported) within 1000
    result = zoo("enjoy", "sync_a2c", "--no-render", "-n", "1000", cwd=tmp_path)
    assert "Episode Reward" in result.stdout


def test_conf_file_wins_over_shipped_hyperparameters(tmp_path):
    (tmp_path / "mine.yml").write_text("CartPole-v1:\n  n_envs: 3\n  n_timesteps: 600\n  policy: 'MlpPolicy'\n  n_steps: 10\n")
    run_folder = zoo_train(tmp_path, "a3c", "CartPole-v1", "-conf", "mine.yml")
    config = saved_config(run_folder)
    assert (config["n_envs"], config["n_steps"]) == (3, 10)


def test_cli_enjoy_record_video_and_plots(tmp_path):
    rl_zoo3_script = str(Path(sys.executable).parent / "rl_zoo3")
    run(rl_zoo3_script, "train", "--algo", "a3c", "--env", "CartPole-v1", "-n", "2000", "-f", "logs", cwd=tmp_path)
    enjoy = zoo("enjoy", "a3c", "--no-render", "-n", "1000", cwd=tmp_path)  # > CartPole's 500-step limit: an episode ends
    assert "Episode Reward" in enjoy.stdout
    zoo("record_video", "a3c", "-n", "200", cwd=tmp_path)
    assert list((tmp_path / "logs" / "a3c" / "CartPole-v1_1" / "videos").glob("*.mp4"))
    zoo("plots.plot_train", "a3c", cwd=tmp_path)


def test_zoo_optimize(tmp_path):
    result = run(
        sys.executable, "-m", "rl_zoo3.train", "--algo", "a3c", "--env", "CartPole-v1", "-optimize", "--n-trials", "2",
        "-n", "2000", "--n-evaluations", "1", "--eval-episodes", "2", "--sampler", "random", "--pruner", "none",
        "-f", "logs", cwd=tmp_path,
    )  # fmt: skip
    assert "Writing report to" in result.stdout
    report = next((tmp_path / "logs" / "a3c").glob("report_CartPole-v1_2-trials-2000-random-none_*.csv"))
    rows = list(csv.DictReader(report.open()))
    assert [row["state"] for row in rows] == ["COMPLETE", "COMPLETE"]
    assert all(float(row["value"]) > 0 for row in rows)  # mean evaluation reward of each trial


def test_optimize_trial_builds_its_sampled_optimizer_and_learning_rate_schedule():
    """A trial's optimizer and schedule reach the model, and a stored trial (``--trial-id``) converts the same."""
    sampled = dict(
        n_steps=5, one_minus_gamma=0.01, one_minus_gae_lambda=0.05, learning_rate=1e-3, lr_schedule="linear",
        ent_coef=0.01, max_grad_norm=0.5, net_arch="small", activation_fn="tanh", optimizer="rmsprop",
    )  # fmt: skip
    hyperparams = sample_a3c_params(optuna.trial.FixedTrial(sampled), n_actions=2, n_envs=2, additional_args={})
    model = A3C("MlpPolicy", "CartPole-v1", **hyperparams)
    assert isinstance(model.policy.optimizer, th.optim.RMSprop)
    assert not isinstance(model.policy.optimizer, RMSpropFromOne)
    assert (model.lr_schedule(1.0), model.lr_schedule(0.5)) == pytest.approx((1e-3, 5e-4))
    assert (model.gamma, model.gae_lambda) == pytest.approx((0.99, 0.95))

    stored = convert_actor_critic_params({**sampled, "optimizer": "rmsprop_from_one", "lr_schedule": "constant"})
    model = A3C("MlpPolicy", "CartPole-v1", **stored)
    assert isinstance(model.policy.optimizer, RMSpropFromOne)
    assert model.lr_schedule(0.5) == pytest.approx(1e-3)


def stored_study(path: Path, trials: list[dict]) -> None:
    """An Optuna study in a journal file, holding ``trials`` (the samplers' parameters) as finished trials."""
    distributions = {
        "n_steps": optuna.distributions.CategoricalDistribution([5, 8, 10, 16, 20, 32, 64, 128]),
        "one_minus_gamma": optuna.distributions.FloatDistribution(0.0001, 0.03, log=True),
        "one_minus_gae_lambda": optuna.distributions.FloatDistribution(0.0001, 0.1, log=True),
        "learning_rate": optuna.distributions.FloatDistribution(1e-5, 0.003, log=True),
        "lr_schedule": optuna.distributions.CategoricalDistribution(["linear", "constant"]),
        "ent_coef": optuna.distributions.FloatDistribution(0.00000001, 0.1, log=True),
        "max_grad_norm": optuna.distributions.FloatDistribution(0.3, 5),
        "net_arch": optuna.distributions.CategoricalDistribution(["small", "medium"]),
        "activation_fn": optuna.distributions.CategoricalDistribution(["tanh", "relu"]),
        "optimizer": optuna.distributions.CategoricalDistribution(["rmsprop_from_one", "rmsprop"]),
    }
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(path)))
    study = optuna.create_study(study_name="stored", storage=storage, direction="maximize")
    for value, params in enumerate(trials):
        study.add_trial(optuna.trial.create_trial(params=params, distributions=distributions, value=float(value)))


@pytest.mark.parametrize("algo", ["a3c", "sync_a2c"])
def test_zoo_trains_every_stored_trial_with_trial_id(tmp_path, algo):
    """``--trial-id`` through the Zoo's command line, for a trial with a linear and one with a constant rate."""
    common = dict(one_minus_gamma=0.01, one_minus_gae_lambda=0.05, ent_coef=0.01, max_grad_norm=0.5)
    trials = [
        dict(common, n_steps=8, learning_rate=1e-3, lr_schedule="linear", net_arch="small", activation_fn="tanh",
             optimizer="rmsprop"),
        dict(common, n_steps=16, learning_rate=2e-4, lr_schedule="constant", net_arch="medium", activation_fn="relu",
             optimizer="rmsprop_from_one"),
    ]  # fmt: skip
    stored_study(tmp_path / "study.log", trials)
    for trial_id, params in enumerate(trials):
        zoo("train", algo, "-n", "400", "--storage", "study.log", "--study-name", "stored", "--trial-id", str(trial_id),
            cwd=tmp_path)  # fmt: skip
        run_folder = tmp_path / "logs" / algo / f"CartPole-v1_{trial_id + 1}"
        config = saved_config(run_folder)
        expected_rate = f"lin_{params['learning_rate']}" if params["lr_schedule"] == "linear" else params["learning_rate"]
        assert (config["n_steps"], config["learning_rate"]) == (params["n_steps"], expected_rate)
        model = {"a3c": A3C, "sync_a2c": SyncA2C}[algo].load(run_folder / "CartPole-v1.zip", device="cpu")
        assert model.n_steps == params["n_steps"]
        expected_at_half = params["learning_rate"] * (0.5 if params["lr_schedule"] == "linear" else 1.0)
        assert model.lr_schedule(0.5) == pytest.approx(expected_at_half)
        assert isinstance(model.policy.optimizer, th.optim.RMSprop)
        assert isinstance(model.policy.optimizer, RMSpropFromOne) == (params["optimizer"] == "rmsprop_from_one")


def test_wheel_install_registers_with_the_zoo(tmp_path):
    """A regular (non-editable) install: the wheel carries the .pth hook and the YAML files, and they work."""
    run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "-w",
        str(tmp_path / "dist"),
        str(REPO_ROOT),
        cwd=tmp_path,
    )
    wheel = next((tmp_path / "dist").glob("sb3_a3c-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "sb3_a3c_zoo.pth" in names
    assert {f"sb3_a3c/hyperparams/{algo}.yml" for algo in ("a3c", "a3c_cnn", "sync_a2c")} <= set(names)

    target = tmp_path / "site"
    run(sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), str(wheel), cwd=tmp_path)
    # -S: skip this venv's site set-up (its editable sb3-a3c); add the wheel's folder as a site dir (its .pth runs),
    # then this venv's packages as a plain path for the dependencies.
    code = (
        f"import site, sys; site.addsitedir({str(target)!r}); sys.path.append({sysconfig.get_paths()['purelib']!r});"
        "import runpy, sb3_a3c; assert sb3_a3c.__file__.startswith(" + repr(str(target)) + "), sb3_a3c.__file__;"
        "sys.argv = ['train', '--algo', 'a3c', '--env', 'CartPole-v1', '-n', '1000', '-f', 'logs'];"
        "runpy.run_module('rl_zoo3.train', run_name='__main__')"
    )
    run(sys.executable, "-S", "-c", code, cwd=tmp_path)
    assert (tmp_path / "logs" / "a3c" / "CartPole-v1_1" / "CartPole-v1.zip").exists()


@pytest.mark.parametrize("algo", ["a3c", "a3c_cnn", "sync_a2c"])
def test_zoo_atari_entry_trains(tmp_path, algo):
    """The shipped PongNoFrameskip-v4 entry (its wrapper, frames and policy) runs through the Zoo."""
    run_folder = zoo_train(tmp_path, algo, "PongNoFrameskip-v4", "-n", "1000", "--eval-freq", "-1")
    model = {"a3c": A3C, "a3c_cnn": A3C, "sync_a2c": SyncA2C}[algo].load(run_folder / "PongNoFrameskip-v4.zip")
    assert model.num_timesteps >= 1000
    if algo == "a3c":
        # The A3C paper's LSTM agent: one normalised 42x42 frame, Hogwild updates
        assert isinstance(model.policy, A3CCnnLstmPolicy)
        assert model.policy.lstm_actor.hidden_size == 256
        assert model.observation_space.shape == (1, 42, 42)
        assert (model.n_envs, model.n_workers, model.synchronous_updates) == (16, 2, False)
    else:
        assert model.observation_space.shape == (4, 84, 84)  # AtariWrapper's frames, stacked
    if algo == "a3c_cnn":
        assert (model.n_envs, model.n_workers, model.synchronous_updates) == (16, 2, True)
    if algo in ("a3c", "a3c_cnn"):
        # enjoy loads the 2-worker model with a single env and plays (run() checks the exit status)
        zoo("enjoy", algo, "--no-render", "-n", "300", cwd=tmp_path, env_id="PongNoFrameskip-v4")


@pytest.mark.parametrize("algo", ["a3c", "sync_a2c"])
@pytest.mark.parametrize("env_id", ["LunarLander-v3", "HalfCheetah-v5", "HopperBulletEnv-v0"])
def test_zoo_trains_box2d_mujoco_and_pybullet_envs(tmp_path, algo, env_id):
    """A short Zoo train in each family of the Zoo's A2C envs (``sb3-a3c[envs]``); Atari: test_zoo_atari_entry_trains."""
    run_folder = zoo_train(tmp_path, algo, env_id, "-n", "2000", "--eval-freq", "-1")
    model = {"a3c": A3C, "sync_a2c": SyncA2C}[algo].load(run_folder / f"{env_id}.zip")
    assert model.num_timesteps >= 2000
