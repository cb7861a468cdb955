"""Every tslog metric the broker updates as it works, in one registry of its own.

Why one module of definitions: other engineers name these metrics in alert rules, dashboards
and the replication code, so the names, types, labels and buckets live in one place. Why a
registry of our own (not prometheus_client's global one): what ``/metrics`` serves is exactly
this list plus the process, platform and GC collectors, whatever else a process imports.

Why the data path's metrics are ``loop_metrics`` families and pre-bound children: they are
updated per request, so they take no lock (only the event loop writes them), and the data
path looks up one small object per API (``API``) or per topic (``topic_metrics``) and calls
``inc``/``observe`` on children bound once, never ``labels(...)``. Nothing here runs per
record. Gauges set once or from other threads stay prometheus_client objects. Scrape-time state (offsets, sizes, lag) is not here: see ``collectors.py``.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge, disable_created_metrics
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

from .loop_metrics import CounterChild, HistogramChild, LoopCounter, LoopHistogram

# ``*_created`` series would double every counter's and histogram's output for a timestamp
# Prometheus does not need (it detects resets itself): off, for the whole broker process.
disable_created_metrics()
REGISTRY = CollectorRegistry()  # rendered by prometheus_client; LOOP_FAMILIES by text.py
ProcessCollector(registry=REGISTRY)
PlatformCollector(registry=REGISTRY)
GCCollector(registry=REGISTRY)

# Buckets, in base units. Requests: 100 us (a lookup over loopback) to 30 s (request timeout).
REQUEST_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                   0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
# A time lookup is a bisect plus at most one index interval of headers: microseconds.
LOOKUP_BUCKETS = (0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.01, 0.1)
# Log bytes one lookup read: one header (80 B) up to a few index intervals (4 KiB each).
SCANNED_BYTES_BUCKETS = (80.0, 512.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0)
# LAT - CreateTime: a millisecond (same host) up to an hour (a backlog being replayed).
END_TO_END_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                      10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)

# Written only on the event loop (see loop_metrics.py): no lock per update.
REQUESTS = LoopCounter(
    "tslog_requests_total", "Requests answered (or, acks=0, handled), per API.", ("api",))
REQUEST_ERRORS = LoopCounter(
    "tslog_request_errors_total",
    "Error codes sent in responses, per API and ErrorCode name (one per top-level, topic or "
    "partition error in a response).", ("api", "error"))
REQUEST_DURATION = LoopHistogram(
    "tslog_request_duration_seconds",
    "Time from a request's decoding to its response being ready (long polls and durable "
    "acks included), per API.", ("api",), REQUEST_BUCKETS)

PRODUCED_RECORDS = LoopCounter(
    "tslog_produced_records_total", "Records appended by Produce.", ("topic",))
PRODUCED_BYTES = LoopCounter(
    "tslog_produced_bytes_total", "Record-batch bytes appended by Produce.", ("topic",))
FETCHED_RECORDS = LoopCounter(
    "tslog_fetched_records_total",
    "Records sent to consumers in Fetch responses (whole batches; follower fetches excluded).",
    ("topic",))
FETCHED_BYTES = LoopCounter(
    "tslog_fetched_bytes_total",
    "Record-batch bytes sent to consumers in Fetch responses (follower fetches excluded).",
    ("topic",))
END_TO_END_LATENCY = LoopHistogram(
    "tslog_end_to_end_latency_seconds",
    "LogAppendTime minus the largest CreateTime of the batches a Produce appended to one "
    "partition (the newest record's CreateTime: linger excluded; negative counts as 0).",
    ("topic",), END_TO_END_BUCKETS)

TIME_LOOKUP_DURATION = LoopHistogram(
    "tslog_time_lookup_duration_seconds",
    "Duration of one ListOffsets lookup by time in a partition log (index bisect plus scan).",
    (), LOOKUP_BUCKETS)
TIME_LOOKUP_SCANNED_BYTES = LoopHistogram(
    "tslog_time_lookup_scanned_bytes", "Log bytes read by one ListOffsets lookup by time.",
    (), SCANNED_BYTES_BUCKETS)
REFUSED_REQUESTS = LoopCounter(
    "tslog_refused_requests_total",
    "Requests or connections refused before a handler ran, per reason.", ("reason",))
GROUP_COMMITS = LoopCounter(
    "tslog_consumer_group_commits_total",
    "OffsetCommit requests whose offsets were stored, per group (refused ones are in "
    "tslog_request_errors_total).", ("group",))
FAILED_LOGINS = LoopCounter(
    "tslog_failed_logins_total",
    "SASL logins that failed, per mechanism and reason (security_metrics.py: bounded sets; "
    "never the claimed user name).", ("mechanism", "reason"))
DENIED_REQUESTS = LoopCounter(
    "tslog_denied_requests_total",
    "Requests the authorizer denied in whole or in part, per principal and API (principals "
    "past the first 100 seen are counted as \"other\").", ("principal", "api"))
LOOP_FAMILIES = (
    REQUESTS, REQUEST_ERRORS, REQUEST_DURATION, PRODUCED_RECORDS, PRODUCED_BYTES,
    FETCHED_RECORDS, FETCHED_BYTES, END_TO_END_LATENCY, TIME_LOOKUP_DURATION,
    TIME_LOOKUP_SCANNED_BYTES, REFUSED_REQUESTS, GROUP_COMMITS, FAILED_LOGINS,
    DENIED_REQUESTS)

RECOVERY_DURATION = Gauge(
    "tslog_recovery_duration_seconds",
    "Seconds the broker spent opening its logs at startup (recovering them after a crash).",
    registry=REGISTRY)
RECOVERY_TRUNCATED_BYTES = Gauge(
    "tslog_recovery_truncated_bytes",
    "Bytes of torn or invalid log tail cut off by recovery at startup.", registry=REGISTRY)

OPEN_CONNECTIONS = Gauge("tslog_open_connections", "Client connections open now.",
                         registry=REGISTRY)
REFUSAL_REASONS = ("bad_frame", "oversize_frame", "unknown_api", "unsupported_version",
                   "invalid_request", "too_many_connections", "idle_timeout",
                   "connections_per_address", "connections_per_principal",
                   "unauthenticated_connections", "unauthenticated_connections_per_address",
                   "connection_rate_per_address")
REFUSED = {reason: REFUSED_REQUESTS.labels(reason) for reason in REFUSAL_REASONS}


def error_label(code: int) -> str:
    """The ``error`` label: the ErrorCode's name in lower case (bounded: the enum's size)."""
    try:
        return ErrorCode(code).name.lower()
    except ValueError:
        return "unknown_server_error"


class ApiMetrics:
    """One API's request counter, duration histogram and error children, bound once.

    The counter exists from the start (every API shows 0 requests); the histogram only once
    the API has been used, so a scrape does not carry 20 empty lines per unused API.
    """

    __slots__ = ("name", "requests", "_duration", "_errors")

    def __init__(self, name: str) -> None:
        self.name = name
        self.requests = REQUESTS.labels(self.name)
        self._duration: HistogramChild | None = None
        self._errors: dict[int, CounterChild] = {}

    def finish(self, seconds: float) -> None:
        """One answered request that took ``seconds``."""
        self.requests.inc()
        duration = self._duration
        if duration is None:
            duration = self._duration = REQUEST_DURATION.labels(self.name)
        duration.observe(seconds)

    def error(self, code: int) -> CounterChild:
        child = self._errors.get(code)
        if child is None:
            child = self._errors[code] = REQUEST_ERRORS.labels(self.name, error_label(code))
        return child


API = {api: ApiMetrics(api.name.lower()) for api in ApiKey}
# Followers' fetches long-poll all the time: counted apart, so consumers' fetch latency and
# errors are not drowned in them (Kafka's FetchFollower / FetchConsumer split).
FOLLOWER_FETCH = ApiMetrics("fetch_follower")


_KAFKA_API: dict[int, ApiMetrics] = {}


def kafka_api_metrics(api_key: int, api_name: str) -> ApiMetrics:
    """The metrics of a request on the Kafka listener: the same families, ``api`` named
    ``kafka_<api>`` (Kafka's ``JoinGroup`` is ``kafka_join_group``), bound on first use so a broker
    without the listener scrapes no Kafka lines."""
    api = _KAFKA_API.get(api_key)
    if api is None:
        snake = "".join("_" + c.lower() if c.isupper() else c for c in api_name).lstrip("_")
        api = _KAFKA_API[api_key] = ApiMetrics("kafka_" + snake)
    return api


_FETCH = ApiKey.FETCH  # read per request (see ApiKey)


def api_metrics(header, body: dict) -> ApiMetrics:
    """The metrics a native request (its ``RequestHeader`` and body) counts in: its API's,
    or ``fetch_follower`` for a replica's."""
    api_key = header.api_key
    if api_key is _FETCH and body["replica_id"] >= 0:
        return FOLLOWER_FETCH
    return API[api_key]


class TopicMetrics:
    """One topic's produce/fetch counters and latency histogram, bound once."""

    __slots__ = ("produced_records", "produced_bytes", "fetched_records", "fetched_bytes",
                 "end_to_end")

    def __init__(self, topic: str) -> None:
        self.produced_records = PRODUCED_RECORDS.labels(topic)
        self.produced_bytes = PRODUCED_BYTES.labels(topic)
        self.fetched_records = FETCHED_RECORDS.labels(topic)
        self.fetched_bytes = FETCHED_BYTES.labels(topic)
        self.end_to_end = END_TO_END_LATENCY.labels(topic)


_TOPICS: dict[str, TopicMetrics] = {}
_PER_TOPIC = (PRODUCED_RECORDS, PRODUCED_BYTES, FETCHED_RECORDS, FETCHED_BYTES,
              END_TO_END_LATENCY)


def topic_metrics(topic: str) -> TopicMetrics:
    """The bound children of ``topic`` (created on first use; call only for existing topics,
    so the label stays bounded by the topics that exist)."""
    found = _TOPICS.get(topic)
    if found is None:
        found = _TOPICS[topic] = TopicMetrics(topic)
    return found


def forget_topic(topic: str) -> None:
    """Drop a deleted topic's series, so deleted topics do not pile up in every scrape."""
    if _TOPICS.pop(topic, None) is None:
        return
    for metric in _PER_TOPIC:
        metric.remove(topic)
