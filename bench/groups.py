"""Consumer groups on a real broker, with members in separate processes: how fast partitions
move, and how fast a group reads.

    python bench/groups.py            # 5 runs of each timing, 600,000 records per read
    python bench/groups.py --quick    # 2 runs, 100,000 records

Three tables, medians and p99 over the runs (with few runs the p99 is the worst run):
- takeover: 3 members on 6 partitions, records trickling into every partition; one member is
  killed (SIGKILL) and the clock runs until every one of its partitions has been read again
  by a survivor. The floor is the broker's session timeout (the dead member is noticed only
  then) plus a heartbeat interval (the survivors hear of their new partitions only then).
- join: 2 members reading; a third starts, and the clock runs from its join (its first
  heartbeat) to its first record. A partition moves only after its owner gave it up, so this
  is about two heartbeat intervals.
- throughput: 1 and 3 members read a pre-filled topic of 6 partitions from the start;
  records per second from the group's first record to its last (interpreter start and join
  excluded: the join table has those). The 3-member row on this 2-core machine shares the
  two cores between three member processes and the broker.

The broker runs with ``group_session_timeout_ms`` and ``group_heartbeat_interval_ms`` from
the flags (3000 and 500 by default). Asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import queue
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.storage import print_table  # noqa: E402
from tests.helpers.broker_process import BrokerProcess  # noqa: E402
from tslog.client import Admin, Producer  # noqa: E402

MEMBER = Path(__file__).resolve().parent / "group_member.py"
PARTITIONS = 6


class Member:
    """A member process and the events it printed (read by a thread, queued)."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.process = subprocess.Popen([sys.executable, str(MEMBER), bootstrap, group, topic],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True)
        self.events: queue.Queue = queue.Queue()
        self.partitions: list[int] = []
        self.count = 0
        self.first = None  # wall time of its first record
        self.newest = 0.0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            event = json.loads(line)
            if event["event"] == "assigned":
                self.partitions = event["partitions"]
            elif event["event"] == "first":
                self.first = event["t"]
            elif event["event"] == "count":
                self.count, self.newest = event["n"], event["newest"]
            self.events.put(event)

    def wait_for(self, kind: str, deadline: float, where=lambda event: True) -> dict:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no {kind!r} event")
            try:
                event = self.events.get(timeout=remaining)
            except queue.Empty:
                continue
            if event["event"] == kind and where(event):
                return event

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()  # the member commits and leaves
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()


