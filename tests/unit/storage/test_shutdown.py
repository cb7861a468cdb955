"""Closing every log of a data directory together (``storage.shutdown``): no fsync per log,
every marker left only after the file system was synced, and every log reopens clean with
what it held. Counted by wrapping the calls, not timed."""

import os

import pytest

from tests.helpers.storage import make_batch, open_log, read_all
from tslog.broker.storage import files, shutdown

LOGS = 20


@pytest.fixture
def counted(monkeypatch):
    """Every fsync, fdatasync and file-system sync made, in order."""
    calls = []
    real_fsync, real_fdatasync, real_syncfs = os.fsync, os.fdatasync, files.sync_filesystem
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(os, "fdatasync",
                        lambda fd: (calls.append("fdatasync"), real_fdatasync(fd))[1])

    def syncfs(path):
        calls.append(("syncfs", sorted(p.parent.name for p in path.glob("*/clean-shutdown"))))
        real_syncfs(path)
    monkeypatch.setattr(files, "sync_filesystem", syncfs)
    return calls


def written_logs(data_dir):
    logs = []
    for i in range(LOGS):
        plog = open_log(data_dir / f"t-{i}")
        for _ in range(i % 3 + 1):
            plog.append(make_batch(5))
        logs.append((f"t-{i}", plog))
    return logs


def test_many_logs_close_with_two_file_system_syncs_and_no_fsync(tmp_path, counted):
    logs = written_logs(tmp_path / "data")
    held = [read_all(plog) for _, plog in logs]
    counted.clear()
    assert shutdown.close_all(logs, tmp_path / "data") == LOGS
    # No per-file sync at all; the first sync happens before any marker exists.
    assert counted == [("syncfs", []), ("syncfs", sorted(name for name, _ in logs))]
    for (name, _), records in zip(logs, held):
        reopened = open_log(tmp_path / "data" / name)
        assert reopened.recovery_report.clean_shutdown
        assert read_all(reopened) == records
        reopened.close()


def test_a_log_whose_close_fails_leaves_no_marker_and_is_recovered(tmp_path, monkeypatch):
    logs = written_logs(tmp_path / "data")
    broken_name, broken = logs[3]
    records = read_all(broken)

    def refuse(defer_sync=False):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(broken, "close", refuse)
    assert shutdown.close_all(logs, tmp_path / "data") == LOGS - 1
    assert not (tmp_path / "data" / broken_name / "clean-shutdown").exists()
    reopened = open_log(tmp_path / "data" / broken_name)  # its directory lock was given back
    assert not reopened.recovery_report.clean_shutdown
    assert read_all(reopened) == records
    reopened.close()
