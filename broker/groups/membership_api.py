"""Group membership on the group service (``api.GroupApi``): tslog's ConsumerGroupHeartbeat
(KIP-848) and Kafka's classic JoinGroup, SyncGroup, Heartbeat and LeaveGroup.

Module functions bound into ``GroupApi``, as ``offsets_api``'s are. Each port's adapter
translates its body into the typed request once (tslog's ``server/group_handlers.py``,
Kafka's ``server/kafka/group_apis.py``); the request gate's ``GatedGroups`` judges it first
(Read on the group, and for a heartbeat Describe on each subscribed topic), so a request
reaching these functions is allowed. Here: an invalid group id answers INVALID_GROUP_ID, a
broker that does not coordinate the groups now NOT_COORDINATOR (or
COORDINATOR_NOT_AVAILABLE while it loads), and the coordinators decide the rest
(``service.GroupService``, ``classic_service.ClassicGroupService``).
"""

from __future__ import annotations

from tslog.protocol.errors import ErrorCode

from .classic_views import JoinResponse, SyncResponse
from .offset_files import group_id_problem
from .requests import (
    ConsumerGroupHeartbeatRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    Left,
    SyncGroupRequest,
)
from .views import HeartbeatResponse


def _group_problem(api, group_id: str) -> ErrorCode:
    if group_id_problem(group_id) is not None:
        return ErrorCode.INVALID_GROUP_ID
    return api.placement()


async def consumer_group_heartbeat(api, request: ConsumerGroupHeartbeatRequest
                                   ) -> HeartbeatResponse:
    code = _group_problem(api, request.group_id)
    if code:
        return HeartbeatResponse(code, request.member_id, request.member_epoch, 0, None)
    return await api.groups.heartbeat(request.group_id, request.member_id,
                                      request.member_epoch, request.subscribed_topics,
                                      request.owned, request.client)


async def join_group(api, request: JoinGroupRequest) -> JoinResponse:
    code = _group_problem(api, request.group_id)
    if code:
        return JoinResponse(code, request.member_id)
    return await api.classic.join(
        request.group_id, request.member_id, request.client_id, request.session_timeout_ms,
        request.rebalance_timeout_ms, request.protocol_type, request.protocols,
        request.require_known_member_id, request.group_instance_id, request.client_host)


async def sync_group(api, request: SyncGroupRequest) -> SyncResponse:
    code = _group_problem(api, request.group_id)
    if code:
        return SyncResponse(code)
    return await api.classic.sync(request.group_id, request.generation_id, request.member_id,
                                  request.protocol_type, request.protocol_name,
                                  request.assignments)


def heartbeat(api, request: HeartbeatRequest) -> int:
    code = _group_problem(api, request.group_id)
    if code:
        return int(code)
    return int(api.classic.heartbeat(request.group_id, request.generation_id,
                                     request.member_id))


def leave_group(api, request: LeaveGroupRequest) -> Left:
    code = _group_problem(api, request.group_id)
    if code:
        return Left(int(code), [])
    return Left(0, [int(each) for each in api.classic.leave(request.group_id,
                                                            request.member_ids)])
