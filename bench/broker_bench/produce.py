"""Produce rows: pre-encoded batches pipelined on a raw connection (the broker's capacity)
and ``tslog.client.Producer`` (``send`` one record per call, ``send_batch``), against Redis
XADD; and the partition the consume and lookup sections read."""

from __future__ import annotations

import time

from tslog.protocol.messages import ApiKey
from tslog.protocol.records import build_batch

from tests.helpers.broker_process import BrokerProcess

from .common import (
    BATCH_RECORDS,
    REDIS_PER_MS,
    VALUE,
    connect,
    create_topic,
    median,
    print_table,
    ratio,
    spread,
    verdict,
)
from .client_rows import produce_client, produce_client_batches
from .context import Setup


def produce_body(topic: str, batch: bytes, acks: int) -> dict:
    return {"acks": acks, "timeout_ms": 30_000,
            "topics": [{"topic": topic, "partitions": [{"partition": 0, "records": batch}]}]}


def produce_raw(port: int, topic: str, batches: int, acks: int, window: int,
                batch: bytes | None = None) -> tuple[float, list[int]]:
    """Pipelined Produce of ``batches`` copies of one pre-built batch, ``window`` in flight.

    Frames are encoded before the clock starts (the broker's capacity, not the client's).
    Returns (seconds, LogAppendTime of every batch in order).
    """
    if batch is None:
        batch = build_batch([VALUE] * BATCH_RECORDS, create_times=int(time.time() * 1000))
    with connect(port) as raw:
        frames = [raw.encode(ApiKey.PRODUCE, produce_body(topic, batch, acks), validate=False)
                  for _ in range(batches)]
        sendall = raw.sock.sendall
        times = []
        sent = answered = 0
        started = time.perf_counter()
        while sent < min(window, batches):
            sendall(frames[sent])
            sent += 1
        while answered < batches:
            part = raw.read_body()["topics"][0]["partitions"][0]
            if part["error_code"]:
                raise RuntimeError(f"produce to {topic} failed: error {part['error_code']}")
            times.append(part["log_append_time"])
            answered += 1
            if sent < batches:
                sendall(frames[sent])
                sent += 1
        elapsed = time.perf_counter() - started
    return elapsed, times


