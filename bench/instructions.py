"""Instructions per request on the data path, counted by callgrind: native and Kafka
Produce (1,000 records), Fetch and ListOffsets (by time), in process, without sockets.

    python bench/instructions.py                      # this checkout
    python bench/instructions.py --against main       # and a worktree of main, same run
    python bench/instructions.py --runs 3 --requests 7

Why counted, not timed: the machine is shared and its wall-clock figures move 10-30 %
between runs (DESIGN.md, "How to tell a regression from noise"); an instruction count of
the same work moves by well under 1 %. What is counted: from the decoded request body (what
a connection hands its dispatch table: a native body from ``messages.decode_request``, a
Kafka body from ``kafka.codec.decode_request``) through the handler or adapter to the
encoded response chunks. The broker is ``Broker.open`` over a temporary directory, the
dispatch table the listener binds, no authorizer, acks = 1.

The rows marked "(connection)" count the same requests from their frame's bytes to the
answer's bytes, through the connection the listeners make (``server/connection.py`` with
each port's front), fed as the socket would feed it, with idle polling off (its spinning
between requests would be counted as theirs): the framing, decoding, dispatch, ordering
and metrics that the handler rows leave out.

Method: the harness process runs under ``valgrind --tool=callgrind --dump-before=os_getppid``
and calls ``os.getppid`` (C function ``os_getppid``; the broker never calls it) between
requests, so
each request lands in a dump of its own. A row's figure is the median over its requests of
(the dump's instructions minus the median of empty dumps: the marker call itself); the
spread is the lowest and highest. ``--runs`` repeats the whole process; the table gives
the median of the runs' medians. Cyclic GC is off while requests are counted (it runs when
allocation counts say, not where a request is), and ``PYTHONHASHSEED=0``.

``--against REV`` measures a ``git worktree`` of REV (made under the scratch directory and
removed after) with this same harness: a directory of symlinks makes ``tslog`` that tree's
packages for the child process. Both are measured in one invocation, REV first.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HANDLER_ROWS = ("native produce", "native fetch", "native list_offsets",
                "kafka produce", "kafka fetch", "kafka list_offsets")
ROWS = HANDLER_ROWS + tuple(name + " (connection)" for name in HANDLER_ROWS)
RECORDS = 1000
VALUE = b"v" * 100
PACKAGES = ("protocol", "broker", "client", "spark_connector")


# ------------------------------------------------------------------ the measured process


def _bodies(topic_in: str, topic_out: str, now_ms: int, lookup_at: int) -> dict:
    """Row name -> (port, api key, version, request body)."""
    from tslog.protocol.kafka import record_batch
    from tslog.protocol.messages import ApiKey
    from tslog.protocol.records import build_batch

    native_batch = build_batch([VALUE] * RECORDS, create_times=[now_ms] * RECORDS)
    kafka_batch = record_batch.encode_batch([VALUE] * RECORDS, None, now_ms)
    fetch = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
             "topics": [{"topic": topic_in, "partitions": [
                 {"partition": 0, "fetch_offset": 0, "max_bytes": 64 << 10}]}]}
    return {
        "native produce": ("native", ApiKey.PRODUCE, 0, {"acks": 1, "timeout_ms": 5000, "topics": [
            {"topic": topic_out, "partitions": [{"partition": 0, "records": native_batch}]}]}),
        "native fetch": ("native", ApiKey.FETCH, 0, fetch),
        "native list_offsets": ("native", ApiKey.LIST_OFFSETS, 0, {
            "replica_id": -1, "timestamp_type": "append", "topics": [
                {"topic": topic_in, "partitions": [{"partition": 0, "timestamp": lookup_at}]}]}),
        "kafka produce": ("kafka", ApiKey.PRODUCE, 9, {
            "transactional_id": None, "acks": 1, "timeout_ms": 5000, "topic_data": [
                {"name": topic_out + "-k", "partition_data": [
                    {"index": 0, "records": kafka_batch}]}]}),
        "kafka fetch": ("kafka", ApiKey.FETCH, 12, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
            "isolation_level": 0, "topics": [{"topic": topic_in, "partitions": [
                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 64 << 10}]}]}),
        "kafka list_offsets": ("kafka", ApiKey.LIST_OFFSETS, 7, {
            "replica_id": -1, "isolation_level": 0, "topics": [{"name": topic_in, "partitions": [
                {"partition_index": 0, "timestamp": lookup_at}]}]}),
    }


def _requests(broker, kafka, bodies: dict) -> dict:
    """Row name -> a function that handles one request and encodes its response."""
    from tslog.broker.server.kafka.dispatch import TABLE
    from tslog.protocol import chunked, messages
    from tslog.protocol.kafka import codec
    from tslog.protocol.messages import RequestHeader

    info = kafka.info

    def native(api_key, body):
        frame = messages.encode_request(RequestHeader(api_key, 0, 1, "bench"), body)
        _, decoded = messages.decode_request(memoryview(frame)[4:], record_views=True)
        handler = broker.dispatch[api_key]
        return lambda: chunked.encode_response_chunks(1, _settled(handler(decoded)))

    def kafka_row(api_key, version, body):
        request = codec.decode_request(codec.encode_request(api_key, version, 1, "bench", body))
        adapter = TABLE[api_key]
        return lambda: codec.encode_response_chunks(
            api_key, version, 1, _settled(adapter(kafka.services, request.body, version, info)))

    return {name: native(key, body) if port == "native" else kafka_row(key, version, body)
            for name, (port, key, version, body) in bodies.items()}


class _Transport:
    """What a connection asks of its socket: it takes every byte at once."""

    def __init__(self) -> None:
        self.answers = 0

    def get_extra_info(self, name, default=None):
        return ("127.0.0.1", 5555) if name == "peername" else default

    def writelines(self, frames) -> None:
        self.answers += 1

    def get_write_buffer_size(self) -> int:
        return 0

    def set_write_buffer_limits(self, high=None, low=None) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:
        pass


def _connections(broker, kafka):
    """(connection, its transport) for the native port and Kafka's, as the listeners make
    them, on a transport of our own.
    A tree from before both ports shared one connection (2609f8a and older) makes its own
    two kinds, so ``--against`` such a tree compares like with like."""
    from tslog.broker.server.connection import BrokerConnection
    from tslog.broker.server.connection_registry import ConnectionRegistry

    registry = ConnectionRegistry(100)
    config, poller = broker.config, broker.idle_poller
    try:
        from tslog.broker.server.kafka.front import KafkaFront
        from tslog.broker.server.native_front import NativeFront
    except ImportError:
        from tslog.broker.server.kafka.connection import KafkaConnection
        made = (BrokerConnection(broker.dispatch, config, poller, registry),
                KafkaConnection(lambda connection: kafka.services, config, registry))
    else:
        made = (BrokerConnection(NativeFront(broker.dispatch), config, poller, registry),
                BrokerConnection(KafkaFront(lambda connection: kafka.services), config, poller,
                                 registry))
    pairs = [(connection, _Transport()) for connection in made]
    for connection, transport in pairs:
        connection.connection_made(transport)
    return pairs


def _connection_rows(broker, kafka, bodies: dict) -> dict:
    """Row name + " (connection)" -> a function that feeds one request's frame to a
    connection, as the socket would, and runs the loop until it is answered."""
    import struct

    from tslog.protocol import messages
    from tslog.protocol.kafka import codec
    from tslog.protocol.messages import RequestHeader

    native, kafka_connection = _LOOP.run_until_complete(_made_on_the_loop(
        lambda: _connections(broker, kafka)))

    def frame(port, key, version, body) -> bytes:
        if port == "native":
            return messages.encode_request(RequestHeader(key, 0, 1, "bench"), body)
        data = codec.encode_request(key, version, 1, "bench", body)
        return struct.pack(">I", len(data)) + data

    def feed(connection, transport, data: bytes):
        answered = transport.answers
        view = memoryview(data)
        while view:
            buffer = connection.get_buffer(len(view))
            size = min(len(buffer), len(view))
            buffer[:size] = view[:size]
            connection.buffer_updated(size)
            view = view[size:]
        while transport.answers == answered:
            _LOOP.run_until_complete(_one_turn())

    rows = {}
    for name, (port, key, version, body) in bodies.items():
        data = frame(port, key, version, body)
        connection, transport = native if port == "native" else kafka_connection
        rows[name + " (connection)"] = lambda c=connection, t=transport, d=data: feed(c, t, d)
    return rows


async def _made_on_the_loop(make):
    """``make()`` with the loop running (a connection takes the running loop)."""
    return make()


async def _one_turn() -> None:
    import asyncio

    await asyncio.sleep(0)


_LOOP = None


def _settled(result):
    """A handler's answer, its awaitable run to the end when it returned one."""
    if hasattr(result, "__await__"):
        return _LOOP.run_until_complete(result)
    return result


