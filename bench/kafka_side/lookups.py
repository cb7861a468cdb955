"""Lookup by time at 10^6 and 10^7 records (or the sizes asked for): one topic per size on
each broker, filled once per invocation through the raw Kafka Produce (the same
pre-encoded batches of 1000 records to both, LogAppendTime topics, so both index the
broker's clock), then in every run the same random times looked up three ways: the raw
Kafka ListOffsets loop against both brokers, confluent-kafka's ``offsets_for_times``
against both, and tslog's own Consumer on tslog's port."""

from __future__ import annotations

import random

from . import clients, raw_kafka


def fill(sides: dict[str, str], sizes: list[int]) -> dict[int, str]:
    """{size: topic} with ``size`` records on every side ({name: Kafka bootstrap})."""
    topics = {}
    for size in sizes:
        topic = topics[size] = f"lookup-{size}"
        for bootstrap in sides.values():
            clients.create_topic(bootstrap, topic)
            raw_kafka.produce(bootstrap, topic, size // raw_kafka.BATCH_RECORDS)
    return topics


def random_times(bootstrap: str, topic: str, count: int, seed: int) -> list[int]:
    """``count`` random times between the topic's first and last record's."""
    first, last, _ = clients.record_times(bootstrap, topic)
    rng = random.Random(seed)
    return [rng.randint(first, last) for _ in range(count)]


def one_run(run: int, sides: dict[str, str], native: str, topics: dict[int, str],
            lookups: int, figures: dict, solo) -> None:
    """Every lookup path once per size; the sides alternate first by run, each alone
    (``solo(name)``, ``alone.py``). ``figures`` gets lists of seconds per lookup under
    (op, path, side)."""
    order = list(sides.items())
    if run % 2:
        order.reverse()
    add = figures.setdefault
    for name, bootstrap in order:
        with solo(name):
            for size, topic in topics.items():
                op = f"lookup, {size:,} records"
                times = random_times(bootstrap, topic, lookups, run * 7919 + size)
                add((op, "raw Kafka ListOffsets loop", name), []).append(
                    raw_kafka.list_offsets_loop(bootstrap, topic, times))
                add((op, "confluent-kafka offsets_for_times", name), []).append(
                    clients.confluent_lookups(bootstrap, topic, times))
                if name == "tslog":
                    add((op, "tslog Consumer.offsets_for_times, native port", name),
                        []).append(clients.tslog_lookups(native, topic, times))
