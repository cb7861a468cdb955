"""``FaultCluster``: etcd and N brokers, each on a host of its own (``net.Network``), and the
process faults beside the network ones.

The test process is the clients' host (the bridge's address). Brokers listen on port 9092
of their own address, etcd on 2379 of its own, so a node keeps its address across restarts.
Process faults go to the pid (``ip netns exec`` execs the program, so the pid is the
broker's): ``kill`` (SIGKILL), ``pause``/``resume`` (SIGSTOP/SIGCONT). A clock step is a
restart with ``TSLOG_TEST_CLOCK_OFFSET_MS`` (the broker's test clock offset): the node's
wall clock is then that far off for the rest of the run, as after an NTP step during a
crash; the lease rule uses the monotonic clock, which no such step moves.

``close`` resumes paused processes, kills every broker and etcd by pid and deletes the
namespaces, whatever state a failed test left them in.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from tests.faults.net import Network
from tests.helpers.broker_process import BrokerProcess, wait_cluster_ready
from tests.helpers.etcd_process import EtcdProcess
from tests.helpers.wire import Wire
from tslog.client import Admin

BROKER_PORT = 9092


class FaultCluster:
    """Args:
        base_dir: data directories and logs go here.
        brokers: how many.
        config: broker settings by field name (``broker_session_timeout_ms`` unset = the
            broker's default).
    """

    def __init__(self, base_dir: Path, brokers: int = 3, config: dict | None = None) -> None:
        self.base_dir = Path(base_dir)
        self.count = brokers
        self.config = dict(config or {})
        self.net: Network | None = None
        self.etcd: EtcdProcess | None = None
        self.brokers: list[BrokerProcess] = []
        self.paused: set[int] = set()
        self.etcd_paused = False

    def start(self) -> "FaultCluster":
        self.net = Network()
        address = self.net.add("etcd")
        self.etcd = EtcdProcess(self.base_dir / "etcd", host=address,
                                prefix=self.net.prefix("etcd"))
        self.etcd.client_port, self.etcd.peer_port = 2379, 2380
        self.etcd.start()
        for node in range(self.count):
            name = self.name(node)
            host = self.net.add(name)
            self.brokers.append(BrokerProcess(
                self.base_dir / f"broker-{node}", port=BROKER_PORT, host=host,
                prefix=self.net.prefix(name), args=["--log-level", "INFO"],
                config={"node_id": node, "etcd_endpoints": self.etcd.endpoint,
                        "allow_anonymous": "true", **self.config}))
        for broker in self.brokers:
            broker.launch()
        wait_cluster_ready(self.brokers)
        return self

    @staticmethod
    def name(node: int) -> str:
        return f"b{node}"

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers)

    def live_bootstrap(self) -> str:
        return ",".join(b.bootstrap for i, b in enumerate(self.brokers)
                        if b.running and i not in self.paused)

    # -- who leads ---------------------------------------------------------------------------

    def describe(self, topic: str, partition: int = 0):
        """PartitionInfo (leader, leader_epoch, isr, replicas): the newest epoch any live
        broker reports (one cut off from etcd still reports the epoch it led)."""
        seen = []
        for node, broker in enumerate(self.brokers):
            if not broker.running or node in self.paused:
                continue
            try:
                with Admin(broker.bootstrap, retries=0, request_timeout_ms=2000) as admin:
                    seen.append(admin.describe_topic(topic).partitions[partition])
            except Exception:  # noqa: BLE001 - cut off, or restarting: ask the others
                continue
        assert seen, "no broker answered"
        return max(seen, key=lambda p: (p.leader_epoch, len(p.isr)))

    def wire(self, node: int, timeout_s: float = 10.0) -> Wire:
        broker = self.brokers[node]
        return Wire(broker.host, broker.port, timeout_s, client_id="fault-probe")

    # -- process faults ----------------------------------------------------------------------

    def kill(self, node: int) -> None:
        self.resume(node)
        self.brokers[node].kill()

    def restart(self, node: int, clock_offset_ms: int = 0) -> None:
        """Start a killed broker again (same address and data), its clock off by
        ``clock_offset_ms``."""
        broker = self.brokers[node]
        env = dict(broker.env)
        env.pop("TSLOG_TEST_CLOCK_OFFSET_MS", None)
        if clock_offset_ms:
            env["TSLOG_TEST_CLOCK_OFFSET_MS"] = str(clock_offset_ms)
        broker.start(env)

    def pause(self, node: int) -> None:
        os.kill(self.brokers[node].process.pid, signal.SIGSTOP)
        self.paused.add(node)

    def resume(self, node: int) -> None:
        if node in self.paused:
            os.kill(self.brokers[node].process.pid, signal.SIGCONT)
            self.paused.discard(node)

    def pause_etcd(self) -> None:
        os.kill(self.etcd.process.pid, signal.SIGSTOP)
        self.etcd_paused = True

    def resume_etcd(self) -> None:
        if self.etcd_paused:
            os.kill(self.etcd.process.pid, signal.SIGCONT)
            self.etcd_paused = False

    # -- teardown ----------------------------------------------------------------------------

    def logs(self) -> str:
        """Every broker's log, for a failure message."""
        return "\n".join(f"===== broker {i}\n{b.log_text()[-6000:]}"
                         for i, b in enumerate(self.brokers))

    def close(self) -> None:
        """Stop everything by pid and delete the namespaces (also after a failure)."""
        try:
            for node in list(self.paused):
                self.resume(node)
            self.resume_etcd()
            for broker in self.brokers:
                broker.kill()
            if self.etcd is not None:
                self.etcd.stop()
        finally:
            if self.net is not None:
                self.net.close()


def wait_until(condition, timeout_s: float, what: str):
    """Poll ``condition`` until truthy (returned); AssertionError after ``timeout_s``. A bound
    on how long a test may hang, not a measured property."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            result = condition()
            if result:
                return result
        except Exception as exc:  # noqa: BLE001 - nodes come and go during faults
            last = exc
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what} ({last!r})")
