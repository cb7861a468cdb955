"""``BrokerProcess``: a real ``tslog-broker`` in a subprocess, on a free loopback port.

Integration tests (the broker's and the client's) start one per test with a temporary data
directory, wait until it answers ApiVersions, and stop it at teardown. ``terminate`` sends
SIGTERM and asserts a clean exit (code 0); ``kill`` sends SIGKILL (a crash); ``restart``
starts it again on the same port and data directory; ``stop`` sends SIGTERM and returns the
exit code without asserting (``bench/`` starts its brokers with this class too, and reports an
unclean exit after its tables). The broker's output goes to a log file in the data
directory's parent, printed by ``log_text`` when a test needs to look.

``config`` takes broker settings by field name (``{"node_id": 1, "etcd_endpoints": ...}``),
passed as ``TSLOG_*`` environment variables. ``start_cluster`` starts N brokers of one
etcd-backed cluster at once (launch all, then wait for each, then until every one lists all
of them in Metadata), so a three-broker test does not pay three interpreter start-ups in a row.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

from tslog.client.errors import TslogError
from tslog.protocol.frames import FrameReceiver
from tslog.protocol.messages import (
    ApiKey,
    InvalidResponseError,
    RequestHeader,
    decode_response,
    encode_request,
)

READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0


# Ports are drawn below the kernel's ephemeral range: a port taken there by binding port 0
# and released is exactly what the kernel hands the next process that binds port 0 (Spark's
# local servers, every client's own end of a connection), so a broker started on it a moment
# later could find it taken, and its readiness probe once talked to a Spark server instead.
_PORTS = random.Random(os.getpid() ^ time.time_ns())
_LOWEST_PORT = 10_000


def _ephemeral_start() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as ports:
            return int(ports.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def free_port() -> int:
    """A port that was free a moment ago, outside the range the kernel gives port-0 binds."""
    highest = _ephemeral_start() - 1
    for _ in range(1_000):
        port = _PORTS.randint(_LOWEST_PORT, highest)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {_LOWEST_PORT}-{highest}")


def _ask(host: str, port: int, api_key: ApiKey, body: dict, timeout_s: float,
         ssl_context: ssl.SSLContext | None = None) -> dict | None:
    """One request on a fresh connection (TLS with ``ssl_context``): the response body, or
    None if none came."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as raw, \
                (ssl_context.wrap_socket(raw, server_hostname=host) if ssl_context
                 else raw) as sock:
            sock.sendall(encode_request(RequestHeader(api_key, 0, 1, "probe"), body))
            decoder = FrameReceiver()
            frames: list[bytes] = []
            while not frames:
                data = sock.recv(65536)
                if not data:
                    return None
                frames = decoder.feed(data)
            correlation_id, response = decode_response(frames[0], api_key)
            return response if correlation_id == 1 else None
    except (OSError, ValueError, InvalidResponseError):  # nothing, or not a broker, there
        return None


def probe(host: str, port: int, timeout_s: float = 1.0,
          ssl_context: ssl.SSLContext | None = None) -> bool:
    """True if a broker at host:port answers ApiVersions."""
    body = _ask(host, port, ApiKey.API_VERSIONS, {}, timeout_s, ssl_context)
    return body is not None and body["error_code"] == 0


def brokers_seen(host: str, port: int, timeout_s: float = 1.0,
                 ssl_context: ssl.SSLContext | None = None, security=None) -> int:
    """How many live brokers the broker at host:port lists in Metadata (0 if no answer).
    With ``security`` (a ``Security`` saying SASL) the probe logs in first, through the
    client's blocking socket: a SASL broker answers Metadata only after a login."""
    if security is not None and security.sasl:
        from tslog.client.blocking import BrokerSocket
        try:
            sock = BrokerSocket(host, port, timeout_s, "probe", security=security)
            try:
                body = sock.request(ApiKey.METADATA, {"topics": []})
            finally:
                sock.close()
        except (OSError, TslogError):
            return 0
        return len(body.get("brokers", ()))
    body = _ask(host, port, ApiKey.METADATA, {"topics": []}, timeout_s, ssl_context)
    return len(body.get("brokers", ())) if body is not None else 0


