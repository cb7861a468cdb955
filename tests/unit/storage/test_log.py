"""PartitionLog behaviour a producer, a consumer or an operator would notice."""

import os

import pytest

from tests.helpers.storage import START_MS, make_batch, open_log, read_all
from tslog.broker.storage import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    CorruptRecordError,
    InvalidTimestampError,
    ManualClock,
    NonContiguousOffsetError,
    OffsetAndTimestamp,
    OffsetOutOfRangeError,
    RecordTooLargeError,
)
from tslog.protocol.batch_header import parse_header


def test_appends_get_contiguous_offsets_and_read_back(tmp_path):
    with open_log(tmp_path / "t-0") as log:
        first = log.append(make_batch(3))
        second = log.append(make_batch(2))
        assert (first.base_offset, first.last_offset) == (0, 2)
        assert (second.base_offset, second.last_offset) == (3, 4)
        assert log.log_end_offset == 5
        records = read_all(log)
        assert [r.offset for r in records] == [0, 1, 2, 3, 4]
        assert records[3].value.startswith(b"v00000")


def test_read_from_the_middle_of_a_batch_returns_that_whole_batch(tmp_path):
    with open_log(tmp_path / "t-0") as log:
        log.append(make_batch(5))
        log.append(make_batch(5))
        chunk = log.read(7)
        assert parse_header(chunk).base_offset == 5
        assert log.read(10) == b""


def test_read_outside_the_log_is_an_error(tmp_path):
    with open_log(tmp_path / "t-0") as log:
        log.append(make_batch(2))
        with pytest.raises(OffsetOutOfRangeError):
            log.read(3)
        with pytest.raises(OffsetOutOfRangeError):
            log.read(-1)


def test_read_respects_max_bytes_on_batch_boundaries_but_always_returns_one_batch(tmp_path):
    with open_log(tmp_path / "t-0", index_interval_bytes=0) as log:
        sizes = [log.append(make_batch(10, value_size=100)).batch_bytes for _ in range(5)]
        one = log.read(0, max_bytes=10)
        assert len(one) == sizes[0]
        two = log.read(0, max_bytes=sizes[0] + sizes[1] + sizes[2] - 1)
        assert len(two) == sizes[0] + sizes[1]


def test_read_stops_at_max_offset(tmp_path):
    with open_log(tmp_path / "t-0") as log:
        for _ in range(4):
            log.append(make_batch(2))
        chunk = log.read(0, max_offset=4)
        records = read_all_from_chunk(chunk)
        assert [r.offset for r in records] == [0, 1, 2, 3]
        assert log.read(4, max_offset=4) == b""


def read_all_from_chunk(chunk):
    from tslog.protocol.records import iter_records

    records, position = [], 0
    while position < len(chunk):
        length = parse_header(chunk, position).batch_length
        records.extend(iter_records(chunk[position : position + length]))
        position += length
    return records


def test_log_append_time_never_goes_back_when_the_clock_does(tmp_path):
    clock = ManualClock(START_MS)
    with open_log(tmp_path / "t-0", clock) as log:
        a = log.append(make_batch(1))
        clock.advance(-3_600_000)
        b = log.append(make_batch(1, create_time=START_MS - 3_600_000))
        clock.advance(7_200_000)
        c = log.append(make_batch(1, create_time=START_MS + 3_600_000))
        assert a.log_append_time == START_MS
        assert b.log_append_time == START_MS
        assert c.log_append_time == START_MS + 3_600_000


def test_lookup_by_append_time_is_exact_to_the_millisecond(tmp_path):
    clock = ManualClock(START_MS)
    with open_log(tmp_path / "t-0", clock, index_interval_bytes=512, segment_bytes=4096) as log:
        offsets = {}
        for i in range(200):
            clock.set(START_MS + 10 * i)
            offsets[START_MS + 10 * i] = log.append(make_batch(3)).base_offset
        assert len(log.segments) > 3
        for lat, offset in offsets.items():
            assert log.offset_for_time(lat) == OffsetAndTimestamp(offset, lat)
            assert log.offset_for_time(lat - 9) == OffsetAndTimestamp(offset, lat)
        assert log.offset_for_time(START_MS - 1_000) == OffsetAndTimestamp(0, START_MS)
        assert log.offset_for_time(START_MS + 10 * 200) is None


