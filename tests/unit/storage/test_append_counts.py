"""A leader's append of a one-record batch, guarded by counting rather than timing (issue 37,
small batches; issue 41 found a produced batch's header decoded 3-4 times on its way to disk).

Goal: the append path stays what it was made: its header is decoded once (the one
``unpack_from`` of the validation; the stamped header is built from that tuple, not parsed
from the new bytes), the batch reaches the file in one ``pwritev``, and the number of Python
calls per append stays within today's count. Method: ``sys.setprofile`` counts Python calls
and C calls by name during warm appends through ``ReplicaLog.append_as_leader`` (what the
produce handler calls) on a real log in a temporary directory.
"""

from __future__ import annotations

from collections import Counter

import pytest

from tslog.broker.storage import LogConfig, ManualClock, PartitionLog
from tslog.broker.storage.replica import ReplicaLog
from tslog.protocol.batch_header import parse_header
from tslog.protocol.records import build_batch
from tests.helpers.python_calls import calls_by_name

START_MS = 1_700_000_000_000
# Today's count for a one-record append (22: since issue 41 it includes what the produce
# handler did before, the request's split and the producer check; main had 42 once).
PYTHON_CALLS_MAX = 22


def counted(function, *args) -> Counter:
    """Python calls (``python``, and by function name) and C calls by name during
    ``function(*args)``."""
    return calls_by_name(lambda: function(*args))[0]


@pytest.fixture()
def replica(tmp_path):
    clock = ManualClock(START_MS)
    replica = ReplicaLog(PartitionLog(tmp_path / "events-0",
                                      LogConfig(index_interval_bytes=1 << 20), clock))
    for _ in range(3):  # warm: the first batch of a segment is indexed, later ones are not
        replica.append_as_leader(build_batch([b"warm"], create_times=START_MS), 0)
    yield replica
    replica.log.close()


@pytest.mark.parametrize("key, value", [(None, b"v" * 100), (b"k", b""), (None, None)])
def test_a_one_record_append_decodes_its_header_once_and_writes_once(replica, key, value):
    batch = build_batch([value], keys=[key], create_times=START_MS)
    calls = counted(replica.append_as_leader, batch, 0)
    assert calls["unpack_from"] == 1, calls  # the validation's; nothing parses it again
    assert calls["parse_header"] == 0, calls
    assert calls["pwritev"] == 1 and calls["write"] == calls["pwrite"] == 0, calls
    assert calls["python"] <= PYTHON_CALLS_MAX, calls
    stored = replica.log.read(replica.log.log_end_offset - 1)
    assert parse_header(stored).record_count == 1 and stored[80:] == batch[80:]


def test_an_idempotent_one_record_append_also_decodes_its_header_once(replica):
    batch = build_batch([b"v"], create_times=START_MS, producer_id=7, producer_epoch=0,
                        base_sequence=0)
    calls = counted(replica.append_as_leader, batch, 0)
    assert calls["unpack_from"] == 1, calls
    assert replica.producers.check(parse_header(batch)) is not None  # it was recorded


def test_a_batch_of_many_records_decodes_its_header_once_too(replica):
    batch = build_batch([b"v"] * 100, create_times=START_MS)
    calls = counted(replica.append_as_leader, batch, 0)
    # The fast path's look read the header and the general path checks those fields (the
    # other unpack_from here reads the records section's sizes, not the header).
    assert calls["parse_header"] == 0, calls
    assert calls["pwritev"] == 1, calls
