"""ACL bindings that name a host: evaluation, and stored forms older brokers wrote."""

from __future__ import annotations

import hashlib
import json

from tslog.broker.security.etcd_acls import binding_key_suffix
from tslog.broker.security.acl import AclBinding, AclFilter, Authorizer, binding_problem


def binding(host: str = "*", permission: str = "allow") -> AclBinding:
    return AclBinding("User:a", "topic", "literal", "t", "Read", permission, host)


def test_a_binding_with_a_host_applies_from_that_address_only():
    authz = Authorizer(bindings=[binding("10.0.0.7")])
    assert authz.authorize("User:a", "Read", "topic", "t", "10.0.0.7")
    assert not authz.authorize("User:a", "Read", "topic", "t", "10.0.0.8")
    assert not authz.authorize("User:a", "Read", "topic", "t")  # no host known: not it
    assert authz.authorize_any("User:a", "Read", "topic", "10.0.0.7")
    assert not authz.authorize_any("User:a", "Read", "topic", "10.0.0.8")


def test_a_deny_from_one_host_wins_there_only():
    authz = Authorizer(bindings=[binding(), binding("10.0.0.9", "deny")])
    assert authz.authorize("User:a", "Read", "topic", "t", "10.0.0.7")
    assert not authz.authorize("User:a", "Read", "topic", "t", "10.0.0.9")


def test_hosts_are_addresses_and_filters_select_by_host():
    assert binding_problem(binding("10.0.0.7")) is None
    assert binding_problem(binding("::1")) is None
    assert "not an IP address" in binding_problem(binding("broker.example"))
    assert AclFilter(host="10.0.0.7").matches(binding("10.0.0.7"))
    assert not AclFilter(host="10.0.0.7").matches(binding())


def test_an_etcd_key_of_a_binding_without_host_is_what_older_brokers_wrote():
    old = ["User:a", "topic", "literal", "t", "Read", "allow"]
    assert binding_key_suffix(binding()) == hashlib.sha1(json.dumps(old).encode()).hexdigest()
    assert AclBinding(*old) == binding()
