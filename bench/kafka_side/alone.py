"""Each broker measured alone: the other one is paused (SIGSTOP) while it runs.

Why: the broker not under measurement is not idle in the same way on both sides. An idle
Kafka 4.4 node keeps its KRaft I/O and controller threads and the JIT compilers busy (the
CPU it took during tslog's rows is in docs/kafka.md), on a machine whose cores the client's
JVM and the broker under test share; an idle tslog broker takes next to nothing. So with
both running, tslog's rows paid for Kafka's background work and Kafka's rows for almost
none of tslog's.

Both brokers stay the same processes for the whole invocation (start-up, RSS and the data
they hold are unchanged); the one not measured is stopped with SIGSTOP and continued with
SIGCONT afterwards, then probed until a partition of it answers again, so a broker that
needs a moment after waking (a KRaft node checks its own session) is not measured early.
"""

from __future__ import annotations

import contextlib
import os
import signal

from . import raw_kafka

# A reference Kafka to be paused gets a broker session longer than any pause: else its
# controller fences it on waking and it refuses work (CreateTopics) until its next heartbeat.
PAUSABLE_KAFKA = {"broker.session.timeout.ms": str(24 * 3600 * 1000)}


@contextlib.contextmanager
def alone(measured: str, pids: dict[str, int], probes: dict[str, tuple[str, str]]):
    """Pause every broker in ``pids`` but ``measured``; on the way out continue them and
    wait until each answers for its probe topic (``probes``: name -> (bootstrap, topic))."""
    paused = [name for name in pids if name != measured]
    for name in paused:
        os.kill(pids[name], signal.SIGSTOP)
    try:
        yield
    finally:
        for name in paused:
            os.kill(pids[name], signal.SIGCONT)
        for name in paused:
            bootstrap, topic = probes[name]
            with raw_kafka.connect(bootstrap) as sock:
                raw_kafka.wait_for_leader(sock, topic)
