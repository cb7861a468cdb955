"""The partition admin service's requests and results, the same whichever front door a
request came in (``partitions.py`` serves them).

Why typed, and flat, as the data service's (``data/requests.py``): each protocol's adapter
translates its own body once, at its edge (``server/partition_handlers.py`` for tslog's
frames; ``server/kafka/partition_apis.py``, ``reassign_apis.py`` and ``log_dirs_api.py`` for
Kafka's), and the service never sees either wire format. A request lists its partitions in
the order the client sent them; a per-partition result list is in the same order, so an
adapter writes its answer by walking its own body beside the results.

Not on a hot path except OffsetForLeaderEpoch (a follower asks it once per leader change),
so entries are built as the named types; the service reads them by position too.
"""

from __future__ import annotations

from typing import NamedTuple

# ---------------------------------------------------------------------------- DeleteRecords

HIGH_WATERMARK = -1  # an offset of -1 means "up to the high watermark", as in Kafka


class RecordsCut(NamedTuple):
    topic: str
    partition: int
    offset: int  # the new log start; HIGH_WATERMARK: up to the high watermark


class DeleteRecordsRequest(NamedTuple):
    partitions: list[RecordsCut]


class LogStart(NamedTuple):
    error_code: int
    low_watermark: int  # the partition's log start offset afterwards, -1 on error


# --------------------------------------------------------------------------- InitProducerId


class InitProducerIdRequest(NamedTuple):
    """An idempotent producer's id (a transactional one is refused at the Kafka edge:
    tslog has no transactions)."""


class ProducerId(NamedTuple):
    error_code: int
    producer_id: int
    producer_epoch: int


# ---------------------------------------------------------------------- OffsetForLeaderEpoch


class EpochQuery(NamedTuple):
    topic: str
    partition: int
    leader_epoch: int  # the latest epoch the asker knows


class OffsetForLeaderEpochRequest(NamedTuple):
    replica_id: int  # >= 0: a follower (ClusterAction); -1: a client (Describe per topic)
    queries: list[EpochQuery]


class EpochEnd(NamedTuple):
    error_code: int
    leader_epoch: int  # -1 on error
    end_offset: int  # -1 on error


# ------------------------------------------------------------------------- OffsetsAtTimes


class TimesQuery(NamedTuple):
    topic: str
    partition: int
    timestamps: list[int]  # sorted, non-negative, at most ``MAX_TIMES``


class OffsetsAtTimesRequest(NamedTuple):
    timestamp_type: str  # "append" or "create"
    queries: list[TimesQuery]


class TimesFound(NamedTuple):
    error_code: int
    offsets: list[int]  # one per asked time, -1 where none; [] on error
    timestamps: list[int]


# ---------------------------------------------------------------------------- reassignments


class Move(NamedTuple):
    topic: str
    partition: int
    replicas: tuple[int, ...] | None  # the target replica set; None cancels a move


class AlterReassignmentsRequest(NamedTuple):
    moves: list[Move]


class Outcome(NamedTuple):
    """One partition's answer to a change: 0 and None, or why not."""

    error_code: int
    error_message: str | None


class ListReassignmentsRequest(NamedTuple):
    partitions: list[tuple[str, int]] | None  # None: every reassignment under way


class Reassignment(NamedTuple):
    topic: str
    partition: int
    replicas: list[int]
    adding_replicas: list[int]
    removing_replicas: list[int]
    leader: int
    isr: list[int]
    log_end_offset: int  # -1 where this broker does not lead the partition
    replica_log_end_offsets: list[tuple[int, int]]  # (added broker, its log end offset)


# --------------------------------------------------------------------------- ElectLeaders


class ElectLeadersRequest(NamedTuple):
    partitions: list[tuple[str, int]] | None  # None: every partition not led by its preferred


class Election(NamedTuple):
    topic: str
    partition: int
    error_code: int
    error_message: str | None


# ------------------------------------------------------------------------ DescribeLogDirs


class DescribeLogDirsRequest(NamedTuple):
    partitions: list[tuple[str, int]] | None  # None: every partition hosted here


class LogDir(NamedTuple):
    """The broker's one log directory (its ``data_dir``) and the partitions in it."""

    log_dir: str
    total_bytes: int  # -1 when the directory cannot be read
    usable_bytes: int
    partitions: list[tuple[str, int, int]]  # (topic, partition, size in bytes), sorted
