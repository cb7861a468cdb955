"""A thread for the small durable writes that the event loop must not wait for.

Why: a leadership change makes every partition it touches rewrite its leader-epoch
checkpoint, an atomic replace with two fsyncs (half a millisecond each here on an idle disk,
milliseconds on a busy one); a failover that moves hundreds of partitions would stall the
broker's loop for that long, every client and follower with it. The loop hands such writes
to this thread and goes on. They run one at a time, in the order they came.

Which writes may wait is the owner's call: ``replica.ReplicaLog`` defers only those whose
file may lag without harm (``epochs.py`` says why).
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Callable

log = logging.getLogger("tslog.broker.storage")


class BackgroundWriter:
    def __init__(self, name: str) -> None:
        self.name = name
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None  # started by the first submission
        self._closed = False

    def submit(self, task: Callable[[], None]) -> None:
        """Run ``task`` in the thread; once the writer is closed, here and now."""
        with self._lock:
            if not self._closed:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name=self.name,
                                                    daemon=True)
                    self._thread.start()
                self._queue.put(task)
                return
        _call(task)

    def close(self) -> None:
        """Run everything submitted so far, then stop the thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
        if thread is not None:
            self._queue.put(None)
            thread.join()

    def _run(self) -> None:
        while (task := self._queue.get()) is not None:
            _call(task)


def _call(task: Callable[[], None]) -> None:
    try:
        task()
    except Exception:  # the owner keeps what failed and writes it again later
        log.exception("background write failed")
