"""Where the group APIs are answered: the coordinator is the cluster's controller, so a
broker that is not the controller sends every group request there (NOT_COORDINATOR), and
FindCoordinator names the controller, or says none is known yet."""

from __future__ import annotations

import pytest

from tests.helpers.cluster_view import MemoryClusterView
from tests.helpers.handlers import call
from tslog.broker.cluster.view import NO_LEADER
from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

pytestmark = pytest.mark.timeout(30)


class ControlledElsewhere(MemoryClusterView):
    """A view in which ``controller`` (a broker id, or NO_LEADER) holds the controller key."""

    def __init__(self, node_id: int, controller: int) -> None:
        super().__init__(node_id, {node_id: ("127.0.0.1", 9000 + node_id),
                                   7: ("10.0.0.7", 9092)})
        self.controller = controller

    def controller_id(self) -> int:
        return self.controller


def find(broker, key="readers") -> dict:
    return call(broker, ApiKey.FIND_COORDINATOR, {"key_type": "group", "keys": [key]})


async def test_a_broker_that_is_not_the_controller_names_it_and_refuses_group_requests(
        make_broker):
    broker = make_broker(cluster=ControlledElsewhere(0, controller=7))
    assert (await find(broker))["coordinators"] == [
        {"key": "readers", "node_id": 7, "host": "10.0.0.7", "port": 9092, "error_code": 0}]
    beat = await call(broker, ApiKey.CONSUMER_GROUP_HEARTBEAT, {
        "group_id": "readers", "member_id": "", "member_epoch": 0,
        "subscribed_topics": ["t"], "owned": None})
    assert (beat["error_code"], beat["assignment"]) == (ErrorCode.NOT_COORDINATOR, None)
    committed = await call(broker, ApiKey.OFFSET_COMMIT, {"group_id": "readers", "topics": [
        {"topic": "t", "partitions": [{"partition": 0, "offset": 1, "metadata": ""},
                                      {"partition": 1, "offset": 1, "metadata": ""}]}]})
    assert [p["error_code"] for p in committed["topics"][0]["partitions"]] == [
        ErrorCode.NOT_COORDINATOR] * 2
    assert broker.offsets.fetch("readers") == {}


async def test_no_controller_means_no_coordinator_yet(make_broker):
    broker = make_broker(cluster=ControlledElsewhere(0, controller=NO_LEADER))
    (answer,) = (await find(broker))["coordinators"]
    assert (answer["error_code"], answer["node_id"]) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1)
    (bad,) = (await find(broker, ""))["coordinators"]
    assert bad["error_code"] == ErrorCode.INVALID_GROUP_ID


async def test_a_single_broker_coordinates_from_the_moment_it_opens(broker):
    (answer,) = (await find(broker))["coordinators"]
    assert (answer["error_code"], answer["node_id"]) == (0, broker.config.node_id)
    listed = await call(broker, ApiKey.LIST_GROUPS, {"states": None})
    assert listed == {"error_code": 0, "groups": []}
