"""Kafka's own ``kafka-reassign-partitions`` and ``kafka-leader-election`` (Kafka 4.4's
tools, ``tests/helpers/kafka_reference.py``) against the Kafka listeners of a three-broker
tslog cluster on etcd.

What a user sees: ``--generate`` proposes a plan on the brokers named and prints the current
assignment tslog has; ``--execute --throttle`` starts it (the throttle shows as the brokers'
dynamic ``leader.replication.throttled.rate`` and the leaders hold catch-up reads back);
``--verify`` reports it completed and clears the throttles; the replicas are then where the
plan said, read through tslog's own Admin, and every record produced before and during the
move is read back once. ``kafka-leader-election --election-type PREFERRED`` gives each
partition back to its first replica. A move paced to a standstill is listed (``--list``) and
cancelled (``--cancel``): the partition keeps its old replicas and nothing is listed after.
"""

from __future__ import annotations

import json
import socket
import struct

import pytest

from tests.helpers.broker_process import BrokerProcess, free_port, wait_cluster_ready
from tests.helpers.kafka_reference import run_tool
from tests.helpers.replication import bootstrap, wait_for
from tests.integration.test_metrics_cluster import scrape
from tslog.client import Admin, Consumer, Producer, TopicPartition
from tslog.protocol.kafka import decode_response, encode_request

pytestmark = [pytest.mark.kafka_reference, pytest.mark.slow, pytest.mark.timeout(600)]

REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
ELECTION = "org.apache.kafka.tools.LeaderElectionCommand"
TOPIC = "moving"
RECORD = b"r" * 1000
THROTTLE = 200_000  # bytes/s: the move takes seconds, so --verify sees it under way first
DESCRIBE_CONFIGS, BROKER_RESOURCE = 32, 4


class Cluster:
    """Brokers 0-2 on etcd, each with a Kafka listener and a metrics port."""

    def __init__(self, tmp_path, etcd) -> None:
        self.kafka_ports = [free_port() for _ in range(3)]
        self.metrics_ports = [free_port() for _ in range(3)]
        self.brokers = [BrokerProcess(tmp_path / f"broker-{node}", config={
            "node_id": node, "etcd_endpoints": etcd.endpoint,
            "broker_session_timeout_ms": 4000, "auto_leader_rebalance_enable": False,
            "kafka_listen": f"127.0.0.1:{self.kafka_ports[node]}",
            "metrics_listen": f"127.0.0.1:{self.metrics_ports[node]}"}) for node in range(3)]
        for broker in self.brokers:
            broker.launch()
        wait_cluster_ready(self.brokers, 3)
        self.kafka = ",".join(f"127.0.0.1:{port}" for port in self.kafka_ports)
        self.native = bootstrap(self.brokers)

    def tool(self, main_class: str, *args: str) -> str:
        done = run_tool(main_class, "--bootstrap-server", self.kafka, *args)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def placement(self) -> dict[int, tuple[int, list[int], list[int]]]:
        """partition -> (leader, replicas, isr), as tslog's own Admin reads it."""
        with Admin(self.native) as admin:
            return {p.partition: (p.leader, list(p.replicas), list(p.isr))
                    for p in admin.describe_topic(TOPIC).partitions}

    def dynamic_rates(self, node: int) -> dict[str, str]:
        """Broker ``node``'s replication rates, as Kafka's DescribeConfigs reports them."""
        body = {"resources": [{"resource_type": BROKER_RESOURCE, "resource_name": str(node),
                               "configuration_keys": None}],
                "include_synonyms": False, "include_documentation": False}
        answer = _kafka_request(self.kafka_ports[node], DESCRIBE_CONFIGS, 4, body)
        return {c["name"]: c["value"] for c in answer["results"][0]["configs"]
                if "replication.throttled" in c["name"]}

    def stop(self) -> None:
        for broker in self.brokers:
            broker.cleanup()


def _kafka_request(port: int, api_key: int, version: int, body: dict) -> dict:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        request = encode_request(api_key, version, 1, "reassign-test", body)
        sock.sendall(struct.pack(">I", len(request)) + request)
        size = struct.unpack(">I", sock.recv(4, socket.MSG_WAITALL))[0]
        return decode_response(api_key, version, sock.recv(size, socket.MSG_WAITALL))[1]


@pytest.fixture
def cluster(tmp_path, etcd):
    started = Cluster(tmp_path, etcd)
    try:
        yield started
    finally:
        started.stop()


def _produce(cluster: Cluster, first: int, count: int, one_by_one: bool = False
             ) -> list[bytes]:
    """``count`` acknowledged records over both partitions; ``one_by_one``: a batch each."""
    values = [b"%06d:" % i + RECORD for i in range(first, first + count)]
    with Producer(cluster.native, acks="all", linger_ms=5) as producer:
        futures = []
        for i, value in enumerate(values):
            futures.append(producer.send(TOPIC, value, partition=i % 2))
            if one_by_one:
                futures[-1].get(30)
        for future in futures:
            future.get(30)
    return values


def _read_all(cluster: Cluster) -> list[bytes]:
    with Consumer(cluster.native) as consumer:
        parts = [TopicPartition(TOPIC, p) for p in range(2)]
        consumer.assign(parts)
        for tp in parts:
            consumer.seek(tp, 0)
        values: list[bytes] = []
        for _ in range(200):  # polls, counted: stops once nothing new comes back
            records = consumer.poll(500)
            if not records and values:
                break
            values += [r.value for r in records]
        return values


