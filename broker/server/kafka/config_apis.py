"""Kafka's IncrementalAlterConfigs (44): what ``kafka-reassign-partitions --execute
--throttle`` sets and ``--verify`` clears, and ``kafka-configs --alter`` of topic configs.

Both kinds go to the topic admin service (``broker/admin``), gated as tslog's own
AlterConfigs is (``security/topic_admin_gate.py``: AlterConfigs on the topic, or on the
cluster for a broker; a denial is counted as an alter_configs one).

Topics: SET and DELETE of tslog's topic configs go to the service's AlterConfigs, one
resource at a time. Kafka's topic-level ``leader.replication.throttled.replicas`` and
``follower.replication.throttled.replicas`` name which replicas a throttle covers; tslog
throttles exactly the replicas a reassignment is adding, by itself, so these are checked
(Kafka's ``*`` or ``partition:broker`` list) and accepted without being stored. The topic
still goes through the service (as a validate-only change of nothing), so a denied
principal or an unknown topic gets the same typed error and nothing changes. APPEND and
SUBTRACT (list-typed configs) are refused with INVALID_CONFIG: tslog has none.

Brokers: the receiving broker's own id only (Kafka's admin client sends a broker's configs
to that broker), Alter Configs on the cluster, and only the two replication rates
(``replication_rates.py``); deleting Kafka's ``replica.alter.log.dirs.io.max.bytes.per.second``
(which ``--verify`` clears with them) is accepted, as there is nothing to clear, and setting
it is refused: a tslog broker has one log directory. Any other broker setting is in the
broker's config file and answered INVALID_CONFIG. Everything in a resource is checked
before anything of it changes, and ``validate_only`` changes nothing.
"""

from __future__ import annotations

import re

from tslog.protocol.errors import ErrorCode

from ...admin.requests import AlterConfigsRequest, BrokerConfigsChange, ConfigChange, Refusal
from .replication_rates import RATES
from .request_info import KafkaRequestInfo
from .services import KafkaServices

_TOPIC, _BROKER = 2, 4
_SET, _DELETE = 0, 1
THROTTLED_REPLICAS = ("leader.replication.throttled.replicas",
                      "follower.replication.throttled.replicas")
_REPLICA_LIST = re.compile(r"\*|\d+:\d+(,\d+:\d+)*|")
_MAX_RATE = 2**63 - 1
# Kafka's throttle of replica moves between one broker's log directories: --verify and
# --cancel delete it with the two rates.
LOG_DIRS_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"


class _Refused(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = int(code)


def _result(resource: dict, code: int = 0, message: str | None = None) -> dict:
    return {"error_code": code, "error_message": message,
            "resource_type": resource["resource_type"],
            "resource_name": resource["resource_name"]}


async def incremental_alter_configs(services: KafkaServices, body: dict, version: int,
                                    info: KafkaRequestInfo) -> dict:
    validate_only = bool(body["validate_only"])
    results = []
    for resource in body["resources"]:
        try:
            _no_duplicates(resource["configs"])
            if resource["resource_type"] == _TOPIC:
                results.append(await _alter_topic(services, resource, validate_only))
            elif resource["resource_type"] == _BROKER:
                results.append(_alter_broker(services, resource, validate_only))
            else:
                raise _Refused(ErrorCode.INVALID_REQUEST,
                               "tslog alters the configs of topics and brokers only")
        except _Refused as exc:
            results.append(_result(resource, exc.code, str(exc)))
    return {"throttle_time_ms": 0, "responses": results}


def _no_duplicates(configs: list[dict]) -> None:
    names = [c["name"] for c in configs]
    if len(set(names)) != len(names):
        raise _Refused(ErrorCode.INVALID_REQUEST, "a config is named twice in one resource")


def _operation(entry: dict) -> int:
    operation = entry["config_operation"]
    if operation not in (_SET, _DELETE):
        raise _Refused(ErrorCode.INVALID_CONFIG, f"{entry['name']}: tslog's configs take "
                       f"SET (0) and DELETE (1), not operation {operation}")
    if operation == _SET and entry["value"] is None:
        raise _Refused(ErrorCode.INVALID_REQUEST, f"{entry['name']}: SET needs a value")
    return operation


# ----------------------------------------------------------------------------- topics


async def _alter_topic(services: KafkaServices, resource: dict, validate_only: bool) -> dict:
    changes: dict[str, str | None] = {}
    for entry in resource["configs"]:
        operation = _operation(entry)
        if entry["name"] in THROTTLED_REPLICAS:
            _check_replica_list(entry, operation)
        else:
            changes[entry["name"]] = entry["value"] if operation == _SET else None
    altered = await services.topic_admin.alter_configs(AlterConfigsRequest(
        [ConfigChange("topic", resource["resource_name"], changes)],
        validate_only or not changes))
    return _result(resource, altered[0].error_code, altered[0].error_message)


def _check_replica_list(entry: dict, operation: int) -> None:
    if operation == _SET and not _REPLICA_LIST.fullmatch(entry["value"].replace(" ", "")):
        raise _Refused(ErrorCode.INVALID_CONFIG,
                       f"{entry['name']}: expected '*' or partition:broker pairs separated "
                       f"by commas, not {entry['value']!r}")


# ---------------------------------------------------------------------------- brokers


def _alter_broker(services: KafkaServices, resource: dict, validate_only: bool) -> dict:
    """The entries as typed changes (name, rate; None deletes), given to the typed service,
    which applies them all unless ``validate_only``. An entry's problem travels as the
    request's ``refusal``, answered only once the gate allowed the change (as Kafka judges
    the principal before the entries); nothing of a refused resource changes."""
    node = str(services.config.node_id)
    if resource["resource_name"] != node:
        raise _Refused(ErrorCode.INVALID_REQUEST,
                       f"this is broker {node}: send broker {resource['resource_name']!r}'s "
                       f"configs to that broker (an empty name, the cluster-wide default, "
                       f"is not served)")
    changes, refusal = [], None
    try:
        for entry in resource["configs"]:
            _operation(entry)
            rate = _rate(entry)
            if entry["name"] != LOG_DIRS_RATE:  # nothing to clear
                changes.append((entry["name"], rate))
    except _Refused as exc:
        changes, refusal = [], Refusal(exc.code, str(exc))
    altered = services.topic_admin.alter_broker_configs(BrokerConfigsChange(
        resource["resource_name"], changes, refusal, validate_only))
    return _result(resource, altered.error_code, altered.error_message)


def _rate(entry: dict) -> int | None:
    name, value = entry["name"], entry["value"]
    if name == LOG_DIRS_RATE:
        if entry["config_operation"] == _DELETE:
            return None  # nothing to clear
        raise _Refused(ErrorCode.INVALID_CONFIG,
                       f"{name}: a tslog broker has one log directory, so no replica moves "
                       f"between directories to throttle")
    if name not in RATES:
        raise _Refused(ErrorCode.INVALID_CONFIG,
                       f"{name}: tslog changes only {' and '.join(RATES)} at run time; "
                       f"other broker settings are in its config file")
    if entry["config_operation"] != _SET:
        return None
    try:
        rate = int(value)
    except ValueError:
        rate = -1
    if not 0 <= rate <= _MAX_RATE:
        raise _Refused(ErrorCode.INVALID_CONFIG,
                       f"{name}: a rate in bytes/s (0 = no limit), not {value!r}")
    return rate


CONFIG_ADAPTERS = {44: incremental_alter_configs}  # IncrementalAlterConfigs
