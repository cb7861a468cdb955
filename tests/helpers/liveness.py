"""The check every bad-input case ends with: the broker is alive, serves a normal client, and
still holds everything it acknowledged before.

``held`` maps (topic, partition) to the values acknowledged there, in order; the check reads
each partition from its start over a raw connection and compares exactly (nothing lost,
nothing added), then a real ``tslog.client`` Admin, Producer and Consumer create a fresh topic,
write a record to it with acks=all and read it back.
"""

from __future__ import annotations

import time
import uuid

from tests.helpers.broker_process import BrokerProcess
from tests.helpers.wire import Wire, split_values
from tslog.client import Admin, Consumer, Producer, TopicPartition


def assert_alive_and_holding(broker: BrokerProcess,
                             held: dict[tuple[str, int], list[bytes]]) -> None:
    assert broker.running, broker.log_text()[-3000:]
    with Wire(broker.host, broker.port) as wire:
        assert wire.api_versions()["error_code"] == 0
        for (topic, partition), values in held.items():
            answer = wire.fetch(topic, partition, 0)
            assert answer["error_code"] == 0, (topic, partition, answer)
            assert [value for _, value in split_values(answer["records"])] == values
    assert_serves_a_normal_client(broker)


def assert_serves_a_normal_client(broker: BrokerProcess) -> None:
    topic = f"probe-{uuid.uuid4().hex[:12]}"
    with Admin(broker.bootstrap) as admin:
        admin.create_topic(topic)
    with Producer(broker.bootstrap, acks="all") as producer:
        assert producer.send(topic, b"still here").get(10).offset == 0
    with Consumer(broker.bootstrap) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek(TopicPartition(topic, 0), 0)
        records = []
        deadline = time.monotonic() + 10
        while not records and time.monotonic() < deadline:
            records = consumer.poll(200)
    assert [record.value for record in records] == [b"still here"]
    with Admin(broker.bootstrap) as admin:
        admin.delete_topic(topic)
