"""``ConnectionAuthorizer``: the authorizer as the gate sees it for one connection.

Why a module of its own: every typed service's gate (``request_gate.GatedData``,
``group_gate.GatedGroups``, ``partition_admin_gate.GatedPartitionAdmin``,
``topic_admin_gate.GatedTopicAdmin``) and the rules of the untyped APIs judge a request for
the address its connection comes from, read the same way; ``request_gate`` imports the
gates, so they cannot import it from there.
"""

from __future__ import annotations

from ..metrics import security_metrics
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

    def denied_topics(self, operation: str, entries, api_key: int) -> frozenset:
        """The topics of ``entries`` (tuples whose first field is a topic) the connection's
        principal may not ``operation``; a request with any is counted once as denied.
        The typed services' wrappers hand these to their service, which answers them
        TOPIC_AUTHORIZATION_FAILED and does nothing else for them."""
        principal = self.connection.principal
        authorize = self.authorize
        denied = frozenset(topic for topic in {entry[0] for entry in entries}
                           if not authorize(principal, operation, "topic", topic))
        if denied:
            security_metrics.denied(principal, api_key)
        return denied
