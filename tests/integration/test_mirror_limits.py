"""The mirror never stalls on a record the source took (issue 39, item 1), between two real
single-broker clusters: the largest record a default topic accepts is mirrored (the target
topic is created with room for the reserved headers); a target topic that exists with too
small a ``max.message.bytes`` is reported by name and setting while the other topics copy; a
partition whose runs the target refuses is paused alone and resumes exactly where the target
ends once the target takes it, without restarting the other partitions."""

from __future__ import annotations

import pytest

from tests.helpers.mirror import MirrorProcess, copied_count, read_all, source_offsets, wait_for
from tslog.client import Admin, Producer
from tslog.client.errors import TslogError
from tslog.client.mirror.limits import HEADROOM
from tslog.protocol.records import build_batch


def _largest_value(limit: int) -> int:
    """The value size whose one-record, keyless batch is exactly ``limit`` bytes."""
    return limit - len(build_batch([b""], create_times=[0]))


def _mirror(tmp_path, source, target, topics: str) -> MirrorProcess:
    return MirrorProcess(tmp_path / "mirror.log", "--source", source.bootstrap, "--target",
                         target.bootstrap, "--topics", topics, "--checkpoint-interval", "300ms")


def test_the_largest_record_the_source_accepts_is_mirrored(broker_factory, tmp_path):
    source, target = broker_factory("source"), broker_factory("target")
    with Admin(source.bootstrap) as admin:
        admin.create_topic("big", 1)
        limit = int(admin.describe_configs("big")["max.message.bytes"].value)
    size = _largest_value(limit)
    with Producer(source.bootstrap) as producer:
        with pytest.raises(TslogError):  # one byte more is refused: this is the largest
            producer.send("big", b"x" * (size + 1), partition=0).get(timeout=30)
        producer.send("big", b"L" * size, partition=0).get(timeout=30)
        producer.send("big", b"small", partition=0).get(timeout=30)
    mirror = _mirror(tmp_path, source, target, "big").start()
    try:
        wait_for(lambda: copied_count(target.bootstrap, "big", 1) == 2, "both records copied")
    finally:
        mirror.kill()
    copied = read_all(target.bootstrap, "big", 1)[0]
    assert [len(r.value) for r in copied] == [size, 5] and copied[1].value == b"small"
    assert source_offsets(copied) == [0, 1]
    with Admin(target.bootstrap) as admin:
        assert int(admin.describe_configs("big")["max.message.bytes"].value) == limit + HEADROOM
    assert "refused" not in mirror.log_text() and "interrupted" not in mirror.log_text()


def test_a_target_topic_with_too_small_a_limit_is_reported_and_the_others_copy(
        broker_factory, tmp_path):
    source, target = broker_factory("source"), broker_factory("target")
    with Admin(source.bootstrap) as admin:
        admin.create_topic("narrow", 1)
        admin.create_topic("wide", 1)
        limit = int(admin.describe_configs("narrow")["max.message.bytes"].value)
    with Admin(target.bootstrap) as admin:  # made before the mirror, with the source's limit
        admin.create_topic("narrow", 1, config={"max.message.bytes": str(limit)})
    with Producer(source.bootstrap) as producer:
        for topic in ("narrow", "wide"):
            producer.send(topic, b"L" * _largest_value(limit), partition=0).get(timeout=30)
            producer.send_batch(topic, [b"r%d" % i for i in range(100)], partition=0).get(30)
    mirror = _mirror(tmp_path, source, target, "narrow|wide").start()
    try:
        wait_for(lambda: copied_count(target.bootstrap, "wide", 1) == 101, "wide copied")
        wait_for(lambda: "max.message.bytes" in mirror.log_text(), "the error at start")
        log = mirror.log_text()
        assert "not copying narrow" in log and f"at least {limit + HEADROOM}" in log
        assert copied_count(target.bootstrap, "narrow", 1) == 0
        with Admin(target.bootstrap) as admin:  # the operator raises it as the error says
            admin.alter_configs("narrow", {"max.message.bytes": str(limit + HEADROOM)})
        wait_for(lambda: copied_count(target.bootstrap, "narrow", 1) == 101, "narrow copied")
    finally:
        mirror.kill()
    copied = read_all(target.bootstrap, "narrow", 1)[0]
    assert source_offsets(copied) == list(range(101))
    assert "interrupted" not in mirror.log_text()


def test_a_partition_the_target_refuses_is_paused_alone(broker_factory, tmp_path):
    """Runs of one partition refused mid-copy (the target topic's limit lowered under the
    mirror's feet): that partition pauses and later resumes where the target ends; the other
    partition of the same topic and another topic copy on, and the mirror never restarts."""
    source, target = broker_factory("source"), broker_factory("target")
    with Admin(source.bootstrap) as admin:
        admin.create_topic("t", 2)
        admin.create_topic("other", 1)
    mirror = _mirror(tmp_path, source, target, "t|other").start()
    try:
        with Producer(source.bootstrap) as producer:
            producer.send("t", b"first", partition=0).get(timeout=30)
            wait_for(lambda: copied_count(target.bootstrap, "t", 2) == 1, "the first record")
            with Admin(target.bootstrap) as admin:
                admin.alter_configs("t", {"max.message.bytes": "2000"})
            producer.send("t", b"B" * 4000, partition=0).get(timeout=30)  # refused on target
            producer.send("t", b"after", partition=0).get(timeout=30)
            wait_for(lambda: "the target refused a run" in mirror.log_text(), "the refusal")
            for n in range(20):
                producer.send("t", b"p1-%d" % n, partition=1).get(timeout=30)
                producer.send("other", b"o-%d" % n, partition=0).get(timeout=30)
            wait_for(lambda: copied_count(target.bootstrap, "other", 1) == 20
                     and copied_count(target.bootstrap, "t", 2) == 21, "the others copied")
            assert read_all(target.bootstrap, "t", 2)[0][-1].value == b"first"
            with Admin(target.bootstrap) as admin:
                admin.alter_configs("t", {"max.message.bytes": None})
            wait_for(lambda: copied_count(target.bootstrap, "t", 2) == 23, "t[0] resumed")
            wait_for(lambda: "t[0]: copying again" in mirror.log_text(), "the recovery line")
    finally:
        mirror.kill()
    copied = read_all(target.bootstrap, "t", 2)
    assert [r.value for r in copied[0]] == [b"first", b"B" * 4000, b"after"]
    assert source_offsets(copied[0]) == [0, 1, 2]
    assert source_offsets(copied[1]) == list(range(20))
    assert "interrupted" not in mirror.log_text()
