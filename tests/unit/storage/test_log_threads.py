"""Retention and checkpoints from another thread, beside the owner's appends and reads.

Goal: the broker runs retention and checkpoints in a worker thread so a slow disk cannot
stall its event loop; that is only safe if a reader never meets a segment closed under it
and no checkpoint ever goes backwards. Method: one thread deletes segments (tiny
retention.bytes) and writes checkpoints as fast as it can while this thread appends, reads
and looks up by time; every read must return exactly the records at its offsets, or
OffsetOutOfRangeError for an offset retention removed (never a bad descriptor or garbage).
"""

from __future__ import annotations

import threading

from tests.helpers.storage import START_MS, make_batch, open_log
from tslog.broker.storage import OffsetOutOfRangeError
from tslog.broker.storage.recovery import read_checkpoint
from tslog.protocol.records import iter_records, split_batches


def test_reads_and_appends_stay_correct_while_retention_deletes_segments(tmp_path):
    log = open_log(tmp_path / "t-0", segment_bytes=4096, retention_bytes=8192)
    stop = threading.Event()
    errors: list[BaseException] = []
    deleted = [0]

    def retention() -> None:
        try:
            while not stop.is_set():
                deleted[0] += len(log.delete_old_segments())
                log.checkpoint()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    worker = threading.Thread(target=retention)
    worker.start()
    served = out_of_range = 0
    try:
        for i in range(1500):
            log.append(make_batch(3, value_size=100))
            for offset in (max(0, log.log_end_offset - 30), log.log_start_offset):
                try:
                    chunk = log.read(offset, max_bytes=2048)
                except OffsetOutOfRangeError:
                    out_of_range += 1  # retention moved the start past it meanwhile
                    continue
                records = [r for b in split_batches(chunk) for r in iter_records(bytes(b))]
                assert records and records[0].offset <= offset
                assert [r.offset for r in records] == list(
                    range(records[0].offset, records[0].offset + len(records)))
                assert all(r.value.startswith(b"v0000") for r in records)
                served += 1
            assert log.offset_for_time(START_MS - 1) is not None
    finally:
        stop.set()
        worker.join(10)
    assert not errors, errors
    assert deleted[0] > 50 and served > 2000
    log.close()
    assert read_checkpoint(tmp_path / "t-0")[0] == 4500


def test_concurrent_checkpoints_never_leave_an_older_recovery_point(tmp_path):
    log = open_log(tmp_path / "t-0", flush_messages=1)
    stop = threading.Event()

    def checkpoints() -> None:
        while not stop.is_set():
            log.checkpoint()

    workers = [threading.Thread(target=checkpoints) for _ in range(3)]
    for worker in workers:
        worker.start()
    try:
        for _ in range(200):
            log.append(make_batch(1))  # flush.messages=1: the recovery point moves each time
    finally:
        stop.set()
        for worker in workers:
            worker.join(10)
    log.checkpoint()
    assert read_checkpoint(tmp_path / "t-0")[0] == 200
    log.close()
