"""A Fetch answered into views: the records a Spark task reads are the records the broker holds.

``BrokerSocket(..., record_views=True)`` leaves each response's records in the buffer they
were received into instead of copying them out. Against a real broker, the records seen that
way must equal the copied ones byte for byte, response after response (a reused or
overwritten buffer would show up as a later response changing an earlier one's records), and
decode to the records produced.
"""

from __future__ import annotations

import pyarrow as pa

from tslog.client import Admin, Producer
from tslog.client.blocking import BrokerSocket
from tslog.protocol.messages import ApiKey
from tslog.protocol.connection import VIEWS_FROM_BYTES
from tslog.protocol.records import iter_records, split_batches


def fetch_body(offset: int) -> dict:
    return {"replica_id": -1, "max_wait_ms": 100, "min_bytes": 1, "max_bytes": 1 << 20,
            "topics": [{"topic": "views", "partitions": [
                {"partition": 0, "fetch_offset": offset, "max_bytes": 1 << 20}]}]}


def read_all(connection: BrokerSocket, end: int) -> list:
    """Every Fetch response's records value, from offset 0 to ``end``."""
    responses = []
    position = 0
    while position < end:
        connection.send(ApiKey.FETCH, fetch_body(position))
        part = connection.receive()["topics"][0]["partitions"][0]
        assert part["error_code"] == 0
        responses.append(part["records"])
        last = [r.offset for batch in split_batches(part["records"])
                for r in iter_records(batch)][-1]
        position = last + 1
    return responses


def test_records_received_as_views_equal_the_copies_and_what_was_produced(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("views", partitions=1)
    values = [b"value-%05d-" % i + b"x" * (i % 1200) for i in range(5000)]  # ~3 MB
    with Producer(broker.bootstrap, linger_ms=5) as producer:
        for i, value in enumerate(values):
            producer.send("views", value, key=b"k%d" % i, partition=0)
        producer.flush()

    host, port = broker.bootstrap.split(":")
    copying = BrokerSocket(host, int(port), 10.0)
    try:
        copied = read_all(copying, len(values))
    finally:
        copying.close()
    for allocate in (None, pa.allocate_buffer):
        connection = BrokerSocket(host, int(port), 10.0, record_views=True, allocate=allocate)
        try:
            viewed = read_all(connection, len(values))
        finally:
            connection.close()
        assert len(viewed) == len(copied) > 1  # several responses, several buffers
        # Responses large enough for views to pay are views; smaller ones (a short tail)
        # are copied out.
        assert {isinstance(v, memoryview) for v in viewed if len(v) >= VIEWS_FROM_BYTES} == {True}
        assert sum(len(v) >= VIEWS_FROM_BYTES for v in viewed) > 1
        assert [bytes(v) for v in viewed] == copied
    got = [(r.key, r.value) for records in viewed for batch in split_batches(records)
           for r in iter_records(batch)]
    assert got == [(b"k%d" % i, v) for i, v in enumerate(values)]
