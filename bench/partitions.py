"""A broker with many partitions: start-up, memory, descriptors, Metadata, one ListOffsets for
every partition, and produce spread over all of them against one partition. Prints a table
with the targets beside the figures; asserts nothing.

    python bench/partitions.py                  # 10 topics x 1,000 partitions
    python bench/partitions.py --quick          # 5 topics x 100, a smoke run

Each figure is the median of ``--runs`` (start-up: one clean and one crash restart per run).
A clean start leaves every log unopened until its first use, so memory and descriptors are
read twice, at rest after the clean start and after the requests have used every partition,
and ListOffsets for every partition is sent twice: the first opens every log (in a worker
thread), and another connection's ApiVersions round trips meanwhile show whether the broker
kept serving. After the crash restart of each run, a clean restart leaves every log
dormant again and the round-robin produce is sent first, so it opens every log, with the
same round trips measured meanwhile.
A request is encoded before its clock starts; its figure is the broker's round trip, to the
answer's last byte, and a second line adds this client's msgpack decode of the answer, which
is then checked.
The broker is a real ``tslog-broker`` process on a free loopback port with a temporary data
directory (``tests/helpers/broker_process.py``), stopped at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.helpers and bench

from bench.broker_bench.common import print_table, spread  # noqa: E402
from tests.helpers import broker_process  # noqa: E402
from tests.helpers.broker_process import BrokerProcess  # noqa: E402
from tests.helpers.wire import Wire, batch  # noqa: E402
from tslog.client import Producer  # noqa: E402
from tslog.protocol.messages import ApiKey, split_response  # noqa: E402

PRODUCE_RECORDS = 20_000
# A start is what this measures: give it far longer than the tests' 30 s before giving up.
broker_process.READY_TIMEOUT_S = broker_process.STOP_TIMEOUT_S = 600.0
VALUE = b"v" * 100


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def create(broker: BrokerProcess, topics: int, partitions: int) -> list[tuple[str, int]]:
    with Wire(broker.host, broker.port, timeout_s=300) as wire:
        for t in range(topics):
            assert wire.create_topic(f"t{t}", partitions=partitions) == 0
        placed = []
        for t in range(topics):
            for p in range(partitions):
                assert wire.produce(f"t{t}", p, batch([b"first"]))["error_code"] == 0
                placed.append((f"t{t}", p))
    return placed


class Pings:
    """Another connection's ApiVersions round trips, one every 2 ms in a thread, while a
    request runs: how long the broker kept everyone else waiting (``worst_ms``)."""

    def __init__(self, broker: BrokerProcess) -> None:
        self.broker = broker
        self.times: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._ping, daemon=True)

    def _ping(self) -> None:
        with Wire(self.broker.host, self.broker.port, timeout_s=600) as wire:
            while not self._stop.is_set():
                started = time.perf_counter()
                wire.api_versions()
                self.times.append(time.perf_counter() - started)
                time.sleep(0.002)

    def __enter__(self) -> "Pings":
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()

    def worst_ms(self) -> float:
        return max(self.times, default=0.0) * 1e3


def timed_start(broker: BrokerProcess, kill: bool) -> float:
    if kill:
        broker.kill()
    else:
        broker.terminate()
    started = time.perf_counter()
    broker.start()
    return time.perf_counter() - started


def round_trip(wire: Wire, api_key: ApiKey, body: dict) -> tuple[float, float, dict]:
    """(seconds to the answer's last byte, seconds with the test client's decode, response
    body) of one request: encoded before the clock starts; the first figure is the broker's
    round trip, the second adds the msgpack decode of the answer in this process, the work
    a client does with it; checked after."""
    frame = wire.encode(api_key, body)
    started = time.perf_counter()
    wire.send_raw(frame)
    raw = wire.read_frame()
    received = time.perf_counter() - started
    if raw is None:
        raise ConnectionError("broker closed the connection")
    answer = split_response(raw)[1]
    return received, time.perf_counter() - started, answer


def metadata_ms(broker: BrokerProcess, expected: int) -> tuple[float, float]:
    """(ms to the last byte, ms with the client's decode) of one Metadata for every topic."""
    with Wire(broker.host, broker.port, timeout_s=60) as wire:
        received, decoded, body = round_trip(wire, ApiKey.METADATA, {"topics": None})
    assert sum(len(t["partitions"]) for t in body["topics"]) == expected
    return received * 1e3, decoded * 1e3


def list_offsets_ms(broker: BrokerProcess, placed: list[tuple[str, int]]) -> tuple[float, float]:
    """One ListOffsets by time (0: the first record) for every partition: (ms to the last
    byte, ms with the client's decode)."""
    topics: dict[str, list] = {}
    for topic, partition in placed:
        topics.setdefault(topic, []).append({"partition": partition, "timestamp": 0})
    body = {"replica_id": -1, "timestamp_type": "append",
            "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()]}
    with Wire(broker.host, broker.port, timeout_s=600) as wire:  # first use: opens every log
        received, decoded, answer = round_trip(wire, ApiKey.LIST_OFFSETS, body)
    found = [p for t in answer["topics"] for p in t["partitions"]]
    assert len(found) == len(placed) and all(p["error_code"] == 0 and p["offset"] == 0
                                             for p in found), found[:3]
    return received * 1e3, decoded * 1e3


def produce_rate(bootstrap: str, targets: list[tuple[str, int]],
                 records: int = PRODUCE_RECORDS) -> float:
    """Records/s of ``Producer.send`` round-robin over ``targets``, acks=1 (also
    ``bench/kafka_partitions.py``'s tslog rows)."""
    with Producer(bootstrap, acks=1, linger_ms=5) as producer:
        started = time.perf_counter()
        for i in range(records):
            topic, partition = targets[i % len(targets)]
            producer.send(topic, VALUE, partition=partition)
        producer.flush()
        return records / (time.perf_counter() - started)


def measure(broker: BrokerProcess, placed, runs: int) -> list[list[str]]:
    pid = lambda: broker.process.pid  # noqa: E731 (it changes at every restart)
    n = len(placed)
    clean, crash, rss, fds, meta, lookup, all_rate, one_rate, rss_used, fds_used, first = (
        [] for _ in range(11))
    stalled, cold_rate, cold_stalled = [], [], []
    for _ in range(runs):
        clean.append(timed_start(broker, kill=False))
        time.sleep(1.0)  # idle: what the broker holds at rest
        rss.append(rss_bytes(pid()) / 2**20)
        fds.append(descriptors(pid()) / n)
        meta.append(metadata_ms(broker, n))
        with Pings(broker) as pings:
            first.append(list_offsets_ms(broker, placed)[0])  # opens every log (first use)
        stalled.append(pings.worst_ms())
        lookup.append(list_offsets_ms(broker, placed))
        one_rate.append(produce_rate(broker.bootstrap, placed[:1]))
        all_rate.append(produce_rate(broker.bootstrap, placed))
        rss_used.append(rss_bytes(pid()) / 2**20)  # every log opened by its first use
        fds_used.append(descriptors(pid()) / n)
        crash.append(timed_start(broker, kill=True))
        timed_start(broker, kill=False)  # every log dormant again
        with Pings(broker) as pings:
            cold_rate.append(produce_rate(broker.bootstrap, placed))  # opens every log (first use)
        cold_stalled.append(pings.worst_ms())
    ratio = [a / o for a, o in zip(all_rate, one_rate)]
    return [
        ["start after clean shutdown (s)", spread(clean, digits=2), "<= 10"],
        ["start after SIGKILL (s)", spread(crash, digits=2), "<= 20"],
        ["RSS idle (MiB)", spread(rss), "<= 1024"],
        ["descriptors at rest per partition", spread(fds, digits=3), "<= 1.2"],
        ["RSS, every partition used since the start (MiB)", spread(rss_used), "<= 1024"],
        ["descriptors per partition, every partition used", spread(fds_used, digits=3),
         "<= 1.2"],
        ["one Metadata for every partition (ms, to its last byte)",
         spread([m[0] for m in meta], digits=1), "<= 100"],
        ["  the same with this client's msgpack decode of it (ms)",
         spread([m[1] for m in meta], digits=1), ""],
        ["first ListOffsets for every partition: opens every log (ms)", spread(first, digits=1),
         ""],
        ["  meanwhile, another connection's slowest ApiVersions round trip (ms)",
         spread(stalled, digits=1), ""],
        ["one ListOffsets by time for every partition (ms, to its last byte)",
         spread([m[0] for m in lookup], digits=1), "<= 100"],
        ["  the same with this client's msgpack decode of it (ms)",
         spread([m[1] for m in lookup], digits=1), ""],
        ["produce, one partition (records/s)", spread(one_rate), ""],
        ["produce round-robin over all (records/s)", spread(all_rate), ""],
        ["round-robin / one partition", spread(ratio, digits=2), ">= 0.5"],
        ["produce round-robin right after a clean restart: opens every log (records/s)",
         spread(cold_rate), ""],
        ["  meanwhile, another connection's slowest ApiVersions round trip (ms)",
         spread(cold_stalled, digits=1), ""],
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 topics x 100 partitions")
    parser.add_argument("--topics", type=int, default=None)
    parser.add_argument("--partitions", type=int, default=None, help="per topic")
    parser.add_argument("--runs", type=int, default=None, help="default 3; 1 with --quick")
    parser.add_argument("--dir", default=None, help="where the data directory goes")
    args = parser.parse_args(argv)
    topics = args.topics or (5 if args.quick else 10)
    partitions = args.partitions or (100 if args.quick else 1000)
    runs = args.runs or (1 if args.quick else 3)
    root = Path(tempfile.mkdtemp(prefix="tslog-partitions-", dir=args.dir))
    broker = BrokerProcess(root / "data")
    try:
        broker.start()
        placed = create(broker, topics, partitions)
        rows = measure(broker, placed, runs)
        print_table(f"A broker with {topics} topics x {partitions:,} partitions = "
                    f"{len(placed):,} (medians of {runs} runs, min-max; load average "
                    f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} at the end: wall-clock "
                    f"figures on a shared machine, the counts are in the tests)",
                    ["figure", "value", "target"], rows)
    finally:
        broker.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
