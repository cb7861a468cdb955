"""The broker's services are built once, at open, and each handler group gets only its own.

Handlers are typed by the narrow protocols of ``server/services.py``; these checks keep each
concrete holder the broker builds carrying exactly what its protocol names, every ApiKey
bound to the holder of its group (never the broker), and the single-node choices made where
the broker opens, not in the handlers.
"""

from __future__ import annotations

import dataclasses
import typing

import pytest

from tslog.broker.cluster.view import LocalClusterView
from tslog.broker.server import dispatch, services
from tslog.broker.server.state import Broker
from tslog.broker.server.topic_service import LocalTopicService
from tslog.protocol.messages import ApiKey

GROUPS = [
    (services.DataPath, services.DataPathServices, {}),  # the data service's, not a handler's
    (services.AdminApis, services.AdminServices, dispatch.ADMIN_HANDLERS),
    (services.SecurityApis, services.SecurityServices, dispatch.SECURITY_HANDLERS),
]


@pytest.mark.parametrize("protocol, holder, _handlers", GROUPS)
def test_each_holder_carries_exactly_what_its_protocol_names(protocol, holder, _handlers):
    named = typing.get_type_hints(protocol)
    assert named
    assert [field.name for field in dataclasses.fields(holder)] == list(named)


@pytest.mark.parametrize("protocol, holder, handlers", GROUPS)
def test_every_handler_is_bound_to_its_groups_services(broker, protocol, holder, handlers):
    for api_key, handler in handlers.items():
        bound = broker.dispatch[api_key]
        assert bound.__func__ is handler
        assert type(bound.__self__) is holder
        for name in typing.get_type_hints(protocol):  # the broker's own, shared services
            if name != "lifecycle":
                assert getattr(bound.__self__, name) is getattr(broker, name)


@pytest.mark.parametrize("handlers, service", [
    (dispatch.DATA_SERVICE_HANDLERS, "data"),
    (dispatch.PARTITION_ADMIN_HANDLERS, "partition_admin")])
def test_typed_service_handlers_are_bound_to_the_brokers_service(broker, handlers, service):
    """The typed services' handlers are bound to the one service both ports call (the
    request gate rebinds them to the connection's wrapper of it)."""
    for api_key, handler in handlers.items():
        bound = broker.dispatch[api_key]
        assert bound.__func__ is handler
        assert bound.__self__ is getattr(broker, service)


def test_every_api_key_is_dispatched_and_none_gets_the_broker(broker):
    # SaslHandshake and SaslAuthenticate belong to the connection (security/sasl_session.py)
    assert set(broker.dispatch) == set(ApiKey) - {ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE}
    assert not any(isinstance(bound.__self__, Broker) for bound in broker.dispatch.values())


def test_the_shutdown_flag_reaches_the_data_path_through_the_shared_lifecycle(broker):
    data_path = broker.dispatch[ApiKey.FETCH].__self__.path  # the data service's
    assert data_path.lifecycle is broker.lifecycle
    assert broker.scrape_sources.lifecycle is broker.lifecycle
    broker.lifecycle.stopping = True
    assert data_path.lifecycle.stopping


def test_the_metrics_read_the_broker_s_services_not_the_broker(broker):
    sources = broker.scrape_sources
    assert (sources.topics, sources.replicas, sources.cluster, sources.groups) == (
        broker.topics, broker.replicas, broker.cluster, broker.offsets)
    assert sources.data_dir == broker.config.data_dir


def test_a_single_node_picks_its_local_services_once_at_open(broker):
    assert isinstance(broker.topic_service, LocalTopicService)
    assert isinstance(broker.cluster, LocalClusterView)
    assert broker.replicas.view is broker.cluster
    assert not hasattr(broker.replicas, "broker")  # replication is never handed the server


def test_the_bound_port_is_advertised_by_the_single_node_view(broker):
    broker.set_bound_port(45678)
    assert broker.cluster.brokers() == {broker.config.node_id: (broker.advertised_host, 45678)}


def test_the_group_apis_are_bound_to_the_one_group_service(broker):
    """The group service the Kafka port's adapters call too (``broker/groups/api.py``)."""
    for api_key, handler in dispatch.GROUP_SERVICE_HANDLERS.items():
        assert broker.dispatch[api_key].__func__ is handler
        assert broker.dispatch[api_key].__self__ is broker.group_api


@pytest.mark.parametrize("handlers, service", [
    (dispatch.DATA_SERVICE_HANDLERS, "data"), (dispatch.TOPIC_ADMIN_HANDLERS, "topic_admin")])
def test_typed_services_handlers_are_bound_to_the_broker_s_service(broker, handlers, service):
    """The data and topic admin APIs are bound to the one service both ports call (which the
    request gate rebinds per connection to its wrapper of that service)."""
    for api_key, handler in handlers.items():
        bound = broker.dispatch[api_key]
        assert bound.__func__ is handler
        assert bound.__self__ is getattr(broker, service)


def test_the_topic_admin_service_changes_topics_through_the_topic_service(broker):
    assert broker.topic_admin.changes is broker.topic_service
    assert broker.topic_admin.topics is broker.topics
    assert broker.topic_admin.rates is broker.rates
