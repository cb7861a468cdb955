"""``KafkaRequestInfo``: who sent a Kafka request, as every Kafka adapter receives it.

Why a small frozen value and not the connection: an adapter (``data_apis.py``,
``admin_apis.py``, the group adapters) must not reach the socket or the connection's state; it
needs only the client's id (Kafka's ``client.id``, for logs and group members), the client's
host (JoinGroup reports it) and the principal the request runs as (ACLs, logs). The
connection builds one per request from its header; it costs one small object.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class KafkaRequestInfo:
    client_id: str | None  # the request header's client id (None if the client sent null)
    client_host: str  # the peer's address without the port, e.g. "127.0.0.1"
    principal: str  # "User:ANONYMOUS", or "User:<certificate subject>" with mutual TLS
