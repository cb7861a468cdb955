"""The Kafka dispatch table: api key -> adapter, and the versions the listener advertises.

An adapter is ``adapter(services, body, version, info)`` (``services.KafkaServices``, the
decoded Kafka body, its version, ``request_info.KafkaRequestInfo``) and returns the Kafka
response body, an awaitable of it, or None (Produce with acks = 0: no response). The table is
merged from one dict per module (``ADAPTER_GROUPS``), so a new group of APIs is one more entry
there.

``ADVERTISED`` is what ApiVersions tells clients, per API: a client picks the highest version
both sides know, so these ranges are the versions the adapters are written and tested for
(docs/kafka.md has the table and why each range stops where it does). A request for an API
or version outside it is answered UNSUPPORTED_VERSION by the connection.
"""

from __future__ import annotations

from typing import Any, Callable

from tslog.protocol.kafka.codec import SUPPORTED
from tslog.protocol.messages import ApiKey

from .admin_apis import ADMIN_ADAPTERS
from .data_apis import DATA_ADAPTERS
from .group_admin_apis import GROUP_ADMIN_ADAPTERS
from .group_apis import GROUP_ADAPTERS
from .offset_delete_api import OFFSET_DELETE_ADAPTERS
from .partition_apis import PARTITION_ADAPTERS
from .config_apis import CONFIG_ADAPTERS
from .log_dirs_api import LOG_DIRS_ADAPTERS
from .reassign_apis import REASSIGN_ADAPTERS

Adapter = Callable[..., Any]



def api_versions(services, body: dict, version: int, info) -> dict:
    """ApiVersions: the table below, the same for every client."""
    return api_versions_body()


LISTENER_ADAPTERS: dict[int, Adapter] = {ApiKey.API_VERSIONS: api_versions}
ADAPTER_GROUPS: tuple[dict[int, Adapter], ...] = (LISTENER_ADAPTERS, DATA_ADAPTERS,
                                                  ADMIN_ADAPTERS, GROUP_ADAPTERS,
                                                  GROUP_ADMIN_ADAPTERS,
                                                  OFFSET_DELETE_ADAPTERS, REASSIGN_ADAPTERS,
                                                  CONFIG_ADAPTERS, LOG_DIRS_ADAPTERS,
                                                  PARTITION_ADAPTERS)

# Fetch stops at 12 and Metadata's topic ids stay null: Fetch 13+ names topics by id, which
# tslog does not have. ListOffsets stops at 7 (8+ adds tiered-storage timestamps -4/-5).
# Produce starts at 3 and Fetch at 4: the first versions carrying RecordBatch v2 (magic 2).
# DeleteTopics stops at 5 (6 names topics by id).
_VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.PRODUCE: (3, 11),
    ApiKey.FETCH: (4, 12),
    ApiKey.LIST_OFFSETS: (1, 7),
    ApiKey.METADATA: (0, 12),
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.DELETE_TOPICS: (1, 5),
    ApiKey.DESCRIBE_CONFIGS: (1, 4),
    ApiKey.INIT_PRODUCER_ID: (0, 4),
    # AllowReplicationFactorChange (v1) is not honoured: a reassignment may change it.
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 0),
}
# Served by the connection itself (its SCRAM session), not by an adapter: SaslHandshake v1
# only (v0 would switch the stream to raw tokens), SaslAuthenticate 0-2.
CONNECTION_APIS = {int(ApiKey.SASL_HANDSHAKE): (1, 1), int(ApiKey.SASL_AUTHENTICATE): (0, 2)}


def build_table(groups: tuple[dict[int, Adapter], ...] = ADAPTER_GROUPS
                ) -> tuple[dict[int, Adapter], dict[int, tuple[int, int]]]:
    """(api key -> adapter, api key -> advertised (min, max)). An API without a range of
    its own here is advertised at every version the codec speaks."""
    table: dict[int, Adapter] = {}
    for group in groups:
        table.update({int(key): adapter for key, adapter in group.items()})
    advertised = {key: _VERSIONS.get(key, SUPPORTED[key]) for key in table}
    advertised[int(ApiKey.API_VERSIONS)] = _VERSIONS[ApiKey.API_VERSIONS]
    advertised.update(CONNECTION_APIS)
    return table, advertised


TABLE, ADVERTISED = build_table()


def api_versions_body(error_code: int = 0) -> dict:
    """The ApiVersions answer (also the v0 fallback for a version the broker lacks)."""
    return {"error_code": error_code, "throttle_time_ms": 0,
            "api_keys": [{"api_key": key, "min_version": low, "max_version": high}
                         for key, (low, high) in sorted(ADVERTISED.items())]}
