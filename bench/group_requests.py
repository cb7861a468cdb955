"""Python calls per group request on both ports: OffsetCommit, OffsetFetch, FindCoordinator,
ListGroups and describe (tslog's ConsumerGroupDescribe, Kafka's DescribeGroups), through
tslog's dispatch table and through the Kafka listener's adapters, with the authorizer off
and on (a super user, so every check runs and passes).

    python bench/group_requests.py                # this checkout; 7 timed runs per row
    PYTHONPATH=pkg python bench/group_requests.py # another tree (see below)

A broker is opened in-process (``Broker.open`` on a temporary data directory, no sockets)
with one topic of 4 partitions and 20 groups holding committed offsets. Each row is one
request as a connection hands it to its dispatch table (tslog's body) or adapter (Kafka's
decoded body), awaited when it answers later. Calls are counted with ``sys.setprofile``
(Python-level calls; exact, the figure to compare); times are the median of ``--runs`` with
their spread (min-max), printed beside ``os.getloadavg()``: the machine is shared, so
compare calls, or times only within one invocation. A commit's fsync is counted in neither
(the group commit runs in its own thread) but is in the times.

To compare two trees, run this file once per tree, alternating: for another checkout, make
a directory ``pkg/tslog/`` of symlinks ``protocol``, ``broker``, ``client`` to its folders
and run with ``PYTHONPATH=pkg`` (the first line says which tree answered). The Kafka
services are built by field name, so trees whose ``KafkaServices`` differ both run.
Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import inspect
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.python_calls import count_calls  # noqa: E402
from tslog.broker.config import BrokerConfig  # noqa: E402
from tslog.broker.server.kafka.dispatch import TABLE  # noqa: E402
from tslog.broker.server.kafka.services import KafkaServices  # noqa: E402
from tslog.broker.server.state import Broker  # noqa: E402
from tslog.protocol.messages import ApiKey  # noqa: E402

TOPIC, PARTITIONS, GROUPS = "events", 4, 20
ADMIN = "User:admin"


class Connection:
    """What the request gate reads of a connection."""

    principal = ADMIN
    peer = "127.0.0.1:5555"


def native_requests() -> dict[str, tuple[int, dict]]:
    parts = list(range(PARTITIONS))
    return {
        "OffsetCommit": (ApiKey.OFFSET_COMMIT, {
            "group_id": "g00001", "member_id": "", "member_epoch": -1, "topics": [
                {"topic": TOPIC, "partitions": [
                    {"partition": p, "offset": 7, "metadata": ""} for p in parts]}]}),
        "OffsetFetch": (ApiKey.OFFSET_FETCH, {"group_id": "g00001", "topics": [
            {"topic": TOPIC, "partitions": parts}]}),
        "FindCoordinator": (ApiKey.FIND_COORDINATOR, {"key_type": "group", "keys": ["g00001"]}),
        "ListGroups": (ApiKey.LIST_GROUPS, {"states": None}),
        "describe": (ApiKey.CONSUMER_GROUP_DESCRIBE, {"groups": ["g00001", "g00002"]}),
    }


def kafka_requests() -> dict[str, tuple[int, int, dict]]:
    parts = list(range(PARTITIONS))
    return {
        "OffsetCommit": (8, 8, {
            "group_id": "g00001", "generation_id_or_member_epoch": -1, "member_id": "",
            "group_instance_id": None, "topics": [{"name": TOPIC, "partitions": [
                {"partition_index": p, "committed_offset": 7, "committed_leader_epoch": -1,
                 "committed_metadata": ""} for p in parts]}]}),
        "OffsetFetch": (9, 7, {"group_id": "g00001", "require_stable": False, "topics": [
            {"name": TOPIC, "partition_indexes": parts}]}),
        "FindCoordinator": (10, 4, {"key_type": 0, "coordinator_keys": ["g00001"]}),
        "ListGroups": (16, 4, {"states_filter": []}),
        "describe": (15, 5, {"groups": ["g00001", "g00002"],
                             "include_authorized_operations": False}),
    }


def kafka_services(broker: Broker, gated: bool) -> KafkaServices:
    """The services a Kafka connection gets, by field name (the fields differ by tree)."""
    gate = broker.gate if gated else None
    native = broker.dispatch if gate is None else gate.bind(broker.dispatch, Connection())
    wrap = {}
    if gate is not None:
        from tslog.broker.security import request_gate
        wrap["data"] = gate.wrap(request_gate.GatedData, broker.data, Connection())
        if hasattr(broker, "group_api"):
            from tslog.broker.security.group_gate import GatedGroups
            wrap["group_api"] = gate.wrap(GatedGroups, broker.group_api, Connection())
    available = {"native": native, "data": broker.data, "topics": broker.topics,
                 "cluster": broker.cluster, "config": broker.config, "groups": broker.groups,
                 "offsets": broker.offsets, "classic": broker.classic_groups,
                 "catalog": broker.group_catalog, "authorizer": None if gate is None
                 else gate.authorizer, "group_api": getattr(broker, "group_api", None),
                 "partition_admin": getattr(broker, "partition_admin", None),
                 "topic_admin": getattr(broker, "topic_admin", None), **wrap}
    return KafkaServices(**{field.name: available[field.name]
                            for field in dataclasses.fields(KafkaServices)
                            if field.name in available})


async def settle(answer):
    return (await answer) if inspect.isawaitable(answer) else answer


def runner(loop, call):
    return lambda: loop.run_until_complete(settle(call()))


def rows(broker: Broker, loop, gated: bool) -> list[tuple[str, object]]:
    dispatch = broker.gate.bind(broker.dispatch, Connection()) if gated else broker.dispatch
    services = kafka_services(broker, gated)
    info = SimpleNamespace(client_id="bench", client_host="127.0.0.1", principal=ADMIN)
    out = []
    for name, (key, body) in native_requests().items():
        out.append((f"native {name}", runner(loop, lambda k=key, b=body: dispatch[k](b))))
    for name, (key, version, body) in kafka_requests().items():
        out.append((f"kafka {name}", runner(loop, lambda k=key, v=version, b=body:
                                            TABLE[k](services, b, v, info))))
    return out


def timed(run, runs: int) -> tuple[float, float, float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples), min(samples), max(samples)


def measure(gated: bool, runs: int) -> list[tuple[str, int, tuple]]:
    with tempfile.TemporaryDirectory(prefix="group-requests-") as data_dir:
        settings = {"authorizer_enabled": True, "super_users": ADMIN} if gated else {}
        broker = Broker.open(BrokerConfig(data_dir=data_dir, kafka_listen="127.0.0.1:19092",
                                          **settings))
        broker.set_kafka_port(19092)
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(settle(broker.dispatch[ApiKey.CREATE_TOPICS]({
                "topics": [{"topic": TOPIC, "partitions": PARTITIONS,
                            "replication_factor": 1, "configs": {}}], "timeout_ms": 1000})))
            for number in range(GROUPS):
                loop.run_until_complete(broker.offsets.commit(
                    f"g{number:05}", {(TOPIC, 0): (number, "")}))
            results = []
            for name, run in rows(broker, loop, gated):
                run()  # the first call of each warms caches (kept partition lists, ...)
                calls, _ = count_calls(run)
                results.append((name, calls, timed(run, runs)))
            return results
        finally:
            loop.close()
            broker.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    tables = [(gated, measure(gated, args.runs)) for gated in (False, True)]
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    tree = Path(sys.modules["tslog.broker"].__path__[0]).resolve().parent
    print(f"tree: {tree}  groups: {GROUPS}  partitions: {PARTITIONS}  runs: {args.runs}  "
          f"load average: {load}")
    print(f"{'request':<26} {'authorizer':>10} {'python calls':>13} {'median ms':>10} "
          f"{'spread ms':>14}")
    for gated, results in tables:
        for name, calls, (median, low, high) in results:
            print(f"{name:<26} {'on' if gated else 'off':>10} {calls:>13,} {median:>10.2f} "
                  f"{low:>6.2f}-{high:<7.2f}")


if __name__ == "__main__":
    main()
