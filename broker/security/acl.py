"""ACLs and their evaluation, as Kafka's StandardAuthorizer decides (pure: no I/O).

A binding says: this principal (or ``User:*``, everyone), connecting from this host (an IP
address, or ``*``: any), is allowed or denied this operation on resources of one type (topic,
group, cluster) named literally (``*`` = every one of the type) or by prefix. A check asks:
may ``principal``, connected from ``host``, do ``operation`` on this one resource? A binding
naming a host applies only to connections from that address (Kafka's ACL host).

The rules, in order (Kafka's):
1. A super user (``super_users``) may do everything.
2. A matching deny wins: principal matches, resource matches, and the operation is the one
   asked or ``All``.
3. Else a matching allow grants it, where an allow of Read, Write, Delete or Alter also
   grants Describe, an allow of AlterConfigs also grants DescribeConfigs, and ``All``
   grants every operation.
4. Else, when no binding at all (any principal, any operation) names the resource, the
   answer is ``allow_everyone_if_no_acl_found``; otherwise denied.

Why an index: a check runs per request and topic, on the event loop; it must not scan every
ACL. Bindings are kept per resource type, literal ones by name and prefixed ones by prefix,
so a check reads the bindings of the name, of ``*`` and of each prefix of the name that
some binding uses: O(bindings of the resource + distinct prefix lengths). Answers are also
remembered until the ACLs change (a client asks about the same topics again and again).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Iterable, NamedTuple

from tslog.protocol.acl_schemas import OPERATIONS, PATTERN_TYPES, PERMISSIONS, RESOURCE_TYPES

from . import ANONYMOUS

WILDCARD_PRINCIPAL = "User:*"
WILDCARD_RESOURCE = "*"
ANY_HOST = "*"
CLUSTER_NAME = "kafka-cluster"  # the one cluster resource's name, as Kafka names it

_DECIDED_MAX = 100_000  # remembered answers; forgotten all at once beyond this

# operation asked -> the allowed operations that grant it (Kafka's implications).
_GRANTED_BY = {op: frozenset((op, "All")) for op in OPERATIONS}
_GRANTED_BY["Describe"] = frozenset(("Describe", "Read", "Write", "Delete", "Alter", "All"))
_GRANTED_BY["DescribeConfigs"] = frozenset(("DescribeConfigs", "AlterConfigs", "All"))

__all__ = ["ANONYMOUS", "OPERATIONS", "PATTERN_TYPES", "PERMISSIONS", "RESOURCE_TYPES", "AclBinding", "AclFilter", "Authorizer", "binding_problem",
           "parse_super_users"]


class AclBinding(NamedTuple):
    """One ACL. ``principal`` is Kafka's ``User:<name>`` or ``User:*``."""

    principal: str
    resource_type: str
    pattern_type: str
    resource_name: str
    operation: str
    permission: str
    host: str = ANY_HOST  # the client's IP address, or "*" (any)

    def applies_from(self, host: str) -> bool:
        return self.host == ANY_HOST or self.host == host

    def resource_matches(self, name: str) -> bool:
        if self.pattern_type == "prefixed":
            return name.startswith(self.resource_name)
        return self.resource_name in (name, WILDCARD_RESOURCE)


def binding_problem(binding: AclBinding) -> str | None:
    """Why ``binding`` cannot be stored, or None."""
    if not (binding.principal.startswith("User:") and len(binding.principal) > 5):
        return f"principal {binding.principal!r} is not of the form User:<name> or User:*"
    if binding.resource_type not in RESOURCE_TYPES:
        return f"resource type {binding.resource_type!r} is not one of {RESOURCE_TYPES}"
    if binding.pattern_type not in PATTERN_TYPES:
        return f"pattern type {binding.pattern_type!r} is not one of {PATTERN_TYPES}"
    if binding.operation not in OPERATIONS:
        return f"operation {binding.operation!r} is not one of {OPERATIONS}"
    if binding.permission not in PERMISSIONS:
        return f"permission {binding.permission!r} is not allow or deny"
    if not binding.resource_name:
        return "the resource name is empty"
    if binding.resource_type == "cluster" and binding.resource_name != CLUSTER_NAME:
        return f"the cluster resource is named {CLUSTER_NAME!r}"
    if binding.pattern_type == "prefixed" and binding.resource_name == WILDCARD_RESOURCE:
        return "a prefixed pattern cannot be '*' (use a literal '*' for every resource)"
    if binding.host != ANY_HOST and not _is_address(binding.host):
        return f"host {binding.host!r} is not an IP address or '*'"
    return None


def _is_address(host: str) -> bool:
    try:
        return str(ipaddress.ip_address(host)) == host  # canonical form: matches peers'
    except ValueError:
        return False


@dataclass(frozen=True)
class AclFilter:
    """Which bindings to list or delete: None in a field matches anything. ``pattern_type``
    may also be ``"match"``: every binding that applies to the resource named
    ``resource_name`` (its literal, ``*`` and its prefixes), as Kafka's MATCH filter."""

    principal: str | None = None
    resource_type: str | None = None
    pattern_type: str | None = None
    resource_name: str | None = None
    operation: str | None = None
    permission: str | None = None
    host: str | None = None

    def matches(self, binding: AclBinding) -> bool:
        if self.principal is not None and binding.principal != self.principal:
            return False
        if self.host is not None and binding.host != self.host:
            return False
        if self.resource_type is not None and binding.resource_type != self.resource_type:
            return False
        if self.operation is not None and binding.operation != self.operation:
            return False
        if self.permission is not None and binding.permission != self.permission:
            return False
        if self.pattern_type == "match":
            return self.resource_name is None or binding.resource_matches(self.resource_name)
        if self.pattern_type is not None and binding.pattern_type != self.pattern_type:
            return False
        return self.resource_name is None or binding.resource_name == self.resource_name


