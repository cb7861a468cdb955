"""Reader options: parsing, validation and Kafka's precedence rules, in one place.

Spark hands a Python data source its options as strings in a case-insensitive dict. Everything
is parsed here once, on the driver, into a frozen ``SourceOptions`` (picklable, so executors
and the streaming runner see exactly what the planner saw). Errors name the option, the value
and what would be accepted; they surface in Spark as ``PYTHON_DATA_SOURCE_ERROR``.

Precedence (as Spark's Kafka source, applied separately to the start side and the end side):
a global timestamp (``startingTimestamp``/``endingTimestamp``) wins over per-partition
timestamps (``...OffsetsByTimestamp``), which win over ``startingOffsets``/``endingOffsets``,
which win over the default (start: ``earliest`` for batch, ``latest`` for streaming; end:
``latest``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from tslog.client.security import Security, SecurityConfigError
from tslog.client.times import TimeFormatError, parse_time_ms

from ._security import SECURITY_OPTIONS, security_from_options

EARLIEST = -2
LATEST = -1

KNOWN_OPTIONS = {
    "bootstrap", "topic", "topics", "topicpattern",
    "startingoffsets", "endingoffsets", "startingtimestamp", "endingtimestamp",
    "startingoffsetsbytimestamp", "endingoffsetsbytimestamp", "timestamptype",
    "startingoffsetsbytimestampstrategy", "maxoffsetspertrigger", "minoffsetspertrigger",
    "maxtriggerdelay", "minpartitions", "maxrecordsperpartition", "failondataloss",
    "includeheaders", "fetchmaxbytes", "requesttimeoutms", "path",
} | SECURITY_OPTIONS


class TslogOptionError(ValueError):
    """An option is missing, malformed, or contradicts another one."""


@dataclass(frozen=True)
class OffsetSpec:
    """Where one side of a range starts or ends, before resolution against the broker.

    kind: "earliest" | "latest" | "offsets" | "timestamp" | "timestamps".
    ``offsets``/``timestamps``: {topic: {partition: value}}; ``timestamp``: ms.
    ``source``: the option it came from, for error messages.
    """

    kind: str
    value: object = None
    source: str = "default"

    def describe(self) -> str:
        if self.kind in ("earliest", "latest"):
            return f"{self.kind} ({self.source})"
        if self.kind == "timestamp":
            return f"{self.source}={self.value}"
        return f"{self.source}={json.dumps(self.value, sort_keys=True)}"


@dataclass(frozen=True)
class SourceOptions:
    bootstrap: str
    subscribe_kind: str  # "topic" | "topics" | "pattern"
    subscribe: tuple  # topic names, or (pattern,)
    starting: OffsetSpec
    ending: OffsetSpec
    timestamp_type: str = "append"
    strategy: str = "error"
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60_000
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    fetch_max_bytes: int = 8 * 1024 * 1024
    request_timeout_ms: int = 30_000
    security: Security | None = None  # kafka.security.protocol ... (_security.py)
    warnings: tuple = field(default=(), compare=False)

    def describe_subscription(self) -> str:
        if self.subscribe_kind == "pattern":
            return f"topicPattern={self.subscribe[0]!r}"
        return ", ".join(self.subscribe)


# ------------------------------------------------------------------------------ value parsers


def parse_bool(name: str, text: str) -> bool:
    value = str(text).strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise TslogOptionError(f"option {name} must be true or false, not {text!r}")


def parse_positive_int(name: str, text: str) -> int:
    try:
        value = int(str(text).strip())
    except ValueError:
        raise TslogOptionError(f"option {name} must be a positive integer, not {text!r}") from None
    if value <= 0:
        raise TslogOptionError(f"option {name} must be a positive integer, not {text!r}")
    return value


_DURATION = re.compile(r"^\s*(\d+)\s*(us|ms|s|sec|m|min|h|d)?\s*$", re.IGNORECASE)
_DURATION_MS = {None: 1, "us": 0.001, "ms": 1, "s": 1000, "sec": 1000, "m": 60_000,
                "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration_ms(name: str, text: str) -> int:
    """Spark's time strings: ``15m``, ``30s``, ``500ms``, ``1h``; a bare number is ms."""
    match = _DURATION.match(str(text))
    if not match:
        raise TslogOptionError(
            f"option {name} must be a duration like 15m, 30s, 500ms or 1h, not {text!r}")
    amount, unit = match.groups()
    return int(int(amount) * _DURATION_MS[unit.lower() if unit else None])