def _proposal(printed: str) -> tuple[dict, dict]:
    """(current, proposed) plans from ``--generate``'s output."""
    current = printed.split("Current partition replica assignment")[1] \
        .split("Proposed partition reassignment configuration")[0]
    proposed = printed.split("Proposed partition reassignment configuration")[1]
    return json.loads(current.strip()), json.loads(proposed.strip())


def _by_partition(plan: dict) -> dict[int, list[int]]:
    return {p["partition"]: p["replicas"] for p in plan["partitions"]}


def test_generate_execute_throttled_verify_and_preferred_election(cluster, tmp_path):
    with Admin(cluster.native) as admin:
        admin.create_topic(TOPIC, partitions=2, replication_factor=2)
    wait_for(lambda: all(len(isr) == 2 for _, _, isr in cluster.placement().values()), 30,
             "both partitions in sync")
    before = _produce(cluster, 0, 400)
    placed = cluster.placement()

    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": TOPIC}]}))
    printed = cluster.tool(REASSIGN, "--generate", "--topics-to-move-json-file", str(topics),
                           "--broker-list", "1,2")
    current, proposed = _proposal(printed)
    assert _by_partition(current) == {p: replicas for p, (_, replicas, _) in placed.items()}
    assert all(sorted(r) == [1, 2] for r in _by_partition(proposed).values())

    # The plan: the proposal, each partition led now by broker 1 or 2 keeping that leader
    # second, so after the move it leads without being preferred (the election's work).
    target = {}
    for partition, (leader, _, _) in placed.items():
        other = 2 if leader == 1 else 1
        target[partition] = [other, leader] if leader in (1, 2) else [1, 2]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": TOPIC, "partition": p, "replicas": r} for p, r in target.items()]}))
    started = cluster.tool(REASSIGN, "--execute", "--reassignment-json-file", str(plan),
                           "--throttle", str(THROTTLE))
    assert f"The inter-broker throttle limit was set to {THROTTLE} B/s" in started
    assert "Successfully started partition reassignments" in started
    assert cluster.dynamic_rates(1) == {"leader.replication.throttled.rate": str(THROTTLE),
                                        "follower.replication.throttled.rate": str(THROTTLE)}
    during = _produce(cluster, 400, 100)

    def verified():
        out = cluster.tool(REASSIGN, "--verify", "--reassignment-json-file", str(plan))
        return out if "still in progress" not in out else None

    out = wait_for(verified, 240, "--verify reports the move completed")
    for partition in target:
        assert f"Reassignment of partition {TOPIC}-{partition} is completed." in out
    assert "Clearing broker-level throttles on brokers 0,1,2" in out
    assert all(cluster.dynamic_rates(node) == {} for node in range(3))
    assert {p: replicas for p, (_, replicas, _) in cluster.placement().items()} == target
    throttled = sum(scrape(port).get("tslog_reassignment_throttled_reads_total", 0)
                    for port in cluster.metrics_ports)
    assert throttled > 0

    elected = cluster.tool(ELECTION, "--election-type", "PREFERRED", "--all-topic-partitions")
    assert "Successfully completed leader election (PREFERRED) for partitions" in elected
    wait_for(lambda: all(leader == replicas[0] for leader, replicas, _
                         in cluster.placement().values()), 30, "preferred leaders lead")
    read = _read_all(cluster)
    assert sorted(read) == sorted(before + during)


def test_a_stalled_move_is_listed_and_cancelled(cluster, tmp_path):
    with Admin(cluster.native) as admin:
        admin.create_topic(TOPIC, partitions=2, replication_factor=1)
    wait_for(lambda: all(leader >= 0 for leader, _, _ in cluster.placement().values()), 30,
             "both partitions led")
    _produce(cluster, 0, 200, one_by_one=True)
    placed = cluster.placement()
    (leader, old, _) = placed[0]
    new = (old[0] + 1) % 3
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": TOPIC, "partition": 0, "replicas": [new]}]}))
    # One byte a second and a batch per record: the leader serves the new replica one
    # batch, then nothing for about 1000 s, so it cannot catch up while the test looks.
    cluster.tool(REASSIGN, "--execute", "--reassignment-json-file", str(plan),
                 "--throttle", "1")
    listed = cluster.tool(REASSIGN, "--list")
    assert f"{TOPIC}-0: replicas: {old[0]},{new}. adding: {new}. removing: {old[0]}." in listed
    with Admin(cluster.native) as admin:  # the same move, seen from tslog's own port
        moving = admin.list_partition_reassignments()
    assert [(tp, m.adding_replicas) for tp, m in moving.items()] == \
        [(TopicPartition(TOPIC, 0), [new])]

    cancelled = cluster.tool(REASSIGN, "--cancel", "--reassignment-json-file", str(plan))
    assert f"Successfully cancelled partition reassignment for: {TOPIC}-0" in cancelled
    wait_for(lambda: cluster.placement()[0][1] == old, 60, "the old replicas back")
    assert cluster.tool(REASSIGN, "--list").strip() == "No partition reassignments found."
    assert all(cluster.dynamic_rates(node) == {} for node in range(3))
    assert sorted(_read_all(cluster)) == sorted(b"%06d:" % i + RECORD for i in range(200))
