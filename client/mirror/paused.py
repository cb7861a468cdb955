"""Partitions the mirror stopped copying after the target refused one of their runs.

Why per partition: a run the target refuses for reasons of its own partition (a batch too
large, a CreateTime out of bounds, a corrupt section) says nothing about the others. Before,
any such error restarted the whole mirror, so one partition that could never be written
stopped every topic. Now the failing partition alone leaves the copy: its later runs are
dropped, it leaves the consumer's assignment, and after a backoff of its own (doubling to
``backoff_max_s``) it is resumed by the restart rule (the target's last record), so nothing
is skipped or copied twice; the others copy on.
"""

from __future__ import annotations

import time

from .. import TopicPartition


class PausedPartitions:
    """Failed source partitions -> when each may be tried again, and its current backoff."""

    def __init__(self, backoff_max_s: float) -> None:
        self.backoff_max_s = backoff_max_s
        self._retry_at: dict[TopicPartition, float] = {}
        self._backoff: dict[TopicPartition, float] = {}

    def __contains__(self, tp: TopicPartition) -> bool:
        return tp in self._retry_at

    def pause(self, tp: TopicPartition) -> float:
        """Take ``tp`` out until its backoff passes; returns the backoff in seconds."""
        backoff = min(self._backoff.get(tp, 0.5) * 2, self.backoff_max_s)
        self._backoff[tp] = backoff
        self._retry_at[tp] = time.monotonic() + backoff
        return backoff

    def due(self) -> list[TopicPartition]:
        """Paused partitions whose backoff has passed (they stay paused until ``resumed``)."""
        now = time.monotonic()
        return sorted(tp for tp, at in self._retry_at.items() if at <= now)

    def resumed(self, tp: TopicPartition) -> None:
        """``tp`` is back in the copy (its backoff is kept until a run of it succeeds)."""
        self._retry_at.pop(tp, None)

    def recovered(self, tp: TopicPartition) -> bool:
        """A run of ``tp`` was acknowledged: True if it had failed before (say so once)."""
        return self._backoff.pop(tp, None) is not None
