"""Random histories of a partition log checked against a brute-force model.

Hypothesis drives appends of random batch sizes and CreateTimes, clock jumps both ways, rolls,
retention, flushes, clean close/reopen and crashes that cut the log at a random byte and damage
index files. After every step, every lookup (by LAT and by CreateTime, at every time that
matters and the special values) must equal a scan of the surviving records, and the records
read back must be exactly the surviving ones.
"""

import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from tests.helpers.storage import START_MS, open_log, read_all
from tslog.broker.storage import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, ManualClock
from tslog.protocol.batch_header import COMPRESSION_NONE, COMPRESSION_ZSTD
from tslog.protocol.records import build_batch

RETENTION_MS = 20_000


class PartitionLogModel(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="tslog-model-"))
        self.directory = self.root / "t-0"
        self.clock = ManualClock(START_MS)
        self.batches = []  # surviving batches: dicts with base, lat, create_times, size
        self.flushed_end = 0
        self.last_lat = -1
        self.log = None

    @initialize(
        segment_bytes=st.sampled_from([600, 1500, 1 << 20]),
        index_interval_bytes=st.sampled_from([0, 150, 700, 4096]),
        segment_ms=st.sampled_from([30, 1000, 10**9]),
        segment_index_bytes=st.sampled_from([64, 160, 1 << 20]),
    )
    def open(self, **config):
        self.config = dict(config, retention_ms=RETENTION_MS)
        self.log = open_log(self.directory, self.clock, **self.config)

    def reopen(self):
        self.log = open_log(self.directory, self.clock, **self.config)

    def teardown(self):
        if self.log is not None:
            self.log.close_handles()
        shutil.rmtree(self.root, ignore_errors=True)

    # -- rules -----------------------------------------------------------------------------

    @rule(
        count=st.integers(1, 8),
        skews=st.lists(st.integers(-5_000, 5_000), min_size=1, max_size=8),
        value_size=st.sampled_from([0, 10, 40]),
        compression=st.sampled_from([COMPRESSION_NONE, COMPRESSION_ZSTD]),
    )
    def append(self, count, skews, value_size, compression):
        now = self.clock.now_ms()
        create_times = [now + skews[i % len(skews)] for i in range(count)]
        batch = build_batch([b"x" * value_size] * count, create_times=create_times,
                            compression=compression)
        info = self.log.append(batch)
        assert info.log_append_time == max(self.last_lat, now)
        assert info.base_offset == self.log_end
        self.last_lat = info.log_append_time
        self.batches.append(
            dict(base=info.base_offset, lat=info.log_append_time, create_times=create_times, size=len(batch))
        )

    @rule(delta=st.integers(-3_600_000, 40).filter(lambda d: d != 0) | st.integers(1, 25_000))
    def move_clock(self, delta):
        self.clock.advance(delta)

    @rule()
    def roll(self):
        self.log.roll()

    @rule()
    def retention(self):
        start_before = self.log.log_start_offset
        deleted = self.log.delete_old_segments()
        now = self.clock.now_ms()
        removed = [b for b in self.batches if b["base"] < self.log.log_start_offset]
        assert all(now - b["lat"] > RETENTION_MS for b in removed)
        assert sum(d.next_offset - d.base_offset for d in deleted) == self.log.log_start_offset - start_before
        self.batches = [b for b in self.batches if b["base"] >= self.log.log_start_offset]
        first = self.log.segments[0]
        assert first.is_empty or now - first.max_log_append_time <= RETENTION_MS

    @precondition(lambda self: self.log is not None and self.batches)
    @rule(data=st.data())
    def truncate(self, data):
        """A follower cutting a diverged tail: to any batch boundary from the log start on."""
        offset = data.draw(st.sampled_from([b["base"] for b in self.batches] + [self.log_end]))
        self.log.truncate_to(offset)
        self.batches = [b for b in self.batches if b["base"] < offset]
        self.flushed_end = min(self.flushed_end, offset)
        assert self.log.log_end_offset == self.log_end
        self.last_lat = self.log.last_log_append_time
        assert self.last_lat == (self.batches[-1]["lat"] if self.batches else -1)

    @rule()
    def flush(self):
        self.log.flush()
        self.log.checkpoint()
        self.flushed_end = self.log.log_end_offset

    @rule()
    def close_and_reopen(self):
        self.log.close()
        self.reopen()
        assert self.log.recovery_report.segments_recovered == 0
        self.flushed_end = self.log.log_end_offset

    @precondition(lambda self: self.log is not None)
    @rule(data=st.data())
    def crash(self, data):
        """Kill: cut one unflushed segment at a random byte, maybe damage an index, reopen."""
        segments = [(s.base_offset, s.log_path, s.size) for s in self.log.segments]
        self.log.close_handles()
        candidates = [s for s in segments if s[2] > 0 and self.end_of(s[0], s[2]) > self.flushed_end]
        if candidates:
            base, path, size = data.draw(st.sampled_from(candidates))
            durable = self.position_of(base, self.flushed_end) if self.flushed_end > base else 0
            cut = data.draw(st.integers(durable, size))
            os.truncate(path, cut)
        damage = data.draw(st.sampled_from(["none", "delete", "truncate", "zero"]))
        if damage != "none":
            base = data.draw(st.sampled_from([s[0] for s in segments]))
            suffix = data.draw(st.sampled_from([".index", ".timeindex", ".ctindex"]))
            victim = self.directory / f"{base:020d}{suffix}"
            if damage == "delete":
                victim.unlink(missing_ok=True)
            elif damage == "truncate" and victim.exists():
                os.truncate(victim, victim.stat().st_size // 2)
            elif damage == "zero" and victim.exists():
                victim.write_bytes(bytes(victim.stat().st_size))
        self.reopen()
        end = self.log.log_end_offset
        assert end >= self.flushed_end, "flushed data was lost"
        self.batches = [b for b in self.batches if b["base"] + len(b["create_times"]) <= end]
        assert end == self.log_end, "recovery stopped inside a batch"
        assert self.log.last_log_append_time >= (self.batches[-1]["lat"] if self.batches else -1)
        # A batch lost with the unflushed tail never happened: time continues from what survived.
        self.last_lat = self.log.last_log_append_time

    # -- model helpers ---------------------------------------------------------------------

    @property
    def log_end(self):
        if self.batches:
            return self.batches[-1]["base"] + len(self.batches[-1]["create_times"])
        return self.log.log_start_offset

    def end_of(self, base, size):
        position, end = 0, base
        for b in self.batches:
            if b["base"] >= base and position < size:
                position += b["size"]
                end = b["base"] + len(b["create_times"])
        return end

    def position_of(self, base, offset):
        return sum(b["size"] for b in self.batches if base <= b["base"] < offset)

    def records(self):
        for b in self.batches:
            for i, ct in enumerate(b["create_times"]):
                yield b["base"] + i, b["lat"], ct

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def reads_return_exactly_the_surviving_records(self):
        if self.log is None:
            return
        got = [(r.offset, r.log_append_time, r.create_time) for r in read_all(self.log)]
        assert got == list(self.records())
        assert self.log.log_end_offset == self.log_end

    @invariant()
    def lookups_match_a_brute_force_scan(self):
        if self.log is None:
            return
        records = list(self.records())
        lats = sorted({lat for _, lat, _ in records})
        cts = sorted({ct for _, _, ct in records})
        for target in {START_MS - 10**7, *lats, *(t - 1 for t in lats), *(t + 1 for t in lats)}:
            expected = next(((o, lat) for o, lat, _ in records if lat >= target), None)
            assert self.log.offset_for_time(target) == expected, target
        for target in {START_MS - 10**7, *cts, *(t - 1 for t in cts), *(t + 1 for t in cts)}:
            expected = next(((o, ct) for o, _, ct in records if ct >= target), None)
            assert self.log.offset_for_time(target, "create") == expected, target
        if records:
            top_lat = max(lats)
            assert self.log.offset_for_time(MAX_TIMESTAMP) == next(
                (o, lat) for o, lat, _ in records if lat == top_lat
            )
            top_ct = max(cts)
            assert self.log.offset_for_time(MAX_TIMESTAMP, "create") == next(
                (o, ct) for o, _, ct in records if ct == top_ct
            )
            assert self.log.offset_for_time(EARLIEST_TIMESTAMP) == (records[0][0], -1)
        assert self.log.offset_for_time(LATEST_TIMESTAMP) == (self.log_end, -1)

    @invariant()
    def log_append_time_never_decreases(self):
        lats = [b["lat"] for b in self.batches]
        assert lats == sorted(lats)


TestPartitionLog = PartitionLogModel.TestCase
# Each example opens, rolls and reopens real segment files: about 0.25 s apiece, so CI's 200
# would cost 50 s alone; 100 under CI (60 locally) keep it near 25 s.
TestPartitionLog.settings = settings(
    TestPartitionLog.settings,
    max_examples=min(TestPartitionLog.settings.max_examples, 100))
