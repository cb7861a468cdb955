"""One broker per data directory: a second one refuses before it touches anything.

Without the lock, a second ``tslog-broker`` on a live directory acknowledged writes the first
one then overwrote, and, even when it failed to bind its port, it had already recovered every
log and left clean-shutdown markers on exit, so the first broker's next crash skipped
recovery. Each case runs real broker processes; the data directory is compared file by file
(name, size, modification time) before and after the loser ran.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.broker_process import BrokerProcess, free_port
from tests.helpers.wire import Wire, batch, split_values
from tslog.broker.storage import PartitionLog
from tslog.broker.storage.dir_lock import LOCK_FILE, DataDirectoryLockedError

pytestmark = pytest.mark.timeout(120)


def snapshot(directory: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``directory``: (size, modification time in ns)."""
    found = {}
    for root, _, names in os.walk(directory):
        for name in names:
            stat = os.stat(os.path.join(root, name))
            found[os.path.relpath(os.path.join(root, name), directory)] = (
                stat.st_size, stat.st_mtime_ns)
    return found


def settled_snapshot(directory: Path) -> dict[str, tuple[int, int]]:
    """``snapshot`` once the first broker has written what a new topic makes in the
    background (each partition's leader-epoch checkpoint, within a second or so) and nothing
    changed for half a second after."""
    deadline = time.monotonic() + 20
    previous = None
    while time.monotonic() < deadline:
        current = snapshot(directory)
        epochs = [name for name in current if name.endswith("leader-epoch-checkpoint")]
        if len(epochs) == 3 and current == previous:
            return current
        previous = current if len(epochs) == 3 else None
        time.sleep(0.5)
    raise AssertionError(f"the data directory never settled: {sorted(snapshot(directory))}")


def run_second_broker(data_dir: Path, port: int) -> subprocess.CompletedProcess:
    """Without the test process's TSLOG_ variables (another test's may be set in this
    worker), as BrokerProcess starts brokers: its output is then exactly the refusal."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TSLOG_")}
    return subprocess.run([sys.executable, "-m", "tslog.broker", "--data-dir", str(data_dir),
                           "--listen", f"127.0.0.1:{port}"],
                          capture_output=True, text=True, timeout=60, env=environment)


def values(broker: BrokerProcess, topic: str) -> list[bytes]:
    with Wire(broker.host, broker.port) as wire:
        answer = wire.fetch(topic, 0, 0)
    assert answer["error_code"] == 0, answer
    return [value for _, value in split_values(answer["records"])]


def refuses_connections(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


@pytest.fixture
def first(broker):
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("clash", partitions=3) == 0
        assert wire.produce("clash", 0, batch([b"a1"]))["error_code"] == 0
    return broker


def assert_refused_with_one_line(result, first: BrokerProcess) -> None:
    assert result.returncode == 1, result
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert str(first.data_dir) in lines[0] and f"process {first.process.pid}" in lines[0]
    assert "Traceback" not in lines[0]


def test_a_second_broker_on_a_live_directory_exits_1_and_touches_nothing(first):
    before = settled_snapshot(first.data_dir)
    port = free_port()
    result = run_second_broker(first.data_dir, port)
    assert_refused_with_one_line(result, first)
    assert refuses_connections(port)  # it never bound its port
    assert snapshot(first.data_dir) == before  # nothing recovered, no marker, no write


def test_the_lock_is_checked_before_the_port_even_when_the_port_is_taken(first):
    before = settled_snapshot(first.data_dir)
    result = run_second_broker(first.data_dir, first.port)  # the first broker's own port
    assert_refused_with_one_line(result, first)
    assert "address already in use" not in result.stderr
    assert snapshot(first.data_dir) == before


def test_after_a_refused_second_broker_a_crash_is_still_recovered_and_nothing_is_lost(first):
    assert run_second_broker(first.data_dir, free_port()).returncode == 1
    assert run_second_broker(first.data_dir, first.port).returncode == 1
    with Wire(first.host, first.port) as wire:
        assert wire.produce("clash", 0, batch([b"a2"]))["error_code"] == 0
    first.restart(kill=True)  # a dead holder's lock needs no cleaning: the restart just works
    assert (first.data_dir / LOCK_FILE).read_text() == f"{first.process.pid}\n"
    assert values(first, "clash") == [b"a1", b"a2"]
    log = first.log_text()
    assert log.count(": recovery scanned ") == 3  # every partition, one line each


def test_a_storage_engine_user_in_another_process_is_refused_while_a_broker_holds_it(first):
    with pytest.raises(DataDirectoryLockedError) as refused:
        PartitionLog(first.data_dir / "clash-0")
    assert refused.value.holder_pid == first.process.pid
    assert str(first.data_dir) in str(refused.value)
    first.terminate()
    with PartitionLog(first.data_dir / "clash-0") as log:  # the lock left with the broker
        assert log.log_end_offset == 1


HOLD_A_LOG = """
import sys, time
from tslog.broker.storage import PartitionLog
log = PartitionLog(sys.argv[1])
print("open", flush=True)
sys.stdin.read()
log.close()
"""


def test_the_storage_engine_refuses_a_second_open_from_another_process(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLD_A_LOG, str(tmp_path / "data" / "t-0")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "open\n"
        with pytest.raises(DataDirectoryLockedError) as refused:
            PartitionLog(tmp_path / "data" / "t-1")  # another log of the same directory
        assert refused.value.holder_pid == holder.pid
        assert not (tmp_path / "data" / "t-1").exists()  # the loser made nothing
        with pytest.raises(DataDirectoryLockedError):
            PartitionLog(tmp_path / "data" / "t-0")
    finally:
        holder.communicate("", timeout=30)
    assert holder.returncode == 0
    with PartitionLog(tmp_path / "data" / "t-0") as log:  # free once the holder closed it
        assert log.log_end_offset == 0
    assert (tmp_path / "data" / LOCK_FILE).exists()
