"""The single node's ACL file and the service over it: what CreateAcls/DeleteAcls do."""

from __future__ import annotations

import asyncio

from tslog.broker.security.acl import AclBinding, AclFilter, Authorizer
from tslog.broker.security.acl_store import AclService, LocalAclStore

READ_A = AclBinding("User:alice", "topic", "prefixed", "a", "Read", "allow")
DENY_B = AclBinding("User:*", "topic", "literal", "b1", "Write", "deny")


def service(data_dir) -> AclService:
    authorizer = Authorizer()
    return AclService(authorizer, LocalAclStore(data_dir, authorizer))


def test_created_acls_are_enforced_at_once_and_survive_a_restart(tmp_path):
    acls = service(tmp_path)
    results = asyncio.run(acls.create([READ_A, DENY_B, READ_A._replace(principal="alice")]))
    assert [code for code, _ in results] == [0, 0, 42]  # not User:...: INVALID_REQUEST
    assert "User:<name>" in results[2][1]
    assert acls.authorizer.authorize("User:alice", "Read", "topic", "a1")
    reopened = service(tmp_path)
    assert reopened.authorizer.bindings == {READ_A, DENY_B}
    assert not reopened.authorizer.authorize("User:alice", "Read", "topic", "b1")


def test_delete_answers_what_each_filter_matched(tmp_path):
    acls = service(tmp_path)
    asyncio.run(acls.create([READ_A, DENY_B]))
    matched = asyncio.run(acls.delete([AclFilter(permission="deny"),
                                       AclFilter(pattern_type="match", resource_name="a7"),
                                       AclFilter(principal="User:nobody")]))
    assert matched == [[DENY_B], [READ_A], []]
    assert acls.authorizer.bindings == frozenset()
    assert service(tmp_path).authorizer.bindings == frozenset()
