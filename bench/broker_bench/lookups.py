"""Lookup-by-time rows: ListOffsets round trips on one connection, raw and through the
client (sync facade and async core), beside the floor of a minimal echo server and Redis."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import socket
import subprocess
import sys
import time

from tslog.protocol.frames import FrameReceiver
from tslog.protocol.messages import ApiKey

from tests.helpers.broker_process import free_port

from .common import (
    HOST,
    REDIS_BASE_MS,
    REDIS_PER_MS,
    STOP_TIMEOUT_S,
    connect,
    lookup_stats,
    median,
    print_table,
    ratio,
    spread,
    verdict,
)
from .context import Setup


class RawLookups:
    """ListOffsets round trips, one at a time on one raw blocking connection."""

    name = "raw socket loop: encode ListOffsets, sendall, recv, msgpack decode"

    def __init__(self, port: int, topic: str) -> None:
        self.raw = connect(port)
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
            sendall(raw.encode(ApiKey.LIST_OFFSETS, body, validate=False))
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
        self.decoder = FrameReceiver()

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


def section_lookups(setup: Setup) -> None:
    """The paths take turns in chunks, so bursts of other load on the machine hit all alike."""
    first_lat, last_lat = setup.append_times[0], setup.append_times[-1]
    redis_span = setup.partition_records // REDIS_PER_MS
    rng = random.Random(42)
    with connect(setup.broker.port) as raw:
        sample_request = raw.encode(ApiKey.LIST_OFFSETS, {
            "replica_id": -1, "timestamp_type": "append", "topics": [
                {"topic": setup.topic, "partitions": [{"partition": 0, "timestamp": first_lat}]}]},
            validate=False)
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
