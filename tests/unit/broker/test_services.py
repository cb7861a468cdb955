"""The broker's services are built once, at open, and each handler group finds what it names.

Handlers are typed by the narrow protocols of ``server/services.py``; these checks keep the
broker (the composition that opens and wires everything) providing every attribute they
name, and the single-node choices made where the broker opens, not in the handlers.
"""

from __future__ import annotations

import typing

import pytest

from tslog.broker.cluster.view import LocalClusterView
from tslog.broker.server import services
from tslog.broker.server.topic_service import LocalTopicService


@pytest.mark.parametrize("protocol", [services.DataPath, services.ReplicationApis,
                                      services.AdminApis, services.GroupApis])
def test_the_broker_provides_every_service_a_handler_group_names(broker, protocol):
    names = typing.get_type_hints(protocol)
    assert names
    assert [name for name in names if not hasattr(broker, name)] == []


def test_a_single_node_picks_its_local_services_once_at_open(broker):
    assert isinstance(broker.topic_service, LocalTopicService)
    assert isinstance(broker.cluster, LocalClusterView)
    assert broker.replicas.view is broker.cluster
    assert not hasattr(broker.replicas, "broker")  # replication is never handed the server


def test_the_bound_port_is_advertised_by_the_single_node_view(broker):
    broker.set_bound_port(45678)
    assert broker.cluster.brokers() == {broker.config.node_id: (broker.advertised_host, 45678)}
