"""The authorizer's indexed evaluation against a brute-force reading of Kafka's rules."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tslog.broker.security.acl import (
    OPERATIONS,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclBinding,
    Authorizer,
)

PRINCIPALS = ["User:alice", "User:bob", WILDCARD_PRINCIPAL]
NAMES = ["a", "a1", "ab", "b", "b1", "abc", WILDCARD_RESOURCE]
HOSTS = ["*", "10.0.0.1", "10.0.0.2"]
GRANTS = {"Describe": {"Read", "Write", "Delete", "Alter"}, "DescribeConfigs": {"AlterConfigs"}}

bindings = st.builds(
    AclBinding,
    principal=st.sampled_from(PRINCIPALS),
    resource_type=st.sampled_from(["topic", "group"]),
    pattern_type=st.sampled_from(["literal", "prefixed"]),
    resource_name=st.sampled_from(NAMES),
    operation=st.sampled_from(OPERATIONS),
    permission=st.sampled_from(["allow", "deny"]),
    host=st.sampled_from(HOSTS),
).filter(lambda b: not (b.pattern_type == "prefixed" and b.resource_name == "*"))


def oracle(acls, supers, allow_if_none, principal, operation, kind, name, host) -> bool:
    """Kafka's rules, read literally over every binding (a binding naming a host applies to
    connections from it only; whether any binding names the resource ignores hosts)."""
    if principal in supers:
        return True

    def covers(b):
        if b.resource_type != kind:
            return False
        if b.pattern_type == "literal":
            return b.resource_name == name or b.resource_name == "*"
        return name.startswith(b.resource_name)

    on_resource = [b for b in acls if covers(b)]
    if not on_resource:
        return allow_if_none
    mine = [b for b in on_resource if b.principal in (principal, WILDCARD_PRINCIPAL)
            and b.host in ("*", host)]
    if any(b.permission == "deny" and b.operation in (operation, "All") for b in mine):
        return False
    granting = {operation, "All"} | GRANTS.get(operation, set())
    return any(b.permission == "allow" and b.operation in granting for b in mine)


@settings(max_examples=300, deadline=None)
@given(acls=st.lists(bindings, max_size=12), allow_if_none=st.booleans(),
       supers=st.sets(st.sampled_from(PRINCIPALS[:2]), max_size=1),
       principal=st.sampled_from(PRINCIPALS[:2] + ["User:carol"]),
       operation=st.sampled_from(OPERATIONS), kind=st.sampled_from(["topic", "group"]),
       name=st.sampled_from(NAMES[:-1] + ["zz", "abcd"]),
       host=st.sampled_from(HOSTS[1:] + ["10.0.0.3"]))
def test_indexed_evaluation_matches_the_rules(acls, allow_if_none, supers, principal,
                                              operation, kind, name, host):
    authorizer = Authorizer(supers, allow_if_none, acls[:1])
    authorizer.authorize(principal, operation, kind, name, host)  # remembered, then changed
    authorizer.replace(acls)
    assert authorizer.authorize(principal, operation, kind, name, host) == oracle(
        set(acls), supers, allow_if_none, principal, operation, kind, name, host)


@settings(max_examples=200, deadline=None)
@given(acls=st.lists(bindings, max_size=10), principal=st.sampled_from(PRINCIPALS[:2]))
def test_write_on_any_topic_is_a_topic_that_allows_it(acls, principal):
    """``authorize_any`` never says yes when no named topic (nor any fresh name under an
    allowed prefix) would be writable, and says yes when some listed name is."""
    authorizer = Authorizer((), False, acls)
    candidates = {b.resource_name + suffix for b in acls if b.resource_type == "topic"
                  and b.resource_name != "*" for suffix in ("", "~x")} | {"~fresh"}
    some = any(authorizer.authorize(principal, "Write", "topic", n) for n in candidates)
    assert authorizer.authorize_any(principal, "Write", "topic") == some
