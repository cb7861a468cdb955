"""Kafka codec micro-benchmark: a Produce request and a Fetch response, each carrying one
RecordBatch v2 of 1000 records (100-byte values, 10-byte keys), decoded and re-encoded per
second by tslog's codec and by kafka-python's in the same run; ``kio`` (a compiled Kafka
codec from PyPI) is measured on the message alone when it is installed.

    python bench/kafka_codec.py            # median of 7 runs
    python bench/kafka_codec.py --runs 3

"message" rows treat the records as opaque bytes (what the broker does with a Fetch
response it assembles from stored batches); "+ records" rows also decode every record of
the batch and build it again (what the Kafka listener does for a Produce request); the
"->" rows are the conversions between a Kafka batch and tslog's stored batch as the listener
runs them (``convert.kafka_bytes_to_tslog``, decode included, and ``tslog_to_kafka``), which
kafka-python has no counterpart for. Numbers
on a shared 2-core VM vary by +-20 %; compare rows of one run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tslog.protocol.batch_header import stamp  # noqa: E402
from tslog.protocol.kafka import codec, convert, record_batch  # noqa: E402

N = 1000
PRODUCE_V, FETCH_V = 9, 12


def _batch() -> bytes:
    return record_batch.encode_batch([b"v" * 100] * N, [b"key-%06d" % i for i in range(N)],
                                     list(range(1_700_000_000_000, 1_700_000_000_000 + N)))


def _produce(records: bytes) -> dict:
    return {"transactional_id": None, "acks": -1, "timeout_ms": 30000, "topic_data": [
        {"name": "events", "partition_data": [{"index": 0, "records": records}]}]}


def _fetch(records: bytes) -> dict:
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [
        {"topic": "events", "partitions": [
            {"partition_index": 0, "error_code": 0, "high_watermark": N, "last_stable_offset": N,
             "log_start_offset": 0, "aborted_transactions": None, "preferred_read_replica": -1,
             "records": records}]}]}


def _rate(fn, seconds: float = 0.4) -> float:
    count, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        fn()
        count += 1
    return count / elapsed


def tslog_rows(records: bytes) -> dict:
    produce = codec.encode_request(0, PRODUCE_V, 1, "bench", _produce(records))
    fetch = codec.encode_response(1, FETCH_V, 1, _fetch(records))

    def produce_message():
        request = codec.decode_request(produce)
        codec.encode_request(0, PRODUCE_V, 1, "bench", request.body)

    def produce_records():
        request = codec.decode_request(produce)
        raw = request.body["topic_data"][0]["partition_data"][0]["records"]
        batch = record_batch.decode_batch(raw)
        rebuilt = record_batch.encode_batch(batch.values, batch.keys, batch.timestamps(), batch.headers)
        request.body["topic_data"][0]["partition_data"][0]["records"] = rebuilt
        codec.encode_request(0, PRODUCE_V, 1, "bench", request.body)

    def fetch_message():
        _, body = codec.decode_response(1, FETCH_V, fetch)
        codec.encode_response(1, FETCH_V, 1, body)

    def fetch_records():
        _, body = codec.decode_response(1, FETCH_V, fetch)
        for batch in record_batch.iter_batches(body["responses"][0]["partitions"][0]["records"]):
            record_batch.encode_batch(batch.values, batch.keys, batch.timestamps(), batch.headers)
        codec.encode_response(1, FETCH_V, 1, body)

    stored = bytearray(convert.kafka_to_tslog(record_batch.decode_batch(records)))
    stamp(stored, 0, 0, 1_700_000_001_000)
    stored = bytes(stored)

    def to_tslog():  # what the listener runs per produced batch (column-wise, no lists)
        convert.kafka_bytes_to_tslog(records)

    def to_kafka():
        convert.tslog_to_kafka(stored, record_batch.LOG_APPEND_TIME)

    return {"Produce message": produce_message, "Produce + records": produce_records,
            "Fetch message": fetch_message, "Fetch + records": fetch_records,
            "Kafka -> tslog batch + records": to_tslog, "tslog -> Kafka batch + records": to_kafka}


def kafka_python_rows(records: bytes) -> dict:
    from kafka.protocol.consumer.fetch import FetchResponse
    from kafka.protocol.producer.produce import ProduceRequest
    from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

    P, F = ProduceRequest[PRODUCE_V], FetchResponse[FETCH_V]
    topic = P.TopicProduceData
    part = topic.PartitionProduceData
    request = P(transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[
        topic(name="events", partition_data=[part(index=0, records=records, version=PRODUCE_V)],
              version=PRODUCE_V)])
    produce = bytes(request.encode())
    fetch = codec.encode_body(1, FETCH_V, "Response", _fetch(records))

    def rebuild(raw):
        builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 24)
        for rec in DefaultRecordBatch(bytes(raw)):
            builder.append(rec.offset, rec.timestamp, rec.key, rec.value, rec.headers)
        return builder.build()

    def produce_message():
        P.decode(produce).encode()

    def produce_records():
        decoded = P.decode(produce)
        rebuild(decoded.topic_data[0].partition_data[0].records)
        decoded.encode()

    def fetch_message():
        F.decode(fetch).encode()

    def fetch_records():
        decoded = F.decode(fetch)
        rebuild(decoded.responses[0].partitions[0].records)
        decoded.encode()

    return {"Produce message": produce_message, "Produce + records": produce_records,
            "Fetch message": fetch_message, "Fetch + records": fetch_records}


def kio_rows(records: bytes) -> dict:
    try:
        import io

        from kio.schema.produce.v9.request import ProduceRequest
        from kio.serial import entity_reader, entity_writer
    except ImportError:
        return {}
    produce = codec.encode_body(0, PRODUCE_V, "Request", _produce(records))
    read, write = entity_reader(ProduceRequest), entity_writer(ProduceRequest)

    def produce_message():
        entity, _ = read(produce, 0)
        write(io.BytesIO(), entity)

    try:
        produce_message()
    except Exception as exc:  # kio's API moves between releases; report, do not fail
        print(f"kio skipped: {exc!r}")
        return {}
    return {"Produce message": produce_message}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    records = _batch()
    codecs = {"tslog": tslog_rows(records), "kafka-python": kafka_python_rows(records),
              "kio": kio_rows(records)}
    results = {}
    for _ in range(args.runs):
        for name, rows in codecs.items():
            for row, fn in rows.items():
                results.setdefault((row, name), []).append(_rate(fn))
    print(f"Kafka codec, 1 batch of {N} records per message, median of {args.runs} runs "
          f"(decode + encode per second)")
    print(f"{'operation':<32}{'codec':<14}{'ops/s':>9}{'records/s':>11}{'vs kafka-python':>17}")
    for (row, name), rates in sorted(results.items()):
        rate = statistics.median(rates)
        per_record = f"{rate * N:>11.0f}" if "records" in row else f"{'-':>11}"
        base = results.get((row, "kafka-python"))
        ratio = f"{rate / statistics.median(base):>16.2f}x" if base else f"{'-':>17}"
        print(f"{row:<32}{name:<14}{rate:>9.0f}{per_record}{ratio}")


if __name__ == "__main__":
    main()
