"""Three real ``tslog-broker`` processes on one etcd: topic creation with replication factor 3,
Metadata that every broker agrees on, leader failover after SIGKILL (bounded by the session
timeout), controller failover, node_id clashes, and topic deletion reaching every replica.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.helpers.broker_process import BrokerProcess, free_port
from tests.helpers.etcd_process import EtcdProcess
from tests.helpers.wire import Wire
from tslog.protocol.messages import ApiKey

SESSION_MS = 2000
FAILOVER_BOUND_S = SESSION_MS / 1000 + 8.0  # lease TTL + etcd's expiry check + margin (shared, busy CI)


def metadata(broker: BrokerProcess, topics=None) -> dict:
    with Wire(broker.host, broker.port) as wire:
        return wire.request(ApiKey.METADATA, {"topics": topics})


def partitions(body: dict, topic: str) -> dict[int, tuple]:
    (entry,) = [t for t in body["topics"] if t["topic"] == topic]
    return {p["partition"]: (p["leader"], p["leader_epoch"], tuple(p["replicas"]),
                             tuple(p["isr"])) for p in entry["partitions"]}


def create(broker: BrokerProcess, topic: str, partitions_: int, rf: int) -> dict:
    with Wire(broker.host, broker.port) as wire:
        return wire.request(ApiKey.CREATE_TOPICS, {"topics": [
            {"topic": topic, "partitions": partitions_, "replication_factor": rf,
             "configs": {}}], "timeout_ms": 10_000})["topics"][0]


def wait_for(predicate, timeout_s: float, what: str) -> float:
    start = time.monotonic()
    while True:
        result = predicate()
        if result:
            return time.monotonic() - start
        assert time.monotonic() - start < timeout_s, f"not within {timeout_s} s: {what}"
        time.sleep(0.05)


def agreed_state(brokers: list[BrokerProcess], topic: str):
    """The partitions every running broker reports identically, or None if they differ."""
    views = [partitions(metadata(b, [topic]), topic) for b in brokers if b.running]
    return views[0] if all(v == views[0] for v in views) else None


@pytest.fixture
def three(cluster_factory):
    brokers = cluster_factory(3, session_timeout_ms=SESSION_MS)
    try:
        wait_for(lambda: all(len(metadata(b)["brokers"]) == 3 for b in brokers), 10,
                 "every broker has heard of every registration")
    except AssertionError:
        seen = [[e["node_id"] for e in metadata(b)["brokers"]] for b in brokers]
        logs = "\n".join(f"--- broker {b.node_id}\n{b.log_text()[-3000:]}" for b in brokers)
        raise AssertionError(f"registrations seen by brokers 0, 1, 2: {seen}\n{logs}") from None
    return brokers


def test_every_broker_reports_the_same_replicated_topic(three):
    result = create(three[1], "events", 3, 3)
    assert result["error_code"] == 0, result
    wait_for(lambda: agreed_state(three, "events"), 10, "brokers agree")
    state = agreed_state(three, "events")
    assert sorted(leader for leader, *_ in state.values()) == [0, 1, 2]
    for leader, epoch, replicas, isr in state.values():
        assert sorted(replicas) == [0, 1, 2] and isr == replicas
        assert leader == replicas[0] and epoch == 0
    for broker in three:
        body = metadata(broker)
        assert [(b["node_id"], b["port"]) for b in body["brokers"]] == \
            [(b.node_id, b.port) for b in three]
        assert body["controller_id"] == metadata(three[0])["controller_id"]
        # every replica has its local log: a partition directory per assigned partition
        assert sorted(p.name for p in broker.data_dir.glob("events-*")) == \
            ["events-0", "events-1", "events-2"]
    too_big = create(three[0], "wide", 1, 4)
    assert too_big["error_code"] == 38  # INVALID_REPLICATION_FACTOR
    assert create(three[2], "events", 3, 3)["error_code"] == 36  # TOPIC_ALREADY_EXISTS


def test_a_killed_leader_is_replaced_within_the_session_timeout(three):
    assert create(three[0], "events", 3, 3)["error_code"] == 0
    wait_for(lambda: agreed_state(three, "events"), 10, "brokers agree")
    before = agreed_state(three, "events")
    controller = metadata(three[0])["controller_id"]
    victim = next(b for b in three if b.node_id != controller)
    led = [p for p, (leader, *_) in before.items() if leader == victim.node_id]
    assert led
    victim.kill()
    survivors = [b for b in three if b is not victim]

    def failed_over():
        state = agreed_state(survivors, "events")
        return state and all(victim.node_id not in s[3] and s[0] != victim.node_id
                             for s in state.values())
    elapsed = wait_for(failed_over, FAILOVER_BOUND_S, "failover")
    after = agreed_state(survivors, "events")
    for p, (leader, epoch, replicas, isr) in after.items():
        old_leader, old_epoch, old_replicas, old_isr = before[p]
        assert replicas == old_replicas
        assert isr == tuple(b for b in old_isr if b != victim.node_id)
        if p in led:
            assert leader in old_isr and epoch == old_epoch + 1
        else:
            assert (leader, epoch) == (old_leader, old_epoch)
    assert [b["node_id"] for b in metadata(survivors[0])["brokers"]] == \
        [b.node_id for b in survivors]
    assert elapsed < FAILOVER_BOUND_S

    victim.start()  # it rejoins (as a follower: the ISR is the leaders' business)
    wait_for(lambda: len(metadata(survivors[0])["brokers"]) == 3, 10, "rejoined")
    # It catches up and leaders grow the ISR back meanwhile, so views may differ for a moment.
    wait_for(lambda: agreed_state(three, "events"), 10, "brokers agree after the rejoin")


def test_a_new_controller_takes_over_and_handles_the_next_failure(three):
    assert create(three[0], "events", 3, 3)["error_code"] == 0
    wait_for(lambda: agreed_state(three, "events"), 10, "brokers agree")
    controller = metadata(three[0])["controller_id"]
    by_id = {b.node_id: b for b in three}
    by_id[controller].kill()
    rest = [b for b in three if b.node_id != controller]
    wait_for(lambda: metadata(rest[0])["controller_id"] in {b.node_id for b in rest}
             and metadata(rest[1])["controller_id"] == metadata(rest[0])["controller_id"],
             FAILOVER_BOUND_S, "a new controller")
    new_controller = metadata(rest[0])["controller_id"]
    wait_for(lambda: all(s[0] != controller for s in
                         (agreed_state(rest, "events") or {0: (controller,)}).values()),
             FAILOVER_BOUND_S, "leaders moved off the dead controller")
    other = next(b for b in rest if b.node_id != new_controller)
    other.kill()  # the new controller must handle this one
    last = [by_id[new_controller]]
    wait_for(lambda: all(s[0] == new_controller and s[3] == (new_controller,)
                         for s in partitions(metadata(last[0], ["events"]), "events").values()),
             FAILOVER_BOUND_S, "everything led by the last broker")


def test_a_live_brokers_node_id_is_refused(three, tmp_path, etcd):
    clash = BrokerProcess(tmp_path / "clash", config={
        "node_id": 1, "etcd_endpoints": etcd.endpoint,
        "broker_session_timeout_ms": SESSION_MS})
    clash.launch()
    try:
        code = clash.exit_code(timeout_s=SESSION_MS / 1000 + 15)
    finally:
        clash.kill()
    assert code == 1
    assert "node_id 1 is already registered" in clash.log_text()
    assert f"127.0.0.1:{three[1].port}" in clash.log_text()
    assert [b["node_id"] for b in metadata(three[0])["brokers"]] == [0, 1, 2]


def test_deleting_a_topic_removes_every_replica(three):
    assert create(three[0], "doomed", 2, 3)["error_code"] == 0
    wait_for(lambda: all(len(list(b.data_dir.glob("doomed-*"))) == 2 for b in three), 10,
             "replicas created")
    with Wire(three[2].host, three[2].port) as wire:
        body = wire.request(ApiKey.DELETE_TOPICS, {"topics": ["doomed"], "timeout_ms": 5000})
    assert body["topics"] == [{"topic": "doomed", "error_code": 0}]
    wait_for(lambda: not any(list(b.data_dir.glob("doomed-*")) for b in three), 10,
             "replicas deleted")
    for broker in three:
        (entry,) = metadata(broker, ["doomed"])["topics"]
        assert entry["error_code"] == 3  # UNKNOWN_TOPIC_OR_PARTITION


def describe_rows(broker: BrokerProcess, topic: str) -> dict[int, tuple]:
    """``tslog topics describe`` on ``broker``, rows parsed back into (leader, epoch,
    replicas, isr) per partition."""
    result = subprocess.run(
        [sys.executable, "-m", "tslog.client.cli", "topics", "describe", topic,
         "--bootstrap", f"{broker.bootstrap},{broker.bootstrap}"],
        capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr.decode()
    rows = {}
    for line in result.stdout.decode().splitlines():
        fields = line.split()
        if fields and fields[0].isdigit():
            partition, leader, epoch, replicas, isr = fields[:5]  # then start, end, records
            rows[int(partition)] = (int(leader), int(epoch),
                                    tuple(map(int, replicas.split(","))),
                                    tuple(map(int, isr.split(","))))
    return rows


def test_cli_describe_shows_leaders_replicas_isr_and_epochs_across_a_failover(three):
    assert create(three[0], "events", 3, 3)["error_code"] == 0
    wait_for(lambda: agreed_state(three, "events"), 10, "brokers agree")
    assert describe_rows(three[2], "events") == agreed_state(three, "events")
    victim = three[1]
    victim.kill()
    survivors = [three[0], three[2]]
    wait_for(lambda: all(1 not in s[3] for s in
                         (agreed_state(survivors, "events") or {0: (0, 0, (), (1,))}).values()),
             FAILOVER_BOUND_S, "failover")
    rows = describe_rows(three[0], "events")
    assert rows == agreed_state(survivors, "events")
    assert {epoch for leader, epoch, _, _ in rows.values()} == {0, 1}
    assert all(leader != 1 and 1 not in isr and len(replicas) == 3
               for leader, _, replicas, isr in rows.values())


def test_a_topic_deleted_while_a_broker_was_down_leaves_nothing_on_its_disk(three):
    assert create(three[0], "doomed", 2, 3)["error_code"] == 0
    assert create(three[0], "kept", 1, 3)["error_code"] == 0
    away = three[2]
    wait_for(lambda: len(list(away.data_dir.glob("doomed-*"))) == 2
             and list(away.data_dir.glob("kept-*")), 10, "replicas created")
    away.terminate()
    with Wire(three[0].host, three[0].port) as wire:
        body = wire.request(ApiKey.DELETE_TOPICS, {"topics": ["doomed"], "timeout_ms": 5000})
    assert body["topics"] == [{"topic": "doomed", "error_code": 0}]
    away.start()
    assert list(away.data_dir.glob("doomed-*")) == []
    assert [p.name for p in away.data_dir.glob("kept-*")] == ["kept-0"]
    assert [t["topic"] for t in metadata(away)["topics"]] == ["kept"]


def test_a_whole_cluster_restart_keeps_its_leaders_and_isrs(three):
    assert create(three[0], "events", 3, 3)["error_code"] == 0
    wait_for(lambda: agreed_state(three, "events"), 10, "brokers agree")
    before = agreed_state(three, "events")
    for broker in three:
        broker.kill()
    # Their sessions expire while they are down (a reboot takes longer than a session): no
    # broker sees another's registration go, so none is known to be dead.
    time.sleep(SESSION_MS / 1000 + 1.5)
    for broker in three:  # back at about the same time, the first one up becomes controller
        broker.launch()
    for broker in three:
        broker.wait_ready()
    wait_for(lambda: all(len(metadata(b)["brokers"]) == 3 for b in three), 10, "rejoined")
    time.sleep(SESSION_MS / 1000 + 0.5)  # past the controller's start-up grace
    assert agreed_state(three, "events") == before


def test_a_broker_started_before_etcd_joins_once_etcd_is_up(tmp_path):
    etcd = EtcdProcess(tmp_path / "late-etcd")
    broker = BrokerProcess(tmp_path / "early", config={
        "node_id": 0, "etcd_endpoints": etcd.endpoint, "broker_session_timeout_ms": SESSION_MS})
    try:
        broker.launch()
        # Until the broker says it is retrying against a port nobody listens on (a fixed
        # sleep was shorter than a loaded CI machine's interpreter start-up: etcd came first)
        wait_for(lambda: "etcd not reachable yet" in broker.log_text() or not broker.running,
                 30, "the broker reports etcd unreachable")
        assert broker.running
        etcd.start()
        broker.wait_ready()
        assert [b["node_id"] for b in metadata(broker)["brokers"]] == [0]
        broker.terminate()
    finally:
        broker.kill()
        etcd.stop()


def test_a_broker_gives_up_on_an_etcd_that_never_comes(tmp_path):
    broker = BrokerProcess(tmp_path / "alone", config={
        "node_id": 0, "etcd_endpoints": f"127.0.0.1:{free_port()}",
        "request_timeout_ms": 1500})
    try:
        broker.launch()
        assert broker.exit_code(timeout_s=30) == 1
    finally:
        broker.kill()
    assert "could not join the cluster" in broker.log_text()