def parse_timestamp(name: str, value) -> int:
    """Epoch ms (an int, or a string of digits), ISO-8601, or a relative time, -> epoch ms."""
    if isinstance(value, bool):
        raise TslogOptionError(f"option {name}: {value!r} is not a time")
    if isinstance(value, int):
        if value < 0:
            raise TslogOptionError(f"option {name}: a timestamp must be >= 0 ms, not {value}")
        return value
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    text = str(value).strip()
    if text.isdigit():  # Kafka's form: any non-negative long of epoch milliseconds
        return int(text)
    try:
        return parse_time_ms(text)
    except TimeFormatError as exc:
        raise TslogOptionError(f"option {name}: {exc}") from None


def _parse_json_map(name: str, text: str, value_parser) -> dict:
    """``{"topic": {"0": v, ...}}`` -> {topic: {int partition: parsed v}}."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise TslogOptionError(
            f'option {name} is not valid JSON ({exc}); expected {{"topic": {{"0": value}}}}'
        ) from None
    if not isinstance(data, dict) or not data:
        raise TslogOptionError(
            f'option {name} must be a JSON object like {{"topic": {{"0": value}}}}, not {text!r}')
    result: dict = {}
    for topic, partitions in data.items():
        if not isinstance(partitions, dict) or not partitions:
            raise TslogOptionError(
                f"option {name}: topic {topic!r} must map partition numbers to values, "
                f"not {partitions!r}")
        parsed = {}
        for partition, value in partitions.items():
            try:
                number = int(partition)
            except (TypeError, ValueError):
                number = -1
            if number < 0:
                raise TslogOptionError(
                    f"option {name}: topic {topic!r} has partition key {partition!r}, "
                    "which is not a partition number")
            parsed[number] = value_parser(f"{name} (topic {topic!r} partition {number})", value)
        result[topic] = parsed
    return result


def _offset_value(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TslogOptionError(f"option {name}: offset must be an integer, not {value!r}")
    if value < EARLIEST:
        raise TslogOptionError(
            f"option {name}: offset {value} is invalid (use -2 for earliest, -1 for latest)")
    return value


def _side(options: dict, side: str, streaming: bool) -> OffsetSpec:
    """Apply Kafka's precedence to one side ("starting" or "ending")."""
    timestamp_key = f"{side}timestamp"
    by_ts_key = f"{side}offsetsbytimestamp"
    offsets_key = f"{side}offsets"
    pretty = {"starting": ("startingTimestamp", "startingOffsetsByTimestamp", "startingOffsets"),
              "ending": ("endingTimestamp", "endingOffsetsByTimestamp", "endingOffsets")}[side]
    if options.get(timestamp_key) is not None:
        return OffsetSpec("timestamp", parse_timestamp(pretty[0], options[timestamp_key]),
                          pretty[0])
    if options.get(by_ts_key) is not None:
        return OffsetSpec("timestamps",
                          _parse_json_map(pretty[1], options[by_ts_key], parse_timestamp),
                          pretty[1])
    text = options.get(offsets_key)
    if text is not None:
        word = str(text).strip().lower()
        if word in ("earliest", "latest"):
            return OffsetSpec(word, None, pretty[2])
        return OffsetSpec("offsets", _parse_json_map(pretty[2], text, _offset_value), pretty[2])
    if side == "starting":
        return OffsetSpec("latest" if streaming else "earliest")
    return OffsetSpec("latest")


