"""A real broker in a crash loop, and one with a 500-segment topic.

Goal: restart time is bounded by the unflushed tail, not by the log's size or by how many
crashes came before (recovery moves the recovery point once it has checked and synced the
tail), and the broker's open descriptors scale with its active segments, not with all of
them (sealed segments open their files on demand; an LRU bounds how many stay open).
Method: SIGKILL the broker again and again, each time after producing a little more, and read
what recovery says it scanned from the broker's own log (the line an operator sees); count
/proc/<pid>/fd of a broker holding a topic of 500 segments before and after reading every
record and looking up every batch by time. Raw-socket produce/fetch (tests/helpers/wire.py).
"""

from __future__ import annotations

import os
import re

import pytest

from tests.helpers.wire import Wire, batch, split_values
from tslog.broker.storage.segment_roll import SEALS_OWED_MAX

pytestmark = pytest.mark.timeout(240)

_SCANNED = re.compile(r"(\S+): recovery scanned (\d+) bytes in (\d+) of (\d+) segments")
INDEX_INTERVAL_BYTES = 4096  # the default: recovery may re-read up to one interval more


def all_values(wire: Wire, topic: str) -> dict[int, bytes]:
    out, offset = {}, 0
    while True:
        fetched = wire.fetch(topic, 0, offset)
        assert fetched["error_code"] == 0
        values = [(o, v) for o, v in split_values(fetched["records"]) if o >= offset]
        if not values:
            return out
        out.update(values)
        offset = values[-1][0] + 1


def recovery_lines(text: str, partition_dir: str) -> list[tuple[int, int]]:
    return [(int(m.group(2)), int(m.group(3))) for m in _SCANNED.finditer(text)
            if m.group(1) == partition_dir]


def test_each_restart_of_a_crash_loop_rechecks_only_what_came_since_the_last(broker):
    acknowledged: dict[int, bytes] = {}

    def produce(wire, count, acks, tag):
        sent = 0
        for i in range(count):
            records = batch([b"%s-%d-" % (tag, i) + b"x" * 1500] * 4)
            result = wire.produce("events", 0, records, acks=acks)
            assert result["error_code"] == 0
            if acks == -1:
                acknowledged[result["base_offset"]] = b"%s-%d-" % (tag, i) + b"x" * 1500
            sent += len(records)
        return sent

    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("events") == 0
        produce(wire, 400, -1, b"base")  # ~2.4 MB, acknowledged (fsynced)
    broker.restart()  # clean: the checkpoint holds the log end
    scanned = []
    for crash in range(5):
        with Wire(broker.host, broker.port) as wire:
            tail = produce(wire, 10, -1, b"durable%d" % crash)
            tail += produce(wire, 10, 1, b"maybe%d" % crash)
        seen = len(broker.log_text())
        broker.restart(kill=True)
        lines = recovery_lines(broker.log_text()[seen:], "events-0")
        assert len(lines) == 1, broker.log_text()[seen:]
        scanned_bytes, recovered_segments = lines[0]
        scanned.append(scanned_bytes)
        # Only what was produced since the previous start, give or take an index interval
        # and a batch: not the 2.4 MB below it, and not more with every crash.
        assert tail <= scanned_bytes <= tail + INDEX_INTERVAL_BYTES + 8_000, (crash, scanned)
        assert recovered_segments == 1
        with Wire(broker.host, broker.port) as wire:
            values = all_values(wire, "events")
            for offset, value in acknowledged.items():
                assert values.get(offset) == value
    assert max(scanned) - min(scanned) <= INDEX_INTERVAL_BYTES + 8_000


SEGMENTS = 500


def open_descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


OPEN_SEALED = 8  # the broker's storage_open_files_max here


@pytest.mark.slow  # ~15 s: 500 produce calls and three passes over every record
@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_descriptors_of_a_500_segment_topic_stay_bounded_and_every_lookup_still_works(
        broker_factory):
    broker = broker_factory(env={"TSLOG_STORAGE_OPEN_FILES_MAX": str(OPEN_SEALED)})
    produced = []  # (base offset, LogAppendTime, value)
    with Wire(broker.host, broker.port) as wire:
        idle = open_descriptors(broker.process.pid)
        assert wire.create_topic("wide", 1, {"segment.bytes": "1000"}) == 0
        for i in range(SEGMENTS):  # each batch (~700 bytes) fills a segment: one roll each
            value = b"v%04d-" % i + b"y" * 600
            result = wire.produce("wide", 0, batch([value]), acks=1)
            assert result["error_code"] == 0
            produced.append((result["base_offset"], result["log_append_time"], value))
        grown = open_descriptors(broker.process.pid)
    segment_files = [n for n in os.listdir(broker.data_dir / "wide-0") if n.endswith(".log")]
    assert len(segment_files) == SEGMENTS
    # At most OPEN_SEALED sealed segments open (storage_open_files_max), a descriptor each
    # (their index maps hold none), the active one's, the rolled segments whose seal the I/O
    # worker still owes (3 index files each, at most SEALS_OWED_MAX), and slack for the
    # connection and the topic's other files; before any budget, ~7 per segment: 3,500.
    bound = idle + OPEN_SEALED + 1 + 3 * SEALS_OWED_MAX + 16
    assert grown <= bound, (idle, grown)

    def check_everything():
        with Wire(broker.host, broker.port) as wire:
            values = all_values(wire, "wide")
            assert values == {offset: value for offset, _, value in produced}
            # Two produces in one millisecond share a LogAppendTime: a lookup of that time
            # answers the first batch that has it.
            first_at = {}
            for offset, log_append_time, _ in produced:
                first_at.setdefault(log_append_time, offset)
            for _, log_append_time, _ in produced[::-1]:  # newest to oldest
                found = wire.list_offset("wide", 0, log_append_time)
                assert (found["offset"], found["timestamp"]) == (first_at[log_append_time],
                                                                 log_append_time)
            found = wire.list_offset("wide", 0, 0, "create")  # the oldest segment's record
            assert found["offset"] == 0
            return open_descriptors(broker.process.pid)

    assert check_everything() <= bound
    broker.restart()  # clean: every segment trusted, none opened until read
    after_restart = open_descriptors(broker.process.pid)
    assert after_restart <= idle + 1 + 16, (idle, after_restart)
    assert check_everything() <= bound
    broker.restart(kill=True)
    assert check_everything() <= bound
