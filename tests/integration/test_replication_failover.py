"""Leader failover under an idempotent acks=all producer, with and without a slower clock.

What a user notices: the leader of a replicated partition is SIGKILLed while a producer
writes; a follower takes over within seconds; afterwards every record the producer saw
acknowledged is in the log exactly once, at the offset and with the LogAppendTime it was
acknowledged with, offsets have no gaps, and looking up each acknowledged LogAppendTime
finds that record's first offset. When the new leader's clock is 10 s behind, LogAppendTime
still never goes backwards along the partition (the new leader stamps max(last LAT, now)).
"""

from __future__ import annotations

import threading
import time

import pytest

from tests.helpers.replication import (
    assert_rejoins_with_the_leaders_files,
    bootstrap,
    consume_all,
    create_replicated,
    describe,
    wait_for,
)
from tslog.client import Consumer, Producer, TopicPartition

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

SKEW_ENV = {"TSLOG_TEST_CLOCK_OFFSET_MS": "-10000"}
ELECTION_BOUND_S = 15.0  # session timeout (2 s) + election + metadata propagation


class Writer(threading.Thread):
    """Sends numbered records continuously until stopped; then resolves every future."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__()
        self.topic = topic
        # The producer's own retry defaults (until delivery_timeout_ms) must ride out the
        # election: a user does not tune retries to survive a failover.
        self.producer = Producer(bootstrap, acks="all", enable_idempotence=True, linger_ms=2)
        self.futures: list = []
        self.stopping = threading.Event()

    def run(self) -> None:
        i = 0
        while not self.stopping.is_set():
            self.futures.append((b"v%07d" % i, self.producer.send(self.topic, b"v%07d" % i)))
            i += 1
            time.sleep(0.001)

    def acknowledged_count(self) -> int:
        return sum(1 for _, f in list(self.futures) if f.done() and f.exception() is None)

    def finish(self) -> tuple[dict, int]:
        """({value: RecordMetadata} of acknowledged sends, number of failed sends)."""
        self.stopping.set()
        self.join(30)
        self.producer.flush(120_000)
        acknowledged, failed = {}, 0
        for value, future in self.futures:
            try:
                acknowledged[value] = future.get(120)
            except Exception:  # noqa: BLE001 - not acknowledged: may or may not be in the log
                failed += 1
        self.producer.close()
        return acknowledged, failed


def run_failover(brokers, topic, info):
    """Write continuously, SIGKILL the leader, write on; return what the log holds."""
    old_leader = brokers[info.leader]
    survivors = [b for b in brokers if b is not old_leader]
    writer = Writer(bootstrap(brokers), topic)
    writer.start()
    try:
        wait_for(lambda: writer.acknowledged_count() > 300, 60, "writes before the kill")
        old_leader.kill()
        killed_at = time.monotonic()
        new = wait_for(lambda: (p := describe(bootstrap(survivors), topic)).leader not in (
            -1, info.leader) and p, 60, "a new leader")
        election_s = time.monotonic() - killed_at
        before = writer.acknowledged_count()
        wait_for(lambda: writer.acknowledged_count() > before + 300, 60, "writes after")
    finally:
        acknowledged, failed = writer.finish()
    assert election_s < ELECTION_BOUND_S, f"election took {election_s:.1f} s"
    assert new.leader_epoch > info.leader_epoch
    records = consume_all(bootstrap(survivors), topic, len(acknowledged))
    return records, acknowledged, failed, survivors


def check_log(records, acknowledged, survivors, topic):
    values = [r.value for r in records]
    assert len(values) == len(set(values)), "a record was written twice"
    assert [r.offset for r in records] == list(range(len(records)))
    by_value = {r.value: r for r in records}
    for value, metadata in acknowledged.items():
        record = by_value.get(value)
        assert record is not None, f"acknowledged {value!r} is missing"
        assert (record.offset, record.log_append_time) == (metadata.offset,
                                                           metadata.log_append_time)
    times = [r.log_append_time for r in records]
    assert times == sorted(times), "LogAppendTime went backwards"
    tp = TopicPartition(topic, 0)
    with Consumer(bootstrap(survivors)) as consumer:
        for lat in sorted({m.log_append_time for m in acknowledged.values()}):
            found = consumer.offsets_for_times({tp: lat})[tp]
            assert found is not None and found.timestamp == lat
            assert records[found.offset].log_append_time == lat
            assert found.offset == 0 or records[found.offset - 1].log_append_time < lat


def test_leader_killed_under_an_idempotent_producer_loses_and_duplicates_nothing(
        cluster_factory):
    brokers = cluster_factory(3)
    info = create_replicated(brokers, "failover", {"replica.lag.time.max.ms": "3000"})
    records, acknowledged, failed, survivors = run_failover(brokers, "failover", info)
    check_log(records, acknowledged, survivors, "failover")
    assert len(acknowledged) > 600 and failed == 0
    # The old leader comes back as a follower: whatever it appended that never committed is
    # cut (KIP-101) and it ends up with the new leader's files, byte for byte.
    assert_rejoins_with_the_leaders_files(brokers, brokers[info.leader], "failover")


def test_a_new_leader_with_a_slower_clock_keeps_log_append_time_non_decreasing(
        cluster_factory):
    brokers = cluster_factory(3)
    info = create_replicated(brokers, "skew", {"replica.lag.time.max.ms": "3000"})
    for follower in (b for i, b in enumerate(brokers) if i != info.leader):
        follower.restart(env={**follower.env, **SKEW_ENV})  # 10 s behind the leader
        wait_for(lambda: len(describe(bootstrap(brokers), "skew").isr) == 3, 60,
                 "the restarted follower back in the ISR")
    assert describe(bootstrap(brokers), "skew").leader == info.leader
    records, acknowledged, _, survivors = run_failover(brokers, "skew", info)
    check_log(records, acknowledged, survivors, "skew")
