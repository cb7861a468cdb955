"""The ``/metrics`` HTTP endpoint on ``metrics_listen``, for Prometheus to scrape.

A small threading HTTP server in a daemon thread. A thread and not the event loop: writing
a scrape is plain CPU work that should not be cut into coroutines, and the state it needs
from the loop is handed over with a timeout (``snapshot.py``). A scrape is three parts:
prometheus_client renders ``REGISTRY`` (process, platform and GC collectors, the recovery,
connection and replication metrics), the loop-owned families render themselves, and the
snapshot of partitions and groups is written by ``collectors.py``. Every GET path answers
the same text, as prometheus_client's own server does; ``/metrics`` is the one to configure.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from .collectors import render_disk, render_snapshot
from .definitions import LOOP_FAMILIES, REGISTRY
from .snapshot import snapshot_from_thread
from .sources import ScrapeSources

log = logging.getLogger("tslog.broker.metrics")

SNAPSHOT_TIMEOUT_S = 5.0  # under Prometheus' default scrape timeout (10 s)


def render(sources: ScrapeSources, loop: asyncio.AbstractEventLoop,
           timeout_s: float = SNAPSHOT_TIMEOUT_S) -> bytes:
    """One scrape's text. Call it off the loop (it waits for the loop's snapshot); on the
    loop's own thread the snapshot is taken directly."""
    lines = [generate_latest(REGISTRY).decode()]
    for family in LOOP_FAMILIES:
        family.render(lines)
    snapshot = snapshot_from_thread(sources, loop, timeout_s)
    if snapshot is not None:
        render_snapshot(snapshot, lines)
    render_disk(sources.data_dir, lines)
    return "".join(lines).encode()


class _Handler(BaseHTTPRequestHandler):
    server: "_HTTPServer"
    timeout = 30  # seconds a silent or slow client may hold its thread

    def do_GET(self) -> None:  # noqa: N802 - the http.server naming
        try:
            body = render(self.server.sources, self.server.loop)
        except Exception:
            log.exception("rendering /metrics failed")
            self.send_error(500)
            return
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE_LATEST)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args) -> None:  # noqa: A002
        """Scrapes every few seconds would flood the broker's log: say nothing."""


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], sources: ScrapeSources, loop) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.sources = sources
        self.loop = loop
        super().__init__(address, _Handler)

    def handle_error(self, request, client_address) -> None:
        """A scraper that hangs up or times out mid-request costs one log line, not the
        traceback socketserver would print."""
        log.warning("metrics request from %s failed: %r", client_address[0], sys.exc_info()[1])


class MetricsServer:
    """A running exposition server; ``stop`` it before the broker closes its logs."""

    def __init__(self, sources: ScrapeSources, loop: asyncio.AbstractEventLoop, host: str,
                 port: int) -> None:
        self._httpd = _HTTPServer((host, port), sources, loop)
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        name="tslog-metrics", daemon=True)
        self._thread.start()
        self.host = host
        self.port = self._httpd.server_address[1]
        log.info("tslog-broker metrics on http://%s:%d/metrics",
                 f"[{host}]" if ":" in host else host, self.port)

    def stop(self) -> None:
        """Stop serving and close the socket. Blocks up to the server's poll interval
        (0.5 s): call it from a thread."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)
