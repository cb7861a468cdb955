"""``format("tslog")``: the PySpark (4.3+) Python Data Source for batch and streaming reads.

Where each piece runs (PySpark's process model): ``partitions()`` (batch) and every stream
reader method except ``read`` run in Python processes on the driver; ``read(partition)`` runs in
executor Python workers on an unpickled copy of the reader, so everything a task needs travels
in its ``TslogPartition`` (a ``FetchRange``: bootstrap, topic, partition, [start, end), the
leader seen at planning time, and the resolved options). No client object is ever pickled.
"""

from __future__ import annotations

import logging
import sys
import time
from datetime import datetime, timezone

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from ._arrow import arrow_schema, build_record_batch
from ._fetch import FetchRange, fetch_range
from ._options import EARLIEST, LATEST, SourceOptions, TslogOptionError, parse_options
from ._planning import (
    TslogPlanError,
    check_range,
    discover,
    fetch_ranges,
    offsets_for_times,
    offsets_from_json,
    offsets_json,
    open_admin,
    record_plan,
    resolve,
    special_offsets,
    split_ranges,
)

log = logging.getLogger("tslog.spark_connector")

FILTER_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def spark_schema(include_headers: bool) -> StructType:
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
        StructField("createTime", TimestampType()),
    ]
    if include_headers:
        fields.append(StructField("headers", ArrayType(StructType([
            StructField("key", StringType()), StructField("value", BinaryType())]))))
    return StructType(fields)


def _include_headers(options) -> bool:
    value = str(dict(options).get("includeheaders", options.get("includeHeaders", "false")))
    return value.strip().lower() in ("true", "1", "yes")


class TslogPartition(InputPartition):
    """One Spark task: a ``FetchRange`` (picklable dataclass) as ``value``."""

    def __init__(self, fetch: FetchRange) -> None:
        super().__init__(fetch)

    def __repr__(self) -> str:
        f = self.value
        return f"TslogPartition({f.topic}-{f.partition} [{f.start}, {f.end}))"


def _read(partition: TslogPartition):
    spec = partition.value
    if not isinstance(spec, FetchRange):  # PySpark's placeholder when nothing was planned
        return
    schema = arrow_schema(spec.include_headers)
    for pieces in fetch_range(spec):
        yield build_record_batch(pieces, spec.topic, spec.partition, spec.include_headers,
                                 schema)


def _check_schema(schema: StructType, include_headers: bool) -> None:
    expected = spark_schema(include_headers)
    got = [(f.name, f.dataType) for f in schema.fields]
    want = [(f.name, f.dataType) for f in expected.fields]
    if got != want:
        raise TslogOptionError(
            "format('tslog') has a fixed schema and does not take a user-specified one; "
            f"expected {expected.simpleString()}, got {schema.simpleString()} "
            "(includeHeaders adds the headers column)")


def _pushdown_enabled(opts: SourceOptions) -> bool:
    """Is the session's Python filter pushdown on? (``option("pushdown")`` overrides.)

    The reader API has no handle on the Spark conf, and a reader that implements
    ``pushFilters`` fails every query when the conf is off, so the planner worker that asked
    for the reader is inspected: PySpark 4.3 calls ``reader()`` from
    ``data_source_pushdown_filters`` only when pushdown is on, and from
    ``plan_data_source_read`` with a local ``enable_pushdown`` flag otherwise.
    """
    if opts.pushdown != "auto":
        return opts.pushdown == "true"
    frame = sys._getframe(1)
    for _ in range(8):
        if frame is None:
            break
        if frame.f_code.co_filename.endswith("data_source_pushdown_filters.py"):
            return True
        if "enable_pushdown" in frame.f_locals:
            return bool(frame.f_locals["enable_pushdown"])
        frame = frame.f_back
    return False


