"""
Where A3C's workers run. ``A3C.learn()`` sees a ``Backend`` and nothing else of it: this machine's forked
workers (``OneMachineBackend``), or the machines of a Ray cluster (``ray_machines.RayBackend``, which runs a
``OneMachineBackend`` on each machine).
"""

import warnings
from collections.abc import Iterator
from functools import partial
from types import TracebackType
from typing import Any, Protocol

from sb3_a3c.a3c.job import ActorLearnerJob, WorkerStart
from sb3_a3c.a3c.messages import RolloutReport, WorkerEnvs
from sb3_a3c.a3c.runner.worker_pool import WorkerPool
from sb3_a3c.a3c.worker.actor_learner import run_actor_learner
from sb3_a3c.a3c.worker_envs import import_worker_env, put_back_worker_envs


class Backend(Protocol):
    """
    Starts the workers when its ``with`` block is entered and stops every one of them when it is left
    (normally, on error or on Ctrl-C).
    """

    # Held while the parameters that ``save()`` reads change: a checkpoint never holds half an update
    update_lock: Any

    def __enter__(self) -> "Backend": ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, exc_traceback: TracebackType | None
    ) -> None: ...

    def reports(self) -> Iterator[RolloutReport]:
        """
        The workers' reports as they arrive, until every worker is done.

        :raises sb3_a3c.a3c.runner.worker_pool.WorkerError: a worker (or a machine) failed; the message says which and why
        """
        ...

    def request_stop(self) -> None:
        """Ask the workers to stop after their current update."""

    def take_back_envs(self) -> list[WorkerStart] | None:
        """
        Once the reports are done: put the envs the workers advanced in place of the training env's own, and
        return them for the next ``learn()`` to continue (None: the training env keeps its envs).
        """

    def statistics(self) -> dict[str, float]:
        """What the backend's exchanges cost (empty for one machine)."""


class OneMachineBackend:
    """
    ``job.n_workers`` forked workers on this machine, sharing ``job.shared_policy`` and its optimizer.

    :param job: what the workers need (``ActorLearnerJob.create``)
    :param algorithm_name: for warnings
    """

    def __init__(self, job: ActorLearnerJob, algorithm_name: str = "A3C") -> None:
        self.job = job
        self.algorithm_name = algorithm_name
        self.update_lock = job.update_lock
        self.pool = WorkerPool(job.n_workers, partial(run_actor_learner, job), job.stop_event, job.describe_worker)
        self._worker_envs: list[WorkerEnvs] = []

    def __enter__(self) -> "OneMachineBackend":
        self.pool.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, exc_traceback: TracebackType | None
    ) -> None:
        self.pool.stop()

    def reports(self) -> Iterator[RolloutReport]:
        for message in self.pool.reports():
            if isinstance(message, WorkerEnvs):
                self._worker_envs.append(message)
            else:
                yield message

    def request_stop(self) -> None:
        self.pool.request_stop()

    def take_back_envs(self) -> list[WorkerStart] | None:
        job = self.job
        received = {message.worker_rank: message for message in self._worker_envs}
        if len(received) != job.n_workers:
            return None  # some workers did not finish (they failed): the training env keeps its envs
        starts: list[WorkerStart] = []
        for rank in range(job.n_workers):
            message = received[rank]
            try:
                if message.data is None:
                    raise RuntimeError(message.error)
                worker_env, collector_state = import_worker_env(message.data, job.training_env)
            except Exception as error:
                warnings.warn(
                    f"{self.algorithm_name} could not bring the envs of worker {rank} back to the main process "
                    f"({str(error).strip().splitlines()[-1]}): the training env keeps its own envs, which did not advance, "
                    "and the next learn() starts its workers from them (see the README, 'Differences from SB3's A2C').",
                    stacklevel=4,
                )
                return None
            starts.append(WorkerStart(worker_env, collector_state))
        for rank, start in enumerate(starts):
            put_back_worker_envs(job.training_env, start.env, job.worker_env_indices(rank))
        return starts

    def statistics(self) -> dict[str, float]:
        return {}