def bench_produce(broker: BrokerProcess, runs: int, batches: int, client_records: int,
                  window: int) -> dict:
    """{(path, acks): [records/s per run]}; each run writes to a fresh topic."""
    results: dict = {}
    with connect(broker.port) as admin:
        create_topic(admin, "warmup")
        produce_raw(broker.port, "warmup", max(5, batches // 10), 1, window)
        admin.delete_topic("warmup")
        for run in range(runs):
            for acks in (1, -1):
                name = "all" if acks == -1 else "1"
                client_acks = "all" if acks == -1 else 1
                paths = (
                    ("raw", lambda topic: batches * BATCH_RECORDS / produce_raw(
                        broker.port, topic, batches, acks, window)[0]),
                    ("client", lambda topic: client_records / produce_client(
                        broker.bootstrap, topic, client_records, client_acks)),
                    ("batch", lambda topic: client_records / produce_client_batches(
                        broker.bootstrap, topic, client_records, client_acks)),
                )
                for path, records_per_s in paths:
                    topic = f"{path}-acks{name}-{run}"
                    create_topic(admin, topic)
                    results.setdefault((path, acks), []).append(records_per_s(topic))
                    admin.delete_topic(topic)
    return results


def fill_partition(broker: BrokerProcess, topic: str, records: int, window: int) -> list[int]:
    """Append ``records`` records (batches of 1000); return each batch's LogAppendTime."""
    with connect(broker.port) as admin:
        create_topic(admin, topic)
    batch = build_batch([VALUE] * BATCH_RECORDS, create_times=int(time.time() * 1000))
    append_times: list[int] = []
    remaining = records // BATCH_RECORDS
    while remaining:
        chunk = min(remaining, 500)  # bounded memory for the pre-encoded frames
        _, times = produce_raw(broker.port, topic, chunk, 1, window, batch)
        append_times += times
        remaining -= chunk
    return append_times


def section_produce(setup: Setup) -> None:
    produced = bench_produce(setup.broker, setup.runs, setup.produce_batches,
                             setup.client_records, setup.window)
    xadd = {}
    if setup.redis is not None:
        for clients in (1, 50):
            xadd[clients] = [setup.redis.xadd_rate(clients, setup.xadd_requests)
                             for _ in range(setup.runs)]
    redis_c1 = median(xadd[1]) if xadd else None
    labels = {
        ("raw", 1): f"pre-encoded batches, raw socket, {setup.window} in flight (broker capacity)",
        ("client", 1): "tslog.client.Producer: send() x N + flush()",
        ("batch", 1): f"tslog.client.Producer: send_batch({BATCH_RECORDS} values) x N/"
                      f"{BATCH_RECORDS} + flush()",
        ("batch", -1): f"tslog.client.Producer(acks='all', idempotent: the default): "
                       f"send_batch({BATCH_RECORDS} values) x N/{BATCH_RECORDS} + flush()",
        ("raw", -1): f"pre-encoded batches, raw socket, {setup.window} in flight",
        ("client", -1): "tslog.client.Producer(acks='all', idempotent: the default): send() x N "
                        "+ flush()",
    }
    rows = []
    for acks in (1, -1):
        for path in ("raw", "client", "batch"):
            rates = produced[(path, acks)]
            rate = median(rates)
            if path == "client":  # not batches of 1000: the targets are for those
                target, ok = "- (one record per call)", None
            elif acks == 1:
                target = "3x Redis c=1 and >= 1M"
                ok = rate >= 1e6 and (redis_c1 is None or rate >= 3 * redis_c1)
            else:
                target = ">= 0.5M"
                ok = rate >= 0.5e6
            rows.append(["1" if acks == 1 else "all (fsync, group commit)", labels[(path, acks)],
                         spread(rates), spread(rates, len(VALUE) / 1e6),
                         spread(rates, (len(VALUE) + 12) / 1e6), target, verdict(ok),
                         ratio(rate, redis_c1)])
    for clients, rates in xadd.items():
        rate = median(rates)
        rows.append(["-", f"Redis XADD, redis-benchmark -c {clients} -P 100 (no AOF)",
                     spread(rates), spread(rates, len(VALUE) / 1e6), "-", "-", "-",
                     ratio(rate, redis_c1)])
    print_table(
        f"Produce, one producer, one partition ({setup.produce_batches:,} batches raw / "
        f"{setup.client_records:,} records via the client per run)",
        ["acks", "path", "records/s (min-max)", "value MB/s", "batch MB/s", "target",
         "target?", "tslog/Redis XADD c=1"],
        rows,
        notes=["value MB/s counts the 100-byte values only; batch MB/s the ~112 bytes a "
               "record takes in a batch.",
               "the targets are for batches of 1000 (the raw and send_batch rows); send() "
               "hands the client one record per call, so its rows measure the client's Python "
               "work per record (about 1 us) and carry no target.",
               "Redis XADD (redis-benchmark, C client, 100 commands pipelined) is Redis' "
               "best case, in memory without persistence; the acks=all rows compare "
               "against the same figure."])


def section_fill(setup: Setup) -> None:
    """The partition (and Redis stream 't') that the consume and lookup sections read."""
    started = time.perf_counter()
    setup.append_times = fill_partition(setup.broker, setup.topic, setup.partition_records,
                                        setup.window)
    fill_s = time.perf_counter() - started
    with connect(setup.broker.port) as raw:
        end_offset = raw.log_end_offset(setup.topic)
    if end_offset != setup.partition_records:
        raise RuntimeError(f"partition holds {end_offset} records, not {setup.partition_records}")
    line = (f"\n  lookup/consume partition: {setup.partition_records:,} records in "
            f"{len(setup.append_times):,} batches, LogAppendTime span "
            f"{setup.append_times[-1] - setup.append_times[0]:,} ms, filled in {fill_s:.1f} s")
    if setup.redis is not None:
        redis_fill_s = setup.redis.fill("t", setup.partition_records)
        line += (f"; Redis stream 't': {setup.partition_records:,} entries, ids "
                 f"<ms>-0..{REDIS_PER_MS - 1} over {setup.partition_records // REDIS_PER_MS:,} "
                 f"ms, filled with redis-cli --pipe in {redis_fill_s:.1f} s")
    print(line)