class BrokerProcess:
    """One broker subprocess.

    Args:
        data_dir: its data directory (created if missing).
        port: the port to listen on (default: a free one).
        env: extra environment variables (e.g. ``TSLOG_TEST_CLOCK_OFFSET_MS``).
        args: extra command-line arguments.
        config: broker settings by field name, set as ``TSLOG_<NAME>`` variables (``env``
            wins where both name the same variable).
        ssl_context: the client TLS context readiness probes use (a TLS listener).
        security: the client ``Security`` a cluster's readiness probe logs in with (SASL).
        python: the interpreter to run it with: its ``tslog`` is the broker (a benchmark
            compares another checkout's).
        host: the address to listen on (a network namespace's own address in fault tests).
        prefix: a command to run it under (``ip netns exec NAME``: another host).
    """

    def __init__(self, data_dir: Path, port: int | None = None, env: dict | None = None,
                 args: list[str] | None = None, config: dict | None = None,
                 ssl_context: ssl.SSLContext | None = None, security=None,
                 python: str = sys.executable, host: str = "127.0.0.1",
                 prefix: list[str] | None = None) -> None:
        self.python = python
        self.prefix = list(prefix or [])
        self.ssl_context = ssl_context
        self.security = security
        self.data_dir = Path(data_dir)
        self.host = host
        self.port = port or free_port()
        self.env = {f"TSLOG_{k.upper()}": str(v) for k, v in (config or {}).items()}
        self.env.update(env or {})
        self.node_id = int(self.env.get("TSLOG_NODE_ID", 0))
        self.args = list(args or [])
        self.log_path = self.data_dir.parent / f"{self.data_dir.name}-broker.log"
        self.process: subprocess.Popen | None = None

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, env: dict | None = None) -> "BrokerProcess":
        """Start and wait until it answers ApiVersions. ``env`` replaces the extra env."""
        self.launch(env)
        self._wait_ready()
        return self

    def launch(self, env: dict | None = None) -> "BrokerProcess":
        """Start the process without waiting for it (``wait_ready`` waits)."""
        if env is not None:
            self.env = dict(env)
        assert self.process is None or self.process.poll() is not None, "already running"
        environment = {k: v for k, v in os.environ.items() if not k.startswith("TSLOG_")}
        environment.update(self.env)
        command = [*self.prefix, self.python, "-m", "tslog.broker", "--data-dir", str(self.data_dir),
                   "--listen", self.bootstrap, *self.args]
        log_file = open(self.log_path, "ab")
        try:
            self.process = subprocess.Popen(command, env=environment, stdout=log_file,
                                            stderr=subprocess.STDOUT)
        finally:
            log_file.close()
        return self

    def wait_ready(self) -> "BrokerProcess":
        self._wait_ready()
        return self

    def exit_code(self, timeout_s: float = STOP_TIMEOUT_S) -> int:
        """Wait for the process to end by itself and return its exit code."""
        assert self.process is not None
        return self.process.wait(timeout_s)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"broker exited with {self.process.returncode}:\n"
                                   f"{self.log_text()}")
            if probe(self.host, self.port, ssl_context=self.ssl_context):
                return
            time.sleep(0.02)
        self.kill()
        raise RuntimeError(f"broker not ready after {READY_TIMEOUT_S} s:\n{self.log_text()}")

    def terminate(self) -> int:
        """SIGTERM, wait, and assert a clean exit (code 0)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(STOP_TIMEOUT_S)
        assert code == 0, f"broker exited with {code}:\n{self.log_text()}"
        return code

    def stop(self) -> int | None:
        """SIGTERM, wait (SIGKILL after the timeout) and return the exit code; None if it was
        never started. Asserts nothing: a benchmark prints an unclean exit after its tables."""
        process = self.process
        if process is None or process.poll() is not None:
            return None if process is None else process.returncode
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            return process.wait(STOP_TIMEOUT_S)

    def kill(self) -> None:
        """SIGKILL: the broker gets no chance to flush or leave clean-shutdown markers."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(STOP_TIMEOUT_S)

    def restart(self, *, kill: bool = False, env: dict | None = None) -> "BrokerProcess":
        """Stop (SIGTERM, or SIGKILL with ``kill``) and start again on the same port."""
        if kill:
            self.kill()
        elif self.process is not None and self.process.poll() is None:
            self.terminate()
        return self.start(env)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def cleanup(self) -> None:
        """Teardown: SIGTERM if still running (asserting exit 0), SIGKILL as a last resort."""
        if not self.running:
            return
        try:
            self.terminate()
        finally:
            self.kill()


def wait_cluster_ready(brokers: list[BrokerProcess], cluster_size: int | None = None) -> None:
    """Wait until each broker answers and its view lists every one of them (and the
    ``cluster_size`` brokers in all, when growing a running cluster): a CreateTopics with
    replication factor N counts the live brokers its own broker has seen."""
    for process in brokers:
        process.wait_ready()
    expected = len(brokers) if cluster_size is None else cluster_size
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not all(brokers_seen(p.host, p.port, ssl_context=p.ssl_context,
                               security=p.security) == expected
                  for p in brokers):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the brokers did not all see each other within "
                               f"{READY_TIMEOUT_S} s")
        time.sleep(0.02)


def start_cluster(base_dir: Path, etcd_endpoint: str, count: int, *,
                  session_timeout_ms: int = 2000, cluster_name: str = "tslog",
                  config: dict | None = None, args: list[str] | None = None,
                  ssl_context: ssl.SSLContext | None = None,
                  security=None, first_node: int = 0) -> list[BrokerProcess]:
    """Start brokers first_node..first_node+count-1 of one cluster (data in
    ``base_dir/broker-N``), all ready (a later call with ``first_node`` grows the cluster).

    ``args`` are extra command-line arguments for each (``--log-level WARNING``). On any
    failure the ones already launched are killed before the error propagates.
    """
    brokers = [
        BrokerProcess(Path(base_dir) / f"broker-{node}", args=args, config={
            "node_id": node, "etcd_endpoints": etcd_endpoint, "cluster_name": cluster_name,
            "broker_session_timeout_ms": session_timeout_ms, **(config or {})},
            ssl_context=ssl_context, security=security)
        for node in range(first_node, first_node + count)
    ]
    try:
        for process in brokers:
            process.launch()
        wait_cluster_ready(brokers, first_node + count)
    except BaseException:
        for process in brokers:
            process.kill()
        raise
    return brokers
