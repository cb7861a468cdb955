"""Time lookups answered on the caller's own thread, for the synchronous facade.

Why: a blocking call handed to the client's loop thread pays two thread wake-ups and two
GIL hand-offs per request, on a loaded two-core machine as much again as the broker's whole
answer (bench/broker.py prints the sync facade's lookup latency beside a plain socket's). Time lookups are small single requests that users put on latency-sensitive
paths ("where is 10:00?", seek to a time), so the facade sends them itself over a blocking
socket to the partitions' leader, using the metadata the async core already holds.

It is only a shortcut, never a second opinion: anything unusual (metadata unknown or stale,
partitions led by several brokers, an error code, a broken connection, another thread in
the middle of a lookup) returns None and the caller takes the ordinary async path, which
owns retries, metadata refreshes and typed errors. A timeout is the exception: waiting the
whole request timeout twice would be worse than failing, so it raises RequestTimedOutError.
"""

from __future__ import annotations

import socket
import threading

from tslog.protocol.messages import ApiKey

from ._cluster import Cluster
from ._offsets import TIMESTAMP_TYPES, group_by_topic
from ._types import OffsetAndTimestamp, TopicPartition
from .blocking import BrokerSocket
from .errors import RequestTimedOutError

_LIST_OFFSETS = ApiKey.LIST_OFFSETS  # read per request (see ApiKey)


class DirectLookups:
    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self._lock = threading.Lock()  # one lookup at a time; others take the async path
        self._sockets: dict[tuple[str, int], BrokerSocket] = {}
        self._closed = False

    def offsets_for_times(self, timestamps: dict, timestamp_type: str):
        """Like ``AsyncConsumer.offsets_for_times``, or None: ask the async path instead."""
        if timestamp_type not in TIMESTAMP_TYPES or not self._lock.acquire(blocking=False):
            return None
        try:
            if self._closed:
                return None
            request = self._plan(timestamps)
            if request is None:
                return None
            address, parts = request
            connection = self._sockets.get(address)
            try:
                if connection is None:
                    connection = self._sockets[address] = BrokerSocket(
                        *address, self._cluster.request_timeout_ms / 1000,
                        self._cluster.client_id, security=self._cluster.security,
                        ssl_context=self._cluster.ssl_context,
                        connect_timeout_s=self._cluster.connect_timeout_ms / 1000)
                body = connection.request(_LIST_OFFSETS, {
                    "replica_id": -1, "timestamp_type": timestamp_type,
                    "topics": group_by_topic(parts)}, poll_s=self._cluster.lookup_poll_s)
            except socket.timeout:
                self._drop(address)
                raise RequestTimedOutError(
                    f"ListOffsets to {address[0]}:{address[1]} timed out") from None
            except Exception:  # broken connection or frame: the async path decides
                self._drop(address)
                return None
            return _results(body, parts)
        finally:
            self._lock.release()

    def _plan(self, timestamps: dict):
        """((host, port), {tp: fields}) when one known leader serves every partition."""
        cluster = self._cluster
        if cluster.metadata_stale():
            return None
        parts, leaders = {}, set()
        for tp, timestamp in timestamps.items():
            if not isinstance(timestamp, int) or timestamp < 0:
                return None  # the async path raises the documented ValueError
            tp = TopicPartition(*tp)
            leader = cluster.leader_for(tp)
            if leader is None:
                return None
            leaders.add(leader)
            parts[tp] = {"timestamp": timestamp}
        if len(leaders) != 1:
            return None
        address = cluster.brokers.get(leaders.pop())
        return (address, parts) if address is not None else None

    def _drop(self, address) -> None:
        connection = self._sockets.pop(address, None)
        if connection is not None:
            connection.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for address in list(self._sockets):
                self._drop(address)


def _results(body: dict, parts: dict):
    """The answers, or None if any partition has an error or is missing."""
    results = {}
    for topic in body["topics"]:
        for part in topic["partitions"]:
            tp = TopicPartition(topic["topic"], part["partition"])
            if tp not in parts or part["error_code"]:
                return None
            results[tp] = (None if part["offset"] < 0
                           else OffsetAndTimestamp(part["offset"], part["timestamp"]))
    return results if results.keys() == parts.keys() else None
