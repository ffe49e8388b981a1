"""
Start, watch and stop worker processes. What a worker computes lives in ``actor_learner``; this module
only knows processes, pipes and signals.

Workers are forked (not spawned): they inherit the shared model and the user's environments, which
cannot be pickled. Each worker reports through its own pipe, and the main process waits on the pipes
and on the process sentinels together, so a worker that raises or is killed is noticed at once.
"""

import multiprocessing
import multiprocessing.connection
import multiprocessing.synchronize
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Any

import torch as th

WorkerTarget = Callable[[int, Callable[[Any], None]], None]


@dataclass
class WorkerFailure:
    """An exception raised in a worker, with its formatted traceback (sent in place of a report)."""

    worker_rank: int
    description: str
    traceback: str


class WorkerError(RuntimeError):
    """A worker process raised an exception or died; the message says which worker and why."""


def _worker_process_main(
    rank: int, description: str, target: WorkerTarget, report_writer: Connection, report_readers: list[Connection]
) -> None:
    """Process entry point: set the process up for one worker, run it, and report any exception."""
    # Ctrl-C reaches the whole process group; only the main process handles it, then stops the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Keep no reader end: if the main process dies, sending a report fails instead of blocking forever.
    for reader in report_readers:
        reader.close()
    # One intra-op thread per worker; also avoids OpenMP thread pools inherited through fork.
    th.set_num_threads(1)
    try:
        target(rank, report_writer.send)
    except BaseException:
        try:
            report_writer.send(WorkerFailure(rank, description, traceback.format_exc()))
        except OSError:
            pass
        sys.exit(1)


class WorkerPool:
    """
    Run ``target(rank, send_report)`` in ``n_workers`` forked processes and relay what they send.

    Use as a context manager: leaving the ``with`` block (normally, on error or on Ctrl-C) stops every
    worker, so no process outlives it.

    :param n_workers: number of processes
    :param target: the work of one process; ``send_report`` sends a picklable object to the main process
    :param stop_event: set to ask the workers to stop after their current update
    :param describe_worker: a short description of a worker for error messages (e.g. its env id)
    :param shutdown_timeout: seconds the workers get to stop on their own before they are terminated
    """

    def __init__(
        self,
        n_workers: int,
        target: WorkerTarget,
        stop_event: multiprocessing.synchronize.Event,
        describe_worker: Callable[[int], str],
        shutdown_timeout: float = 5.0,
    ) -> None:
        self.n_workers = n_workers
        self.target = target
        self.stop_event = stop_event
        self.describe_worker = describe_worker
        self.shutdown_timeout = shutdown_timeout
        self.processes: list[multiprocessing.process.BaseProcess] = []
        self._readers: list[Connection] = []
        self._a_worker_died_abruptly = False

    def __enter__(self) -> "WorkerPool":
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, exc_traceback: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        context = multiprocessing.get_context("fork")
        pipes = [context.Pipe(duplex=False) for _ in range(self.n_workers)]
        self._readers = [reader for reader, _ in pipes]
        for rank, (_, writer) in enumerate(pipes):
            process = context.Process(
                target=_worker_process_main,
                args=(rank, self.describe_worker(rank), self.target, writer, self._readers),
                name=f"sb3-a3c-worker-{rank}",
                daemon=True,
            )
            process.start()
            self.processes.append(process)
            writer.close()

    def request_stop(self) -> None:
        """Ask the workers to finish their current update and exit."""
        self.stop_event.set()

    def reports(self, poll_interval: float = 1.0) -> Iterator[Any]:
        """
        Yield what the workers send, until all of them have exited normally.

        :raises WorkerError: as soon as a worker raises (with its traceback) or dies (with its exit signal)
        """
        running = set(range(self.n_workers))
        while running:
            waitables = [self._readers[rank] for rank in running if not self._readers[rank].closed]
            waitables += [self.processes[rank].sentinel for rank in running]
            multiprocessing.connection.wait(waitables, timeout=poll_interval)
            for rank in sorted(running):
                yield from self._drain(rank)
                if self.processes[rank].exitcode is not None:
                    yield from self._drain(rank)
                    self._raise_if_failed(rank)
                    running.discard(rank)

    def _drain(self, rank: int) -> Iterator[Any]:
        reader = self._readers[rank]
        while not reader.closed and reader.poll():
            try:
                message = reader.recv()
            except EOFError:
                reader.close()
                return
            if isinstance(message, WorkerFailure):
                self.request_stop()
                raise WorkerError(
                    f"A3C worker {message.worker_rank} ({message.description}) raised an exception:\n{message.traceback}"
                )
            yield message

    def _raise_if_failed(self, rank: int) -> None:
        exitcode = self.processes[rank].exitcode
        if exitcode == 0:
            return
        # It died without reporting (e.g. SIGKILL): it may have held a shared lock, which then stays
        # locked, so the other workers may never get to their stop check
        self._a_worker_died_abruptly = True
        self.request_stop()
        if exitcode is not None and exitcode < 0:
            cause = f"was killed by signal {signal.Signals(-exitcode).name}"
        else:
            cause = f"exited with code {exitcode}"
        raise WorkerError(f"A3C worker {rank} ({self.describe_worker(rank)}, pid {self.processes[rank].pid}) {cause}")

    def stop(self) -> None:
        """
        Stop all workers: ask, wait up to ``shutdown_timeout`` seconds, then terminate and kill. If a worker
        died abruptly, the others are terminated at once (they may wait forever for a lock it held).
        """
        self.request_stop()
        deadline = time.monotonic() + (0.0 if self._a_worker_died_abruptly else self.shutdown_timeout)
        while any(process.is_alive() for process in self.processes) and time.monotonic() < deadline:
            # Keep reading, so that no worker stays blocked on a full pipe
            for rank in range(len(self.processes)):
                try:
                    for _ in self._drain(rank):
                        pass
                except WorkerError:
                    pass
            time.sleep(0.01)
        for process in self.processes:
            if process.is_alive():
                process.terminate()
                process.join(timeout=1.0)
            if process.is_alive():
                process.kill()
            process.join()
        for reader in self._readers:
            reader.close()
