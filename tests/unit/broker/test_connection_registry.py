"""ConnectionRegistry's limits: no sequence of opens, closes, principal changes and
authentications leaks a count, lets a limit be passed, or refuses a connection a limit allows.

Method: a hypothesis state machine drives the registry with stand-in connections (the
registry needs only their peer, principal, authenticated flag and ``refuse``) and keeps its
own model; every step compares the registry's counters with counts made from scratch.
"""

from __future__ import annotations

import collections

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from tslog.broker.security import ANONYMOUS
from tslog.broker.server.connection_registry import ConnectionRegistry

ADDRESSES = ("10.0.0.1", "10.0.0.2", "::1")
PRINCIPALS = (ANONYMOUS, "User:alice", "User:bob", "User:CN=broker0,O=acme")


class StandIn:
    """What the registry reads of a connection, and the refusal it hands back."""

    def __init__(self, address: str, port: int, authenticated: bool, principal: str) -> None:
        self.peer = f"{address}:{port}"
        self.address = address
        self.authenticated = authenticated
        self.principal = principal
        self.refusals = []

    def refuse(self, refusal) -> None:
        self.refusals.append(refusal)


class RegistryMachine(RuleBasedStateMachine):
    @initialize(total=st.integers(1, 6), per_address=st.integers(0, 3),
                per_principal=st.integers(0, 3), unauthenticated=st.integers(0, 3))
    def start(self, total, per_address, per_principal, unauthenticated):
        self.registry = ConnectionRegistry(total, max_per_address=per_address,
                                           max_per_principal=per_principal,
                                           max_unauthenticated=unauthenticated)
        self.caps = (total, per_address, per_principal, unauthenticated)
        self.admitted: list[StandIn] = []
        self.port = 0

    def _counts(self):
        addresses = collections.Counter(c.address for c in self.admitted)
        principals = collections.Counter(c.principal for c in self.admitted
                                         if c.principal != ANONYMOUS)
        unauthenticated = sum(not c.authenticated for c in self.admitted)
        return addresses, principals, unauthenticated

    @rule(address=st.sampled_from(ADDRESSES), authenticated=st.booleans(),
          principal=st.sampled_from(PRINCIPALS))
    def open(self, address, authenticated, principal):
        self.port += 1
        connection = StandIn(address, self.port, authenticated, principal)
        total, per_address, per_principal, unauthenticated = self.caps
        addresses, principals, unauth = self._counts()
        expected = None
        if len(self.admitted) >= total:
            expected = "max_connections"
        elif per_address and addresses[address] >= per_address:
            expected = "max_connections_per_address"
        elif not authenticated and unauthenticated and unauth >= unauthenticated:
            expected = "max_unauthenticated_connections"
        elif principal != ANONYMOUS and per_principal and principals[principal] >= per_principal:
            expected = "max_connections_per_principal"
        refusal = self.registry.admit(connection)
        assert (refusal and refusal.limit) == (expected and expected)
        if refusal is None:
            self.admitted.append(connection)
        else:
            assert refusal.limit in refusal.message and str(refusal.cap) in refusal.message
            self.registry.release(connection)  # closing a refused one takes nothing back

    @precondition(lambda self: self.admitted)
    @rule(index=st.integers(0, 100))
    def close(self, index):
        connection = self.admitted.pop(index % len(self.admitted))
        self.registry.release(connection)
        self.registry.release(connection)  # twice (connection_lost after abort): no effect

    @precondition(lambda self: self.admitted)
    @rule(index=st.integers(0, 100), principal=st.sampled_from(PRINCIPALS))
    def set_principal(self, index, principal):
        connection = self.admitted[index % len(self.admitted)]
        _, principals, _ = self._counts()
        per_principal = self.caps[2]
        allowed = (principal == connection.principal or principal == ANONYMOUS
                   or not per_principal or principals[principal] < per_principal)
        before = connection.principal
        assert self.registry.principal_set(connection, principal) == allowed
        assert connection.principal == (principal if allowed else before)
        assert len(connection.refusals) == (0 if allowed else 1)
        if not allowed:  # told why; it closes once it has answered (the release below)
            assert connection.refusals[-1].limit == "max_connections_per_principal"
            self.admitted.remove(connection)
            self.registry.release(connection)

    @precondition(lambda self: self.admitted)
    @rule(index=st.integers(0, 100))
    def authenticate(self, index):
        connection = self.admitted[index % len(self.admitted)]
        self.registry.authenticated(connection)
        assert connection.authenticated

    @invariant()
    def counters_match_a_fresh_count(self):
        addresses, principals, unauthenticated = self._counts()
        registry = self.registry
        assert set(registry.connections) == set(self.admitted)
        assert registry.by_address == addresses
        assert registry.by_principal == principals
        assert registry.unauthenticated == unauthenticated
        total, per_address, per_principal, max_unauthenticated = self.caps
        assert len(registry.connections) <= total
        assert not per_address or max(addresses.values(), default=0) <= per_address
        assert not per_principal or max(principals.values(), default=0) <= per_principal

    def teardown(self):
        for connection in self.admitted:
            self.registry.release(connection)
        registry = self.registry
        assert not registry.connections and not registry.by_address
        assert not registry.by_principal and registry.unauthenticated == 0


TestRegistryCounts = RegistryMachine.TestCase
TestRegistryCounts.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)


def test_idle_unauthenticated_connections_cannot_lock_out_those_that_log_in():
    """The SASL case: many connections that never finish their handshake take at most
    ``max_unauthenticated_connections`` slots; a client that authenticates still gets in."""
    registry = ConnectionRegistry(10, max_per_address=0, max_unauthenticated=3)
    idle = [StandIn("10.0.0.9", port, False, ANONYMOUS) for port in range(20)]
    admitted = [c for c in idle if registry.admit(c) is None]
    assert len(admitted) == 3 and registry.refused == 17
    alice = StandIn("10.0.0.1", 1, False, ANONYMOUS)
    refusal = registry.admit(alice)
    assert refusal.limit == "max_unauthenticated_connections"  # still handshaking: waits
    for connection in admitted[:1]:
        registry.release(connection)  # the handshake timeout closed one
    assert registry.admit(alice) is None
    registry.authenticated(alice)
    assert registry.unauthenticated == 2
    assert registry.principal_set(alice, "User:alice")
    assert registry.by_principal == {"User:alice": 1}


@pytest.mark.parametrize("peer, address", [("10.1.2.3:5000", "10.1.2.3"), ("::1:6000", "::1"),
                                           ("fe80::1:7000", "fe80::1")])
def test_addresses_are_counted_without_the_port(peer, address):
    registry = ConnectionRegistry(10, max_per_address=1)
    first = StandIn(address, 0, True, ANONYMOUS)
    first.peer = peer
    assert registry.admit(first) is None
    assert registry.by_address == {address: 1}
