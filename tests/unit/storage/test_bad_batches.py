"""A batch that lies about its records gets into no log: not from a producer, not from a
leader, not back from a disk.

Goal: every way into a partition log runs the same records check. Method: the lies of
``tests/helpers/batches.py`` appended as a leader would, as a follower would (stamped with
the right offset, epoch, LAT and CRC, as a leader that accepted it would have sent it), and
written into a segment file behind the log's back before a crash; each time the log must end
where it did and hold exactly the honest records.
"""

from __future__ import annotations

import os

import pytest

from tests.helpers.batches import LIES
from tests.helpers.storage import START_MS, make_batch, open_log, read_all
from tslog.broker.storage import CorruptRecordError, ManualClock
from tslog.protocol.batch_header import stamp
from tslog.protocol.records import split_batches


def honest_log(directory, clock):
    log = open_log(directory, clock)
    appends = [log.append(make_batch(3)), log.append(make_batch(2))]
    return log, appends


def stamped_after(lie: bytes, last) -> bytearray:
    """``lie`` as its leader would have written it right after the batch ``last``."""
    batch = bytearray(lie)
    stamp(batch, last.last_offset + 1, 0, last.log_append_time)
    return batch


@pytest.mark.parametrize("lie", sorted(LIES))
def test_leader_append_refuses_and_writes_nothing(tmp_path, lie):
    log, _ = honest_log(tmp_path / "t-0", ManualClock(START_MS))
    size = log.size_bytes
    with pytest.raises(CorruptRecordError):
        log.append(LIES[lie]())
    assert (log.log_end_offset, log.size_bytes) == (5, size)
    assert [r.offset for r in read_all(log)] == [0, 1, 2, 3, 4]
    log.close()


@pytest.mark.parametrize("lie", sorted(LIES))
def test_follower_append_refuses_what_a_leader_should_not_have_sent(tmp_path, lie):
    clock = ManualClock(START_MS)
    leader, appends = honest_log(tmp_path / "leader", clock)
    follower = open_log(tmp_path / "follower", clock)
    for batch in split_batches(leader.read(0, max_bytes=1 << 16)):
        follower.append_as_follower(bytes(batch))
    with pytest.raises(CorruptRecordError):
        follower.append_as_follower(bytes(stamped_after(LIES[lie](), appends[-1])))
    assert follower.log_end_offset == 5
    assert len(read_all(follower)) == 5
    leader.close()
    follower.close()


@pytest.mark.parametrize("lie", sorted(LIES))
def test_recovery_cuts_a_lying_batch_found_on_disk(tmp_path, lie):
    clock = ManualClock(START_MS)
    directory = tmp_path / "t-0"
    log, appends = honest_log(directory, clock)
    log.close_handles()  # a crash: the log's tail is recovered on the next open
    bad = stamped_after(LIES[lie](), appends[-1])
    segment = sorted(name for name in os.listdir(directory) if name.endswith(".log"))[-1]
    with open(directory / segment, "ab") as handle:
        handle.write(bad)
    with open_log(directory, clock) as log:
        assert log.recovery_report.bytes_truncated == len(bad)
        assert log.log_end_offset == 5
        assert [r.offset for r in read_all(log)] == [0, 1, 2, 3, 4]
        assert log.append(make_batch(1)).base_offset == 5
