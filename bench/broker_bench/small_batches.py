"""Small-batch produce rows: what a latency-sensitive producer (linger 0) costs the broker.

Such a producer sends batches of one record, each in a Produce request of its own; 8 of them
in flight on one connection (pre-encoded, raw socket, acks=1) measure the broker's capacity
for them. Redis' like for like is XADD without pipelining (``redis-benchmark -P 1``): one
connection with one command in flight, and 8 connections with one each (the same 8
outstanding). Every figure comes from this invocation.
"""

from __future__ import annotations

import time

from tslog.protocol.records import build_batch

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


def section_small_batches(setup: Setup) -> None:
    rates = bench_one_record_batches(setup)
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
             ratio(rate, redis_window)]]
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
