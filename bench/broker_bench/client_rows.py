"""The benchmark's client rows, in a module that imports nothing of tslog but its public
client (``tslog.client``, inside each function).

Why apart: ``bench/before_after.py`` runs these same rows with another checkout's
interpreter (``python client_rows.py ROW ...``), whose ``tslog`` may predate every other
module the benchmark uses. So this file needs only the standard library to import, and the
sizes the whole benchmark shares live here.
"""

from __future__ import annotations

import json
import sys
import time

VALUE = b"v" * 100
BATCH_RECORDS = 1000
RECORD_OVERHEAD_BYTES = 16  # the client accumulator's per-record accounting (see _accumulator)
# The producer's ``enable_idempotence`` for each way a row may ask: the checkout's own default,
# or one set explicitly, so that two checkouts whose defaults differ are compared like for
# like (every client from 1ca667f, 2026-11-22, on takes the argument).
IDEMPOTENCE = {"default": {}, "plain": {"enable_idempotence": False},
               "idempotent": {"enable_idempotence": True}}


def produce_client(bootstrap: str, topic: str, records: int, acks,
                   idempotence: str = "default") -> float:
    """``tslog.client.Producer``: ``records`` x send(100-byte bytes) then flush(); seconds.
    ``idempotence``: a key of ``IDEMPOTENCE``."""
    from tslog.client import Producer

    with Producer(bootstrap, acks=acks, linger_ms=5,
                  batch_size=BATCH_RECORDS * (len(VALUE) + RECORD_OVERHEAD_BYTES),
                  **IDEMPOTENCE[idempotence]) as producer:
        producer.partitions_for(topic)  # metadata loaded before the clock starts
        send = producer.send
        started = time.perf_counter()
        for _ in range(records):
            future = send(topic, VALUE, partition=0)
        producer.flush()
        elapsed = time.perf_counter() - started
        future.get(30)  # the last record was acknowledged (raises if it failed)
    return elapsed


def produce_client_batches(bootstrap: str, topic: str, records: int, acks,
                           idempotence: str = "default") -> float:
    """``Producer.send_batch`` of ``BATCH_RECORDS`` values per call, then flush(); seconds."""
    from tslog.client import Producer

    values = [VALUE] * BATCH_RECORDS
    with Producer(bootstrap, acks=acks, linger_ms=5,
                  batch_size=BATCH_RECORDS * (len(VALUE) + RECORD_OVERHEAD_BYTES),
                  **IDEMPOTENCE[idempotence]) as producer:
        producer.partitions_for(topic)
        send_batch = producer.send_batch
        started = time.perf_counter()
        for _ in range(records // BATCH_RECORDS):
            future = send_batch(topic, values, partition=0)
        producer.flush()
        elapsed = time.perf_counter() - started
        future.get(30)
    return elapsed


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


def offsets_for_times_client(bootstrap: str, topic: str, targets: list[int]) -> list[float]:
    """``Consumer.offsets_for_times`` of each target in turn; microseconds per lookup."""
    from tslog.client import Consumer, TopicPartition

    tp = TopicPartition(topic, 0)
    with Consumer(bootstrap, group_id=None) as consumer:
        consumer.assign([tp])
        lookup = consumer.offsets_for_times
        lookup({tp: 0})  # connected before the clock
        latencies = []
        for target in targets:
            started = time.perf_counter_ns()
            found = lookup({tp: target})[tp]
            latencies.append((time.perf_counter_ns() - started) / 1e3)
            if found is None or found.timestamp < target:
                raise RuntimeError(f"lookup of {target} found {found}")
    return latencies


def main(argv: list[str]) -> None:
    """``ROW BOOTSTRAP TOPIC ARG...``; prints the row's figure as JSON.

    send / send_batch ACKS COUNT [default|plain|idempotent]: records/s. poll / poll_batches
    TIMESTAMP END_OFFSET: records/s. offsets_for_times TARGET...: microseconds per lookup."""
    row, bootstrap, topic, *args = argv
    if row in ("send", "send_batch"):
        acks, count = "all" if args[0] == "all" else int(args[0]), int(args[1])
        produce = produce_client if row == "send" else produce_client_batches
        result = count / produce(bootstrap, topic, count, acks, *args[2:3])
    elif row in ("poll", "poll_batches"):
        elapsed, count = consume_client(bootstrap, topic, int(args[0]), int(args[1]),
                                        batches=row == "poll_batches")
        result = count / elapsed
    elif row == "offsets_for_times":
        result = offsets_for_times_client(bootstrap, topic, [int(a) for a in args])
    else:
        raise SystemExit(f"unknown row {row!r}")
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
