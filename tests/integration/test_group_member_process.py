"""The member process the group tests kill (``_group_member.py``) reports a poll's records
before it commits them, against a real broker.

Why it matters: those tests SIGKILL a member and then expect every produced record among
the records the members reported, with only the victim's uncommitted tail read twice. A
member that committed first and was killed before it reported would have records committed
(so never read again by the survivors) and never reported: they look lost, though the log
holds them: test_a_killed_members_partitions_are_taken_over... failed that way, the
victim's last poll (records 25-29 of its two partitions) committed and never reported.

How the test stops the member between the two steps without timing: its stdout is a pipe
shrunk to one page, which the test stops reading before it produces records whose line is
longer than that, so the member blocks writing the line; the committed offset is read
while it is blocked there.
"""

from __future__ import annotations

import fcntl
import json
import struct
import subprocess
import sys
import termios

from tests.helpers.group_members import HEARTBEAT_MS, MEMBER
from tests.helpers.replication import wait_for
from tslog.client import Admin, Consumer, Producer, TopicPartition

TP = TopicPartition("events", 0)
PIPE_BYTES = 4096  # the smallest pipe: one page


def produce(bootstrap: str, values: list[bytes]) -> None:
    with Producer(bootstrap) as producer:
        producer.send_batch("events", values, partition=0)
        producer.flush()


def committed(bootstrap: str) -> int | None:
    with Consumer(bootstrap, group_id="readers") as reader:
        return reader.committed(TP)


def unread_bytes(pipe) -> int:
    """Bytes written into ``pipe`` and not read yet (FIONREAD)."""
    return struct.unpack("i", fcntl.ioctl(pipe.fileno(), termios.FIONREAD, b"\0" * 4))[0]


def records_line(pipe) -> list[int]:
    """Read ``pipe`` up to the next records event; the offsets it reports."""
    while (event := json.loads(pipe.readline()))["event"] != "records":
        pass
    return [offset for _, offset, _ in event["records"]]


def test_a_member_reports_a_polls_records_before_it_commits_them(broker):
    bootstrap = broker.bootstrap
    with Admin(bootstrap) as admin:
        admin.create_topic("events", 1)
    produce(bootstrap, [b"small-%d" % n for n in range(5)])
    member = subprocess.Popen(
        [sys.executable, str(MEMBER), bootstrap, "readers", "events",
         "--heartbeat-ms", str(HEARTBEAT_MS)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        fcntl.fcntl(member.stdout.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        assert records_line(member.stdout) == [0, 1, 2, 3, 4]
        # Any records line from now on is longer than the pipe holds: once part of one is
        # in the pipe, the member is blocked writing it.
        produce(bootstrap, [b"x" * 2 * PIPE_BYTES] * 3)
        wait_for(lambda: unread_bytes(member.stdout) > 0, 30,
                 "the member blocked writing a records line")
        committed_while_blocked = committed(bootstrap)
    finally:
        member.kill()
        member.wait(10)
        member.stdout.close()
    # What the member committed, it had reported: nothing it committed can look lost.
    assert committed_while_blocked == 5
