"""Deleting a partition's log: the fast half frees its name at once, the files go later.

What a user notices: a topic deleted in a cluster can be created again under the same name
right away and starts empty, although the old files (a gigabyte takes about 170 ms to
unlink here) have not all been removed yet; and files a crash left half-deleted never come
back as data.
"""

from __future__ import annotations

import os

from tests.helpers.storage import make_batch, open_log, read_all
from tslog.broker.storage.dir_lock import LOCK_FILE
from tslog.broker.storage.files import remove_retired, retired_directories


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_retired_log_frees_its_name_at_once_and_keeps_its_files_until_removed(tmp_path):
    before = open_descriptors()
    log = open_log(tmp_path / "t-0", segment_bytes=600)
    for _ in range(10):
        log.append(make_batch(2))
    segments = len(log.segments)
    retired = log.retire()
    assert open_descriptors() == before  # closed, though nothing was unlinked yet
    assert not (tmp_path / "t-0").exists()
    assert len(list(retired.glob("*.log"))) == segments
    assert retired_directories(tmp_path) == [retired]
    with open_log(tmp_path / "t-0") as again:  # the name is free: a new, empty log
        assert again.log_end_offset == 0
        again.append(make_batch(1))
        assert len(read_all(again)) == 1
    remove_retired(retired)
    assert retired_directories(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == [LOCK_FILE, "t-0"]


def test_delete_leaves_nothing_behind(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append(make_batch(3))
    log.delete()
    assert [p.name for p in tmp_path.iterdir()] == [LOCK_FILE]  # the data directory's lock stays
