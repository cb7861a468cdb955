"""Redis Streams, the figure tslog is compared with: a ``redis-server`` of this benchmark's
own (no persistence, a temporary directory, a free loopback port), stopped by pid."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from tests.helpers.broker_process import free_port

from .common import HOST, READY_TIMEOUT_S, REDIS_BASE_MS, REDIS_PER_MS, STOP_TIMEOUT_S, VALUE


class Redis:
    """A ``redis-server`` on a free loopback port, no persistence; ``stop`` by pid."""

    TOOLS = ("redis-server", "redis-cli", "redis-benchmark")

    @classmethod
    def missing(cls) -> list[str]:
        missing = [tool for tool in cls.TOOLS if shutil.which(tool) is None]
        try:
            import redis  # noqa: F401
        except ImportError:
            missing.append("redis-py (pip install -e '.[bench]')")
        return missing

    def __init__(self, root: Path) -> None:
        self.dir = root / "redis"
        self.dir.mkdir()
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self.client = None

    def start(self) -> "Redis":
        import redis

        with open(self.dir / "redis.log", "ab") as log_file:
            self.process = subprocess.Popen(
                ["redis-server", "--port", str(self.port), "--bind", HOST, "--save", "",
                 "--appendonly", "no", "--dir", str(self.dir)],
                stdout=log_file, stderr=subprocess.STDOUT)
        self.client = redis.Redis(host=HOST, port=self.port)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode}")
            try:
                if self.client.ping():
                    return self
            except redis.exceptions.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self) -> None:
        if self.client is not None:
            self.client.close()
        process = self.process
        if process is not None and process.poll() is None:
            os.kill(process.pid, signal.SIGTERM)
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGKILL)
                process.wait(STOP_TIMEOUT_S)

    def benchmark(self, *args: str) -> float:
        """Requests/s that ``redis-benchmark --csv`` reports for one command."""
        output = subprocess.run(["redis-benchmark", "-h", HOST, "-p", str(self.port), "--csv",
                                 *args], capture_output=True, text=True, timeout=300, check=True)
        lines = [line for line in output.stdout.splitlines() if line.strip()]
        header = [cell.strip('"') for cell in lines[0].split('","')]
        values = [cell.strip('"') for cell in lines[-1].split('","')]
        return float(values[header.index("rps")])

    def xadd_rate(self, clients: int, requests: int, pipeline: int = 100) -> float:
        """XADD entries/s from ``redis-benchmark`` with ``clients`` connections, each with
        ``pipeline`` commands outstanding (1: no pipelining)."""
        self.client.delete("s")
        rate = self.benchmark("-c", str(clients), "-n", str(requests), "-P", str(pipeline),
                              "XADD", "s", "*", "f", VALUE.decode())
        self.client.delete("s")
        return rate

    def fill(self, key: str, entries: int) -> float:
        """XADD ``entries`` with explicit ids ``<BASE + i // 10>-<i % 10>`` via redis-cli --pipe."""
        value = b"$%d\r\n%s\r\n" % (len(VALUE), VALUE)
        head = b"*5\r\n$4\r\nXADD\r\n$%d\r\n%s\r\n" % (len(key), key.encode())
        started = time.perf_counter()
        process = subprocess.Popen(["redis-cli", "-h", HOST, "-p", str(self.port), "--pipe"],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT)
        chunk = []
        for i in range(entries):
            entry_id = b"%d-%d" % (REDIS_BASE_MS + i // REDIS_PER_MS, i % REDIS_PER_MS)
            chunk.append(b"%s$%d\r\n%s\r\n$1\r\nf\r\n%s" % (head, len(entry_id), entry_id, value))
            if len(chunk) == 10_000:
                process.stdin.write(b"".join(chunk))
                chunk = []
        process.stdin.write(b"".join(chunk))
        process.stdin.close()
        output = process.stdout.read().decode(errors="replace")
        process.wait(300)
        elapsed = time.perf_counter() - started
        if process.returncode != 0 or self.client.xlen(key) != entries:
            raise RuntimeError(f"redis fill failed: {output}")
        return elapsed

    def lookups(self, key: str, targets: list[int]) -> tuple[list[float], int]:
        xrange = self.client.xrange
        latencies, wrong = [], 0
        for target in targets:
            started = time.perf_counter_ns()
            found = xrange(key, min=str(target), max="+", count=1)
            latencies.append((time.perf_counter_ns() - started) / 1e3)
            wrong += not found or found[0][0] != b"%d-0" % target
        return latencies, wrong

    def consume(self, key: str, target: int) -> tuple[float, int]:
        """XRANGE COUNT 1000 pages from ms id ``target`` to the end, into Python."""
        xrange = self.client.xrange
        count = 0
        start = str(target)
        started = time.perf_counter()
        for _ in range(100_000):  # bounded: 10^8 entries
            page = xrange(key, min=start, max="+", count=1000)
            if not page:
                break
            count += len(page)
            start = "(" + page[-1][0].decode()
        return time.perf_counter() - started, count


def describe_redis(redis_server: Redis) -> str:
    import redis

    try:
        import hiredis  # noqa: F401
        parser_name = "hiredis"
    except ImportError:
        parser_name = "pure-Python parser"
    version = redis_server.client.info("server")["redis_version"]
    return (f"  redis-server {version} pid {redis_server.process.pid} on {HOST}:{redis_server.port} "
            f"(--save '' --appendonly no); redis-py {redis.__version__} with {parser_name}")
