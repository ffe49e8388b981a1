"""
A3C on a Ray cluster: one learner per machine, each running the one-machine A3C (forked Hogwild workers
sharing that machine's model and optimizer) and exchanging parameters with the main process every
``machine_sync_interval`` of its workers' updates.

The main process keeps the user's model, callbacks and logger. ``RayBackend`` is a ``backends.Backend``,
so ``A3C.learn()`` drives it as it drives the one-machine backend, and each machine's learner runs a
``backends.OneMachineBackend``: the same workers and update as on one machine. A learner gets the model's
``A3CConfig`` and its policy's state, not the model. Each exchange (``MachineLearner.sync``) takes the machine's
reports since the previous one and the change of its parameters since then (``parameter_sync``), and gives
the machine the main process's global parameters.

Only this module imports Ray, and only ``A3C(ray_address=...)`` imports this module.
"""

import dataclasses
import io
import os
import threading
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

try:
    import ray
    import ray.exceptions
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
except ImportError as error:  # pragma: no cover - depends on the installation
    raise ImportError('A3C(ray_address=...) runs on Ray, which is not installed: pip install "sb3-a3c[ray]"') from error

import numpy as np
import torch as th
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.vec_env import VecEnv

from sb3_a3c.a3c.config import A3CConfig
from sb3_a3c.a3c.job import ActorLearnerJob, RunSettings, WorkerStart
from sb3_a3c.a3c.messages import RolloutReport
from sb3_a3c.a3c.runner.backends import OneMachineBackend
from sb3_a3c.a3c.runner.parameter_sync import MachineParameters, add_delta, state_vector
from sb3_a3c.a3c.runner.worker_pool import WorkerError
from sb3_a3c.a3c.worker_envs import export_worker_env, import_worker_env, make_worker_env

# Seconds a machine's sync waits for its workers' updates before answering anyway (keeps the main process responsive)
SYNC_WAIT = 1.0
# Seconds the machines get to stop their workers before they are killed
SHUTDOWN_TIMEOUT = 8.0


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (exited, not yet reaped by its parent) has a status "Z" in /proc
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


@dataclass
class SyncResult:
    """One machine's answer to a sync."""

    reports: list[RolloutReport]
    delta: np.ndarray
    finished: bool
    # Seconds the machine waited for its workers' updates before answering
    waited_s: float = 0.0