def _open_broker(data_dir: str):
    """The broker over ``data_dir`` with the topics the rows use, and the Kafka adapters'
    services (what the listener builds for a connection, no authorizer)."""
    import dataclasses
    from types import SimpleNamespace

    from tslog.broker.config import BrokerConfig
    from tslog.broker.server.kafka.services import KafkaServices
    from tslog.broker.server.state import Broker
    from tslog.protocol.messages import ApiKey

    config = BrokerConfig(data_dir=data_dir, idle_poll_us=0)  # no polling between requests
    broker = Broker.open(config)
    _settled(broker.dispatch[ApiKey.CREATE_TOPICS]({"timeout_ms": 5000, "topics": [
        {"topic": name, "partitions": 1, "replication_factor": 1, "configs": {}}
        for name in ("read", "write", "write-k")]}))
    # By field name: the fields differ between trees (``--against`` an older one).
    available = {"native": broker.dispatch, "data": getattr(broker, "data", None),
                 "topic_admin": getattr(broker, "topic_admin", None),
                 "topics": broker.topics, "cluster": broker.cluster,
                 "config": config, "groups": broker.groups, "offsets": broker.offsets,
                 "classic": broker.classic_groups, "authorizer": None,
                 "catalog": getattr(broker, "group_catalog", None),
                 "partition_admin": getattr(broker, "partition_admin", None),
                 "group_api": getattr(broker, "group_api", None)}
    services = KafkaServices(**{field.name: available[field.name]
                                for field in dataclasses.fields(KafkaServices)
                                if field.name in available})
    info = SimpleNamespace(client_id="bench", client_host="127.0.0.1",
                           principal="User:ANONYMOUS")
    return broker, SimpleNamespace(services=services, info=info)


