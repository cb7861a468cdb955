"""Per-partition log configuration, with Kafka's topic-config names.

A topic's config is the broker-wide defaults overlaid with the topic's own keys; both are
written with the dotted names users know from Kafka (``segment.bytes``, ``retention.ms``...).
``LogConfig.from_mapping`` rejects unknown keys and wrong values with one error listing all of
them, so a typo in a config file never silently becomes a default. Every key has an inclusive
range (``RANGES``, documented in docs/protocol.md); a value outside it is refused, on a topic
(INVALID_CONFIG) and in the broker's ``[log]`` defaults (the broker does not start).
"""

from __future__ import annotations


import dataclasses
import re
import typing
from dataclasses import dataclass
from typing import Any, Mapping

_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
UNLIMITED = -1
NEVER = _INT64_MAX  # "no bound" for the flush and timestamp-bound settings
_DAY_MS = 24 * 3600 * 1000
_DIGITS_MAX = 19  # digits of _INT64_MAX: a longer number is out of every range
_DECIMAL = re.compile(r"[-+]?[0-9]+")

RANGES: dict[str, tuple[int, int]] = {
    # Inclusive bounds of every key, documented in docs/protocol.md ("Topic configs"): Kafka's
    # where it has one (a Java int or long), tighter where tslog's files need it.
    "segment.bytes": (14, _INT32_MAX),  # file positions in the offset index are 32-bit
    "segment.ms": (1, _INT64_MAX),
    # Three files of this size are preallocated (sparse) and mapped per active segment; a
    # 1 GiB time index already holds more entries than a 2 GiB segment has batches.
    "segment.index.bytes": (64, 1 << 30),
    "index.interval.bytes": (0, _INT32_MAX),
    "retention.ms": (-1, _INT64_MAX),
    "retention.bytes": (-1, _INT64_MAX),
    "max.message.bytes": (80, _INT32_MAX),
    "message.timestamp.before.max.ms": (0, _INT64_MAX),
    "message.timestamp.after.max.ms": (0, _INT64_MAX),
    "flush.messages": (1, _INT64_MAX),
    "flush.ms": (0, _INT64_MAX),
    "min.insync.replicas": (1, _INT32_MAX),
    "replica.lag.time.max.ms": (1, _INT64_MAX),
    "producer.id.expiration.ms": (1, _INT64_MAX),
}

# Keys whose value is one word of a fixed set rather than an integer (Kafka's spelling).
# ``message.timestamp.type`` says which timestamp Kafka clients see (docs/kafka.md): tslog
# stamps every batch with a LogAppendTime and indexes both times, so storage never reads
# it; only the Kafka listener does, per batch it converts and per time lookup.
CHOICES: dict[str, tuple[str, ...]] = {
    "message.timestamp.type": ("LogAppendTime", "CreateTime"),
}


