import time

import psutil
import pytest

# Processes of a Ray cluster that a test module started and keeps for its tests (tests/test_ray_machines.py);
# A3C's own processes on Ray (learners and their forked workers) carry "MachineLearner" in their title
RAY_SERVICE_MARKERS = ("gcs_server", "raylet", "ray/dashboard", "log_monitor", "runtime_env", "ray/autoscaler", "ray::")


def _is_ray_service(process: psutil.Process) -> bool:
    try:
        command = " ".join([process.name(), *process.cmdline()])
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False
    return "MachineLearner" not in command and any(marker in command for marker in RAY_SERVICE_MARKERS)


def live_children() -> list[psutil.Process]:
    children = psutil.Process().children(recursive=True)
    return [
        child
        for child in children
        if child.is_running() and child.status() != psutil.STATUS_ZOMBIE and not _is_ray_service(child)
    ]


@pytest.fixture(autouse=True)
def no_process_outlives_the_test():
    """Every test also checks that no worker process outlives learn()."""
    yield
    # Learners on Ray exit asynchronously once killed; give them a moment
    deadline = time.monotonic() + 5.0
    while live_children() and time.monotonic() < deadline:
        time.sleep(0.1)
    leftover = live_children()
    for child in leftover:
        child.kill()
    assert not leftover, f"processes left alive after the test: {leftover}"
