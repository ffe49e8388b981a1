"""
A3C on a Ray cluster (``ray_address``): a head and a second node on this machine, loopback only (127.0.0.1),
each node a "machine" with its own learner and forked workers.
"""

import os

# Before Ray is imported: without it, Ray gives the nodes the machine's routable address
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"

import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import psutil
import pytest
from stable_baselines3.common.callbacks import BaseCallback, EvalCallback, StopTrainingOnRewardThreshold
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize

from sb3_a3c import A3C, WorkerError
from tests.helpers.counting_envs import CountingEnv, counting_vec_env

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

LOOPBACK = "127.0.0.1"


@pytest.fixture(scope="module")
def cluster():
    """Two nodes of one CPU each on 127.0.0.1, the driver connected; everything removed afterwards."""
    saved = {name: os.environ.get(name) for name in ("HOME", "RAY_TMPDIR")}
    os.environ["HOME"] = tempfile.mkdtemp(prefix="ray-home-")  # Ray writes its auth token under ~/.ray
    os.environ["RAY_TMPDIR"] = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # Ray's sockets and logs
    node_args = dict(num_cpus=1, node_ip_address=LOOPBACK)
    test_cluster = Cluster(
        initialize_head=True, head_node_args=dict(**node_args, include_dashboard=False), shutdown_at_exit=False
    )
    try:
        test_cluster.add_node(**node_args)
        test_cluster.wait_for_nodes()
        ray.init(address=test_cluster.address, log_to_driver=False)
        yield test_cluster
    finally:
        ray.shutdown()
        test_cluster.shutdown()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def make_model(cluster, env=None, **kwargs) -> A3C:
    env = env if env is not None else make_vec_env("CartPole-v1", n_envs=2, seed=0)
    settings = dict(n_steps=10, seed=0, ray_address=cluster.address, n_machines=2, machine_sync_interval=5)
    return A3C("MlpPolicy", env, **{**settings, **kwargs})


class MachineProcesses(BaseCallback):
    """Records, once the workers run, the process ids of every learner and of its forked workers."""

    def __init__(self):
        super().__init__()
        self.learner_pids: list[int] = []
        self.worker_pids: list[int] = []
        self.node_ids: list[str] = []

    def _on_step(self) -> bool:
        if not self.worker_pids:
            machines = self.model._backend.machines
            pids = [ray.get(machine.actor.worker_pids.remote()) for machine in machines]
            if all(pids):
                self.learner_pids = [machine.pid for machine in machines]
                self.node_ids = [machine.node_id for machine in machines]
                self.worker_pids = [pid for machine_pids in pids for pid in machine_pids]
        return True


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def assert_gone(pids: list[int], within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in pids if alive(pid)]


class CountSteps(BaseCallback):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def _on_step(self) -> bool:
        self.calls += 1
        return True


def test_learners_run_on_two_nodes_and_callbacks_count_every_step(cluster):
    model = make_model(cluster, n_machines=None)  # one learner per node
    processes, counter = MachineProcesses(), CountSteps()
    model.learn(2000, callback=[processes, counter])
    assert len(set(processes.node_ids)) == 2
    assert model.num_timesteps == 2000
    assert counter.calls == model.num_timesteps // model.n_envs
    assert_gone(processes.learner_pids + processes.worker_pids)


@pytest.mark.slow
def test_cartpole_learns_through_two_machines(cluster):
    model = make_model(cluster, n_steps=20)
    stop = StopTrainingOnRewardThreshold(reward_threshold=475)
    evaluation = EvalCallback(make_vec_env("CartPole-v1", n_envs=1, seed=1), eval_freq=2500, callback_on_new_best=stop)
    model.learn(150_000, callback=evaluation)
    assert evaluation.best_mean_reward >= 400


def test_model_trained_on_ray_loads_and_predicts_without_ray_and_resumes_on_either_backend(cluster, tmp_path):
    model = make_model(cluster)
    model.learn(1000)
    model.save(tmp_path / "model")
    observations = np.random.default_rng(0).normal(size=(32, 4)).astype(np.float32)
    expected, _ = model.predict(observations, deterministic=True)

    local = A3C.load(tmp_path / "model", env=make_vec_env("CartPole-v1", n_envs=2, seed=0), ray_address=None)
    actions, _ = local.predict(observations, deterministic=True)
    np.testing.assert_array_equal(actions, expected)
    local.learn(500, reset_num_timesteps=False)  # forked workers only, in this process that is connected to Ray
    assert local.num_timesteps == 1500

    on_ray = A3C.load(tmp_path / "model", env=make_vec_env("CartPole-v1", n_envs=2, seed=0))
    assert on_ray.ray_address == cluster.address
    on_ray.learn(500, reset_num_timesteps=False)
    assert on_ray.num_timesteps == 1500


class RaisingEnv(CountingEnv):
    def step(self, action):
        if self.lifetime_step >= 3000:  # once both machines run
            raise RuntimeError("the simulator crashed")
        return super().step(action)


