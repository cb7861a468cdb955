"""Idempotent-producer state: duplicates answered from memory, gaps refused."""

import pytest

from tslog.broker.storage.producers import (
    BATCHES_KEPT,
    InvalidProducerEpochError,
    OutOfOrderSequenceError,
    ProducerStateTable,
)
from tslog.protocol.batch_header import parse_header
from tslog.protocol.records import build_batch


def header(pid, seq, count=2, epoch=0, offset=0, lat=-1):
    batch = build_batch([b"x"] * count, producer_id=pid, producer_epoch=epoch,
                        base_sequence=seq, create_times=1)
    return parse_header(batch)._replace(base_offset=offset, log_append_time=lat)


def test_the_next_sequence_is_accepted_and_a_retry_gets_the_original_offset():
    table = ProducerStateTable()
    assert table.check(header(7, 0)) is None
    table.update(header(7, 0, offset=10, lat=500))
    assert table.check(header(7, 2)) is None
    table.update(header(7, 2, offset=12, lat=501))
    assert table.check(header(7, 0)) == (10, 500)
    assert table.check(header(7, 2)) == (12, 501)


def test_a_gap_in_sequences_is_refused():
    table = ProducerStateTable()
    table.update(header(7, 0, offset=0))
    with pytest.raises(OutOfOrderSequenceError):
        table.check(header(7, 5))


def test_an_old_producer_epoch_is_fenced_and_a_new_one_restarts_at_zero():
    table = ProducerStateTable()
    table.update(header(7, 0, epoch=3))
    with pytest.raises(InvalidProducerEpochError):
        table.check(header(7, 2, epoch=2))
    assert table.check(header(7, 0, epoch=4)) is None
    with pytest.raises(OutOfOrderSequenceError):
        table.check(header(7, 6, epoch=4))


def test_non_idempotent_batches_are_never_checked():
    table = ProducerStateTable()
    assert table.check(header(-1, -1)) is None


def test_only_the_last_batches_are_remembered():
    table = ProducerStateTable()
    for i in range(BATCHES_KEPT + 1):
        table.update(header(7, 2 * i, offset=2 * i))
    with pytest.raises(OutOfOrderSequenceError):
        table.check(header(7, 0))  # aged out: no longer answerable as a duplicate
    assert table.check(header(7, 2)) == (2, -1)


def test_snapshot_round_trip_and_truncation(tmp_path):
    table = ProducerStateTable()
    table.update(header(7, 0, offset=0, lat=1))
    table.update(header(7, 2, offset=2, lat=2))
    table.write_snapshot(tmp_path)
    loaded = ProducerStateTable.read_snapshot(tmp_path)
    assert loaded.covered_offset == 4
    assert loaded.check(header(7, 2)) == (2, 2)
    assert loaded.truncate_to(2)
    assert loaded.check(header(7, 2)) is None  # the batch is gone: writing it again is right
    assert not loaded.truncate_to(0)  # nothing left of producer 7: the caller rebuilds


def test_a_garbage_snapshot_reads_as_empty(tmp_path):
    (tmp_path / "producer-state").write_bytes(b"\xc1garbage")
    assert ProducerStateTable.read_snapshot(tmp_path).producers == {}


def test_expire_forgets_the_producers_whose_newest_batch_is_older():
    table = ProducerStateTable()
    table.update(header(7, 0, offset=0, lat=100))
    table.update(header(7, 2, offset=2, lat=900))  # producer 7 was active at 900
    table.update(header(8, 0, offset=4, lat=400))
    assert table.expire(older_than_lat=500) == 1
    assert sorted(table.producers) == [7]
    assert table.check(header(7, 2)) == (2, 900)
    assert table.check(header(8, 0)) is None  # unknown again: taken as a new producer
