"""
Start, watch and stop worker processes. What a worker computes lives in ``sb3_a3c.a3c.worker``; this
module only knows processes, pipes and signals.

Workers are forked (not spawned): they inherit the shared model and the user's environments, which
cannot be pickled. Each worker reports through its own pipe. A reader thread in the main process waits
on the pipes and on the process sentinels together and moves every report to an in-memory queue as it
arrives: a worker that raises or is killed is noticed at once, and no worker ever waits on a full pipe
while the main thread runs a long callback (an evaluation).
"""

import ctypes
import gc
import multiprocessing
import multiprocessing.connection
import multiprocessing.synchronize
import os
import queue
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Any

import torch as th

WorkerTarget = Callable[[int, Callable[[Any], None]], None]

# prctl(2) option: the signal a process gets when its parent thread exits
PR_SET_PDEATHSIG = 1

# Put in the report queue by the reader thread once every worker has exited
_ALL_WORKERS_EXITED = object()

# A worker sends its reports in batches: each pipe message costs the main process a wake-up of its reader
# thread and of its main thread, whatever its size. A batch goes when it is this old or this long; the length
# bounds what a fast worker (small envs) collects beyond a callback's stop before the main process sees it.
REPORT_BATCH_SECONDS = 0.25
REPORT_BATCH_LENGTH = 4


@dataclass
class WorkerFailure:
    """An exception raised in a worker, with its formatted traceback (sent in place of a report)."""

    worker_rank: int
    description: str
    traceback: str


class WorkerError(RuntimeError):
    """A worker process raised an exception or died; the message says which worker and why."""


class BatchingSender:
    """
    Sends a worker's reports through its pipe as lists: when ``interval`` seconds have passed since the last
    one (checked at each report), or ``max_length`` reports wait. ``flush()`` sends what is pending.
    """

    def __init__(
        self, connection: Connection, interval: float = REPORT_BATCH_SECONDS, max_length: int = REPORT_BATCH_LENGTH
    ) -> None:
        self.connection = connection
        self.interval = interval
        self.max_length = max_length
        self._batch: list[Any] = []
        self._last_sent = time.monotonic()

    def send(self, report: Any) -> None:
        self._batch.append(report)
        if len(self._batch) >= self.max_length or time.monotonic() - self._last_sent >= self.interval:
            self.flush()

    def flush(self) -> None:
        if self._batch:
            self.connection.send(self._batch)
            self._batch = []
        self._last_sent = time.monotonic()