def child(requests: int) -> None:
    """Run every row ``requests`` times, a marker call before each; print the dump plan."""
    import asyncio
    import gc
    import time

    global _LOOP
    _LOOP = asyncio.new_event_loop()
    asyncio.set_event_loop(_LOOP)
    marker = os.getppid
    scratch = os.environ.get("TSLOG_BENCH_SCRATCH")
    with tempfile.TemporaryDirectory(dir=scratch) as data_dir:
        broker, kafka = _open_broker(data_dir)
        try:
            now_ms = int(time.time() * 1000)
            lookup_at = _fill(broker, now_ms)  # the topic fetched from and searched
            bodies = _bodies("read", "write", now_ms, lookup_at)
            rows = _requests(broker, kafka, bodies)
            rows.update(_connection_rows(broker, kafka, bodies))
            for run in rows.values():  # every row warm
                for _ in range(3):
                    run()
            import tslog.broker

            plan = [tslog.broker.__file__]  # the first dump: start-up; also names the tree
            gc.collect()
            gc.disable()
            marker()
            for _ in range(requests):
                plan.append("empty")
                marker()
            for name, run in rows.items():
                for _ in range(requests):
                    run()
                    plan.append(name)
                    marker()
            gc.enable()
        finally:
            broker.close()
    print(json.dumps(plan))


def _fill(broker, now_ms: int) -> int:
    """Eight batches of 1,000 records in topic ``read``; returns the fifth one's LAT."""
    import time

    from tslog.protocol.messages import ApiKey
    from tslog.protocol.records import build_batch

    batch = build_batch([VALUE] * RECORDS, create_times=[now_ms] * RECORDS)
    times = []
    for _ in range(8):
        response = _settled(broker.dispatch[ApiKey.PRODUCE]({"acks": 1, "timeout_ms": 5000,
            "topics": [{"topic": "read", "partitions": [{"partition": 0, "records": batch}]}]}))
        answer = response["topics"][0]["partitions"][0]
        assert answer["error_code"] == 0, response
        times.append(answer["log_append_time"])
        time.sleep(0.002)  # a LAT of its own for each batch
    return times[4]


