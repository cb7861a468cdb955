"""A broker with a Kafka listener, one per test module (starting one costs about a second),
and small helpers around the three Kafka clients the tests use (none of them written here:
kafka-python, aiokafka and confluent-kafka/librdkafka, from PyPI)."""

from __future__ import annotations

import itertools

import pytest

from tests.helpers.broker_process import BrokerProcess, free_port

_names = itertools.count()


class KafkaBroker:
    """A started ``BrokerProcess`` and its Kafka address (a port chosen free, as the native
    listener's fixture does, so the test knows it before the broker starts)."""

    def __init__(self, process: BrokerProcess, kafka_port: int) -> None:
        self.process = process
        self.bootstrap = process.bootstrap  # tslog's own protocol
        self.kafka = f"127.0.0.1:{kafka_port}"
        self.kafka_port = kafka_port

    def topic(self, prefix: str = "t", partitions: int = 1, **config: str) -> str:
        """A new topic with ``config`` (dotted names as keyword arguments use underscores:
        ``message_timestamp_type="CreateTime"``), created through tslog's own admin."""
        from tslog.client import Admin
        name = f"{prefix}{next(_names)}"
        with Admin(self.bootstrap) as admin:
            admin.create_topic(name, partitions=partitions,
                               config={k.replace("_", "."): v for k, v in config.items()})
        return name


def start_kafka_broker(base, **config) -> KafkaBroker:
    port = free_port()
    process = BrokerProcess(base / "broker", args=["--kafka-listen", f"127.0.0.1:{port}"],
                            config=config)
    process.start()
    return KafkaBroker(process, port)


@pytest.fixture(scope="module")
def kafka_broker(tmp_path_factory):
    broker = start_kafka_broker(tmp_path_factory.mktemp("kafka"))
    yield broker
    broker.process.cleanup()
