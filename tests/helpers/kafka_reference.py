"""A reference Apache Kafka (KRaft, one node) for differential tests and benches.

The jars are not in git: ``jars("broker")`` runs ``mvn -q dependency:copy-dependencies`` on
``tests/kafka_reference/broker/pom.xml`` the first time anything asks (about a minute from
Maven Central), into ``tests/kafka_reference/.cache/broker`` (ignored), under a file lock so
parallel pytest processes fetch once. ``jars("spark")`` does the same for Spark's Kafka
source. So plain ``pytest`` works after the README's install command, with nothing else run.

``KafkaReference`` formats a KRaft storage directory (``kafka.tools.StorageTool``) in a temp
dir, starts ``kafka.Kafka`` on free loopback ports, waits until it answers ApiVersions and
Metadata lists itself, and stops it by pid (SIGTERM, SIGKILL after a timeout). ``run_tool``
runs one of Kafka's command-line tools (``java -cp <jars>/* <main class>``) and returns what
it printed, the way a user would see it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import socket
import struct
import subprocess
import time
from pathlib import Path

from tests.helpers.broker_process import free_port

ROOT = Path(__file__).resolve().parent.parent / "kafka_reference"
CACHE = ROOT / ".cache"
LOG4J = ROOT / "log4j2.properties"
READY_TIMEOUT_S = 120.0  # a JVM broker on a loaded 2-core machine takes 10-40 s to serve
STOP_TIMEOUT_S = 30.0
MVN_TIMEOUT_S = 900.0
# JIT at C1 only and the serial GC: the tools are short-lived and the machine has 2 cores.
JVM_FLAGS = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto",
             f"-Dlog4j2.configurationFile={LOG4J}"]
# What Kafka's own bin/kafka-run-class.sh passes (G1, the full JIT): for benchmarks, which
# must run Kafka and its tools as a user would, not trimmed for many short test runs.
KAFKA_SCRIPT_FLAGS = ["-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                      "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                      "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={LOG4J}"]

# Kafka 4.x's command-line tools (bin/kafka-*.sh) by main class.
TOPICS = "org.apache.kafka.tools.TopicCommand"
CONSOLE_PRODUCER = "org.apache.kafka.tools.ConsoleProducer"
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
GET_OFFSETS = "org.apache.kafka.tools.GetOffsetShell"
CONSUMER_GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
PRODUCER_PERF = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER_PERF = "org.apache.kafka.tools.ConsumerPerformance"


class ReferenceUnavailable(RuntimeError):
    """Java or Maven is missing, or Maven could not fetch the jars."""


def jars(side: str) -> Path:
    """The folder of jars for ``side`` ("broker" or "spark"), fetched on first use."""
    folder = CACHE / side
    done = folder / ".complete"
    if done.exists():
        return folder
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            raise ReferenceUnavailable(f"{tool} is not installed (see .ci/run)")
    CACHE.mkdir(exist_ok=True)
    with open(CACHE / f".{side}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another pytest process may be fetching
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            (CACHE / "tools.jsa").unlink(missing_ok=True)  # archived classes of old jars
            run = subprocess.run(["mvn", "-q", "-B", "dependency:copy-dependencies"],
                                 cwd=ROOT / side, capture_output=True, text=True,
                                 timeout=MVN_TIMEOUT_S)
            if run.returncode != 0:
                raise ReferenceUnavailable(f"mvn failed:\n{run.stdout}\n{run.stderr}")
            done.touch()
    return folder


def java_command(main_class: str, *args: str, heap: str = "256m",
                 share: list[str] = (), flags: list[str] = JVM_FLAGS) -> list[str]:
    return ["java", f"-Xmx{heap}", *flags, *share, "-cp", f"{jars('broker')}/*",
            main_class, *args]


def run_tool(main_class: str, *args: str, input: str | None = None,
             timeout_s: float = 180.0, as_scripts: bool = False) -> subprocess.CompletedProcess:
    """Run a Kafka tool to its end; stdout and stderr as text. ``as_scripts``: with the
    JVM flags and heap of Kafka's own scripts (``KAFKA_SCRIPT_FLAGS``, 512 MiB as the perf
    tools' scripts set), without the class-data archive below: for benchmarks.

    Why a class-data archive: a tool's JVM spends most of its start loading and verifying
    Kafka's classes, and the tests start a hundred of them. The first tool run dumps the
    classes it loaded (``-XX:ArchiveClassesAtExit``) and later runs map that archive
    (``-XX:SharedArchiveFile``): measured here, half the CPU time of a tool's run. A JVM that
    cannot use it (another Java) runs without it (``-Xshare:auto``); ``-Xlog:cds=off`` keeps
    its warnings out of what the tool prints.
    """
    if as_scripts:
        return subprocess.run(java_command(main_class, *args, heap="512m",
                                           flags=KAFKA_SCRIPT_FLAGS),
                              input=input, capture_output=True, text=True, timeout=timeout_s)
    archive, dumping = CACHE / "tools.jsa", None
    if archive.exists():
        share = [f"-XX:SharedArchiveFile={archive}"]
    else:
        dumping = CACHE / f".tools-{os.getpid()}-{time.monotonic_ns()}.jsa"
        share = [f"-XX:ArchiveClassesAtExit={dumping}"]
    done = subprocess.run(java_command(main_class, *args, share=["-Xlog:cds=off", *share]),
                          input=input, capture_output=True, text=True, timeout=timeout_s)
    if dumping is not None and dumping.exists():
        if done.returncode == 0 and not archive.exists():
            os.replace(dumping, archive)  # atomic: a concurrent dump's archive is as good
        else:
            dumping.unlink(missing_ok=True)
    return done


def start_tool(main_class: str, *args: str, log_path: Path) -> subprocess.Popen:
    """A Kafka tool left running (a console consumer in a group): stdout is a pipe, stderr
    goes to ``log_path``."""
    with open(log_path, "ab") as log:
        return subprocess.Popen(java_command(main_class, *args), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=log, text=True)


def _api_versions_answered(port: int) -> bool:
    """True if a Kafka listener on ``port`` answers an ApiVersions v0 request."""
    request = struct.pack(">hhih5s", 18, 0, 7, 5, b"probe")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2.0) as sock:
            sock.sendall(struct.pack(">i", len(request)) + request)
            head = sock.recv(8)
            return len(head) == 8 and struct.unpack(">ii", head)[1] == 7
    except OSError:
        return False


class KafkaReference:
    """One single-node KRaft Apache Kafka in ``base``; ``bootstrap`` is its listener."""

    def __init__(self, base: Path, config: dict | None = None,
                 as_scripts: bool = False) -> None:
        """``as_scripts``: the broker's JVM as ``bin/kafka-server-start.sh`` starts it (1 GiB
        heap, ``KAFKA_SCRIPT_FLAGS``), for benchmarks; else trimmed for tests (768 MiB,
        C1 JIT, serial GC)."""
        self.base = Path(base)
        self.jvm = {"heap": "1g", "flags": ["-Xms1g", *KAFKA_SCRIPT_FLAGS]} if as_scripts \
            else {"heap": "768m"}
        self.port, self.controller_port = free_port(), free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.log_path = self.base / "kafka.log"
        self.config = {
            "process.roles": "broker,controller", "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://{self.bootstrap},"
                         f"CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{self.bootstrap}",
            "controller.listener.names": "CONTROLLER", "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.base / "data"), "num.partitions": "1",
            "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "group.initial.rebalance.delay.ms": "0",
            **(config or {})}
        self.process: subprocess.Popen | None = None

    def start(self) -> "KafkaReference":
        self.base.mkdir(parents=True, exist_ok=True)
        properties = self.base / "server.properties"
        properties.write_text("".join(f"{k}={v}\n" for k, v in self.config.items()))
        fmt = subprocess.run(java_command("kafka.tools.StorageTool", "format", "-t",
                                          "dHNsb2ctcmVmZXJlbmNlAA", "-c", str(properties)),
                             capture_output=True, text=True, timeout=READY_TIMEOUT_S)
        if fmt.returncode != 0:
            raise ReferenceUnavailable(f"kafka-storage format failed:\n{fmt.stderr}")
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(java_command("kafka.Kafka", str(properties),
                                                         **self.jvm),
                                            stdout=log, stderr=subprocess.STDOUT)
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ReferenceUnavailable(f"kafka exited with {self.process.returncode}:\n"
                                           f"{self.log_text()}")
            if _api_versions_answered(self.port):
                return
            time.sleep(0.2)
        self.stop()
        raise ReferenceUnavailable(f"kafka not ready after {READY_TIMEOUT_S} s:\n"
                                   f"{self.log_text()}")

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> int | None:
        """SIGTERM by pid, SIGKILL if it has not exited within the timeout."""
        process = self.process
        if process is None or process.poll() is not None:
            return None if process is None else process.returncode
        os.kill(process.pid, signal.SIGTERM)
        try:
            return process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            return process.wait(STOP_TIMEOUT_S)
