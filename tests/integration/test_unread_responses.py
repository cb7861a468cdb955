"""Clients that never read, or read slowly, cannot grow the broker's memory or stall others.

Goal (issue 20, item 2, and the suite's "never-reading clients" and "slow clients"): what a
connection may hold in unsent responses is bounded in bytes (``max_unsent_response_bytes``,
default 8 MiB), and so is the whole broker's (``max_total_unsent_response_bytes``); see
``broker/server/connection.py``. Before these limits, 1,200 pipelined 1-MiB Fetches never read
grew the broker by 459 MiB here (777 in the issue; how much depends on how many requests one
socket read brings: the 128-request in-flight cap counted requests, not bytes), and by 1,190 MiB
with both limits set to 2^50.

Method: a real broker process holding 4 MiB in one partition, hostile raw sockets that
pipeline 1-MiB Fetches and read nothing (the kernel's socket buffers take a few MiB of
answers, outside the broker's memory, before anything waits in the broker); the broker's resident
memory from /proc/<pid>/status (VmHWM, the peak, against VmRSS before: never less than the
growth). Meanwhile a normal client on its own connection fetches and must get correct answers
(within the 10 s socket timeout: a starved client would wait for ever; no speed is asserted). A never-reading
client is not closed (until ``connections_max_idle_ms`` of silence): when it finally reads, it
gets every response, correct and in order. Each case ends with the broker alive, serving a
new client, and holding every record acknowledged before.

What is measured is what the broker holds, not what its allocator keeps: these brokers run
with ``MALLOC_MMAP_THRESHOLD_`` at 128 KiB, so a freed 1-MiB response goes back to the kernel
at once (``broker/allocator.py`` otherwise keeps up to 128 MiB of freed heap for reuse, by
design, and how much of it a run touches depends on how the machine schedules the broker and
its clients: a loaded machine once showed 116 MiB while draining). And the peak is reset
(``/proc/<pid>/clear_refs``) when the baseline is read, so nothing before it, and no guess
about when the broker has settled, enters the figure.
"""

from __future__ import annotations

import socket
import sys
import threading
import time

import pytest

from tests.helpers.wire import Wire, batch, split_values
from tslog.protocol.frames import FrameReceiver
from tslog.protocol.messages import ApiKey, RequestHeader, decode_response, encode_request

pytestmark = [pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/<pid>/status"),
              pytest.mark.timeout(180)]

TOPIC = "big"
EMPTY_TOPIC = "quiet"
BATCHES = 16
RECORDS_PER_BATCH = 256
VALUE_BYTES = 1000
FETCH_BYTES = 1 << 20  # each hostile Fetch answers about 1 MiB (four 256-record batches)
MIB = 1 << 20

# Stated bounds on the broker's peak RSS growth (measured on this 2-core VM in brackets).
ONE_CLIENT_BOUND = 40 * MIB  # 1 connection x 1,200 Fetches: 8 MiB cap + 1 response [16 MiB]
# ... and while that client drains them as fast as it can, the same cap: the answers the
# broker holds (counted, and logged at every answer in a debug build) never pass 8 MiB. Its
# RSS does, for tens of milliseconds at a time: on this VM since late 2026, spikes of
# 49-140 MiB over the baseline in about half the runs, with every version of the broker
# back to before this bound was set, then back to the baseline. They are anonymous memory
# in response-sized blocks (the mmap threshold below gives each its own mapping: one run of
# adjacent ~1 MiB mappings held 50-55 MiB at a spike), not Python objects the broker keeps
# (tracemalloc: +10 MB at one), and they come with uvloop: the same broker on asyncio's own
# loop peaked at 26-28 MiB in six runs out of six, on uvloop at 22-112 MiB. Whether
# uvloop's write path keeps written answers alive past the transport's buffer count, or
# only its speed makes the spikes, is not yet pinned down. The bound still fails the
# broker this test was written against (459 MiB) by a factor of three.
ONE_CLIENT_DRAIN_BOUND = 160 * MIB
TOTAL_CAP = 24 * MIB  # the broker-wide cap in the several-connections case
SEVERAL_CLIENTS = 8
SEVERAL_BOUND = 64 * MIB  # 8 connections: 24 MiB + 1 response each [40 MiB; 95 with the
# default 256 MiB total, 2,219 before the limits]


ALLOCATOR_RETURNS_FREED_BLOCKS = {"MALLOC_MMAP_THRESHOLD_": str(128 << 10)}


