"""The state every section of the broker benchmark shares, and the broker it measures:
``tests/helpers/broker_process.py``'s ``BrokerProcess``, the one the integration tests start."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers.broker_process import BrokerProcess

from .common import HOST
from .redis_server import Redis


def broker_process(root: Path, metrics_port: int | None = None,
                   kafka_port: int | None = None) -> BrokerProcess:
    """A broker for the benchmark (not started): data under ``root``, WARNING logs only (its
    log file is printed when a run fails), /metrics on ``metrics_port`` and the Kafka
    listener on ``kafka_port`` if given."""
    args = ["--log-level", "WARNING"]
    if metrics_port is not None:
        args += ["--metrics-listen", f"{HOST}:{metrics_port}"]
    if kafka_port is not None:
        args += ["--kafka-listen", f"{HOST}:{kafka_port}"]
    return BrokerProcess(root / "broker-data", args=args)


@dataclass
class Setup:
    """What every section needs: the servers, the sizes, the partition under test."""

    broker: BrokerProcess
    redis: Redis | None
    runs: int
    produce_batches: int
    client_records: int
    partition_records: int
    lookups: int
    xadd_requests: int
    small_batches: int  # 1-record batches per run of the small-batch row
    xadd_unpipelined: int  # XADD commands per run without pipelining
    metrics_port: int  # the broker's /metrics, scraped by the scrape section
    kafka_port: int | None = None  # the broker's Kafka listener (the kafka section)
    window: int = 8
    topic: str = "timeline"
    append_times: list[int] = field(default_factory=list)  # LAT of each batch of `topic`
