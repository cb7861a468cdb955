"""``FromHost``: the authorizer as the gate's wrappers see it for one connection.

Why its own module: every typed gate (``request_gate.GatedData``,
``topic_admin_gate.GatedTopicAdmin``) judges its requests for the address the connection
comes from (ACLs may name a host), and none may import another module's private names.
"""

from __future__ import annotations

from .acl import ANY_HOST, Authorizer


class FromHost:
    """Every check made for the connection's ``peer`` host, read at each check (the
    connection is the one the gate was bound for)."""

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
