"""Adding partitions to a replicated topic on three real brokers and etcd: the new partitions
get replicas, a leader and a full ISR on every broker's view, take produce and fetch, and
stay after a broker restarts; the old partitions keep their records."""

from __future__ import annotations

import pytest

from tests.helpers.replication import bootstrap, consume_all, wait_for
from tests.helpers.wire import Wire
from tests.integration.test_cluster_brokers import SESSION_MS, agreed_state, metadata
from tslog.client import Admin, Producer
from tslog.client.errors import InvalidPartitionsError, InvalidReplicationFactorError
from tslog.protocol.messages import ApiKey

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def fully_replicated(brokers, topic: str, count: int):
    """The agreed state when it has ``count`` partitions, each led with all 3 in its ISR."""
    state = agreed_state([b for b in brokers if b.running], topic)
    if state and len(state) == count and all(
            leader >= 0 and sorted(isr) == [0, 1, 2] for leader, _, _, isr in state.values()):
        return state
    return None


def produce(servers: str, topic: str, per_partition: dict[int, list[bytes]]) -> None:
    with Producer(servers, acks="all") as producer:
        futures = [producer.send(topic, value, partition=p)
                   for p, values in per_partition.items() for value in values]
        for future in futures:
            future.get(30)


def test_a_replicated_topic_grows_and_its_new_partitions_serve_and_survive_a_restart(
        cluster_factory):
    brokers = cluster_factory(3, session_timeout_ms=SESSION_MS)
    servers = bootstrap(brokers)
    wait_for(lambda: all(len(metadata(b)["brokers"]) == 3 for b in brokers), 10, "registrations")
    with Admin(servers) as admin:
        admin.create_topic("events", partitions=2, replication_factor=3)
    before = wait_for(lambda: fully_replicated(brokers, "events", 2), 30, "2 partitions in sync")
    produce(servers, "events", {0: [b"old-0"], 1: [b"old-1"]})

    controller = metadata(brokers[0])["controller_id"]
    other = next(b for b in brokers if b.node_id != controller)
    with Wire(other.host, other.port) as wire:  # any broker takes it, as CreateTopics
        grown = wire.request(ApiKey.CREATE_PARTITIONS, {
            "topics": [{"topic": "events", "count": 5}], "timeout_ms": 10_000,
            "validate_only": False})["topics"][0]
        assert grown == {"topic": "events", "error_code": 0, "error_message": None}
    after = wait_for(lambda: fully_replicated(brokers, "events", 5), 30, "5 partitions in sync")
    with Admin(servers) as admin:
        with pytest.raises(InvalidPartitionsError, match="has 5 partition"):
            admin.create_partitions({"events": 5})
    assert {p: after[p] for p in (0, 1)} == before  # the old partitions are untouched
    assert {leader for leader, *_ in after.values()} == {0, 1, 2}  # spread over the brokers
    for broker in brokers:
        assert sorted(d.name for d in broker.data_dir.glob("events-*")) == \
            [f"events-{p}" for p in range(5)]

    produce(servers, "events", {p: [b"new-%d" % p] for p in (2, 3, 4)})
    records = consume_all(servers, "events", 5)
    assert sorted((r.partition, r.offset, r.value) for r in records) == \
        [(0, 0, b"old-0"), (1, 0, b"old-1"), (2, 0, b"new-2"), (3, 0, b"new-3"),
         (4, 0, b"new-4")]

    restarted = brokers[2]
    restarted.restart()
    wait_for(lambda: fully_replicated(brokers, "events", 5), 30, "in sync after the restart")
    for broker in brokers:
        (entry,) = metadata(broker, ["events"])["topics"]
        assert len(entry["partitions"]) == 5
    produce(servers, "events", {4: [b"after-restart"]})
    records = consume_all(servers, "events", 6)
    assert sorted(r.value for r in records if r.partition == 4) == [b"after-restart", b"new-4"]
    with Admin(servers) as admin:  # through the client, after the restart
        admin.create_partitions({"events": 6})
    wait_for(lambda: fully_replicated(brokers, "events", 6), 30, "6 partitions in sync")


def test_too_few_live_brokers_for_the_new_replicas_is_refused(cluster_factory):
    brokers = cluster_factory(3, session_timeout_ms=SESSION_MS)
    servers = bootstrap(brokers)
    wait_for(lambda: all(len(metadata(b)["brokers"]) == 3 for b in brokers), 10, "registrations")
    with Admin(servers) as admin:
        admin.create_topic("events", partitions=1, replication_factor=3)
    wait_for(lambda: fully_replicated(brokers, "events", 1), 30, "1 partition in sync")
    brokers[2].kill()
    wait_for(lambda: len(metadata(brokers[0])["brokers"]) == 2, SESSION_MS / 1000 + 10,
             "the killed broker's registration expired")
    with Admin(bootstrap(brokers[:2])) as admin:
        with pytest.raises(InvalidReplicationFactorError, match="2 live broker"):
            admin.create_partitions({"events": 3})
        assert len(admin.describe_topic("events").partitions) == 1


def test_more_new_partitions_than_one_etcd_transaction_holds(cluster_factory):
    """200 new partitions take two transactions (etcd caps one at 128 operations)."""
    brokers = cluster_factory(3, session_timeout_ms=SESSION_MS)
    servers = bootstrap(brokers)
    wait_for(lambda: all(len(metadata(b)["brokers"]) == 3 for b in brokers), 10, "registrations")
    with Admin(servers) as admin:
        admin.create_topic("wide", partitions=1, replication_factor=1)
        admin.create_partitions({"wide": 201})

    def all_led():
        state = agreed_state(brokers, "wide")
        return state and len(state) == 201 and all(s[0] >= 0 for s in state.values())
    wait_for(all_led, 30, "201 partitions with leaders")
    assert sum(len(list(b.data_dir.glob("wide-*"))) for b in brokers) == 201
    produce(servers, "wide", {200: [b"last"]})
    assert [r.value for r in consume_all(servers, "wide", 1) if r.partition == 200] == [b"last"]
