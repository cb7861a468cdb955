"""The topic admin service's requests and results, the same whichever front door a request
came in.

Why typed: each protocol's adapter translates its own body into these once, at its edge
(``server/handlers.py`` for tslog's frames, ``server/kafka/admin_apis.py`` and
``config_apis.py`` for Kafka's), and the service never sees either wire format. A result list
is in the request's order, one entry per entry asked (a name asked twice is answered twice),
so an adapter writes its answer by walking its own body beside the results.

These are not on a hot path (a topic change writes and fsyncs records): each is a
``NamedTuple`` built by its constructor and read by name.
"""

from __future__ import annotations

from typing import NamedTuple

from ..topics import ConfigEntry

__all__ = ["AlterConfigsRequest", "BrokerConfigsChange", "ConfigChange", "ConfigEntry",
           "ConfigResource", "ConfigsAltered", "CreatePartitionsRequest",
           "CreateTopicsRequest", "DeleteTopicsRequest", "DescribeConfigsRequest",
           "DescribedConfigs", "Refusal", "NewPartitions", "NewTopic", "TopicResult"]


class Refusal(NamedTuple):
    """Why an entry is refused: the typed code and a message (the gate's names the
    principal)."""

    error_code: int
    error_message: str


class TopicResult(NamedTuple):
    """One topic's answer to CreateTopics, CreatePartitions or DeleteTopics."""

    topic: str
    error_code: int
    error_message: str | None


# --------------------------------------------------------------------------- create/delete


class NewTopic(NamedTuple):
    topic: str
    partitions: int  # -1: the broker's num_partitions
    replication_factor: int  # -1: the broker's default
    configs: dict[str, str]


class CreateTopicsRequest(NamedTuple):
    topics: list[NewTopic]
    timeout_ms: int


class NewPartitions(NamedTuple):
    topic: str
    count: int  # the topic's new partition count


class CreatePartitionsRequest(NamedTuple):
    topics: list[NewPartitions]
    validate_only: bool


class DeleteTopicsRequest(NamedTuple):
    topics: list[str]
    timeout_ms: int


# -------------------------------------------------------------------------------- configs


class ConfigResource(NamedTuple):
    type: str  # "topic" or "broker"
    name: str  # a topic's name, or a broker's id ("" for the broker asked)


class DescribeConfigsRequest(NamedTuple):
    resources: list[ConfigResource]


class DescribedConfigs(NamedTuple):
    type: str
    name: str
    error_code: int
    error_message: str | None
    configs: list[ConfigEntry]  # empty with an error


class ConfigChange(NamedTuple):
    type: str  # "topic": tslog's AlterConfigs changes topics only
    name: str
    configs: dict[str, str | None]  # None: back to the broker's default


class AlterConfigsRequest(NamedTuple):
    resources: list[ConfigChange]
    validate_only: bool


class ConfigsAltered(NamedTuple):
    type: str
    name: str
    error_code: int
    error_message: str | None


class BrokerConfigsChange(NamedTuple):
    """The Kafka port's IncrementalAlterConfigs of this broker's replication rates.

    ``changes`` are (name, rate in bytes/s), a rate of None deleting the name's run-time
    value. ``refusal``: what the adapter found wrong in the entries (an unknown config, a bad
    rate), answered only once the gate allowed the change, so a denied principal learns
    nothing from it and a bad entry changes nothing."""

    name: str  # the broker's id, as asked
    changes: list[tuple[str, int | None]]
    refusal: Refusal | None
    validate_only: bool
