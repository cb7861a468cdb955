"""The mirror's Prometheus metrics, in a registry of its own (a process may run brokers'
or other clients' metrics too). Served by prometheus_client's HTTP server on
``--metrics-listen``."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server


class MirrorMetrics:
    """Throughput totals per topic, lag per partition, errors by kind."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        labels = ("topic", "partition")
        self.records = Counter("tslog_mirror_records", "records copied to the target",
                               ("topic",), registry=self.registry)
        self.bytes = Counter("tslog_mirror_bytes", "key + value bytes copied to the target",
                             ("topic",), registry=self.registry)
        self.lag_records = Gauge("tslog_mirror_lag_records",
                                 "source log end minus the next source offset to copy",
                                 labels, registry=self.registry)
        self.lag_seconds = Gauge("tslog_mirror_lag_seconds",
                                 "now minus the CreateTime of the newest record copied",
                                 labels, registry=self.registry)
        self.lat_delay = Gauge("tslog_mirror_lat_delay_seconds",
                               "target LogAppendTime minus source LogAppendTime of the newest "
                               "record copied", labels, registry=self.registry)
        self.errors = Counter("tslog_mirror_errors", "failed attempts (then retried)",
                              ("kind",), registry=self.registry)

    def serve(self, listen: str) -> None:
        host, _, port = listen.rpartition(":")
        start_http_server(int(port), addr=host or "127.0.0.1", registry=self.registry)