# ---------------------------------------------------------------------- the parent side


_TOTALS = re.compile(rb"^(?:totals|summary): (\d+)", re.M)


def _dump_total(path: Path) -> int:
    found = _TOTALS.findall(path.read_bytes())
    return int(found[-1]) if found else 0


def measure(tree: Path | None, requests: int, scratch: Path) -> dict[str, list[int]]:
    """One callgrind process over ``tree`` (None: this checkout): row -> instructions of
    each request, the marker's own cost subtracted."""
    env = dict(os.environ, PYTHONHASHSEED="0", TSLOG_BENCH_SCRATCH=str(scratch))
    if tree is not None:
        env["PYTHONPATH"] = str(_shim(tree, scratch))
    out = Path(tempfile.mkdtemp(dir=scratch))
    command = ["valgrind", "--tool=callgrind", "--dump-before=os_getppid",
               f"--callgrind-out-file={out}/cg.out", sys.executable, __file__,
               "--child", "--requests", str(requests)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the measured process failed:\n{done.stderr[-3000:]}")
    plan = json.loads(done.stdout.strip().splitlines()[-1])
    expected = (tree or ROOT) / "broker" / "__init__.py"
    if Path(plan[0]).resolve() != expected.resolve():  # the shim links to the tree
        raise SystemExit(f"measured {plan[0]}, not {expected}")
    dumps = sorted(out.glob("cg.out.*"), key=lambda p: int(p.suffix[1:]))
    counts = [_dump_total(path) for path in dumps]
    shutil.rmtree(out, ignore_errors=True)
    by_row: dict[str, list[int]] = {}
    for name, count in zip(plan[1:], counts[1:]):
        by_row.setdefault(name, []).append(count)
    marker = statistics.median(by_row.pop("empty"))
    return {name: [count - marker for count in values] for name, values in by_row.items()}


def _shim(tree: Path, scratch: Path) -> Path:
    """A directory whose ``tslog`` package is ``tree``'s folders (package-dir's mapping)."""
    shim = scratch / f"shim-{tree.name}"
    (shim / "tslog").mkdir(parents=True, exist_ok=True)
    (shim / "tslog" / "__init__.py").write_text("")
    for name in PACKAGES:
        link = shim / "tslog" / name
        if not link.exists():
            link.symlink_to(tree / name)
    return shim


def _worktree(rev: str, scratch: Path) -> Path:
    path = scratch / f"rev-{rev.replace('/', '_')}"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), rev],
                   check=True, capture_output=True)
    return path


def _summary(runs: list[dict[str, list[int]]], name: str) -> tuple[float, int, int]:
    """(median of the runs' medians, lowest, highest request) of one row."""
    medians = [statistics.median(run[name]) for run in runs]
    every = [count for run in runs for count in run[name]]
    return statistics.median(medians), min(every), max(every)


def table(after: list, before: list | None, rev: str | None) -> str:
    header = "| row | instructions per request (median) | spread (min-max) |"
    rule = "|---|---:|---|"
    if before:
        header += f" before ({rev}) | spread | after/before |"
        rule += "---:|---|---:|"
    lines = [header, rule]
    for name in ROWS:
        median, low, high = _summary(after, name)
        line = f"| {name} | {median:,.0f} | {low:,}-{high:,} |"
        if before:
            old, old_low, old_high = _summary(before, name)
            line += f" {old:,.0f} | {old_low:,}-{old_high:,} | {median / old:.3f} |"
        lines.append(line)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", metavar="REV", help="also measure this revision")
    parser.add_argument("--runs", type=int, default=1, help="callgrind processes per tree")
    parser.add_argument("--requests", type=int, default=5, help="requests per row per run")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.requests)
        return
    scratch = Path(tempfile.mkdtemp(prefix="tslog-instructions-"))
    tree = None
    try:
        before = None
        if args.against:
            tree = _worktree(args.against, scratch)
            before = [measure(tree, args.requests, scratch) for _ in range(args.runs)]
        after = [measure(None, args.requests, scratch) for _ in range(args.runs)]
        print(f"callgrind instructions per request; {args.runs} run(s) x {args.requests} "
              f"requests per row; load average {os.getloadavg()} (counts do not depend on it)")
        print(table(after, before, args.against))
    finally:
        if tree is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                           check=False, capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
