"""DeleteRecords on one log: the start moves to any offset (inside a segment too), reads
below it are out of range, EARLIEST and lookups by time answer from it, whole segments below
it are freed, and the start survives a close and a crash (no clean shutdown)."""

from __future__ import annotations

import pytest

from tests.helpers.storage import make_batch, open_log, read_all
from tslog.broker.storage import OffsetOutOfRangeError
from tslog.protocol.messages import EARLIEST_TIMESTAMP


def filled(directory):
    log = open_log(directory, segment_bytes=600)  # a few batches per segment
    for _ in range(10):
        log.append(make_batch(3))  # offsets 0..29
    return log


def test_start_moves_inside_a_segment_and_frees_whole_segments(tmp_path):
    log = filled(tmp_path / "t-0")
    segments_before = len(log.segments)
    assert log.delete_records_before(17) == 17
    assert log.log_start_offset == 17
    assert all(segment.next_offset > 17 for segment in log.segments)
    assert len(log.segments) < segments_before
    with pytest.raises(OffsetOutOfRangeError):
        log.read(16)
    assert [r.offset for r in read_all(log) if r.offset >= 17] == list(range(17, 30))
    assert log.offset_for_time(EARLIEST_TIMESTAMP).offset == 17
    assert log.offset_for_time(0).offset == 17  # every record is later than 0
    assert log.delete_records_before(5) == 17  # below the start: nothing changes
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records_before(31)
    log.close()


@pytest.mark.parametrize("crash", [False, True])
def test_the_start_survives_a_restart_and_a_crash(tmp_path, crash):
    log = filled(tmp_path / "t-0")
    log.delete_records_before(22)
    if crash:
        log.close_handles()  # what SIGKILL leaves: no flush, no clean marker
    else:
        log.close()
    again = open_log(tmp_path / "t-0", segment_bytes=600)
    assert again.log_start_offset == 22
    with pytest.raises(OffsetOutOfRangeError):
        again.read(21)
    again.close()


def test_deleting_up_to_the_end_empties_the_log_and_appends_go_on(tmp_path):
    log = filled(tmp_path / "t-0")
    assert log.delete_records_before(30) == 30
    assert log.log_start_offset == log.log_end_offset == 30
    assert sum(segment.size for segment in log.segments) == 0
    assert log.append(make_batch(1)).base_offset == 30
    log.close()