def memory(pid: int, key: str) -> int:
    """``VmRSS`` or ``VmHWM`` of a process, in bytes."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no {key} in /proc/{pid}/status")


def baseline_rss(pid: int) -> int:
    """The broker's resident memory now, with its peak (VmHWM) reset to it: growth measured
    from here is what comes after, whatever the broker did before."""
    with open(f"/proc/{pid}/clear_refs", "w") as clear_refs:
        clear_refs.write("5")  # "reset the peak resident set size" (proc(5))
    return memory(pid, "VmRSS")


def fetch_frame(correlation_id: int, topic: str = TOPIC, max_wait_ms: int = 0,
                min_bytes: int = 0) -> bytes:
    body = {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes,
            "max_bytes": FETCH_BYTES, "topics": [{"topic": topic, "partitions": [
                {"partition": 0, "fetch_offset": 0, "max_bytes": FETCH_BYTES}]}]}
    return encode_request(RequestHeader(ApiKey.FETCH, 0, correlation_id, "hostile"), body)


class Hostile:
    """A raw connection that sends pipelined Fetches (from a thread: the broker may stop
    reading them) and reads nothing until told to."""

    def __init__(self, broker, frames: bytes) -> None:
        self.sock = socket.create_connection((broker.host, broker.port))
        self.sender = threading.Thread(target=self._send, args=(frames,), daemon=True)
        self.sender.start()

    def _send(self, frames: bytes) -> None:
        try:
            self.sock.sendall(frames)
        except OSError:
            pass  # closed by the test

    def read_responses(self, count: int, timeout_s: float = 60.0):
        """Yield (correlation id, Fetch partition answer) for ``count`` responses."""
        self.sock.settimeout(timeout_s)
        decoder = FrameReceiver(1 << 30)
        frames: list[bytes] = []
        for _ in range(count):
            while not frames:
                data = self.sock.recv(1 << 20)
                assert data, "the broker closed the connection"
                frames.extend(decoder.feed(data))
            correlation_id, body = decode_response(frames.pop(0), ApiKey.FETCH)
            yield correlation_id, body["topics"][0]["partitions"][0]

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def filled(broker_factory):
    """A broker whose ``big`` partition holds 4 MiB (16 acknowledged batches); returns a
    factory taking broker settings, giving (broker, records of one 1-MiB Fetch from 0)."""

    def make(**config):
        broker = broker_factory(env={**ALLOCATOR_RETURNS_FREED_BLOCKS,
                                     **{f"TSLOG_{k.upper()}": str(v) for k, v in config.items()}})
        with Wire(broker.host, broker.port) as wire:
            assert wire.create_topic(TOPIC) == 0
            assert wire.create_topic(EMPTY_TOPIC) == 0
            for _ in range(BATCHES):
                written = wire.produce(TOPIC, 0, batch([b"v" * VALUE_BYTES] * RECORDS_PER_BATCH))
                assert written["error_code"] == 0
            first = wire.fetch(TOPIC, 0, 0, max_bytes=FETCH_BYTES)["records"]
        assert len(first) > FETCH_BYTES * 0.9
        return broker, first

    return make


def assert_normal_client_served(broker, first: bytes) -> None:
    """A new connection gets a correct 1-MiB Fetch (within Wire's 10 s socket timeout)."""
    with Wire(broker.host, broker.port) as wire:
        records = wire.fetch(TOPIC, 0, 0, max_bytes=FETCH_BYTES)["records"]
    assert records == first


def assert_alive_and_intact(broker, first: bytes) -> None:
    """The broker answers a new client and still holds every acknowledged record."""
    assert broker.running
    assert_normal_client_served(broker, first)
    with Wire(broker.host, broker.port) as wire:
        assert wire.api_versions()["error_code"] == 0
        assert wire.log_end_offset(TOPIC) == BATCHES * RECORDS_PER_BATCH
        values, offset = [], 0
        while offset < BATCHES * RECORDS_PER_BATCH:
            got = split_values(wire.fetch(TOPIC, 0, offset, max_bytes=FETCH_BYTES)["records"])
            assert got and got[0][0] == offset
            values += got
            offset = got[-1][0] + 1
        assert [o for o, _ in values] == list(range(BATCHES * RECORDS_PER_BATCH))
        assert all(value == b"v" * VALUE_BYTES for _, value in values)
    assert "Traceback" not in broker.log_text()


def hold_and_watch(broker, first: bytes, seconds: float) -> None:
    """While hostile clients hold their share: a normal client is served, again and again."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert_normal_client_served(broker, first)
        time.sleep(0.2)


def test_a_client_that_never_reads_holds_only_its_share(filled):
    """1,200 pipelined 1-MiB Fetches never read: the broker's RSS grows by under
    ONE_CLIENT_BOUND (40 MiB; measured 16, and 459 before the limits), a normal client is served
    meanwhile, and once the hostile client reads it gets all 1,200 answers, correct, in order
    (it is not closed), with memory still bounded (ONE_CLIENT_DRAIN_BOUND, see there) while it
    drains, and back near the baseline after."""
    broker, first = filled()
    pid = broker.process.pid
    baseline = baseline_rss(pid)
    count = 1200
    hostile = Hostile(broker, b"".join(fetch_frame(i + 1) for i in range(count)))
    try:
        hold_and_watch(broker, first, 3.0)
        held = memory(pid, "VmHWM") - baseline
        assert held < ONE_CLIENT_BOUND, f"broker grew by {held / MIB:.0f} MiB"
        for expected, (correlation_id, answer) in enumerate(hostile.read_responses(count), 1):
            assert correlation_id == expected
            assert answer["error_code"] == 0 and answer["records"] == first
        peak = memory(pid, "VmHWM") - baseline
        assert peak < ONE_CLIENT_DRAIN_BOUND, f"broker grew by {peak / MIB:.0f} MiB while draining"
        after = memory(pid, "VmRSS") - baseline
        assert after < ONE_CLIENT_BOUND, f"broker kept {after / MIB:.0f} MiB after the drain"
    finally:
        hostile.close()
    assert_alive_and_intact(broker, first)


def test_answers_held_behind_a_long_poll_count_too(filled):
    """A long-polling Fetch first (nothing to read for 3 s), then 300 1-MiB Fetches: their
    answers wait behind it, unsent, and count against the connection's cap like buffered
    ones (same bound), then all go out in request order."""
    broker, first = filled()
    pid = broker.process.pid
    baseline = baseline_rss(pid)
    count = 300
    frames = fetch_frame(1, EMPTY_TOPIC, max_wait_ms=3000, min_bytes=1)
    frames += b"".join(fetch_frame(i + 2) for i in range(count))
    hostile = Hostile(broker, frames)
    try:
        hold_and_watch(broker, first, 2.0)
        held = memory(pid, "VmHWM") - baseline
        assert held < ONE_CLIENT_BOUND, f"broker grew by {held / MIB:.0f} MiB"
        answers = hostile.read_responses(count + 1)
        correlation_id, answer = next(answers)
        assert correlation_id == 1 and answer["error_code"] == 0 and answer["records"] == b""
        for expected, (correlation_id, answer) in enumerate(answers, 2):
            assert correlation_id == expected and answer["records"] == first
    finally:
        hostile.close()
    assert_alive_and_intact(broker, first)


def test_several_never_reading_clients_are_bounded_broker_wide(filled):
    """Eight connections of 300 1-MiB Fetches each, never read, with the broker-wide cap at
    24 MiB (each connection alone may hold 8 MiB): RSS grows by under SEVERAL_BOUND (64 MiB;
    40 measured, 95 with the default broker-wide cap of 256 MiB), and a normal client on its own
    connection is still served while they hold. Closing them frees the broker for everyone."""
    broker, first = filled(max_total_unsent_response_bytes=TOTAL_CAP)
    pid = broker.process.pid
    baseline = baseline_rss(pid)
    frames = b"".join(fetch_frame(i + 1) for i in range(300))
    hostiles = [Hostile(broker, frames) for _ in range(SEVERAL_CLIENTS)]
    try:
        hold_and_watch(broker, first, 4.0)
        held = memory(pid, "VmHWM") - baseline
        assert held < SEVERAL_BOUND, f"broker grew by {held / MIB:.0f} MiB"
        # One of them reads a few answers: it is served in turn, not starved by the others.
        answers = hostiles[0].read_responses(20)
        assert [cid for cid, _ in answers] == list(range(1, 21))
    finally:
        for hostile in hostiles:
            hostile.close()
    assert_alive_and_intact(broker, first)


def test_a_slow_reader_is_served_correctly_and_stalls_no_one(filled):
    """A client reading 16 bytes every 0.2 s (80 B/s) of ten pipelined 1-MiB Fetches: others
    are served meanwhile; then it reads the rest and every answer is right."""
    broker, first = filled()
    count = 10
    slow = Hostile(broker, b"".join(fetch_frame(i + 1) for i in range(count)))
    try:
        trickled = bytearray()
        deadline = time.monotonic() + 3.0
        slow.sock.settimeout(10)
        while time.monotonic() < deadline:
            trickled += slow.sock.recv(16)
            assert_normal_client_served(broker, first)
            time.sleep(0.2)
        assert trickled  # the first bytes of the first answer came
        decoder = FrameReceiver(1 << 30)
        frames = decoder.feed(bytes(trickled))
        while len(frames) < count:
            data = slow.sock.recv(1 << 20)
            assert data, "the broker closed the slow reader"
            frames += decoder.feed(data)
        for expected, frame in enumerate(frames, 1):
            correlation_id, body = decode_response(frame, ApiKey.FETCH)
            assert correlation_id == expected
            assert body["topics"][0]["partitions"][0]["records"] == first
    finally:
        slow.close()
    assert_alive_and_intact(broker, first)


def test_a_slow_writer_is_served_correctly_and_stalls_no_one(filled):
    """A client sending its Fetch a few bytes at a time (8 bytes every 0.1 s): others are
    served meanwhile, and once the last byte arrives its answer is right."""
    broker, first = filled()
    frame = fetch_frame(7)
    with Wire(broker.host, broker.port) as slow:
        for start in range(0, len(frame) - 8, 8):
            slow.send_raw(frame[start:start + 8])
            if start % 64 == 0:
                assert_normal_client_served(broker, first)
            time.sleep(0.1)
        slow.send_raw(frame[start + 8:])
        correlation_id, body = slow.receive(ApiKey.FETCH)
        assert correlation_id == 7
        assert body["topics"][0]["partitions"][0]["records"] == first
    assert_alive_and_intact(broker, first)
