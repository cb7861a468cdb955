"""Produce with replication factor 3: acks=1 and acks=all to the leader of a partition on
three brokers and etcd on this machine (started as the cluster tests start them)."""

from __future__ import annotations

import time
from pathlib import Path

from tslog.protocol.messages import ApiKey

from tests.helpers.broker_process import BrokerProcess, start_cluster
from tests.helpers.etcd_process import ETCD_BINARY, EtcdProcess

from .common import (
    BATCH_RECORDS,
    READY_TIMEOUT_S,
    connect,
    create_topic,
    median,
    print_table,
    spread,
    verdict,
)
from .context import Setup
from .produce import produce_raw


class ReplicatedCluster:
    """etcd and three ``tslog-broker`` processes on loopback ports with temporary
    directories; ``stop`` ends every process by its pid."""

    def __init__(self, root: Path) -> None:
        self.root = root / "cluster"
        self.root.mkdir(parents=True, exist_ok=True)
        self.etcd = EtcdProcess(self.root / "etcd")
        self.brokers: list[BrokerProcess] = []

    def start(self) -> "ReplicatedCluster":
        self.etcd.start()
        self.brokers = start_cluster(self.root, self.etcd.endpoint, 3, session_timeout_ms=3000,
                                     cluster_name="bench", args=["--log-level", "WARNING"])
        return self

    def create_topic(self, topic: str, replication_factor: int = 3) -> BrokerProcess:
        """Create ``topic``; return its leader once the ISR holds every replica."""
        with connect(self.brokers[0].port) as raw:
            create_topic(raw, topic, replication_factor)
            deadline = time.monotonic() + READY_TIMEOUT_S
            while time.monotonic() < deadline:
                meta = raw.request(ApiKey.METADATA, {"topics": [topic]})["topics"][0]
                parts = meta["partitions"]
                if (parts and parts[0]["leader"] >= 0
                        and len(parts[0]["isr"]) == replication_factor):
                    leader = self.brokers[parts[0]["leader"]]
                    with connect(leader.port) as direct:  # the leader itself knows it leads
                        if direct.list_offset(topic, 0, -1)["error_code"] == 0:
                            return leader
                time.sleep(0.05)
        raise RuntimeError(f"{topic}: no leader with a full ISR after {READY_TIMEOUT_S} s")

    def wait_replicated(self, leader: BrokerProcess, topic: str, records: int) -> float:
        """Wait until the high watermark (ListOffsets LATEST) reaches ``records``: every
        in-sync replica holds them. Returns the seconds waited (polled every 2 ms)."""
        started = time.perf_counter()
        deadline = time.monotonic() + READY_TIMEOUT_S
        with connect(leader.port) as raw:
            while raw.log_end_offset(topic) < records:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{topic}: followers did not catch up")
                time.sleep(0.002)
        return time.perf_counter() - started

    def delete_topic(self, topic: str) -> None:
        with connect(self.brokers[0].port) as raw:
            raw.delete_topic(topic)

    def stop(self) -> None:
        for broker in self.brokers:
            broker.stop()
        self.etcd.stop()


def section_replication(setup: Setup) -> None:
    """Produce acks=1 and acks=all to a partition with replication factor 3 (three brokers
    and etcd on this machine), raw pipelined batches to the leader, alternating the order."""
    if not Path(ETCD_BINARY).exists():
        print(f"\n  replication rows SKIPPED: no etcd at {ETCD_BINARY} "
              "(Debian: apt-get install etcd-server)")
        return
    cluster = ReplicatedCluster(setup.broker.data_dir.parent)
    modes = [(1, 3), (-1, 3), (-1, 1)]  # (acks, replication factor)
    # Runs of ~0.1 s measure a burst the followers copy afterwards; longer runs make acks=1
    # pay for the replication it starts, as it would when sustained.
    batches = 5 * setup.produce_batches
    records = batches * BATCH_RECORDS
    rates: dict[tuple[int, int], list[float]] = {mode: [] for mode in modes}
    replicated: dict[tuple[int, int], list[float]] = {mode: [] for mode in modes}
    try:
        cluster.start()
        for run in range(setup.runs):
            for acks, factor in (modes if run % 2 == 0 else modes[::-1]):
                topic = f"rf{factor}-acks{acks}-{run}"
                leader = cluster.create_topic(topic, factor)
                elapsed, _ = produce_raw(leader.port, topic, batches, acks, setup.window)
                rates[acks, factor].append(records / elapsed)
                # The followers finish copying before the next run, so no run shares the
                # cores with the previous one's replication; the wait also gives the rate at
                # which every replica had the data.
                waited = cluster.wait_replicated(leader, topic, records)
                replicated[acks, factor].append(records / (elapsed + waited))
                # Dropped as in the other sections: 15 runs leave ~7 GB of dirty pages
                # otherwise, and the kernel's writeback of them takes the cores from the
                # later runs.
                cluster.delete_topic(topic)
    finally:
        cluster.stop()
    # This VM runs in fast and slow phases; a run's two replication-factor-3 modes are
    # adjacent in either order, so their ratio is taken per run, then the median.
    everyone = [a / b for a, b in zip(rates[-1, 3], rates[1, 3])]
    sustained = [a / b for a, b in zip(rates[-1, 3], replicated[1, 3])]
    alone = [a / b for a, b in zip(rates[-1, 1], rates[1, 3])]
    rows = [["1", "3", spread(rates[1, 3]), spread(replicated[1, 3]), "-", "-", "-"],
            ["all (HW past the batch)", "3", spread(rates[-1, 3]),
             spread(replicated[-1, 3]), spread(everyone, digits=2), spread(sustained, digits=2),
             f"{verdict(median(everyone) >= 0.5)} >= 0.5x"],
            ["all (fsync)", "1", spread(rates[-1, 1]), spread(replicated[-1, 1]),
             spread(alone, digits=2), "-", "-"]]
    print_table(
        f"Produce with replication factor 3: raw socket to the leader, {setup.window} in "
        f"flight, {batches:,} batches of {BATCH_RECORDS} per run",
        ["acks", "replicas", "records/s the producer sees (min-max)",
         "records/s until every replica has them", "acks=all / acks=1 as the producer sees it",
         "acks=all / acks=1 until replicated", "target (producer's view)"],
        rows,
        notes=["three brokers and etcd share the machine with this client; followers fetch "
               "with long polls and the leader answers acks=all once every in-sync replica "
               "has the batch (the high watermark passed it); as in Kafka, no fsync is "
               "waited for when followers hold copies.",
               "'until every replica has them' times each run until the high watermark "
               "reaches its last record: with acks=1 the leader takes batches faster than "
               "the followers (sharing the same two cores) can copy them, so the producer's "
               "rate is a burst the followers pay for after it; sustained, they would fall "
               "out of the ISR. acks=all never runs ahead of its replicas.",
               "ratios are medians of per-run ratios; between runs the followers are let "
               "catch up, so no run shares the cores with the previous one's replication.",
               "replication factor 1 on the same cluster: a leader alone in its ISR holds "
               "the only copy, so its acks=all waits for the group-commit fsync instead."])
