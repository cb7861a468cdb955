"""DescribeAcls, CreateAcls and DeleteAcls: the same on a single node and in a cluster,
where the service's store is the data directory's file or etcd (``security.acl_store``,
``security.etcd_acls``). Who may call them is the request gate's business, not theirs.

The wire spells a binding's permission ``permission_type`` and a filter's wildcard
``"any"`` (null for a name or principal), as Kafka's fields; the model (``security.acl``)
uses None. Results are grouped by resource, as Kafka's DescribeAcls answer is.
"""

from __future__ import annotations

from tslog.protocol.errors import ErrorCode

from ..security.acl import ANY_HOST, AclBinding, AclFilter
from .services import AclApis


def _binding(entry: dict) -> AclBinding:
    return AclBinding(entry["principal"], entry["resource_type"], entry["pattern_type"],
                      entry["resource_name"], entry["operation"], entry["permission_type"],
                      entry.get("host", ANY_HOST))


def _filter(entry: dict) -> AclFilter:
    def field(name: str):
        value = entry[name]
        return None if value == "any" else value
    return AclFilter(principal=entry["principal"], resource_type=field("resource_type"),
                     pattern_type=field("pattern_type"), resource_name=entry["resource_name"],
                     operation=field("operation"), permission=field("permission_type"),
                     host=entry.get("host"))


def binding_entry(binding: AclBinding) -> dict:
    return {"resource_type": binding.resource_type, "resource_name": binding.resource_name,
            "pattern_type": binding.pattern_type, "principal": binding.principal,
            "operation": binding.operation, "permission_type": binding.permission,
            "host": binding.host}


def handle_describe_acls(services: AclApis, body: dict) -> dict:
    resources: dict[tuple[str, str, str], list] = {}
    for b in services.acls.describe(_filter(body)):
        resources.setdefault((b.resource_type, b.resource_name, b.pattern_type), []).append(
            {"principal": b.principal, "operation": b.operation,
             "permission_type": b.permission, "host": b.host})
    return {"error_code": 0, "error_message": None, "resources": [
        {"resource_type": kind, "resource_name": name, "pattern_type": pattern, "acls": acls}
        for (kind, name, pattern), acls in sorted(resources.items())]}


async def handle_create_acls(services: AclApis, body: dict) -> dict:
    results = await services.acls.create([_binding(e) for e in body["creations"]])
    return {"results": [{"error_code": code, "error_message": message}
                        for code, message in results]}


async def handle_delete_acls(services: AclApis, body: dict) -> dict:
    filters = [_filter(entry) for entry in body["filters"]]
    try:
        matched = await services.acls.delete(filters)
    except OSError:
        return {"filter_results": [
            {"error_code": int(ErrorCode.KAFKA_STORAGE_ERROR),
             "error_message": "the ACLs could not be deleted", "matching_acls": []}
            for _ in filters]}
    return {"filter_results": [
        {"error_code": 0, "error_message": None,
         "matching_acls": [binding_entry(b) for b in found]} for found in matched]}
