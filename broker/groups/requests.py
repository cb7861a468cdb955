"""The group service's requests and results, the same whichever front door a request came in.

Why typed: each protocol's adapter translates its own body into these once, at its edge
(``server/group_handlers.py`` for tslog's frames, ``server/kafka/group_admin_apis.py`` and
``group_apis.py`` for Kafka's), the gate (``security/group_gate.py``) judges them, and the
service (``api.py``) never sees either wire format. Results come in the request's order, so an
adapter writes its answer by walking its own request beside them.

Not on a hot path (a group admin request names a few groups): plain ``NamedTuple`` types,
built with their constructors.
"""

from __future__ import annotations

from typing import NamedTuple

from .catalog import GroupSummary, GroupView

GROUP_KEY_TYPE = 0  # FindCoordinator's key type for a group (1 is a transactional id)


class FindCoordinatorRequest(NamedTuple):
    keys: list[str]
    key_type: int = GROUP_KEY_TYPE  # only groups have a coordinator here


class Coordinator(NamedTuple):
    """One key's coordinator: the controller's node id (-1: none elected), or an error."""

    error_code: int
    node_id: int


class Coordinators(NamedTuple):
    coordinators: list[Coordinator]  # in the request's order
    cluster: object  # the ``ClusterView``: each port answers its own listener's address of
    # the node, and COORDINATOR_NOT_AVAILABLE for a node it has none of


class ListGroupsRequest(NamedTuple):
    states: frozenset[str] | None  # tslog's spelling (``PREPARING_REBALANCE``); None: any
    kinds: frozenset[str] | None = None  # ``catalog.CONSUMER`` / ``catalog.CLASSIC``; None: any


class GroupsListed(NamedTuple):
    error_code: int  # the placement: NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, or 0
    groups: list[GroupSummary]  # sorted by id


class DescribeGroupsRequest(NamedTuple):
    groups: list[str]
    api_key: int  # which API asked (ConsumerGroupDescribe 69, Kafka's DescribeGroups 15):
    # a denial is counted under its name


class Described(NamedTuple):
    error_code: int  # a denial, the placement, GROUP_ID_NOT_FOUND, or 0
    view: GroupView | None  # None with an error


class DeleteGroupsRequest(NamedTuple):
    groups: list[str]