def wait_until(condition, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the group did not settle")
        time.sleep(0.02)


def trickle(bootstrap: str, topic: str, stop: threading.Event) -> None:
    """A record into every partition every 20 ms, so a moved partition is read at once."""
    with Producer(bootstrap, acks=1, linger_ms=0) as producer:
        while not stop.is_set():
            for partition in range(PARTITIONS):
                producer.send(topic, b"tick", partition=partition)
            stop.wait(0.02)


@contextlib.contextmanager
def trickled_group(bootstrap: str, name: str, size: int, settle_s: float):
    """A fresh topic of PARTITIONS fed by ``trickle``, and ``size`` members of a group of the
    same name that have split it evenly; yields the members' list (append newcomers to it:
    every member in it is stopped at the end)."""
    with Admin(bootstrap) as admin:
        admin.create_topic(name, partitions=PARTITIONS)
    stop = threading.Event()
    producer = threading.Thread(target=trickle, args=(bootstrap, name, stop), daemon=True)
    producer.start()
    members = [Member(bootstrap, name, name) for _ in range(size)]
    try:
        even = [PARTITIONS // size] * size
        wait_until(lambda: sorted(len(m.partitions) for m in members) == even, settle_s)
        yield members
    finally:
        stop.set()
        producer.join()
        for member in members:
            member.stop()


def takeover_once(bootstrap: str, run: int, session_s: float) -> float:
    with trickled_group(bootstrap, f"takeover-{run}", 3, 30 + session_s) as members:
        victim, survivors = members[0], members[1:]
        moved = set(victim.partitions)
        for member in survivors:  # only what they read after the kill counts
            while not member.events.empty():
                member.events.get_nowait()
        killed = time.time()
        victim.kill()
        read_again: dict[int, float] = {}
        deadline = time.monotonic() + 10 * session_s + 30
        while set(read_again) != moved:
            for member in survivors:
                try:
                    event = member.events.get(timeout=0.05)
                except queue.Empty:
                    continue
                if event["event"] == "reading" and event["partition"] in moved:
                    read_again.setdefault(event["partition"], event["t"])
            if time.monotonic() > deadline:
                raise TimeoutError(f"partitions {moved - set(read_again)} not read again")
        return max(read_again.values()) - killed


def join_once(bootstrap: str, run: int) -> float:
    name = f"join-{run}"
    with trickled_group(bootstrap, name, 2, 30) as members:
        newcomer = Member(bootstrap, name, name)
        members.append(newcomer)
        deadline = time.monotonic() + 60
        joined = newcomer.wait_for("start", deadline)["t"]
        first = newcomer.wait_for("first", deadline)["t"]
        return first - joined


def fill(bootstrap: str, topic: str, records: int) -> None:
    with Admin(bootstrap) as admin:
        admin.create_topic(topic, partitions=PARTITIONS)
    values = [b"v" * 100] * 1000
    with Producer(bootstrap, acks=1) as producer:
        futures = [producer.send_batch(topic, values, partition=i % PARTITIONS)
                   for i in range(records // len(values))]
        for future in futures:
            future.get(60)


def throughput_once(bootstrap: str, topic: str, run: int, members: int, records: int) -> float:
    group = f"read-{members}-{run}"
    group_members = [Member(bootstrap, group, topic) for _ in range(members)]
    try:
        wait_until(lambda: sum(m.count for m in group_members) >= records, 300)
        first = min(m.first for m in group_members if m.first is not None)
        return records / (max(m.newest for m in group_members) - first)
    finally:
        for member in group_members:
            member.stop()


def summary(values: list[float], unit: str = "s") -> list[str]:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    if unit == "s":
        return [f"{statistics.median(values):.2f}", f"{p99:.2f}"]
    return [f"{statistics.median(values):,.0f}", f"{ordered[0]:,.0f}"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--records", type=int, default=600_000)
    parser.add_argument("--session-timeout-ms", type=int, default=3000)
    parser.add_argument("--heartbeat-interval-ms", type=int, default=500)
    parser.add_argument("--quick", action="store_true", help="2 runs, 100,000 records")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.records = 2, 100_000
    session_s = args.session_timeout_ms / 1000
    with tempfile.TemporaryDirectory(prefix="tslog-groups-bench-") as root:
        broker = BrokerProcess(Path(root) / "data", config={
            "group_session_timeout_ms": args.session_timeout_ms,
            "group_heartbeat_interval_ms": args.heartbeat_interval_ms})
        broker.start()
        try:
            bootstrap = broker.bootstrap
            takeovers = [takeover_once(bootstrap, run, session_s) for run in range(args.runs)]
            joins = [join_once(bootstrap, run) for run in range(args.runs)]
            fill(bootstrap, "filled", args.records)
            rates = {members: [throughput_once(bootstrap, "filled", run, members, args.records)
                               for run in range(args.runs)] for members in (1, 3)}
        finally:
            broker.terminate()
    floor = f"{(args.session_timeout_ms + args.heartbeat_interval_ms) / 1000:.2f}"
    print_table(f"Partition movement ({args.runs} runs; session timeout "
                f"{args.session_timeout_ms} ms, heartbeat interval "
                f"{args.heartbeat_interval_ms} ms)",
                ["what", "median s", "p99 s", "session timeout + heartbeat s"],
                [["kill -9 of 1 of 3 members -> all its partitions read again",
                  *summary(takeovers), floor],
                 ["3rd member joins 2 -> its first record", *summary(joins), "-"]])
    print_table(f"Group read of {args.records:,} records (100 B values) on {PARTITIONS} "
                f"partitions ({args.runs} runs; Consumer.poll in member processes)",
                ["members", "median records/s", "slowest run records/s"],
                [[str(members), *summary(values, "rate")] for members, values in rates.items()])
    return 0


if __name__ == "__main__":
    sys.exit(main())