def _die_with_parent(parent_pid: int) -> None:
    """Have the kernel kill this process when the thread that forked it ends (e.g. its process is SIGKILLed)."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def _worker_process_main(
    rank: int,
    description: str,
    target: WorkerTarget,
    report_writer: Connection,
    report_readers: list[Connection],
    parent_pid: int,
) -> None:
    """Process entry point: set the process up for one worker, run it, and report any exception."""
    # Ctrl-C reaches the whole process group; only the main process handles it, then stops the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent(parent_pid)
    # Keep no reader end: if the main process dies, sending a report fails instead of blocking forever.
    for reader in report_readers:
        reader.close()
    # One intra-op thread per worker; also avoids OpenMP thread pools inherited through fork.
    th.set_num_threads(1)
    sender = BatchingSender(report_writer)
    try:
        target(rank, sender.send)
        sender.flush()
    except BaseException:
        try:
            sender.flush()  # what the worker reported before the exception
            report_writer.send(WorkerFailure(rank, description, traceback.format_exc()))
        except OSError:
            pass
        sys.exit(1)


class WorkerPool:
    """
    Run ``target(rank, send_report)`` in ``n_workers`` forked processes and relay what they send (in batches,
    ``BatchingSender``; ``reports()`` yields them one by one, in the order each worker sent them).

    Use as a context manager: leaving the ``with`` block (normally, on error or on Ctrl-C) stops every
    worker, so no process outlives it. Reports are read from the pipes continuously by a thread and
    kept, in order, until ``reports()`` yields them: a report is a few hundred bytes and workers send
    a few dozen per second, so even a minute-long callback queues well under a few MB.

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
        self._ranks_that_reported_a_failure: set[int] = set()
        self._received: queue.SimpleQueue = queue.SimpleQueue()
        self._reader_thread: threading.Thread | None = None

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
        # A child must never finalize what it inherited: garbage of the main process not yet collected (e.g.
        # a shut-down Ray client, whose finalizer shuts gRPC queues served by threads the child does not
        # have) would crash the worker with SIGSEGV if the child's garbage collector freed it. Frozen
        # objects are never collected in the children; the main process unfreezes them right after.
        gc.freeze()
        try:
            for rank, (_, writer) in enumerate(pipes):
                process = context.Process(
                    target=_worker_process_main,
                    args=(rank, self.describe_worker(rank), self.target, writer, self._readers, os.getpid()),
                    name=f"sb3-a3c-worker-{rank}",
                    daemon=True,
                )
                process.start()
                self.processes.append(process)
                writer.close()
        finally:
            gc.unfreeze()
        # Only after the last fork: a thread running during fork() would be copied into the children half-way
        self._reader_thread = threading.Thread(target=self._read_reports, name="sb3-a3c-report-reader", daemon=True)
        self._reader_thread.start()

    def request_stop(self) -> None:
        """Ask the workers to finish their current update and exit."""
        self.stop_event.set()

    def reports(self) -> Iterator[Any]:
        """
        Yield what the workers sent, in the order it arrived, until all of them have exited normally.

        :raises WorkerError: after the reports received before it, when a worker raised (with its
            traceback) or died (with its exit signal)
        """
        while True:
            batch = self._received.get()
            if batch is _ALL_WORKERS_EXITED:
                return
            if isinstance(batch, WorkerError):
                raise batch
            yield from batch

    def _read_reports(self, poll_interval: float = 0.5) -> None:
        """The reader thread: move batches and failures from the pipes to the queue until every worker has exited."""
        running = set(range(self.n_workers))
        try:
            while running:
                waitables = [self._readers[rank] for rank in running if not self._readers[rank].closed]
                waitables += [self.processes[rank].sentinel for rank in running]
                ready = multiprocessing.connection.wait(waitables, timeout=poll_interval)
                for rank in sorted(running):
                    if ready and self._readers[rank] not in ready and self.processes[rank].sentinel not in ready:
                        continue  # nothing new from this worker (all are checked when the wait times out)
                    # Read before checking the exit: what a worker sent before exiting is still in its pipe
                    exited = self.processes[rank].exitcode is not None
                    try:
                        for batch in self._drain(rank):
                            self._received.put(batch)
                        if exited:
                            self._raise_if_failed(rank)
                    except WorkerError as error:
                        self._received.put(error)
                    if exited:
                        running.discard(rank)
        except BaseException:
            self.request_stop()
            self._received.put(WorkerError(f"Reading the A3C workers' reports failed:\n{traceback.format_exc()}"))
        finally:
            self._received.put(_ALL_WORKERS_EXITED)

    def _drain(self, rank: int) -> Iterator[list[Any]]:
        """The batches (``BatchingSender``) waiting in worker ``rank``'s pipe."""
        reader = self._readers[rank]
        while not reader.closed and reader.poll():
            try:
                message = reader.recv()
            except EOFError:
                reader.close()
                return
            if isinstance(message, WorkerFailure):
                self._ranks_that_reported_a_failure.add(message.worker_rank)
                self.request_stop()
                raise WorkerError(
                    f"A3C worker {message.worker_rank} ({message.description}) raised an exception:\n{message.traceback}"
                )
            yield message

    def _raise_if_failed(self, rank: int) -> None:
        exitcode = self.processes[rank].exitcode
        if exitcode == 0 or rank in self._ranks_that_reported_a_failure:
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
        # The reader thread keeps reading meanwhile, so that no worker stays blocked on a full pipe
        while any(process.is_alive() for process in self.processes) and time.monotonic() < deadline:
            time.sleep(0.01)
        for process in self.processes:
            if process.is_alive():
                process.terminate()
                process.join(timeout=1.0)
            if process.is_alive():
                process.kill()
            process.join()
        if self._reader_thread is not None:
            self._reader_thread.join()
        for reader in self._readers:
            reader.close()
