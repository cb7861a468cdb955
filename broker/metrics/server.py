"""The ``/metrics`` HTTP endpoint on ``metrics_listen``, for Prometheus to scrape.

A small threading HTTP server in a daemon thread. A thread and not the event loop: writing
a scrape is plain CPU work that should not be cut into coroutines, and the state it needs
from the loop is handed over with a timeout (``snapshot.py``). A scrape is three parts:
prometheus_client renders ``REGISTRY`` (process, platform and GC collectors, the recovery,
connection and replication metrics), the loop-owned families render themselves, and the
snapshot of partitions and groups is written by ``collectors.py``. Every GET path answers
the same text, as prometheus_client's own server does; ``/metrics`` is the one to configure.

Security (``metrics_web_config_file``, ``web_config.py``): with TLS each accepted socket is
wrapped with the current context and its handshake runs in the request's own thread (a
slow or plaintext client holds its thread, never the accepting one); with basic-auth users
a request without matching credentials gets 401 and ``WWW-Authenticate: Basic``. Nothing
here logs a request's headers. ``reload`` re-reads the file (certificates, users) for new
connections; a broken file leaves the running settings in place.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from tslog.protocol.http_basic import basic_credentials

from .collectors import render_disk, render_snapshot
from .definitions import LOOP_FAMILIES, REGISTRY
from .snapshot import snapshot_from_thread
from .sources import ScrapeSources
from .web_config import WebConfig, WebConfigError, load_web_config

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

    def setup(self) -> None:
        super().setup()  # sets the socket's timeout, which bounds the handshake too
        if hasattr(self.request, "do_handshake"):
            self.request.do_handshake()

    def do_GET(self) -> None:  # noqa: N802 - the http.server naming
        if not self._authorized():
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="tslog"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
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

    def _authorized(self) -> bool:
        web = self.server.web
        if not web.users:
            return True
        credentials = basic_credentials(self.headers.get("Authorization"))
        return credentials is not None and web.check(*credentials)

    def log_message(self, format: str, *args) -> None:  # noqa: A002
        """Scrapes every few seconds would flood the broker's log: say nothing."""


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], sources: ScrapeSources, loop,
                 web: WebConfig) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.sources = sources
        self.loop = loop
        self.web = web  # replaced whole by reload: a request reads one consistent config
        super().__init__(address, _Handler)

    def get_request(self):
        """Accept, and wrap in TLS without handshaking yet (``_Handler.setup`` does that in
        the request's thread)."""
        sock, address = super().get_request()
        tls = self.web.tls
        if tls is not None:
            try:
                sock = tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
            except OSError:
                sock.close()
                raise
        return sock, address

    def handle_error(self, request, client_address) -> None:
        """A scraper that hangs up or times out mid-request costs one log line, not the
        traceback socketserver would print."""
        log.warning("metrics request from %s failed: %r", client_address[0], sys.exc_info()[1])


class MetricsServer:
    """A running exposition server; ``stop`` it before the broker closes its logs."""

    def __init__(self, sources: ScrapeSources, loop: asyncio.AbstractEventLoop, host: str,
                 port: int, web: WebConfig | None = None) -> None:
        web = web if web is not None else WebConfig()
        self._httpd = _HTTPServer((host, port), sources, loop, web)
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        name="tslog-metrics", daemon=True)
        self._thread.start()
        self.host = host
        self.port = self._httpd.server_address[1]
        log.info("tslog-broker metrics on %s://%s:%d/metrics%s",
                 "https" if web.tls is not None else "http",
                 f"[{host}]" if ":" in host else host, self.port,
                 " (basic auth)" if web.users else "")

    def reload(self) -> bool:
        """Re-read the web config file (new certificates, users) for the connections that
        come next; True if it was applied. A file that no longer loads is logged and the
        running settings stay: a typo during rotation must not open or close the endpoint.
        Safe to call from any thread (the broker's SIGHUP handler)."""
        path = self._httpd.web.path
        if path is None:
            return False
        try:
            web = load_web_config(path)
        except WebConfigError as exc:
            log.error("metrics web config not reloaded, keeping the running one: %s", exc)
            return False
        self._httpd.web = web
        log.info("metrics web config %s reloaded", path)
        return True

    def stop(self) -> None:
        """Stop serving and close the socket. Blocks up to the server's poll interval
        (0.5 s): call it from a thread."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)
