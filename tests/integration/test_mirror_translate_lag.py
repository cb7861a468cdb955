"""``tslog groups translate`` while the mirror lags the group (issue 39, item 2), on two real
single-broker clusters: it never commits a position that would make the group read records
again. Without ``--wait`` it fails at once, naming the partition and how far the target is,
and commits nothing; with ``--wait`` it reports progress while the mirror catches up and then
commits the exact offset, from which the group reads every remaining record once."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers.mirror import MirrorProcess, copied_count, source_offsets, wait_for
from tslog.client import Admin, Consumer, Producer, TopicPartition

TOPIC = "orders"


def _translate(source, target, *extra: str) -> list[str]:
    return [sys.executable, "-m", "tslog.client.cli", "groups", "translate", "g1", "--source",
            source.bootstrap, "--target", target.bootstrap, "--execute", *extra]


def _produce(bootstrap: str, count: int) -> int:
    """Write ``count`` records to partition 0; returns the last one's LogAppendTime."""
    with Producer(bootstrap) as producer:
        sent = producer.send_batch(TOPIC, [b"r%d" % i for i in range(count)], partition=0)
        return sent.get(30)[-1].log_append_time


def test_translate_while_the_target_lags_commits_nothing_or_waits(broker_factory, tmp_path):
    source, target = broker_factory("source"), broker_factory("target")
    with Admin(source.bootstrap) as admin:
        admin.create_topic(TOPIC, 1)
    _produce(source.bootstrap, 1000)
    mirror = MirrorProcess(tmp_path / "mirror.log", "--source", source.bootstrap, "--target",
                           target.bootstrap, "--topics", TOPIC).start()
    wait_for(lambda: copied_count(target.bootstrap, TOPIC, 1) == 1000, "1000 records copied")
    mirror.kill()
    _produce(source.bootstrap, 500)  # the mirror is down: the target stays at 1000
    tp = TopicPartition(TOPIC, 0)
    with Consumer(source.bootstrap, group_id="g1") as consumer:
        consumer.assign([tp])
        consumer.commit({tp: 1300})  # the group read source offsets 0..1299

    refused = subprocess.run(_translate(source, target), capture_output=True, text=True,
                             timeout=60)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert refused.stderr.count("\n") == 1
    assert "has not copied every record group 'g1' read" in refused.stderr
    assert "orders[0] holds source offsets up to 999, the group read up to 1299" in refused.stderr
    assert "committed nothing" in refused.stderr
    with Admin(target.bootstrap) as admin:
        assert admin.list_consumer_group_offsets("g1") == {}

    err = tmp_path / "translate.err"
    with open(err, "w") as stderr:
        waiting = subprocess.Popen(_translate(source, target, "--wait", "120s"),
                                   stdout=subprocess.PIPE, stderr=stderr, text=True)
    try:
        wait_for(lambda: "waiting for the mirror: orders[0] holds source offsets up to 999"
                 in err.read_text(), "the progress line")
        mirror.start()  # the mirror resumes; translate sees it catch up
        out, _ = waiting.communicate(timeout=120)
    finally:
        if waiting.poll() is None:
            waiting.kill()
        mirror.stop()
    assert waiting.returncode == 0, err.read_text()
    assert "committed the exact offsets on the target" in out
    with Admin(target.bootstrap) as admin:
        assert admin.list_consumer_group_offsets("g1")[tp].offset == 1300
    seen = []
    with Consumer(target.bootstrap, group_id="g1") as consumer:
        consumer.subscribe([TOPIC])
        wait_for(lambda: len(seen) >= 200 or seen.extend(
            source_offsets(consumer.poll(timeout_ms=200))), "the group to read the rest")
    assert seen == list(range(1300, 1500))  # nothing read twice, nothing lost


def test_translate_by_time_while_the_target_lags_refuses_then_waits(broker_factory, tmp_path):
    """--to-datetime T where the target holds nothing from T on: its end is the answer only
    once the mirror has copied everything older than T, so while the source holds more it
    refuses (or, with --wait, waits), committing nothing."""
    source, target = broker_factory("source"), broker_factory("target")
    with Admin(source.bootstrap) as admin:
        admin.create_topic(TOPIC, 1)
    _produce(source.bootstrap, 100)
    mirror = MirrorProcess(tmp_path / "mirror.log", "--source", source.bootstrap, "--target",
                           target.bootstrap, "--topics", TOPIC).start()
    wait_for(lambda: copied_count(target.bootstrap, TOPIC, 1) == 100, "100 records copied")
    mirror.kill()
    later = _produce(source.bootstrap, 50) + 1  # T: after every record there is
    tp = TopicPartition(TOPIC, 0)
    by_time = ("--topic", TOPIC, "--to-datetime", str(later))
    refused = subprocess.run(_translate(source, target, *by_time), capture_output=True,
                             text=True, timeout=60)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "orders[0] holds source offsets up to 99 of 149" in refused.stderr
    assert "committed nothing" in refused.stderr
    with Admin(target.bootstrap) as admin:
        assert admin.list_consumer_group_offsets("g1") == {}
    mirror.start()
    try:
        done = subprocess.run(_translate(source, target, *by_time, "--wait", "120s"),
                              capture_output=True, text=True, timeout=150)
    finally:
        mirror.stop()
    assert done.returncode == 0, done.stdout + done.stderr
    with Admin(target.bootstrap) as admin:
        assert admin.list_consumer_group_offsets("g1")[tp].offset == 150