def test_worker_exception_on_a_machine_is_raised_naming_the_machine(cluster):
    env = counting_vec_env(2, episode_length=10, env_class=RaisingEnv)
    model = make_model(cluster, env=env)
    processes = MachineProcesses()
    with pytest.raises(WorkerError, match=r"(?s)machine \d \(node 127\.0\.0\.1.*the simulator crashed"):
        model.learn(100_000, callback=processes)
    assert processes.worker_pids
    assert_gone(processes.learner_pids + processes.worker_pids)
    model.save(tempfile.mktemp(suffix=".zip"))


class KillOnce(MachineProcesses):
    """Once the workers run, kills a forked worker (``what="worker"``) or a whole learner (``what="learner"``)."""

    def __init__(self, what: str):
        super().__init__()
        self.what = what
        self.killed_at: float | None = None

    def _on_step(self) -> bool:
        super()._on_step()
        if self.worker_pids and self.killed_at is None:
            os.kill(self.worker_pids[0] if self.what == "worker" else self.learner_pids[0], signal.SIGKILL)
            self.killed_at = time.monotonic()
        return True


@pytest.mark.parametrize(
    "what, message",
    [
        ("worker", r"machine \d \(node 127\.0\.0\.1.*killed by signal SIGKILL"),
        ("learner", r"machine \d \(node 127\.0\.0\.1.* was lost"),
    ],
)
def test_killed_worker_or_learner_is_reported_within_5_seconds_and_nothing_is_left(cluster, what, message):
    model = make_model(cluster)
    killer = KillOnce(what)
    with pytest.raises(WorkerError, match=f"(?s){message}"):
        model.learn(1_000_000, callback=killer)
    assert time.monotonic() - killer.killed_at < 5
    assert_gone(killer.learner_pids + killer.worker_pids)
    observations = np.zeros((1, 4), dtype=np.float32)
    model.predict(observations)  # the model keeps the last global parameters
    assert all(np.isfinite(p.detach().numpy()).all() for p in model.policy.parameters())


def test_vec_normalize_with_ray_is_refused_before_anything_starts(cluster):
    env = VecNormalize(make_vec_env("CartPole-v1", n_envs=2, seed=0))
    with pytest.raises(ValueError, match="VecNormalize cannot be used with ray_address"):
        make_model(cluster, env=env)


def test_unreachable_cluster_error_names_the_address(monkeypatch):
    from sb3_a3c.a3c.runner import ray_machines

    monkeypatch.setattr(ray_machines.ray, "is_initialized", lambda: False)

    def refuse(**kwargs):
        raise ConnectionError("Could not find any running Ray instance")

    monkeypatch.setattr(ray_machines.ray, "init", refuse)
    with pytest.raises(ConnectionError, match=r"ray_address='10\.0\.0\.1:6379'"):
        ray_machines.connect("10.0.0.1:6379")


def test_one_machine_backend_never_imports_ray():
    code = (
        "import sys; from sb3_a3c import A3C; "
        "A3C('MlpPolicy', 'CartPole-v1', n_envs=2, n_steps=5).learn(200); "
        "assert 'ray' not in sys.modules, 'ray was imported'"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


class CtrlC(MachineProcesses):
    """Raises KeyboardInterrupt in the main process once the workers run, as Ctrl-C does."""

    def _on_step(self) -> bool:
        super()._on_step()
        if self.worker_pids:
            raise KeyboardInterrupt
        return True


def test_ctrl_c_stops_every_machine(cluster):
    model = make_model(cluster)
    interrupter = CtrlC()
    with pytest.raises(KeyboardInterrupt):
        model.learn(1_000_000, callback=interrupter)
    assert_gone(interrupter.learner_pids + interrupter.worker_pids)


def test_missing_ray_is_an_import_error_that_says_what_to_install():
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "from sb3_a3c import A3C\n"
        "A3C('MlpPolicy', 'CartPole-v1', n_envs=2, ray_address='auto').learn(100)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode != 0
    assert 'ImportError: A3C(ray_address=...) runs on Ray, which is not installed: pip install "sb3-a3c[ray]"' in result.stderr


def test_lost_node_is_reported_within_15_seconds(cluster):
    extra = cluster.add_node(num_cpus=1, node_ip_address=LOOPBACK)
    cluster.wait_for_nodes()
    model = make_model(cluster, env=make_vec_env("CartPole-v1", n_envs=3, seed=0), n_machines=3)  # one per node

    class RemoveNodeOnce(MachineProcesses):
        removed_at = None

        def _on_step(self) -> bool:
            super()._on_step()
            if self.worker_pids and self.removed_at is None:
                cluster.remove_node(extra, allow_graceful=False)
                self.removed_at = time.monotonic()
            return True

    remover = RemoveNodeOnce()
    with pytest.raises(WorkerError, match=r"machine \d \(node 127\.0\.0\.1.* was lost"):
        model.learn(1_000_000, callback=remover)
    assert time.monotonic() - remover.removed_at < 15
    assert_gone(remover.learner_pids + remover.worker_pids)
