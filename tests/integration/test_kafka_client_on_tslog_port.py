"""A Kafka client (kafka-python, from PyPI) dialling a tslog port: the broker's log says, in
one line, which client it was and that this port speaks tslog's protocol."""

import re
import warnings

import pytest

with warnings.catch_warnings():  # kafka-python loads its schemas with a deprecated call
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka


def test_a_kafka_client_is_named_once_in_the_broker_log(broker):
    with pytest.raises(kafka.errors.KafkaError):  # it cannot bootstrap: not a Kafka broker
        kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap, request_timeout_ms=3000,
                            bootstrap_timeout_ms=3000, reconnect_backoff_ms=50)
    lines = [line for line in broker.log_text().splitlines() if "Kafka client" in line]
    assert len(lines) == 1, lines  # it reconnected several times; one warning says so
    assert "WARNING" in lines[0]
    assert re.search(r"127\.0\.0\.1:\d+: closing connection: a Kafka client connected: its first "
                     r"request is Kafka's ApiVersions v\d request \(client id 'kafka-python-",
                     lines[0])
    assert "this port speaks tslog's protocol, not Kafka's" in lines[0]
