"""`tslog groups describe` names each member's host and client id, as kafka-consumer-groups'
``--describe --members`` does, for both kinds of group: a tslog consumer's (KIP-848, its
client id from the request header, its host from the connection, kept from its join) and a
Kafka client's classic group (kafka-python through the Kafka listener). A raw-wire member
connecting from 127.0.0.2 shows that the host is the address the member came from.

Runs on the package's ``kafka_broker`` (a broker with its Kafka listener on).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest

from tests.helpers.group_wire import join
from tests.helpers.wire import Wire
from tslog.client import Admin, Consumer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def describe(broker, group: str, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "tslog.client.cli", "groups", "describe",
                           group, "--bootstrap", broker.bootstrap, *args],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def wait_for(condition, what: str, timeout_s: float = 45.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def test_native_members_show_the_host_they_came_from_and_their_client_id(kafka_broker):
    topic = kafka_broker.topic("ids", partitions=2)
    host, port = kafka_broker.bootstrap.split(":")
    with Consumer(kafka_broker.bootstrap, group_id="native-ids",
                  client_id="billing-app") as consumer, \
            Wire(host, int(port), client_id="wire-from-2", source="127.0.0.2") as wire:
        consumer.subscribe([topic])
        wait_for(lambda: consumer.poll(100) is not None and consumer.assignment(),
                 "the tslog consumer never got partitions")
        wire_member, _ = join(wire, "native-ids", [topic])
        with Admin(kafka_broker.bootstrap) as admin:
            group = admin.describe_consumer_groups(["native-ids"])["native-ids"]
        shown = {m.member_id: (m.client_host, m.client_id) for m in group.members}
        assert shown[wire_member] == ("127.0.0.2", "wire-from-2")
        (native,) = [m for m in group.members if m.member_id != wire_member]
        assert (native.client_host, native.client_id) == ("127.0.0.1", "billing-app")
        members = {m["member_id"]: m for m in json.loads(
            describe(kafka_broker, "native-ids", "--format", "json"))["members"]}
        assert (members[wire_member]["host"], members[wire_member]["client_id"]) == (
            "127.0.0.2", "wire-from-2")
        text = describe(kafka_broker, "native-ids")
    header = next(line for line in text.splitlines() if line.startswith("MEMBER-ID"))
    assert header.split() == ["MEMBER-ID", "HOST", "CLIENT-ID", "EPOCH", "STATE", "PARTITIONS"]
    rows = {line.split()[0]: line.split() for line in text.splitlines()}
    assert rows[wire_member][1:3] == ["127.0.0.2", "wire-from-2"]
    assert rows[native.member_id][1:3] == ["127.0.0.1", "billing-app"]


class KafkaPythonMember(threading.Thread):
    """A kafka-python group consumer polling in its own thread (it heartbeats from poll)."""

    def __init__(self, address: str, topic: str) -> None:
        super().__init__(daemon=True)
        from kafka import KafkaConsumer
        self.consumer = KafkaConsumer(bootstrap_servers=address, group_id="classic-ids",
                                      client_id="kp-billing", session_timeout_ms=6000,
                                      heartbeat_interval_ms=300)
        self.consumer.subscribe([topic])
        self.assigned: set[int] = set()
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.consumer.poll(timeout_ms=200)
            self.assigned = {tp.partition for tp in self.consumer.assignment()}
        self.consumer.close()


def test_a_kafka_clients_classic_group_members_show_host_client_id_and_partitions(kafka_broker):
    topic = kafka_broker.topic("classic", partitions=2)
    member = KafkaPythonMember(kafka_broker.kafka, topic)
    member.start()
    try:
        wait_for(lambda: member.assigned == {0, 1}, "kafka-python never got both partitions")
        document = json.loads(describe(kafka_broker, "classic-ids", "--format", "json"))
        text = describe(kafka_broker, "classic-ids")
    finally:
        member.stop.set()
        member.join(30)
    (shown,) = document["members"]
    assert (shown["host"], shown["client_id"]) == ("127.0.0.1", "kp-billing")
    assert sorted(map(tuple, shown["assigned"])) == [(topic, 0), (topic, 1)]
    assert document["state"] == "STABLE"
    (row,) = [line.split() for line in text.splitlines() if line.startswith("kp-billing-")]
    assert row[1:3] == ["127.0.0.1", "kp-billing"] and row[-1] == f"{topic}-0,{topic}-1"
