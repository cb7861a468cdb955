"""Broker benchmark over loopback: produce, consume, lookup by time, against Redis Streams.

Starts its own ``tslog-broker`` (temporary data directory, a free 127.0.0.1 port) and, unless
``--no-redis``, its own ``redis-server`` (no persistence, temporary directory, a free port);
stops both by pid with SIGTERM at the end, also on error. Prints tables of medians over
several runs with min-max and the ratio tslog/Redis measured in the same invocation; the
targets are printed beside the figures, never asserted.

    python bench/broker.py              # the full run (about 3-5 minutes on 2 cores)
    python bench/broker.py --quick      # a smoke run with small sizes (under a minute)
    python bench/broker.py --large      # the lookup/consume partition holds 10^7 records
    python bench/broker.py --runs 3 --no-redis

Redis rows need ``redis-server``, ``redis-cli`` and ``redis-benchmark`` (Debian:
``apt-get install redis-server redis-tools``) and redis-py (``pip install -e '.[bench]'``);
without them the Redis rows are skipped with a message.

Numbers on a noisy 2-core VM vary by +-30 %: the broker, the benchmark client and Redis share
the two cores. Compare ratios within one invocation.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import msgpack

from tslog.protocol.batch_header import parse_header, peek_length
from tslog.protocol.frames import FrameDecoder
from tslog.protocol.messages import ApiKey, RequestHeader, encode_request, split_response
from tslog.protocol.records import build_batch

VALUE = b"v" * 100
BATCH_RECORDS = 1000
RECORD_OVERHEAD_BYTES = 16  # the client accumulator's per-record accounting (see _accumulator)
HOST = "127.0.0.1"
STOP_TIMEOUT_S = 30.0
READY_TIMEOUT_S = 30.0
REDIS_BASE_MS = 1_700_000_000_000
REDIS_PER_MS = 10  # entries per millisecond id in the filled Redis stream


# ------------------------------------------------------------------------------- helpers


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def median(values):
    return statistics.median(values)


def spread(values, scale=1.0, digits=0) -> str:
    """``median (min-max)``, each scaled."""
    if not values:
        return "-"
    form = f"{{:,.{digits}f}}"
    return (f"{form.format(median(values) * scale)} "
            f"({form.format(min(values) * scale)}-{form.format(max(values) * scale)})")


def percentile(sorted_values, fraction):
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * fraction))]


def print_table(title: str, header: list[str], rows: list[list[str]], notes=()) -> None:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    print(f"\n{title}")
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print("| " + " | ".join(str(c).rjust(w) for c, w in zip(row, widths)) + " |")
    for note in notes:
        print(f"  {note}")
    sys.stdout.flush()


def ratio(a, b, digits=2) -> str:
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.{digits}f}x"


def verdict(ok: bool | None) -> str:
    return "-" if ok is None else ("met" if ok else "NOT met")


# ----------------------------------------------------------------------- tslog processes


def broker_command() -> list[str]:
    script = Path(sys.executable).parent / "tslog-broker"
    if script.exists():
        return [str(script)]
    found = shutil.which("tslog-broker")
    return [found] if found else [sys.executable, "-m", "tslog.broker"]


class Broker:
    """One ``tslog-broker`` subprocess on a free loopback port; ``stop`` sends SIGTERM by pid."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env: dict[str, str] = {}  # extra TSLOG_* settings (a cluster member's)
        self.data_dir = root / "broker-data"
        self.log_path = root / "broker.log"
        self.port = free_port()
        self.metrics_port = free_port()  # /metrics, scraped only by section_scrape
        self.process: subprocess.Popen | None = None

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    def start(self) -> "Broker":
        environment = {k: v for k, v in os.environ.items() if not k.startswith("TSLOG_")}
        environment.update(self.env)
        command = broker_command() + ["--data-dir", str(self.data_dir),
                                      "--listen", self.bootstrap, "--log-level", "WARNING",
                                      "--metrics-listen", f"{HOST}:{self.metrics_port}"]
        with open(self.log_path, "ab") as log_file:
            self.process = subprocess.Popen(command, env=environment, stdout=log_file,
                                            stderr=subprocess.STDOUT)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"tslog-broker exited with {self.process.returncode}:\n"
                                   f"{self.log_text()}")
            try:
                with Raw(self.port, timeout_s=1.0) as raw:
                    if raw.request(ApiKey.API_VERSIONS, {})["error_code"] == 0:
                        return self
            except (OSError, ValueError):
                time.sleep(0.05)
        raise RuntimeError(f"tslog-broker not ready after {READY_TIMEOUT_S} s:\n{self.log_text()}")

    def stop(self) -> int | None:
        process = self.process
        if process is None or process.poll() is not None:
            return None if process is None else process.returncode
        os.kill(process.pid, signal.SIGTERM)
        try:
            return process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            return process.wait(STOP_TIMEOUT_S)

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


