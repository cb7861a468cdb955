"""``EtcdProcess``: a real single-member etcd (Debian's ``/usr/bin/etcd``) on loopback ports.

Cluster tests need the same etcd the brokers use in production, not a fake: leases that
expire, watches that deliver in revision order, transactions that compare mod revisions.
Each test gets its own member on free 127.0.0.1 client and peer ports with a temporary data
directory; ``stop`` ends it by its pid. Its output goes to a log file beside the data
directory, shown by ``log_text`` when a start fails. ``start`` after ``stop`` restarts the
same member (same ports, same data), as an etcd upgrade or crash would.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

from tests.helpers.broker_process import free_port

ETCD_BINARY = os.environ.get("TSLOG_TEST_ETCD", "/usr/bin/etcd")
READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0


class EtcdProcess:
    """One etcd member. ``endpoint`` is the ``host:port`` brokers put in ``etcd_endpoints``."""

    def __init__(self, data_dir: Path, tls: tuple[str, str, str] | None = None,
                 host: str = "127.0.0.1", prefix: list[str] | None = None) -> None:
        """``tls``: (cert file, key file, CA file) = serve clients over https only and
        require a client certificate signed by the CA (``--client-cert-auth``). ``host``
        and ``prefix`` (``ip netns exec NAME``) run it as another host in fault tests."""
        self.data_dir = Path(data_dir)
        self.tls = tls
        self.prefix = list(prefix or [])
        self.host = host
        self.client_port = free_port()
        self.peer_port = free_port()
        while self.peer_port == self.client_port:
            self.peer_port = free_port()
        self.log_path = self.data_dir.parent / f"{self.data_dir.name}-etcd.log"
        self.process: subprocess.Popen | None = None
        self._log_start = 0

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.client_port}"

    def start(self) -> "EtcdProcess":
        scheme = "https" if self.tls else "http"
        client_url = f"{scheme}://{self.host}:{self.client_port}"
        peer_url = f"http://{self.host}:{self.peer_port}"
        command = [
            *self.prefix, ETCD_BINARY, "--name", "tslog-test", "--data-dir", str(self.data_dir),
            "--listen-client-urls", client_url, "--advertise-client-urls", client_url,
            "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
            "--initial-cluster", f"tslog-test={peer_url}",
            "--initial-cluster-state", "new",
            "--listen-metrics-urls", "",
        ]
        if self.tls:
            cert_file, key_file, ca_file = self.tls
            command += ["--cert-file", cert_file, "--key-file", key_file,
                        "--trusted-ca-file", ca_file, "--client-cert-auth"]
        self._log_start = len(self.log_text())  # a restart must not read the last run's lines
        log_file = open(self.log_path, "ab")
        try:
            self.process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT,
                                            env={"PATH": os.environ.get("PATH", "")})
        finally:
            log_file.close()
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        """Ready once the client port accepts and etcd logged that it serves clients."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"etcd exited with {self.process.returncode}:\n"
                                   f"{self.log_text()}")
            if ("ready to serve client requests" in self.log_text()[self._log_start:]
                    and self._accepts()):
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"etcd not ready after {READY_TIMEOUT_S} s:\n{self.log_text()}")

    def _accepts(self) -> bool:
        try:
            with socket.create_connection((self.host, self.client_port), timeout=1.0):
                return True
        except OSError:
            return False

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        """SIGTERM by pid, SIGKILL if it does not go within the timeout."""
        if not self.running:
            return
        self.process.terminate()
        try:
            self.process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(STOP_TIMEOUT_S)

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""