def parse_options(raw, *, streaming: bool) -> SourceOptions:
    """Parse Spark's option dict. Raises TslogOptionError naming the offending option."""
    options = {str(k).lower(): (None if v is None else str(v)) for k, v in dict(raw).items()}
    _check_known(options)
    bootstrap = (options.get("bootstrap") or "").strip()
    if not bootstrap:
        raise TslogOptionError('option bootstrap is required, e.g. .option("bootstrap", '
                               '"127.0.0.1:9092")')
    subscribe_kind, subscribe = _subscription(options)
    if streaming:
        _check_no_end(options)
    starting = _side(options, "starting", streaming)
    ending = _side(options, "ending", streaming)
    warnings = [] if streaming else _check_batch_read(options, starting, ending)
    timestamp_type, strategy = _timestamp_type(options), _strategy(options)

    def optional_int(key, pretty):
        return None if options.get(key) is None else parse_positive_int(pretty, options[key])

    max_per_trigger, min_per_trigger = _trigger_limits(options, optional_int)
    delay = options.get("maxtriggerdelay")
    try:
        security = security_from_options(options)
    except SecurityConfigError as exc:
        raise TslogOptionError(str(exc)) from None
    return SourceOptions(
        bootstrap=bootstrap,
        subscribe_kind=subscribe_kind,
        subscribe=subscribe,
        starting=starting,
        ending=ending,
        timestamp_type=timestamp_type,
        strategy=strategy,
        max_offsets_per_trigger=max_per_trigger,
        min_offsets_per_trigger=min_per_trigger,
        max_trigger_delay_ms=15 * 60_000 if delay is None
        else parse_duration_ms("maxTriggerDelay", delay),
        min_partitions=optional_int("minpartitions", "minPartitions"),
        max_records_per_partition=optional_int("maxrecordsperpartition", "maxRecordsPerPartition"),
        fail_on_data_loss=parse_bool("failOnDataLoss", options.get("failondataloss", "true")),
        include_headers=parse_bool("includeHeaders", options.get("includeheaders", "false")),
        fetch_max_bytes=optional_int("fetchmaxbytes", "fetchMaxBytes") or 8 * 1024 * 1024,
        request_timeout_ms=optional_int("requesttimeoutms", "requestTimeoutMs") or 30_000,
        security=security,
        warnings=tuple(warnings),
    )


def _check_known(options: dict) -> None:
    """A misspelt option is an error, not a silent default (Spark passes anything on)."""
    unknown = sorted(set(options) - KNOWN_OPTIONS)
    if unknown:
        raise TslogOptionError(
            f"unknown option(s) {', '.join(unknown)} for format('tslog'); known options: "
            "bootstrap, topic, topics, topicPattern, startingOffsets, endingOffsets, "
            "startingTimestamp, endingTimestamp, startingOffsetsByTimestamp, "
            "endingOffsetsByTimestamp, timestampType, startingOffsetsByTimestampStrategy, "
            "maxOffsetsPerTrigger, minOffsetsPerTrigger, maxTriggerDelay, minPartitions, "
            "maxRecordsPerPartition, failOnDataLoss, includeHeaders, fetchMaxBytes, "
            "requestTimeoutMs")


def _subscription(options: dict) -> tuple[str, tuple[str, ...]]:
    """(kind, names or the pattern) from exactly one of topic, topics and topicPattern."""
    given = [k for k in ("topic", "topics", "topicpattern") if options.get(k)]
    if len(given) != 1:
        raise TslogOptionError(
            "give exactly one of the options topic, topics (comma list) or topicPattern "
            f"(got {', '.join(given) if given else 'none'})")
    kind = given[0]
    if kind == "topicpattern":
        try:
            re.compile(options[kind])
        except re.error as exc:
            raise TslogOptionError(
                f"option topicPattern {options[kind]!r} is not a regular expression: {exc}"
            ) from None
        return "pattern", (options[kind],)
    names = tuple(dict.fromkeys(t.strip() for t in options[kind].split(",") if t.strip()))
    if not names:
        raise TslogOptionError(f"option {kind} names no topic")
    if kind == "topic" and len(names) > 1:
        raise TslogOptionError(
            f"option topic takes one topic name; use topics for a comma list "
            f"(got {options[kind]!r})")
    return kind, names


def _check_no_end(options: dict) -> None:
    for key, pretty in (("endingoffsets", "endingOffsets"),
                        ("endingtimestamp", "endingTimestamp"),
                        ("endingoffsetsbytimestamp", "endingOffsetsByTimestamp")):
        if options.get(key) is not None:
            raise TslogOptionError(
                f"option {pretty} is for batch reads only; a stream has no end")