class MachineLearner:
    """
    The learner of one machine (a Ray actor): the one-machine A3C on this machine's share of the envs.

    :param config: the model's hyperparameters and policy architecture
    :param policy_state: the policy's parameters and optimizer statistics (``policy_state_bytes``)
    :param env_data: this machine's envs (``worker_envs.export_worker_env``)
    :param run: this machine's share of the workers (their seeds) and their budget
    :param steps_done: the steps the model had collected before this ``learn()``
    :param sync_interval: updates of this machine's workers between two exchanges with the main process
    """

    def __init__(
        self, config: A3CConfig, policy_state: bytes, env_data: bytes, run: RunSettings, steps_done: int, sync_interval: int
    ) -> None:
        env, _ = import_worker_env(env_data, None)
        state = th.load(io.BytesIO(policy_state))
        shared_policy = config.make_shared_policy(state["policy"], state["optimizer"])
        self.job = ActorLearnerJob.create(config, run, shared_policy, env, steps_done)
        self.backend = OneMachineBackend(self.job)
        self.sync_interval = sync_interval
        self.parameters = MachineParameters(shared_policy)
        self._condition = threading.Condition()
        self._outbox: list[RolloutReport] = []
        self._updates_since_sync = 0
        self._error: str | None = None
        self._finished = False
        self._others_steps_applied = 0
        # The workers are started by a thread that lives as long as they do: they die with that thread
        self._thread = threading.Thread(target=self._run_workers, name="sb3-a3c-machine", daemon=True)
        self._thread.start()

    def node(self) -> dict[str, Any]:
        """Where this learner runs: its node's id and address, and its process id."""
        context = ray.get_runtime_context()
        return {"node_id": context.get_node_id(), "address": ray.util.get_node_ip_address(), "pid": os.getpid()}

    def worker_pids(self) -> list[int]:
        """The process ids of this machine's workers (empty until they have started)."""
        return [process.pid for process in self.backend.pool.processes]

    def _run_workers(self) -> None:
        try:
            with self.backend as backend:
                for report in backend.reports():  # the envs stay on their machine
                    with self._condition:
                        self._outbox.append(report)
                        self._updates_since_sync += 1
                        self._condition.notify_all()
        except BaseException as error:
            with self._condition:
                self._error = str(error) if isinstance(error, WorkerError) else traceback.format_exc()
        finally:
            with self._condition:
                self._finished = True
                self._condition.notify_all()

    def sync(self, global_state: dict[str, Any], others_steps: int, stop: bool) -> SyncResult:
        """
        Wait for ``sync_interval`` updates of this machine's workers (at most ``SYNC_WAIT`` seconds), then hand
        over their reports and the change of the parameters, and take ``global_state``.

        :param global_state: the main process's parameters
        :param others_steps: steps the other machines have collected (for the learning-rate schedule's progress)
        :param stop: stop the workers after their current update
        :raises WorkerError: a worker of this machine failed
        """
        if stop:
            self.job.stop_event.set()
        waiting = time.perf_counter()
        with self._condition:
            self._condition.wait_for(
                lambda: self._updates_since_sync >= self.sync_interval or self._finished, timeout=SYNC_WAIT
            )
            reports, self._outbox = self._outbox, []
            self._updates_since_sync = 0
            finished, error = self._finished, self._error
        waited = time.perf_counter() - waiting
        if error is not None:
            raise WorkerError(error)
        with self.job.update_lock:
            delta = self.parameters.exchange(global_state)
        counter = self.job.global_step_counter
        with counter.get_lock():
            counter.value += others_steps - self._others_steps_applied
        self._others_steps_applied = others_steps
        return SyncResult(reports, delta, finished, waited)

    def shutdown(self) -> None:
        """Stop the workers (after their current update) and wait for them."""
        self.job.stop_event.set()
        self._thread.join(timeout=SHUTDOWN_TIMEOUT)


@dataclass
class Machine:
    """A learner as the main process sees it."""

    index: int
    actor: Any
    node_id: str
    address: str
    first_rank: int
    pid: int = 0
    steps: int = 0

    def describe(self) -> str:
        return f"machine {self.index} (node {self.address}, id {self.node_id[:12]})"


def connect(address: str) -> bool:
    """
    Connect to the Ray cluster at ``address`` ("auto": the one ``ray start`` runs here; "local": start one on
    this machine for this ``learn()``), unless this process is connected already.

    :return: whether this call connected (and ``disconnect`` must undo it)
    :raises ConnectionError: the cluster cannot be reached (the message names the address)
    """
    if ray.is_initialized():
        return False
    try:
        if address == "local":
            ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as error:
        raise ConnectionError(
            f"A3C could not reach the Ray cluster at ray_address={address!r}: {error}. Start it with `ray start --head` "
            "(and `ray start --address=HEAD:6379` on the other machines), or use ray_address='local' for this machine only."
        ) from error
    return True


def machine_nodes(n_machines: int | None) -> list[dict[str, Any]]:
    """The nodes for the learners: ``n_machines`` of them, in turn over the alive nodes with a CPU (None: one per node)."""
    nodes = [node for node in ray.nodes() if node.get("Alive") and node.get("Resources", {}).get("CPU", 0) >= 1]
    if not nodes:
        raise ConnectionError("The Ray cluster has no alive node with a CPU.")
    nodes.sort(key=lambda node: node["NodeID"])
    count = len(nodes) if n_machines is None else n_machines
    return [nodes[index % len(nodes)] for index in range(count)]


