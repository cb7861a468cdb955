"""Consumer-group members in processes of their own (``tests/integration/_group_member.py``),
as real deployments run them: the events each printed (assigned, revoked, lost, records),
read by a thread, and what the group owns from them."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path

MEMBER = Path(__file__).resolve().parents[1] / "integration" / "_group_member.py"
HEARTBEAT_MS = 200  # members cap their heartbeat interval: rebalances take well under 1 s


class MemberProcess:
    """A ``_group_member.py`` process and the events it printed (read by a thread)."""

    def __init__(self, bootstrap: str, group: str, topic: str, *extra: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(MEMBER), bootstrap, group, topic,
             "--heartbeat-ms", str(HEARTBEAT_MS), *extra],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.events: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.events.append(json.loads(line))

    def owned(self) -> set[tuple[str, int]]:
        """What the member reads now, from its listener's calls."""
        owned: set[tuple[str, int]] = set()
        for event in list(self.events):
            pairs = {tuple(p) for p in event.get("partitions", [])}
            if event["event"] == "assigned":
                owned |= pairs
            elif event["event"] in ("revoked", "lost"):
                owned -= pairs
        return owned

    def records(self) -> list[tuple[int, int, str]]:
        return [tuple(r) for e in list(self.events) if e["event"] == "records"
                for r in e["records"]]

    def events_of(self, kind: str) -> list[set]:
        return [{tuple(p) for p in e["partitions"]} for e in list(self.events)
                if e["event"] == kind]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            assert self.process.wait(30) == 0
        self._reader.join(10)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(10)
        self._reader.join(10)


def everything(topic: str, partitions: int) -> set[tuple[str, int]]:
    return {(topic, p) for p in range(partitions)}


def split_evenly(group: list[MemberProcess], topic: str, partitions: int, each: int):
    owned = [m.owned() for m in group]
    return (all(len(o) == each for o in owned)
            and set().union(*owned) == everything(topic, partitions))


def last_commits(victim: MemberProcess, survivors: list[MemberProcess],
                 read_before: dict[int, int], committed_after_kill: dict[int, int]
                 ) -> dict[int, int]:
    """A killed member's last commit per partition as the broker applied it: where the
    survivors started reading it (``read_before``: how many records each had read at the
    kill). The offsets read just after the kill are only a lower bound: a commit the member
    sent just before it died may be applied after that read (a broker answers a request
    whose sender has gone). Asserts the bounds: not below that read, and not past what the
    member reported (it reports a poll, then commits it)."""
    last = {}
    for p, lower in committed_after_kill.items():
        taken = [o for m in survivors for q, o, _ in m.records()[read_before[id(m)]:] if q == p]
        reported = max((o + 1 for q, o, _ in victim.records() if q == p), default=lower)
        assert lower <= min(taken) <= max(lower, reported), (p, lower, min(taken), reported)
        last[p] = min(taken)
    return last
