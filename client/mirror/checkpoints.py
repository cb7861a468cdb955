"""Checkpoints: each source group's committed offsets on mirrored topics, translated, kept on
the target so ``tslog groups translate`` works after the source is gone.

The topic ``tslog.mirror.checkpoints`` (one partition) holds one record per group and change:
key = the group id, value = JSON
``{"group", "written_ms", "offsets": [{"topic", "partition", "target_topic",
"source_offset", "target_offset"}]}``. A reader takes each group's latest record. tslog's
log has no compaction, so the mirror bounds the topic with ``retention.ms`` (7 days) and
rewrites a group's unchanged checkpoint every 10 minutes so the latest one is always kept.
The source offsets are what matter: translate searches the target again with them (the
target may have copied more since the checkpoint was written).
"""

from __future__ import annotations

import json
import time

from .. import Admin, Consumer, Producer, TopicPartition
from ..security import Security
from .lookup import exact_offset

CHECKPOINT_TOPIC = "tslog.mirror.checkpoints"
_RETENTION_MS = 7 * 24 * 3600 * 1000
_REWRITE_S = 600.0
_READ_TIMEOUT_S = 10.0


class Checkpointer:
    """Writes changed (or 10-minute-old) checkpoints; remembers what it wrote last."""

    def __init__(self, replication_factor: int) -> None:
        self.replication_factor = replication_factor
        self._written: dict[str, tuple[dict, float]] = {}
        self._topic_ready = False

    def write(self, source_admin: Admin, target_admin: Admin, reader: Consumer,
              producer: Producer, targets: dict[str, str]) -> None:
        if not self._topic_ready:
            target_admin.create_topic(CHECKPOINT_TOPIC, 1, self.replication_factor,
                                      {"retention.ms": str(_RETENTION_MS)}, exist_ok=True)
            self._topic_ready = True
        now = time.monotonic()
        for listing in source_admin.list_consumer_groups():
            group = listing.group_id
            committed = {tp: meta.offset for tp, meta in
                         source_admin.list_consumer_group_offsets(group).items()
                         if tp.topic in targets}
            previous = self._written.get(group)
            if not committed or (previous and previous[0] == committed
                                 and now - previous[1] < _REWRITE_S):
                continue
            offsets = []
            for tp, source_offset in sorted(committed.items()):
                target_tp = TopicPartition(targets[tp.topic], tp.partition)
                target_offset, _ = exact_offset(reader, target_tp, source_offset)
                offsets.append({"topic": tp.topic, "partition": tp.partition,
                                "target_topic": target_tp.topic, "source_offset": source_offset,
                                "target_offset": target_offset})
            value = {"group": group, "written_ms": time.time_ns() // 1_000_000,
                     "offsets": offsets}
            producer.send(CHECKPOINT_TOPIC, json.dumps(value).encode(),
                          key=group.encode()).get(timeout=30)
            self._written[group] = (committed, now)


def read_checkpoint(target: str, group: str, security: Security | None = None) -> dict | None:
    """The latest checkpoint of ``group`` on ``target``, or None if there is none."""
    tp = TopicPartition(CHECKPOINT_TOPIC, 0)
    with Admin(target, security=security) as admin:
        if CHECKPOINT_TOPIC not in admin.list_topics():
            return None
    key = group.encode()
    latest = None
    with Consumer(target, auto_offset_reset="earliest", security=security) as consumer:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        deadline = time.monotonic() + _READ_TIMEOUT_S
        while consumer.position(tp) < end and time.monotonic() < deadline:
            for record in consumer.poll(timeout_ms=500):
                if record.key == key:
                    latest = record.value
    return None if latest is None else json.loads(latest)
