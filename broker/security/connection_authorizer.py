"""``ConnectionAuthorizer``: the authorizer as the gate sees it for one connection.

Why a module of its own: every typed service's gate (``request_gate.GatedData``,
``group_gate.GatedGroups``, ``partition_admin_gate.GatedPartitionAdmin``,
``topic_admin_gate.GatedTopicAdmin``) and the rules of the untyped APIs judge a request for
the address its connection comes from, read the same way; ``request_gate`` imports the
gates, so they cannot import it from there.
"""

from __future__ import annotations

from .acl import ANY_HOST, Authorizer


class ConnectionAuthorizer:
    """The authorizer as the rules see it for one connection: every check is made for the
    address the connection comes from (ACLs may name a host), read from its ``peer``."""

    __slots__ = ("authz", "connection")

    def __init__(self, authz: Authorizer, connection) -> None:
        self.authz = authz
        self.connection = connection

    def _host(self) -> str:
        if not self.authz.hosts_named:  # no ACL names a host: it cannot change an answer
            return ANY_HOST
        return self.connection.peer.rsplit(":", 1)[0]

    def authorize(self, principal: str, operation: str, resource_type: str, name: str) -> bool:
        return self.authz.authorize(principal, operation, resource_type, name, self._host())

    def authorize_any(self, principal: str, operation: str, resource_type: str) -> bool:
        return self.authz.authorize_any(principal, operation, resource_type, self._host())
