"""``format("tslog")``: the PySpark (4.3+) Python Data Source for batch and streaming reads.

Where each piece runs (PySpark's process model): ``partitions()`` (batch) and every stream
reader method except ``read`` run in Python processes on the driver; ``read(partition)`` runs in
executor Python workers on an unpickled copy of the reader, so everything a task needs travels
in its ``TslogPartition`` (a ``FetchRange``: bootstrap, topic, partition, [start, end), the
leader seen at planning time, and the resolved options). No client object is ever pickled.
"""

from __future__ import annotations

import logging
import time

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
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

from ._arrow import TaskConstants, arrow_schema, build_record_batch
from ._fetch import FetchRange, fetch_range
from ._options import EARLIEST, LATEST, SourceOptions, TslogOptionError, parse_options
from ._planning import (
    TslogPlanError,
    check_range,
    discover,
    fetch_ranges,
    offsets_from_json,
    offsets_json,
    open_admin,
    record_plan,
    resolve,
    special_offsets,
    split_ranges,
)

log = logging.getLogger("tslog.spark_connector")

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
    constants = TaskConstants()
    for columns, first, end in fetch_range(spec):
        yield build_record_batch(columns, first, end, spec.topic, spec.partition,
                                 spec.include_headers, schema, constants)


def _check_schema(schema: StructType, include_headers: bool) -> None:
    expected = spark_schema(include_headers)
    got = [(f.name, f.dataType) for f in schema.fields]
    want = [(f.name, f.dataType) for f in expected.fields]
    if got != want:
        raise TslogOptionError(
            "format('tslog') has a fixed schema and does not take a user-specified one; "
            f"expected {expected.simpleString()}, got {schema.simpleString()} "
            "(includeHeaders adds the headers column)")


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
        return TslogBatchReader(opts)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        opts = parse_options(self.options, streaming=True)
        _check_schema(schema, opts.include_headers)
        return TslogStreamReader(opts)


# ------------------------------------------------------------------------------------- batch


class TslogBatchReader(DataSourceReader):
    """Plans one task per topic-partition range (split by minPartitions /
    maxRecordsPerPartition) and reads each with raw Fetch requests into Arrow batches.

    The plan depends on the options alone, never on a query's filters, and that is what keeps
    a reused DataFrame right: PySpark (through 4.3) keeps the read it planned with the
    DataFrame's relation and, once a query's filters reached a Python reader, hands that very
    read to every later query of the relation, including unfiltered ones and the other side of
    a self-join. A plan narrowed to one query's ``where`` on ``timestamp`` would silently
    return that query's rows to all of them. So this reader takes no filters (Spark evaluates
    every ``where`` itself) and time ranges go through the time index by the
    ``startingTimestamp``/``endingTimestamp`` options, which belong to the DataFrame.
    """

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts

    def plan(self) -> list[FetchRange]:
        """Resolve the options into the task ranges."""
        opts = self.opts
        with open_admin(opts) as admin:
            tps, leaders = discover(admin, opts)
            if not tps:
                return []
            earliest = special_offsets(admin, tps, EARLIEST)
            latest = special_offsets(admin, tps, LATEST)
            start = resolve(admin, opts.starting, tps, opts, "start", latest)
            end = resolve(admin, opts.ending, tps, opts, "end", latest)
            ranges = [(tp, *check_range(tp, start[tp], end[tp], earliest[tp], latest[tp], opts,
                                        opts.starting, opts.ending)) for tp in tps]
        planned = split_ranges(ranges, opts.min_partitions, opts.max_records_per_partition)
        record_plan("batch", {
            "ranges": [[tp.topic, tp.partition, s, e] for tp, s, e in planned]})
        return fetch_ranges(planned, leaders, opts)

    def partitions(self):
        return [TslogPartition(f) for f in self.plan()]

    def read(self, partition):
        return _read(partition)


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
    "TslogBatchReader",
    "TslogDataSource",
    "TslogPartition",
    "TslogPlanError",
    "TslogStreamReader",
    "spark_schema",
]
