"""List and describe agree for every group, whichever protocol its members speak (issue 41:
while a confluent-kafka group had two live members, `tslog groups list` showed `cfl STABLE 2
members` and `tslog groups describe cfl` showed `EMPTY, epoch 0, 0 members`).

One broker holds a group of every kind at once: a confluent-kafka (librdkafka) classic group
with two live members, a tslog consumer's KIP-848 group, a classic group whose only member
left without committing (Kafka keeps it, Empty, until it is deleted) and a group that only
has committed offsets. Then every group that is listed, on each port, is described on that
port with the same state and member count, and deleted as it is listed: through `tslog groups list/describe` (tslog's
ListGroups and ConsumerGroupDescribe) and through librdkafka's admin client on the Kafka port
(ListGroups and DescribeGroups).

Runs on the package's ``kafka_broker`` (a broker with its Kafka listener on).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest
from confluent_kafka import Consumer as KafkaConsumer
from confluent_kafka import ConsumerGroupState, KafkaException
from confluent_kafka.admin import AdminClient

from tslog.client import Admin, Consumer, TopicPartition
from tslog.client.errors import NonEmptyGroupError

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

ROUNDS = 300  # polls of 100 ms while waiting for an assignment (counted, not timed)


def cli(broker, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "tslog.client.cli", "groups", *args,
                           "--bootstrap", broker.bootstrap],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


class ClassicMembers(threading.Thread):
    """librdkafka group consumers polling in one thread until told to stop."""

    def __init__(self, address: str, topic: str, group: str, count: int) -> None:
        super().__init__(daemon=True)
        self.consumers = [KafkaConsumer({
            "bootstrap.servers": address, "group.id": group, "client.id": f"cfl-{n}",
            "session.timeout.ms": 10000, "enable.auto.commit": False})
            for n in range(count)]
        for consumer in self.consumers:
            consumer.subscribe([topic])
        self.assigned = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            for consumer in self.consumers:
                consumer.poll(0.05)
            self.assigned = sum(1 for c in self.consumers if c.assignment())
        for consumer in self.consumers:
            consumer.close()


def settle(condition, what: str) -> None:
    for _ in range(ROUNDS):
        if condition():
            return
        threading.Event().wait(0.1)
    raise AssertionError(what)


def left_empty_classic_group(address: str, topic: str, group: str) -> None:
    """A classic group whose one member joined, got its partitions and left, committing
    nothing: the group stays, Empty, with no offsets."""
    members = ClassicMembers(address, topic, group, 1)
    members.start()
    try:
        settle(lambda: members.assigned == 1, "the lone classic member never got partitions")
    finally:
        members.stop.set()
        members.join(30)


def tslog_views(broker) -> dict[str, tuple[str, int]]:
    """{group: (state, members)} as `tslog groups list` shows it, and as `tslog groups
    describe` shows each listed group."""
    listed = {}
    for line in cli(broker, "list").splitlines():
        group, state, members = line.split("\t")
        listed[group] = (state, int(members.split()[0]))
    described = {}
    for group in listed:
        document = json.loads(cli(broker, "describe", group, "--format", "json"))
        described[group] = (document["state"], len(document["members"]))
    return listed, described


def kafka_views(admin: AdminClient, groups) -> tuple[dict, dict]:
    listed = {g.group_id: g.state for g in admin.list_consumer_groups().result(30).valid
              if g.group_id in groups}
    described = {}
    for group, future in admin.describe_consumer_groups(list(listed)).items():
        found = future.result(30)
        described[group] = found
    return listed, described


def test_every_group_is_described_as_it_is_listed_on_both_ports(kafka_broker):
    topic = kafka_broker.topic("views", partitions=2)
    live = ClassicMembers(kafka_broker.kafka, topic, "cfl", 2)
    live.start()
    left_empty_classic_group(kafka_broker.kafka, topic, "cfl-left")
    with Admin(kafka_broker.bootstrap) as admin:
        admin.alter_consumer_group_offsets("offsets-only", {TopicPartition(topic, 0): 0})
    native = Consumer(kafka_broker.bootstrap, group_id="tslog-848", client_id="tslog-app")
    try:
        native.subscribe([topic])
        settle(lambda: native.poll(100) is not None and len(native.assignment()) == 2,
               "the tslog consumer never got both partitions")
        settle(lambda: live.assigned == 2, "the confluent-kafka group never settled")
        groups = {"cfl", "cfl-left", "offsets-only", "tslog-848"}

        listed, described = tslog_views(kafka_broker)
        assert groups <= set(listed)
        assert {g: listed[g] for g in groups} == {
            "cfl": ("STABLE", 2), "cfl-left": ("EMPTY", 0), "offsets-only": ("EMPTY", 0),
            "tslog-848": ("STABLE", 1)}
        assert described == listed

        kafka_admin = AdminClient({"bootstrap.servers": kafka_broker.kafka})
        kafka_listed, kafka_described = kafka_views(kafka_admin, groups)
        assert kafka_listed == {"cfl": ConsumerGroupState.STABLE,
                                "cfl-left": ConsumerGroupState.EMPTY,
                                "offsets-only": ConsumerGroupState.EMPTY,
                                "tslog-848": ConsumerGroupState.STABLE}
        assert {g: d.state for g, d in kafka_described.items()} == kafka_listed
        assert {g: len(d.members) for g, d in kafka_described.items()} == {
            "cfl": 2, "cfl-left": 0, "offsets-only": 0, "tslog-848": 1}
        (member,) = kafka_described["tslog-848"].members
        assert (member.client_id, member.host) == ("tslog-app", "/127.0.0.1")
        assert sorted((tp.topic, tp.partition) for tp in member.assignment.topic_partitions) \
            == [(topic, 0), (topic, 1)]

        # Deleted as listed: a group with members of either protocol is refused, an empty
        # classic group that never committed goes, and is listed no more.
        with Admin(kafka_broker.bootstrap) as admin:
            with pytest.raises(NonEmptyGroupError):
                admin.delete_consumer_groups(["cfl"])
            admin.delete_consumer_groups(["cfl-left"])
            assert "cfl-left" not in {g.group_id for g in admin.list_consumer_groups()}
        with pytest.raises(KafkaException, match="NON_EMPTY_GROUP"):
            kafka_admin.delete_consumer_groups(["tslog-848"])["tslog-848"].result(30)
    finally:
        native.close()
        live.stop.set()
        live.join(30)