class Raw:
    """A blocking raw-socket connection speaking the wire protocol (no tslog.client)."""

    def __init__(self, port: int, timeout_s: float = 30.0) -> None:
        self.sock = socket.create_connection((HOST, port), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.decoder = FrameDecoder(1 << 30)
        self.frames: list[bytes] = []
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "Raw":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def encode(self, api_key: int, body: dict, validate: bool = False) -> bytes:
        self.correlation_id = (self.correlation_id + 1) & 0x7FFFFFFF
        return encode_request(RequestHeader(api_key, 0, self.correlation_id, "bench"), body,
                              validate=validate)

    def read_frame(self) -> bytes:
        while not self.frames:
            # 64 KiB: recv(n) allocates n bytes first; a 1 MiB recv costs ~20 us per call here.
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("broker closed the connection")
            self.frames.extend(self.decoder.feed(data))
        return self.frames.pop(0)

    def read_body(self) -> dict:
        return split_response(self.read_frame())[1]

    def request(self, api_key: int, body: dict) -> dict:
        self.sock.sendall(self.encode(api_key, body, validate=True))
        return self.read_body()

    def create_topic(self, topic: str) -> None:
        body = self.request(ApiKey.CREATE_TOPICS, {"topics": [
            {"topic": topic, "partitions": 1, "replication_factor": 1, "configs": {}}],
            "timeout_ms": 10_000})
        code = body["topics"][0]["error_code"]
        if code:
            raise RuntimeError(f"create topic {topic}: error {code}")

    def delete_topic(self, topic: str) -> None:
        self.request(ApiKey.DELETE_TOPICS, {"topics": [topic], "timeout_ms": 10_000})

    def list_offset(self, topic: str, timestamp: int) -> dict:
        body = self.request(ApiKey.LIST_OFFSETS, {
            "replica_id": -1, "timestamp_type": "append",
            "topics": [{"topic": topic, "partitions": [{"partition": 0, "timestamp": timestamp}]}]})
        return body["topics"][0]["partitions"][0]


def produce_body(topic: str, batch: bytes, acks: int) -> dict:
    return {"acks": acks, "timeout_ms": 30_000,
            "topics": [{"topic": topic, "partitions": [{"partition": 0, "records": batch}]}]}


def produce_raw(port: int, topic: str, batches: int, acks: int, window: int,
                batch: bytes | None = None) -> tuple[float, list[int]]:
    """Pipelined Produce of ``batches`` copies of one pre-built batch, ``window`` in flight.

    Frames are encoded before the clock starts (the broker's capacity, not the client's).
    Returns (seconds, LogAppendTime of every batch in order).
    """
    if batch is None:
        batch = build_batch([VALUE] * BATCH_RECORDS, create_times=int(time.time() * 1000))
    with Raw(port) as raw:
        frames = [raw.encode(ApiKey.PRODUCE, produce_body(topic, batch, acks))
                  for _ in range(batches)]
        sendall = raw.sock.sendall
        times = []
        sent = answered = 0
        started = time.perf_counter()
        while sent < min(window, batches):
            sendall(frames[sent])
            sent += 1
        while answered < batches:
            part = raw.read_body()["topics"][0]["partitions"][0]
            if part["error_code"]:
                raise RuntimeError(f"produce to {topic} failed: error {part['error_code']}")
            times.append(part["log_append_time"])
            answered += 1
            if sent < batches:
                sendall(frames[sent])
                sent += 1
        elapsed = time.perf_counter() - started
    return elapsed, times


def produce_client(bootstrap: str, topic: str, records: int, acks) -> float:
    """``tslog.client.Producer``: ``records`` x send(100-byte bytes) then flush(); seconds."""
    from tslog.client import Producer

    with Producer(bootstrap, acks=acks, linger_ms=5,
                  batch_size=BATCH_RECORDS * (len(VALUE) + RECORD_OVERHEAD_BYTES)) as producer:
        producer.partitions_for(topic)  # metadata loaded before the clock starts
        send = producer.send
        started = time.perf_counter()
        for _ in range(records):
            future = send(topic, VALUE, partition=0)
        producer.flush()
        elapsed = time.perf_counter() - started
        future.get(30)  # the last record was acknowledged (raises if it failed)
    return elapsed


def produce_client_batches(bootstrap: str, topic: str, records: int, acks) -> float:
    """``Producer.send_batch`` of ``BATCH_RECORDS`` values per call, then flush(); seconds."""
    from tslog.client import Producer

    values = [VALUE] * BATCH_RECORDS
    with Producer(bootstrap, acks=acks, linger_ms=5,
                  batch_size=BATCH_RECORDS * (len(VALUE) + RECORD_OVERHEAD_BYTES)) as producer:
        producer.partitions_for(topic)
        send_batch = producer.send_batch
        started = time.perf_counter()
        for _ in range(records // BATCH_RECORDS):
            future = send_batch(topic, values, partition=0)
        producer.flush()
        elapsed = time.perf_counter() - started
        future.get(30)
    return elapsed


# ----------------------------------------------------------------------------- tslog rows


def bench_produce(broker: Broker, runs: int, batches: int, client_records: int,
                  window: int) -> dict:
    """{(path, acks): [records/s per run]}; each run writes to a fresh topic."""
    results: dict = {}
    with Raw(broker.port) as admin:
        admin.create_topic("warmup")
        produce_raw(broker.port, "warmup", max(5, batches // 10), 1, window)
        admin.delete_topic("warmup")
        for run in range(runs):
            for acks in (1, -1):
                name = "all" if acks == -1 else "1"
                topic = f"raw-acks{name}-{run}"
                admin.create_topic(topic)
                elapsed, _ = produce_raw(broker.port, topic, batches, acks, window)
                results.setdefault(("raw", acks), []).append(batches * BATCH_RECORDS / elapsed)
                admin.delete_topic(topic)
                topic = f"client-acks{name}-{run}"
                admin.create_topic(topic)
                elapsed = produce_client(broker.bootstrap, topic, client_records,
                                         "all" if acks == -1 else 1)
                results.setdefault(("client", acks), []).append(client_records / elapsed)
                admin.delete_topic(topic)
                topic = f"batch-acks{name}-{run}"
                admin.create_topic(topic)
                elapsed = produce_client_batches(broker.bootstrap, topic, client_records,
                                                 "all" if acks == -1 else 1)
                results.setdefault(("batch", acks), []).append(client_records / elapsed)
                admin.delete_topic(topic)
    return results


def fill_partition(broker: Broker, topic: str, records: int, window: int) -> list[int]:
    """Append ``records`` records (batches of 1000); return each batch's LogAppendTime."""
    with Raw(broker.port) as admin:
        admin.create_topic(topic)
    batch = build_batch([VALUE] * BATCH_RECORDS, create_times=int(time.time() * 1000))
    append_times: list[int] = []
    remaining = records // BATCH_RECORDS
    while remaining:
        chunk = min(remaining, 500)  # bounded memory for the pre-encoded frames
        _, times = produce_raw(broker.port, topic, chunk, 1, window, batch)
        append_times += times
        remaining -= chunk
    return append_times


def consume_client(bootstrap: str, topic: str, timestamp: int, end_offset: int,
                   batches: bool = False) -> tuple[float, int]:
    """seek_to_timestamp then poll (or poll_batches) until the end; (seconds, records)."""
    from tslog.client import Consumer, TopicPartition

    tp = TopicPartition(topic, 0)
    with Consumer(bootstrap, group_id=None, auto_offset_reset="earliest") as consumer:
        consumer.assign([tp])
        started = time.perf_counter()
        consumer.seek_to_timestamp(timestamp)
        count = 0
        last = None
        deadline = started + 120
        while time.perf_counter() < deadline:
            if batches:  # columns: the last offset and value length read from the last batch
                got = consumer.poll_batches(timeout_ms=2000)
                if not got:
                    break
                count += sum(b.columns.record_count - b.start for b in got)
                columns = got[-1].columns
                last = (columns.base_offset + columns.record_count - 1,
                        int(columns.value_offsets[-1] - columns.value_offsets[-2]))
            else:
                records = consumer.poll(timeout_ms=2000)
                if not records:
                    break
                count += len(records)
                last = (records[-1].offset, len(records[-1].value))
            if last[0] + 1 >= end_offset:
                break
        elapsed = time.perf_counter() - started
    if last is None or last[0] + 1 != end_offset or last[1] != len(VALUE):
        raise RuntimeError(f"consumer stopped at {last and last[0]} of {end_offset}")
    return elapsed, count


def fetch_raw(port: int, topic: str, offset: int, end_offset: int, max_bytes: int
              ) -> tuple[float, int, int]:
    """Fetch loop (one request in flight) from ``offset`` to the end; records not decoded.

    Returns (seconds, record bytes, records)."""
    total_bytes = 0
    start_offset = offset
    with Raw(port) as raw:
        sock = raw.sock
        prefix = bytearray(4)
        buffer = memoryview(bytearray(max_bytes + (1 << 20)))  # reused: no per-fetch allocation
        started = time.perf_counter()
        while offset < end_offset:
            sock.sendall(raw.encode(ApiKey.FETCH, {
                "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": max_bytes,
                "topics": [{"topic": topic, "partitions": [
                    {"partition": 0, "fetch_offset": offset, "max_bytes": max_bytes}]}]}))
            _recv_exact(sock, memoryview(prefix))
            size = int.from_bytes(prefix, "big")
            if size > len(buffer):
                buffer = memoryview(bytearray(size))
            frame = buffer[:size]
            _recv_exact(sock, frame)
            _, body = msgpack.unpackb(frame, raw=False)
            part = body["topics"][0]["partitions"][0]
            if part["error_code"]:
                raise RuntimeError(f"fetch failed: error {part['error_code']}")
            records = part["records"]
            if not records:
                raise RuntimeError(f"empty fetch at {offset} of {end_offset}")
            position, last = 0, 0
            while position < len(records):  # batch headers only, ~10 per MiB
                last = position
                position += peek_length(records, position)
            header = parse_header(records, last)
            offset = header.base_offset + header.record_count
            total_bytes += len(records)
        elapsed = time.perf_counter() - started
    return elapsed, total_bytes, offset - start_offset


def _recv_exact(sock: socket.socket, view: memoryview) -> None:
    while len(view):
        got = sock.recv_into(view)
        if not got:
            raise ConnectionError("broker closed the connection")
        view = view[got:]


class RawLookups:
    """ListOffsets round trips, one at a time on one raw blocking connection."""

    name = "raw socket loop: encode ListOffsets, sendall, recv, msgpack decode"

    def __init__(self, port: int, topic: str) -> None:
        self.raw = Raw(port)
        self.topic = topic

    def run(self, targets: list[int]) -> tuple[list[float], int]:
        """(microseconds per lookup, wrong answers)."""
        raw, topic = self.raw, self.topic
        sendall = raw.sock.sendall
        latencies, wrong = [], 0
        for target in targets:
            body = {"replica_id": -1, "timestamp_type": "append", "topics": [
                {"topic": topic, "partitions": [{"partition": 0, "timestamp": target}]}]}
            started = time.perf_counter_ns()
            sendall(raw.encode(ApiKey.LIST_OFFSETS, body))
            part = raw.read_body()["topics"][0]["partitions"][0]
            latencies.append((time.perf_counter_ns() - started) / 1e3)
            wrong += part["error_code"] != 0 or part["offset"] < 0 or part["timestamp"] < target
        return latencies, wrong

    def close(self) -> None:
        self.raw.close()


class SyncClientLookups:
    """``Consumer.offsets_for_times``: the blocking facade answers a lookup on the caller's
    thread over a blocking socket of its own (``client/_direct.py``)."""

    name = "Consumer.offsets_for_times (sync facade, on the caller's thread)"

    def __init__(self, bootstrap: str, topic: str, lookup_poll_us: int | None = None) -> None:
        from tslog.client import Consumer, TopicPartition

        self.tp = TopicPartition(topic, 0)
        options = {} if lookup_poll_us is None else {"lookup_poll_us": lookup_poll_us}
        if lookup_poll_us is not None:
            self.name = f"{self.name}, lookup_poll_us={lookup_poll_us}"
        self.consumer = Consumer(bootstrap, group_id=None, **options)
        self.consumer.assign([self.tp])
        self.consumer.offsets_for_times({self.tp: 0})  # connected before the clock

    def run(self, targets: list[int]) -> tuple[list[float], int]:
        tp, lookup = self.tp, self.consumer.offsets_for_times
        latencies, wrong = [], 0
        for target in targets:
            started = time.perf_counter_ns()
            found = lookup({tp: target})[tp]
            latencies.append((time.perf_counter_ns() - started) / 1e3)
            wrong += found is None or found.timestamp < target
        return latencies, wrong

    def close(self) -> None:
        self.consumer.close()


class AsyncClientLookups:
    """``AsyncConsumer.offsets_for_times`` awaited in the caller's own event loop (uvloop)."""

    name = "AsyncConsumer.offsets_for_times awaited in the caller's uvloop"

    def __init__(self, bootstrap: str, topic: str) -> None:
        from tslog.client import TopicPartition
        from tslog.client.aio import AsyncConsumer

        try:
            import uvloop
            factory = uvloop.new_event_loop
        except ImportError:
            factory = None
        self.runner = asyncio.Runner(loop_factory=factory)
        self.tp = TopicPartition(topic, 0)

        async def open_consumer():
            consumer = AsyncConsumer(bootstrap, group_id=None)
            await consumer.start()
            consumer.assign([self.tp])
            await consumer.offsets_for_times({self.tp: 0})
            return consumer

        self.consumer = self.runner.run(open_consumer())

    def run(self, targets: list[int]) -> tuple[list[float], int]:
        tp, lookup = self.tp, self.consumer.offsets_for_times

        async def lookups():
            latencies, wrong = [], 0
            for target in targets:
                started = time.perf_counter_ns()
                found = (await lookup({tp: target}))[tp]
                latencies.append((time.perf_counter_ns() - started) / 1e3)
                wrong += found is None or found.timestamp < target
            return latencies, wrong

        return self.runner.run(lookups())

    def close(self) -> None:
        try:
            self.runner.run(self.consumer.close())
        finally:
            self.runner.close()


ECHO_SERVER = r"""
import asyncio, struct, sys
try:
    import uvloop
    new_loop = uvloop.new_event_loop
except ImportError:
    new_loop = asyncio.new_event_loop
class Echo(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport, self.buffer = transport, bytearray()
    def data_received(self, data):
        self.buffer += data
        frames = []
        while len(self.buffer) >= 4:
            end = 4 + struct.unpack_from(">I", self.buffer)[0]
            if len(self.buffer) < end:
                break
            frames.append(bytes(self.buffer[:end]))
            del self.buffer[:end]
        if frames:
            self.transport.writelines(frames)
async def main():
    server = await asyncio.get_running_loop().create_server(Echo, "127.0.0.1", int(sys.argv[1]))
    print("ready", flush=True)
    await server.serve_forever()
with asyncio.Runner(loop_factory=new_loop) as runner:
    runner.run(main())
"""


class EchoFloor:
    """Round trips of a ListOffsets-sized frame to a minimal uvloop echo server: the floor
    this machine puts under any Python request/response server (started by pid, stopped by pid)."""

    def __init__(self, request: bytes) -> None:
        self.name = (f"floor: the same {len(request)}-byte frame echoed by a minimal uvloop "
                     "Protocol server")
        self.request = request
        port = free_port()
        self.process = subprocess.Popen([sys.executable, "-c", ECHO_SERVER, str(port)],
                                        stdout=subprocess.PIPE)
        self.sock = None
        if self.process.stdout.readline().strip() != b"ready":
            self.close()
            raise RuntimeError("echo server did not start")
        self.sock = socket.create_connection((HOST, port), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.decoder = FrameDecoder()

    def run(self, targets: list[int]) -> tuple[list[float], int]:
        sock, decoder, request = self.sock, self.decoder, self.request
        latencies = []
        for _ in targets:
            started = time.perf_counter_ns()
            sock.sendall(request)
            frames = []
            while not frames:
                frames = decoder.feed(sock.recv(65536))
            latencies.append((time.perf_counter_ns() - started) / 1e3)
        return latencies, 0

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            self.process.wait(STOP_TIMEOUT_S)


# ---------------------------------------------------------------------------------- Redis


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

    def xadd_rate(self, clients: int, requests: int) -> float:
        self.client.delete("s")
        rate = self.benchmark("-c", str(clients), "-n", str(requests), "-P", "100",
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


# ------------------------------------------------------------------------------------ main


def lookup_stats(latency_runs: list[list[float]]) -> tuple[list, list, list]:
    p50s, p99s, p999s = [], [], []
    for latencies in latency_runs:
        latencies = sorted(latencies)
        p50s.append(percentile(latencies, 0.5))
        p99s.append(percentile(latencies, 0.99))
        p999s.append(percentile(latencies, 0.999))
    return p50s, p99s, p999s


@dataclass
class Setup:
    """What every section needs: the servers, the sizes, the partition under test."""

    broker: Broker
    redis: Redis | None
    runs: int
    produce_batches: int
    client_records: int
    partition_records: int
    lookups: int
    xadd_requests: int
    window: int = 8
    topic: str = "timeline"
    append_times: list[int] = field(default_factory=list)  # LAT of each batch of `topic`


def section_produce(setup: Setup) -> None:
    produced = bench_produce(setup.broker, setup.runs, setup.produce_batches,
                             setup.client_records, setup.window)
    xadd = {}
    if setup.redis is not None:
        for clients in (1, 50):
            xadd[clients] = [setup.redis.xadd_rate(clients, setup.xadd_requests)
                             for _ in range(setup.runs)]
    redis_c1 = median(xadd[1]) if xadd else None
    labels = {
        ("raw", 1): f"pre-encoded batches, raw socket, {setup.window} in flight (broker capacity)",
        ("client", 1): "tslog.client.Producer: send() x N + flush()",
        ("batch", 1): f"tslog.client.Producer: send_batch({BATCH_RECORDS} values) x N/"
                      f"{BATCH_RECORDS} + flush()",
        ("batch", -1): f"tslog.client.Producer(acks='all'): send_batch({BATCH_RECORDS} "
                       f"values) x N/{BATCH_RECORDS} + flush()",
        ("raw", -1): f"pre-encoded batches, raw socket, {setup.window} in flight",
        ("client", -1): "tslog.client.Producer(acks='all'): send() x N + flush()",
    }
    rows = []
    for acks in (1, -1):
        for path in ("raw", "client", "batch"):
            rates = produced[(path, acks)]
            rate = median(rates)
            if path == "client":  # not batches of 1000: the targets are for those
                target, ok = "- (one record per call)", None
            elif acks == 1:
                target = "3x Redis c=1 and >= 1M"
                ok = rate >= 1e6 and (redis_c1 is None or rate >= 3 * redis_c1)
            else:
                target = ">= 0.5M"
                ok = rate >= 0.5e6
            rows.append(["1" if acks == 1 else "all (fsync, group commit)", labels[(path, acks)],
                         spread(rates), spread(rates, len(VALUE) / 1e6),
                         spread(rates, (len(VALUE) + 12) / 1e6), target, verdict(ok),
                         ratio(rate, redis_c1)])
    for clients, rates in xadd.items():
        rate = median(rates)
        rows.append(["-", f"Redis XADD, redis-benchmark -c {clients} -P 100 (no AOF)",
                     spread(rates), spread(rates, len(VALUE) / 1e6), "-", "-", "-",
                     ratio(rate, redis_c1)])
    print_table(
        f"Produce, one producer, one partition ({setup.produce_batches:,} batches raw / "
        f"{setup.client_records:,} records via the client per run)",
        ["acks", "path", "records/s (min-max)", "value MB/s", "batch MB/s", "target",
         "target?", "tslog/Redis XADD c=1"],
        rows,
        notes=["value MB/s counts the 100-byte values only; batch MB/s the ~112 bytes a "
               "record takes in a batch.",
               "the targets are for batches of 1000 (the raw and send_batch rows); send() "
               "hands the client one record per call, so its rows measure the client's Python "
               "work per record (about 1 us) and carry no target.",
               "Redis XADD (redis-benchmark, C client, 100 commands pipelined) is Redis' "
               "best case, in memory without persistence; the acks=all rows compare "
               "against the same figure."])


def section_fill(setup: Setup) -> None:
    """The partition (and Redis stream 't') that the consume and lookup sections read."""
    started = time.perf_counter()
    setup.append_times = fill_partition(setup.broker, setup.topic, setup.partition_records,
                                        setup.window)
    fill_s = time.perf_counter() - started
    with Raw(setup.broker.port) as raw:
        end_offset = raw.list_offset(setup.topic, -1)["offset"]
    if end_offset != setup.partition_records:
        raise RuntimeError(f"partition holds {end_offset} records, not {setup.partition_records}")
    line = (f"\n  lookup/consume partition: {setup.partition_records:,} records in "
            f"{len(setup.append_times):,} batches, LogAppendTime span "
            f"{setup.append_times[-1] - setup.append_times[0]:,} ms, filled in {fill_s:.1f} s")
    if setup.redis is not None:
        redis_fill_s = setup.redis.fill("t", setup.partition_records)
        line += (f"; Redis stream 't': {setup.partition_records:,} entries, ids "
                 f"<ms>-0..{REDIS_PER_MS - 1} over {setup.partition_records // REDIS_PER_MS:,} "
                 f"ms, filled with redis-cli --pipe in {redis_fill_s:.1f} s")
    print(line)


def section_consume(setup: Setup) -> None:
    # the newest half of the partition, at most 10^6 records (so --large stays bounded)
    consume_records = min(setup.partition_records // 2, 10**6)
    times = setup.append_times
    consume_from = times[len(times) - consume_records // BATCH_RECORDS]
    with Raw(setup.broker.port) as raw:
        end_offset = raw.list_offset(setup.topic, -1)["offset"]
        first_offset = raw.list_offset(setup.topic, consume_from)["offset"]
    consume_rates, column_rates, fetch_rates = [], [], {}
    for _ in range(setup.runs):
        elapsed, count = consume_client(setup.broker.bootstrap, setup.topic, consume_from,
                                        end_offset)
        consume_rates.append(count / elapsed)
        elapsed, count = consume_client(setup.broker.bootstrap, setup.topic, consume_from,
                                        end_offset, batches=True)
        column_rates.append(count / elapsed)
    for max_bytes in (1 << 20, 8 << 20):
        for _ in range(setup.runs):
            elapsed, nbytes, count = fetch_raw(setup.broker.port, setup.topic, first_offset,
                                               end_offset, max_bytes)
            fetch_rates.setdefault(max_bytes, []).append((nbytes / elapsed, count / elapsed))
    redis_consume, redis_c_read = [], []
    if setup.redis is not None:
        redis_from = REDIS_BASE_MS + (setup.partition_records - consume_records) // REDIS_PER_MS
        for _ in range(setup.runs):
            elapsed, count = setup.redis.consume("t", redis_from)
            redis_consume.append(count / elapsed)
        for _ in range(setup.runs):
            rps = setup.redis.benchmark("-c", "1", "-n", str(max(200, setup.lookups // 10)),
                                        "XRANGE", "t", str(redis_from), "+", "COUNT", "1000")
            redis_c_read.append(rps * 1000)
    redis_py = median(redis_consume) if redis_consume else None
    redis_c = median(redis_c_read) if redis_c_read else None
    rate = median(consume_rates)
    rows = [["tslog.client.Consumer: seek_to_timestamp + poll to the end, records decoded",
             spread(consume_rates), spread(consume_rates, len(VALUE) / 1e6), ">= 1M",
             verdict(rate >= 1e6), ratio(rate, redis_py)],
            ["tslog.client.Consumer: seek_to_timestamp + poll_batches (columns, no object "
             "per record)", spread(column_rates), spread(column_rates, len(VALUE) / 1e6), "-",
             "-", ratio(median(column_rates), redis_py)]]
    for max_bytes, pairs in fetch_rates.items():
        mbs = [pair[0] / 1e6 for pair in pairs]
        recs = [pair[1] for pair in pairs]
        rows.append([f"raw Fetch loop, max_bytes {max_bytes >> 20} MiB, 1 in flight, not decoded",
                     spread(recs), spread(mbs), ">= 500 MB/s", verdict(median(mbs) >= 500),
                     ratio(median(recs), redis_c)])
    if setup.redis is not None:
        rows.append(["Redis XRANGE COUNT 1000 pages via redis-py (+hiredis), into Python",
                     spread(redis_consume), spread(redis_consume, len(VALUE) / 1e6), "-", "-",
                     "1.00x"])
        rows.append(["Redis XRANGE COUNT 1000, redis-benchmark -c 1 (C client)",
                     spread(redis_c_read), spread(redis_c_read, len(VALUE) / 1e6), "-", "-",
                     "-"])
    print_table(
        f"Consume from a timestamp to the end (about {end_offset - first_offset:,} records, "
        "page cache warm)",
        ["path", "records/s (min-max)", "MB/s", "target", "target?", "tslog/Redis"],
        rows,
        notes=["MB/s: values for decoded rows, whole record bytes for the raw Fetch rows.",
               "tslog/Redis: decoded row vs Redis via redis-py; raw Fetch rows vs "
               "redis-benchmark XRANGE COUNT 1000 (both without Python objects per record)."])


def section_lookups(setup: Setup) -> None:
    """The paths take turns in chunks, so bursts of other load on the machine hit all alike."""
    first_lat, last_lat = setup.append_times[0], setup.append_times[-1]
    redis_span = setup.partition_records // REDIS_PER_MS
    rng = random.Random(42)
    with Raw(setup.broker.port) as raw:
        sample_request = raw.encode(ApiKey.LIST_OFFSETS, {
            "replica_id": -1, "timestamp_type": "append", "topics": [
                {"topic": setup.topic, "partitions": [{"partition": 0, "timestamp": first_lat}]}]})
    chunk = max(100, setup.lookups // 10)
    lookers = []
    results: dict = {}
    try:
        lookers.append(RawLookups(setup.broker.port, setup.topic))
        lookers.append(AsyncClientLookups(setup.broker.bootstrap, setup.topic))
        lookers.append(SyncClientLookups(setup.broker.bootstrap, setup.topic))
        lookers.append(SyncClientLookups(setup.broker.bootstrap, setup.topic, lookup_poll_us=0))
        lookers.append(EchoFloor(sample_request))
        for _ in range(setup.runs):
            run_latencies: dict = {}
            for _ in range(max(1, setup.lookups // chunk)):
                targets = [rng.randint(first_lat, last_lat) for _ in range(chunk)]
                for looker in lookers:
                    latencies, wrong = looker.run(targets)
                    if wrong:
                        raise RuntimeError(f"{looker.name}: {wrong} wrong lookup answers")
                    run_latencies.setdefault(looker.name, []).extend(latencies)
                if setup.redis is not None:
                    latencies, wrong = setup.redis.lookups("t", [
                        rng.randint(REDIS_BASE_MS, REDIS_BASE_MS + redis_span - 1)
                        for _ in range(chunk)])
                    if wrong:
                        raise RuntimeError(f"Redis XRANGE: {wrong} wrong lookup answers")
                    run_latencies.setdefault("redis", []).extend(latencies)
            for name, latencies in run_latencies.items():
                results.setdefault(name, []).append(latencies)
    finally:
        for looker in lookers:
            looker.close()
    redis_p99 = median(lookup_stats(results["redis"])[1]) if setup.redis is not None else None
    rows = []
    for looker in lookers:
        p50s, p99s, p999s = lookup_stats(results[looker.name])
        p99 = median(p99s)
        if isinstance(looker, EchoFloor):
            target, ok = "-", None
        else:
            target = "<= 250 us and <= Redis p99"
            ok = p99 <= 250 and (redis_p99 is None or p99 <= redis_p99)
        rows.append([looker.name, spread(p50s), spread(p99s), spread(p999s), target,
                     verdict(ok), ratio(p99, redis_p99)])
    if setup.redis is not None:
        p50s, p99s, p999s = lookup_stats(results["redis"])
        rows.append(["Redis XRANGE <ms-id> + COUNT 1 via redis-py (+hiredis)",
                     spread(p50s), spread(p99s), spread(p999s), "-", "-", "1.00x"])
    print_table(
        f"Lookup by time: ListOffsets round trip on a partition of {setup.partition_records:,} "
        f"records ({setup.lookups:,} random timestamps per run, one connection, us)",
        ["path", "p50 us", "p99 us (min-max)", "p99.9 us", "target", "target?",
         "p99 tslog/Redis (lower is better)"],
        rows,
        notes=["every answer is checked (offset found, its time >= the target); Redis "
               "answers must be <ms>-0.",
               f"the paths take turns in chunks of {chunk:,} lookups; the raw loop and the "
               "floor use a blocking socket in this process, the client rows the tslog "
               "client's own connection.",
               "the client rows poll for their answer for up to lookup_poll_us (default 100 "
               "us) instead of sleeping in recv, as redis-py, the raw loop and the floor do; "
               "the row with lookup_poll_us=0 shows the client sleeping."])


# ------------------------------------------------------------------------ metrics scraping

SCRAPER = r"""
import signal, sys, time, urllib.request
url, interval, stop = sys.argv[1], float(sys.argv[2]), []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
durations, began = [], time.monotonic()
next_at = began
while not stop:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=5) as response:
        size = len(response.read())
    durations.append(time.perf_counter() - started)
    if len(durations) == 1:
        print("ready", flush=True)
    next_at += interval
    time.sleep(max(0.0, next_at - time.monotonic()))
durations.sort()
print(len(durations) / (time.monotonic() - began), durations[len(durations) // 2], size, flush=True)
"""


class Scraper:
    """A Prometheus-speed scraper in its own process (as Prometheus is): GET /metrics every
    ``interval_s``; stopped by pid with SIGTERM, it reports scrapes/s, median ms and bytes."""

    def __init__(self, port: int, interval_s: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", SCRAPER, f"http://{HOST}:{port}/metrics", str(interval_s)],
            stdout=subprocess.PIPE, text=True)
        if self.process.stdout.readline().strip() != "ready":
            self.process.kill()
            raise RuntimeError("the /metrics scraper did not start")

    def stop(self) -> tuple[float, float, int]:
        os.kill(self.process.pid, signal.SIGTERM)
        out, _ = self.process.communicate(timeout=30)
        per_s, median_s, size = out.split()
        return float(per_s), float(median_s), int(size)


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far, all its threads (also exited ones,
    like the metrics server's per-request threads) included."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def section_scrape(setup: Setup, interval_s: float = 0.1) -> None:
    """Produce throughput (raw, acks=1: the broker's capacity) with a scraper fetching
    /metrics every 100 ms beside the same without. Runs come in pairs, the order alternating,
    and the ratio is the median of the pairs' ratios, so drift in the machine's load cancels;
    the broker's CPU per record (from /proc) is the figure load elsewhere disturbs least."""
    batches = max(2000, 10 * setup.produce_batches)  # ~1 s a run here: ~10 scrapes in it
    rates: dict[str, list[float]] = {"without": [], "with": []}
    cpu: dict[str, list[float]] = {"without": [], "with": []}
    scrapes = []
    pid = setup.broker.process.pid
    with Raw(setup.broker.port) as admin:
        for run in range(2 * setup.runs):
            for mode in (("without", "with") if run % 2 == 0 else ("with", "without")):
                topic = f"scrape-{mode}-{run}"
                admin.create_topic(topic)
                scraper = Scraper(setup.broker.metrics_port, interval_s) if mode == "with" else None
                try:
                    cpu_before = process_cpu_s(pid)
                    elapsed, _ = produce_raw(setup.broker.port, topic, batches, 1, setup.window)
                    cpu[mode].append((process_cpu_s(pid) - cpu_before) / batches)
                finally:
                    if scraper is not None:
                        scrapes.append(scraper.stop())
                rates[mode].append(batches * BATCH_RECORDS / elapsed)
                admin.delete_topic(topic)
    pair_ratio = median([w / wo for w, wo in zip(rates["with"], rates["without"])])
    cpu_ratio = median([w / wo for w, wo in zip(cpu["with"], cpu["without"])])
    per_million = {mode: f"{median(values) * 1e6 / BATCH_RECORDS:.2f}"
                   for mode, values in cpu.items()}
    rows = [["no scraper", spread(rates["without"]), per_million["without"], "-", "-", "-",
             "1.00x", "1.00x"],
            [f"GET /metrics every {interval_s * 1000:.0f} ms (own process)",
             spread(rates["with"]), per_million["with"],
             f"{median([s[0] for s in scrapes]):.1f}",
             f"{median([s[1] for s in scrapes]) * 1000:.1f}", f"{scrapes[-1][2]:,}",
             f"{pair_ratio:.2f}x ({verdict(pair_ratio >= 0.95)} >= 0.95x)",
             f"{cpu_ratio:.2f}x"]]
    print_table(
        f"Produce while Prometheus-speed scraping: raw socket, acks=1, {batches:,} batches of "
        f"{BATCH_RECORDS} per run, {2 * setup.runs} pairs of runs",
        ["scraper", "records/s (min-max)", "broker CPU s per 1M records", "scrapes/s",
         "scrape ms (median)", "scrape bytes", "throughput with/without (target)",
         "broker CPU per record with/without"],
        rows,
        notes=["each scrape snapshots partition and group state on the broker's event loop "
               "and writes the text in the broker's metrics thread; the scraper runs in its "
               "own process, like Prometheus, and takes CPU of its own on the shared cores.",
               "ratios are medians of per-pair ratios (a pair: one run without, one with)."])


# --------------------------------------------------------------- replication factor 3


class ReplicatedCluster:
    """etcd (Debian's ``/usr/bin/etcd``) and three ``tslog-broker`` processes on loopback
    ports with temporary directories; ``stop`` ends every process by its pid."""

    ETCD = os.environ.get("TSLOG_TEST_ETCD", "/usr/bin/etcd")

    def __init__(self, root: Path) -> None:
        self.root = root / "cluster"
        self.root.mkdir(parents=True, exist_ok=True)
        self.etcd_port, self.etcd_peer_port = free_port(), free_port()
        self.etcd: subprocess.Popen | None = None
        self.brokers = [Broker(self.root / f"broker-{node}") for node in range(3)]

    def start(self) -> "ReplicatedCluster":
        client_url = f"http://{HOST}:{self.etcd_port}"
        peer_url = f"http://{HOST}:{self.etcd_peer_port}"
        with open(self.root / "etcd.log", "ab") as log_file:
            self.etcd = subprocess.Popen(
                [self.ETCD, "--name", "bench", "--data-dir", str(self.root / "etcd"),
                 "--listen-client-urls", client_url, "--advertise-client-urls", client_url,
                 "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
                 "--initial-cluster", f"bench={peer_url}", "--listen-metrics-urls", ""],
                stdout=log_file, stderr=subprocess.STDOUT, env={"PATH": os.environ["PATH"]})
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:  # ready once it says it serves clients and the port accepts
            try:
                if "ready to serve client requests" in (self.root / "etcd.log").read_text(
                        errors="replace"):
                    socket.create_connection((HOST, self.etcd_port), timeout=1).close()
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or self.etcd.poll() is not None:
                raise RuntimeError("etcd did not start")
            time.sleep(0.05)
        for node, broker in enumerate(self.brokers):
            broker.root.mkdir(parents=True, exist_ok=True)
            broker.env = {"TSLOG_NODE_ID": str(node), "TSLOG_CLUSTER_NAME": "bench",
                          "TSLOG_ETCD_ENDPOINTS": f"{HOST}:{self.etcd_port}",
                          "TSLOG_BROKER_SESSION_TIMEOUT_MS": "3000"}
            broker.start()
        return self

    def create_topic(self, topic: str, replication_factor: int = 3) -> "Broker":
        """Create ``topic``; return its leader once the ISR holds every replica."""
        with Raw(self.brokers[0].port) as raw:
            body = raw.request(ApiKey.CREATE_TOPICS, {"topics": [
                {"topic": topic, "partitions": 1, "replication_factor": replication_factor,
                 "configs": {}}], "timeout_ms": 10_000})
            if body["topics"][0]["error_code"]:
                raise RuntimeError(f"create {topic}: error {body['topics'][0]['error_code']}")
            deadline = time.monotonic() + READY_TIMEOUT_S
            while time.monotonic() < deadline:
                meta = raw.request(ApiKey.METADATA, {"topics": [topic]})["topics"][0]
                parts = meta["partitions"]
                if (parts and parts[0]["leader"] >= 0
                        and len(parts[0]["isr"]) == replication_factor):
                    leader = self.brokers[parts[0]["leader"]]
                    with Raw(leader.port) as direct:  # the leader itself knows it leads
                        if direct.list_offset(topic, -1)["error_code"] == 0:
                            return leader
                time.sleep(0.05)
        raise RuntimeError(f"{topic}: no leader with a full ISR after {READY_TIMEOUT_S} s")

    def wait_replicated(self, leader: Broker, topic: str, records: int) -> float:
        """Wait until the high watermark (ListOffsets LATEST) reaches ``records``: every
        in-sync replica holds them. Returns the seconds waited (polled every 2 ms)."""
        started = time.perf_counter()
        deadline = time.monotonic() + READY_TIMEOUT_S
        with Raw(leader.port) as raw:
            while raw.list_offset(topic, -1)["offset"] < records:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{topic}: followers did not catch up")
                time.sleep(0.002)
        return time.perf_counter() - started

    def delete_topic(self, topic: str) -> None:
        with Raw(self.brokers[0].port) as raw:
            raw.delete_topic(topic)

    def stop(self) -> None:
        for broker in self.brokers:
            broker.stop()
        if self.etcd is not None and self.etcd.poll() is None:
            os.kill(self.etcd.pid, signal.SIGTERM)
            self.etcd.wait(STOP_TIMEOUT_S)


def section_replication(setup: Setup) -> None:
    """Produce acks=1 and acks=all to a partition with replication factor 3 (three brokers
    and etcd on this machine), raw pipelined batches to the leader, alternating the order."""
    if not Path(ReplicatedCluster.ETCD).exists():
        print(f"\n  replication rows SKIPPED: no etcd at {ReplicatedCluster.ETCD} "
              "(Debian: apt-get install etcd-server)")
        return
    cluster = ReplicatedCluster(setup.broker.data_dir.parent)
    modes = [(1, 3), (-1, 3), (-1, 1)]  # (acks, replication factor)
    # Runs of ~0.1 s measure a burst the followers copy afterwards; longer runs make acks=1
    # pay for the replication it starts, as it would when sustained.
    batches = 5 * setup.produce_batches
    records = batches * BATCH_RECORDS
    rates: dict[tuple[int, int], list[float]] = {mode: [] for mode in modes}
    replicated: dict[tuple[int, int], list[float]] = {mode: [] for mode in modes}
    try:
        cluster.start()
        for run in range(setup.runs):
            for acks, factor in (modes if run % 2 == 0 else modes[::-1]):
                topic = f"rf{factor}-acks{acks}-{run}"
                leader = cluster.create_topic(topic, factor)
                elapsed, _ = produce_raw(leader.port, topic, batches, acks, setup.window)
                rates[acks, factor].append(records / elapsed)
                # The followers finish copying before the next run, so no run shares the
                # cores with the previous one's replication; the wait also gives the rate at
                # which every replica had the data.
                waited = cluster.wait_replicated(leader, topic, records)
                replicated[acks, factor].append(records / (elapsed + waited))
                # Dropped as in the other sections: 15 runs leave ~7 GB of dirty pages
                # otherwise, and the kernel's writeback of them takes the cores from the
                # later runs.
                cluster.delete_topic(topic)
    finally:
        cluster.stop()
    # This VM runs in fast and slow phases; a run's two replication-factor-3 modes are
    # adjacent in either order, so their ratio is taken per run, then the median.
    everyone = [a / b for a, b in zip(rates[-1, 3], rates[1, 3])]
    sustained = [a / b for a, b in zip(rates[-1, 3], replicated[1, 3])]
    alone = [a / b for a, b in zip(rates[-1, 1], rates[1, 3])]
    rows = [["1", "3", spread(rates[1, 3]), spread(replicated[1, 3]), "-", "-", "-"],
            ["all (HW past the batch)", "3", spread(rates[-1, 3]),
             spread(replicated[-1, 3]), spread(everyone, digits=2), spread(sustained, digits=2),
             f"{verdict(median(everyone) >= 0.5)} >= 0.5x"],
            ["all (fsync)", "1", spread(rates[-1, 1]), spread(replicated[-1, 1]),
             spread(alone, digits=2), "-", "-"]]
    print_table(
        f"Produce with replication factor 3: raw socket to the leader, {setup.window} in "
        f"flight, {batches:,} batches of {BATCH_RECORDS} per run",
        ["acks", "replicas", "records/s the producer sees (min-max)",
         "records/s until every replica has them", "acks=all / acks=1 as the producer sees it",
         "acks=all / acks=1 until replicated", "target (producer's view)"],
        rows,
        notes=["three brokers and etcd share the machine with this client; followers fetch "
               "with long polls and the leader answers acks=all once every in-sync replica "
               "has the batch (the high watermark passed it); as in Kafka, no fsync is "
               "waited for when followers hold copies.",
               "'until every replica has them' times each run until the high watermark "
               "reaches its last record: with acks=1 the leader takes batches faster than "
               "the followers (sharing the same two cores) can copy them, so the producer's "
               "rate is a burst the followers pay for after it; sustained, they would fall "
               "out of the ISR. acks=all never runs ahead of its replicas.",
               "ratios are medians of per-run ratios; between runs the followers are let "
               "catch up, so no run shares the cores with the previous one's replication.",
               "replication factor 1 on the same cluster: a leader alone in its ISR holds "
               "the only copy, so its acks=all waits for the group-commit fsync instead."])


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


SECTIONS = {"produce": section_produce, "fill": section_fill, "consume": section_consume,
            "lookups": section_lookups, "scrape": section_scrape,
            "replication": section_replication}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--large", action="store_true",
                        help="lookup/consume partition of 10^7 records (default 10^6)")
    parser.add_argument("--runs", type=int, default=None,
                        help="runs per figure (default 5; 2 with --quick)")
    parser.add_argument("--no-redis", action="store_true", help="skip the Redis rows")
    parser.add_argument("--dir", default=None, help="where to put temporary data")
    parser.add_argument("--only", action="append", choices=sorted(SECTIONS), default=None,
                        help="run just this section (repeatable; consume and lookups fill "
                             "their partition first)")
    args = parser.parse_args(argv)
    runs = max(1, args.runs or (2 if args.quick else 5))
    if args.quick:
        sizes = dict(produce_batches=50, client_records=50_000, partition_records=10**5,
                     lookups=2_000, xadd_requests=100_000)
    else:
        sizes = dict(produce_batches=300, client_records=300_000, partition_records=10**6,
                     lookups=10_000, xadd_requests=500_000)
    if args.large:
        sizes["partition_records"] = 10**7

    redis_missing = [] if args.no_redis else Redis.missing()
    root = Path(tempfile.mkdtemp(prefix="tslog-bench-broker-", dir=args.dir))
    setup = Setup(broker=Broker(root), redis=None, runs=runs, **sizes)
    code = None
    try:
        print(f"tslog broker benchmark: python {sys.version.split()[0]}, {os.cpu_count()} cpus, "
              f"msgpack {'.'.join(map(str, msgpack.version))}, medians of {runs} runs (min-max), "
              f"temp dir {root}")
        print("  load average before the run: %.2f %.2f %.2f (other work on the machine skews "
              "every figure)" % os.getloadavg())
        print(f"  records: {len(VALUE)}-byte values, batches of {BATCH_RECORDS}, one partition, "
              f"everything on 127.0.0.1; the broker, this client and Redis share the machine")
        if args.no_redis:
            print("  Redis rows skipped (--no-redis)")
        elif redis_missing:
            print(f"  Redis rows SKIPPED: not installed: {', '.join(redis_missing)} "
                  "(Debian: apt-get install redis-server redis-tools; pip install redis hiredis)")
        setup.broker.start()
        print(f"  tslog-broker pid {setup.broker.process.pid} on {setup.broker.bootstrap}")
        if not args.no_redis and not redis_missing:
            setup.redis = Redis(root)
            setup.redis.start()
            print(describe_redis(setup.redis))
        chosen = set(args.only or SECTIONS)
        for name, section in SECTIONS.items():
            if name in chosen or (name == "fill" and chosen & {"consume", "lookups"}):
                section(setup)
        print("\n  load average after the run: %.2f %.2f %.2f" % os.getloadavg())
    except BaseException:
        if setup.broker.process is not None:
            print(f"\n--- tslog-broker log (tail) ---\n{setup.broker.log_text()[-4000:]}",
                  file=sys.stderr)
        raise
    finally:
        try:
            code = setup.broker.stop()
        finally:
            if setup.redis is not None:
                setup.redis.stop()
            shutil.rmtree(root, ignore_errors=True)
    if code not in (0, None):
        print(f"\ntslog-broker exited with code {code} at SIGTERM", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