def _check_batch_read(options: dict, starting: OffsetSpec, ending: OffsetSpec) -> list[str]:
    """Refuse the sides a batch read cannot have (it would read nothing, or has no end);
    return warnings for the streaming-only options it ignores."""
    if starting.kind == "latest":
        raise TslogOptionError(
            "startingOffsets=latest is not valid for a batch read (it would read nothing); "
            "use earliest, JSON offsets or a starting timestamp")
    _check_no_offset(starting, "startingOffsets", LATEST, "-1 (latest)")
    if ending.kind == "earliest":
        raise TslogOptionError("endingOffsets=earliest is not valid for a batch read")
    _check_no_offset(ending, "endingOffsets", EARLIEST, "-2 (earliest)")
    _check_batch_sides(starting, ending)
    return [f"option {key} is ignored by batch reads"
            for key in ("maxoffsetspertrigger", "minoffsetspertrigger", "maxtriggerdelay")
            if options.get(key) is not None]


def _check_no_offset(spec: OffsetSpec, pretty: str, banned: int, word: str) -> None:
    if spec.kind != "offsets":
        return
    for topic, parts in spec.value.items():
        for partition, offset in parts.items():
            if offset == banned:
                raise TslogOptionError(
                    f"{pretty}: {word} for topic {topic!r} partition "
                    f"{partition} is not valid for a batch read")


def _timestamp_type(options: dict) -> str:
    timestamp_type = (options.get("timestamptype") or "append").strip().lower()
    if timestamp_type in ("logappendtime", "log_append_time"):
        timestamp_type = "append"
    if timestamp_type in ("createtime", "create_time"):
        timestamp_type = "create"
    if timestamp_type not in ("append", "create", "source"):
        raise TslogOptionError(
            "option timestampType must be append, create or source (a mirror's target: the "
            f"source cluster's LogAppendTime), not {options['timestamptype']!r}")
    return timestamp_type


def _strategy(options: dict) -> str:
    strategy = (options.get("startingoffsetsbytimestampstrategy") or "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise TslogOptionError(
            "option startingOffsetsByTimestampStrategy must be error or latest, not "
            f"{options['startingoffsetsbytimestampstrategy']!r}")
    return strategy


def _trigger_limits(options: dict, optional_int) -> tuple[int | None, int | None]:
    """(maxOffsetsPerTrigger, minOffsetsPerTrigger), the minimum no larger than the maximum."""
    max_per_trigger = optional_int("maxoffsetspertrigger", "maxOffsetsPerTrigger")
    min_per_trigger = optional_int("minoffsetspertrigger", "minOffsetsPerTrigger")
    if max_per_trigger is not None and min_per_trigger is not None \
            and min_per_trigger > max_per_trigger:
        raise TslogOptionError(
            f"minOffsetsPerTrigger ({min_per_trigger}) must be <= maxOffsetsPerTrigger "
            f"({max_per_trigger})")
    return max_per_trigger, min_per_trigger


def _check_batch_sides(starting: OffsetSpec, ending: OffsetSpec) -> None:
    """Contradictions visible before resolution (Kafka finds some only after it)."""
    if starting.kind == "timestamp" and ending.kind == "timestamp" \
            and starting.value > ending.value:
        raise TslogOptionError(
            f"startingTimestamp ({starting.value} ms) is after endingTimestamp "
            f"({ending.value} ms)")
    if starting.kind in ("offsets", "timestamps") and ending.kind == starting.kind:
        start_tps = {(t, p) for t, parts in starting.value.items() for p in parts}
        end_tps = {(t, p) for t, parts in ending.value.items() for p in parts}
        if start_tps != end_tps:
            only_start = sorted(start_tps - end_tps)
            only_end = sorted(end_tps - start_tps)
            raise TslogOptionError(
                f"{starting.source} and {ending.source} must name the same partitions; "
                f"only in {starting.source}: {_tps(only_start)}; only in {ending.source}: "
                f"{_tps(only_end)}")
        for (topic, partition) in sorted(start_tps):
            low = starting.value[topic][partition]
            high = ending.value[topic][partition]
            if low >= 0 and high >= 0 and low > high:
                what = "offset" if starting.kind == "offsets" else "timestamp"
                raise TslogOptionError(
                    f"topic {topic!r} partition {partition}: starting {what} {low} is after "
                    f"ending {what} {high}")


def _tps(pairs) -> str:
    return ", ".join(f"{t}-{p}" for t, p in pairs) or "none"