def parse_super_users(text: str) -> frozenset[str]:
    """Kafka's ``super.users``: semicolon-separated principals."""
    return frozenset(part.strip() for part in text.split(";") if part.strip())


class _TypeIndex:
    """The bindings of one resource type, by literal name and by prefix."""

    __slots__ = ("literal", "prefixed", "prefix_lengths")

    def __init__(self) -> None:
        self.literal: dict[str, list[AclBinding]] = {}
        self.prefixed: dict[str, list[AclBinding]] = {}
        self.prefix_lengths: tuple[int, ...] = ()

    def matching(self, name: str) -> list[AclBinding]:
        """Every binding whose resource pattern covers ``name``, whoever it names."""
        found = list(self.literal.get(name, ()))
        if name != WILDCARD_RESOURCE:
            found.extend(self.literal.get(WILDCARD_RESOURCE, ()))
        prefixed = self.prefixed
        for length in self.prefix_lengths:
            if length > len(name):
                break
            found.extend(prefixed.get(name[:length], ()))
        return found


class Authorizer:
    """Evaluates checks against an in-memory copy of the ACLs; ``replace`` swaps the copy
    (the store calls it on every change, on the event loop)."""

    def __init__(self, super_users: Iterable[str] = (), allow_if_no_acl: bool = False,
                 bindings: Iterable[AclBinding] = ()) -> None:
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        self.bindings: frozenset[AclBinding] = frozenset()
        self._index: dict[str, _TypeIndex] = {}
        self.replace(bindings)

    def replace(self, bindings: Iterable[AclBinding]) -> None:
        bindings = frozenset(bindings)
        index = {kind: _TypeIndex() for kind in RESOURCE_TYPES}
        for binding in bindings:
            entry = index[binding.resource_type]
            table = entry.prefixed if binding.pattern_type == "prefixed" else entry.literal
            table.setdefault(binding.resource_name, []).append(binding)
        for entry in index.values():
            entry.prefix_lengths = tuple(sorted({len(p) for p in entry.prefixed}))
        self.bindings, self._index = bindings, index
        # Whether any binding names a host: if none does, the host never changes an answer,
        # and answers are remembered without it (fewer entries: one per principal, not per
        # connection address).
        self.hosts_named = any(b.host != ANY_HOST for b in bindings)
        self._decided: dict[tuple[str, str, str, str, str], bool] = {}

    def authorize(self, principal: str, operation: str, resource_type: str,
                  name: str, host: str = ANY_HOST) -> bool:
        """May ``principal`` do ``operation`` on the resource? (The rules in the docstring.)
        Answers are remembered until the ACLs change: a client asks about the same few
        topics request after request, and a remembered answer is one dict lookup."""
        if not self.hosts_named:
            host = ANY_HOST
        key = (principal, operation, resource_type, name, host)
        decided = self._decided.get(key)
        if decided is None:
            decided = self._decide(principal, operation, resource_type, name, host)
            if len(self._decided) >= _DECIDED_MAX:
                self._decided.clear()
            self._decided[key] = decided
        return decided

    def _decide(self, principal: str, operation: str, resource_type: str, name: str,
                host: str) -> bool:
        if principal in self.super_users:
            return True
        matching = self._index[resource_type].matching(name)
        if not matching:
            return self.allow_if_no_acl
        granted_by = _GRANTED_BY[operation]
        allowed = False
        for binding in matching:
            if binding.principal != principal and binding.principal != WILDCARD_PRINCIPAL:
                continue
            if not binding.applies_from(host):
                continue
            if binding.permission == "deny":
                if binding.operation == operation or binding.operation == "All":
                    return False
            elif binding.operation in granted_by:
                allowed = True
        return allowed

    def authorize_any(self, principal: str, operation: str, resource_type: str,
                      host: str = ANY_HOST) -> bool:
        """May ``principal`` do ``operation`` on at least one resource of the type? (Kafka's
        ``authorizeByResourceType``, for InitProducerId's "Write on any topic".) True when an
        allow binding exists that no deny binding of the principal covers entirely."""
        if principal in self.super_users:
            return True
        entry = self._index[resource_type]
        every = [b for table in (entry.literal, entry.prefixed) for bs in table.values()
                 for b in bs if b.principal in (principal, WILDCARD_PRINCIPAL)
                 and b.applies_from(host)]
        if not entry.literal and not entry.prefixed:
            return self.allow_if_no_acl
        granted_by = _GRANTED_BY[operation]
        denies = [b for b in every if b.permission == "deny"
                  and b.operation in (operation, "All")]
        for allow in every:
            if allow.permission != "allow" or allow.operation not in granted_by:
                continue
            if not any(_covers(deny, allow) for deny in denies):
                return True
        return False


def _covers(deny: AclBinding, allow: AclBinding) -> bool:
    """Does ``deny`` apply to every resource ``allow`` names?"""
    if deny.pattern_type == "literal":
        if deny.resource_name == WILDCARD_RESOURCE:
            return True
        return allow.pattern_type == "literal" and allow.resource_name == deny.resource_name
    return allow.resource_name.startswith(deny.resource_name) and (
        allow.resource_name != WILDCARD_RESOURCE or allow.pattern_type == "prefixed")
