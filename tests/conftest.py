import psutil
import pytest


def live_children() -> list[psutil.Process]:
    children = psutil.Process().children(recursive=True)
    return [child for child in children if child.is_running() and child.status() != psutil.STATUS_ZOMBIE]


@pytest.fixture(autouse=True)
def no_process_outlives_the_test():
    """Every test also checks that no worker process outlives learn()."""
    yield
    leftover = live_children()
    for child in leftover:
        child.kill()
    assert not leftover, f"processes left alive after the test: {leftover}"
