"""Handlers of AlterPartitionReassignments (45), ListPartitionReassignments (46) and
ElectLeaders (43): the request body's topics in, the response body out, through
``ReassignmentService``."""

from __future__ import annotations

from .services import AdminApis


async def handle_alter_partition_reassignments(services: AdminApis, body: dict) -> dict:
    known = set(services.topics.topics)
    return {"topics": await services.reassignments.alter(body["topics"], known)}


def handle_list_partition_reassignments(services: AdminApis, body: dict) -> dict:
    return {"topics": services.reassignments.listed(body["topics"])}


async def handle_elect_leaders(services: AdminApis, body: dict) -> dict:
    known = set(services.topics.topics)
    return {"topics": await services.reassignments.elect(body["topics"], known)}
