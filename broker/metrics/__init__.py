"""Prometheus metrics of the broker: definitions, data-path observations, scrape-time state,
the ``/metrics`` endpoint and the replication counters.

Modules, one job each: ``definitions`` (every counter, gauge and histogram the broker
updates), ``loop_metrics`` (lock-free counters and histograms owned by the event loop),
``text`` (the Prometheus text format), ``observe`` (the calls the server makes per request,
partition or batch), ``sources`` (what a scrape reads, handed over by the server once),
``lag`` (consumer-group lag in records and seconds), ``snapshot``
(state copied on the event loop for a scrape), ``collectors`` (that state as text),
``server`` (the HTTP endpoint on ``metrics_listen``) and ``replication`` (the calls the
replication code makes). The README's "Metrics" section lists every metric.
"""

from . import replication  # registers the replication series: 0 on a single node, not absent
from .definitions import REGISTRY
from .server import MetricsServer

__all__ = ["REGISTRY", "MetricsServer"]
