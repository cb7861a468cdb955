"""The Kafka protocol spoken by hand, the same bytes to Apache Kafka and to tslog's Kafka
listener: a pipelined Produce of pre-encoded batches (each broker's own cost, no client
library's) and a ListOffsets-by-time loop (one request in flight: a round trip each).

Requests are encoded with tslog's Kafka codec (``tslog.protocol.kafka``), before the clock
starts for Produce; a ListOffsets request is encoded inside the timed call (tens of
microseconds, the same for both brokers)."""

from __future__ import annotations

import socket
import struct
import time

VALUE = b"v" * 100
BATCH_RECORDS = 1000


def connect(bootstrap: str) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=60)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_frame(sock: socket.socket) -> bytes:
    return read_exact(sock, struct.unpack(">I", read_exact(sock, 4))[0])


def read_exact(sock: socket.socket, count: int) -> bytes:
    buffer = bytearray(count)
    view, got = memoryview(buffer), 0
    while got < count:
        n = sock.recv_into(view[got:])
        if not n:
            raise RuntimeError("the broker closed the connection")
        got += n
    return bytes(buffer)


def produce(bootstrap: str, topic: str, batches: int, acks: int = 1, window: int = 8,
            records: int = BATCH_RECORDS) -> float:
    """Produce v9 of ``batches`` copies of one pre-built RecordBatch v2 of ``records``
    records of 100 bytes (CreateTime now), ``window`` requests in flight. Seconds."""
    from tslog.protocol.kafka.record_batch import encode_batch

    batch = encode_batch([VALUE] * records, None, int(time.time() * 1000))
    frames = produce_frames(topic, [(0, batch)] * batches, acks)
    with connect(bootstrap) as sock:
        wait_for_leader(sock, topic)
        started = time.perf_counter()
        pipeline(sock, frames, window, f"Kafka produce to {topic} at {bootstrap}")
        return time.perf_counter() - started


def produce_batches(bootstrap: str, topic: str, batches: list[tuple[int, bytes]],
                    window: int = 8) -> None:
    """Produce v9, acks=1: one request per (partition, pre-encoded RecordBatch v2) in
    ``batches``, in order, ``window`` in flight (loading a topic, not a measurement)."""
    frames = produce_frames(topic, batches, 1)
    with connect(bootstrap) as sock:
        wait_for_leader(sock, topic)
        pipeline(sock, frames, window, f"Kafka produce to {topic} at {bootstrap}")


def produce_frames(topic: str, batches: list[tuple[int, bytes]], acks: int) -> list[bytes]:
    """Produce v9 requests, framed: one per (partition, RecordBatch v2), correlation ids
    counting from 0."""
    from tslog.protocol.kafka import encode_request

    frames = []
    for n, (partition, batch) in enumerate(batches):
        data = encode_request(0, 9, n, "bench", {
            "transactional_id": None, "acks": acks, "timeout_ms": 60_000, "topic_data": [
                {"name": topic, "partition_data": [{"index": partition, "records": batch}]}]})
        frames.append(struct.pack(">I", len(data)) + data)
    return frames


def pipeline(sock: socket.socket, frames: list[bytes], window: int, what: str) -> None:
    """Send Produce ``frames`` with ``window`` in flight; raise on the first error code."""
    from tslog.protocol.kafka import decode_response

    sent = answered = 0
    while sent < min(window, len(frames)):
        sock.sendall(frames[sent])
        sent += 1
    while answered < len(frames):
        _, body = decode_response(0, 9, read_frame(sock))
        code = body["responses"][0]["partition_responses"][0]["error_code"]
        if code:
            raise RuntimeError(f"{what}: error {code}")
        answered += 1
        if sent < len(frames):
            sock.sendall(frames[sent])
            sent += 1


def wait_for_leader(sock: socket.socket, topic: str, tries: int = 300) -> None:
    """Until partition 0 of a topic just created has a leader that answers (Kafka answers
    NOT_LEADER_OR_FOLLOWER for a moment after CreateTopics; clients retry, this loop does
    not): a ListOffsets for the log end, which writes nothing, every 0.1 s."""
    from tslog.protocol.kafka import decode_response, encode_request

    for n in range(tries):
        data = encode_request(2, 7, n, "bench", {
            "replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]})
        sock.sendall(struct.pack(">I", len(data)) + data)
        _, body = decode_response(2, 7, read_frame(sock))
        if body["topics"][0]["partitions"][0]["error_code"] == 0:
            return
        time.sleep(0.1)
    raise RuntimeError(f"partition 0 of {topic} has no leader after {tries} tries")


def list_offsets_loop(bootstrap: str, topic: str, times: list[int]) -> list[float]:
    """ListOffsets v7 for each time in turn (partition 0), one request in flight; seconds
    per round trip. Each answer is checked: an offset, at or after the time."""
    from tslog.protocol.kafka import decode_response, encode_request

    latencies = []
    with connect(bootstrap) as sock:
        for n, when in enumerate(times):
            started = time.perf_counter()
            data = encode_request(2, 7, n, "bench", {
                "replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
                    {"partition_index": 0, "current_leader_epoch": -1, "timestamp": when}]}]})
            sock.sendall(struct.pack(">I", len(data)) + data)
            _, body = decode_response(2, 7, read_frame(sock))
            latencies.append(time.perf_counter() - started)
            found = body["topics"][0]["partitions"][0]
            if found["error_code"] or found["offset"] < 0 or found["timestamp"] < when:
                raise RuntimeError(f"ListOffsets {when} at {bootstrap}: {found}")
    return latencies