def policy_state_bytes(policy: ActorCriticPolicy) -> bytes:
    """``policy``'s parameters and optimizer statistics, as ``MachineLearner`` takes them."""
    buffer = io.BytesIO()
    th.save({"policy": policy.state_dict(), "optimizer": policy.optimizer.state_dict()}, buffer)
    return buffer.getvalue()


@dataclass
class RayBackend:
    """
    The workers of ``learn()`` on the machines of a Ray cluster (a ``backends.Backend``).

    :param config: the model's hyperparameters and policy architecture
    :param policy: the model's policy: it holds the global parameters
    :param training_env: the user's VecEnv; machine ``m`` gets its ``m``-th share of the envs
    :param run: the workers of all machines together (one seed per worker) and their budget
    :param steps_done: the steps the model had collected before this ``learn()``
    :param address: the Ray cluster's address (``A3C``'s ``ray_address``)
    :param n_machines: learners to start (None: one per node)
    :param sync_interval: updates of a machine's workers between two exchanges with the main process
    """

    config: A3CConfig
    policy: ActorCriticPolicy
    training_env: VecEnv
    run: RunSettings
    steps_done: int
    address: str
    n_machines: int | None
    sync_interval: int
    # Held while the global parameters change (checkpoints see whole exchanges)
    update_lock: Any = field(default_factory=threading.Lock, init=False)
    machines: list[Machine] = field(default_factory=list, init=False)
    sync_bytes: list[int] = field(default_factory=list, init=False)
    # Seconds from request to answer, less the machine's wait for its workers' updates
    sync_seconds: list[float] = field(default_factory=list, init=False)
    # Main-process time per exchange spent on parameters: adding the delta, putting the new global parameters
    parameter_seconds: list[float] = field(default_factory=list, init=False)
    _global_vector: np.ndarray | None = field(default=None, init=False)
    _connected_here: bool = field(default=False, init=False)
    _stop_requested: bool = field(default=False, init=False)

    def __enter__(self) -> "RayBackend":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    def start(self) -> None:
        self._connected_here = connect(self.address)
        nodes = machine_nodes(self.n_machines)
        n_machines = len(nodes)
        n_envs, n_workers = self.training_env.num_envs, len(self.run.worker_seeds)
        if n_envs % n_machines or n_workers % n_machines:
            raise ValueError(
                f"n_envs={n_envs} and n_workers={n_workers} must both be multiples of the number of machines ({n_machines})."
            )
        envs_per_machine, workers_per_machine = n_envs // n_machines, n_workers // n_machines
        policy_state = ray.put(policy_state_bytes(self.policy))
        remote_class = ray.remote(max_restarts=0, max_concurrency=2)(MachineLearner)
        for index, node in enumerate(nodes):
            indices = range(index * envs_per_machine, (index + 1) * envs_per_machine)
            env_data = export_worker_env(make_worker_env(self.training_env, indices), None)
            first_rank = index * workers_per_machine
            machine_run = dataclasses.replace(
                self.run, worker_seeds=self.run.worker_seeds[first_rank : first_rank + workers_per_machine]
            )
            actor = remote_class.options(
                num_cpus=1,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False),
                name=None,
            ).remote(self.config, policy_state, env_data, machine_run, self.steps_done, self.sync_interval)
            self.machines.append(Machine(index, actor, node["NodeID"], node.get("NodeManagerAddress", "?"), first_rank))
        # The learners are built (or their errors raised) before training starts
        for machine in self.machines:
            machine.pid = self._get(machine, machine.actor.node.remote())["pid"]

    def _get(self, machine: Machine, ref: Any) -> Any:
        """``ray.get(ref)``, with every failure of ``machine`` turned into a ``WorkerError`` that names it."""
        try:
            return ray.get(ref)
        except ray.exceptions.RayTaskError as error:
            cause = error.cause if getattr(error, "cause", None) is not None else error
            raise WorkerError(f"A3C {machine.describe()} failed: {cause}") from None
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as error:
            first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise WorkerError(
                f"A3C {machine.describe()} was lost ({type(error).__name__}: {first_line}): its process or its node died."
            ) from None

    def request_stop(self) -> None:
        """Ask every machine to stop its workers after their current update."""
        self._stop_requested = True

    def _global_state(self) -> Any:
        # One buffer, reused: put copies it into the object store at once
        self._global_vector = state_vector(self.policy, out=self._global_vector)
        return ray.put(self._global_vector)

    def reports(self) -> Iterator[RolloutReport]:
        """
        Yield the reports of every machine's workers (ranks over all machines) as the machines sync, until all are done.

        :raises WorkerError: a worker failed on a machine, or a machine was lost (the message names it)
        """
        total_steps = 0
        global_state = self._global_state()
        pending = {machine.actor.sync.remote(global_state, 0, False): machine for machine in self.machines}
        sent_at = {ref: time.monotonic() for ref in pending}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=SYNC_WAIT)
            for ref in ready:
                machine = pending.pop(ref)
                result: SyncResult = self._get(machine, ref)
                self.sync_seconds.append(time.monotonic() - sent_at.pop(ref) - result.waited_s)
                self.sync_bytes.append(2 * result.delta.nbytes)
                applying = time.perf_counter()
                with self.update_lock:
                    add_delta(self.policy, result.delta)
                parameter_seconds = time.perf_counter() - applying
                for report in result.reports:
                    report.worker_rank += machine.first_rank
                    machine.steps += report.env_steps
                    total_steps += report.env_steps
                    yield report
                if not result.finished:
                    sending = time.perf_counter()
                    next_state = self._global_state()
                    parameter_seconds += time.perf_counter() - sending
                    next_ref = machine.actor.sync.remote(next_state, total_steps - machine.steps, self._stop_requested)
                    pending[next_ref] = machine
                    sent_at[next_ref] = time.monotonic()
                self.parameter_seconds.append(parameter_seconds)

    def take_back_envs(self) -> list[WorkerStart] | None:
        """The envs stay on their machines: the training env keeps its own."""
        return None

    def statistics(self) -> dict[str, float]:
        """
        How many exchanges there were, their bytes (both ways), their latency (request to answer, less the time
        the machine waited for its workers' updates) and the main process's time per exchange on the parameters
        (adding the change, putting the new parameters in Ray's object store), as medians.
        """
        count = len(self.sync_seconds)
        return {
            "syncs": count,
            "bytes_per_sync": float(np.median(self.sync_bytes)) if count else 0.0,
            "median_latency_s": float(np.median(self.sync_seconds)) if count else 0.0,
            "median_main_process_parameter_s": float(np.median(self.parameter_seconds)) if count else 0.0,
        }

    def _wait_for_local_learners_to_exit(self, timeout: float = SHUTDOWN_TIMEOUT) -> None:
        """``ray.kill`` returns at once; learners on this node are waited for (their pids are known here)."""
        this_node = ray.get_runtime_context().get_node_id()
        pids = [machine.pid for machine in self.machines if machine.node_id == this_node and machine.pid]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(_process_exists(pid) for pid in pids):
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop every machine's workers, remove the learners, and disconnect from Ray if ``start`` connected."""
        if self.machines:
            shutdowns = [machine.actor.shutdown.remote() for machine in self.machines]
            try:
                ray.wait(shutdowns, num_returns=len(shutdowns), timeout=SHUTDOWN_TIMEOUT)
            except Exception:
                pass
            for machine in self.machines:
                try:
                    ray.kill(machine.actor)
                except Exception:
                    pass
            self._wait_for_local_learners_to_exit()
            self.machines = []
        if self._connected_here:
            ray.shutdown()
            self._connected_here = False
