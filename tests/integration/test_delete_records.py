"""Trimming a log (issue 40): ``tslog topics delete-records`` by offset and, since this log
is searched by time, by time through the time index; Kafka's DeleteRecords on the Kafka
listener with kafka-python's and confluent-kafka's admin clients as the oracles; the new log
start survives SIGKILL and a restart, frees whole segments, and followers take it up so a
failover does not bring deleted records back. Real brokers only."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.broker_process import BrokerProcess, free_port
from tslog.client import Admin, Consumer, Producer, TopicPartition

TSLOG = str(Path(sys.executable).parent / "tslog")


def tslog(bootstrap: str, *args) -> str:
    done = subprocess.run([TSLOG, "--bootstrap", bootstrap, *args], capture_output=True,
                          timeout=60, text=True, env=dict(os.environ))
    assert done.returncode == 0, (args, done.stderr)
    return done.stdout


def produce(bootstrap: str, topic: str, values: list[bytes], partition: int = 0) -> list:
    with Producer(bootstrap, linger_ms=0) as producer:
        return [producer.send(topic, value, partition=partition).get(10) for value in values]


def values_from_start(bootstrap: str, topic: str, partition: int = 0) -> list[bytes]:
    tp = TopicPartition(topic, partition)
    with Consumer(bootstrap) as consumer:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        values = []
        while consumer.position(tp) < end:
            values += [record.value for record in consumer.poll(1000)]
        return values


def segment_files(data_dir: Path, topic: str) -> int:
    return len(list((data_dir / f"{topic}-0").glob("*.log")))


def test_delete_records_by_offset_and_by_time_is_durable_and_frees_segments(tmp_path):
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        b = broker.bootstrap
        tslog(b, "topics", "create", "trim", "--config", "segment.bytes=1024")
        first = produce(b, "trim", [b"old-%02d" % i for i in range(40)])
        time.sleep(0.01)  # a later LogAppendTime for the second lot (the broker's clock)
        second = produce(b, "trim", [b"new-%02d" % i for i in range(10)])
        segments = segment_files(broker.data_dir, "trim")
        assert segments > 3

        out = tslog(b, "topics", "delete-records", "trim", "--before-offset", "25")
        assert "log start 25 (25 records deleted)" in out
        assert values_from_start(b, "trim")[0] == b"old-25"
        assert segment_files(broker.data_dir, "trim") < segments  # whole segments freed

        cut = second[0].log_append_time  # the time index finds the first "new" record
        out = tslog(b, "topics", "delete-records", "trim", "--before-time", str(cut))
        assert f"log start {second[0].offset} (15 records deleted)" in out
        assert first[-1].offset + 1 == second[0].offset
        row = tslog(b, "topics", "describe", "trim").splitlines()[2]
        assert row.split()[-3:] == ["40", "50", "10"]  # start, end, records (XLEN)

        broker.restart(kill=True)  # SIGKILL: no clean shutdown
        assert values_from_start(b, "trim") == [b"new-%02d" % i for i in range(10)]
        broker.restart()
        with Admin(b) as admin:
            assert admin.list_offsets({("trim", 0): -2})[("trim", 0)].offset == 40
        refused = subprocess.run([TSLOG, "--bootstrap", b, "topics", "delete-records", "trim",
                                  "--before-offset", "99"], capture_output=True, text=True,
                                 timeout=60)
        assert refused.returncode == 1 and "OFFSET_OUT_OF_RANGE" in refused.stderr
    finally:
        broker.cleanup()


def test_kafka_clients_delete_records_on_the_kafka_listener(tmp_path):
    from confluent_kafka import TopicPartition as RdTopicPartition
    from confluent_kafka.admin import AdminClient
    from kafka import TopicPartition as KafkaTopicPartition
    from kafka.admin import KafkaAdminClient

    kafka_port = free_port()
    broker = BrokerProcess(tmp_path / "data",
                           args=["--kafka-listen", f"127.0.0.1:{kafka_port}"]).start()
    try:
        with Admin(broker.bootstrap) as admin:
            admin.create_topic("kt", partitions=2)
        for partition in (0, 1):
            produce(broker.bootstrap, "kt", [b"%d-%d" % (partition, i) for i in range(10)],
                    partition)
        kafka_admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{kafka_port}")
        try:
            answer = kafka_admin.delete_records({KafkaTopicPartition("kt", 0): 4})
        finally:
            kafka_admin.close()
        assert answer[KafkaTopicPartition("kt", 0)]["low_watermark"] == 4
        rdkafka = AdminClient({"bootstrap.servers": f"127.0.0.1:{kafka_port}"})
        [(_, future)] = rdkafka.delete_records([RdTopicPartition("kt", 1, 7)]).items()
        assert future.result(30).low_watermark == 7
        assert values_from_start(broker.bootstrap, "kt", 0)[0] == b"0-4"
        assert values_from_start(broker.bootstrap, "kt", 1)[0] == b"1-7"
        # past the high watermark: Kafka's OFFSET_OUT_OF_RANGE, and the broker serves on
        [(_, future)] = rdkafka.delete_records([RdTopicPartition("kt", 1, 50)]).items()
        with pytest.raises(Exception, match="(?i)out of range"):
            future.result(30)
        assert broker.running
    finally:
        broker.cleanup()


@pytest.mark.slow
def test_followers_take_up_the_new_log_start(cluster_factory):
    brokers = cluster_factory(2)
    bootstrap = ",".join(b.bootstrap for b in brokers)
    with Admin(bootstrap) as admin:
        admin.create_topic("replicated", partitions=1, replication_factor=2)
        leader = admin.describe_topic("replicated").partitions[0].leader
    produce(bootstrap, "replicated", [b"r%d" % i for i in range(10)])
    with Admin(bootstrap) as admin:
        assert admin.delete_records({("replicated", 0): 6}) == {
            TopicPartition("replicated", 0): 6}
    follower = next(b for b in brokers if b.node_id != leader)
    marker = follower.data_dir / "replicated-0" / "log-start-offset"
    for _ in range(600):  # the follower's next fetches carry the leader's log start
        if marker.exists() and marker.read_text().strip() == "6":
            break
        time.sleep(0.05)
    assert marker.read_text().strip() == "6"
    next(b for b in brokers if b.node_id == leader).kill()  # fail over to the follower
    survivor = follower.bootstrap
    for _ in range(600):
        try:
            with Admin(survivor) as admin:
                if admin.describe_topic("replicated").partitions[0].leader == follower.node_id:
                    break
        except Exception:  # noqa: BLE001 - the cluster is electing
            pass
        time.sleep(0.05)
    assert values_from_start(survivor, "replicated") == [b"r%d" % i for i in range(6, 10)]


def test_delete_records_needs_delete_on_the_topic(tmp_path):
    """With ACLs on, Read alone does not delete records (nothing changes); Delete does."""
    from tslog.client import AclBinding
    from tslog.client.errors import TopicAuthorizationFailedError

    anonymous = "User:ANONYMOUS"
    broker = BrokerProcess(tmp_path / "data", config={"authorizer_enabled": "true",
                                                      "super_users": anonymous}).start()
    try:
        with Admin(broker.bootstrap) as admin:
            admin.create_topic("guarded")
            admin.create_acls([AclBinding(anonymous, "topic", "guarded", "Read"),
                               AclBinding(anonymous, "topic", "guarded", "Describe")])
        produce(broker.bootstrap, "guarded", [b"g%d" % i for i in range(5)])
        broker.restart(env={"TSLOG_AUTHORIZER_ENABLED": "true"})  # no super user now
        with Admin(broker.bootstrap) as admin:
            with pytest.raises(TopicAuthorizationFailedError):
                admin.delete_records({("guarded", 0): 3})
        assert values_from_start(broker.bootstrap, "guarded")[0] == b"g0"
        broker.restart(env={"TSLOG_AUTHORIZER_ENABLED": "true",
                            "TSLOG_SUPER_USERS": anonymous})
        with Admin(broker.bootstrap) as admin:
            admin.create_acls([AclBinding(anonymous, "topic", "guarded", "Delete")])
        broker.restart(env={"TSLOG_AUTHORIZER_ENABLED": "true"})
        with Admin(broker.bootstrap) as admin:
            assert admin.delete_records({("guarded", 0): 3}) == {
                TopicPartition("guarded", 0): 3}
    finally:
        broker.cleanup()
