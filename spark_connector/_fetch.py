"""Blocking, raw-batch fetching of one offset range for Spark tasks.

Why not ``tslog.client.Consumer``: it decodes every record into a Python object, which costs
more than Spark's whole per-row budget. A task needs much less: one socket to the partition
leader, Fetch requests for [start, end), and the stored batches as bytes, which
``decode_batches`` turns into numpy columns, one set per response. While one response is
decoded the next Fetch is already in flight: its ``fetch_offset`` is read from the last batch
header of the response just received (``split_batches`` + ``parse_header`` touch headers
only), before any decoding.
Each response is received into one buffer from Arrow's memory pool and its records are left
there (``record_views``): the only copy of a record byte in this process is the Arrow build.

Fetch returns whole stored batches, so the first batch may start before ``start`` and the last
may run past ``end``; the records outside the range are dropped by slicing the columns.

Data loss: if the broker answers OFFSET_OUT_OF_RANGE because retention deleted the start of the
range, or the log now ends before ``end``, the task raises ``DataLossError`` (naming topic,
partition and the lost offsets) when ``fail_on_data_loss``; otherwise it logs a warning and
yields what survives.
"""

from __future__ import annotations

import functools
import logging
import queue
import ssl
import threading
import time
from dataclasses import dataclass

import pyarrow as pa

from tslog.client import parse_bootstrap
from tslog.client.blocking import BrokerSocket
from tslog.client.security import Security
from tslog.protocol.batch_header import parse_header
from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey
from tslog.protocol.records import decode_batches, split_batches

log = logging.getLogger("tslog.spark_connector")

CLIENT_ID = "tslog-spark"
_RETRIABLE_LEADER = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE,
                     ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.REPLICA_NOT_AVAILABLE,
                     ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH,
                     ErrorCode.BROKER_NOT_AVAILABLE, ErrorCode.NETWORK_EXCEPTION,
                     ErrorCode.REQUEST_TIMED_OUT, ErrorCode.KAFKA_STORAGE_ERROR,
                     ErrorCode.OFFSET_NOT_AVAILABLE}
_RETRIES = 5


class TslogReadError(RuntimeError):
    """A Spark task could not read its range (after retries)."""


class DataLossError(TslogReadError):
    """Records of a planned range no longer exist (retention, truncation, topic deleted)."""


class _TopicGone(Exception):
    pass