class ConfigError(ValueError):
    """Configuration values are invalid: a topic's, the broker's ``[log]`` defaults or the
    broker's own settings (``broker/config.py`` raises this class too, so one ``except``
    catches every config problem).

    ``problems`` lists each one; the message joins them on one line (for the wire's
    INVALID_CONFIG text and the broker's one-line refusal to start), so an operator sees
    every problem at once, after ``subject`` ("broker configuration") when one is given.
    """

    def __init__(self, problems: list[str] | str, subject: str | None = None) -> None:
        listed = [problems] if isinstance(problems, str) else list(problems)
        self.problems = [problem.replace("\r", " ").replace("\n", " ") for problem in listed]
        self.subject = subject
        text = "; ".join(self.problems)
        super().__init__(text if subject is None else f"invalid {subject}: {text}")


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
    # What Kafka clients are handed as each record's timestamp (CHOICES); LogAppendTime
    # fits tslog's design: the broker's LAT is the time every index and retention runs on.
    message_timestamp_type: str = "LogAppendTime"

    def __post_init__(self) -> None:
        problems = []
        for name, key in _KEYS.items():
            value = getattr(self, name)
            if key in CHOICES:
                if value not in CHOICES[key]:
                    problems.append(_choice_problem(key, value))
                continue
            low, high = RANGES[key]
            if not _is_int(value):
                problems.append(f"{key} must be an integer, got {_shown(value)}")
            elif not low <= value <= high:
                problems.append(f"{key} must be in [{low}, {high}], got {_shown(value)}")
        if problems:
            raise ConfigError(problems)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], base: "LogConfig | None" = None) -> "LogConfig":
        """Overlay dotted-name ``values`` on ``base`` (or the defaults). A string value must
        be a decimal integer (an optional sign, ASCII digits, surrounding spaces ignored), as
        in Kafka: no ``1e3``, ``1_000`` or ``0x10``."""
        known = {key: name for name, key in _KEYS.items()}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ConfigError(f"unknown log config keys: {', '.join(k[:60] for k in unknown)}")
        changes = {}
        problems = []
        for key, value in values.items():
            if key in CHOICES:
                if value in CHOICES[key]:
                    changes[known[key]] = value
                else:
                    problems.append(_choice_problem(key, value))
                continue
            if isinstance(value, str):
                text = value.strip(" \t")
                if not _DECIMAL.fullmatch(text):
                    problems.append(f"{key} must be an integer, got {_shown(value)}")
                    continue
                if len(text.lstrip("+-")) > _DIGITS_MAX:  # no 4300-digit int() on the loop
                    low, high = RANGES[key]
                    problems.append(f"{key} must be in [{low}, {high}], got {_shown(value)}")
                    continue
                value = int(text)
            if _is_int(value):
                low, high = RANGES[key]
                if not low <= value <= high:  # listed with the other keys' problems
                    problems.append(f"{key} must be in [{low}, {high}], got {_shown(value)}")
                    continue
            changes[known[key]] = value
        if problems:
            raise ConfigError(problems)
        return dataclasses.replace(base or cls(), **changes)

    def to_mapping(self) -> dict[str, int | str]:
        return {key: getattr(self, name) for name, key in _KEYS.items()}

    def create_time_problem(self, min_create_time: int, max_create_time: int, now: int) -> str | None:
        """Why a batch with these CreateTimes may not be appended at broker time ``now``
        (``message.timestamp.before/after.max.ms``), or None. One rule for the log and for a
        broker that checks a whole request before appending any of it."""
        if (now - min_create_time <= self.message_timestamp_before_max_ms
                and max_create_time - now <= self.message_timestamp_after_max_ms):
            return None  # every append asks: the common answer first
        if now - min_create_time > self.message_timestamp_before_max_ms:
            return (f"CreateTime {min_create_time} is more than "
                    f"{self.message_timestamp_before_max_ms} ms before the broker time {now}")
        if max_create_time - now > self.message_timestamp_after_max_ms:
            return (f"CreateTime {max_create_time} is more than "
                    f"{self.message_timestamp_after_max_ms} ms after the broker time {now}")
        return None

    def size_problem(self, size: int, stored: int | None = None) -> str | None:
        """Why a batch of ``size`` bytes may not be appended, naming the setting and its value
        (the producer's user must know which limit to raise or which batch to shrink), or
        None. One rule for the log and for a broker checking a whole request first.

        ``stored``: the batch's size in the log when ``size`` is its size as its producer
        sent it in another format (a Kafka batch, which the Kafka listener converts and
        which grows doing so): ``max.message.bytes`` then bounds what was sent, as Kafka's
        own does, and ``segment.bytes`` what is stored."""
        if size > self.max_message_bytes:
            return (f"a batch of {size} bytes is larger than the topic's max.message.bytes "
                    f"({self.max_message_bytes})")
        return self.stored_size_problem(size if stored is None else stored)

    def stored_size_problem(self, stored: int) -> str | None:
        """Why a batch taking ``stored`` bytes in the log cannot be kept (it must fit in one
        segment), or None. A follower checks only this: it copies what its leader took,
        as Kafka's followers ignore ``max.message.bytes``."""
        if stored > self.segment_bytes:
            return (f"a batch of {stored} bytes is larger than the topic's segment.bytes "
                    f"({self.segment_bytes})")
        return None

    @property
    def max_index_entries(self) -> int:
        """Entries per segment before the time index (the largest entry) is full."""
        return self.segment_index_bytes // 16


def _dotted(field_name: str) -> str:
    return field_name.replace("_", ".")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# Field name -> Kafka's dotted key. Every field but the CHOICES is read and checked as an
# integer (a decimal string from the wire or the environment, an int from TOML), so the
# annotations must say so: a field of another type needs its own parser here first.
_KEYS = {field.name: _dotted(field.name) for field in dataclasses.fields(LogConfig)}
_NOT_INT = sorted(name for name, hint in typing.get_type_hints(LogConfig).items()
                  if name in _KEYS and _KEYS[name] not in CHOICES and hint is not int)
if _NOT_INT:
    raise TypeError(f"LogConfig fields must be int (they are parsed as integers): {_NOT_INT}")


def _choice_problem(key: str, value: Any) -> str:
    return f"{key} must be one of {', '.join(CHOICES[key])}, got {_shown(value)}"


def _shown(value: Any) -> str:
    """A value for an error message (which goes back on the wire): never a huge one."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:30]}... ({len(text)} characters)"
