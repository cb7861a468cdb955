"""Crash and corruption scenarios: after each, every batch fully written before the damage is
readable and findable by time, and nothing after it is."""

import os
import shutil

import pytest

from tests.helpers.storage import START_MS, make_batch, open_log, read_all
from tslog.broker.storage import ManualClock, OffsetAndTimestamp

CONFIG = dict(segment_bytes=1500, index_interval_bytes=300)


def write_history(directory, batches=30, crash=True, **config):
    """Append ``batches`` batches one ms apart; return (appends, clock)."""
    clock = ManualClock(START_MS)
    log = open_log(directory, clock, **{**CONFIG, **config})
    appends = []
    for i in range(batches):
        clock.advance(1)
        appends.append(log.append(make_batch(1 + i % 4)))
    if crash:
        log.close_handles()
    else:
        log.close()
    return appends, clock


def assert_log_holds_exactly(log, appends):
    """The log holds exactly ``appends`` and finds each of them by its LAT."""
    expected = [offset for a in appends for offset in range(a.base_offset, a.last_offset + 1)]
    assert [r.offset for r in read_all(log)] == expected
    assert log.log_end_offset == (appends[-1].last_offset + 1 if appends else 0)
    for a in appends:
        assert log.offset_for_time(a.log_append_time) == OffsetAndTimestamp(a.base_offset, a.log_append_time)
    later = (appends[-1].log_append_time + 1) if appends else START_MS
    assert log.offset_for_time(later) is None


def segment_files(directory, suffix):
    return sorted(directory / name for name in os.listdir(directory) if name.endswith(suffix))


def test_crash_with_intact_files_loses_nothing(tmp_path):
    appends, clock = write_history(tmp_path / "t-0")
    with open_log(tmp_path / "t-0", clock, **CONFIG) as log:
        assert not log.recovery_report.clean_shutdown
        assert log.recovery_report.bytes_truncated == 0
        assert_log_holds_exactly(log, appends)


