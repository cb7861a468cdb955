"""What a broker's start costs per partition in Python, counted: it opens every log (and its
replication state) of the data directory, ten thousand on a big broker, from a handful of
threads that take turns holding the GIL. Counted with a profile hook (Python calls, and
calls into ``pathlib``), never timed. The budgets sit a little above what one clean open
of a one-segment log makes today; a change that adds Python work to every log's open fails
here, and one that removes some may lower them."""

from __future__ import annotations

import sys
from collections import Counter

from tests.helpers.storage import make_batch, open_log
from tslog.broker.storage import dir_lock
from tslog.broker.storage.replica import ReplicaLog

LOGS = 8
CALLS_PER_LOG = 310  # Python-level calls per log: 293 now, 360 before string keys and paths
PATHLIB_CALLS_PER_LOG = 85  # of those, inside pathlib: 76 now, 157 before


def _written_logs(data_dir, count: int) -> list:
    directories = []
    for partition in range(count):
        directory = data_dir / f"t-{partition}"
        replica = ReplicaLog(open_log(directory))
        replica.become_leader(0)
        replica.append_as_leader(make_batch(3), 0)
        replica.high_watermark = replica.log.log_end_offset
        replica.checkpoint()
        replica.log.close()
        directories.append(directory)
    return directories


def _count_calls(action) -> tuple[Counter, object]:
    """(calls by (file name, function name), ``action()``'s result), counting Python calls
    on this thread."""
    calls: Counter = Counter()

    def hook(frame, event, arg):
        if event == "call":
            calls[frame.f_code.co_filename, frame.f_code.co_name] += 1

    sys.setprofile(hook)
    try:
        result = action()
    finally:
        sys.setprofile(None)
    return calls, result


def test_a_clean_open_of_a_log_and_its_replica_state_stays_within_its_python_budget(tmp_path):
    directories = _written_logs(tmp_path / "data", LOGS)
    holder = dir_lock.acquire(tmp_path / "data")  # the broker holds it while it opens logs
    try:
        calls, replicas = _count_calls(
            lambda: [ReplicaLog(open_log(directory)) for directory in directories])
    finally:
        dir_lock.release(holder)
    assert all(r.log.recovery_report.clean_shutdown for r in replicas)
    assert all(r.log.log_end_offset == 3 and r.high_watermark == 3 for r in replicas)
    for replica in replicas:
        replica.log.close()
    pathlib_calls = sum(n for (name, _), n in calls.items() if name.endswith("pathlib.py"))
    assert sum(calls.values()) <= CALLS_PER_LOG * LOGS, calls.most_common(8)
    assert pathlib_calls <= PATHLIB_CALLS_PER_LOG * LOGS, pathlib_calls / LOGS


def test_sharing_a_held_data_directory_lock_runs_no_pathlib_code(tmp_path):
    """Every log of a broker takes a share of the data directory's lock under one guard
    that all opening threads wait on: the share is a string key, hashed in C (a ``Path``
    key was built and hashed in Python, under the guard)."""
    holder = dir_lock.acquire(tmp_path)
    try:
        calls, key = _count_calls(lambda: dir_lock.acquire(tmp_path))
        dir_lock.release(key)
    finally:
        dir_lock.release(holder)
    in_pathlib = {function for name, function in calls if name.endswith("pathlib.py")}
    assert in_pathlib <= {"__fspath__", "__str__"}, calls  # the argument made a string, once
    assert dir_lock.holds(tmp_path) is False
