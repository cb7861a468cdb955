"""When an idempotent producer may send a partition's next batch, and which out-of-sequence
refusals it retries (``client/_idempotence.py``), on real batches without I/O.

Why these rules matter to a user: each one keeps records in send order, written once, when
several batches of a partition are in flight (tests/integration/test_client_idempotence.py
shows the whole producer doing so against a broker that is frozen, killed or refuses one).
"""

from tslog.client._accumulator import ProducerBatch
from tslog.client._idempotence import MAX_IN_FLIGHT_PER_PARTITION, Idempotence
from tslog.client._types import TopicPartition
from tslog.protocol.batch_header import parse_header

TP = TopicPartition("t", 0)


def idempotence(producer_id: int = 7) -> Idempotence:
    state = Idempotence()
    state.producer_id, state.producer_epoch = producer_id, 0
    return state


def batch(values=(b"a", b"b")) -> ProducerBatch:
    made = ProducerBatch(TP, now=0.0)
    made.values = list(values)
    made.create_times = [1] * len(values)
    return made


def test_a_partition_pipelines_only_once_its_leader_acknowledged_the_producer():
    """A leader that does not know a producer id takes its first batch at any sequence: a
    second batch behind a refused first one would be written ahead of it."""
    state = idempotence()
    first = batch()
    first.build(idempotence=state)
    state.sent([first])
    assert not state.may_send(TP, batch())
    state.answered([first])
    state.acknowledged(first)
    assert state.may_send(TP, batch())


def test_up_to_five_new_batches_in_flight_and_a_retry_goes_alone():
    state = idempotence()
    state.confirmed.add(TP)
    in_flight = []
    while state.may_send(TP, batch()):
        sent = batch()
        sent.build(idempotence=state)
        state.sent([sent])
        in_flight.append(sent)
    assert len(in_flight) == MAX_IN_FLIGHT_PER_PARTITION == 5
    state.answered(in_flight[:1])
    retry = in_flight[0]
    retry.attempts = 1
    assert state.may_send(TP, batch()) and not state.may_send(TP, retry)
    state.answered(in_flight[1:])
    assert state.may_send(TP, retry)


def test_out_of_sequence_behind_an_unresolved_batch_is_retried_with_its_bytes():
    state = idempotence()
    first, second = batch(), batch()
    encoded = [first.build(idempotence=state), second.build(idempotence=state)]
    assert [parse_header(e).base_sequence for e in encoded] == [0, 2]
    assert state.transient_out_of_order(second)  # the leader saw the gap ``first`` left
    assert second.build(idempotence=state) is encoded[1]
    state.resolved(first)  # acknowledged meanwhile: nothing explains a gap any more
    assert not state.transient_out_of_order(second)
    assert not state.transient_out_of_order(first)  # the first one's own refusal stands


def test_out_of_sequence_under_a_replaced_producer_id_is_encoded_again():
    state = idempotence(producer_id=7)
    behind = batch()
    behind.build(idempotence=state)
    state.failed_for_good(RuntimeError("the batch before it"))
    state.producer_id, state.producer_epoch = 8, 0  # InitProducerId again
    assert state.transient_out_of_order(behind)
    header = parse_header(behind.build(idempotence=state))
    assert (header.producer_id, header.base_sequence) == (8, 0)
