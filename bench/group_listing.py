"""What one ListGroups and one ConsumerGroupDescribe of every group cost on a broker holding
many groups: Python calls counted (exact, the figure to compare) and wall time (noisy).

    python bench/group_listing.py                 # 200 tslog groups of 5 members, 200 with
                                                  # offsets only; 7 runs
    python bench/group_listing.py --groups 50 --members 3 --runs 5

A broker is opened in-process (``Broker.open`` on a temporary data directory, no sockets):
its KIP-848 coordinator gets ``--groups`` groups of ``--members`` members each (joined by
heartbeats, on a topic of 12 partitions), and as many groups again have committed offsets
only. Then ListGroups, and ConsumerGroupDescribe of every listed group, run through the
broker's dispatch table as a connection calls them. Calls are counted with
``sys.setprofile`` (Python-level calls only); times are the median of ``--runs`` with their
spread (min-max), printed beside ``os.getloadavg()``: the machine is shared, so compare
calls, or times only within one invocation.

To compare two trees, run this file once per tree, alternating: for another checkout, make
a directory ``pkg/tslog/`` of symlinks ``protocol``, ``broker``, ``client`` to its folders
and run with ``PYTHONPATH=pkg`` (the first line says which tree answered). Compare the
calls columns; times only within one invocation's spread. Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.python_calls import count_calls  # noqa: E402
from tslog.broker.config import BrokerConfig  # noqa: E402
from tslog.broker.server.state import Broker  # noqa: E402
from tslog.protocol.messages import ApiKey  # noqa: E402

TOPIC, PARTITIONS = "events", 12


async def populate(broker: Broker, groups: int, members: int) -> None:
    """``groups`` KIP-848 groups of ``members`` members, and ``groups`` offsets-only ones."""
    created = broker.dispatch[ApiKey.CREATE_TOPICS]({"topics": [
        {"topic": TOPIC, "partitions": PARTITIONS, "replication_factor": 1, "configs": {}}],
        "timeout_ms": 1000})
    if asyncio.iscoroutine(created) or asyncio.isfuture(created):
        await created
    for number in range(groups):
        for _ in range(members):
            await broker.groups.heartbeat(f"g{number:05}", "", 0, [TOPIC], [])
        await broker.offsets.commit(f"o{number:05}", {(TOPIC, 0): (number, "")})


def list_groups(broker: Broker) -> dict:
    return broker.dispatch[ApiKey.LIST_GROUPS]({"states": None})


def describe_all(broker: Broker, ids: list[str]) -> dict:
    return broker.dispatch[ApiKey.CONSUMER_GROUP_DESCRIBE]({"groups": ids})


def timed(run, runs: int) -> tuple[float, float, float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples), min(samples), max(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--members", type=int, default=5)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="group-listing-") as data_dir:
        broker = Broker.open(BrokerConfig(data_dir=data_dir))
        try:
            asyncio.run(populate(broker, args.groups, args.members))
            listed_calls, listed = count_calls(lambda: list_groups(broker))
            ids = [group["group_id"] for group in listed["groups"]]
            described_calls, _ = count_calls(lambda: describe_all(broker, ids))
            list_ms = timed(lambda: list_groups(broker), args.runs)
            describe_ms = timed(lambda: describe_all(broker, ids), args.runs)
        finally:
            broker.close()
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    tree = Path(sys.modules["tslog.broker"].__path__[0]).resolve().parent
    print(f"tree: {tree}  groups: {len(ids)} ({args.groups} x {args.members} members + "
          f"{args.groups} offsets only)  runs: {args.runs}  load average: {load}")
    print(f"{'request':<32} {'python calls':>13} {'calls/group':>12} {'median ms':>10} "
          f"{'spread ms':>14}")
    for name, calls, (median, low, high) in (
            ("ListGroups", listed_calls, list_ms),
            ("ConsumerGroupDescribe (all)", described_calls, describe_ms)):
        print(f"{name:<32} {calls:>13,} {calls / max(1, len(ids)):>12.1f} {median:>10.2f} "
              f"{low:>6.2f}-{high:<7.2f}")


if __name__ == "__main__":
    main()