def test_lookup_by_create_time_uses_kafka_semantics_with_out_of_order_times(tmp_path):
    with open_log(tmp_path / "t-0", index_interval_bytes=0) as log:
        log.append(make_batch(3, create_time=[START_MS - 50, START_MS - 10, START_MS - 30]))
        log.append(make_batch(2, create_time=[START_MS - 40, START_MS - 5]))
        assert log.offset_for_time(START_MS - 30, "create") == (1, START_MS - 10)
        assert log.offset_for_time(START_MS - 7, "create") == (4, START_MS - 5)
        assert log.offset_for_time(START_MS - 60, "create") == (0, START_MS - 50)
        assert log.offset_for_time(START_MS, "create") is None
        assert log.offset_for_time(MAX_TIMESTAMP, "create") == (4, START_MS - 5)


def test_special_timestamps(tmp_path):
    clock = ManualClock(START_MS)
    with open_log(tmp_path / "t-0", clock) as log:
        assert log.offset_for_time(MAX_TIMESTAMP) is None
        assert log.offset_for_time(LATEST_TIMESTAMP) == (0, -1)
        log.append(make_batch(2))
        clock.advance(5)
        log.append(make_batch(2))
        log.append(make_batch(2))
        assert log.offset_for_time(LATEST_TIMESTAMP) == (6, -1)
        assert log.offset_for_time(EARLIEST_TIMESTAMP) == (0, -1)
        assert log.offset_for_time(MAX_TIMESTAMP) == (2, START_MS + 5)
        with pytest.raises(ValueError):
            log.offset_for_time(-4)


def test_create_time_out_of_bounds_is_refused_and_nothing_is_written(tmp_path):
    clock = ManualClock(START_MS)
    config = dict(message_timestamp_before_max_ms=60_000, message_timestamp_after_max_ms=1_000)
    with open_log(tmp_path / "t-0", clock, **config) as log:
        log.append(make_batch(1))
        size = log.size_bytes
        with pytest.raises(InvalidTimestampError):
            log.append(make_batch(2, create_time=[START_MS, START_MS + 1_001]))
        with pytest.raises(InvalidTimestampError):
            log.append(make_batch(2, create_time=[START_MS - 60_001, START_MS]))
        assert log.size_bytes == size and log.log_end_offset == 1
        assert log.append(make_batch(1, create_time=START_MS + 1_000)).base_offset == 1


def test_corrupt_or_oversized_batches_are_refused_whole(tmp_path):
    with open_log(tmp_path / "t-0", max_message_bytes=2_000) as log:
        batch = bytearray(make_batch(3))
        batch[-1] ^= 0xFF
        with pytest.raises(CorruptRecordError):
            log.append(batch)
        with pytest.raises(CorruptRecordError):
            log.append(make_batch(3)[:-1])
        with pytest.raises(RecordTooLargeError):
            log.append(make_batch(50, value_size=100))
        assert log.size_bytes == 0 and log.log_end_offset == 0


def test_roll_by_size_time_and_full_index(tmp_path):
    clock = ManualClock(START_MS)
    with open_log(tmp_path / "a-0", clock, segment_bytes=500) as log:
        for _ in range(10):
            log.append(make_batch(2))
        assert all(s.size <= 500 for s in log.segments) and len(log.segments) > 2
        assert log.roll_reasons == {"size": len(log.segments) - 1}
    with open_log(tmp_path / "b-0", clock, segment_ms=1000) as log:
        log.append(make_batch(1))
        clock.advance(1000)
        log.append(make_batch(1))
        assert len(log.segments) == 1
        clock.advance(1)
        log.append(make_batch(1))
        assert len(log.segments) == 2 and log.roll_reasons == {"time": 1}
    with open_log(tmp_path / "c-0", clock, segment_index_bytes=64, index_interval_bytes=0) as log:
        for _ in range(9):
            log.append(make_batch(1))
        assert [s.index_entries for s in log.segments] == [4, 4, 1]
        assert log.roll_reasons == {"index_full": 2}


def test_replaying_old_create_times_does_not_roll(tmp_path):
    """KAFKA-4099: time rolls are measured on LAT, so old CreateTimes cannot cause them."""
    clock = ManualClock(START_MS)
    with open_log(tmp_path / "t-0", clock, segment_ms=1000) as log:
        for i in range(20):
            log.append(make_batch(1, create_time=START_MS - 86_400_000 + i * 10_000))
        assert len(log.segments) == 1