def find_leader(bootstrap: str, topic: str, partition: int, timeout_s: float,
                security: Security | None = None) -> tuple[str, int]:
    """Ask the bootstrap brokers (in turn) for the partition leader's address."""
    problems = []
    for host, port in parse_bootstrap(bootstrap):
        try:
            conn = BrokerSocket(host, port, timeout_s, CLIENT_ID, security=security,
                                ssl_context=ssl_context_of(security))
        except OSError as exc:
            problems.append(f"{host}:{port}: {exc}")
            continue
        try:
            body = conn.request(ApiKey.METADATA, {"topics": [topic]})
        except (OSError, ValueError) as exc:
            problems.append(f"{host}:{port}: {exc}")
            continue
        finally:
            conn.close()
        brokers = {b["node_id"]: (b["host"], b["port"]) for b in body.get("brokers", [])}
        for entry in body.get("topics", []):
            if entry["topic"] != topic:
                continue
            if entry["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                raise _TopicGone()
            for part in entry["partitions"]:
                if part["partition"] == partition and part["leader"] in brokers:
                    return brokers[part["leader"]]
        problems.append(f"{host}:{port}: no leader known for {topic}-{partition}")
    raise TslogReadError(f"cannot find the leader of topic {topic!r} partition {partition}: "
                         + "; ".join(problems))


@dataclass(frozen=True)
class FetchRange:
    """Everything one Spark task needs: picklable, no client objects."""

    bootstrap: str
    topic: str
    partition: int
    start: int  # first offset to read
    end: int  # exclusive
    leader: tuple | None = None  # (host, port) known at planning time
    fail_on_data_loss: bool = True
    include_headers: bool = False
    fetch_max_bytes: int = 8 * 1024 * 1024
    timeout_ms: int = 30_000
    security: Security | None = None  # TLS/SASL options (the password not in its repr)


@functools.lru_cache(maxsize=8)
def ssl_context_of(security: Security | None) -> ssl.SSLContext | None:
    """One TLS context per security setting in this process: a task's sockets (and the
    tasks an executor runs one after another) share it instead of loading the files each."""
    return None if security is None else security.ssl_context()


def _lost(spec: FetchRange, low: int, high: int, why: str) -> None:
    message = (f"topic {spec.topic!r} partition {spec.partition}: offsets [{low}, {high}) of "
               f"the planned range [{spec.start}, {spec.end}) are gone ({why})")
    if spec.fail_on_data_loss:
        raise DataLossError(message + "; set failOnDataLoss=false to skip lost records "
                            "with a warning instead")
    log.warning("%s; skipping them (failOnDataLoss=false)", message)


_DONE = object()


def fetch_range(spec: FetchRange, prefetch: int = 2):
    """Yield (ColumnsOfBatches, first row, end row) covering [start, end): one per response.

    A thread does the socket work (it releases the GIL while waiting) and keeps up to
    ``prefetch`` responses ready, so the broker is never idle while this thread decodes or
    Spark consumes; batches are decoded here, in the caller's thread.
    """
    if spec.start >= spec.end:
        return
    ready: queue.Queue = queue.Queue(maxsize=max(prefetch, 1))
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def run() -> None:
        try:
            for raw_pieces in _raw_responses(spec):
                if not put(raw_pieces):
                    return
            put(_DONE)
        except BaseException as exc:  # handed to the consumer, raised there
            put(exc)

    thread = threading.Thread(target=run, name=f"tslog-fetch-{spec.topic}-{spec.partition}",
                              daemon=True)
    thread.start()
    try:
        while True:
            item = ready.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield from _decoded(item)
    finally:
        stop.set()
        thread.join(timeout=0.5)


def _decoded(pieces: list):
    """A response's (raw batch, lo, hi) pieces as one (ColumnsOfBatches, first, end) slice.

    Pieces in offset order take whole batches but the first and last; anything else (batches
    that overlap, which only a damaged log holds) is decoded piece by piece.
    """
    columns = decode_batches([raw for raw, _, _ in pieces], allocate=pa.allocate_buffer)
    starts = columns.starts
    last = len(pieces) - 1
    if all((i == 0 or lo == 0) and (i == last or hi == starts[i + 1] - starts[i])
           for i, (_, lo, hi) in enumerate(pieces)):
        yield columns, pieces[0][1], starts[last] + pieces[last][2]
        return
    for raw, lo, hi in pieces:
        yield decode_batches([raw], allocate=pa.allocate_buffer), lo, hi


def _raw_responses(spec: FetchRange):
    """Yield lists of (raw batch, lo, hi) per Fetch response (runs in the fetch thread);
    the next Fetch is sent before a response's batches are cut, so the broker works on it
    meanwhile."""
    position = spec.start
    conn = None
    attempt = 0
    in_flight = None  # fetch_offset of the request in flight
    try:
        while position < spec.end:
            if conn is None:
                conn = _connect(spec, attempt, position)
                if conn is _GONE:
                    return
                if conn is None:
                    attempt += 1
                    continue
                in_flight = None
            try:
                if in_flight is None:
                    conn.send(ApiKey.FETCH, _fetch_body(spec, position))
                    in_flight = position
                body = conn.receive()
                in_flight = None
            except (OSError, ConnectionError, ValueError) as exc:
                conn.close()
                conn, attempt = None, attempt + 1
                _back_off(attempt, f"fetching topic {spec.topic!r} partition "
                                   f"{spec.partition} at offset {position} failed: {exc}")
                continue
            part = _partition_answer(spec, body)
            code = ErrorCode.from_wire(part["error_code"])
            if code == ErrorCode.OFFSET_OUT_OF_RANGE:
                position = _out_of_range(spec, part, position)
                if position is None:
                    return
                continue
            if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and attempt >= _RETRIES:
                _lost(spec, position, spec.end, "the topic or partition no longer exists")
                return
            if code != ErrorCode.NONE:
                conn.close()
                conn, attempt = None, attempt + 1
                _back_off(attempt if code in _RETRIABLE_LEADER else _RETRIES + 1,
                          f"fetching topic {spec.topic!r} partition {spec.partition} at "
                          f"offset {position}: {code.name}")
                continue
            attempt = 0
            records = part["records"]
            if not records:
                if part["high_watermark"] <= position:
                    _lost(spec, position, spec.end,
                          f"the log now ends at {part['high_watermark']}")
                    return
                continue
            batches = split_batches(records)
            next_position = parse_header(batches[-1]).next_offset
            if next_position < spec.end:  # keep the next request in flight while decoding
                conn.send(ApiKey.FETCH, _fetch_body(spec, next_position))
                in_flight = next_position
            pieces, position = _pieces(spec, batches, position)
            if pieces:
                yield pieces
            if in_flight is not None and in_flight != position:
                # A gap made us move; the request in flight asked for the wrong offset.
                conn.receive()
                in_flight = None
    finally:
        if conn is not None:
            conn.close()


_GONE = object()  # _connect: the topic no longer exists, what was left to read is lost


def _connect(spec: FetchRange, attempt: int, position: int):
    """A socket to the partition's leader; None after a failed attempt (backed off
    already), ``_GONE`` when the topic is gone. Raises TslogReadError past the retries."""
    timeout_s = spec.timeout_ms / 1000
    try:
        address = spec.leader if (spec.leader and attempt == 0) else find_leader(
            spec.bootstrap, spec.topic, spec.partition, timeout_s, spec.security)
    except _TopicGone:
        _lost(spec, position, spec.end, "the topic no longer exists")
        return _GONE
    try:
        return BrokerSocket(address[0], address[1], timeout_s, CLIENT_ID,
                            record_views=True, allocate=pa.allocate_buffer,
                            security=spec.security, ssl_context=ssl_context_of(spec.security))
    except OSError as exc:
        _back_off(attempt + 1, f"cannot connect to {address[0]}:{address[1]} to read topic "
                               f"{spec.topic!r} partition {spec.partition}: {exc}")
        return None


def _back_off(attempt: int, failure: str) -> None:
    """Sleep before attempt ``attempt``; raise TslogReadError(``failure``) past the retries."""
    if attempt > _RETRIES:
        raise TslogReadError(failure) from None
    time.sleep(min(0.1 * 2 ** attempt, 2))


def _fetch_body(spec: FetchRange, offset: int) -> dict:
    return {"replica_id": -1, "max_wait_ms": 500, "min_bytes": 1,
            "max_bytes": spec.fetch_max_bytes,
            "topics": [{"topic": spec.topic, "partitions": [{
                "partition": spec.partition, "fetch_offset": offset,
                "max_bytes": spec.fetch_max_bytes}]}]}


def _partition_answer(spec: FetchRange, body: dict) -> dict:
    """The one partition's part of a Fetch response; TslogReadError for a request error."""
    if "topics" not in body:
        code = ErrorCode.from_wire(body.get("error_code", -1))
        raise TslogReadError(f"fetching topic {spec.topic!r} partition "
                             f"{spec.partition}: broker answered {code.name}")
    return body["topics"][0]["partitions"][0]


def _out_of_range(spec: FetchRange, part: dict, position: int) -> int | None:
    """Where to read on after OFFSET_OUT_OF_RANGE: the log's start when retention deleted
    ``position``, None when the log ends before it (the rest is lost); reports the loss."""
    log_start = part["log_start_offset"]
    if 0 <= position < log_start:
        _lost(spec, position, min(log_start, spec.end),
              f"deleted by retention; the log now starts at {log_start}")
        return log_start
    _lost(spec, position, spec.end, f"the log now ends at {part['high_watermark']}")
    return None


def _pieces(spec: FetchRange, batches: list, position: int) -> tuple[list, int]:
    """The (raw batch, lo, hi) pieces of ``batches`` within [position, end), one header
    read per batch, and the position after them; a gap is reported as lost."""
    pieces = []
    for raw in batches:
        header = parse_header(raw)
        if header.next_offset <= position:
            continue
        if header.base_offset >= spec.end:
            break
        if header.base_offset > position:
            _lost(spec, position, header.base_offset, "missing from the log")
        lo = max(position - header.base_offset, 0)
        hi = min(spec.end - header.base_offset, header.record_count)
        pieces.append((raw, lo, hi))
        position = header.base_offset + hi
    return pieces, position
