"""``TopicAdmin``: topic and config changes for both front doors, on typed requests.

Each method takes a typed request (``requests.py``) and returns one result per entry asked,
in the request's order. The changes themselves are made by the ``TopicChanges`` the broker
picked when it opened (``server/topic_service.py``: its own disk alone, etcd in a cluster);
this service never asks which one it is.

``denied``: what the request gate (``security/topic_admin_gate.py``) refused for this
principal, by topic name (by ``(type, name)`` for a config resource), each with its
``Refusal``. A denied entry is answered with its refusal and nothing else is done for it:
the changes see only the allowed rest, and not at all when nothing is left.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Awaitable, Callable, Mapping, Protocol

from tslog.protocol.errors import ErrorCode

from ..topics import TopicError, TopicManager
from .requests import (
    AlterConfigsRequest,
    BrokerConfigsChange,
    ConfigChange,
    ConfigsAltered,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
    DescribedConfigs,
    NewPartitions,
    NewTopic,
    Refusal,
    TopicResult,
)

NOTHING_DENIED: Mapping = MappingProxyType({})


class TopicChanges(Protocol):
    """How topics change on this broker (``server/topic_service.py``): each method takes the
    allowed entries and returns one result per entry, in their order."""

    async def create_topics(self, entries: list[NewTopic]) -> list[TopicResult]: ...

    async def create_partitions(self, entries: list[NewPartitions],
                                validate_only: bool) -> list[TopicResult]: ...

    async def delete_topics(self, names: list[str]) -> list[TopicResult]: ...

    async def alter_configs(self, resources: list[ConfigChange],
                            validate_only: bool) -> list[ConfigsAltered]: ...


class BrokerRates(Protocol):
    """The broker's run-time replication rates (``server/kafka/replication_rates.py``)."""

    def set(self, name: str, rate: int) -> None: ...

    def delete(self, name: str) -> None: ...


async def _merged(entries: list, key: Callable, denied: Mapping,
                  serve: Callable[[list], Awaitable[list]],
                  refused: Callable[[object, Refusal], object]) -> list:
    """``serve`` the allowed entries (one call, skipped when none is left) and answer the
    denied ones with ``refused``, every result in ``entries``' order."""
    kept = [entry for entry in entries if key(entry) not in denied] if denied else entries
    served = iter(await serve(kept) if kept else ())
    return [refused(entry, denied[key(entry)]) if key(entry) in denied else next(served)
            for entry in entries]


def _topic_refused(name: str, refusal: Refusal) -> TopicResult:
    return TopicResult(name, refusal.error_code, refusal.error_message)


class TopicAdmin:
    """CreateTopics, CreatePartitions, DeleteTopics and Describe/AlterConfigs on this broker,
    and the Kafka port's changes of its replication rates."""

    __slots__ = ("changes", "topics", "node_id", "rates")

    def __init__(self, changes: TopicChanges, topics: TopicManager, node_id: int,
                 rates: BrokerRates | None = None) -> None:
        self.changes = changes  # the single node's or the cluster's way to change topics
        self.topics = topics  # the catalog: configs as they are, for DescribeConfigs
        self.node_id = node_id  # a broker resource names this broker or none
        self.rates = rates

    async def create_topics(self, request: CreateTopicsRequest,
                            denied: Mapping = NOTHING_DENIED) -> list[TopicResult]:
        return await _merged(request.topics, _name_of, denied, self.changes.create_topics,
                             lambda entry, refusal: _topic_refused(entry.topic, refusal))

    async def create_partitions(self, request: CreatePartitionsRequest,
                                denied: Mapping = NOTHING_DENIED) -> list[TopicResult]:
        def serve(kept: list) -> Awaitable[list]:
            return self.changes.create_partitions(kept, request.validate_only)
        return await _merged(request.topics, _name_of, denied, serve,
                             lambda entry, refusal: _topic_refused(entry.topic, refusal))

    async def delete_topics(self, request: DeleteTopicsRequest,
                            denied: Mapping = NOTHING_DENIED) -> list[TopicResult]:
        return await _merged(request.topics, _itself, denied, self.changes.delete_topics,
                             _topic_refused)

    async def alter_configs(self, request: AlterConfigsRequest,
                            denied: Mapping = NOTHING_DENIED) -> list[ConfigsAltered]:
        def serve(kept: list) -> Awaitable[list]:
            return self.changes.alter_configs(kept, request.validate_only)
        return await _merged(request.resources, _resource_of, denied, serve,
                             lambda r, refusal: ConfigsAltered(r.type, r.name, *refusal))

    def describe_configs(self, request: DescribeConfigsRequest,
                         denied: Mapping = NOTHING_DENIED) -> list[DescribedConfigs]:
        """Each topic's effective configs with their sources, or this broker's defaults
        (a broker resource names this broker's id, or "" for whichever broker is asked)."""
        results = []
        for kind, name in request.resources:
            refusal = denied.get((kind, name)) if denied else None
            if refusal is not None:
                results.append(DescribedConfigs(kind, name, *refusal, []))
                continue
            try:
                results.append(DescribedConfigs(kind, name, 0, None, self._configs(kind, name)))
            except TopicError as exc:
                results.append(DescribedConfigs(kind, name, exc.error_code, exc.message, []))
        return results

    def _configs(self, kind: str, name: str) -> list:
        if kind != "broker":
            return self.topics.describe_topic_configs(name)
        if name not in ("", str(self.node_id)):
            raise TopicError(ErrorCode.INVALID_REQUEST,
                             f"this is broker {self.node_id}, not {name!r}")
        return self.topics.describe_broker_configs()

    def alter_broker_configs(self, request: BrokerConfigsChange,
                             denied: Refusal | None = None) -> ConfigsAltered:
        """Set or delete this broker's replication rates; a denial, or the adapter's
        ``refusal`` of an entry, changes nothing, and neither does ``validate_only``."""
        refusal = denied or request.refusal
        if refusal is not None:
            return ConfigsAltered("broker", request.name, *refusal)
        if not request.validate_only and self.rates is not None:
            for name, rate in request.changes:
                if rate is None:
                    self.rates.delete(name)
                else:
                    self.rates.set(name, rate)
        return ConfigsAltered("broker", request.name, 0, None)


def _name_of(entry) -> str:
    return entry.topic


def _itself(name: str) -> str:
    return name


def _resource_of(resource) -> tuple[str, str]:
    return (resource.type, resource.name)
