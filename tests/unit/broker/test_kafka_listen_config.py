"""``kafka_listen`` as the broker's configuration reads it, and the Kafka address a
broker publishes with its cluster registration.

Goal: off unless set; a bad address, protected mode and a clustered port 0 stop the start
with one line each (a SCRAM login lifts protected mode, as on the native port); the flag and the environment set it;
a registration carrying a Kafka address is read back, one without it leaves the broker out
of the Kafka Metadata."""

from __future__ import annotations

import json

import pytest

from tslog.broker.__main__ import parse_flags
from tslog.broker.cluster.records import Changes, ClusterCache, ClusterKeys
from tslog.broker.cluster.view import LocalClusterView, kafka_address
from tslog.broker.config import BrokerConfig, ConfigError, load_config


def test_off_unless_set_and_read_from_the_flag_and_the_environment():
    assert BrokerConfig().kafka_listen is None
    flags, _, _ = parse_flags(["--kafka-listen", "127.0.0.1:9093"])
    assert load_config(flags, None, {})[0].kafka_listen == "127.0.0.1:9093"
    assert load_config({}, None, {"TSLOG_KAFKA_LISTEN": "127.0.0.1:0"})[0].kafka_listen == \
        "127.0.0.1:0"


@pytest.mark.parametrize("config, problem", [
    ({"kafka_listen": "9093"}, "kafka_listen: '9093' is not HOST:PORT"),
    ({"kafka_listen": "0.0.0.0:9093"}, "protected mode: kafka_listen = 0.0.0.0:9093 accepts"),
    ({"kafka_listen": "127.0.0.1:0", "etcd_endpoints": "127.0.0.1:2379", "listen":
      "127.0.0.1:9092"}, "a clustered broker needs a fixed kafka_listen port"),
])
def test_what_the_kafka_listener_cannot_serve_stops_the_start(config, problem):
    with pytest.raises(ConfigError) as error:
        BrokerConfig(**config)
    assert any(p.startswith(problem) for p in error.value.problems), error.value.problems


def test_an_open_kafka_listener_starts_with_allow_anonymous_or_a_login():
    assert BrokerConfig(kafka_listen="0.0.0.0:9093", allow_anonymous=True).kafka_listen
    assert BrokerConfig(kafka_listen="0.0.0.0:9093", listen="0.0.0.0:9092",
                        sasl_mechanisms="SCRAM-SHA-256").kafka_listen


def test_the_published_kafka_address_is_read_back_and_a_broker_without_one_left_out():
    keys = ClusterKeys("tslog")
    cache = ClusterCache(keys)
    with_kafka = {"host": "10.0.0.1", "port": 9092, "kafka_host": "10.0.0.1", "kafka_port": 9093}
    cache.apply(keys.broker(1), json.dumps(with_kafka).encode(), 5, 5, Changes())
    cache.apply(keys.broker(2), json.dumps({"host": "10.0.0.2", "port": 9092}).encode(), 6, 6,
                Changes())
    assert cache.kafka_brokers == {1: ("10.0.0.1", 9093)}
    assert set(cache.brokers) == {1, 2}
    cache.apply(keys.broker(1), None, 7, 5, Changes())
    assert cache.kafka_brokers == {}


def test_a_wildcard_kafka_host_is_advertised_as_the_native_host():
    config = BrokerConfig(kafka_listen="0.0.0.0:9093", allow_anonymous=True,
                          advertised_listen="broker-0.example:9092")
    assert kafka_address(config) == ("broker-0.example", 9093)
    view = LocalClusterView(0, ("127.0.0.1", 9092))
    assert view.kafka_brokers() == {}
