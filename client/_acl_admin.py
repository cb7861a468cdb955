"""ACLs for operators: create, describe, delete (Kafka's Admin ``createAcls``,
``describeAcls``, ``deleteAcls``).

Why a module of its own: ``AsyncAdmin`` delegates here as it does to ``GroupAdmin``, so topic
administration stays small. Any broker answers (in a cluster the ACLs live in etcd and every
broker follows them); the caller needs Alter on the cluster to change ACLs and Describe on it
to list them, else ``ClusterAuthorizationFailedError``.
"""

from __future__ import annotations

from tslog.protocol.messages import ApiKey

from ._cluster import Cluster
from ._types import AclBinding, AclBindingFilter
from .errors import error_for


def _binding_entry(binding: AclBinding) -> dict:
    return {"resource_type": binding.resource_type, "resource_name": binding.resource_name,
            "pattern_type": binding.pattern_type, "principal": binding.principal,
            "operation": binding.operation, "permission_type": binding.permission,
            "host": binding.host}


def _filter_entry(acl_filter: AclBindingFilter) -> dict:
    def word(value):
        return "any" if value is None else value
    return {"resource_type": word(acl_filter.resource_type),
            "resource_name": acl_filter.resource_name,
            "pattern_type": word(acl_filter.pattern_type),
            "principal": acl_filter.principal, "operation": word(acl_filter.operation),
            "permission_type": word(acl_filter.permission), "host": acl_filter.host}


def _binding(entry: dict) -> AclBinding:
    return AclBinding(entry["principal"], entry["resource_type"], entry["resource_name"],
                      entry["operation"], entry["permission_type"], entry["pattern_type"],
                      entry.get("host", "*"))


class AclAdmin:
    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster

    async def create(self, bindings: list[AclBinding]) -> None:
        """Store every valid binding; raise the first refusal (e.g. InvalidRequestError with
        the reason) after the others were stored."""
        body = await self._cluster.request(None, ApiKey.CREATE_ACLS, {
            "creations": [_binding_entry(b) for b in bindings]})
        for result in body["results"]:
            if result["error_code"]:
                raise error_for(result["error_code"])(result["error_message"])

    async def describe(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        body = await self._cluster.request(None, ApiKey.DESCRIBE_ACLS, _filter_entry(acl_filter))
        return [AclBinding(acl["principal"], resource["resource_type"],
                           resource["resource_name"], acl["operation"],
                           acl["permission_type"], resource["pattern_type"],
                           acl.get("host", "*"))
                for resource in body["resources"] for acl in resource["acls"]]

    async def delete(self, filters: list[AclBindingFilter]) -> list[AclBinding]:
        """Delete what the filters match; return the deleted bindings."""
        body = await self._cluster.request(None, ApiKey.DELETE_ACLS, {
            "filters": [_filter_entry(f) for f in filters]})
        deleted = []
        for result in body["filter_results"]:
            if result["error_code"]:
                raise error_for(result["error_code"])(result["error_message"])
            deleted.extend(_binding(entry) for entry in result["matching_acls"])
        return sorted(set(deleted))
