"""Seeded fault schedules against three brokers and etcd, each on a host of its own.

Each schedule runs an idempotent acks=all producer from the clients' host while faults hit
the partition's leader or etcd (``schedule.py``), and checks after every fault that nothing
acknowledged was lost, duplicated or moved, no offset read below the high watermark changed,
LogAppendTime never decreased and every time lookup equals a brute-force oracle
(``checks.py``). A consumer-group member reads and commits throughout; at the end the
group's committed offset must be one past a record it processed, and the replicas' segment
and index files are compared byte for byte.

CI runs two fixed seeds with a 4 s session (partition faults wait out a lease), which
between them apply every kind of fault once; ``TSLOG_FAULT_SEEDS`` (comma-separated: each
seed draws from every kind) and ``TSLOG_FAULT_COUNT`` (faults per seed) replay or lengthen
it (the long mode: ``TSLOG_FAULT_SEEDS=1,2,3 TSLOG_FAULT_COUNT=20``), and
``TSLOG_FAULT_ETCD_OUTAGE_S`` sets the etcd outage (6 s in CI; the long mode uses 30).
"""

from __future__ import annotations

import os

import pytest

from tests.faults import net
from tests.faults.checks import GroupReader, Writer
from tests.faults.cluster import FaultCluster
from tests.faults.schedule import KINDS, TOPIC_CONFIG, Schedule, plan
from tests.helpers.replication import assert_replica_files_identical
from tslog.client import Admin, Producer

pytestmark = [pytest.mark.faults, pytest.mark.slow, pytest.mark.timeout(600),
              pytest.mark.skipif(net.available() is not None, reason=str(net.available()))]

SESSION_MS = 4000
# CI: two fixed seeds, between them every kind of fault once (in the seed's order).
CI_RUNS = [(4301, KINDS[:5]), (4302, KINDS[5:])]
RUNS = ([(int(s), KINDS) for s in os.environ["TSLOG_FAULT_SEEDS"].split(",")]
        if os.environ.get("TSLOG_FAULT_SEEDS") else CI_RUNS)
COUNT = int(os.environ.get("TSLOG_FAULT_COUNT", "0"))  # 0: each kind of the run once
ETCD_OUTAGE_S = float(os.environ.get("TSLOG_FAULT_ETCD_OUTAGE_S", "6"))


@pytest.fixture
def cluster(tmp_path):
    started = FaultCluster(tmp_path, config={"broker_session_timeout_ms": SESSION_MS})
    try:
        yield started.start()
    finally:
        started.close()


@pytest.mark.parametrize("seed,kinds", RUNS, ids=[str(seed) for seed, _ in RUNS])
def test_schedule_keeps_every_acknowledged_record(cluster, seed, kinds):
    faults = plan(seed, COUNT or len(kinds), kinds)
    print(f"fault schedule: seed={seed} faults={faults}", flush=True)
    with Admin(cluster.bootstrap) as admin:
        admin.create_topic("events", partitions=1, replication_factor=3, config=TOPIC_CONFIG)
    schedule = Schedule(cluster, "events", SESSION_MS / 1000, ETCD_OUTAGE_S)
    schedule.recover()
    writer = Writer(cluster.bootstrap, "events")
    reader = GroupReader(cluster.bootstrap, "events", "readers")
    writer.start()
    reader.start()
    try:
        schedule.run(faults, writer)
    except BaseException:
        print(cluster.logs())
        raise
    finally:
        writer.finish()
        reader.finish()
    acknowledged = writer.acknowledged()
    with Producer(cluster.bootstrap, acks="all") as producer:  # every ISR member has all
        producer.send("events", b"last").get(60)
    schedule.check(acknowledged)
    leader = schedule.leader().leader
    assert len(acknowledged) > 0 and schedule.ledger.checks == len(faults) + 1
    assert reader.commits > 0 and reader.check() is not None
    for broker in cluster.brokers:
        broker.terminate()
    assert_replica_files_identical(cluster.brokers[leader],
                                   [b for i, b in enumerate(cluster.brokers) if i != leader],
                                   "events-0")