class TslogDataSource(DataSource):
    """``spark.read.format("tslog")`` / ``spark.readStream.format("tslog")``."""

    @classmethod
    def name(cls) -> str:
        return "tslog"

    def schema(self) -> StructType:
        return spark_schema(_include_headers(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        opts = parse_options(self.options, streaming=False)
        _check_schema(schema, opts.include_headers)
        for warning in opts.warnings:
            log.warning("%s", warning)
        if _pushdown_enabled(opts):
            return TslogPushdownBatchReader(opts)
        return TslogBatchReader(opts)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        opts = parse_options(self.options, streaming=True)
        _check_schema(schema, opts.include_headers)
        return TslogStreamReader(opts)


# ------------------------------------------------------------------------------------- batch


def _ms_from_filter_value(value) -> float | None:
    """A pushed timestamp literal as epoch milliseconds (float: keeps the microseconds)."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        delta = value - datetime(1970, 1, 1, tzinfo=timezone.utc)
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        return micros / 1000
    return None


class TslogBatchReader(DataSourceReader):
    """Plans one task per topic-partition range (split by minPartitions /
    maxRecordsPerPartition) and reads each with raw Fetch requests into Arrow batches."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        # Bounds from pushed filters: epoch ms, lower inclusive, upper exclusive.
        self.time_lower: int | None = None
        self.time_upper: int | None = None
        self.create_lower: int | None = None

    def plan(self) -> list[FetchRange]:
        """Resolve the options (and pushed bounds) into the task ranges."""
        opts = self.opts
        with open_admin(opts) as admin:
            tps, leaders = discover(admin, opts)
            if not tps:
                return []
            earliest = special_offsets(admin, tps, EARLIEST)
            latest = special_offsets(admin, tps, LATEST)
            start = resolve(admin, opts.starting, tps, opts, "start", latest)
            end = resolve(admin, opts.ending, tps, opts, "end", latest)
            ranges = []
            for tp in tps:
                low, high = check_range(tp, start[tp], end[tp], earliest[tp], latest[tp], opts,
                                        opts.starting, opts.ending)
                ranges.append([tp, low, high])
            self._apply_pushed_bounds(admin, ranges, latest)
        planned = split_ranges([tuple(r) for r in ranges], opts.min_partitions,
                               opts.max_records_per_partition)
        record_plan("batch", {
            "ranges": [[tp.topic, tp.partition, s, e] for tp, s, e in planned],
            "pushed": {"time_lower": self.time_lower, "time_upper": self.time_upper,
                       "create_lower": self.create_lower}})
        return fetch_ranges(planned, leaders, opts)

    def _apply_pushed_bounds(self, admin, ranges, latest) -> None:
        bounds = [(self.time_lower, "append", True), (self.time_upper, "append", False),
                  (self.create_lower, "create", True)]
        for bound, timestamp_type, is_lower in bounds:
            if bound is None:
                continue
            found = offsets_for_times(admin, {r[0]: bound for r in ranges}, timestamp_type)
            for r in ranges:
                offset = found[r[0]]
                if offset is None:  # no record at or after the bound
                    offset = latest[r[0]]
                if is_lower:
                    r[1] = max(r[1], offset)
                else:
                    r[2] = min(r[2], offset)
                r[1] = min(r[1], r[2])

    def partitions(self):
        return [TslogPartition(f) for f in self.plan()]

    def read(self, partition):
        return _read(partition)


class TslogPushdownBatchReader(TslogBatchReader):
    """The batch reader plus ``pushFilters``: timestamp predicates become offset bounds.

    ``timestamp`` (LogAppendTime) comparisons bound both ends through the time index;
    ``createTime`` lower bounds go through the create-time index (its upper bounds cannot:
    CreateTime is not ordered by offset). Every filter is handed back to Spark, which still
    evaluates it: the bounds only decide which offsets are fetched.
    """

    def pushFilters(self, filters):
        for f in filters:
            column = getattr(f, "attribute", None)
            if column == ("timestamp",):
                self._push_time(f)
            elif column == ("createTime",):
                self._push_create(f)
        return list(filters)

    @staticmethod
    def _lower_upper(f):
        """(inclusive lower ms, exclusive upper ms) implied by a filter on a ms-precision column."""
        if isinstance(f, In):
            values = [_ms_from_filter_value(v) for v in f.value]
            if not values or any(v is None for v in values):
                return None, None
            return math_ceil(min(values)), math_floor(max(values)) + 1
        value = _ms_from_filter_value(getattr(f, "value", None))
        if value is None:
            return None, None
        if isinstance(f, GreaterThanOrEqual):
            return math_ceil(value), None
        if isinstance(f, GreaterThan):
            return math_floor(value) + 1, None
        if isinstance(f, LessThan):
            return None, math_ceil(value)
        if isinstance(f, LessThanOrEqual):
            return None, math_floor(value) + 1
        if isinstance(f, EqualTo):
            return math_ceil(value), math_floor(value) + 1
        return None, None

    def _push_time(self, f) -> None:
        lower, upper = self._lower_upper(f)
        if lower is not None:
            lower = max(lower, 0)
            self.time_lower = lower if self.time_lower is None else max(self.time_lower, lower)
        if upper is not None:
            upper = max(upper, 0)
            self.time_upper = upper if self.time_upper is None else min(self.time_upper, upper)

    def _push_create(self, f) -> None:
        lower, _ = self._lower_upper(f)
        if lower is not None:
            lower = max(lower, 0)
            self.create_lower = lower if self.create_lower is None \
                else max(self.create_lower, lower)


def math_ceil(value: float) -> int:
    return -int(-value // 1)


def math_floor(value: float) -> int:
    return int(value // 1)


# --------------------------------------------------------------------------------- streaming


class TslogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reader. Offsets: ``{"topic": {"partition": next_offset}}`` (sorted keys).

    The driver-side runner keeps this one instance for the life of the query, so the start
    resolved by ``initialOffset`` (asked twice by Spark for a new query) is computed once and
    cached, as is the AvailableNow target pinned at the first ``latestOffset``.
    """

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self._initial: dict | None = None
        self._available_now = False
        self._pinned: dict | None = None
        self._latest: dict | None = None
        self._last_trigger_s: float | None = None
        self._admin = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_admin"] = None
        return state

    def _client(self):
        if self._admin is None:
            self._admin = open_admin(self.opts)
        return self._admin

    # -- offsets ------------------------------------------------------------------------------

    def initialOffset(self) -> dict:
        if self._initial is None:
            admin = self._client()
            tps, _ = discover(admin, self.opts, missing_ok=True)
            latest = special_offsets(admin, tps, LATEST)
            start = resolve(admin, self.opts.starting, tps, self.opts, "start", latest)
            self._initial = offsets_json(start)
            record_plan("stream-initial", {"offsets": self._initial})
        return {t: dict(p) for t, p in self._initial.items()}

    def getDefaultReadLimit(self):
        if self.opts.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        if self.opts.min_offsets_per_trigger is not None:
            return ReadMinRows(self.opts.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = True
        self._pinned = None

    def _current_latest(self) -> dict:
        admin = self._client()
        tps, _ = discover(admin, self.opts, missing_ok=True)
        return special_offsets(admin, tps, LATEST)

    def latestOffset(self, start: dict, limit) -> dict:
        latest = self._current_latest()
        if self._available_now:
            if self._pinned is None:
                self._pinned = latest
            latest = {tp: min(off, latest.get(tp, off)) for tp, off in self._pinned.items()}
        self._latest = latest
        begin = offsets_from_json(start)
        # Partitions that vanished, or whose log is now shorter than our position.
        for tp, offset in begin.items():
            if tp not in latest:
                self._report_loss(f"topic {tp.topic!r} partition {tp.partition} no longer exists")
            elif latest[tp] < offset:
                self._report_loss(
                    f"topic {tp.topic!r} partition {tp.partition} now ends at offset "
                    f"{latest[tp]}, before the stream's position {offset}")
                begin[tp] = latest[tp]
        new = [tp for tp in latest if tp not in begin]
        if new:  # partitions that appeared since `start`: from their earliest offset
            begin.update(special_offsets(self._client(), new, EARLIEST))
        available = {tp: max(latest[tp] - begin[tp], 0) for tp in latest}
        total = sum(available.values())
        now = time.monotonic()
        if self._last_trigger_s is None:
            self._last_trigger_s = now

        if isinstance(limit, ReadAllAvailable):
            target = dict(latest)
        else:
            min_rows = None
            max_rows = None
            if isinstance(limit, ReadMinRows):
                min_rows = limit.min_rows
            elif isinstance(limit, ReadMaxRows):
                max_rows = limit.max_rows
                min_rows = self.opts.min_offsets_per_trigger
            if min_rows is not None and not self._available_now and total < min_rows \
                    and (now - self._last_trigger_s) * 1000 < self.opts.max_trigger_delay_ms:
                return start
            target = dict(latest)
            if max_rows is not None and total > max_rows:
                target = {}
                for tp in latest:
                    size = available[tp]
                    if size == 0:
                        target[tp] = max(begin[tp], latest[tp]) if tp in begin else latest[tp]
                        continue
                    share = int(max_rows * size / total)  # floor
                    share = max(share, 1)  # no partition starves
                    target[tp] = min(begin[tp] + share, latest[tp])
        for tp in latest:  # never go backwards
            target[tp] = max(target[tp], begin[tp])
        result = offsets_json(target)
        if offsets_from_json(result) != offsets_from_json(start):
            self._last_trigger_s = now
        return result

    def _report_loss(self, message: str) -> None:
        if self.opts.fail_on_data_loss:
            from ._fetch import DataLossError
            raise DataLossError(message + "; set failOnDataLoss=false to continue without it")
        log.warning("%s; continuing (failOnDataLoss=false)", message)

    def reportLatestOffset(self):
        return None if self._latest is None else offsets_json(self._latest)

    def partitions(self, start: dict, end: dict):
        begin = offsets_from_json(start)
        finish = offsets_from_json(end)
        if begin == finish:
            return []
        admin = self._client()
        _, leaders = discover(admin, self.opts, missing_ok=True)
        missing = [tp for tp in finish if tp not in begin]
        earliest = special_offsets(admin, missing, EARLIEST) if missing else {}
        ranges = []
        for tp in sorted(finish):
            low = begin.get(tp, earliest.get(tp, 0))
            high = finish[tp]
            if high > low:
                ranges.append((tp, low, high))
        planned = split_ranges(ranges, self.opts.min_partitions,
                               self.opts.max_records_per_partition)
        record_plan("stream-batch", {
            "ranges": [[tp.topic, tp.partition, s, e] for tp, s, e in planned]})
        return [TslogPartition(f) for f in fetch_ranges(planned, leaders, self.opts)]

    def read(self, partition):
        return _read(partition)

    def commit(self, end: dict) -> None:
        pass

    def stop(self) -> None:
        if self._admin is not None:
            try:
                self._admin.close()
            finally:
                self._admin = None


__all__ = [
    "FILTER_PUSHDOWN_CONF",
    "TslogBatchReader",
    "TslogDataSource",
    "TslogPartition",
    "TslogPlanError",
    "TslogPushdownBatchReader",
    "TslogStreamReader",
    "spark_schema",
]
