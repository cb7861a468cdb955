"""The storage engine on a full disk: ENOSPC is an error, never SIGBUS, and recovery reads only
what exists.

A memory-mapped index page that the file system cannot back kills the process with SIGBUS
when touched (tmpfs on a read or write of a hole). These tests run on a real size-limited
tmpfs (root needed; skipped, saying why, otherwise). The reopen after a crash runs in a child
process, so a SIGBUS shows up as its exit code (-7) instead of killing the test run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.storage import make_batch, open_log, read_all
from tests.helpers.tmpfs import fill_with_a_file, free_bytes, mounted_tmpfs

ROOT = Path(__file__).resolve().parents[3]  # the child imports the tests' helpers from here
DISK_BYTES = 2 << 20
BATCH_RECORDS = 40  # about 1.3 KiB a batch: an index entry every few batches


@pytest.fixture
def disk(tmp_path):
    with mounted_tmpfs(tmp_path / "disk", DISK_BYTES) as mount_point:
        yield mount_point


def test_an_append_on_a_full_disk_raises_enospc_and_writes_nothing(disk):
    log = open_log(disk / "data" / "t-0", index_interval_bytes=256)
    filler = fill_with_a_file(disk)
    appended = 0
    with pytest.raises(OSError) as refused:
        for _ in range(100_000):
            log.append(make_batch(BATCH_RECORDS))
            appended += 1
    assert refused.value.errno == 28  # ENOSPC, not a signal
    end, size = log.log_end_offset, log.active_segment.size
    entries = [index.entries for index in log.active_segment.indexes]
    with pytest.raises(OSError):
        log.append(make_batch(BATCH_RECORDS))
    assert (log.log_end_offset, log.active_segment.size) == (end, size)
    assert [index.entries for index in log.active_segment.indexes] == entries
    filler.unlink()
    log.append(make_batch(BATCH_RECORDS))  # space is back: writes go on
    log.close()
    with open_log(disk / "data" / "t-0") as reopened:
        assert len(read_all(reopened)) == (appended + 1) * BATCH_RECORDS


REOPEN = """
import sys
from tests.helpers.storage import open_log
log = open_log(__import__("pathlib").Path(sys.argv[1]))
print(log.log_end_offset, log.recovery_report.clean_shutdown)
log.close_handles()
"""


def test_recovery_of_an_untrimmed_index_on_a_full_disk_reads_only_what_exists(disk):
    directory = disk / "data" / "t-0"
    with open_log(directory) as log:  # a clean close: the next open sizes the indexes sparse
        log.append(make_batch(BATCH_RECORDS))
    log = open_log(directory)
    for _ in range(30):
        log.append(make_batch(BATCH_RECORDS))
    log.flush()
    log.checkpoint()  # the recovery point: the next open keeps the entries before it
    for _ in range(30):
        log.append(make_batch(BATCH_RECORDS))
    end = log.log_end_offset
    log.close_handles()  # a crash: the active indexes stay sized, their tails holes
    fill_with_a_file(disk)
    assert free_bytes(disk) == 0
    child = subprocess.run([sys.executable, "-c", REOPEN, str(directory)],
                           capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert child.returncode == 0, (child.returncode, child.stderr[-2000:])
    assert child.stdout.split() == [str(end), "False"]