def test_sealed_index_files_are_trimmed_to_their_entries(tmp_path):
    with open_log(tmp_path / "t-0", segment_bytes=2000, index_interval_bytes=0) as log:
        for _ in range(10):
            log.append(make_batch(2))
        for segment in log.segments[:-1]:
            assert os.path.getsize(segment.offset_index.path) == 8 * segment.index_entries
            assert os.path.getsize(segment.time_index.path) == 16 * segment.index_entries
        active = log.segments[-1]
        assert os.path.getsize(active.time_index.path) == 10 << 20  # preallocated while active
    for name in os.listdir(tmp_path / "t-0"):
        if name.endswith("index"):
            size = os.path.getsize(tmp_path / "t-0" / name)
            assert size < 1000


def test_retention_by_time_deletes_whole_expired_segments_only(tmp_path):
    clock = ManualClock(START_MS)
    with open_log(tmp_path / "t-0", clock, segment_ms=100, retention_ms=1000) as log:
        for _ in range(5):
            log.append(make_batch(2))
            clock.advance(200)
        # segments hold LATs 0, 200, 400, 600, 800 (relative); now = 1000
        assert log.delete_old_segments() == []  # now - 0 == retention.ms: kept
        clock.advance(1)
        deleted = log.delete_old_segments()
        assert [(d.base_offset, d.reason) for d in deleted] == [(0, "time")]
        assert log.log_start_offset == 2
        assert log.delete_old_segments() == []  # idempotent at the same clock
        assert log.offset_for_time(START_MS) == (2, START_MS + 200)
        with pytest.raises(OffsetOutOfRangeError):
            log.read(0)


def test_retention_of_an_idle_partition_keeps_an_empty_active_segment(tmp_path):
    clock = ManualClock(START_MS)
    with open_log(tmp_path / "t-0", clock, retention_ms=1000) as log:
        log.append(make_batch(3))
        clock.advance(5000)
        deleted = log.delete_old_segments()
        assert [d.reason for d in deleted] == ["time"]
        assert (log.log_start_offset, log.log_end_offset) == (3, 3)
        assert log.append(make_batch(1)).base_offset == 3
    with open_log(tmp_path / "t-0", clock, retention_ms=1000) as log:
        assert (log.log_start_offset, log.log_end_offset) == (3, 4)


def test_retention_by_size_never_deletes_the_active_segment(tmp_path):
    with open_log(tmp_path / "t-0", segment_bytes=1000, retention_bytes=1500) as log:
        for _ in range(20):
            log.append(make_batch(2))
        deleted = log.delete_old_segments()
        assert deleted and all(d.reason == "size" for d in deleted)
        assert log.size_bytes <= 1500 + 1000
        assert log.size_bytes - log.segments[0].size < 1500
    with open_log(tmp_path / "u-0", segment_bytes=100_000, retention_bytes=10) as log:
        log.append(make_batch(2))
        assert log.delete_old_segments() == []


def test_a_future_producer_clock_cannot_pin_retention(tmp_path):
    """Retention runs on LAT: a CreateTime years ahead (when allowed) does not keep data."""
    clock = ManualClock(START_MS)
    far_future = START_MS + 10 * 365 * 86_400_000
    with open_log(
        tmp_path / "t-0", clock, retention_ms=1000, message_timestamp_after_max_ms=2**62
    ) as log:
        log.append(make_batch(1, create_time=far_future))
        clock.advance(1001)
        assert [d.reason for d in log.delete_old_segments()] == ["time"]


def test_flush_messages_policy_advances_the_recovery_point(tmp_path):
    with open_log(tmp_path / "t-0", flush_messages=5) as log:
        log.append(make_batch(3))
        assert log.recovery_point == 0
        log.append(make_batch(3))
        assert log.recovery_point == 6
    clock = ManualClock(START_MS)
    with open_log(tmp_path / "u-0", clock, flush_ms=100) as log:
        log.append(make_batch(3))
        assert log.recovery_point == 0
        clock.advance(100)
        log.append(make_batch(1))
        assert log.recovery_point == 4


