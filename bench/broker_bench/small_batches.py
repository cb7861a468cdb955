"""Small-batch produce rows: what a latency-sensitive producer (linger 0) costs the broker.

Such a producer sends batches of one record, each in a Produce request of its own; 8 of them
in flight on one connection (pre-encoded, raw socket, acks=1) measure the broker's capacity
for them. Beside it, tslog's own Python producer (``linger_ms=0``, ``max_in_flight=8``,
acks=1) sends records one by one; it batches whatever piles up while its 8 requests are out,
so the row prints the records per batch it really sent (batches counted in the log by a
Fetch afterwards). Redis' like for like is XADD without pipelining (``redis-benchmark -P 1``): one
connection with one command in flight, and 8 connections with one each (the same 8
outstanding). Every figure comes from this invocation.
"""

from __future__ import annotations

import time

from tslog.client import Producer
from tslog.protocol.batch_header import parse_header
from tslog.protocol.messages import ApiKey
from tslog.protocol.records import build_batch, split_batches

from .common import VALUE, connect, create_topic, median, print_table, ratio, spread, verdict
from .context import Setup
from .produce import produce_raw

WINDOW = 8
TARGET_RECORDS_PER_S = 200_000


def bench_one_record_batches(setup: Setup) -> list[float]:
    """Records/s per run: ``setup.small_batches`` 1-record batches, ``WINDOW`` in flight,
    each run on a fresh topic after a warm-up on it."""
    rates = []
    port = setup.broker.port
    with connect(port) as admin:
        for run in range(setup.runs):
            topic = f"small-{run}"
            create_topic(admin, topic)
            batch = build_batch([VALUE], create_times=int(time.time() * 1000))
            produce_raw(port, topic, max(50, setup.small_batches // 10), 1, WINDOW, batch)
            elapsed, _ = produce_raw(port, topic, setup.small_batches, 1, WINDOW, batch)
            rates.append(setup.small_batches / elapsed)
            admin.delete_topic(topic)
    return rates


def bench_linger_zero_producer(setup: Setup) -> tuple[list[float], list[float]]:
    """(records/s, records per batch) per run of tslog's Producer with linger 0 and
    ``WINDOW`` requests in flight, sending ``setup.small_batches`` records one by one."""
    rates, per_batch = [], []
    bootstrap = f"127.0.0.1:{setup.broker.port}"
    records = setup.small_batches
    with connect(setup.broker.port) as admin:
        for run in range(setup.runs):
            topic = f"linger0-{run}"
            create_topic(admin, topic)
            with Producer(bootstrap, acks=1, linger_ms=0, max_in_flight=WINDOW) as producer:
                producer.send(topic, VALUE, partition=0).get()  # warm: metadata, connection
                started = time.perf_counter()
                for _ in range(records):
                    producer.send(topic, VALUE, partition=0)
                producer.flush()
                rates.append(records / (time.perf_counter() - started))
            per_batch.append((records + 1) / batches_in(admin, topic, records + 1))
            admin.delete_topic(topic)
    return rates, per_batch


def batches_in(wire, topic: str, records: int) -> int:
    """How many batches partition 0 of ``topic`` holds for its first ``records`` records."""
    batches = offset = 0
    while offset < records:
        wire.sock.sendall(wire.encode(ApiKey.FETCH, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
            "topics": [{"topic": topic, "partitions": [
                {"partition": 0, "fetch_offset": offset, "max_bytes": 1 << 20}]}]},
            validate=False))
        pieces = split_batches(wire.read_body()["topics"][0]["partitions"][0]["records"])
        if not pieces:
            raise RuntimeError(f"{topic} ends at offset {offset}, below {records}")
        batches += len(pieces)
        offset = parse_header(pieces[-1]).next_offset
    return batches


def section_small_batches(setup: Setup) -> None:
    rates = bench_one_record_batches(setup)
    producer_rates, per_batch = bench_linger_zero_producer(setup)
    xadd = {}
    if setup.redis is not None:
        for clients in (1, WINDOW):
            xadd[clients] = [setup.redis.xadd_rate(clients, setup.xadd_unpipelined, pipeline=1)
                             for _ in range(setup.runs)]
    redis_c1 = median(xadd[1]) if xadd else None
    redis_window = median(xadd[WINDOW]) if xadd else None
    rate = median(rates)
    rows = [[f"tslog: pre-encoded Produce of one 1-record batch each, raw socket, {WINDOW} in "
             f"flight, acks=1", spread(rates), f">= {TARGET_RECORDS_PER_S:,}",
             verdict(rate >= TARGET_RECORDS_PER_S), ratio(rate, redis_c1),
             ratio(rate, redis_window)],
            [f"tslog: Producer(linger_ms=0, max_in_flight={WINDOW}, acks=1) sending records one "
             f"by one: {median(per_batch):.1f} records per batch ({min(per_batch):.1f}-"
             f"{max(per_batch):.1f})", spread(producer_rates), "-", "-",
             ratio(median(producer_rates), redis_c1),
             ratio(median(producer_rates), redis_window)]]
    for clients, figures in xadd.items():
        rows.append([f"Redis XADD, redis-benchmark -c {clients} -P 1 (no pipelining, no AOF)",
                     spread(figures), "-", "-", ratio(median(figures), redis_c1),
                     ratio(median(figures), redis_window)])
    print_table(
        f"Produce 1-record batches (a linger-0 producer), one partition ({setup.small_batches:,} "
        f"batches per run)",
        ["path", "records/s (min-max)", "target", "target?", "/ Redis XADD -P 1 c=1",
         f"/ Redis XADD -P 1 c={WINDOW}"],
        rows,
        notes=["one record per request: the broker's cost per request (frame, handler, batch "
               "checks, append, answer) is all there is; records are 100 bytes.",
               f"Redis -c {WINDOW} -P 1 keeps as many commands outstanding as the tslog row "
               "keeps requests in flight."])
