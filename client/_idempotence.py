"""The idempotent producer's bookkeeping: a producer id, and a sequence per partition.

Why: with acks=all a producer that loses a response (a timeout, a connection reset, a leader
killed mid-request) cannot know whether its batch was written, so it must retry, and a
plain retry can write the batch twice. With ``enable_idempotence=True`` the producer asks the
cluster for a producer id (InitProducerId) and stamps every batch with (producer id, epoch,
base sequence); the partition leader answers a batch it already holds with the original
offsets instead of writing it again (docs/replication.md).

Rules kept here: a batch gets its sequence when it is first encoded and keeps it (and its
bytes) across every retry; each partition has at most one batch in flight, so sequences
reach the leader in order; a batch that fails for good leaves a hole the leader would refuse
forever, so the producer then takes a new producer id and starts its sequences again at 0.
"""

from __future__ import annotations

import logging

from tslog.protocol.messages import ApiKey

from ._types import TopicPartition
from .errors import error_for

log = logging.getLogger("tslog.client._producer")

_SEQUENCE_MOD = 2**31


class Idempotence:
    def __init__(self) -> None:
        self.producer_id = -1
        self.producer_epoch = -1
        self.sequences: dict[TopicPartition, int] = {}
        self.in_flight: set[TopicPartition] = set()

    @property
    def ready(self) -> bool:
        return self.producer_id >= 0

    async def init(self, cluster) -> None:
        """Get a producer id from any broker (retrying retriable failures)."""
        body = await cluster.request(None, ApiKey.INIT_PRODUCER_ID, {})
        if body["error_code"]:
            raise error_for(body["error_code"])("InitProducerId refused")
        self.producer_id, self.producer_epoch = body["producer_id"], body["producer_epoch"]
        self.sequences.clear()
        log.debug("idempotent producer id %d", self.producer_id)

    def stamp(self, tp: TopicPartition, record_count: int) -> tuple[int, int, int]:
        """(producer id, epoch, base sequence) for a new batch of ``tp``."""
        sequence = self.sequences.get(tp, 0)
        self.sequences[tp] = (sequence + record_count) % _SEQUENCE_MOD
        return self.producer_id, self.producer_epoch, sequence

    def failed_for_good(self, error: BaseException) -> None:
        """A batch will never be acknowledged: start over with a new producer id."""
        if self.producer_id >= 0:
            log.warning("idempotent batch failed for good (%r): taking a new producer id",
                        error)
        self.producer_id = -1
        self.sequences.clear()


def require_acks_all(acks: int) -> None:
    if acks != -1:
        raise ValueError("enable_idempotence=True requires acks='all'")

