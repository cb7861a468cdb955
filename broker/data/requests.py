"""The data service's requests and results, the same whichever front door a request came in.

Why typed, and flat: each protocol's adapter translates its own body into these once, at its
edge (``server/data_handlers.py`` for tslog's frames, ``server/kafka/data_apis.py`` for
Kafka's), and the service never sees either wire format. A request lists its partitions in
the order the client sent them, whatever their topics; the result is a list in the same
order, so an adapter writes its answer by walking its own body beside the results, with no
lookups.

Each type is a ``NamedTuple`` naming its fields. A request's and a result's own object is
one (built with ``make``, which skips the Python-level constructor); a per-partition entry
(``ProducePartition``, ``FetchPartition``, ``OffsetQuery``, ``Fetched``, ``FoundOffset``) is
built on the hot paths as a plain tuple of the same fields in the same order, and read by
position: an entry is made for every partition of every request, and a tuple subclass costs
several plain tuples to build. Code that is not on a hot path may build the named type; the
service reads either alike.
"""

from __future__ import annotations

from typing import NamedTuple

make = tuple.__new__
"""``make(Type, (field, ...))``: a request's tuple built without its Python-level
constructor (one call fewer per request)."""


class RequestDenied(NamedTuple):
    """The whole request was refused by the gate (a follower's Fetch without
    ClusterAction): nothing ran."""

    error_code: int
    error_message: str


# ---------------------------------------------------------------------------------- produce


class ProducePartition(NamedTuple):
    topic: str
    partition: int
    records: object  # the batches: bytes, or the Kafka adapter's ``ConvertedBatches``


class ProduceRequest(NamedTuple):
    acks: int  # 0: no answer; 1: the leader's log; -1: every in-sync replica
    timeout_ms: int  # how long an acks = -1 answer may wait
    partitions: list[ProducePartition]


class Appended:
    """One partition's produce result. Mutable: an acks = -1 answer sets its code once the
    batch is safe (or is not), after the append filled the rest."""

    __slots__ = ("error_code", "base_offset", "log_append_time", "log_start_offset",
                 "error_message")

    def __init__(self, error_code: int = 0) -> None:
        self.error_code = error_code
        self.base_offset = -1
        self.log_append_time = -1
        self.log_start_offset = -1
        self.error_message: str | None = None  # which limit a too-large batch broke


# ------------------------------------------------------------------------------------ fetch


class FetchPartition(NamedTuple):
    topic: str
    partition: int
    fetch_offset: int
    max_bytes: int


class FetchRequest(NamedTuple):
    replica_id: int  # -1: a consumer (reads below the high watermark); >= 0: a follower
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    partitions: list[FetchPartition]


class Fetched(NamedTuple):
    error_code: int
    high_watermark: int
    log_start_offset: int
    records: bytes  # the stored batches as they are, b"" for none


# ----------------------------------------------------------------------------- list offsets


class OffsetQuery(NamedTuple):
    topic: str
    partition: int
    timestamp: int  # a time in ms, or LATEST / EARLIEST / MAX_TIMESTAMP


class ListOffsetsRequest(NamedTuple):
    replica_id: int  # >= 0: a replica, which may see past the high watermark
    timestamp_type: str | None  # "append" or "create"; None: each topic's own type
    queries: list[OffsetQuery]


class FoundOffset(NamedTuple):
    error_code: int
    offset: int  # -1: none
    timestamp: int  # the found record's, -1 for none or a special query
    leader_epoch: int  # the leader's epoch when the answer was read, -1 with no offset


# --------------------------------------------------------------------------------- metadata


class MetadataRequest(NamedTuple):
    topics: list[str] | None  # None: every topic (those the principal may describe)


class TopicLeaders(NamedTuple):
    topic: str
    error_code: int  # UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION, a denial, or 0
    partitions: object  # ``partition_lists.KeptPartitions``; None with an error


class Metadata(NamedTuple):
    controller_id: int
    topics: list[TopicLeaders]  # in the request's order (sorted by name for every topic)
    cluster: object  # the ``ClusterView``: each port lists its own brokers' addresses