def test_a_flush_after_a_roll_makes_the_new_segment_file_durable_once(tmp_path, monkeypatch):
    """A durable ack for a batch in a freshly rolled segment must survive power loss, so the
    new file's directory entry is synced with it; flushes with no new file skip the cost."""
    from tslog.broker.storage import files

    synced = []
    real = files.fsync_directory
    monkeypatch.setattr(files, "fsync_directory",
                        lambda directory: (synced.append(directory), real(directory)))
    with open_log(tmp_path / "t-0", segment_bytes=500) as log:
        log.append(make_batch(2))
        log.flush()
        assert synced == []
        while len(log.segments) == 1:
            log.append(make_batch(2))
        log.flush()
        assert synced == [tmp_path / "t-0"]
        log.append(make_batch(1))
        log.flush()
        assert synced == [tmp_path / "t-0"]
        assert log.recovery_point == log.log_end_offset


def test_follower_copies_bytes_and_ends_with_identical_files(tmp_path):
    clock = ManualClock(START_MS)
    config = dict(segment_bytes=3000, index_interval_bytes=300, segment_ms=50)
    leader = open_log(tmp_path / "leader" / "t-0", clock, **config)
    follower = open_log(tmp_path / "follower" / "t-0", ManualClock(START_MS - 10_000_000), **config)
    for i in range(60):
        clock.advance(7 * (i % 5))
        leader.append(make_batch(1 + i % 7))
    offset = 0
    while chunk := leader.read(offset, max_bytes=1500):
        position = 0
        while position < len(chunk):
            header = parse_header(chunk, position)
            follower.append_as_follower(chunk[position : position + header.batch_length])
            position += header.batch_length
            offset = header.next_offset
    leader.close()
    follower.close()
    leader_files = sorted(os.listdir(tmp_path / "leader" / "t-0"))
    assert leader_files == sorted(os.listdir(tmp_path / "follower" / "t-0"))
    for name in leader_files:
        a = (tmp_path / "leader" / "t-0" / name).read_bytes()
        b = (tmp_path / "follower" / "t-0" / name).read_bytes()
        assert a == b, name


def test_a_follower_takes_a_batch_over_max_message_bytes_but_not_over_segment_bytes(tmp_path):
    """The leader may store a batch larger than ``max.message.bytes`` (a Kafka producer's
    idempotent batch, counted as sent); its followers copy it, as Kafka's followers ignore
    the setting. A batch that cannot fit a segment is still refused, and nothing written."""
    leader = open_log(tmp_path / "l-0", ManualClock(START_MS), segment_bytes=20_000)
    leader.append(make_batch(50, value_size=100))
    stored = leader.read(0)
    leader.close()
    follower = open_log(tmp_path / "f-0", ManualClock(START_MS), max_message_bytes=2_000,
                        segment_bytes=20_000)
    assert len(stored) > 2_000
    assert follower.append_as_follower(stored).last_offset == 49
    small = open_log(tmp_path / "s-0", ManualClock(START_MS), segment_bytes=2_000)
    with pytest.raises(RecordTooLargeError, match="segment.bytes"):
        small.append_as_follower(stored)
    assert (follower.log_end_offset, small.log_end_offset, small.size_bytes) == (50, 0, 0)
    follower.close()
    small.close()


def test_follower_refuses_gaps_and_time_going_back(tmp_path):
    clock = ManualClock(START_MS)
    leader = open_log(tmp_path / "l-0", clock)
    follower = open_log(tmp_path / "f-0", clock)
    leader.append(make_batch(2))
    clock.advance(10)
    leader.append(make_batch(2))
    second = leader.read(2)
    with pytest.raises(NonContiguousOffsetError):
        follower.append_as_follower(second)
    follower.append_as_follower(leader.read(0, max_offset=2))
    follower.append_as_follower(second)
    assert follower.log_end_offset == 4
    leader.close()
    follower.close()


