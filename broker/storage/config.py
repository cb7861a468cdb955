"""Per-partition log configuration, with Kafka's topic-config names.

A topic's config is the broker-wide defaults overlaid with the topic's own keys; both are
written with the dotted names users know from Kafka (``segment.bytes``, ``retention.ms``...).
``LogConfig.from_mapping`` rejects unknown keys and wrong values with one error listing all of
them, so a typo in a config file never silently becomes a default.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

UNLIMITED = -1
NEVER = 2**63 - 1  # "no bound" for the flush and timestamp-bound settings
_INT32_MAX = 2**31 - 1
_DAY_MS = 24 * 3600 * 1000


class ConfigError(ValueError):
    """One or more configuration values are invalid; the message lists every problem."""


@dataclass(frozen=True)
class LogConfig:
    segment_bytes: int = 1 << 30  # roll when the active segment would exceed this
    segment_ms: int = 7 * _DAY_MS  # roll when the incoming LAT is this far past the first LAT
    segment_index_bytes: int = 10 << 20  # preallocated size of each index file; full => roll
    index_interval_bytes: int = 4096  # log bytes between index entries (0 = every batch)
    retention_ms: int = 7 * _DAY_MS  # delete a segment whose newest LAT is older (-1 = keep)
    retention_bytes: int = UNLIMITED  # delete oldest segments while the log is larger
    max_message_bytes: int = 1 << 20  # largest batch accepted
    message_timestamp_before_max_ms: int = NEVER  # refuse CreateTime older than now - this
    message_timestamp_after_max_ms: int = 3600 * 1000  # refuse CreateTime newer than now + this
    flush_messages: int = NEVER  # fsync after this many records (1 = every batch)
    flush_ms: int = NEVER  # fsync when the last fsync is this old at an append
    min_insync_replicas: int = 1  # acks=all is refused (NOT_ENOUGH_REPLICAS) with a smaller ISR
    replica_lag_time_max_ms: int = 30_000  # a follower not caught up this long leaves the ISR
    producer_id_expiration_ms: int = _DAY_MS  # forget an idempotent producer idle this long

    def __post_init__(self) -> None:
        problems = []
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, int) or isinstance(value, bool):
                problems.append(f"{_dotted(field.name)} must be an integer, got {value!r}")
        if problems:
            raise ConfigError("; ".join(problems))
        checks = [
            (14 <= self.segment_bytes <= _INT32_MAX, "segment.bytes must be in [14, 2^31-1]"),
            (self.segment_ms >= 1, "segment.ms must be >= 1"),
            (self.segment_index_bytes >= 64, "segment.index.bytes must be >= 64"),
            (0 <= self.index_interval_bytes <= _INT32_MAX, "index.interval.bytes must be >= 0"),
            (self.retention_ms >= -1, "retention.ms must be >= -1"),
            (self.retention_bytes >= -1, "retention.bytes must be >= -1"),
            (self.max_message_bytes >= 80, "max.message.bytes must be >= 80"),
            (self.message_timestamp_before_max_ms >= 0, "message.timestamp.before.max.ms must be >= 0"),
            (self.message_timestamp_after_max_ms >= 0, "message.timestamp.after.max.ms must be >= 0"),
            (self.flush_messages >= 1, "flush.messages must be >= 1"),
            (self.flush_ms >= 0, "flush.ms must be >= 0"),
            (self.min_insync_replicas >= 1, "min.insync.replicas must be >= 1"),
            (self.replica_lag_time_max_ms >= 1, "replica.lag.time.max.ms must be >= 1"),
            (self.producer_id_expiration_ms >= 1, "producer.id.expiration.ms must be >= 1"),
        ]
        problems = [message for ok, message in checks if not ok]
        if problems:
            raise ConfigError("; ".join(problems))

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], base: "LogConfig | None" = None) -> "LogConfig":
        """Overlay dotted-name ``values`` on ``base`` (or the defaults)."""
        known = {_dotted(field.name): field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ConfigError(f"unknown log config keys: {', '.join(unknown)}")
        changes = {}
        problems = []
        for key, value in values.items():
            if isinstance(value, str):
                try:
                    value = int(value)
                except ValueError:
                    problems.append(f"{key} must be an integer, got {value!r}")
                    continue
            changes[known[key]] = value
        if problems:
            raise ConfigError("; ".join(problems))
        return dataclasses.replace(base or cls(), **changes)

    def to_mapping(self) -> dict[str, int]:
        return {_dotted(field.name): getattr(self, field.name) for field in dataclasses.fields(self)}

    def create_time_problem(self, min_create_time: int, max_create_time: int, now: int) -> str | None:
        """Why a batch with these CreateTimes may not be appended at broker time ``now``
        (``message.timestamp.before/after.max.ms``), or None. One rule for the log and for a
        broker that checks a whole request before appending any of it."""
        if now - min_create_time > self.message_timestamp_before_max_ms:
            return (f"CreateTime {min_create_time} is more than "
                    f"{self.message_timestamp_before_max_ms} ms before the broker time {now}")
        if max_create_time - now > self.message_timestamp_after_max_ms:
            return (f"CreateTime {max_create_time} is more than "
                    f"{self.message_timestamp_after_max_ms} ms after the broker time {now}")
        return None

    @property
    def max_index_entries(self) -> int:
        """Entries per segment before the time index (the largest entry) is full."""
        return self.segment_index_bytes // 16


def _dotted(field_name: str) -> str:
    return field_name.replace("_", ".")
