"""``tslog mirror`` into a 3-broker target cluster: topics created with replication factor 3,
every record copied once in order across a SIGKILL of the mirror."""

from __future__ import annotations

import pytest

from tests.helpers.mirror import (MirrorProcess, as_source, copied_count, end_offsets,
                                  read_all, source_offsets, wait_for)
from tslog.client import Admin, Producer

TOPIC, PARTITIONS = "clicks", 3


def _produce(bootstrap: str, rounds: range) -> None:
    with Producer(bootstrap) as producer:
        for n in rounds:
            producer.send_batch(TOPIC, [b"%d-%d" % (n, i) for i in range(50)],
                                [b"k%d" % i for i in range(50)]).get(timeout=30)


@pytest.mark.slow
def test_mirror_into_a_three_broker_cluster(broker_factory, cluster_factory, tmp_path):
    source = broker_factory("source")
    brokers = cluster_factory(3)
    target = ",".join(b.bootstrap for b in brokers)
    with Admin(source.bootstrap) as admin:
        admin.create_topic(TOPIC, PARTITIONS)
    _produce(source.bootstrap, range(20))
    mirror = MirrorProcess(tmp_path / "mirror.log", "--source", source.bootstrap,
                           "--target", target, "--topics", TOPIC, "--replication-factor", "3")
    try:
        mirror.start()
        wait_for(lambda: copied_count(target, TOPIC, PARTITIONS) > 0,
                 "the first records on the target")
        mirror.kill()
        _produce(source.bootstrap, range(20, 40))
        mirror.start()
        expected = end_offsets(source.bootstrap, TOPIC, PARTITIONS)
        wait_for(lambda: end_offsets(target, TOPIC, PARTITIONS) == expected,
                 "the target to catch up", timeout_s=60)
        with Admin(target) as admin:
            assert all(len(p.replicas) == 3 for p in admin.describe_topic(TOPIC).partitions)
        copied, original = read_all(target, TOPIC, PARTITIONS), read_all(
            source.bootstrap, TOPIC, PARTITIONS)
        for partition in range(PARTITIONS):
            assert as_source(copied[partition]) == [
                (r.key, r.value, r.headers, r.create_time) for r in original[partition]]
            assert source_offsets(copied[partition]) == list(range(expected[partition]))
        assert mirror.terminate() == 0
    finally:
        mirror.stop()