def test_truncate_to_removes_the_tail_and_appends_continue(tmp_path):
    clock = ManualClock(START_MS)
    with open_log(tmp_path / "t-0", clock, segment_bytes=1000) as log:
        for _ in range(12):
            clock.advance(1)
            log.append(make_batch(2))
        segments_before = len(log.segments)
        log.truncate_to(10)
        assert log.log_end_offset == 10 and len(log.segments) < segments_before
        assert log.last_log_append_time == START_MS + 5
        assert log.append(make_batch(1)).base_offset == 10
        assert [r.offset for r in read_all(log)] == list(range(11))
        with pytest.raises(ValueError):
            log.truncate_to(5)
    with open_log(tmp_path / "t-0", clock, segment_bytes=1000) as log:
        assert log.recovery_report.segments_recovered == 0
        assert [r.offset for r in read_all(log)] == list(range(11))


def test_a_lookup_reads_at_most_one_index_interval_of_log(tmp_path):
    clock = ManualClock(START_MS)
    interval = 512
    with open_log(tmp_path / "t-0", clock, index_interval_bytes=interval, segment_bytes=20_000) as log:
        appends = []
        for i in range(400):
            clock.advance(i % 2)  # pairs of batches share a millisecond
            appends.append(log.append(make_batch(1 + i % 3)))
        for a in appends:
            for target, kind in ((a.log_append_time, "append"), (START_MS + 1, "create")):
                before = log.lookup_bytes_read
                log.offset_for_time(target, kind)
                scanned = log.lookup_bytes_read - before
                if kind == "append":
                    assert scanned <= interval + 2 * 80, scanned


def test_when_every_batch_is_indexed_time_lookups_read_no_log(tmp_path):
    """Batches larger than index.interval.bytes are each indexed: a lookup by time (or a
    fetch's offset lookup) is answered from the index alone. After a restart the first
    lookup between two entries reads one header, and the same lookup then reads none."""
    clock = ManualClock(START_MS)
    config = dict(index_interval_bytes=100, segment_bytes=3000)
    with open_log(tmp_path / "t-0", clock, **config) as log:
        appends = []
        for _ in range(60):
            clock.advance(1)
            appends.append(log.append(make_batch(3)))
        assert len(log.segments) > 3

        def lookup(target):
            before = log.lookup_bytes_read
            found = log.offset_for_time(target)
            return found, log.lookup_bytes_read - before

        for a in appends:
            assert lookup(a.log_append_time) == ((a.base_offset, a.log_append_time), 0)
        assert [r.offset for r in read_all(log)] == list(range(180))
    with open_log(tmp_path / "t-0", clock, **config) as log:
        first_reads = []
        for a in appends:
            found, read = lookup(a.log_append_time)
            assert found == (a.base_offset, a.log_append_time) and read in (0, 80)
            first_reads.append(read)
            assert lookup(a.log_append_time) == (found, 0)
        assert first_reads.count(80) > 40  # all but each segment's first batch
        assert [r.offset for r in read_all(log)] == list(range(180))


def test_truncating_to_a_segment_base_then_appending_does_not_roll(tmp_path):
    """KAFKA-6388/6492: an emptied segment must not count as full."""
    with open_log(tmp_path / "t-0", segment_bytes=600, segment_index_bytes=64, index_interval_bytes=0) as log:
        for _ in range(12):
            log.append(make_batch(2))
        base = log.segments[-1].base_offset
        log.truncate_to(base)
        segments = len(log.segments)
        log.append(make_batch(1))
        assert len(log.segments) == segments and log.segments[-1].base_offset == base


def test_closing_and_deleting_release_every_descriptor(tmp_path):
    def open_descriptors():
        return len(os.listdir("/proc/self/fd"))

    def open_paths():
        paths = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                paths.append(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:  # the listing's own descriptor, gone already
                pass
        return paths

    before = open_descriptors()
    log = open_log(tmp_path / "t-0", segment_bytes=600)
    for _ in range(20):
        log.append(make_batch(2))
    log.read(0)  # a read of a sealed segment opens its log file
    ours = [path for path in open_paths() if path.startswith(str(tmp_path))]
    logs_open = [path for path in ours if path.endswith(".log")]
    assert 2 <= len(logs_open) <= len(log.segments)
    assert not [path for path in ours if path.endswith(("index", ".ctindex"))]  # maps hold none
    assert open_descriptors() == before + 1 + len(logs_open)  # the data directory's lock
    log.close()
    assert open_descriptors() == before
    log = open_log(tmp_path / "t-0", segment_bytes=600)
    log.delete()
    assert open_descriptors() == before
    assert not (tmp_path / "t-0").exists()
