"""A worker's reports travel in batches (``worker_pool.BatchingSender``), in this process."""

import time

from sb3_a3c.a3c.runner.worker_pool import BatchingSender


class RecordingConnection:
    def __init__(self):
        self.sent = []

    def send(self, message):
        self.sent.append(list(message))


def test_a_batch_goes_when_it_is_long_enough():
    connection = RecordingConnection()
    sender = BatchingSender(connection, interval=3600.0, max_length=3)
    for report in range(7):
        sender.send(report)
    assert connection.sent == [[0, 1, 2], [3, 4, 5]]
    sender.flush()
    assert connection.sent[-1] == [6]
    sender.flush()  # nothing pending: nothing sent
    assert len(connection.sent) == 3


def test_a_batch_goes_when_it_is_old_enough():
    connection = RecordingConnection()
    sender = BatchingSender(connection, interval=0.05, max_length=1000)
    sender.send("first")
    assert connection.sent == []
    time.sleep(0.06)
    sender.send("second")
    assert connection.sent == [["first", "second"]]
