"""Consume rows: from a timestamp to the end of the filled partition, through
``tslog.client.Consumer`` (records, and columns) and a raw Fetch loop that reads into one
reused buffer and decodes batch headers only, against Redis XRANGE."""

from __future__ import annotations

import socket
import time

import msgpack

from tslog.protocol.batch_header import parse_header, peek_length
from tslog.protocol.messages import ApiKey

from .common import (
    BATCH_RECORDS,
    REDIS_BASE_MS,
    REDIS_PER_MS,
    VALUE,
    connect,
    median,
    print_table,
    ratio,
    spread,
    verdict,
)
from .client_rows import consume_client
from .context import Setup


def fetch_raw(port: int, topic: str, offset: int, end_offset: int, max_bytes: int
              ) -> tuple[float, int, int]:
    """Fetch loop (one request in flight) from ``offset`` to the end; records not decoded.

    Returns (seconds, record bytes, records)."""
    total_bytes = 0
    start_offset = offset
    with connect(port) as raw:
        sock = raw.sock
        prefix = bytearray(4)
        buffer = memoryview(bytearray(max_bytes + (1 << 20)))  # reused: no per-fetch allocation
        started = time.perf_counter()
        while offset < end_offset:
            sock.sendall(raw.encode(ApiKey.FETCH, {
                "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": max_bytes,
                "topics": [{"topic": topic, "partitions": [
                    {"partition": 0, "fetch_offset": offset, "max_bytes": max_bytes}]}]},
                validate=False))
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


def section_consume(setup: Setup) -> None:
    # the newest half of the partition, at most 10^6 records (so --large stays bounded)
    consume_records = min(setup.partition_records // 2, 10**6)
    times = setup.append_times
    consume_from = times[len(times) - consume_records // BATCH_RECORDS]
    with connect(setup.broker.port) as raw:
        end_offset = raw.log_end_offset(setup.topic)
        first_offset = raw.list_offset(setup.topic, 0, consume_from)["offset"]
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
