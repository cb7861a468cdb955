"""``header_at``: the header of the batch holding an offset, in any segment."""

from __future__ import annotations

import pytest

from tests.helpers.storage import START_MS, make_batch, open_log
from tslog.broker.storage import ManualClock, OffsetOutOfRangeError
from tslog.broker.storage.headers import header_at


def test_header_of_the_batch_holding_each_offset_across_segments(tmp_path):
    clock = ManualClock(START_MS)
    plog = open_log(tmp_path / "p", clock, segment_bytes=240)
    for count, at in ((2, START_MS), (3, START_MS + 10), (4, START_MS + 20)):
        clock.set(at)
        plog.append(make_batch(count, create_time=at))
    assert len(plog.segments) == 3
    assert [header_at(plog, offset).base_offset for offset in range(9)] == [0] * 2 + [2] * 3 + [5] * 4
    assert header_at(plog, 4).log_append_time == START_MS + 10
    for outside in (-1, 9, 100):
        with pytest.raises(OffsetOutOfRangeError):
            header_at(plog, outside)
    plog.close()
