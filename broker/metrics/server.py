"""The ``/metrics`` HTTP endpoint on ``metrics_listen``, for Prometheus to scrape.

It is prometheus_client's own WSGI server in a daemon thread, serving ``REGISTRY`` (the
broker's metrics, the process/platform/GC collectors) plus a ``BrokerStateCollector`` for
this broker. A thread and not the event loop: formatting a scrape is plain CPU work that
must not be written as a coroutine, and the state it needs from the loop is handed over by
the collector with a timeout (see ``snapshot.py``). Every path answers the same exposition
text, as prometheus_client does; ``/metrics`` is the one to configure.
"""

from __future__ import annotations

import asyncio
import logging
import threading

from prometheus_client import start_http_server

from .collectors import BrokerStateCollector
from .definitions import REGISTRY

log = logging.getLogger("tslog.broker.metrics")


class MetricsServer:
    """A running exposition server; ``stop`` it before the broker closes its logs."""

    def __init__(self, broker, loop: asyncio.AbstractEventLoop, host: str, port: int) -> None:
        self._collector = BrokerStateCollector(broker, loop)
        REGISTRY.register(self._collector)
        try:
            self._httpd, self._thread = start_http_server(port, host, REGISTRY)
        except BaseException:
            REGISTRY.unregister(self._collector)
            raise
        self.host = host
        self.port = self._httpd.server_address[1]
        log.info("tslog-broker metrics on http://%s:%d/metrics",
                 f"[{host}]" if ":" in host else host, self.port)

    def stop(self) -> None:
        """Stop serving (waits for a scrape in progress) and forget this broker's collector.
        Blocks up to the server's poll interval (0.5 s): call it from a thread."""
        self._httpd.shutdown()
        self._httpd.server_close()
        thread: threading.Thread = self._thread
        thread.join(5)
        REGISTRY.unregister(self._collector)