@pytest.mark.parametrize("cut", [1, 79, 80, 81, "half"])
def test_torn_last_batch_is_cut_off(tmp_path, cut):
    appends, clock = write_history(tmp_path / "t-0")
    last_log = segment_files(tmp_path / "t-0", ".log")[-1]
    size = last_log.stat().st_size
    last_size = appends[-1].batch_bytes
    keep = size - last_size + (last_size // 2 if cut == "half" else cut)
    os.truncate(last_log, keep)
    with open_log(tmp_path / "t-0", clock, **CONFIG) as log:
        assert log.recovery_report.bytes_truncated == keep - (size - last_size)
        assert_log_holds_exactly(log, appends[:-1])
        assert log.append(make_batch(1)).base_offset == appends[-1].base_offset


@pytest.mark.parametrize("tail", ["zeros", "garbage", "copy_of_batch"])
def test_bad_tail_is_cut_off(tmp_path, tail):
    appends, clock = write_history(tmp_path / "t-0")
    last_log = segment_files(tmp_path / "t-0", ".log")[-1]
    content = last_log.read_bytes()
    junk = {
        "zeros": bytes(4096),
        "garbage": os.urandom(3000),
        "copy_of_batch": content[: appends[-1].batch_bytes],  # a valid batch, wrong offset
    }[tail]
    with open(last_log, "ab") as handle:
        handle.write(junk)
    with open_log(tmp_path / "t-0", clock, **CONFIG) as log:
        assert log.recovery_report.bytes_truncated == len(junk)
        assert_log_holds_exactly(log, appends)


def test_flipped_byte_mid_segment_cuts_from_that_batch_on(tmp_path):
    appends, clock = write_history(tmp_path / "t-0", segment_bytes=1 << 20)
    log_file = segment_files(tmp_path / "t-0", ".log")[0]
    victim = 10
    position = sum(a.batch_bytes for a in appends[:victim])
    data = bytearray(log_file.read_bytes())
    data[position + 100] ^= 0x01
    log_file.write_bytes(bytes(data))
    with open_log(tmp_path / "t-0", clock, segment_bytes=1 << 20, index_interval_bytes=300) as log:
        assert_log_holds_exactly(log, appends[:victim])


def test_segments_after_a_damaged_one_are_removed(tmp_path):
    appends, clock = write_history(tmp_path / "t-0")
    logs = segment_files(tmp_path / "t-0", ".log")
    assert len(logs) >= 3
    first_size = logs[0].stat().st_size
    os.truncate(logs[0], first_size - 10)
    with open_log(tmp_path / "t-0", clock, **CONFIG) as log:
        assert len(log.segments) == 1
        survivors = [a for a in appends if a.last_offset < log.log_end_offset]
        assert_log_holds_exactly(log, survivors)
        assert log.recovery_report.segments_deleted == len(logs) - 1


@pytest.mark.parametrize("crash", [True, False])
@pytest.mark.parametrize("damage", ["delete", "truncate", "zero_fill", "garbage", "foreign", "pad"])
def test_damaged_indexes_are_rebuilt(tmp_path, crash, damage):
    appends, clock = write_history(tmp_path / "t-0", crash=crash)
    shutil.copytree(tmp_path / "t-0", tmp_path / "pristine")
    directory = tmp_path / "t-0"
    for suffix in (".index", ".timeindex", ".ctindex"):
        victims = segment_files(directory, suffix)
        first, other = victims[0], victims[1]
        if damage == "delete":
            first.unlink()
        elif damage == "truncate":
            os.truncate(first, max(0, first.stat().st_size - 5))
        elif damage == "zero_fill":
            first.write_bytes(bytes(first.stat().st_size))
        elif damage == "garbage":
            first.write_bytes(os.urandom(first.stat().st_size or 64))
        elif damage == "foreign":  # KAFKA-style mix-up: another segment's index
            shutil.copy(other, first)
        elif damage == "pad":  # KAFKA-10207: an index left at its preallocated size
            with open(first, "ab") as handle:
                handle.write(bytes(1 << 16))
    with open_log(directory, clock, **CONFIG) as log:
        assert log.recovery_report.segments_recovered >= 1
        assert log.recovery_report.bytes_truncated == 0
        assert len(log.segments) == len(segment_files(tmp_path / "pristine", ".log"))
        assert_log_holds_exactly(log, appends)
        clock.advance(1)
        log.append(make_batch(1))  # the next append (and any roll) succeeds
    # Rebuilt indexes are byte-identical to the ones written while appending.
    for suffix in (".index", ".timeindex", ".ctindex"):
        rebuilt = segment_files(directory, suffix)[0].read_bytes()
        original = segment_files(tmp_path / "pristine", suffix)[0].read_bytes()
        if crash:
            continue  # the pristine copy of a crashed active index is untrimmed
        assert rebuilt == original


def test_corrupt_active_index_after_clean_shutdown_is_rebuilt(tmp_path):
    """KAFKA-12734: a clean marker must not let a corrupt active index through."""
    appends, clock = write_history(tmp_path / "t-0", crash=False)
    active_index = segment_files(tmp_path / "t-0", ".timeindex")[-1]
    active_index.write_bytes(bytes(active_index.stat().st_size or 32))
    with open_log(tmp_path / "t-0", clock, **CONFIG) as log:
        assert log.recovery_report.clean_shutdown
        assert log.recovery_report.indexes_rebuilt == 1
        assert_log_holds_exactly(log, appends)
        clock.advance(1)
        assert log.append(make_batch(1)).base_offset == appends[-1].last_offset + 1


def test_clean_shutdown_skips_recovery_and_keeps_an_empty_active_segment(tmp_path):
    appends, clock = write_history(tmp_path / "t-0", crash=False)
    with open_log(tmp_path / "t-0", clock, **CONFIG) as log:
        assert log.recovery_report.clean_shutdown
        assert log.recovery_report.segments_recovered == 0
        log.roll()
        empty_base = log.active_segment.base_offset
    with open_log(tmp_path / "t-0", clock, **CONFIG) as log:
        assert log.recovery_report.segments_recovered == 0
        assert log.active_segment.base_offset == empty_base and log.active_segment.is_empty
        assert_log_holds_exactly(log, appends)


def test_missing_clean_marker_validates_the_unflushed_segments(tmp_path):
    appends, clock = write_history(tmp_path / "t-0", crash=False)
    (tmp_path / "t-0" / "clean-shutdown").unlink()
    (tmp_path / "t-0" / "recovery-point").unlink()
    with open_log(tmp_path / "t-0", clock, **CONFIG) as log:
        assert not log.recovery_report.clean_shutdown
        assert log.recovery_report.segments_recovered == len(log.segments)
        assert_log_holds_exactly(log, appends)


def test_flushed_data_survives_and_only_unflushed_segments_are_validated(tmp_path):
    clock = ManualClock(START_MS)
    log = open_log(tmp_path / "t-0", clock, **CONFIG)
    def append():
        clock.advance(1)
        return log.append(make_batch(3))

    appends = [append() for _ in range(40)]
    log.flush()
    log.checkpoint()
    more = [append() for _ in range(3)]
    log.close_handles()
    with open_log(tmp_path / "t-0", clock, **CONFIG) as reopened:
        report = reopened.recovery_report
        holding_unflushed = [s for s in reopened.segments if s.next_offset > appends[-1].last_offset + 1]
        assert report.segments_loaded > 3
        assert report.segments_recovered == len(holding_unflushed) < report.segments_loaded
        assert_log_holds_exactly(reopened, appends + more)


def test_log_append_time_keeps_growing_across_restarts_when_the_clock_went_back(tmp_path):
    appends, clock = write_history(tmp_path / "t-0", crash=True)
    clock.advance(-3 * 3_600_000)
    with open_log(tmp_path / "t-0", clock, **CONFIG) as log:
        again = log.append(make_batch(1, create_time=clock.now_ms()))
        assert again.log_append_time == appends[-1].log_append_time
    clock.advance(-3_600_000)
    with open_log(tmp_path / "t-0", clock, **CONFIG) as log:
        assert log.append(make_batch(1, create_time=clock.now_ms())).log_append_time == again.log_append_time


def test_last_log_append_time_survives_retention_of_everything(tmp_path):
    clock = ManualClock(START_MS)
    with open_log(tmp_path / "t-0", clock, retention_ms=1000) as log:
        log.append(make_batch(1))
        clock.advance(10_000)
        log.delete_old_segments()
        last = log.last_log_append_time
    clock.set(START_MS - 86_400_000)
    with open_log(tmp_path / "t-0", clock, retention_ms=1000) as log:
        assert log.append(make_batch(1, create_time=clock.now_ms())).log_append_time >= last


def test_orphan_index_and_temp_files_are_removed(tmp_path):
    appends, clock = write_history(tmp_path / "t-0", crash=False)
    directory = tmp_path / "t-0"
    (directory / ("%020d.timeindex" % 999_999)).write_bytes(b"x" * 16)
    (directory / "recovery-point.tmp").write_bytes(b"junk")
    with open_log(directory, clock, **CONFIG) as log:
        assert_log_holds_exactly(log, appends)
    names = os.listdir(directory)
    assert "%020d.timeindex" % 999_999 not in names and "recovery-point.tmp" not in names
