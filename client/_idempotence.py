"""The idempotent producer's bookkeeping: a producer id, and a sequence per partition.

Why: with acks=all a producer that loses a response (a timeout, a connection reset, a leader
killed mid-request) cannot know whether its batch was written, so it must retry, and a
plain retry can write the batch twice. With ``enable_idempotence=True`` the producer asks the
cluster for a producer id (InitProducerId) and stamps every batch with (producer id, epoch,
base sequence); the partition leader answers a batch it already holds with the original
offsets instead of writing it again (docs/replication.md).

Rules kept here:

- A batch gets its sequence when it is first encoded and keeps it (and its bytes) across
  every retry.
- Up to ``MAX_IN_FLIGHT_PER_PARTITION`` batches of a partition are in flight at once, as
  Kafka allows (one at a time cost acks=all producers half their rate: each request waited
  for its own fsync). Five because the leader keeps the last five batches per producer
  (``storage/producers.py``), so a retry of any of them is still recognised as a duplicate.
  Order holds because a broker appends one connection's requests in the order they came.
- Pipelining waits until the leader has acknowledged a batch under the current producer
  id: a leader that does not know a producer takes its first batch at any sequence, so a
  second batch sent behind a refused first one could be written ahead of it.
- A retry goes alone: it waits until nothing of its partition is in flight, and the
  retries go back in the order they were first sent (``RecordAccumulator.reenqueue``).
- A batch refused as out of order (OUT_OF_ORDER_SEQUENCE_NUMBER) is retried when that is
  explained by the producer's own pipeline: an earlier batch of the partition is still
  unresolved (refused, lost with a connection, waiting to retry: the leader saw a gap), or
  the batch carries a producer id since replaced (it was not written; it is encoded again
  with a new sequence). Otherwise the refusal stands.
- A batch that fails for good leaves a hole the leader would refuse forever, so the
  producer then takes a new producer id and starts its sequences again at 0.
"""

from __future__ import annotations

import logging

from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

from ._types import TopicPartition
from .errors import TslogError, error_for, refused

log = logging.getLogger("tslog.client._producer")

_SEQUENCE_MOD = 2**31
MAX_IN_FLIGHT_PER_PARTITION = 5  # the leader's storage.producers.BATCHES_KEPT


class Idempotence:
    def __init__(self) -> None:
        self.producer_id = -1
        self.producer_epoch = -1
        self.sequences: dict[TopicPartition, int] = {}
        self.in_flight: dict[TopicPartition, int] = {}
        # Partitions whose leader acknowledged a batch of the current producer id.
        self.confirmed: set[TopicPartition] = set()
        # Stamped batches not yet acknowledged or failed, per partition, in stamping order.
        self.unresolved: dict[TopicPartition, list] = {}

    @property
    def ready(self) -> bool:
        return self.producer_id >= 0

    async def init(self, cluster) -> None:
        """Get a producer id from any broker (retrying retriable failures). A principal
        without the right to one (Kafka >= 2.8: Write on any topic, or ClusterAction) gets
        ClusterAuthorizationFailedError, which fails the waiting sends at once (the sender)."""
        try:
            body = await cluster.request(None, ApiKey.INIT_PRODUCER_ID, {})
        except TslogError as exc:  # a top-level refusal is raised by the connection
            if exc.retriable:
                raise
            raise _explained(exc.error_code) from None
        if body["error_code"]:
            raise _explained(body["error_code"])
        self.producer_id, self.producer_epoch = body["producer_id"], body["producer_epoch"]
        self.sequences.clear()
        self.confirmed.clear()
        log.debug("idempotent producer id %d", self.producer_id)

    def stamp(self, batch) -> tuple[int, int, int]:
        """(producer id, epoch, base sequence) for ``batch``, encoded now for the first time
        (or again, after ``transient_out_of_order`` gave it up)."""
        tp = batch.tp
        sequence = self.sequences.get(tp, 0)
        self.sequences[tp] = (sequence + batch.record_count) % _SEQUENCE_MOD
        self.unresolved.setdefault(tp, []).append(batch)
        return self.producer_id, self.producer_epoch, sequence

    def may_send(self, tp: TopicPartition, head) -> bool:
        """Whether ``head``, the next batch of ``tp``, may go now (see the rules above)."""
        count = self.in_flight.get(tp, 0)
        return count == 0 or (count < MAX_IN_FLIGHT_PER_PARTITION and head is not None
                              and head.attempts == 0 and tp in self.confirmed)

    def sent(self, batches) -> None:
        in_flight = self.in_flight
        for batch in batches:
            in_flight[batch.tp] = in_flight.get(batch.tp, 0) + 1

    def answered(self, batches) -> None:
        in_flight = self.in_flight
        for batch in batches:
            count = in_flight.pop(batch.tp, 1) - 1
            if count:
                in_flight[batch.tp] = count

    def acknowledged(self, batch) -> None:
        if batch.producer_id == self.producer_id:
            self.confirmed.add(batch.tp)
        self.resolved(batch)

    def resolved(self, batch) -> None:
        """``batch`` will not be sent again (acknowledged, failed, or to be encoded anew)."""
        waiting = self.unresolved.get(batch.tp)
        if waiting is not None and batch in waiting:
            waiting.remove(batch)
            if not waiting:
                del self.unresolved[batch.tp]

    def transient_out_of_order(self, batch) -> bool:
        """Whether an OUT_OF_ORDER_SEQUENCE_NUMBER refusal of ``batch`` calls for a retry.
        A batch stamped with a replaced producer id is also made ready to be encoded again
        (new id, new sequence) here, as the retry needs."""
        if batch.producer_id != self.producer_id:
            self.resolved(batch)
            batch.forget_encoding()  # the next attempt takes the new id and a new sequence
            return True
        waiting = self.unresolved.get(batch.tp, ())
        return any(other is not batch and other.producer_id == batch.producer_id
                   and other.send_order < batch.send_order for other in waiting)

    def failed_for_good(self, error: BaseException) -> None:
        """A batch will never be acknowledged: start over with a new producer id."""
        if self.producer_id >= 0:  # INFO: the batch's own future reports the failure
            log.info("a batch failed for good (%s): the idempotent producer takes a new "
                     "producer id, so the batches after it keep their order", error)
        self.producer_id = -1
        self.sequences.clear()
        self.confirmed.clear()


def _explained(code: int) -> TslogError:
    """InitProducerId's refusal, saying what was refused and, for a denial, what right the
    principal lacks."""
    if error_for(code).retriable:
        return error_for(code)("InitProducerId refused")
    error = refused(code, "idempotent producer id (InitProducerId)")
    if error.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
        error = type(error)(f"{error}: the principal needs Write on a topic (Kafka's "
                            "IdempotentWrite), or ClusterAction on the cluster")
    return error


def require_acks_all(acks: int) -> None:
    if acks != -1:
        raise ValueError("enable_idempotence=True requires acks='all'")
